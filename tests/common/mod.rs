//! Helpers shared by the GPU integration tests.
#![allow(dead_code)]

pub mod images;

use waterview::engine::batch::run_frames;
use waterview::engine::{BuildOptions, Engine};
use waterview::gpu::readback::read_buffer_blocking;
use waterview::gpu::{GpuContext, Profiler};
use waterview::render::{
    AnisotropyInput, AnisotropyPass, CameraUniform, CurvatureFlowPass, Ellipsoid, FlowSettings, FluidTargets,
    FluidTilesPass, Frame, NarrowRangePass, NarrowRangeSettings, Offscreen, OrbitCamera, Pass, RenderSettings, Targets,
};
use waterview::sim::SimStats;

/// The headless GPU context. A machine with no adapter FAILS here with a message naming the fix
/// (install Mesa's software Vulkan); GPU tests never pass by skipping.
pub fn gpu() -> GpuContext {
    match GpuContext::headless() {
        Ok(ctx) => ctx,
        Err(e) => panic!("GPU test needs a GPU adapter: {e}"),
    }
}

/// The engine of `scene` (its emitters and sinks too) at spacing `dx` metres, or the scene's own (scaled
/// on a CPU adapter) when `None`.
pub fn engine(ctx: &GpuContext, scene: &waterview::scene::Scene, dx: Option<f32>) -> Engine {
    Engine::new(ctx, scene.clone(), BuildOptions { dx, ..BuildOptions::default() })
        .unwrap_or_else(|e| panic!("{} builds: {e}", scene.name))
}

/// Runs `engine` for `frames` frames or `seconds` of simulated time (the first that ends; see
/// [`run_frames`]); asserts no particle went non-finite, left the domain or sank below the terrain, and
/// returns the statistics of every frame.
pub fn run_checked(ctx: &GpuContext, engine: &mut Engine, frames: Option<u64>, seconds: Option<f32>) -> Vec<SimStats> {
    let mut profiler = Profiler::new(&ctx.device);
    let mut all = Vec::new();
    run_frames(ctx, engine.sim_mut(), &mut profiler, frames, seconds, |s| all.push(s.clone()));
    for s in &all {
        assert_eq!(
            (s.non_finite, s.outside_domain, s.below_terrain),
            (0, 0, 0),
            "leak or blow-up at t = {}: {s:?}",
            s.time
        );
    }
    all
}

/// Runs the anisotropy pass over `positions` (xyz metres, w < 0 parked; spacing `dx`) with the default
/// settings, blocking; returns one ellipsoid per position.
pub fn anisotropy_of(ctx: &GpuContext, positions: &[glam::Vec4], dx: f32) -> Vec<Ellipsoid> {
    let buffer = waterview::gpu::split::SplitBuffer::new_init(
        &ctx.device,
        &ctx.queue,
        "test positions",
        16,
        bytemuck::cast_slice(positions),
    )
    .expect("fits");
    let mut settings = RenderSettings::default();
    settings.fluid.dx = dx;
    let mut pass = AnisotropyPass::new(ctx, waterview::render::OFFSCREEN_FORMAT);
    let input = AnisotropyInput {
        positions: &buffer,
        count: positions.len() as u32,
        params: settings.anisotropy_uniform(),
        version: None,
    };
    record_frame(ctx, &Offscreen::new(ctx, (1, 1)), &default_camera((1, 1)), |frame| pass.encode(frame, input));
    pass.ellipsoids().expect("ellipsoids made").read_blocking(ctx, positions.len())
}

/// The frame uniform of the default orbit camera for a `size`-pixel view.
pub fn default_camera(size: (u32, u32)) -> CameraUniform {
    OrbitCamera::default().uniform(size, glam::Vec3::Y, 1.0, 0.0)
}

/// Records `record` into a frame of its own over `target`, seen through `camera` (bind group 0 made here),
/// and submits it.
pub fn record_frame(ctx: &GpuContext, target: &Offscreen, camera: &CameraUniform, record: impl FnOnce(&mut Frame<'_>)) {
    let buffer = waterview::gpu::uniform_buffer_init(&ctx.device, "test camera", bytemuck::bytes_of(camera));
    let shadow = waterview::render::ObstacleShadowPass::new(ctx);
    let group = waterview::render::frame::frame_bind_group(&ctx.device, &buffer, shadow.frame_resources());
    let profiler = Profiler::new(&ctx.device);
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    let mut frame = Frame {
        device: &ctx.device,
        queue: &ctx.queue,
        encoder: &mut encoder,
        profiler: &profiler,
        frame_bind_group: &group,
        camera,
        target,
    };
    record(&mut frame);
    ctx.queue.submit([encoder.finish()]);
}

/// Reads an `R32Float` (or `R16Float`, converted) texture with `COPY_SRC` usage, row-major.
pub fn read_float_texture(ctx: &GpuContext, texture: &wgpu::Texture) -> Vec<f32> {
    let half = texture.format() == wgpu::TextureFormat::R16Float;
    let texel = if half { 2 } else { 4 };
    let (w, h) = (texture.width(), texture.height());
    let padded = (w * texel).div_ceil(256) * 256;
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test read-back"),
        size: (padded * h) as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    enc.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(padded), rows_per_image: Some(h) },
        },
        texture.size(),
    );
    ctx.queue.submit([enc.finish()]);
    buffer.map_async(wgpu::MapMode::Read, .., |r| r.expect("map read-back"));
    ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).expect("poll");
    let data = buffer.get_mapped_range(..).expect("mapped").to_vec();
    let mut out = Vec::with_capacity((w * h) as usize);
    for row in data.chunks_exact(padded as usize) {
        let row = &row[..(w * texel) as usize];
        if half {
            out.extend(row.chunks_exact(2).map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]]))));
        } else {
            out.extend(row.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        }
    }
    out
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f32;
    sign * match e {
        0 => m * 2f32.powi(-24),
        31 => f32::INFINITY,
        _ => (1.0 + m / 1024.0) * 2f32.powi(e - 15),
    }
}

/// Uploads `depth` (row-major, metres) into `targets.raw_depth`.
pub fn write_depth(ctx: &GpuContext, targets: &FluidTargets, depth: &[f32]) {
    let (w, h) = targets.size;
    ctx.queue.write_texture(
        targets.raw_depth.as_image_copy(),
        bytemuck::cast_slice(depth),
        wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(w * 4), rows_per_image: Some(h) },
        targets.raw_depth.size(),
    );
}

/// Writes `depth` (row-major, metres, 0 = no fluid) as the raw depth of `targets`, lists its fluid tiles,
/// runs 40 curvature-flow iterations (tile-skipped, or over the whole screen) and reads back (smoothed
/// depth, listed tiles).
pub fn run_flow(ctx: &GpuContext, targets: &FluidTargets, depth: &[f32], full_screen: bool) -> (Vec<f32>, u32) {
    let scene = Offscreen::new(ctx, targets.size);
    let mut pass = CurvatureFlowPass::new(ctx, scene.format());
    pass.resize(&ctx.device, Some(Targets { scene: &scene, fluid: targets }));
    let settings = FlowSettings { iterations: 40, step: 0.8, threshold: 0.5, focal: (1.6, 2.14), full_screen };
    let out = run_filter(ctx, targets, depth, |frame| pass.encode(frame, settings));
    (out[CurvatureFlowPass::result_index(settings.iterations)].clone(), tile_count(ctx, targets))
}

/// Writes `depth` (row-major, metres, 0 = no fluid) as the raw depth of `targets`, records the tiles pass
/// and then `filter` in one frame, and reads back both ping-pong textures `targets.smooth`.
pub fn run_filter(
    ctx: &GpuContext,
    targets: &FluidTargets,
    depth: &[f32],
    filter: impl FnOnce(&mut Frame<'_>),
) -> [Vec<f32>; 2] {
    let scene = Offscreen::new(ctx, targets.size);
    let mut tiles = FluidTilesPass::new(ctx, scene.format());
    tiles.resize(&ctx.device, Some(Targets { scene: &scene, fluid: targets }));
    write_depth(ctx, targets, depth);
    record_frame(ctx, &scene, &default_camera(targets.size), |frame| {
        tiles.encode(frame, ());
        filter(frame);
    });
    targets.smooth.each_ref().map(|t| read_float_texture(ctx, t))
}

/// Writes `depth` as the raw depth of `targets`, lists its tiles and runs the narrow-range filter with
/// `settings`; returns (filtered depth, listed tiles).
pub fn run_narrow_range(
    ctx: &GpuContext,
    targets: &FluidTargets,
    depth: &[f32],
    settings: NarrowRangeSettings,
) -> (Vec<f32>, u32) {
    let scene = Offscreen::new(ctx, targets.size);
    let mut pass = NarrowRangePass::new(ctx, scene.format());
    pass.resize(&ctx.device, Some(Targets { scene: &scene, fluid: targets }));
    let out = run_filter(ctx, targets, depth, |frame| pass.encode(frame, settings));
    (out[NarrowRangePass::result_index(settings.iterations)].clone(), tile_count(ctx, targets))
}

/// The number of tiles the last tiles pass over `targets` listed.
pub fn tile_count(ctx: &GpuContext, targets: &FluidTargets) -> u32 {
    u32::from_le_bytes(read_buffer_blocking(ctx, &targets.tile_counter)[..4].try_into().unwrap())
}

/// A noisy disc of fluid depth (about 8 m, radius 45 px around (90, 70)) on an empty `size` screen.
pub fn noisy_disc(size: (u32, u32)) -> Vec<f32> {
    let mut depth = vec![0.0f32; (size.0 * size.1) as usize];
    for (i, z) in depth.iter_mut().enumerate() {
        let (x, y) = ((i as u32 % size.0) as f32, (i as u32 / size.0) as f32);
        let d = glam::Vec2::new(x - 90.0, y - 70.0).length();
        if d < 45.0 {
            *z = 8.0 + 0.002 * d * d + 0.03 * ((x * 12.9898 + y * 78.233).sin() * 43758.547).fract();
        }
    }
    depth
}

/// An empty folder for one test's files: `waterview-NAME-PID` in the system's temporary folder (emptied
/// first, so a rerun starts clean; the process id keeps test binaries apart).
pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("waterview-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch folder");
    dir
}

/// A 128 x 96 depth image: background above row 8; left of column 80 a gently tilted plane at about
/// 10 m with +-2 cm deterministic noise; right of it a plane at 14 m (a 4 m step).
pub fn noisy_step(size: (u32, u32)) -> Vec<f32> {
    let mut seed = 12345u32;
    let mut noise = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    };
    (0..size.0 * size.1)
        .map(|i| {
            let (x, y) = (i % size.0, i / size.0);
            if y < 8 {
                0.0
            } else if x < 80 {
                10.0 + 0.002 * x as f32 + 0.004 * y as f32 + 0.04 * noise()
            } else {
                14.0
            }
        })
        .collect()
}

/// Mean |Laplacian| (pixels) over the interior of the noisy plane: the small-slope mean curvature, up to a
/// constant factor.
pub fn mean_curvature(z: &[f32], w: usize) -> f32 {
    let (mut sum, mut n) = (0.0, 0);
    for y in 12..90 {
        for x in 4..76 {
            let i = y * w + x;
            sum += (z[i - 1] + z[i + 1] + z[i - w] + z[i + w] - 4.0 * z[i]).abs();
            n += 1;
        }
    }
    sum / n as f32
}

/// A box (axis-aligned, `lo` .. `hi`, metres) as an obstacle's mesh: counter-clockwise seen from outside.
pub fn box_mesh(lo: glam::Vec3, hi: glam::Vec3) -> waterview::render::ObstacleMesh {
    let vertices = (0..8)
        .map(|i| glam::Vec3::new([lo.x, hi.x][i & 1], [lo.y, hi.y][(i >> 1) & 1], [lo.z, hi.z][(i >> 2) & 1]))
        .collect();
    let faces = [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]];
    let triangles = faces.iter().flat_map(|&[a, b, c, d]| [[a, b, c], [a, c, d]]).collect();
    waterview::render::ObstacleMesh { vertices, triangles }
}

/// A glTF of a unit cube (8 vertices, 12 triangles) with its positions in bufferView 0 of `stride`
/// bytes (12 when `None`), `nodes` nodes instancing it, and `extra` vertices after the cube's (never
/// indexed) in its POSITION accessor; the buffer is a `data:` URI.
pub fn cube_gltf(stride: Option<u32>, nodes: usize, extra: usize) -> String {
    let corners: Vec<[f32; 3]> =
        (0..8).map(|i| [(i & 1) as f32, ((i >> 1) & 1) as f32, ((i >> 2) & 1) as f32]).collect();
    let quads = [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]];
    let triangles: Vec<u16> = quads.iter().flat_map(|q| [q[0], q[1], q[2], q[0], q[2], q[3]]).collect();
    let step = stride.unwrap_or(12).max(12) as usize;
    let count = 8 + extra;
    let mut buffer = vec![0u8; count * step];
    for (i, c) in corners.iter().enumerate() {
        for (k, v) in c.iter().enumerate() {
            buffer[i * step + 4 * k..i * step + 4 * k + 4].copy_from_slice(&v.to_le_bytes());
        }
    }
    let positions = buffer.len();
    buffer.extend(triangles.iter().flat_map(|i| i.to_le_bytes()));
    let stride = stride.map_or(String::new(), |s| format!(",\"byteStride\":{s}"));
    let children: Vec<String> = (1..=nodes).map(|k| k.to_string()).collect();
    let leaves = vec!["{\"mesh\":0}"; nodes].join(",");
    format!(
        r#"{{"asset":{{"version":"2.0"}},"scene":0,"scenes":[{{"nodes":[0]}}],
        "nodes":[{{"children":[{}]}},{leaves}],
        "meshes":[{{"primitives":[{{"attributes":{{"POSITION":0}},"indices":1}}]}}],
        "buffers":[{{"byteLength":{},"uri":"data:application/octet-stream;base64,{}"}}],
        "bufferViews":[{{"buffer":0,"byteOffset":0,"byteLength":{positions}{stride}}},
                       {{"buffer":0,"byteOffset":{positions},"byteLength":72}}],
        "accessors":[{{"bufferView":0,"componentType":5126,"count":{count},"type":"VEC3","min":[0,0,0],"max":[1,1,1]}},
                     {{"bufferView":1,"componentType":5123,"count":36,"type":"SCALAR"}}]}}"#,
        children.join(","),
        buffer.len(),
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &buffer),
    )
}

/// Runs `waterview ARGS` in `dir` (RUST_LOG=warn); returns its output and how long it took.
pub fn waterview(dir: &std::path::Path, args: &[&str]) -> (std::process::Output, std::time::Duration) {
    let started = std::time::Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_waterview"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run waterview");
    (out, started.elapsed())
}
