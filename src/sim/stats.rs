//! The per-frame statistics of the simulation (`shaders/sim/stats.wgsl`): a reduction over the particles
//! into a small record that the simulation copies into its read-back ring; it comes back a frame or more
//! late and is decoded here ([`SimStats`]).

use super::stage::{Stage, StageLayouts, StepContext};
use crate::gpu;

/// The "stats" pass: `stats_partial` reduces each workgroup's particles, `stats_final` the records.
pub(super) struct StatsStage {
    partial: wgpu::ComputePipeline,
    finish: wgpu::ComputePipeline,
}

/// Threads per workgroup of `stats_partial` (`STATS_WG` in the shader).
pub const STATS_WG: u32 = 128;

impl StatsStage {
    pub fn new(layouts: &StageLayouts) -> Self {
        let module = layouts.module("sim/stats.wgsl", &[]);
        Self { partial: layouts.fixed(&module, "stats_partial"), finish: layouts.fixed(&module, "stats_final") }
    }

    /// Bytes of the buffer of per-workgroup records for `capacity` particles (4 vec4 per workgroup).
    pub fn partials_bytes(capacity: u64) -> u64 {
        capacity.div_ceil(STATS_WG as u64) * RECORD_BYTES
    }
}

impl Stage for StatsStage {
    type Input<'a> = ();

    fn encode(&self, step: &mut StepContext<'_>, (): ()) {
        const { assert!(STATS_WG == 128, "the stats dispatch is `Dispatches::particles_128`") };
        let groups = step.dispatch.particles_128;
        let mut pass = step.pass("stats");
        pass.set_pipeline(&self.partial);
        gpu::dispatch(&mut pass, groups);
        pass.set_pipeline(&self.finish);
        gpu::dispatch(&mut pass, gpu::Workgroups::ONE);
    }
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
    /// Position of the fastest particle (the one moving at `max_speed`), metres.
    pub fastest: [f32; 3],
    /// The diffuse particles after the frame's run (zeros without a pool or while they are off).
    pub diffuse: DiffuseCounts,
}

/// Live diffuse particles by kind (see [`super::diffuse`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiffuseCounts {
    /// All live diffuse particles.
    pub count: u32,
    pub spray: u32,
    pub foam: u32,
    pub bubbles: u32,
}

/// Bytes of the statistics record read back per frame: 6 vec4 from shaders/sim/stats.wgsl, then the
/// diffuse pool's counters (count, spray, foam, bubbles: 4 u32 copied from its state at
/// [`DIFFUSE_OFFSET`]).
pub(super) const STATS_BYTES: u64 = 112;

/// Byte offset of the diffuse counters in the statistics record.
pub(super) const DIFFUSE_OFFSET: u64 = 96;

/// Bytes of one workgroup's partial record (`RECORD` vec4 in shaders/sim/stats.wgsl).
pub(super) const RECORD_BYTES: u64 = 80;

/// Decodes the record of frame `frame` (at least [`STATS_BYTES`] bytes).
pub(super) fn decode_stats(frame: u64, bytes: &[u8]) -> SimStats {
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
        fastest: [f[20], f[21], f[22]],
        diffuse: {
            let d: &[u32] = bytemuck::cast_slice(&bytes[DIFFUSE_OFFSET as usize..STATS_BYTES as usize]);
            DiffuseCounts { count: d[0], spray: d[1], foam: d[2], bubbles: d[3] }
        },
    }
}
