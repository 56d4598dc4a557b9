//! The `hydrostatic`, `iterations` and `energy` cases (the dam break lives in `dam_break.rs`).
//!
//! - hydrostatic: a resting tank (the built-in `tank`, or a 0.36 m tank at dx = 0.03 m for --quick)
//!   settles, then runs on. Pressure against height is fitted by least squares over the particles
//!   3 dx from the side walls and 2 dx from the floor and the surface (exactly as `tests/sim_scenes.rs`),
//!   giving the gradient and the floor pressure, compared with rho0 g and rho0 g depth (depth = the
//!   height N m / rho0 of the water at rest density over the floor). Volume: the water's depth from its
//!   centroid, 2 (mean y - floor), which is exact for a level column and averages over every particle;
//!   its drift from the start to the end of the window (each the mean of 10 % of the window's samples).
//! - iterations: the validation dam break at a small size, run to T = 2 with 1, 2, 4, 8, 16 iterations
//!   (PCISPH: `solver_iterations`; DFSPH: `density_iterations` with a 0.001 % target so it uses them all;
//!   WCSPH has none and runs once); the figure is the mean density error averaged over the second half.
//! - energy: a sloshing tank whose free surface starts tilted; E = sum m (g (y - floor) + |v|^2 / 2)
//!   from read-backs every `max_dt` (frame_dt / substeps) of simulated time, or every frame if longer must stay at or below E(0) + 1 % of E(0) - E_rest, where E_rest is the
//!   potential energy of the same particles on the same lattice lying level (the tilt's energy is then
//!   exactly E(0) - E_rest, whatever the boundary's offset or the water's compression).

use super::dam_break;
use super::plot::{self, Chart, Series, Style, COLORS};
use super::runner::{params_for, scene_from_ron, Run};
use super::{out_file, Case, Figure, Outcome, Plan, Target, Unit};
use crate::gpu::GpuContext;
use crate::sim::params::Method;
use crate::sim::SimStats;
use anyhow::{Context, Result};
use plotters::style::RGBColor;

fn figure(
    case: Case,
    solver: Method,
    key: &'static str,
    label: &str,
    value: f64,
    target: Target,
    unit: Unit,
) -> Figure {
    Figure { case, solver, key, label: label.into(), value, target, unit }
}

/// Runs `f` for every solver of the plan; a solver whose run fails is recorded and skipped.
fn per_solver<T>(
    plan: &Plan,
    outcome: &mut Outcome,
    case: Case,
    mut f: impl FnMut(Method) -> Result<T>,
) -> Vec<(Method, T)> {
    let mut out = Vec::new();
    for &m in &plan.solvers {
        match f(m) {
            Ok(r) => out.push((m, r)),
            Err(e) => {
                eprintln!("{}/{}: error: {e:#}", case.name(), m.name());
                outcome.errors.push((case.name().into(), m.name().into(), format!("{e:#}")));
            }
        }
    }
    out
}

/// Mean of `f` over the statistics at or after `t0`.
fn mean_after(stats: &[SimStats], t0: f32, f: impl Fn(&SimStats) -> f32) -> f64 {
    let v: Vec<f64> = stats.iter().filter(|s| s.time >= t0).map(|s| f(s) as f64).collect();
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

struct Hydro {
    /// (depth below the rest surface, pressure, inside the fit region) of every particle at the end.
    profile: Vec<(f64, f64, bool)>,
    positions: Vec<[f32; 4]>,
    /// Speed of every particle at the end, m/s.
    speeds: Vec<f32>,
    /// Pressure = intercept + slope * depth from the fit.
    fit: (f64, f64),
    floor_ratio: f64,
    gradient_ratio: f64,
    /// (t, centroid depth, 99th-percentile surface height, mean density error, max density error,
    /// kinetic energy J, max speed m/s).
    series: Vec<[f64; 7]>,
    volume_change: f64,
    mean_error: f64,
    max_error: f64,
    /// Window means of the kinetic energy (J) and of the largest particle speed (m/s): the water at rest.
    kinetic: f64,
    max_speed: f64,
    leaks: u32,
    /// rho0 g, Pa/m.
    rho_g: f64,
}

/// Consecutive steps fitted at each sample of the hydrostatic tank's measurement window.
const FIT_STEPS: usize = 8;

fn hydrostatic_solver(ctx: &GpuContext, plan: &Plan, method: Method) -> Result<Hydro> {
    let (scene, dx) = if plan.quick {
        let text = "(name: \"validation tank\", domain: (min: (0, 0, 0), max: (0.3, 0.5, 0.3)), terrain: None,
            fluid_blocks: [(min: (0, 0, 0), max: (0.3, 0.35, 0.3))],
            camera: (target: (0.15, 0.2, 0.15), distance: 1.2, yaw_deg: 20.0, pitch_deg: 25.0), cpu_dx_scale: 1.0)";
        (scene_from_ron("validation tank", text)?, 0.025)
    } else {
        let s = crate::scene::Scene::builtin("tank").context("the built-in tank scene is missing")?;
        let dx = s.solver.dx;
        (s, dx)
    };
    let (t_settle, t_window, sample) = if plan.quick { (1.0, 1.0, 0.05) } else { (3.0, 10.0, 0.1) };
    let t_end = t_settle + t_window;
    let params = params_for(plan, &scene, dx, method)?;
    let mut run = Run::new(ctx, &scene, &params, |_| true, format!("hydrostatic/{}", method.name()), t_end)?;
    let d = scene.domain;
    let (floor, rho0, g) = (d.min[1], params.rho0 as f64, -params.gravity[1] as f64);
    let inner = |q: &[f32; 4]| {
        q[0] > d.min[0] + 3.0 * dx
            && q[0] < d.max[0] - 3.0 * dx
            && q[2] > d.min[2] + 3.0 * dx
            && q[2] < d.max[2] - 3.0 * dx
    };
    let area = ((d.max[0] - d.min[0]) * (d.max[2] - d.min[2])) as f64;
    let depth = run.sim().live_particles() as f64 * run.sim().mass() as f64 / (rho0 * area);
    let surface = floor as f64 + depth;
    let in_fit = |q: &[f32; 4]| {
        inner(q) && (q[1] as f64) > floor as f64 + 2.0 * dx as f64 && (q[1] as f64) < surface - 2.0 * dx as f64
    };
    // Least-squares line of pressure over height in the fit region: (slope, pressure at the floor).
    let fit = |pos: &[[f32; 4]], vel: &[[f32; 4]]| -> Option<(f64, f64)> {
        let (mut n, mut sy, mut sp, mut syy, mut syp) = (0.0f64, 0.0, 0.0, 0.0, 0.0);
        for (q, v) in pos.iter().zip(vel).filter(|(q, _)| in_fit(q)) {
            let (y, p) = (q[1] as f64, v[3] as f64);
            n += 1.0;
            sy += y;
            sp += p;
            syy += y * y;
            syp += y * p;
        }
        let slope = (n * syp - sy * sp) / (n * syy - sy * sy);
        (n >= 20.0).then(|| (slope, (sp - slope * sy) / n + slope * floor as f64))
    };
    let mut series = Vec::new();
    // One fit per step of FIT_STEPS consecutive steps at each sample of the measurement window, all
    // averaged: a DFSPH step's pressure alternates from step to step (by about 20 % in a coarse tank;
    // its iterations stop at a mean error, not at a fixed pressure), and a read once per frame would
    // sample one phase of that alternation.
    let mut fits = Vec::new();
    while run.time < t_end {
        let t = run.advance(sample)?;
        let pos = if t >= t_settle {
            let mut last = Vec::new();
            for _ in 0..FIT_STEPS {
                let (pos, vel) = run.step_and_read();
                fits.extend(fit(&pos, &vel));
                last = pos;
            }
            last
        } else {
            run.read().0
        };
        let centroid = 2.0 * (pos.iter().map(|p| p[1] as f64).sum::<f64>() / pos.len() as f64 - floor as f64);
        let mut ys: Vec<f32> = pos.iter().filter(|q| inner(q)).map(|q| q[1]).collect();
        ys.sort_by(f32::total_cmp);
        let p99 = ys.get((ys.len() as f64 * 0.99) as usize).map_or(f64::NAN, |y| (y + 0.5 * dx - floor) as f64);
        let s = run.stats.last().cloned().unwrap_or_default();
        let (ke, vmax) = (s.kinetic_energy as f64, s.max_speed as f64);
        series.push([t as f64, centroid, p99, s.mean_density_error as f64, s.max_density_error as f64, ke, vmax]);
    }
    run.finish();
    let window: Vec<&[f64; 7]> = series.iter().filter(|r| r[0] >= t_settle as f64).collect();
    let k = (window.len() / 10).max(1).min(window.len());
    let mean_depth = |rows: &[&[f64; 7]]| rows.iter().map(|r| r[1]).sum::<f64>() / rows.len().max(1) as f64;
    let window_mean = |c: usize| window.iter().map(|r| r[c]).sum::<f64>() / window.len().max(1) as f64;
    let (kinetic, max_speed) = (window_mean(5), window_mean(6));
    let (d0, d1) = (mean_depth(&window[..k]), mean_depth(&window[window.len() - k..]));

    // Pressure profile at the end (plotted), and the window's mean fit.
    let (pos, vel) = run.read();
    anyhow::ensure!(!fits.is_empty(), "too few interior particles for the pressure fit");
    let slope = fits.iter().map(|f| f.0).sum::<f64>() / fits.len() as f64;
    let p_floor = fits.iter().map(|f| f.1).sum::<f64>() / fits.len() as f64;
    Ok(Hydro {
        profile: pos.iter().zip(&vel).map(|(q, v)| (surface - q[1] as f64, v[3] as f64, in_fit(q))).collect(),
        speeds: vel.iter().map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()).collect(),
        positions: pos,
        fit: (p_floor + slope * depth, -slope),
        floor_ratio: p_floor / (rho0 * g * depth),
        gradient_ratio: -slope / (rho0 * g),
        volume_change: ((d1 - d0) / d0).abs(),
        mean_error: mean_after(&run.stats, t_settle, |s| s.mean_density_error),
        max_error: run
            .stats
            .iter()
            .filter(|s| s.time >= t_settle)
            .map(|s| s.max_density_error as f64)
            .fold(0.0, f64::max),
        leaks: run.leaks(),
        rho_g: rho0 * g,
        series,
        kinetic,
        max_speed,
    })
}

/// The resting tank's mean compression each solver is held to, as a fraction: DFSPH 0.1 % (Bender &
/// Koschier 2015/2017 hold 0.01-0.1 % with their error target); PCISPH and WCSPH 1 %, the density variation
/// a weakly compressible model is sized for (a sound speed of 10 v_max, Monaghan 1994; Becker & Teschner
/// 2007) and what PCISPH's fixed iteration count, never stopped by a read-back, is set to (4 iterations:
/// 0.5-0.74 % in the tank; 16 reach 0.09 %, `iterations` case).
fn compression_target(method: Method) -> f64 {
    match method {
        Method::Dfsph => 0.001,
        Method::Pcisph | Method::Wcsph => 0.01,
    }
}

/// `hydrostatic`: writes `hydrostatic.csv` (every particle at the end), `hydrostatic_series.csv` and
/// `hydrostatic.png` (pressure against depth, one panel per solver).
pub fn hydrostatic(ctx: &GpuContext, plan: &Plan, outcome: &mut Outcome) -> Result<()> {
    let results = per_solver(plan, outcome, Case::Hydrostatic, |m| hydrostatic_solver(ctx, plan, m));
    let mut csv = csv::Writer::from_path(out_file(outcome, &plan.out, "hydrostatic.csv"))
        .context("cannot write hydrostatic.csv")?;
    csv.write_record(["solver", "x", "y", "z", "depth_m", "pressure_pa", "density", "in_fit", "speed_m_s"])?;
    let mut series_csv = csv::Writer::from_path(out_file(outcome, &plan.out, "hydrostatic_series.csv"))
        .context("cannot write hydrostatic_series.csv")?;
    series_csv.write_record([
        "solver",
        "time_s",
        "centroid_depth_m",
        "surface_p99_m",
        "mean_density_error",
        "max_density_error",
        "kinetic_energy_j",
        "max_speed_m_s",
    ])?;
    let mut charts = Vec::new();
    for (m, h) in &results {
        for ((q, (depth, p, fit)), speed) in h.positions.iter().zip(&h.profile).zip(&h.speeds) {
            let row = [q[0], q[1], q[2]].map(|v| v.to_string());
            csv.write_record([
                m.name().to_string(),
                row[0].clone(),
                row[1].clone(),
                row[2].clone(),
                depth.to_string(),
                p.to_string(),
                q[3].to_string(),
                fit.to_string(),
                speed.to_string(),
            ])?;
        }
        for r in &h.series {
            let mut row = vec![m.name().to_string()];
            row.extend(r.iter().map(|v| v.to_string()));
            series_csv.write_record(row)?;
        }
        let c = Case::Hydrostatic;
        outcome.figures.extend([
            figure(
                c,
                *m,
                "floor_pressure_ratio",
                "floor pressure / (rho0 g depth), least-squares fit",
                h.floor_ratio,
                Target::RatioWithin(0.02),
                Unit::Plain,
            ),
            figure(
                c,
                *m,
                "gradient_ratio",
                "pressure gradient / (rho0 g), least-squares fit",
                h.gradient_ratio,
                Target::RatioWithin(0.02),
                Unit::Plain,
            ),
            figure(
                c,
                *m,
                "volume_change",
                "volume change over the window (centroid depth)",
                h.volume_change,
                Target::AtMost(0.005),
                Unit::Percent,
            ),
            figure(
                c,
                *m,
                "mean_density_error",
                "mean density error (compression), window average",
                h.mean_error,
                Target::AtMost(compression_target(*m)),
                Unit::Percent,
            ),
            figure(
                c,
                *m,
                "max_density_error",
                "max density error, window maximum",
                h.max_error,
                Target::Info,
                Unit::Percent,
            ),
            figure(
                c,
                *m,
                "kinetic_energy",
                "kinetic energy at rest (J), window mean",
                h.kinetic,
                Target::Info,
                Unit::Plain,
            ),
            figure(
                c,
                *m,
                "max_speed",
                "largest particle speed at rest (m/s), window mean",
                h.max_speed,
                Target::Info,
                Unit::Plain,
            ),
            figure(
                c,
                *m,
                "leaks",
                "particles lost (outside, below floor, non-finite)",
                h.leaks as f64,
                Target::AtMost(0.0),
                Unit::Count,
            ),
        ]);
        let max_depth = h.profile.iter().map(|p| p.0).fold(0.0, f64::max);
        let line = |p0: f64, k: f64| vec![(0.0, p0 / 1000.0), (max_depth, (p0 + k * max_depth) / 1000.0)];
        let rho_g = h.rho_g;
        let scatter =
            |fit: bool| h.profile.iter().filter(|p| p.2 == fit).map(|&(d, p, _)| (d, p / 1000.0)).collect::<Vec<_>>();
        charts.push(Chart {
            title: format!("{}: floor {:.4}, gradient {:.4} x rho0 g", m.name(), h.floor_ratio, h.gradient_ratio),
            x_desc: "depth below the rest surface (m)".into(),
            y_desc: "pressure (kPa)".into(),
            series: vec![
                Series {
                    name: "particles near walls, floor, surface".into(),
                    points: scatter(false),
                    style: Style::Dots,
                    color: COLORS[7],
                },
                Series {
                    name: "particles in the fit region".into(),
                    points: scatter(true),
                    style: Style::Dots,
                    color: COLORS[0],
                },
                Series { name: "rho0 g depth".into(), points: line(0.0, rho_g), style: Style::Line, color: COLORS[3] },
                Series {
                    name: "least-squares fit".into(),
                    points: line(h.fit.0, h.fit.1),
                    style: Style::Line,
                    color: COLORS[2],
                },
            ],
            ..Chart::default()
        });
    }
    csv.flush()?;
    series_csv.flush()?;
    if charts.is_empty() {
        return Ok(());
    }
    plot::write_panels(&out_file(outcome, &plan.out, "hydrostatic.png"), &charts)
}

/// Iteration counts of the `iterations` case.
pub const ITERATION_COUNTS: [u32; 5] = [1, 2, 4, 8, 16];

/// (iterations, mean density error over the second half, leaks) for one solver.
fn iterations_solver(ctx: &GpuContext, plan: &Plan, method: Method) -> Result<Vec<(u32, f64, u32)>> {
    let (scene, dx) = dam_break::scene_at(if plan.quick { 10 } else { 25 }, 0.3)?;
    let t_end = (2.0 / (2.0 * 9.81 / dam_break::A as f64).sqrt()) as f32;
    let counts: &[u32] = if method == Method::Wcsph { &[0] } else { &ITERATION_COUNTS };
    let mut out = Vec::new();
    for &k in counts {
        let mut params = params_for(plan, &scene, dx, method)?;
        match method {
            Method::Pcisph => params.solver_iterations = k,
            Method::Dfsph => {
                params.density_iterations = k;
                params.target_density_error = 1e-5;
            }
            Method::Wcsph => {}
        }
        let mut run = Run::new(ctx, &scene, &params, |_| true, format!("iterations/{}/{k}", method.name()), t_end)?;
        run.advance(t_end)?;
        run.finish();
        out.push((k, mean_after(&run.stats, 0.5 * t_end, |s| s.mean_density_error), run.leaks()));
    }
    Ok(out)
}

/// `iterations`: writes `iterations.csv` and `iterations.png` (log-log).
pub fn iterations(ctx: &GpuContext, plan: &Plan, outcome: &mut Outcome) -> Result<()> {
    let results = per_solver(plan, outcome, Case::Iterations, |m| iterations_solver(ctx, plan, m));
    let mut csv = csv::Writer::from_path(out_file(outcome, &plan.out, "iterations.csv"))
        .context("cannot write iterations.csv")?;
    csv.write_record(["solver", "iterations", "mean_density_error", "leaks"])?;
    let log = |v: f64| v.max(1e-9).log10();
    let mut chart = Chart {
        title: "Mean density error vs solver iterations (small dam break, T = 1 .. 2)".into(),
        x_desc: "iterations per step".into(),
        y_desc: "mean density error".into(),
        x_range: Some((-0.1, log(16.0) + 0.1)),
        log_labels: (true, true),
        x_ticks: Some(ITERATION_COUNTS.iter().map(|&k| log(k as f64)).collect()),
        ..Chart::default()
    };
    let c = Case::Iterations;
    for (i, (m, rows)) in results.iter().enumerate() {
        for (k, e, leaks) in rows {
            csv.write_record([m.name().to_string(), k.to_string(), e.to_string(), leaks.to_string()])?;
        }
        let leaks = rows.iter().map(|r| r.2).max().unwrap_or(0) as f64;
        let color = COLORS[i % COLORS.len()];
        if let [(0, e, _)] = rows.as_slice() {
            outcome.figures.push(figure(
                c,
                *m,
                "mean_density_error",
                "mean density error (no iterations)",
                *e,
                Target::Info,
                Unit::Percent,
            ));
            chart.series.push(Series {
                name: format!("{} (no iterations)", m.name()),
                points: vec![(log(1.0), log(*e)), (log(16.0), log(*e))],
                style: Style::Line,
                color,
            });
        } else if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
            outcome.figures.extend([
                figure(
                    c,
                    *m,
                    "mean_density_error_1",
                    "mean density error, 1 iteration",
                    first.1,
                    Target::Info,
                    Unit::Percent,
                ),
                figure(
                    c,
                    *m,
                    "mean_density_error_16",
                    "mean density error, 16 iterations",
                    last.1,
                    Target::AtMost(0.001),
                    Unit::Percent,
                ),
                figure(
                    c,
                    *m,
                    "error_ratio",
                    "error(16 iterations) / error(1 iteration)",
                    last.1 / first.1,
                    Target::AtMost(0.5),
                    Unit::Plain,
                ),
            ]);
            chart.series.push(Series {
                name: m.name().into(),
                points: rows.iter().map(|r| (log(r.0 as f64), log(r.1))).collect(),
                style: Style::LineMarkers,
                color,
            });
        }
        outcome.figures.push(figure(
            c,
            *m,
            "leaks",
            "particles lost (outside, below floor, non-finite)",
            leaks,
            Target::AtMost(0.0),
            Unit::Count,
        ));
    }
    csv.flush()?;
    plot::write_chart(&out_file(outcome, &plan.out, "iterations.png"), &chart)
}

/// (t, potential, kinetic) energy history, E_rest, leaks.
type EnergyRun = (Vec<(f64, f64, f64)>, f64, u32);

fn energy_solver(ctx: &GpuContext, plan: &Plan, method: Method) -> Result<EnergyRun> {
    // Tank length L, width W, mean depth d0, surface tilt +-tilt, height H, spacing dx, duration.
    let (l, w, d0, tilt, h, dx, t_end) = if plan.quick {
        (0.4f32, 0.12f32, 0.15f32, 0.12f32, 0.5f32, 0.02f32, 2.0f32)
    } else {
        (1.0, 0.3, 0.4, 0.3, 1.0, 0.01, 10.0)
    };
    let text = format!(
        "(name: \"validation sloshing tank\", domain: (min: (0, 0, 0), max: ({l}, {h}, {w})), terrain: None,
          fluid_blocks: [(min: (0, 0, 0), max: ({l}, {top}, {w}))],
          camera: (target: ({cx}, {d0}, {cz}), distance: {dist}, yaw_deg: 15.0, pitch_deg: 20.0), cpu_dx_scale: 1.0)",
        top = d0 + tilt,
        cx = 0.5 * l,
        cz = 0.5 * w,
        dist = 2.5 * l,
    );
    let scene = scene_from_ron("validation sloshing tank", &text)?;
    let params = params_for(plan, &scene, dx, method)?;
    let surface = move |x: f32| d0 - tilt + 2.0 * tilt * x / l;
    let mut run = Run::new(ctx, &scene, &params, |p| p.y < surface(p.x), format!("energy/{}", method.name()), t_end)?;
    let (m, g, floor) = (run.sim().mass() as f64, -params.gravity[1] as f64, scene.domain.min[1] as f64);
    let energy = |pos: &[[f32; 4]], vel: &[[f32; 4]]| {
        let pot: f64 = pos.iter().map(|p| m * g * (p[1] as f64 - floor)).sum();
        let kin: f64 = vel
            .iter()
            .map(|v| {
                0.5 * m * (v[0] as f64).powi(2) + 0.5 * m * (v[1] as f64).powi(2) + 0.5 * m * (v[2] as f64).powi(2)
            })
            .sum();
        (pot, kin)
    };
    let (pos, vel) = run.read();
    // E_rest: the same particles on the same lattice, level: full layers of columns x rows particles
    // at heights (j + 1/2) dx, the remainder in the layer above.
    let per_layer = ((l / dx + 1e-4).floor() * (w / dx + 1e-4).floor()) as usize;
    let e_rest: f64 = (0..pos.len()).map(|i| m * g * ((i / per_layer.max(1)) as f64 + 0.5) * dx as f64).sum();
    let (p0, k0) = energy(&pos, &vel);
    let mut history = vec![(0.0, p0, k0)];
    while run.time < t_end {
        let t = run.advance(params.max_dt())?;
        let (pos, vel) = run.read();
        let (p, k) = energy(&pos, &vel);
        history.push((t as f64, p, k));
    }
    run.finish();
    Ok((history, e_rest, run.leaks()))
}

/// `energy`: writes `energy.csv` and `energy.png` ((E - E_rest) / (E0 - E_rest) against time).
pub fn energy(ctx: &GpuContext, plan: &Plan, outcome: &mut Outcome) -> Result<()> {
    const TOLERANCE: f64 = 0.01;
    let results = per_solver(plan, outcome, Case::Energy, |m| energy_solver(ctx, plan, m));
    let mut csv =
        csv::Writer::from_path(out_file(outcome, &plan.out, "energy.csv")).context("cannot write energy.csv")?;
    csv.write_record(["solver", "time_s", "potential_j", "kinetic_j", "total_j", "relative_to_available"])?;
    let mut chart = Chart {
        title: "Sloshing tank: (E - E_rest) / (E(0) - E_rest)".into(),
        x_desc: "time (s)".into(),
        y_desc: "energy above rest, fraction of initial".into(),
        ..Chart::default()
    };
    let c = Case::Energy;
    let mut t_max = 0.0f64;
    for (i, (m, (history, e_rest, leaks))) in results.iter().enumerate() {
        let e0 = history[0].1 + history[0].2;
        let available = e0 - e_rest;
        let rel = |e: f64| (e - e_rest) / available;
        let mut points = Vec::with_capacity(history.len());
        for &(t, p, k) in history {
            csv.write_record([
                m.name().to_string(),
                t.to_string(),
                p.to_string(),
                k.to_string(),
                (p + k).to_string(),
                rel(p + k).to_string(),
            ])?;
            points.push((t, rel(p + k)));
            t_max = t_max.max(t);
        }
        let growth = history.iter().map(|&(_, p, k)| (p + k - e0) / available).fold(f64::NEG_INFINITY, f64::max);
        let end = history.last().map_or(f64::NAN, |&(_, p, k)| rel(p + k));
        // Strictest form of "never grows": the largest rise of E above its running minimum.
        let (mut low, mut rise) = (f64::INFINITY, 0.0f64);
        for &(_, p, k) in history {
            low = low.min(p + k);
            rise = rise.max((p + k - low) / available);
        }
        outcome.figures.extend([
            figure(
                c,
                *m,
                "energy_growth",
                "max (E(t) - E(0)) / (E(0) - E_rest)",
                growth,
                Target::AtMost(TOLERANCE),
                Unit::Percent,
            ),
            figure(
                c,
                *m,
                "energy_rise",
                "largest rise of E above its running minimum / (E(0) - E_rest)",
                rise,
                Target::Info,
                Unit::Percent,
            ),
            figure(
                c,
                *m,
                "energy_remaining",
                "(E(end) - E_rest) / (E(0) - E_rest) (< 0: settled below the level lattice)",
                end,
                Target::Info,
                Unit::Percent,
            ),
            figure(
                c,
                *m,
                "leaks",
                "particles lost (outside, below floor, non-finite)",
                *leaks as f64,
                Target::AtMost(0.0),
                Unit::Count,
            ),
        ]);
        chart.series.push(Series {
            name: m.name().into(),
            points,
            style: Style::Line,
            color: COLORS[i % COLORS.len()],
        });
    }
    chart.series.push(Series {
        name: format!("E(0) + {:.0} % tolerance", 100.0 * TOLERANCE),
        points: vec![(0.0, 1.0 + TOLERANCE), (t_max, 1.0 + TOLERANCE)],
        style: Style::Line,
        color: RGBColor(0, 0, 0),
    });
    csv.flush()?;
    plot::write_chart(&out_file(outcome, &plan.out, "energy.png"), &chart)
}
