//! The benchmark gate: `waterview bench --baseline FILE` compares this run's `bench.csv` with a baseline
//! `bench.csv` from the same card (the H100's is docs/bench-baseline-h100.csv, updated by the change that
//! improves it) and fails when a figure is worse than its tolerance. Compared per configuration (scene,
//! particle count, workgroup size), wherever both files have the figure:
//! - the simulation's passes and their `total` in milliseconds per step, the render's in milliseconds per
//!   frame, and where both runs' frames hold the same steps (within half a step) the `frame` sum, the GPU
//!   span and the median wall clock per frame: worse when slower by more than `time` (5 %) plus 0.01 ms (a
//!   pass of a few microseconds jitters by more than 5 %). Frames of different steps (frames follow the
//!   simulated time: a longer or shorter time step changes their steps) are compared through the
//!   real-time factor instead, which counts the same wall clock per simulated second;
//! - the solver's iterations per step (density + divergence): worse when more by more than `iterations`
//!   (25 %, their run-to-run spread in a flow that is not repeatable) plus half an iteration, after the
//!   baseline's count is scaled by the square of the time step's growth, if it grew (a step's density
//!   error grows as dt^2: the 1 M valley's step 2.58 -> 3.14 ms took 3.6 -> 5.2 iterations for the same
//!   pressure-solve milliseconds per frame);
//! - the median time step: worse when shorter by more than `dt` (10 %);
//! - the real-time factor: worse when lower by more than `time`.
//!
//! A baseline from another card is refused: the figures would say nothing.

use crate::files::{self, FileKind};
use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

/// How much worse than the baseline a figure may be (fractions: 0.05 = 5 %).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerances {
    /// Times (ms per frame of each pass, the GPU span, the median wall clock) and the real-time factor.
    pub time: f64,
    /// Solver iterations per step.
    pub iterations: f64,
    /// The median time step.
    pub dt: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Self { time: 0.05, iterations: 0.25, dt: 0.10 }
    }
}

/// One compared figure of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// "1 002 299 particles, workgroup 128".
    pub config: String,
    /// "pass dfsph density (ms/frame)", "GPU span (ms/frame)", ...
    pub figure: String,
    pub baseline: f64,
    pub now: f64,
    /// The worst value allowed.
    pub limit: f64,
    /// True when `now` is past `limit`.
    pub worse: bool,
}

/// The rows of a `bench.csv`: its adapter and, per configuration and pass, the named columns.
struct Table {
    adapter: String,
    rows: HashMap<(String, String, String, String), HashMap<String, String>>,
}

fn parse(text: &str, what: &str) -> Result<Table> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().with_context(|| format!("{what}: no CSV header"))?.clone();
    for needed in ["adapter", "scene", "target_particles", "workgroup_size", "pass", "ms_per_frame"] {
        if !header.iter().any(|h| h == needed) {
            bail!("{what} is not a waterview bench.csv: it has no column `{needed}`");
        }
    }
    let mut table = Table { adapter: String::new(), rows: HashMap::new() };
    for (k, record) in reader.records().enumerate() {
        let record = record.with_context(|| format!("{what}: row {}", k + 2))?;
        let row: HashMap<String, String> =
            header.iter().zip(record.iter()).map(|(h, v)| (h.into(), v.into())).collect();
        let get = |c: &str| row.get(c).cloned().unwrap_or_default();
        table.adapter = get("adapter");
        let key = (get("scene"), get("target_particles"), get("workgroup_size"), get("pass"));
        table.rows.insert(key, row);
    }
    Ok(table)
}

fn number(row: &HashMap<String, String>, column: &str) -> Option<f64> {
    row.get(column).and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite())
}

/// Steps per frame of a row: `steps_per_frame`, or `substeps` in a bench.csv from before frames followed
/// the simulated time.
fn steps_per_frame(row: &HashMap<String, String>) -> Option<f64> {
    number(row, "steps_per_frame").or_else(|| number(row, "substeps"))
}

/// Whether a bench.csv row times a simulation pass (or their `total`), which is compared per step.
fn is_simulation_row(pass: &str) -> bool {
    !(pass == "render" || pass == "frame" || pass == "wall" || pass.starts_with("render:"))
}

/// Compares `now` (a bench.csv's text) with `baseline` (another's) under `tol`. Errors: a file that is not
/// a bench.csv, baselines from another card, or a baseline configuration this run did not measure.
pub fn compare(now: &str, baseline: &str, tol: &Tolerances) -> Result<Vec<Check>> {
    let (now, base) = (parse(now, "this run's bench.csv")?, parse(baseline, "the baseline")?);
    if now.adapter != base.adapter {
        bail!(
            "the baseline was measured on `{}`, this run on `{}`: compare runs of one card",
            base.adapter,
            now.adapter
        );
    }
    let mut keys: Vec<_> = base.rows.keys().filter(|k| k.3 != "error").cloned().collect();
    keys.sort();
    let mut checks = Vec::new();
    for key in keys {
        let config = format!("{} particles, workgroup {}", key.1, key.2);
        let b = &base.rows[&key];
        let n = now.rows.get(&key).with_context(|| {
            format!("the baseline's {} ({config}, pass {}) was not measured: run the baseline's counts", key.0, key.3)
        })?;
        let mut check =
            |figure: String, base: Option<f64>, now: Option<f64>, higher_is_worse: bool, tol: f64, slack: f64| {
                if let (Some(base), Some(now)) = (base, now) {
                    let limit = if higher_is_worse { base * (1.0 + tol) + slack } else { base * (1.0 - tol) - slack };
                    let worse = if higher_is_worse { now > limit } else { now < limit };
                    checks.push(Check { config: config.clone(), figure, baseline: base, now, limit, worse });
                }
            };
        let same_steps = match (steps_per_frame(b), steps_per_frame(n)) {
            (Some(sb), Some(sn)) => (sb - sn).abs() <= 0.5,
            _ => true,
        };
        if is_simulation_row(&key.3) {
            let column = "ms_per_step";
            check(format!("{} (ms/step)", key.3), number(b, column), number(n, column), true, tol.time, 0.01);
        } else if same_steps || key.3.starts_with("render") {
            let column = "ms_per_frame";
            check(format!("{} (ms/frame)", key.3), number(b, column), number(n, column), true, tol.time, 0.01);
        }
        if key.3 == "total" {
            for (column, name) in [("gpu_span_ms_per_frame", "GPU span"), ("wall_ms_per_frame", "median wall")] {
                if same_steps {
                    check(format!("{name} (ms/frame)"), number(b, column), number(n, column), true, tol.time, 0.01);
                }
            }
            let iterations = |r: &HashMap<String, String>| {
                Some(number(r, "density_iterations")? + number(r, "divergence_iterations")?)
            };
            // The same column on both sides: a baseline from before the median step has only the mean.
            let dt = |column: &str| Some((number(b, column)?, number(n, column)?));
            let grown = match dt("dt_median_ms").or_else(|| dt("dt_ms")) {
                Some((b, n)) if b > 0.0 => (n / b).clamp(1.0, 4.0).powi(2),
                _ => 1.0,
            };
            let scaled = iterations(b).map(|i| i * grown);
            check("iterations per step".into(), scaled, iterations(n), true, tol.iterations, 0.5);
            check("median dt (ms)".into(), number(b, "dt_median_ms"), number(n, "dt_median_ms"), false, tol.dt, 0.0);
            let rtf = |r: &HashMap<String, String>| number(r, "realtime_factor").filter(|v| *v > 0.0);
            check("real-time factor".into(), rtf(b), rtf(n), false, tol.time, 0.0);
        }
    }
    Ok(checks)
}

/// The text of the baseline `path` (a bench.csv of at most 16 MiB, UTF-8), read through the bounded
/// reader: before the run, so that a baseline that cannot be read is refused before the (long) benchmark.
pub fn read_baseline(path: &Path) -> Result<String> {
    let bytes = files::read(path, FileKind::BenchCsv).map_err(|e| anyhow::anyhow!("{e}"))?;
    String::from_utf8(bytes).with_context(|| format!("baseline {} is not UTF-8 text", path.display()))
}

/// The checks as a Markdown table, the worse ones marked.
pub fn markdown(checks: &[Check]) -> String {
    let mut s =
        String::from("| configuration | figure | baseline | now | change | limit | |\n|---|---|--:|--:|--:|--:|---|\n");
    for c in checks {
        let change = if c.baseline != 0.0 { 100.0 * (c.now / c.baseline - 1.0) } else { 0.0 };
        let _ = writeln!(
            s,
            "| {} | {} | {:.4} | {:.4} | {change:+.1} % | {:.4} | {} |",
            c.config,
            c.figure,
            c.baseline,
            c.now,
            c.limit,
            if c.worse { "WORSE" } else { "ok" }
        );
    }
    s
}

/// Compares the run in `out_dir/bench.csv` with `base`, the text of the baseline file `baseline`
/// ([`read_baseline`]), writes `out_dir/gate.md`, prints the table and fails naming the figures that are
/// worse.
pub fn gate(out_dir: &Path, baseline: &Path, base: &str, tol: &Tolerances) -> Result<()> {
    let now = std::fs::read_to_string(out_dir.join("bench.csv")).context("reading this run's bench.csv")?;
    let checks = compare(&now, base, tol).with_context(|| format!("baseline {}", baseline.display()))?;
    let table = markdown(&checks);
    std::fs::write(out_dir.join("gate.md"), &table).context("writing gate.md")?;
    println!("\nAgainst the baseline {}:\n\n{table}", baseline.display());
    let worse: Vec<String> = checks.iter().filter(|c| c.worse).map(|c| format!("{}: {}", c.config, c.figure)).collect();
    if checks.is_empty() {
        bail!("the baseline {} shares no figure with this run", baseline.display());
    }
    if !worse.is_empty() {
        bail!("{} figure(s) worse than the baseline beyond their tolerance: {}", worse.len(), worse.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "adapter,scene,target_particles,particles,workgroup_size,steps_per_frame,pass,ms_per_step,ms_per_frame,\
        density_iterations,divergence_iterations,gpu_span_ms_per_frame,wall_ms_per_frame,dt_median_ms,realtime_factor,error";

    /// A configuration of frames of `steps` steps: a density pass of `density_ms` per step, `render_ms` per frame.
    fn csv_steps(steps: f64, density_ms: f64, span: f64, iterations: f64, dt: f64, rtf: f64) -> String {
        let rows = [
            ("density", density_ms),
            ("total", 3.0 * density_ms),
            ("render", 1.0),
            ("frame", 3.0 * density_ms * steps + 1.0),
        ];
        let mut text = format!("{HEADER}\n");
        for (pass, ms_per_step) in rows {
            let ms_per_frame =
                if pass.starts_with("render") || pass == "frame" { ms_per_step } else { ms_per_step * steps };
            text += &format!(
                "H100,valley,1000000,1002299,128,{steps},{pass},{ms_per_step},{ms_per_frame},{iterations},1,{span},{span},{dt},{rtf},\n"
            );
        }
        text
    }

    fn csv(density_ms: f64, span: f64, iterations: f64, dt: f64, rtf: f64) -> String {
        csv_steps(3.0, density_ms, span, iterations, dt, rtf)
    }

    #[test]
    fn figures_within_their_tolerance_pass_and_worse_ones_fail() {
        let base = csv(1.0, 10.0, 3.0, 2.0, 0.5);
        let tol = Tolerances::default();
        let same = compare(&base, &base, &tol).expect("compares");
        assert!(!same.is_empty() && same.iter().all(|c| !c.worse), "{same:?}");
        // 4 % slower, 20 % more iterations, 8 % shorter dt, 4 % lower real-time factor: within.
        let close = compare(&csv(1.04, 10.4, 3.6, 1.84, 0.48), &base, &tol).expect("compares");
        assert!(close.iter().all(|c| !c.worse), "{}", markdown(&close));
        // 10 % slower on one pass: that pass (and the total) is worse.
        let slow = compare(&csv(1.10, 10.0, 3.0, 2.0, 0.5), &base, &tol).expect("compares");
        let worse: Vec<_> = slow.iter().filter(|c| c.worse).map(|c| c.figure.as_str()).collect();
        assert_eq!(worse, ["density (ms/step)", "frame (ms/frame)", "total (ms/step)"]);
        // A shorter step, more iterations, a lower real-time factor.
        let unstable = compare(&csv(1.0, 10.0, 5.0, 1.5, 0.4), &base, &tol).expect("compares");
        let worse: Vec<_> = unstable.iter().filter(|c| c.worse).map(|c| c.figure.as_str()).collect();
        assert_eq!(worse, ["iterations per step", "median dt (ms)", "real-time factor"]);
        // The same iterations with a step 25 % longer: allowed 3 x 1.25^2 x 1.25 + 0.5 = 6.36.
        let longer = compare(&csv(1.0, 10.0, 5.0, 2.5, 0.6), &base, &tol).expect("compares");
        assert!(longer.iter().all(|c| !c.worse), "{}", markdown(&longer));
    }

    #[test]
    fn frames_of_other_steps_compare_per_step_and_by_the_real_time_factor() {
        let base = csv(1.0, 10.0, 3.0, 2.0, 0.5);
        // Frames of 5 steps where the baseline's held 3: the frame's figures are longer, not worse.
        let more =
            compare(&csv_steps(5.0, 1.0, 16.0, 3.0, 2.0, 0.55), &base, &Tolerances::default()).expect("compares");
        assert!(more.iter().all(|c| !c.worse), "{}", markdown(&more));
        let figures: Vec<_> = more.iter().map(|c| c.figure.as_str()).collect();
        assert!(!figures.iter().any(|f| f.starts_with("GPU span") || f.starts_with("frame")), "{figures:?}");
        assert!(figures.contains(&"real-time factor") && figures.contains(&"density (ms/step)"), "{figures:?}");
        // A baseline from before frames followed the simulated time names the column `substeps`.
        let old = base.replace("steps_per_frame", "substeps");
        let same = compare(&base, &old, &Tolerances::default()).expect("compares");
        assert!(same.iter().any(|c| c.figure == "GPU span (ms/frame)"), "{}", markdown(&same));
        // Slower per step is worse whatever the frames hold.
        let slow = compare(&csv_steps(5.0, 1.2, 16.0, 3.0, 2.0, 0.5), &base, &Tolerances::default()).expect("compares");
        let worse: Vec<_> = slow.iter().filter(|c| c.worse).map(|c| c.figure.as_str()).collect();
        assert_eq!(worse, ["density (ms/step)", "total (ms/step)"]);
    }

    #[test]
    fn another_card_or_a_missing_configuration_is_refused() {
        let base = csv(1.0, 10.0, 3.0, 2.0, 0.5);
        let other = base.replace("H100", "llvmpipe");
        let e = compare(&other, &base, &Tolerances::default()).unwrap_err().to_string();
        assert!(e.contains("measured on `H100`, this run on `llvmpipe`"), "{e}");
        let fewer = base.replace("1000000,1002299", "100000,97232");
        let e = format!("{:#}", compare(&fewer, &base, &Tolerances::default()).unwrap_err());
        assert!(e.contains("was not measured"), "{e}");
        assert!(compare("a,b\n1,2\n", &base, &Tolerances::default()).is_err(), "not a bench.csv");
    }
}
