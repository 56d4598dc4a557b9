//! HDR screenshots (OpenEXR of the linear image) on the GPU (lavapipe on CI), small sizes throughout:
//! the same frame rendered headless to EXR and to PNG agrees once the EXR's linear values are encoded to
//! 8-bit sRGB; `waterview run --out FILE.exr` writes a float RGBA EXR; the window's asynchronous
//! screenshot ring writes an EXR of an `Rgba16Float` target, value for value; and a write into a
//! read-only or missing folder fails with a message naming the file and leaves nothing behind.
//! Without a GPU adapter these tests fail with the context's message (never skip).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use waterview::capture::{save_exr_blocking, Capture, CaptureError};
use waterview::cli::{run::write_image, RunArgs};
use waterview::engine::{batch::run_frames, BuildOptions, Engine};
use waterview::gpu::{GpuContext, Profiler};
use waterview::render::{read_texture_rgba_f32, Offscreen, OrbitCamera, RenderSettings, Renderer, HDR_FORMAT};
use waterview::scene::Scene;

mod common;
use common::images::srgb8;
use common::scratch;

fn gpu() -> GpuContext {
    match GpuContext::headless() {
        Ok(ctx) => ctx,
        Err(e) => panic!("HDR screenshot tests need a GPU adapter: {e}"),
    }
}

/// The resting tank at a coarse spacing (1 440 particles), a few frames in.
fn tank(ctx: &GpuContext) -> (Scene, Engine) {
    let scene = Scene::builtin("tank").expect("built-in tank scene");
    let mut engine = Engine::new(ctx, scene.clone(), BuildOptions { dx: Some(0.08), ..BuildOptions::default() })
        .expect("build the tank");
    let mut profiler = Profiler::new(&ctx.device);
    run_frames(ctx, engine.sim_mut(), &mut profiler, Some(3), None, |_| {});
    (scene, engine)
}

/// The file and its `.part` are both absent.
fn nothing_at(path: &Path) -> bool {
    let mut part = path.as_os_str().to_owned();
    part.push(".part");
    !path.exists() && !Path::new(&part).exists()
}

#[test]
fn exr_and_png_of_the_same_frame_agree() {
    const SIZE: (u32, u32) = (160, 120);
    let ctx = gpu();
    let (_, engine) = tank(&ctx);
    let dir = scratch("compare");
    let (exr, png) = (dir.join("tank.exr"), dir.join("tank.png"));
    write_image(&ctx, &engine, SIZE, &exr).expect("write the EXR");
    write_image(&ctx, &engine, SIZE, &png).expect("write the PNG");
    assert!(!dir.join("tank.exr.part").exists() && !dir.join("tank.png.part").exists(), "temporary file left behind");

    let hdr = image::open(&exr).expect("decode the EXR");
    let image::DynamicImage::ImageRgba32F(hdr) = hdr else {
        panic!("the EXR reads back as {:?}, not 32-bit float RGBA", hdr.color())
    };
    assert_eq!(hdr.dimensions(), SIZE);
    let ldr = image::open(&png).expect("decode the PNG").to_rgba8();
    assert_eq!(ldr.dimensions(), SIZE);

    let values = hdr.as_raw();
    assert!(values.iter().all(|v| v.is_finite()), "non-finite values in the EXR");
    let first = &values[..4];
    assert!(values.chunks_exact(4).any(|p| p != first), "every pixel of the EXR is the same");
    let (lo, hi) = values.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    assert!(hdr.pixels().all(|p| (p.0[3] - 1.0).abs() < 1e-3), "alpha is not 1");

    let (mut sum, mut within, mut worst, mut n) = (0u64, 0usize, 0u8, 0usize);
    for (h, l) in hdr.pixels().zip(ldr.pixels()) {
        let d = (0..3).map(|c| srgb8(h.0[c]).abs_diff(l.0[c])).max().unwrap_or(0);
        sum += (0..3).map(|c| srgb8(h.0[c]).abs_diff(l.0[c]) as u64).sum::<u64>();
        within += usize::from(d <= 4);
        worst = worst.max(d);
        n += 1;
    }
    let mean = sum as f64 / (3 * n) as f64;
    let share = within as f64 / n as f64;
    eprintln!(
        "EXR vs PNG, {}x{}: linear values in [{lo:.4}, {hi:.4}]; sRGB-encoded EXR against the PNG: mean |diff| {mean:.3}/255, \
         {:.2} % of pixels within 4/255 on every channel, worst {worst}/255",
        SIZE.0,
        SIZE.1,
        100.0 * share
    );
    assert!(mean < 2.0, "mean absolute difference {mean:.3}/255 is not below 2/255");
    assert!(share >= 0.99, "only {:.2} % of pixels within 4/255", 100.0 * share);

    // The headless path reports an unwritable output by name and leaves nothing.
    let blocker = dir.join("not-a-folder");
    std::fs::write(&blocker, b"x").unwrap();
    let bad = blocker.join("frame.exr");
    let err = write_image(&ctx, &engine, (32, 24), &bad).expect_err("an EXR under a file must fail");
    assert!(err.to_string().contains("not-a-folder"), "the message names the path: {err}");
    assert!(nothing_at(&bad));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_writes_an_exr_for_an_exr_path() {
    let dir = scratch("run");
    let out = dir.join("final.EXR");
    let scene = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/scenes/tank.ron");
    let args = RunArgs {
        steps: Some(2),
        seconds: None,
        out: Some(out.clone()),
        stats: None,
        size: (64, 48),
        dx: Some(0.08),
        view: Default::default(),
        depth_filter: None,
        sun_elevation: None,
        no_water_shadow: false,
        no_wet_ground: false,
        resume: None,
        save_checkpoint: None,
        gpus: waterview::cluster::GpuCount::N(1),
        save_particles: None,
        save_surface: None,
        surface_settings: Default::default(),
    };
    waterview::cli::run::run(Some(&scene), &args).expect("waterview run --out final.EXR");
    assert!(!dir.join("final.EXR.part").exists(), "temporary file left behind");
    let img = image::open(&out).expect("decode the EXR");
    assert!(matches!(img, image::DynamicImage::ImageRgba32F(_)), "read back as {:?}", img.color());
    assert_eq!((img.width(), img.height()), (64, 48));
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..4], &[0x76, 0x2f, 0x31, 0x01], "OpenEXR magic number");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Polls `capture` (and the device) until a screenshot is reported, at most a minute.
fn wait_for(ctx: &GpuContext, capture: &mut Capture) -> Result<PathBuf, CaptureError> {
    let start = Instant::now();
    loop {
        let _ = ctx.device.poll(wgpu::PollType::Poll);
        if let Some(result) = capture.poll() {
            return result;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no screenshot reported within a minute");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_screenshot_ring_writes_an_exr_of_a_float_target() {
    const SIZE: (u32, u32) = (72, 40); // 72 * 8 bytes: rows padded to 768 bytes
    let ctx = gpu();
    let (scene, engine) = tank(&ctx);
    let sim = engine.sim();
    let dir = scratch("ring");
    let mut renderer = Renderer::new(&ctx, HDR_FORMAT, sim.terrain());
    let target = Offscreen::with_format(&ctx, SIZE, HDR_FORMAT);
    let profiler = Profiler::new(&ctx.device);
    let mut settings = RenderSettings::default();
    settings.particle.radius = sim.particle_radius();
    let camera = OrbitCamera::from_desc(&scene.camera);
    let mut capture = Capture::new(&ctx.device, dir.join("captures"));
    let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("test frame") });
    renderer.encode(&ctx, &mut enc, &profiler, &target, &camera, Some(engine.particles()), &settings);
    capture.request(&mut enc, &target.color, SIZE).expect("record the copy");
    ctx.queue.submit([enc.finish()]);
    capture.after_submit();
    let path = wait_for(&ctx, &mut capture).expect("EXR screenshot written");
    assert_eq!(path.extension().and_then(|e| e.to_str()), Some("exr"), "{}", path.display());
    assert_eq!(capture.pending(), 0);
    let written = image::open(&path).expect("decode the EXR");
    let image::DynamicImage::ImageRgba32F(written) = written else { panic!("read back as {:?}", written.color()) };
    let direct = read_texture_rgba_f32(&ctx, &target.color);
    assert_eq!(written.dimensions(), SIZE);
    assert!(written == direct, "the ring's EXR differs from the texture read back directly");
    let names: Vec<_> = std::fs::read_dir(dir.join("captures")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "one file, no .part left: {names:?}");

    // A float format the ring does not write is refused at once, with the reason.
    let wide = Offscreen::with_format(&ctx, (8, 8), wgpu::TextureFormat::Rgba32Float);
    let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("refused copy") });
    let err = capture.request(&mut enc, &wide.color, (8, 8)).expect_err("Rgba32Float is not a screenshot format");
    assert!(err.to_string().contains("Rgba32Float"), "{err}");

    // Into a folder that cannot be made (a file is in the way): an error naming it, and no file.
    let blocker = dir.join("not-a-folder");
    std::fs::write(&blocker, b"x").unwrap();
    let mut bad = Capture::new(&ctx.device, blocker.join("captures"));
    let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bad copy") });
    bad.request(&mut enc, &target.color, SIZE).expect("record the copy");
    ctx.queue.submit([enc.finish()]);
    bad.after_submit();
    let err = wait_for(&ctx, &mut bad).expect_err("writing under a file must fail").to_string();
    assert!(err.contains("not-a-folder"), "the message names the path: {err}");
    assert!(!blocker.join("captures").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unwritable_folders_fail_with_a_message_and_leave_no_file() {
    use std::os::unix::fs::PermissionsExt as _;
    let img = image::Rgba32FImage::from_fn(8, 4, |x, y| image::Rgba([x as f32 / 8.0, y as f32 / 4.0, 2.5, 1.0]));
    let dir = scratch("unwritable");

    // A read-only folder. Root ignores the mode bits, so when a probe can still write there, /proc (a
    // file system that refuses new files, even to root) stands in for it.
    let read_only = dir.join("read-only");
    std::fs::create_dir(&read_only).unwrap();
    std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o555)).unwrap();
    let read_only = if std::fs::write(read_only.join("probe"), b"x").is_ok() {
        let _ = std::fs::remove_file(read_only.join("probe"));
        PathBuf::from("/proc")
    } else {
        read_only
    };
    // A missing folder that cannot be made: below a regular file.
    let blocker = dir.join("not-a-folder");
    std::fs::write(&blocker, b"x").unwrap();
    let missing = blocker.join("missing");

    for folder in [&read_only, &missing] {
        let path = folder.join(format!("waterview-hdr-test-{}.exr", std::process::id()));
        let err = save_exr_blocking(&img, &path).expect_err("writing there must fail").to_string();
        eprintln!("{}: {err}", folder.display());
        assert!(err.contains(&folder.display().to_string()), "the message names the file or folder: {err}");
        assert!(err.starts_with("cannot "), "a message that says what failed: {err}");
        assert!(nothing_at(&path), "a file was left at {}", path.display());
    }
    // Only the blocker is left beside the (empty) read-only folder.
    let _ = std::fs::set_permissions(dir.join("read-only"), std::fs::Permissions::from_mode(0o755));
    assert!(std::fs::read_dir(dir.join("read-only")).unwrap().next().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}
