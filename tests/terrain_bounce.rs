//! The terrain's bounce light (src/render/terrain_bounce.rs) on whatever adapter wgpu finds (lavapipe in
//! CI; a machine with none FAILS): flat ground receives no bounced light; at the foot of a sunlit 45-degree
//! slope the gathered irradiance equals the slope's radiosity integrated with the point-to-patch view
//! factor cos(theta_p) cos(theta_q) / (pi r^2) dA on the CPU (Goral et al. 1984's form factor, summed
//! over the slope's surface from the radiosity the GPU emitted); the second bounce only adds light.

mod common;

use glam::{Vec2, Vec3};
use waterview::gpu::GpuContext;
use waterview::render::terrain_bounce::{bake_blocking, MAX_BOUNCE_SIDE};
use waterview::terrain::Heightfield;

/// A heightfield of `nx` x `nz` samples 1 m apart with heights `f(ix, iz)`.
fn grid(nx: u32, nz: u32, f: impl Fn(u32, u32) -> f32) -> Heightfield {
    let heights = (0..nx * nz).map(|i| f(i % nx, i / nx)).collect();
    Heightfield { nx, nz, origin: Vec2::ZERO, extent: Vec2::new((nx - 1) as f32, (nz - 1) as f32), heights }
}

/// Bakes `bounces` bounces over `hf` with every sample in the sun (toward `sun`), returning the last
/// radiosity and the bounced irradiance, rgb per sample (index `iz * nx + ix`).
fn bake(ctx: &GpuContext, hf: &Heightfield, sun: Vec3, bounces: u32) -> (Vec<Vec3>, Vec<Vec3>) {
    let r = bake_blocking(ctx, hf, (sun, 1.0), (bounces, MAX_BOUNCE_SIDE), 1).expect("bake");
    assert_eq!((r.stride, r.dims), (1, (hf.nx, hf.nz)), "a small heightfield is baked per sample");
    println!("{} x {} samples, {bounces} bounce(s): {:.1} ms ({})", hf.nx, hf.nz, r.ms, ctx.adapter_summary());
    (r.radiosity, r.bounce)
}

#[test]
fn flat_ground_receives_no_bounced_light() {
    let ctx = common::gpu();
    let hf = grid(33, 21, |_, _| 2.0);
    let (radiosity, bounce) = bake(&ctx, &hf, Vec3::new(0.3, 0.8, 0.2).normalize(), 2);
    assert!(radiosity.iter().all(|j| j.min_element() > 0.0), "the lit ground emits");
    assert!(bounce.iter().all(|&b| b == Vec3::ZERO), "flat ground sees no ground: {:?}", &bounce[..8]);
}

/// The floor (h = 0 for x <= 40 m), a slope rising at 45 degrees to 20 m at x = 60 m, facing -x, and a
/// plateau beyond; 97 m along z.
const NX: u32 = 97;
const NZ: u32 = 97;
const FOOT: f32 = 40.0;
const TOP: f32 = 20.0;

fn slope() -> Heightfield {
    grid(NX, NZ, |ix, _| (ix as f32 - FOOT).clamp(0.0, TOP))
}

/// The irradiance at floor point p bounced off the slope whose radiosity at (x, z) is `j`: the slope's plane x in [FOOT, FOOT + TOP] cut into `n` x `n` patches per
/// square metre of its ground plan, each seen with the differential view factor.
fn view_factor_integral(p: Vec3, j: impl Fn(f32, f32) -> Vec3, n: u32) -> Vec3 {
    let normal = Vec3::new(-1.0, 1.0, 0.0).normalize();
    let area = std::f32::consts::SQRT_2 / (n * n) as f32; // a patch's area over 1/n^2 m^2 of plan
    let mut sum = Vec3::ZERO;
    for a in 0..(TOP as u32 * n) {
        let x = FOOT + (a as f32 + 0.5) / n as f32;
        for b in 0..((NZ - 1) * n) {
            let z = (b as f32 + 0.5) / n as f32;
            let q = Vec3::new(x, x - FOOT, z);
            let r = q - p;
            let d2 = r.length_squared();
            let cos_p = r.y / d2.sqrt();
            let cos_q = -normal.dot(r) / d2.sqrt();
            if cos_p > 0.0 && cos_q > 0.0 {
                sum += j(x, z) * cos_p * cos_q / (std::f32::consts::PI * d2) * area;
            }
        }
    }
    sum
}

#[test]
fn the_foot_of_a_sunlit_slope_gathers_what_the_view_factor_says() {
    let ctx = common::gpu();
    let hf = slope();
    // The sun low over the floor from -x: the slope faces it (cos 0.97), the floor gets half.
    let sun = Vec3::new(-(30f32.to_radians().cos()), 30f32.to_radians().sin(), 0.0);
    let (radiosity, bounce) = bake(&ctx, &hf, sun, 2);
    let (_, first) = bake(&ctx, &hf, sun, 1);
    let at = |v: &[Vec3], ix: u32, iz: u32| v[(iz * NX + ix) as usize];
    // The radiosity at (x, z), interpolated bilinearly between samples as the GPU's gather does.
    let row = NZ / 2;
    let emitted = |x: f32, z: f32| {
        let (i, k) = ((x.floor() as u32).min(NX - 2), (z.floor() as u32).min(NZ - 2));
        let (fx, fz) = (x - i as f32, z - k as f32);
        let near = at(&radiosity, i, k).lerp(at(&radiosity, i + 1, k), fx);
        let far = at(&radiosity, i, k + 1).lerp(at(&radiosity, i + 1, k + 1), fx);
        near.lerp(far, fz)
    };
    let slope_j = at(&radiosity, 50, row);
    assert!(slope_j.min_element() > 0.0, "the sunlit slope emits: {slope_j}");
    for ix in [30u32, 36] {
        // Mean over the middle rows (each sample's rays are jittered differently), against the same mean of
        // the CPU integral (which varies little along z away from the ends).
        let rows = 30..67u32;
        let gpu_mean = rows.clone().map(|iz| at(&bounce, ix, iz)).sum::<Vec3>() / rows.len() as f32;
        let cpu_mean =
            rows.clone().map(|iz| view_factor_integral(Vec3::new(ix as f32, 0.0, iz as f32), emitted, 4)).sum::<Vec3>()
                / rows.len() as f32;
        let ratio = gpu_mean / cpu_mean;
        println!(
            "floor x = {ix} m: bounced {gpu_mean} (GPU) against {cpu_mean} (view factors), ratio {ratio}; \
             slope radiosity {slope_j}"
        );
        assert!(
            ratio.min_element() > 0.9 && ratio.max_element() < 1.1,
            "floor x = {ix} m: the GPU gathered {gpu_mean}, the view factors give {cpu_mean}"
        );
    }
    // The second bounce adds the light the floor sent to the slope and back: never less than one bounce.
    for (i, (two, one)) in bounce.iter().zip(&first).enumerate() {
        assert!(two.cmpge(*one * 0.999).all(), "sample {i}: two bounces {two} under one {one}");
    }
    let gain = at(&bounce, 36, row) / at(&first, 36, row);
    println!("second bounce at the foot: x {gain}");
}

/// A heightfield larger than the bake's grid is baked on every few samples: the slope's foot baked on
/// every second sample (a grid of at most 49 texels a side) gathers what the per-sample bake gathers at the
/// same samples, within 10 % (the mean over the middle rows).
#[test]
fn a_coarser_bake_grid_gathers_the_same_light() {
    let ctx = common::gpu();
    let hf = slope();
    let sun = Vec3::new(-(30f32.to_radians().cos()), 30f32.to_radians().sin(), 0.0);
    let fine = bake_blocking(&ctx, &hf, (sun, 1.0), (2, MAX_BOUNCE_SIDE), 1).expect("bake");
    let coarse = bake_blocking(&ctx, &hf, (sun, 1.0), (2, 49), 1).expect("bake");
    assert_eq!((coarse.stride, coarse.dims), (2, (49, 49)));
    for ix in [30u32, 36] {
        let rows = (30..67u32).step_by(2);
        let n = rows.clone().count() as f32;
        let f = rows.clone().map(|iz| fine.bounce[(iz * NX + ix) as usize]).sum::<Vec3>() / n;
        let c = rows.map(|iz| coarse.bounce[((iz / 2) * 49 + ix / 2) as usize]).sum::<Vec3>() / n;
        let ratio = c / f;
        println!("floor x = {ix} m: every second sample {c}, every sample {f}, ratio {ratio}");
        assert!(ratio.min_element() > 0.9 && ratio.max_element() < 1.1, "x = {ix}: {c} against {f}");
    }
}

/// The built-in valley seen from its camera with the bounce light on (the default) and off: the bake is
/// wired into the terrain's shading (the pictures differ), and where the terrain lies in the sun's shadow
/// the bounced light from the slopes around makes up for the constant share of sky light it replaces
/// (`terrain_bounce_on.png`, `terrain_bounce_off.png` under WATERVIEW_TEST_IMAGES).
#[test]
fn the_valley_is_lit_by_its_slopes() {
    use waterview::engine::{BuildOptions, Engine};
    use waterview::render::{self, Renderer};
    let ctx = common::gpu();
    let scene = waterview::scene::Scene::builtin("valley").expect("the built-in valley");
    let engine = Engine::new(&ctx, scene, BuildOptions { dx: Some(0.6), ..BuildOptions::default() }).expect("builds");
    let mut renderer = Renderer::new(&ctx, render::OFFSCREEN_FORMAT, engine.terrain());
    let (camera, mut settings) = waterview::engine::batch::scene_view(&engine);
    settings.show_particles = false;
    let size = (480, 270);
    let steps = luminance_steps(&ctx, (&mut renderer, &camera, &mut settings), size, "terrain_bounce");
    let (sum_on, sum_off, changed) =
        steps.iter().fold((0.0, 0.0, 0.0), |(a, b, c), &(on, off)| (a + on, b + off, c + (on - off).abs()));
    let n = (size.0 * size.1) as f64;
    println!(
        "bounce light on against off: mean luminance {:.2} against {:.2}, mean change {:.2} levels",
        sum_on / n,
        sum_off / n,
        changed / n
    );
    assert!(changed / n > 0.5, "the bounce light changes nothing ({:.2} levels)", changed / n);
}

/// An obstacle standing on the terrain takes the light its ground sends up: a box on flat ground seen from
/// the side, with the bounce light on and off. Flat ground gathers no bounced light (its own pixels stay),
/// the box's roof sees no ground (stays), and its sunlit and shaded walls get brighter.
#[test]
fn an_obstacle_takes_the_light_its_ground_sends_up() {
    use waterview::render::{self, OrbitCamera, RenderSettings, Renderer};
    let ctx = common::gpu();
    let hf = grid(41, 41, |_, _| 0.0);
    let mut renderer = Renderer::new(&ctx, render::OFFSCREEN_FORMAT, &hf);
    let (lo, hi) = (Vec3::new(16.0, 0.0, 16.0), Vec3::new(24.0, 6.0, 24.0));
    renderer.set_obstacles(&ctx, &[common::box_mesh(lo, hi)]);
    let camera = OrbitCamera {
        target: Vec3::new(20.0, 3.0, 20.0),
        distance: 30.0,
        yaw: 0.6,
        pitch: 0.35,
        fov_y: 50f32.to_radians(),
        lens_shift: 0.0,
    };
    let mut settings = RenderSettings { show_particles: false, ..RenderSettings::default() };
    let size = (320, 180);
    let steps = luminance_steps(&ctx, (&mut renderer, &camera, &mut settings), size, "obstacle_bounce");
    let (mut brighter, mut darker, mut changed) = (0usize, 0usize, 0.0f64);
    for d in steps.iter().map(|&(on, off)| on - off) {
        brighter += (d > 2.0) as usize;
        darker += (d < -2.0) as usize;
        changed += d.abs();
    }
    println!(
        "a box on flat ground, bounce on against off: {brighter} pixels brighter, {darker} darker, mean change {:.2}",
        changed / (size.0 * size.1) as f64
    );
    assert!(brighter > 500, "the box's walls take the ground's light: only {brighter} pixels brighter");
    assert!(darker < brighter / 20, "{darker} pixels darker against {brighter} brighter");
}

/// Each pixel's luminance (levels) with the bounce light on (the settings as given) and then off, drawn by
/// `renderer` through `camera` at `size` without water; the two pictures saved as `{name}_on.png` and
/// `{name}_off.png` under WATERVIEW_TEST_IMAGES.
fn luminance_steps(
    ctx: &GpuContext,
    (renderer, camera, settings): (
        &mut waterview::render::Renderer,
        &waterview::render::OrbitCamera,
        &mut waterview::render::RenderSettings,
    ),
    size: (u32, u32),
    name: &str,
) -> Vec<(f64, f64)> {
    use waterview::render::render_to_image;
    let on = render_to_image(ctx, renderer, camera, None, settings, size);
    settings.terrain_bounce = false;
    let off = render_to_image(ctx, renderer, camera, None, settings, size);
    if let Ok(dir) = std::env::var("WATERVIEW_TEST_IMAGES") {
        on.save(std::path::Path::new(&dir).join(format!("{name}_on.png"))).expect("save");
        off.save(std::path::Path::new(&dir).join(format!("{name}_off.png"))).expect("save");
    }
    let lum = |p: &image::Rgba<u8>| 0.2126 * p[0] as f64 + 0.7152 * p[1] as f64 + 0.0722 * p[2] as f64;
    on.pixels().zip(off.pixels()).map(|(a, b)| (lum(a), lum(b))).collect()
}
