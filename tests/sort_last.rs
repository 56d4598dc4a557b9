//! Sort-last compositing of a decomposed simulation's fluid (src/render/sort_last.rs, src/render/layers.rs,
//! src/render/ghosts.rs), on lavapipe (several devices on one adapter):
//! - the pass on synthetic layers: three ranks' depth and thickness (each its own device; two read back
//!   through the staging copy and sent as bytes) give per pixel the nearest positive depth and the summed
//!   thickness, read back exactly, at full and at half thickness resolution;
//! - a capture of the dam break on 2 ranks against 1 rank (see `two_ranks_match_one`);
//! - `run --gpus N --out` on 2 and 3 ranks against one GPU's image, PNG and OpenEXR;
//! - the wet ground of 2 and 3 ranks, merged on rank 0, against one rank's.
mod common;

use common::images::{agree, image_difference, srgb_image, FRACTION_TOLERANCE, MEAN_TOLERANCE};
use waterview::render::{
    FluidLayers, FluidTargets, LayerReadback, Offscreen, Pass, SortLastInput, SortLastPass, Targets,
};

/// Rank `r`'s synthetic layers at `size` pixels: linear depths (m; 0 = no fluid in about one pixel in
/// five) and thicknesses (m; multiples of 1/8 up to 1, exact in binary16 and in their sums).
fn pattern(r: usize, size: (u32, u32), thickness_size: (u32, u32)) -> (Vec<f32>, Vec<f32>) {
    let n = (size.0 * size.1) as usize;
    let depth = (0..n)
        .map(|i| {
            if (i * 7 + r * 3).is_multiple_of(5) {
                0.0
            } else {
                1.0 + ((i * 13 + r * 29) % 97) as f32 * 0.031_25 + r as f32 * 1e-3
            }
        })
        .collect();
    let nt = (thickness_size.0 * thickness_size.1) as usize;
    let thickness = (0..nt).map(|i| ((i * 11 + r * 5) % 9) as f32 * 0.125).collect();
    (depth, thickness)
}

/// Writes `depth` and `thickness` (row-major) into `targets`' raw depth and thickness.
fn write_layers(ctx: &waterview::gpu::GpuContext, targets: &FluidTargets, depth: &[f32], thickness: &[f32]) {
    common::write_depth(ctx, targets, depth);
    let halves: Vec<u16> = thickness.iter().map(|&t| half::f16::from_f32(t).to_bits()).collect();
    let (w, h) = targets.thickness_size;
    ctx.queue.write_texture(
        targets.thickness.as_image_copy(),
        bytemuck::cast_slice(&halves),
        wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(w * 2), rows_per_image: Some(h) },
        targets.thickness.size(),
    );
}

/// The ghost cull marks exactly the ellipsoids whose id (read from the given offset) has the ghost bit as
/// not drawn (bounding radius 0), and leaves every other ellipsoid as it was: in one chunk, and with the
/// ellipsoids split over 3 chunks of 256 (the kernel runs once per chunk, each at its start's ids).
#[test]
fn ghost_cull_hides_exactly_the_ghosts() {
    for per_binding in [0, 256] {
        ghost_cull_hides_exactly_the_ghosts_in_chunks_of(per_binding);
    }
}

/// See `ghost_cull_hides_exactly_the_ghosts`; `per_binding` 0: the device's own chunk length.
fn ghost_cull_hides_exactly_the_ghosts_in_chunks_of(per_binding: u32) {
    use waterview::render::ghosts::{GhostInput, GhostPass};
    use waterview::render::{Ellipsoid, EllipsoidBuffers, GhostIds};
    let ctx = common::gpu();
    let n = 600u32;
    let ellipsoids: Vec<Ellipsoid> = (0..n)
        .map(|i| Ellipsoid::new(glam::Vec3::new(i as f32, 1.0, 2.0), 0.5 + i as f32 * 1e-3, glam::Mat3::IDENTITY))
        .collect();
    let buffers = match per_binding {
        0 => EllipsoidBuffers::from_ellipsoids(&ctx, &ellipsoids),
        per => EllipsoidBuffers::from_ellipsoids_chunked(&ctx, &ellipsoids, per),
    }
    .expect("ellipsoid buffers");
    assert_eq!(buffers.chunks(), if per_binding == 0 { 1 } else { 3 }, "chunks of the ellipsoids");
    let ghost_bit = 1u32 << 31;
    // Two halves as the simulation keeps them: ids as written (all ghosts here, so reading them is wrong),
    // then the sorted order, every third a ghost.
    let ids: Vec<u32> =
        (0..n).map(|i| i | ghost_bit).chain((0..n).map(|i| if i % 3 == 0 { i | ghost_bit } else { i })).collect();
    let ids = waterview::gpu::storage_buffer_init(&ctx.device, "test ids", bytemuck::cast_slice(&ids));
    let target = Offscreen::new(&ctx, (16, 16));
    let mut pass = GhostPass::new(&ctx, target.format());
    let ghosts = GhostIds { ids: &ids, offset: n, ghost_bit };
    common::record_frame(&ctx, &target, &common::default_camera((16, 16)), |frame| {
        pass.encode(frame, GhostInput { ellipsoids: &buffers, count: n, ghosts })
    });
    let got = buffers.read_blocking(&ctx, n as usize);
    for (i, (g, e)) in got.iter().zip(&ellipsoids).enumerate() {
        let expect = if i % 3 == 0 { 0.0 } else { e.centre[3] };
        assert_eq!(g.centre[..3], e.centre[..3], "ellipsoid {i}: centre kept");
        assert_eq!(g.centre[3], expect, "ellipsoid {i} (chunks of {per_binding}): bounding radius");
        assert_eq!(g.g_packed, e.g_packed, "ellipsoid {i}: matrix kept");
    }
}

#[test]
fn sort_last_keeps_the_nearest_depth_and_sums_the_thickness_exactly() {
    // Odd sizes: the rows of the staging copy are padded to 256 bytes.
    let size = (37, 23);
    for half_thickness in [false, true] {
        let display = common::gpu();
        let target = Offscreen::new(&display, size);
        let fluid = FluidTargets::new(&display, size, target.format(), half_thickness);
        let tsize = fluid.thickness_size;
        let layers: Vec<_> = (0..3).map(|r| pattern(r, size, tsize)).collect();
        write_layers(&display, &fluid, &layers[0].0, &layers[0].1);
        // Ranks 1 and 2: their own devices, read back as a rank other than the display does.
        let received: Vec<FluidLayers> = layers[1..]
            .iter()
            .map(|(depth, thickness)| {
                let ctx = common::gpu();
                let own = FluidTargets::new(&ctx, size, target.format(), half_thickness);
                write_layers(&ctx, &own, depth, thickness);
                let mut readback = LayerReadback::default();
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                readback.encode_copy(&ctx.device, &mut encoder, &own);
                ctx.queue.submit([encoder.finish()]);
                readback.map();
                let got = readback.read_blocking(&ctx).expect("layers map");
                // Through the transport as bytes.
                FluidLayers::from_bytes(&got.to_bytes()).expect("layers decode")
            })
            .collect();
        let mut pass = SortLastPass::new(&display, target.format());
        pass.resize(&display.device, Some(Targets { scene: &target, fluid: &fluid }));
        common::record_frame(&display, &target, &common::default_camera(size), |frame| {
            pass.encode(frame, SortLastInput { received: &received })
        });
        let depth = common::read_float_texture(&display, &fluid.raw_depth);
        let thickness = common::read_float_texture(&display, &fluid.thickness);
        let mut with_fluid = 0;
        for (i, &got) in depth.iter().enumerate() {
            let nearest =
                layers.iter().map(|l| l.0[i]).filter(|&d| d > 0.0).fold(
                    0.0f32,
                    |m, d| {
                        if m == 0.0 {
                            d
                        } else {
                            m.min(d)
                        }
                    },
                );
            with_fluid += (nearest > 0.0) as usize;
            assert_eq!(got, nearest, "half = {half_thickness}: depth of pixel {i}");
        }
        assert!(with_fluid > depth.len() / 2, "the pattern has fluid in most pixels");
        assert_eq!(thickness.len(), (tsize.0 * tsize.1) as usize);
        for (i, &got) in thickness.iter().enumerate() {
            let sum: f32 = layers.iter().map(|l| l.1[i]).sum();
            assert_eq!(got, sum, "half = {half_thickness}: thickness of pixel {i}");
        }
        // Nothing received (one GPU): the pass leaves the display's own layers as they are.
        write_layers(&display, &fluid, &layers[0].0, &layers[0].1);
        common::record_frame(&display, &target, &common::default_camera(size), |frame| {
            pass.encode(frame, SortLastInput { received: &[] })
        });
        assert_eq!(common::read_float_texture(&display, &fluid.raw_depth), layers[0].0);
    }
}

/// Captures the dam break at dx = 0.08 m (1 260 particles, as tests/cluster.rs) on `ranks` ranks (each its
/// own lavapipe device) into PNGs at 320 x 240, [`FRAMES`] frames at 20 fps (t = 0, 0.05, 0.1, 0.15 s; the
/// last after 13 joint steps on lavapipe); returns the frames and their folder.
fn capture(ranks: usize, drop_received: bool, name: &str) -> (Vec<image::RgbaImage>, std::path::PathBuf) {
    use waterview::capture::offline::OfflineOptions;
    use waterview::capture::ranks::{capture_ranks, RankCaptureOptions};
    let scene = waterview::scene::Scene::builtin("dam_break").expect("built-in scene");
    let dir = common::scratch(name).join("frames");
    let opts = OfflineOptions {
        seconds: FRAMES as f32 / 20.0,
        fps: 20.0,
        size: (320, 240),
        out: Some(dir.clone()),
        particles: None,
        surface: None,
        dx: Some(0.08),
        image: Default::default(),
    };
    let contexts = (0..ranks).map(|_| common::gpu()).collect();
    let report = capture_ranks(contexts, &scene, &opts, RankCaptureOptions { drop_received }, |_, _| {})
        .unwrap_or_else(|e| panic!("capture on {ranks} ranks: {e}"));
    eprintln!("{ranks} ranks: {} steps to t = {} s", report.steps, report.sim_time);
    assert_eq!(report.video.frames, FRAMES as u64);
    assert_eq!(report.sim_time, FRAMES as f32 / 20.0, "the last frame's end, exactly");
    assert_eq!((report.layers_gpu_ms.len(), report.readback_ms.len()), (ranks, ranks));
    let frames = (0..FRAMES)
        .map(|k| {
            let path = dir.join(format!("frame_{k:05}.png"));
            image::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).to_rgba8()
        })
        .collect();
    (frames, dir)
}

/// Frames of the captures.
const FRAMES: u32 = 4;

#[test]
fn two_ranks_match_one_and_without_the_second_ranks_layers_they_do_not() {
    let (one, _) = capture(1, false, "sort-last-1");
    let (two, dir) = capture(2, false, "sort-last-2");
    let (dropped, _) = capture(2, true, "sort-last-2-dropped");
    for k in 0..FRAMES as usize {
        let d = image_difference(&one[k], &two[k]);
        let c = image_difference(&one[k], &dropped[k]);
        eprintln!(
            "frame {k}: 2 ranks against 1: mean {:.4}, {:.3} % of pixels differ; rank 1's layers dropped: mean \
             {:.4}, {:.3} % ({})",
            d.0,
            100.0 * d.1,
            c.0,
            100.0 * c.1,
            dir.display()
        );
        assert!(
            agree(d),
            "frame {k}: 2 ranks differ from 1 by {d:?} (tolerance {MEAN_TOLERANCE}, {FRACTION_TOLERANCE})"
        );
        // The control: rank 1's water missing must fail the same comparison, by a margin.
        assert!(
            c.0 > 3.0 * MEAN_TOLERANCE && c.1 > 5.0 * FRACTION_TOLERANCE,
            "frame {k}: without rank 1's layers the image differs by only {c:?}: compositing is not tested"
        );
    }
}

/// `waterview run` of the dam break at dx = 0.08 m for 8 steps on `gpus` GPUs with `--out file` (in `dir`)
/// at 320 x 240 and the `extra` options; the image it wrote. Panics when the run fails or the file does
/// not decode.
fn run_dam_break_out(dir: &std::path::Path, gpus: &str, extra: &[&str], file: &str) -> image::DynamicImage {
    run_scene_out(dir, "dam_break.ron", gpus, &[&["--dx", "0.08"], extra].concat(), file)
}

/// `waterview --scene assets/scenes/SCENE run --steps 8 --size 320x240 --gpus GPUS --out FILE EXTRA..` in
/// `dir`, its image.
fn run_scene_out(dir: &std::path::Path, scene: &str, gpus: &str, extra: &[&str], file: &str) -> image::DynamicImage {
    let scene = format!("{}/assets/scenes/{scene}", env!("CARGO_MANIFEST_DIR"));
    let mut args = vec!["--scene", &scene, "run", "--steps", "8", "--size", "320x240"];
    args.extend_from_slice(&["--gpus", gpus, "--out", file]);
    args.extend_from_slice(extra);
    let (out, _) = common::waterview(dir, &args);
    assert!(out.status.success(), "--gpus {gpus} {extra:?} {file}: {}", String::from_utf8_lossy(&out.stderr));
    let path = dir.join(file);
    image::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `waterview run --gpus N --out final.png` (src/cli/multi.rs, [`waterview::capture::ranks::rank_image`]):
/// the dam break at dx = 0.08 m after 8 steps on 2 and 3 ranks, drawn sort-last at 320 x 240, against one
/// GPU's `run --no-water-shadow --out` (several ranks cast no water shadow): within the image tolerance
/// (measured on lavapipe at 1280 x 720: at most 2-3 levels of 255 anywhere). The control: one GPU's image
/// with the shadow differs by more than the tolerance (3 % of the pixels at 1280 x 720), so the comparison
/// sees a missing part of the picture.
#[test]
fn run_out_on_two_and_three_gpus_draws_one_gpus_image() {
    let dir = common::scratch("sort-last-run-out");
    let run = |gpus: &str, extra: &[&str], file: &str| run_dam_break_out(&dir, gpus, extra, file).to_rgba8();
    let one = run("1", &["--no-water-shadow"], "one.png");
    let shadowed = run("1", &[], "one-shadow.png");
    for gpus in ["2", "3"] {
        let many = run(gpus, &[], &format!("gpus-{gpus}.png"));
        let d = image_difference(&one, &many);
        eprintln!("run --gpus {gpus} --out against one GPU: mean {:.4}, {:.3} % of pixels differ", d.0, 100.0 * d.1);
        assert!(agree(d), "{gpus} ranks differ from one GPU's image by {d:?} ({})", dir.display());
    }
    let c = image_difference(&one, &shadowed);
    assert!(!agree(c), "the water's shadow changes the image by only {c:?}: the comparison cannot see a missing part");
}

/// `waterview run --gpus 2 --out final.exr`: the sort-last image's linear values (rank 0 draws into a
/// float target, as one GPU's `run --out x.exr` does), against one GPU's EXR of the same state, both
/// sRGB-encoded to 8 bits for the image tolerance; and the same run's PNG is that EXR's encoding (the
/// EXR holds the picture, not a blank or another view; within tests/screenshot_hdr.rs's bound).
/// The wave tank's paddle on several GPUs: every rank draws it into its layers' background (the water
/// behind it hidden) and rank 0 into the frame, as one GPU does. `run --gpus 2 --out` against one GPU's
/// (both without the water's shadow, which several ranks do not cast): within the image tolerance, and
/// the paddle's yellow covers as many pixels (the ranks drew none before: every one of them missing).
#[test]
fn run_out_on_two_gpus_draws_the_wave_makers_paddle() {
    let dir = common::scratch("sort-last-paddle");
    let run =
        |gpus: &str, file: &str| run_scene_out(&dir, "wave_tank.ron", gpus, &["--no-water-shadow"], file).to_rgba8();
    let (one, two) = (run("1", "one.png"), run("2", "two.png"));
    let yellow = |img: &image::RgbaImage| img.pixels().filter(|p| p[0] > 170 && p[1] > 140 && p[2] < 110).count();
    let (y1, y2) = (yellow(&one), yellow(&two));
    let d = image_difference(&one, &two);
    eprintln!("paddle pixels: one GPU {y1}, two {y2}; images: mean {:.4}, {:.3} % of pixels differ", d.0, 100.0 * d.1);
    assert!(y1 > 200, "one GPU's image shows {y1} paddle pixels ({})", dir.display());
    assert!(y2 as f64 >= 0.9 * y1 as f64, "two GPUs draw {y2} paddle pixels, one GPU {y1} ({})", dir.display());
    assert!(agree(d), "two ranks differ from one GPU's image by {d:?} ({})", dir.display());
}

#[test]
fn run_out_exr_on_two_gpus_holds_one_gpus_linear_image() {
    let dir = common::scratch("sort-last-run-exr");
    let run = |gpus: &str, extra: &[&str], file: &str| run_dam_break_out(&dir, gpus, extra, file);
    let linear = |img: image::DynamicImage| match img {
        image::DynamicImage::ImageRgba32F(img) => srgb_image(&img),
        other => panic!("an EXR read back as {:?}", other.color()),
    };
    let one = linear(run("1", &["--no-water-shadow"], "one.exr"));
    let two = linear(run("2", &[], "two.exr"));
    let d = image_difference(&one, &two);
    eprintln!("run --gpus 2 --out x.exr against one GPU: mean {:.4}, {:.3} % of pixels differ", d.0, 100.0 * d.1);
    assert!(agree(d), "2 ranks' EXR differs from one GPU's by {d:?} ({})", dir.display());
    let png = run("2", &[], "two.png").to_rgba8();
    // Within the one-GPU EXR-against-PNG bound (tests/screenshot_hdr.rs: the float target's values round
    // to 8 bits a level or two apart, mean 0.11 of 255 here): no pixel differs past the threshold.
    let e = image_difference(&png, &two);
    assert!(
        e.0 < 2.0 && e.1 <= FRACTION_TOLERANCE,
        "2 ranks' PNG and EXR of the same state differ by {e:?} ({})",
        dir.display()
    );
}

/// What several GPUs cannot capture is refused with the reason, before anything is simulated or written:
/// particle files, a scene with emitters, a size past the GPU's texture limit, no output, more ranks than
/// the domain has room for.
#[test]
fn what_several_gpus_cannot_capture_is_refused() {
    use waterview::capture::offline::OfflineOptions;
    use waterview::capture::particles::ParticleOutput;
    use waterview::capture::ranks::{capture_ranks, RankCaptureOptions};
    let dir = common::scratch("sort-last-refused");
    let dam = waterview::scene::Scene::builtin("dam_break").expect("built-in scene");
    let base = OfflineOptions {
        seconds: 0.1,
        fps: 20.0,
        size: (64, 48),
        out: Some(dir.join("frames")),
        particles: None,
        surface: None,
        dx: Some(0.08),
        image: Default::default(),
    };
    let particles = ParticleOutput { dir: dir.join("p"), format: Default::default() };
    let tank = waterview::scene::Scene::builtin("tank").expect("built-in scene");
    let cases: Vec<(&str, waterview::scene::Scene, OfflineOptions)> = vec![
        ("--particles", dam.clone(), OfflineOptions { particles: Some(particles), ..base.clone() }),
        ("larger than rank 0's GPU allows", dam.clone(), OfflineOptions { size: (70_000, 48), ..base.clone() }),
        ("nothing to capture", dam.clone(), OfflineOptions { out: None, ..base.clone() }),
        // More slabs than the domain has room for: every rank stops with the reason, none hangs.
        ("too thin for 8 slabs", tank, base.clone()),
    ];
    for (why, scene, opts) in cases {
        let ranks = if why.contains("8 slabs") { 8 } else { 2 };
        let contexts = (0..ranks).map(|_| common::gpu()).collect();
        match capture_ranks(contexts, &scene, &opts, RankCaptureOptions::default(), |_, _| {}) {
            Ok(_) => panic!("{why}: captured"),
            Err(e) => assert!(e.to_string().contains(why), "{why}: {e}"),
        }
        assert!(!dir.join("frames").exists(), "{why}: nothing written");
    }
}

/// `waterview capture --gpus 2` writes the PNG frames and prints the per-rank timings; what it cannot do
/// is refused with the reason.
#[test]
fn cli_captures_on_two_gpus() {
    let dir = common::scratch("sort-last-cli");
    let out = dir.join("frames");
    let capture = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_waterview"))
            .args(["--scene", "assets/scenes/dam_break.ron", "capture", "--dx", "0.08", "--seconds", "0.1"])
            .args(["--fps", "20", "--size", "64x48", "--gpus", "2"])
            .args(extra)
            .output()
            .expect("waterview runs")
    };
    let ok = capture(&["--out", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&ok.stderr);
    assert!(ok.status.success(), "{stderr}");
    assert!(stderr.contains("2 frames") && stderr.contains("2 ranks"), "{stderr}");
    assert!(stderr.contains("fluid layers (GPU") && stderr.contains("sort-last composite"), "{stderr}");
    for k in 0..2 {
        let img = image::open(out.join(format!("frame_{k:05}.png"))).expect("frame written");
        assert_eq!((img.width(), img.height()), (64, 48));
    }
    for (extra, why) in [
        (vec!["--particles", "p"], "--particles needs one GPU"),
        (vec!["--out", "x", "--view", "spheres"], "spheres view"),
        (vec!["--record-cost"], "--record-cost measures one GPU"),
    ] {
        let refused = capture(&extra);
        assert!(!refused.status.success(), "{extra:?} ran");
        assert!(String::from_utf8_lossy(&refused.stderr).contains(why), "{extra:?}: {refused:?}");
    }
}

/// One renderer's display frame equals its plain frame: [`Renderer::encode_display`] with nothing received,
/// alone or after [`Renderer::encode_layers`] of the same frame (whose splats it goes on from), draws the
/// same pixels as [`Renderer::encode`]; and after the particles moved, the old layers are not reused.
#[test]
fn display_frames_with_nothing_received_equal_the_plain_frame() {
    use waterview::gpu::Profiler;
    use waterview::render::{read_texture_rgba, Renderer};
    let ctx = common::gpu();
    let scene = waterview::scene::Scene::builtin("dam_break").expect("built-in scene");
    let mut engine = common::engine(&ctx, &scene, Some(0.08));
    let size = (160, 120);
    let target = Offscreen::new(&ctx, size);
    let (camera, settings) = waterview::engine::batch::scene_view(&engine);
    let profiler = Profiler::new(&ctx.device);
    let mut renderer = Renderer::new(&ctx, target.format(), engine.terrain());
    let frame = |renderer: &mut Renderer, engine: &waterview::engine::Engine, how: u32| {
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let p = Some(engine.particles());
        match how {
            0 => renderer.encode(&ctx, &mut enc, &profiler, &target, &camera, p, &settings),
            1 => renderer.encode_display(&ctx, &mut enc, &profiler, &target, &camera, p, None, &[], &settings),
            _ => {
                renderer.encode_layers(&ctx, &mut enc, &profiler, &target, &camera, p, None, &settings);
                ctx.queue.submit([enc.finish()]);
                enc = ctx.device.create_command_encoder(&Default::default());
                renderer.encode_display(&ctx, &mut enc, &profiler, &target, &camera, p, None, &[], &settings);
            }
        }
        ctx.queue.submit([enc.finish()]);
        read_texture_rgba(&ctx, &target.color)
    };
    common::run_checked(&ctx, &mut engine, Some(3), None);
    let plain = frame(&mut renderer, &engine, 0);
    assert_eq!(frame(&mut renderer, &engine, 1), plain, "display frame alone");
    assert_eq!(frame(&mut renderer, &engine, 2), plain, "display frame after the layers");
    // Layers of the old state, then the particles move: the display frame splats them anew.
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    renderer.encode_layers(&ctx, &mut enc, &profiler, &target, &camera, Some(engine.particles()), None, &settings);
    ctx.queue.submit([enc.finish()]);
    common::run_checked(&ctx, &mut engine, Some(3), None);
    let moved = frame(&mut renderer, &engine, 1);
    assert_ne!(moved, plain, "the water moved");
    assert_eq!(moved, frame(&mut renderer, &engine, 0), "the moved water's display frame is its plain frame");
}

/// Rank 0's wet ground (f32 per terrain sample) after `steps` WCSPH steps of the valley on `ranks` ranks
/// and one sort-last frame (every rank soaks its own map from its particles; rank 0 merges them unless
/// `drop_received`).
fn valley_wetness(ranks: usize, steps: usize, drop_received: bool) -> Vec<f32> {
    use waterview::capture::ranks::{RankCaptureError, RankDraw};
    use waterview::cluster::{initial_particles, run_threads_with, Rank, RankConfig};
    let scene = waterview::scene::Scene::builtin("valley").expect("built-in scene").at_dx(0.6);
    let params = waterview::sim::SimParams { method: waterview::sim::Method::Wcsph, ..scene.solver.clone() };
    let setup = scene.build(false).expect("scene builds");
    let all = initial_particles(&setup, &params);
    let contexts = (0..ranks).map(|_| common::gpu()).collect();
    let maps = run_threads_with(contexts, |t, ctx| -> Result<Option<Vec<f32>>, RankCaptureError> {
        // Borders fixed: the balancing follows wall-clock times on lavapipe, so the control's share of
        // rank 0 would follow the machine's load (a loaded run left it 50 of 289 samples to miss).
        let config = RankConfig { balance_every: 0, ..RankConfig::for_params(&params) };
        let options = waterview::sim::SimOptions::default();
        let boundary = (&setup.terrain, &setup.obstacles[..]);
        let mut rank = Rank::new(t, ctx.clone(), &scene.domain, boundary, &params, options, config, &all)?;
        for _ in 0..steps {
            rank.step()?;
        }
        let format = waterview::render::OFFSCREEN_FORMAT;
        let image = waterview::engine::batch::ImageOptions::default();
        let mut draw = RankDraw::new(&rank, &scene, &[], ((160, 120), format), &image);
        let Some(enc) = draw.frame(&rank, &scene, drop_received)?.0 else { return Ok(None) };
        ctx.queue.submit([enc.finish()]);
        let bytes =
            draw.wetness_blocking(&ctx).map_err(|cause| waterview::cluster::ClusterError::Gpu { rank: 0, cause })?;
        Ok(Some(bytemuck::pod_collect_to_vec(&bytes)))
    })
    .unwrap_or_else(|e| panic!("valley on {ranks} ranks: {e}"));
    maps.into_iter().flatten().next().expect("rank 0's map")
}

/// Wet ground on several GPUs: every rank soaks its own map from its own particles and rank 0 takes the
/// largest per sample before drawing (drying and soaking commute with it), so rank 0's map is the one a
/// single rank's particles make: the valley after 40 WCSPH steps on 2 and 3 ranks against 1, the same
/// soaked samples but for a few whose particle lies within rounding of the contact distance. The control:
/// rank 0's own map without the others' (what the ranks drew before, had they drawn wet ground at all)
/// misses a large share of them.
#[test]
fn wet_ground_of_two_and_three_ranks_is_one_ranks() {
    let one = valley_wetness(1, 40, false);
    let soaked = |m: &[f32]| m.iter().filter(|&&w| w > 0.5).count();
    let n = soaked(&one);
    assert!(n > 100, "one rank soaked {n} samples only");
    for ranks in [2, 3] {
        let many = valley_wetness(ranks, 40, false);
        assert_eq!(many.len(), one.len(), "{ranks} ranks: another terrain");
        let differ = one.iter().zip(&many).filter(|(a, b)| (*a > &0.5) != (*b > &0.5)).count();
        println!("wet ground: one rank {n} samples soaked, {ranks} ranks {} ({differ} differ)", soaked(&many));
        assert!(differ * 100 <= n, "{ranks} ranks: {differ} of {n} soaked samples differ from one rank's");
    }
    let alone = valley_wetness(2, 40, true);
    let missed = one.iter().zip(&alone).filter(|(a, b)| **a > 0.5 && **b <= 0.5).count();
    println!("rank 0 of 2 alone misses {missed} of the {n} soaked samples");
    assert!(
        missed * 5 >= n,
        "rank 0 alone misses only {missed} of {n} soaked samples: the test cannot see a missing merge"
    );
}
