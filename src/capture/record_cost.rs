//! `waterview capture --record-cost`: what live recording costs the frame rate. The same frames
//! (simulation frame, scene render, statistics, at most two frames in flight as with a vsync'd surface)
//! are rendered with and without the recording path (copy into the staging ring, read-back, H.264
//! encoding on the worker thread), recording at most `fps` frames per second of wall time exactly as the
//! window's live recording does ([`measure_record_cost`]).

use super::offline::format_for;
use super::recorder::VideoRecorder;
use super::CaptureError;
use crate::engine::{self, batch, BuildOptions, Engine};
use crate::gpu::{GpuContext, Profiler};
use crate::render::{Offscreen, Renderer};
use crate::scene::Scene;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
        let steps = self.engine.sim().frame_steps();
        self.engine.sim_mut().encode_frame(&mut enc, &self.profiler, steps);
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
