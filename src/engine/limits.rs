//! What a scene may ask of the GPU, checked before anything is built: the particle count the engine's
//! buffers hold ([`particle_limit`]: the renderer's and the simulation's per-particle arrays are split over
//! up to 4 storage bindings, [`crate::gpu::split`]) against the scene's cheap lattice estimate plus the
//! emitters' pool ([`check_fits`]), so a scene past the limit is refused in milliseconds, before its particles are
//! laid out in CPU memory (125 M particles took 8.4 s and 2.9 GB before the GPU refused them).

use super::EngineError;
use crate::gpu::{split, GpuContext};
use crate::render::anisotropy;
use crate::scene::Scene;
use crate::sim::{gib, sources, ParticleLimit, SimOptions, Simulation};

/// Split arrays the renderer's widest kernel (the anisotropy's) binds: the positions, the sorted positions
/// and the ellipsoids' centres and matrices.
const RENDER_SPLIT_ARRAYS: u32 = 4;

/// Other storage buffers that kernel binds: the hash table and the slots (bind group 0 is the frame's
/// uniform).
const RENDER_OTHER_STORAGE: u32 = 2;

/// The most particles the renderer can draw on `ctx`: [`render_limit_for`] its limits. 536 869 888 on
/// wgpu's Vulkan (4 bindings of 2^31 - 1 bytes), 33 554 432 on lavapipe (4 of 128 MiB).
pub fn render_limit(ctx: &GpuContext) -> ParticleLimit {
    render_limit_for(&ctx.device.limits())
}

/// The most particles the renderer can draw on a device with `limits`. Its per-particle arrays of 16 bytes
/// (the ellipsoids' centres and matrices, [`crate::render::EllipsoidBuffers`], and the anisotropy's sorted positions) are
/// split like the simulation's: [`split::max_elements`] over as many bindings as the anisotropy kernel can
/// have per array ([`split::chunks_fitting`] for its 4 split arrays and 2 other buffers, at most
/// [`split::MAX_CHUNKS`]). Its other per-particle buffers fit one binding at that count: the slots (4
/// bytes per particle, `chunks x per_binding x 4` bytes at most one binding) and the hash table, capped at
/// one binding ([`anisotropy::table_size`]). At most [`anisotropy::MAX_CAPACITY`] (2^30). The other
/// per-particle data the renderer reads is the simulation's (positions and velocities, split; the diffuse
/// pool, which the simulation sizes and limits); instanced draws count particles as instances of 6
/// vertices, so no vertex count overflows.
pub fn render_limit_for(limits: &wgpu::Limits) -> ParticleLimit {
    let chunks = split::chunks_fitting(limits, RENDER_SPLIT_ARRAYS, RENDER_OTHER_STORAGE);
    let max = split::max_elements(limits, chunks);
    if max > anisotropy::MAX_CAPACITY as u64 {
        return ParticleLimit {
            max: anisotropy::MAX_CAPACITY as u64,
            why: "the renderer's anisotropy hashes at most 2^30 particles (a table of 2^31 buckets)",
        };
    }
    ParticleLimit {
        max,
        why: "the renderer keeps 16 bytes per particle (sorted positions, ellipsoid centres, ellipsoid matrices) \
              in each of three arrays split over the storage bindings its anisotropy kernel has",
    }
}

/// The most particles (the emitters' pool included) the engine builds on `ctx` with the default
/// [`SimOptions`]: [`particle_limit_with`] them.
pub fn particle_limit(ctx: &GpuContext) -> ParticleLimit {
    particle_limit_with(ctx, &SimOptions::default())
}

/// The most particles (the emitters' pool included) the engine builds on `ctx` with `options`: the
/// smaller of the renderer's limit ([`render_limit`]) and the simulation's
/// ([`Simulation::particle_limit_with`]: its arrays split over up to 4 bindings, its diffuse pool and
/// neighbour grid's table in one each). With the default options 16 777 215 on lavapipe (a 128 MiB
/// binding: the grid's table), 268 435 452 on wgpu's Vulkan (2^31 - 1 bytes: the diffuse pool).
pub fn particle_limit_with(ctx: &GpuContext, options: &SimOptions) -> ParticleLimit {
    particle_limit_for(&ctx.device.limits(), options)
}

/// [`particle_limit_with`] on a device with `limits`.
pub fn particle_limit_for(limits: &wgpu::Limits, options: &SimOptions) -> ParticleLimit {
    let (render, sim) = (render_limit_for(limits), Simulation::particle_limit_for(limits, options));
    if render.max <= sim.max {
        render
    } else {
        sim
    }
}

/// Bytes of GPU memory the renderer allocates per particle: the ellipsoids (32), the anisotropy pass's
/// sorted positions (16) and slots (4), and its hash table of `(2 n).next_power_of_two()` cells (4 bytes
/// each: 8 to 16 per particle; counted at 16; capped at one binding past 134 M particles on Vulkan).
/// Screen-sized targets come on top, independent of the count.
pub const RENDER_BYTES_PER_PARTICLE: f64 = 32.0 + 16.0 + 4.0 + 16.0;

/// Bytes of GPU memory the engine allocates per particle (the emitters' pool included) with `options`:
/// the simulation's ([`crate::sim::bytes_per_particle`], the diffuse pool and the initial state kept for
/// resets included) and the renderer's ([`RENDER_BYTES_PER_PARTICLE`]). 212.5 bytes with the defaults;
/// 372.5 with DFSPH's neighbour lists, which the simulation adds only where they fit.
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
    crate::process::memory_available()
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
/// gives it) fits the engine on `ctx` with simulation `options`: its lattice estimate
/// ([`Scene::estimate_particle_count_at`], an upper bound) plus the emitters' pool when `sources`, then
/// with the `files` particles its fluid files declare ([`Scene::declared_file_particles`]), against
/// [`particle_limit_with`]. The error says the estimate (or the files' count), the limit and, for the
/// blocks, the spacing that would fit.
pub fn check_fits(
    ctx: &GpuContext,
    scene: &Scene,
    sources: bool,
    files: u64,
    options: &SimOptions,
) -> Result<(), EngineError> {
    let limit = particle_limit_with(ctx, options);
    let dx = scene.solver.dx;
    let (estimate, pool) = needed(scene, dx, sources);
    let blocks = estimate.saturating_add(pool);
    if blocks <= limit.max {
        if blocks.saturating_add(files) <= limit.max {
            return Ok(());
        }
        return Err(EngineError::TooManyFileParticles { file: scene.origin(), files, blocks, limit });
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

    /// Limits with storage bindings of `binding` bytes and `per_stage` storage buffers per shader stage.
    fn limits(binding: u64, per_stage: u32) -> wgpu::Limits {
        wgpu::Limits {
            max_storage_buffer_binding_size: binding,
            max_buffer_size: 1 << 40,
            max_storage_buffers_per_shader_stage: per_stage,
            ..wgpu::Limits::default()
        }
    }

    #[test]
    fn the_render_limit_is_four_bindings_of_16_byte_arrays_and_the_rest_fits() {
        // wgpu's Vulkan (2^31 - 1 bytes a binding): 4 chunks of 134 217 472, twice the 268 M of one 4 GiB
        // binding and four times the 134 M of one binding before the renderer's arrays were split.
        assert_eq!(render_limit_for(&limits((1 << 31) - 1, 1 << 20)).max, 536_869_888);
        // lavapipe (128 MiB, 32 storage buffers per stage): 4 chunks of 8 388 608.
        assert_eq!(render_limit_for(&limits(128 << 20, 32)).max, 33_554_432);
        // Room for 2 chunks per array only (4 arrays, 2 other buffers), and for 1.
        assert_eq!(render_limit_for(&limits((1 << 31) - 1, 10)).max, 2 * 134_217_472);
        assert_eq!(render_limit_for(&limits((1 << 31) - 1, 8)).max, 134_217_472);
        assert_eq!(render_limit_for(&limits(1 << 40, 1 << 20)).max, 1 << 30, "capped where the hash table stays a u32");
        for binding in
            [128u64 << 20, (128 << 20) + 48, (1 << 31) - 1, 3 << 30, (1 << 32) - 1, 1 << 32, 5 << 30, 1 << 40]
        {
            let l = limits(binding, 32);
            let n = render_limit_for(&l).max;
            let table = 4 * (anisotropy::table_size(n as u32, binding) as u64 + 1);
            assert!(table <= binding, "{binding} B: a table of {table} B for {n} particles");
            assert!(n * 4 <= binding, "{binding} B: the slots of {n} particles");
            let per = split::per_binding(&l) as u64;
            assert!(n.div_ceil(per) <= split::MAX_CHUNKS as u64 && per * 16 <= binding, "{binding} B: {n} particles");
        }
    }

    #[test]
    fn the_engine_limit_is_the_simulations_one_binding_buffers_past_the_split_renderer() {
        let defaults = SimOptions::default();
        // wgpu's Vulkan: the diffuse pool's 67 108 863 slots of 32 bytes at 0.25 per particle, under the
        // grid's table (2 cells of 4 bytes per particle: 268 435 454) and the split arrays (536 869 888).
        let vulkan = particle_limit_for(&limits((1 << 31) - 1, 1 << 20), &defaults);
        assert_eq!(vulkan.max, 268_435_452, "{}", vulkan.why);
        assert!(vulkan.why.contains("diffuse"), "{}", vulkan.why);
        // lavapipe: the grid's table, (2^25 - 2) cells at 2 per particle.
        let lavapipe = particle_limit_for(&limits(128 << 20, 32), &defaults);
        assert_eq!(lavapipe.max, 16_777_215, "{}", lavapipe.why);
        assert!(lavapipe.why.contains("grid"), "{}", lavapipe.why);
        // Without a diffuse pool and with one cell per particle, the split arrays bound it.
        let lean = SimOptions { diffuse_pool: 0.0, cells_per_particle: 1.0, ..defaults };
        let split = particle_limit_for(&limits((1 << 31) - 1, 1 << 20), &lean);
        assert_eq!(split.max, 536_869_888, "{}", split.why);
        // Room for one chunk per array only: the renderer's one binding (134 M), under the simulation's.
        let narrow = particle_limit_for(&limits((1 << 31) - 1, 8), &lean);
        assert_eq!(narrow.max, 134_217_472, "{}", narrow.why);
        assert!(narrow.why.contains("renderer"), "{}", narrow.why);
    }

    #[test]
    fn the_hash_table_is_capped_at_one_binding_and_unchanged_below() {
        let vulkan = (1u64 << 31) - 1;
        // Below 2^27 particles: two buckets per particle or more, as before the cap.
        assert_eq!(anisotropy::table_size(1_000_000, vulkan), 1 << 21);
        assert_eq!(anisotropy::table_size(1 << 27, vulkan), 1 << 28);
        // Past it: the 2^28 buckets (1 GiB + 4 bytes) one binding holds, up to the render limit.
        assert_eq!(anisotropy::table_size((1 << 27) + 1, vulkan), 1 << 28);
        assert_eq!(anisotropy::table_size(536_869_888, vulkan), 1 << 28);
        assert_eq!(anisotropy::table_size(100, vulkan), 1024);
        assert_eq!(anisotropy::table_size(1 << 30, 1 << 40), 1 << 31);
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
