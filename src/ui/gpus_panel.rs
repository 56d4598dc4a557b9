//! The GPUs field (how many GPUs the scene is decomposed over; a change rebuilds it, src/app/ranks.rs)
//! and, on several GPUs, the per-GPU panel: every rank's device, owned particles, ghosts, step and
//! exchange times of its last step, its slab along the decomposition axis, and its share of the summed
//! GPU step time as a bar: the measure the ranks move their borders to equalise
//! ([`crate::cluster::Slabs::rebalance`]; equal bars: the load is balanced), the wall clock where the
//! device has no timestamps. The wall-clock step time also holds the waits and, on the window's GPU, the
//! drawing.

use super::UiAction;
use crate::text::thousands;

/// One rank's figures of its last step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankFigures {
    /// The adapter's name, backend and type.
    pub device: String,
    /// Particles owned.
    pub owned: u64,
    /// Ghost copies held.
    pub ghosts: u64,
    /// Wall-clock time of the step's GPU work, ms.
    pub step_ms: f64,
    /// Wall-clock time of the read-back, exchange and upload, ms.
    pub exchange_ms: f64,
    /// GPU time of the step's passes from timestamps, ms (`None` where the device has none).
    pub gpu_ms: Option<f64>,
    /// The slab this rank owns along the decomposition axis, m (infinite at the two ends).
    pub slab: (f32, f32),
}

/// What the per-GPU panel shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpusInfo {
    /// GPUs the running scene is decomposed over (1: the window's GPU alone).
    pub gpus: usize,
    /// By rank (empty on one GPU and before the ranks' first step).
    pub ranks: Vec<RankFigures>,
    /// Decomposition axis: 0 = x, 1 = y, 2 = z.
    pub axis: usize,
    /// Simulated time of the ranks, s.
    pub time: f32,
}

impl RankFigures {
    /// The time the load balancing equalises, ms: the GPU time, or the wall clock without timestamps.
    pub fn balance_ms(&self) -> f64 {
        self.gpu_ms.unwrap_or(self.step_ms)
    }
}

/// Each rank's share of the summed [`RankFigures::balance_ms`], 0 ..= 1.
fn shares(ranks: &[RankFigures]) -> Vec<f64> {
    let total: f64 = ranks.iter().map(RankFigures::balance_ms).sum();
    ranks.iter().map(|r| if total > 0.0 { r.balance_ms() / total } else { 0.0 }).collect()
}

/// The GPUs field's edited count (1 ..= [`crate::cluster::devices::MAX_RANKS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpusField(pub usize);

impl Default for GpusField {
    fn default() -> Self {
        GpusField(1)
    }
}

/// The GPUs field with its Apply button (a [`UiAction::SetGpus`] when the count differs from
/// `info.gpus`), then the per-GPU table when the scene runs on several.
pub fn gpus_panel_ui(ui: &mut egui::Ui, field: &mut GpusField, info: &GpusInfo) -> Option<UiAction> {
    let mut action = None;
    ui.horizontal(|ui| {
        ui.label("GPUs");
        ui.add(egui::DragValue::new(&mut field.0).range(1..=crate::cluster::devices::MAX_RANKS)).on_hover_text(
            "Ranks (one wgpu device each) to decompose the simulation over; a change rebuilds the scene",
        );
        let changed = field.0 != info.gpus;
        if ui.add_enabled(changed, egui::Button::new("Apply (rebuild)")).clicked() {
            action = Some(UiAction::SetGpus(field.0));
        }
    });
    if info.gpus > 1 {
        ranks_ui(ui, info);
    }
    action
}

/// The per-GPU table (see the module docs).
fn ranks_ui(ui: &mut egui::Ui, info: &GpusInfo) {
    if info.ranks.is_empty() {
        ui.label(format!("{} GPUs: waiting for the first step", info.gpus));
        return;
    }
    let axis = ["x", "y", "z"].get(info.axis).copied().unwrap_or("?");
    ui.label(format!("{} GPUs, slabs along {axis}, t = {:.3} s", info.ranks.len(), info.time));
    let headers = [
        ("rank", "Hover a rank for its device"),
        ("owned", "Particles this GPU owns"),
        ("ghosts", "Copies of the neighbours' particles within the halo"),
        ("GPU ms", "GPU time of the step's passes (timestamps): what the load balancing equalises"),
        ("step ms", "Wall-clock time of the step, waits (and on the window's GPU the drawing) included"),
        ("exch. ms", "Wall-clock time of the exchanges with the neighbours"),
        ("slab (m)", "The slab this GPU owns along the decomposition axis"),
        ("share", "Share of the summed GPU ms (the wall clock without timestamps); equal shares: balanced"),
    ];
    egui::Grid::new("per-GPU").striped(true).show(ui, |ui| {
        for (h, help) in headers {
            ui.strong(h).on_hover_text(help);
        }
        ui.end_row();
        for ((r, f), share) in info.ranks.iter().enumerate().zip(shares(&info.ranks)) {
            ui.label(r.to_string()).on_hover_text(&f.device);
            ui.label(thousands(f.owned));
            ui.label(thousands(f.ghosts));
            ui.label(f.gpu_ms.map_or("-".into(), |ms| format!("{ms:.2}")));
            ui.label(format!("{:.2}", f.step_ms));
            ui.label(format!("{:.2}", f.exchange_ms));
            ui.label(format!("{} .. {}", slab_end(f.slab.0), slab_end(f.slab.1)));
            let share = share as f32;
            ui.add(egui::ProgressBar::new(share).desired_width(70.0).text(format!("{:.0} %", share * 100.0)));
            ui.end_row();
        }
    });
}

/// A slab's end for the table: "-inf"/"inf" at the outer ends, else metres with 3 decimals.
fn slab_end(v: f32) -> String {
    if v.is_infinite() {
        if v < 0.0 {
            "-inf".into()
        } else {
            "inf".into()
        }
    } else {
        format!("{v:.3}")
    }
}

/// One line per rank for the log (tests/window.rs reads it): `rank R on DEVICE: owned N, ghosts G, GPU
/// T ms, step S ms, exchange E ms, share P %` (GPU `-` without timestamps; the share as in the panel).
pub fn ranks_log_lines(info: &GpusInfo) -> Vec<String> {
    info.ranks
        .iter()
        .zip(shares(&info.ranks))
        .enumerate()
        .map(|(r, (f, share))| {
            format!(
                "rank {r} on {}: owned {}, ghosts {}, GPU {} ms, step {:.2} ms, exchange {:.2} ms, share {:.0} %",
                f.device,
                f.owned,
                f.ghosts,
                f.gpu_ms.map_or("-".into(), |ms| format!("{ms:.2}")),
                f.step_ms,
                f.exchange_ms,
                100.0 * share
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_give_each_rank_its_share() {
        let rank = |owned, step_ms| RankFigures { device: "gpu".into(), owned, step_ms, ..Default::default() };
        let info = GpusInfo { gpus: 2, ranks: vec![rank(10, 3.0), rank(20, 1.0)], axis: 0, time: 0.5 };
        let lines = ranks_log_lines(&info);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("rank 0 on gpu: owned 10,") && lines[0].ends_with("share 75 %"), "{}", lines[0]);
        assert!(lines[0].contains("GPU - ms"), "{}", lines[0]);
        assert!(lines[1].ends_with("share 25 %"), "{}", lines[1]);
        // With timestamps the share is the GPU time's, the load balancing's measure, whatever the wall clock
        // (rank 0's holds the drawing of the window).
        let timed = |step_ms, gpu| RankFigures { gpu_ms: Some(gpu), ..rank(10, step_ms) };
        let info = GpusInfo { ranks: vec![timed(8.0, 1.0), timed(2.0, 3.0)], ..info };
        let lines = ranks_log_lines(&info);
        assert!(lines[0].contains("GPU 1.00 ms, step 8.00 ms") && lines[0].ends_with("share 25 %"), "{}", lines[0]);
        assert!(lines[1].ends_with("share 75 %"), "{}", lines[1]);
        assert_eq!(slab_end(f32::NEG_INFINITY), "-inf");
        assert_eq!(slab_end(1.5), "1.500");
    }
}
