//! Screen-space fluid rendering on whatever adapter wgpu finds (lavapipe in CI; a machine with none FAILS
//! with the context's message): one analytic ellipsoid splat, anisotropy of a sheet and a bulk, curvature
//! flow on a noisy plane with a step, tile-skipped against full-screen flow, the sky loader's errors, and
//! image checks of every target of a small fixed scene (its foam too) against `tests/reference/*.png`.
//!
//! Image checks: mean absolute difference <= 2 levels and at most 1% of pixels off by more than 24 levels.
//! A failure writes `<name>.new.png` and `<name>.diff.png` under `target/test-output/` and names them.
//! `WATERVIEW_UPDATE_REFERENCES=1` rewrites the references (look at them before committing).

mod common;

use common::{anisotropy_of, mean_curvature, noisy_disc, noisy_step, read_float_texture, run_flow};
use glam::{Mat3, Vec2, Vec3, Vec4};
use std::path::PathBuf;
use waterview::gpu::GpuContext;
use waterview::render::{
    render_to_image, AnisotropyInput, Ellipsoid, EllipsoidBuffers, FluidSettings, FluidTargets, FluidView, OrbitCamera,
    ParticleSource, Pass, RenderSettings, Renderer, SkySource, SplatInput, SplatMethod, SplatPass, Tank, Targets,
    OFFSCREEN_FORMAT,
};
use waterview::terrain::Heightfield;

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    std::fs::create_dir_all(&dir).expect("create target/test-output");
    dir
}

/// Pixel centre -> world ray direction for `camera` at `size`.
fn pixel_ray(camera: &OrbitCamera, size: (u32, u32), x: u32, y: u32) -> Vec3 {
    let ndc = Vec2::new((x as f32 + 0.5) / size.0 as f32 * 2.0 - 1.0, 1.0 - (y as f32 + 0.5) / size.1 as f32 * 2.0);
    let p = camera.clip_from_world(size.0 as f32 / size.1 as f32).inverse().project_point3(ndc.extend(1.0));
    (p - camera.eye()).normalize()
}

#[test]
fn shaders_parse_and_validate() {
    for path in [
        "render/anisotropy.wgsl",
        "render/splat.wgsl",
        "render/fluid_tiles.wgsl",
        "render/curvature_flow.wgsl",
        "render/composite.wgsl",
        "render/sky.wgsl",
    ] {
        let src = waterview::gpu::shader::resolve(path);
        let module =
            naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{path}: {}", e.emit_to_string(&src)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{path}: {e:?}"));
    }
}

#[test]
fn single_ellipsoid_depth_and_thickness_match_ray_cast() {
    let ctx = common::gpu();
    let rot = Mat3::from_euler(glam::EulerRot::YXZ, 0.7, 0.4, -0.3);
    for method in [SplatMethod::Raster, SplatMethod::Compute] {
        ellipsoids_against_ray_cast(&ctx, method, &[(Vec3::new(0.3, -0.2, 0.1), Vec3::new(1.4, 0.5, 0.9), rot)]);
    }
}

/// Several ellipsoids of different shapes and orientations, after one that is not drawn (bounding radius
/// 0): the splats read each one's centre and matrix from their two arrays at the same index (a matrix
/// taken from a neighbour's entry changes the shapes and fails the comparison).
#[test]
fn several_ellipsoids_read_centre_and_matrix_of_the_same_particle() {
    let ctx = common::gpu();
    let list = [
        (Vec3::new(-1.6, 0.2, 0.0), Vec3::new(0.9, 0.25, 0.5), Mat3::from_euler(glam::EulerRot::YXZ, 0.2, 1.1, 0.0)),
        (Vec3::new(0.0, -0.3, 0.4), Vec3::new(0.3, 0.8, 0.45), Mat3::from_euler(glam::EulerRot::YXZ, -0.6, 0.3, 0.5)),
        (Vec3::new(1.5, 0.4, -0.2), Vec3::new(0.6, 0.6, 0.2), Mat3::from_euler(glam::EulerRot::YXZ, 1.2, -0.4, 0.9)),
    ];
    for method in [SplatMethod::Raster, SplatMethod::Compute] {
        ellipsoids_against_ray_cast(&ctx, method, &list);
    }
}

/// Ellipsoids (centre, semi-axes, rotation) splatted with `method` after one that is not drawn, every
/// pixel compared with a CPU ray cast: coverage, the nearest hit's depth, the summed path length.
fn ellipsoids_against_ray_cast(ctx: &GpuContext, method: SplatMethod, list: &[(Vec3, Vec3, Mat3)]) {
    let size = (160u32, 120u32);
    let camera = OrbitCamera {
        target: Vec3::ZERO,
        distance: 6.0,
        yaw: 0.4,
        pitch: 0.3,
        fov_y: 50f32.to_radians(),
        lens_shift: 0.0,
    };
    let mut stored: Vec<Ellipsoid> = list
        .iter()
        .map(|&(centre, axes, rot)| {
            Ellipsoid::new(centre, axes.max_element(), rot * Mat3::from_diagonal(axes.recip()) * rot.transpose())
        })
        .collect();
    // Index 0: not drawn (a parked particle's), with a matrix of its own.
    stored.insert(0, Ellipsoid::new(Vec3::ZERO, 0.0, Mat3::from_diagonal(Vec3::splat(0.5))));
    // The CPU casts against the ellipsoids as stored (G in 16-bit floats).
    let drawn: Vec<(Vec3, Mat3)> = stored[1..].iter().map(|e| (Vec3::from_slice(&e.centre[..3]), e.g())).collect();
    let ellipsoids = EllipsoidBuffers::from_ellipsoids(ctx, &stored).expect("fits");

    let uniform = camera.uniform(size, Vec3::Y, 1.0, 0.0);
    let scene = waterview::render::Offscreen::new(ctx, size);
    let targets = FluidTargets::new(ctx, size, OFFSCREEN_FORMAT, false);
    let mut splat = SplatPass::new(ctx, OFFSCREEN_FORMAT);
    splat.resize(&ctx.device, Some(Targets { scene: &scene, fluid: &targets }));
    let count = stored.len() as u32;
    common::record_frame(ctx, &scene, &uniform, |frame| {
        // Scene depth cleared to far (no terrain).
        drop(frame.target_pass("clear", true));
        splat.encode(frame, SplatInput { ellipsoids: &ellipsoids, count, method, dx: 0.1 });
    });
    let depth = read_float_texture(ctx, &targets.raw_depth);
    let thickness = read_float_texture(ctx, targets.thickness_view.texture());

    let eye = camera.eye();
    let forward = (camera.target - eye).normalize();
    let (mut compared, mut wrong_cover, mut worst_depth, mut worst_path) = (0, Vec::new(), 0f32, 0f32);
    for y in 0..size.1 {
        for x in 0..size.0 {
            let dir = pixel_ray(&camera, size, x, y);
            let i = (y * size.0 + x) as usize;
            let gpu_hit = depth[i] > 0.0;
            // (entry, exit) of every ellipsoid the ray hits; None when a ray grazes a rim.
            let hits: Option<Vec<(f32, f32)>> = drawn
                .iter()
                .filter_map(|&(centre, g)| {
                    let (o, d) = (g * (eye - centre), g * dir);
                    let (a, b, c) = (d.dot(d), o.dot(d), o.dot(o) - 1.0);
                    let disc = b * b - a * c;
                    // Near the silhouette (the ray within 1% of the unit sphere's rim) either answer is fine.
                    if (disc / a).abs() < 0.02 {
                        return Some(None);
                    }
                    (disc > 0.0).then(|| Some(((-b - disc.sqrt()) / a, (-b + disc.sqrt()) / a)))
                })
                .collect();
            let Some(hits) = hits else { continue };
            if hits.is_empty() == gpu_hit {
                wrong_cover.push((x, y));
                continue;
            }
            if let Some(t0) = hits.iter().map(|h| h.0).reduce(f32::min) {
                let z = t0 * dir.dot(forward);
                let path: f32 = hits.iter().map(|h| h.1 - h.0).sum();
                worst_depth = worst_depth.max((depth[i] - z).abs() / z);
                worst_path = worst_path.max((thickness[i] - path).abs() / path.max(0.05));
                compared += 1;
            }
        }
    }
    let gpu_pixels = depth.iter().filter(|&&z| z > 0.0).count();
    assert!(
        compared > 1000,
        "{method:?}: the ellipsoids cover only {compared} pixels (GPU: {gpu_pixels}, coverage mismatches {})",
        wrong_cover.len()
    );
    assert!(
        wrong_cover.len() <= 3,
        "{method:?}: coverage differs from the ray cast at {:?}",
        &wrong_cover[..wrong_cover.len().min(8)]
    );
    assert!(
        worst_depth < 1e-4,
        "{method:?}: splat depth differs from the analytic depth by up to {:.2e} (relative)",
        worst_depth
    );
    assert!(
        worst_path < 5e-3,
        "{method:?}: thickness differs from the analytic path length by up to {:.2e} (relative)",
        worst_path
    );
}

#[test]
fn anisotropy_flattens_sheets_and_keeps_bulk_round() {
    let ctx = common::gpu();
    let dx = 0.1;
    let r = RenderSettings::default().fluid.splat_radius * dx;
    // A flat sheet in the xz plane, far from the origin (tests the offsets' conditioning).
    let base = Vec3::new(120.0, 35.0, -80.0);
    let sheet: Vec<Vec4> =
        (0..21 * 21).map(|k| (base + dx * Vec3::new((k % 21) as f32, 0.0, (k / 21) as f32)).extend(1000.0)).collect();
    let e = anisotropy_of(&ctx, &sheet, dx)[10 * 21 + 10];
    let (ax, ay, az) = (e.axis_along(Vec3::X), e.axis_along(Vec3::Y), e.axis_along(Vec3::Z));
    assert!(ay < 0.5 * ax.min(az), "sheet: the normal axis {ay} should be thin against {ax}, {az}");
    assert!((ax / az - 1.0).abs() < 0.05, "sheet: in-plane axes {ax}, {az} should match");
    assert!(
        (ax * ay * az).cbrt() > 0.9 * r && (ax * ay * az).cbrt() < 1.1 * r,
        "sheet: volume of a sphere of radius {r}"
    );
    assert!((Vec3::from_slice(&e.centre[..3]) - sheet[10 * 21 + 10].truncate()).length() < 1e-3, "sheet: centre moved");

    // A uniform 11^3 bulk: the centre particle is a near-sphere of the splat radius.
    let bulk: Vec<Vec4> = (0..11 * 11 * 11)
        .map(|k| (dx * Vec3::new((k % 11) as f32, ((k / 11) % 11) as f32, (k / 121) as f32)).extend(1000.0))
        .collect();
    let e = anisotropy_of(&ctx, &bulk, dx)[5 * 121 + 5 * 11 + 5];
    let axes = [Vec3::X, Vec3::Y, Vec3::Z, Vec3::ONE.normalize()].map(|d| e.axis_along(d));
    let (lo, hi) = axes.iter().fold((f32::MAX, 0f32), |(lo, hi), &a| (lo.min(a), hi.max(a)));
    assert!(lo > 0.9 * hi, "bulk: axes {axes:?} should be nearly equal");
    assert!((hi / r - 1.0).abs() < 0.1, "bulk: axes {axes:?} should be about the splat radius {r}");
}

/// Particles with fewer than N_eps neighbours (Yu & Turk's isolated particles): a particle alone is a
/// sphere of k_n (`isolated_radius`) times the splat radius, one in a pair a little larger (a share
/// 1 / (N_eps - 1) of the way to the whole radius), each within the 16-bit rounding of G; a particle of
/// the bulk keeps the whole radius (`anisotropy_flattens_sheets_and_keeps_bulk_round`).
#[test]
fn isolated_particles_are_small_droplets() {
    let ctx = common::gpu();
    let dx = 0.1;
    let f = RenderSettings::default().fluid;
    let r = f.splat_radius * dx;
    // A lone particle, and a pair 1 dx apart, far from each other.
    let particles =
        [Vec4::new(0.0, 0.0, 0.0, 1000.0), Vec4::new(5.0, 0.0, 0.0, 1000.0), Vec4::new(5.1, 0.0, 0.0, 1000.0)];
    let e = anisotropy_of(&ctx, &particles, dx);
    let axes = |e: &waterview::render::Ellipsoid| [Vec3::X, Vec3::Y, Vec3::Z].map(|d| e.axis_along(d));
    let lone = r * f.isolated_radius;
    let pair = r * (f.isolated_radius + (1.0 - f.isolated_radius) / (f.neighbour_threshold - 1) as f32);
    for (k, want) in [(0, lone), (1, pair), (2, pair)] {
        for a in axes(&e[k]) {
            assert!((a / want - 1.0).abs() < 2e-3, "particle {k}: axis {a} m, a sphere of {want} m expected");
        }
        assert!((e[k].centre[3] / want - 1.0).abs() < 1e-5, "particle {k}: bounding radius {}", e[k].centre[3]);
    }
}

/// The neighbour search behind the anisotropy (the hash grid's rows of r/2 cells, trimmed to the sphere,
/// with runs that wrap around the table): every particle's smoothed centre x_i + lambda * (weighted mean
/// offset of its neighbours within r) matches a brute-force CPU sum over all pairs, for a jittered cloud
/// with holes around the origin (negative cells) and parked particles that must not count. A neighbour
/// missed or counted twice moves a centre by about 1e-4 m here; the tolerance is 1e-5 m.
#[test]
fn anisotropy_neighbours_match_brute_force() {
    let ctx = common::gpu();
    let dx = 0.1;
    let mut seed = 987_654_321u32;
    let mut rand = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as f32 / (1u32 << 24) as f32
    };
    let mut cloud = Vec::new();
    for k in 0..18 * 12 * 18 {
        let lattice = Vec3::new((k % 18) as f32, ((k / 18) % 12) as f32, (k / 216) as f32) - Vec3::new(9.0, 6.0, 9.0);
        let jitter = Vec3::new(rand(), rand(), rand()) - Vec3::splat(0.5);
        if rand() < 0.15 {
            continue; // holes: neighbour counts vary
        }
        let parked = rand() < 0.03;
        cloud.push((dx * (lattice + 0.6 * jitter)).extend(if parked { -1.0 } else { 1000.0 }));
    }
    let settings =
        RenderSettings { fluid: FluidSettings { dx, ..FluidSettings::default() }, ..RenderSettings::default() };
    let u = settings.anisotropy_uniform();
    let gpu = anisotropy_of(&ctx, &cloud, dx);
    let (r, lambda) = (u.radius as f64, u.lambda as f64);
    let mut worst = 0.0f64;
    let mut checked = 0;
    for (i, p) in cloud.iter().enumerate().filter(|(_, p)| p.w >= 0.0) {
        let xi = p.truncate().as_dvec3();
        let (mut sw, mut sq) = (0.0f64, glam::DVec3::ZERO);
        for q in cloud.iter().filter(|q| q.w >= 0.0) {
            let d = q.truncate().as_dvec3() - xi;
            if d.length() < r {
                let w = 1.0 - (d.length() / r).powi(3);
                sw += w;
                sq += w * d;
            }
        }
        let expected = xi + lambda * sq / sw;
        let got = glam::DVec3::new(gpu[i].centre[0] as f64, gpu[i].centre[1] as f64, gpu[i].centre[2] as f64);
        worst = worst.max((got - expected).length());
        checked += 1;
    }
    assert!(checked > 2500, "{checked} particles checked");
    assert!(worst < 1e-5, "a smoothed centre differs from the brute-force one by {worst:.2e} m");
    let parked = cloud.iter().zip(&gpu).filter(|(p, _)| p.w < 0.0);
    assert!(
        parked.clone().count() > 20 && parked.clone().all(|(_, e)| e.centre[3] == 0.0),
        "parked particles are not drawn"
    );
}

#[test]
fn curvature_flow_smooths_noise_and_keeps_the_step() {
    let ctx = common::gpu();
    let size = (128u32, 96u32);
    let targets = FluidTargets::new(&ctx, size, OFFSCREEN_FORMAT, false);
    let raw = noisy_step(size);
    let (smooth, _) = run_flow(&ctx, &targets, &raw, false);
    let w = size.0 as usize;
    let (before, after) = (mean_curvature(&raw, w), mean_curvature(&smooth, w));
    assert!(after < 0.2 * before, "mean curvature {before:.4} -> {after:.4}: not smoothed");
    let mean = |z: &[f32]| {
        z.iter().filter(|&&v| v > 0.0 && v < 13.0).sum::<f32>()
            / z.iter().filter(|&&v| v > 0.0 && v < 13.0).count() as f32
    };
    assert!((mean(&smooth) - mean(&raw)).abs() < 0.01, "the plane's mean depth moved");
    for y in 10..90 {
        let (l, r) = (smooth[y * w + 79], smooth[y * w + 80]);
        assert!((l - raw[y * w + 79]).abs() < 0.1 && (r - 14.0).abs() < 1e-4, "row {y}: step not kept ({l}, {r})");
    }
    assert!(smooth[..8 * w].iter().all(|&v| v == 0.0), "background pixels changed");
}

#[test]
fn tile_skipped_flow_matches_full_screen_and_empty_screen_has_no_tiles() {
    let ctx = common::gpu();
    let size = (200u32, 136u32);
    let depth = noisy_disc(size);
    let targets = FluidTargets::new(&ctx, size, OFFSCREEN_FORMAT, false);
    let (tiled, tiles) = run_flow(&ctx, &targets, &depth, false);
    let (full, _) = run_flow(&ctx, &targets, &depth, true);
    let total = targets.tiles.0 * targets.tiles.1;
    assert!(tiles > 0 && tiles < total, "{tiles} of {total} tiles active");
    let worst = tiled.iter().zip(&full).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(worst <= 1e-5, "tile-skipped and full-screen flow differ by {worst}");
    assert!(tiled.iter().zip(&depth).any(|(a, b)| (a - b).abs() > 1e-3), "the flow changed nothing");

    let empty = vec![0.0f32; depth.len()];
    let (out, tiles) = run_flow(&ctx, &targets, &empty, false);
    assert_eq!(tiles, 0, "an empty screen has no active tiles");
    assert!(out.iter().all(|&v| v == 0.0));
}

#[test]
fn bad_sky_file_is_an_error_and_the_sky_stays() {
    let ctx = common::gpu();
    let hf = Heightfield::flat(Vec2::splat(-5.0), Vec2::splat(10.0), 0.0);
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let dir = out_dir();
    let bad = dir.join("not_a_sky.png");
    std::fs::write(&bad, b"this is not a PNG").unwrap();
    let before = renderer.sky().source().clone();
    let err = renderer.load_sky(&ctx, &bad).expect_err("garbage must not load").to_string();
    assert!(err.contains("not_a_sky.png"), "the error names the file: {err}");
    let missing = dir.join("no_such_sky.hdr");
    let err = renderer.load_sky(&ctx, &missing).expect_err("missing file").to_string();
    assert!(err.contains("no_such_sky.hdr"), "{err}");
    let square = dir.join("square_sky.png");
    image::RgbImage::from_pixel(16, 16, image::Rgb([90, 140, 220])).save(&square).unwrap();
    let err = renderer.load_sky(&ctx, &square).expect_err("not 2:1").to_string();
    assert!(err.contains("square_sky.png") && err.contains("twice as wide"), "{err}");
    assert_eq!(renderer.sky().source(), &before, "a failed load keeps the current sky");

    let good = dir.join("good_sky.png");
    image::RgbImage::from_fn(64, 32, |_, y| image::Rgb([40 + 4 * y as u8, 120, 230])).save(&good).unwrap();
    renderer.load_sky(&ctx, &good).expect("a 2:1 PNG loads");
    assert_eq!(renderer.sky().source(), &SkySource::Loaded(vec![good]));
}

/// The fixed scene of the image checks: a gently sloped bumpy ground and a mound of 1 500 particles.
fn image_scene() -> (Heightfield, Vec<Vec4>, OrbitCamera) {
    let (nx, nz) = (48u32, 48u32);
    let origin = Vec2::splat(-6.0);
    let extent = Vec2::splat(12.0);
    let spacing = extent / Vec2::new((nx - 1) as f32, (nz - 1) as f32);
    let heights = (0..nx * nz)
        .map(|i| {
            let p = origin + Vec2::new((i % nx) as f32, (i / nx) as f32) * spacing;
            0.04 * p.x * p.x + 0.05 * p.y + 0.15 * (1.3 * p.x).sin() * (0.9 * p.y).cos()
        })
        .collect();
    let hf = Heightfield { nx, nz, origin, extent, heights };
    let dx = 0.2;
    let mut particles = Vec::new();
    for iz in 0..24 {
        for ix in 0..24 {
            let (x, z) = (-2.4 + dx * ix as f32, -2.4 + dx * iz as f32);
            let ground = hf.height_at(x, z);
            let depth = 1.2 - 0.12 * (x * x + z * z);
            let mut y = ground + 0.5 * dx;
            while y < ground + depth && particles.len() < 1500 {
                particles.push(Vec4::new(x, y, z, 1000.0));
                y += dx;
            }
        }
    }
    let camera = OrbitCamera {
        target: Vec3::new(0.0, 0.4, 0.0),
        distance: 8.0,
        yaw: 0.5,
        pitch: 0.45,
        fov_y: 50f32.to_radians(),
        lens_shift: 0.0,
    };
    (hf, particles, camera)
}

/// Compares `img` with `tests/reference/<name>.png` (see the module doc).
fn check_image(img: &image::RgbaImage, name: &str) -> Result<(), String> {
    let reference = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/reference/{name}.png"));
    if std::env::var_os("WATERVIEW_UPDATE_REFERENCES").is_some() {
        img.save(&reference).map_err(|e| format!("{}: {e}", reference.display()))?;
        return Ok(());
    }
    let new = out_dir().join(format!("{name}.new.png"));
    let fail = |msg: String| {
        img.save(&new).ok();
        Err(format!("{name}: {msg}; new image in {}", new.display()))
    };
    let want = match image::open(&reference) {
        Ok(i) => i.to_rgba8(),
        Err(e) => {
            return fail(format!(
                "no reference {} ({e}); set WATERVIEW_UPDATE_REFERENCES=1 to write it",
                reference.display()
            ))
        }
    };
    if want.dimensions() != img.dimensions() {
        return fail(format!("size {:?} differs from the reference's {:?}", img.dimensions(), want.dimensions()));
    }
    let mut diff = image::RgbaImage::new(img.width(), img.height());
    let (mut sum, mut outliers) = (0u64, 0usize);
    for ((p, q), d) in img.pixels().zip(want.pixels()).zip(diff.pixels_mut()) {
        let delta: [u8; 3] = std::array::from_fn(|c| (p.0[c] as i32 - q.0[c] as i32).unsigned_abs() as u8);
        sum += delta.iter().map(|&v| v as u64).sum::<u64>();
        let worst = *delta.iter().max().unwrap();
        outliers += (worst > 24) as usize;
        *d = image::Rgba([worst.saturating_mul(4), 0, 0, 255]);
    }
    let n = (img.width() * img.height()) as f64;
    let mad = sum as f64 / (3.0 * n);
    if mad > 2.0 || outliers as f64 > 0.01 * n {
        let diff_path = out_dir().join(format!("{name}.diff.png"));
        diff.save(&diff_path).ok();
        return fail(format!(
            "mean abs difference {mad:.2} levels, {outliers} pixels off by > 24; difference in {}",
            diff_path.display()
        ));
    }
    Ok(())
}

#[test]
fn image_checks_of_every_target() {
    let ctx = common::gpu();
    let (hf, particles, camera) = image_scene();
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let positions = split_buffer(&ctx, "image positions", bytemuck::cast_slice(&particles));
    let velocities = split_buffer(&ctx, "image velocities", &vec![0u8; particles.len() * 16]);
    let source = ParticleSource::buffers(&positions, &velocities, particles.len() as u32);
    let mut failures = Vec::new();
    // Both splat methods against the same references: they must draw the same picture.
    for method in [SplatMethod::Raster, SplatMethod::Compute] {
        for (view, name) in [
            (FluidView::RawDepth, "fluid_raw_depth"),
            (FluidView::SmoothedDepth, "fluid_smoothed_depth"),
            (FluidView::Thickness, "fluid_thickness"),
            (FluidView::Normals, "fluid_normals"),
            (FluidView::Final, "fluid_final"),
        ] {
            let mut settings = RenderSettings::default();
            settings.fluid.dx = 0.2;
            settings.fluid.splats = method;
            settings.view = view;
            let img = render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, (160, 120));
            img.save(out_dir().join(format!("{name}_{method:?}.png"))).ok();
            if let Err(e) = check_image(&img, name) {
                failures.push(format!("{method:?}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "image checks failed:\n{}", failures.join("\n"));
}

/// Diffuse particles over the image scene's water, placed by a fixed pseudo-random sequence: foam on the
/// surface drifting with the flow, spray flying up and out of it, bubbles inside. 32 bytes each
/// (`DiffuseParticle`: position and lifetime, velocity and kind).
fn image_scene_diffuse(hf: &Heightfield) -> Vec<[f32; 8]> {
    let mut seed = 12345u32;
    let mut next = move || {
        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (seed >> 8) as f32 / (1u32 << 24) as f32
    };
    let mut diffuse = Vec::new();
    for k in 0..900 {
        let (x, z) = (-2.4 + 4.6 * next(), -2.4 + 4.6 * next());
        let ground = hf.height_at(x, z);
        let top = ground + (1.2 - 0.12 * (x * x + z * z)).max(0.0);
        let (y, v, kind) = match k % 6 {
            0 => (top + 0.1 + 1.0 * next(), [1.5 + next(), 2.0 * next(), 0.5], 0.0),
            1 => (ground + 0.3 * (top - ground), [0.3, 0.4, 0.0], 2.0),
            _ => (top, [1.0, 0.0, 0.5 * next()], 1.0),
        };
        diffuse.push([x, y, z, 1.0 + next(), v[0], v[1], v[2], kind]);
    }
    diffuse
}

/// The foam target and the final frame of the image scene with diffuse particles against
/// `tests/reference/foam_view.png` and `foam_final.png` (the module's tolerances): foam (white), spray
/// (orange in the foam view) and bubbles, motion-blurred at the default exposure. Besides the pictures: the
/// foam view shows foam over the water, and the final frame is whiter there than without the particles.
#[test]
fn foam_image_checks() {
    let ctx = common::gpu();
    let (hf, particles, camera) = image_scene();
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let positions = split_buffer(&ctx, "image positions", bytemuck::cast_slice(&particles));
    let velocities = split_buffer(&ctx, "image velocities", &vec![0u8; particles.len() * 16]);
    let diffuse = image_scene_diffuse(&hf);
    let pool = waterview::gpu::storage_buffer_init(&ctx.device, "image diffuse", bytemuck::cast_slice(&diffuse));
    let args = wgpu::util::DeviceExt::create_buffer_init(
        &ctx.device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("image diffuse draw"),
            // The draw arguments, then the pool's simulated time (0 s) at byte 16.
            contents: bytemuck::cast_slice(&[6u32, diffuse.len() as u32, 0, 0, 0]),
            usage: wgpu::BufferUsages::INDIRECT | wgpu::BufferUsages::STORAGE,
        },
    );
    let bare = ParticleSource::buffers(&positions, &velocities, particles.len() as u32);
    let foamy = ParticleSource {
        diffuse: Some(waterview::render::DiffuseSource {
            particles: &pool,
            draw_args: &args,
            draw_offset: 0,
            time_offset: 16,
            capacity: diffuse.len() as u32,
        }),
        ..bare
    };
    let size = (240, 180);
    let mut settings = RenderSettings::default();
    settings.fluid.dx = 0.2;
    let mut failures = Vec::new();
    let mut images = Vec::new();
    for (view, name) in [(FluidView::Foam, "foam_view"), (FluidView::Final, "foam_final")] {
        settings.view = view;
        let img = render_to_image(&ctx, &mut renderer, &camera, Some(foamy), &settings, size);
        img.save(out_dir().join(format!("{name}.png"))).ok();
        if let Err(e) = check_image(&img, name) {
            failures.push(e);
        }
        images.push(img);
    }
    let without = render_to_image(&ctx, &mut renderer, &camera, Some(bare), &settings, size);
    let white = images[0].pixels().filter(|p| p.0[0] > 128 && p.0[1] > 128 && p.0[2] > 128).count();
    let whitened = images[1].pixels().zip(without.pixels()).filter(|(a, b)| luminance(**a) > luminance(**b) + 20.0);
    let whitened = whitened.count();
    eprintln!("foam view: {white} white pixels; final: {whitened} pixels whitened by the diffuse particles");
    assert!(white > 500 && whitened > 500, "{white} white pixels in the foam view, {whitened} whitened");
    assert!(failures.is_empty(), "image checks failed:\n{}", failures.join("\n"));
}

/// A paused simulation's ellipsoids are kept (src/render/anisotropy.rs `encode` with a version): with the
/// same particles version the pass records nothing even though the buffer's contents changed behind
/// its back; a new version, other parameters or no version at all recompute.
#[test]
fn anisotropy_is_kept_while_the_particles_version_stands() {
    let ctx = common::gpu();
    let dx = 0.1;
    let lattice = |shear: f32| -> Vec<Vec4> {
        (0..8 * 8 * 8)
            .map(|k| {
                let (x, y, z) = ((k % 8) as f32, ((k / 8) % 8) as f32, (k / 64) as f32);
                (dx * Vec3::new(x + shear * y, y, z)).extend(1000.0)
            })
            .collect()
    };
    let (a, b) = (lattice(0.0), lattice(0.4));
    let buffer = split_buffer(&ctx, "test positions", bytemuck::cast_slice(&a));
    let mut settings = RenderSettings::default();
    settings.fluid.dx = dx;
    let mut pass = waterview::render::AnisotropyPass::new(&ctx, OFFSCREEN_FORMAT);
    let target = waterview::render::Offscreen::new(&ctx, (1, 1));
    let run = |pass: &mut waterview::render::AnisotropyPass, version: Option<u64>, settings: &RenderSettings| {
        let input = AnisotropyInput {
            positions: &buffer,
            count: a.len() as u32,
            params: settings.anisotropy_uniform(),
            version,
        };
        common::record_frame(&ctx, &target, &common::default_camera((1, 1)), |frame| pass.encode(frame, input));
        pass.ellipsoids().expect("ellipsoids made").read_blocking(&ctx, a.len())
    };
    let first = run(&mut pass, Some(1), &settings);
    assert!(first == anisotropy_of(&ctx, &a, dx), "the first encode computes");
    buffer.write(&ctx.queue, 0, bytemuck::cast_slice(&b));
    assert!(run(&mut pass, Some(1), &settings) == first, "same version: kept");
    let sheared = run(&mut pass, Some(2), &settings);
    assert!(sheared == anisotropy_of(&ctx, &b, dx) && sheared != first, "a new version recomputes");
    settings.fluid.anisotropy_scale = 1.5;
    let larger = run(&mut pass, Some(2), &settings);
    assert!(larger != sheared, "other parameters recompute");
    buffer.write(&ctx.queue, 0, bytemuck::cast_slice(&a));
    assert!(run(&mut pass, None, &settings) != larger, "no version: always recomputed");
}

/// Pixel (x, y) where world point `p` appears through `camera` in a `size` image.
fn project(camera: &OrbitCamera, size: (u32, u32), p: Vec3) -> (u32, u32) {
    let ndc = camera.clip_from_world(size.0 as f32 / size.1 as f32).project_point3(p);
    let x = ((ndc.x + 1.0) * 0.5 * size.0 as f32) as u32;
    let y = ((1.0 - ndc.y) * 0.5 * size.1 as f32) as u32;
    (x.min(size.0 - 1), y.min(size.1 - 1))
}

fn luminance(p: image::Rgba<u8>) -> f32 {
    0.2126 * p.0[0] as f32 + 0.7152 * p.0[1] as f32 + 0.0722 * p.0[2] as f32
}

/// A box scene's glass tank (src/render/tank.rs) against `tests/reference/tank_final.png`: a 2 x 1 x 1 m
/// tank with a block of water at one end, seen from the front. Besides the picture: the near top edge
/// is drawn as a dark frame over what is behind it, the water seen through the near wall still shows
/// (blue, not hidden by the glass), and the ground reaches beyond the tank where the sky showed without it.
#[test]
fn tank_image_and_frame() {
    let ctx = common::gpu();
    let hf = Heightfield::flat(Vec2::ZERO, Vec2::new(2.0, 1.0), 0.0);
    let dx = 0.05;
    let particles: Vec<Vec4> = (0..16 * 10 * 20)
        .map(|i| {
            let (x, y, z) = ((i % 16) as f32, ((i / 16) % 10) as f32, (i / 160) as f32);
            ((Vec3::new(x, y, z) + 0.5) * dx).extend(1000.0)
        })
        .collect();
    let camera = OrbitCamera {
        target: Vec3::new(1.0, 0.3, 0.5),
        distance: 3.4,
        yaw: 0.3,
        pitch: 0.4,
        fov_y: 50f32.to_radians(),
        lens_shift: 0.0,
    };
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let positions = split_buffer(&ctx, "tank positions", bytemuck::cast_slice(&particles));
    let velocities = split_buffer(&ctx, "tank velocities", &vec![0u8; particles.len() * 16]);
    let tank = Tank { min: Vec3::ZERO, max: Vec3::new(2.0, 1.0, 1.0), floor: true };
    let source =
        ParticleSource { tank: Some(tank), ..ParticleSource::buffers(&positions, &velocities, particles.len() as u32) };
    let size = (160, 120);
    let mut settings = RenderSettings::default();
    settings.fluid.dx = dx;
    let img = render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, size);
    img.save(out_dir().join("tank_final.png")).ok();
    let bare =
        render_to_image(&ctx, &mut renderer, &camera, Some(ParticleSource { tank: None, ..source }), &settings, size);
    bare.save(out_dir().join("tank_none.png")).ok();

    let (ex, ey) = project(&camera, size, Vec3::new(1.3, 1.0, 1.0));
    let edge = luminance(*img.get_pixel(ex, ey));
    let above = luminance(*img.get_pixel(ex, ey.saturating_sub(5)));
    assert!(edge < 0.6 * above, "near top edge at ({ex}, {ey}): luminance {edge}, 5 px above it {above}");
    let (wx, wy) = project(&camera, size, Vec3::new(0.4, 0.25, 1.0));
    let water = img.get_pixel(wx, wy).0;
    assert!(water[2] as i32 > water[0] as i32 + 20, "water behind the near wall at ({wx}, {wy}) is {water:?}");
    let (gx, gy) = (4, size.1 - 4);
    let (with, without) = (luminance(*img.get_pixel(gx, gy)), luminance(*bare.get_pixel(gx, gy)));
    assert!((with - without).abs() > 10.0, "ground at ({gx}, {gy}): {with} with the tank, {without} without");
    check_image(&img, "tank_final").unwrap_or_else(|e| panic!("{e}"));
}

/// A split per-particle array holding `data` (one chunk unless a test lowers `gpu::split::per_binding`).
fn split_buffer(ctx: &GpuContext, label: &str, data: &[u8]) -> waterview::gpu::split::SplitBuffer {
    waterview::gpu::split::SplitBuffer::new_init(&ctx.device, &ctx.queue, label, 16, data).expect("fits")
}
