//! Simulation panel: play/pause, single step, reset; particle spacing dx with a live particle-count
//! estimate and an explicit "Apply (rebuild)" (new buffers, the scene restarts from its initial state at
//! the new spacing); and the solver parameters that apply live through `Simulation::set_params`.

use super::{row, FrameInfo, UiAction};
use crate::scene::Scene;
use crate::sim::{SimParams, Simulation};

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
    /// Cached (dx, estimated particle count) so the estimate is recomputed only when dx moves.
    estimate: Option<(f32, u64)>,
}

impl SimPanelState {
    pub fn new(scene: &Scene, sim: Option<&Simulation>, on_cpu: bool) -> Self {
        let mut params = sim.map(|s| s.params().clone()).unwrap_or_else(|| scene.solver.clone());
        if sim.is_none() {
            params.dx = scene.effective_dx(on_cpu);
        }
        let dx_anchor = scene.effective_dx(on_cpu);
        Self { playing: true, dx: params.dx, dx_anchor, params, gravity_xyz: false, param_error: None, estimate: None }
    }

    /// Takes the parameters of a newly built simulation (after a scene load, rebuild or reset).
    pub fn sync_from(&mut self, sim: &Simulation) {
        self.params = sim.params().clone();
        self.dx = self.params.dx;
        self.param_error = None;
        self.estimate = None;
    }
}

/// A copy of `scene` whose effective particle spacing on this adapter is `dx` metres. The scene's
/// `cpu_dx_scale` is folded into `solver.dx` (and set to 1), so the result is exact on any adapter.
pub fn scene_at_dx(scene: &Scene, dx: f32) -> Scene {
    let mut s = scene.clone();
    s.solver.dx = dx;
    s.cpu_dx_scale = 1.0;
    s
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
            if ui.add_enabled(!state.playing, egui::Button::new("Step")).on_hover_text("One simulation step (S, when paused)").clicked() {
                actions.push(UiAction::Step);
            }
            if ui.button("Reset").on_hover_text("Restart the scene from its initial water (R)").clicked() {
                actions.push(UiAction::Reset);
            }
        });
        ui.add_space(4.0);
        dx_ui(ui, state, info, &mut actions);
        ui.add_space(4.0);
        egui::CollapsingHeader::new("Solver").default_open(true).show(ui, |ui| solver_ui(ui, state, &mut actions));
    });
    actions
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
        state.estimate = Some((state.dx, scene_at_dx(info.scene, state.dx).estimate_particle_count(on_cpu)));
    }
    let estimate = state.estimate.map_or(0, |(_, n)| n);
    let now = info.sim.map_or(0, |s| s.particle_count());
    // 16 bytes (one vec4<f32>) per particle per buffer.
    let limit = info.ctx.max_storage_binding() / 16;
    let text = format!("≈ {} particles (now {})", thousands(estimate), thousands(now as u64));
    if estimate > limit {
        ui.colored_label(egui::Color32::LIGHT_RED, format!("{text}: past this GPU's limit of {}", thousands(limit)));
    } else {
        ui.label(text);
    }
    let changed = (state.dx - current_dx).abs() > 1e-6 * current_dx.max(1e-6);
    ui.horizontal(|ui| {
        if ui
            .add_enabled(changed, egui::Button::new("Apply (rebuild)"))
            .on_hover_text("New particle buffers at this spacing; the scene restarts from its initial water")
            .clicked()
        {
            actions.push(UiAction::Rebuild);
        }
        if changed && ui.button("Revert").clicked() {
            state.dx = current_dx;
        }
    });
}

fn solver_ui(ui: &mut egui::Ui, state: &mut SimPanelState, actions: &mut Vec<UiAction>) {
    let p = &mut state.params;
    let mut changed = false;
    egui::Grid::new("solver_grid").num_columns(2).striped(true).show(ui, |ui| {
        changed |= row(ui, "Iterations", "PCISPH pressure iterations per step (fixed count; more = less compression, slower)", |ui| {
            ui.add(egui::Slider::new(&mut p.solver_iterations, 1..=30)).changed()
        });
        changed |= row(ui, "Substeps", "Simulation steps per rendered frame (more = smaller dt, slower)", |ui| {
            ui.add(egui::Slider::new(&mut p.substeps, 1..=16)).changed()
        });
        changed |= row(ui, "Viscosity", "Kinematic artificial viscosity nu, m^2/s (acts on approaching particle pairs only)", |ui| {
            ui.add(egui::Slider::new(&mut p.viscosity, 0.0..=1.0).logarithmic(true).smallest_positive(1e-5).suffix(" m²/s")).changed()
        });
        changed |= row(ui, "XSPH", "XSPH velocity smoothing, dimensionless (0 = off, 0.5 = strong)", |ui| {
            ui.add(egui::Slider::new(&mut p.xsph, 0.0..=0.5)).changed()
        });
        changed |= row(ui, "CFL", "CFL number lambda: dt <= lambda * h / v_max (dimensionless)", |ui| {
            ui.add(egui::Slider::new(&mut p.cfl, 0.05..=1.0)).changed()
        });
        changed |= row(ui, "Frame dt", "Most simulated time per rendered frame, seconds (split over the substeps)", |ui| {
            ui.add(egui::Slider::new(&mut p.frame_dt, 0.001..=0.05).logarithmic(true).suffix(" s")).changed()
        });
        changed |= row(ui, "Friction", "Fraction of the tangential velocity removed on contact with terrain or walls (0..1)", |ui| {
            ui.add(egui::Slider::new(&mut p.friction, 0.0..=1.0)).changed()
        });
        if state.gravity_xyz {
            for (i, axis) in ["Gravity x", "Gravity y", "Gravity z"].into_iter().enumerate() {
                changed |= row(ui, axis, "Gravity component, m/s^2 (Earth: y = -9.81)", |ui| {
                    ui.add(egui::Slider::new(&mut p.gravity[i], -30.0..=30.0).suffix(" m/s²")).changed()
                });
            }
        } else {
            changed |= row(ui, "Gravity y", "Vertical gravity, m/s^2 (Earth: -9.81; y is up)", |ui| {
                ui.add(egui::Slider::new(&mut p.gravity[1], -30.0..=30.0).suffix(" m/s²")).changed()
            });
        }
    });
    ui.horizontal(|ui| {
        ui.checkbox(&mut state.gravity_xyz, "Gravity as 3 components");
        if ui.small_button("Earth").on_hover_text("gravity = (0, -9.81, 0) m/s^2").clicked() {
            p.gravity = [0.0, -9.81, 0.0];
            changed = true;
        }
    });
    if changed {
        actions.push(UiAction::ApplyParams);
    }
    if let Some(e) = &state.param_error {
        ui.colored_label(egui::Color32::LIGHT_RED, e);
    }
}

/// 1234567 -> "1 234 567".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_groups_digits() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1000), "1 000");
        assert_eq!(super::thousands(1234567), "1 234 567");
    }
}
