//! Scene panel: pick a built-in scene or type a scene file path (a file dialog may come later), and see
//! the current scene's name, domain size and particle count. Loading happens in the app; a failure shows
//! in the error banner and the current scene keeps running.

use super::{sim_panel::thousands, FrameInfo, UiAction};
use crate::scene::{Scene, BUILTIN_SCENES};
use std::path::PathBuf;

/// State of the scene panel.
pub struct ScenePanelState {
    /// Built-in scene selected in the combo box.
    pub builtin: String,
    /// Scene file path typed by the user.
    pub path: String,
}

impl ScenePanelState {
    pub fn new(scene: &Scene) -> Self {
        // The built-in whose scene is this one (by its display name), else the first.
        let builtin = BUILTIN_SCENES
            .iter()
            .find(|n| **n == scene.name || Scene::builtin(n).is_some_and(|b| b.name == scene.name))
            .or(BUILTIN_SCENES.first())
            .map_or_else(String::new, |n| n.to_string());
        Self { builtin, path: String::new() }
    }
}

/// Draws the panel; returns LoadBuiltin/LoadScene/ResetCamera actions.
pub fn scene_panel_ui(ui: &mut egui::Ui, state: &mut ScenePanelState, info: &FrameInfo<'_>) -> Vec<UiAction> {
    let mut actions = Vec::new();
    egui::CollapsingHeader::new("Scene").default_open(true).show(ui, |ui| {
        let scene = info.scene;
        let size: Vec<f32> = (0..3).map(|i| scene.domain.max[i] - scene.domain.min[i]).collect();
        egui::Grid::new("scene_info").num_columns(2).show(ui, |ui| {
            ui.label("Name");
            ui.strong(&scene.name);
            ui.end_row();
            ui.label("Domain").on_hover_text("Size of the simulation box along x, y (up), z, metres");
            ui.label(format!("{:.1} × {:.1} × {:.1} m", size[0], size[1], size[2]));
            ui.end_row();
            ui.label("Particles");
            ui.label(info.sim.map_or_else(|| "none (scene not built)".to_string(), |s| thousands(s.particle_count() as u64)));
            ui.end_row();
            if let Some(sim) = info.sim {
                ui.label("Spacing dx").on_hover_text("Particle spacing in use, metres");
                ui.label(format!("{:.4} m", sim.params().dx));
                ui.end_row();
            }
        });
        ui.add_space(4.0);
        ui.horizontal(|ui| {
            egui::ComboBox::from_id_salt("builtin_scene").selected_text(state.builtin.as_str()).show_ui(ui, |ui| {
                for name in BUILTIN_SCENES {
                    ui.selectable_value(&mut state.builtin, name.to_string(), *name);
                }
            });
            if ui.button("Load").on_hover_text("Load this built-in scene").clicked() && !state.builtin.is_empty() {
                actions.push(UiAction::LoadBuiltin(state.builtin.clone()));
            }
        });
        ui.horizontal(|ui| {
            let edit = ui.add(egui::TextEdit::singleline(&mut state.path).hint_text("path/to/scene.ron").desired_width(170.0));
            let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if (ui.button("Load").on_hover_text("Load a scene file (.ron)").clicked() || enter) && !state.path.trim().is_empty() {
                actions.push(UiAction::LoadScene(PathBuf::from(state.path.trim())));
            }
        });
        if ui.button("Reset camera").on_hover_text("Back to the scene's camera").clicked() {
            actions.push(UiAction::ResetCamera);
        }
    });
    actions
}
