//! Statistics panel: frame rate (CPU frame time, smoothed), the adapter, the simulation's diagnostics
//! (read back from the GPU asynchronously, so a frame or more old) and the per-pass GPU time table.

use super::{sim_panel::thousands, FrameInfo};
use std::time::Duration;

/// Exponentially smoothed CPU frame time.
#[derive(Debug, Default)]
pub struct FrameTimer {
    /// Smoothed frame time, milliseconds (0 until the first frame).
    pub ms: f32,
}

impl FrameTimer {
    /// Adds one frame's duration (weight 0.1; the first frame sets the value).
    pub fn push(&mut self, dt: Duration) {
        let ms = dt.as_secs_f32() * 1e3;
        self.ms = if self.ms == 0.0 { ms } else { 0.9 * self.ms + 0.1 * ms };
    }

    /// Frames per second from the smoothed frame time.
    pub fn fps(&self) -> f32 {
        if self.ms > 0.0 {
            1e3 / self.ms
        } else {
            0.0
        }
    }
}

/// Draws the panel (display only).
pub fn stats_panel_ui(ui: &mut egui::Ui, timer: &mut FrameTimer, info: &FrameInfo<'_>) {
    egui::CollapsingHeader::new("Statistics").default_open(true).show(ui, |ui| {
        egui::Grid::new("stats_grid").num_columns(2).striped(true).show(ui, |ui| {
            ui.label("FPS").on_hover_text("Frames per second, from the CPU frame time (smoothed)");
            ui.label(format!("{:.1} ({:.1} ms)", timer.fps(), timer.ms));
            ui.end_row();
            ui.label("GPU");
            ui.label(info.ctx.adapter_summary());
            ui.end_row();
            if info.ctx.is_cpu() {
                ui.label("");
                ui.colored_label(egui::Color32::YELLOW, "CPU adapter: particle count scaled down");
                ui.end_row();
            }
            ui.label("Particles");
            ui.label(info.sim.map_or_else(|| "-".into(), |s| thousands(s.particle_count() as u64)));
            ui.end_row();
            match info.stats {
                Some(s) => sim_stats_rows(ui, s),
                None => {
                    ui.label("Diagnostics");
                    ui.weak("waiting for the GPU");
                    ui.end_row();
                }
            }
        });
        ui.add_space(4.0);
        gpu_times_ui(ui, info);
    });
}

fn sim_stats_rows(ui: &mut egui::Ui, s: &crate::sim::SimStats) {
    let mut row = |label: &str, help: &str, value: String| {
        ui.label(label).on_hover_text(help);
        ui.label(value);
        ui.end_row();
    };
    row("Simulated time", "Simulated seconds since the start", format!("{:.3} s", s.time));
    row("dt", "Last substep's time step (CFL-limited), milliseconds", format!("{:.3} ms", s.dt * 1e3));
    row(
        "Density error",
        "Compression relative to rest density rho0: mean of max(rho - rho0, 0) / rho0 and max of |rho - rho0| / rho0",
        format!("mean {:.3} %, max {:.2} %", s.mean_density_error * 100.0, s.max_density_error * 100.0),
    );
    row("Max speed", "Largest particle speed, m/s", format!("{:.2} m/s", s.max_speed));
    row("Kinetic energy", "Sum of m |v|^2 / 2 over particles, joules", format!("{:.4e} J", s.kinetic_energy));
    let lost = s.outside_domain + s.below_terrain + s.non_finite;
    if lost > 0 {
        ui.label("Escaped").on_hover_text("Particles outside the domain, below the terrain, or not finite (should be 0)");
        ui.colored_label(
            egui::Color32::LIGHT_RED,
            format!("{} outside, {} below terrain, {} non-finite", s.outside_domain, s.below_terrain, s.non_finite),
        );
        ui.end_row();
    }
}

fn gpu_times_ui(ui: &mut egui::Ui, info: &FrameInfo<'_>) {
    ui.strong("GPU time per pass");
    if !info.ctx.has_timestamps() {
        ui.weak("timestamps unavailable on this adapter");
        return;
    }
    if info.gpu_times.is_empty() {
        ui.weak("waiting for the first timings");
        return;
    }
    egui::Grid::new("gpu_times").num_columns(2).striped(true).show(ui, |ui| {
        for t in info.gpu_times {
            ui.label(&t.label);
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| ui.monospace(format!("{:.3} ms", t.ms)));
            ui.end_row();
        }
        let total: f64 = info.gpu_times.iter().map(|t| t.ms).sum();
        ui.strong("total");
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| ui.strong(format!("{total:.3} ms")));
        ui.end_row();
    });
}
