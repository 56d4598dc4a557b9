//! The scene on show ([`World`]): building it and its simulation, the startup fallbacks, replacing it
//! (loaded, rebuilt, reset), saving it, the native file dialogs (on a thread of their own) and files
//! dropped on the window. A scene that fails to build leaves the current one running.

use super::Running;
use crate::gpu::GpuContext;
use crate::render::OrbitCamera;
use crate::scene::{DroppedFile, Scene, SceneSetup};
use crate::sim::Simulation;
use crate::terrain::Heightfield;
use crate::ui::UiAction;
use anyhow::anyhow;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// The scene being shown and its simulation.
pub(super) struct World {
    pub(super) scene: Scene,
    /// The built scene (initial particles, terrain), kept for Reset.
    pub(super) setup: SceneSetup,
    /// `None` when the scene could not be simulated (the banner says why); the terrain is still drawn.
    pub(super) sim: Option<Simulation>,
}

/// A native file dialog running on its own thread.
pub(super) struct Dialog {
    pub(super) save: bool,
    pub(super) rx: mpsc::Receiver<Option<PathBuf>>,
}

impl Running {
    /// A file dropped on the window: a `.ron` scene opens, a `.png` becomes the terrain.
    pub(super) fn dropped_file(&mut self, path: PathBuf) {
        match crate::scene::classify_dropped_file(&path) {
            Ok(DroppedFile::Scene) => self.apply(UiAction::LoadScene(path)),
            Ok(DroppedFile::Heightmap) => self.apply(UiAction::ReplaceHeightmap(path)),
            Ok(DroppedFile::Sky) => {
                // The renderer loads it on the next frame; a sky it cannot use is reported and the current
                // one stays (see `Renderer::sky_status`).
                self.ui.render.sky_path_text = path.display().to_string();
                self.ui.render.settings.sky_file = Some(path);
            }
            Err(message) => self.ui.push_error(message),
        }
    }

    /// Takes the file chosen in a native dialog, if one has come back. Never blocks.
    pub(super) fn poll_dialog(&mut self) {
        if let Some(d) = self.dialog.as_ref() {
            match d.rx.try_recv() {
                Ok(Some(path)) => {
                    let save = d.save;
                    self.dialog = None;
                    self.ui.scene.dialog_open = false;
                    if save {
                        self.apply(UiAction::SaveScene(path));
                    } else {
                        self.dropped_file(path);
                    }
                }
                Ok(None) | Err(mpsc::TryRecvError::Disconnected) => {
                    self.dialog = None;
                    self.ui.scene.dialog_open = false;
                    self.ui.push_error(
                        "no file chosen (if no dialog appeared, this desktop offers none: type the path in the Scene panel or drop the file on the window)",
                    );
                }
                Err(mpsc::TryRecvError::Empty) => {}
            }
        }
    }

    /// Opens the native file dialog on a thread of its own (never blocks the frame). Where no dialog can
    /// be shown (no portal or desktop), it returns no file and the log says so.
    pub(super) fn open_dialog(&mut self, save: bool) {
        if self.dialog.is_some() {
            return;
        }
        let (tx, rx) = mpsc::channel();
        let start_dir = self.scene_file.as_ref().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_else(|| PathBuf::from("."));
        let name = format!("{}.ron", self.world.scene.name.to_lowercase().replace(char::is_whitespace, "_"));
        let spawned = std::thread::Builder::new().name("file dialog".into()).spawn(move || {
            let result = std::panic::catch_unwind(move || {
                let d = rfd::FileDialog::new().set_directory(start_dir);
                if save {
                    d.add_filter("scene", &["ron"]).set_file_name(name).save_file()
                } else {
                    d.add_filter("scene or heightmap", &["ron", "png"]).pick_file()
                }
            });
            let _ = tx.send(result.ok().flatten());
        });
        match spawned {
            Ok(_) => {
                self.dialog = Some(Dialog { save, rx });
                self.ui.scene.dialog_open = true;
            }
            Err(e) => self.ui.push_error(format!("cannot open a file dialog: {e}")),
        }
    }

    /// Saves the scene with the current solver parameters, sources and camera; relative heightmap paths
    /// are made absolute when they resolve to a file, so the saved scene works from its new folder.
    pub(super) fn save_scene(&mut self, path: &Path) {
        let mut scene = self.world.scene.clone();
        let mut solver = self.ui.sim.params.clone();
        solver.dx = scene.solver.dx;
        if let Some(sim) = self.world.sim.as_ref() {
            solver.h_over_dx = sim.params().h_over_dx;
            solver.rho0 = sim.params().rho0;
        }
        if let Some(o) = self.recording.as_ref().and_then(|r| r.offline.as_ref()) {
            solver.frame_dt = o.saved_frame_dt;
        }
        scene.solver = solver;
        scene.camera = self.camera.to_desc();
        scene.emitters = self.ui.scene.emitters.clone();
        scene.sinks = self.ui.scene.sinks.clone();
        if let Some(t) = scene.terrain.as_mut() {
            let p = scene.base_dir.join(&t.heightmap);
            if Path::new(&t.heightmap).is_relative() && p.is_file() {
                if let Ok(abs) = p.canonicalize() {
                    t.heightmap = abs.display().to_string();
                }
            }
        }
        match scene.save(path) {
            Ok(()) => {
                log::info!("scene saved: {}", path.display());
                self.ui.capture.status = Some(Ok(format!("Scene saved to {}", path.display())));
                self.scene_file = Some(path.to_path_buf());
                self.world.scene.base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                if let (Some(a), Some(b)) = (self.world.scene.terrain.as_mut(), scene.terrain.as_ref()) {
                    a.heightmap = b.heightmap.clone();
                }
            }
            Err(e) => self.ui.push_error(format!("cannot save the scene: {e}")),
        }
    }

    /// Builds `scene` and its simulation; on success it replaces the current world (and, when
    /// `new_scene`, the camera and the edited parameters) and returns true; on failure the banner shows
    /// why and the current world stays.
    pub(super) fn replace_world(&mut self, scene: Scene, what: &str, new_scene: bool) -> bool {
        let mut world = match build_world(&self.ctx, scene) {
            Ok(w) => w,
            Err(e) => {
                self.ui.push_error(format!("{what}: {e}"));
                return false;
            }
        };
        log::info!("{what}: {} particles", world.sim.as_ref().map_or(0, |s| s.particle_count()));
        if let Some(sim) = world.sim.as_mut() {
            if !world.scene.emitters.is_empty() || !world.scene.sinks.is_empty() {
                if let Err(e) = sim.set_sources(&self.ctx, &world.scene.emitters, &world.scene.sinks) {
                    self.ui.push_error(format!("{what}: emitters and sinks: {e}"));
                }
            }
        }
        self.renderer.set_terrain(&self.ctx, &world.setup.terrain);
        if let Some(hdr) = self.hdr_renderer.as_mut() {
            hdr.set_terrain(&self.ctx, &world.setup.terrain);
        }
        if new_scene {
            self.camera = OrbitCamera::from_desc(&world.scene.camera);
            self.ui.sim.dx_anchor = world.scene.effective_dx(self.ctx.is_cpu());
            self.fly_speed = domain_size(&world.scene) * 0.1;
        }
        self.ui.scene.sync_from(&world.scene);
        if let Some(sim) = world.sim.as_ref() {
            self.ui.sim.sync_from(sim);
        }
        self.world = world;
        self.stats = None;
        self.offline_sim_replaced(&format!("the simulation was replaced ({what})"));
        true
    }
}

/// Largest side of the scene's domain, metres.
pub(super) fn domain_size(scene: &Scene) -> f32 {
    (0..3).map(|i| scene.domain.max[i] - scene.domain.min[i]).fold(1e-3f32, f32::max)
}

/// The solver parameters a scene runs with on this adapter: its own, at its effective dx.
pub(super) fn scene_params(scene: &Scene, on_cpu: bool) -> crate::sim::SimParams {
    crate::sim::SimParams { dx: scene.effective_dx(on_cpu), ..scene.solver.clone() }
}

/// Builds a scene and its simulation. Errors as text, ready for the banner.
pub(super) fn build_world(ctx: &GpuContext, scene: Scene) -> Result<World, String> {
    let on_cpu = ctx.is_cpu();
    let setup = scene.build(on_cpu).map_err(|e| e.to_string())?;
    let params = scene_params(&scene, on_cpu);
    let sim = Simulation::new(ctx, &scene.domain, &setup, &params).map_err(|e| e.to_string())?;
    Ok(World { scene, setup, sim: Some(sim) })
}

/// The first world: the given scene file, else (or if it fails) the built-in valley; if even that cannot be
/// simulated, the valley's terrain without water (or a flat floor), with the reasons in `errors`.
pub(super) fn startup_world(ctx: &GpuContext, path: Option<&Path>, errors: &mut Vec<String>) -> anyhow::Result<World> {
    if let Some(path) = path {
        match Scene::load(path).map_err(|e| e.to_string()).and_then(|s| build_world(ctx, s)) {
            Ok(w) => return Ok(w),
            Err(e) => errors.push(format!("{e} (showing the built-in valley instead)")),
        }
    }
    let valley = Scene::builtin("valley").ok_or_else(|| anyhow!("the built-in scene `valley` is missing"))?;
    match build_world(ctx, valley.clone()) {
        Ok(w) => Ok(w),
        Err(e) => {
            errors.push(format!("built-in scene `valley`: {e}"));
            let setup = valley.build(ctx.is_cpu()).unwrap_or_else(|_| {
                let d = valley.domain;
                SceneSetup {
                    positions: Vec::new(),
                    velocities: Vec::new(),
                    terrain: Heightfield::flat(
                        glam::Vec2::new(d.min[0], d.min[2]),
                        glam::Vec2::new(d.max[0] - d.min[0], d.max[2] - d.min[2]),
                        d.min[1],
                    ),
                }
            });
            Ok(World { scene: valley, setup, sim: None })
        }
    }
}
