//! The window on several GPUs (`waterview --gpus N`, the simulation panel's GPUs field): the scene is
//! decomposed over N ranks (src/cluster, one thread and one wgpu device each; rank 0 runs on the window's
//! device) and drawn sort-last as `waterview capture --gpus N` draws it (src/capture/ranks.rs): every rank
//! renders its fluid layers, ranks > 0 read theirs back and send the bytes to rank 0, which composites them
//! and draws the rest of the frame into an offscreen target of the window's size.
//!
//! The ranks run on their own threads, never on the UI thread: per frame, rank 0 takes a snapshot of what
//! the window asks for ([`Control`]: camera, render settings, size, play/step/stop; and the simulation
//! panel's parameters) and hands it to every rank behind one all-reduce (a barrier), so all ranks take the
//! same parameters (live, [`Rank::set_params`]: a change of dx, h, rho0 or of the halo's depth rebuilds
//! the ranks instead) and step and draw the same frame; they step one frame
//! of simulated time (a bounded number of joint steps), gather their figures ([`RankFigures`]) and draw.
//! Rank 0 puts the finished target in a slot; the UI thread takes the newest one when it draws (copying it
//! into its own offscreen target, so screenshots and recordings work unchanged) and hands the previous one
//! back for reuse. The queue orders the UI's copy before rank 0's next frame into the same target.
//!
//! Left out on several GPUs, as in the capture: emitters and sinks (refused), particle files, the loaded
//! sky (the generated one is drawn), diffuse particles and the wet ground.

use super::Running;
use crate::capture::ranks::{rank_frame, RankFrameError, RankView};
use crate::cluster::{self, ClusterError, Rank, RankConfig, RankStats, Reduce, Transport};
use crate::gpu::{GpuContext, Profiler};
use crate::render::{LayerError, LayerReadback, Offscreen, OrbitCamera, RenderSettings, Renderer};
use crate::scene::{Scene, SceneError};
use crate::sim::{SimOptions, SimParams};
use crate::terrain::Heightfield;
use crate::ui::gpus_panel::{GpusInfo, RankFigures};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Most joint steps the ranks take per window frame (a frame of simulated time usually needs fewer; a
/// slower scene falls behind real time rather than stall the ranks' frames).
const MAX_STEPS_PER_FRAME: u32 = 8;

/// Why the ranks could not be built or stopped. Causes are part of the message (no `source()`).
#[derive(Debug, Error)]
pub enum RanksError {
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("{0}")]
    Scene(#[from] SceneError),
    #[error("rank {rank}: {cause}")]
    Layers { rank: usize, cause: LayerError },
    #[error("the window's {width}x{height} pixels are larger than rank {rank}'s GPU allows ({max} a side)")]
    TooLarge { rank: usize, width: u32, height: u32, max: u32 },
    #[error("cannot start the ranks' thread: {0}")]
    Thread(String),
}

impl From<RankFrameError> for RanksError {
    fn from(e: RankFrameError) -> Self {
        match e {
            RankFrameError::Cluster(e) => RanksError::Cluster(e),
            RankFrameError::Layers { rank, cause } => RanksError::Layers { rank, cause },
        }
    }
}

impl cluster::RankError for RanksError {
    fn peer_gone(&self) -> bool {
        matches!(self, RanksError::Cluster(e) if cluster::RankError::peer_gone(e))
    }

    fn panicked(rank: usize) -> Self {
        RanksError::Cluster(ClusterError::Panicked { rank })
    }
}

/// What the window asks the ranks to draw, taken by rank 0 at the start of each of their frames.
#[derive(Clone)]
pub(super) struct Control {
    pub(super) camera: OrbitCamera,
    /// The panels' render settings (the particle radius is the ranks' own).
    pub(super) settings: RenderSettings,
    /// The window's scene target, pixels.
    pub(super) size: (u32, u32),
    pub(super) playing: bool,
    /// One step while paused (cleared once taken).
    pub(super) step: bool,
}

/// What the UI thread and the ranks share.
struct Shared {
    control: Mutex<Control>,
    /// The simulation's parameters the window asks for (dx as the scene gives it: each rank keeps its own).
    params: Mutex<SimParams>,
    /// Rank 0's snapshot of `control` and `params` for the frame under way (see the module docs).
    snapshot: Mutex<Option<(Control, SimParams)>>,
    stop: AtomicBool,
    figures: Mutex<Vec<RankFigures>>,
    /// The axis of the slabs (0 = x) and the simulated time, s.
    axis_time: Mutex<(usize, f32)>,
    /// The newest finished frame of rank 0 (window size).
    latest: Mutex<Option<Offscreen>>,
    /// Targets the UI is done with, for rank 0 to draw into again.
    spare: Mutex<Vec<Offscreen>>,
    /// Why the ranks stopped, for the banner (taken once).
    error: Mutex<Option<String>>,
    /// Every rank's thread has ended (set by the thread that runs them, after they are joined).
    finished: AtomicBool,
}

/// A scene running on several ranks, as the window holds it (see the module docs). Dropping it stops the
/// ranks after their frame under way.
pub(super) struct RankWorld {
    scene: Scene,
    terrain: Heightfield,
    /// The static obstacles' meshes, world space (every rank simulates them all).
    obstacles: Vec<crate::render::ObstacleMesh>,
    /// The walls that hold a terrain scene's water ([`crate::engine::walls`]).
    walls: Vec<crate::render::ObstacleMesh>,
    ranks: usize,
    particle_radius: f32,
    particles: u64,
    shared: Arc<Shared>,
}

/// Longest a dropped [`RankWorld`] waits for its ranks' threads to end, seconds.
const STOP_WAIT_S: f64 = 5.0;

impl Drop for RankWorld {
    /// Stops the ranks after their frame under way and waits for their threads to end (at most
    /// [`STOP_WAIT_S`]): a process that exits while a rank is still inside the driver can crash in its
    /// teardown (seen on lavapipe: the window test that moves a scene to two GPUs exited with SIGSEGV in
    /// about one run of forty).
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        let started = std::time::Instant::now();
        while !self.shared.finished.load(Ordering::Acquire) && started.elapsed().as_secs_f64() < STOP_WAIT_S {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

impl RankWorld {
    /// The scene as built (its dx the one simulated).
    pub(super) fn scene(&self) -> &Scene {
        &self.scene
    }

    pub(super) fn terrain(&self) -> &Heightfield {
        &self.terrain
    }

    /// The static obstacles' meshes, world space.
    pub(super) fn obstacle_meshes(&self) -> &[crate::render::ObstacleMesh] {
        &self.obstacles
    }

    /// The walls that hold a terrain scene's water, world space.
    pub(super) fn wall_meshes(&self) -> &[crate::render::ObstacleMesh] {
        &self.walls
    }

    /// Ranks (GPUs).
    pub(super) fn ranks(&self) -> usize {
        self.ranks
    }

    /// Particles over all ranks: their owned particles after the last step the panel has (emitters and
    /// sinks change the count), else the scene's.
    pub(super) fn particles(&self) -> u64 {
        let owned = self.shared.figures.lock().ok().filter(|f| !f.is_empty()).map(|f| f.iter().map(|r| r.owned).sum());
        owned.unwrap_or(self.particles)
    }

    /// Radius of a particle, m (half the spacing).
    pub(super) fn particle_radius(&self) -> f32 {
        self.particle_radius
    }

    /// Hands the window's wishes to the ranks (taken at the start of their next frame). A single step is
    /// kept until taken.
    pub(super) fn set_control(&self, mut control: Control) {
        if let Ok(mut c) = self.shared.control.lock() {
            control.step |= c.step;
            *c = control;
        }
    }

    /// Applies `params` on every rank from the start of their next frame (the scene as held here keeps
    /// them, so a later rebuild starts from them). The caller checks [`crate::cluster::live_params`]
    /// first; errors: invalid parameters (nothing changes).
    pub(super) fn set_params(&mut self, params: SimParams) -> Result<(), crate::sim::params::ParamError> {
        params.validate()?;
        if let Some(w) = &params.wave_maker {
            w.validate_in(self.scene.domain.min, self.scene.domain.max)?;
        }
        if let Ok(mut p) = self.shared.params.lock() {
            *p = params.clone();
        }
        self.scene.solver = params;
        Ok(())
    }

    /// The newest finished frame, if one came since the last call; `previous` (the one shown so far) is
    /// handed back to the ranks for reuse.
    pub(super) fn take_frame(&self, previous: Option<Offscreen>) -> Option<Offscreen> {
        let frame = self.shared.latest.lock().ok()?.take()?;
        if let (Some(p), Ok(mut spare)) = (previous, self.shared.spare.lock()) {
            spare.push(p);
        }
        Some(frame)
    }

    /// What the per-GPU panel shows: every rank's figures of its last step (none before the first), the
    /// axis and the simulated time.
    pub(super) fn info(&self) -> GpusInfo {
        let ranks = self.shared.figures.lock().map(|f| f.clone()).unwrap_or_default();
        let (axis, time) = self.shared.axis_time.lock().map(|a| *a).unwrap_or((0, 0.0));
        GpusInfo { gpus: self.ranks, ranks, axis, time }
    }

    /// Why the ranks stopped, once (`None` while they run).
    pub(super) fn take_error(&self) -> Option<String> {
        self.shared.error.lock().ok()?.take()
    }
}

/// Starts `scene` on `ranks` ranks, rank 0 on `ctx` (the window's device), in the background: the result
/// (the running [`RankWorld`] once every rank has built its simulation, or why not) comes through the
/// returned channel; `cancelled` set before then stops the ranks. `control`: the first frame's wishes.
/// Errors (through the channel): emitters or sinks, the scene, a domain too thin or too few particles for
/// the ranks, a device or simulation a rank cannot make.
pub(super) fn start(
    ctx: &GpuContext,
    mut scene: Scene,
    ranks: usize,
    control: Control,
    cancelled: Arc<AtomicBool>,
) -> mpsc::Receiver<Result<RankWorld, RanksError>> {
    let (tx, rx) = mpsc::channel();
    let ctx = ctx.clone();
    let fail = tx.clone();
    let spawned = std::thread::Builder::new().name("ranks".into()).spawn(move || {
        // The window keeps the scene as given (a later build on one GPU scales its dx for a CPU again).
        let given = scene.clone();
        if !scene.bodies.is_empty() {
            let _ = tx.send(Err(ClusterError::Bodies.into()));
            return;
        }
        scene.solver.dx = scene.effective_dx(ctx.is_cpu());
        let params = scene.solver.clone();
        let setup = match scene.build(false) {
            Ok(s) => s,
            Err(e) => return drop(tx.send(Err(e.into()))),
        };
        let all = cluster::initial_particles(&setup, &params);
        let contexts = match cluster::devices::contexts_beside(ctx, ranks) {
            Ok(c) => c,
            Err(e) => return drop(tx.send(Err(e.into()))),
        };
        // For tests: rank 0 composites without the others' layers (the control of tests/window.rs).
        let drop_received = std::env::var_os("WATERVIEW_TEST_DROP_RECEIVED").is_some_and(|v| v == "1");
        let devices: Vec<String> = contexts.iter().map(GpuContext::adapter_summary).collect();
        let shared = Arc::new(Shared {
            control: Mutex::new(control),
            params: Mutex::new(params.clone()),
            snapshot: Mutex::new(None),
            stop: AtomicBool::new(false),
            figures: Mutex::new(Vec::new()),
            axis_time: Mutex::new((0, 0.0)),
            latest: Mutex::new(None),
            spare: Mutex::new(Vec::new()),
            error: Mutex::new(None),
            finished: AtomicBool::new(false),
        });
        let walls = crate::engine::walls::scene_walls_for(&scene, &setup.terrain, &all.pos, params.dx);
        let world = RankWorld {
            scene: given,
            terrain: setup.terrain.clone(),
            obstacles: crate::engine::obstacle_meshes(&setup.obstacles),
            walls: walls.clone(),
            ranks,
            particle_radius: 0.5 * params.dx,
            particles: all.len() as u64,
            shared: shared.clone(),
        };
        // Sent by rank 0 once every rank has built its simulation.
        let ready = Mutex::new(Some((tx, world)));
        let result = cluster::run_threads_with(contexts, |t, c| {
            let mut r = Rank::new(
                t,
                c,
                &scene.domain,
                (&setup.terrain, &setup.obstacles),
                &params,
                SimOptions::default(),
                cfg(&params),
                &all,
            )?;
            if !(scene.emitters.is_empty() && scene.sinks.is_empty()) {
                r.set_sources(&scene.emitters, &scene.sinks)?;
            }
            // Every rank built: the barrier, then the window may show the ranks' frames.
            r.transport().all_reduce(&[0.0], Reduce::Sum).map_err(ClusterError::from)?;
            if r.rank() == 0 {
                if let Some((tx, world)) = ready.lock().ok().and_then(|mut g| g.take()) {
                    if cancelled.load(Ordering::Acquire) || tx.send(Ok(world)).is_err() {
                        shared.stop.store(true, Ordering::Release);
                    }
                }
            }
            frames(r, (&scene, &walls), &shared, &devices, drop_received)
        });
        // The ranks' threads are joined: a RankWorld dropped from here on (or by the window) need not wait.
        shared.finished.store(true, Ordering::Release);
        if let Err(e) = result {
            match ready.lock().ok().and_then(|mut g| g.take()) {
                // Not built: the build's error.
                Some((tx, _world)) => drop(tx.send(Err(e))),
                None => {
                    if let Ok(mut slot) = shared.error.lock() {
                        *slot = Some(format!("the simulation on {ranks} GPUs stopped: {e}"));
                    }
                }
            }
        }
    });
    if let Err(e) = spawned {
        let _ = fail.send(Err(RanksError::Thread(e.to_string())));
    }
    rx
}

fn cfg(params: &crate::sim::SimParams) -> RankConfig {
    RankConfig::for_params(params)
}

/// One rank's frames until the window stops them (see the module docs).
fn frames<T: Transport>(
    mut rank: Rank<T>,
    (scene, walls): (&Scene, &[crate::render::ObstacleMesh]),
    shared: &Shared,
    devices: &[String],
    drop_received: bool,
) -> Result<(), RanksError> {
    let me = rank.rank();
    let ctx = rank.ctx().clone();
    let mut renderer = Renderer::new(&ctx, crate::render::OFFSCREEN_FORMAT, rank.sim().terrain());
    // The obstacles hide the water behind them in every rank's layers.
    renderer.set_obstacles(&ctx, &crate::engine::obstacle_meshes(rank.sim().obstacles()));
    renderer.set_walls(&ctx, walls);
    // The passes' timed queries are resolved and their frames closed every frame (an open profiler frame
    // would gather queries without bound on a GPU with timestamps).
    let mut profiler = Profiler::new(&ctx.device);
    let mut readback = LayerReadback::default();
    let mut target: Option<Offscreen> = None;
    let mut time = 0.0f32;
    // `Rank::new` placed the ghosts: the first frame has them.
    let (owned, ghosts) = rank.counts();
    // The panel's figures before the first step (no times yet).
    let first = RankStats {
        rank: me,
        owned,
        ghosts,
        migrated_in: [0, 0],
        time,
        iterations: (0, 0),
        step_ms: 0.0,
        gpu_ms: None,
        exchange_ms: 0.0,
        exchange_bytes: 0,
        capacity: rank.sim().capacity(),
        grew: false,
        iteration_bytes: 0,
        border_retries: 0,
        read_backs: 0,
        borders: (0..rank.slabs().borders().len()).map(|k| rank.slabs().border(k)).collect(),
    };
    publish(&rank, &first, shared, devices)?;
    loop {
        let started = Instant::now();
        if me == 0 {
            let params = shared.params.lock().ok().map(|p| p.clone());
            let snapshot = shared.control.lock().ok().zip(params).map(|(mut c, p)| {
                let s = c.clone();
                c.step = false;
                (s, p)
            });
            if let Ok(mut slot) = shared.snapshot.lock() {
                *slot = snapshot;
            }
        }
        // Rank 0's stop travels with the barrier, so every rank stops at the same frame.
        let stop = if me == 0 { shared.stop.load(Ordering::Acquire) as u8 as f64 } else { 0.0 };
        let joint = rank.transport().all_reduce(&[stop], Reduce::Max).map_err(ClusterError::from)?;
        let Some((control, params)) = shared.snapshot.lock().ok().and_then(|s| s.clone()) else { return Ok(()) };
        if joint[0] > 0.0 {
            return Ok(());
        }
        // New parameters: every rank takes the same snapshot's before the same step.
        let params = SimParams { dx: rank.sim().params().dx, ..params };
        if &params != rank.sim().params() {
            rank.set_params(&params)?;
        }
        let frame_dt = params.frame_dt;
        // Steps: one frame of simulated time (or one step), the same count on every rank (the time is joint).
        if control.playing || control.step {
            let end = if control.playing { time + frame_dt } else { 0.0 };
            rank.sim().set_frame_end(rank.ctx(), end);
            let mut n = 0;
            loop {
                let stats = rank.step()?;
                time = stats.time;
                n += 1;
                if !control.playing || time >= end || n >= MAX_STEPS_PER_FRAME {
                    break;
                }
            }
            let stats = rank.last_stats().cloned().ok_or(ClusterError::Panicked { rank: me })?;
            publish(&rank, &stats, shared, devices)?;
        }
        // Draw: every rank its layers, rank 0 the frame.
        let size = (control.size.0.max(1), control.size.1.max(1));
        let max = ctx.device.limits().max_texture_dimension_2d;
        if size.0 > max || size.1 > max {
            return Err(RanksError::TooLarge { rank: me, width: size.0, height: size.1, max });
        }
        let t = match target.take().filter(|t| t.size == size) {
            Some(t) => t,
            None => spare_target(shared, size).unwrap_or_else(|| Offscreen::new(&ctx, size)),
        };
        let view = RankView { target: &t, camera: &control.camera, settings: &control.settings, drop_received };
        match rank_frame(&rank, scene, &mut renderer, &mut profiler, &mut readback, view)? {
            (Some(mut enc), _) => {
                profiler.resolve(&mut enc);
                ctx.queue.submit([enc.finish()]);
                profiler.end_frame(&ctx.queue);
                // The newest frame replaces one the UI has not taken, which is drawn into next.
                target = shared.latest.lock().ok().and_then(|mut l| l.replace(t));
            }
            (None, _) => target = Some(t),
        }
        // Paused: a few frames per second are enough for the camera; playing: at most one per 10 ms.
        let pace = Duration::from_millis(if control.playing { 10 } else { 30 });
        if let Some(rest) = pace.checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
}

/// Gathers every rank's figures of `stats` (this rank's) onto every rank; rank 0 puts them, with the
/// slabs and the simulated time, where the panel reads them. Every rank must call it together.
/// Errors: a peer is gone.
fn publish<T: Transport>(
    rank: &Rank<T>,
    stats: &RankStats,
    shared: &Shared,
    devices: &[String],
) -> Result<(), ClusterError> {
    let all = rank.gather(stats)?;
    if rank.rank() != 0 {
        return Ok(());
    }
    let b = &stats.borders;
    let figures = all
        .iter()
        .enumerate()
        .map(|(r, f)| RankFigures {
            device: devices.get(r).cloned().unwrap_or_default(),
            owned: f[0] as u64,
            ghosts: f[1] as u64,
            step_ms: f[2],
            exchange_ms: f[3],
            gpu_ms: f[6].is_finite().then_some(f[6]),
            slab: (
                if r == 0 { f32::NEG_INFINITY } else { b.get(r - 1).copied().unwrap_or(f32::NAN) },
                b.get(r).copied().unwrap_or(f32::INFINITY),
            ),
        })
        .collect();
    if let Ok(mut slot) = shared.figures.lock() {
        *slot = figures;
    }
    if let Ok(mut slot) = shared.axis_time.lock() {
        *slot = (rank.slabs().axis, stats.time);
    }
    Ok(())
}

/// A target of `size` the UI handed back (others of a stale size are dropped).
fn spare_target(shared: &Shared, size: (u32, u32)) -> Option<Offscreen> {
    let mut spare = shared.spare.lock().ok()?;
    spare.retain(|t| t.size == size);
    spare.pop()
}

impl Running {
    /// What the ranks should draw now (camera, the panels' render settings, the window's size, play/step).
    pub(super) fn ranks_control(&self) -> Control {
        let radius = self.world.ranks().map_or(0.05, RankWorld::particle_radius);
        Control {
            camera: self.camera.clone(),
            settings: self.ui.render.settings_for(radius),
            size: self.offscreen.size,
            playing: self.ui.sim.playing,
            step: self.step_requested,
        }
    }

    /// The window's frame on several GPUs: hands the ranks this frame's wishes, copies their newest frame
    /// (if one came) into the window's scene target, and shows in the banner why they stopped, if they did.
    /// Never waits for the ranks.
    pub(super) fn ranks_frame(&mut self, enc: &mut wgpu::CommandEncoder) {
        let control = self.ranks_control();
        let Some(r) = self.world.ranks() else { return };
        r.set_control(control);
        let error = r.take_error();
        if let Some(frame) = r.take_frame(self.ranks_shown.take()) {
            if frame.size == self.offscreen.size {
                let size = wgpu::Extent3d { width: frame.size.0, height: frame.size.1, depth_or_array_layers: 1 };
                enc.copy_texture_to_texture(frame.color.as_image_copy(), self.offscreen.color.as_image_copy(), size);
            }
            self.ranks_shown = Some(frame);
        }
        if let Some(e) = error {
            self.ui.sim.playing = false;
            self.ui.push_error(e);
        }
    }

    /// `WATERVIEW_TEST_SET_GPUS=N` (tests/window.rs): the GPUs field applied with N at frame 5, as its
    /// Apply button does; the app quits 20 frames after the build ended, on the ranks once they have
    /// stepped, and with `WATERVIEW_TEST_GPUS_UNTIL=T` once their clock reached T seconds (the log shows
    /// the outcome).
    pub(super) fn drive_test_set_gpus(&mut self) {
        let Some((n, done)) = self.test_set_gpus else { return };
        if !done && self.frames >= 5 {
            self.test_set_gpus = Some((n, true));
            self.ui.gpus = crate::ui::gpus_panel::GpusField(n);
            self.apply(crate::ui::UiAction::SetGpus(n));
            self.test_set_gpus_ended = None;
        } else if done && self.building.is_none() && self.exit_with.is_none() {
            let at = *self.test_set_gpus_ended.get_or_insert(self.frames);
            // On the ranks: once they have stepped, to WATERVIEW_TEST_GPUS_UNTIL if given (or 600 frames on).
            static UNTIL: std::sync::OnceLock<f32> = std::sync::OnceLock::new();
            let until = *UNTIL.get_or_init(|| {
                std::env::var("WATERVIEW_TEST_GPUS_UNTIL").ok().and_then(|v| v.parse().ok()).unwrap_or(0.0)
            });
            let stepped = self.world.ranks().is_none_or(|r| r.info().time > 0.0 && r.info().time >= until);
            if let (Some(None), Some(r)) = (self.test_rank_params, self.world.ranks()) {
                if stepped && self.frames >= at + 5 {
                    let (time, solver) = (r.info().time, r.scene().solver.clone());
                    self.apply(crate::ui::UiAction::ApplyParams(SimParams {
                        viscosity: 2.0 * solver.viscosity,
                        ..solver
                    }));
                    let how = if self.building.is_some() { "rebuilding the ranks" } else { "live" };
                    log::info!("WATERVIEW_TEST_RANK_PARAMS: viscosity doubled at t = {time} s, {how}");
                    self.test_rank_params = Some(Some(time));
                    self.test_set_gpus_ended = Some(self.frames);
                }
                return;
            }
            // After a parameter change: once the ranks' time has moved on from it.
            let went_on = match (self.test_rank_params, self.world.ranks()) {
                (Some(Some(t0)), Some(r)) => r.info().time > t0,
                _ => true,
            };
            if self.frames >= at + 20 && ((stepped && went_on) || self.frames >= at + 600) {
                let time = self.world.ranks().map(|r| r.info().time);
                for line in
                    self.world.ranks().map(|r| crate::ui::gpus_panel::ranks_log_lines(&r.info())).unwrap_or_default()
                {
                    log::info!("per-GPU panel: {line}");
                }
                log::info!(
                    "WATERVIEW_TEST_SET_GPUS: the scene runs on {} GPU(s), {} particles{}",
                    self.world.ranks().map_or(1, RankWorld::ranks),
                    self.world.particles(),
                    time.map(|t| format!(", the ranks at t = {t} s")).unwrap_or_default()
                );
                self.exit_with = Some(Ok(()));
            }
        }
    }
}
