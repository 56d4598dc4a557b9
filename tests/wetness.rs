//! Wet ground where the water has passed (src/render/wetness.rs, terrain.wgsl `fs_wet`) on whatever
//! adapter wgpu finds (lavapipe in CI; a machine with none FAILS): the update soaks the sample under a
//! particle touching the ground and no other, dries by exp(-dt / DRY_SECONDS) on the wall clock or on a
//! simulation's (not when its time goes back, a reset), and the frame is darker
//! where water lies on the ground than the same frame without wetness, and unchanged away from it.

mod common;

use glam::{Vec2, Vec3, Vec4};
use waterview::gpu::readback::read_buffer_blocking;
use waterview::gpu::storage_buffer_init;
use waterview::render::wetness::{WetInput, DRY_SECONDS};
use waterview::render::{
    render_to_image, Offscreen, OrbitCamera, ParticleSource, RenderSettings, Renderer, TerrainPass, OFFSCREEN_FORMAT,
};
use waterview::terrain::Heightfield;

/// `n` x `n` samples 1 m apart at height `h(x, z)`.
fn grid(n: u32, h: impl Fn(f32, f32) -> f32) -> Heightfield {
    let heights = (0..n * n).map(|i| h((i % n) as f32, (i / n) as f32)).collect();
    Heightfield { nx: n, nz: n, origin: Vec2::ZERO, extent: Vec2::splat((n - 1) as f32), heights }
}

#[test]
fn particles_soak_the_ground_under_them_and_it_dries() {
    let ctx = common::gpu();
    let hf = grid(16, |_, _| 1.0);
    let mut terrain = TerrainPass::new(&ctx, OFFSCREEN_FORMAT);
    terrain.set_heightfield(&ctx, &hf);
    let particles = [
        Vec4::new(3.2, 1.1, 4.9, 1000.0),  // 0.1 m above the ground: soaks sample (3, 5)
        Vec4::new(8.0, 5.0, 8.0, 1000.0),  // 4 m up: no
        Vec4::new(10.0, 1.0, 10.0, -1.0),  // parked: no
        Vec4::new(40.0, 1.0, 4.0, 1000.0), // beyond the terrain: no
    ];
    let positions = split_buffer(&ctx, "wet positions", bytemuck::cast_slice(&particles));
    let target = Offscreen::new(&ctx, (1, 1));
    let camera = common::default_camera((1, 1));
    let mut update = |count: u32, dt: f32| {
        let input = WetInput { positions: &positions, count, clock: None, dt, contact: 0.2 };
        common::record_frame(&ctx, &target, &camera, |frame| {
            terrain.encode_wet(frame, Some(input));
        });
        let bytes = read_buffer_blocking(&ctx, terrain.wetness());
        bytemuck::cast_slice::<u8, f32>(&bytes)[..256].to_vec()
    };
    let soaked = update(particles.len() as u32, 0.0);
    let wet: Vec<usize> = (0..256).filter(|&i| soaked[i] != 0.0).collect();
    assert_eq!(wet, vec![5 * 16 + 3], "wet samples {wet:?}");
    assert_eq!(soaked[5 * 16 + 3], 1.0);
    let dried = update(0, DRY_SECONDS * std::f32::consts::LN_2);
    assert!((dried[5 * 16 + 3] - 0.5).abs() < 1e-5, "after one half-life: {}", dried[5 * 16 + 3]);
}

/// On a simulation's clock (the step state's (dt, time)), the ground dries by the simulated time between
/// updates, whatever the wall clock says, and a clock that goes back (a reset) dries nothing.
#[test]
fn the_ground_dries_on_the_simulated_clock() {
    let ctx = common::gpu();
    let hf = grid(8, |_, _| 0.0);
    let mut terrain = TerrainPass::new(&ctx, OFFSCREEN_FORMAT);
    terrain.set_heightfield(&ctx, &hf);
    let positions = split_buffer(&ctx, "wet positions", bytemuck::cast_slice(&[Vec4::new(2.0, 0.05, 3.0, 1000.0)]));
    let clock = storage_buffer_init(&ctx.device, "test clock", bytemuck::cast_slice(&[0.0f32, 10.0, 0.0, 0.0]));
    let target = Offscreen::new(&ctx, (1, 1));
    let camera = common::default_camera((1, 1));
    let mut update = |count: u32, time: f32| {
        ctx.queue.write_buffer(&clock, 4, bytemuck::bytes_of(&time));
        // A wall-clock dt that must not count.
        let input = WetInput { positions: &positions, count, clock: Some(&clock), dt: 1000.0, contact: 0.2 };
        common::record_frame(&ctx, &target, &camera, |frame| {
            terrain.encode_wet(frame, Some(input));
        });
        let bytes = read_buffer_blocking(&ctx, terrain.wetness());
        bytemuck::cast_slice::<u8, f32>(&bytes)[3 * 8 + 2]
    };
    assert_eq!(update(1, 10.0), 1.0, "soaked");
    assert_eq!(update(0, 10.0), 1.0, "no simulated time passed");
    let half = 10.0 + DRY_SECONDS * std::f32::consts::LN_2;
    assert!((update(0, half) - 0.5).abs() < 1e-4, "one simulated half-life");
    assert!((update(0, 1.0) - 0.5).abs() < 1e-4, "a clock going back dries nothing");
    assert!((update(0, 1.0 + DRY_SECONDS * std::f32::consts::LN_2) - 0.25).abs() < 1e-4, "and then runs on");
}

#[test]
fn wet_ground_is_darker_where_the_water_lies() {
    let ctx = common::gpu();
    // A gentle slope, 24 m x 24 m.
    let hf = grid(25, |x, z| 0.05 * x + 0.02 * z);
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    // A sheet of water one particle deep on the ground over x, z in 6 .. 12 m.
    let particles: Vec<Vec4> = (0..30 * 30)
        .map(|i| {
            let (x, z) = (6.0 + 0.2 * (i % 30) as f32, 6.0 + 0.2 * (i / 30) as f32);
            Vec4::new(x, hf.height_at(x, z) + 0.1, z, 1000.0)
        })
        .collect();
    let positions = split_buffer(&ctx, "sheet positions", bytemuck::cast_slice(&particles));
    let velocities = split_buffer(&ctx, "sheet velocities", &vec![0u8; particles.len() * 16]);
    let source = ParticleSource::buffers(&positions, &velocities, particles.len() as u32);
    let camera = OrbitCamera {
        target: Vec3::new(12.0, 1.0, 12.0),
        distance: 22.0,
        yaw: 0.4,
        pitch: 0.7,
        fov_y: 50f32.to_radians(),
        lens_shift: 0.0,
    };
    // The water itself hidden: only the ground under it is seen.
    let settings = RenderSettings { show_particles: false, ..RenderSettings::default() };
    let size = (160, 120);
    let dry = render_to_image(
        &ctx,
        &mut renderer,
        &camera,
        Some(source),
        &RenderSettings { wet_ground: false, ..settings.clone() },
        size,
    );
    let wet = render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, size);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    std::fs::create_dir_all(&dir).ok();
    wet.save(dir.join("wet_ground.png")).ok();
    let pixel = |img: &image::RgbaImage, x: f32, z: f32| {
        let ndc =
            camera.clip_from_world(size.0 as f32 / size.1 as f32).project_point3(Vec3::new(x, hf.height_at(x, z), z));
        let (px, py) = (((ndc.x + 1.0) * 0.5 * size.0 as f32) as u32, ((1.0 - ndc.y) * 0.5 * size.1 as f32) as u32);
        let p = img.get_pixel(px.min(size.0 - 1), py.min(size.1 - 1)).0;
        0.2126 * p[0] as f32 + 0.7152 * p[1] as f32 + 0.0722 * p[2] as f32
    };
    let (under_wet, under_dry) = (pixel(&wet, 9.0, 9.0), pixel(&dry, 9.0, 9.0));
    assert!(under_wet < 0.9 * under_dry, "under the water: {under_wet} wet, {under_dry} dry");
    let (far_wet, far_dry) = (pixel(&wet, 20.0, 20.0), pixel(&dry, 20.0, 20.0));
    assert!((far_wet - far_dry).abs() <= 1.0, "away from the water: {far_wet} wet, {far_dry} dry");
}

/// The wet ground's sun highlight is a water film's (shaders/render/terrain.wgsl `fs_wet`: Fresnel
/// F0 = 0.02 on a normalised lobe), not a white glare: flat ground, wet under a sheet of (hidden) water,
/// seen from the sun's mirror direction, where the highlight peaks, is at most 30 levels of luminance
/// brighter than the same ground dry (measured on lavapipe: 153 against 140; the highlight without the
/// Fresnel factor was white, 255).
#[test]
fn wet_ground_glints_only_faintly() {
    let ctx = common::gpu();
    let hf = grid(25, |_, _| 0.0);
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let particles: Vec<Vec4> = (0..30 * 30)
        .map(|i| Vec4::new(6.0 + 0.2 * (i % 30) as f32, 0.1, 6.0 + 0.2 * (i / 30) as f32, 1000.0))
        .collect();
    let positions = split_buffer(&ctx, "sheet positions", bytemuck::cast_slice(&particles));
    let velocities = split_buffer(&ctx, "sheet velocities", &vec![0u8; particles.len() * 16]);
    let source = ParticleSource::buffers(&positions, &velocities, particles.len() as u32);
    let settings = RenderSettings { show_particles: false, ..RenderSettings::default() };
    // The eye along the sun's reflection in the ground: yaw = the sun's azimuth + 180 degrees.
    let camera = OrbitCamera {
        target: Vec3::new(9.0, 0.0, 9.0),
        distance: 12.0,
        yaw: (settings.sun_azimuth_deg + 180.0).to_radians(),
        pitch: settings.sun_elevation_deg.to_radians(),
        fov_y: 30f32.to_radians(),
        lens_shift: 0.0,
    };
    let size = (160, 120);
    let dry_settings = RenderSettings { wet_ground: false, ..settings.clone() };
    let dry = render_to_image(&ctx, &mut renderer, &camera, Some(source), &dry_settings, size);
    let wet = render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, size);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    std::fs::create_dir_all(&dir).ok();
    wet.save(dir.join("wet_ground_glint.png")).ok();
    // The brightest pixel of the middle 40 x 40 (all on the wet patch).
    let brightest = |img: &image::RgbaImage| {
        let mut best = 0f32;
        for y in 40..80 {
            for x in 60..100 {
                let p = img.get_pixel(x, y).0;
                best = best.max(0.2126 * p[0] as f32 + 0.7152 * p[1] as f32 + 0.0722 * p[2] as f32);
            }
        }
        best
    };
    let (wet_peak, dry_peak) = (brightest(&wet), brightest(&dry));
    eprintln!("at the sun's mirror angle: brightest {wet_peak:.1} wet, {dry_peak:.1} dry");
    assert!(dry_peak > 20.0, "the dry ground is lit ({dry_peak:.1})");
    assert!(wet_peak <= dry_peak + 30.0, "the wet ground glares: {wet_peak:.1} against {dry_peak:.1} dry");
}

/// A split per-particle array holding `data` (one chunk unless a test lowers `gpu::split::per_binding`).
fn split_buffer(ctx: &waterview::gpu::GpuContext, label: &str, data: &[u8]) -> waterview::gpu::split::SplitBuffer {
    waterview::gpu::split::SplitBuffer::new_init(&ctx.device, &ctx.queue, label, 16, data).expect("fits")
}
