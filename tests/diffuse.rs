//! Diffuse particles (spray, foam, bubbles; Ihmsen, Akinci, Akinci & Teschner 2012) on the GPU
//! (lavapipe in CI):
//! - the potentials and the expected new particles of every fluid particle of a small block against a
//!   CPU reference written from the paper's formulas (shaders/sim/diffuse.wgsl's `expected_new`);
//! - a spray droplet follows the exact solution of dv/dt = g - k v over the frames;
//! - a dam break makes diffuse particles once the water runs, never more than the pool holds, and they
//!   show as foam (white) in its picture; a resting tank makes none and its picture has no foam;
//! - the foam pass's motion blur draws a flying droplet as a streak as long as its path in the exposure;
//! - a foam splat is a cluster of bubbles: as much coverage as a smooth splat, uneven, the same pattern
//!   while its time of death stands (frame to frame), another for another particle.
mod common;

use glam::{DVec3, Vec3};
use waterview::engine::batch::{run_frames, scene_view};
use waterview::engine::Engine;
use waterview::gpu::{GpuContext, Profiler};
use waterview::render::{self, FluidView, Renderer};
use waterview::scene::{Aabb, Scene, SceneSetup};
use waterview::sim::{kernel, DiffuseKind, DiffuseParams, DiffuseParticle, SimParams, SimStats, Simulation};
use waterview::terrain::Heightfield;

fn scene(text: &str) -> Scene {
    Scene::from_str(text, std::path::Path::new("test.ron")).unwrap_or_else(|e| panic!("test scene: {e}"))
}

/// Runs `sim` for `frames` frames (statistics dropped).
fn frames(ctx: &GpuContext, sim: &mut Simulation, frames: u64) -> Vec<SimStats> {
    let mut all = Vec::new();
    run_frames(ctx, sim, &mut Profiler::new(&ctx.device), Some(frames), None, |s| all.push(s.clone()));
    all
}

// ---------------------------------------------------------------------------------------------------
// The potentials against a CPU reference

/// Ihmsen et al.'s clamp-and-map to 0..1.
fn phi(i: f64, r: [f32; 2]) -> f64 {
    let (lo, hi) = (r[0] as f64, r[1] as f64);
    (i.min(hi) - i.min(lo)) / (hi - lo)
}

/// CPU twin of `diffuse_normals` and `expected_new` (no boundary within 2h): per particle (outward normal,
/// expected new diffuse particles, the wave crest's share of the rate, 1/s), from the sorted positions
/// and velocities the GPU read.
fn reference(
    pos: &[DVec3],
    vel: &[DVec3],
    p: &DiffuseParams,
    (h, volume, dt, weight_sum): (f64, f64, f64, f64),
) -> Vec<(DVec3, f64, f64)> {
    let r_max = 2.0 * h;
    let neighbours = |i: usize| (0..pos.len()).filter(move |&j| j != i && pos[i].distance(pos[j]) < r_max);
    let normals: Vec<DVec3> = (0..pos.len())
        .map(|i| {
            if 0.5 * vel[i].length_squared() < 0.25 * p.kinetic_energy[0] as f64 {
                return DVec3::ZERO; // slower than half the threshold's speed: not computed
            }
            let g =
                neighbours(i).fold(DVec3::ZERO, |g, j| g + DVec3::from(kernel::grad_w((pos[i] - pos[j]).into(), h)));
            -2.0 * h * volume * g
        })
        .collect();
    (0..pos.len())
        .map(|i| {
            let (xi, vi, ni) = (pos[i], vel[i], normals[i]);
            let surface = ni.length() > 0.15;
            let nhat = if surface { ni.normalize() } else { DVec3::ZERO };
            let (mut ta, mut wc) = (0.0, 0.0);
            for j in neighbours(i) {
                let xij = xi - pos[j];
                let r = xij.length();
                let w = 1.0 - r / r_max;
                let vij = vi - vel[j];
                let s = vij.length();
                if s > 1e-6 {
                    ta += s * (1.0 - (vij / s).dot(xij / r)) * w;
                }
                if surface && xij.dot(nhat) > 0.0 && normals[j].length() > 0.15 {
                    wc += (1.0 - nhat.dot(normals[j].normalize())) * w;
                }
            }
            ta /= weight_sum;
            wc /= weight_sum;
            let speed = vi.length();
            if !surface || speed <= 0.0 || (vi / speed).dot(nhat) < 0.6 {
                wc = 0.0;
            }
            let ik = phi(0.5 * vi.length_squared(), p.kinetic_energy);
            let crest = ik * p.wave_crest_rate as f64 * phi(wc, p.wave_crest);
            let rate = ik * p.trapped_air_rate as f64 * phi(ta, p.trapped_air) + crest;
            (ni, rate * dt, crest)
        })
        .collect()
}

/// A 10 x 10 x 10 block (dx = 5 cm) in the middle of a 2 m box without gravity, squeezed along x (trapped
/// air) and bursting in y and z (wave crests along its edges), speeds up to 4.7 m/s, one step: every fluid particle's normal and expected new
/// diffuse particles as the GPU computed them match the CPU reference.
#[test]
fn potentials_match_the_cpu_reference() {
    let ctx = common::gpu();
    let dx = 0.05f32;
    let mut positions = Vec::new();
    let mut velocities = Vec::new();
    for k in 0..1000 {
        let (a, b, c) = ((k % 10) as f32, ((k / 10) % 10) as f32, (k / 100) as f32);
        let p = Vec3::new(0.775 + dx * a, 0.775 + dx * b, 0.775 + dx * c);
        positions.push(p);
        velocities.push(Vec3::new(
            -12.0 * (p.x - 1.0),
            12.0 * (p.y - 1.0),
            12.0 * (p.z - 1.0) + 0.5 * (11.0 * p.x).sin(),
        ));
    }
    let domain = Aabb { min: [0.0; 3], max: [2.0; 3] };
    let terrain = Heightfield::flat(glam::Vec2::ZERO, glam::Vec2::splat(2.0), 0.0);
    let setup = SceneSetup::from_particles(positions, velocities, terrain);
    let diffuse = DiffuseParams { trapped_air_rate: 60.0, wave_crest_rate: 90.0, ..DiffuseParams::default() };
    let params = SimParams { dx, substeps: 1, gravity: [0.0; 3], diffuse, ..SimParams::default() };
    let mut sim = Simulation::new(&ctx, &domain, &setup, &params).expect("simulation builds");
    frames(&ctx, &mut sim, 1);
    let [spos, svel, vstar] = sim.read_diffuse_inputs_blocking(&ctx);
    let (state, _) = sim.read_diffuse_blocking(&ctx).expect("a diffuse pool");
    assert_eq!(spos.len(), 1000, "every particle active");
    assert!(state.dt > 0.0, "the diffuse pass ran with a time step: {state:?}");
    let to_d = |v: &[f32; 4]| DVec3::new(v[0] as f64, v[1] as f64, v[2] as f64);
    let (pos, vel): (Vec<DVec3>, Vec<DVec3>) = (spos.iter().map(to_d).collect(), svel.iter().map(to_d).collect());
    let h = params.h() as f64;
    let weight_sum = waterview::sim::diffuse_params::DiffuseUniform::new(&diffuse, 1, dx, params.h()).weight_sum;
    let cpu =
        reference(&pos, &vel, &diffuse, (h, (sim.mass() / params.rho0) as f64, state.dt as f64, weight_sum as f64));
    let mut bad = Vec::new();
    for (i, ((n, expected, _), gpu)) in cpu.iter().zip(&vstar).enumerate() {
        let dn = (to_d(gpu) - *n).length();
        let de = (gpu[3] as f64 - expected).abs();
        if dn > 2e-3 || de > 2e-3 * expected.max(0.05) {
            bad.push(format!("particle {i}: normal {:?} vs {n:?}, expected {} vs {expected}", &gpu[..3], gpu[3]));
        }
    }
    // The surface and crest tests are thresholds: allow a particle or two right on one.
    assert!(bad.len() <= 5, "{} of 1000 particles differ from the CPU reference:\n{}", bad.len(), bad.join("\n"));
    // Both potentials took part, and some particles make nothing (slow or calm ones).
    let making = cpu.iter().filter(|c| c.1 > 0.0).count();
    let crest = cpu.iter().filter(|c| c.2 > 0.0).count();
    assert!(making > 50 && making < 1000, "{making} particles make diffuse particles");
    assert!(crest > 5, "{crest} particles make diffuse particles at a wave crest");
    let total: f64 = cpu.iter().map(|c| c.1).sum();
    assert!(state.spawned as f64 > 0.5 * total && (state.spawned as f64) < 1.5 * total + 10.0, "{state:?} vs {total}");
}

// ---------------------------------------------------------------------------------------------------
// Spray

/// A droplet injected 1.2 m above a shallow pool (far from the water), with drag 2/s and no generation:
/// after 20 frames it is where the exact solution of dv/dt = g - k v puts it, within 0.1 mm and 0.1 mm/s
/// (the drag-free parabola is centimetres away), and it is still spray.
#[test]
fn spray_follows_the_exact_drag_solution() {
    let ctx = common::gpu();
    let s = scene(
        "(name: \"spray\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 2.0, 1.0)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.2, 1.0))],
          camera: (target: (0.5, 0.5, 0.5), distance: 3.0, yaw_deg: 0.0, pitch_deg: 20.0),
          solver: (dx: 0.05, diffuse: (trapped_air_rate: 0.0, wave_crest_rate: 0.0, spray_drag: 2.0, lifetime: 60.0)),
          cpu_dx_scale: 1.0)",
    );
    let mut engine = common::engine(&ctx, &s, None);
    let sim = engine.sim_mut();
    frames(&ctx, sim, 2);
    let (before, _) = sim.read_diffuse_blocking(&ctx).expect("a diffuse pool");
    let (x0, v0) = (DVec3::new(0.3, 1.2, 0.6), DVec3::new(0.8, 1.5, -0.4));
    let droplet = DiffuseParticle {
        pos: [x0.x as f32, x0.y as f32, x0.z as f32, 30.0],
        vel: [v0.x as f32, v0.y as f32, v0.z as f32, DiffuseKind::Spray.code() as f32],
    };
    assert!(sim.write_diffuse_blocking(&ctx, &[droplet]));
    frames(&ctx, sim, 20);
    let (after, particles) = sim.read_diffuse_blocking(&ctx).expect("a diffuse pool");
    assert_eq!(particles.len(), 1, "only the droplet: {after:?}");
    let p = particles[0];
    assert_eq!(p.vel[3] as u32, DiffuseKind::Spray.code(), "{p:?}");
    let t = (after.last_time - before.last_time) as f64;
    assert!(t > 0.2, "{t} s simulated");
    let (g, k) = (DVec3::new(0.0, -9.81, 0.0), 2.0);
    let f1 = (1.0 - (-k * t).exp()) / k;
    let f2 = (t - f1) / k;
    let x = x0 + v0 * f1 + g * f2;
    let v = v0 * (-k * t).exp() + g * f1;
    let got = (
        DVec3::new(p.pos[0] as f64, p.pos[1] as f64, p.pos[2] as f64),
        DVec3::new(p.vel[0] as f64, p.vel[1] as f64, p.vel[2] as f64),
    );
    assert!(got.0.distance(x) < 1e-4 && got.1.distance(v) < 1e-4, "after {t} s: {got:?}, exact {x:?} {v:?}");
    let ballistic = x0 + v0 * t + 0.5 * g * t * t;
    assert!(ballistic.distance(x) > 1e-2, "drag makes a difference: {ballistic:?} vs {x:?}");
    assert!((p.pos[3] as f64 - (30.0 - 0.25 * t)).abs() < 1e-4, "spray ages at a quarter rate: {}", p.pos[3]);
}

// ---------------------------------------------------------------------------------------------------
// Dam break and resting tank, simulated and drawn

/// Pixels of `img` (8-bit RGBA) with red above 128: foam in the foam view.
fn foam_pixels(img: &image::RgbaImage) -> usize {
    img.pixels().filter(|p| p.0[0] > 128).count()
}

/// (foam pixels in the foam view, pixels whitened by foam in the final image) of `engine` now; the
/// pictures go to target/test-output/diffuse_`name`_{final,foam}.png.
fn foam_in_pictures(ctx: &GpuContext, engine: &Engine, name: &str) -> (usize, usize) {
    let size = (320, 180);
    let mut renderer = Renderer::new(ctx, render::OFFSCREEN_FORMAT, engine.terrain());
    let (camera, mut settings) = scene_view(engine);
    let mut draw = |settings: &render::RenderSettings| {
        render::render_to_image(ctx, &mut renderer, &camera, Some(engine.particles()), settings, size)
    };
    let with = draw(&settings);
    settings.foam.enabled = false;
    let without = draw(&settings);
    settings.foam.enabled = true;
    settings.view = FluidView::Foam;
    let view = draw(&settings);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    if std::fs::create_dir_all(&dir).is_ok() {
        with.save(dir.join(format!("diffuse_{name}_final.png"))).ok();
        view.save(dir.join(format!("diffuse_{name}_foam.png"))).ok();
    }
    let luma = |p: &image::Rgba<u8>| 0.2126 * p.0[0] as f32 + 0.7152 * p.0[1] as f32 + 0.0722 * p.0[2] as f32;
    let whitened = with.pixels().zip(without.pixels()).filter(|(a, b)| luma(a) > luma(b) + 30.0).count();
    (foam_pixels(&view), whitened)
}

/// The dam break (CPU spacing, 5 760 particles) for 1 s: no diffuse particle while the column still stands
/// (first 0.05 s; the toe runs faster than 1 m/s by 0.1 s), many once the surge runs and hits the far wall
/// (t > 0.8 s), never more than the pool nor faster than the per-frame budget; its picture shows foam. A resting tank (0.4 m of water, 3 375 particles) makes none in 0.5 s, and its
/// picture has no foam.
#[test]
fn breaking_water_foams_and_still_water_does_not() {
    let ctx = common::gpu();
    let dam = Scene::builtin("dam_break").expect("built-in dam break");
    let mut engine = common::engine(&ctx, &dam, None);
    let stats = common::run_checked(&ctx, &mut engine, None, Some(1.0));
    let capacity = engine.sim().diffuse().expect("diffuse on by default").capacity;
    let early: Vec<u32> = stats.iter().filter(|s| s.time < 0.05).map(|s| s.diffuse.count).collect();
    let late: Vec<u32> = stats.iter().filter(|s| s.time > 0.8).map(|s| s.diffuse.count).collect();
    let peak = stats.iter().map(|s| s.diffuse.count).max().unwrap_or(0);
    assert!(!early.is_empty() && early.iter().all(|&c| c == 0), "diffuse particles before the surge: {early:?}");
    assert!(!late.is_empty() && late.iter().all(|&c| c > 100), "too few after the surge: {late:?}");
    assert!(peak <= capacity, "{peak} diffuse particles in a pool of {capacity}");
    for s in &stats {
        let d = &s.diffuse;
        assert_eq!(d.spray + d.foam + d.bubbles, d.count, "kinds add up at t = {}: {d:?}", s.time);
    }
    // The per-frame budget (2 % of the pool) bounds the growth between two records; it binds here (a dozen
    // frames add exactly 29, the budget of a 1 440-particle pool).
    let budget = (DiffuseParams::default().budget as f64 * capacity as f64).round() as u64;
    for w in stats.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let grown = b.diffuse.count.saturating_sub(a.diffuse.count) as u64;
        assert!(grown <= (b.frame - a.frame) * budget, "{grown} new in {} frames at t = {}", b.frame - a.frame, b.time);
    }
    let (foam, whitened) = foam_in_pictures(&ctx, &engine, "dam_break");
    assert!(foam > 100 && whitened > 50, "dam break: {foam} foam pixels, {whitened} whitened");
    let tank = scene(
        "(name: \"still\", domain: (min: (0.0, 0.0, 0.0), max: (0.6, 1.0, 0.6)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.6, 0.4, 0.6))],
          camera: (target: (0.3, 0.3, 0.3), distance: 1.8, yaw_deg: 20.0, pitch_deg: 25.0),
          solver: (dx: 0.04), cpu_dx_scale: 1.0)",
    );
    let mut engine = common::engine(&ctx, &tank, None);
    let stats = common::run_checked(&ctx, &mut engine, None, Some(0.5));
    assert!(stats.iter().all(|s| s.diffuse.count == 0), "a resting tank makes diffuse particles");
    assert_eq!(foam_in_pictures(&ctx, &engine, "tank"), (0, 0), "foam in the resting tank's picture");
}

/// (columns spanned, summed linear excess) of the pixels of the foam view `img` (8-bit sRGB) whose red
/// exceeds their blue by more than 8 levels: spray (drawn orange), not the water (drawn blue).
fn spray_extent(img: &image::RgbaImage) -> (u32, f64) {
    let linear = |c: u8| {
        let c = c as f64 / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let lit: Vec<(u32, f64)> = img
        .enumerate_pixels()
        .filter(|(_, _, p)| p.0[0] as i32 - p.0[2] as i32 > 8)
        .map(|(x, _, p)| (x, linear(p.0[0]) - linear(p.0[2])))
        .collect();
    let (min, max) = lit.iter().fold((u32::MAX, 0), |(a, b), &(x, _)| (a.min(x), b.max(x)));
    (if lit.is_empty() { 0 } else { max - min + 1 }, lit.iter().map(|&(_, r)| r).sum())
}

/// The foam's motion blur: one spray droplet in the air above a resting tank, drawn in the foam view with
/// a 0.05 s exposure, at rest and flying across the view at 5 m/s. The moving one is a streak longer by
/// the distance it covers in the exposure (projected through the camera, within 25 %), with about the
/// same summed coverage, in linear units (the stretch dims it).
#[test]
fn motion_blur_stretches_a_droplet_along_its_path() {
    let ctx = common::gpu();
    let tank = still_tank();
    let engine = common::engine(&ctx, &tank, None);
    let (camera, mut settings) = scene_view(&engine);
    settings.view = FluidView::Foam;
    settings.foam.spray_radius = 1.0;
    // Faint enough for the coverage 1 - exp(-opacity) to stay about linear in the opacity.
    settings.foam.spray_opacity = 0.2;
    settings.foam.shutter_s = 0.05;
    let size = (640, 360);
    let x = Vec3::new(0.3, 0.7, 0.3);
    let draw = |v: Vec3| {
        let droplet =
            DiffuseParticle { pos: [x.x, x.y, x.z, 10.0], vel: [v.x, v.y, v.z, DiffuseKind::Spray.code() as f32] };
        draw_one(&ctx, &engine, &camera, &settings, size, OneDiffuse { particle: droplet, count: 1, clock: 0.0 })
    };
    let (still, still_sum) = spray_extent(&draw(Vec3::ZERO));
    let (moving, moving_sum) = spray_extent(&draw(Vec3::new(5.0, 0.0, 0.0)));
    let clip = camera.clip_from_world(size.0 as f32 / size.1 as f32);
    let column = |p: Vec3| {
        let c = clip * p.extend(1.0);
        (c.x / c.w * 0.5 + 0.5) * size.0 as f32
    };
    let streak = column(x + Vec3::new(0.25, 0.0, 0.0)) - column(x);
    eprintln!("droplet: {still} columns at rest, {moving} moving (streak {streak:.1}); coverage {still_sum:.2} / {moving_sum:.2}");
    assert!(still > 4, "the droplet at rest is drawn ({still} columns)");
    let grown = (moving - still) as f32;
    assert!((grown - streak).abs() < 0.25 * streak, "the streak adds {grown} columns, its path {streak:.1}");
    let ratio = moving_sum / still_sum.max(1e-9);
    assert!((0.75..1.33).contains(&ratio), "coverage {moving_sum:.2} moving against {still_sum:.2} at rest");
}

/// A still tank 0.3 m deep under a camera looking across it at the air above (dx 0.04 m).
fn still_tank() -> Scene {
    scene(
        "(name: \"still\", domain: (min: (0.0, 0.0, 0.0), max: (0.6, 1.0, 0.6)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.6, 0.3, 0.6))],
          camera: (target: (0.3, 0.5, 0.3), distance: 1.5, yaw_deg: 0.0, pitch_deg: 0.0),
          solver: (dx: 0.04), cpu_dx_scale: 1.0)",
    )
}

/// One diffuse particle to draw: it, how many of the pool's one slot the draw covers (0 or 1) and the
/// pool's simulated time (s).
struct OneDiffuse {
    particle: DiffuseParticle,
    count: u32,
    clock: f32,
}

/// `engine`'s water with `one` as its whole diffuse pool, drawn by a fresh renderer.
fn draw_one(
    ctx: &GpuContext,
    engine: &Engine,
    camera: &render::OrbitCamera,
    settings: &render::RenderSettings,
    size: (u32, u32),
    one: OneDiffuse,
) -> image::RgbaImage {
    let particles =
        waterview::gpu::storage_buffer_init(&ctx.device, "diffuse particle", bytemuck::bytes_of(&one.particle));
    let args = wgpu::util::DeviceExt::create_buffer_init(
        &ctx.device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("diffuse draw"),
            // The draw arguments, then the pool's simulated time at byte 16.
            contents: bytemuck::cast_slice(&[6u32, one.count, 0, 0, one.clock.to_bits()]),
            usage: wgpu::BufferUsages::INDIRECT | wgpu::BufferUsages::STORAGE,
        },
    );
    let mut source = engine.particles();
    source.diffuse = Some(render::DiffuseSource {
        particles: &particles,
        draw_args: &args,
        draw_offset: 0,
        time_offset: 16,
        capacity: 1,
    });
    let mut renderer = Renderer::new(ctx, render::OFFSCREEN_FORMAT, engine.terrain());
    render::render_to_image(ctx, &mut renderer, camera, Some(source), settings, size)
}

/// Linear value (0..1) of an 8-bit sRGB channel.
fn linear(c: u8) -> f64 {
    let c = c as f64 / 255.0;
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// The foam's bubbles (shaders/render/foam.wgsl `bubble_pattern`): one foam particle in the air above a
/// resting tank, in the foam view (white = 1 - exp(-opacity)), faint enough to stay about linear. Drawn
/// smooth (`bubbles` 0) and textured (the default): the textured splat covers as much in all (within
/// 10 %) but unevenly (its ratio to the smooth one over the splat's inner half varies by over 15 %); with
/// the pool's clock 0.25 s later and the lifetime 0.25 s shorter (the same time of death, as on the next
/// frames) it is the same picture; a particle dying 0.3 s later has other bubbles; a particle half a second
/// from its end, its bubbles half burst, covers under 85 % of what a young one does.
#[test]
fn foam_splat_is_a_stable_cluster_of_bubbles() {
    let ctx = common::gpu();
    let tank = still_tank();
    let engine = common::engine(&ctx, &tank, None);
    let (camera, mut settings) = scene_view(&engine);
    settings.view = FluidView::Foam;
    settings.foam.foam_radius = 3.0;
    settings.foam.foam_opacity = 0.2;
    settings.foam.shutter_s = 0.0;
    let size = (640, 360);
    let x = [0.3, 0.7, 0.3];
    let draw = |settings: &render::RenderSettings, clock: f32, life: f32, count: u32| {
        let foam =
            DiffuseParticle { pos: [x[0], x[1], x[2], life], vel: [0.0, 0.0, 0.0, DiffuseKind::Foam.code() as f32] };
        let img = draw_one(&ctx, &engine, &camera, settings, size, OneDiffuse { particle: foam, count, clock });
        let out = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
        std::fs::create_dir_all(&out).ok();
        img.save(out.join(format!("foam_splat_{}_{clock}_{life}.png", settings.foam.bubbles))).ok();
        img.pixels().map(|p| linear(p.0[1])).collect::<Vec<f64>>()
    };
    // The foam's own part of each picture: less the picture without it (the water, drawn blue).
    let none = draw(&settings, 0.0, 10.0, 0);
    let foam_of = |img: Vec<f64>| img.iter().zip(&none).map(|(a, b)| (a - b).max(0.0)).collect::<Vec<f64>>();
    let mut smooth_settings = settings.clone();
    smooth_settings.foam.bubbles = 0.0;
    let smooth = foam_of(draw(&smooth_settings, 0.0, 10.0, 1));
    let bubbly = foam_of(draw(&settings, 0.0, 10.0, 1));
    let later = foam_of(draw(&settings, 0.25, 9.75, 1));
    let other = foam_of(draw(&settings, 0.0, 10.3, 1));
    // Half a second left: no fade yet (FADE), half broken up (BREAKUP_SECONDS).
    let old = foam_of(draw(&settings, 0.0, 0.5, 1));
    let peak = smooth.iter().cloned().fold(0.0, f64::max);
    assert!(peak > 0.05, "the smooth splat is drawn (peak {peak:.3})");
    let (sum_smooth, sum_bubbly): (f64, f64) = (smooth.iter().sum(), bubbly.iter().sum());
    let inner: Vec<usize> = (0..smooth.len()).filter(|&i| smooth[i] > 0.5 * peak).collect();
    let ratios: Vec<f64> = inner.iter().map(|&i| bubbly[i] / smooth[i]).collect();
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let spread = (ratios.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / ratios.len() as f64).sqrt();
    let moved = |a: &[f64], b: &[f64]| inner.iter().map(|&i| (a[i] - b[i]).abs()).sum::<f64>() / inner.len() as f64;
    let (same, differ) = (moved(&bubbly, &later), moved(&bubbly, &other));
    eprintln!(
        "foam splat: {} inner pixels, coverage {sum_smooth:.2} smooth / {sum_bubbly:.2} bubbly, ratio {mean:.3} \
         +- {spread:.3}; mean change {same:.5} a frame later, {differ:.5} for another particle",
        inner.len()
    );
    assert!(inner.len() > 100, "the splat's inner half spans {} pixels", inner.len());
    let total = sum_bubbly / sum_smooth;
    assert!((0.9..1.1).contains(&total), "coverage {sum_bubbly:.2} bubbly against {sum_smooth:.2} smooth");
    assert!(spread > 0.15 * mean, "bubbles vary the coverage by {spread:.3} of {mean:.3}");
    assert!(same < 1e-3, "the same time of death changes the splat by {same:.5}");
    assert!(differ > 0.1 * spread * peak, "another particle's bubbles differ by only {differ:.5}");
    // Old foam breaks up: its bubbles burst, the splat thins to lace.
    let thinned = old.iter().sum::<f64>() / sum_bubbly;
    eprintln!("foam splat half broken up: coverage {thinned:.3} of the young one's");
    assert!(thinned < 0.85, "foam half a second from its end covers {thinned:.3} of a young splat's");
}

/// Bubbles inside the water are seen through it (shaders/render/composite.wgsl): one bubble particle in
/// the resting tank, drawn large and opaque, seen through the tank's side 0.4 m deep and just behind it.
/// The light it adds over the same water is tinted by the water in front: water absorbs red most, so the
/// deep bubble's added red over its added blue is under three quarters of the shallow one's.
#[test]
fn bubbles_inside_the_water_are_tinted_by_it() {
    let ctx = common::gpu();
    let tank = still_tank();
    let engine = common::engine(&ctx, &tank, None);
    let (camera, mut settings) = scene_view(&engine);
    settings.foam.bubble_radius = 3.0;
    settings.foam.bubble_opacity = 3.0;
    settings.foam.absorption = 0.0;
    settings.foam.shutter_s = 0.0;
    let size = (480, 270);
    let draw = |z: f32, count: u32| {
        let bubble =
            DiffuseParticle { pos: [0.3, 0.15, z, 10.0], vel: [0.0, 0.0, 0.0, DiffuseKind::Bubble.code() as f32] };
        draw_one(&ctx, &engine, &camera, &settings, size, OneDiffuse { particle: bubble, count, clock: 0.0 })
    };
    let added = |z: f32| -> [f64; 3] {
        let (with, without) = (draw(z, 1), draw(z, 0));
        let mut sum = [0.0; 3];
        for (p, q) in with.pixels().zip(without.pixels()) {
            for (c, total) in sum.iter_mut().enumerate() {
                *total += (linear(p.0[c]) - linear(q.0[c])).max(0.0);
            }
        }
        sum
    };
    // The camera looks along -z at the tank's side, z = 0.6 m.
    let (deep, shallow) = (added(0.2), added(0.57));
    let (deep_rb, shallow_rb) = (deep[0] / deep[2], shallow[0] / shallow[2]);
    println!(
        "light a bubble adds (linear r, g, b): 0.4 m deep {deep:.2?} (r / b {deep_rb:.3}), just behind the side \
         {shallow:.2?} (r / b {shallow_rb:.3})"
    );
    assert!(deep[2] > 1.0 && shallow[2] > 1.0, "the bubble is drawn: {deep:?}, {shallow:?}");
    assert!(deep_rb < 0.75 * shallow_rb, "the deep bubble is not tinted: {deep:?} against {shallow:?}");
}
