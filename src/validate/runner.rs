//! One simulation of a validation case: builds it through the engine from a scene made in code (RON text)
//! or a built-in scene at an explicit spacing (never the CPU adapter's coarser one, so a case is the same
//! everywhere), advances it by whole frames through [`batch::run_frames`], keeps every statistics record,
//! prints progress, and stops with an error as soon as a particle turns non-finite.

use super::Plan;
use crate::engine::{batch, BuildOptions, Engine};
use crate::gpu::{GpuContext, Profiler};
use crate::scene::{Scene, SceneSetup};
use crate::sim::params::{Method, SimParams};
use crate::sim::{SimStats, Simulation};
use anyhow::{bail, Context, Result};
use glam::Vec3;
use std::time::{Duration, Instant};

/// Wall time between progress lines.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// Consecutive frames with the time step at its floor after which a run is stopped as unstable.
const FLOORED_FRAMES: usize = 60;

/// A running case simulation.
pub struct Run<'a> {
    ctx: &'a GpuContext,
    engine: Engine,
    profiler: Profiler,
    /// Every statistics record received, in order.
    pub stats: Vec<SimStats>,
    /// Simulated time reached, seconds.
    pub time: f32,
    /// Simulated seconds one frame advanced last time (for sizing the next batch of frames).
    frame_advance: f32,
    label: String,
    t_end: f32,
    /// Largest particle speed (m/s) taken for water rather than a blow-up: 50 x sqrt(2 g height).
    blow_up_speed: f32,
    /// The solver's smallest time step (1e-3 of the substep, see `time_step` in shaders/sim/time_step.wgsl), s.
    dt_floor: f32,
    started: Instant,
    last_print: Instant,
    initial_count: u32,
}

/// Parses a scene made in code; `name` names it in errors.
pub fn scene_from_ron(name: &str, text: &str) -> Result<Scene> {
    Scene::from_str(text, std::path::Path::new(name))
        .with_context(|| format!("the validation scene `{name}` is invalid"))
}

/// Parameters for `method`: the scene's solver parameters at spacing `dx`, with the plan's `--set` overrides.
/// Errors: an override that does not apply or leaves a field out of range.
pub fn params_for(plan: &Plan, scene: &Scene, dx: f32, method: Method) -> Result<SimParams> {
    let mut params = SimParams { method, dx, ..scene.solver.clone() };
    for (field, value) in &plan.overrides {
        params.set_field(field, value)?;
    }
    params.validate().context("the --set overrides leave the solver parameters out of range")?;
    Ok(params)
}

impl<'a> Run<'a> {
    /// Builds the scene's particles at `params.dx`, keeps those `keep` accepts, and uploads them.
    /// `label` prefixes progress lines; `t_end` is the simulated time the caller will run to (progress only).
    pub fn new(
        ctx: &'a GpuContext,
        scene: &Scene,
        params: &SimParams,
        keep: impl Fn(Vec3) -> bool,
        label: String,
        t_end: f32,
    ) -> Result<Self> {
        let mut scene = scene.clone();
        scene.solver = params.clone();
        let built = scene.build(false).with_context(|| format!("{label}: the scene does not build"))?;
        let (positions, velocities) = built.to_vecs();
        let (positions, velocities): (Vec<Vec3>, Vec<Vec3>) =
            positions.into_iter().zip(velocities).filter(|(p, _)| keep(*p)).unzip();
        let setup = SceneSetup::from_particles(positions, velocities, built.terrain);
        let options = BuildOptions { dx: Some(params.dx), ..BuildOptions::default() };
        let engine = Engine::with_setup(ctx, scene.clone(), &setup, options)
            .with_context(|| format!("{label}: the simulation cannot be created"))?;
        let initial_count = engine.live_particles();
        eprintln!("{label}: {initial_count} particles, dx = {} m, {} s simulated", params.dx, t_end);
        let now = Instant::now();
        Ok(Self {
            ctx,
            initial_count,
            engine,
            profiler: Profiler::new(&ctx.device),
            stats: Vec::new(),
            time: 0.0,
            frame_advance: params.frame_dt,
            label,
            t_end,
            blow_up_speed: 50.0
                * (2.0 * params.gravity[1].abs().max(1.0) * (scene.domain.max[1] - scene.domain.min[1]).max(0.1))
                    .sqrt(),
            dt_floor: 1e-3 * params.max_dt(),
            started: now,
            last_print: now,
        })
    }

    /// Advances by at least `interval` simulated seconds in whole frames (one frame when `interval` is 0)
    /// and returns the time reached. Errors when a particle became non-finite (the run is meaningless).
    pub fn advance(&mut self, interval: f32) -> Result<f32> {
        let target = self.time + interval;
        loop {
            let frames = (((target - self.time) / self.frame_advance.max(1e-7)).ceil() as u64).clamp(1, 120);
            let before = self.time;
            let stats = &mut self.stats;
            let last =
                batch::run_frames(self.ctx, self.engine.sim_mut(), &mut self.profiler, Some(frames), None, |s| {
                    stats.push(s.clone())
                })
                .context("the simulation returned no statistics")?;
            self.time = last.time;
            if self.time > before {
                self.frame_advance = (self.time - before) / frames as f32;
            }
            if let Some(bad) = self.stats.iter().rev().take(frames as usize).find(|s| s.non_finite > 0) {
                bail!(
                    "{}: {} particles became non-finite at t = {:.3} s (the simulation blew up)",
                    self.label,
                    bad.non_finite,
                    bad.time
                );
            }
            if let Some(bad) = self.stats.iter().rev().take(frames as usize).find(|s| s.max_speed > self.blow_up_speed)
            {
                bail!(
                    "{}: a particle reached {:.3e} m/s at t = {:.3} s, over {:.0} m/s (50 x the free-fall speed over the \
                     domain's height): the simulation blew up",
                    self.label,
                    bad.max_speed,
                    bad.time,
                    self.blow_up_speed
                );
            }
            // A time step held at its floor: the stability criteria see forces no step can resolve. Such a
            // run would crawl for hours (the floor is 1/1000 of a substep), so it is stopped as unstable.
            let floored = self
                .stats
                .iter()
                .rev()
                .take(FLOORED_FRAMES)
                .filter(|s| s.dt > 0.0 && s.dt <= 1.01 * self.dt_floor)
                .count();
            if floored == FLOORED_FRAMES {
                bail!(
                    "{}: the time step stayed at its floor ({:.4} ms) for {FLOORED_FRAMES} frames up to t = {:.3} s (max speed {:.2} m/s): \
                     the simulation is unstable",
                    self.label,
                    1e3 * self.dt_floor,
                    self.time,
                    last.max_speed
                );
            }
            if self.last_print.elapsed() >= PROGRESS_EVERY {
                self.last_print = Instant::now();
                eprintln!(
                    "{}: t = {:.2} / {:.2} s ({:.0} s wall), dt {:.3} ms, max speed {:.2} m/s",
                    self.label,
                    self.time,
                    self.t_end,
                    self.started.elapsed().as_secs_f64(),
                    1e3 * last.dt,
                    last.max_speed
                );
            }
            if self.time >= target - 1e-6 {
                break;
            }
        }
        Ok(self.time)
    }

    /// Blocking read-back: (positions with density in w, velocities with pressure in w).
    pub fn read(&self) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
        self.sim().read_particles_blocking(self.ctx)
    }

    /// One more step and its blocking read-back (see [`batch::step_and_read`]); the time reached and the
    /// statistics of the step are picked up by the next [`Run::advance`].
    pub fn step_and_read(&mut self) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
        batch::step_and_read(self.ctx, self.engine.sim_mut(), &mut self.profiler)
    }

    /// The case's simulation.
    pub fn sim(&self) -> &Simulation {
        self.engine.sim()
    }

    /// Largest number of particles outside the domain, below the terrain, non-finite or missing in any
    /// frame so far (0 when nothing leaked).
    pub fn leaks(&self) -> u32 {
        self.stats
            .iter()
            .map(|s| {
                s.outside_domain + s.below_terrain + s.non_finite + self.initial_count.saturating_sub(s.particle_count)
            })
            .max()
            .unwrap_or(0)
    }

    /// Prints the closing progress line.
    pub fn finish(&self) {
        eprintln!("{}: done, t = {:.2} s in {:.1} s wall", self.label, self.time, self.started.elapsed().as_secs_f64());
    }
}
