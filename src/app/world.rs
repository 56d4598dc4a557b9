//! The scene on show ([`World`]): its engine (every build and rebuild goes through [`Engine`]), the startup
//! fallbacks, replacing it (loaded, rebuilt), saving it, the native file dialogs (on a thread of their own)
//! and files dropped on the window. A scene that fails to build leaves the current one running.

use super::ranks::RankWorld;
use super::Running;
use crate::engine::{BuildOptions, Engine, EngineError};
use crate::gpu::GpuContext;
use crate::render::OrbitCamera;
use crate::scene::{DroppedFile, Scene};
use crate::sim::Simulation;
use crate::terrain::Heightfield;
use crate::ui::UiAction;
use anyhow::anyhow;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// The scene being shown. (One lives at a time, so the variants' sizes do not matter.)
#[allow(clippy::large_enum_variant)]
pub(super) enum World {
    /// The scene and its simulation.
    Running(Engine),
    /// Not even the startup scene could be simulated (the banner says why): its scene and terrain are
    /// shown without water; Reset tries to build it again.
    Unbuilt { scene: Scene, terrain: Heightfield },
    /// The scene decomposed over several GPUs (`super::ranks`).
    Ranks(RankWorld),
}

impl World {
    pub(super) fn scene(&self) -> &Scene {
        match self {
            World::Running(e) => e.scene(),
            World::Unbuilt { scene, .. } => scene,
            World::Ranks(r) => r.scene(),
        }
    }

    /// The terrain drawn.
    pub(super) fn terrain(&self) -> &Heightfield {
        match self {
            World::Running(e) => e.terrain(),
            World::Unbuilt { terrain, .. } => terrain,
            World::Ranks(r) => r.terrain(),
        }
    }

    /// The static obstacles drawn, world space (none while unbuilt).
    pub(super) fn obstacle_meshes(&self) -> Vec<crate::render::ObstacleMesh> {
        match self {
            World::Running(e) => e.obstacle_meshes(),
            World::Ranks(r) => r.obstacle_meshes().to_vec(),
            World::Unbuilt { .. } => Vec::new(),
        }
    }

    /// The walls that hold a terrain scene's water ([`crate::engine::walls`]; none while unbuilt).
    pub(super) fn wall_meshes(&self) -> Vec<crate::render::ObstacleMesh> {
        match self {
            World::Running(e) => e.wall_meshes(),
            World::Ranks(r) => r.wall_meshes().to_vec(),
            World::Unbuilt { .. } => Vec::new(),
        }
    }

    pub(super) fn engine(&self) -> Option<&Engine> {
        match self {
            World::Running(e) => Some(e),
            World::Unbuilt { .. } | World::Ranks(_) => None,
        }
    }

    pub(super) fn engine_mut(&mut self) -> Option<&mut Engine> {
        match self {
            World::Running(e) => Some(e),
            World::Unbuilt { .. } | World::Ranks(_) => None,
        }
    }

    /// Logs the scene's name and particle count (as the window starts).
    fn logged(self) -> Self {
        if let Some(e) = self.engine() {
            log::info!(
                "scene `{}`: {} particles, dx = {} m",
                crate::text::printable(&e.scene().name),
                e.live_particles(),
                e.params().dx
            );
        }
        self
    }

    /// The ranks, when the scene runs on several GPUs.
    pub(super) fn ranks(&self) -> Option<&RankWorld> {
        match self {
            World::Ranks(r) => Some(r),
            _ => None,
        }
    }

    /// The ranks, mutable (their parameters change live).
    pub(super) fn ranks_mut(&mut self) -> Option<&mut RankWorld> {
        match self {
            World::Ranks(r) => Some(r),
            _ => None,
        }
    }

    /// Particles simulated (0 when nothing runs).
    pub(super) fn particles(&self) -> u64 {
        match self {
            World::Running(e) => e.live_particles() as u64,
            World::Unbuilt { .. } => 0,
            World::Ranks(r) => r.particles(),
        }
    }

    pub(super) fn sim(&self) -> Option<&Simulation> {
        self.engine().map(Engine::sim)
    }

    pub(super) fn sim_mut(&mut self) -> Option<&mut Simulation> {
        self.engine_mut().map(Engine::sim_mut)
    }
}

/// A native file dialog running on its own thread.
pub(super) struct Dialog {
    pub(super) kind: DialogKind,
    pub(super) rx: mpsc::Receiver<Option<PathBuf>>,
}

/// What a file dialog chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DialogKind {
    /// A scene, heightmap or sky to open.
    Open,
    /// Where to save the scene.
    SaveScene,
    /// Where to save a checkpoint.
    SaveCheckpoint,
    /// A checkpoint to resume.
    Resume,
    /// A mesh to add as a static obstacle.
    AddObstacle,
}

impl Running {
    /// A file dropped on the window: a `.ron` scene opens, a 16-bit `.png` becomes the terrain, another
    /// image or a folder the sky.
    pub(super) fn dropped_file(&mut self, path: PathBuf) {
        match crate::scene::classify_dropped_file(&path) {
            Ok(DroppedFile::Scene) => self.apply(UiAction::LoadScene(path)),
            Ok(DroppedFile::Heightmap) => self.apply(UiAction::ReplaceHeightmap(path)),
            // Decoded on a worker thread; a sky that cannot be used goes to the banner and the current one
            // stays (`app::sky`).
            Ok(DroppedFile::Sky) => self.apply(UiAction::LoadSky(Some(path))),
            Err(e) => self.ui.push_error(e.to_string()),
        }
    }

    /// Takes the file chosen in a native dialog, if one has come back. Never blocks.
    pub(super) fn poll_dialog(&mut self) {
        if let Some(d) = self.dialog.as_ref() {
            match d.rx.try_recv() {
                Ok(Some(path)) => {
                    let kind = d.kind;
                    self.dialog = None;
                    self.ui.scene.dialog_open = false;
                    match kind {
                        DialogKind::SaveScene => self.apply(UiAction::SaveScene(path)),
                        DialogKind::Open => self.dropped_file(path),
                        DialogKind::SaveCheckpoint => self.apply(UiAction::SaveCheckpoint(path)),
                        DialogKind::Resume => self.apply(UiAction::Resume(path)),
                        DialogKind::AddObstacle => self.apply(UiAction::AddObstacle(path)),
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
    pub(super) fn open_dialog(&mut self, kind: DialogKind) {
        if self.dialog.is_some() {
            return;
        }
        let (tx, rx) = mpsc::channel();
        let start_dir = self
            .scene_file
            .as_ref()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        let stem = file_stem_for(&self.world.scene().name);
        let spawned = std::thread::Builder::new().name("file dialog".into()).spawn(move || {
            let result = std::panic::catch_unwind(move || {
                let d = rfd::FileDialog::new().set_directory(start_dir);
                match kind {
                    DialogKind::SaveScene => {
                        d.add_filter("scene", &["ron"]).set_file_name(format!("{stem}.ron")).save_file()
                    }
                    DialogKind::Open => d.add_filter("scene or heightmap", &["ron", "png"]).pick_file(),
                    DialogKind::SaveCheckpoint => {
                        d.add_filter("checkpoint", &["wvc"]).set_file_name(format!("{stem}.wvc")).save_file()
                    }
                    DialogKind::Resume => d.add_filter("checkpoint", &["wvc"]).pick_file(),
                    DialogKind::AddObstacle => d.add_filter("mesh", &["obj", "stl", "gltf", "glb"]).pick_file(),
                }
            });
            let _ = tx.send(result.ok().flatten());
        });
        match spawned {
            Ok(_) => {
                self.dialog = Some(Dialog { kind, rx });
                self.ui.scene.dialog_open = true;
            }
            Err(e) => self.ui.push_error(format!("cannot open a file dialog: {e}")),
        }
    }

    /// Saves the scene with the current solver parameters, sources and camera; relative heightmap and
    /// fluid-file paths are made absolute when they resolve to a file, so the saved scene works from its
    /// new folder.
    pub(super) fn save_scene(&mut self, path: &Path) {
        let mut scene = self.world.scene().clone();
        if let Some(o) = self.recording.as_ref().and_then(|r| r.offline.as_ref()) {
            scene.solver.frame_dt = o.saved_frame_dt;
        }
        scene.camera = self.camera.to_desc();
        if let Some(t) = scene.terrain.as_mut() {
            let p = scene.base_dir.join(&t.heightmap);
            if Path::new(&t.heightmap).is_relative() && p.is_file() {
                if let Ok(abs) = p.canonicalize() {
                    t.heightmap = abs.display().to_string();
                }
            }
        }
        for f in &mut scene.fluid_files {
            let p = scene.base_dir.join(&f.path);
            if Path::new(&f.path).is_relative() && p.is_file() {
                if let Ok(abs) = p.canonicalize() {
                    f.path = abs.display().to_string();
                }
            }
        }
        match scene.save(path) {
            Ok(()) => {
                log::info!("scene saved: {}", path.display());
                self.ui.capture.status = Some(Ok(format!("Scene saved to {}", path.display())));
                self.scene_file = Some(path.to_path_buf());
                if let Some(engine) = self.world.engine_mut() {
                    engine.moved_to(path, &scene);
                }
            }
            Err(e) => self.ui.push_error(format!("cannot save the scene: {e}")),
        }
    }

    /// Builds `scene` through the engine; on success it replaces the current world (and, when
    /// `new_scene`, the camera) and returns true; on failure the banner shows why (prefixed by `what`)
    /// and the current world stays.
    pub(super) fn replace_world(&mut self, scene: Scene, what: &str, new_scene: bool) -> bool {
        match Engine::new(&self.ctx, scene, BuildOptions::default()) {
            Ok(engine) => {
                log::info!("{what}: {} particles", engine.live_particles());
                self.show(World::Running(engine), new_scene);
                true
            }
            Err(e) => {
                self.ui.push_error(format!("{what}: {e}"));
                false
            }
        }
    }

    /// Shows `world` from the next frame: the renderers get its terrain, the panels its scene and
    /// parameters, a running offline capture ends; `new_scene` also moves the camera to the scene's.
    pub(super) fn show(&mut self, world: World, new_scene: bool) {
        let (obstacles, walls) = (world.obstacle_meshes(), world.wall_meshes());
        self.renderer.set_terrain(&self.ctx, world.terrain());
        self.renderer.set_obstacles(&self.ctx, &obstacles);
        self.renderer.set_walls(&self.ctx, &walls);
        if let Some(hdr) = self.hdr_renderer.as_mut() {
            hdr.set_terrain(&self.ctx, world.terrain());
            hdr.set_obstacles(&self.ctx, &obstacles);
            hdr.set_walls(&self.ctx, &walls);
        }
        let scene = world.scene();
        if new_scene {
            self.camera = OrbitCamera::from_desc(&scene.camera);
            self.ui.sim.dx_anchor = scene.effective_dx(self.ctx.is_cpu());
            self.fly_speed = domain_size(scene) * 0.1;
            self.ui.sim.defaults = scene.solver.clone();
        }
        self.ui.scene.sync_from(scene);
        if let Some(sim) = world.sim() {
            self.ui.sim.sync_from(sim);
        }
        self.world = world;
        self.offline_sim_replaced("the simulation was replaced");
    }

    /// Reports the outcome of an engine change that may have rebuilt the simulation: on success the
    /// panels take the parameters in use (and a rebuild ends an offline capture); on error the banner
    /// shows `what` and the reason.
    pub(super) fn engine_changed(&mut self, what: &str, result: Result<crate::engine::Applied, EngineError>) {
        match result {
            Ok(applied) => {
                self.ui.sim.param_error = None;
                if let Some(sim) = self.world.sim() {
                    self.ui.sim.sync_from(sim);
                }
                if applied == crate::engine::Applied::Rebuilt {
                    self.offline_sim_replaced(&format!("the simulation was rebuilt ({what})"));
                }
            }
            Err(e) => {
                self.ui.sim.param_error = Some(e.to_string());
                self.ui.push_error(format!("{what}: {e}"));
            }
        }
    }
}

/// Largest side of the scene's domain, metres.
pub(super) fn domain_size(scene: &Scene) -> f32 {
    (0..3).map(|i| scene.domain.max[i] - scene.domain.min[i]).fold(1e-3f32, f32::max)
}

/// The first world: the given scene file, else (or if it fails) the built-in valley; if even that cannot be
/// simulated, the valley's terrain without water (or a flat floor), with the reasons in `errors`.
pub(super) fn startup_world(ctx: &GpuContext, path: Option<&Path>, errors: &mut Vec<String>) -> anyhow::Result<World> {
    if let Some(path) = path {
        match Scene::load(path).map_err(EngineError::from).and_then(|s| Engine::new(ctx, s, BuildOptions::default())) {
            Ok(e) => return Ok(World::Running(e).logged()),
            Err(e) => errors.push(format!("{e} (showing the built-in valley instead)")),
        }
    }
    let valley = Scene::builtin("valley").ok_or_else(|| anyhow!("the built-in scene `valley` is missing"))?;
    match Engine::new(ctx, valley.clone(), BuildOptions::default()) {
        Ok(e) => Ok(World::Running(e).logged()),
        Err(e) => {
            errors.push(format!("built-in scene `valley`: {e}"));
            let terrain =
                valley.at_dx(valley.effective_dx(ctx.is_cpu())).build(false).map(|s| s.terrain).unwrap_or_else(|_| {
                    let d = valley.domain;
                    Heightfield::flat(
                        glam::Vec2::new(d.min[0], d.min[2]),
                        glam::Vec2::new(d.max[0] - d.min[0], d.max[2] - d.min[2]),
                        d.min[1],
                    )
                });
            Ok(World::Unbuilt { scene: valley, terrain })
        }
    }
}

/// A file name stem for a scene called `name`: lower case, letters, digits, `-` and `_` only (white space
/// and everything else become `_`; "scene" when nothing is left), at most 64 characters.
fn file_stem_for(name: &str) -> String {
    let stem: String = name
        .trim()
        .chars()
        .take(64)
        .map(|c| if c.is_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect::<String>()
        .to_lowercase();
    if stem.trim_matches('_').is_empty() {
        "scene".into()
    } else {
        stem
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_stems_keep_letters_and_digits_only() {
        assert_eq!(super::file_stem_for("Valley flood"), "valley_flood");
        assert_eq!(super::file_stem_for("../../etc/passwd\u{1b}[2J"), "______etc_passwd__2j");
        assert_eq!(super::file_stem_for("\u{1b}\n"), "scene");
        assert_eq!(super::file_stem_for(&"x".repeat(500)).len(), 64);
    }
}
