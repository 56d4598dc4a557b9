//! Scene panel: pick a built-in scene (presets), open or save a scene file through the native file dialog
//! (or a typed path; a `.ron` or a heightmap PNG can also be dropped on the window), see the current
//! scene's name, domain size and particle count, and edit its inflows (emitters) and outflows (sinks),
//! which go to the simulation live (`Engine::set_sources`, which grows the emitters' pool as needed), and
//! its static obstacles: moved, turned and scaled live as the values are dragged (the water goes on and is
//! pushed aside), removed or added from a mesh file by rebuilding the scene with them (a background
//! build; the water starts again; on several GPUs every obstacle edit is such a rebuild). Loading and saving happen in the app;
//! a failure shows in the error banner and the current scene keeps running. Saving writes the current
//! solver parameters and camera with the scene.

use super::{FrameInfo, UiAction};
use crate::scene::{Emitter, ObstacleDesc, Scene, Sink, BUILTIN_SCENES};
use crate::text::thousands;
use std::path::PathBuf;

/// State of the scene panel.
pub struct ScenePanelState {
    /// Built-in scene selected in the combo box.
    pub builtin: String,
    /// Scene file path typed by the user.
    pub path: String,
    /// Edited inflows and outflows of the current scene (sent with [`UiAction::SetSources`]).
    pub emitters: Vec<Emitter>,
    pub sinks: Vec<Sink>,
    /// Edited static obstacles of the current scene (sent with [`UiAction::SetObstacles`]).
    pub obstacles: Vec<ObstacleDesc>,
    /// A file dialog is open (its buttons are disabled meanwhile).
    pub dialog_open: bool,
}

impl ScenePanelState {
    pub fn new(scene: &Scene) -> Self {
        // The built-in whose scene is this one (by its display name), else the first.
        let builtin = BUILTIN_SCENES
            .iter()
            .find(|n| **n == scene.name || Scene::builtin(n).is_some_and(|b| b.name == scene.name))
            .or(BUILTIN_SCENES.first())
            .map_or_else(String::new, |n| n.to_string());
        Self {
            builtin,
            path: String::new(),
            emitters: scene.emitters.clone(),
            sinks: scene.sinks.clone(),
            obstacles: scene.obstacles.clone(),
            dialog_open: false,
        }
    }

    /// Takes the inflows and outflows of a newly loaded scene.
    pub fn sync_from(&mut self, scene: &Scene) {
        self.emitters = scene.emitters.clone();
        self.sinks = scene.sinks.clone();
        self.obstacles = scene.obstacles.clone();
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
            ui.label(
                info.sim.map_or_else(|| "none (scene not built)".to_string(), |s| thousands(s.live_particles() as u64)),
            );
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
            let edit =
                ui.add(egui::TextEdit::singleline(&mut state.path).hint_text("path/to/scene.ron").desired_width(170.0));
            let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if (ui.button("Load").on_hover_text("Load a scene file (.ron)").clicked() || enter)
                && !state.path.trim().is_empty()
            {
                actions.push(UiAction::LoadScene(PathBuf::from(state.path.trim())));
            }
        });
        ui.horizontal(|ui| {
            ui.add_enabled_ui(!state.dialog_open, |ui| {
                if ui
                    .button("Open…")
                    .on_hover_text("Open a scene file (.ron) or a heightmap (.png) through the file dialog (Ctrl+O)")
                    .clicked()
                {
                    actions.push(UiAction::OpenSceneDialog);
                }
                if ui
                    .button("Save as…")
                    .on_hover_text("Save the scene with the current solver parameters, sources and camera (Ctrl+S)")
                    .clicked()
                {
                    actions.push(UiAction::SaveSceneDialog);
                }
            });
            if ui.button("Reset camera").on_hover_text("Back to the scene's camera").clicked() {
                actions.push(UiAction::ResetCamera);
            }
        });
        ui.add_space(4.0);
        if sources_ui(ui, state, scene) {
            actions.push(UiAction::SetSources { emitters: state.emitters.clone(), sinks: state.sinks.clone() });
        }
        actions.extend(obstacles_ui(ui, state, scene, info.sim.is_some()));
        bodies_ui(ui, scene, info.sim.and_then(|s| s.bodies()));
    });
    actions
}

/// The scene's floating and sinking bodies, one line each (mesh file, density) with, while the scene
/// runs, each body's height (its centre of mass) and speed now (a frame or two behind the water, see
/// [`crate::sim::bodies`]).
fn bodies_ui(ui: &mut egui::Ui, scene: &Scene, bodies: Option<&crate::sim::bodies::Bodies>) {
    egui::CollapsingHeader::new(format!("Bodies ({})", scene.bodies.len())).id_salt("bodies").show(ui, |ui| {
        if scene.bodies.is_empty() {
            ui.label(
                "None. Add them to the scene file: bodies: [(mesh: \"crate.obj\", position: (x, y, z), density: 500)]",
            );
        }
        for line in body_lines(scene, bodies.map(|b| b.states()).as_deref()) {
            ui.label(line);
        }
    });
}

/// One line per body of `scene`: "1. crate.obj, 500 kg/m³: height 0.312 m, speed 0.04 m/s" (the motion
/// from `states` when the scene runs: one per body, in order).
fn body_lines(scene: &Scene, states: Option<&[crate::sim::bodies::BodyState]>) -> Vec<String> {
    scene
        .bodies
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let motion = match states.and_then(|s| s.get(k)) {
                Some(s) => format!(": height {:.3} m, speed {:.2} m/s", s.centre.y, s.velocity.length()),
                None => format!(" at {} m", crate::scene::tuple(&b.position)),
            };
            format!("{}. {}, {} kg/m³{motion}", k + 1, b.mesh, b.density)
        })
        .collect()
}

/// The scene's static obstacles: each one's mesh file, position (m), rotation about x, y, z (degrees) and
/// scale, edited in `state`. Where the scene runs (`live`: one GPU) a change of these is sent as it is made
/// ([`UiAction::MoveObstacles`]: the obstacle travels there and pushes the water aside); "Remove" and "Add
/// mesh…" (the file dialog; the app adds it) change the list, which "Apply (rebuild)" builds anew (the
/// water starts again). Not live (several GPUs, or nothing built), Apply rebuilds for every edit.
fn obstacles_ui(ui: &mut egui::Ui, state: &mut ScenePanelState, scene: &Scene, live: bool) -> Option<UiAction> {
    let mut action = None;
    let title = format!("Obstacles ({})", scene.obstacles.len());
    egui::CollapsingHeader::new(title).id_salt("obstacles").show(ui, |ui| {
        if state.obstacles.is_empty() {
            ui.label("None. Add a closed mesh (OBJ, STL, glTF): the water flows around it.");
        }
        let size = (0..3).map(|i| scene.domain.max[i] - scene.domain.min[i]).fold(0.0f32, f32::max);
        let mut remove = None;
        let mut moved = false;
        for (k, o) in state.obstacles.iter_mut().enumerate() {
            ui.horizontal(|ui| {
                ui.label(format!("{}. {}", k + 1, o.mesh)).on_hover_text(o.mesh.as_str());
                if ui.small_button("Remove").on_hover_text("Take this obstacle out (Apply rebuilds)").clicked() {
                    remove = Some(k);
                }
            });
            ui.horizontal(|ui| {
                ui.label("at").on_hover_text("World position of the mesh's origin, metres (x, y up, z)");
                moved |= vec3_ui(ui, &mut o.position, 0.002 * size, " m");
            });
            ui.horizontal(|ui| {
                ui.label("turned").on_hover_text("Rotation about the world x, then y, then z axis, degrees");
                moved |= vec3_ui(ui, &mut o.rotation_deg, 0.5, "°");
            });
            ui.horizontal(|ui| {
                ui.label("scale").on_hover_text("Uniform scale of the mesh's coordinates (its units are metres)");
                moved |= ui
                    .add(egui::DragValue::new(&mut o.scale).speed(0.01).range(0.001..=1000.0).max_decimals(3))
                    .changed();
            });
        }
        if let Some(k) = remove {
            state.obstacles.remove(k);
        }
        let (action_now, rebuild) = obstacle_edits(state, scene, live, moved);
        action = action_now;
        if live {
            ui.weak("Moves, turns and scales apply as you drag: the water goes on.");
        }
        ui.horizontal(|ui| {
            ui.add_enabled_ui(!state.dialog_open, |ui| {
                if ui
                    .button("Add mesh…")
                    .on_hover_text(
                        "Place a closed mesh (OBJ, STL, glTF) in the scene (a rebuild: the water starts again)",
                    )
                    .clicked()
                {
                    action = Some(UiAction::AddObstacleDialog);
                }
            });
            let apply = ui.add_enabled(rebuild, egui::Button::new("Apply (rebuild)"));
            let why = if live {
                "An obstacle was removed: build the scene again with these obstacles (the water starts again)"
            } else {
                "Build the scene again with these obstacles: the water starts again (on several GPUs every edit \
                 is a rebuild)"
            };
            if apply.on_hover_text(why).clicked() {
                action = Some(UiAction::SetObstacles(state.obstacles.clone()));
            }
            if ui.add_enabled(state.obstacles != scene.obstacles, egui::Button::new("Revert")).clicked() {
                state.obstacles = scene.obstacles.clone();
            }
        });
    });
    action
}

/// What the obstacles' edits in `state` ask for against the running `scene`: (the action to send now,
/// whether "Apply (rebuild)" has something to build). Live (`live`, one GPU), a placement changed this
/// frame (`moved`) of the same obstacles is sent at once ([`UiAction::MoveObstacles`]) and only another
/// list (one removed) waits for a rebuild; not live, every difference waits for the rebuild.
fn obstacle_edits(state: &ScenePanelState, scene: &Scene, live: bool, moved: bool) -> (Option<UiAction>, bool) {
    let same_list = state.obstacles.len() == scene.obstacles.len()
        && state.obstacles.iter().zip(&scene.obstacles).all(|(a, b)| a.mesh == b.mesh);
    if !live {
        return (None, state.obstacles != scene.obstacles);
    }
    let send = (moved && same_list && state.obstacles != scene.obstacles)
        .then(|| UiAction::MoveObstacles(state.obstacles.clone()));
    (send, !same_list)
}

/// Drag values for a point, metres.
fn vec3_ui(ui: &mut egui::Ui, v: &mut [f32; 3], speed: f32, suffix: &str) -> bool {
    let mut changed = false;
    for c in v.iter_mut() {
        changed |= ui.add(egui::DragValue::new(c).speed(speed).max_decimals(3).suffix(suffix)).changed();
    }
    changed
}

/// Emitters and sinks, add/remove/edit. Returns true when anything changed.
fn sources_ui(ui: &mut egui::Ui, state: &mut ScenePanelState, scene: &Scene) -> bool {
    let mut changed = false;
    let d = scene.domain;
    let centre = [0.5 * (d.min[0] + d.max[0]), 0.5 * (d.min[1] + d.max[1]), 0.5 * (d.min[2] + d.max[2])];
    let size = (0..3).map(|i| d.max[i] - d.min[i]).fold(0.0f32, f32::max);
    let speed = (size / 500.0).max(1e-3);
    egui::CollapsingHeader::new(format!("Emitters ({})", state.emitters.len())).id_salt("emitters").show(ui, |ui| {
        let mut remove = None;
        for (i, e) in state.emitters.iter_mut().enumerate() {
            ui.push_id(("emitter", i), |ui| {
                egui::Grid::new("emitter").num_columns(2).show(ui, |ui| {
                    ui.label(format!("#{}", i + 1));
                    if ui.small_button("Remove").clicked() {
                        remove = Some(i);
                    }
                    ui.end_row();
                    ui.label("Centre").on_hover_text("Centre of the inflow disc, metres (x, y, z)");
                    ui.horizontal(|ui| changed |= vec3_ui(ui, &mut e.center, speed, " m"));
                    ui.end_row();
                    ui.label("Radius").on_hover_text("Radius of the inflow disc, metres");
                    changed |= ui
                        .add(egui::DragValue::new(&mut e.radius).range(1e-3..=1e3).speed(speed).suffix(" m"))
                        .changed();
                    ui.end_row();
                    ui.label("Velocity")
                        .on_hover_text("Velocity of the entering water, m/s; its direction is the disc's normal");
                    ui.horizontal(|ui| changed |= vec3_ui(ui, &mut e.velocity, 0.05, " m/s"));
                    ui.end_row();
                    ui.label("Rate").on_hover_text("Volume flow, m³/s");
                    changed |= ui
                        .add(egui::DragValue::new(&mut e.rate).range(0.0..=1e4).speed(0.01).suffix(" m³/s"))
                        .changed();
                    ui.end_row();
                });
            });
        }
        if let Some(i) = remove {
            state.emitters.remove(i);
            changed = true;
        }
        if ui.button("Add emitter").on_hover_text("A new inflow at the top centre of the domain").clicked() {
            let top = d.max[1] - 0.1 * (d.max[1] - d.min[1]);
            let radius = 0.05 * size;
            state.emitters.push(Emitter {
                center: [centre[0], top, centre[2]],
                radius,
                velocity: [0.0, -1.0, 0.0],
                // Half of what the disc carries at 1 m/s (a faster rate would pack the water; the check
                // refuses it).
                rate: 0.5 * std::f32::consts::PI * radius * radius,
            });
            changed = true;
        }
    });
    egui::CollapsingHeader::new(format!("Sinks ({})", state.sinks.len())).id_salt("sinks").show(ui, |ui| {
        let mut remove = None;
        for (i, s) in state.sinks.iter_mut().enumerate() {
            ui.push_id(("sink", i), |ui| {
                egui::Grid::new("sink").num_columns(2).show(ui, |ui| {
                    ui.label(format!("#{}", i + 1));
                    if ui.small_button("Remove").clicked() {
                        remove = Some(i);
                    }
                    ui.end_row();
                    ui.label("Min")
                        .on_hover_text("Lower corner of the outflow box, metres; particles entering it are removed");
                    ui.horizontal(|ui| changed |= vec3_ui(ui, &mut s.min, speed, " m"));
                    ui.end_row();
                    ui.label("Max").on_hover_text("Upper corner of the outflow box, metres");
                    ui.horizontal(|ui| changed |= vec3_ui(ui, &mut s.max, speed, " m"));
                    ui.end_row();
                });
                if (0..3).any(|k| s.min[k] >= s.max[k]) {
                    ui.colored_label(egui::Color32::LIGHT_RED, "min must be below max on every axis");
                }
            });
        }
        if let Some(i) = remove {
            state.sinks.remove(i);
            changed = true;
        }
        if ui.button("Add sink").on_hover_text("A new outflow box at the domain's low x end").clicked() {
            let w = 0.1 * (d.max[0] - d.min[0]);
            state.sinks.push(Sink { min: d.min, max: [d.min[0] + w, d.max[1], d.max[2]] });
            changed = true;
        }
    });
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The panel edits a copy of the scene's obstacles: a new scene's list replaces it, and an edit shows
    /// as a difference from the scene's (which enables Apply).
    #[test]
    fn the_obstacles_are_edited_as_a_copy_of_the_scene() {
        let scene = Scene::builtin("dam_break_box").expect("built in");
        let mut state = ScenePanelState::new(&scene);
        assert_eq!(state.obstacles, scene.obstacles);
        state.obstacles[0].position[0] -= 0.5;
        assert_ne!(state.obstacles, scene.obstacles, "an edit differs from the scene");
        state.sync_from(&Scene::builtin("dam_break").expect("built in"));
        assert!(state.obstacles.is_empty(), "a scene without obstacles empties the list");
    }

    /// A dragged placement goes to the running scene at once; a removal waits for Apply (rebuild); on
    /// several GPUs (not live) every edit waits for it.
    #[test]
    fn placements_go_live_and_removals_wait_for_a_rebuild() {
        let scene = Scene::builtin("dam_break_box").expect("built in");
        let mut state = ScenePanelState::new(&scene);
        assert!(matches!(obstacle_edits(&state, &scene, true, false), (None, false)), "nothing edited");
        state.obstacles[0].position[0] -= 0.5;
        match obstacle_edits(&state, &scene, true, true) {
            (Some(UiAction::MoveObstacles(o)), false) => assert_eq!(o, state.obstacles),
            other => panic!("a drag is not sent live: {:?}", other.0.is_some()),
        }
        assert!(matches!(obstacle_edits(&state, &scene, false, true), (None, true)), "several GPUs: Apply");
        state.obstacles.clear();
        assert!(matches!(obstacle_edits(&state, &scene, true, true), (None, true)), "a removal: Apply");
    }

    #[test]
    fn bodies_are_listed_with_their_height_and_speed_once_running() {
        let mut scene = Scene::builtin("dam_break").expect("the built-in dam break");
        scene.bodies = vec![crate::scene::BodyDesc {
            mesh: "crate.obj".into(),
            position: [0.5, 0.25, 0.0],
            rotation_deg: [0.0; 3],
            scale: 0.2,
            density: 500.0,
        }];
        assert_eq!(body_lines(&scene, None), ["1. crate.obj, 500 kg/m³ at (0.5, 0.25, 0) m"]);
        let state = crate::sim::bodies::BodyState {
            rotation: glam::Quat::IDENTITY,
            position: glam::Vec3::new(0.5, 0.2, 0.0),
            centre: glam::Vec3::new(0.6, 0.3125, 0.1),
            velocity: glam::Vec3::new(0.0, -0.03, 0.04),
            angular: glam::Vec3::ZERO,
            force: glam::Vec3::ZERO,
            water_velocity: glam::Vec3::ZERO,
            wet: 0.5,
            mass: 4.0,
        };
        assert_eq!(body_lines(&scene, Some(&[state])), ["1. crate.obj, 500 kg/m³: height 0.312 m, speed 0.05 m/s"]);
    }
}
