//! The egui panels of the window, one per file, drawn into one collapsible left side panel, plus the red
//! error banner across the top. Panels never touch the engine: they edit their own state and return
//! [`UiAction`]s, which the app applies after the egui pass (`src/app/actions.rs`; so a failed action shows
//! up in the banner on the next frame and the running scene is left as it was).

pub mod capture_panel;
pub mod foam_panel;
pub mod gpus_panel;
pub mod help;
pub mod render_panel;
pub mod scene_panel;
pub mod sim_panel;
pub mod sky_panel;
pub mod stats_panel;

use crate::gpu::{GpuContext, PassTime};
use crate::scene::{Emitter, Scene, Sink};
use crate::sim::{SimParams, SimStats, Simulation};
use std::path::PathBuf;

/// Something the user asked for that needs the engine; applied by the app after drawing.
#[derive(Clone, Debug, PartialEq)]
pub enum UiAction {
    /// Advance the paused simulation by one step.
    Step,
    /// Restart the current scene from its initial particles (current solver parameters and sources kept).
    Reset,
    /// Build the scene again at spacing `dx` (metres), smoothing length ratio `h_over_dx` and rest density
    /// `rho0` (kg/m^3), the other parameters and the sources kept; the water restarts.
    Rebuild { dx: f32, h_over_dx: f32, rho0: f32 },
    /// Apply these solver parameters (live; a change of dx, h/dx or rho0 rebuilds, see
    /// `SimParams::needs_rebuild`).
    ApplyParams(SimParams),
    /// Load a scene file.
    LoadScene(PathBuf),
    /// Decompose the scene over this many GPUs (1 ..= 64; a rebuild, `src/app/ranks.rs`).
    SetGpus(usize),
    /// Load a built-in scene by name.
    LoadBuiltin(String),
    /// Build the current scene again with these static obstacles (the panel's edited list: one added or
    /// removed; the water starts again).
    SetObstacles(Vec<crate::scene::ObstacleDesc>),
    /// Move, turn and scale the static obstacles to these placements live (the same obstacles; the water
    /// goes on: `Engine::move_obstacles`). Where the scene runs on several GPUs, a rebuild.
    MoveObstacles(Vec<crate::scene::ObstacleDesc>),
    /// Open the file dialog for a mesh to add as a static obstacle.
    AddObstacleDialog,
    /// Add the mesh at this path as a static obstacle (on the ground at the domain's centre) and rebuild.
    AddObstacle(std::path::PathBuf),
    /// Put the camera back where the scene places it.
    ResetCamera,
    /// Save a PNG of the next frame: the scene alone, or with the UI drawn on it (at the capture panel's
    /// resolution multiplier).
    Screenshot { with_ui: bool },
    /// Open a scene file or heightmap through the native file dialog.
    OpenSceneDialog,
    /// Save the scene (with the current parameters, sources and camera) through the native file dialog.
    SaveSceneDialog,
    /// Save the scene to this path.
    SaveScene(PathBuf),
    /// Use this 16-bit PNG as the current scene's terrain.
    ReplaceHeightmap(PathBuf),
    /// Show the sky in this file or folder (decoded on a worker thread; the current sky stays until it is
    /// ready), or the generated sky when `None`.
    LoadSky(Option<PathBuf>),
    /// Use these inflows and outflows, live (the emitters' pool grows as needed, the water kept).
    SetSources { emitters: Vec<Emitter>, sinks: Vec<Sink> },
    /// Start or stop a live recording.
    ToggleRecording,
    /// Start an offline capture (frames exactly 1/fps simulated seconds apart) with the capture panel's
    /// settings.
    StartOffline,
    /// Cancel the offline capture (its file is deleted).
    CancelOffline,
    /// Choose where to save a checkpoint of the whole simulation state (native file dialog).
    SaveCheckpointDialog,
    /// Choose a checkpoint to resume (native file dialog).
    ResumeDialog,
    /// Save a checkpoint to this path: the state comes back from the GPU asynchronously and is written on
    /// a worker thread (the frame never waits).
    SaveCheckpoint(PathBuf),
    /// Resume the checkpoint at this path: its scene, parameters, sources and state replace the running
    /// scene (which keeps running if it cannot be resumed).
    Resume(PathBuf),
    /// Stop the scene being built in the background (the current scene goes on).
    CancelBuild,
}

/// Everything the panels edit or remember between frames.
pub struct UiState {
    /// F2 hides/shows the side panel (the error banner stays).
    pub show_panels: bool,
    /// F1 or ? shows the shortcuts.
    pub show_help: bool,
    /// Width of the side panel, points (remembered between runs).
    pub panel_width: f32,
    pub sim: sim_panel::SimPanelState,
    pub scene: scene_panel::ScenePanelState,
    pub render: render_panel::RenderPanelState,
    pub capture: capture_panel::CapturePanelState,
    pub stats: stats_panel::FrameTimer,
    pub history: stats_panel::History,
    /// The GPUs field as edited.
    pub gpus: gpus_panel::GpusField,
    /// Messages of failed actions, shown in the red banner until dismissed (oldest first).
    pub errors: Vec<String>,
}

/// Read-only view of the engine the panels display.
pub struct FrameInfo<'a> {
    pub ctx: &'a GpuContext,
    pub scene: &'a Scene,
    /// `None` when the scene could not be built (the banner says why).
    pub sim: Option<&'a Simulation>,
    /// Newest statistics read back from the GPU (a frame or more old).
    pub stats: Option<&'a SimStats>,
    /// Per-pass GPU times of the latest finished frame.
    pub gpu_times: &'a [PassTime],
    /// The recording in progress, if any.
    pub capture: &'a capture_panel::CaptureStatus,
    /// The camera is in fly mode.
    pub fly: bool,
    /// A scene being built in the background, if any.
    pub building: Option<BuildStatus>,
    /// The GPUs the scene runs on, with the per-GPU figures on several.
    pub gpus: &'a gpus_panel::GpusInfo,
}

impl FrameInfo<'_> {
    /// Particles simulated: the simulation's live count, or on several GPUs the ranks' owned particles.
    pub fn particles(&self) -> u64 {
        match self.sim {
            Some(s) => s.live_particles() as u64,
            None => self.gpus.ranks.iter().map(|r| r.owned).sum(),
        }
    }
}

/// The panel's line for a scene built in the background (`app::build`).
#[derive(Clone, Debug, PartialEq)]
pub struct BuildStatus {
    /// "building 4 194 304 particles: laying out particles (3 s)".
    pub text: String,
    /// Share done, 0 ..= 1.
    pub fraction: f32,
}

/// Most messages kept in the banner; older ones are dropped first.
const MAX_ERRORS: usize = 6;
/// Opacity of the side panel's background (0..1): the scene shows through it a little.
const PANEL_OPACITY: f32 = 0.88;

impl UiState {
    pub fn new(scene: &Scene, sim: Option<&Simulation>, on_cpu: bool) -> Self {
        Self {
            show_panels: true,
            show_help: false,
            panel_width: 320.0,
            sim: sim_panel::SimPanelState::new(scene, sim, on_cpu),
            scene: scene_panel::ScenePanelState::new(scene),
            render: render_panel::RenderPanelState::for_adapter(on_cpu),
            capture: capture_panel::CapturePanelState::default(),
            stats: stats_panel::FrameTimer::default(),
            history: stats_panel::History::default(),
            gpus: gpus_panel::GpusField::default(),
            errors: Vec::new(),
        }
    }

    /// Adds a message to the banner (and the log). A repeat of the newest message is not added again.
    pub fn push_error(&mut self, message: impl Into<String>) {
        let message = message.into();
        log::error!("{message}");
        if self.errors.last() == Some(&message) {
            return;
        }
        self.errors.push(message);
        if self.errors.len() > MAX_ERRORS {
            self.errors.remove(0);
        }
    }
}

/// Draws the error banner and (unless hidden) the side panel; returns the actions to apply.
pub fn draw_ui(ui: &mut egui::Ui, state: &mut UiState, info: &FrameInfo<'_>) -> Vec<UiAction> {
    let mut actions = Vec::new();
    error_banner_ui(ui, &mut state.errors);
    if state.show_panels {
        // Translucent: the scene is drawn under the whole window and centred beside the panel.
        let fill = ui.style().visuals.panel_fill.gamma_multiply(PANEL_OPACITY);
        let frame = egui::Frame::side_top_panel(ui.style()).fill(fill);
        let panel = egui::Panel::left("waterview_panels")
            .default_size(state.panel_width)
            .resizable(true)
            .frame(frame)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().auto_shrink([false, false]).show(ui, |ui| {
                    ui.horizontal(|ui| {
                        ui.heading("waterview");
                        let n = info.particles();
                        ui.label(format!("{:.1} FPS, {} particles", state.stats.fps(), crate::text::thousands(n)));
                    });
                    ui.weak("F1 help, F2 panels, Space play/pause, F9 record, F12 screenshot, V fly, F frame fluid");
                    if let Some(b) = &info.building {
                        actions.extend(build_status_ui(ui, b));
                    }
                    ui.separator();
                    actions.extend(sim_panel::sim_panel_ui(ui, &mut state.sim, info));
                    actions.extend(gpus_panel::gpus_panel_ui(ui, &mut state.gpus, info.gpus));
                    actions.extend(scene_panel::scene_panel_ui(ui, &mut state.scene, info));
                    actions.extend(capture_panel::capture_panel_ui(
                        ui,
                        &mut state.capture,
                        info.capture,
                        state.render.capture_with_ui,
                    ));
                    actions.extend(render_panel::render_panel_ui(ui, &mut state.render));
                    actions.extend(foam_panel::foam_panel_ui(ui, &mut state.render, &mut state.sim, info));
                    stats_panel::stats_panel_ui(ui, &mut state.stats, &state.history, info);
                });
            });
        state.panel_width = panel.response.rect.width();
    }
    overlay_ui(ui, info);
    help::help_ui(ui, &mut state.show_help);
    actions
}

/// The background build's line: its text, a progress bar and Cancel.
fn build_status_ui(ui: &mut egui::Ui, b: &BuildStatus) -> Option<UiAction> {
    ui.label(&b.text);
    let mut action = None;
    ui.horizontal(|ui| {
        if ui.button("Cancel").on_hover_text("Stop building; the current scene goes on").clicked() {
            action = Some(UiAction::CancelBuild);
        }
        ui.add(egui::ProgressBar::new(b.fraction).show_percentage());
    });
    action
}

/// Indicators over the scene (not part of any capture without the UI): recording, fly mode.
fn overlay_ui(ui: &mut egui::Ui, info: &FrameInfo<'_>) {
    let c = info.capture;
    if !c.recording && !c.finishing && !info.fly {
        return;
    }
    egui::Area::new(egui::Id::unique("waterview overlay"))
        .anchor(egui::Align2::RIGHT_TOP, egui::vec2(-12.0, 12.0))
        .interactable(false)
        .show(ui.ctx(), |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                if c.recording {
                    let text = if c.offline {
                        format!("REC offline {} / {}", c.written, c.total)
                    } else {
                        format!("REC {:.1} s", c.video_s)
                    };
                    ui.add(
                        egui::Label::new(
                            egui::RichText::new(text).color(egui::Color32::from_rgb(255, 60, 60)).strong(),
                        )
                        .wrap_mode(egui::TextWrapMode::Extend),
                    );
                } else if c.finishing {
                    ui.label("completing the video…");
                }
                if info.fly {
                    ui.add(
                        egui::Label::new("FLY: W A S D, Q E, drag to look, V to leave")
                            .wrap_mode(egui::TextWrapMode::Extend),
                    );
                }
            });
        });
}

/// Red banner across the top listing `errors`, each wrapped to the window's width with a Dismiss button;
/// nothing when empty.
pub fn error_banner_ui(ui: &mut egui::Ui, errors: &mut Vec<String>) {
    if errors.is_empty() {
        return;
    }
    let frame = egui::Frame::NONE.fill(egui::Color32::from_rgb(150, 20, 20)).inner_margin(6.0);
    egui::Panel::top("error_banner").frame(frame).show(ui, |ui| {
        let mut dismiss = None;
        for (i, message) in errors.iter().enumerate() {
            // Top-aligned so the button stays beside the first line of a message that wraps.
            ui.horizontal_top(|ui| {
                if ui.button("Dismiss").clicked() {
                    dismiss = Some(i);
                }
                let text = egui::RichText::new(format!("Error: {message}")).color(egui::Color32::WHITE).strong();
                ui.add(egui::Label::new(text).wrap());
            });
        }
        if errors.len() > 1 && ui.button("Dismiss all").clicked() {
            dismiss = Some(usize::MAX);
        }
        match dismiss {
            Some(usize::MAX) => errors.clear(),
            Some(i) => {
                errors.remove(i);
            }
            None => {}
        }
    });
}

/// A labelled row in a two-column grid: `label` on the left with `help` on hover, the widget on the right.
pub(crate) fn row<R>(ui: &mut egui::Ui, label: &str, help: &str, add: impl FnOnce(&mut egui::Ui) -> R) -> R {
    ui.label(label).on_hover_text(help);
    let r = add(ui);
    ui.end_row();
    r
}

#[cfg(test)]
mod tests {
    use super::error_banner_ui;

    /// The screen rectangles of every text the closure drew in one egui pass over a `size` screen.
    fn texts_drawn(size: egui::Vec2, mut draw: impl FnMut(&mut egui::Ui)) -> Vec<egui::Rect> {
        let ctx = egui::Context::default();
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, size)),
            ..Default::default()
        };
        // The first pass lays out; the second draws with the sizes egui remembered.
        let _ = ctx.run_ui(input.clone(), &mut draw);
        let output = ctx.run_ui(input, &mut draw);
        fn collect(shape: &egui::Shape, out: &mut Vec<egui::Rect>) {
            match shape {
                egui::Shape::Text(t) => out.push(t.galley.rect.translate(t.pos.to_vec2())),
                egui::Shape::Vec(v) => v.iter().for_each(|s| collect(s, out)),
                _ => {}
            }
        }
        let mut rects = Vec::new();
        output.shapes.iter().for_each(|c| collect(&c.shape, &mut rects));
        rects
    }

    #[test]
    fn a_long_error_wraps_inside_the_window() {
        let message = "cannot read scene file /home/someone/a/very/long/path/to/the/scenes/folder/valley.ron: \
                       it is 5.3 GB; scene files are limited to 16 MiB, so the current scene keeps running";
        let mut errors = vec![message.to_string()];
        let size = egui::vec2(420.0, 300.0);
        let rects = texts_drawn(size, |ui| error_banner_ui(ui, &mut errors));
        let error = rects.iter().find(|r| r.height() > 0.0 && r.width() > 100.0).expect("the message was drawn");
        assert!(rects.iter().all(|r| r.max.x <= size.x + 0.5), "text past the window's right edge: {rects:?}");
        assert!(error.height() > 40.0, "the message was not wrapped onto several lines: {error:?}");
    }
}
