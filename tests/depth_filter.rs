//! The narrow-range depth filter (src/render/narrow_range.rs) on whatever adapter wgpu finds (lavapipe in
//! CI; a machine with none FAILS with the context's message): a noisy plane with a step (flattened, the
//! step kept), the GPU against a CPU twin of the filter with a layer in front of another, tile-skipped
//! against full-screen; and the two depth filters compared on a calm tank and a splash through the whole
//! renderer, with the figures printed (`cargo test --release --test depth_filter -- --nocapture`) and
//! recorded in docs/rendering.md. `WATERVIEW_WRITE_DOCS_IMAGES=1` writes the comparison's pictures into
//! docs/img/ (otherwise into target/test-output/).

mod common;

use common::{mean_curvature, noisy_disc, noisy_step, read_float_texture, run_narrow_range};
use glam::{Mat4, Vec2, Vec3, Vec4};
use std::path::PathBuf;
use waterview::gpu::GpuContext;
use waterview::render::narrow_range::NarrowRangeUniform;
use waterview::render::{
    render_to_image, CameraUniform, DepthFilter, FluidTargets, FluidView, NarrowRangeSettings, OrbitCamera,
    ParticleSource, RenderSettings, Renderer, OFFSCREEN_FORMAT,
};

/// Settings of the synthetic tests: 2 iterations, 0.5 m radius (about 5 px at 10 m on a 96-pixel-high
/// screen), range 0.5 m, clamp offset 0.05 m.
fn synthetic(full_screen: bool) -> NarrowRangeSettings {
    NarrowRangeSettings {
        iterations: 2,
        radius: 0.5,
        max_radius: 24,
        range: 0.5,
        clamp_offset: 0.05,
        focal_y: 2.14,
        full_screen,
    }
}

#[test]
fn narrow_range_flattens_noise_and_keeps_the_step() {
    let ctx = common::gpu();
    let size = (128u32, 96u32);
    let targets = FluidTargets::new(&ctx, size, OFFSCREEN_FORMAT, false);
    let raw = noisy_step(size);
    let (smooth, _) = run_narrow_range(&ctx, &targets, &raw, synthetic(false));
    let w = size.0 as usize;
    let (before, after) = (mean_curvature(&raw, w), mean_curvature(&smooth, w));
    assert!(after < 0.2 * before, "mean |Laplacian| {before:.4} -> {after:.4}: not smoothed");
    let mean = |z: &[f32]| {
        let plane: Vec<f32> = z.iter().copied().filter(|&v| v > 0.0 && v < 13.0).collect();
        plane.iter().sum::<f32>() / plane.len() as f32
    };
    assert!((mean(&smooth) - mean(&raw)).abs() < 0.01, "the plane's mean depth moved");
    // Rows clear of the silhouette against the background above row 8 (where the filter rounds off).
    for y in 20..90 {
        let (l, r) = (smooth[y * w + 79], smooth[y * w + 80]);
        assert!((l - raw[y * w + 79]).abs() < 0.1 && (r - 14.0).abs() < 1e-4, "row {y}: step not kept ({l}, {r})");
    }
    assert!(smooth[..8 * w].iter().all(|&v| v == 0.0), "background pixels changed");
}

/// One 1-D pass of the filter on the CPU, as `filter_pixel` in shaders/render/narrow_range.wgsl.
fn cpu_pass(src: &[f32], size: (u32, u32), u: &NarrowRangeUniform, dir: (i32, i32)) -> Vec<f32> {
    let (w, h) = (size.0 as i32, size.1 as i32);
    let at = |x: i32, y: i32| src[(y.clamp(0, h - 1) * w + x.clamp(0, w - 1)) as usize];
    let mut out = vec![0.0; src.len()];
    for y in 0..h {
        for x in 0..w {
            let z = at(x, y);
            if z <= 0.0 {
                out[(y * w + x) as usize] = z;
                continue;
            }
            let r = (u.radius_scale / z).min(u.max_radius as f32);
            let s = (0.5 * r).max(0.5);
            let (mut sum, mut weight) = (z, 1.0);
            for k in 1..=r.ceil() as i32 {
                let (a, b) = (at(x - k * dir.0, y - k * dir.1), at(x + k * dir.0, y + k * dir.1));
                let mut pair = a + b;
                if !(a > 0.0 && b > 0.0 && (pair - 2.0 * z).abs() <= 2.0 * u.range) {
                    let a_out = a <= 0.0 || (b > 0.0 && (a - z).abs() > (b - z).abs());
                    let (outlier, partner) = if a_out { (a, b) } else { (b, a) };
                    if outlier > 0.0 && outlier < 2.0 * z - partner {
                        continue;
                    }
                    pair = 2.0 * z + u.clamp_offset;
                }
                let wk = (-0.5 / (s * s) * (k * k) as f32).exp();
                sum += wk * pair;
                weight += 2.0 * wk;
            }
            out[(y * w + x) as usize] = sum / weight;
        }
    }
    out
}

/// The GPU filter (tile-skipped and full-screen) against its CPU twin on a noisy disc at 8 m with a blob at
/// 6.5 m in front of its edge (pairs in front ignored, depths behind clamped, the radius clamped to
/// `max_radius` on the blob), and an empty screen lists no tile.
#[test]
fn narrow_range_matches_its_cpu_twin_tiled_and_full_screen() {
    let ctx = common::gpu();
    let size = (200u32, 136u32);
    let mut depth = noisy_disc(size);
    for (i, z) in depth.iter_mut().enumerate() {
        let (x, y) = ((i as u32 % size.0) as f32, (i as u32 / size.0) as f32);
        if Vec2::new(x - 130.0, y - 80.0).length() < 18.0 {
            *z = 6.5 + 0.01 * (x - 130.0) + 0.02 * ((x * 3.7 + y * 1.3).sin());
        }
    }
    let targets = FluidTargets::new(&ctx, size, OFFSCREEN_FORMAT, false);
    let settings = NarrowRangeSettings { radius: 0.4, max_radius: 8, range: 0.3, ..synthetic(false) };
    let u = settings.uniform(size, targets.tiles.0);
    assert!(u.radius_scale / 6.5 > 8.0, "the blob's radius {} px is clamped", u.radius_scale / 6.5);
    let mut cpu = depth.clone();
    for _ in 0..settings.iterations {
        cpu = cpu_pass(&cpu, size, &u, (1, 0));
        cpu = cpu_pass(&cpu, size, &u, (0, 1));
    }
    let (tiled, tiles) = run_narrow_range(&ctx, &targets, &depth, settings);
    let (full, _) = run_narrow_range(&ctx, &targets, &depth, NarrowRangeSettings { full_screen: true, ..settings });
    let total = targets.tiles.0 * targets.tiles.1;
    assert!(tiles > 0 && tiles < total, "{tiles} of {total} tiles active");
    let worst = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(worst(&tiled, &full) <= 1e-6, "tile-skipped and full-screen differ by {}", worst(&tiled, &full));
    assert!(worst(&tiled, &cpu) <= 2e-5, "GPU and CPU twin differ by up to {} m", worst(&tiled, &cpu));
    assert!(worst(&tiled, &depth) > 1e-2, "the filter changed nothing");

    let empty = vec![0.0f32; depth.len()];
    let (out, tiles) = run_narrow_range(&ctx, &targets, &empty, settings);
    assert_eq!(tiles, 0, "an empty screen has no active tiles");
    assert!(out.iter().all(|&v| v == 0.0));
}

// ---------------------------------------------------------------------------------------------------
// The two filters compared through the whole renderer

/// One frame's depth targets read back: raw and filtered depth (row-major, metres, 0 = no fluid) and the
/// thickness (half resolution, metres).
struct Depths {
    raw: Vec<f32>,
    filtered: Vec<f32>,
    thickness: Vec<f32>,
}

/// What the comparison draws: the tank's particles after settling, a splash above them (a ball, a thin
/// crown of one layer and lone droplets), the camera and the particle spacing.
struct Rig {
    ctx: GpuContext,
    tank: Vec<Vec4>,
    splash: Vec<Vec4>,
    /// The ball's centre and radius (m).
    ball: (Vec3, f32),
    /// The lone droplets' centres (m), the last of `splash`.
    droplets: Vec<Vec3>,
    camera: OrbitCamera,
    dx: f32,
    /// Height of the tank's water surface (the top particles' centres), m.
    top: f32,
}

const SIZE: (u32, u32) = (640, 360);

fn rig() -> Rig {
    let ctx = common::gpu();
    let scene = waterview::scene::Scene::builtin("tank").expect("built-in tank");
    let mut engine = common::engine(&ctx, &scene, None);
    common::run_checked(&ctx, &mut engine, Some(20), None);
    let dx = engine.sim().params().dx;
    let (positions, _) = engine.sim().read_particles_blocking(&ctx);
    let tank: Vec<Vec4> = positions.iter().map(|p| Vec4::from_array(*p)).filter(|p| p.w > 0.0).collect();
    let top = tank.iter().map(|p| p.y).fold(f32::MIN, f32::max);
    // The ball: lattice points within 3 dx of its centre, 6.5 dx above the surface toward the camera.
    let centre = Vec3::new(0.45, top + 6.5 * dx, 0.65);
    let radius = 3.0 * dx;
    let mut splash = Vec::new();
    for i in -3..=3 {
        for j in -3..=3 {
            for k in -3..=3 {
                let p = centre + dx * Vec3::new(i as f32, j as f32, k as f32);
                if (p - centre).length() <= radius + 1e-4 {
                    splash.push(p.extend(1000.0));
                }
            }
        }
    }
    // A crown: one layer of particles on a cylinder of radius 5 dx rising 4 dx from the surface.
    let crown = Vec3::new(0.7, top + dx, 0.4);
    for ring in 0..4 {
        for a in 0..32 {
            let t = a as f32 / 32.0 * std::f32::consts::TAU;
            splash.push((crown + Vec3::new(5.0 * dx * t.cos(), ring as f32 * dx, 5.0 * dx * t.sin())).extend(1000.0));
        }
    }
    // Lone droplets.
    let droplets: Vec<Vec3> = (0..14)
        .map(|d| {
            let t = d as f32 * 2.4;
            crown + Vec3::new(7.0 * dx * t.cos(), (6.0 + (d % 4) as f32 * 1.7) * dx, 7.0 * dx * t.sin())
        })
        .collect();
    splash.extend(droplets.iter().map(|p| p.extend(1000.0)));
    // Closer and steeper than the scene's camera, so the calm surface fills more of the picture.
    let camera = OrbitCamera {
        target: Vec3::new(0.5, top, 0.5),
        distance: 1.8,
        pitch: 40f32.to_radians(),
        ..OrbitCamera::from_desc(&scene.camera)
    };
    Rig { ctx, tank, splash, ball: (centre, radius), droplets, camera, dx, top }
}

impl Rig {
    /// Render settings of the comparison: `filter` with its defaults, `view`.
    fn settings(&self, filter: DepthFilter, view: FluidView) -> RenderSettings {
        let mut s = RenderSettings::default();
        s.particle.radius = 0.5 * self.dx;
        s.fluid.dx = self.dx;
        s.fluid.depth_filter = filter;
        s.view = view;
        s
    }

    /// Draws `particles` with `settings` at `size` and reads back the image and the depth targets.
    fn draw(&self, particles: &[Vec4], settings: &RenderSettings, camera: &OrbitCamera) -> (image::RgbaImage, Depths) {
        let ctx = &self.ctx;
        let hf = waterview::terrain::Heightfield::flat(Vec2::splat(-1.0), Vec2::splat(3.0), -0.01);
        let mut renderer = Renderer::new(ctx, OFFSCREEN_FORMAT, &hf);
        let positions = split_buffer(ctx, "comparison positions", bytemuck::cast_slice(particles));
        let velocities = split_buffer(ctx, "comparison velocities", &vec![0u8; particles.len() * 16]);
        let source = ParticleSource::buffers(&positions, &velocities, particles.len() as u32);
        let img = render_to_image(ctx, &mut renderer, camera, Some(source), settings, SIZE);
        let targets = renderer.fluid_targets().expect("the water was drawn");
        let raw = read_float_texture(ctx, &targets.raw_depth);
        let filtered = read_float_texture(ctx, renderer.smoothed_depth().expect("filtered depth"));
        let thickness = read_float_texture(ctx, targets.thickness_view.texture());
        (img, Depths { raw, filtered, thickness })
    }

    fn uniform(&self, camera: &OrbitCamera) -> CameraUniform {
        camera.uniform(SIZE, Vec3::Y, 1.0, 0.0)
    }
}

/// View-space position of pixel (x, y) at linear depth z (as `view_pos` in shaders/render/composite.wgsl).
fn view_pos(cam: &CameraUniform, x: i32, y: i32, z: f32) -> Vec3 {
    let ndc = Vec2::new((x as f32 + 0.5) / SIZE.0 as f32 * 2.0 - 1.0, 1.0 - (y as f32 + 0.5) / SIZE.1 as f32 * 2.0);
    Vec3::new(ndc.x / cam.clip_from_view[0][0] * z, ndc.y / cam.clip_from_view[1][1] * z, -z)
}

/// World-space unit normal of `depth` at (x, y) as the composite computes it (of the forward and backward
/// differences the one with the smaller depth change), facing the camera; `None` without fluid.
fn normal(cam: &CameraUniform, depth: &[f32], x: i32, y: i32) -> Option<Vec3> {
    let (w, h) = (SIZE.0 as i32, SIZE.1 as i32);
    let at = |x: i32, y: i32| if x < 0 || y < 0 || x >= w || y >= h { 0.0 } else { depth[(y * w + x) as usize] };
    let z = at(x, y);
    if z <= 0.0 {
        return None;
    }
    let c = view_pos(cam, x, y, z);
    let diff = |sx: i32, sy: i32| {
        let (zf, zb) = (at(x + sx, y + sy), at(x - sx, y - sy));
        let fwd = view_pos(cam, x + sx, y + sy, zf) - c;
        let bwd = c - view_pos(cam, x - sx, y - sy, zb);
        let df = if zf > 0.0 { (zf - z).abs() } else { f32::INFINITY };
        let db = if zb > 0.0 { (zb - z).abs() } else { f32::INFINITY };
        if df.is_infinite() && db.is_infinite() {
            view_pos(cam, x + sx, y + sy, z) - c
        } else if df < db {
            fwd
        } else {
            bwd
        }
    };
    let mut n = diff(0, 1).cross(diff(1, 0)).normalize();
    if n.dot(-c) < 0.0 {
        n = -n;
    }
    let view_from_world = Mat4::from_cols_array_2d(&cam.view_from_world);
    Some(view_from_world.inverse().transform_vector3(n).normalize())
}

/// World position of pixel (x, y) at linear depth z.
fn world_pos(cam: &CameraUniform, x: i32, y: i32, z: f32) -> Vec3 {
    Mat4::from_cols_array_2d(&cam.view_from_world).inverse().transform_point3(view_pos(cam, x, y, z))
}

/// Smoothness of the calm tank's surface: over the pixels of its top surface (raw depth within 2 dx of
/// the surface height, 0.15 m or more inside the tank's sides, fluid all around in a 9 x 9 window), the
/// RMS angle of `depth`'s normal from the vertical, degrees, and the number of pixels.
fn surface_tilt(rig: &Rig, cam: &CameraUniform, raw: &[f32], depth: &[f32]) -> (f32, usize) {
    let (w, h) = (SIZE.0 as i32, SIZE.1 as i32);
    let (mut sum, mut n) = (0.0f64, 0usize);
    for y in 4..h - 4 {
        for x in 4..w - 4 {
            let z = raw[(y * w + x) as usize];
            if z <= 0.0 {
                continue;
            }
            let p = world_pos(cam, x, y, z);
            let inside = p.x > 0.15 && p.x < 0.85 && p.z > 0.15 && p.z < 0.85;
            if !inside || (p.y - rig.top).abs() > 2.0 * rig.dx {
                continue;
            }
            let window = (-4..=4).all(|dy| (-4..=4).all(|dx| raw[((y + dy) * w + x + dx) as usize] > 0.0));
            if let (true, Some(nrm)) = (window, normal(cam, depth, x, y)) {
                let angle = nrm.dot(Vec3::Y).clamp(-1.0, 1.0).acos().to_degrees() as f64;
                sum += angle * angle;
                n += 1;
            }
        }
    }
    (((sum / n.max(1) as f64).sqrt()) as f32, n)
}

/// Edge figures of the splash's ball against the water behind it: (the ball's rim pixels' mean depth
/// change, in dx, positive = pushed back; the mean fraction of the depth jump to the water behind kept
/// across the rim; the mean |cos| between the filtered normal and the view ray at the rim, 0 = edge-on as a
/// sphere's rim should be; rim pixels).
fn ball_edge(rig: &Rig, cam: &CameraUniform, d: &Depths) -> (f32, f32, f32, usize) {
    let (w, h) = (SIZE.0 as i32, SIZE.1 as i32);
    let view_from_world = Mat4::from_cols_array_2d(&cam.view_from_world);
    let ball_z = -view_from_world.transform_point3(rig.ball.0).z;
    let reach = rig.ball.1 + 1.5 * rig.dx;
    let is_ball = |z: f32| z > 0.0 && (z - ball_z).abs() < reach;
    let (mut shift, mut kept, mut facing, mut n, mut pairs) = (0.0f64, 0.0f64, 0.0f64, 0usize, 0usize);
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let i = (y * w + x) as usize;
            if !is_ball(d.raw[i]) {
                continue;
            }
            let behind: Vec<usize> = [(1, 0), (-1, 0), (0, 1), (0, -1)]
                .iter()
                .map(|(sx, sy)| ((y + sy) * w + x + sx) as usize)
                .filter(|&j| d.raw[j] > ball_z + reach)
                .collect();
            if behind.is_empty() {
                continue;
            }
            shift += ((d.filtered[i] - d.raw[i]) / rig.dx) as f64;
            for &j in &behind {
                kept += ((d.filtered[j] - d.filtered[i]) / (d.raw[j] - d.raw[i])) as f64;
                pairs += 1;
            }
            if let Some(nrm) = normal(cam, &d.filtered, x, y) {
                let ray = (world_pos(cam, x, y, d.filtered[i]) - rig.camera.eye()).normalize();
                facing += nrm.dot(ray).abs() as f64;
            }
            n += 1;
        }
    }
    let m = n.max(1) as f64;
    ((shift / m) as f32, (kept / pairs.max(1) as f64) as f32, (facing / m) as f32, n)
}

fn picture_dir() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = if std::env::var_os("WATERVIEW_WRITE_DOCS_IMAGES").is_some() {
        root.join("docs/img")
    } else {
        root.join("target/test-output")
    };
    std::fs::create_dir_all(&dir).expect("picture folder");
    dir
}

/// Curvature flow against the narrow-range filter, each with its default parameters, through the whole
/// renderer at 640 x 360 on the built-in tank (20 frames settled) and a splash over it: the calm surface's
/// RMS normal tilt (smoothness) and the splash ball's rim (edge sharpness), printed; pictures written.
/// Asserts what the default (`FluidSettings::depth_filter`, narrow range) was chosen on: the narrow-range
/// filter leaves the calm surface's normals at most half as tilted as curvature flow does, keeps over 80 %
/// of the ball's depth jump (at most 10 points less than curvature flow) and moves its rim by under half a
/// dx; both filters smooth the raw splats.
#[test]
fn filters_compared_on_a_calm_tank_and_a_splash() {
    let rig = rig();
    let cam = rig.uniform(&rig.camera);
    let with_splash: Vec<Vec4> = rig.tank.iter().chain(&rig.splash).copied().collect();
    let dir = picture_dir();
    let mut calm = Vec::new();
    let mut edge = Vec::new();
    for (filter, file) in [(DepthFilter::CurvatureFlow, "curvature_flow"), (DepthFilter::NarrowRange, "narrow_range")] {
        let (_, d) = rig.draw(&rig.tank, &rig.settings(filter, FluidView::SmoothedDepth), &rig.camera);
        let (tilt, pixels) = surface_tilt(&rig, &cam, &d.raw, &d.filtered);
        let (raw_tilt, _) = surface_tilt(&rig, &cam, &d.raw, &d.raw);
        assert!(pixels > 2000, "{file}: only {pixels} surface pixels measured");
        let (img, d) = rig.draw(&with_splash, &rig.settings(filter, FluidView::Final), &rig.camera);
        img.save(dir.join(format!("filter_{file}.png"))).expect("save picture");
        let (normals, _) = rig.draw(&with_splash, &rig.settings(filter, FluidView::Normals), &rig.camera);
        normals.save(dir.join(format!("filter_{file}_normals.png"))).expect("save picture");
        let (shift, kept, facing, rim) = ball_edge(&rig, &cam, &d);
        let (_, _, raw_facing, _) =
            ball_edge(&rig, &cam, &Depths { raw: d.raw.clone(), filtered: d.raw.clone(), thickness: Vec::new() });
        println!(
            "{file}: calm surface RMS tilt {tilt:.2} deg (raw splats {raw_tilt:.2} deg, {pixels} px); splash rim \
             ({rim} px): depth shift {shift:.3} dx, jump kept {:.1} %, |cos(normal, ray)| {facing:.3} (raw {raw_facing:.3})",
            100.0 * kept
        );
        assert!(tilt < 0.7 * raw_tilt, "{file}: the calm surface is not smoothed ({raw_tilt} -> {tilt} deg)");
        assert!(rim > 50, "{file}: only {rim} rim pixels of the ball");
        calm.push(tilt);
        edge.push((shift, kept));
    }
    droplets_close_up(&rig, &with_splash, &dir);
    let ((_, cf_kept), (nr_shift, nr_kept)) = (edge[0], edge[1]);
    assert!(
        calm[1] < 0.5 * calm[0],
        "narrow range ({} deg) is not smoother than curvature flow ({} deg)",
        calm[1],
        calm[0]
    );
    assert!(
        nr_kept > 0.8 && nr_kept > cf_kept - 0.1 && nr_shift.abs() < 0.5,
        "narrow range: the ball's rim moved ({nr_shift} dx; {nr_kept} of the jump kept, curvature flow {cf_kept})"
    );
}

/// The splash's crown and lone droplets close up, with the droplet shading off and on (the default):
/// pictures `droplets_off.png` and `droplets_on.png`. Asserts that the shading changes the thin water (the
/// lone droplets' pixels, thinner than the droplet thickness) and leaves the thick water (over three times
/// it) as it was.
fn droplets_close_up(rig: &Rig, particles: &[Vec4], dir: &std::path::Path) {
    let crown = rig.droplets.iter().fold(Vec3::ZERO, |a, &p| a + p) / rig.droplets.len() as f32;
    let camera = OrbitCamera { target: crown, distance: 1.2, pitch: 0.3, ..rig.camera.clone() };
    let defaults = RenderSettings::default().fluid;
    let mut shots = Vec::new();
    for (droplet_thickness, file) in [(0.0, "droplets_off"), (defaults.droplet_thickness, "droplets_on")] {
        let mut settings = rig.settings(defaults.depth_filter, FluidView::Final);
        settings.fluid.droplet_thickness = droplet_thickness;
        let (img, d) = rig.draw(particles, &settings, &camera);
        img.save(dir.join(format!("{file}.png"))).expect("save picture");
        shots.push((img, d));
    }
    let ((off, d), (on, _)) = (&shots[0], &shots[1]);
    let limit = defaults.droplet_thickness * rig.dx;
    let half_w = SIZE.0.div_ceil(2);
    let (mut thin, mut thick) = ((0.0f64, 0usize), (0.0f64, 0usize));
    for (x, y, p) in on.enumerate_pixels() {
        let i = (y * SIZE.0 + x) as usize;
        if d.raw[i] <= 0.0 {
            continue;
        }
        let t = d.thickness[((y / 2) * half_w + x / 2) as usize];
        let q = off.get_pixel(x, y);
        let diff = (0..3).map(|c| (p[c] as f64 - q[c] as f64).abs()).sum::<f64>() / 3.0;
        if t < limit {
            thin = (thin.0 + diff, thin.1 + 1);
        } else if t > 3.0 * limit {
            thick = (thick.0 + diff, thick.1 + 1);
        }
    }
    let (thin_diff, thick_diff) = (thin.0 / thin.1.max(1) as f64, thick.0 / thick.1.max(1) as f64);
    println!(
        "droplet shading: mean change {thin_diff:.1} levels over {} thin pixels, {thick_diff:.2} over {} thick ones",
        thin.1, thick.1
    );
    assert!(thin.1 > 200 && thick.1 > 1000, "too few pixels measured: {} thin, {} thick", thin.1, thick.1);
    assert!(thin_diff > 8.0, "the droplet shading hardly changes the droplets ({thin_diff:.1} levels)");
    assert!(thick_diff < 0.5, "the droplet shading changes thick water ({thick_diff:.2} levels)");
}

/// A split per-particle array holding `data` (one chunk unless a test lowers `gpu::split::per_binding`).
fn split_buffer(ctx: &GpuContext, label: &str, data: &[u8]) -> waterview::gpu::split::SplitBuffer {
    waterview::gpu::split::SplitBuffer::new_init(&ctx.device, &ctx.queue, label, 16, data).expect("fits")
}
