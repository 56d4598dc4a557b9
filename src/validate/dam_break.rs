//! `dam_break`: collapse of a water column on a dry floor in the tank of Lobovsky et al. (2014); the
//! surge front X = x / H (x from the gate) against T = t sqrt(g / H), compared with their measured front
//! (see [`super::lobovsky`] for the geometry, the data set and its source).
//!
//! The case builds the ETSIN tank in 3-D at its real size: x in [0, 1.61], y in [0, 0.6], z in
//! [0, 0.15] m, the column [0, 0.6] x [0, 0.3] x [0, 0.15] m (the full width), released instantly. The
//! front is the second-largest x (plus dx/2, the lattice's half spacing, so X(0) = 0) of the particles
//! within 2 dx of the floor; one splashed particle cannot move it. The run ends when the front reaches
//! the downstream wall or at T = 2.6.
//!
//! Pass/fail figure: the largest |Z - Z_exp| / Z_exp over the experimental points with T in (0, 2.5],
//! where Z = (L + x) / L = 1 + X H / L is the front's distance from the back wall over the column length
//! L. This is Martin & Moyce's convention (Z = x / a): a relative deviation in X itself would divide by
//! X_exp -> 0 near T = 0, where a few millimetres are tens of percent. For information: the largest
//! |X - X_exp|, and the shift of the simulation's T that minimises the largest Z deviation (positive when
//! the simulation runs ahead, as an instant release does of a real gate; the pass/fail figure is never
//! shifted).
//!
//! Martin & Moyce (1952, n^2 = 2), the previous reference, is kept as a table ([`MARTIN_MOYCE_N2`]) and
//! its a x 2a column as [`scene_at`] (the `iterations` case runs it); the case no longer simulates it.
//! Their slow gate removal made every solver run up to 15 % ahead of their front (docs/validation.md).
//!
//! Reference of the a x 2a column: J. C. Martin and W. J. Moyce (1952), "Part IV. An experimental study
//! of the collapse of liquid columns on a rigid horizontal plane", Phil. Trans. R. Soc. Lond. A
//! 244(882), 312-324, doi:10.1098/rsta.1952.0006.

use super::lobovsky::{self, LOBOVSKY_2014_FRONT, T_COMPARED, X_WALL};
use super::plot::{self, Chart, Series, Style, COLORS};
use super::runner::{params_for, scene_from_ron, Run};
use super::{out_file, Case, Figure, Outcome, Plan, Target, Unit};
use crate::gpu::GpuContext;
use crate::scene::Scene;
use crate::sim::params::Method;
use anyhow::{Context, Result};
use plotters::style::RGBColor;

/// Martin & Moyce (1952), n^2 = 2 (column height 2a), a = 2.25 in: surge front (T, Z) with
/// T = t sqrt(2 g / a) and Z = x / a. Z runs in steps of 0.25 in / 2.25 in = 1/9, the half-inch marks at
/// which the front was timed. Values as tabulated (two decimals) by the Lethe project's validation of
/// this experiment (chaos-polymtl/lethe, examples/multiphysics/dam-break/dam-break-2d.py); they agree
/// within 3 % in Z (at most 0.08) with an independent digitisation of the paper's figure 3
/// (pypr/pysph, pysph/examples/db_exp_data.py). No longer compared (see the module's documentation).
pub const MARTIN_MOYCE_N2: [(f64, f64); 14] = [
    (0.0, 1.0),
    (0.41, 1.11),
    (0.84, 1.23),
    (1.19, 1.44),
    (1.43, 1.67),
    (1.63, 1.89),
    (1.82, 2.11),
    (1.97, 2.33),
    (2.20, 2.56),
    (2.32, 2.78),
    (2.50, 3.00),
    (2.64, 3.22),
    (2.82, 3.44),
    (2.96, 3.67),
];

/// Column width a of the Martin & Moyce a x 2a column ([`scene_at`]), metres.
pub const A: f32 = 0.6;

/// The run ends at this T = t sqrt(g / H) unless the front reached the downstream wall before.
pub const T_END: f64 = 2.6;

/// Least interval between front samples, in T (0.05: about 0.0087 s). The run advances in whole frames,
/// so at the default frame_dt of 1/60 s the front is sampled every frame, every 0.095 in T.
const SAMPLE_T: f64 = 0.05;

/// Shifts of the simulation's T tried by [`best_shift`]: from -0.3 to 0.5 in steps of 0.005.
const SHIFT_RANGE: (f64, f64, f64) = (-0.3, 0.5, 0.005);

/// Column cells per H: quick 16 (dx = 0.01875 m, 32 x 16 x 8 = 4 096 particles), full 60 (dx = 0.005 m,
/// 120 x 60 x 30 = 216 000 particles). Quick is not coarser because the early front's lag grows as the
/// resolution falls (the toe's first acceleration is resolved less; see docs/validation.md).
pub fn cells_per_h(quick: bool) -> u32 {
    if quick {
        16
    } else {
        60
    }
}

/// The Lobovsky et al. (2014) dam break at the plan's resolution: (scene, dx). The whole 0.15 m width
/// at both resolutions (quick: 8 particles across it).
pub fn scene(quick: bool) -> Result<(Scene, f32)> {
    let dx = (lobovsky::H / cells_per_h(quick) as f64) as f32;
    let text = format!(
        "(name: \"validation dam break (Lobovsky et al. 2014)\", domain: (min: (0, 0, 0), max: ({len}, {ht}, {w})), terrain: None,
          fluid_blocks: [(min: (0, 0, 0), max: ({l}, {h}, {w}))],
          camera: (target: (0.8, 0.2, {zc}), distance: 2.2, yaw_deg: 15.0, pitch_deg: 20.0),
          solver: (dx: {dx}), cpu_dx_scale: 1.0)",
        len = lobovsky::TANK_LENGTH,
        ht = lobovsky::TANK_HEIGHT,
        w = lobovsky::TANK_WIDTH,
        l = lobovsky::L,
        h = lobovsky::H,
        zc = 0.5 * lobovsky::TANK_WIDTH,
    );
    Ok((scene_from_ron("validation dam break", &text)?, dx))
}

/// The Martin & Moyce a x 2a dam break (a = 0.6 m, column 0.6 m x 1.2 m high at the x = 0 wall of a
/// 3.22 m long, 1.8 m high tank) with `cells_per_a` particles across the column's width a, on a slab
/// `depth` metres across z: (scene, dx). Used by the `iterations` case.
pub fn scene_at(cells_per_a: u32, depth: f32) -> Result<(Scene, f32)> {
    let dx = A / cells_per_a as f32;
    let text = format!(
        "(name: \"validation dam break a x 2a\", domain: (min: (0, 0, 0), max: (3.22, {h}, {depth})), terrain: None,
          fluid_blocks: [(min: (0, 0, 0), max: ({a}, {c}, {depth}))],
          camera: (target: (1.6, 0.4, {zc}), distance: 4.0, yaw_deg: 15.0, pitch_deg: 20.0),
          solver: (dx: {dx}), cpu_dx_scale: 1.0)",
        h = 3.0 * A,
        a = A,
        c = 2.0 * A,
        zc = 0.5 * depth,
    );
    Ok((scene_from_ron("validation dam break", &text)?, dx))
}

/// Surge front x (metres): the second-largest x of the particles below `floor + 2 dx`, plus dx/2.
pub fn front(positions: &[[f32; 4]], floor: f32, dx: f32) -> Option<f32> {
    let mut xs: Vec<f32> = positions.iter().filter(|p| p[1] < floor + 2.0 * dx && p[3] >= 0.0).map(|p| p[0]).collect();
    xs.sort_by(|a, b| b.total_cmp(a));
    let k = ((xs.len() as f64 * 1e-3).ceil() as usize).max(2).min(xs.len());
    (k > 0).then(|| xs[k - 1] + 0.5 * dx)
}

/// Linear interpolation of `curve` (sorted by x) at `x`; `None` outside its range.
pub fn interpolate(curve: &[(f64, f64)], x: f64) -> Option<f64> {
    let i = curve.windows(2).position(|w| w[0].0 <= x && x <= w[1].0)?;
    let (a, b) = (curve[i], curve[i + 1]);
    let f = if b.0 > a.0 { (x - a.0) / (b.0 - a.0) } else { 0.0 };
    Some(a.1 + f * (b.1 - a.1))
}

/// (T, simulated, experimental) at every point of `reference` with 0 < T <= `t_max` where the
/// simulation, its T shifted by `shift` (sim T + shift), has a value. Before the shifted simulation
/// starts its first value holds (the column at rest behind the gate); after its end there is none.
pub fn matched_points(sim: &[(f64, f64)], reference: &[(f64, f64)], shift: f64, t_max: f64) -> Vec<(f64, f64, f64)> {
    let start = sim.first().map(|p| p.0 + shift);
    reference
        .iter()
        .filter(|(t, _)| *t > 0.0 && *t <= t_max)
        .filter_map(|&(t, v)| {
            let s = if start.is_some_and(|s0| t < s0) { sim.first().map(|p| p.1) } else { interpolate(sim, t - shift) };
            s.map(|s| (t, s, v))
        })
        .collect()
}

/// A simulated front history compared with Lobovsky et al. (2014).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// Largest |Z - Z_exp| / Z_exp, Z = 1 + X H / L.
    pub max_rel_z: f64,
    /// T of that largest deviation.
    pub worst_t: f64,
    /// Largest |X - X_exp|.
    pub max_abs_x: f64,
    /// Experimental points compared (T in (0, 2.5] inside the simulated range).
    pub points: usize,
}

/// Compares a simulated front history (T, X) with [`LOBOVSKY_2014_FRONT`] over T in (0, 2.5], the
/// simulation's T shifted by `shift`. NaN figures when no point is compared.
pub fn compare_lobovsky(sim: &[(f64, f64)], shift: f64) -> Comparison {
    let m = matched_points(sim, &LOBOVSKY_2014_FRONT, shift, T_COMPARED);
    let mut c = Comparison { max_rel_z: 0.0, worst_t: f64::NAN, max_abs_x: 0.0, points: m.len() };
    for &(t, x, x_exp) in &m {
        let rel = (lobovsky::z_of_x(x) - lobovsky::z_of_x(x_exp)).abs() / lobovsky::z_of_x(x_exp);
        if rel >= c.max_rel_z {
            (c.max_rel_z, c.worst_t) = (rel, t);
        }
        c.max_abs_x = c.max_abs_x.max((x - x_exp).abs());
    }
    if m.is_empty() {
        (c.max_rel_z, c.max_abs_x) = (f64::NAN, f64::NAN);
    }
    c
}

/// The shift of the simulation's T (sim T + shift, in [-0.3, 0.5] by 0.005) that minimises
/// [`Comparison::max_rel_z`], among the shifts that leave no experimental point uncompared that the
/// unshifted comparison had: (shift, comparison at that shift).
pub fn best_shift(sim: &[(f64, f64)]) -> (f64, Comparison) {
    let unshifted = compare_lobovsky(sim, 0.0);
    let (lo, hi, step) = SHIFT_RANGE;
    let steps = ((hi - lo) / step).round() as usize;
    (0..=steps)
        .map(|i| lo + i as f64 * step)
        .map(|s| (s, compare_lobovsky(sim, s)))
        .filter(|(_, c)| c.points >= unshifted.points && c.max_rel_z.is_finite())
        .fold((0.0, unshifted), |best, cur| if cur.1.max_rel_z < best.1.max_rel_z { cur } else { best })
}

/// The front history (T, X) of one solver, and the run's leak count. When the front reaches the
/// downstream wall the run stops and the history ends with the front held at the wall at T = 2.6
/// (X = 3.3667, where the experiment's front is from T = 2.57 on).
fn run_solver(ctx: &GpuContext, plan: &Plan, method: Method) -> Result<(Vec<(f64, f64)>, u32)> {
    let (scene, dx) = scene(plan.quick)?;
    let params = params_for(plan, &scene, dx, method)?;
    let time_scale = lobovsky::time_scale();
    let t_end = (T_END / time_scale) as f32;
    let mut run = Run::new(ctx, &scene, &params, |_| true, format!("dam_break/{}", method.name()), t_end)?;
    let (floor, back) = (scene.domain.min[1], scene.domain.min[0]);
    let x_of = |pos: &[[f32; 4]]| front(pos, floor, dx).map(|x| lobovsky::x_of_front((x - back) as f64));
    let mut history = vec![(0.0, x_of(&run.read().0).context("no particles near the floor")?)];
    // Within one spacing of the wall counts as there.
    let at_wall = |x: f64| x >= X_WALL - dx as f64 / lobovsky::H;
    while run.time < t_end && !history.last().is_some_and(|p| at_wall(p.1)) {
        let t = run.advance((SAMPLE_T / time_scale) as f32)?;
        if let Some(x) = x_of(&run.read().0) {
            history.push((t as f64 * time_scale, x));
        }
    }
    run.finish();
    if let Some(&(t, x)) = history.last() {
        if at_wall(x) && t < T_END {
            eprintln!("dam_break/{}: the front reached the downstream wall at T = {t:.3}", method.name());
            history.push((T_END, X_WALL));
        }
    }
    Ok((history, run.leaks()))
}

/// Runs the case for every solver of the plan; writes `dam_break.csv` (solver, T, X) and `dam_break.png`.
pub fn run(ctx: &GpuContext, plan: &Plan, outcome: &mut Outcome) -> Result<()> {
    let mut results = Vec::new();
    for &method in &plan.solvers {
        match run_solver(ctx, plan, method) {
            Ok(r) => results.push((method, r)),
            Err(e) => outcome.errors.push(("dam_break".into(), method.name().into(), format!("{e:#}"))),
        }
    }
    let mut csv =
        csv::Writer::from_path(out_file(outcome, &plan.out, "dam_break.csv")).context("cannot write dam_break.csv")?;
    csv.write_record(["solver", "T", "X"])?;
    let mut chart = Chart {
        title: "Dam break (H = 0.3 m, L = 0.6 m): surge front vs Lobovsky et al. 2014".into(),
        x_desc: "T = t sqrt(g / H)".into(),
        y_desc: "X = x / H (from the gate)".into(),
        x_range: Some((0.0, 2.7)),
        y_range: Some((0.0, 3.6)),
        ..Chart::default()
    };
    chart.series.push(Series {
        name: "Lobovsky et al. 2014 (ETSIN, H = 0.3 m)".into(),
        points: LOBOVSKY_2014_FRONT.to_vec(),
        style: Style::Markers(3),
        color: RGBColor(0, 0, 0),
    });
    chart.series.push(Series {
        name: "downstream wall".into(),
        points: vec![(0.0, X_WALL), (2.7, X_WALL)],
        style: Style::Line,
        color: COLORS[7],
    });
    for (i, (method, (history, leaks))) in results.iter().enumerate() {
        for (t, x) in history {
            csv.write_record([method.name().to_string(), t.to_string(), x.to_string()])?;
        }
        let c = compare_lobovsky(history, 0.0);
        let (shift, shifted) = best_shift(history);
        eprintln!(
            "dam_break/{}: max Z deviation {:.2} % (at T = {:.2}) over {} points, max X deviation {:.3}; best shift T + {shift:.3}: {:.2} %",
            method.name(),
            100.0 * c.max_rel_z,
            c.worst_t,
            c.points,
            c.max_abs_x,
            100.0 * shifted.max_rel_z
        );
        let fig = |key, label: String, value, target, unit| Figure {
            case: Case::DamBreak,
            solver: *method,
            key,
            label,
            value,
            target,
            unit,
        };
        outcome.figures.extend([
            fig(
                "front_max_rel_diff",
                format!("surge front vs Lobovsky 2014: max abs(Z - Z_exp) / Z_exp, Z = 1 + X H / L, over {} points (T <= {T_COMPARED})", c.points),
                c.max_rel_z,
                Target::AtMost(0.05),
                Unit::Percent,
            ),
            fig("front_max_abs_diff_x", "surge front: max abs(X - X_exp), X = x / H from the gate".into(), c.max_abs_x, Target::Info, Unit::Plain),
            fig("front_best_shift", "T shift (sim T + shift) minimising the max Z deviation".into(), shift, Target::Info, Unit::Plain),
            fig("front_max_rel_diff_best_shift", "max Z deviation with that shift".into(), shifted.max_rel_z, Target::Info, Unit::Percent),
            fig("leaks", "particles lost (outside, below floor, non-finite)".into(), *leaks as f64, Target::AtMost(0.0), Unit::Count),
        ]);
        chart.series.push(Series {
            name: method.name().into(),
            points: history.clone(),
            style: Style::LineMarkers,
            color: COLORS[i % COLORS.len()],
        });
    }
    csv.flush()?;
    plot::write_chart(&out_file(outcome, &plan.out, "dam_break.png"), &chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiment_table_is_monotonic_and_on_half_inch_marks() {
        for w in MARTIN_MOYCE_N2.windows(2) {
            assert!(w[1].0 > w[0].0 && w[1].1 > w[0].1);
        }
        for (_, z) in MARTIN_MOYCE_N2 {
            assert!((z * 9.0 - (z * 9.0).round()).abs() < 0.1, "Z = {z} is not a multiple of 1/9");
        }
    }

    #[test]
    fn difference_is_zero_for_the_experiment_itself() {
        let m = matched_points(&MARTIN_MOYCE_N2, &MARTIN_MOYCE_N2, 0.0, f64::INFINITY);
        assert_eq!(m.len(), 13);
        assert!(m.iter().all(|&(_, s, r)| (s - r).abs() < 1e-12));
        let c = compare_lobovsky(&LOBOVSKY_2014_FRONT, 0.0);
        assert_eq!(c.points, 131);
        assert!(c.max_rel_z < 1e-12 && c.max_abs_x < 1e-12);
    }

    #[test]
    fn lobovsky_deviation_is_measured_in_z() {
        // A front 10 % further from the gate than the experiment everywhere: X 10 % off, Z less (Z >= 1).
        let sim: Vec<(f64, f64)> = LOBOVSKY_2014_FRONT.iter().map(|&(t, x)| (t, 1.1 * x)).collect();
        let c = compare_lobovsky(&sim, 0.0);
        let x = 3.19868; // X_exp at T = 2.497, the last compared point
        let expected = 0.1 * x * lobovsky::H / lobovsky::L / lobovsky::z_of_x(x);
        assert!((c.max_rel_z - expected).abs() < 1e-9, "{} vs {expected}", c.max_rel_z);
        assert!((c.worst_t - 2.49703).abs() < 1e-9);
        assert!((c.max_abs_x - 0.1 * x).abs() < 1e-9);
    }

    #[test]
    fn points_beyond_the_simulation_are_not_compared() {
        let sim: Vec<(f64, f64)> = LOBOVSKY_2014_FRONT.iter().copied().filter(|p| p.0 <= 1.0).collect();
        let c = compare_lobovsky(&sim, 0.0);
        assert_eq!(c.points, 52);
        assert!(compare_lobovsky(&[(0.0, 0.0)], 0.0).max_rel_z.is_nan());
    }

    #[test]
    fn best_shift_recovers_a_delay() {
        // The experiment 0.1 later (at rest until T = 0.1): T - 0.1 brings it back.
        let mut sim = vec![(0.0, 0.0)];
        sim.extend(LOBOVSKY_2014_FRONT.iter().map(|&(t, x)| (t + 0.1, x)));
        assert!(compare_lobovsky(&sim, 0.0).max_rel_z > 0.02);
        let (shift, c) = best_shift(&sim);
        assert!((shift + 0.1).abs() < 0.006, "shift {shift}");
        assert!(c.max_rel_z < 0.005 && c.points == 131, "{c:?}");
    }

    #[test]
    fn front_ignores_one_splash() {
        let mut p: Vec<[f32; 4]> = (0..10).map(|i| [i as f32 * 0.1, 0.05, 0.0, 1000.0]).collect();
        p.push([5.0, 0.05, 0.0, 1000.0]);
        let x = front(&p, 0.0, 0.1).expect("a front");
        assert!((x - 0.95).abs() < 1e-5, "front at {x}");
    }
}
