//! DFSPH (Bender & Koschier 2015/2017) on the GPU, see shaders/sim/dfsph.wgsl: the divergence-free solve
//! and the constant-density solve, each iterating until its mean error is below the target or its
//! iteration limit, decided on the GPU. Every iteration is recorded (up to the limit) as a source and an
//! update dispatch with indirect arguments of its own; thread 0 of each update kernel tests the error
//! and writes the next iteration's arguments only while the solve goes on, so once a solve has converged
//! its remaining iterations are dispatches of zero workgroups, the frame never waits on a read-back and
//! a converged step costs little more than its iterations.

use super::stage::{Stage, StageLayouts, StepContext};
use super::surface_tension::SurfaceTensionStage;
use crate::gpu;
use bytemuck::{Pod, Zeroable};

/// A solve's iteration count. WGSL twin: `SolveState` in shaders/sim/dfsph.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct SolveState {
    pub iteration: u32,
    pub _pad: [u32; 3],
}
const _: () = assert!(std::mem::size_of::<SolveState>() == 16);

/// One iteration's indirect dispatch arguments: the source kernel's (x, y, z, -), then the update
/// kernel's at `ARGS_UPD_OFFSET`. WGSL twin: `IterationArgs` in shaders/sim/dfsph.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct IterationArgs {
    pub src: [u32; 4],
    pub upd: [u32; 4],
}

/// Which particles an update dispatch of a rank moves (all, the inner ones, or the rest: see
/// src/sim/ranked_step.rs): the inner ones have their coordinate along `axis` (0 = x) in `[lo, hi)`, metres, and are no ghost.
/// WGSL twin: `UpdateRegion` in shaders/sim/dfsph.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct UpdateRegion {
    pub axis: u32,
    pub lo: f32,
    pub hi: f32,
    /// 0 = all, 1 = the inner particles, 2 = the rest.
    pub part: u32,
}

/// The particles an update dispatch moves: all of them, or on a rank the inner ones (owned, beyond one
/// support radius from the slab's borders: their update needs no ghost's kappa) and then the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UpdatePart {
    All = 0,
    Inner = 1,
    Border = 2,
}

/// A rank's update regions: one uniform buffer and bind group (group 2 of the update kernels) per
/// [`UpdatePart`], by its code.
struct Regions {
    buffers: [wgpu::Buffer; 3],
    binds: [wgpu::BindGroup; 3],
}

/// Bytes of one iteration's indirect arguments.
const ITERATION_ARGS_BYTES: u64 = size_of::<IterationArgs>() as u64;

/// Byte offset of the update kernel's dispatch arguments in an iteration's.
const ARGS_UPD_OFFSET: u64 = std::mem::offset_of!(IterationArgs, upd) as u64;

/// Most iterations a solve can record (the limit of `density_iterations` and `divergence_iterations` in
/// [`super::SimParams`]), plus the one past the last whose arguments its last update writes.
const MAX_RECORDED_ITERATIONS: u64 = 201;

/// One solve's GPU state: its iteration count, the iterations' arguments in two buffers (iteration k at
/// slot k / 2 of `args[k % 2]`: an update kernel writes the next iteration's into the buffer it is not
/// dispatched from) and the bind groups of `df_begin` (both buffers) and of the update kernels (the
/// buffer of the next iteration, `next[(k + 1) % 2]` for iteration k).
struct Solve {
    args: [wgpu::Buffer; 2],
    begin: wgpu::BindGroup,
    next: [wgpu::BindGroup; 2],
}

/// The DFSPH passes of a step: "density" (df_neighbours, df_factor), "divergence", "forces" (with surface tension
/// only) and "pressure" (the constant-density solve); pipelines and control buffers.
pub(super) struct DfsphStage {
    neighbours: wgpu::ComputePipeline,
    factor: wgpu::ComputePipeline,
    divergence_source: wgpu::ComputePipeline,
    divergence_update: wgpu::ComputePipeline,
    nonpressure: wgpu::ComputePipeline,
    density_source: wgpu::ComputePipeline,
    density_update: wgpu::ComputePipeline,
    begin: wgpu::ComputePipeline,
    divergence: Solve,
    density: Solve,
    /// Only in a rank's simulation (`StageLayouts::ghosts`).
    regions: Option<Regions>,
}

impl DfsphStage {
    /// Pipelines and control buffers; the error sums use subgroup operations when `layouts.subgroups`
    /// (the device must have `Features::SUBGROUP`), else a tree in workgroup memory.
    pub fn new(layouts: &StageLayouts) -> Self {
        let device = layouts.device;
        let defines: &[&str] = match (layouts.subgroups, layouts.ghosts) {
            (true, true) => &["SUBGROUPS", "GHOSTS"],
            (true, false) => &["SUBGROUPS"],
            (false, true) => &["GHOSTS"],
            (false, false) => &[],
        };
        let module = layouts.module("sim/dfsph.wgsl", defines);
        let vis = wgpu::ShaderStages::COMPUTE;
        let begin_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("dfsph solve begin layout"),
            entries: &[
                gpu::storage_entry::<SolveState>(0, false, vis),
                gpu::storage_entry::<IterationArgs>(1, false, vis),
                gpu::storage_entry::<IterationArgs>(2, false, vis),
            ],
        });
        let next_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("dfsph solve next-iteration layout"),
            entries: &[
                gpu::storage_entry::<SolveState>(0, false, vis),
                gpu::storage_entry::<IterationArgs>(1, false, vis),
            ],
        });
        let layout = |label: &str, groups: &[Option<&wgpu::BindGroupLayout>]| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: groups,
                immediate_size: 0,
            })
        };
        let sim_layout = layouts.bind_group_layout;
        let region_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("dfsph update region layout"),
            entries: &[gpu::uniform_entry::<UpdateRegion>(0, vis)],
        });
        let pl_begin = layout("dfsph begin pipeline layout", &[Some(sim_layout), Some(&begin_layout)]);
        let update_groups = [Some(sim_layout), Some(&next_layout), layouts.ghosts.then_some(&region_layout)];
        let pl_update = layout("dfsph update pipeline layout", &update_groups[..2 + layouts.ghosts as usize]);
        let regions = layouts.ghosts.then(|| {
            let buffers = [UpdatePart::All, UpdatePart::Inner, UpdatePart::Border].map(|part| {
                let region = UpdateRegion { part: part as u32, ..Default::default() };
                gpu::uniform_buffer_init(device, "dfsph update region", bytemuck::bytes_of(&region))
            });
            let binds =
                [0, 1, 2].map(|k| gpu::bind_buffers(device, "dfsph update region", &region_layout, &[&buffers[k]]));
            Regions { buffers, binds }
        });
        let wg = [
            ("WG", layouts.workgroup_size as f64),
            ("FLOOR_FACTOR", super::gpu_data::DFSPH_BOUNDARY_FACTOR as f64),
            ("WALL_FACTOR", super::gpu_data::DFSPH_WALL_FACTOR as f64),
            ("MIN_DIVERGENCE_ITERATIONS", super::gpu_data::DFSPH_MIN_DIVERGENCE_ITERATIONS as f64),
            ("MAX_GROUPS_X", gpu::row_length(&device.limits()) as f64),
            layouts.split,
        ];
        let pipe = |pl: &wgpu::PipelineLayout, entry: &str| gpu::compute_pipeline_with(device, &module, pl, entry, &wg);
        let solve = |label: &str| {
            let state = gpu::storage_buffer(device, label, std::mem::size_of::<SolveState>() as u64);
            let slots = MAX_RECORDED_ITERATIONS.div_ceil(2) * ITERATION_ARGS_BYTES;
            let args = [0, 1].map(|parity| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("{label}: arguments of the {} iterations", ["even", "odd"][parity])),
                    size: slots,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
                    mapped_at_creation: false,
                })
            });
            let begin = gpu::bind_buffers(device, label, &begin_layout, &[&state, &args[0], &args[1]]);
            let next = [0, 1].map(|parity| gpu::bind_buffers(device, label, &next_layout, &[&state, &args[parity]]));
            Solve { args, begin, next }
        };
        let pl = &layouts.sim;
        Self {
            neighbours: pipe(pl, "df_neighbours"),
            factor: pipe(pl, "df_factor"),
            divergence_source: pipe(pl, "df_divergence_source"),
            divergence_update: pipe(&pl_update, "df_divergence_update"),
            nonpressure: pipe(pl, "df_nonpressure"),
            density_source: pipe(pl, "df_density_source"),
            density_update: pipe(&pl_update, "df_density_update"),
            begin: pipe(&pl_begin, "df_begin"),
            divergence: solve("dfsph divergence solve"),
            density: solve("dfsph density solve"),
            regions,
        }
    }

    /// Sets a rank's inner region for this step: owned particles whose coordinate along `axis` lies in
    /// `[lo, hi)`, metres (see [`UpdateRegion`]). No effect on a simulation built without ghosts.
    pub(super) fn set_region(&self, queue: &wgpu::Queue, axis: u32, lo: f32, hi: f32) {
        if let Some(r) = &self.regions {
            for (k, buffer) in r.buffers.iter().enumerate() {
                let region = UpdateRegion { axis, lo, hi, part: k as u32 };
                queue.write_buffer(buffer, 0, bytemuck::bytes_of(&region));
            }
        }
    }

    /// Binds the region of `part` for the update kernels (group 2), where the simulation has regions.
    fn bind_region(&self, pass: &mut wgpu::ComputePass<'_>, part: UpdatePart) {
        if let Some(r) = &self.regions {
            pass.set_bind_group(2, &r.binds[part as usize], &[]);
        }
    }

    /// Records a solve's iterations (up to `max_iterations`) into `pass`, whose bind group 0 is set: a
    /// source and an update each, from the iteration's own arguments; the first iteration's source is
    /// left out when `first_source` is false (df_factor computed it).
    fn encode_iterations(
        pass: &mut wgpu::ComputePass<'_>,
        solve: &Solve,
        (source, update): (&wgpu::ComputePipeline, &wgpu::ComputePipeline),
        max_iterations: u32,
        first_source: bool,
    ) {
        let recorded = u64::from(max_iterations).min(MAX_RECORDED_ITERATIONS - 1);
        for k in 0..recorded {
            let (args, offset) = (&solve.args[(k % 2) as usize], (k / 2) * ITERATION_ARGS_BYTES);
            if k > 0 || first_source {
                pass.set_pipeline(source);
                pass.dispatch_workgroups_indirect(args, offset);
            }
            pass.set_pipeline(update);
            pass.set_bind_group(1, &solve.next[((k + 1) % 2) as usize], &[]);
            pass.dispatch_workgroups_indirect(args, offset + ARGS_UPD_OFFSET);
        }
    }

    /// Binds the solve's buffers and records its `df_begin` (bind group 0 is set).
    fn begin(&self, pass: &mut wgpu::ComputePass<'_>, solve: &Solve) {
        pass.set_bind_group(1, &solve.begin, &[]);
        pass.set_pipeline(&self.begin);
        gpu::dispatch(pass, gpu::Workgroups::ONE);
    }
}

impl Stage for DfsphStage {
    /// The most iterations recorded for (the divergence solve, the density solve), and the surface
    /// tension stage when it is on: its normals live in `accel`, the divergence solve's scratch, so
    /// they are computed between the solves and a "forces" pass adds the non-pressure forces (without
    /// it, df_factor computes them and the density solve's warm start itself: `fused_forces` in the
    /// shader).
    type Input<'a> = ((u32, u32), Option<&'a SurfaceTensionStage>);

    /// Records one DFSPH step after the grid build and the time step: factor, divergence solve, the
    /// surface normals and non-pressure forces when on, density solve. The caller integrates afterwards.
    fn encode(
        &self,
        step: &mut StepContext<'_>,
        ((divergence_iterations, density_iterations), surface_tension): Self::Input<'_>,
    ) {
        let groups = step.dispatch.solve;
        self.encode_factor(step);
        {
            let mut pass = step.pass("divergence");
            self.bind_region(&mut pass, UpdatePart::All);
            let p = (&self.divergence_source, &self.divergence_update);
            Self::encode_iterations(&mut pass, &self.divergence, p, divergence_iterations, false);
        }
        if let Some(surface_tension) = surface_tension {
            surface_tension.encode(step, ());
            // Non-pressure forces and the density solve's warm start (fused).
            let mut pass = step.pass("forces");
            pass.set_pipeline(&self.nonpressure);
            gpu::dispatch(&mut pass, groups);
        }
        let mut pass = step.pass("pressure");
        self.begin(&mut pass, &self.density);
        self.bind_region(&mut pass, UpdatePart::All);
        let p = (&self.density_source, &self.density_update);
        Self::encode_iterations(&mut pass, &self.density, p, density_iterations, true);
    }
}

/// A solve of a host-driven DFSPH step (the ranks of a decomposed simulation: src/sim/ranked_step.rs),
/// whose iterations are recorded one at a time and ended by the host's joint convergence test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SolveKind {
    Divergence,
    Density,
}

/// The passes of a step recorded one by one (host-driven iterations). Each opens its own timed pass.
impl DfsphStage {
    fn parts(&self, kind: SolveKind) -> (&Solve, &wgpu::ComputePipeline, &wgpu::ComputePipeline, &'static str) {
        match kind {
            SolveKind::Divergence => (&self.divergence, &self.divergence_source, &self.divergence_update, "divergence"),
            SolveKind::Density => (&self.density, &self.density_source, &self.density_update, "pressure"),
        }
    }

    /// The "density" pass: the neighbour lists (df_neighbours: nothing where there are none), df_begin of
    /// the divergence solve (df_factor sums its first errors: that solve begins here), then df_factor
    /// (rho, alpha and the solve's first source).
    pub(super) fn encode_factor(&self, step: &mut StepContext<'_>) {
        let (groups, groups_128) = (step.dispatch.solve, step.dispatch.solve_128);
        let mut pass = step.pass("density");
        pass.set_pipeline(&self.neighbours);
        gpu::dispatch(&mut pass, groups);
        self.begin(&mut pass, &self.divergence);
        pass.set_pipeline(&self.factor);
        gpu::dispatch(&mut pass, groups_128);
    }

    /// df_begin of `kind` (zero error sum and iteration count), then its source (unless `source` is
    /// false: df_factor computed the divergence solve's first).
    pub(super) fn encode_begin(&self, step: &mut StepContext<'_>, kind: SolveKind, source: bool) {
        let (solve, src, _, label) = self.parts(kind);
        let groups = step.dispatch.solve_128;
        let mut pass = step.pass(label);
        self.begin(&mut pass, solve);
        if source {
            pass.set_pipeline(src);
            gpu::dispatch(&mut pass, groups);
        }
    }

    /// The source of one iteration of `kind` (sums its error into the step state).
    pub(super) fn encode_source(&self, step: &mut StepContext<'_>, kind: SolveKind) {
        let (_, src, _, label) = self.parts(kind);
        let groups = step.dispatch.solve_128;
        let mut pass = step.pass(label);
        pass.set_pipeline(src);
        gpu::dispatch(&mut pass, groups);
    }

    /// The update of iteration `k` of `kind` for the particles of `part` (the dispatch of `All` or
    /// `Inner` counts the iteration in the step state and clears the error sum; the next iteration's
    /// indirect arguments it writes are not used here).
    pub(super) fn encode_update(&self, step: &mut StepContext<'_>, kind: SolveKind, k: u32, part: UpdatePart) {
        let (solve, _, update, label) = self.parts(kind);
        let groups = step.dispatch.solve;
        let mut pass = step.pass(label);
        pass.set_pipeline(update);
        pass.set_bind_group(1, &solve.next[((k + 1) % 2) as usize], &[]);
        self.bind_region(&mut pass, part);
        gpu::dispatch(&mut pass, groups);
    }

    /// df_nonpressure (with surface tension: the non-pressure forces and the density solve's warm start).
    pub(super) fn encode_nonpressure(&self, step: &mut StepContext<'_>) {
        let groups = step.dispatch.solve;
        let mut pass = step.pass("forces");
        pass.set_pipeline(&self.nonpressure);
        gpu::dispatch(&mut pass, groups);
    }
}
