//! Headless rendering checks on whatever adapter wgpu finds (lavapipe in CI): a valley with a block of
//! water particles (pixel statistics: sky, terrain and water all present), depth correctness of the sphere
//! impostors against the terrain, and an empty particle set. A missing adapter fails with the fix in the
//! message; nothing is skipped.

use glam::{Vec2, Vec3, Vec4};
use waterview::gpu::{split::SplitBuffer, GpuContext};
use waterview::render::{
    render_to_image, ColorMode, FluidView, OrbitCamera, ParticleSource, RenderSettings, Renderer, Tank,
    OFFSCREEN_FORMAT,
};
use waterview::terrain::Heightfield;

const SIZE: (u32, u32) = (320, 240);

fn context() -> GpuContext {
    GpuContext::headless().unwrap_or_else(|e| panic!("headless GPU context: {e}"))
}

/// 64 x 64 samples over 20 m x 20 m: a parabolic valley across x, a gentle slope along z, small bumps.
fn valley() -> Heightfield {
    let (nx, nz) = (64u32, 64u32);
    let origin = Vec2::new(-10.0, -10.0);
    let extent = Vec2::new(20.0, 20.0);
    let spacing = extent / Vec2::new((nx - 1) as f32, (nz - 1) as f32);
    let mut heights = Vec::with_capacity((nx * nz) as usize);
    for iz in 0..nz {
        for ix in 0..nx {
            let p = origin + Vec2::new(ix as f32, iz as f32) * spacing;
            let bumps = 0.25 * (0.9 * p.x).sin() * (0.7 * p.y).cos() * (p.x.abs() / 10.0);
            heights.push(0.06 * p.x * p.x + 0.08 * (p.y + 10.0) + bumps);
        }
    }
    Heightfield { nx, nz, origin, extent, heights }
}

fn vec4_buffer(ctx: &GpuContext, label: &str, data: &[Vec4]) -> SplitBuffer {
    SplitBuffer::new_init(&ctx.device, &ctx.queue, label, 16, bytemuck::cast_slice(data)).expect("fits")
}

fn is_bluish(p: &image::Rgba<u8>) -> bool {
    let [r, g, b, _] = p.0;
    b as i32 > r as i32 + 15 && b >= g
}

/// Water in the depth test: blue dominant, tolerant of the near-white sun highlight.
fn is_water_lit(p: &image::Rgba<u8>) -> bool {
    let [r, g, b, _] = p.0;
    b as i32 > r as i32 + 8 && b >= g
}

fn is_terrain(p: &image::Rgba<u8>) -> bool {
    let [r, g, b, _] = p.0;
    (b as i32) < g as i32 && (b as i32) <= r as i32 + 8
}

/// Pixel (x, y) of a world point, y down; None behind the camera or off screen.
fn project(camera: &OrbitCamera, p: Vec3) -> Option<(u32, u32)> {
    let clip = camera.clip_from_world(SIZE.0 as f32 / SIZE.1 as f32) * p.extend(1.0);
    if clip.w <= 0.0 {
        return None;
    }
    let ndc = clip.truncate() / clip.w;
    let x = (ndc.x * 0.5 + 0.5) * SIZE.0 as f32;
    let y = (0.5 - ndc.y * 0.5) * SIZE.1 as f32;
    (x >= 0.0 && y >= 0.0 && x < SIZE.0 as f32 && y < SIZE.1 as f32).then_some((x as u32, y as u32))
}

fn save(img: &image::RgbaImage, name: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    std::fs::create_dir_all(&dir).expect("create target/test-output");
    img.save(dir.join(name)).expect("write test image");
}

/// The camera over the particle grids these tests draw: 11 m from (0, 1.6, -0.5), a 55-degree field of view.
fn particles_camera() -> OrbitCamera {
    OrbitCamera {
        target: Vec3::new(0.0, 1.6, -0.5),
        distance: 11.0,
        yaw: 0.45,
        pitch: 0.3,
        fov_y: 55f32.to_radians(),
        lens_shift: 0.0,
    }
}

#[test]
fn valley_with_water_block() {
    let ctx = context();
    let hf = valley();
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);

    // 20 x 5 x 20 particles, spacing 0.2 m (touching spheres of radius 0.1 m), above the valley floor;
    // speeds rise from 0 to 3 m/s along x.
    let (mut positions, mut velocities) = (Vec::new(), Vec::new());
    for iy in 0..5 {
        for iz in 0..20 {
            for ix in 0..20 {
                let p = Vec3::new(-2.0 + 0.2 * ix as f32, 1.4 + 0.2 * iy as f32, -2.0 + 0.2 * iz as f32);
                positions.push(p.extend(1000.0));
                let speed = 3.0 * ix as f32 / 19.0;
                velocities.push(Vec4::new(speed * 0.8, 0.0, -speed * 0.6, 0.0));
            }
        }
    }
    assert_eq!(positions.len(), 2000);
    let pos_buf = vec4_buffer(&ctx, "test positions", &positions);
    let vel_buf = vec4_buffer(&ctx, "test velocities", &velocities);
    let source = ParticleSource::buffers(&pos_buf, &vel_buf, positions.len() as u32);

    let camera = particles_camera();
    let mut settings = RenderSettings::default();
    settings.particle.radius = 0.1;
    settings.particle.color_mode = ColorMode::Speed;
    settings.particle.range = [0.0, 3.0];
    let img = render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, SIZE);
    save(&img, "render_headless.png");
    let dry = render_to_image(&ctx, &mut renderer, &camera, None, &settings, SIZE);
    save(&dry, "render_headless_no_particles.png");

    // Sky: the top rows are mostly blue.
    let top: Vec<_> = img.rows().take(SIZE.1 as usize / 10).flatten().collect();
    let sky = top.iter().filter(|p| p.0[2] > p.0[0]).count() as f32 / top.len() as f32;
    assert!(sky > 0.6, "top rows should be sky (b > r): only {:.0}%", sky * 100.0);

    // Terrain: a good fraction of the whole picture is green or brown.
    let total = (SIZE.0 * SIZE.1) as f32;
    let terrain = img.pixels().filter(|p| is_terrain(p)).count() as f32 / total;
    assert!(terrain > 0.25, "terrain pixels: only {:.0}%", terrain * 100.0);

    // Water: inside the particles' projected bounding box, many pixels are bluish where the
    // same view without particles is not.
    let projected: Vec<_> = positions.iter().filter_map(|p| project(&camera, p.truncate())).collect();
    assert_eq!(projected.len(), positions.len(), "every particle centre is on screen");
    let (x0, x1) = (projected.iter().map(|p| p.0).min().unwrap(), projected.iter().map(|p| p.0).max().unwrap());
    let (y0, y1) = (projected.iter().map(|p| p.1).min().unwrap(), projected.iter().map(|p| p.1).max().unwrap());
    let (mut water, mut area) = (0, 0);
    for y in y0..=y1 {
        for x in x0..=x1 {
            area += 1;
            if is_bluish(img.get_pixel(x, y)) && !is_bluish(dry.get_pixel(x, y)) {
                water += 1;
            }
        }
    }
    let water = water as f32 / area as f32;
    assert!(water > 0.4, "water pixels in the particles' box ({x0}..{x1}, {y0}..{y1}): only {:.0}%", water * 100.0);

    // Not a flat picture: the luminance spread is wide.
    let luma: Vec<f32> =
        img.pixels().map(|p| 0.2126 * p.0[0] as f32 + 0.7152 * p.0[1] as f32 + 0.0722 * p.0[2] as f32).collect();
    let mean = luma.iter().sum::<f32>() / luma.len() as f32;
    let std = (luma.iter().map(|l| (l - mean).powi(2)).sum::<f32>() / luma.len() as f32).sqrt();
    assert!(std > 12.0, "image is nearly uniform: luminance std {std:.1}");
}

/// Expected content of pixel (x, y) from a CPU ray cast: `Some(true)` if the ray meets the sphere before the
/// terrain, `Some(false)` if it meets the terrain first, `None` if it misses the sphere or the two hits are
/// too close to call (within 5 cm of each other, or within 2 cm of the sphere's silhouette).
fn expected_water(camera: &OrbitCamera, hf: &Heightfield, centre: Vec3, r: f32, x: u32, y: u32) -> Option<bool> {
    let aspect = SIZE.0 as f32 / SIZE.1 as f32;
    let ndc =
        glam::Vec2::new((x as f32 + 0.5) / SIZE.0 as f32 * 2.0 - 1.0, 1.0 - (y as f32 + 0.5) / SIZE.1 as f32 * 2.0);
    let eye = camera.eye();
    let near = camera.clip_from_world(aspect).inverse().project_point3(ndc.extend(1.0));
    let dir = (near - eye).normalize();
    let oc = eye - centre;
    let b = oc.dot(dir);
    let perp = (oc - b * dir).length();
    if perp > r - 0.02 {
        return None;
    }
    let t_sphere = -b - (r * r - perp * perp).sqrt();
    // March the ray against the bilinear heightfield (the mesh's triangles differ from it by millimetres here).
    let above = |t: f32| {
        let p = eye + t * dir;
        p.y > hf.height_at(p.x, p.z)
    };
    let (mut t, step) = (0.0f32, 0.01f32);
    while t < t_sphere + 0.1 && above(t) {
        t += step;
    }
    let t_terrain = if above(t) { f32::INFINITY } else { t };
    if (t_terrain - t_sphere).abs() < 0.05 {
        return None;
    }
    Some(t_sphere < t_terrain)
}

#[test]
fn sphere_half_below_terrain_is_occluded() {
    let ctx = context();
    let hf = valley();
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let r = 1.5;
    let ground = hf.height_at(0.0, 0.0);
    let centre = Vec3::new(0.0, ground, 0.0);
    let pos_buf = vec4_buffer(&ctx, "sphere position", &[centre.extend(1000.0)]);
    let vel_buf = vec4_buffer(&ctx, "sphere velocity", &[Vec4::ZERO]);
    let source = ParticleSource::buffers(&pos_buf, &vel_buf, 1);
    let mut settings = RenderSettings::default();
    settings.particle.radius = r;
    settings.particle.color_mode = ColorMode::Uniform;
    settings.particle.uniform_color = [0.02, 0.15, 0.6];
    // The exact-depth check is of the sphere impostors (the fluid renderer's debug view); the screen-space
    // fluid's depth is checked against an analytic ellipsoid in tests/fluid_render.rs.
    settings.view = FluidView::Spheres;

    // A low view: the pixel below the centre looks at the buried half, the one above at the visible half.
    let camera = OrbitCamera {
        target: centre,
        distance: 10.0,
        yaw: 0.0,
        pitch: 0.2,
        fov_y: 50f32.to_radians(),
        lens_shift: 0.0,
    };
    let img = render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, SIZE);
    save(&img, "render_headless_depth.png");
    let below = project(&camera, centre - Vec3::new(0.0, 0.6 * r, 0.0)).expect("lower point on screen");
    let above = project(&camera, centre + Vec3::new(0.0, 0.6 * r, 0.0)).expect("upper point on screen");
    let (pb, pa) = (img.get_pixel(below.0, below.1), img.get_pixel(above.0, above.1));
    assert!(is_terrain(pb) && !is_bluish(pb), "the buried half must show terrain, got {:?} at {below:?}", pb.0);
    assert!(is_bluish(pa), "the upper half must show water, got {:?} at {above:?}", pa.0);

    // Every pixel of the sphere's disc, from two views, against a CPU ray cast of sphere and terrain:
    // only the exact hit depth gets the sphere-terrain contact line right.
    for (name, pitch, yaw) in [("low", 0.2f32, 0.0f32), ("steep", 0.75, 0.6)] {
        let camera =
            OrbitCamera { target: centre, distance: 8.0, yaw, pitch, fov_y: 50f32.to_radians(), lens_shift: 0.0 };
        let img = render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, SIZE);
        let (mut water, mut terrain, mut wrong) = (0, 0, Vec::new());
        for (x, y, p) in img.enumerate_pixels() {
            match expected_water(&camera, &hf, centre, r, x, y) {
                Some(true) => {
                    water += 1;
                    if !is_water_lit(p) {
                        wrong.push((x, y, p.0));
                    }
                }
                Some(false) => {
                    terrain += 1;
                    if is_water_lit(p) {
                        wrong.push((x, y, p.0));
                    }
                }
                None => {}
            }
        }
        if !wrong.is_empty() {
            save(&img, &format!("render_headless_depth_{name}.png"));
        }
        assert!(
            water > 500 && terrain > 500,
            "{name} view: too few pixels to judge (water {water}, terrain {terrain})"
        );
        assert!(
            wrong.len() * 200 <= water + terrain,
            "{name} view: {} of {} disc pixels disagree with the ray cast (first: {:?})",
            wrong.len(),
            water + terrain,
            &wrong[..wrong.len().min(5)]
        );
    }
}

#[test]
fn zero_particles_render() {
    let ctx = context();
    let hf = valley();
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let empty = vec4_buffer(&ctx, "empty particles", &[]);
    let source = ParticleSource::buffers(&empty, &empty, 0);
    let camera = OrbitCamera {
        target: Vec3::new(0.0, 1.0, 0.0),
        distance: 15.0,
        yaw: 0.3,
        pitch: 0.4,
        fov_y: 0.9,
        lens_shift: 0.0,
    };
    let img = render_to_image(&ctx, &mut renderer, &camera, Some(source), &RenderSettings::default(), SIZE);
    assert_eq!(img.dimensions(), SIZE);
    assert!(img.pixels().any(is_terrain), "terrain drawn without particles");
}

#[test]
fn non_srgb_target_matches_srgb_target() {
    // A surface format without sRGB encoding (common for windows): the shaders encode it themselves,
    // so the stored bytes match those of an sRGB target.
    let ctx = context();
    let hf = valley();
    let camera = OrbitCamera {
        target: Vec3::new(0.0, 1.0, 0.0),
        distance: 15.0,
        yaw: 0.3,
        pitch: 0.25,
        fov_y: 0.9,
        lens_shift: 0.0,
    };
    let settings = RenderSettings::default();
    let mut srgb = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let mut unorm = Renderer::new(&ctx, wgpu::TextureFormat::Rgba8Unorm, &hf);
    let a = render_to_image(&ctx, &mut srgb, &camera, None, &settings, SIZE);
    let b = render_to_image(&ctx, &mut unorm, &camera, None, &settings, SIZE);
    let worst =
        a.pixels().zip(b.pixels()).flat_map(|(p, q)| (0..3).map(move |c| (p.0[c] as i32 - q.0[c] as i32).abs())).max();
    assert!(worst.unwrap_or(0) <= 3, "sRGB and shader-encoded images differ by up to {worst:?} levels");
}

/// The background cache (src/render/background.rs): with the view standing still the third frame's
/// terrain and sky are copies, and the frame is the drawn one bit for bit, water included; moving the
/// camera or the sun draws again, and matches a renderer without the cache.
#[test]
fn background_cache_matches_drawn_frames() {
    let ctx = context();
    let hf = valley();
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let mut fresh = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let positions: Vec<Vec4> = (0..1000)
        .map(|i| {
            Vec3::new(-1.0 + 0.2 * (i % 10) as f32, 1.4 + 0.2 * (i / 100) as f32, -1.0 + 0.2 * ((i / 10) % 10) as f32)
                .extend(1000.0)
        })
        .collect();
    let velocities = vec![Vec4::ZERO; positions.len()];
    let (pos_buf, vel_buf) =
        (vec4_buffer(&ctx, "test positions", &positions), vec4_buffer(&ctx, "test velocities", &velocities));
    let source = ParticleSource::buffers(&pos_buf, &vel_buf, positions.len() as u32);
    let camera = particles_camera();
    let cached = RenderSettings::default();
    let uncached = RenderSettings { cache_background: false, ..RenderSettings::default() };
    let frame = |r: &mut Renderer, camera: &OrbitCamera, settings: &RenderSettings| {
        let img = render_to_image(&ctx, r, camera, Some(source), settings, SIZE);
        (img, r.background_restored())
    };

    let (drawn, restored) = frame(&mut renderer, &camera, &cached);
    assert!(!restored, "the first frame has nothing cached");
    let (second, restored) = frame(&mut renderer, &camera, &cached);
    assert!(!restored, "the background is stored only once it was drawn twice for the same view");
    let (third, restored) = frame(&mut renderer, &camera, &cached);
    assert!(restored, "a still view restores the background");
    assert!(second == drawn && third == drawn, "restored frames differ from the drawn one");

    let moved = OrbitCamera { yaw: 0.75, ..camera };
    let (after_move, restored) = frame(&mut renderer, &moved, &cached);
    assert!(!restored, "a moved camera draws the background");
    let (reference, _) = frame(&mut fresh, &moved, &uncached);
    assert!(after_move == reference, "the frame after a camera move differs from an uncached renderer's");
    assert!(after_move != third, "moving the camera changed nothing");

    let sun = RenderSettings { sun_azimuth_deg: cached.sun_azimuth_deg + 60.0, ..cached.clone() };
    frame(&mut renderer, &moved, &sun);
    let (sun_moved, restored) = frame(&mut renderer, &moved, &sun);
    assert!(!restored, "the second frame after a sun move still draws");
    let (reference, _) = frame(&mut fresh, &moved, &RenderSettings { cache_background: false, ..sun.clone() });
    assert!(sun_moved == reference && sun_moved != after_move, "the sun's move did not reach the frame");

    // A glass tank is part of the background: one appearing in a still view is drawn, not restored.
    let (restored_before, _) = frame(&mut renderer, &moved, &sun);
    assert!(renderer.background_restored() && restored_before == sun_moved, "the still view restores");
    let tank = Tank { min: Vec3::new(-1.5, 0.0, -1.5), max: Vec3::new(1.5, 2.5, 1.5), floor: false };
    let tanked = ParticleSource { tank: Some(tank), ..source };
    let with_tank = render_to_image(&ctx, &mut renderer, &moved, Some(tanked), &sun, SIZE);
    assert!(!renderer.background_restored(), "a tank added to a still view draws the background");
    let uncached_sun = RenderSettings { cache_background: false, ..sun.clone() };
    let reference = render_to_image(&ctx, &mut fresh, &moved, Some(tanked), &uncached_sun, SIZE);
    assert!(with_tank == reference && with_tank != sun_moved, "the tank did not reach the frame");
}

/// Mean absolute luminance step between horizontally and vertically neighbouring pixels, levels.
fn local_contrast(img: &image::RgbaImage) -> f64 {
    let lum = |x: u32, y: u32| {
        let p = img.get_pixel(x, y).0;
        0.2126 * p[0] as f64 + 0.7152 * p[1] as f64 + 0.0722 * p[2] as f64
    };
    let (w, h) = img.dimensions();
    let mut sum = 0.0;
    for y in 0..h - 1 {
        for x in 0..w - 1 {
            sum += (lum(x + 1, y) - lum(x, y)).abs() + (lum(x, y + 1) - lum(x, y)).abs();
        }
    }
    sum / (2.0 * ((w - 1) * (h - 1)) as f64)
}

/// A close view of the terrain (about a cell of the heightfield across the image's middle) shows detail
/// finer than the heightfield (terrain.wgsl: tufts, grain, cracks, a detail normal), not a smooth
/// interpolation of its cells: the mean step between neighbouring pixels is several levels. The smooth
/// shading before the detail measured 0.69 levels here, the detailed 3.75 (lavapipe).
#[test]
fn terrain_close_up_has_detail() {
    let ctx = context();
    let hf = valley();
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &hf);
    let target = Vec3::new(4.0, hf.height_at(4.0, 2.0), 2.0);
    let camera =
        OrbitCamera { target, distance: 1.2, yaw: 0.3, pitch: 0.6, fov_y: 50f32.to_radians(), lens_shift: 0.0 };
    let img = render_to_image(&ctx, &mut renderer, &camera, None, &RenderSettings::default(), SIZE);
    save(&img, "terrain_close_up.png");
    let contrast = local_contrast(&img);
    println!("terrain close-up: mean neighbour step {contrast:.2} levels");
    assert!(contrast > 1.2, "the close-up is smooth: mean neighbour step {contrast:.2} levels");
}
