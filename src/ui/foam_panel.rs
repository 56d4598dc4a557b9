//! Foam panel: the diffuse particles (spray, foam and air bubbles after Ihmsen, Akinci, Akinci & Teschner
//! 2012). How they are made and moved are solver parameters (`SimParams::diffuse`, saved with the scene),
//! edited here in the Simulation panel's state and applied live through [`UiAction::ApplyParams`]; how
//! they are drawn is part of the render settings (`RenderSettings::foam`, applied every frame). The live
//! counts come from the statistics (a frame or more old).

use super::render_panel::RenderPanelState;
use super::sim_panel::{param_row, SimPanelState};
use super::{row, FrameInfo, UiAction};
use crate::sim::DiffuseParams;

/// Draws the panel; returns the ApplyParams action when a generation parameter changed.
pub fn foam_panel_ui(
    ui: &mut egui::Ui,
    render: &mut RenderPanelState,
    sim: &mut SimPanelState,
    info: &FrameInfo<'_>,
) -> Vec<UiAction> {
    let mut actions = Vec::new();
    egui::CollapsingHeader::new("Foam, spray, bubbles").default_open(false).show(ui, |ui| {
        if let Some(s) = info.stats {
            let d = &s.diffuse;
            let pool = info.sim.and_then(|s| s.diffuse()).map_or(0, |d| d.capacity);
            ui.label(format!(
                "{} diffuse particles of {}: spray {}, foam {}, bubbles {}",
                crate::text::thousands(d.count as u64),
                crate::text::thousands(pool as u64),
                d.spray,
                d.foam,
                d.bubbles
            ));
        }
        egui::CollapsingHeader::new("Generation").default_open(true).show(ui, |ui| {
            if generation_ui(ui, &mut sim.params.diffuse, &sim.defaults.diffuse) {
                actions.push(UiAction::ApplyParams(sim.live_params(info)));
            }
        });
        egui::CollapsingHeader::new("Look").default_open(true).show(ui, |ui| look_ui(ui, &mut render.settings.foam));
    });
    actions
}

/// A [min, max] pair of drag values with `unit`; returns true when either changed.
fn range_ui(ui: &mut egui::Ui, r: &mut [f32; 2], speed: f64, unit: &str) -> bool {
    let (lo, hi) = (r[0], r[1]);
    ui.horizontal(|ui| {
        let a = ui.add(egui::DragValue::new(&mut r[0]).speed(speed).range(0.0..=hi).suffix(unit)).changed();
        ui.label("…");
        let b = ui.add(egui::DragValue::new(&mut r[1]).speed(speed).range(lo..=f32::MAX).suffix(unit)).changed();
        a || b
    })
    .inner
}

/// How diffuse particles are made, classified and moved; returns true when something changed.
fn generation_ui(ui: &mut egui::Ui, p: &mut DiffuseParams, defaults: &DiffuseParams) -> bool {
    let mut changed = false;
    egui::Grid::new("diffuse_grid").num_columns(3).striped(true).show(ui, |ui| {
        changed |= param_row(ui, "On", "Make and move diffuse particles (spray, foam, bubbles) once per frame from the water's trapped air, wave crests and kinetic energy. Off: none are made and those alive are dropped.", &mut p.enabled, defaults.enabled, |ui, v| {
            ui.checkbox(v, "").changed()
        });
        changed |= param_row(ui, "Trapped-air rate", "k_ta: new diffuse particles per fluid particle and second where the trapped-air potential and the kinetic energy are both full, 1/s", &mut p.trapped_air_rate, defaults.trapped_air_rate, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=1000.0).logarithmic(true).suffix(" /s")).changed()
        });
        changed |= param_row(ui, "Wave-crest rate", "k_wc: the same at full wave-crest potential, 1/s", &mut p.wave_crest_rate, defaults.wave_crest_rate, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=1000.0).logarithmic(true).suffix(" /s")).changed()
        });
        changed |= param_row(ui, "Trapped air", "Range of the trapped-air potential, m/s: the weighted mean over the neighbours of |v_ij| (1 - v̂_ij·x̂_ij), most for particles running into each other. Below the first value nothing, above the second full.", &mut p.trapped_air, defaults.trapped_air, |ui, v| {
            range_ui(ui, v, 0.01, " m/s")
        });
        changed |= param_row(ui, "Wave crest", "Range of the wave-crest potential, dimensionless: the weighted mean of 1 - n̂_i·n̂_j over the neighbours below a surface particle moving outward (convex crests).", &mut p.wave_crest, defaults.wave_crest, |ui, v| {
            range_ui(ui, v, 0.005, "")
        });
        changed |= param_row(ui, "Kinetic energy", "Range of the kinetic energy per unit mass |v|²/2, J/kg (1 m/s = 0.5 J/kg); it scales both potentials, so slow water makes nothing.", &mut p.kinetic_energy, defaults.kinetic_energy, |ui, v| {
            range_ui(ui, v, 0.05, " J/kg")
        });
        changed |= param_row(ui, "Lifetime", "Lifetime of a new diffuse particle, seconds (each gets 0.5 to 1 times this). Foam ages at 1 s per second, spray and bubbles at a quarter of that.", &mut p.lifetime, defaults.lifetime, |ui, v| {
            ui.add(egui::Slider::new(v, 0.05..=30.0).logarithmic(true).suffix(" s")).changed()
        });
        changed |= param_row(ui, "Spray drag", "Air drag of spray, 1/s: dv/dt = g - drag v (0 = ballistic; terminal speed |g| / drag).", &mut p.spray_drag, defaults.spray_drag, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=20.0).suffix(" /s")).changed()
        });
        changed |= param_row(ui, "Bubble buoyancy", "Buoyancy of bubbles as a multiple of gravity, pointing up. Dimensionless.", &mut p.bubble_buoyancy, defaults.bubble_buoyancy, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=5.0)).changed()
        });
        changed |= param_row(ui, "Bubble drag", "Drag of bubbles toward the water's velocity, 1/s (rise speed about buoyancy |g| / drag).", &mut p.bubble_drag, defaults.bubble_drag, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=100.0).suffix(" /s")).changed()
        });
        changed |= param_row(ui, "Spray below", "A diffuse particle with fewer water neighbours than this fraction of a full neighbourhood is spray.", &mut p.spray_below, defaults.spray_below, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=1.0)).changed()
        });
        changed |= param_row(ui, "Bubbles above", "... with more than this fraction, a bubble; in between, foam.", &mut p.bubble_above, defaults.bubble_above, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=1.0)).changed()
        });
        changed |= param_row(ui, "Budget", "Most new diffuse particles per frame, as a fraction of the pool (a quarter of the particle capacity). Past it every source is scaled down alike.", &mut p.budget, defaults.budget, |ui, v| {
            ui.add(egui::Slider::new(v, 0.0..=0.2)).changed()
        });
    });
    p.bubble_above = p.bubble_above.max(p.spray_below);
    changed
}

/// How diffuse particles are drawn.
fn look_ui(ui: &mut egui::Ui, f: &mut crate::render::FoamSettings) {
    egui::Grid::new("foam_look_grid").num_columns(2).striped(true).show(ui, |ui| {
        row(
            ui,
            "Draw",
            "Draw the diffuse particles as white foam over and into the water, spray as bright droplets",
            |ui| ui.checkbox(&mut f.enabled, ""),
        );
        for (label, help, value) in [
            ("Foam radius", "Splat radius of a foam particle, × dx", &mut f.foam_radius),
            ("Spray radius", "Splat radius of a spray droplet, × dx", &mut f.spray_radius),
            ("Bubble radius", "Splat radius of a bubble, × dx", &mut f.bubble_radius),
        ] {
            row(ui, label, help, |ui| ui.add(egui::Slider::new(value, 0.05..=3.0).suffix(" dx")));
        }
        for (label, help, value) in [
            (
                "Foam opacity",
                "Opacity one foam splat adds at its centre (overlaps add up: 1 - exp(-sum))",
                &mut f.foam_opacity,
            ),
            ("Spray opacity", "The same for a spray droplet", &mut f.spray_opacity),
            ("Bubble opacity", "The same for a bubble", &mut f.bubble_opacity),
        ] {
            row(ui, label, help, |ui| ui.add(egui::Slider::new(value, 0.0..=2.0)));
        }
        row(
            ui,
            "Absorption",
            "How fast foam and bubbles fade behind the water's surface, per metre of water in front of them",
            |ui| ui.add(egui::Slider::new(&mut f.absorption, 0.0..=50.0).suffix(" /m")),
        );
        row(
            ui,
            "Motion blur",
            "Exposure that stretches each splat along its motion across the view (a streak of speed × exposure); \
             0 draws round splats",
            |ui| ui.add(egui::Slider::new(&mut f.shutter_s, 0.0..=0.1).suffix(" s")),
        );
        row(
            ui,
            "Bubbles",
            "Bubble cells per foam splat radius: each foam splat drawn as a cluster of bubbles moving with it; \
             0 draws smooth splats",
            |ui| ui.add(egui::Slider::new(&mut f.bubbles, 0.0..=6.0)),
        );
        row(
            ui,
            "Lace",
            "How clear the bubbles' insides may be: 0 no texture, 1 a lace of holes between the bubbles' walls",
            |ui| ui.add(egui::Slider::new(&mut f.lace, 0.0..=1.0)),
        );
    });
}
