//! Scenes built off the event loop: loading a scene, a built-in, a new heightmap (and rebuilding a scene
//! that could not run) builds the new [`Engine`] on a worker thread ("scene builder", with a clone of the
//! window's GPU context) while the window goes on drawing and stepping the current scene. The panel shows
//! the build's phase and share ([`crate::engine::BuildProgress`], read without locking) with a Cancel
//! button; when the engine arrives it replaces the current one from the next frame, and a build that fails
//! puts its reason in the banner and leaves the current scene as it was. Starting another build cancels
//! the one under way (its result is dropped). With several GPUs chosen (`--gpus N`, the panel's GPUs
//! field) the build is the ranks' ([`super::ranks::start`]): the current scene runs until every rank has
//! built its part, and what the cluster refuses (emitters, a domain too thin) goes to the banner.

use super::ranks::{self, RankWorld, RanksError};
use super::world::World;
use super::Running;
use crate::engine::{BuildOptions, BuildProgress, Engine, EngineError};
use crate::scene::Scene;
use crate::ui::BuildStatus;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// Where the `WATERVIEW_TEST_LOAD_SCENE` hook is ([`Running::drive_test_load`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TestLoad {
    /// Not asked yet.
    Waiting,
    /// The load was asked for; the build runs.
    Started,
    /// The build ended at this frame.
    Ended(u64),
}

/// What a build will deliver: an engine (one GPU) or the ranks (several).
enum Pending {
    One(mpsc::Receiver<Result<Engine, EngineError>>),
    /// The ranks' result and the flag that cancels them.
    Ranks(mpsc::Receiver<Result<RankWorld, RanksError>>, Arc<AtomicBool>),
}

/// A finished build: the world to show, cancelled, or why it failed. (One at a time: sizes do not matter.)
#[allow(clippy::large_enum_variant)]
enum Outcome {
    Built(World),
    Cancelled,
    Failed(String),
}

/// A scene being built on the worker thread.
pub(super) struct Building {
    progress: Arc<BuildProgress>,
    rx: Pending,
    /// What is built, for the log and the banner ("built-in scene `valley`", a file's path).
    what: String,
    /// Move the camera to the new scene's and reset the panels' defaults (a new scene, not a rebuild).
    new_scene: bool,
    /// The scene file to remember once built (`None`: keep the current one; `Some(None)`: a built-in).
    scene_file: Option<Option<PathBuf>>,
    started: Instant,
    /// Frames drawn since the build started.
    frames: u64,
    /// When the last of them was drawn (the build's start before the first), and the longest interval
    /// between two of them (s): the window's longest pause during the build.
    last_frame: Instant,
    longest_gap: f64,
}

impl Running {
    /// Starts building `scene` on the worker thread (cancelling a build under way); see the module docs.
    /// `what` prefixes the messages, `new_scene` moves the camera to the scene's when it is shown, and
    /// `scene_file` (when `Some`) becomes the remembered scene file then.
    pub(super) fn build_world(
        &mut self,
        scene: Scene,
        what: String,
        new_scene: bool,
        scene_file: Option<Option<PathBuf>>,
    ) {
        self.cancel_build();
        let progress = Arc::new(BuildProgress::default());
        let spawned = if self.gpus > 1 {
            let cancelled = Arc::new(AtomicBool::new(false));
            let what = format!("{what} on {} GPUs", self.gpus);
            let rx = ranks::start(&self.ctx, scene, self.gpus, self.ranks_control(), cancelled.clone());
            Ok((Pending::Ranks(rx, cancelled), what))
        } else {
            let (tx, rx) = mpsc::channel();
            let (ctx, shared) = (self.ctx.clone(), progress.clone());
            std::thread::Builder::new()
                .name("scene builder".into())
                .spawn(move || {
                    let _ = tx.send(Engine::new_with_progress(&ctx, scene, BuildOptions::default(), &shared));
                })
                .map(|_| (Pending::One(rx), what.clone()))
        };
        match spawned {
            Ok((rx, what)) => {
                log::info!("{what}: building in the background");
                let now = Instant::now();
                self.building = Some(Building {
                    progress,
                    rx,
                    what,
                    new_scene,
                    scene_file,
                    started: now,
                    frames: 0,
                    last_frame: now,
                    longest_gap: 0.0,
                });
            }
            Err(e) => self.ui.push_error(format!("{what}: cannot start the scene builder: {e}")),
        }
    }

    /// Cancels the build under way, if any: the worker stops at its next check and its result is dropped.
    pub(super) fn cancel_build(&mut self) {
        if let Some(b) = self.building.take() {
            b.progress.cancel();
            if let Pending::Ranks(_, cancelled) = &b.rx {
                cancelled.store(true, Ordering::Release);
            }
            log::info!("{}: build cancelled after {:.1} s", b.what, b.started.elapsed().as_secs_f64());
        }
    }

    /// Takes the finished build, if there is one: its engine replaces the current one, or its error goes
    /// to the banner. Never blocks.
    pub(super) fn poll_build(&mut self) {
        let Some(b) = self.building.as_ref() else { return };
        let received = match &b.rx {
            Pending::One(rx) => rx.try_recv().map(|r| match r {
                Ok(engine) => Outcome::Built(World::Running(engine)),
                Err(EngineError::Cancelled) => Outcome::Cancelled,
                Err(e) => Outcome::Failed(e.to_string()),
            }),
            Pending::Ranks(rx, _) => rx.try_recv().map(|r| match r {
                Ok(ranks) => Outcome::Built(World::Ranks(ranks)),
                Err(e) => Outcome::Failed(e.to_string()),
            }),
        };
        let result = match received {
            Ok(result) => result,
            Err(mpsc::TryRecvError::Empty) => return,
            Err(mpsc::TryRecvError::Disconnected) => {
                let what = b.what.clone();
                self.building = None;
                return self.ui.push_error(format!("{what}: the scene builder stopped without a result (see the log)"));
            }
        };
        let Some(b) = self.building.take() else { return };
        let seconds = b.started.elapsed().as_secs_f64();
        match result {
            Outcome::Built(world) => {
                let gap = b.longest_gap.max(b.last_frame.elapsed().as_secs_f64());
                log::info!(
                    "{}: {} particles, built in {seconds:.1} s; {} frames drawn during the build, {:.0} ms apart at most",
                    b.what,
                    world.particles(),
                    b.frames,
                    gap * 1e3
                );
                self.ui.sim.param_error = None;
                self.show(world, b.new_scene);
                if let Some(file) = b.scene_file {
                    self.scene_file = file;
                }
            }
            Outcome::Cancelled => log::info!("{}: build cancelled", b.what),
            Outcome::Failed(e) => self.ui.push_error(format!("{}: {e}", b.what)),
        }
    }

    /// `WATERVIEW_TEST_LOAD_SCENE=PATH` (tests/window.rs): loads PATH at frame 5, in the background, and
    /// quits two frames after the build has ended (the log says how many frames were drawn during it).
    /// With `WATERVIEW_TEST_CANCEL_BUILD` set, the build is cancelled (as by the panel's Cancel) at the first
    /// frame after it started.
    pub(super) fn drive_test_load(&mut self) {
        let Some((path, state)) = self.test_load_scene.as_mut() else { return };
        match *state {
            TestLoad::Waiting if self.frames >= 5 => {
                let path = path.clone();
                self.test_load_scene = Some((path.clone(), TestLoad::Started));
                self.apply(crate::ui::UiAction::LoadScene(path));
            }
            TestLoad::Started
                if self.building.is_some() && std::env::var_os("WATERVIEW_TEST_CANCEL_BUILD").is_some() =>
            {
                *state = TestLoad::Ended(self.frames);
                self.apply(crate::ui::UiAction::CancelBuild);
            }
            TestLoad::Started if self.building.is_none() => *state = TestLoad::Ended(self.frames),
            TestLoad::Ended(at) if self.frames >= at + 2 && self.exit_with.is_none() => {
                log::info!(
                    "WATERVIEW_TEST_LOAD_SCENE: scene `{}` with {} particles",
                    crate::text::printable(&self.world.scene().name),
                    self.world.sim().map_or(0, |s| s.live_particles())
                );
                self.exit_with = Some(Ok(()));
            }
            _ => {}
        }
    }

    /// Counts a frame drawn while a build runs.
    pub(super) fn count_build_frame(&mut self) {
        if let Some(b) = self.building.as_mut() {
            b.frames += 1;
            b.longest_gap = b.longest_gap.max(b.last_frame.elapsed().as_secs_f64());
            b.last_frame = Instant::now();
        }
    }

    /// The panel's line for the build under way.
    pub(super) fn build_status(&self) -> Option<BuildStatus> {
        let b = self.building.as_ref()?;
        let p = &b.progress;
        let particles = match p.particles() {
            0 => "a scene".to_string(),
            n => format!("{} particles", crate::text::thousands(n)),
        };
        Some(BuildStatus {
            text: format!(
                "building {particles}: {} ({:.0} s)",
                p.phase().describe(),
                b.started.elapsed().as_secs_f64()
            ),
            fraction: p.fraction(),
        })
    }
}
