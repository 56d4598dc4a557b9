//! What the panels and shortcuts ask for ([`UiAction`]), applied after the egui pass. A failure goes to
//! the red banner and leaves the current scene running.

use super::world::DialogKind;
use super::Running;
use crate::render::OrbitCamera;
use crate::scene::{ObstacleDesc, Scene, TerrainDesc};
use crate::sim::SimParams;
use crate::ui::capture_panel::CaptureMode;
use crate::ui::UiAction;

impl Running {
    /// Applies one UI action; failures go to the banner and leave the current scene running.
    pub(super) fn apply(&mut self, action: UiAction) {
        match action {
            UiAction::Step => self.step_requested = true,
            UiAction::Screenshot { with_ui } => self.screenshot_requested = Some(with_ui),
            UiAction::ResetCamera => self.camera = OrbitCamera::from_desc(&self.world.scene().camera),
            UiAction::ApplyParams(params) => {
                if let Some(r) = self.world.ranks_mut() {
                    // Live on every rank from their next frame, unless the change needs a new build (dx, h,
                    // rho0) or another halo (surface tension on or off): then the ranks are rebuilt.
                    let mut scene = r.scene().clone();
                    let wanted = SimParams { dx: scene.solver.dx, ..params };
                    if wanted == scene.solver {
                        return;
                    }
                    if crate::cluster::live_params(&scene.solver, &wanted) {
                        if let Err(e) = r.set_params(wanted) {
                            self.ui.push_error(format!("parameters not applied: {e}"));
                        }
                    } else {
                        scene.solver = wanted;
                        self.build_world(scene, "new parameters".into(), false, None);
                    }
                    return;
                }
                let Some(engine) = self.world.engine_mut() else { return };
                let result = engine.set_params(&self.ctx, &params);
                self.engine_changed("parameters", result);
            }
            UiAction::Rebuild { dx, h_over_dx, rho0 } => match self.world.engine_mut() {
                Some(engine) => {
                    let params = SimParams { dx, h_over_dx, rho0, ..engine.params().clone() };
                    if engine.params().needs_rebuild(&params) {
                        // As `Engine::set_params` rebuilds (the scene at the new spacing, its parameters and
                        // sources as last applied), in the background.
                        let mut scene = engine.scene().at_dx(dx);
                        scene.solver = params;
                        self.build_world(scene, format!("rebuild at dx = {dx} m"), false, None);
                    } else {
                        let result = engine.set_params(&self.ctx, &params);
                        self.engine_changed(&format!("rebuild at dx = {dx} m"), result);
                    }
                }
                None => {
                    let mut scene = self.world.scene().at_dx(dx);
                    (scene.solver.h_over_dx, scene.solver.rho0) = (h_over_dx, rho0);
                    self.build_world(scene, format!("rebuild at dx = {dx} m"), false, None);
                }
            },
            UiAction::Reset => match self.world.engine_mut() {
                // The scene's water was laid out around the obstacles where they stood: rebuilt around
                // where they stand now.
                Some(engine) if engine.obstacles_moved() => {
                    let scene = engine.scene().clone();
                    self.build_world(scene, "reset with the obstacles moved".into(), false, None);
                }
                Some(engine) => {
                    engine.reset(&self.ctx);
                    self.offline_sim_replaced("the simulation was reset");
                }
                // Nothing ran: try building the scene again (e.g. after a parameter fix).
                None => {
                    let scene = self.world.scene().clone();
                    self.build_world(scene, "reset".into(), false, None);
                }
            },
            UiAction::LoadBuiltin(name) => match Scene::builtin(&name) {
                Some(scene) => self.build_world(scene, format!("built-in scene `{name}`"), true, Some(None)),
                None => self.ui.push_error(format!("there is no built-in scene `{name}`")),
            },
            UiAction::SetGpus(n) => {
                self.gpus = n.clamp(1, crate::cluster::devices::MAX_RANKS);
                let scene = self.world.scene().clone();
                self.build_world(scene, format!("{} GPU(s)", self.gpus), false, None);
            }
            UiAction::LoadScene(path) => match Scene::load(&path) {
                Ok(scene) => self.build_world(scene, path.display().to_string(), true, Some(Some(path))),
                Err(e) => self.ui.push_error(e.to_string()),
            },
            UiAction::OpenSceneDialog => self.open_dialog(DialogKind::Open),
            UiAction::AddObstacleDialog => self.open_dialog(DialogKind::AddObstacle),
            UiAction::AddObstacle(path) => {
                let mut obstacles = self.world.scene().obstacles.clone();
                obstacles.push(ObstacleDesc::on_the_ground(&path, self.world.scene(), self.world.terrain()));
                self.apply(UiAction::SetObstacles(obstacles));
            }
            UiAction::SetObstacles(obstacles) => {
                let mut scene = self.world.scene().clone();
                scene.obstacles = obstacles;
                // Checked before the build: a bad placement is reported and the scene keeps running.
                match scene.validate() {
                    Ok(()) => self.build_world(scene, "the scene with its obstacles".into(), false, None),
                    Err(e) => self.ui.push_error(e.to_string()),
                }
            }
            UiAction::MoveObstacles(obstacles) => match self.world.engine_mut() {
                Some(engine) => {
                    if let Err(e) = engine.move_obstacles(&obstacles) {
                        self.ui.push_error(format!("moving the obstacles: {e}"));
                    }
                }
                // Several GPUs (or nothing built): the ranks take obstacles only when built.
                None => self.apply(UiAction::SetObstacles(obstacles)),
            },
            UiAction::SaveSceneDialog => self.open_dialog(DialogKind::SaveScene),
            UiAction::SaveCheckpointDialog => self.open_dialog(DialogKind::SaveCheckpoint),
            UiAction::ResumeDialog => self.open_dialog(DialogKind::Resume),
            UiAction::SaveCheckpoint(path) => self.save_checkpoint(path),
            UiAction::Resume(path) => self.resume(&path),
            UiAction::SaveScene(path) => self.save_scene(&path),
            UiAction::ReplaceHeightmap(path) => {
                let mut scene = self.world.scene().clone();
                let d = scene.domain;
                let old = scene.terrain.take();
                let abs = path.canonicalize().unwrap_or(path.clone());
                scene.terrain = Some(TerrainDesc {
                    heightmap: abs.display().to_string(),
                    crop: None,
                    extent: [d.max[0] - d.min[0], d.max[2] - d.min[2]],
                    vertical_scale: old.as_ref().map_or(1.0, |t| t.vertical_scale),
                    base: old.as_ref().map_or(d.min[1], |t| t.base),
                });
                self.build_world(scene, format!("heightmap {}", path.display()), false, None);
            }
            UiAction::LoadSky(path) => self.load_sky(path),
            UiAction::CancelBuild => self.cancel_build(),
            UiAction::SetSources { emitters, sinks } => {
                if self.world.ranks().is_some() {
                    self.ui.push_error(
                        "emitters and sinks are edited on one GPU for now: every GPU runs the scene's own; \
                         set GPUs to 1 to edit them",
                    );
                    return;
                }
                let result = match self.world.engine_mut() {
                    Some(engine) => engine.set_sources(&self.ctx, &emitters, &sinks),
                    None => return,
                };
                if let Err(e) = result {
                    self.ui.push_error(format!("emitters and sinks: {e}"));
                }
            }
            UiAction::ToggleRecording => match self.recording.as_mut() {
                Some(r) if r.offline.is_none() => r.stopping = true,
                Some(_) => {}
                None if self.finishing.is_some() => {
                    self.ui.push_error("the previous video is still being completed; try again in a moment")
                }
                None => match self.ui.capture.mode {
                    CaptureMode::Live => self.start_live(),
                    CaptureMode::Offline => self.start_offline(),
                },
            },
            UiAction::StartOffline => {
                if self.recording.is_none() && self.finishing.is_none() {
                    self.start_offline();
                }
            }
            UiAction::CancelOffline => {
                if let Some(r) = self.recording.take() {
                    r.rec.cancel();
                    let particles = self.end_offline(r.offline).map(|p| format!(" ({p})")).unwrap_or_default();
                    self.ui.capture.status = Some(Ok(format!("Capture cancelled; no video was written{particles}")));
                }
            }
        }
    }
}

impl Running {
    /// `WATERVIEW_TEST_MOVE_OBSTACLE=DX` (tests/window.rs): at frame 5 the Scene panel's first obstacle is
    /// moved DX m along x and sent as a drag sends it ([`UiAction::MoveObstacles`]); once it has arrived
    /// and ten more frames have run, the log gets where it is, the particle count and the simulated time,
    /// and the window quits.
    pub(super) fn drive_test_move_obstacle(&mut self) {
        let Some((dx, started)) = self.test_move_obstacle else { return };
        let Some(engine) = self.world.engine() else { return };
        let time = engine.sim().latest_stats().map_or(0.0, |s| s.time);
        match started {
            None if self.frames >= 5 => {
                let mut obstacles = self.ui.scene.obstacles.clone();
                if let Some(o) = obstacles.first_mut() {
                    o.position[0] += dx;
                }
                self.ui.scene.obstacles.clone_from(&obstacles);
                log::info!(
                    "WATERVIEW_TEST_MOVE_OBSTACLE: moving obstacle 1 by {dx} m at t = {time} s, {} particles",
                    self.world.particles()
                );
                self.apply(UiAction::MoveObstacles(obstacles));
                self.test_move_obstacle = Some((dx, Some(self.frames)));
            }
            Some(at) if self.frames >= at + 10 && !engine.sim().obstacles_moving() && self.exit_with.is_none() => {
                let x = engine.sim().obstacles().first().map_or(f32::NAN, |o| o.position.x);
                log::info!(
                    "WATERVIEW_TEST_MOVE_OBSTACLE: obstacle 1 at x = {x} m after {} moves, {} particles, t = {time} s",
                    engine.obstacles_version(),
                    self.world.particles()
                );
                self.exit_with = Some(Ok(()));
            }
            _ => {}
        }
    }
}
