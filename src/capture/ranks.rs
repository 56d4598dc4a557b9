//! `waterview capture --gpus N`: an offline video of a simulation decomposed over N ranks (src/cluster),
//! rendered sort-last ([`crate::render::sort_last`]). Every rank runs on its own thread and device: per
//! video frame it draws its "fluid layers" (the anisotropy over its owned particles and ghosts, the ghosts
//! culled, its own particles splatted into its own depth and thickness targets at the video's size,
//! [`Renderer::encode_layers`]); ranks > 0 copy them into a staging buffer, map it asynchronously and
//! send the bytes to rank 0 along the chain of neighbours ([`collect::gather_bytes_to_root`]), all ranks
//! at once, while rank 0 splats its own (submitted first); rank 0 waits for them (the frame needs them),
//! composites them with its own and draws the rest of the frame once ([`Renderer::encode_display`]) into the same [`VideoRecorder`] ring and encoder
//! thread as one GPU. Then every rank steps to exactly the next frame's time: the `frame_end` uniform
//! clamps the joint CFL step that reaches it (the ranks take the same dt, so they land together), as
//! [`crate::sim::Simulation::advance_to`] does on one GPU. Frame k shows simulated time k / fps.
//!
//! Left out on several GPUs (refused with the reason): particle files, emitters and sinks; the ranks'
//! simulations have no diffuse particles (no foam or spray), no wave maker's paddle is drawn and the
//! terrain is not wetted (only rank 0's particles would wet it). Before
//! frame 0 the ranks hold their ghosts already ([`Rank::new`] places them), so the first frame's ellipsoids
//! at the slab borders see the neighbours' particles too.

use super::offline::{format_for, frame_count, validate, OfflineOptions};
use super::recorder::VideoRecorder;
use super::video::VideoSummary;
use super::CaptureError;
use crate::cluster::{self, collect, ClusterError, Rank, RankConfig, RankError, Transport, GHOST};
use crate::gpu::{GpuContext, Profiler};
use crate::render::{
    FluidLayers, GhostIds, LayerError, LayerReadback, Offscreen, OrbitCamera, ParticleSource, RenderSettings, Renderer,
    Tank,
};
use crate::scene::{Scene, SceneError};
use crate::sim::{SimOptions, Simulation};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Most steps one video frame may take on the ranks before the capture gives up (a time that stopped
/// moving).
const MAX_STEPS_PER_FRAME: u32 = 100_000;

/// Why a capture on several GPUs failed. Causes are part of the message (no `source()`).
#[derive(Debug, Error)]
pub enum RankCaptureError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("{0}")]
    Capture(#[from] CaptureError),
    #[error("{0}")]
    Scene(#[from] SceneError),
    #[error("rank {rank}: {cause}")]
    Layers { rank: usize, cause: LayerError },
    #[error("{0} are not supported on several GPUs yet; capture with --gpus 1")]
    Unsupported(&'static str),
    #[error("--size {width}x{height} is larger than rank {rank}'s GPU allows ({max} pixels a side)")]
    TooLarge { rank: usize, width: u32, height: u32, max: u32 },
    /// The joint time did not land on the frame's end.
    #[error("frame {frame}: the ranks' simulated time {time} s did not land on the frame's end {end} s")]
    FrameEnd { frame: u64, time: f32, end: f32 },
}

impl RankError for RankCaptureError {
    fn peer_gone(&self) -> bool {
        matches!(self, RankCaptureError::Cluster(e) if e.peer_gone())
    }

    fn panicked(rank: usize) -> Self {
        RankCaptureError::Cluster(ClusterError::Panicked { rank })
    }
}

/// What a capture on several GPUs does besides [`OfflineOptions`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankCaptureOptions {
    /// For tests: rank 0 composites without the other ranks' layers (they are still rendered, read back
    /// and sent), so the image shows rank 0's particles only: the control that proves compositing matters
    /// (tests/sort_last.rs).
    pub drop_received: bool,
}

/// What a capture on several GPUs produced and measured. Times are means per video frame, ms; the GPU
/// times come from timestamp queries (0 where the device has none) over the frames whose timings came
/// back, the wall-clock times over all frames.
#[derive(Clone, Debug)]
pub struct RankCaptureReport {
    pub video: VideoSummary,
    /// Simulated time at the end, seconds (frames / fps).
    pub sim_time: f32,
    /// Steps of the decomposed simulation.
    pub steps: u64,
    /// By rank: GPU time of its fluid layers ([`LAYER_PASSES`]: anisotropy, ghost cull, splats).
    pub layers_gpu_ms: Vec<f64>,
    /// By rank: wall-clock time from the submission of its layers to its staging buffer mapped (0 on
    /// rank 0, whose layers stay on its GPU).
    pub readback_ms: Vec<f64>,
    /// Wall-clock time rank 0 waited for the other ranks' layers (their render, read-back and transfer
    /// beyond its own work).
    pub transfer_ms: f64,
    /// Rank 0's GPU time of the sort-last passes ("sort-last depth", "sort-last thickness").
    pub composite_gpu_ms: f64,
    /// Rank 0's GPU time of the rest of its frame (background, tiles, depth filter, composite, glass).
    pub display_gpu_ms: f64,
}

/// Labels of the passes of a rank's fluid layers, as [`crate::render::Renderer::encode_layers`] records
/// them (the background it also draws, for the depth the splats are tested against, is not counted).
pub const LAYER_PASSES: [&str; 5] = ["anisotropy", "ghost cull", "splat depth", "splat thickness", "splat resolve"];

/// Labels of the sort-last passes ([`crate::render::sort_last`]).
const COMPOSITE_PASSES: [&str; 2] = ["sort-last depth", "sort-last thickness"];

/// The particles a rank draws: all its slots (owned, ghosts, the parked rest culled by the anisotropy),
/// the tank of a box scene; no paddle, no diffuse particles.
pub fn rank_particles<'a>(sim: &'a Simulation, scene: &Scene) -> ParticleSource<'a> {
    let d = sim.domain();
    let tank =
        scene.draws_tank().then(|| Tank { min: d.min.into(), max: d.max.into(), floor: scene.terrain.is_none() });
    ParticleSource {
        positions: sim.positions(),
        velocities: sim.velocities(),
        count: sim.capacity(),
        version: Some(sim.particles_version()),
        paddle: None,
        diffuse: None,
        tank,
        clock: Some(sim.step_state()),
    }
}

/// One rank's sums of the frame timings, ms, and the frames whose GPU timings came back.
#[derive(Default)]
struct Timings {
    layers_gpu: f64,
    composite_gpu: f64,
    display_gpu: f64,
    gpu_frames: u64,
    readback: f64,
    transfer: f64,
}

impl Timings {
    /// Adds the GPU times of the profiler's latest finished frame when one came back since `seen` frames.
    fn sample(&mut self, profiler: &Profiler, seen: &mut u64) {
        if profiler.frames_finished() == *seen {
            return;
        }
        *seen = profiler.frames_finished();
        self.gpu_frames += 1;
        for p in profiler.latest() {
            if LAYER_PASSES.contains(&p.label.as_str()) {
                self.layers_gpu += p.ms;
            } else if COMPOSITE_PASSES.contains(&p.label.as_str()) {
                self.composite_gpu += p.ms;
            } else {
                self.display_gpu += p.ms;
            }
        }
    }
}

/// Captures `scene` decomposed over one rank per context (rank 0's device records the video) with
/// `opts` (a video output; no particle files); `progress(frames written, total)` after every frame.
/// Errors: bad options, a size past a GPU's texture limit, what cannot run on several GPUs, the scene, a
/// rank (the message names it), the video output (nothing is left under the final name).
pub fn capture_ranks(
    contexts: Vec<GpuContext>,
    scene: &Scene,
    opts: &OfflineOptions,
    ranked: RankCaptureOptions,
    progress: impl Fn(u64, u64) + Sync,
) -> Result<RankCaptureReport, RankCaptureError> {
    validate(opts)?;
    if opts.particles.is_some() {
        return Err(RankCaptureError::Unsupported("particle files (--particles)"));
    }
    let Some(out) = opts.out.as_deref() else { return Err(CaptureError::NoOutput.into()) };
    if !(scene.emitters.is_empty() && scene.sinks.is_empty()) {
        return Err(ClusterError::Sources.into());
    }
    let Some(first) = contexts.first() else { return Err(RankCaptureError::Unsupported("zero ranks")) };
    for (rank, c) in contexts.iter().enumerate() {
        let max = c.device.limits().max_texture_dimension_2d;
        let (width, height) = opts.size;
        if width > max || height > max {
            return Err(RankCaptureError::TooLarge { rank, width, height, max });
        }
    }
    let mut scene = scene.clone();
    scene.solver.dx = opts.dx.unwrap_or_else(|| scene.effective_dx(first.is_cpu()));
    // As one GPU's capture: a frame of 1 / fps, so the longest step is 1 / (fps substeps).
    let params = crate::sim::SimParams { frame_dt: 1.0 / opts.fps, ..scene.solver.clone() };
    let setup = scene.build(false)?;
    let all = cluster::initial_particles(&setup, &params);
    let format = crate::render::OFFSCREEN_FORMAT;
    let rec = VideoRecorder::start(&first.device, out, format_for(out), opts.fps, opts.size, format)?;
    let rec = Mutex::new(Some(rec));
    let total = frame_count(opts.seconds, opts.fps);
    let results = cluster::run_threads_with(contexts, |t, ctx| {
        let rank = t.rank();
        let config = RankConfig::for_params(&params);
        let r = Rank::new(t, ctx, &scene.domain, &setup.terrain, &params, SimOptions::default(), config, &all)?;
        let mut rec = if rank == 0 { rec.lock().ok().and_then(|mut r| r.take()) } else { None };
        let result = rank_frames(r, &scene, opts, ranked, total, rec.as_mut(), &progress);
        match (result, rec) {
            (Ok(out), Some(rec)) => {
                let device = out.1.clone();
                let video = rec.finish_blocking(&device)?;
                Ok((out.0, Some(video)))
            }
            (Ok(out), None) => Ok((out.0, None)),
            (Err(e), rec) => {
                if let Some(rec) = rec {
                    rec.cancel();
                }
                Err(e)
            }
        }
    });
    let results = match results {
        Ok(r) => r,
        Err(e) => {
            // A rank failed before rank 0 took the recorder.
            if let Some(rec) = rec.lock().ok().and_then(|mut r| r.take()) {
                rec.cancel();
            }
            return Err(e);
        }
    };
    let total_f = total as f64;
    let gpu = |t: &Timings, ms: f64| ms / t.gpu_frames.max(1) as f64;
    let layers_gpu_ms = results.iter().map(|((t, _, _), _)| gpu(t, t.layers_gpu)).collect();
    let readback_ms = results.iter().map(|((t, _, _), _)| t.readback / total_f).collect();
    let Some(((t0, sim_time, steps), Some(video))) = results.into_iter().next() else {
        return Err(CaptureError::NoOutput.into());
    };
    Ok(RankCaptureReport {
        video,
        sim_time,
        steps,
        layers_gpu_ms,
        readback_ms,
        transfer_ms: t0.transfer / total_f,
        composite_gpu_ms: gpu(&t0, t0.composite_gpu),
        display_gpu_ms: gpu(&t0, t0.display_gpu),
    })
}

/// Rank `rank`'s frames of [`capture_ranks`]: returns ((timing sums, simulated time at the end, steps),
/// its device). `rec` is rank 0's recorder (`None` on the others).
fn rank_frames<T: Transport>(
    mut rank: Rank<T>,
    scene: &Scene,
    opts: &OfflineOptions,
    ranked: RankCaptureOptions,
    total: u64,
    mut rec: Option<&mut VideoRecorder>,
    progress: &(impl Fn(u64, u64) + Sync),
) -> Result<((Timings, f32, u64), wgpu::Device), RankCaptureError> {
    let me = rank.rank();
    let ctx = rank.ctx().clone();
    let target = Offscreen::new(&ctx, opts.size);
    let mut renderer = Renderer::new(&ctx, target.format(), rank.sim().terrain());
    let camera = OrbitCamera::from_desc(&scene.camera);
    let mut settings = RenderSettings::default();
    settings.particle.radius = rank.sim().particle_radius();
    // The ground is wetted by the particles a renderer draws: on several ranks only rank 0's would, so
    // none does (the ground stays dry rather than wet under part of the water).
    settings.wet_ground = rank.transport().size() == 1;
    let settings = opts.image.apply(settings);
    let mut profiler = Profiler::new(&ctx.device);
    let mut seen = 0;
    let mut readback = LayerReadback::default();
    let mut sums = Timings::default();
    let (mut time, mut steps) = (0.0f32, 0u64);
    // Frame 0 has the ghosts in place: `Rank::new` placed them, as every later frame has them after its steps.
    for k in 0..total {
        if let Some(rec) = rec.as_deref_mut() {
            while !rec.can_record() {
                let _ = ctx
                    .device
                    .poll(wgpu::PollType::Wait { submission_index: None, timeout: Some(Duration::from_millis(50)) });
                if let Some(e) = rec.poll() {
                    return Err(e.into());
                }
            }
        }
        let sim = rank.sim();
        let particles = Some(rank_particles(sim, scene));
        let ghosts = sim.ids_in_position_order().map(|(ids, offset)| GhostIds { ids, offset, ghost_bit: GHOST });
        let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rank frame") });
        if me == 0 {
            // Rank 0's own layers first, submitted, so its GPU splats while the others' layers travel; its
            // display frame then goes on from them (Renderer::encode_display) once they are here.
            renderer.encode_layers(&ctx, &mut enc, &profiler, &target, &camera, particles, ghosts, &settings);
            ctx.queue.submit([enc.finish()]);
            enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rank 0 display") });
            let t = Instant::now();
            let parts = collect::gather_bytes_to_root(rank.transport(), &[])?.unwrap_or_default();
            let mut received = parts
                .iter()
                .enumerate()
                .skip(1)
                .map(|(r, b)| FluidLayers::from_bytes(b).map_err(|cause| RankCaptureError::Layers { rank: r, cause }))
                .collect::<Result<Vec<_>, _>>()?;
            sums.transfer += t.elapsed().as_secs_f64() * 1e3;
            if ranked.drop_received {
                received.clear();
            }
            renderer
                .encode_display(&ctx, &mut enc, &profiler, &target, &camera, particles, ghosts, &received, &settings);
            if let Some(rec) = rec.as_deref_mut() {
                rec.record(&mut enc, &target.color, k as f64 / opts.fps as f64);
            }
            profiler.resolve(&mut enc);
            ctx.queue.submit([enc.finish()]);
            profiler.end_frame(&ctx.queue);
            if let Some(rec) = rec.as_deref_mut() {
                rec.after_submit();
            }
        } else {
            renderer.encode_layers(&ctx, &mut enc, &profiler, &target, &camera, particles, ghosts, &settings);
            if let Some(fluid) = renderer.fluid_targets() {
                readback.encode_copy(&ctx.device, &mut enc, fluid);
            }
            profiler.resolve(&mut enc);
            let t = Instant::now();
            ctx.queue.submit([enc.finish()]);
            profiler.end_frame(&ctx.queue);
            readback.map();
            let layers = readback.read_blocking(&ctx).map_err(|cause| RankCaptureError::Layers { rank: me, cause })?;
            sums.readback += t.elapsed().as_secs_f64() * 1e3;
            collect::gather_bytes_to_root(rank.transport(), &layers.to_bytes())?;
        }
        sums.sample(&profiler, &mut seen);
        // Exactly one frame of simulated time, on every rank together.
        let end = ((k + 1) as f64 / opts.fps as f64) as f32;
        rank.sim().set_frame_end(rank.ctx(), end);
        let mut n = 0;
        while time < end && n < MAX_STEPS_PER_FRAME {
            let stats = rank.step()?;
            if stats.time <= time && n > 0 {
                break; // the time stopped moving
            }
            time = stats.time;
            n += 1;
        }
        steps += n as u64;
        if time != end {
            return Err(RankCaptureError::FrameEnd { frame: k, time, end });
        }
        if let Some(rec) = rec.as_deref_mut() {
            let _ = ctx.device.poll(wgpu::PollType::Poll);
            if let Some(e) = rec.poll() {
                return Err(e.into());
            }
            progress(rec.written(), total);
        }
    }
    rank.sim().set_frame_end(rank.ctx(), 0.0);
    Ok(((sums, time, steps), ctx.device.clone()))
}

/// `waterview capture --gpus N` (N > 1): loads the scene, opens one device per rank
/// ([`cluster::rank_contexts`]) and captures with a terminal progress bar; prints the video written and
/// the per-rank frame timings. Errors: as [`capture_ranks`], and an output that cannot be written.
pub fn run_cli(scene_path: Option<&std::path::Path>, opts: &OfflineOptions, ranks: usize) -> anyhow::Result<()> {
    use super::output::Output;
    use super::video::VideoFormat;
    validate(opts)?;
    if opts.particles.is_some() {
        return Err(RankCaptureError::Unsupported("particle files (--particles)").into());
    }
    if opts.image.view == crate::render::FluidView::Spheres {
        return Err(RankCaptureError::Unsupported("the spheres view (--view spheres)").into());
    }
    let Some(out) = &opts.out else { return Err(CaptureError::NoOutput.into()) };
    let what = if format_for(out) == VideoFormat::Mp4 { Output::File } else { Output::NewFolder };
    super::output::check_writable(out, what)?;
    let scene = crate::engine::load_scene(scene_path)?;
    let contexts = cluster::rank_contexts(ranks)?;
    for (r, c) in contexts.iter().enumerate() {
        eprintln!("rank {r}: {}", c.adapter_summary());
    }
    let total = frame_count(opts.seconds, opts.fps);
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} frames, {per_sec}, ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let result = capture_ranks(contexts, &scene, opts, RankCaptureOptions::default(), |w, _| bar.set_position(w));
    bar.finish_and_clear();
    let report = result?;
    let wall = started.elapsed().as_secs_f64();
    let v = &report.video;
    eprintln!(
        "wrote {}: {} frames, {:.2} s of video at {} fps, {:.1} MB, in {:.1} s ({:.2} frames/s), {ranks} ranks",
        v.path.display(),
        v.frames,
        v.duration_s,
        opts.fps,
        v.bytes as f64 / 1e6,
        wall,
        v.frames as f64 / wall.max(1e-9)
    );
    let by_rank = |v: &[f64], from: usize| {
        v.iter().enumerate().skip(from).map(|(r, ms)| format!("rank {r} {ms:.2}")).collect::<Vec<_>>().join(", ")
    };
    eprintln!(
        "per frame, ms: fluid layers (GPU: anisotropy, ghost cull, splats) {}; read-back (wall) {}; rank 0 waited \
         {:.2} (wall) for the others' layers; sort-last composite (GPU) {:.2}; rest of the display frame (GPU) {:.2}",
        by_rank(&report.layers_gpu_ms, 0),
        by_rank(&report.readback_ms, 1),
        report.transfer_ms,
        report.composite_gpu_ms,
        report.display_gpu_ms
    );
    eprintln!("simulated {:.6} s: {} steps on {ranks} ranks", report.sim_time, report.steps);
    Ok(())
}
