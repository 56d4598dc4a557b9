//! Simulation panel: play/pause, single step, reset, save a checkpoint and resume one (through a file dialog
//! or a typed path); particle spacing dx with a live particle-count
//! estimate and an explicit "Apply (rebuild)" (new buffers, the scene restarts from its initial state at
//! the new spacing, as do h / dx and rho0); and the solver parameters that apply live through
//! `Simulation::set_params`, each with its unit, hover help and a reset to the scene file's value,
//! among them surface tension (Akinci et al. 2013) and a piston wave maker (on/off, axis, rest position,
//! amplitude, period; see [`crate::sim::params::WaveMaker`]).

use super::{FrameInfo, UiAction};
use crate::scene::{Aabb, Scene};
use crate::sim::params::{WaveAxis, WaveMaker};
use crate::sim::{SimParams, Simulation};
use crate::text::thousands;
use std::path::PathBuf;

/// State of the simulation panel.
pub struct SimPanelState {
    /// Whether the simulation advances every frame (Space toggles).
    pub playing: bool,
    /// Edited solver parameters; `dx` here is ignored (see [`SimPanelState::dx`]).
    pub params: SimParams,
    /// Edited particle spacing, metres; applied by [`UiAction::Rebuild`].
    pub dx: f32,
    /// Centre of the dx slider's range (the scene's own spacing on this adapter), metres.
    pub dx_anchor: f32,
    /// Show all three gravity components instead of y only.
    pub gravity_xyz: bool,
    /// Error of the last `set_params`, shown under the parameters.
    pub param_error: Option<String>,
    /// The wave maker's settings kept while it is switched off, so switching it on again restores them.
    pub wave_maker: WaveMaker,
    /// The loaded scene file's solver parameters: what each "reset" button returns to (the scene the
    /// engine holds follows the edits, for saving).
    pub defaults: SimParams,
    /// Cached (dx, estimated particle count) so the estimate is recomputed only when dx moves.
    estimate: Option<(f32, u64)>,
    /// A checkpoint is being read back or written (its buttons wait).
    pub checkpoint_busy: bool,
    /// The last checkpoint saved or resumed (or why not), shown under its buttons.
    pub checkpoint_status: Option<Result<String, String>>,
    /// Checkpoint path typed by the user (for machines without a file dialog, as the Scene panel's path).
    pub checkpoint_path: String,
}

impl SimPanelState {
    pub fn new(scene: &Scene, sim: Option<&Simulation>, on_cpu: bool) -> Self {
        let mut params = sim.map(|s| s.params().clone()).unwrap_or_else(|| scene.solver.clone());
        if sim.is_none() {
            params.dx = scene.effective_dx(on_cpu);
        }
        let dx_anchor = scene.effective_dx(on_cpu);
        let wave_maker = params.wave_maker.unwrap_or_else(|| default_wave_maker(&scene.domain));
        let defaults = scene.solver.clone();
        Self {
            playing: true,
            dx: params.dx,
            dx_anchor,
            params,
            gravity_xyz: false,
            param_error: None,
            wave_maker,
            defaults,
            estimate: None,
            checkpoint_busy: false,
            checkpoint_status: None,
            checkpoint_path: String::new(),
        }
    }

    /// The edited parameters to apply live: the spacing, h/dx and rho0 of the running simulation (their
    /// edits wait for "Apply (rebuild)"), every other field as edited.
    pub fn live_params(&self, info: &FrameInfo<'_>) -> SimParams {
        let mut p = self.params.clone();
        if let Some(sim) = info.sim {
            (p.dx, p.h_over_dx, p.rho0) = (sim.params().dx, sim.params().h_over_dx, sim.params().rho0);
        }
        p
    }

    /// Takes the parameters of a newly built simulation (after a scene load, rebuild or reset).
    pub fn sync_from(&mut self, sim: &Simulation) {
        self.params = sim.params().clone();
        self.dx = self.params.dx;
        self.param_error = None;
        self.estimate = None;
        if let Some(w) = self.params.wave_maker {
            self.wave_maker = w;
        }
    }
}

/// A wave maker for a domain without one in its scene: a paddle normal to x, resting 5 % of the
/// domain's length from its min wall, half that amplitude, a 1.5 s period.
pub fn default_wave_maker(domain: &Aabb) -> WaveMaker {
    let rest = 0.05 * (domain.max[0] - domain.min[0]);
    WaveMaker { axis: WaveAxis::X, rest, amplitude: 0.5 * rest, period_s: 1.5 }
}

/// Draws the panel; returns Step/Reset/Rebuild/ApplyParams actions.
pub fn sim_panel_ui(ui: &mut egui::Ui, state: &mut SimPanelState, info: &FrameInfo<'_>) -> Vec<UiAction> {
    let mut actions = Vec::new();
    egui::CollapsingHeader::new("Simulation").default_open(true).show(ui, |ui| {
        ui.horizontal(|ui| {
            let label = if state.playing { "Pause" } else { "Play" };
            if ui.button(label).on_hover_text("Space").clicked() {
                state.playing = !state.playing;
            }
            if ui
                .add_enabled(!state.playing, egui::Button::new("Step"))
                .on_hover_text("One simulation step (S, when paused)")
                .clicked()
            {
                actions.push(UiAction::Step);
            }
            if ui.button("Reset").on_hover_text("Restart the scene from its initial water (R)").clicked() {
                actions.push(UiAction::Reset);
            }
        });
        checkpoint_ui(ui, state, info, &mut actions);
        ui.add_space(4.0);
        dx_ui(ui, state, info, &mut actions);
        ui.add_space(4.0);
        egui::CollapsingHeader::new("Solver")
            .default_open(true)
            .show(ui, |ui| solver_ui(ui, state, info, &mut actions));
        egui::CollapsingHeader::new("Wave maker")
            .default_open(false)
            .show(ui, |ui| wave_maker_ui(ui, state, info, &mut actions));
    });
    actions
}

/// "Save checkpoint…" and "Resume…" with the last result.
fn checkpoint_ui(ui: &mut egui::Ui, state: &mut SimPanelState, info: &FrameInfo<'_>, actions: &mut Vec<UiAction>) {
    ui.horizontal(|ui| {
        let can_save = info.sim.is_some() && !state.checkpoint_busy;
        if ui
            .add_enabled(can_save, egui::Button::new("Save checkpoint…"))
            .on_hover_text(
                "Save the whole simulation state (particles, time, time step, emitters' pool and owed volume, wave \
                 maker phase, solver parameters, the scene) to one file; the frame never waits for it",
            )
            .clicked()
        {
            actions.push(UiAction::SaveCheckpointDialog);
        }
        if ui
            .add_enabled(!state.checkpoint_busy, egui::Button::new("Resume…"))
            .on_hover_text(
                "Go on from a checkpoint: its scene, parameters, sources and state replace the running scene, which \
                 goes on as the run that saved it would (also `waterview run --resume FILE`)",
            )
            .clicked()
        {
            actions.push(UiAction::ResumeDialog);
        }
        if state.checkpoint_busy {
            ui.add(egui::Spinner::new());
        }
    });
    // A typed path, for machines without a file dialog (the Scene panel has one for scenes).
    ui.horizontal(|ui| {
        let edit = ui.add(
            egui::TextEdit::singleline(&mut state.checkpoint_path)
                .hint_text("path/to/checkpoint.wvc")
                .desired_width(150.0),
        );
        let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        let typed = !state.checkpoint_path.trim().is_empty() && !state.checkpoint_busy;
        let resume = ui
            .add_enabled(typed, egui::Button::new("Resume"))
            .on_hover_text("Resume the checkpoint at the typed path (Enter does too)")
            .clicked();
        let can_save = typed && info.sim.is_some();
        let save = ui
            .add_enabled(can_save, egui::Button::new("Save"))
            .on_hover_text("Save a checkpoint to the typed path")
            .clicked();
        actions.extend(typed_checkpoint_action(&state.checkpoint_path, resume || enter, save, can_save));
    });
    match &state.checkpoint_status {
        Some(Ok(m)) => {
            ui.weak(m);
        }
        Some(Err(e)) => {
            ui.colored_label(egui::Color32::LIGHT_RED, e);
        }
        None => {}
    }
}

/// What the typed checkpoint path asks for: resume it (its button or Enter) or save to it (when the
/// simulation can be saved); nothing for an empty path.
fn typed_checkpoint_action(path: &str, resume: bool, save: bool, can_save: bool) -> Option<UiAction> {
    let path = path.trim();
    if path.is_empty() {
        return None;
    }
    if resume {
        Some(UiAction::Resume(PathBuf::from(path)))
    } else if save && can_save {
        Some(UiAction::SaveCheckpoint(PathBuf::from(path)))
    } else {
        None
    }
}

fn dx_ui(ui: &mut egui::Ui, state: &mut SimPanelState, info: &FrameInfo<'_>, actions: &mut Vec<UiAction>) {
    let on_cpu = info.ctx.is_cpu();
    let anchor = state.dx_anchor.max(1e-3);
    let current_dx = info.sim.map(|s| s.params().dx).unwrap_or(anchor);
    let lo = (anchor.min(current_dx) / 8.0).max(2e-4);
    let hi = (anchor.max(current_dx) * 8.0).min(100.0);
    ui.horizontal(|ui| {
        ui.label("Spacing dx").on_hover_text(
            "Initial particle spacing dx, metres. Smaller = more particles (count grows as 1/dx^3) and finer detail. \
             Particle mass is rho0 * dx^3.",
        );
        ui.add(egui::Slider::new(&mut state.dx, lo..=hi).logarithmic(true).suffix(" m").max_decimals(4));
    });
    if state.estimate.is_none_or(|(dx, _)| dx != state.dx) {
        state.estimate = Some((state.dx, info.scene.at_dx(state.dx).estimate_particle_count(on_cpu)));
    }
    let estimate = state.estimate.map_or(0, |(_, n)| n);
    let now = info.particles();
    // The engine's limit: the renderer's and the simulation's arrays split over the bindings they have.
    let limit = crate::engine::particle_limit(info.ctx).max;
    let text = format!("≈ {} particles (now {})", thousands(estimate), thousands(now));
    if estimate > limit {
        ui.colored_label(egui::Color32::LIGHT_RED, format!("{text}: past this GPU's limit of {}", thousands(limit)));
    } else {
        ui.label(text);
    }
    let rebuild_params = rebuild_params_ui(ui, state, info);
    let changed = (state.dx - current_dx).abs() > 1e-6 * current_dx.max(1e-6) || rebuild_params;
    ui.horizontal(|ui| {
        if ui
            .add_enabled(changed, egui::Button::new("Apply (rebuild)"))
            .on_hover_text("New particle buffers at this spacing; the scene restarts from its initial water")
            .clicked()
        {
            actions.push(UiAction::Rebuild {
                dx: state.dx,
                h_over_dx: state.params.h_over_dx,
                rho0: state.params.rho0,
            });
        }
        if changed && ui.button("Revert").clicked() {
            state.dx = current_dx;
            if let Some(sim) = info.sim {
                state.params.h_over_dx = sim.params().h_over_dx;
                state.params.rho0 = sim.params().rho0;
            }
        }
    });
}

fn solver_ui(ui: &mut egui::Ui, state: &mut SimPanelState, info: &FrameInfo<'_>, actions: &mut Vec<UiAction>) {
    let defaults = &state.defaults.clone();
    let p = &mut state.params;
    let mut changed = false;
    egui::Grid::new("solver_grid").num_columns(3).striped(true).show(ui, |ui| {
        changed |= param_row(ui, "Solver", "Pressure solver: DFSPH (divergence-free + constant density, stops on its error target on the GPU), PCISPH (fixed iterations), WCSPH (Tait equation; stiff, small steps). Switching is live.", &mut p.method, defaults.method, |ui, v| {
            let mut c = false;
            egui::ComboBox::from_id_salt("solver_method").selected_text(v.name()).show_ui(ui, |ui| {
                for m in crate::sim::Method::ALL {
                    c |= ui.selectable_value(v, m, m.name()).changed();
                }
            });
            c
        });
        match p.method {
            crate::sim::Method::Dfsph => {
                changed |= param_row(ui, "Density error target", "DFSPH: the constant-density solve stops once the mean density error is below this, percent", &mut p.target_density_error, defaults.target_density_error, |ui, v| {
                    let mut pct = *v * 100.0;
                    let c = ui.add(egui::Slider::new(&mut pct, 0.01..=1.0).logarithmic(true).suffix(" %")).changed();
                    *v = pct / 100.0;
                    c
                });
                changed |= param_row(ui, "Max density iterations", "DFSPH: most iterations of the constant-density solve per step. Dimensionless.", &mut p.density_iterations, defaults.density_iterations, |ui, v| {
                    ui.add(egui::Slider::new(v, 1..=200)).changed()
                });
                changed |= param_row(ui, "Max divergence iterations", "DFSPH: most iterations of the divergence-free solve per step. Dimensionless.", &mut p.divergence_iterations, defaults.divergence_iterations, |ui, v| {
                    ui.add(egui::Slider::new(v, 1..=200)).changed()
                });
            }
            crate::sim::Method::Pcisph => {
                changed |= param_row(ui, "Iterations", "PCISPH pressure iterations per step (fixed count; more = less compression, slower). Dimensionless.", &mut p.solver_iterations, defaults.solver_iterations, |ui, v| {
                    ui.add(egui::Slider::new(v, 1..=30)).changed()
                });
            }
            crate::sim::Method::Wcsph => {
                changed |= param_row(ui, "Sound speed", "WCSPH numerical sound speed c, m/s (0 = automatic: 10 x the free-fall speed over the domain height). The time step shrinks as c grows.", &mut p.sound_speed, defaults.sound_speed, |ui, v| {
                    ui.add(egui::Slider::new(v, 0.0..=200.0).suffix(" m/s")).changed()
                });
            }
        }
        changed |= param_row(ui, "Substeps", "Fewest simulation steps per rendered frame: the longest step is Frame dt / Substeps (more = smaller dt, slower). A frame takes more steps where the CFL condition shortens them, as many as fit the window's frame budget. Dimensionless.", &mut p.substeps, defaults.substeps, |ui, v| {
            ui.add(egui::Slider::new(v, 1..=16)).changed()
        });
        changed |= param_row(ui, "Viscosity", "Kinematic artificial viscosity nu, m²/s (acts on approaching particle pairs only). Water is 1e-6; SPH needs more for stability.", &mut p.viscosity, defaults.viscosity, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=1.0).logarithmic(true).smallest_positive(1e-5).suffix(" m²/s")).changed()
        });
        changed |= param_row(ui, "XSPH", "XSPH velocity smoothing, dimensionless (0 = off, 0.5 = strong)", &mut p.xsph, defaults.xsph, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=0.5)).changed()
        });
        changed |= param_row(ui, "CFL", "CFL number lambda, dimensionless: dt <= lambda * h / v_max", &mut p.cfl, defaults.cfl, |ui, v| {
            ui.add(egui::Slider::new(v, 0.05..=1.0)).changed()
        });
        changed |= param_row(ui, "Frame dt", "Simulated time per rendered frame, seconds: covered by at least Substeps steps, more where the CFL condition shortens them (fewer simulated seconds per frame only when the steps would not fit the window's frame budget)", &mut p.frame_dt, defaults.frame_dt, |ui, v| {
            ui.add(egui::Slider::new(v, 0.001..=0.1).logarithmic(true).suffix(" s")).changed()
        });
        changed |= param_row(ui, "Friction", "Skin-friction coefficient C_f of terrain, walls and obstacles, dimensionless: a particle touching them is slowed by the shear stress rho0 C_f |v|² / 2 over its footprint (0.01: a smooth bed; 0.05: rough ground)", &mut p.friction, defaults.friction, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=1.0).logarithmic(true).smallest_positive(1e-4)).changed()
        });
        changed |= param_row(ui, "Surface tension", "Surface tension γ of Akinci, Akinci & Teschner 2013: cohesion between particles plus a curvature term from the surface normals; pulls free water into round drops and sheets into rims. Units m^4/(kg s²) as in the paper; 0 = off (no cost). 0.05-1 is visible within a fraction of a second at any dx; much more shakes the water.", &mut p.surface_tension, defaults.surface_tension, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=10.0).logarithmic(true).smallest_positive(1e-3).suffix(" m^4/(kg s²)")).changed()
        });
        if state.gravity_xyz {
            for (i, axis) in ["Gravity x", "Gravity y", "Gravity z"].into_iter().enumerate() {
                changed |= param_row(ui, axis, "Gravity component, m/s² (Earth: y = -9.81)", &mut p.gravity[i], defaults.gravity[i], |ui, v| {
                    ui.add(egui::Slider::new(v, -30.0..=30.0).suffix(" m/s²")).changed()
                });
            }
        } else {
            changed |= param_row(ui, "Gravity y", "Vertical gravity, m/s² (Earth: -9.81; y is up)", &mut p.gravity[1], defaults.gravity[1], |ui, v| {
                ui.add(egui::Slider::new(v, -30.0..=30.0).suffix(" m/s²")).changed()
            });
        }
    });
    ui.horizontal(|ui| {
        ui.checkbox(&mut state.gravity_xyz, "Gravity as 3 components");
        if ui.small_button("Earth").on_hover_text("gravity = (0, -9.81, 0) m/s²").clicked() {
            p.gravity = [0.0, -9.81, 0.0];
            changed = true;
        }
        if ui
            .small_button("All to scene values")
            .on_hover_text("Every live parameter back to the scene file's value")
            .clicked()
        {
            let keep = (p.dx, p.h_over_dx, p.rho0);
            *p = defaults.clone();
            (p.dx, p.h_over_dx, p.rho0) = keep;
            changed = true;
        }
    });
    if changed {
        actions.push(UiAction::ApplyParams(state.live_params(info)));
    }
    if let Some(e) = &state.param_error {
        ui.colored_label(egui::Color32::LIGHT_RED, e);
    }
}

/// The wave maker: on/off, axis, rest position, amplitude and period, each with a reset to the scene's
/// value (when the scene has no wave maker, to [`default_wave_maker`]'s). Applies live like the solver
/// parameters; the paddle moves on the simulated clock.
fn wave_maker_ui(ui: &mut egui::Ui, state: &mut SimPanelState, info: &FrameInfo<'_>, actions: &mut Vec<UiAction>) {
    let scene_value = state.defaults.wave_maker;
    let defaults = scene_value.unwrap_or_else(|| default_wave_maker(&info.scene.domain));
    let d = &info.scene.domain;
    let mut changed = false;
    let mut on = state.params.wave_maker.is_some();
    if let Some(w) = state.params.wave_maker {
        state.wave_maker = w;
    }
    let w = &mut state.wave_maker;
    egui::Grid::new("wave_maker_grid").num_columns(3).striped(true).show(ui, |ui| {
        changed |= param_row(ui, "On", "A piston wave maker: a paddle replacing the domain's min wall along x or z, moving as rest + amplitude sin(2π t / period) (t = simulated time). It pushes the water like a wall and makes waves; particles never get behind it (switching it on pushes the water behind its position in front at once).", &mut on, scene_value.is_some(), |ui, v| {
            ui.checkbox(v, "").changed()
        });
        changed |= param_row(ui, "Axis", "Axis the paddle moves along; it replaces the domain's min wall on that axis.", &mut w.axis, defaults.axis, |ui, v| {
            let mut c = false;
            egui::ComboBox::from_id_salt("wave_maker_axis").selected_text(v.name()).show_ui(ui, |ui| {
                for a in WaveAxis::ALL {
                    c |= ui.selectable_value(v, a, a.name()).changed();
                }
            });
            c
        });
        let len = d.max[w.axis.index()] - d.min[w.axis.index()];
        changed |= param_row(ui, "Rest position", "Mean distance of the paddle from the domain's min wall, metres (at least the amplitude). Water behind it is pushed in front when it moves.", &mut w.rest, defaults.rest, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=0.75 * len).suffix(" m")).changed()
        });
        let rest = w.rest;
        changed |= param_row(ui, "Amplitude", "Amplitude of the paddle's motion, metres (half its stroke; at most the rest position). 0 = a fixed wall.", &mut w.amplitude, defaults.amplitude, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=rest.max(1e-4)).suffix(" m")).changed()
        });
        changed |= param_row(ui, "Period", "Period of the paddle's motion, seconds. Longer periods make longer waves (about 1.56 T² m in deep water).", &mut w.period_s, defaults.period_s, |ui, v| {
            ui.add(egui::Slider::new(v, 0.05..=1000.0).logarithmic(true).suffix(" s")).changed()
        });
    });
    w.amplitude = w.amplitude.min(w.rest);
    if changed {
        state.params.wave_maker = on.then_some(*w);
        actions.push(UiAction::ApplyParams(state.live_params(info)));
    }
}

/// One parameter row: label (hover help), the widget, and a reset button (enabled when the value differs
/// from `default`, the scene's value). Returns true when the value changed.
pub(super) fn param_row<T: PartialEq + Copy + std::fmt::Debug>(
    ui: &mut egui::Ui,
    label: &str,
    help: &str,
    value: &mut T,
    default: T,
    add: impl FnOnce(&mut egui::Ui, &mut T) -> bool,
) -> bool {
    ui.label(label).on_hover_text(help);
    let mut changed = add(ui, value);
    let differs = *value != default;
    if ui
        .add_enabled(differs, egui::Button::new("reset").small())
        .on_hover_text(format!("Reset to the scene's value ({default:?})"))
        .clicked()
    {
        *value = default;
        changed = true;
    }
    ui.end_row();
    changed
}

/// Rebuild-only parameters (new buffers; the scene restarts): smoothing length ratio and rest density.
fn rebuild_params_ui(ui: &mut egui::Ui, state: &mut SimPanelState, info: &FrameInfo<'_>) -> bool {
    let defaults = &state.defaults.clone();
    let p = &mut state.params;
    egui::Grid::new("rebuild_grid").num_columns(3).show(ui, |ui| {
        param_row(ui, "h / dx", "Smoothing length over particle spacing, dimensionless (0.8 ..= 3); the kernel support is 2h. Needs a rebuild.", &mut p.h_over_dx, defaults.h_over_dx, |ui, v| {
            ui.add(egui::DragValue::new(v).range(0.8..=3.0).speed(0.01)).changed()
        });
        param_row(ui, "Rest density", "Rest density rho0, kg/m³ (water: 1000). Particle mass = rho0 dx³. Needs a rebuild.", &mut p.rho0, defaults.rho0, |ui, v| {
            ui.add(egui::DragValue::new(v).range(1.0..=1e5).speed(1.0).suffix(" kg/m³")).changed()
        });
    });
    info.sim.is_some_and(|s| s.params().h_over_dx != p.h_over_dx || s.params().rho0 != p.rho0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A typed checkpoint path resumes (button or Enter) or saves (when there is a simulation to save),
    /// trimmed; an empty one does nothing. Before, a machine without a file dialog could not resume.
    #[test]
    fn a_typed_checkpoint_path_resumes_or_saves() {
        let path = |a: Option<UiAction>| match a {
            Some(UiAction::Resume(p)) => format!("resume {}", p.display()),
            Some(UiAction::SaveCheckpoint(p)) => format!("save {}", p.display()),
            Some(_) => "another action".into(),
            None => "nothing".into(),
        };
        assert_eq!(path(typed_checkpoint_action("  runs/a.wvc ", true, false, true)), "resume runs/a.wvc");
        assert_eq!(path(typed_checkpoint_action("runs/a.wvc", false, true, true)), "save runs/a.wvc");
        assert_eq!(path(typed_checkpoint_action("runs/a.wvc", false, true, false)), "nothing");
        assert_eq!(path(typed_checkpoint_action("   ", true, true, true)), "nothing");
        assert_eq!(path(typed_checkpoint_action("runs/a.wvc", false, false, true)), "nothing");
    }
}
