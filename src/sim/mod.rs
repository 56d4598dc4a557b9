//! GPU SPH simulation (WGSL compute), one stage per file, each owning the shader of its name
//! (`stage` gives them one shape): the counting-sort neighbour grid rebuilt every step ([`grid`]), the
//! CFL time step kept on the GPU (`time_step`), DFSPH ([`dfsph`], the default), PCISPH or WCSPH
//! (`pcisph`) with artificial viscosity, XSPH and optional surface tension (`surface_tension`),
//! integration with boundaries from the terrain heightfield, the domain walls and an optional wave maker
//! (`integrate`), inflows ([`sources`]), the statistics (`stats`) and, once per frame, the diffuse
//! particles (spray, foam, bubbles: [`diffuse`]). Nothing is read back inside a
//! step; statistics ([`SimStats`]) come back asynchronously through a read-back ring, a frame or more
//! late. [`Simulation::advance_to`] (src/sim/advance.rs): exact offline time steps.
//!
//! The simulation knows nothing of the renderer: callers bound its particle count from outside
//! ([`ParticleLimit`]) and hand its buffers on. Public buffers (both in the sorted order of the last step),
//! per-particle arrays split over storage bindings ([`crate::gpu::split`]: one binding up to 134 M
//! particles, up to 4 past that; a shader reads them through `#split_array`):
//! - `positions()`: `array<vec4<f32>>`, xyz = position (m), w = density (kg/m^3; < 0 = parked in the pool)
//! - `velocities()`: `array<vec4<f32>>`, xyz = velocity (m/s), w = pressure (Pa)

mod advance;
mod blow_up;
pub mod bodies;
pub mod border;
mod buffers;
mod build;
pub mod dfsph;
pub mod diffuse;
pub mod diffuse_params;
pub mod frame_steps;
pub mod gpu_data;
pub mod grid;
mod halo;
mod ids;
pub mod initial;
mod integrate;
pub mod kernel;
pub mod live_obstacles;
pub mod neighbours;
pub mod obstacles;
pub mod params;
mod pcisph;
mod ranked_step;
pub mod reference;
pub mod sources;
mod stage;
pub mod state;
mod stats;
mod surface_tension;
mod time_step;

pub use advance::{Advance, PRESSURE_SQRT_N};
pub use blow_up::{BlowUp, Bounds, Cause};
pub use border::{BorderRange, BorderSelection};
pub use diffuse::{DiffuseBuffers, DiffuseKind, DiffuseParticle, DiffuseState, DIFFUSE_POOL};
pub use diffuse_params::DiffuseParams;
pub use grid::GRID_BOX_PAD;
pub use ids::RankParticles;
pub use params::{Method, SimParams};
pub use ranked_step::RankExchange;
pub use state::{SimState, StateLayout, StateView};
pub use stats::{DiffuseCounts, SimStats, STATS_WG};

use thiserror::Error;

/// Why a simulation could not be created or changed.
#[derive(Debug, Error)]
pub enum SimError {
    /// `max` = the particles the GPU's buffers (or the caller's [`ParticleLimit`]) hold; `why` says which.
    #[error("{count} particles are more than this GPU can simulate ({max} at most: {why}); increase dx or shrink the fluid blocks")]
    TooManyParticles { count: u64, max: u64, why: &'static str },
    #[error("the scene has no fluid particles (fluid blocks empty or below the terrain)")]
    NoParticles,
    #[error("the neighbour grid's table would need {cells} cells (about one per particle), past the limit of {limit}; increase dx or shrink the fluid blocks")]
    TooManyCells { cells: u64, limit: u64 },
    /// [`SimOptions`] out of range: cell_split must be 1, 2 or 3 and cells_per_particle positive.
    #[error(
        "grid options out of range: cell_split {cell_split} (1..=3), cells_per_particle {cells_per_particle} (> 0)"
    )]
    GridOptions { cell_split: u32, cells_per_particle: f64 },
    /// [`SimOptions::diffuse_pool`] not a fraction in 0 ..= 4 of the particle capacity.
    #[error("diffuse particle pool {0} is out of range: 0 (none) ..= 4 times the particle capacity")]
    DiffusePool(f64),
    #[error(transparent)]
    Param(#[from] params::ParamError),
    #[error("workgroup size {0} is not a power of two between 32 and this GPU's limit")]
    WorkgroupSize(u32),
    /// A dispatch larger than the device runs (refused when built or when the sources are set).
    #[error(transparent)]
    Dispatch(#[from] gpu::DispatchError),
    #[error(transparent)]
    Source(#[from] sources::SourceError),
    #[error(transparent)]
    Bodies(#[from] bodies::BodyError),
    #[error("this simulation was built without a particle pool for inflow; rebuild it with a pool (`SimOptions::pool`) to add an emitter")]
    NoPool,
    /// [`Simulation::advance_to`] could not reach its target time.
    #[error("cannot advance the simulation to t = {target} s (now at {time} s): {reason}")]
    Advance { target: f32, time: f32, reason: &'static str },
    /// The GPU could not allocate the simulation's buffers (`memory`: the budget it was given,
    /// [`SimOptions::memory`], when that refused it before anything was allocated).
    #[error(
        "{count} particles need about {} of GPU memory for the simulation ({} bytes per particle){}; increase dx or shrink the fluid blocks",
        gib(*bytes),
        bytes / (*count).max(1),
        match memory { Some(m) => format!(", more than the {} it may use", gib(*m)), None => ", more than the GPU could allocate".to_string() }
    )]
    OutOfMemory { count: u64, bytes: u64, memory: Option<u64> },
    /// A state could not be copied out of or put back into the simulation ([`Simulation::restore`]).
    #[error("simulation state: {0}")]
    State(&'static str),
    /// A blocking read-back got nothing back (the device was lost or reported an error, which the message
    /// names).
    #[error("{0}")]
    Readback(gpu::GpuError),
}

/// `bytes` for messages: GiB with two decimals from 1 GiB ("1.50 GiB"), else MiB with one ("12.0 MiB").
pub(crate) fn gib(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

use crate::gpu::{self, readback::ReadbackRing, split::SplitBuffer, GpuContext, Profiler};
use crate::scene::{Aabb, SceneSetup};
use crate::terrain::Heightfield;
use buffers::Buffers;
pub use build::bytes_per_particle;
use build::{Initial, Source};
use gpu_data::{Derived, GridShape, SimUniforms, StepState, BOUNDARY_TABLE_N};
use grid::bounds;
use stage::{Dispatches, Stage, StageLayouts, StepContext};
use stats::{decode_stats, StatsStage, STATS_BYTES};

/// Most grid cells (u32 indices, plus the parking cell and the total); the storage binding bounds it first.
const MAX_CELLS: u64 = u32::MAX as u64 - 2;

/// Every stage of a step, built once per simulation (see [`stage`]).
struct Stages {
    grid: grid::GridStage,
    time_step: time_step::TimeStepStage,
    surface_tension: surface_tension::SurfaceTensionStage,
    dfsph: dfsph::DfsphStage,
    pcisph: pcisph::PcisphStage,
    integrate: integrate::IntegrateStage,
    emit: sources::EmitStage,
    stats: StatsStage,
    /// `None` without a diffuse pool ([`SimOptions::diffuse_pool`] = 0).
    diffuse: Option<diffuse::DiffuseStage>,
    /// The halo exchange of a rank's host-driven steps (only with [`SimOptions::track_ids`]).
    halo: Option<halo::HaloStage>,
    /// The border selection after a rank's step (only with [`SimOptions::track_ids`]).
    border: Option<border::BorderStage>,
}

/// A bound on the particle count from outside the simulation, e.g. the renderer's largest per-particle
/// buffer (its 32-byte ellipsoids), checked with the simulation's own when it is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParticleLimit {
    /// Most particles (the parked pool included).
    pub max: u64,
    /// What bounds it, for the error message.
    pub why: &'static str,
}

/// Build options that are not physics: how the kernels are dispatched, the inflow pool, outside limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimOptions {
    /// Threads per workgroup of the per-particle kernels (32, 64, 128, 256, ...; at most the adapter's
    /// `max_compute_invocations_per_workgroup`).
    pub workgroup_size: u32,
    /// Parked particles allocated beyond the scene's for emitters to draw from
    /// ([`sources::pool_size`] gives a good size; 0 = no inflow; [`Simulation::with_pool`] grows it).
    pub pool: u32,
    /// Cells of the neighbour grid's table per particle (rows of the domain's grid are folded to about
    /// this many cells; see [`GridShape`]). Larger wastes memory, smaller puts more unrelated cells into
    /// one bucket.
    pub cells_per_particle: f64,
    /// Neighbour-grid cells per support radius along an axis: 1 (cells of 2h, rows of 3 cells read as one
    /// range, 9 rows), 2 (cells of h, rows of 5, 25 rows) or 3. Smaller cells visit less empty volume
    /// and more row ranges.
    pub cell_split: u32,
    /// Sum the DFSPH solves' errors with subgroup operations where the device has them
    /// (shaders/sim/error_sum_subgroup.wgsl); false keeps the workgroup-memory tree everywhere
    /// (`waterview bench --no-subgroups`).
    pub subgroups: bool,
    /// A bound on the particle count besides the simulation's own buffers (`None`: those only).
    pub limit: Option<ParticleLimit>,
    /// Slots of the diffuse particles' pool (spray, foam, bubbles; [`diffuse`]) as a fraction of the
    /// particle capacity (0 ..= 4; 0 = no pool, the stage never runs; default [`DIFFUSE_POOL`], 16 bytes per
    /// fluid particle). Changing it needs a new simulation.
    pub diffuse_pool: f64,
    /// GPU memory the simulation may allocate, bytes (`None`: whatever the device gives; an allocation
    /// it refuses is [`SimError::OutOfMemory`] all the same). Checked against [`bytes_per_particle`]
    /// before any buffer is made.
    pub memory: Option<u64>,
    /// Build DFSPH's neighbour lists once a step and read them in the solves ([`neighbours`], 160 bytes
    /// per particle where they fit one storage binding and [`SimOptions::memory`]); false walks the
    /// grid's rows in every loop (`waterview bench --no-neighbour-list`).
    pub neighbour_list: bool,
    /// Carry a particle id through every step's sort and leave ghosts out of the DFSPH errors (the ranks
    /// of src/cluster, [`Simulation::for_rank`]); false (the default) records exactly as before.
    pub track_ids: bool,
}

/// Default [`SimOptions::cells_per_particle`]: 2 cells per particle (8 bytes each) ran as fast as the
/// dense grid at 1 M particles once the grid's box follows the fluid (docs/performance.md).
pub const CELLS_PER_PARTICLE: f64 = 2.0;

/// Default [`SimOptions::cell_split`]: cells of h (25 rows of 5 cells per neighbour search) beat cells of
/// 2h (9 rows of 3) by 16 % at 1 M particles on the H100 (docs/performance.md).
pub const CELL_SPLIT: u32 = 2;

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            workgroup_size: 128,
            pool: 0,
            cells_per_particle: CELLS_PER_PARTICLE,
            cell_split: CELL_SPLIT,
            subgroups: true,
            limit: None,
            diffuse_pool: DIFFUSE_POOL,
            memory: None,
            neighbour_list: true,
            track_ids: false,
        }
    }
}

/// The GPU particle simulation of one scene. See the module docs for the buffer layout.
pub struct Simulation {
    params: SimParams,
    derived: Derived,
    domain: Aabb,
    /// The neighbour grid as the GPU has it now: its box follows the fluid ([`Simulation::poll_stats`]).
    grid_shape: GridShape,
    /// The grid's box around the scene's initial particles (restored by `reset`).
    initial_grid: GridShape,
    /// For the grid box's uniform updates from `poll_stats`.
    queue: wgpu::Queue,
    terrain: Heightfield,
    /// The static obstacles (on the GPU in `buffers.obstacles`).
    obstacles: Vec<obstacles::Obstacle>,
    /// The floating and sinking bodies (after the obstacles in `buffers.obstacles`); `None` without any,
    /// and then no rigid-body work is done.
    bodies: Option<bodies::Bodies>,
    /// The static obstacles' live moves ([`live_obstacles`]).
    live: live_obstacles::LiveObstacles,
    /// Particles on the GPU: the scene's and the pool.
    capacity: u32,
    buffers: Buffers,
    bind: wgpu::BindGroup,
    /// The same buffers for the grid build, which writes the sorted positions and the cell table.
    grid_bind: wgpu::BindGroup,
    stages: Stages,
    initial: Initial,
    readback: ReadbackRing,
    frame: u64,
    /// See [`Simulation::particles_version`].
    particles_version: u64,
    latest: Option<SimStats>,
    /// Every record the last [`Simulation::poll_stats`] took, oldest first ([`Simulation::arrived_stats`]).
    arrived: Vec<SimStats>,
    /// The first record of this run whose water left physics ([`Simulation::blow_up`]).
    blow_up: Option<BlowUp>,
    /// What the water can physically do in this scene ([`Simulation::update_bounds`]).
    bounds: blow_up::Bounds,
    /// Records of frames up to this one were recorded before the last reset: ignored when they land.
    fresh_after: u64,
    /// Solver iteration counts (density, divergence) known without statistics: a restored state's
    /// ([`Simulation::restore`]) or a rank's last step ([`Simulation::note_iterations`]), bounding the
    /// iterations recorded until statistics come back.
    restored_iterations: Option<(u32, u32)>,
    options: SimOptions,
    /// The inflows and outflows as uploaded (emission state zeroed).
    sources: sources::SourcesGpu,
    /// Dispatch sizes, checked when built (the emission's when the sources are set).
    dispatch: stage::Dispatches,
    /// Particle ids carried through the sort (ranks of src/cluster only; `None` records as before).
    ids: Option<ids::IdTrack>,
}

impl Simulation {
    /// Applies parameters that need no new buffers (iterations, substeps, viscosity, gravity, cfl, ...).
    /// A change of dx, h or rho0 needs a rebuild ([`SimParams::needs_rebuild`]): that is an error here.
    pub fn set_params(&mut self, ctx: &GpuContext, params: &SimParams) -> Result<(), SimError> {
        params.validate()?;
        if let Some(w) = &params.wave_maker {
            w.validate_in(self.domain.min, self.domain.max)?;
        }
        if self.params.needs_rebuild(params) {
            return Err(SimError::Param(params::ParamError {
                field: "dx",
                value: params::fmt_f32(params.dx),
                range: "dx, h_over_dx and rho0 change only with a rebuild of the scene",
            }));
        }
        let diffuse_off = self.params.diffuse.enabled && !params.diffuse.enabled;
        self.params = params.clone();
        self.update_bounds();
        self.upload_uniforms(ctx);
        if let Some(b) = &mut self.bodies {
            b.set_gravity(glam::Vec3::from(self.params.gravity));
        }
        if let Some(d) = &self.stages.diffuse {
            d.set_params(&ctx.queue, &self.params.diffuse, (self.params.dx, self.params.h()));
            if diffuse_off {
                d.clear(&ctx.queue);
            }
        }
        Ok(())
    }

    fn upload_uniforms(&self, ctx: &GpuContext) {
        let u =
            SimUniforms::new(&self.params, &self.derived, &self.domain, &self.grid_shape, &self.terrain, self.capacity);
        ctx.queue.write_buffer(&self.buffers.uniforms, 0, bytemuck::bytes_of(&u));
    }

    /// Replaces the inflows and outflows (live). Emitters draw from the pool allocated at build time
    /// ([`SimOptions::pool`]); without one, adding an emitter is [`SimError::NoPool`] (grow it first with
    /// [`Simulation::with_pool`]). Every emitter and sink is checked ([`crate::scene::check_sources`] in
    /// this simulation's domain at its dx), each emitter's layer must fit the pool, and the emission's
    /// dispatch is sized here, so recording a step never fails. On error nothing changes.
    pub fn set_sources(
        &mut self,
        ctx: &GpuContext,
        emitters: &[crate::scene::Emitter],
        sinks: &[crate::scene::Sink],
    ) -> Result<(), SimError> {
        crate::scene::check_sources(emitters, sinks, &self.domain, self.params.dx)
            .map_err(sources::SourceError::from)?;
        let mut gpu_sources = sources::to_gpu(emitters, sinks, self.params.dx)?;
        if !emitters.is_empty() && self.pool() == 0 {
            return Err(SimError::NoPool);
        }
        let layers = gpu_sources.emitters[..emitters.len()].iter().map(|e| e.layer_points);
        if let Some((k, layer)) = layers.enumerate().find(|&(_, l)| l > self.pool()) {
            return Err(sources::SourceError::LayerOverPool { emitter: k + 1, layer, pool: self.pool() }.into());
        }
        let max_layer = gpu_sources.emitters[..emitters.len()].iter().map(|e| e.layer_points).max().unwrap_or(0);
        let emit = sources::EmitStage::workgroups(max_layer, emitters.len() as u32, &ctx.device.limits())?;
        // Keep the volume each emitter is owed across edits of the same emitter.
        gpu_sources.state = self.sources.state;
        self.sources = gpu_sources;
        self.dispatch.emit = emit;
        ctx.queue.write_buffer(&self.buffers.sources, 0, bytemuck::bytes_of(&self.sources));
        self.follow_fluid();
        self.update_bounds();
        Ok(())
    }

    /// This simulation with its blow-up bounds set ([`Simulation::update_bounds`]).
    fn with_bounds(mut self) -> Self {
        self.update_bounds();
        self
    }

    /// Sets the bounds a blow-up breaks ([`BlowUp`]) from the scene as it is now: its height range (the
    /// domain's top over the lowest ground), the fastest speed its water is given (the initial particles,
    /// the emitters, a wave maker's paddle), the solver and the particle mass.
    fn update_bounds(&mut self) {
        let height = self.domain.max[1] - self.terrain.range().0.max(self.domain.min[1]);
        let emitters = self.sources.emitters[..self.sources.num_emitters as usize].iter();
        let emitted = emitters.map(|e| glam::Vec3::from(e.velocity).length()).fold(0.0, f32::max);
        let sound = gpu_data::wcsph_sound_speed(&self.params, &self.domain);
        let speed = self.initial.speed.max(emitted);
        self.bounds = blow_up::Bounds::new(&self.params, height, speed, sound, self.derived.mass);
    }

    /// The bounds a blow-up breaks in this scene ([`BlowUp`]).
    pub fn bounds(&self) -> &blow_up::Bounds {
        &self.bounds
    }

    /// The scene's particles (the leading part of the buffers; the pool follows): what a reset returns to.
    pub fn scene_particles(&self) -> u32 {
        self.initial.scene as u32
    }

    /// Parked particles allocated for emitters (0 when built without inflow).
    pub fn pool(&self) -> u32 {
        self.capacity - self.initial.scene as u32
    }

    /// Puts the particles back where the scene started them, the clock to zero and the emitters' owed
    /// volume to nothing; the statistics start afresh.
    pub fn reset(&mut self, ctx: &GpuContext) {
        let q = &ctx.queue;
        self.particles_version += 1;
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sim reset") });
        self.initial.pos.copy_to(&mut encoder, &self.buffers.pos, self.capacity as u64);
        self.initial.vel.copy_to(&mut encoder, &self.buffers.vel, self.capacity as u64);
        q.submit([encoder.finish()]);
        q.write_buffer(&self.buffers.step, 0, bytemuck::bytes_of(&StepState::default()));
        q.write_buffer(&self.buffers.sources, 0, bytemuck::bytes_of(&self.sources));
        self.latest = None;
        self.blow_up = None;
        self.fresh_after = self.frame;
        self.restored_iterations = None;
        self.grid_shape = self.initial_grid;
        self.write_grid_box();
        if let Some(d) = &self.stages.diffuse {
            d.clear(q);
        }
        if let Some(b) = &mut self.bodies {
            b.reset();
            b.write(q, &self.buffers.obstacles);
            q.write_buffer(&self.buffers.stats_out, bodies::BODY_SUMS_OFFSET, &[0; bodies::BODY_SUMS_BYTES as usize]);
        }
    }

    /// Records one rendered frame of simulation: `steps` steps (usually [`Simulation::frame_steps`]), then
    /// the diffuse particles ([`Simulation::encode_diffuse`]); no read-back.
    pub fn encode_frame(&mut self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler, steps: u32) {
        for _ in 0..steps {
            self.encode_step(encoder, profiler);
        }
        self.encode_diffuse(encoder, profiler);
    }

    /// The context every stage records into (see [`stage`]).
    fn step_context<'a>(&'a self, encoder: &'a mut wgpu::CommandEncoder, profiler: &'a Profiler) -> StepContext<'a> {
        StepContext { encoder, profiler, bind: &self.bind, grid_bind: &self.grid_bind, dispatch: &self.dispatch }
    }

    /// Records one step, stage by stage: the grid build, the time step, the pressure solver with the
    /// non-pressure forces (surface normals first when surface tension is on), integration with the
    /// boundaries and sinks, and emission while there are emitters.
    pub fn encode_step(&mut self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        self.particles_version += 1;
        self.step_obstacles();
        let s = &self.stages;
        let surface_tension = (self.params.surface_tension > 0.0).then_some(&s.surface_tension);
        let mut step = self.step_context(encoder, profiler);
        s.grid.encode(&mut step, ());
        if self.params.method == Method::Dfsph {
            s.time_step.encode(&mut step, ());
            // Iterations recorded: the limits, or fewer when the solves recently needed far fewer
            // (from the asynchronously read statistics, which count the iterations that ran, so a solve cut
            // short here gets more next time; the GPU still stops each solve on its own).
            let iterations = self.iteration_budget();
            s.dfsph.encode(&mut step, (iterations, surface_tension));
        } else {
            if let Some(st) = surface_tension {
                st.encode(&mut step, ());
            }
            s.time_step.encode(&mut step, ());
            // WCSPH: the Tait pressure from density_forces, one force evaluation. PCISPH: iterations.
            let iterations = if self.params.method == Method::Wcsph { 0 } else { self.params.solver_iterations };
            s.pcisph.encode(&mut step, iterations);
        }
        s.integrate.encode(&mut step, ());
        if self.sources.num_emitters > 0 {
            s.emit.encode(&mut step, ());
        }
        self.ids_stepped();
        if let Some(b) = &mut self.bodies {
            b.stepped();
        }
    }

    /// Records the statistics reduction and its copy into the read-back ring (skipped when the ring is full).
    pub fn encode_stats(&mut self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        self.stages.stats.encode(&mut self.step_context(encoder, profiler), ());
        if let Some(d) = &self.stages.diffuse {
            // The pool's count and kinds (the state's first 16 bytes) ride along with the statistics.
            encoder.copy_buffer_to_buffer(d.state_buffer(), 0, &self.buffers.stats_out, stats::DIFFUSE_OFFSET, 16);
        }
        self.frame += 1;
        let copied = self.readback.copy_buffer(encoder, &self.buffers.stats_out, 0, self.frame);
        if copied && self.bodies.is_some() {
            // The bodies' impulses went with the record: the next frame sums afresh. (A frame whose copy
            // was skipped keeps summing into the next record, which covers both frames' time.)
            encoder.clear_buffer(&self.buffers.stats_out, bodies::BODY_SUMS_OFFSET, Some(bodies::BODY_SUMS_BYTES));
        }
    }

    /// Call right after the queue submission that holds `encode_stats`.
    pub fn after_submit(&mut self) {
        self.readback.submitted();
    }

    /// Newest statistics that have arrived (call `device.poll(Poll)` once per frame before). Never blocks.
    /// Also moves the neighbour grid's box onto the fluid's bounding box from those statistics (and the
    /// emitters' discs), padded by [`GRID_BOX_PAD`] cells for the frames the figures are late: a uniform
    /// write, nothing waits.
    /// Several records can land in one call (a slow frame, or a drain at the end of a run): all of them are
    /// in [`Simulation::arrived_stats`] until the next call.
    pub fn poll_stats(&mut self) -> Option<&SimStats> {
        self.arrived.clear();
        let mut per_frame = None;
        while let Some((frame, bytes)) = self.readback.try_take() {
            if frame <= self.fresh_after {
                continue;
            }
            let stats = decode_stats(frame, &bytes);
            if let Some(b) = &mut self.bodies {
                let at = bodies::BODY_SUMS_OFFSET as usize;
                if let Some(sums) = bytes.get(at..at + bodies::BODY_SUMS_BYTES as usize) {
                    b.advance(stats.time, &bytemuck::pod_collect_to_vec::<u8, i32>(sums));
                }
                // Simulated time per frame, from this record and the one before.
                if let Some(l) = &self.latest {
                    if stats.frame > l.frame && stats.time > l.time {
                        per_frame = Some((stats.time - l.time) / (stats.frame - l.frame) as f32);
                    }
                }
            }
            if self.blow_up.is_none() {
                self.blow_up = BlowUp::diagnose(self.latest.as_ref(), &stats, &self.params, &self.bounds);
            }
            self.latest = Some(stats.clone());
            self.arrived.push(stats);
        }
        if let (Some(b), Some(last)) = (&mut self.bodies, self.arrived.last()) {
            // The record is a few frames late: the bodies go to the GPU as rapier expects them when the
            // next frame starts.
            b.predict(per_frame.map_or(0.0, |f| f * self.frame.saturating_sub(last.frame) as f32));
            b.write(&self.queue, &self.buffers.obstacles);
        }
        if !self.arrived.is_empty() {
            self.follow_fluid();
        }
        self.latest.as_ref()
    }

    /// Every record the last [`Simulation::poll_stats`] took, oldest first (empty when none landed): what a
    /// statistics file writes, one row per frame, where the newest alone would skip frames.
    pub fn arrived_stats(&self) -> &[SimStats] {
        &self.arrived
    }

    /// The first frame since the build or the last reset whose statistics counted non-finite particles,
    /// with its likely cause (found by [`Simulation::poll_stats`]; a frame or more late, never blocking).
    /// Nothing after it is worth simulating: front ends stop (the CLI exits non-zero) or pause.
    pub fn blow_up(&self) -> Option<&BlowUp> {
        self.blow_up.as_ref()
    }

    /// The newest statistics that have arrived (as [`Simulation::poll_stats`] returned them last).
    pub fn latest_stats(&self) -> Option<&SimStats> {
        self.latest.as_ref()
    }

    /// True while a statistics read-back is still on its way (headless runs poll until it lands).
    pub fn stats_in_flight(&self) -> bool {
        self.readback.in_flight()
    }

    /// Particles on the GPU: the scene's plus the parked pool. Every per-particle kernel and buffer covers
    /// this many; see [`Simulation::live_particles`] for the water there is.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Particles that are water now (not parked in the pool): from the newest statistics, a frame or more
    /// old, or the scene's own count before any have arrived.
    pub fn live_particles(&self) -> u32 {
        self.latest.as_ref().map_or(self.initial.scene as u32, |s| s.particle_count)
    }

    /// `array<vec4<f32>>` split over bindings ([`SplitBuffer`]): xyz = position (m), w = density (kg/m^3;
    /// < 0 = parked).
    pub fn positions(&self) -> &SplitBuffer {
        &self.buffers.pos
    }

    /// `array<vec4<f32>>` split over bindings ([`SplitBuffer`]): xyz = velocity (m/s), w = pressure (Pa).
    pub fn velocities(&self) -> &SplitBuffer {
        &self.buffers.vel
    }

    /// The step state kept on the GPU (`StepState` in shaders/sim/common.wgsl, 32 bytes: dt in s at byte 0,
    /// simulated time in s at byte 4), for passes that follow the simulated clock, e.g. the renderer's
    /// wave maker paddle.
    pub fn step_state(&self) -> &wgpu::Buffer {
        &self.buffers.step
    }

    pub fn params(&self) -> &SimParams {
        &self.params
    }

    /// The build options (dispatch sizes, pool, outside limit) this simulation was made with.
    pub fn options(&self) -> &SimOptions {
        &self.options
    }

    /// Bounds (min, max corners) of the scene's initial particles, metres.
    pub fn initial_bounds(&self) -> ([f32; 3], [f32; 3]) {
        self.initial.bounds
    }

    /// Particle mass, kg (rho0 times the lattice-normalised volume, close to rho0 dx^3).
    pub fn mass(&self) -> f32 {
        self.derived.mass
    }

    /// The terrain the simulation collides with (clamped into the domain).
    pub fn terrain(&self) -> &Heightfield {
        &self.terrain
    }

    /// The static obstacles the simulation collides with.
    pub fn obstacles(&self) -> &[obstacles::Obstacle] {
        &self.obstacles
    }

    /// The floating and sinking bodies (`None` in a scene without any).
    pub fn bodies(&self) -> Option<&bodies::Bodies> {
        self.bodies.as_ref()
    }

    /// Puts the bodies' motion of a checkpoint back ([`bodies::Bodies::restore`]) and writes their GPU
    /// entries. Errors ([`SimError::State`]'s text): a scene without bodies, another number of bodies, a
    /// value that is not finite.
    pub fn restore_bodies(&mut self, snapshot: &bodies::BodiesSnapshot) -> Result<(), String> {
        let b = self.bodies.as_mut().ok_or_else(|| "the scene has no floating or sinking bodies".to_string())?;
        b.restore(snapshot)?;
        b.write(&self.queue, &self.buffers.obstacles);
        Ok(())
    }

    pub fn domain(&self) -> &Aabb {
        &self.domain
    }

    /// Threads per workgroup of the per-particle kernels.
    pub fn workgroup_size(&self) -> u32 {
        self.options.workgroup_size
    }

    /// Particle radius for drawing, metres (dx / 2).
    pub fn particle_radius(&self) -> f32 {
        0.5 * self.params.dx
    }

    /// Bytes of GPU memory allocated by the simulation (all buffers, the initial state kept for resets
    /// included).
    pub fn bytes_allocated(&self) -> u64 {
        let mut seen: Vec<&wgpu::Buffer> = Vec::new();
        let diffuse = self.stages.diffuse.iter().flat_map(|d| d.all_buffers());
        let initial = self.initial.pos.chunks().iter().chain(self.initial.vel.chunks());
        for b in self.buffers.all().into_iter().map(|(_, b)| b).chain(diffuse).chain(initial) {
            // Aliased bindings (pred = pos, accel = vel, the unused chunks' bindings) count once.
            if !seen.contains(&b) {
                seen.push(b);
            }
        }
        seen.iter().map(|b| b.size()).sum()
    }

    /// A number that changes whenever a step or a reset is recorded (anything that moves the particles):
    /// the renderer keeps the anisotropy's ellipsoids while it stays the same (a paused simulation).
    pub fn particles_version(&self) -> u64 {
        self.particles_version
    }

    /// Blocking read of the particle state (positions with density, velocities with pressure), in the
    /// order of the last step. For tests and headless runs only: it waits for the GPU.
    /// Empty when nothing comes back (tests; batch tools use [`Simulation::try_read_particles_blocking`]).
    pub fn read_particles_blocking(&self, ctx: &GpuContext) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
        self.try_read_particles_blocking(ctx).unwrap_or_default()
    }

    /// [`Simulation::read_particles_blocking`] that says why nothing came back. Errors:
    /// [`SimError::Readback`] (the device was lost or reported an error).
    #[allow(clippy::type_complexity)]
    pub fn try_read_particles_blocking(&self, ctx: &GpuContext) -> Result<(Vec<[f32; 4]>, Vec<[f32; 4]>), SimError> {
        let pos = self.buffers.pos.try_read_blocking(ctx, "the particle positions").map_err(SimError::Readback)?;
        let vel = self.buffers.vel.try_read_blocking(ctx, "the particle velocities").map_err(SimError::Readback)?;
        Ok((bytemuck::pod_collect_to_vec(&pos), bytemuck::pod_collect_to_vec(&vel)))
    }

    /// Blocking read of the grid of the last build: (cell starts with cells + 1 entries, the last being the
    /// number of active particles; sorted positions). The GPU keeps cell ends (see grid.wgsl); this shifts
    /// them back to the conventional starts. For tests.
    pub fn read_grid_blocking(&self, ctx: &GpuContext) -> (Vec<u32>, Vec<[f32; 4]>) {
        let ends: Vec<u32> =
            bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.cell_start)).to_vec();
        let cells = self.grid_shape.num_cells() as usize;
        // Empty when nothing came back.
        let starts = std::iter::once(0).chain(ends.iter().take(cells).copied()).collect();
        (starts, bytemuck::cast_slice(&self.buffers.spos.read_blocking(ctx)).to_vec())
    }

    /// Blocking read of (density, pressure) per sorted particle from the last step. For tests.
    pub fn read_density_blocking(&self, ctx: &GpuContext) -> Vec<[f32; 2]> {
        bytemuck::cast_slice(&self.buffers.rho_p.read_blocking(ctx)).to_vec()
    }

    /// Blocking read of the last step's neighbour lists ([`neighbours::decode`]): per sorted particle its
    /// neighbours' sorted indices, or `None` where it walked the grid; empty without lists. For tests.
    pub fn read_neighbour_lists_blocking(&self, ctx: &GpuContext) -> Vec<Option<Vec<u32>>> {
        let words: Vec<u32> =
            bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.neighbours)).to_vec();
        let planes = 2 * self.options.cell_split + 1;
        let active = self.active_blocking(ctx).unwrap_or(0);
        neighbours::decode(&words, self.capacity() as usize, self.capacity() as usize, planes, active)
    }

    /// Blocking read of the active particles of the last grid build (the last cell's end), `None` when
    /// nothing came back.
    fn active_blocking(&self, ctx: &GpuContext) -> Option<u32> {
        let end = self.grid_shape.num_cells();
        let bytes = gpu::readback::read_range_blocking(ctx, &self.buffers.cell_start, (end - 1) * 4, 4);
        Some(u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?))
    }

    /// The share of the active particles whose last step read a neighbour list rather than the grid
    /// (0 ..= 1), `None` without lists or before any step. Blocking (reads the lists' headers and the
    /// grid's count back): for the benchmark's report after its timed frames, never inside a frame.
    pub fn neighbour_list_share_blocking(&self, ctx: &GpuContext) -> Option<f64> {
        let capacity = self.capacity() as u64;
        if !neighbours::holds_lists(self.buffers.neighbours.size(), capacity) {
            return None;
        }
        let active = self.active_blocking(ctx)? as usize;
        let heads = gpu::readback::read_range_blocking(ctx, &self.buffers.neighbours, 0, capacity * 4);
        neighbours::listed_share(bytemuck::try_cast_slice::<u8, u32>(&heads).ok()?.get(..active)?)
    }

    /// Records only the grid build (for tests of the counting sort).
    pub fn encode_grid(&self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        self.stages.grid.encode(&mut self.step_context(encoder, profiler), ());
    }

    /// Records the grid build, the time step and PCISPH's density pass with no pressure iteration (for
    /// tests of the density summation).
    pub fn encode_density_only(&self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        let mut step = self.step_context(encoder, profiler);
        self.stages.grid.encode(&mut step, ());
        self.stages.time_step.encode(&mut step, ());
        self.stages.pcisph.encode(&mut step, 0);
    }

    /// The neighbour grid's shape.
    pub fn grid_shape(&self) -> GridShape {
        self.grid_shape
    }
}
