//! Statistics panel: frame rate (CPU frame time, smoothed), the adapter, the simulation's diagnostics
//! (read back from the GPU asynchronously, so a frame or more old), the per-pass GPU time table, and plots
//! over the last [`HISTORY`] samples of frame time, GPU time per pass, density error and particle count.

use super::FrameInfo;
use crate::text::thousands;
use std::collections::VecDeque;
use std::time::Duration;

/// Samples kept per plotted series.
pub const HISTORY: usize = 400;

/// Time series for the plots; x is the frame counter.
#[derive(Debug, Default)]
pub struct History {
    frame: u64,
    /// CPU frame time, ms.
    pub frame_ms: VecDeque<[f64; 2]>,
    /// GPU time per pass label, ms.
    pub passes: Vec<(String, VecDeque<[f64; 2]>)>,
    /// Mean and max density error, percent.
    pub mean_error: VecDeque<[f64; 2]>,
    pub max_error: VecDeque<[f64; 2]>,
    pub particles: VecDeque<[f64; 2]>,
    last_stats_frame: Option<u64>,
    /// Playback speed: simulated seconds per second of wall clock, smoothed over the statistics records
    /// (1 = real time); the last record's simulated time and the wall clock since it.
    pub playback: Option<f64>,
    last_sim_time: Option<f32>,
    wall_since_stats: Duration,
}

fn push(series: &mut VecDeque<[f64; 2]>, x: f64, y: f64) {
    if series.len() == HISTORY {
        series.pop_front();
    }
    series.push_back([x, y]);
}

impl History {
    /// Adds one frame: its CPU time, the latest GPU pass times, and the statistics if they are new.
    pub fn push_frame(&mut self, dt: Duration, gpu: &[crate::gpu::PassTime], stats: Option<&crate::sim::SimStats>) {
        self.frame += 1;
        let x = self.frame as f64;
        push(&mut self.frame_ms, x, dt.as_secs_f64() * 1e3);
        // A pass that runs several times a frame (substeps) counts once, with its summed time.
        let mut sums: Vec<(&str, f64)> = Vec::new();
        for t in gpu {
            match sums.iter_mut().find(|(l, _)| *l == t.label) {
                Some(e) => e.1 += t.ms,
                None => sums.push((&t.label, t.ms)),
            }
        }
        for (label, ms) in sums {
            let i = match self.passes.iter().position(|(l, _)| l == label) {
                Some(i) => i,
                None => {
                    self.passes.push((label.to_string(), VecDeque::new()));
                    self.passes.len() - 1
                }
            };
            push(&mut self.passes[i].1, x, ms);
        }
        // Drop series of passes that no longer run.
        self.passes.retain(|(_, s)| s.back().is_some_and(|p| x - p[0] < HISTORY as f64));
        if stats.is_none_or(|s| self.last_stats_frame == Some(s.frame)) {
            self.wall_since_stats += dt;
        }
        if let Some(s) = stats {
            if self.last_stats_frame != Some(s.frame) {
                self.last_stats_frame = Some(s.frame);
                self.update_playback(s.time, dt);
                push(&mut self.mean_error, x, s.mean_density_error as f64 * 100.0);
                push(&mut self.max_error, x, s.max_density_error as f64 * 100.0);
                push(&mut self.particles, x, s.particle_count as f64);
            }
        }
    }

    /// A statistics record at simulated time `time` arrived, `dt` of wall clock after the last frame: the
    /// playback speed is the simulated time since the last record over the wall clock since it (smoothed,
    /// weight 0.2); a reset (time going back) starts it afresh.
    fn update_playback(&mut self, time: f32, dt: Duration) {
        let wall = (self.wall_since_stats + dt).as_secs_f64();
        match self.last_sim_time {
            Some(t0) if time >= t0 && wall > 0.0 => {
                let rate = f64::from(time - t0) / wall;
                self.playback = Some(self.playback.map_or(rate, |p| 0.8 * p + 0.2 * rate));
            }
            _ => self.playback = None,
        }
        self.last_sim_time = Some(time);
        self.wall_since_stats = Duration::ZERO;
    }
}

fn line(name: &str, s: &VecDeque<[f64; 2]>) -> egui_plot::Line<'static> {
    egui_plot::Line::new(name.to_string(), egui_plot::PlotPoints::from(s.iter().copied().collect::<Vec<_>>()))
}

/// The three plots (frame and pass times; density error; particle count).
pub fn plots_ui(ui: &mut egui::Ui, h: &History) {
    let height: f32 = 110.0;
    ui.label("Frame time and GPU time per pass, ms");
    // Tall enough for its legend (a row of about 18 points per series), which would otherwise spill over
    // the plots below.
    let legend_rows = h.passes.len() + 1;
    egui_plot::Plot::new("plot_times")
        .height(height.max(18.0 * legend_rows as f32 + 40.0))
        .legend(egui_plot::Legend::default().position(egui_plot::Corner::LeftTop))
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .include_y(0.0)
        .show(ui, |p| {
            p.line(line("frame (CPU)", &h.frame_ms));
            for (label, s) in &h.passes {
                p.line(line(label, s));
            }
        });
    ui.label("Density error, %");
    egui_plot::Plot::new("plot_error")
        .height(height)
        .legend(egui_plot::Legend::default().position(egui_plot::Corner::LeftTop))
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .include_y(0.0)
        .show(ui, |p| {
            p.line(line("mean", &h.mean_error));
            p.line(line("max", &h.max_error));
        });
    ui.label("Particles");
    egui_plot::Plot::new("plot_particles")
        .height(height * 0.7)
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .include_y(0.0)
        .show(ui, |p| p.line(line("particles", &h.particles)));
}

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
pub fn stats_panel_ui(ui: &mut egui::Ui, timer: &mut FrameTimer, history: &History, info: &FrameInfo<'_>) {
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
            ui.label(info.sim.map_or_else(|| "-".into(), |s| thousands(s.live_particles() as u64)));
            ui.end_row();
            if let Some(rate) = history.playback {
                ui.label("Playback").on_hover_text(
                    "Simulated seconds per second of wall clock (1 = real time), and the steps of the last timed \
                     frame: a frame takes the steps that cover its simulated time, as many as fit the frame budget",
                );
                let steps = crate::sim::frame_steps::steps_in(info.gpu_times);
                let steps = if steps > 0 { format!(", {steps} steps a frame") } else { String::new() };
                ui.label(format!("{rate:.2} x real time{steps}"));
                ui.end_row();
            }
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
        ui.add_space(4.0);
        egui::CollapsingHeader::new("Plots").default_open(true).show(ui, |ui| plots_ui(ui, history));
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
    if s.density_iterations + s.divergence_iterations > 0 {
        row(
            "Iterations",
            "DFSPH's iterations in the last substep: constant-density + divergence-free solve; each costs about two neighbour passes (see the GPU times)",
            format!("{} + {}", s.density_iterations, s.divergence_iterations),
        );
    }
    row("Max speed", "Largest particle speed, m/s", format!("{:.2} m/s", s.max_speed));
    row("Kinetic energy", "Sum of m |v|^2 / 2 over particles, joules", format!("{:.4e} J", s.kinetic_energy));
    let lost = s.outside_domain + s.below_terrain + s.non_finite;
    if lost > 0 {
        ui.label("Escaped")
            .on_hover_text("Particles outside the domain, below the terrain, or not finite (should be 0)");
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
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                ui.monospace(format!("{:.3} ms", t.ms))
            });
            ui.end_row();
        }
        let total: f64 = info.gpu_times.iter().map(|t| t.ms).sum();
        ui.strong("total");
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| ui.strong(format!("{total:.3} ms")));
        ui.end_row();
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimStats;

    #[test]
    fn playback_is_simulated_time_over_wall_clock() {
        let mut h = History::default();
        let frame = Duration::from_millis(20);
        let record = |frame: u64, time: f32| SimStats { frame, time, ..SimStats::default() };
        h.push_frame(frame, &[], Some(&record(1, 0.01)));
        assert_eq!(h.playback, None, "one record says nothing yet");
        // Two frames (40 ms) later the water is 20 ms further: half of real time.
        h.push_frame(frame, &[], None);
        h.push_frame(frame, &[], Some(&record(3, 0.03)));
        assert!((h.playback.unwrap() - 0.5).abs() < 1e-6, "{:?}", h.playback);
        // The same record again is no new figure; a reset (time back to 0) starts afresh.
        h.push_frame(frame, &[], Some(&record(3, 0.03)));
        assert!((h.playback.unwrap() - 0.5).abs() < 1e-6);
        h.push_frame(frame, &[], Some(&record(4, 0.0)));
        assert_eq!(h.playback, None);
    }
}
