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
    #[error("{count} particles need {bytes} bytes per buffer, past this GPU's limit of {limit} bytes; increase dx or shrink the fluid blocks")]
    TooManyParticles { count: u64, bytes: u64, limit: u64 },
    #[error("the scene has no fluid particles (fluid blocks empty or below the terrain)")]
    NoParticles,
    #[error("the neighbour grid would need {cells} cells (domain / support radius), past the limit of {limit}; increase dx or shrink the domain")]
    TooManyCells { cells: u64, limit: u64 },
    #[error(transparent)]
    Param(#[from] params::ParamError),
    #[error("workgroup size {0} is not a power of two between 32 and this GPU's limit")]
    WorkgroupSize(u32),
    #[error(transparent)]
    Source(#[from] sources::SourceError),
    #[error("this simulation was built without a particle pool for inflow; rebuild the scene to add an emitter")]
    NoPool,
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
    cell_slot: wgpu::Buffer,
    vstar: wgpu::Buffer,
    pred: wgpu::Buffer,
    accel: wgpu::Buffer,
    rho_p: wgpu::Buffer,
    heights: wgpu::Buffer,
    boundary_table: wgpu::Buffer,
    partials: wgpu::Buffer,
    stats_out: wgpu::Buffer,
    sources: wgpu::Buffer,
}

impl Buffers {
    fn all(&self) -> [&wgpu::Buffer; 17] {
        [
            &self.uniforms, &self.step, &self.pos, &self.vel, &self.spos, &self.svel, &self.cell_start, &self.cell_slot,
            &self.vstar, &self.pred, &self.accel, &self.rho_p, &self.heights, &self.boundary_table, &self.partials,
            &self.stats_out, &self.sources,
        ]
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
}

impl Default for SimOptions {
    fn default() -> Self {
        Self { workgroup_size: 128, pool: 0 }
    }
}

/// The GPU particle simulation of one scene. See the module docs for the buffer layout.
pub struct Simulation {
    params: SimParams,
    derived: Derived,
    domain: Aabb,
    grid_shape: GridShape,
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
        let wg = options.workgroup_size;
        if !wg.is_power_of_two() || wg < 32 || wg > ctx.device.limits().max_compute_invocations_per_workgroup {
            return Err(SimError::WorkgroupSize(wg));
        }
        if setup.positions.is_empty() {
            return Err(SimError::NoParticles);
        }
        let n = setup.positions.len() as u64 + options.pool as u64;
        let limit = ctx.max_storage_binding();
        let max_dispatch = 65_535 * wg as u64;
        if n * 16 > limit || n > max_dispatch {
            return Err(SimError::TooManyParticles { count: n, bytes: n * 16, limit: limit.min(max_dispatch * 16) });
        }
        let grid_shape = GridShape::new(domain, params.support());
        let cells = grid_shape.num_cells();
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
            cell_slot: gpu::storage_buffer(device, "sim cell_slot", n * 8),
            vstar: gpu::storage_buffer(device, "sim v*", vec4s),
            pred: gpu::storage_buffer(device, "sim predicted pos", vec4s),
            accel: gpu::storage_buffer(device, "sim pressure accel", vec4s),
            rho_p: gpu::storage_buffer(device, "sim density+pressure", n * 8),
            heights: gpu::storage_buffer_init(device, "sim terrain heights", bytemuck::cast_slice(&terrain.heights)),
            boundary_table: gpu::storage_buffer_init(device, "sim boundary table", bytemuck::cast_slice(&table)),
            partials: gpu::storage_buffer(device, "sim stats partials", groups * 64),
            stats_out: gpu::storage_buffer(device, "sim stats", STATS_BYTES),
            sources: gpu::storage_buffer_init(device, "sim sources", bytemuck::bytes_of(&sources::to_gpu(&[], &[], params.dx)?)),
        };
        let vis = wgpu::ShaderStages::COMPUTE;
        let mut entries = vec![gpu::uniform_entry(0, vis)];
        entries.extend((1..17).map(|b| gpu::storage_entry(b, false, vis)));
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("sim layout"), entries: &entries });
        let bind = gpu::bind_buffers(device, "sim bind group", &layout, &buffers.all());
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
        };
        let grid = GridPass::new(device, &pl, &buffers.cell_start, cells as u32, wg);
        let dfsph = dfsph::DfsphPass::new(device, &layout, wg);
        Ok(Self {
            params: params.clone(),
            derived,
            domain: *domain,
            grid_shape,
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
    pub fn poll_stats(&mut self) -> Option<&SimStats> {
        while let Some((frame, bytes)) = self.readback.try_take() {
            self.latest = Some(decode_stats(frame, &bytes));
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
        self.buffers.all().iter().map(|b| b.size()).sum()
    }

    /// Blocking read of the particle state (positions with density, velocities with pressure), in the
    /// order of the last step. For tests and headless runs only: it waits for the GPU.
    pub fn read_particles_blocking(&self, ctx: &GpuContext) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
        (
            bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.pos)).to_vec(),
            bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.vel)).to_vec(),
        )
    }

    /// Blocking read of the grid of the last build: (cell_start with cells + 1 entries, sorted positions,
    /// (cell, slot) per unsorted particle). For tests.
    pub fn read_grid_blocking(&self, ctx: &GpuContext) -> (Vec<u32>, Vec<[f32; 4]>, Vec<[u32; 2]>) {
        (
            bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.cell_start)).to_vec(),
            bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.spos)).to_vec(),
            bytemuck::cast_slice(&gpu::readback::read_buffer_blocking(ctx, &self.buffers.cell_slot)).to_vec(),
        )
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
