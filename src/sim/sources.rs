//! Inflows (emitters) and outflows (sinks) on the GPU. Emitters draw particles from a fixed pool of
//! parked particles (w < 0) allocated when the simulation is built; sinks park the particles that enter
//! them, returning them to the pool. See `emit_plan` and `emit` in shaders/sim/sources.wgsl (recorded by `EmitStage`).

use super::stage::{Stage, StageLayouts, StepContext};
use super::{SimError, SimOptions, Simulation, Source};
use crate::gpu::GpuContext;
use crate::scene::{Emitter, Sink};
use bytemuck::{Pod, Zeroable};
use glam::Vec3;

/// The "emit" pass (`shaders/sim/sources.wgsl`), recorded after integrate while there are emitters:
/// `emit_plan` (one thread) assigns each emitter that owes a layer its indices in the pool, `emit` places
/// the layers' particles on their discs, with ids tracked (a rank) in its `IDS` variant, which gives them
/// their ids ([`RankEmission`]) and runs on the grid build's layout (where the ids are writable).
pub(super) struct EmitStage {
    plan: wgpu::ComputePipeline,
    emit: wgpu::ComputePipeline,
    /// `emit` is the `IDS` variant, bound with the grid build's group 0.
    ids: bool,
}

/// Threads per workgroup of `emit` (its `@workgroup_size`).
pub const EMIT_WG: u32 = 64;

impl EmitStage {
    pub fn new(layouts: &StageLayouts) -> Self {
        let module = layouts.module("sim/sources.wgsl", &[]);
        let plan = layouts.fixed(&module, "emit_plan");
        let ids = layouts.ghosts;
        let emit = match ids {
            false => layouts.fixed(&module, "emit"),
            true => {
                let module = layouts.module("sim/sources.wgsl", &["IDS"]);
                crate::gpu::compute_pipeline_with(layouts.device, &module, &layouts.grid, "emit", &[layouts.split])
            }
        };
        Self { plan, emit, ids }
    }
}

impl EmitStage {
    /// The `emit` dispatch for `emitters` whose largest layer holds `max_layer` points: the points in
    /// rows of workgroups of [`EMIT_WG`] (x, y), one z layer per emitter. Scene validation bounds a layer
    /// by [`MAX_LAYER_POINTS`]; this errors only past the device's workgroups per dimension.
    pub fn workgroups(
        max_layer: u32,
        emitters: u32,
        limits: &wgpu::Limits,
    ) -> Result<crate::gpu::Workgroups, crate::gpu::DispatchError> {
        crate::gpu::workgroups("emit", max_layer as u64, EMIT_WG, emitters, limits)
    }
}

impl Stage for EmitStage {
    type Input<'a> = ();

    fn encode(&self, step: &mut StepContext<'_>, (): ()) {
        let emit = step.dispatch.emit;
        let grid_bind = step.grid_bind;
        let mut pass = step.pass("emit");
        pass.set_pipeline(&self.plan);
        crate::gpu::dispatch(&mut pass, crate::gpu::Workgroups::ONE);
        if self.ids {
            pass.set_bind_group(0, grid_bind, &[]);
        }
        pass.set_pipeline(&self.emit);
        crate::gpu::dispatch(&mut pass, emit);
    }
}

/// Most emitters and most sinks one simulation holds (each).
pub const MAX_SOURCES: usize = 8;

/// WGSL twin: `EmitterGpu` in shaders/sim/common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct EmitterGpu {
    pub center: [f32; 3],
    pub radius: f32,
    pub velocity: [f32; 3],
    pub rate: f32,
    pub axis_u: [f32; 3],
    pub layer_points: u32,
    pub axis_v: [f32; 3],
    pub _pad: f32,
}
const _: () = assert!(std::mem::size_of::<EmitterGpu>() == 64);

/// WGSL twin: `EmitState`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct EmitState {
    /// Volume owed, m^3.
    pub carry: f32,
    /// First slot of this step's layer.
    pub base: u32,
    /// Slots of this step's layer (0: none emitted).
    pub count: u32,
    /// Points emitted so far (wrapping): the serial numbers of a rank's emitted ids.
    pub emitted: u32,
}

/// WGSL twin: `SinkGpu`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct SinkGpu {
    pub min: [f32; 3],
    pub _pad0: f32,
    pub max: [f32; 3],
    pub _pad1: f32,
}

/// WGSL twin: `Sources` (binding 16 of the simulation).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct SourcesGpu {
    pub num_emitters: u32,
    pub num_sinks: u32,
    /// The ranks of a decomposed simulation: the first id of an emitted particle (ids below 2^31;
    /// [`RankEmission`]). 0 on one GPU (no ids).
    pub first_id: u32,
    /// The slab (axis 0 = x, lo ..< hi, m) in which this simulation places emitted points
    /// ([`RankEmission`]); everywhere on one GPU.
    pub slab_axis: u32,
    pub slab_lo: f32,
    pub slab_hi: f32,
    pub _pad: [u32; 2],
    pub emitters: [EmitterGpu; MAX_SOURCES],
    pub state: [EmitState; MAX_SOURCES],
    pub sinks: [SinkGpu; MAX_SOURCES],
}
const _: () = assert!(std::mem::size_of::<SourcesGpu>() == 32 + 8 * (64 + 16 + 32));

/// Where a rank of a decomposed simulation (src/cluster) places emitted particles and which ids it gives
/// them, written into the [`SourcesGpu`] header every step ([`Simulation::set_rank_emission`]). Every
/// rank runs every emitter with the same clock, so every rank plans the same layers; each places only the
/// points within its own slab (the others' slots of the layer stay parked), so each point is placed once,
/// by the rank that owns where it lies, as one GPU places it. The id of point `t` of emitter `e`'s layer
/// that starts at serial `s` (its points emitted before) is `first_id + ((s + t) * MAX_SOURCES + e) mod
/// (2^31 - first_id)`: the same on any number of ranks, distinct for the first 2^31 - first_id emitted
/// points (ids wrap after that).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankEmission {
    /// The first id of an emitted particle: the scene's particle count.
    pub first_id: u32,
    /// Decomposition axis (0 = x, 1 = y, 2 = z).
    pub axis: usize,
    /// The rank's slab `lo <= c < hi` along the axis, m (infinite at the outer ends).
    pub lo: f32,
    pub hi: f32,
}

/// Why a set of sources cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SourceError {
    #[error("at most {MAX_SOURCES} emitters and {MAX_SOURCES} sinks are supported (got {0} and {1})")]
    TooMany(usize, usize),
    /// An emitter or sink out of range (see [`crate::scene::check_sources`]).
    #[error(transparent)]
    Invalid(#[from] crate::scene::InvalidValue),
    /// The simulation's pool cannot hold one layer of an emitter (grow it with [`Simulation::with_pool`]).
    #[error(
        "emitter {emitter}: one layer of {layer} particles does not fit this simulation's pool of {pool} \
         parked particles"
    )]
    LayerOverPool { emitter: usize, layer: u32, pool: u32 },
}

/// Most particles in one emitted layer (an emitter's disc holds about `pi radius^2 / dx^2`): a radius of
/// up to 577 dx. The pool keeps at least two layers ([`pool_size`]).
pub const MAX_LAYER_POINTS: u32 = 1 << 20;

/// Fewest parked particles a simulation with emitters gets.
pub const MIN_POOL: u32 = 4096;

/// Most parked particles a simulation's emitters draw from (4 194 304).
pub const MAX_POOL: u32 = 1 << 22;

/// Particles in one emitted layer: the disc's area over dx^2 (at least 1; saturates at `u32::MAX`).
pub fn layer_points(radius: f32, dx: f32) -> u32 {
    ((std::f32::consts::PI * radius * radius) / (dx * dx)).round().max(1.0) as u32
}

/// Volume flow, m^3/s, that a disc of `radius` metres carries at `speed` m/s when its layers of
/// [`layer_points`] particles (dx^3 each) leave one dx apart: layer_points dx^2 speed (pi r^2 speed for a
/// disc of many particles). An emitter's rate above it would pack its water denser than rest.
pub fn carried_rate(radius: f32, speed: f32, dx: f32) -> f32 {
    layer_points(radius, dx) as f32 * dx * dx * speed
}

/// Highest volume flow, m^3/s, of one emitter or of all of them together at spacing `dx` metres: the
/// largest pool ([`MAX_POOL`] particles of dx^3) must hold one second of it, so the water it adds stays
/// within what the GPU holds and every emitted layer has particles to draw from.
pub fn max_rate(dx: f32) -> f32 {
    MAX_POOL as f32 * dx * dx * dx
}

/// Pool size for a set of emitters at spacing `dx` metres: two minutes of their total flow and at least
/// two layers of the largest disc, within [`MIN_POOL`] ..= [`MAX_POOL`] (0 without emitters, so scenes
/// without inflow pay nothing).
pub fn pool_size(emitters: &[Emitter], dx: f32) -> u32 {
    if emitters.is_empty() {
        return 0;
    }
    let rate: f32 = emitters.iter().map(|e| e.rate.max(0.0)).sum();
    let flow = rate as f64 * 120.0 / (dx as f64).powi(3);
    let layers = emitters.iter().map(|e| 2.0 * layer_points(e.radius, dx) as f64).fold(0.0, f64::max);
    flow.max(layers).clamp(MIN_POOL as f64, MAX_POOL as f64) as u32
}

/// Converts the scene's sources into the GPU block (emission state zeroed). Their values are checked by
/// [`crate::scene::check_sources`] first ([`Simulation::set_sources`] does); this only refuses more than
/// [`MAX_SOURCES`] of either.
pub fn to_gpu(emitters: &[Emitter], sinks: &[Sink], dx: f32) -> Result<SourcesGpu, SourceError> {
    if emitters.len() > MAX_SOURCES || sinks.len() > MAX_SOURCES {
        return Err(SourceError::TooMany(emitters.len(), sinks.len()));
    }
    let mut g = SourcesGpu {
        num_emitters: emitters.len() as u32,
        num_sinks: sinks.len() as u32,
        first_id: 0,
        slab_axis: 0,
        slab_lo: -f32::MAX,
        slab_hi: f32::MAX,
        _pad: [0; 2],
        emitters: [EmitterGpu::default(); MAX_SOURCES],
        state: [EmitState::default(); MAX_SOURCES],
        sinks: [SinkGpu::default(); MAX_SOURCES],
    };
    for (k, e) in emitters.iter().enumerate() {
        let n = Vec3::from(e.velocity).normalize_or(Vec3::Y);
        let u = n.any_orthonormal_vector();
        let w = n.cross(u);
        g.emitters[k] = EmitterGpu {
            center: e.center,
            radius: e.radius,
            velocity: e.velocity,
            rate: e.rate,
            axis_u: u.to_array(),
            layer_points: layer_points(e.radius, dx),
            axis_v: w.to_array(),
            _pad: 0.0,
        };
    }
    for (k, s) in sinks.iter().enumerate() {
        g.sinks[k] = SinkGpu { min: s.min, _pad0: 0.0, max: s.max, _pad1: 0.0 };
    }
    Ok(g)
}

impl Simulation {
    /// Sets where this rank places emitted points and the ids it gives them ([`RankEmission`]), from the
    /// next step on; every rank before every step (its slab moves with the load balancing). Writes the
    /// header's 16 bytes only: the emitters' state on the GPU is kept.
    pub fn set_rank_emission(&mut self, ctx: &GpuContext, e: &RankEmission) {
        let s = &mut self.sources;
        (s.first_id, s.slab_axis, s.slab_lo, s.slab_hi) = (e.first_id, e.axis as u32, e.lo, e.hi);
        let offset = std::mem::offset_of!(SourcesGpu, first_id);
        let bytes = &bytemuck::bytes_of(&self.sources)[offset..offset + 16];
        ctx.queue.write_buffer(&self.buffers.sources, offset as u64, bytes);
    }

    /// Slots a step's emission may take at most: one layer of every emitter.
    pub fn emission_per_step(&self) -> u32 {
        self.sources.emitters[..self.sources.num_emitters as usize].iter().map(|e| e.layer_points).sum()
    }

    /// This simulation with a pool of at least `pool` parked particles (never fewer than now), its state
    /// carried on: the particles (positions, velocities, densities, pressures: pool particles the
    /// emitters have taken stay water), the clock and step state, the sources and the newest statistics.
    /// The new simulation's reset still returns to the scene's particles. Records GPU copies from this
    /// simulation's buffers and submits them; nothing waits. Errors: the larger simulation does not fit
    /// the GPU (or the caller's [`super::ParticleLimit`]).
    pub fn with_pool(&self, ctx: &GpuContext, pool: u32) -> Result<Simulation, SimError> {
        let pool = pool.max(self.pool());
        let options = SimOptions { pool, ..self.options };
        let mut sim = Simulation::from_initial(
            ctx,
            &self.domain,
            (&self.terrain, &self.obstacles, self.bodies.as_ref().map_or(&[][..], |b| b.initial())),
            &self.params,
            options,
            Source::Gpu(&self.initial),
        )?;
        // Every particle where the last step left it; the new pool's particles follow, parked.
        let carried = self.capacity as u64;
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sim pool resize") });
        self.buffers.pos.copy_to(&mut encoder, &sim.buffers.pos, carried);
        self.buffers.vel.copy_to(&mut encoder, &sim.buffers.vel, carried);
        encoder.copy_buffer_to_buffer(&self.buffers.step, 0, &sim.buffers.step, 0, self.buffers.step.size());
        if let (Some(new), Some(old)) = (&sim.stages.diffuse, &self.stages.diffuse) {
            if new.capacity() >= old.capacity() {
                new.copy_from(&mut encoder, old);
            }
        }
        // The emitters' state as the GPU has it (the volume owed, the points emitted).
        encoder.copy_buffer_to_buffer(&self.buffers.sources, 0, &sim.buffers.sources, 0, self.buffers.sources.size());
        ctx.queue.submit([encoder.finish()]);
        if let (Some(new), Some(old)) = (&mut sim.bodies, &self.bodies) {
            new.carry_from(old);
            new.write(&ctx.queue, &sim.buffers.obstacles);
        }
        sim.sources = self.sources;
        sim.dispatch.emit = self.dispatch.emit;
        sim.latest = self.latest.clone();
        sim.restored_iterations = self.restored_iterations;
        sim.frame = self.frame;
        sim.particles_version = self.particles_version + 1;
        sim.follow_fluid();
        Ok(sim)
    }
}
