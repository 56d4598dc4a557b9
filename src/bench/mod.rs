//! `waterview bench`: headless benchmark of the simulation (and one render per frame) over particle
//! counts and workgroup sizes, measured the way `shared/docs/background.md` section 5 asks.
//!
//! How it works:
//! - A target particle count N is reached by scaling the scene's spacing, `dx = dx0 (N0 / N)^(1/3)`,
//!   where N0 is the count the scene builds at its own `dx0`; the lattice and the terrain make the
//!   count inexact, so the scale is corrected from the count actually built (up to six builds on
//!   the CPU) and the built count is what is reported.
//! - Each configuration (count x workgroup size) builds a fresh [`Engine`] (without the scene's emitters
//!   and sinks, so the count stays fixed), runs `warmup` frames,
//!   then `frames` timed frames. A frame is what the app records: the steps that cover the scene's
//!   `frame_dt` ([`crate::sim::Simulation::frame_steps`]: `substeps` or more where the CFL condition
//!   shortens the step; `substeps` exactly with `--fixed-substeps`), the statistics
//!   reduction and one [`Renderer::encode`] of the scene camera into an [`Offscreen`] target. As in
//!   the window, the CPU records the next frame while the GPU runs the last one (one frame in flight,
//!   src/bench/frames.rs); each frame's timestamp queries arrive a frame or two later.
//! - Simulation and rendering are timed by two separate [`crate::gpu::Profiler`]s, so any pass the
//!   renderer adds counts as rendering without a list of labels here. Per pass the median over the timed frames of
//!   its ms per frame is kept, and the median of its ms per frame over the frame's steps is its ms per
//!   step (the once-per-frame statistics and diffuse passes are amortised the same way). Total ms per
//!   step is the sum over simulation passes;
//!   particle-steps per second = N / (ms per step). These sums count only the time inside passes.
//! - Three figures per frame, each the median over the timed frames:
//!   - the **GPU span** ([`ConfigResult::gpu_span_ms_per_frame`]): the earliest start to the latest end
//!     over both profilers' timestamp queries of the frame (they read the same GPU clock), so the idle
//!     gaps between dispatches and passes, and the copies and clears recorded outside timed passes,
//!     count; work before the first or after the last timed pass does not. With `--submit-per-step` it
//!     also includes the CPU's waits between the frame's submissions;
//!   - the **sum of pass times** ([`ConfigResult::ms_per_frame`]): steps per frame x ms per step + render,
//!     each pass's own median, gaps excluded;
//!   - the **wall clock** ([`ConfigResult::wall_ms_per_frame`]): from the end of the wait for the previous
//!     frame to the end of the wait for this one, the pace at which frames come out (the GPU span plus
//!     any gap the CPU leaves: encoding the next frame, submitting it, waking from the wait); its mean
//!     is kept too ([`ConfigResult::wall_mean_ms_per_frame`]), as a few slow frames show there.
//! - `--sweep` doubles N from 1 000 until a step takes over a second, the GPU refuses the size
//!   (recorded, not fatal) or the cap is passed, and fits the log-log slope of ms per step over N.
//!
//! Outputs ([`report`], [`plot`]): `bench.csv`, `bench.md` and `bench.png` in the output folder.

mod frames;
pub mod gate;
pub mod loopback;
pub mod plot;
pub mod report;

use crate::capture::output::{check_writable, Output};
use crate::engine::{self, BuildOptions, Engine, EngineError};
use crate::gpu::{GpuContext, PassTime};
use crate::render::{Offscreen, OrbitCamera, RenderSettings, Renderer, OFFSCREEN_FORMAT};
use crate::scene::{Scene, SceneSetup};
use crate::sim::frame_steps::steps_in;
use crate::sim::{SimError, SimOptions};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::time::Instant;

/// First particle count of a `--sweep`.
pub const SWEEP_START: u64 = 1_000;
/// A sweep stops after the first count whose step takes longer than this, milliseconds.
pub const SWEEP_STOP_MS_PER_STEP: f64 = 1_000.0;

/// What to measure: particle counts, workgroup sizes and how long.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Target particle counts; `None` = the scene's own count on this adapter.
    pub targets: Option<Vec<u64>>,
    /// Double from [`SWEEP_START`] instead of `targets` (which is then ignored).
    pub sweep: bool,
    /// Largest count a sweep tries.
    pub max_particles: u64,
    /// Threads per workgroup; each count runs at each of them.
    pub workgroup_sizes: Vec<u32>,
    /// Timed and untimed frames per configuration.
    pub frames: u32,
    pub warmup: u32,
    /// Time frames until this many simulated seconds have passed after the warm-up (at most `frames`).
    pub seconds: Option<f32>,
    /// Render target size, pixels.
    pub size: (u32, u32),
    /// Neighbour-grid cells per support radius and folded-table cells per particle ([`SimOptions`]).
    pub cell_split: u32,
    pub cells_per_particle: f64,
    /// One submission (and wait) per step instead of per frame.
    pub submit_per_step: bool,
    /// Frames of the scene's `substeps` steps, whatever simulated time they cover (the figures of runs
    /// from before frames followed the simulated time).
    pub fixed_substeps: bool,
    /// How the fluid's splats are drawn.
    pub splats: crate::render::SplatMethod,
    /// Draw the terrain and the sky every frame (no background cache).
    pub redraw_background: bool,
    /// Leave out the water's shadow (drawn by default, as the render settings have it).
    pub no_water_shadow: bool,
    /// DFSPH error sums without subgroup operations.
    pub no_subgroups: bool,
    /// DFSPH loops over the grid's rows instead of the step's neighbour lists.
    pub no_neighbour_list: bool,
    /// The filter that smooths the fluid's depth ("curvature flow" or "narrow range" in the pass table).
    pub depth_filter: crate::render::DepthFilter,
}

/// Median time of one labelled pass over the timed frames.
#[derive(Clone, Debug, PartialEq)]
pub struct PassStat {
    pub label: String,
    /// Milliseconds of GPU time per rendered frame.
    pub ms_per_frame: f64,
    /// The median over the timed frames of the pass's ms in the frame over the frame's steps.
    pub ms_per_step: f64,
}

/// The measurements of one configuration that ran.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigResult {
    /// Count asked for, and count built.
    pub target_particles: u64,
    pub particles: u32,
    /// Spacing used, metres.
    pub dx: f32,
    pub workgroup_size: u32,
    /// Steps per rendered frame, the median over the timed frames.
    pub steps_per_frame: f64,
    /// Simulation passes, in recording order (empty without timestamp queries).
    pub passes: Vec<PassStat>,
    /// Render passes (empty without timestamp queries).
    pub render: Vec<PassStat>,
    /// GPU span of a frame, milliseconds: first to last timestamp over the simulation's and the
    /// renderer's queries of the frame, idle gaps included; the median over the timed frames whose
    /// timings arrived. `None` without timestamp queries.
    pub gpu_span_ms_per_frame: Option<f64>,
    /// Wall-clock milliseconds per frame (from the end of the wait for the previous frame to the end of the
    /// wait for this one, the next frame recorded meanwhile), the median over the timed frames.
    pub wall_ms_per_frame: f64,
    /// The same wall clock averaged over the timed frames (slow outlier frames pull it up).
    pub wall_mean_ms_per_frame: f64,
    /// CPU milliseconds per frame from the start of encoding to the return of the queue submission
    /// (recording every pass and dispatch, and wgpu's submission work), the median over the timed frames.
    pub encode_ms_per_frame: f64,
    /// `Simulation::bytes_allocated()`.
    pub bytes_allocated: u64,
    /// Timed frames whose GPU timings arrived.
    pub samples: usize,
    /// The solver's figures over the timed frames (means of the statistics read back asynchronously,
    /// each from a frame's last step): DFSPH's density and divergence iterations per step (0 for the
    /// other solvers), and the time step, ms.
    pub density_iterations: f64,
    pub divergence_iterations: f64,
    pub dt_ms: f64,
    /// The median of the timed frames' last time steps, ms.
    pub dt_median_ms: f64,
    /// Simulated seconds over the timed frames (from the end of the warm-up to the last timed record).
    pub sim_seconds: f64,
    /// Wall-clock seconds of the timed frames in all (encode, submit, wait; rendering included).
    pub wall_seconds: f64,
}

impl ConfigResult {
    /// Whether the times come from GPU timestamp queries (otherwise from the wall clock).
    pub fn gpu_timed(&self) -> bool {
        !self.passes.is_empty()
    }
    /// Simulated seconds per wall-clock second over the timed frames, rendering included (the first seed's
    /// "simulation time / computation time"); 0 when nothing was timed.
    pub fn realtime_factor(&self) -> f64 {
        if self.wall_seconds > 0.0 {
            self.sim_seconds / self.wall_seconds
        } else {
            0.0
        }
    }
    /// Simulation milliseconds per step: the sum over passes, or wall clock / steps per frame without
    /// timestamps.
    pub fn ms_per_step(&self) -> f64 {
        if self.gpu_timed() {
            self.passes.iter().map(|p| p.ms_per_step).sum()
        } else {
            self.wall_ms_per_frame / self.steps_per_frame.max(1.0)
        }
    }
    /// GPU milliseconds of rendering per frame.
    pub fn render_ms_per_frame(&self) -> f64 {
        self.render.iter().map(|p| p.ms_per_frame).sum()
    }
    /// Milliseconds per rendered frame: its steps plus the render. With timestamp queries this
    /// is the sum of the passes' medians (gaps between passes excluded; compare
    /// [`ConfigResult::gpu_span_ms_per_frame`]).
    pub fn ms_per_frame(&self) -> f64 {
        self.ms_per_step() * self.steps_per_frame + self.render_ms_per_frame()
    }
    /// Particle-steps per second: particles / (seconds per step).
    pub fn particle_steps_per_s(&self) -> f64 {
        self.particles as f64 / (self.ms_per_step() * 1e-3)
    }
    /// GPU memory of the simulation per particle, bytes.
    pub fn bytes_per_particle(&self) -> f64 {
        self.bytes_allocated as f64 / self.particles as f64
    }
}

/// A configuration that could not run (bad size for this GPU, scene too large, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub target_particles: u64,
    pub workgroup_size: u32,
    pub error: String,
}

/// Everything a benchmark run measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// `GpuContext::adapter_summary()`.
    pub adapter: String,
    /// Software adapter (lavapipe): figures only for relative comparisons.
    pub is_cpu: bool,
    pub scene: String,
    pub plan: Plan,
    pub results: Vec<ConfigResult>,
    pub failures: Vec<Failure>,
}

impl Report {
    /// Least-squares slope of ln(ms per step) over ln(particles) per workgroup size (those with at
    /// least two distinct counts), in the order the sizes were given.
    pub fn slopes(&self) -> Vec<(u32, f64)> {
        let mut out = Vec::new();
        for &wg in &self.plan.workgroup_sizes {
            let pts: Vec<(f64, f64)> = self
                .results
                .iter()
                .filter(|r| r.workgroup_size == wg)
                .map(|r| (r.particles as f64, r.ms_per_step()))
                .collect();
            if let Some(s) = loglog_slope(&pts) {
                if !out.iter().any(|(w, _)| *w == wg) {
                    out.push((wg, s));
                }
            }
        }
        out
    }
}

/// Least-squares slope of ln y over ln x; `None` with fewer than two distinct positive x.
pub fn loglog_slope(points: &[(f64, f64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> =
        points.iter().filter(|(x, y)| *x > 0.0 && *y > 0.0).map(|(x, y)| (x.ln(), y.ln())).collect();
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (pts.len() >= 2 && sxx > 1e-12).then(|| sxy / sxx)
}

/// `waterview bench`: measures `plan` on the scene at `scene_path` (the built-in valley when `None`).
/// Writes `bench.csv`, `bench.md` and (with more than one particle count) `bench.png` into `out` and
/// prints the markdown summary. Errors: bad scene, no GPU, unwritable output folder, or no
/// configuration could run.
pub fn run(scene_path: Option<&Path>, plan: &Plan, out: &Path) -> Result<()> {
    if plan.workgroup_sizes.is_empty() {
        bail!("--workgroup-sizes needs at least one size");
    }
    let scene = engine::load_scene(scene_path)?;
    check_writable(out, Output::Folder)?;
    let ctx = GpuContext::headless()?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let report = run_plan(&ctx, &scene, plan)?;
    // Timings of a device that reported an error or was lost are not written as results.
    ctx.check("the benchmark")?;
    report::write_all(&report, out)?;
    println!("{}", report::summary_markdown(&report));
    eprintln!("wrote {}", out.display());
    if report.results.is_empty() {
        let why = report.failures.first().map_or("nothing was asked".to_string(), |f| f.error.clone());
        bail!("no configuration could run: {why}");
    }
    Ok(())
}

/// Runs every configuration of `plan` on `scene`. Configurations that cannot be built are recorded in
/// [`Report::failures`]; a sweep stops at the first count the GPU refuses or whose step exceeds
/// [`SWEEP_STOP_MS_PER_STEP`]. Errors only when the scene itself cannot be built.
pub fn run_plan(ctx: &GpuContext, scene: &Scene, plan: &Plan) -> Result<Report> {
    let dx0 = scene.solver.dx;
    // The grid's table is sized by the plan's cells per particle (the workgroup size bounds nothing).
    let options = SimOptions { cells_per_particle: plan.cells_per_particle, ..SimOptions::default() };
    let limit = engine::particle_limit_with(ctx, &options);
    let estimate = scene.estimate_particle_count_at(dx0);
    // Built only when the GPU could hold it; past that (or when it does not build) the lattice estimate
    // is close enough to start from, and nothing is laid out in memory.
    let n0 = if estimate <= limit.max { scene_at(scene, dx0).map_or(estimate, |s| s.len()) } else { estimate };
    let mut report = Report {
        adapter: ctx.adapter_summary(),
        is_cpu: ctx.is_cpu(),
        scene: crate::text::printable(&scene.name).into_owned(),
        plan: plan.clone(),
        results: Vec::new(),
        failures: Vec::new(),
    };
    let targets: Vec<Option<u64>> = if plan.sweep {
        std::iter::successors(Some(SWEEP_START), |n| n.checked_mul(2))
            .take_while(|n| *n <= plan.max_particles)
            .map(Some)
            .collect()
    } else {
        plan.targets.as_ref().map_or(vec![None], |t| t.iter().copied().map(Some).collect())
    };
    for target in targets {
        let built = match target {
            // Refused before its particles are laid out in memory (a count past the GPU's limit).
            Some(n) if n > limit.max => Err(anyhow::anyhow!(
                "{n} particles are more than this GPU can simulate ({} at most: {})",
                limit.max,
                limit.why
            )),
            Some(n) => setup_for_count(scene, n0, dx0, n, limit.max),
            None => {
                let dx = scene.effective_dx(ctx.is_cpu());
                // The scene's own size, refused from its estimate before it is laid out.
                let at_dx = scene.at_dx(dx);
                at_dx
                    .declared_file_particles()
                    .map_err(engine::EngineError::from)
                    .and_then(|files| engine::check_fits(ctx, &at_dx, false, files, &options))
                    .map_err(anyhow::Error::from)
                    .and_then(|()| scene_at(scene, dx))
                    .map(|s| (dx, s))
            }
        };
        let (dx, setup) = match built {
            Ok(b) => b,
            Err(e) => {
                let n = target.unwrap_or(0);
                eprintln!("  {n} particles: {e:#}");
                report.failures.extend(plan.workgroup_sizes.iter().map(|&wg| Failure {
                    target_particles: n,
                    workgroup_size: wg,
                    error: format!("{e:#}"),
                }));
                if plan.sweep {
                    break;
                }
                continue;
            }
        };
        let target = target.unwrap_or(setup.len());
        let mut stop = false;
        for &wg in &plan.workgroup_sizes {
            eprint!("  {target} particles (built {}, dx = {dx:.4} m), workgroup {wg}: ", setup.len());
            match run_config(ctx, scene, &setup, dx, wg, plan) {
                Ok(mut r) => {
                    r.target_particles = target;
                    let span = r.gpu_span_ms_per_frame.map_or("n/a".to_string(), |s| format!("{s:.3}"));
                    eprintln!(
                        "{:.3} ms/step; per frame: GPU span {span} ms, sum of passes {:.3} ms, median wall {:.3} ms \
                         (mean {:.3}, encoding and submission {:.3}); {:.1} density + {:.1} divergence iterations per step, \
                         dt {:.2} ms",
                        r.ms_per_step(),
                        r.ms_per_frame(),
                        r.wall_ms_per_frame,
                        r.wall_mean_ms_per_frame,
                        r.encode_ms_per_frame,
                        r.density_iterations,
                        r.divergence_iterations,
                        r.dt_ms
                    );
                    stop |= r.ms_per_step() > SWEEP_STOP_MS_PER_STEP;
                    report.results.push(r);
                }
                Err(e) => {
                    eprintln!("refused: {e:#}");
                    // A size the GPU cannot dispatch at all says nothing about the particle count.
                    let wg_only =
                        matches!(e.downcast_ref::<EngineError>(), Some(EngineError::Sim(SimError::WorkgroupSize(_))));
                    stop |= !wg_only;
                    report.failures.push(Failure {
                        target_particles: target,
                        workgroup_size: wg,
                        error: format!("{e:#}"),
                    });
                }
            }
        }
        if plan.sweep && stop {
            break;
        }
    }
    Ok(report)
}

/// The scene built at spacing `dx` on the full-resolution lattice (no CPU-adapter scaling).
fn scene_at(scene: &Scene, dx: f32) -> Result<SceneSetup> {
    let mut s = scene.clone();
    s.solver.dx = dx;
    Ok(s.build(false)?)
}

/// The spacing and particles closest to `target` from the scene's `n0` particles at `dx0`:
/// `dx = dx0 (n0 / target)^(1/3)`, corrected from the built count up to seven times (the lattice and
/// the terrain make the count a step function of dx; the closest build of at most `max` particles, the
/// GPU's limit, is kept, so a target at the limit runs). A build only counts the particles (the lattice
/// is generated when the simulation is made), so each try takes milliseconds even at 200 M.
pub fn setup_for_count(scene: &Scene, n0: u64, dx0: f32, target: u64, max: u64) -> Result<(f32, SceneSetup)> {
    // Aim a little under the limit when the target is at it: the count jumps by whole lattice layers.
    let aim = target.min((max as f64 * 0.995) as u64).max(1) as f64;
    let mut dx = dx0 * (n0.max(1) as f64 / aim).cbrt() as f32;
    let mut best: Option<(f64, f32, SceneSetup)> = None;
    for _ in 0..8 {
        let setup = scene_at(scene, dx).with_context(|| format!("building {target} particles (dx = {dx} m)"))?;
        let n = setup.len() as f64;
        let err = (n / target as f64 - 1.0).abs();
        let mut next = dx * (n / aim).cbrt() as f32;
        let over = setup.len() > max;
        if over {
            // Over the GPU's limit: never kept; a larger spacing next.
            next = next.max(dx * 1.001);
        } else if best.as_ref().is_none_or(|b| err < b.0) {
            best = Some((err, dx, setup));
        }
        if (!over && err < 0.02) || next == dx {
            break;
        }
        dx = next;
    }
    let (_, dx, setup) =
        best.with_context(|| format!("no spacing gives {target} particles within the limit of {max}"))?;
    Ok((dx, setup))
}

/// Builds one configuration and times it: `plan.warmup` frames, then `plan.frames` timed frames
/// (plus one untimed frame that brings back the last timings). See the module docs for what is timed.
/// Errors: the GPU refuses the simulation (too many particles or cells, bad workgroup size) or is lost.
pub fn run_config(
    ctx: &GpuContext,
    scene: &Scene,
    setup: &SceneSetup,
    dx: f32,
    workgroup_size: u32,
    plan: &Plan,
) -> Result<ConfigResult> {
    let sim_options = SimOptions {
        workgroup_size,
        cell_split: plan.cell_split,
        cells_per_particle: plan.cells_per_particle,
        subgroups: !plan.no_subgroups,
        neighbour_list: !plan.no_neighbour_list,
        ..SimOptions::default()
    };
    let options = BuildOptions { dx: Some(dx), sim: sim_options, sources: false };
    let built = Instant::now();
    let mut engine = Engine::with_setup(ctx, scene.clone(), setup, options)?;
    let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
    eprint!("uploaded in {:.2} s; ", built.elapsed().as_secs_f64());
    let mut renderer = Renderer::new(ctx, OFFSCREEN_FORMAT, engine.terrain());
    renderer.set_obstacles(ctx, &engine.obstacle_meshes());
    renderer.set_walls(ctx, &engine.wall_meshes());
    let target = Offscreen::new(ctx, plan.size);
    let camera = OrbitCamera::from_desc(&scene.camera);
    let mut settings = RenderSettings::default();
    settings.fluid.splats = plan.splats;
    settings.fluid.depth_filter = plan.depth_filter;
    settings.cache_background = !plan.redraw_background;
    settings.water_shadow &= !plan.no_water_shadow;
    settings.particle.radius = engine.sim().particle_radius();
    let view = frames::View { renderer: &mut renderer, target: &target, camera: &camera, settings: &settings };
    let t = frames::run(ctx, &mut engine, view, plan)?;
    let list = |v: &[f64]| v.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>().join(" ");
    log::debug!(
        "bench frames, wall ms: {}; GPU span ms: {}; encode ms: {}",
        list(&t.wall_ms),
        list(&t.spans_ms),
        list(&t.encode_ms)
    );
    let n = engine.sim().capacity();
    // After the timed frames (it waits for the GPU): how many particles read lists rather than the grid.
    if let Some(share) = engine.sim().neighbour_list_share_blocking(ctx) {
        eprint!("neighbour lists: {:.1} % of the particles; ", 100.0 * share);
    }
    if let Some(s) = engine.sim_mut().poll_stats().filter(|s| s.non_finite > 0) {
        log::warn!("bench: {} non-finite particles of {n}; timings may not be representative", s.non_finite);
    }
    let timed_steps: Vec<f64> = t.steps.iter().map(|&n| f64::from(n)).collect();
    let steps_per_frame = median(&timed_steps).unwrap_or(f64::from(engine.params().substeps));
    let mean = |k: usize| t.solver.iter().map(|s| s[k]).sum::<f64>() / t.solver.len().max(1) as f64;
    let dts: Vec<f64> = t.solver.iter().map(|s| s[2]).collect();
    Ok(ConfigResult {
        target_particles: setup.len(),
        particles: n,
        dx,
        workgroup_size,
        steps_per_frame,
        passes: medians(&t.sim_samples, |sample| f64::from(steps_in(sample))),
        render: medians(&t.render_samples, |_| steps_per_frame),
        gpu_span_ms_per_frame: median(&t.spans_ms),
        wall_ms_per_frame: median(&t.wall_ms).unwrap_or(0.0),
        wall_mean_ms_per_frame: t.wall_ms.iter().sum::<f64>() / t.wall_ms.len().max(1) as f64,
        encode_ms_per_frame: median(&t.encode_ms).unwrap_or(0.0),
        bytes_allocated: engine.sim().bytes_allocated(),
        samples: t.sim_samples.len(),
        density_iterations: mean(0),
        divergence_iterations: mean(1),
        dt_ms: mean(2),
        dt_median_ms: median(&dts).unwrap_or(0.0),
        sim_seconds: t.t_end.map_or(0.0, |end| end - t.t_start),
        wall_seconds: t.wall_seconds(),
    })
}

/// Median of `values` (the mean of the middle two for an even count); `None` when empty.
fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[m]),
        _ => Some(0.5 * (v[m - 1] + v[m])),
    }
}

/// Per label (first-seen order), the median over frames of its ms per frame (0 in a frame without it) and
/// of its ms per frame over the frame's `steps`.
fn medians(samples: &[Vec<PassTime>], steps: impl Fn(&[PassTime]) -> f64) -> Vec<PassStat> {
    let mut labels: Vec<&str> = Vec::new();
    for p in samples.iter().flatten() {
        if !labels.contains(&p.label.as_str()) {
            labels.push(&p.label);
        }
    }
    labels
        .into_iter()
        .map(|label| {
            let ms_in = |s: &[PassTime]| s.iter().find(|p| p.label == label).map_or(0.0, |p| p.ms);
            let per_frame: Vec<f64> = samples.iter().map(|s| ms_in(s)).collect();
            let per_step: Vec<f64> = samples.iter().map(|s| ms_in(s) / steps(s).max(1.0)).collect();
            PassStat {
                label: label.to_string(),
                ms_per_frame: median(&per_frame).unwrap_or(0.0),
                ms_per_step: median(&per_step).unwrap_or(0.0),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        // One slow frame moves the mean, not the median.
        assert_eq!(median(&[1.0, 1.0, 100.0]), Some(1.0));
    }
}
