//! What the panels and shortcuts ask for ([`UiAction`]), applied after the egui pass. A failure goes to
//! the red banner and leaves the current scene running.

use super::Running;
use crate::render::OrbitCamera;
use crate::scene::{Scene, TerrainDesc};
use crate::sim::Simulation;
use crate::ui::capture_panel::CaptureMode;
use crate::ui::{sim_panel::scene_at_dx, UiAction};

impl Running {
    /// Applies one UI action; failures go to the banner and leave the current scene running.
    pub(super) fn apply(&mut self, action: UiAction) {
        match action {
            UiAction::Step => self.step_requested = true,
            UiAction::Screenshot { with_ui } => self.screenshot_requested = Some(with_ui),
            UiAction::ResetCamera => self.camera = OrbitCamera::from_desc(&self.world.scene.camera),
            UiAction::ApplyParams => {
                let Some(sim) = self.world.sim.as_mut() else { return };
                let mut params = self.ui.sim.params.clone();
                let current = sim.params();
                // Spacing and the quantities tied to the buffers change only through a rebuild.
                params.dx = current.dx;
                params.h_over_dx = current.h_over_dx;
                params.rho0 = current.rho0;
                self.ui.sim.param_error = sim.set_params(&self.ctx, &params).err().map(|e| e.to_string());
            }
            UiAction::Reset => {
                let Some(sim) = self.world.sim.as_ref() else {
                    // Nothing ran: try building the scene again (e.g. after a parameter fix).
                    let scene = self.world.scene.clone();
                    self.replace_world(scene, "reset", false);
                    return;
                };
                let mut params = self.ui.sim.params.clone();
                params.dx = sim.params().dx;
                params.h_over_dx = sim.params().h_over_dx;
                params.rho0 = sim.params().rho0;
                match Simulation::new(&self.ctx, &self.world.scene.domain, &self.world.setup, &params) {
                    Ok(mut sim) => {
                        if let Err(e) = sim.set_sources(&self.ctx, &self.ui.scene.emitters, &self.ui.scene.sinks) {
                            self.ui.push_error(format!("emitters and sinks: {e}"));
                        }
                        self.world.sim = Some(sim);
                        self.stats = None;
                        self.offline_sim_replaced("the simulation was reset");
                    }
                    Err(e) => self.ui.push_error(format!("reset failed: {e}")),
                }
            }
            UiAction::Rebuild => {
                let dx = self.ui.sim.dx;
                let mut scene = scene_at_dx(&self.world.scene, dx);
                // Keep the solver parameters edited so far.
                let keep = self.ui.sim.params.clone();
                scene.solver = crate::sim::SimParams { dx: scene.solver.dx, ..keep };
                scene.emitters = self.ui.scene.emitters.clone();
                scene.sinks = self.ui.scene.sinks.clone();
                self.replace_world(scene, &format!("rebuild at dx = {dx} m"), false);
            }
            UiAction::LoadBuiltin(name) => match Scene::builtin(&name) {
                Some(scene) => {
                    if self.replace_world(scene, &format!("built-in scene `{name}`"), true) {
                        self.scene_file = None;
                    }
                }
                None => self.ui.push_error(format!("there is no built-in scene `{name}`")),
            },
            UiAction::LoadScene(path) => match Scene::load(&path) {
                Ok(scene) => {
                    if self.replace_world(scene, &path.display().to_string(), true) {
                        self.scene_file = Some(path);
                    }
                }
                Err(e) => self.ui.push_error(e.to_string()),
            },
            UiAction::OpenSceneDialog => self.open_dialog(false),
            UiAction::SaveSceneDialog => self.open_dialog(true),
            UiAction::SaveScene(path) => self.save_scene(&path),
            UiAction::ReplaceHeightmap(path) => {
                let mut scene = self.world.scene.clone();
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
                self.replace_world(scene, &format!("heightmap {}", path.display()), false);
            }
            UiAction::SetSources => {
                self.world.scene.emitters = self.ui.scene.emitters.clone();
                self.world.scene.sinks = self.ui.scene.sinks.clone();
                if let Some(sim) = self.world.sim.as_mut() {
                    if let Err(e) = sim.set_sources(&self.ctx, &self.ui.scene.emitters, &self.ui.scene.sinks) {
                        self.ui.push_error(format!("emitters and sinks: {e}"));
                    }
                }
            }
            UiAction::ToggleRecording => match self.recording.as_mut() {
                Some(r) if r.offline.is_none() => r.stopping = true,
                Some(_) => {}
                None if self.finishing.is_some() => self.ui.push_error("the previous video is still being completed; try again in a moment"),
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
                    self.end_offline(r.offline);
                    self.ui.capture.status = Some(Ok("Capture cancelled; nothing was written".into()));
                }
            }
        }
    }
}
