//! `waterview run --gpus N` and `waterview bench --gpus N` for N > 1: the scene decomposed over N ranks
//! (src/cluster), one thread and one GPU device each. No image yet (sort-last compositing comes later);
//! per-rank particle counts, step and exchange times are printed and written as CSV.

use crate::cluster::{self, rank_contexts, run_threads, ClusterError, Rank, RankConfig};
use crate::engine;
use crate::scene::Scene;
use crate::sim::SimOptions;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;

/// How long a decomposed run goes and what it writes.
pub struct MultiRun<'a> {
    pub ranks: usize,
    /// Override of the scene's dx, m (`None`: the scene's, scaled on a CPU adapter).
    pub dx: Option<f32>,
    /// Steps to run, or simulated seconds (the first given; one of them is).
    pub steps: Option<u64>,
    pub seconds: Option<f32>,
    /// Steps run before the figures are summed (bench).
    pub warmup: u64,
    /// CSV of every step's figures per rank.
    pub csv: Option<&'a Path>,
    /// Refuse scenes with emitters or sinks (run) rather than leaving them out (bench).
    pub refuse_sources: bool,
}

/// Per-rank sums of a decomposed run (after the warm-up).
#[derive(Clone, Debug, Default)]
pub struct MultiSummary {
    pub particles: usize,
    pub steps: u64,
    pub time: f32,
    /// By rank: (owned at the end, ghosts at the end, mean step ms, mean exchange ms).
    pub ranks: Vec<[f64; 4]>,
    /// Mean over the steps of the slowest rank's step + exchange, ms (the decomposed step's wall time).
    pub ms_per_step: f64,
}

/// CSV columns of a decomposed run's statistics.
pub const CSV_HEADER: &str = "step,time_s,rank,owned,ghosts,step_ms,exchange_ms";

/// Runs `scene_path`'s scene as `run` asks (see [`MultiRun`]). Errors: the scene, the GPUs, a rank, the
/// CSV; the reason names the rank where one failed.
pub fn run(scene_path: Option<&Path>, opts: &MultiRun) -> Result<MultiSummary> {
    let mut scene: Scene = engine::load_scene(scene_path)?;
    if !(scene.emitters.is_empty() && scene.sinks.is_empty()) {
        if opts.refuse_sources {
            bail!(ClusterError::Sources);
        }
        scene.emitters.clear();
        scene.sinks.clear();
    }
    let contexts = rank_contexts(opts.ranks)?;
    for (r, c) in contexts.iter().enumerate() {
        eprintln!("rank {r}: {}", c.adapter_summary());
    }
    scene.solver.dx = opts.dx.unwrap_or_else(|| scene.effective_dx(contexts[0].is_cpu()));
    let params = scene.solver.clone();
    let setup = scene.build(false)?;
    let all = cluster::initial_particles(&setup, &params);
    eprintln!(
        "scene `{}`: {} particles, dx = {} m, {} ranks",
        crate::text::printable(&scene.name),
        all.len(),
        params.dx,
        opts.ranks
    );
    let mut csv = match opts.csv {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot write {}", p.display()))?,
        )),
        None => None,
    };
    if let Some(w) = &mut csv {
        writeln!(w, "{CSV_HEADER}")?;
    }
    let csv = std::sync::Mutex::new(csv);
    let config = RankConfig::for_params(&params);
    let summaries = run_threads(contexts, |t, ctx| {
        let mut rank = Rank::new(t, ctx, &scene.domain, &setup.terrain, &params, SimOptions::default(), config, &all)?;
        let mut sum = MultiSummary { particles: all.len(), ..MultiSummary::default() };
        let mut totals = vec![[0.0f64; 4]; opts.ranks];
        let (mut wall, mut counted, mut step) = (0.0f64, 0u64, 0u64);
        loop {
            let done = match (opts.steps, opts.seconds) {
                (Some(n), _) => step >= n + opts.warmup,
                (None, Some(t)) => sum.time >= t,
                (None, None) => true,
            };
            if done {
                break;
            }
            let stats = rank.step()?;
            step += 1;
            sum.time = stats.time;
            let all_ranks = rank.gather(&stats)?;
            if rank.rank() == 0 {
                if let Ok(mut guard) = csv.lock() {
                    if let Some(w) = guard.as_mut() {
                        for (r, s) in all_ranks.iter().enumerate() {
                            // A failed write shows at the flush below.
                            let _ = writeln!(w, "{step},{},{r},{},{},{},{}", stats.time, s[0], s[1], s[2], s[3]);
                        }
                    }
                }
            }
            if step > opts.warmup {
                counted += 1;
                wall += all_ranks.iter().map(|s| s[2] + s[3]).fold(0.0, f64::max);
                for (t, s) in totals.iter_mut().zip(&all_ranks) {
                    *t = [s[0], s[1], t[2] + s[2], t[3] + s[3]];
                }
            }
        }
        let c = counted.max(1) as f64;
        sum.steps = counted;
        sum.ms_per_step = wall / c;
        sum.ranks = totals.into_iter().map(|t| [t[0], t[1], t[2] / c, t[3] / c]).collect();
        Ok(sum)
    })?;
    if let Ok(mut guard) = csv.lock() {
        if let (Some(w), Some(p)) = (guard.as_mut(), opts.csv) {
            w.flush().with_context(|| format!("cannot write {}", p.display()))?;
        }
    }
    let summary = summaries.into_iter().next().unwrap_or_default();
    Ok(summary)
}

/// The summary as a Markdown table (one row per rank).
pub fn summary_markdown(s: &MultiSummary) -> String {
    let mut out = format!(
        "{} particles, {} steps to t = {} s, {:.3} ms per step (slowest rank's step + exchange)\n\n\
         | rank | owned | ghosts | step ms | exchange ms |\n|---|---|---|---|---|\n",
        s.particles, s.steps, s.time, s.ms_per_step
    );
    for (r, v) in s.ranks.iter().enumerate() {
        out += &format!("| {r} | {} | {} | {:.3} | {:.3} |\n", v[0], v[1], v[2], v[3]);
    }
    out
}
