//! GPU SPH simulation (WGSL compute): counting-sort neighbour grid rebuilt every step ([`grid`]), DFSPH
//! ([`dfsph`], the default), PCISPH or WCSPH pressure, artificial viscosity, XSPH and optional surface
//! tension, a CFL-limited time step kept on the GPU, and boundaries from the terrain heightfield, the
//! domain walls and an optional wave maker. Nothing is read back inside a step; statistics
//! ([`SimStats`], src/sim/stats.rs) come back asynchronously through a read-back ring, a frame or more
//! late. [`Simulation::advance_to`] (src/sim/advance.rs): exact offline time steps.
//!
//! Public buffers the renderer reads (both in the sorted order of the last step):
//! - `positions()`: `array<vec4<f32>>`, xyz = position (m), w = density (kg/m^3)
//! - `velocities()`: `array<vec4<f32>>`, xyz = velocity (m/s), w = pressure (Pa)

mod advance;
mod buffers;
pub mod dfsph;
pub mod initial;
pub mod gpu_data;
pub mod grid;
pub mod kernel;
pub mod params;
pub mod reference;
pub mod sources;
mod stats;

pub use advance::Advance;
pub use grid::GRID_BOX_PAD;
pub use params::{Method, SimParams};
pub use stats::SimStats;

use thiserror::Error;

/// Why a simulation could not be created or changed.
#[derive(Debug, Error)]
pub enum SimError {
    /// `max` = the particles whose largest per-particle buffer (the renderer's 32-byte ellipsoids) fits
    /// the GPU's largest storage binding.
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

use crate::gpu::{self, readback::ReadbackRing, GpuContext, Profiler};
use crate::scene::{Aabb, SceneSetup};
use crate::terrain::Heightfield;
use gpu_data::{Derived, GridShape, SimUniforms, StepState, BOUNDARY_TABLE_N};
use buffers::Buffers;
use grid::{bounds, GridPass};
use stats::{decode_stats, STATS_BYTES};

/// Most grid cells (u32 indices, plus the parking cell and the total); the storage binding bounds it first.
const MAX_CELLS: u64 = u32::MAX as u64 - 2;

/// Bytes per particle of the largest per-particle buffer that a simulation's particles end up in: the
/// renderer's ellipsoids (32 bytes); the simulation's own are 16.
const LARGEST_PER_PARTICLE: u64 = size_of::<crate::render::Ellipsoid>() as u64;

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
    /// Sum the DFSPH solves' errors with subgroup operations where the device has them
    /// (shaders/sim/error_sum_subgroup.wgsl); false keeps the workgroup-memory tree everywhere
    /// (`waterview bench --no-subgroups`).
    pub subgroups: bool,
}

/// Default [`SimOptions::cells_per_particle`]: 2 cells per particle (8 bytes each) ran as fast as the
/// dense grid at 1 M particles once the grid's box follows the fluid (docs/performance.md).
pub const CELLS_PER_PARTICLE: f64 = 2.0;

/// Default [`SimOptions::cell_split`]: cells of h (25 rows of 5 cells per neighbour search) beat cells of
/// 2h (9 rows of 3) by 16 % at 1 M particles on the H100 (docs/performance.md).
pub const CELL_SPLIT: u32 = 2;

impl Default for SimOptions {
    fn default() -> Self {
        Self { workgroup_size: 128, pool: 0, cells_per_particle: CELLS_PER_PARTICLE, cell_split: CELL_SPLIT, subgroups: true }
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
    /// The same buffers for the grid build, which writes the sorted positions and the cell table.
    grid_bind: wgpu::BindGroup,
    pipelines: Pipelines,
    grid: GridPass,
    initial: (Vec<[f32; 4]>, Vec<[f32; 4]>),
    readback: ReadbackRing,
    frame: u64,
    /// See [`Simulation::particles_version`].
    particles_version: u64,
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
        // One thread per particle in rows of workgroups (gpu::dispatch_size): the buffers bound the count.
        if n * LARGEST_PER_PARTICLE > limit {
            let why = "its largest storage buffer holds that many 32-byte ellipsoids (the renderer's; the simulation's particles take 16 bytes each per buffer)";
            return Err(SimError::TooManyParticles { count: n, max: limit / LARGEST_PER_PARTICLE, why });
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
            setup
                .velocities
                .iter()
                .zip(initial::hydrostatic_pressure(&setup.positions, params))
                .map(|(v, p)| [v.x, v.y, v.z, p])
                .chain(std::iter::repeat_n([0.0; 4], pool))
                .collect(),
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
        // Two layouts over the same buffers: the grid build writes the sorted positions (4) and the cell
        // table (6); every later kernel only reads them, and declaring them read-only there lets the
        // driver use its read-only cache path. The terrain (12) and boundary table (13) are read-only.
        let layout = buffers.layout(device, "sim layout", &[4, 6, 12, 13]);
        let grid_layout = buffers.layout(device, "sim grid layout", &[12, 13]);
        let bind = buffers.bind_group(device, &layout);
        let grid_bind = buffers.bind_group(device, &grid_layout);
        let pipeline_layout = |label: &str, layout: &wgpu::BindGroupLayout| {
            let desc = wgpu::PipelineLayoutDescriptor { label: Some(label), bind_group_layouts: &[Some(layout)], immediate_size: 0 };
            device.create_pipeline_layout(&desc)
        };
        let pl = pipeline_layout("sim pipeline layout", &layout);
        let grid_pl = pipeline_layout("sim grid pipeline layout", &grid_layout);
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
        let grid = GridPass::new(device, &grid_pl, &buffers.cell_start, cells as u32, wg);
        let dfsph = dfsph::DfsphPass::new(device, &layout, wg, options.subgroups && ctx.has_subgroups());
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
            grid_bind,
            pipelines,
            grid,
            initial,
            readback: ReadbackRing::new(device, "sim stats", STATS_BYTES, 4),
            frame: 0,
            particles_version: 0,
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
        self.particles_version += 1;
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

    /// Records one rendered frame of simulation: `params.substeps` steps, no read-back.
    pub fn encode_frame(&mut self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        for _ in 0..self.params.substeps {
            self.encode_step(encoder, profiler);
        }
    }

    /// Records one step: grid build, time step, density and non-pressure forces, the PCISPH iterations,
    /// integration with boundary handling.
    pub fn encode_step(&mut self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler) {
        self.particles_version += 1;
        let n = self.count;
        let p = &self.pipelines;
        self.grid.encode(encoder, profiler, &self.grid_bind, &self.buffers.cell_start, n);
        let g = gpu::groups(n, self.workgroup_size);
        // Surface normals into `accel` (free until the pressure force; DFSPH's divergence solve uses it
        // before), read by the non-pressure forces of every solver (shaders/sim/surface_tension.wgsl).
        // Skipped when off.
        let surface_tension = self.params.surface_tension > 0.0;
        let normals = |encoder: &mut wgpu::CommandEncoder| {
            let mut pass = profiler.compute_pass(encoder, "surface normals");
            pass.set_bind_group(0, &self.bind, &[]);
            pass.set_pipeline(&p.surface_normals);
            gpu::dispatch_rows(&mut pass, g);
        };
        if self.params.method == Method::Dfsph {
            self.encode_time_step(encoder, profiler, false);
            // Iterations recorded: the limits, or fewer when the solves recently needed far fewer
            // (from the asynchronously read statistics, which count the iterations that ran, so a solve cut
            // short here gets more next time; the GPU still stops each solve on its own).
            let cap = |used: Option<u32>, max: u32| used.map_or(max, |u| (2 * u + 4).min(max));
            let last = self.latest.as_ref();
            let iterations = (
                cap(last.map(|s| s.divergence_iterations), self.params.divergence_iterations),
                cap(last.map(|s| s.density_iterations), self.params.density_iterations),
            );
            self.dfsph.encode(encoder, profiler, &self.bind, n, iterations, surface_tension.then_some(normals));
        } else {
            if surface_tension {
                normals(encoder);
            }
            self.encode_time_step(encoder, profiler, true);
            let mut pass = profiler.compute_pass(encoder, "pressure");
            pass.set_bind_group(0, &self.bind, &[]);
            // WCSPH: the Tait pressure from density_forces, one force evaluation. PCISPH: iterations.
            let iterations = if self.params.method == Method::Wcsph { 0 } else { self.params.solver_iterations };
            for _ in 0..iterations {
                pass.set_pipeline(&p.pressure_force);
                gpu::dispatch_rows(&mut pass, g);
                pass.set_pipeline(&p.predict_density);
                gpu::dispatch_rows(&mut pass, g);
            }
            pass.set_pipeline(&p.pressure_force);
            gpu::dispatch_rows(&mut pass, g);
        }
        {
            let mut pass = profiler.compute_pass(encoder, "integrate");
            pass.set_bind_group(0, &self.bind, &[]);
            pass.set_pipeline(&p.integrate);
            gpu::dispatch_rows(&mut pass, g);
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
            gpu::dispatch_rows(&mut pass, gpu::groups(self.count, 128));
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

    /// A number that changes whenever a step or a reset is recorded (anything that moves the particles):
    /// the renderer keeps the anisotropy's ellipsoids while it stays the same (a paused simulation).
    pub fn particles_version(&self) -> u64 {
        self.particles_version
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
        self.grid.encode(encoder, profiler, &self.grid_bind, &self.buffers.cell_start, self.count);
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
            gpu::dispatch_rows(&mut pass, gpu::groups(self.count, self.workgroup_size));
        }
    }

    /// The neighbour grid's shape.
    pub fn grid_shape(&self) -> GridShape {
        self.grid_shape
    }
}

