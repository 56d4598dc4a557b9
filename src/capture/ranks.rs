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
//! simulations have no diffuse particles (no foam or spray) and the
//! terrain is not wetted (only rank 0's particles would wet it). Before
//! frame 0 the ranks hold their ghosts already ([`Rank::new`] places them), so the first frame's ellipsoids
//! at the slab borders see the neighbours' particles too.

use super::offline::{format_for, frame_count, validate, OfflineOptions};
use super::recorder::VideoRecorder;
use super::video::VideoSummary;
use super::CaptureError;
use crate::cluster::{self, collect, ClusterError, Rank, RankConfig, RankError, Reduce, Transport, GHOST};
use crate::gpu::{GpuContext, Profiler};
use crate::render::{
    FluidLayers, GhostIds, LayerError, LayerReadback, Offscreen, OrbitCamera, ParticleSource, RenderSettings, Renderer,
    Tank,
};
use crate::scene::{Scene, SceneError, SceneSetup};
use crate::sim::{RankParticles, SimOptions, SimParams, Simulation};
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
    /// A resumed checkpoint that does not fit (its terrain changed).
    #[error("{0}")]
    Checkpoint(#[from] crate::engine::CheckpointError),
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

impl From<RankFrameError> for RankCaptureError {
    fn from(e: RankFrameError) -> Self {
        match e {
            RankFrameError::Cluster(e) => RankCaptureError::Cluster(e),
            RankFrameError::Layers { rank, cause } => RankCaptureError::Layers { rank, cause },
        }
    }
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
/// the tank of a box scene, the wave maker's paddle; no diffuse particles.
pub fn rank_particles<'a>(sim: &'a Simulation, scene: &Scene) -> ParticleSource<'a> {
    let d = sim.domain();
    let tank =
        scene.draws_tank().then(|| Tank { min: d.min.into(), max: d.max.into(), floor: scene.terrain.is_none() });
    ParticleSource {
        positions: sim.positions(),
        velocities: sim.velocities(),
        count: sim.capacity(),
        version: Some(sim.particles_version()),
        paddle: crate::engine::paddle(sim),
        diffuse: None,
        tank,
        clock: Some(sim.step_state()),
    }
}

/// Why one rank's sort-last frame ([`rank_frame`]) failed. Causes are part of the message.
#[derive(Debug, Error)]
pub enum RankFrameError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("rank {rank}: {cause}")]
    Layers { rank: usize, cause: LayerError },
}

/// What a rank draws in one [`rank_frame`]: the frame's target (the video's or the window's size), the
/// view, and for tests `drop_received` (rank 0 composites without the others' layers: the control that
/// proves compositing matters).
pub struct RankView<'a> {
    pub target: &'a Offscreen,
    pub camera: &'a OrbitCamera,
    pub settings: &'a RenderSettings,
    pub drop_received: bool,
}

/// Wall-clock figures of one [`rank_frame`], ms: rank 0's wait for the others' layers, a rank > 0's
/// submit-to-layers-in-hand.
#[derive(Clone, Copy, Debug, Default)]
pub struct RankFrameTimes {
    pub transfer_ms: f64,
    pub readback_ms: f64,
}

/// One sort-last frame, every rank together (see the module docs): each rank draws its fluid layers
/// into `view.target` ([`Renderer::encode_layers`]). A rank > 0 copies them into `readback`, submits,
/// closes the profiler's frame, waits for the copy and sends the bytes to rank 0: `None`. Rank 0 submits
/// its own layers first (its splats run while the others' travel), waits for the others', composites
/// them and records the rest of the frame ([`Renderer::encode_display`]) into the encoder it returns,
/// for the caller to add to (a video frame), resolve the profiler into and submit.
/// The water casts no shadow in these frames, whatever the settings (each rank holds part of the water
/// and the shadow's light-space map is not composited): one rank draws what several do.
/// Errors: a peer is gone, or a layer message or read-back is bad (naming the rank).
pub fn rank_frame<T: Transport>(
    rank: &Rank<T>,
    scene: &Scene,
    renderer: &mut Renderer,
    profiler: &mut Profiler,
    readback: &mut LayerReadback,
    view: RankView<'_>,
) -> Result<(Option<wgpu::CommandEncoder>, RankFrameTimes), RankFrameError> {
    let RankView { target, camera, settings, drop_received } = view;
    let settings = &crate::render::RenderSettings { water_shadow: false, ..settings.clone() };
    let (me, ctx) = (rank.rank(), rank.ctx());
    let sim = rank.sim();
    let particles = Some(rank_particles(sim, scene));
    let ghosts = sim.ids_in_position_order().map(|(ids, offset)| GhostIds { ids, offset, ghost_bit: GHOST });
    let mut times = RankFrameTimes::default();
    let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rank frame") });
    renderer.encode_layers(ctx, &mut enc, profiler, target, camera, particles, ghosts, settings);
    if me == 0 {
        ctx.queue.submit([enc.finish()]);
        let mut enc =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rank 0 display") });
        let t = Instant::now();
        let parts = collect::gather_bytes_to_root(rank.transport(), &[])?.unwrap_or_default();
        let mut received = parts
            .iter()
            .enumerate()
            .skip(1)
            .map(|(r, b)| FluidLayers::from_bytes(b).map_err(|cause| RankFrameError::Layers { rank: r, cause }))
            .collect::<Result<Vec<_>, _>>()?;
        // The other ranks' wet ground (empty without), merged into this rank's before it is drawn.
        let wet = collect::gather_bytes_to_root(rank.transport(), &[])?.unwrap_or_default();
        times.transfer_ms = t.elapsed().as_secs_f64() * 1e3;
        if drop_received {
            received.clear();
        } else {
            renderer.merge_wetness(ctx, &mut enc, profiler, wet.get(1..).unwrap_or_default());
        }
        renderer.encode_display(ctx, &mut enc, profiler, target, camera, particles, ghosts, &received, settings);
        return Ok((Some(enc), times));
    }
    if let Some(fluid) = renderer.fluid_targets() {
        readback.encode_copy(&ctx.device, &mut enc, fluid);
    }
    profiler.resolve(&mut enc);
    let t = Instant::now();
    ctx.queue.submit([enc.finish()]);
    profiler.end_frame(&ctx.queue);
    readback.map();
    let layers = readback.read_blocking(ctx).map_err(|cause| RankFrameError::Layers { rank: me, cause })?;
    times.readback_ms = t.elapsed().as_secs_f64() * 1e3;
    collect::gather_bytes_to_root(rank.transport(), &layers.to_bytes())?;
    // Its wet ground, from its own particles (every rank keeps its own map; rank 0 merges them).
    let wet = match settings.wet_ground {
        true => renderer.wetness_blocking(ctx).map_err(|cause| ClusterError::Gpu { rank: me, cause })?,
        false => Vec::new(),
    };
    collect::gather_bytes_to_root(rank.transport(), &wet)?;
    Ok((None, times))
}

/// What a rank draws its sort-last frames with, at one size: the target, a renderer with the scene's
/// terrain, obstacles and `walls`, the scene's camera, the settings `image` asks for (the particles'
/// radius; the wet ground of every rank's particles, merged by rank 0), and the profiler and
/// layer read-back that the frames reuse.
pub struct RankDraw {
    pub target: Offscreen,
    renderer: Renderer,
    camera: OrbitCamera,
    settings: RenderSettings,
    pub profiler: Profiler,
    readback: LayerReadback,
}

impl RankDraw {
    /// For `rank`'s simulation of `scene` at `size` pixels (within its GPU's texture limit: the callers
    /// check it first, [`check_size`]), into a target of `format` (the 8-bit offscreen format for PNG
    /// and video frames, [`crate::render::HDR_FORMAT`] for the linear values of an OpenEXR image).
    pub fn new<T: Transport>(
        rank: &Rank<T>,
        scene: &Scene,
        walls: &[crate::render::ObstacleMesh],
        (size, format): ((u32, u32), wgpu::TextureFormat),
        image: &crate::engine::batch::ImageOptions,
    ) -> Self {
        let ctx = rank.ctx();
        let target = Offscreen::with_format(ctx, size, format);
        let mut renderer = Renderer::new(ctx, target.format(), rank.sim().terrain());
        renderer.set_obstacles(ctx, &crate::engine::obstacle_meshes(rank.sim().obstacles()));
        renderer.set_walls(ctx, walls);
        let mut settings = RenderSettings::default();
        settings.particle.radius = rank.sim().particle_radius();
        let settings = image.apply(settings);
        let camera = OrbitCamera::from_desc(&scene.camera);
        let profiler = Profiler::new(&ctx.device);
        Self { target, renderer, camera, settings, profiler, readback: LayerReadback::default() }
    }

    /// This rank's wet ground as its last frame left it ([`Renderer::wetness_blocking`]; on rank 0 merged
    /// with every rank's). **Blocking**. Errors: the read-back failed (device lost).
    pub fn wetness_blocking(&self, ctx: &GpuContext) -> Result<Vec<u8>, crate::gpu::GpuError> {
        self.renderer.wetness_blocking(ctx)
    }

    /// One sort-last frame of every rank's current state ([`rank_frame`]): rank 0's display encoder.
    pub fn frame<T: Transport>(
        &mut self,
        rank: &Rank<T>,
        scene: &Scene,
        drop_received: bool,
    ) -> Result<(Option<wgpu::CommandEncoder>, RankFrameTimes), RankFrameError> {
        let view = RankView { target: &self.target, camera: &self.camera, settings: &self.settings, drop_received };
        rank_frame(rank, scene, &mut self.renderer, &mut self.profiler, &mut self.readback, view)
    }
}

/// A sort-last image as rank 0 read it back: 8-bit sRGB (for a PNG) or the tone-mapped linear values
/// before the sRGB encoding (for an OpenEXR file, as one GPU's `run --out x.exr`).
pub enum RankPicture {
    Srgb(image::RgbaImage),
    Linear(image::Rgba32FImage),
}

/// Every rank's current state drawn sort-last into one image of `size` pixels from the scene's camera
/// (`run --gpus N --out`), 8-bit sRGB or, with `linear`, the linear values: the image on rank 0, `None`
/// on the others; every rank must call it. Blocking. Errors: as [`rank_frame`], and a GPU error while
/// drawing (the device's report, on rank 0).
pub fn rank_image<T: Transport>(
    rank: &Rank<T>,
    scene: &Scene,
    walls: &[crate::render::ObstacleMesh],
    (size, linear): ((u32, u32), bool),
    image: &crate::engine::batch::ImageOptions,
) -> Result<Option<RankPicture>, RankCaptureError> {
    let format = if linear { crate::render::HDR_FORMAT } else { crate::render::OFFSCREEN_FORMAT };
    let mut draw = RankDraw::new(rank, scene, walls, (size, format), image);
    let (display, _) = draw.frame(rank, scene, false)?;
    let Some(mut enc) = display else { return Ok(None) };
    let ctx = rank.ctx();
    draw.profiler.resolve(&mut enc);
    ctx.queue.submit([enc.finish()]);
    draw.profiler.end_frame(&ctx.queue);
    let picture = if linear {
        RankPicture::Linear(crate::render::read_texture_rgba_f32(ctx, &draw.target.color))
    } else {
        RankPicture::Srgb(crate::render::read_texture_rgba(ctx, &draw.target.color))
    };
    ctx.check("rank 0: drawing the sort-last image").map_err(CaptureError::Gpu)?;
    Ok(Some(picture))
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

/// What a rank's frames measured: its own sums, and every rank's means (ms per frame).
struct RankSums {
    timings: Timings,
    sim_time: f32,
    steps: u64,
    /// By rank: mean GPU time of its fluid layers.
    layers_gpu_ms: Vec<f64>,
    /// By rank: mean wall-clock time of its read-back (0 on rank 0).
    readback_ms: Vec<f64>,
}

impl RankSums {
    /// Rank 0's report of `total` frames written to `video`.
    fn report(self, video: VideoSummary, total: u64) -> RankCaptureReport {
        let t = &self.timings;
        let gpu = |ms: f64| ms / t.gpu_frames.max(1) as f64;
        RankCaptureReport {
            video,
            sim_time: self.sim_time,
            steps: self.steps,
            transfer_ms: t.transfer / total.max(1) as f64,
            composite_gpu_ms: gpu(t.composite_gpu),
            display_gpu_ms: gpu(t.display_gpu),
            layers_gpu_ms: self.layers_gpu_ms,
            readback_ms: self.readback_ms,
        }
    }
}

/// The capture every rank runs: the scene built at the joint spacing, its first particles, the frame
/// length and the number of video frames.
pub(super) struct Job {
    scene: Scene,
    setup: SceneSetup,
    params: SimParams,
    all: RankParticles,
    /// The walls that hold a terrain scene's water ([`crate::engine::walls`]), the same on every rank.
    walls: Vec<crate::render::ObstacleMesh>,
    /// Video frames to capture.
    pub(super) total: u64,
}

/// Checks `opts` and `scene` for a capture on several ranks (a video output, no particle files, no
/// emitters or sinks) and builds the job at `opts.dx` or the scene's spacing (scaled for a CPU adapter
/// when `cpu`: any rank runs on one). Errors: what cannot run on several GPUs, the options, the scene.
pub(super) fn prepare(scene: &Scene, opts: &OfflineOptions, cpu: bool) -> Result<Job, RankCaptureError> {
    validate(opts)?;
    if opts.particles.is_some() {
        return Err(RankCaptureError::Unsupported("particle files (--particles)"));
    }
    if opts.out.is_none() {
        return Err(CaptureError::NoOutput.into());
    }
    if !scene.bodies.is_empty() {
        return Err(ClusterError::Bodies.into());
    }
    let mut scene = scene.clone();
    scene.solver.dx = opts.dx.unwrap_or_else(|| scene.effective_dx(cpu));
    // As one GPU's capture: a frame of 1 / fps, so the longest step is 1 / (fps substeps).
    let params = crate::sim::SimParams { frame_dt: 1.0 / opts.fps, ..scene.solver.clone() };
    let setup = scene.build(false)?;
    let all = cluster::initial_particles(&setup, &params);
    let walls = crate::engine::walls::scene_walls_for(&scene, &setup.terrain, &all.pos, params.dx);
    Ok(Job { scene, setup, params, all, walls, total: frame_count(opts.seconds, opts.fps) })
}

/// Errors when an image of `size` pixels is past the texture limit of rank `rank`'s GPU (`ctx`).
pub fn check_size(rank: usize, ctx: &GpuContext, size: (u32, u32)) -> Result<(), RankCaptureError> {
    let max = ctx.device.limits().max_texture_dimension_2d;
    let (width, height) = size;
    if width > max || height > max {
        return Err(RankCaptureError::TooLarge { rank, width, height, max });
    }
    Ok(())
}

/// Starts the video of `opts.out` on rank 0's device `ctx` (nothing is written under the final name
/// until it finishes). Errors: no output, the output cannot be written.
pub(super) fn start_video(ctx: &GpuContext, opts: &OfflineOptions) -> Result<VideoRecorder, RankCaptureError> {
    let Some(out) = opts.out.as_deref() else { return Err(CaptureError::NoOutput.into()) };
    let format = crate::render::OFFSCREEN_FORMAT;
    Ok(VideoRecorder::start(&ctx.device, out, format_for(out), opts.fps, opts.size, format)?)
}

/// What one rank's capture returns: the report on rank 0 (with its video), `None` on the others.
pub(super) type RankOutcome = Option<RankCaptureReport>;

/// One rank of a capture over any [`Transport`] (threads, or MPI processes): builds its part of the
/// simulation, renders and sends its fluid layers every frame; rank 0 (`rec`: its video, `Some` there
/// only) composites and records them. `progress(frames written, total)` after every frame on rank 0.
/// Errors: the rank's or a peer's (the message names the rank), the video; the video is cancelled then
/// (nothing is left under the final name).
pub(super) fn rank_capture<T: Transport>(
    t: T,
    ctx: GpuContext,
    job: &Job,
    opts: &OfflineOptions,
    ranked: RankCaptureOptions,
    mut rec: Option<VideoRecorder>,
    progress: &(impl Fn(u64, u64) + Sync),
) -> Result<RankOutcome, RankCaptureError> {
    let run = |rec: Option<&mut VideoRecorder>| {
        let config = RankConfig::for_params(&job.params);
        let options = SimOptions::default();
        let mut r = Rank::new(
            t,
            ctx,
            &job.scene.domain,
            (&job.setup.terrain, &job.setup.obstacles),
            &job.params,
            options,
            config,
            &job.all,
        )?;
        if !(job.scene.emitters.is_empty() && job.scene.sinks.is_empty()) {
            r.set_sources(&job.scene.emitters, &job.scene.sinks)?;
        }
        rank_frames(r, job, opts, ranked, rec, progress)
    };
    let result = run(rec.as_mut());
    match (result, rec) {
        (Ok((sums, device)), Some(rec)) => {
            let video = rec.finish_blocking(&device)?;
            Ok(Some(sums.report(video, job.total)))
        }
        (Ok(_), None) => Ok(None),
        (Err(e), rec) => {
            if let Some(rec) = rec {
                rec.cancel();
            }
            Err(e)
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
    let Some(first) = contexts.first() else { return Err(RankCaptureError::Unsupported("zero ranks")) };
    let job = prepare(scene, opts, first.is_cpu())?;
    for (rank, c) in contexts.iter().enumerate() {
        check_size(rank, c, opts.size)?;
    }
    let rec = Mutex::new(Some(start_video(first, opts)?));
    let results = cluster::run_threads_with(contexts, |t, ctx| {
        let rec = if t.rank() == 0 { rec.lock().ok().and_then(|mut r| r.take()) } else { None };
        rank_capture(t, ctx, &job, opts, ranked, rec, &progress)
    });
    // A rank that failed before rank 0 took the recorder leaves it here.
    if let Some(rec) = rec.lock().ok().and_then(|mut r| r.take()) {
        rec.cancel();
    }
    match results?.into_iter().next() {
        Some(Some(report)) => Ok(report),
        _ => Err(CaptureError::NoOutput.into()),
    }
}

/// Rank `rank`'s frames of [`capture_ranks`]: returns its figures (with every rank's means, gathered
/// through the transport) and its device. `rec` is rank 0's recorder (`None` on the others).
fn rank_frames<T: Transport>(
    mut rank: Rank<T>,
    job: &Job,
    opts: &OfflineOptions,
    ranked: RankCaptureOptions,
    mut rec: Option<&mut VideoRecorder>,
    progress: &(impl Fn(u64, u64) + Sync),
) -> Result<(RankSums, wgpu::Device), RankCaptureError> {
    let me = rank.rank();
    let ctx = rank.ctx().clone();
    let (scene, total) = (&job.scene, job.total);
    let size = (opts.size, crate::render::OFFSCREEN_FORMAT);
    let mut draw = RankDraw::new(&rank, scene, &job.walls, size, &opts.image);
    let mut seen = 0;
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
        let (display, times) = draw.frame(&rank, scene, ranked.drop_received)?;
        sums.transfer += times.transfer_ms;
        sums.readback += times.readback_ms;
        if let Some(mut enc) = display {
            if let Some(rec) = rec.as_deref_mut() {
                rec.record(&mut enc, &draw.target.color, k as f64 / opts.fps as f64);
            }
            draw.profiler.resolve(&mut enc);
            ctx.queue.submit([enc.finish()]);
            draw.profiler.end_frame(&ctx.queue);
            if let Some(rec) = rec.as_deref_mut() {
                rec.after_submit();
            }
        }
        sums.sample(&draw.profiler, &mut seen);
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
        ctx.check(&format!("rank {me}: frame {k} of the capture")).map_err(CaptureError::Gpu)?;
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
    // Every rank's means of its layers' GPU time and read-back, each in its own slots of a sum (exact).
    let size = rank.transport().size();
    let mut slots = vec![0.0; 2 * size];
    slots[2 * me] = sums.layers_gpu / sums.gpu_frames.max(1) as f64;
    slots[2 * me + 1] = sums.readback / total.max(1) as f64;
    let by_rank = rank.transport().all_reduce(&slots, Reduce::Sum).map_err(ClusterError::from)?;
    let layers_gpu_ms = by_rank.iter().step_by(2).copied().collect();
    let readback_ms = by_rank.iter().skip(1).step_by(2).copied().collect();
    Ok((RankSums { timings: sums, sim_time: time, steps, layers_gpu_ms, readback_ms }, ctx.device.clone()))
}
