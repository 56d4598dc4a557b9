//! The one shape of a simulation stage. A stage owns the shader of its name (`src/sim/X.rs` ↔
//! `shaders/sim/X.wgsl`) and its pipelines; it is built once per simulation from the shared
//! [`StageLayouts`] (`new`) and recorded every step through [`Stage::encode`] into a [`StepContext`]: the
//! step's encoder and profiler, the simulation's bind group 0 and the particle count its per-particle
//! kernels cover. A stage opens its own timed compute passes, so the per-pass table names it.
//! [`super::Simulation::encode_step`] records the stages in a fixed order.

use crate::gpu::{self, profiler::TimedComputePass, DispatchError, Profiler, Workgroups};

/// What every stage records into: one step's encoder and profiler, the simulation's bind groups and the
/// particles its per-particle kernels cover.
pub(super) struct StepContext<'a> {
    pub encoder: &'a mut wgpu::CommandEncoder,
    pub profiler: &'a Profiler,
    /// Bind group 0 of every kernel after the grid build (the sorted state and the cell table read-only).
    pub bind: &'a wgpu::BindGroup,
    /// Bind group 0 of the grid build, which writes the sorted positions and the cell table.
    pub grid_bind: &'a wgpu::BindGroup,
    /// The simulation's dispatch sizes, checked when it was built.
    pub dispatch: &'a Dispatches,
}

/// A simulation's dispatch sizes, made and checked against the device when it is built (the emission's
/// when its sources are set), so recording a step never fails ([`gpu::dispatch`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Dispatches {
    /// A per-particle kernel: every particle (the scene's and the pool) in workgroups of `WG` threads.
    pub particles: Workgroups,
    /// Every particle in workgroups of 128 threads (kernels of fixed size: `df_factor`, `stats_partial`).
    pub particles_128: Workgroups,
    /// The emission's points: the largest layer in workgroups of `EMIT_WG`, one z layer per emitter.
    pub emit: Workgroups,
    /// The DFSPH kernels dispatched directly (which skip every slot past the live particles): every
    /// particle, or in a rank's simulation only its live ones, owned and ghosts ([`Dispatches::solving`]),
    /// in workgroups of `WG` and of 128 threads. A rank keeps a quarter of its slots free: dispatching them
    /// cost a fifth of its pressure solve on lavapipe.
    pub solve: Workgroups,
    pub solve_128: Workgroups,
    /// The device's workgroups per dimension (what [`Dispatches::solving`] checks against).
    max_per_dimension: u32,
}

impl Dispatches {
    /// The sizes for `capacity` particles in workgroups of `workgroup_size` threads (no emitter yet).
    pub fn new(capacity: u32, workgroup_size: u32, limits: &wgpu::Limits) -> Result<Self, DispatchError> {
        let particles = gpu::workgroups("per-particle kernels", capacity as u64, workgroup_size, 1, limits)?;
        let particles_128 = gpu::workgroups("per-particle kernels", capacity as u64, 128, 1, limits)?;
        let max_per_dimension = limits.max_compute_workgroups_per_dimension;
        let emit = Workgroups::ONE;
        Ok(Self { particles, particles_128, emit, solve: particles, solve_128: particles_128, max_per_dimension })
    }

    /// These sizes with the DFSPH kernels' dispatched for `live` particles (at most the capacity these
    /// were made for, so they fit the device; a count past it keeps the capacity's).
    pub fn solving(self, live: u32, workgroup_size: u32) -> Self {
        let limits =
            wgpu::Limits { max_compute_workgroups_per_dimension: self.max_per_dimension, ..wgpu::Limits::default() };
        let size = |wg| gpu::workgroups("per-particle kernels", live as u64, wg, 1, &limits).ok();
        let count = |w: Workgroups| w.get().iter().map(|&c| c as u64).product::<u64>();
        match (size(workgroup_size), size(128)) {
            (Some(solve), Some(solve_128)) if count(solve) <= count(self.particles) => {
                Self { solve, solve_128, ..self }
            }
            _ => Self { solve: self.particles, solve_128: self.particles_128, ..self },
        }
    }
}

impl StepContext<'_> {
    /// Opens the timed compute pass `label` with bind group 0 (`bind`) set.
    pub fn pass(&mut self, label: &str) -> TimedComputePass<'_> {
        let mut pass = self.profiler.compute_pass(self.encoder, label);
        pass.set_bind_group(0, self.bind, &[]);
        pass
    }
}

/// A simulation stage: built once from [`StageLayouts`], recorded every step.
pub(super) trait Stage {
    /// What the stage needs per step besides the [`StepContext`] (iteration counts, ...).
    type Input<'a>;

    /// Records the stage's passes into `step`.
    fn encode(&self, step: &mut StepContext<'_>, input: Self::Input<'_>);
}

/// What every stage is built from: the device, the pipeline layouts over the simulation's bind group 0
/// (read-only sorted state, and the grid build's writable one) and the per-particle workgroup size.
pub(super) struct StageLayouts<'a> {
    pub device: &'a wgpu::Device,
    /// Bind group 0's layout for kernels after the grid build (stages that add groups of their own).
    pub bind_group_layout: &'a wgpu::BindGroupLayout,
    /// Bind group 0's layout of the grid build (the sorted state, the cell table and the ids writable), for
    /// stages with groups of their own that write them (src/sim/border.rs).
    pub grid_bind_group_layout: &'a wgpu::BindGroupLayout,
    /// The pipeline layout of kernels after the grid build: bind group 0 only.
    pub sim: wgpu::PipelineLayout,
    /// The grid build's pipeline layout.
    pub grid: wgpu::PipelineLayout,
    /// Threads per workgroup of the per-particle kernels (the shaders' `WG` pipeline constant).
    pub workgroup_size: u32,
    /// Sum the DFSPH solves' errors with subgroup operations (the device has them and they are wanted).
    pub subgroups: bool,
    /// The split per-particle arrays' pipeline constant `(SPLIT_N, elements per chunk)` (src/gpu/split.rs),
    /// which every simulation pipeline sets.
    pub split: (&'static str, f64),
    /// Chunks (bindings) of every split per-particle array: the shaders are resolved with as many.
    pub chunks: usize,
    /// Particle ids are tracked (binding 7, [`super::SimOptions::track_ids`]): the grid carries them
    /// through the sort and the DFSPH solves leave ghosts out of their errors.
    pub ghosts: bool,
}

impl StageLayouts<'_> {
    /// The shader module at `path` (under `shaders/`) with `defines`, its split arrays in [`Self::chunks`]
    /// bindings each.
    pub fn module(&self, path: &str, defines: &[&str]) -> wgpu::ShaderModule {
        gpu::shader::module_split(self.device, path, defines, self.chunks)
    }

    /// A per-particle kernel of `module` (workgroups of `WG` = [`Self::workgroup_size`] threads) on the
    /// read-only layout.
    pub fn per_particle(&self, module: &wgpu::ShaderModule, entry: &str) -> wgpu::ComputePipeline {
        gpu::compute_pipeline_with(self.device, module, &self.sim, entry, &self.per_particle_constants())
    }

    /// A kernel of fixed workgroup size (one-thread planners, reductions) on the read-only layout.
    pub fn fixed(&self, module: &wgpu::ShaderModule, entry: &str) -> wgpu::ComputePipeline {
        gpu::compute_pipeline_with(self.device, module, &self.sim, entry, &[self.split])
    }

    /// The constants of a per-particle kernel: `WG` and `SPLIT_N`.
    pub fn per_particle_constants(&self) -> [(&'static str, f64); 2] {
        [("WG", self.workgroup_size as f64), self.split]
    }
}
