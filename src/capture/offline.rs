//! Offline (fixed-step) video capture without a window: `waterview capture --scene FILE --seconds T --fps F
//! --size WxH --out video.mp4`, and/or the particles of every frame as PLY or VTU files (`--particles DIR
//! [--particle-format ply|vtu]`, [`super::particles`]; without `--out` nothing is rendered). Every frame
//! advances the simulation by exactly `1/fps` simulated seconds ([`crate::sim::Simulation::advance_to`]: the
//! GPU's CFL steps are clamped so the last one lands on the frame's end) and is rendered off-screen at the
//! chosen size, however long that takes; frame k shows the state at simulated time k / fps. Frames go
//! through the same [`VideoRecorder`] ring and encoder thread as in the window; the loop waits when every
//! staging buffer is busy, and for the 32-byte step state that `advance_to` reads back once or twice per
//! frame (batch work; the window's "Render video" lands on the same frame ends without blocking, reading
//! the step state asynchronously: [`super::exact`]). The output's kind follows its extension: `.mp4` is
//! H.264 in MP4, anything else a folder of numbered PNGs. What live recording costs the frame rate is
//! measured by [`super::record_cost`].

use super::output::Output;
use super::particles::{ExportOutputs, ParticleExporter, ParticleOutput, ParticleSummary, SurfaceOutput};
use super::recorder::VideoRecorder;
use super::video::{VideoFormat, VideoSummary};
use super::CaptureError;
use crate::engine::{self, batch, BuildOptions, Engine};
use crate::gpu::{GpuContext, Profiler};
use crate::render::{Offscreen, Renderer};
use crate::scene::Scene;
use crate::sim::SimParams;
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
    /// Video: a file (`.mp4`) or folder (PNG sequence); `None`: no video (nothing is rendered).
    pub out: Option<PathBuf>,
    /// Particle files of every frame (a new folder); `None`: none.
    pub particles: Option<ParticleOutput>,
    /// Surface meshes of every frame (a new folder); `None`: none.
    pub surface: Option<SurfaceOutput>,
    /// Particle spacing override, metres (default: the scene's, scaled on a CPU adapter).
    pub dx: Option<f32>,
    /// What the frames show (the final image by default, or an intermediate target) and the depth filter.
    pub image: crate::engine::batch::ImageOptions,
}

impl OfflineOptions {
    /// The particle files and surface meshes asked for.
    pub fn frame_outputs(&self) -> ExportOutputs {
        ExportOutputs { particles: self.particles.clone(), surface: self.surface.clone() }
    }
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
pub fn validate(opts: &OfflineOptions) -> Result<(), CaptureError> {
    if !(opts.seconds.is_finite() && opts.seconds > 0.0 && opts.seconds <= 86_400.0) {
        return Err(CaptureError::Seconds(opts.seconds));
    }
    if !(opts.fps.is_finite() && (2.0..=240.0).contains(&opts.fps)) {
        return Err(CaptureError::Fps(opts.fps));
    }
    if opts.size.0 < 16 || opts.size.1 < 16 {
        return Err(CaptureError::Size { width: opts.size.0, height: opts.size.1 });
    }
    if opts.out.is_none() && !opts.frame_outputs().any() {
        return Err(CaptureError::NoOutput);
    }
    if let Some(s) = &opts.surface {
        s.settings.check_values().map_err(|cause| CaptureError::Surface { frame: 0, cause })?;
    }
    Ok(())
}

/// One video frame of an offline capture, as reported to [`capture_scene_frames`]'s callback.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaptureFrame {
    /// Index k of the frame, from 0.
    pub index: u64,
    /// Simulated time of the state the frame shows, seconds, as read back from the GPU: k / fps (as f32).
    pub sim_time: f32,
    /// Frames the encoder has written so far.
    pub written: u64,
    /// Frames in the whole capture.
    pub total: u64,
}

/// What an offline capture produced.
#[derive(Clone, Debug)]
pub struct CaptureReport {
    /// The video's file or folder, when one was asked for.
    pub video: Option<VideoSummary>,
    /// The particle files, when asked for.
    pub particles: Option<ParticleSummary>,
    /// Simulated time at the end, seconds, as read back from the GPU: frames / fps (the state after the
    /// last frame's 1/fps).
    pub sim_time: f32,
    /// Simulation steps that advanced the time.
    pub steps: u64,
    /// Simulation steps recorded in all (those beyond `steps` were no-ops past a frame's end).
    pub steps_recorded: u64,
    /// Blocking reads of the step state (one per submission of [`crate::sim::Simulation::advance_to`]).
    pub submissions: u64,
}

/// Runs a video capture on `ctx`; `progress(frames written, total)` is called after every frame.
/// Errors: bad options (no video among them), a scene that cannot be simulated, an output that cannot be
/// written (the message names the path; nothing is left under the final name).
pub fn capture_scene(
    ctx: &GpuContext,
    scene: &Scene,
    opts: &OfflineOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<VideoSummary, CaptureError> {
    if opts.out.is_none() {
        return Err(CaptureError::NoOutput);
    }
    let total = frame_count(opts.seconds, opts.fps);
    let report = capture_scene_frames(ctx, scene, opts, |f| progress(f.written, f.total))?;
    let video = report.video.ok_or(CaptureError::NoOutput)?;
    progress(video.frames, total);
    Ok(video)
}

/// The engine an offline capture runs: the scene (with its inflows and outflows), at `dx` if given, with
/// `frame_dt = 1 / fps`.
fn capture_engine(ctx: &GpuContext, scene: &Scene, dx: Option<f32>, fps: f32) -> Result<Engine, CaptureError> {
    let mut engine = Engine::new(ctx, scene.clone(), BuildOptions { dx, ..BuildOptions::default() })?;
    let params = SimParams { frame_dt: 1.0 / fps, ..engine.params().clone() };
    engine.set_params(ctx, &params)?;
    Ok(engine)
}

/// [`capture_scene`] reporting every frame as it is recorded (`on_frame`, with the simulated time the frame
/// shows) and returning the simulation's totals as well as the outputs': the video (when `opts.out`) and
/// the particle files of every frame (when `opts.particles`; file k holds the state at k / fps).
pub fn capture_scene_frames(
    ctx: &GpuContext,
    scene: &Scene,
    opts: &OfflineOptions,
    mut on_frame: impl FnMut(&CaptureFrame),
) -> Result<CaptureReport, CaptureError> {
    validate(opts)?;
    let mut engine = capture_engine(ctx, scene, opts.dx, opts.fps)?;
    if let Some(s) = &opts.surface {
        // The memory a frame's surface will take, before the first frame (the emitters' pool included).
        let particles = engine.sim().capacity() as usize;
        s.settings.check(particles).map_err(|cause| CaptureError::Surface { frame: 0, cause })?;
    }
    let mut profiler = Profiler::new(&ctx.device);
    let mut video = match &opts.out {
        Some(out) => {
            let target = Offscreen::new(ctx, opts.size);
            let mut renderer = Renderer::new(ctx, target.format(), engine.terrain());
            renderer.set_obstacles(ctx, &engine.obstacle_meshes());
            renderer.set_walls(ctx, &engine.wall_meshes());
            let (camera, settings) = batch::scene_view(&engine);
            let settings = opts.image.apply(settings);
            let rec = VideoRecorder::start(&ctx.device, out, format_for(out), opts.fps, target.size, target.format())?;
            Some(VideoRig { rec, target, renderer, camera, settings })
        }
        None => None,
    };
    let outputs = opts.frame_outputs();
    let mut particles = match outputs.any() {
        true => match ParticleExporter::start(outputs) {
            Ok(e) => Some(e),
            Err(e) => {
                if let Some(v) = video {
                    v.rec.cancel();
                }
                return Err(e);
            }
        },
        false => None,
    };
    let result = capture_loop(ctx, &mut engine, &mut profiler, opts, video.as_mut(), particles.as_mut(), &mut on_frame);
    let (sim_time, steps, steps_recorded, submissions) = match result {
        Ok(totals) => totals,
        Err(e) => {
            if let Some(v) = video {
                v.rec.cancel();
            }
            if let Some(p) = particles {
                p.cancel();
            }
            return Err(e);
        }
    };
    let particles = match particles {
        Some(p) => Some(p.finish_blocking(&ctx.device).inspect_err(|_| {
            if let Some(v) = video.take() {
                v.rec.cancel();
            }
        })?),
        None => None,
    };
    let video = match video {
        Some(v) => Some(v.rec.finish_blocking(&ctx.device)?),
        None => None,
    };
    Ok(CaptureReport { video, particles, sim_time, steps, steps_recorded, submissions })
}

/// What the video of an offline capture is drawn with.
struct VideoRig {
    rec: VideoRecorder,
    target: Offscreen,
    renderer: Renderer,
    camera: crate::render::OrbitCamera,
    settings: crate::render::RenderSettings,
}

/// The frames of [`capture_scene_frames`]: returns (simulated time at the end, steps, steps recorded,
/// step-state reads). Errors leave the outputs to the caller to cancel.
fn capture_loop(
    ctx: &GpuContext,
    engine: &mut Engine,
    profiler: &mut Profiler,
    opts: &OfflineOptions,
    mut video: Option<&mut VideoRig>,
    mut particles: Option<&mut ParticleExporter>,
    on_frame: &mut impl FnMut(&CaptureFrame),
) -> Result<(f32, u64, u64, u64), CaptureError> {
    let mut sim_time = engine.sim().step_state_blocking(ctx)?.time;
    let (mut steps, mut steps_recorded, mut submissions) = (0u64, 0u64, 0u64);
    let total = frame_count(opts.seconds, opts.fps);
    for k in 0..total {
        // Wait (for the GPU copies, the encoder or the particle writer) only when every staging buffer is busy.
        let ready = |v: &Option<&mut VideoRig>, p: &Option<&mut ParticleExporter>| {
            v.as_ref().is_none_or(|v| v.rec.can_record()) && p.as_ref().is_none_or(|p| p.can_record(engine.sim()))
        };
        while !ready(&video, &particles) {
            let timeout = Some(Duration::from_millis(50));
            let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout });
            poll_outputs(&mut video, &mut particles)?;
            if !ready(&video, &particles) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let mut enc =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("offline capture frame") });
        if let Some(v) = video.as_deref_mut() {
            if engine.has_bodies() {
                v.renderer.set_obstacles(ctx, &engine.obstacle_meshes());
            }
            let p = engine.particles();
            v.renderer.encode(ctx, &mut enc, profiler, &v.target, &v.camera, Some(p), &v.settings);
            v.rec.record(&mut enc, &v.target.color, k as f64 / opts.fps as f64);
        }
        if let Some(p) = particles.as_deref_mut() {
            p.record(&mut enc, &ctx.device, engine.sim(), k);
        }
        engine.sim_mut().encode_stats(&mut enc, profiler);
        profiler.resolve(&mut enc);
        ctx.queue.submit([enc.finish()]);
        if let Some(v) = video.as_deref_mut() {
            v.rec.after_submit();
        }
        if let Some(p) = particles.as_deref_mut() {
            p.after_submit();
        }
        engine.sim_mut().after_submit();
        profiler.end_frame(&ctx.queue);
        // Then exactly one frame of simulated time (blocking on the GPU's step state).
        let t_next = ((k + 1) as f64 / opts.fps as f64) as f32;
        let shown = sim_time;
        let a = engine.sim_mut().advance_to(ctx, profiler, t_next)?;
        steps += a.steps as u64;
        steps_recorded += a.steps_recorded as u64;
        submissions += a.submissions as u64;
        sim_time = a.time;
        // An error the device reported (outside any scope) spoils this frame and the rest.
        ctx.check(&format!("frame {k} of the capture")).map_err(CaptureError::Gpu)?;
        let _ = ctx.device.poll(wgpu::PollType::Poll);
        poll_outputs(&mut video, &mut particles)?;
        let _ = engine.sim_mut().poll_stats();
        if let Some(blow_up) = engine.sim().blow_up() {
            return Err(CaptureError::BlowUp(blow_up.clone()));
        }
        let written = match (&video, &particles) {
            (Some(v), _) => v.rec.written(),
            (None, Some(p)) => p.written(),
            (None, None) => 0,
        };
        on_frame(&CaptureFrame { index: k, sim_time: shown, written, total });
    }
    // The last frames' statistics, still on their way.
    while engine.sim().stats_in_flight() {
        let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
        let _ = engine.sim_mut().poll_stats();
    }
    if let Some(blow_up) = engine.sim().blow_up() {
        return Err(CaptureError::BlowUp(blow_up.clone()));
    }
    Ok((sim_time, steps, steps_recorded, submissions))
}

/// Takes what came back for the outputs; the first failure ends the capture.
fn poll_outputs(
    video: &mut Option<&mut VideoRig>,
    particles: &mut Option<&mut ParticleExporter>,
) -> Result<(), CaptureError> {
    if let Some(e) = video.as_deref_mut().and_then(|v| v.rec.poll()) {
        return Err(e);
    }
    if let Some(e) = particles.as_deref_mut().and_then(|p| p.poll()) {
        return Err(e);
    }
    Ok(())
}

/// Prints what an export wrote: per output, its files, megabytes, times and counts.
fn print_summary(p: &ParticleSummary) {
    let (first, last) = (p.frames.first().map_or(0.0, |f| f.time), p.frames.last().map_or(0.0, |f| f.time));
    if let Some(out) = &p.outputs.particles {
        let bytes: u64 = p.frames.iter().filter_map(|f| f.particle_file.as_ref()).map(|f| f.bytes).sum();
        eprintln!(
            "wrote {}: {} particle files, {:.1} MB, t = {first} .. {last} s, {} .. {} particles",
            out.dir.display(),
            p.frames.len(),
            bytes as f64 / 1e6,
            p.frames.iter().map(|f| f.particles).min().unwrap_or(0),
            p.frames.iter().map(|f| f.particles).max().unwrap_or(0),
        );
    }
    if let Some(out) = &p.outputs.surface {
        let surfaces: Vec<_> = p.frames.iter().filter_map(|f| f.surface.as_ref()).collect();
        let seconds: Vec<f64> = surfaces.iter().map(|s| s.seconds).collect();
        eprintln!(
            "wrote {}: {} surface meshes, {:.1} MB, t = {first} .. {last} s, {} .. {} triangles, \
             reconstruction {:.3} s per frame (mean; {:.3} s at most)",
            out.dir.display(),
            surfaces.len(),
            surfaces.iter().map(|s| s.file.bytes).sum::<u64>() as f64 / 1e6,
            surfaces.iter().map(|s| s.triangles).min().unwrap_or(0),
            surfaces.iter().map(|s| s.triangles).max().unwrap_or(0),
            seconds.iter().sum::<f64>() / seconds.len().max(1) as f64,
            seconds.iter().copied().fold(0.0, f64::max),
        );
    }
}

/// `waterview capture`: loads the scene (the built-in valley without `--scene`), opens a headless GPU and
/// captures with a terminal progress bar.
pub fn run_cli(scene_path: Option<&Path>, opts: &OfflineOptions) -> anyhow::Result<()> {
    validate(opts)?;
    if let Some(out) = &opts.out {
        let what = if format_for(out) == VideoFormat::Mp4 { Output::File } else { Output::NewFolder };
        super::output::check_writable(out, what)?;
    }
    for dir in opts.frame_outputs().dirs() {
        super::output::check_writable(dir, Output::NewFolder)?;
    }
    let scene = engine::load_scene(scene_path)?;
    let ctx = GpuContext::headless()?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let total = frame_count(opts.seconds, opts.fps);
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} frames, {per_sec}, ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = std::time::Instant::now();
    let result = capture_scene_frames(&ctx, &scene, opts, |f| bar.set_position(f.written));
    bar.finish_and_clear();
    let report = result?;
    let wall = started.elapsed().as_secs_f64();
    if let Some(summary) = &report.video {
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
    }
    if let Some(p) = &report.particles {
        print_summary(p);
    }
    eprintln!(
        "simulated {:.6} s: {} steps ({} recorded, the rest no-ops past a frame's end), {} step-state reads",
        report.sim_time, report.steps, report.steps_recorded, report.submissions
    );
    Ok(())
}
