//! GPU SPH simulation (WGSL compute): counting-sort neighbour grid rebuilt every step, PCISPH pressure
//! solver with a fixed iteration count, artificial viscosity and XSPH, a CFL-limited time step kept on the
//! GPU, and boundaries from the terrain heightfield and the domain walls. Nothing is read back inside a
//! step; statistics come back asynchronously through a read-back ring, a frame or more late.
//!
//! Public buffers the renderer reads (both in the sorted order of the last step):
//! - `positions()`: `array<vec4<f32>>`, xyz = position (m), w = density (kg/m^3)
//! - `velocities()`: `array<vec4<f32>>`, xyz = velocity (m/s), w = pressure (Pa)

pub mod dfsph;
pub mod gpu_data;
pub mod grid;
pub mod kernel;
pub mod params;
pub mod reference;
pub mod sources;

pub use params::{Method, SimParams};

use thiserror::Error;

/// Why a simulation could not be created or changed.
#[derive(Debug, Error)]
pub enum SimError {
    /// `max` = the smaller of the largest storage buffer (16 bytes per particle) and the largest
    /// one-dimensional dispatch (65 535 workgroups of 128 threads).
    #[error("{count} particles are more than this GPU can simulate ({max} at most: {why}); increase dx or shrink the fluid blocks")]
    TooManyParticles { count: u64, max: u64, why: &'static str },
    #[error("the scene has no fluid particles (fluid blocks empty or below the terrain)")]
    NoParticles,
    #[error("the neighbour grid's table would need {cells} cells (about one per particle), past the limit of {limit}; increase dx or shrink the fluid blocks")]
    TooManyCells { cells: u64, limit: u64 },
    /// [`SimOptions`] out of range: cell_split must be 1, 2 or 3 and cells_per_particle positive.
    #[error("grid options out of range: cell_split {cell_split} (1..=3), cells_per_particle {cells_per_particle} (> 0)")]
    GridOptions { cell_split: u32, cells_per_particle: f64 },
    #[error(transparent)]
    Param(#[from] params::ParamError),
    #[error("workgroup size {0} is not a power of two between 32 and this GPU's limit")]
    WorkgroupSize(u32),
    #[error(transparent)]
    Source(#[from] sources::SourceError),
    #[error("this simulation was built without a particle pool for inflow; rebuild the scene to add an emitter")]
    NoPool,
    /// [`Simulation::advance_to`] could not reach its target time.
    #[error("cannot advance the simulation to t = {target} s (now at {time} s): {reason}")]
    Advance { target: f32, time: f32, reason: &'static str },
}

/// Diagnostics of one frame, computed on the GPU and read back asynchronously.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimStats {
    /// Frame counter at which the statistics were recorded.
    pub frame: u64,
    /// Simulated time, seconds.
    pub time: f32,
    /// Last substep's time step, seconds.
    pub dt: f32,
    pub particle_count: u32,
    /// Mean of max(rho - rho0, 0) / rho0 over particles (compression only; a free surface is not an error).
    pub mean_density_error: f32,
    /// Max of |rho - rho0| / rho0 over particles with a full neighbourhood... see `shaders/sim/stats.wgsl`.
    pub max_density_error: f32,
    /// m/s.
    pub max_speed: f32,
    /// Joules: sum of m |v|^2 / 2.
    pub kinetic_energy: f32,
    /// Bounding box of the fluid, metres.
    pub bbox_min: [f32; 3],
    pub bbox_max: [f32; 3],
    /// Particles outside the domain box (should be 0).
    pub outside_domain: u32,
    /// Particles below the terrain surface (should be 0).
    pub below_terrain: u32,
    /// Particles with a NaN or infinite position or velocity (should be 0).
    pub non_finite: u32,
    /// DFSPH: iterations of the last constant-density solve (0 for the other solvers).
    pub density_iterations: u32,
    /// DFSPH: iterations of the last divergence-free solve (0 for the other solvers).
    pub divergence_iterations: u32,
}

use crate::gpu::{self, readback::ReadbackRing, GpuContext, Profiler};
use crate::scene::{Aabb, SceneSetup};
use crate::terrain::Heightfield;
use gpu_data::{Derived, GridShape, SimUniforms, StepState, BOUNDARY_TABLE_N};
use grid::GridPass;

/// Most steps [`Simulation::advance_to`] records into one submission (plus one).
const MAX_STEPS_PER_SUBMISSION: u32 = 256;
/// Most submissions of one [`Simulation::advance_to`] call before it gives up.
const MAX_ADVANCE_SUBMISSIONS: u32 = 4096;

/// What one [`Simulation::advance_to`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Advance {
    /// Simulated time reached, seconds (the target, exactly).
    pub time: f32,
    /// Steps that advanced the time (dt > 0).
    pub steps: u32,
    /// Steps recorded, including the no-ops past the target.
    pub steps_recorded: u32,
    /// Queue submissions, each followed by a blocking read of the step state.
    pub submissions: u32,
}

/// Bytes of the statistics record read back per frame (5 vec4, see shaders/sim/stats.wgsl).
const STATS_BYTES: u64 = 80;
/// Largest number of grid cells the scan covers in 1-D dispatches (blocks of 512, plus the parking cell
/// and the total).
const MAX_CELLS: u64 = 65_535 * 512 - 2;

/// Every GPU buffer of the simulation (bind group 0 of all simulation kernels, binding = field order).
struct Buffers {
    uniforms: wgpu::Buffer,
    step: wgpu::Buffer,
    pos: wgpu::Buffer,
    vel: wgpu::Buffer,
    spos: wgpu::Buffer,
    svel: wgpu::Buffer,
    cell_start: wgpu::Buffer,
    vstar: wgpu::Buffer,
    rho_p: wgpu::Buffer,
    heights: wgpu::Buffer,
    boundary_table: wgpu::Buffer,
    partials: wgpu::Buffer,
    stats_out: wgpu::Buffer,
    sources: wgpu::Buffer,
}

impl Buffers {
    /// (binding, buffer) for every binding of the simulation's bind group 0 (binding 7 is unused).
    fn all(&self) -> [(u32, &wgpu::Buffer); 16] {
        [
            (0, &self.uniforms),
            (1, &self.step),
            (2, &self.pos),
            (3, &self.vel),
            (4, &self.spos),
            (5, &self.svel),
            (6, &self.cell_start),
            (8, &self.vstar),
            // Scratch that lives only between the grid's scatter and `integrate`, bound onto the unsorted
            // state, which is dead in that window (the scatter has read it, integrate rewrites it):
            // `pred` (PCISPH predicted positions, DFSPH alpha and kappas) aliases `pos`, `accel` (pressure
            // acceleration, surface normals) aliases `vel`. Saves 32 bytes per particle.
            (9, &self.pos),
            (10, &self.vel),
            (11, &self.rho_p),
            (12, &self.heights),
            (13, &self.boundary_table),
            (14, &self.partials),
            (15, &self.stats_out),
            (16, &self.sources),
        ]
    }

    fn bind_group(&self, device: &wgpu::Device, layout: &wgpu::BindGroupLayout) -> wgpu::BindGroup {
        let entries: Vec<_> =
            self.all().iter().map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }).collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("sim bind group"), layout, entries: &entries })
    }
}

struct Pipelines {
    time_step: wgpu::ComputePipeline,
    density_forces: wgpu::ComputePipeline,
    pressure_force: wgpu::ComputePipeline,
    predict_density: wgpu::ComputePipeline,
    integrate: wgpu::ComputePipeline,
    emit_plan: wgpu::ComputePipeline,
    emit: wgpu::ComputePipeline,
    stats_partial: wgpu::ComputePipeline,
    stats_final: wgpu::ComputePipeline,
    /// Akinci et al. 2013's surface normals (shaders/sim/surface_tension.wgsl, compiled with pcisph.wgsl).
    surface_normals: wgpu::ComputePipeline,
}

/// Build options that are not physics: how the kernels are dispatched.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimOptions {
    /// Threads per workgroup of the per-particle kernels (32, 64, 128, 256, ...; at most the adapter's
    /// `max_compute_invocations_per_workgroup`).
    pub workgroup_size: u32,
    /// Parked particles allocated beyond the scene's for emitters to draw from
    /// ([`sources::pool_size`] gives a good size; 0 = no inflow possible without a rebuild).
    pub pool: u32,
    /// Cells of the neighbour grid's table per particle (rows of the domain's grid are folded to about
    /// this many cells; see [`GridShape`]). Larger wastes memory, smaller puts more unrelated cells into
    /// one bucket.
    pub cells_per_particle: f64,
    /// Neighbour-grid cells per support radius along an axis: 1 (cells of 2h, rows of 3 cells read as one
    /// range, 9 rows), 2 (cells of h, rows of 5, 25 rows) or 3. Smaller cells visit less empty volume
    /// and more row ranges.
    pub cell_split: u32,
}

/// Cells of margin around the fluid's bounding box in the neighbour grid's box: statistics arrive a few
/// frames late, and a step moves a particle at most cfl h (CFL), a fraction of a cell.
pub const GRID_BOX_PAD: u32 = 3;

/// Axis-aligned bounds (min, max) of points; (+inf, -inf) when there are none.
fn bounds(points: impl IntoIterator<Item = [f32; 3]>) -> ([f32; 3], [f32; 3]) {
    points.into_iter().fold(([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]), |(lo, hi), p| {
        (std::array::from_fn(|a| lo[a].min(p[a])), std::array::from_fn(|a| hi[a].max(p[a])))
    })
}

/// Default [`SimOptions::cells_per_particle`]: 2 cells per particle (8 bytes each) ran as fast as the
/// dense grid at 1 M particles once the grid's box follows the fluid (docs/performance.md).
pub const CELLS_PER_PARTICLE: f64 = 2.0;

/// Default [`SimOptions::cell_split`]: cells of h (25 rows of 5 cells per neighbour search) beat cells of
/// 2h (9 rows of 3) by 16 % at 1 M particles on the H100 (docs/performance.md).
pub const CELL_SPLIT: u32 = 2;

impl Default for SimOptions {
    fn default() -> Self {
        Self { workgroup_size: 128, pool: 0, cells_per_particle: CELLS_PER_PARTICLE, cell_split: CELL_SPLIT }
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
    count: u32,
    buffers: Buffers,
    bind: wgpu::BindGroup,
    pipelines: Pipelines,
    grid: GridPass,
    initial: (Vec<[f32; 4]>, Vec<[f32; 4]>),
    readback: ReadbackRing,
    frame: u64,
    latest: Option<SimStats>,
    workgroup_size: u32,
    /// The inflows and outflows as uploaded (emission state zeroed).
    sources: sources::SourcesGpu,
    /// Largest emitted layer, particles.
    max_layer: u32,
    pool: u32,
    dfsph: dfsph::DfsphPass,
}

impl Simulation {
    /// Uploads the scene's particles and terrain and builds all pipelines. The terrain is clamped into the
    /// domain's height range (the terrain is the floor). `params.dx` must be the spacing the particles
    /// were built with.
    /// Errors: parameters out of range, no particles, too many particles or grid cells for this GPU.
    pub fn new(ctx: &GpuContext, domain: &Aabb, setup: &SceneSetup, params: &SimParams) -> Result<Self, SimError> {
        Self::new_with(ctx, domain, setup, params, SimOptions::default())
    }

    /// [`Simulation::new`] with dispatch options (the benchmark's workgroup-size sweep).
    pub fn new_with(
        ctx: &GpuContext,
        domain: &Aabb,
        setup: &SceneSetup,
        params: &SimParams,
        options: SimOptions,
    ) -> Result<Self, SimError> {
        params.validate()?;
        if let Some(w) = &params.wave_maker {
            w.validate_in(domain.min, domain.max)?;
        }
        let wg = options.workgroup_size;
        if !wg.is_power_of_two() || wg < 32 || wg > ctx.device.limits().max_compute_invocations_per_workgroup {
            return Err(SimError::WorkgroupSize(wg));
        }
        if setup.positions.is_empty() {
            return Err(SimError::NoParticles);
        }
        let n = setup.positions.len() as u64 + options.pool as u64;
        let limit = ctx.max_storage_binding();
        // One thread per particle in one dimension of at most 65 535 workgroups; some kernels (the DFSPH
        // error sums, statistics, the renderer's anisotropy) use fixed workgroups of 128.
        let max_dispatch = 65_535 * wg.min(128) as u64;
        if n * 16 > limit || n > max_dispatch {
            let (max, why) = if limit / 16 < max_dispatch {
                (limit / 16, "its largest storage buffer holds that many 16-byte particles")
            } else {
                (max_dispatch, "65 535 workgroups of 128 threads per dispatch")
            };
            return Err(SimError::TooManyParticles { count: n, max, why });
        }
        if !(1..=3).contains(&options.cell_split) || !(options.cells_per_particle > 0.0) {
            return Err(SimError::GridOptions { cell_split: options.cell_split, cells_per_particle: options.cells_per_particle });
        }
        let cell_size = params.support() / options.cell_split as f32;
        let table = GridShape::folded(domain, cell_size, n, options.cells_per_particle);
        let cells = table.num_cells();
        let (lo, hi) = bounds(setup.positions.iter().map(|p| p.to_array()));
        let grid_shape = table.boxed(domain, lo, hi, GRID_BOX_PAD);
        if cells > MAX_CELLS || (cells + 2) * 4 > limit {
            return Err(SimError::TooManyCells { cells, limit: MAX_CELLS.min(limit / 4 - 1) });
        }
        let mut terrain = setup.terrain.clone();
        for hgt in &mut terrain.heights {
            *hgt = hgt.clamp(domain.min[1], domain.max[1]);
        }
        let derived = Derived::new(params);
        let device = &ctx.device;
        let n32 = n as u32;
        // Scene particles, then the parked pool (w < 0) at the domain's centre.
        let park = [0.5 * (domain.min[0] + domain.max[0]), 0.5 * (domain.min[1] + domain.max[1]), 0.5 * (domain.min[2] + domain.max[2]), -1.0];
        let pool = options.pool as usize;
        let initial: (Vec<[f32; 4]>, Vec<[f32; 4]>) = (
            setup.positions.iter().map(|p| [p.x, p.y, p.z, params.rho0]).chain(std::iter::repeat_n(park, pool)).collect(),
            setup.velocities.iter().map(|v| [v.x, v.y, v.z, 0.0]).chain(std::iter::repeat_n([0.0; 4], pool)).collect(),
        );
        let uniforms = SimUniforms::new(params, &derived, domain, &grid_shape, &terrain, n32);
        let table = kernel::boundary_table_for_lattice(params.dx as f64, params.h() as f64, BOUNDARY_TABLE_N as usize);
        let vec4s = n * 16;
        let groups = n.div_ceil(128);
        let buffers = Buffers {
            uniforms: gpu::uniform_buffer_init(device, "sim params", bytemuck::bytes_of(&uniforms)),
            step: gpu::storage_buffer_init(device, "sim step state", bytemuck::bytes_of(&StepState::default())),
            pos: gpu::storage_buffer_init(device, "sim pos", bytemuck::cast_slice(&initial.0)),
            vel: gpu::storage_buffer_init(device, "sim vel", bytemuck::cast_slice(&initial.1)),
            spos: gpu::storage_buffer(device, "sim sorted pos", vec4s),
            svel: gpu::storage_buffer(device, "sim sorted vel", vec4s),
            cell_start: gpu::storage_buffer(device, "sim cell_start", (cells + 2) * 4),
            vstar: gpu::storage_buffer(device, "sim v*", vec4s),
            rho_p: gpu::storage_buffer(device, "sim density+pressure", n * 8),
            heights: gpu::storage_buffer_init(device, "sim terrain heights", bytemuck::cast_slice(&terrain.heights)),
            boundary_table: gpu::storage_buffer_init(device, "sim boundary table", bytemuck::cast_slice(&table)),
            partials: gpu::storage_buffer(device, "sim stats partials", groups * 64),
            stats_out: gpu::storage_buffer(device, "sim stats", STATS_BYTES),
            sources: gpu::storage_buffer_init(device, "sim sources", bytemuck::bytes_of(&sources::to_gpu(&[], &[], params.dx)?)),
        };
        let vis = wgpu::ShaderStages::COMPUTE;
        let entries: Vec<_> = buffers
            .all()
            .iter()
            .map(|&(b, _)| if b == 0 { gpu::uniform_entry(0, vis) } else { gpu::storage_entry(b, false, vis) })
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("sim layout"), entries: &entries });
        let bind = buffers.bind_group(device, &layout);
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("sim pipeline layout"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pcisph = gpu::shader::module(device, "sim/pcisph.wgsl");
        let integrate = gpu::shader::module(device, "sim/integrate.wgsl");
        let stats = gpu::shader::module(device, "sim/stats.wgsl");
        let wg_const = [("WG", wg as f64)];
        let per_particle = |module: &wgpu::ShaderModule, entry: &str| gpu::compute_pipeline_with(device, module, &pl, entry, &wg_const);
        let pipelines = Pipelines {
            time_step: gpu::compute_pipeline(device, &integrate, &pl, "time_step"),
            density_forces: per_particle(&pcisph, "density_forces"),
            pressure_force: per_particle(&pcisph, "pressure_force"),
            predict_density: per_particle(&pcisph, "predict_density"),
            integrate: per_particle(&integrate, "integrate"),
            emit_plan: gpu::compute_pipeline(device, &integrate, &pl, "emit_plan"),
            emit: gpu::compute_pipeline(device, &integrate, &pl, "emit"),
            stats_partial: gpu::compute_pipeline(device, &stats, &pl, "stats_partial"),
            stats_final: gpu::compute_pipeline(device, &stats, &pl, "stats_final"),
            surface_normals: per_particle(&pcisph, "surface_normals"),
        };
        let grid = GridPass::new(device, &pl, &buffers.cell_start, cells as u32, wg);
        let dfsph = dfsph::DfsphPass::new(device, &layout, wg);
        Ok(Self {
            params: params.clone(),
            derived,
            domain: *domain,
            grid_shape,
            initial_grid: grid_shape,
            queue: ctx.queue.clone(),
            terrain,
            count: n32,
            buffers,
            bind,
            pipelines,
            grid,
            initial,
            readback: ReadbackRing::new(device, "sim stats", STATS_BYTES, 4),
            frame: 0,
            latest: None,
            workgroup_size: wg,
            sources: sources::to_gpu(&[], &[], params.dx)?,
            max_layer: 0,
            pool: options.pool,
            dfsph,
        })
    }

    /// Applies parameters that need no new buffers (iterations, substeps, viscosity, gravity, cfl, ...).
    /// A change of dx, h or rho0 needs a rebuild (`Simulation::new`); [`Simulation::needs_rebuild`] tells.
    pub fn set_params(&mut self, ctx: &GpuContext, params: &SimParams) -> Result<(), SimError> {
        params.validate()?;
        if let Some(w) = &params.wave_maker {
            w.validate_in(self.domain.min, self.domain.max)?;
        }
        if self.needs_rebuild(params) {
            return Err(SimError::Param(params::ParamError {
                field: "dx",
                value: params.dx as f64,
                range: "dx, h_over_dx and rho0 change only with a rebuild of the scene",
            }));
        }
        self.params = params.clone();
        self.upload_uniforms(ctx);
        Ok(())
    }

    fn upload_uniforms(&self, ctx: &GpuContext) {
        let u = SimUniforms::new(&self.params, &self.derived, &self.domain, &self.grid_shape, &self.terrain, self.count);
        ctx.queue.write_buffer(&self.buffers.uniforms, 0, bytemuck::bytes_of(&u));
    }

    /// Replaces the inflows and outflows (live). Emitters draw from the pool allocated at build time
    /// (`SimOptions::pool`); without one, adding an emitter is [`SimError::NoPool`] (rebuild the scene
    /// with [`crate::headless::build_simulation`], which sizes the pool from the scene's emitters).
    pub fn set_sources(&mut self, ctx: &GpuContext, emitters: &[crate::scene::Emitter], sinks: &[crate::scene::Sink]) -> Result<(), SimError> {
        if !emitters.is_empty() && self.pool == 0 {
            return Err(SimError::NoPool);
        }
        let mut gpu_sources = sources::to_gpu(emitters, sinks, self.params.dx)?;
        // Keep the volume each emitter is owed across edits of the same emitter.
        gpu_sources.state = self.sources.state;
        self.sources = gpu_sources;
        self.max_layer = self.sources.emitters[..emitters.len()].iter().map(|e| e.layer_points).max().unwrap_or(0);
        ctx.queue.write_buffer(&self.buffers.sources, 0, bytemuck::bytes_of(&self.sources));
        self.follow_fluid();
        Ok(())
    }

    /// Parked particles available to emitters (0 when built without inflow).
    pub fn pool(&self) -> u32 {
        self.pool
    }

    /// True when going from the current parameters to `params` needs new buffers.
    pub fn needs_rebuild(&self, params: &SimParams) -> bool {
        self.params.dx != params.dx || self.params.h_over_dx != params.h_over_dx || self.params.rho0 != params.rho0
    }

    /// Puts the particles back where the scene started them and the clock to zero.
    pub fn reset(&mut self, ctx: &GpuContext) {
        let q = &ctx.queue;
        q.write_buffer(&self.buffers.pos, 0, bytemuck::cast_slice(&self.initial.0));
        q.write_buffer(&self.buffers.vel, 0, bytemuck::cast_slice(&self.initial.1));
        q.write_buffer(&self.buffers.step, 0, bytemuck::bytes_of(&StepState::default()));
        q.write_buffer(&self.buffers.sources, 0, bytemuck::bytes_of(&self.sources));
        self.grid_shape = self.initial_grid;
        self.write_grid_box();
    }

    /// Advances the simulated time to exactly `t_end` seconds (absolute, as in [`SimStats::time`]) for
    /// offline work such as `waterview capture`, where every video frame must advance exactly 1/fps.
    ///
    /// Sets the `frame_end` uniform (see `time_step` in shaders/sim/integrate.wgsl: the step that reaches
    /// `t_end` lands on it exactly, later steps are no-ops with dt = 0), then repeatedly records
    /// `ceil(remaining / dt) + 1` steps in one submission, dt being the CFL step the GPU will take next
    /// (computed from the [`StepState`]'s max speed, as the shader does), and reads the 32-byte
    /// [`StepState`] back, until its time equals `t_end`. Each submission also resolves and ends a
    /// `profiler` frame. `frame_end` is back at 0 (free running) when this returns.
    ///
    /// **Blocks** on the GPU once per submission (usually one or two per call). The window never calls
    /// this: its frames record [`Simulation::encode_frame`] and read nothing back.
    ///
    /// Errors ([`SimError::Advance`]): `t_end` not finite or not after the current time, the step state
    /// could not be read (device lost), or the time stopped moving (non-finite state) or did not get
    /// there within a bounded number of submissions.
    pub fn advance_to(&mut self, ctx: &GpuContext, profiler: &mut Profiler, t_end: f32) -> Result<Advance, SimError> {
        let mut state = self.step_state_blocking(ctx)?;
        let fail = |time: f32, reason: &'static str| SimError::Advance { target: t_end, time, reason };
        if !t_end.is_finite() || t_end <= 0.0 {
            return Err(fail(state.time, "the target must be a positive, finite time"));
        }
        if state.time > t_end {
            return Err(fail(state.time, "the target lies before the current time"));
        }
        let mut report = Advance { time: state.time, steps: 0, steps_recorded: 0, submissions: 0 };
        if state.time == t_end {
            return Ok(report);
        }
        let start_steps = state.steps;
        self.set_frame_end(ctx, t_end);
        let result = loop {
            if report.submissions >= MAX_ADVANCE_SUBMISSIONS {
                break Err(fail(state.time, "it did not get there within the bounded number of submissions"));
            }
            let dt = self.next_dt(&state);
            let n = ((t_end - state.time) as f64 / dt as f64).ceil().clamp(0.0, MAX_STEPS_PER_SUBMISSION as f64) as u32 + 1;
            let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("advance to") });
            for _ in 0..n {
                self.encode_step(&mut encoder, profiler);
            }
            profiler.resolve(&mut encoder);
            ctx.queue.submit([encoder.finish()]);
            profiler.end_frame(&ctx.queue);
            report.submissions += 1;
            report.steps_recorded += n;
            let before = state.time;
            state = match self.step_state_blocking(ctx) {
                Ok(s) => s,
                Err(e) => break Err(e),
            };
            if state.time == t_end {
                break Ok(());
            }
            if !state.time.is_finite() || state.time > t_end {
                break Err(fail(state.time, "the simulated time left the expected range"));
            }
            if state.time <= before {
                break Err(fail(state.time, "the simulated time stopped moving"));
            }
        };
        self.set_frame_end(ctx, 0.0);
        result?;
        report.time = state.time;
        report.steps = state.steps.wrapping_sub(start_steps);
        Ok(report)
    }

    /// Blocking read of the 32-byte [`StepState`] (dt and time of the last step, its max speed, the step
    /// count, the DFSPH iteration counts). Offline and test use only: it waits for the GPU.
    /// Errors: [`SimError::Advance`] when nothing comes back (the device is lost).
    pub fn step_state_blocking(&self, ctx: &GpuContext) -> Result<StepState, SimError> {
        let bytes = gpu::readback::read_buffer_blocking(ctx, &self.buffers.step);
        match bytes.get(..std::mem::size_of::<StepState>()) {
            Some(b) => Ok(bytemuck::pod_read_unaligned(b)),
            None => Err(SimError::Advance { target: f32::NAN, time: f32::NAN, reason: "the step state could not be read back" }),
        }
    }

    /// The time step the GPU's `time_step` takes next from `state` (a [`StepState`] read back, e.g.
    /// asynchronously by the window's offline render, [`crate::capture::exact`]), before any `frame_end`
    /// clamp: min(max_dt, cfl h / signal speed), at least 1e-3 max_dt. For planning how many steps to
    /// record; the GPU decides the step itself.
    pub fn next_step_dt(&self, state: &StepState) -> f32 {
        self.next_dt(state)
    }

    /// The time step `time_step` (shaders/sim/integrate.wgsl) picks next from `state`'s max speed, before
    /// any `frame_end` clamp: min(max_dt, cfl h / signal speed), at least 1e-3 max_dt.
    fn next_dt(&self, state: &StepState) -> f32 {
        let v_max = f32::from_bits(state.max_speed_bits);
        let max_dt = self.params.max_dt();
        let signal = if self.params.method == Method::Wcsph {
            v_max + gpu_data::wcsph_sound_speed(&self.params, &self.domain)
        } else {
            v_max
        };
        let dt = if signal > 0.0 { max_dt.min(self.params.cfl * self.params.h() / signal) } else { max_dt };
        if dt.is_finite() { dt.max(1e-3 * max_dt) } else { 1e-3 * max_dt }
    }

    /// Writes the `frame_end` uniform alone: absolute simulated time, seconds, at which steps stop (the
    /// step reaching it lands on it, later ones are exact no-ops with dt = 0); 0 = free running. Takes
    /// effect from the next submission; [`Simulation::set_params`] puts it back to 0.
    /// [`Simulation::advance_to`] sets and clears it; tests use it to record steps past the end.
    pub fn set_frame_end(&self, ctx: &GpuContext, t: f32) {
        let offset = std::mem::offset_of!(SimUniforms, frame_end) as u64;
        ctx.queue.write_buffer(&self.buffers.uniforms, offset, bytemuck::bytes_of(&t));
    }

    /// Records one rendered frame of simulation: `params.substeps` steps, no read-back.
    pub fn encode_frame(&mut self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        for _ in 0..self.params.substeps {
            self.encode_step(encoder, profiler);
        }
    }

    /// Records one step: grid build, time step, density and non-pressure forces, the PCISPH iterations,
    /// integration with boundary handling.
    pub fn encode_step(&mut self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        let n = self.count;
        let p = &self.pipelines;
        self.grid.encode(encoder, profiler, &self.bind, &self.buffers.cell_start, n);
        let g = gpu::groups(n, self.workgroup_size);
        if self.params.surface_tension > 0.0 {
            // Surface normals into `accel` (free until the pressure force; unused by DFSPH), read by the
            // non-pressure forces of every solver (shaders/sim/surface_tension.wgsl). Skipped when off.
            let mut pass = profiler.compute_pass(encoder, "surface normals");
            pass.set_bind_group(0, &self.bind, &[]);
            pass.set_pipeline(&p.surface_normals);
            pass.dispatch_workgroups(g, 1, 1);
        }
        if self.params.method == Method::Dfsph {
            self.encode_time_step(encoder, profiler, false);
            // Iterations recorded: the limits, or fewer when the solves recently needed far fewer
            // (from the asynchronously read statistics; the GPU still stops each solve on its own).
            let cap = |used: Option<u32>, max: u32| used.map_or(max, |u| (2 * u + 4).min(max));
            let last = self.latest.as_ref();
            let iterations = (
                cap(last.map(|s| s.divergence_iterations), self.params.divergence_iterations),
                cap(last.map(|s| s.density_iterations), self.params.density_iterations),
            );
            self.dfsph.encode(encoder, profiler, &self.bind, n, iterations);
        } else {
            self.encode_time_step(encoder, profiler, true);
            let mut pass = profiler.compute_pass(encoder, "pressure");
            pass.set_bind_group(0, &self.bind, &[]);
            // WCSPH: the Tait pressure from density_forces, one force evaluation. PCISPH: iterations.
            let iterations = if self.params.method == Method::Wcsph { 0 } else { self.params.solver_iterations };
            for _ in 0..iterations {
                pass.set_pipeline(&p.pressure_force);
                pass.dispatch_workgroups(g, 1, 1);
                pass.set_pipeline(&p.predict_density);
                pass.dispatch_workgroups(g, 1, 1);
            }
            pass.set_pipeline(&p.pressure_force);
            pass.dispatch_workgroups(g, 1, 1);
        }
        {
            let mut pass = profiler.compute_pass(encoder, "integrate");
            pass.set_bind_group(0, &self.bind, &[]);
            pass.set_pipeline(&p.integrate);
            pass.dispatch_workgroups(g, 1, 1);
            if self.sources.num_emitters > 0 {
                pass.set_pipeline(&p.emit_plan);
                pass.dispatch_workgroups(1, 1, 1);
                pass.set_pipeline(&p.emit);
                pass.dispatch_workgroups(self.max_layer.div_ceil(64).max(1), self.sources.num_emitters, 1);
            }
        }
    }

    /// Records the statistics reduction and its copy into the read-back ring (skipped when the ring is full).
    pub fn encode_stats(&mut self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        {
            let mut pass = profiler.compute_pass(encoder, "stats");
            pass.set_bind_group(0, &self.bind, &[]);
            pass.set_pipeline(&self.pipelines.stats_partial);
            pass.dispatch_workgroups(gpu::groups(self.count, 128), 1, 1);
            pass.set_pipeline(&self.pipelines.stats_final);
            pass.dispatch_workgroups(1, 1, 1);
        }
        self.frame += 1;
        self.readback.copy_buffer(encoder, &self.buffers.stats_out, 0, self.frame);
    }

    /// Call right after the queue submission that holds `encode_stats`.
    pub fn after_submit(&mut self) {
        self.readback.submitted();
    }

    /// Newest statistics that have arrived (call `device.poll(Poll)` once per frame before). Never blocks.
    /// Also moves the neighbour grid's box onto the fluid's bounding box from those statistics (and the
    /// emitters' discs), padded by [`GRID_BOX_PAD`] cells for the frames the figures are late: a uniform
    /// write, nothing waits.
    pub fn poll_stats(&mut self) -> Option<&SimStats> {
        let mut arrived = false;
        while let Some((frame, bytes)) = self.readback.try_take() {
            self.latest = Some(decode_stats(frame, &bytes));
            arrived = true;
        }
        if arrived {
            self.follow_fluid();
        }
        self.latest.as_ref()
    }

    /// Moves the grid's box onto the last statistics' particle bounds and the emitters (see `poll_stats`).
    fn follow_fluid(&mut self) {
        // Before the first statistics: the current box (which held the initial particles).
        let g = &self.grid_shape;
        let fluid = match &self.latest {
            Some(s) => [s.bbox_min, s.bbox_max],
            None => [g.origin, std::array::from_fn(|a| g.origin[a] + g.dims[a] as f32 * g.cell_size)],
        };
        let emitters = &self.sources.emitters[..self.sources.num_emitters as usize];
        let discs = emitters.iter().flat_map(|e| {
            let c = glam::Vec3::from(e.center);
            [(c - glam::Vec3::splat(e.radius)).to_array(), (c + glam::Vec3::splat(e.radius)).to_array()]
        });
        let (lo, hi) = bounds(fluid.into_iter().chain(discs));
        if !(lo.iter().chain(&hi).all(|v| v.is_finite()) && (0..3).all(|a| lo[a] <= hi[a])) {
            return;
        }
        let next = self.grid_shape.boxed(&self.domain, lo, hi, GRID_BOX_PAD);
        if next != self.grid_shape {
            self.grid_shape = next;
            self.write_grid_box();
        }
    }

    /// Puts the neighbour grid's box on `lo..hi` (metres, padded by [`GRID_BOX_PAD`] cells, within the
    /// domain) until the next statistics move it onto the fluid again. Particles outside the box are
    /// clamped into its border cells, which changes speed, not results; tests use this to check that.
    pub fn set_grid_box(&mut self, lo: [f32; 3], hi: [f32; 3]) {
        self.grid_shape = self.grid_shape.boxed(&self.domain, lo, hi, GRID_BOX_PAD);
        self.write_grid_box();
    }

    /// Writes the grid box's uniforms alone (origin and dims; the table and cell size never change).
    fn write_grid_box(&self) {
        let g = &self.grid_shape;
        let origin = std::mem::offset_of!(SimUniforms, grid_origin) as u64;
        let dims = std::mem::offset_of!(SimUniforms, grid_dims) as u64;
        self.queue.write_buffer(&self.buffers.uniforms, origin, bytemuck::bytes_of(&g.origin));
        self.queue.write_buffer(&self.buffers.uniforms, dims, bytemuck::bytes_of(&g.dims));
    }

    /// True while a statistics read-back is still on its way (headless runs poll until it lands).
    pub fn stats_in_flight(&self) -> bool {
        self.readback.in_flight()
    }

    pub fn particle_count(&self) -> u32 {
        self.count
    }

    /// `array<vec4<f32>>`: xyz = position (m), w = density (kg/m^3).
    pub fn positions(&self) -> &wgpu::Buffer {
        &self.buffers.pos
    }

    /// `array<vec4<f32>>`: xyz = velocity (m/s), w = pressure (Pa).
    pub fn velocities(&self) -> &wgpu::Buffer {
        &self.buffers.vel
    }

    /// The step state kept on the GPU (`StepState` in shaders/sim/common.wgsl, 32 bytes: dt in s at byte 0,
    /// simulated time in s at byte 4), for passes that follow the simulated clock, e.g. the renderer's
    /// wave maker paddle ([`crate::render::WaveMakerPass`]).
    pub fn step_state(&self) -> &wgpu::Buffer {
        &self.buffers.step
    }

    pub fn params(&self) -> &SimParams {
        &self.params
    }

    /// Particle mass, kg (rho0 times the lattice-normalised volume, close to rho0 dx^3).
    pub fn mass(&self) -> f32 {
        self.derived.mass
    }

    /// The terrain the simulation collides with (clamped into the domain).
    pub fn terrain(&self) -> &Heightfield {
        &self.terrain
    }

    pub fn domain(&self) -> &Aabb {
        &self.domain
    }

    /// Threads per workgroup of the per-particle kernels.
    pub fn workgroup_size(&self) -> u32 {
        self.workgroup_size
    }

    /// Particle radius for drawing, metres (dx / 2).
    pub fn particle_radius(&self) -> f32 {
        0.5 * self.params.dx
    }

    /// Bytes of GPU memory allocated by the simulation (all buffers).
    pub fn bytes_allocated(&self) -> u64 {
        let mut seen: Vec<&wgpu::Buffer> = Vec::new();
        for (_, b) in self.buffers.all() {
            // Aliased bindings (pred = pos, accel = vel) count once.
            if !seen.iter().any(|s| *s == b) {
                seen.push(b);
            }
        }
        seen.iter().map(|b| b.size()).sum()
    }

    /// Blocking read of the particle state (positions with density, velocities with pressure), in the
    /// order of the last step. For tests and headless runs only: it waits for the GPU.
    pub fn read_particles_blocking(&self, ctx: &GpuContext) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
        (
            bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.pos)).to_vec(),
            bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.vel)).to_vec(),
        )
    }

    /// Blocking read of the grid of the last build: (cell starts with cells + 1 entries, the last being the
    /// number of active particles; sorted positions). The GPU keeps cell ends (see grid.wgsl); this shifts
    /// them back to the conventional starts. For tests.
    pub fn read_grid_blocking(&self, ctx: &GpuContext) -> (Vec<u32>, Vec<[f32; 4]>) {
        let ends: Vec<u32> = bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.cell_start)).to_vec();
        let cells = self.grid_shape.num_cells() as usize;
        let starts = std::iter::once(0).chain(ends[..cells].iter().copied()).collect();
        (starts, bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.spos)).to_vec())
    }

    /// Blocking read of (density, pressure) per sorted particle from the last step. For tests.
    pub fn read_density_blocking(&self, ctx: &GpuContext) -> Vec<[f32; 2]> {
        bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.rho_p)).to_vec()
    }

    /// Records only the grid build (for tests of the counting sort).
    pub fn encode_grid(&self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        self.grid.encode(encoder, profiler, &self.bind, &self.buffers.cell_start, self.count);
    }

    /// Records the grid build and the density pass only (for tests of the density summation).
    pub fn encode_density_only(&self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        self.encode_grid(encoder, profiler);
        self.encode_time_step(encoder, profiler, true);
    }

    /// The "density" pass: the GPU-side CFL time step, then (PCISPH, WCSPH) density and non-pressure
    /// forces. DFSPH computes its density inside its own passes.
    fn encode_time_step(&self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler, density_forces: bool) {
        let mut pass = profiler.compute_pass(encoder, "density");
        pass.set_bind_group(0, &self.bind, &[]);
        pass.set_pipeline(&self.pipelines.time_step);
        pass.dispatch_workgroups(1, 1, 1);
        if density_forces {
            pass.set_pipeline(&self.pipelines.density_forces);
            pass.dispatch_workgroups(gpu::groups(self.count, self.workgroup_size), 1, 1);
        }
    }

    /// The neighbour grid's shape.
    pub fn grid_shape(&self) -> GridShape {
        self.grid_shape
    }
}

fn decode_stats(frame: u64, bytes: &[u8]) -> SimStats {
    let f: &[f32] = bytemuck::cast_slice(&bytes[..STATS_BYTES as usize]);
    let count = f[7] as u32;
    SimStats {
        frame,
        time: f[16],
        dt: f[17],
        particle_count: count,
        mean_density_error: f[0] / count.max(1) as f32,
        max_density_error: f[4],
        max_speed: f[5],
        kinetic_energy: f[1],
        bbox_min: [-f[12], -f[13], -f[14]],
        bbox_max: [f[8], f[9], f[10]],
        outside_domain: f[2] as u32,
        below_terrain: f[3] as u32,
        non_finite: f[6] as u32,
        density_iterations: f[18] as u32,
        divergence_iterations: f[19] as u32,
    }
}
