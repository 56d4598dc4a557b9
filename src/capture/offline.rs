//! Offline (fixed-step) video capture without a window: `waterview capture --scene FILE --seconds T --fps F
//! --size WxH --out video.mp4`. Every video frame advances the simulation by one frame of `frame_dt = 1/fps`
//! simulated seconds (the CFL condition may shorten a substep, see `SimParams::frame_dt`) and is rendered
//! off-screen at the chosen size, however long that takes; frame k shows the state after k frames
//! (time k / fps). Frames go through the same [`VideoRecorder`] ring and encoder thread as in the window; the
//! loop only waits when every staging buffer is busy. The output's kind follows its extension: `.mp4` is
//! H.264 in MP4, anything else a folder of numbered PNGs.

use super::recorder::VideoRecorder;
use super::video::{VideoFormat, VideoSummary};
use crate::gpu::{GpuContext, Profiler};
use crate::render::{OrbitCamera, Offscreen, ParticleSource, RenderSettings, Renderer};
use crate::scene::Scene;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What to capture.
#[derive(Clone, Debug)]
pub struct OfflineOptions {
    /// Simulated seconds to record (> 0).
    pub seconds: f32,
    /// Video frames per simulated second (2 ..= 240: frame_dt = 1 / fps must stay <= 0.5 s).
    pub fps: f32,
    /// Video size, pixels (MP4 crops odd sizes by one pixel).
    pub size: (u32, u32),
    /// Output file (`.mp4`) or folder (PNG sequence).
    pub out: PathBuf,
    /// Particle spacing override, metres (default: the scene's, scaled on a CPU adapter).
    pub dx: Option<f32>,
}

/// MP4 for a `.mp4` extension (any case), else a PNG sequence.
pub fn format_for(path: &Path) -> VideoFormat {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("mp4") => VideoFormat::Mp4,
        _ => VideoFormat::PngSequence,
    }
}

/// Number of video frames for `seconds` at `fps` (at least 1).
pub fn frame_count(seconds: f32, fps: f32) -> u64 {
    ((seconds as f64 * fps as f64).round() as u64).max(1)
}

/// Checks the options; the message names the bad value.
pub fn validate(opts: &OfflineOptions) -> Result<(), String> {
    if !(opts.seconds.is_finite() && opts.seconds > 0.0 && opts.seconds <= 86_400.0) {
        return Err(format!("--seconds must be in (0, 86400], got {}", opts.seconds));
    }
    if !(opts.fps.is_finite() && (2.0..=240.0).contains(&opts.fps)) {
        return Err(format!("--fps must be in 2 ..= 240, got {}", opts.fps));
    }
    if opts.size.0 < 16 || opts.size.1 < 16 {
        return Err(format!("--size must be at least 16x16, got {}x{}", opts.size.0, opts.size.1));
    }
    Ok(())
}

/// Runs the capture on `ctx`; `progress(frames written, total)` is called after every frame.
/// Errors: bad options, a scene that cannot be simulated, an output that cannot be written (the message
/// names the path; nothing is left under the final name).
pub fn capture_scene(
    ctx: &GpuContext,
    scene: &Scene,
    opts: &OfflineOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<VideoSummary, String> {
    validate(opts)?;
    let mut sim = crate::headless::build_simulation(ctx, scene, opts.dx).map_err(|e| format!("{e:#}"))?;
    let mut params = sim.params().clone();
    params.frame_dt = 1.0 / opts.fps;
    sim.set_params(ctx, &params).map_err(|e| e.to_string())?;
    if !scene.emitters.is_empty() || !scene.sinks.is_empty() {
        sim.set_sources(ctx, &scene.emitters, &scene.sinks).map_err(|e| e.to_string())?;
    }
    let target = Offscreen::new(ctx, opts.size);
    let mut renderer = Renderer::new(ctx, target.format(), sim.terrain());
    let camera = OrbitCamera::from_desc(&scene.camera);
    let mut settings = RenderSettings::default();
    settings.particle.radius = sim.particle_radius();
    let mut profiler = Profiler::new(&ctx.device);
    let mut recorder = VideoRecorder::start(&ctx.device, &opts.out, format_for(&opts.out), opts.fps, target.size, target.format())?;

    let total = frame_count(opts.seconds, opts.fps);
    for k in 0..total {
        // Wait (for the GPU copy or the encoder) only when every staging buffer is busy.
        while !recorder.can_record() {
            let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: Some(Duration::from_millis(50)) });
            if let Some(e) = recorder.poll() {
                recorder.cancel();
                return Err(e);
            }
            if !recorder.can_record() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("offline capture frame") });
        let particles = ParticleSource { positions: sim.positions(), velocities: sim.velocities(), count: sim.particle_count() };
        renderer.encode(ctx, &mut enc, &profiler, &target.color_view, &target.depth_view, target.size, &camera, Some(particles), &settings);
        recorder.record(&mut enc, &target.color, k as f64 / opts.fps as f64);
        sim.encode_frame(&mut enc, &profiler);
        profiler.resolve(&mut enc);
        ctx.queue.submit([enc.finish()]);
        sim.after_submit();
        recorder.after_submit();
        profiler.end_frame(&ctx.queue);
        let _ = ctx.device.poll(wgpu::PollType::Poll);
        if let Some(e) = recorder.poll() {
            recorder.cancel();
            return Err(e);
        }
        progress(recorder.written(), total);
    }
    let summary = recorder.finish_blocking(&ctx.device)?;
    progress(summary.frames, total);
    Ok(summary)
}

/// `waterview capture`: loads the scene (the built-in valley without `--scene`), opens a headless GPU and
/// captures with a terminal progress bar.
pub fn run_cli(scene_path: Option<PathBuf>, opts: &OfflineOptions) -> anyhow::Result<()> {
    validate(opts).map_err(anyhow::Error::msg)?;
    let scene = crate::headless::load_scene(scene_path.as_deref())?;
    let ctx = GpuContext::headless()?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let total = frame_count(opts.seconds, opts.fps);
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} frames, {per_sec}, ETA {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = std::time::Instant::now();
    let result = capture_scene(&ctx, &scene, opts, |done, _| bar.set_position(done));
    bar.finish_and_clear();
    let summary = result.map_err(anyhow::Error::msg)?;
    let wall = started.elapsed().as_secs_f64();
    eprintln!(
        "wrote {}: {} frames, {:.2} s of video at {} fps, {:.1} MB, in {:.1} s ({:.2} frames/s)",
        summary.path.display(),
        summary.frames,
        summary.duration_s,
        opts.fps,
        summary.bytes as f64 / 1e6,
        wall,
        summary.frames as f64 / wall.max(1e-9)
    );
    Ok(())
}
