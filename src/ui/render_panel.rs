//! Render panel: how particles are coloured (speed, density, pressure or one colour) and over which range,
//! their drawn radius, what is shown, the sun; and the screenshot button with its "include UI" option and
//! the status line of the last screenshot.

use super::{row, UiAction};
use crate::render::{ColorMode, RenderSettings};

/// State of the render panel: the renderer's settings (applied every frame) and the screenshot options.
pub struct RenderPanelState {
    /// Renderer settings; `particle.radius` is not edited here (see `radius_scale`).
    pub settings: RenderSettings,
    /// Drawn particle radius over the simulation's dx / 2 (1 = touching spheres).
    pub radius_scale: f32,
    /// Screenshots (button and F12) include the egui panels.
    pub capture_with_ui: bool,
    /// "Saved captures/...png" or the last screenshot's error.
    pub capture_status: Option<Result<String, String>>,
}

impl Default for RenderPanelState {
    fn default() -> Self {
        Self { settings: RenderSettings::default(), radius_scale: 1.0, capture_with_ui: false, capture_status: None }
    }
}

impl RenderPanelState {
    /// The settings to render with: `particle.radius` = `radius_scale` * `particle_radius` (metres, dx / 2).
    pub fn settings_for(&self, particle_radius: f32) -> RenderSettings {
        let mut s = self.settings.clone();
        s.particle.radius = self.radius_scale * particle_radius;
        s
    }
}

/// Draws the panel; returns the Screenshot action.
pub fn render_panel_ui(ui: &mut egui::Ui, state: &mut RenderPanelState) -> Vec<UiAction> {
    let mut actions = Vec::new();
    egui::CollapsingHeader::new("Rendering").default_open(false).show(ui, |ui| {
        let s = &mut state.settings;
        egui::Grid::new("render_grid").num_columns(2).striped(true).show(ui, |ui| {
            row(ui, "Colour by", "What the particle colour shows", |ui| {
                let p = &mut s.particle;
                let before = p.color_mode;
                egui::ComboBox::from_id_salt("color_mode").selected_text(mode_name(p.color_mode)).show_ui(ui, |ui| {
                    for m in ColorMode::ALL {
                        ui.selectable_value(&mut p.color_mode, m, mode_name(m));
                    }
                });
                if p.color_mode != before {
                    p.range = p.color_mode.default_range();
                }
            });
            let unit = format!(" {}", s.particle.color_mode.unit());
            let speed = match s.particle.color_mode {
                ColorMode::Speed => 0.05,
                ColorMode::Density => 1.0,
                ColorMode::Pressure => 50.0,
                ColorMode::Uniform => 0.0,
            };
            if s.particle.color_mode == ColorMode::Uniform {
                row(ui, "Colour", "The one particle colour", |ui| ui.color_edit_button_rgb(&mut s.particle.uniform_color));
            } else {
                row(ui, "Range", "Values mapped to the two ends of the colour ramp", |ui| {
                    ui.horizontal(|ui| {
                        let r = &mut s.particle.range;
                        ui.add(egui::DragValue::new(&mut r[0]).speed(speed).suffix(unit.as_str()));
                        ui.label("…");
                        ui.add(egui::DragValue::new(&mut r[1]).speed(speed).suffix(unit.as_str()));
                    });
                });
            }
            row(ui, "Radius scale", "Drawn particle radius as a multiple of dx / 2 (1 = touching spheres)", |ui| {
                ui.add(egui::Slider::new(&mut state.radius_scale, 0.1..=4.0).logarithmic(true))
            });
            row(ui, "Show", "Toggle what is drawn", |ui| {
                ui.horizontal(|ui| {
                    ui.checkbox(&mut s.show_terrain, "terrain");
                    ui.checkbox(&mut s.show_particles, "particles");
                });
            });
            row(ui, "Sun azimuth", "Sun direction around the vertical, degrees", |ui| {
                ui.add(egui::Slider::new(&mut s.sun_azimuth_deg, 0.0..=360.0).suffix("°"))
            });
            row(ui, "Sun elevation", "Sun height above the horizon, degrees", |ui| {
                ui.add(egui::Slider::new(&mut s.sun_elevation_deg, 0.0..=90.0).suffix("°"))
            });
            row(ui, "Sun intensity", "Brightness of the sun light (1 = default)", |ui| {
                ui.add(egui::Slider::new(&mut s.sun_intensity, 0.0..=5.0))
            });
        });
        if ui.button("Defaults").clicked() {
            state.settings = RenderSettings::default();
            state.radius_scale = 1.0;
        }
    });
    egui::CollapsingHeader::new("Screenshot").default_open(true).show(ui, |ui| {
        ui.horizontal(|ui| {
            if ui.button("Screenshot").on_hover_text("Save a PNG into captures/ (F12)").clicked() {
                actions.push(UiAction::Screenshot { with_ui: state.capture_with_ui });
            }
            ui.checkbox(&mut state.capture_with_ui, "include UI")
                .on_hover_text("Off: the rendered scene only. On: the window as you see it, panels included");
        });
        match &state.capture_status {
            Some(Ok(msg)) => {
                ui.label(msg);
            }
            Some(Err(msg)) => {
                ui.colored_label(egui::Color32::LIGHT_RED, msg);
            }
            None => {}
        }
    });
    actions
}

fn mode_name(m: ColorMode) -> &'static str {
    match m {
        ColorMode::Speed => "speed",
        ColorMode::Density => "density",
        ColorMode::Pressure => "pressure",
        ColorMode::Uniform => "uniform",
    }
}
