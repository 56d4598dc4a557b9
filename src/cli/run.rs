//! `waterview run`: load a scene through the engine, simulate a number of steps or simulated seconds with
//! no window, write a CSV of per-frame diagnostics and the final image (PNG, or with a `.exr` path an
//! OpenEXR file of the linear image). Statistics come back through the simulation's asynchronous read-back
//! ring exactly as in the window ([`batch::run_frames`]); only the end of the run waits for the last of them.

use super::RunArgs;
use crate::capture::output::{check_writable, Output};
use crate::engine::batch::ImageOptions;
use crate::engine::{self, batch, BuildOptions, Checkpoint, Engine};
use crate::gpu::{GpuContext, Profiler};
use crate::particle_io::{ParticleFormat, Particles};
use crate::scene::Scene;
use crate::sim::SimStats;
use crate::text::printable;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Column names of the statistics CSV, in order.
pub const CSV_HEADER: [&str; 19] = [
    "frame",
    "time_s",
    "dt_s",
    "particles",
    "mean_density_error",
    "max_density_error",
    "max_speed_m_s",
    "kinetic_energy_j",
    "bbox_min_x",
    "bbox_min_y",
    "bbox_min_z",
    "bbox_max_x",
    "bbox_max_y",
    "bbox_max_z",
    "outside_domain",
    "below_terrain",
    "non_finite",
    "density_iterations",
    "divergence_iterations",
];

/// One CSV row for `s`, matching [`CSV_HEADER`].
pub fn csv_row(s: &SimStats) -> Vec<String> {
    let mut row = vec![s.frame.to_string(), s.time.to_string(), s.dt.to_string(), s.particle_count.to_string()];
    row.extend([s.mean_density_error, s.max_density_error, s.max_speed, s.kinetic_energy].map(|v| v.to_string()));
    row.extend(s.bbox_min.iter().chain(&s.bbox_max).map(|v| v.to_string()));
    row.extend(
        [s.outside_domain, s.below_terrain, s.non_finite, s.density_iterations, s.divergence_iterations]
            .map(|v| v.to_string()),
    );
    row
}

/// `waterview run`: see [`RunArgs`]. Errors (bad scene, no GPU, bad parameters, unwritable output) come
/// back with their reason; the binary prints it and exits non-zero.
pub fn run(scene_path: Option<&Path>, args: &RunArgs) -> Result<()> {
    if args.steps.is_none() && args.seconds.is_none() {
        bail!("give --steps N or --seconds T");
    }
    if let Some(t) = args.seconds {
        if !(t.is_finite() && t > 0.0) {
            bail!("--seconds must be a positive number, got {t}");
        }
    }
    for path in [&args.out, &args.stats, &args.save_checkpoint].into_iter().flatten() {
        check_writable(path, Output::File)?;
    }
    if let Some(path) = &args.save_particles {
        super::check_particle_path(path)?;
    }
    args.surface_settings.settings()?;
    if let Some(path) = &args.save_surface {
        super::surface::check_surface_path(path)?;
    }
    let (mut engine, ctx, args) = match &args.resume {
        None => {
            let scene = engine::load_scene(scene_path)?;
            let ctx = GpuContext::headless()?;
            eprintln!("adapter: {}", ctx.adapter_summary());
            let engine = Engine::new(&ctx, scene, BuildOptions { dx: args.dx, ..BuildOptions::default() })?;
            (engine, ctx, args.clone())
        }
        Some(path) => {
            let scene = scene_path.map(Scene::load).transpose()?;
            let ctx = GpuContext::headless()?;
            eprintln!("adapter: {}", ctx.adapter_summary());
            let checkpoint = Checkpoint::read_for(&ctx, path)?;
            let engine = Engine::resume(&ctx, scene, &checkpoint, BuildOptions::default())?;
            eprintln!(
                "resumed {} at t = {} s after {} steps ({} particles with the emitters' pool)",
                path.display(),
                checkpoint.time(),
                checkpoint.steps(),
                checkpoint.capacity()
            );
            // --seconds counts from the checkpoint's time.
            let seconds = args.seconds.map(|t| checkpoint.time() + t);
            (engine, ctx, RunArgs { seconds, ..args.clone() })
        }
    };
    let args = &args;
    if args.save_surface.is_some() {
        // The memory the last frame's surface will take, before the run (the emitters' pool included).
        args.surface_settings.settings()?.check(engine.sim().capacity() as usize)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // The first Ctrl-C (or SIGTERM) ends the run at the next frame, keeping its outputs; a second quits.
    let handler = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
        eprintln!("stopping at the next frame (Ctrl-C again quits at once)");
    });
    if let Err(e) = handler {
        log::warn!("Ctrl-C will quit at once: {e}");
    }
    simulate(&ctx, &mut engine, args, &stop)
}

/// The part of [`run`] after the build: simulates `engine` for `args.steps` or `args.seconds` (or until
/// `stop` is set: the outputs are written as at the end), writing the statistics CSV as records arrive
/// and a progress line every [`PROGRESS_EVERY_S`] seconds, then prints the summary and the GPU times and
/// writes the image and the particles.
/// Errors: the simulation blew up (the CSV keeps the frames up to it; no image is written), or an output
/// could not be written.
pub fn simulate(ctx: &GpuContext, engine: &mut Engine, args: &RunArgs, stop: &AtomicBool) -> Result<()> {
    let (scene, sim) = (engine.scene(), engine.sim());
    eprintln!("scene `{}`: {} particles, dx = {} m", printable(&scene.name), sim.live_particles(), sim.params().dx);
    let substeps = sim.params().substeps as u64;
    let frames = args.steps.map(|s| s.div_ceil(substeps));
    let mut profiler = Profiler::new(&ctx.device);
    let mut writer = match &args.stats {
        Some(p) => {
            // Opened without blocking: a FIFO (with no reader) never stalls the run (nor its Ctrl-C).
            let file = crate::files::create(p).with_context(|| format!("cannot write {}", p.display()))?;
            let mut w = csv::Writer::from_writer(file);
            w.write_record(CSV_HEADER)?;
            Some(w)
        }
        None => None,
    };
    let mut write_error = None;
    let started = std::time::Instant::now();
    let mut next_progress = PROGRESS_EVERY_S;
    let device = ctx.device.clone();
    let last = batch::run_frames_until(ctx, engine.sim_mut(), &mut profiler, frames, args.seconds, stop, |s| {
        if let Some(w) = writer.as_mut() {
            if let Err(e) = w.write_record(csv_row(s)) {
                write_error.get_or_insert(e);
            }
        }
        let wall = started.elapsed().as_secs_f64();
        if wall >= next_progress {
            eprintln!("{}", progress_line(wall, s, &device));
            next_progress = wall + PROGRESS_EVERY_S;
        }
    });
    // A GPU error (a lost device) ends the frames without statistics: say so rather than report them.
    ctx.check("the run")?;
    if let Some(e) = write_error {
        bail!("writing the statistics CSV failed: {e}");
    }
    if let Some(mut w) = writer {
        w.flush()?;
    }
    let wall = started.elapsed().as_secs_f64();
    if stop.load(Ordering::Relaxed) {
        eprintln!("stopped early, as asked");
    }
    if let Some(s) = &last {
        eprintln!(
            "simulated {:.3} s in {:.2} s wall: {} particles, mean density error {:.3} %, max speed {:.2} m/s, \
             outside domain {}, below terrain {}, non-finite {}",
            s.time,
            wall,
            s.particle_count,
            100.0 * s.mean_density_error,
            s.max_speed,
            s.outside_domain,
            s.below_terrain,
            s.non_finite
        );
        let d = &s.diffuse;
        if d.count > 0 {
            eprintln!("diffuse particles {}: spray {}, foam {}, bubbles {}", d.count, d.spray, d.foam, d.bubbles);
        }
    }
    print_pass_times(&profiler, engine.live_particles());
    if let Some(blow_up) = engine.sim().blow_up() {
        bail!("{blow_up}");
    }
    if let Some(path) = &args.save_checkpoint {
        let checkpoint = engine.checkpoint_blocking(ctx)?;
        checkpoint.write(path)?;
        eprintln!(
            "wrote checkpoint {}: t = {} s after {} steps, {} particles with the emitters' pool",
            path.display(),
            checkpoint.time(),
            checkpoint.steps(),
            checkpoint.capacity()
        );
    }
    if let Some(out) = &args.out {
        write_image_as(ctx, engine, args.size, args.image(), out)?;
        eprintln!("wrote {}", out.display());
    }
    if args.save_particles.is_none() && args.save_surface.is_none() {
        return Ok(());
    }
    let (pos, vel) = engine.sim().try_read_particles_blocking(ctx)?;
    let particles = Particles::from_state(&pos, &vel);
    let time = engine.sim().step_state_blocking(ctx)?.time;
    if let Some(path) = &args.save_particles {
        let format = ParticleFormat::of_path(path).unwrap_or_default();
        crate::particle_io::write(path, &particles, format, time)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &args.save_surface {
        let settings = args.surface_settings.settings()?;
        let domain = engine.sim().domain();
        let input = super::surface::SurfaceInput {
            positions: &particles.positions,
            dx: engine.params().dx,
            walls: (domain.min, domain.max),
            time,
        };
        super::surface::save_surface(path, &input, &settings)?;
    }
    Ok(())
}

/// Seconds of wall clock between progress lines of a long run.
pub const PROGRESS_EVERY_S: f64 = 10.0;

/// A long run's progress after `wall` seconds at statistics `s`: simulated time, particles, the particles
/// lost (non-finite, outside the domain, below the terrain: all 0 in a healthy run), this process's
/// resident memory and what the GPU's allocator holds (Vulkan and DX12), for soaks (README "Long runs").
fn progress_line(wall: f64, s: &SimStats, device: &wgpu::Device) -> String {
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let resident = crate::process::resident_bytes().map_or("?".into(), |b| format!("{:.0}", mb(b)));
    let gpu = device.generate_allocator_report().map_or("?".into(), |r| {
        format!("{:.0} MB allocated, {:.0} MB reserved", mb(r.total_allocated_bytes), mb(r.total_reserved_bytes))
    });
    format!(
        "progress: {wall:.0} s wall, t = {:.2} s: {} particles, non-finite {}, outside {}, below terrain {}; \
         process memory {resident} MB; GPU memory {gpu}",
        s.time, s.particle_count, s.non_finite, s.outside_domain, s.below_terrain
    )
}

/// Prints the GPU time per pass of the last timed frame and their sum, per frame and per step, then that
/// frame's GPU span (first to last timestamp, idle gaps included); nothing when no frame was timed (no
/// timestamp queries, or a run shorter than the profiler's latency).
fn print_pass_times(profiler: &Profiler, particles: u32) {
    let frame = profiler.latest_frame();
    let passes = &frame.passes;
    if passes.is_empty() {
        eprintln!("GPU time per pass: no frame timed (no timestamp queries, or a run shorter than their read-back)");
        return;
    }
    let steps_per_frame = crate::sim::frame_steps::steps_in(passes).max(1) as f64;
    eprintln!("GPU time per pass (last timed frame, {steps_per_frame} steps per frame):");
    for p in passes {
        eprintln!("  {:<15} {:9.3} ms/frame {:9.3} ms/step", p.label, p.ms, p.ms / steps_per_frame);
    }
    let total: f64 = passes.iter().map(|p| p.ms).sum();
    let step_ms = total / steps_per_frame;
    let rate = particles as f64 / (step_ms * 1e-3);
    eprintln!("  {:<15} {total:9.3} ms/frame {step_ms:9.3} ms/step  ({rate:.3e} particle-steps/s)", "total");
    if let Some(span) = frame.span_ms() {
        eprintln!(
            "  {:<15} {span:9.3} ms/frame                    (first to last timestamp, idle gaps included)",
            "GPU span"
        );
    }
}

/// Renders the engine's current state from the scene's camera at `size` pixels and writes it to `out`: an
/// OpenEXR file of the linear image ([`batch::render_image_hdr`]) when `out` ends in `.exr` (any case),
/// else a PNG ([`batch::render_image`]). Written under a temporary name and renamed; an error names the
/// file and the cause and leaves no file behind, a GPU error while rendering (the device's report)
/// included. Blocking; headless only.
pub fn write_image(ctx: &GpuContext, engine: &Engine, size: (u32, u32), out: &Path) -> Result<()> {
    write_image_as(ctx, engine, size, ImageOptions::default(), out)
}

/// As [`write_image`], showing what `options` ask for (a view of an intermediate target, another depth
/// filter).
pub fn write_image_as(
    ctx: &GpuContext,
    engine: &Engine,
    size: (u32, u32),
    options: ImageOptions,
    out: &Path,
) -> Result<()> {
    let exr = crate::capture::is_exr(out);
    // An image the GPU refused to render (a target past its size limits: 8192 pixels a side on lavapipe)
    // reads back black: the device's errors are checked before anything is written, as `capture` does.
    let what = format!("rendering the image {}", out.display());
    if exr {
        let image = batch::render_image_hdr_as(ctx, engine, size, options);
        ctx.check(&what)?;
        crate::capture::save_exr_blocking(&image, out)?;
    } else {
        let image = batch::render_image_as(ctx, engine, size, options);
        ctx.check(&what)?;
        crate::capture::save_png_blocking(&image, out)?;
    }
    Ok(())
}
