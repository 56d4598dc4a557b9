//! Diffuse particles: spray, foam and air bubbles (`shaders/sim/diffuse.wgsl`), after Ihmsen, Akinci,
//! Akinci & Teschner 2012, "Unified spray, foam and bubbles for particle-based fluids" (The Visual
//! Computer 28(6)). One-way coupled: the fluid moves them, they never push back.
//!
//! Once per rendered frame (after [`super::Simulation::encode_frame`]'s last step, and after each
//! submission of [`super::Simulation::advance_to`]) the "diffuse" pass works on the sorted state of that
//! step and its neighbour grid, with dt = the simulated time since its last run (so the paper's per-step
//! generation and advection run per frame; the spawn count is proportional to that dt and the motion is
//! integrated exactly over it, see the shader): surface normals into `vstar` (free after integration),
//! the potentials of every fluid particle (trapped air, wave crest, kinetic energy, each clamped to a
//! range and mapped to 0..1) and the new diffuse particles they make (at most the per-frame budget,
//! [`super::diffuse_params::DiffuseParams::budget`]), then every diffuse particle classified by its fluid
//! neighbours (spray, foam or bubble), moved, aged and compacted.
//!
//! The pool is a fixed-size buffer of [`DiffuseParticle`]s (capacity from [`super::SimOptions::diffuse_pool`],
//! a fraction of the fluid's capacity), live ones first; new ones are appended and survivors compacted into
//! a second buffer by atomic counters (aggregated per workgroup), which then holds the pool (the two
//! swap every run: no copy). The count and the arguments of the renderer's indirect draw stay on the GPU
//! ([`DiffuseState`]); its first 16 bytes (count, spray, foam, bubbles) come back with the statistics
//! ([`super::SimStats::diffuse`]).
//!
//! Memory: two 32-byte particles per pool slot, 16 bytes per fluid particle at the default quarter.
//! Cost (expected, not yet measured on the H100): two neighbour loops over the fluid per frame (the
//! second skipped for particles slower than the kinetic-energy threshold) and one per diffuse particle,
//! about 0.3-0.6 ms per frame at 1 M particles.

use super::diffuse_params::{DiffuseParams, DiffuseUniform};
use super::stage::{StageLayouts, StepContext};
use super::{SimError, Simulation};
use crate::gpu::{self, GpuContext, Profiler, Workgroups};
use bytemuck::{Pod, Zeroable};

/// Threads per workgroup of `diffuse_advect` (`DIFFUSE_WG` in the shader).
pub const DIFFUSE_WG: u32 = 128;

/// Default [`super::SimOptions::diffuse_pool`]: a pool of a quarter of the fluid's capacity (16 bytes per
/// fluid particle).
pub const DIFFUSE_POOL: f64 = 0.25;

/// What a diffuse particle is, by its fluid neighbours within 2h (`KIND_*` in shaders/common/diffuse.wgsl).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffuseKind {
    /// Few fluid neighbours: in the air, ballistic with drag.
    Spray,
    /// At the surface: carried with the fluid's velocity.
    Foam,
    /// Inside the fluid: buoyancy and drag toward the fluid's velocity.
    Bubble,
}

impl DiffuseKind {
    pub const ALL: [DiffuseKind; 3] = [DiffuseKind::Spray, DiffuseKind::Foam, DiffuseKind::Bubble];

    /// The shader's code (`KIND_SPRAY` etc.), stored as `f32` in [`DiffuseParticle::vel`]'s w.
    pub fn code(self) -> u32 {
        match self {
            DiffuseKind::Spray => 0,
            DiffuseKind::Foam => 1,
            DiffuseKind::Bubble => 2,
        }
    }

    /// The kind of a code (`None` past the last).
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// One diffuse particle. WGSL twin: `DiffuseParticle` in shaders/common/diffuse.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct DiffuseParticle {
    /// xyz = position (m), w = lifetime left (s).
    pub pos: [f32; 4],
    /// xyz = velocity (m/s), w = kind ([`DiffuseKind::code`] as f32).
    pub vel: [f32; 4],
}

/// The pool's counters and the renderer's draw arguments, on the GPU.
/// WGSL twin: `DiffuseState` in shaders/sim/diffuse.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct DiffuseState {
    /// Live diffuse particles.
    pub count: u32,
    /// Of them spray, foam and bubbles.
    pub spray: u32,
    pub foam: u32,
    pub bubbles: u32,
    /// Survivors counted during a run.
    pub kept: u32,
    /// New particles asked for during the last run (also those past its room).
    pub spawned: u32,
    /// New particles the last run could add.
    pub room: u32,
    /// Runs so far.
    pub frame: u32,
    /// Simulated time of the last run, s.
    pub last_time: f32,
    /// The last run's time step, s.
    pub dt: f32,
    /// Share of the demand the last run spawned (0..1).
    pub scale: f32,
    /// New particles the fluid asked for in the last run that could spawn any (before the share).
    pub demand: f32,
    /// `draw_indirect` arguments: 6 vertices, `count` instances, 0, 0.
    pub draw: [u32; 4],
}
const _: () = assert!(size_of::<DiffuseState>() == 64);

/// Byte offset of the draw arguments in [`DiffuseState`].
pub const DRAW_ARGS_OFFSET: u64 = std::mem::offset_of!(DiffuseState, draw) as u64;

/// The diffuse particles for the renderer: the pool and where its draw arguments are.
#[derive(Clone, Copy)]
pub struct DiffuseBuffers<'a> {
    /// `array<DiffuseParticle>`, live ones first.
    pub particles: &'a wgpu::Buffer,
    /// Holds `draw_indirect` arguments (6 vertices, the live count as instances) at `draw_offset`.
    pub draw_args: &'a wgpu::Buffer,
    pub draw_offset: u64,
    /// Byte offset in `draw_args` of the simulated time of the last run (f32, s): the lifetimes count
    /// down from it (the renderer seeds each foam splat's bubbles by the time of death).
    pub time_offset: u64,
    /// Slots in the pool.
    pub capacity: u32,
}

/// The "diffuse" pass: pipelines, the pool (two buffers that swap every run), its counters and uniform.
pub(super) struct DiffuseStage {
    begin: wgpu::ComputePipeline,
    normals: wgpu::ComputePipeline,
    generate: wgpu::ComputePipeline,
    advect: wgpu::ComputePipeline,
    finish: wgpu::ComputePipeline,
    uniform: wgpu::Buffer,
    /// The pool's two buffers; `pools[current]` holds the live particles.
    pools: [wgpu::Buffer; 2],
    current: usize,
    state: wgpu::Buffer,
    /// `groups[k]`: the run from `pools[k]` into `pools[1 - k]`.
    groups: [wgpu::BindGroup; 2],
    capacity: u32,
    /// `diffuse_advect` over the whole pool.
    workgroups: Workgroups,
}

impl DiffuseStage {
    /// A pool of `capacity` diffuse particles (at least 1) with `params` at spacing `dx`, smoothing length
    /// `h` (metres). Errors when the pool's dispatch exceeds the device.
    pub fn new(
        layouts: &StageLayouts,
        capacity: u32,
        params: &DiffuseParams,
        (dx, h): (f32, f32),
    ) -> Result<Self, SimError> {
        let device = layouts.device;
        let capacity = capacity.max(1);
        let workgroups = gpu::workgroups("diffuse particles", capacity as u64, DIFFUSE_WG, 1, &device.limits())?;
        let module = layouts.module("sim/diffuse.wgsl", &[]);
        let vis = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("diffuse layout"),
            entries: &[
                gpu::uniform_entry::<DiffuseUniform>(0, vis),
                gpu::storage_entry::<DiffuseParticle>(1, false, vis),
                gpu::storage_entry::<DiffuseParticle>(2, false, vis),
                gpu::storage_entry::<DiffuseState>(3, false, vis),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("diffuse pipeline layout"),
            bind_group_layouts: &[Some(layouts.bind_group_layout), Some(&layout)],
            immediate_size: 0,
        });
        let wg = layouts.per_particle_constants();
        let pipe = |entry: &str| gpu::compute_pipeline_with(device, &module, &pipeline_layout, entry, &wg);
        let uniform = gpu::uniform_buffer_init(
            device,
            "diffuse uniform",
            bytemuck::bytes_of(&DiffuseUniform::new(params, capacity, dx, h)),
        );
        let bytes = capacity as u64 * size_of::<DiffuseParticle>() as u64;
        let pools = [0, 1].map(|k| gpu::storage_buffer(device, &format!("diffuse particles {k}"), bytes));
        let state = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("diffuse state"),
            size: size_of::<DiffuseState>() as u64,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::INDIRECT
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let groups = [0, 1].map(|k| {
            gpu::bind_buffers(device, "diffuse bind group", &layout, &[&uniform, &pools[k], &pools[1 - k], &state])
        });
        Ok(Self {
            begin: pipe("diffuse_begin"),
            normals: pipe("diffuse_normals"),
            generate: pipe("diffuse_generate"),
            advect: pipe("diffuse_advect"),
            finish: pipe("diffuse_finish"),
            uniform,
            pools,
            current: 0,
            state,
            groups,
            capacity,
            workgroups,
        })
    }

    /// Writes the uniform for `params` (takes effect at the next submission).
    pub fn set_params(&self, queue: &wgpu::Queue, params: &DiffuseParams, (dx, h): (f32, f32)) {
        let u = DiffuseUniform::new(params, self.capacity, dx, h);
        queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&u));
    }

    /// Empties the pool and restarts its clock (a reset of the simulation, or the stage switched off).
    pub fn clear(&self, queue: &wgpu::Queue) {
        queue.write_buffer(&self.state, 0, bytemuck::bytes_of(&DiffuseState { scale: 1.0, ..Default::default() }));
    }

    /// Slots in the pool.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The buffers the renderer draws.
    pub fn buffers(&self) -> DiffuseBuffers<'_> {
        DiffuseBuffers {
            particles: &self.pools[self.current],
            draw_args: &self.state,
            draw_offset: DRAW_ARGS_OFFSET,
            time_offset: std::mem::offset_of!(DiffuseState, last_time) as u64,
            capacity: self.capacity,
        }
    }

    /// The pool's buffers (for the memory count).
    pub fn all_buffers(&self) -> [&wgpu::Buffer; 4] {
        [&self.uniform, &self.pools[0], &self.pools[1], &self.state]
    }

    /// The counters (`state`), for the statistics' copy.
    pub fn state_buffer(&self) -> &wgpu::Buffer {
        &self.state
    }

    /// Records the "diffuse" pass (see the module doc); the compacted pool is then the other buffer.
    pub fn encode(&mut self, step: &mut StepContext<'_>) {
        {
            let fluid = step.dispatch.particles;
            let mut pass = step.pass("diffuse");
            pass.set_bind_group(1, &self.groups[self.current], &[]);
            pass.set_pipeline(&self.begin);
            gpu::dispatch(&mut pass, Workgroups::ONE);
            pass.set_pipeline(&self.normals);
            gpu::dispatch(&mut pass, fluid);
            pass.set_pipeline(&self.generate);
            gpu::dispatch(&mut pass, fluid);
            pass.set_pipeline(&self.advect);
            gpu::dispatch(&mut pass, self.workgroups);
            pass.set_pipeline(&self.finish);
            gpu::dispatch(&mut pass, Workgroups::ONE);
        }
        self.current = 1 - self.current;
    }

    /// Copies the pool and its counters of `other` (a pool no larger) into this one, e.g. when the
    /// simulation is rebuilt with a larger inflow pool.
    pub fn copy_from(&self, encoder: &mut wgpu::CommandEncoder, other: &DiffuseStage) {
        let (from, to) = (&other.pools[other.current], &self.pools[self.current]);
        encoder.copy_buffer_to_buffer(from, 0, to, 0, from.size().min(to.size()));
        encoder.copy_buffer_to_buffer(&other.state, 0, &self.state, 0, self.state.size());
    }

    /// Blocking read of the counters. For tests (all zero when nothing comes back).
    pub fn state_blocking(&self, ctx: &GpuContext) -> DiffuseState {
        let bytes = gpu::readback::read_buffer_blocking(ctx, &self.state);
        bytes
            .get(..size_of::<DiffuseState>())
            .map(bytemuck::pod_read_unaligned)
            .unwrap_or_else(bytemuck::Zeroable::zeroed)
    }

    /// Blocking read of the live diffuse particles. For tests.
    pub fn particles_blocking(&self, ctx: &GpuContext) -> Vec<DiffuseParticle> {
        let count = self.state_blocking(ctx).count.min(self.capacity) as usize;
        let bytes = gpu::readback::read_buffer_blocking(ctx, &self.pools[self.current]);
        let mut all: Vec<DiffuseParticle> = bytemuck::pod_collect_to_vec(&bytes);
        all.truncate(count);
        all
    }

    /// Replaces the live diffuse particles by `particles` (at most the capacity; the clock kept). For tests.
    pub fn write_particles(&self, ctx: &GpuContext, particles: &[DiffuseParticle]) {
        let n = particles.len().min(self.capacity as usize);
        ctx.queue.write_buffer(&self.pools[self.current], 0, bytemuck::cast_slice(&particles[..n]));
        let mut state = self.state_blocking(ctx);
        state.count = n as u32;
        state.draw = [6, n as u32, 0, 0];
        ctx.queue.write_buffer(&self.state, 0, bytemuck::bytes_of(&state));
    }
}

impl Simulation {
    /// Records the "diffuse" pass over the state of the last recorded step, advancing the diffuse
    /// particles by the simulated time since its last run (see the module doc); nothing when they are off or
    /// there is no pool. [`Simulation::encode_frame`] calls it once per frame.
    pub fn encode_diffuse(&mut self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        if !self.params.diffuse.enabled {
            return;
        }
        let mut step =
            StepContext { encoder, profiler, bind: &self.bind, grid_bind: &self.grid_bind, dispatch: &self.dispatch };
        if let Some(d) = &mut self.stages.diffuse {
            d.encode(&mut step);
        }
    }

    /// The diffuse particles for the renderer (`None` when they are off or there is no pool).
    pub fn diffuse(&self) -> Option<DiffuseBuffers<'_>> {
        self.stages.diffuse.as_ref().filter(|_| self.params.diffuse.enabled).map(|d| d.buffers())
    }

    /// Blocking read of the diffuse pool's counters and live particles (`None` without a pool). For tests.
    pub fn read_diffuse_blocking(&self, ctx: &GpuContext) -> Option<(DiffuseState, Vec<DiffuseParticle>)> {
        let d = self.stages.diffuse.as_ref()?;
        Some((d.state_blocking(ctx), d.particles_blocking(ctx)))
    }

    /// Replaces the live diffuse particles by `particles` (at most the pool's size), blocking. Returns false
    /// without a pool. For tests.
    pub fn write_diffuse_blocking(&self, ctx: &GpuContext, particles: &[DiffuseParticle]) -> bool {
        self.stages.diffuse.as_ref().map(|d| d.write_particles(ctx, particles)).is_some()
    }

    /// Blocking read of what the diffuse pass's last run read and wrote per sorted fluid particle:
    /// (positions, velocities, `vstar` = (outward surface normal n_i, expected new diffuse particles)),
    /// the active particles only. For tests (the CPU reference of the potentials).
    pub fn read_diffuse_inputs_blocking(&self, ctx: &GpuContext) -> [Vec<[f32; 4]>; 3] {
        let (starts, spos) = self.read_grid_blocking(ctx);
        let active = starts.last().copied().unwrap_or(0) as usize;
        let read = |b: &gpu::split::SplitBuffer| -> Vec<[f32; 4]> {
            bytemuck::cast_slice(&b.read_blocking(ctx)[..active * 16]).to_vec()
        };
        [spos[..active].to_vec(), read(&self.buffers.svel), read(&self.buffers.vstar)]
    }
}
