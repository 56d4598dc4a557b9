//! Times simulation steps with the per-particle arrays in one storage binding and split over several
//! (src/gpu/split.rs): the cost of the split path's accessors on the GPU at hand.
//!
//! `cargo run --release --example split_cost -- PARTICLES [CHUNKS] [FRAMES] [RUNS]` (defaults: 1000000 3
//! 10 4): the dam break (assets/scenes/dam_break.ron) at the spacing that gives about PARTICLES particles,
//! RUNS runs alternating between the device's chunk length and one lowered so the arrays take CHUNKS
//! chunks; prints the wall time per step (submission to completion over FRAMES frames after 3 warm-up
//! frames), the last step's DFSPH iterations and dt, and the centroid and kinetic energy of each run.
//! With RUNS = 1 it runs once at the device's chunk length: a simulation stepped alone, without the
//! renderer or the engine's limits (`engine::particle_limit`).

use anyhow::Context;
use std::time::Instant;
use waterview::engine::batch::run_frames;
use waterview::gpu::{split, GpuContext, Profiler};
use waterview::scene::Scene;
use waterview::sim::{SimOptions, SimParams, Simulation};

/// (ms per step, centroid, kinetic energy per unit mass) of `frames` frames after 3 warm-up frames.
fn time(ctx: &GpuContext, scene: &Scene, frames: u64) -> anyhow::Result<(f64, [f64; 3], f64, usize, String)> {
    let setup = scene.build(false)?;
    let params = SimParams { dx: scene.solver.dx, ..scene.solver.clone() };
    let mut sim = Simulation::new_with(ctx, &scene.domain, &setup, &params, SimOptions::default())?;
    let mut profiler = Profiler::new(&ctx.device);
    run_frames(ctx, &mut sim, &mut profiler, Some(3), None, |_| {});
    let start = Instant::now();
    run_frames(ctx, &mut sim, &mut profiler, Some(frames), None, |_| {});
    ctx.device.poll(wgpu::PollType::wait_indefinitely())?;
    let ms = start.elapsed().as_secs_f64() * 1e3 / (frames * params.substeps as u64) as f64;
    let state = sim.step_state_blocking(ctx)?;
    let last = format!(
        "{} density + {} divergence iterations, dt {} ms",
        state.density_iterations,
        state.divergence_iterations,
        state.dt * 1e3
    );
    let (pos, vel) = sim.read_particles_blocking(ctx);
    let n = pos.iter().filter(|p| p[3] >= 0.0).count() as f64;
    let mut c = [0.0f64; 3];
    let mut e = 0.0f64;
    for (p, v) in pos.iter().zip(&vel).filter(|(p, _)| p[3] >= 0.0) {
        for a in 0..3 {
            c[a] += p[a] as f64 / n;
            e += 0.5 * (v[a] as f64).powi(2) / n;
        }
    }
    Ok((ms, c, e, sim.positions().chunks().len(), last))
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| args.get(i).map(|s| s.parse::<u64>()).transpose().map(|v| v.unwrap_or(default));
    let (particles, chunks, frames, runs) = (arg(0, 1_000_000)?, arg(1, 3)?, arg(2, 10)?, arg(3, 4)?);
    let ctx = GpuContext::headless()?;
    let mut scene = Scene::load(std::path::Path::new("assets/scenes/dam_break.ron")).context("dam break")?;
    let dx = scene.solver.dx * (scene.estimate_particle_count_at(scene.solver.dx) as f32 / particles as f32).cbrt();
    scene = scene.at_dx(dx);
    println!("{} ({}), dx {dx} m", ctx.adapter_summary(), scene.estimate_particle_count_at(dx));
    for lowered in (0..runs).map(|r| r % 2 == 1) {
        let per = if lowered { (particles.div_ceil(chunks) as u32).div_ceil(split::ALIGN) * split::ALIGN } else { 0 };
        split::set_per_binding(per);
        let (ms, c, e, k, last) = time(&ctx, &scene, frames)?;
        println!("{k} chunk(s): {ms:.3} ms/step (last step: {last}), centroid {c:?}, kinetic energy {e} m^2/s^2");
    }
    Ok(())
}
