//! What a scene may ask of the GPU, checked before anything is built: the particle count the engine's
//! buffers hold ([`particle_limit`]: the renderer's largest per-particle buffers must each fit one
//! storage binding, the simulation's are split over up to 4, [`crate::gpu::split`]) against the scene's cheap lattice estimate plus the emitters'
//! pool ([`check_fits`]), so a scene past the limit is refused in milliseconds, before its particles are
//! laid out in CPU memory (125 M particles took 8.4 s and 2.9 GB before the GPU refused them).

use super::EngineError;
use crate::gpu::GpuContext;
use crate::render::{anisotropy, EllipsoidBuffers};
use crate::scene::Scene;
use crate::sim::{gib, sources, ParticleLimit, SimOptions, Simulation};

/// The most particles the renderer can draw on `ctx`: [`render_limit_for`] its largest storage binding
/// ([`GpuContext::max_storage_binding`]). 8 388 608 on lavapipe (128 MiB), 268 435 455 at 4 GiB - 1
/// (Vulkan's usual `maxStorageBufferRange`).
pub fn render_limit(ctx: &GpuContext) -> ParticleLimit {
    render_limit_for(ctx.max_storage_binding())
}

/// The most particles the renderer can draw with storage bindings of `binding` bytes: its largest
/// per-particle arrays (the ellipsoids' centres and matrices, [`EllipsoidBuffers`], and the anisotropy's
/// sorted positions) take 16 bytes per particle, each in its own binding, so `binding / 16`; the
/// anisotropy's hash table (at most 16 bytes per particle, [`anisotropy::table_size`]) fits with them. At
/// most [`anisotropy::MAX_CAPACITY`] (2^30, the table's size stays a `u32`). The other per-particle data
/// the renderer reads is the simulation's (positions and velocities, 16 bytes each; the diffuse pool,
/// which the simulation sizes and limits); instanced draws count particles as instances of 6 vertices,
/// so no vertex count overflows.
pub fn render_limit_for(binding: u64) -> ParticleLimit {
    let max = binding / EllipsoidBuffers::BYTES_PER_PARTICLE;
    if max > anisotropy::MAX_CAPACITY as u64 {
        return ParticleLimit {
            max: anisotropy::MAX_CAPACITY as u64,
            why: "the renderer's anisotropy hashes at most 2^30 particles (a table of 2^31 buckets)",
        };
    }
    ParticleLimit {
        max,
        why: "the renderer keeps 16 bytes per particle (ellipsoid centres, ellipsoid matrices, sorted positions) \
              in each of three storage buffers",
    }
}

/// The most particles (the emitters' pool included) the engine builds on `ctx`: the smaller of the
/// renderer's limit ([`render_limit`]: [`crate::gpu::GpuContext::max_storage_binding`] / 16 bytes) and the
/// simulation's ([`Simulation::particle_limit`]: its arrays split over up to 4 bindings of that). 8 388 608
/// on lavapipe (a 128 MiB binding).
pub fn particle_limit(ctx: &GpuContext) -> ParticleLimit {
    let (render, sim) = (render_limit(ctx), Simulation::particle_limit(ctx));
    if render.max <= sim.max {
        render
    } else {
        sim
    }
}

/// Bytes of GPU memory the renderer allocates per particle: the ellipsoids (32), the anisotropy pass's
/// sorted positions (16) and slots (4), and its hash table of `(2 n).next_power_of_two()` cells (4 bytes
/// each: 8 to 16 per particle; counted at 16). Screen-sized targets come on top, independent of the count.
pub const RENDER_BYTES_PER_PARTICLE: f64 = 32.0 + 16.0 + 4.0 + 16.0;

/// Bytes of GPU memory the engine allocates per particle (the emitters' pool included) with `options`:
/// the simulation's ([`crate::sim::bytes_per_particle`], the diffuse pool and the initial state kept for
/// resets included) and the renderer's ([`RENDER_BYTES_PER_PARTICLE`]). 212.5 bytes with the defaults.
pub fn bytes_per_particle(options: &SimOptions) -> f64 {
    crate::sim::bytes_per_particle(options) + RENDER_BYTES_PER_PARTICLE
}

/// Host memory, bytes, a build needs besides the fluid files' particles (which are bounded by their files'
/// size): the chunks being generated and the queue's staging copies of them, 32 bytes per particle of at
/// most 16 chunks of [`crate::scene::lattice::CHUNK_POINTS`], or of `particles` when fewer (512 MiB at most).
pub fn host_bytes(particles: u64) -> u64 {
    particles.min(16 * crate::scene::lattice::CHUNK_POINTS) * 32
}

/// The host's available memory, bytes (`MemAvailable` of `/proc/meminfo`); `None` where it cannot be
/// read (not Linux).
pub fn host_memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Checks, before anything is built, that `count` particles fit the GPU memory `options.memory` (when
/// known) at [`bytes_per_particle`], and that the host has the memory the build's chunks need
/// ([`host_bytes`], against [`host_memory_available`]). `file` names the scene in the error.
pub fn check_memory(file: &std::path::Path, count: u64, options: &SimOptions) -> Result<(), EngineError> {
    let per = bytes_per_particle(options);
    let bytes = (per * count as f64) as u64;
    if let Some(memory) = options.memory.filter(|&m| bytes > m) {
        let fit = (memory as f64 / per) as u64;
        return Err(EngineError::GpuMemory { file: file.to_path_buf(), count, bytes, memory, fit });
    }
    let host = host_bytes(count);
    match host_memory_available() {
        Some(available) if available < host => {
            Err(EngineError::HostMemory { file: file.to_path_buf(), count, bytes: host, available })
        }
        _ => Ok(()),
    }
}

/// Describes `bytes` for messages ("1.50 GiB").
pub(super) fn describe(bytes: u64) -> String {
    gib(bytes)
}

/// Particles `scene` builds at spacing `dx` at most: its blocks' lattice points and, when `sources`, the
/// pool its emitters get.
fn needed(scene: &Scene, dx: f32, sources: bool) -> (u64, u64) {
    let pool = if sources { sources::pool_size(&scene.emitters, dx) } else { 0 };
    (scene.estimate_particle_count_at(dx), pool as u64)
}

/// `x` rounded up to three significant digits (0.031234 -> 0.0313; 0.031000002, an f32 off 0.031 by
/// rounding, -> 0.031).
fn round_up(x: f32) -> f32 {
    let unit = 10f64.powf((x as f64).log10().floor() - 2.0);
    (((x as f64 / unit) - 1e-4).ceil() * unit) as f32
}

/// A spacing (three significant digits, at most 100 m) at which `scene` fits `max` particles, near the
/// smallest: from `dx` scaled by the cube root of the blocks' excess over `max` (the blocks alone must
/// fit, and both they and the emitters' pool shrink as the spacing grows), raised by 1 % until the blocks
/// and the pool fit; `None` when none does (the blocks leave no lattice point first).
fn fitting_dx(scene: &Scene, dx: f32, sources: bool, max: u64) -> Option<f32> {
    let (estimate, _) = needed(scene, dx, sources);
    let mut d = round_up(dx * (estimate as f32 / max.max(1) as f32).cbrt().max(1.0));
    while d <= 100.0 {
        let (estimate, pool) = needed(scene, d, sources);
        if estimate == 0 {
            return None; // the blocks are thinner than d: no water left to fit
        }
        if estimate + pool <= max {
            return Some(d);
        }
        d = round_up(d * 1.01);
    }
    None
}

/// Checks, before anything is built, that `scene` at its spacing `solver.dx` (as [`Scene::at_dx`]
/// gives it) fits the engine on `ctx`: its lattice estimate ([`Scene::estimate_particle_count_at`],
/// an upper bound) plus the emitters' pool when `sources`, against [`particle_limit`]. The error says
/// the estimate, the limit and the spacing that would fit.
pub fn check_fits(ctx: &GpuContext, scene: &Scene, sources: bool) -> Result<(), EngineError> {
    let limit = particle_limit(ctx);
    let dx = scene.solver.dx;
    let (estimate, pool) = needed(scene, dx, sources);
    if estimate.saturating_add(pool) <= limit.max {
        return Ok(());
    }
    Err(EngineError::TooManyParticles {
        file: scene.origin(),
        estimate,
        pool,
        dx,
        limit,
        fit: fitting_dx(scene, dx, sources, limit.max),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_render_limit_is_a_binding_over_16_bytes_and_its_table_fits() {
        // 4 GiB - 1 (Vulkan's usual maxStorageBufferRange): 268 M, twice the 134 M of 32-byte ellipsoids.
        assert_eq!(render_limit_for((1 << 32) - 1).max, 268_435_455);
        assert_eq!(render_limit_for(128 << 20).max, 8_388_608);
        assert_eq!(render_limit_for(1 << 40).max, 1 << 30, "capped where the hash table stays a u32");
        for binding in [128u64 << 20, (128 << 20) + 48, 3 << 30, (1 << 32) - 1, 1 << 32, 5 << 30, 1 << 40] {
            let n = render_limit_for(binding).max;
            let table = 4 * (anisotropy::table_size(n as u32) as u64 + 1);
            assert!(table <= binding, "{binding} B: a table of {table} B for {n} particles");
            assert!(n * EllipsoidBuffers::BYTES_PER_PARTICLE <= binding);
        }
    }

    #[test]
    fn spacings_round_up_to_three_digits() {
        assert_eq!(round_up(0.031234).to_string(), "0.0313");
        assert_eq!(round_up(0.0313).to_string(), "0.0313");
        assert_eq!(round_up(1.2345).to_string(), "1.24");
        assert_eq!(round_up(123.01).to_string(), "124");
        // The f32 one step above 0.031 (0.031000002), as a product of spacings may come out.
        assert_eq!(round_up(f32::from_bits(0.031f32.to_bits() + 1)).to_string(), "0.031");
    }

    #[test]
    fn the_fitting_spacing_fits_and_is_near_the_smallest() {
        let text = "(name: \"cube\", domain: (min: (0.0, 0.0, 0.0), max: (6.0, 6.0, 6.0)),
            fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (5.0, 5.0, 5.0))],
            camera: (target: (1.0, 1.0, 1.0), distance: 3.0, yaw_deg: 0.0, pitch_deg: 25.0))";
        let scene = Scene::from_str(text, std::path::Path::new("cube.ron")).expect("parses");
        // 500^3 = 125 M points at dx = 0.01 m; lavapipe holds 4 194 304.
        assert_eq!(scene.estimate_particle_count_at(0.01), 125_000_000);
        let max = 4_194_304;
        let fit = fitting_dx(&scene, 0.01, true, max).expect("a spacing fits");
        // 0.01 m times the cube root of 125 M / 4 194 304 (0.0310012 m), rounded up.
        assert_eq!(fit.to_string(), "0.0311");
        assert!(scene.estimate_particle_count_at(fit) <= max);
        assert!(scene.estimate_particle_count_at(0.0308) > max, "0.0308 m would not fit");
        // No room at all: no spacing fits (a spacing past the blocks' size leaves no water).
        assert_eq!(fitting_dx(&scene, 0.01, false, 0), None);
    }
}
