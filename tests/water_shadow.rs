//! The water's shadow and tinted light on the terrain and on the obstacles (src/render/water_shadow.rs)
//! on whatever adapter wgpu finds (lavapipe in CI; none FAILS with the context's message): a resting pool
//! on flat terrain under a low sun, drawn with the water's shadow and without it, by both splat methods;
//! a box standing in the pool; and the light-space map of spheres against the analytic chord.

mod common;

use glam::{Mat3, Mat4, Vec2, Vec3, Vec4};
use waterview::gpu::split::SplitBuffer;
use waterview::render::water_shadow::{WaterShadowInput, WaterShadowPass, NO_WATER_DEPTH};
use waterview::render::{
    read_texture_rgba_f32, render_to_image, Ellipsoid, EllipsoidBuffers, Offscreen, OrbitCamera, ParticleSource,
    RenderSettings, Renderer, SplatMethod, Tank, WaterLightUniform, OFFSCREEN_FORMAT,
};
use waterview::terrain::Heightfield;

/// Particle spacing of the pool, metres.
const DX: f32 = 0.05;
/// The pool: a block of water on the ground, metres.
const POOL_MIN: Vec3 = Vec3::new(1.5, 0.0, 1.5);
const POOL_SIZE: Vec3 = Vec3::new(1.0, 0.4, 1.0);
/// Sun elevation, degrees, from +x (azimuth 90): the pool's shadow falls toward -x, 0.4 / tan 35° = 0.57 m.
const SUN_ELEVATION: f32 = 35.0;

fn project(camera: &OrbitCamera, size: (u32, u32), p: Vec3) -> (u32, u32) {
    let ndc = camera.clip_from_world(size.0 as f32 / size.1 as f32).project_point3(p);
    let x = ((ndc.x + 1.0) * 0.5 * size.0 as f32) as u32;
    let y = ((1.0 - ndc.y) * 0.5 * size.1 as f32) as u32;
    (x.min(size.0 - 1), y.min(size.1 - 1))
}

fn luminance(p: [u8; 4]) -> f32 {
    0.2126 * p[0] as f32 + 0.7152 * p[1] as f32 + 0.0722 * p[2] as f32
}

fn pool() -> Vec<Vec4> {
    let n = (POOL_SIZE / DX).round().as_uvec3();
    let mut out = Vec::new();
    for z in 0..n.z {
        for y in 0..n.y {
            for x in 0..n.x {
                let p = POOL_MIN + (Vec3::new(x as f32, y as f32, z as f32) + 0.5) * DX;
                out.push(p.extend(1000.0));
            }
        }
    }
    out
}

/// `particles` at rest on the GPU: their positions and zero velocities.
fn at_rest(ctx: &waterview::gpu::GpuContext, particles: &[Vec4]) -> (SplitBuffer, SplitBuffer) {
    let split =
        |label: &str, data: &[u8]| SplitBuffer::new_init(&ctx.device, &ctx.queue, label, 16, data).expect("fits");
    (
        split("pool positions", bytemuck::cast_slice(particles)),
        split("pool velocities", &vec![0u8; particles.len() * 16]),
    )
}

/// The pool's look: the sun from +x at [`SUN_ELEVATION`], the water's shadow on, the ground kept dry.
fn pool_settings() -> RenderSettings {
    let mut settings = RenderSettings { sun_azimuth_deg: 90.0, sun_elevation_deg: SUN_ELEVATION, ..Default::default() };
    settings.fluid.dx = DX;
    settings.wet_ground = false;
    settings.water_shadow = true;
    settings
}

/// The ground in the pool's shadow (under the pool as the sun sees it) is darker with the water's shadow than without
/// it, and bluer (the water absorbs red most); ground away from the water is unchanged. The light-space map holds the
/// sun ray's path through the pool where it crosses it.
#[test]
fn a_pool_shades_and_tints_the_ground_under_it_and_nothing_else() {
    pool_shades_the_ground(None, "terrain", SplatMethod::Compute);
}

/// As [`a_pool_shades_and_tints_the_ground_under_it_and_nothing_else`] with the light-space map drawn by the
/// rasteriser (`SplatMethod::Raster`).
#[test]
fn a_pool_shades_the_ground_with_the_raster_splat_too() {
    pool_shades_the_ground(None, "terrain-raster", SplatMethod::Raster);
}

/// As [`a_pool_shades_and_tints_the_ground_under_it_and_nothing_else`] in a box scene: the tank's ground
/// ("tank ground water shadow") instead of the terrain.
#[test]
fn a_pool_in_a_tank_shades_and_tints_the_tank_floor() {
    let tank = Tank { min: Vec3::new(1.0, 0.0, 1.0), max: Vec3::new(3.0, 1.0, 3.0), floor: true };
    pool_shades_the_ground(Some(tank), "tank", SplatMethod::Compute);
}

fn pool_shades_the_ground(tank: Option<Tank>, name: &str, method: SplatMethod) {
    let ctx = common::gpu();
    let hf = Heightfield::flat(Vec2::ZERO, Vec2::new(4.0, 4.0), 0.0);
    let particles = pool();
    let (positions, velocities) = at_rest(&ctx, &particles);
    let source = ParticleSource { tank, ..ParticleSource::buffers(&positions, &velocities, particles.len() as u32) };
    // From the -x side, above: the shadow (toward -x) lies between the eye and the pool.
    let camera = OrbitCamera {
        target: Vec3::new(1.6, 0.2, 2.0),
        distance: 4.0,
        yaw: -std::f32::consts::FRAC_PI_2,
        pitch: 0.9,
        fov_y: 50f32.to_radians(),
        lens_shift: 0.0,
    };
    let size = (240, 180);
    let mut settings = pool_settings();
    settings.fluid.splats = method;
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let on = render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, size);
    let map = read_texture_rgba_f32(&ctx, renderer.water_shadow().map());
    let light = *renderer.water_shadow().light();
    let off_settings = RenderSettings { water_shadow: false, ..settings.clone() };
    let off = render_to_image(&ctx, &mut renderer, &camera, Some(source), &off_settings, size);
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    std::fs::create_dir_all(&dir).ok();
    on.save(dir.join(format!("water_shadow_{name}_on.png"))).ok();
    off.save(dir.join(format!("water_shadow_{name}_off.png"))).ok();

    // In the shadow: 0.1 m beside the pool toward -x, mid-way along z (the sun's ray crosses 0.58 m of water).
    {
        let (what, p) = ("in the shadow", Vec3::new(1.4, 0.0, 2.0));
        let (x, y) = project(&camera, size, p);
        let (a, b) = (on.get_pixel(x, y).0, off.get_pixel(x, y).0);
        eprintln!("{name}: {what} at ({x}, {y}): {a:?} with the water's shadow, {b:?} without");
        // The distance fog (6 % at the 4 m here) is laid over the ground after its light, unshaded by the
        // water; since it fades toward the sky cubemap's radiance (brighter than the analytic haze it used)
        // the shadow darkens the picture by 7 % (luminance 122 against 131 on lavapipe), less than under the
        // darker haze.
        assert!(luminance(a) < 0.95 * luminance(b), "{what} at ({x}, {y}): {a:?} not darker than {b:?}");
        let red_to_blue = |c: [u8; 4]| c[0] as f32 / c[2].max(1) as f32;
        assert!(red_to_blue(a) < 0.92 * red_to_blue(b), "{what} at ({x}, {y}): {a:?} not bluer than {b:?}");
    }
    // Away from the water: the sunward side, the far corners.
    for p in [Vec3::new(3.0, 0.0, 2.0), Vec3::new(0.3, 0.0, 0.5), Vec3::new(0.3, 0.0, 3.5), Vec3::new(1.2, 0.0, 0.6)] {
        let (x, y) = project(&camera, size, p);
        let (a, b) = (on.get_pixel(x, y).0, off.get_pixel(x, y).0);
        assert_eq!(a, b, "ground at {p} ({x}, {y}) away from the water changed");
    }
    let changed = on.pixels().zip(off.pixels()).filter(|(a, b)| a != b).count();
    let total = (size.0 * size.1) as usize;
    eprintln!("{changed} of {total} pixels changed");
    assert!(changed < total / 3, "{changed} of {total} pixels changed");

    // The map on the sun's ray through the pool's floor near its -x side: it enters the top 0.57 m toward
    // +x, after 0.4 / sin 35° = 0.70 m of water; the splats overlap (spheres of 0.75 dx at dx spacing), so
    // their summed path is 1 to 3 times that. The sunward surface is where the ray enters.
    let floor = Vec3::new(1.6, 0.0, 2.0);
    let sun = Vec3::from(light.sun_dir);
    let entry = floor + sun * (POOL_SIZE.y / sun.y);
    let (uv, _) = light.map_point(floor);
    let (_, entry_depth) = light.map_point(entry);
    let (w, h) = map.dimensions();
    let texel = map.get_pixel((uv.x * w as f32) as u32, (uv.y * h as f32) as u32).0;
    let path = (entry - floor).length();
    eprintln!(
        "map on the ray: path {} m (geometric {path} m), sunward surface {} m ({entry_depth} m)",
        texel[0], texel[3]
    );
    assert!(texel[0] > path && texel[0] < 3.0 * path, "path in the map {} for a geometric {path}", texel[0]);
    assert!((texel[3] - entry_depth).abs() < 2.0 * DX, "sunward surface at {} m, not {entry_depth} m", texel[3]);
}

/// A box standing in the pool (src/render/obstacles.rs, "obstacles water shadow"): where the sun's ray
/// passes through the water before it reaches the box's sunward face, the face is darker with the
/// water's shadow than without it, and bluer; the face above the water and the box's top are unchanged.
/// Measured on lavapipe, the mean over a patch of the face under the water: luminance 193.5 against 201.0
/// and red / blue 0.77 against 0.83 (seen through the water, which dilutes the difference); without
/// "obstacles water shadow" the two pictures are the same there.
#[test]
fn a_box_standing_in_a_pool_gets_the_waters_shadow() {
    let ctx = common::gpu();
    let hf = Heightfield::flat(Vec2::ZERO, Vec2::new(4.0, 4.0), 0.0);
    // The box: 0.3 m along x, 0.6 m along z, 0.8 m tall, in the middle of the pool (0.4 m deep).
    let (lo, hi) = (Vec3::new(1.85, 0.0, 1.7), Vec3::new(2.15, 0.8, 2.3));
    let particles: Vec<Vec4> = pool()
        .into_iter()
        .filter(|p| p.truncate().cmplt(lo - 0.5 * DX).any() || p.truncate().cmpgt(hi + 0.5 * DX).any())
        .collect();
    let (positions, velocities) = at_rest(&ctx, &particles);
    let source = ParticleSource::buffers(&positions, &velocities, particles.len() as u32);
    // From the +x side (the sun's), a little above: the box's sunward face, behind the water up to 0.4 m.
    let camera = OrbitCamera {
        target: Vec3::new(2.15, 0.35, 2.0),
        distance: 3.0,
        yaw: std::f32::consts::FRAC_PI_2,
        pitch: 0.45,
        fov_y: 40f32.to_radians(),
        lens_shift: 0.0,
    };
    let size = (240, 180);
    let settings = pool_settings();
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    renderer.set_obstacles(&ctx, &[common::box_mesh(lo, hi)]);
    let on = render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, size);
    let off_settings = RenderSettings { water_shadow: false, ..settings.clone() };
    let off = render_to_image(&ctx, &mut renderer, &camera, Some(source), &off_settings, size);
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    std::fs::create_dir_all(&dir).ok();
    on.save(dir.join("water_shadow_box_on.png")).ok();
    off.save(dir.join("water_shadow_box_off.png")).ok();

    // The face under the water, the mean over a patch of it (seen through the water, which the composite
    // lays over it: the reflection and the water's own colour dilute the difference).
    let face = |y: f32, z: f32| Vec3::new(hi.x, y, z);
    let mean = |img: &image::RgbaImage| {
        let mut sum = [0.0f32; 3];
        for (y, z) in [0.1, 0.15, 0.2, 0.25].into_iter().flat_map(|y| [1.9, 2.0, 2.1].map(|z| (y, z))) {
            let (x, y) = project(&camera, size, face(y, z));
            let c = img.get_pixel(x, y).0;
            (0..3).for_each(|k| sum[k] += c[k] as f32 / 12.0);
        }
        sum
    };
    let (a, b) = (mean(&on), mean(&off));
    let luma = |c: [f32; 3]| 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    eprintln!("the box's face under the water: {a:?} with the water's shadow, {b:?} without");
    assert!(luma(a) < 0.985 * luma(b), "the face under the water: {a:?} not darker than {b:?}");
    let red_to_blue = |c: [f32; 3]| c[0] / c[2].max(1.0);
    assert!(red_to_blue(a) < 0.97 * red_to_blue(b), "the face under the water: {a:?} not bluer than {b:?}");
    for (what, p) in [("the face above the water", face(0.65, 2.0)), ("the box's top", Vec3::new(2.0, hi.y, 2.0))] {
        let (x, y) = project(&camera, size, p);
        let (a, b) = (on.get_pixel(x, y).0, off.get_pixel(x, y).0);
        assert_eq!(a, b, "{what} at {p} ({x}, {y}) changed");
    }
}

/// The sun's light-space map of one splat pass over `ellipsoids`: (path, sunward depth) per texel, row
/// major, the map's side and the light.
fn shadow_map(
    ctx: &waterview::gpu::GpuContext,
    ellipsoids: &[Ellipsoid],
    method: SplatMethod,
    texel: f32,
) -> (Vec<[f32; 2]>, u32, WaterLightUniform) {
    let buffers = EllipsoidBuffers::from_ellipsoids(ctx, ellipsoids).expect("fits");
    let sun = Vec3::new(0.3, 0.8, -0.5).normalize();
    let light = WaterLightUniform::new(sun, (Vec3::splat(-2.0), Vec3::splat(2.0)), [0.9, 0.4, 0.15], 0.1);
    let mut pass = WaterShadowPass::new(ctx);
    let size = (16, 16);
    let target = Offscreen::new(ctx, size);
    let count = ellipsoids.len() as u32;
    common::record_frame(ctx, &target, &common::default_camera(size), |frame| {
        let input = WaterShadowInput { ellipsoids: Some(&buffers), count, light, texel, method };
        assert!(pass.encode(frame, input), "{method:?}: the pass records");
    });
    let map = read_texture_rgba_f32(ctx, pass.map());
    assert_eq!(map.width(), map.height(), "a square map");
    (map.pixels().map(|p| [p.0[0], p.0[3]]).collect(), map.width(), light)
}

/// Each texel's sun ray through a sphere of radius `r` at `centre`: (the analytic chord 2 sqrt(r² - d²) at
/// its distance d from the centre, the light-space depth where it enters, d / r).
fn sphere_ray(light: &WaterLightUniform, size: u32, (x, y): (u32, u32), centre: Vec3, r: f32) -> (f32, f32, f32) {
    let m = Mat4::from_cols_array_2d(&light.light_from_world);
    let per_metre = Vec2::new(m.row(0).truncate().length(), m.row(1).truncate().length());
    let clip_c = (m * centre.extend(1.0)).truncate().truncate();
    let uv = (Vec2::new(x as f32, y as f32) + 0.5) / size as f32;
    let clip = Vec2::new(2.0 * uv.x - 1.0, 1.0 - 2.0 * uv.y);
    let d = ((clip - clip_c) / per_metre).length();
    let half = (r * r - d * d).max(0.0).sqrt();
    (2.0 * half, light.map_point(centre).1 - half, d / r)
}

/// One sphere's splat, by each method: every texel whose sun ray crosses the sphere well inside holds
/// the analytic chord 2 sqrt(r² - d²) and the depth where the ray enters; texels off the sphere hold no
/// water.
#[test]
fn a_spheres_map_holds_the_analytic_chord() {
    let ctx = common::gpu();
    let (centre, r) = (Vec3::new(0.3, 0.5, -0.2), 0.4);
    let sphere = Ellipsoid::new(centre, r, Mat3::IDENTITY / r);
    for method in [SplatMethod::Compute, SplatMethod::Raster] {
        let (map, size, light) = shadow_map(&ctx, &[sphere], method, 0.02);
        let (mut inside, mut worst_path, mut worst_depth) = (0, 0f32, 0f32);
        for (i, &[path, depth]) in map.iter().enumerate() {
            let texel = (i as u32 % size, i as u32 / size);
            let (chord, entry, d) = sphere_ray(&light, size, texel, centre, r);
            if d < 0.95 {
                inside += 1;
                worst_path = worst_path.max((path - chord).abs());
                worst_depth = worst_depth.max((depth - entry).abs());
            } else if d > 1.05 {
                assert!(
                    path == 0.0 && depth == NO_WATER_DEPTH,
                    "{method:?}: texel {texel:?} off the sphere: {path} m, depth {depth}"
                );
            }
        }
        println!(
            "{method:?}: {size}² texels, {inside} inside; path within {worst_path} m, depth within {worst_depth} m"
        );
        assert!(inside > 500, "{method:?}: {inside} texels inside the sphere");
        // Half floats: 2^-11 of the value (0.8 m of path, 3.4 m of depth), and G's 16-bit entries.
        assert!(worst_path < 2e-3, "{method:?}: path {worst_path} m from the analytic chord");
        assert!(worst_depth < 4e-3, "{method:?}: sunward depth {worst_depth} m from the analytic entry");
    }
}

/// Deep water: 600 spheres on one spot sum 480 m of path on the centre ray, past what the path's low word
/// holds at this texel (2^32 / (2^17 / 0.01 m) = 328 m); the carry keeps the sum.
#[test]
fn deep_water_does_not_overflow_the_compute_splats_path() {
    let ctx = common::gpu();
    let (centre, r) = (Vec3::new(0.3, 0.5, -0.2), 0.4);
    let stack = vec![Ellipsoid::new(centre, r, Mat3::IDENTITY / r); 600];
    let (map, size, light) = shadow_map(&ctx, &stack, SplatMethod::Compute, 0.01);
    let (uv, _) = light.map_point(centre);
    let texel = ((uv.x * size as f32) as u32, (uv.y * size as f32) as u32);
    let (chord, _, _) = sphere_ray(&light, size, texel, centre, r);
    let path = map[(texel.1 * size + texel.0) as usize][0];
    println!("centre texel {texel:?} of {size}²: {path} m summed, 600 x {chord} m");
    assert!(600.0 * chord > 400.0, "the sum passes the low word's 328 m");
    assert!((path - 600.0 * chord).abs() < 0.5, "summed path {path} m, not 600 x {chord} m");
    let most = map.iter().fold(0f32, |m, p| m.max(p[0]));
    assert!(most < 600.0 * 2.0 * r + 0.5, "a texel holds {most} m");
}
