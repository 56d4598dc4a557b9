//! Headless runs (`waterview run`): load a scene, simulate a number of steps or simulated seconds with no
//! window, write a CSV of per-frame diagnostics and the final image (PNG, or with a `.exr` path an
//! OpenEXR file of the linear image: [`render_final_hdr`]). Statistics come back through the
//! simulation's asynchronous read-back ring exactly as in the window; only the end of the run waits for
//! the last of them.

use crate::cli::RunArgs;
use crate::gpu::{GpuContext, Profiler};
use crate::render::{self, OrbitCamera, ParticleSource, RenderSettings, Renderer};
use crate::scene::Scene;
use crate::sim::{SimOptions, SimStats, Simulation};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Column names of the statistics CSV, in order.
pub const CSV_HEADER: [&str; 19] = [
    "frame", "time_s", "dt_s", "particles", "mean_density_error", "max_density_error", "max_speed_m_s",
    "kinetic_energy_j", "bbox_min_x", "bbox_min_y", "bbox_min_z", "bbox_max_x", "bbox_max_y", "bbox_max_z",
    "outside_domain", "below_terrain", "non_finite", "density_iterations", "divergence_iterations",
];

/// One CSV row for `s`, matching [`CSV_HEADER`].
pub fn csv_row(s: &SimStats) -> Vec<String> {
    let mut row = vec![s.frame.to_string(), s.time.to_string(), s.dt.to_string(), s.particle_count.to_string()];
    row.extend([s.mean_density_error, s.max_density_error, s.max_speed, s.kinetic_energy].map(|v| v.to_string()));
    row.extend(s.bbox_min.iter().chain(&s.bbox_max).map(|v| v.to_string()));
    row.extend([s.outside_domain, s.below_terrain, s.non_finite, s.density_iterations, s.divergence_iterations].map(|v| v.to_string()));
    row
}

/// Loads `path`, or the built-in valley when `None`.
pub fn load_scene(path: Option<&Path>) -> Result<Scene> {
    match path {
        Some(p) => Ok(Scene::load(p)?),
        None => Scene::builtin("valley").context("the built-in valley scene is missing"),
    }
}

/// A simulation built from a scene on a context: the scene's dx (scaled on CPU adapters) unless `dx` is given.
pub fn build_simulation(ctx: &GpuContext, scene: &Scene, dx: Option<f32>) -> Result<Simulation> {
    let mut scene = scene.clone();
    let on_cpu = ctx.is_cpu() && dx.is_none();
    if let Some(dx) = dx {
        scene.solver.dx = dx;
    }
    let mut params = scene.solver.clone();
    params.dx = scene.effective_dx(on_cpu);
    let setup = scene.build(on_cpu)?;
    let volume = params.dx.powi(3);
    let options = SimOptions { pool: crate::sim::sources::pool_size(&scene.emitters, volume), ..SimOptions::default() };
    let mut sim = Simulation::new_with(ctx, &scene.domain, &setup, &params, options)?;
    sim.set_sources(ctx, &scene.emitters, &scene.sinks)?;
    Ok(sim)
}

/// Runs frames until `frames` have been simulated or the simulated time reaches `seconds`, calling
/// `on_stats` for each statistics record as it arrives (in order, possibly a few frames late).
/// At most a few frames are in flight: the CPU waits for frame k-3 before recording frame k+1,
/// which keeps memory bounded without stalling the GPU.
pub fn simulate(
    ctx: &GpuContext,
    sim: &mut Simulation,
    profiler: &mut Profiler,
    frames: Option<u64>,
    seconds: Option<f32>,
    mut on_stats: impl FnMut(&SimStats),
) -> Result<Option<SimStats>> {
    let mut last: Option<SimStats> = None;
    let mut submissions = std::collections::VecDeque::new();
    let mut frame = 0u64;
    let mut deliver = |sim: &mut Simulation, last: &mut Option<SimStats>| {
        if let Some(s) = sim.poll_stats() {
            if last.as_ref().is_none_or(|l| l.frame != s.frame) {
                on_stats(s);
                *last = Some(s.clone());
            }
        }
    };
    loop {
        let done_frames = frames.is_some_and(|f| frame >= f);
        let done_time = seconds.is_some_and(|t| last.as_ref().is_some_and(|s| s.time >= t));
        if done_frames || done_time {
            break;
        }
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("headless frame") });
        sim.encode_frame(&mut encoder, profiler);
        sim.encode_stats(&mut encoder, profiler);
        profiler.resolve(&mut encoder);
        submissions.push_back(ctx.queue.submit([encoder.finish()]));
        sim.after_submit();
        profiler.end_frame(&ctx.queue);
        frame += 1;
        if submissions.len() > 3 {
            let idx = submissions.pop_front();
            let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: idx, timeout: None });
        } else {
            let _ = ctx.device.poll(wgpu::PollType::Poll);
        }
        deliver(sim, &mut last);
    }
    // Drain the statistics still in flight.
    while sim.stats_in_flight() {
        let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
        deliver(sim, &mut last);
    }
    Ok(last)
}

/// Records and submits one simulation step (with its statistics record), waits for it and reads the
/// particles back: (positions with density in w, velocities with pressure in w). For validation and tests
/// only, never the frame loop: it stalls on the GPU. A fit of a DFSPH step's pressure (the sum of its
/// solves' kappa rho) needs consecutive steps: in the coarse 20-layer test tank it alternates by about
/// ±20 % from one step to the next (0.82, 1.15, 1.03, 0.92, 1.12 x rho0 g depth) while its mean over the
/// steps holds to 1-2 %, and a read once per frame (every `substeps`-th step) samples one phase of it.
pub fn step_and_read(ctx: &GpuContext, sim: &mut Simulation, profiler: &mut Profiler) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
    let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("one step") });
    sim.encode_step(&mut encoder, profiler);
    sim.encode_stats(&mut encoder, profiler);
    profiler.resolve(&mut encoder);
    ctx.queue.submit([encoder.finish()]);
    sim.after_submit();
    profiler.end_frame(&ctx.queue);
    let particles = sim.read_particles_blocking(ctx);
    let _ = sim.poll_stats();
    particles
}

/// `waterview run`: see [`crate::cli::RunArgs`]. Errors (bad scene, no GPU, bad parameters, unwritable
/// output) come back with their reason; the binary prints it and exits non-zero.
pub fn run(scene_path: Option<PathBuf>, args: &RunArgs) -> Result<()> {
    if args.steps.is_none() && args.seconds.is_none() {
        bail!("give --steps N or --seconds T");
    }
    if let Some(t) = args.seconds {
        if !(t.is_finite() && t > 0.0) {
            bail!("--seconds must be a positive number, got {t}");
        }
    }
    let scene = load_scene(scene_path.as_deref())?;
    let ctx = GpuContext::headless()?;
    eprintln!("adapter: {}", ctx.adapter_summary());
    let mut sim = build_simulation(&ctx, &scene, args.dx)?;
    eprintln!("scene `{}`: {} particles, dx = {} m", scene.name, sim.particle_count(), sim.params().dx);
    let substeps = sim.params().substeps as u64;
    let frames = args.steps.map(|s| s.div_ceil(substeps));
    let mut profiler = Profiler::new(&ctx.device);
    let mut writer = match &args.stats {
        Some(p) => {
            let mut w = csv::Writer::from_path(p).with_context(|| format!("cannot write {}", p.display()))?;
            w.write_record(CSV_HEADER)?;
            Some(w)
        }
        None => None,
    };
    let mut write_error = None;
    let started = std::time::Instant::now();
    let last = simulate(&ctx, &mut sim, &mut profiler, frames, args.seconds, |s| {
        if let Some(w) = writer.as_mut() {
            if let Err(e) = w.write_record(csv_row(s)) {
                write_error.get_or_insert(e);
            }
        }
    })?;
    if let Some(e) = write_error {
        bail!("writing the statistics CSV failed: {e}");
    }
    if let Some(mut w) = writer {
        w.flush()?;
    }
    let wall = started.elapsed().as_secs_f64();
    if let Some(s) = &last {
        eprintln!(
            "simulated {:.3} s in {:.2} s wall: {} particles, mean density error {:.3} %, max speed {:.2} m/s, \
             outside domain {}, below terrain {}, non-finite {}",
            s.time, wall, s.particle_count, 100.0 * s.mean_density_error, s.max_speed, s.outside_domain, s.below_terrain,
            s.non_finite
        );
    }
    let steps_per_frame = sim.params().substeps as f64;
    let total: f64 = profiler.latest().iter().map(|p| p.ms).sum();
    eprintln!("GPU time per pass (last timed frame, {steps_per_frame} steps per frame):");
    for p in profiler.latest() {
        eprintln!("  {:<12} {:9.3} ms/frame {:9.3} ms/step", p.label, p.ms, p.ms / steps_per_frame);
    }
    if total > 0.0 {
        let step_ms = total / steps_per_frame;
        eprintln!(
            "  {:<12} {:9.3} ms/frame {:9.3} ms/step  ({:.3e} particle-steps/s)",
            "total", total, step_ms, sim.particle_count() as f64 / (step_ms * 1e-3)
        );
    }
    if let Some(out) = &args.out {
        write_final_image(&ctx, &sim, &scene, args.size, out)?;
        eprintln!("wrote {}", out.display());
    }
    Ok(())
}

/// Whether `path` names an OpenEXR file (extension `.exr`, any case).
pub fn is_exr_path(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("exr"))
}

/// Renders the simulation's current state from the scene's camera at `size` pixels and writes it to
/// `out`: an OpenEXR file of the linear image ([`render_final_hdr`]) when `out` ends in `.exr`, else a
/// PNG ([`render_final`]). Both are written under a temporary name and renamed; an error names the file
/// and the cause and leaves no file behind. Blocking; headless only.
pub fn write_final_image(ctx: &GpuContext, sim: &Simulation, scene: &Scene, size: (u32, u32), out: &Path) -> Result<()> {
    let written = if is_exr_path(out) {
        crate::capture::save_exr_blocking(&render_final_hdr(ctx, sim, scene, size), out)
    } else {
        crate::capture::save_png_blocking(&render_final(ctx, sim, scene, size), out)
    };
    written.map_err(|e| anyhow::anyhow!(e))
}

/// Renders the simulation's current state from the scene's camera (blocking; headless only).
pub fn render_final(ctx: &GpuContext, sim: &Simulation, scene: &Scene, size: (u32, u32)) -> image::RgbaImage {
    let mut renderer = Renderer::new(ctx, wgpu::TextureFormat::Rgba8UnormSrgb, sim.terrain());
    let (camera, settings) = final_view(sim, scene);
    render::render_to_image(ctx, &mut renderer, &camera, Some(ParticleSource::of(sim)), &settings, size)
}

/// As [`render_final`], into a [`render::HDR_FORMAT`] target: the linear image (tone-mapped, before sRGB
/// encoding) as float RGBA, alpha 1. Encoding its values to sRGB gives [`render_final`]'s bytes (within
/// rounding). Blocking; headless only.
pub fn render_final_hdr(ctx: &GpuContext, sim: &Simulation, scene: &Scene, size: (u32, u32)) -> image::Rgba32FImage {
    let mut renderer = Renderer::new(ctx, render::HDR_FORMAT, sim.terrain());
    let (camera, settings) = final_view(sim, scene);
    render::render_to_image_hdr(ctx, &mut renderer, &camera, Some(ParticleSource::of(sim)), &settings, size)
}

/// The scene's camera and the default render settings sized to the simulation's particles.
fn final_view(sim: &Simulation, scene: &Scene) -> (OrbitCamera, RenderSettings) {
    let mut settings = RenderSettings::default();
    settings.particle.radius = sim.particle_radius();
    (OrbitCamera::from_desc(&scene.camera), settings)
}
