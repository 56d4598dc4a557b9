//! Offline (fixed-step) video capture without a window: `waterview capture --scene FILE --seconds T --fps F
//! --size WxH --out video.mp4`, and/or the particles of every frame as PLY or VTU files (`--particles DIR
//! [--particle-format ply|vtu]`, [`super::particles`]; without `--out` nothing is rendered). Every video frame advances the simulation by exactly `1/fps` simulated
//! seconds ([`crate::sim::Simulation::advance_to`]: the GPU's CFL steps are clamped so the last one lands on the frame's
//! end) and is rendered off-screen at the chosen size, however long that takes; frame k shows the state at
//! simulated time k / fps. Frames go through the same [`VideoRecorder`] ring and encoder thread as in the
//! window; the loop waits when every staging buffer is busy, and for the 32-byte step state that
//! `advance_to` reads back once or twice per frame (batch work; the window's "Render video" lands on the
//! same frame ends without blocking, reading the step state asynchronously: [`super::exact`]). The output's
//! kind follows its extension: `.mp4` is H.264 in MP4, anything else a folder of numbered PNGs.
//!
//! [`measure_record_cost`] (`waterview capture --record-cost`) measures what live recording costs the
//! frame rate: the same frames (simulation frame, scene render, statistics, at most two frames in flight as
//! with a vsync'd surface) rendered with and without the recording path (copy into the staging ring,
//! read-back, H.264 encoding on the worker thread), recording at most `fps` frames per second of wall time
//! exactly as the window's live recording does.

use super::output::Output;
use super::particles::{ParticleExporter, ParticleOutput, ParticleSummary};
use super::recorder::VideoRecorder;
use super::video::{VideoFormat, VideoSummary};
use super::CaptureError;
use crate::engine::{self, batch, BuildOptions, Engine};
use crate::gpu::{GpuContext, Profiler};
use crate::render::{Offscreen, Renderer};
use crate::scene::Scene;
use crate::sim::SimParams;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    /// Particle spacing override, metres (default: the scene's, scaled on a CPU adapter).
    pub dx: Option<f32>,
    /// What the frames show (the final image by default, or an intermediate target) and the depth filter.
    pub image: crate::engine::batch::ImageOptions,
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
    if opts.out.is_none() && opts.particles.is_none() {
        return Err(CaptureError::NoOutput);
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
    let mut profiler = Profiler::new(&ctx.device);
    let mut video = match &opts.out {
        Some(out) => {
            let target = Offscreen::new(ctx, opts.size);
            let renderer = Renderer::new(ctx, target.format(), engine.terrain());
            let (camera, settings) = batch::scene_view(&engine);
            let settings = opts.image.apply(settings);
            let rec = VideoRecorder::start(&ctx.device, out, format_for(out), opts.fps, target.size, target.format())?;
            Some(VideoRig { rec, target, renderer, camera, settings })
        }
        None => None,
    };
    let mut particles = match &opts.particles {
        Some(p) => match ParticleExporter::start(p.clone()) {
            Ok(e) => Some(e),
            Err(e) => {
                if let Some(v) = video {
                    v.rec.cancel();
                }
                return Err(e);
            }
        },
        None => None,
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

/// Options of [`measure_record_cost`].
#[derive(Clone, Debug)]
pub struct RecordCostOptions {
    /// Timed frames per run.
    pub frames: u32,
    /// Untimed frames before each run.
    pub warmup: u32,
    /// Runs of each kind, alternating (without, with, without, ...), so a drift in the machine's load
    /// hits both; the figures are medians over the runs.
    pub rounds: u32,
    /// Render size, pixels (the window's size while recording).
    pub size: (u32, u32),
    /// Most video frames recorded per second of wall time, as the window's live recording.
    pub fps: f32,
    /// Particle spacing override, metres.
    pub dx: Option<f32>,
    /// Where the measurement's video goes (deleted afterwards); `None`: a file in the temporary folder.
    pub out: Option<PathBuf>,
}

/// Result of [`measure_record_cost`]: per-frame costs without and with recording, medians over the runs.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordCost {
    /// Wall time per frame without recording, milliseconds.
    pub plain_ms: f64,
    /// Wall time per frame while recording, milliseconds.
    pub recording_ms: f64,
    /// CPU time of the whole process (all threads: the driver's, the encoder's) per frame without
    /// recording, milliseconds; Linux only. On a CPU adapter (lavapipe) this is the work itself, and far
    /// less disturbed than the wall time by other programs on the machine.
    pub plain_cpu_ms: Option<f64>,
    /// The same while recording.
    pub recording_cpu_ms: Option<f64>,
    /// Particles simulated.
    pub particles: u32,
    /// Timed frames per run.
    pub frames: u32,
    /// Runs of each kind.
    pub rounds: u32,
    /// Video frames recorded (warm-up frames included).
    pub recorded: u64,
    /// Video frames skipped because the staging ring or the encoder was full.
    pub dropped: u64,
    /// Frames the encoder had written when the timed frames ended.
    pub written: u64,
}

impl RecordCost {
    /// Frame rate lost to recording, percent: 100 (1 - plain_ms / recording_ms) (negative: within noise).
    pub fn cost_percent(&self) -> f64 {
        100.0 * (1.0 - self.plain_ms / self.recording_ms.max(1e-12))
    }

    /// The same from the CPU time: 100 (1 - plain_cpu_ms / recording_cpu_ms), Linux only.
    pub fn cpu_cost_percent(&self) -> Option<f64> {
        Some(100.0 * (1.0 - self.plain_cpu_ms? / self.recording_cpu_ms?.max(1e-12)))
    }
}

/// The median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

/// What one frame of the cost measurement draws: the simulation, the scene render, statistics.
struct CostRig {
    engine: Engine,
    renderer: Renderer,
    target: Offscreen,
    camera: crate::render::OrbitCamera,
    settings: crate::render::RenderSettings,
    profiler: Profiler,
}

/// A live recording during the cost measurement: the recorder, when it started and when it last recorded.
struct LiveRecording {
    rec: VideoRecorder,
    started: Instant,
    last: Option<Instant>,
    fps: f32,
}

impl CostRig {
    /// Records and submits one frame (as the window: simulation frame, scene, live-recording copy when
    /// one is due, statistics).
    fn frame(&mut self, ctx: &GpuContext, live: Option<&mut LiveRecording>) -> wgpu::SubmissionIndex {
        let mut enc =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("record cost frame") });
        self.engine.sim_mut().encode_frame(&mut enc, &self.profiler);
        let particles = self.engine.particles();
        let t = &self.target;
        self.renderer.encode(ctx, &mut enc, &self.profiler, t, &self.camera, Some(particles), &self.settings);
        let mut live = live;
        if let Some(l) = live.as_deref_mut() {
            // As the window's live recording: at most fps frames a second, time-stamped by the wall clock.
            let now = Instant::now();
            let due = l.last.is_none_or(|t| now - t >= Duration::from_secs_f64(0.98 / l.fps as f64));
            if due && l.rec.record(&mut enc, &self.target.color, l.started.elapsed().as_secs_f64()) {
                l.last = Some(now);
            }
        }
        self.engine.sim_mut().encode_stats(&mut enc, &self.profiler);
        self.profiler.resolve(&mut enc);
        let index = ctx.queue.submit([enc.finish()]);
        self.engine.sim_mut().after_submit();
        if let Some(l) = live {
            l.rec.after_submit();
        }
        self.profiler.end_frame(&ctx.queue);
        index
    }

    /// Runs `n` frames with at most two in flight (as a surface with a frame latency of 2), taking
    /// statistics and recorded frames as they come back. Errors: the video worker failed.
    fn run(&mut self, ctx: &GpuContext, n: u32, mut live: Option<&mut LiveRecording>) -> Result<(), CaptureError> {
        let mut in_flight = std::collections::VecDeque::new();
        for _ in 0..n {
            in_flight.push_back(self.frame(ctx, live.as_deref_mut()));
            if in_flight.len() > 2 {
                let index = in_flight.pop_front();
                let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: index, timeout: None });
            } else {
                let _ = ctx.device.poll(wgpu::PollType::Poll);
            }
            let _ = self.engine.sim_mut().poll_stats();
            if let Some(e) = live.as_deref_mut().and_then(|l| l.rec.poll()) {
                return Err(e);
            }
        }
        let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
        let _ = self.engine.sim_mut().poll_stats();
        Ok(())
    }
}

/// Measures the frame-rate cost of live recording: see the module docs. Renders `frames` timed frames at
/// `size` without and with recording (each after `warmup` untimed ones, from the scene's initial state),
/// `rounds` times alternately.
/// Errors: a scene that cannot be simulated, or a video that cannot be written.
pub fn measure_record_cost(
    ctx: &GpuContext,
    scene: &Scene,
    opts: &RecordCostOptions,
) -> Result<RecordCost, CaptureError> {
    if opts.frames == 0 || opts.rounds == 0 {
        return Err(CaptureError::NoRuns);
    }
    if !(opts.fps.is_finite() && (2.0..=240.0).contains(&opts.fps)) {
        return Err(CaptureError::Fps(opts.fps));
    }
    let engine = Engine::new(ctx, scene.clone(), BuildOptions { dx: opts.dx, ..BuildOptions::default() })?;
    let target = Offscreen::new(ctx, opts.size);
    let renderer = Renderer::new(ctx, target.format(), engine.terrain());
    let (camera, settings) = batch::scene_view(&engine);
    let mut rig = CostRig { engine, renderer, target, camera, settings, profiler: Profiler::new(&ctx.device) };
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("waterview-record-cost-{}.mp4", std::process::id())));
    // Per run: (wall ms per frame, CPU ms per frame), without and with recording.
    let mut runs: [Vec<(f64, Option<f64>)>; 2] = [Vec::new(), Vec::new()];
    let (mut recorded, mut dropped, mut written) = (0, 0, 0);
    for round in 0..opts.rounds {
        for recording in [false, true] {
            rig.engine.reset(ctx);
            let mut live = match recording {
                true => {
                    let t = &rig.target;
                    let rec = VideoRecorder::start(&ctx.device, &out, format_for(&out), opts.fps, t.size, t.format())?;
                    Some(LiveRecording { rec, started: Instant::now(), last: None, fps: opts.fps })
                }
                false => None,
            };
            let timed = rig.run(ctx, opts.warmup, live.as_mut()).and_then(|()| {
                let (t0, cpu0) = (Instant::now(), crate::process::cpu_ms());
                rig.run(ctx, opts.frames, live.as_mut())?;
                let n = opts.frames as f64;
                let cpu = crate::process::cpu_ms().zip(cpu0).map(|(c1, c0)| (c1 - c0) / n);
                Ok((t0.elapsed().as_secs_f64() * 1e3 / n, cpu))
            });
            let (ms, cpu) = match timed {
                Ok(t) => t,
                Err(e) => {
                    if let Some(l) = live {
                        l.rec.cancel();
                    }
                    return Err(e);
                }
            };
            if let Some(l) = live {
                recorded += l.rec.recorded;
                dropped += l.rec.dropped;
                written += l.rec.written();
                l.rec.finish_blocking(&ctx.device)?;
                let _ = std::fs::remove_file(&out);
                let _ = std::fs::remove_dir_all(&out);
            }
            runs[recording as usize].push((ms, cpu));
            let kind = if recording { "with recording" } else { "without recording" };
            let cpu = cpu.map(|c| format!(", CPU {c:.1} ms/frame")).unwrap_or_default();
            log::info!("record cost, run {} {kind}: {ms:.1} ms/frame{cpu}", round + 1);
        }
    }
    let wall = |k: usize| median(runs[k].iter().map(|r| r.0).collect());
    let cpu = |k: usize| runs[k].iter().map(|r| r.1).collect::<Option<Vec<f64>>>().map(median);
    Ok(RecordCost {
        plain_ms: wall(0),
        recording_ms: wall(1),
        plain_cpu_ms: cpu(0),
        recording_cpu_ms: cpu(1),
        particles: rig.engine.live_particles(),
        frames: opts.frames,
        rounds: opts.rounds,
        recorded,
        dropped,
        written,
    })
}

/// `waterview capture --record-cost`: opens a headless GPU and prints [`measure_record_cost`]'s figures.
pub fn record_cost_cli(scene_path: Option<&Path>, opts: &RecordCostOptions) -> anyhow::Result<()> {
    let scene = engine::load_scene(scene_path)?;
    let ctx = GpuContext::headless()?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let c = measure_record_cost(&ctx, &scene, opts)?;
    println!(
        "scene `{}`, {} particles, at {}x{}: {} runs each way of {} frames (after {} warm-up frames), alternating; \
         recording at most {} fps; medians over the runs",
        crate::text::printable(&scene.name),
        c.particles,
        opts.size.0,
        opts.size.1,
        c.rounds,
        c.frames,
        opts.warmup,
        opts.fps
    );
    let cpu = |v: Option<f64>| v.map(|v| format!(", CPU {v:9.2} ms/frame")).unwrap_or_default();
    println!(
        "  without recording: {:9.2} ms/frame ({:6.2} fps){}",
        c.plain_ms,
        1e3 / c.plain_ms.max(1e-9),
        cpu(c.plain_cpu_ms)
    );
    println!(
        "  with recording:    {:9.2} ms/frame ({:6.2} fps){}",
        c.recording_ms,
        1e3 / c.recording_ms.max(1e-9),
        cpu(c.recording_cpu_ms)
    );
    println!(
        "  video frames recorded {}, dropped {}, written by the end of the timed frames {}",
        c.recorded, c.dropped, c.written
    );
    match c.cpu_cost_percent() {
        Some(p) => {
            println!("  recording costs {:.1} % of the frame rate (wall clock), {p:.1} % in CPU time", c.cost_percent())
        }
        None => println!("  recording costs {:.1} % of the frame rate (wall clock)", c.cost_percent()),
    }
    Ok(())
}

/// `waterview capture`: loads the scene (the built-in valley without `--scene`), opens a headless GPU and
/// captures with a terminal progress bar.
pub fn run_cli(scene_path: Option<&Path>, opts: &OfflineOptions) -> anyhow::Result<()> {
    validate(opts)?;
    if let Some(out) = &opts.out {
        let what = if format_for(out) == VideoFormat::Mp4 { Output::File } else { Output::NewFolder };
        super::output::check_writable(out, what)?;
    }
    if let Some(p) = &opts.particles {
        super::output::check_writable(&p.dir, Output::NewFolder)?;
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
        let bytes: u64 = p.frames.iter().map(|f| f.bytes).sum();
        let (first, last) = (p.frames.first(), p.frames.last());
        eprintln!(
            "wrote {}: {} particle files, {:.1} MB, t = {} .. {} s, {} .. {} particles",
            p.dir.display(),
            p.frames.len(),
            bytes as f64 / 1e6,
            first.map_or(0.0, |f| f.time),
            last.map_or(0.0, |f| f.time),
            p.frames.iter().map(|f| f.particles).min().unwrap_or(0),
            p.frames.iter().map(|f| f.particles).max().unwrap_or(0),
        );
    }
    eprintln!(
        "simulated {:.6} s: {} steps ({} recorded, the rest no-ops past a frame's end), {} step-state reads",
        report.sim_time, report.steps, report.steps_recorded, report.submissions
    );
    Ok(())
}
