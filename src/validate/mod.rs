//! `waterview validate`: headless physical validation of the pressure solvers (DFSPH, PCISPH, WCSPH).
//!
//! Four cases, each run once per selected solver (see `docs/validation.md` for sources and method):
//! - `hydrostatic`: a resting tank; pressure against depth vs rho0 g depth (least-squares fit away from
//!   the walls, as in `tests/sim_scenes.rs`), volume drift over the run, density error.
//! - `dam_break`: the collapse of a 0.6 m x 0.3 m water column in the tank of Lobovsky et al. (2014);
//!   surge front X = x/H from the gate against T = t sqrt(g/H) compared with their measured front.
//! - `iterations`: mean density error of a small dam break against the solver's iteration count.
//! - `energy`: a sloshing tank (tilted free surface); kinetic + potential energy must never grow.
//!
//! Every case writes a CSV and a PNG into the output folder; `summary.md` holds one row per figure
//! (case, solver, figure, value, target, pass/fail) and is also printed. `--quick` uses small
//! resolutions and short times (what `tests/validate.rs` runs on lavapipe); the default sizes are meant
//! for a real GPU. The module's entry for code (tests) is [`run_cases`]; the CLI's is [`run`].

mod cases;
mod dam_break;
mod lobovsky;
mod plot;
mod runner;

use crate::gpu::GpuContext;
use crate::sim::params::{FieldError, Method, ParamError, SimParams};
use anyhow::{bail, Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use dam_break::MARTIN_MOYCE_N2;
pub use lobovsky::LOBOVSKY_2014_FRONT;

/// The validation cases, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    Hydrostatic,
    DamBreak,
    Iterations,
    Energy,
}

impl Case {
    pub const ALL: [Case; 4] = [Case::Hydrostatic, Case::DamBreak, Case::Iterations, Case::Energy];

    /// Name on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Case::Hydrostatic => "hydrostatic",
            Case::DamBreak => "dam_break",
            Case::Iterations => "iterations",
            Case::Energy => "energy",
        }
    }
}

/// A bad `--case`, `--solver` or `--set` value: the parsers below are clap value parsers, and clap shows
/// the message as is.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ArgError {
    #[error("`{0}`: expected FIELD=VALUE")]
    NotAnOverride(String),
    #[error("`method` is chosen by --solver")]
    MethodOverride,
    #[error("`dx` is each case's own resolution (see --quick)")]
    DxOverride,
    #[error(transparent)]
    Field(#[from] FieldError),
    #[error(transparent)]
    Range(#[from] ParamError),
    #[error("unknown case `{0}`: expected hydrostatic, dam_break, iterations, energy or all")]
    UnknownCase(String),
    #[error("unknown solver `{0}`: expected dfsph, pcisph, wcsph or all")]
    UnknownSolver(String),
}

/// Parses one `FIELD=VALUE` of `--set` and checks it against default parameters (so a typo fails before
/// any case runs).
pub fn parse_override(s: &str) -> Result<(String, String), ArgError> {
    let (k, v) = s.split_once('=').ok_or_else(|| ArgError::NotAnOverride(s.to_string()))?;
    let (k, v) = (k.trim().to_string(), v.trim().to_string());
    match k.as_str() {
        "method" => return Err(ArgError::MethodOverride),
        "dx" => return Err(ArgError::DxOverride),
        _ => {}
    }
    let mut p = SimParams::default();
    p.set_field(&k, &v)?;
    p.validate()?;
    Ok((k, v))
}

/// The cases one `--case` value names (`all` names every case).
#[derive(Clone, Debug, PartialEq)]
pub struct Cases(pub Vec<Case>);

/// The solvers one `--solver` value names (`all` names every solver).
#[derive(Clone, Debug, PartialEq)]
pub struct Solvers(pub Vec<Method>);

/// Parses a case name (or `all`).
pub fn parse_case(s: &str) -> Result<Cases, ArgError> {
    let t = s.trim().to_ascii_lowercase().replace('-', "_");
    if t == "all" {
        return Ok(Cases(Case::ALL.to_vec()));
    }
    Case::ALL
        .iter()
        .find(|c| c.name() == t)
        .map(|c| Cases(vec![*c]))
        .ok_or_else(|| ArgError::UnknownCase(s.to_string()))
}

/// Parses a solver name (or `all`).
pub fn parse_solver(s: &str) -> Result<Solvers, ArgError> {
    let methods = match s.trim().to_ascii_lowercase().as_str() {
        "all" => Method::ALL.to_vec(),
        "dfsph" => vec![Method::Dfsph],
        "pcisph" => vec![Method::Pcisph],
        "wcsph" => vec![Method::Wcsph],
        _ => return Err(ArgError::UnknownSolver(s.to_string())),
    };
    Ok(Solvers(methods))
}

/// What a figure is compared with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// Pass when |value - 1| <= tol (a ratio to an exact value).
    RatioWithin(f64),
    /// Pass when value <= limit.
    AtMost(f64),
    /// Reported only.
    Info,
}

/// One measured figure of one case and solver: a row of `summary.md`.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub case: Case,
    pub solver: Method,
    /// Stable identifier for code (tests), e.g. `floor_pressure_ratio`.
    pub key: &'static str,
    /// Human-readable description with units.
    pub label: String,
    pub value: f64,
    pub target: Target,
    /// How values print: a factor (100 = percent) and the unit suffix.
    pub unit: Unit,
}

/// How a figure's value (and target) print.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// A fraction shown in percent.
    Percent,
    /// A plain number.
    Plain,
    /// A count.
    Count,
}

impl Figure {
    /// Pass/fail against the target; `None` for an informative figure.
    pub fn passed(&self) -> Option<bool> {
        match self.target {
            Target::RatioWithin(tol) => Some((self.value - 1.0).abs() <= tol),
            Target::AtMost(limit) => Some(self.value <= limit),
            Target::Info => None,
        }
        .map(|ok| ok && self.value.is_finite())
    }

    fn fmt_value(&self, v: f64) -> String {
        match self.unit {
            Unit::Percent => format!("{:.3} %", 100.0 * v),
            Unit::Plain => format!("{v:.4}"),
            Unit::Count => format!("{v:.0}"),
        }
    }

    /// The value as printed.
    pub fn value_text(&self) -> String {
        self.fmt_value(self.value)
    }

    /// The target as printed.
    pub fn target_text(&self) -> String {
        match self.target {
            Target::RatioWithin(tol) => format!("1 ± {:.1} %", 100.0 * tol),
            Target::AtMost(limit) => format!("<= {}", self.fmt_value(limit)),
            Target::Info => "—".into(),
        }
    }
}

/// Everything one invocation produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub figures: Vec<Figure>,
    /// Files written (CSV, PNG, summary.md).
    pub files: Vec<PathBuf>,
    /// Case runs that failed with an error: (case, solver or "-", message).
    pub errors: Vec<(String, String, String)>,
}

/// What [`run_cases`] runs.
#[derive(Clone, Debug)]
pub struct Plan {
    pub cases: Vec<Case>,
    pub solvers: Vec<Method>,
    pub quick: bool,
    pub out: PathBuf,
    /// `--set` overrides (field, value), applied to every case's solver parameters in order.
    pub overrides: Vec<(String, String)>,
}

/// `waterview validate`: runs `plan` on the headless GPU, writes the files, prints the summary.
/// Errors: no GPU adapter, an unwritable output folder, or a case that could not run (the others
/// still run and the summary is written first); with `strict` also any figure off its target.
pub fn run(plan: &Plan, strict: bool) -> Result<()> {
    crate::capture::output::check_writable(&plan.out, crate::capture::output::Output::Folder)?;
    let ctx = GpuContext::headless().context("validation needs a GPU adapter (or Mesa's lavapipe)")?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let outcome = run_cases(&ctx, plan)?;
    println!("{}", summary_markdown(&outcome, plan, &ctx.adapter_summary()));
    if !outcome.errors.is_empty() {
        let list: Vec<String> = outcome.errors.iter().map(|(c, s, e)| format!("{c}/{s}: {e}")).collect();
        bail!("{} case run(s) failed:\n  {}", list.len(), list.join("\n  "));
    }
    let failed = outcome.figures.iter().filter(|f| f.passed() == Some(false)).count();
    if strict && failed > 0 {
        bail!("{failed} figure(s) missed their targets (see {})", plan.out.join("summary.md").display());
    }
    Ok(())
}

/// `items` without repeats, in first-seen order.
pub fn dedup<T: PartialEq + Copy>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Runs every case of `plan` with every solver on `ctx`, writing each case's CSV and PNG and
/// `summary.md` into `plan.out`. A case that fails is recorded in [`Outcome::errors`] and the rest
/// still run; only an unwritable output folder is an error here.
pub fn run_cases(ctx: &GpuContext, plan: &Plan) -> Result<Outcome> {
    std::fs::create_dir_all(&plan.out)
        .with_context(|| format!("cannot create the output folder {}", plan.out.display()))?;
    let mut outcome = Outcome::default();
    for &case in &plan.cases {
        let started = std::time::Instant::now();
        eprintln!("== {} ({}) ==", case.name(), if plan.quick { "quick" } else { "full" });
        let result = match case {
            Case::Hydrostatic => cases::hydrostatic(ctx, plan, &mut outcome),
            Case::DamBreak => dam_break::run(ctx, plan, &mut outcome),
            Case::Iterations => cases::iterations(ctx, plan, &mut outcome),
            Case::Energy => cases::energy(ctx, plan, &mut outcome),
        };
        if let Err(e) = result {
            eprintln!("{}: error: {e:#}", case.name());
            outcome.errors.push((case.name().into(), "-".into(), format!("{e:#}")));
        }
        eprintln!("== {} done in {:.1} s ==", case.name(), started.elapsed().as_secs_f64());
    }
    let path = plan.out.join("summary.md");
    std::fs::write(&path, summary_markdown(&outcome, plan, &ctx.adapter_summary()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    outcome.files.push(path);
    Ok(outcome)
}

/// The summary table (markdown) of an outcome.
pub fn summary_markdown(outcome: &Outcome, plan: &Plan, adapter: &str) -> String {
    let mut s = String::new();
    let mode = if plan.quick { "quick (small resolution, short times)" } else { "full resolution" };
    let _ =
        writeln!(s, "# Validation summary\n\nAdapter: {adapter}  \nMode: {mode}  \nOutput: {}\n", plan.out.display());
    if plan.quick {
        let _ =
            writeln!(s, "Targets are those of the full-resolution runs; a quick run is coarse and may miss some.\n");
    }
    if !plan.overrides.is_empty() {
        let list: Vec<String> = plan.overrides.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let _ = writeln!(s, "Solver parameters changed from the cases' own (--set): {}\n", list.join(", "));
    }
    let _ = writeln!(s, "| case | solver | figure | value | target | result |\n|---|---|---|---|---|---|");
    for f in &outcome.figures {
        let result = match f.passed() {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "info",
        };
        let label = f.label.replace('|', "/");
        let _ = writeln!(
            s,
            "| {} | {} | {label} | {} | {} | {result} |",
            f.case.name(),
            f.solver.name(),
            f.value_text(),
            f.target_text()
        );
    }
    for (c, solver, e) in &outcome.errors {
        let _ = writeln!(s, "| {c} | {solver} | error | {} | | ERROR |", e.replace('|', "/").replace('\n', " "));
    }
    let passed = outcome.figures.iter().filter(|f| f.passed() == Some(true)).count();
    let checked = outcome.figures.iter().filter(|f| f.passed().is_some()).count();
    let _ = writeln!(s, "\n{passed} of {checked} checked figures pass; {} error(s).", outcome.errors.len());
    s
}

/// `dir/name`, recorded in the outcome's file list.
fn out_file(outcome: &mut Outcome, dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    outcome.files.push(p.clone());
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_are_checked_before_any_case_runs() {
        assert_eq!(parse_override("viscosity = 0.001"), Ok(("viscosity".into(), "0.001".into())));
        let err = |s: &str| parse_override(s).unwrap_err().to_string();
        assert!(err("viscosity").contains("FIELD=VALUE"));
        assert!(err("xsph=2").contains("0 ..= 1"), "out of range");
        assert!(err("dx=0.01").contains("resolution"));
        assert!(err("method=wcsph").contains("--solver"));
        assert!(err("gravity=1").contains("unknown solver field"));
    }
}
