//! `waterview bench --loopback` (issue 30): what decomposing costs one GPU. The same scene and particles
//! are stepped twice on one device: plainly, as one GPU steps them (its simulation built as the engine's,
//! without foam and spray, which the ranks do not simulate yet; one submission a step, nothing waited for
//! until the end, the statistics recorded once per frame of the scene's substeps and read back
//! asynchronously: T_plain), and as the loopback rank
//! (src/cluster/rank/ring.rs: one rank that is its own neighbour on both sides, so every step selects its
//! real halos on the GPU, reads them back, sends them through the transport to itself, writes them back
//! as ghosts and runs the host-driven solves with the ghosts' values exchanged every iteration: T_loop).
//! T_plain / T_loop is the upper bound of the efficiency of N ranks on N GPUs, whose every rank does at
//! least this (and waits for its neighbours). Both runs take the same time steps and iterations (the
//! loopback's owned particles have no ghost within their support), which the figures show
//! (tests/cluster.rs holds the loopback's particles to a rank's without neighbours).
//!
//! Per step of the loopback it counts the blocking GPU-to-host read-backs, the neighbour messages, the
//! all-reduces and the bytes moved (the border exchange's and the solves' per-iteration ones).

use crate::cluster::transport::{LoopbackCounts, LoopbackTransport};
use crate::cluster::{initial_particles, Rank, RankConfig};
use crate::gpu::{GpuContext, Profiler};
use crate::scene::{Scene, SceneSetup};
use crate::sim::{SimOptions, Simulation};
use anyhow::{bail, Context, Result};
use std::fmt::Write as _;
use std::time::Instant;

/// What [`loopback`] measured at one particle count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopbackFigures {
    pub particles: usize,
    /// Particle spacing, m.
    pub dx: f32,
    /// Ghosts the loopback rank held at the end (its two halos).
    pub ghosts: u32,
    /// Timed steps (after the warm-up), each run.
    pub steps: u64,
    /// Wall clock per step, ms: the plain run's (all its steps submitted, then one wait) and the
    /// loopback's (its steps one after another, exchanges included).
    pub plain_ms: f64,
    pub loop_ms: f64,
    /// T_loop with each DFSPH iteration's inner update run while the ghosts' values travel
    /// ([`RankConfig::overlap`]), ms.
    pub overlap_ms: f64,
    /// Of the loopback's step, the wall clock spent in the exchanges and the joint tests, ms.
    pub exchange_ms: f64,
    /// GPU time per step inside the step's passes (timestamp queries; `None` without them), ms: the
    /// plain run's every pass, the loopback's step passes ([`crate::cluster::RankStats::gpu_ms`]: its
    /// border selection and halo passes left out). The loopback's wall clock beyond it is the GPU waiting
    /// for the host and the exchange's passes.
    pub plain_gpu_ms: Option<f64>,
    pub loop_gpu_ms: Option<f64>,
    /// Per pass label, the mean GPU ms per step (plain, loopback) over the steps whose timestamps came
    /// back, in the order the passes first ran (empty without timestamps).
    pub passes: Vec<(String, f64, f64)>,
    /// Mean time step of the timed steps, ms, each run.
    pub plain_dt_ms: f64,
    pub loop_dt_ms: f64,
    /// Mean (density, divergence) iterations at the steps that end a frame of the scene's substeps (where
    /// the plain run records its statistics): the loopback's at every such step, the plain run's at those
    /// whose statistics came back (`None` when none did).
    pub plain_iterations: Option<(f64, f64)>,
    pub loop_iterations: (f64, f64),
    /// Per timed step of the loopback: blocking read-backs, neighbour messages, all-reduces, bytes of the
    /// border exchange (device and host) and of the solves' per-iteration exchanges.
    pub read_backs: f64,
    pub messages: f64,
    pub reductions: f64,
    pub exchange_bytes: f64,
    pub iteration_bytes: f64,
}

impl LoopbackFigures {
    /// T_plain / T_loop: the upper bound of the decomposition's efficiency (1 = free).
    pub fn ratio(&self) -> f64 {
        self.plain_ms / self.loop_ms
    }
}

/// Steps `setup`'s particles (built at spacing `dx` from `scene`) `warmup` + `steps` times plainly and
/// then as the loopback rank on `ctx`, timing the last `steps` of each (see the module docs).
/// Errors: a simulation cannot be built or a read-back failed (the device's report).
pub fn loopback(
    ctx: &GpuContext,
    scene: &Scene,
    setup: &SceneSetup,
    dx: f32,
    warmup: u64,
    steps: u64,
) -> Result<LoopbackFigures> {
    if !scene.bodies.is_empty() {
        bail!(crate::cluster::ClusterError::Bodies);
    }
    let mut params = scene.solver.clone();
    params.dx = dx;
    let all = initial_particles(setup, &params);
    let boundary = (&setup.terrain, setup.obstacles.as_slice());
    let mut figures = LoopbackFigures { particles: all.len(), dx, steps, ..LoopbackFigures::default() };
    let plain_passes = {
        let options = SimOptions { diffuse_pool: 0.0, ..SimOptions::default() };
        let mut sim = Simulation::new_with(ctx, &scene.domain, setup, &params, options)?;
        plain(ctx, &mut sim, warmup, steps, &mut figures)?
    };
    // The rank's own share of slots (its particles and ghosts and a quarter more), not twice the scene's.
    let config = RankConfig { spare: crate::cluster::OWN_SHARE, ..RankConfig::for_params(&params) };
    let run = LoopRun { ctx, scene, boundary, params: &params, all: &all, warmup, steps };
    let mut overlapped = LoopbackFigures::default();
    run.step(RankConfig { overlap: true, ..config }, &mut overlapped, plain_passes.clone())?;
    figures.overlap_ms = overlapped.loop_ms;
    run.step(config, &mut figures, plain_passes)?;
    ctx.check("the loopback benchmark")?;
    Ok(figures)
}

/// What one loopback run steps.
struct LoopRun<'a> {
    ctx: &'a GpuContext,
    scene: &'a Scene,
    boundary: (&'a crate::terrain::Heightfield, &'a [crate::sim::obstacles::Obstacle]),
    params: &'a crate::sim::SimParams,
    all: &'a crate::sim::RankParticles,
    warmup: u64,
    steps: u64,
}

impl LoopRun<'_> {
    /// Steps the loopback rank with `config` and fills the loopback's figures of `figures` (the per-pass
    /// table joined to `plain_passes`).
    fn step(&self, config: RankConfig, figures: &mut LoopbackFigures, plain_passes: PassSums) -> Result<()> {
        let (ctx, params, steps, warmup) = (self.ctx, self.params, self.steps, self.warmup);
        let transport = LoopbackTransport::default();
        let mut rank = Rank::new(
            transport,
            ctx.clone(),
            &self.scene.domain,
            self.boundary,
            params,
            SimOptions::default(),
            config,
            self.all,
        )?;
        let (mut iterations, mut exchange_ms, mut read_backs, mut bytes) = ((0u64, 0u64), 0.0, 0u64, (0u64, 0u64));
        let mut gpu = Vec::new();
        // The iterations at the steps whose statistics the plain run records (the frames' last steps).
        let (frame_steps, mut sampled) = (params.substeps.max(1) as u64, 0u64);
        let mut loop_passes = PassSums::default();
        let (mut started, mut t0, mut counts0) = (Instant::now(), 0.0f32, LoopbackCounts::default());
        for k in 0..warmup + steps {
            if k == warmup {
                (started, counts0) = (Instant::now(), rank.transport().counts());
            }
            let stats = rank.step()?;
            if k + 1 == warmup {
                t0 = stats.time;
            }
            if k >= warmup {
                if (k + 1).is_multiple_of(frame_steps) {
                    iterations = (iterations.0 + stats.iterations.0 as u64, iterations.1 + stats.iterations.1 as u64);
                    sampled += 1;
                }
                exchange_ms += stats.exchange_ms;
                read_backs += stats.read_backs as u64;
                bytes = (bytes.0 + stats.exchange_bytes, bytes.1 + stats.iteration_bytes);
                gpu.extend(stats.gpu_ms);
                loop_passes.add(rank.passes());
            }
            figures.ghosts = stats.ghosts;
            figures.loop_dt_ms = (stats.time - t0) as f64 * 1e3;
        }
        let per = |x: f64| x / steps.max(1) as f64;
        figures.loop_ms = per(started.elapsed().as_secs_f64() * 1e3);
        figures.loop_dt_ms = per(figures.loop_dt_ms);
        figures.exchange_ms = per(exchange_ms);
        figures.loop_gpu_ms = mean(&gpu);
        figures.passes = plain_passes.join(&loop_passes);
        let sampled = sampled.max(1) as f64;
        figures.loop_iterations = (iterations.0 as f64 / sampled, iterations.1 as f64 / sampled);
        let counts = rank.transport().counts();
        figures.read_backs = per(read_backs as f64);
        figures.messages = per((counts.messages - counts0.messages) as f64);
        figures.reductions = per((counts.reductions - counts0.reductions) as f64);
        figures.exchange_bytes = per(bytes.0 as f64);
        figures.iteration_bytes = per(bytes.1 as f64);
        Ok(())
    }
}

/// The plain run: every step recorded with the statistics and submitted, none waited for (the
/// statistics come back asynchronously, as in the window); the clock stops after the last step's wait.
fn plain(
    ctx: &GpuContext,
    sim: &mut Simulation,
    warmup: u64,
    steps: u64,
    figures: &mut LoopbackFigures,
) -> Result<PassSums> {
    let mut passes = PassSums::default();
    let mut profiler = Profiler::new(&ctx.device);
    let (mut gpu, mut seen) = (Vec::new(), 0u64);
    let wait = |ctx: &GpuContext| ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
    let (mut started, mut t0) = (Instant::now(), 0.0f32);
    let frame_steps = sim.params().substeps.max(1) as u64;
    let (mut sums, mut counted, mut last_frame) = ((0u64, 0u64), 0u64, 0u64);
    for k in 0..warmup + steps {
        if k == warmup {
            let _ = wait(ctx);
            t0 = sim.step_state_blocking(ctx)?.time;
            started = Instant::now();
        }
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("plain") });
        sim.encode_step(&mut encoder, &profiler);
        // The statistics once per frame of the scene's substeps, as the window records them.
        let stats = (k + 1).is_multiple_of(frame_steps);
        if stats {
            sim.encode_stats(&mut encoder, &profiler);
        }
        profiler.resolve(&mut encoder);
        ctx.queue.submit([encoder.finish()]);
        profiler.end_frame(&ctx.queue);
        if stats {
            sim.after_submit();
        }
        let _ = ctx.device.poll(wgpu::PollType::Poll);
        if k >= warmup && profiler.frames_finished() > seen {
            seen = profiler.frames_finished();
            gpu.push(profiler.latest().iter().map(|p| p.ms).sum::<f64>());
            passes.add(profiler.latest());
        }
        if k >= warmup {
            count_stats(sim, &mut last_frame, &mut sums, &mut counted);
        }
    }
    let _ = wait(ctx);
    let per = steps.max(1) as f64;
    figures.plain_ms = started.elapsed().as_secs_f64() * 1e3 / per;
    while sim.stats_in_flight() {
        let _ = wait(ctx);
        count_stats(sim, &mut last_frame, &mut sums, &mut counted);
    }
    figures.plain_dt_ms = (sim.step_state_blocking(ctx)?.time - t0) as f64 * 1e3 / per;
    figures.plain_gpu_ms = mean(&gpu);
    figures.plain_iterations = (counted > 0).then(|| (sums.0 as f64 / counted as f64, sums.1 as f64 / counted as f64));
    Ok(passes)
}

/// Sums of GPU ms per pass label over sampled steps.
#[derive(Clone, Default)]
struct PassSums {
    /// (label, summed ms) in the order first seen.
    sums: Vec<(String, f64)>,
    samples: u64,
}

impl PassSums {
    fn add(&mut self, passes: &[crate::gpu::PassTime]) {
        if passes.is_empty() {
            return;
        }
        self.samples += 1;
        for p in passes {
            match self.sums.iter_mut().find(|(l, _)| *l == p.label) {
                Some((_, ms)) => *ms += p.ms,
                None => self.sums.push((p.label.clone(), p.ms)),
            }
        }
    }

    fn mean(&self, label: &str) -> f64 {
        self.sums.iter().find(|(l, _)| l == label).map_or(0.0, |(_, ms)| ms / self.samples.max(1) as f64)
    }

    /// (label, this one's mean, `other`'s mean) over both's labels, this one's first.
    fn join(&self, other: &PassSums) -> Vec<(String, f64, f64)> {
        let mut labels: Vec<&String> = self.sums.iter().map(|(l, _)| l).collect();
        labels.extend(other.sums.iter().map(|(l, _)| l).filter(|l| self.sums.iter().all(|(m, _)| m != *l)));
        labels.into_iter().map(|l| (l.clone(), self.mean(l), other.mean(l))).collect()
    }
}

/// The mean of `values`, `None` when empty.
fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Adds the iterations of the statistics that came back since `last_frame` (the newest of them).
fn count_stats(sim: &mut Simulation, last_frame: &mut u64, sums: &mut (u64, u64), counted: &mut u64) {
    if let Some(s) = sim.poll_stats() {
        if s.frame > *last_frame {
            *last_frame = s.frame;
            *sums = (sums.0 + s.density_iterations as u64, sums.1 + s.divergence_iterations as u64);
            *counted += 1;
        }
    }
}

/// The figures as a Markdown table, one row per count.
pub fn markdown(adapter: &str, scene: &str, rows: &[LoopbackFigures]) -> String {
    let mut s = format!(
        "# Loopback: one rank that is its own neighbour against one GPU ({scene}, {adapter})\n\n\
         | particles | ghosts | steps | T_plain ms | T_loop ms | T_plain / T_loop | T_loop overlapped ms | exchange ms | GPU ms in passes (plain / loop) | dt ms (plain / loop) \
         | iterations (plain / loop) | read-backs | messages | all-reduces | border bytes | iteration bytes |\n\
         |--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
    );
    for f in rows {
        let plain_it = f.plain_iterations.map_or("-".to_string(), |(d, v)| format!("{d:.1} + {v:.1}"));
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
        let gpu = format!("{} / {}", ms(f.plain_gpu_ms), ms(f.loop_gpu_ms));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {gpu} | {:.3} / {:.3} | {plain_it} / {:.1} + {:.1} | {:.1} | {:.1} \
             | {:.1} | {:.0} | {:.0} |",
            f.particles,
            f.ghosts,
            f.steps,
            f.plain_ms,
            f.loop_ms,
            f.ratio(),
            f.overlap_ms,
            f.exchange_ms,
            f.plain_dt_ms,
            f.loop_dt_ms,
            f.loop_iterations.0,
            f.loop_iterations.1,
            f.read_backs,
            f.messages,
            f.reductions,
            f.exchange_bytes,
            f.iteration_bytes,
        );
    }
    for f in rows.iter().filter(|f| !f.passes.is_empty()) {
        let _ = writeln!(
            s,
            "\nGPU ms per step by pass, {} particles:\n\n| pass | plain | loopback |\n|---|--:|--:|",
            f.particles
        );
        for (label, plain, looped) in &f.passes {
            let _ = writeln!(s, "| {label} | {plain:.3} | {looped:.3} |");
        }
    }
    s.push_str(
        "\nPer step of the loopback: read-backs are blocking GPU-to-host reads, messages the neighbour messages \
         sent, bytes those of the border exchange (read back and written) and of the solves' per-iteration \
         exchanges. T_plain / T_loop bounds the efficiency of N GPUs from above (src/bench/loopback.rs).\n",
    );
    s
}

/// `bench --loopback`: [`loopback`] at each of `targets` (the scene's spacing scaled to reach them; none:
/// the scene's own count), printed and written as `loopback.md` into `out`.
/// Errors: the scene, the GPU, a count past its limit, the output folder.
pub fn run(scene: &Scene, targets: &[u64], warmup: u64, steps: u64, out: &std::path::Path) -> Result<()> {
    crate::capture::output::check_writable(out, crate::capture::output::Output::Folder)?;
    let ctx = GpuContext::headless()?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let limit = Simulation::particle_limit(&ctx).max;
    let dx0 = scene.effective_dx(ctx.is_cpu());
    let mut rows = Vec::new();
    let wanted: Vec<Option<u64>> =
        if targets.is_empty() { vec![None] } else { targets.iter().map(|&t| Some(t)).collect() };
    for target in wanted {
        let (dx, setup) = match target {
            None => (dx0, super::scene_at(scene, dx0)?),
            Some(n) => {
                let n0 = super::scene_at(scene, dx0)?.len();
                super::setup_for_count(scene, n0, dx0, n, limit / 2)?
            }
        };
        eprintln!("loopback: {} particles at dx {dx} m", setup.len());
        let figures = loopback(&ctx, scene, &setup, dx, warmup, steps)
            .with_context(|| format!("the loopback at {} particles", setup.len()))?;
        rows.push(figures);
    }
    let md = markdown(&ctx.adapter_summary(), &crate::text::printable(&scene.name), &rows);
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    std::fs::write(out.join("loopback.md"), &md).with_context(|| format!("cannot write into {}", out.display()))?;
    println!("{md}");
    eprintln!("wrote {}", out.display());
    Ok(())
}
