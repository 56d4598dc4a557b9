//! The window's offline render ("Render video" in the Capture panel) without a window: the same state
//! machine the app drives once per frame ([`ExactFrames`]: `poll` after a non-blocking `device.poll`, then
//! `encode` into the frame's encoder with the scene render, the statistics, submit, `after_submit`),
//! driven here by a loop that behaves like the window's: it only ever polls (`PollType::Poll`) and keeps at
//! most two frames in flight, as a vsync'd surface does, never waiting for a read-back. Checks, on lavapipe
//! or the machine's GPU:
//! - every frame rendered shows exactly t0 + k / fps simulated seconds (within 1e-5 relative; the step
//!   state is also copied right where each frame is rendered and read afterwards, independently of the
//!   state machine's own read-back), from t = 0 and from a simulation already running;
//! - rounds of steps that fall short of a frame's end (forced with a small margin) are redone, still exact;
//! - the video holds every frame, and the window kept drawing frames while read-backs were on their way.

use waterview::capture::exact::{ExactFrame, ExactFrames, FrameOutputs};
use waterview::capture::offline::format_for;
use waterview::capture::VideoRecorder;
use waterview::engine::{BuildOptions, Engine};
use waterview::gpu::{GpuContext, Profiler};
use waterview::render::{Offscreen, OrbitCamera, RenderSettings, Renderer};
use waterview::scene::Scene;
use waterview::sim::gpu_data::StepState;
use waterview::sim::SimParams;

fn gpu() -> GpuContext {
    match GpuContext::headless() {
        Ok(ctx) => ctx,
        Err(e) => panic!("offline render tests need a GPU adapter: {e}"),
    }
}

/// Relative difference |a - b| / |b| (absolute for |b| < 1).
fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1.0)
}

/// The engine as the window's offline render runs it: the scene at a coarse spacing, frame_dt = 1/fps.
fn simulation(ctx: &GpuContext, scene: &Scene, fps: f32) -> Engine {
    let mut engine = Engine::new(ctx, scene.clone(), BuildOptions { dx: Some(0.08), ..BuildOptions::default() })
        .expect("simulation");
    let params = SimParams { frame_dt: 1.0 / fps, ..engine.params().clone() };
    engine.set_params(ctx, &params).expect("params");
    engine
}

/// What one offline render produced.
struct Run {
    frames: Vec<ExactFrame>,
    /// Simulated time of the step state copied where each frame was rendered (read afterwards).
    rendered_times: Vec<f32>,
    window_frames: u64,
    /// Window frames in which a step state was on its way back (the window drew, the render waited).
    waiting_frames: u64,
    steps_recorded: u64,
    redos: u64,
    start_time: f32,
    video_frames: u64,
    steps_taken: u32,
}

/// Drives an offline render of `total` frames like the window does (see the module docs).
fn render(
    ctx: &GpuContext,
    scene: &Scene,
    engine: &mut Engine,
    fps: f32,
    total: u64,
    margin: Option<(f32, u32)>,
    name: &str,
) -> Run {
    let dir = std::env::temp_dir().join(format!("waterview-offline-render-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.join("video.mp4");
    let target = Offscreen::new(ctx, (64, 48));
    let mut renderer = Renderer::new(ctx, target.format(), engine.terrain());
    let camera = OrbitCamera::from_desc(&scene.camera);
    let mut settings = RenderSettings::default();
    settings.particle.radius = engine.sim().particle_radius();
    let mut profiler = Profiler::new(&ctx.device);
    let mut recorder =
        VideoRecorder::start(&ctx.device, &out, format_for(&out), fps, target.size, target.format()).expect("recorder");
    let mut frames = match margin {
        Some((m, extra)) => ExactFrames::with_margin(&ctx.device, fps, total, m, extra),
        None => ExactFrames::new(&ctx.device, fps, total),
    };
    let steps_before = engine.sim().step_state_blocking(ctx).expect("step state").steps;
    // The step state as it is where each frame is rendered, copied in the same encoder.
    let step_bytes = std::mem::size_of::<StepState>() as u64;
    let checks = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test: step state per rendered frame"),
        size: total * step_bytes,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut delivered = Vec::new();
    let mut in_flight = std::collections::VecDeque::new();
    let (mut window_frames, mut waiting_frames) = (0u64, 0u64);
    while !frames.done() {
        window_frames += 1;
        assert!(window_frames < 20_000, "{name}: the render does not finish ({} of {total} frames)", frames.frame());
        // As the window: a non-blocking poll, then what came back.
        let _ = ctx.device.poll(wgpu::PollType::Poll);
        let _ = engine.sim_mut().poll_stats();
        frames.poll().unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(e) = recorder.poll() {
            panic!("{name}: recorder: {e}");
        }
        waiting_frames += frames.waiting() as u64;
        let mut enc =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("test window frame") });
        let rendered = frames
            .encode(ctx, &mut enc, engine, &profiler, outputs(&mut recorder, &target.color), |enc, engine| {
                let t = &target;
                renderer.encode(ctx, enc, &profiler, t, &camera, Some(engine.particles()), &settings);
                let k = delivered.len() as u64;
                enc.copy_buffer_to_buffer(engine.sim().step_state(), 0, &checks, k * step_bytes, step_bytes);
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(f) = rendered {
            delivered.push(f);
        }
        engine.sim_mut().encode_stats(&mut enc, &profiler);
        profiler.resolve(&mut enc);
        in_flight.push_back(ctx.queue.submit([enc.finish()]));
        engine.sim_mut().after_submit();
        recorder.after_submit();
        frames.after_submit();
        profiler.end_frame(&ctx.queue);
        // A vsync'd surface keeps at most two frames in flight: wait for the frame before last to finish
        // on the GPU (that is the present's wait, not a read-back).
        if in_flight.len() > 2 {
            let index = in_flight.pop_front();
            let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: index, timeout: None });
        }
    }
    let video = recorder.finish_blocking(&ctx.device).expect("finish video");
    let bytes = waterview::gpu::readback::read_buffer_blocking(ctx, &checks);
    let rendered_times =
        bytes.chunks_exact(step_bytes as usize).map(|c| bytemuck::pod_read_unaligned::<StepState>(c).time).collect();
    let steps_after = engine.sim().step_state_blocking(ctx).expect("step state").steps;
    let _ = std::fs::remove_dir_all(&dir);
    Run {
        frames: delivered,
        rendered_times,
        window_frames,
        waiting_frames,
        steps_recorded: frames.steps_recorded,
        redos: frames.redos,
        start_time: frames.start_time().expect("start time read back"),
        video_frames: video.frames,
        steps_taken: steps_after.wrapping_sub(steps_before),
    }
}

/// Asserts every frame of `run` shows t0 + k / fps (the f32 the GPU lands on, and within 1e-5 relative of
/// the exact value), both as the state machine read it and as copied where the frame was rendered.
fn check_exact(run: &Run, fps: f32, total: u64, t0: f32, name: &str) {
    assert_eq!(run.frames.len() as u64, total, "{name}: one frame rendered per video frame");
    assert_eq!(run.video_frames, total, "{name}: the video holds every frame");
    assert_eq!(run.start_time, t0, "{name}: frame 0 is the state the render started from");
    for (k, f) in run.frames.iter().enumerate() {
        let want = t0 as f64 + k as f64 / fps as f64;
        assert_eq!(f.index, k as u64, "{name}: frames in order");
        assert!(rel(f.video_time, k as f64 / fps as f64) <= 1e-12, "{name}: frame {k} at {} s of video", f.video_time);
        assert!(rel(f.sim_time as f64, want) <= 1e-5, "{name}: frame {k} shows t = {} s, not {want} s", f.sim_time);
        assert_eq!(f.sim_time, want as f32, "{name}: frame {k} lands on its frame end exactly");
        assert_eq!(
            run.rendered_times[k], f.sim_time,
            "{name}: frame {k} was rendered from the state at {} s",
            run.rendered_times[k]
        );
    }
    assert!(
        run.steps_taken as u64 >= total - 1 && run.steps_taken as u64 <= run.steps_recorded,
        "{name}: {} steps taken, {} recorded",
        run.steps_taken,
        run.steps_recorded
    );
    assert!(run.waiting_frames > 0, "{name}: the window drew frames while the step state came back");
    eprintln!(
        "{name}: {total} frames in {} window frames ({} waiting on a read-back), {} steps taken, {} recorded, {} redone rounds",
        run.window_frames, run.waiting_frames, run.steps_taken, run.steps_recorded, run.redos
    );
}

#[test]
fn window_offline_render_frames_are_exactly_one_over_fps_apart() {
    let ctx = gpu();
    let fps = 24.0f32; // 1/24 s is no binary fraction: a sum of substeps would not land on it
    let total = 6u64;
    // A dam break from rest: the water speeds up, the CFL condition shortens the steps.
    let scene = Scene::builtin("dam_break").expect("built-in dam break");
    let mut sim = simulation(&ctx, &scene, fps);
    let run = render(&ctx, &scene, &mut sim, fps, total, None, "from-zero");
    check_exact(&run, fps, total, 0.0, "dam break from t = 0");
}

#[test]
fn window_offline_render_starts_from_a_running_simulation() {
    let ctx = gpu();
    let fps = 30.0f32;
    let total = 4u64;
    let scene = Scene::builtin("dam_break").expect("built-in dam break");
    let mut sim = simulation(&ctx, &scene, 60.0);
    // The window ran freely for a while (frames of substeps, no frame end): some odd time.
    let profiler = Profiler::new(&ctx.device);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    for _ in 0..3 {
        let steps = sim.sim().frame_steps();
        sim.sim_mut().encode_frame(&mut enc, &profiler, steps);
    }
    ctx.queue.submit([enc.finish()]);
    let t0 = sim.sim().step_state_blocking(&ctx).expect("step state").time;
    assert!(t0 > 0.0);
    let params = SimParams { frame_dt: 1.0 / fps, ..sim.params().clone() };
    sim.set_params(&ctx, &params).expect("params");
    let run = render(&ctx, &scene, &mut sim, fps, total, None, "running");
    check_exact(&run, fps, total, t0, "dam break from a running simulation");
}

#[test]
fn window_offline_render_redoes_rounds_that_fall_short() {
    let ctx = gpu();
    let fps = 24.0f32;
    let total = 4u64;
    let scene = Scene::builtin("dam_break").expect("built-in dam break");
    let mut sim = simulation(&ctx, &scene, fps);
    // A third of the steps needed per round: every frame takes several rounds.
    let run = render(&ctx, &scene, &mut sim, fps, total, Some((0.3, 0)), "redo");
    check_exact(&run, fps, total, 0.0, "dam break, short rounds");
    assert!(run.redos >= total - 1, "rounds fell short and were redone: {}", run.redos);
}

/// The video alone as an offline render's outputs.
fn outputs<'a>(recorder: &'a mut VideoRecorder, target: &'a wgpu::Texture) -> FrameOutputs<'a> {
    FrameOutputs { video: Some((recorder, target)), particles: None }
}
