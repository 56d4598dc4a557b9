//! Render panel: the view (final water, any intermediate target of the screen-space fluid renderer, or the
//! sphere impostors), every fluid-rendering parameter live (anisotropy, splats, the depth filter: curvature
//! flow or narrow range, shading),
//! the sun and sky, the sphere impostors' colouring; and the screenshot button with its "include UI" option
//! and the status line of the last screenshot.

use super::sky_panel::{sky_ui, SkyPanelState};
use super::{row, UiAction};
use crate::render::{
    ColorMode, DepthFilter, FluidSettings, FluidView, NarrowRangeParams, RenderSettings, SkyModel, SplatMethod,
};

/// State of the render panel: the renderer's settings (applied every frame) and the screenshot options.
pub struct RenderPanelState {
    /// Renderer settings; `particle.radius` is not edited here (see `radius_scale`).
    pub settings: RenderSettings,
    /// Drawn particle radius over the simulation's dx / 2 (1 = touching spheres).
    pub radius_scale: f32,
    /// Screenshots (button and F12) include the egui panels.
    pub capture_with_ui: bool,
    /// The sky section: the sky on screen, the one loading, the path being typed.
    pub sky: SkyPanelState,
    /// "Saved captures/...png" or the last screenshot's error.
    pub capture_status: Option<Result<String, String>>,
}

impl Default for RenderPanelState {
    fn default() -> Self {
        Self {
            settings: RenderSettings::default(),
            radius_scale: 1.0,
            capture_with_ui: false,
            sky: SkyPanelState::default(),
            capture_status: None,
        }
    }
}

impl RenderPanelState {
    /// The defaults, but on a CPU adapter (`on_cpu`, e.g. lavapipe) without the water's shadow and the
    /// terrain's bounce light: there the shadow's overlays ("terrain water shadow", "tank ground water
    /// shadow") cost about a quarter of a frame (docs/rendering.md), as the scenes start at a coarser dx,
    /// and the bounce bake takes seconds (2.7 s for the valley's DEM on lavapipe) each time the sun moves.
    pub fn for_adapter(on_cpu: bool) -> Self {
        let mut state = Self::default();
        state.settings.water_shadow &= !on_cpu;
        state.settings.terrain_bounce &= !on_cpu;
        state
    }

    /// The settings to render with: `particle.radius` = `radius_scale` * `particle_radius` (metres, dx / 2)
    /// and `fluid.dx` = 2 * `particle_radius` (splat sizes scale with the simulation's spacing).
    pub fn settings_for(&self, particle_radius: f32) -> RenderSettings {
        let mut s = self.settings.clone();
        s.particle.radius = self.radius_scale * particle_radius;
        s.fluid.dx = 2.0 * particle_radius;
        s
    }
}

/// Draws the panel; returns the Screenshot and sky actions.
pub fn render_panel_ui(ui: &mut egui::Ui, state: &mut RenderPanelState) -> Vec<UiAction> {
    let mut actions = Vec::new();
    egui::CollapsingHeader::new("Rendering").default_open(false).show(ui, |ui| {
        let s = &mut state.settings;
        egui::Grid::new("render_grid").num_columns(2).striped(true).show(ui, |ui| {
            row(
                ui,
                "View",
                "What the frame shows: the water, an intermediate target, or the old sphere impostors",
                |ui| {
                    egui::ComboBox::from_id_salt("fluid_view").selected_text(s.view.name()).show_ui(ui, |ui| {
                        for v in FluidView::ALL {
                            ui.selectable_value(&mut s.view, v, v.name());
                        }
                    });
                },
            );
            row(ui, "Show", "Toggle what is drawn", |ui| {
                ui.horizontal(|ui| {
                    ui.checkbox(&mut s.show_terrain, "terrain");
                    ui.checkbox(&mut s.show_particles, "water");
                    ui.checkbox(&mut s.show_tank, "walls").on_hover_text(
                        "The domain's walls: a box scene's glass tank, a terrain scene's concrete walls where \
                         they hold the water",
                    );
                    ui.checkbox(&mut s.wet_ground, "wet ground");
                });
            });
            row(
                ui,
                "Water shadow",
                "The water dims and tints the sunlight on the terrain under it (Beer-Lambert through the water \
                 between the sun and the ground, with the water's absorption colour): a light-space splat of the \
                 particles seen from the sun, 'water shadow' in the GPU table",
                |ui| ui.checkbox(&mut s.water_shadow, "on"),
            );
            row(
                ui,
                "Bounce light",
                "Sunlit slopes light the ground around them: two bounces of the sun's and the sky's light between \
                 the terrain's samples, baked on the GPU when the sun or the terrain changes ('terrain bounce' in \
                 the GPU table)",
                |ui| ui.checkbox(&mut s.terrain_bounce, "on"),
            );
            row(ui, "Sun azimuth", "Sun direction around the vertical, degrees", |ui| {
                ui.add(egui::Slider::new(&mut s.sun_azimuth_deg, 0.0..=360.0).suffix("°"))
            });
            row(ui, "Sun elevation", "Sun height above the horizon, degrees", |ui| {
                ui.add(egui::Slider::new(&mut s.sun_elevation_deg, 0.0..=90.0).suffix("°"))
            });
            row(ui, "Sun intensity", "Brightness of the sun light (1 = nominal)", |ui| {
                ui.add(egui::Slider::new(&mut s.sun_intensity, 0.0..=5.0))
            });
            row(
                ui,
                "Sky model",
                "The generated sky: a scattering atmosphere (Rayleigh and Mie, single and multiple scattering, \
                 ozone; blue zenith, horizon haze, red light near a low sun) or the Preetham daylight model (the earlier \
                 default). A loaded HDR sky replaces either",
                |ui| {
                    egui::ComboBox::from_id_salt("sky_model").selected_text(s.sky_model.name()).show_ui(ui, |ui| {
                        for m in SkyModel::ALL {
                            ui.selectable_value(&mut s.sky_model, m, m.name());
                        }
                    });
                },
            );
            row(
                ui,
                "Turbidity",
                "Haze of the generated sky: 2 clear … 10 hazy (the atmosphere's aerosols: x1 at 2.5)",
                |ui| ui.add(egui::Slider::new(&mut s.sky_turbidity, 1.7..=10.0)),
            );
        });
        if s.view == FluidView::Spheres {
            spheres_ui(ui, s, &mut state.radius_scale);
        } else {
            fluid_ui(ui, s);
        }
        actions.extend(sky_ui(ui, &mut state.sky, &mut s.sky_exposure));
        if ui.button("Defaults").clicked() {
            state.settings = RenderSettings::default();
            state.radius_scale = 1.0;
        }
    });
    egui::CollapsingHeader::new("Screenshot").default_open(true).show(ui, |ui| {
        ui.horizontal(|ui| {
            if ui
                .button("Screenshot")
                .on_hover_text("Save a PNG or EXR into captures/ (F12); format and size in the Capture panel")
                .clicked()
            {
                actions.push(UiAction::Screenshot { with_ui: state.capture_with_ui });
            }
            ui.checkbox(&mut state.capture_with_ui, "include UI").on_hover_text(
                "Off: the rendered scene only. On: the window as you see it, panels included (PNG only)",
            );
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

/// The sphere-impostor view's colouring and radius.
fn spheres_ui(ui: &mut egui::Ui, s: &mut RenderSettings, radius_scale: &mut f32) {
    egui::Grid::new("spheres_grid").num_columns(2).striped(true).show(ui, |ui| {
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
        row(ui, "Radius scale", "Drawn sphere radius as a multiple of dx / 2 (1 = touching spheres)", |ui| {
            ui.add(egui::Slider::new(radius_scale, 0.1..=4.0).logarithmic(true))
        });
    });
}

/// Every screen-space fluid parameter: anisotropy, splats, depth filter, shading.
fn fluid_ui(ui: &mut egui::Ui, s: &mut RenderSettings) {
    let f = &mut s.fluid;
    egui::Grid::new("fluid_grid").num_columns(2).striped(true).show(ui, |ui| {
        row(ui, "Anisotropy", "Ellipsoids from each particle's neighbourhood (Yu & Turk); off: spheres", |ui| {
            ui.checkbox(&mut f.anisotropy, "")
        });
        row(ui, "Axis ratio kr", "Largest ratio of the ellipsoid's longest to shortest axis", |ui| {
            ui.add_enabled(f.anisotropy, egui::Slider::new(&mut f.kr, 1.0..=8.0))
        });
        row(ui, "Ellipsoid scale", "Scale of the ellipsoid axes (1 = the splat sphere's volume)", |ui| {
            ui.add_enabled(f.anisotropy, egui::Slider::new(&mut f.anisotropy_scale, 0.3..=2.0))
        });
        row(ui, "Neighbour threshold", "Fewer neighbours than this: a sphere (isolated drops)", |ui| {
            ui.add_enabled(f.anisotropy, egui::Slider::new(&mut f.neighbour_threshold, 1..=60))
        });
        row(
            ui,
            "Lone drop radius",
            "Radius of a particle without neighbours, of the splat radius (Yu & Turk's k_n); it grows to the whole \
             radius at the neighbour threshold",
            |ui| ui.add_enabled(f.anisotropy, egui::Slider::new(&mut f.isolated_radius, 0.1..=1.0)),
        );
        row(ui, "Neighbour radius", "Radius of the neighbourhood, × dx (2h)", |ui| {
            ui.add_enabled(f.anisotropy, egui::Slider::new(&mut f.neighbour_radius, 1.0..=4.0).suffix(" dx"))
        });
        row(
            ui,
            "Centre smoothing",
            "How far each splat centre moves to its neighbours' weighted mean (lambda)",
            |ui| ui.add_enabled(f.anisotropy, egui::Slider::new(&mut f.centre_smoothing, 0.0..=1.0)),
        );
        row(ui, "Splat radius", "Radius of a particle's splat sphere, × dx", |ui| {
            ui.add(egui::Slider::new(&mut f.splat_radius, 0.3..=2.0).suffix(" dx"))
        });
        row(ui, "Thickness resolution", "Resolution of the thickness target", |ui| {
            ui.horizontal(|ui| {
                ui.radio_value(&mut f.half_res_thickness, false, "full");
                ui.radio_value(&mut f.half_res_thickness, true, "half");
            });
        });
        row(
            ui,
            "Splats drawn by",
            "Rasteriser (instanced quads) or compute shaders (per-pixel atomics), the camera's splats and the \
             water shadow's; the same picture",
            |ui| {
                ui.horizontal(|ui| {
                    ui.radio_value(&mut f.splats, SplatMethod::Raster, "raster");
                    ui.radio_value(&mut f.splats, SplatMethod::Compute, "compute");
                });
            },
        );
        row(
            ui,
            "Depth filter",
            "What smooths the splats' depth before shading (docs/rendering.md compares them)",
            |ui| {
                egui::ComboBox::from_id_salt("depth_filter").selected_text(f.depth_filter.name()).show_ui(ui, |ui| {
                    for d in DepthFilter::ALL {
                        ui.selectable_value(&mut f.depth_filter, d, d.name());
                    }
                });
            },
        );
        match f.depth_filter {
            DepthFilter::CurvatureFlow => curvature_flow_rows(ui, f),
            DepthFilter::NarrowRange => narrow_range_rows(ui, &mut f.narrow_range),
        }
        row(ui, "Full-screen filter", "Filter every pixel instead of the fluid tiles only (for comparison)", |ui| {
            ui.checkbox(&mut f.full_screen_flow, "")
        });
        row(ui, "Absorption", "Beer-Lambert absorption per metre: the colour light loses in the water", |ui| {
            ui.horizontal(|ui| {
                for (k, c) in f.absorption.iter_mut().zip(["r", "g", "b"]) {
                    ui.add(egui::DragValue::new(k).speed(0.01).range(0.0..=10.0).prefix(c).suffix("/m"));
                }
            });
        });
        row(
            ui,
            "Refraction index",
            "Index of refraction (water 1.333; 1 = none): what lies behind the water is seen where the bent ray \
             leaves it",
            |ui| ui.add(egui::Slider::new(&mut f.ior, 1.0..=2.0)),
        );
        row(ui, "Fresnel F0", "Reflectance at normal incidence (water 0.02)", |ui| {
            ui.add(egui::Slider::new(&mut f.fresnel_f0, 0.0..=0.2))
        });
        row(
            ui,
            "Droplet thickness",
            "Water thinner than this (× dx; a lone particle is at most 2 × splat radius) is shaded as droplets: \
             round, lens-like, with a sun glint (0 = off)",
            |ui| ui.add(egui::Slider::new(&mut f.droplet_thickness, 0.0..=6.0).suffix(" dx")),
        );
    });
}

/// The curvature flow's parameters (rows of the fluid grid).
fn curvature_flow_rows(ui: &mut egui::Ui, f: &mut FluidSettings) {
    row(ui, "Flow iterations", "Curvature-flow smoothing iterations per frame (0 = raw splats)", |ui| {
        ui.add(egui::Slider::new(&mut f.flow_iterations, 0..=200))
    });
    row(ui, "Flow step", "Euler step as a fraction of the stability limit", |ui| {
        ui.add(egui::Slider::new(&mut f.flow_step, 0.05..=1.0))
    });
    row(ui, "Silhouette threshold", "Depth jump (× dx) not smoothed across", |ui| {
        ui.add(egui::Slider::new(&mut f.depth_threshold, 0.2..=20.0).logarithmic(true).suffix(" dx"))
    });
}

/// The narrow-range filter's parameters (rows of the fluid grid).
fn narrow_range_rows(ui: &mut egui::Ui, p: &mut NarrowRangeParams) {
    row(ui, "Filter iterations", "Narrow-range iterations per frame, each a horizontal and a vertical pass", |ui| {
        ui.add(egui::Slider::new(&mut p.iterations, 0..=8))
    });
    row(ui, "Filter radius", "Radius of the filter in the world (× dx), projected at each pixel's depth", |ui| {
        ui.add(egui::Slider::new(&mut p.radius, 0.25..=8.0).logarithmic(true).suffix(" dx"))
    });
    row(ui, "Largest radius", "Largest filter radius on screen, pixels (bounds the cost of near water)", |ui| {
        ui.add(egui::Slider::new(&mut p.max_radius_px, 1..=64).suffix(" px"))
    });
    row(
        ui,
        "Depth range",
        "Surface within this of the plane through a pixel (× dx) is averaged; layers in front are ignored",
        |ui| ui.add(egui::Slider::new(&mut p.range, 0.1..=10.0).logarithmic(true).suffix(" dx")),
    );
    row(
        ui,
        "Clamp offset",
        "Depths farther than the range count as this far behind (× dx): rounds silhouettes",
        |ui| ui.add(egui::Slider::new(&mut p.clamp_offset, 0.0..=2.0).suffix(" dx")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The water's shadow is on by default, and off in the window on a CPU adapter (its overlays' cost there).
    #[test]
    fn the_water_shadow_starts_on_except_on_a_cpu_adapter() {
        assert!(RenderSettings::default().water_shadow, "on by default");
        assert!(RenderPanelState::for_adapter(false).settings.water_shadow, "on with a GPU");
        assert!(!RenderPanelState::for_adapter(true).settings.water_shadow, "off on a CPU adapter");
    }
}
