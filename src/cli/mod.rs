//! Command-line interface (clap), the edge of the program: it parses the arguments, turns them into the
//! plain options of each front end and runs it ([`fn@run`]). No subcommand opens the window (with
//! [`WindowArgs`], e.g. a recording from the first frame); `run` simulates headless ([`mod@run`]); `bench`
//! measures per-pass GPU times over particle counts and workgroup sizes (see `docs/performance.md`);
//! `capture` records a video headless at a fixed step, or (`--record-cost`) measures what live recording
//! costs the frame rate; `validate` runs the physical checks. Nothing below this module knows clap.

pub mod mpi;
pub mod multi;
pub mod run;
pub mod surface;

use crate::capture::offline::OfflineOptions;
use crate::capture::particles::{ParticleOutput, SurfaceOutput};
use crate::capture::record_cost::RecordCostOptions;
use crate::particle_io::ParticleFormat;
use crate::validate::{parse_case, parse_override, parse_solver, Cases, Solvers};
use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Runs what the command line asks for: the window, or a headless command. Errors come back with their
/// reason (the binary prints it and exits non-zero).
pub fn run(cli: Cli) -> Result<()> {
    if cli.command.is_some() && cli.window.any() {
        bail!("--window-size, --gpus (before a subcommand) and the --record options apply to the window only (give them without a subcommand)");
    }
    if let Some(size) = crate::cluster::launch::launched_size_from_env().filter(|&n| n > 1) {
        return mpi::run_launched(size, cli);
    }
    match cli.command {
        None => crate::app::run(cli.scene, &cli.window.options()),
        Some(Command::Run(args)) if crate::cluster::devices::resolve(args.gpus) > 1 => {
            run_multi(cli.scene.as_deref(), &args)
        }
        Some(Command::Run(args)) => run::run(cli.scene.as_deref(), &args),
        Some(Command::Validate(_)) if cli.scene.is_some() => {
            bail!("validate runs its own scenes (tank, dam break, sloshing); --scene does not apply")
        }
        Some(Command::Validate(args)) => crate::validate::run(&args.plan(), args.strict),
        Some(Command::Bench(args)) if args.loopback => {
            if crate::cluster::devices::resolve(args.gpus) > 1 {
                bail!("--loopback runs on one GPU: leave out --gpus");
            }
            let scene = crate::engine::load_scene(cli.scene.as_deref())?;
            crate::bench::loopback::run(&scene, &args.particles, args.warmup as u64, args.frames as u64, &args.out)
        }
        Some(Command::Bench(args)) if crate::cluster::devices::resolve(args.gpus) > 1 => {
            bench_multi(cli.scene.as_deref(), &args)
        }
        Some(Command::Bench(args)) => {
            use crate::bench::gate;
            let tolerances = gate::Tolerances { time: args.tolerance, ..Default::default() };
            let baseline = args.baseline.as_deref().map(|b| Ok::<_, anyhow::Error>((b, gate::read_baseline(b)?)));
            let baseline = baseline.transpose()?;
            crate::bench::run(cli.scene.as_deref(), &args.plan(), &args.out)?;
            match baseline {
                Some((path, text)) => gate::gate(&args.out, path, &text, &tolerances),
                None => Ok(()),
            }
        }
        Some(Command::Capture(a)) if crate::cluster::devices::resolve(a.gpus) > 1 => {
            let ranks = crate::cluster::devices::resolve(a.gpus);
            multi::capture(cli.scene.as_deref(), a, ranks)
        }
        Some(Command::Capture(a)) if a.record_cost => crate::capture::record_cost::record_cost_cli(
            cli.scene.as_deref(),
            &RecordCostOptions {
                frames: a.frames,
                warmup: a.warmup,
                rounds: a.rounds,
                size: a.size,
                fps: a.fps,
                dx: a.dx,
                out: a.out,
            },
        ),
        Some(Command::Capture(a)) => {
            let particles = a.particles.map(|dir| ParticleOutput { dir, format: a.particle_format });
            let settings = a.surface_settings.settings()?;
            let surface = a.surface.map(|dir| SurfaceOutput { dir, format: a.surface_format, settings });
            if a.out.is_none() && particles.is_none() && surface.is_none() {
                bail!("give --out VIDEO.mp4 (or a folder for PNGs), --particles DIR, --surface DIR, or several");
            }
            crate::capture::offline::run_cli(
                cli.scene.as_deref(),
                &OfflineOptions {
                    seconds: a.seconds,
                    fps: a.fps,
                    size: a.size,
                    out: a.out,
                    particles,
                    surface,
                    dx: a.dx,
                    image: crate::engine::batch::ImageOptions {
                        view: a.view,
                        depth_filter: a.depth_filter,
                        ..Default::default()
                    },
                },
            )
        }
    }
}

/// `waterview run --gpus N` with N > 1 (src/cluster): the final image drawn sort-last, the particles and
/// the surface gathered on rank 0, the checkpoint written by rank 0 and resumed on every rank
/// ([`multi::MultiRun`]); `--stats` is the per-rank CSV
/// ([`multi::CSV_HEADER`]).
fn run_multi(scene: Option<&std::path::Path>, args: &RunArgs) -> Result<()> {
    let opts = multi_run_options(args, crate::cluster::devices::resolve(args.gpus), true)?;
    let summary = multi::run(scene, &opts)?;
    println!("{}", multi::summary_markdown(&summary));
    Ok(())
}

/// What `run` on `ranks` ranks does (threads or MPI); the outputs are checked where they are written
/// (`root`: rank 0's process). Errors: options that need one GPU, no length, a bad length or an
/// unwritable output.
fn multi_run_options(args: &RunArgs, ranks: usize, root: bool) -> Result<multi::MultiRun<'_>> {
    for path in [&args.out, &args.save_checkpoint].into_iter().flatten().filter(|_| root) {
        crate::capture::output::check_writable(path, crate::capture::output::Output::File)?;
    }
    if args.steps.is_none() && args.seconds.is_none() {
        bail!("give --steps N or --seconds T");
    }
    if let Some(t) = args.seconds {
        if !(t.is_finite() && t > 0.0) {
            bail!("--seconds must be a positive number, got {t}");
        }
    }
    if let (Some(p), true) = (&args.stats, root) {
        crate::capture::output::check_writable(p, crate::capture::output::Output::File)?;
    }
    if let (Some(p), true) = (&args.save_particles, root) {
        check_particle_path(p)?;
    }
    let surface_settings = args.surface_settings.settings()?;
    if let (Some(p), true) = (&args.save_surface, root) {
        surface::check_surface_path(p)?;
    }
    Ok(multi::MultiRun {
        ranks,
        dx: args.dx,
        steps: args.steps,
        seconds: args.seconds,
        warmup: 0,
        csv: args.stats.as_deref(),
        particles: args.save_particles.as_deref(),
        surface: args.save_surface.as_deref().map(|p| (p, surface_settings)),
        image: args.out.as_deref().map(|p| (p, args.size, args.image())),
        save_checkpoint: args.save_checkpoint.as_deref(),
        resume: args.resume.as_deref(),
    })
}

/// `--save-particles PATH`: a `.ply` or `.vtu` file that can be written. Errors: another extension, or
/// the file cannot be written.
pub fn check_particle_path(path: &std::path::Path) -> Result<()> {
    if crate::particle_io::ParticleFormat::of_path(path).is_none() {
        bail!("--save-particles {}: give a .ply or .vtu file", path.display());
    }
    crate::capture::output::check_writable(path, crate::capture::output::Output::File)?;
    Ok(())
}

/// `waterview bench --gpus N` with N > 1: the scene's own count, `--warmup` then `--frames` steps timed;
/// writes `cluster.csv` (every step, every rank) and `cluster.md` into `--out`.
fn bench_multi(scene: Option<&std::path::Path>, args: &BenchArgs) -> Result<()> {
    let csv = bench_prepare(args, true)?;
    let opts = multi_bench_options(args, crate::cluster::devices::resolve(args.gpus), &csv);
    let summary = multi::run(scene, &opts)?;
    bench_report(args, &summary)
}

/// Checks `bench`'s options for several ranks and (when `root`, the rank that writes) makes the `--out`
/// folder; the path of its CSV. Errors: options that need one GPU, the folder.
fn bench_prepare(args: &BenchArgs, root: bool) -> Result<PathBuf> {
    if !args.particles.is_empty() || args.sweep {
        bail!("--particles and --sweep need one GPU for now: several GPUs bench the scene's own count");
    }
    if root {
        crate::capture::output::check_writable(&args.out, crate::capture::output::Output::Folder)?;
        std::fs::create_dir_all(&args.out).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", args.out.display()))?;
    }
    Ok(args.out.join("cluster.csv"))
}

/// What `bench` on `ranks` ranks does (threads or MPI), its CSV at `csv`.
fn multi_bench_options<'a>(args: &BenchArgs, ranks: usize, csv: &'a std::path::Path) -> multi::MultiRun<'a> {
    multi::MultiRun {
        ranks,
        dx: None,
        steps: Some(args.frames as u64),
        seconds: None,
        warmup: args.warmup as u64,
        csv: Some(csv),
        particles: None,
        surface: None,
        image: None,
        save_checkpoint: None,
        resume: None,
    }
}

/// Writes `cluster.md` into `--out` and prints it. Errors: the file.
fn bench_report(args: &BenchArgs, summary: &multi::MultiSummary) -> Result<()> {
    let md = multi::summary_markdown(summary);
    let path = args.out.join("cluster.md");
    std::fs::write(&path, &md).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    println!("{md}");
    eprintln!("wrote {}", args.out.display());
    Ok(())
}

/// Real-time GPU SPH water over real terrain.
#[derive(Debug, Parser)]
#[command(name = "waterview", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Scene file (.ron): the scene the window opens, or `run`, `bench` and `capture` simulate (default:
    /// the built-in valley flood). `validate` runs its own scenes.
    #[arg(long, global = true)]
    pub scene: Option<PathBuf>,
    /// Options of the window (without a subcommand only).
    #[command(flatten)]
    pub window: WindowArgs,
}

/// Options of the window (no subcommand): its size, and a live recording started with the first frame,
/// e.g. `--record demo.mp4 --record-seconds 10 --quit-after-record` for a scripted video or a test.
#[derive(Clone, Debug, Default, Args)]
pub struct WindowArgs {
    /// Inner size of the window, WIDTHxHEIGHT physical pixels (default: the size of the last run).
    #[arg(long, value_parser = parse_size)]
    pub window_size: Option<(u32, u32)>,
    /// Record the window (without the UI) from the first frame on, as live recording (F9) does: `.mp4`
    /// writes H.264 MP4, any other path a folder of numbered PNGs.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Stop that recording after this many seconds of wall time (default: F9 or closing the window stops
    /// it); the first frame is always recorded.
    #[arg(long, requires = "record", value_parser = parse_seconds)]
    pub record_seconds: Option<f64>,
    /// Most frames per second the recording keeps (2 ..= 240; default: the Capture panel's setting).
    #[arg(long, requires = "record", value_parser = parse_fps)]
    pub record_fps: Option<f32>,
    /// Quit once the recording's file is complete: exit status 0 when it was written, 1 with the reason
    /// when it was not.
    #[arg(long, requires = "record")]
    pub quit_after_record: bool,
    /// GPUs to decompose the window's simulation over, N or `all` (every discrete GPU; see `run --gpus`):
    /// one wgpu device each, the window's GPU as rank 0, drawn sort-last; the simulation panel's GPUs field
    /// changes it. Emitters and sinks need one GPU.
    #[arg(long)]
    pub gpus: Option<crate::cluster::GpuCount>,
}

impl WindowArgs {
    /// True when any option is set (they apply to the window only, not to a subcommand).
    pub fn any(&self) -> bool {
        self.window_size.is_some()
            || self.record.is_some()
            || self.record_seconds.is_some()
            || self.record_fps.is_some()
            || self.quit_after_record
            || self.gpus.is_some()
    }

    /// The window's options.
    pub fn options(&self) -> crate::app::WindowOptions {
        crate::app::WindowOptions {
            window_size: self.window_size,
            record: self.record.clone(),
            record_seconds: self.record_seconds,
            record_fps: self.record_fps,
            quit_after_record: self.quit_after_record,
            gpus: self.gpus.map_or(1, crate::cluster::devices::resolve),
        }
    }
}

// clap value parsers: their message is shown by clap as is (the command line is an edge of the program,
// so these return `String` rather than an error type).

/// Parses a positive, finite number of seconds.
fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// Parses a tolerance, a fraction in 0 ..= 10.
fn parse_tolerance(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=10.0).contains(&v) => Ok(v),
        _ => Err(format!("tolerance `{s}` must be a fraction in 0 ..= 10 (0.05 = 5 %)")),
    }
}

/// Parses a frame rate in 2 ..= 240 frames per second.
fn parse_fps(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if (2.0..=240.0).contains(&v) => Ok(v),
        _ => Err(format!("frame rate `{s}` must be a number in 2 ..= 240")),
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scene headless (no window): write the final image and a CSV of per-frame diagnostics.
    Run(RunArgs),
    /// Benchmark headless: per-pass GPU time per step over particle counts and workgroup sizes;
    /// writes bench.csv, bench.md and bench.png into --out.
    Bench(BenchArgs),
    /// Record a video headless at a fixed step: every frame advances exactly 1/fps simulated seconds,
    /// rendered at --size however long it takes; `.mp4` writes H.264 MP4, any other --out a folder of
    /// numbered PNGs; --particles DIR writes each frame's particles (PLY or VTU). With --record-cost:
    /// measure what live recording costs the frame rate instead.
    Capture(CaptureArgs),
    /// Physical validation headless (hydrostatic tank, dam-break front vs Lobovsky et al. 2014, density error
    /// vs iterations, sloshing energy) per solver; writes a CSV and a PNG per case and summary.md.
    Validate(ValidateArgs),
}

/// Arguments of `waterview validate`.
#[derive(Clone, Debug, Args)]
pub struct ValidateArgs {
    /// Cases to run, comma-separated: hydrostatic, dam_break, iterations, energy or all.
    #[arg(long = "case", value_delimiter = ',', default_value = "all", value_parser = parse_case)]
    pub cases: Vec<Cases>,
    /// Solvers to run each case with, comma-separated: dfsph, pcisph, wcsph or all.
    #[arg(long = "solver", value_delimiter = ',', default_value = "all", value_parser = parse_solver)]
    pub solvers: Vec<Solvers>,
    /// Small resolutions and short times (minutes on a CPU adapter); the default sizes are for a GPU.
    #[arg(long)]
    pub quick: bool,
    /// Output folder (created if missing): one CSV and one PNG per case, and summary.md.
    #[arg(long, default_value = "validation-out")]
    pub out: PathBuf,
    /// Exit non-zero when any figure misses its target (by default only errors do).
    #[arg(long)]
    pub strict: bool,
    /// Solver parameters every case runs with instead of its own, comma-separated FIELD=VALUE pairs
    /// (any scalar solver field but method and dx)
    /// with the scene files' field names (e.g. `viscosity=0.0005,xsph=0.02`); the figures then show
    /// what the change does. Cases that sweep a field (iterations) still set it themselves.
    #[arg(long = "set", value_delimiter = ',', value_parser = parse_override)]
    pub overrides: Vec<(String, String)>,
}

impl ValidateArgs {
    /// The validation plan of these arguments (cases and solvers in order, without repeats).
    pub fn plan(&self) -> crate::validate::Plan {
        crate::validate::Plan {
            cases: crate::validate::dedup(self.cases.iter().flat_map(|c| c.0.iter().copied())),
            solvers: crate::validate::dedup(self.solvers.iter().flat_map(|s| s.0.iter().copied())),
            quick: self.quick,
            out: self.out.clone(),
            overrides: self.overrides.clone(),
        }
    }
}

/// Arguments of `waterview capture` (the scene comes from the global `--scene`).
#[derive(Clone, Debug, Args)]
pub struct CaptureArgs {
    /// Simulated seconds to record.
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    pub seconds: f32,
    /// Video frames per simulated second (2 ..= 240); with --record-cost, the most frames per second of
    /// wall time the live recording keeps.
    #[arg(long, default_value_t = 30.0, allow_negative_numbers = true)]
    pub fps: f32,
    /// Video size WIDTHxHEIGHT.
    #[arg(long, default_value = "1920x1080", value_parser = parse_size)]
    pub size: (u32, u32),
    /// Output: a `.mp4` file, or a folder for a PNG sequence (with --record-cost: where the measurement's
    /// video goes before it is deleted; default a temporary file).
    #[arg(long, required_unless_present_any = ["record_cost", "particles", "surface"])]
    pub out: Option<PathBuf>,
    /// Also (or, without --out, only) write the particles of every frame into this new folder:
    /// `particles_00000.ply`, ... (file k holds the live particles at exactly k / fps simulated seconds,
    /// its time in the file), as binary PLY or VTU (--particle-format).
    #[arg(long, conflicts_with = "record_cost")]
    pub particles: Option<PathBuf>,
    /// Format of the --particles files: `ply` (binary little-endian, float x y z vx vy vz density; Houdini,
    /// Blender, ParaView) or `vtu` (VTK XML unstructured grid with a `particles.pvd` collection; ParaView).
    #[arg(long, default_value = "ply", requires = "particles", value_parser = parse_particle_format)]
    pub particle_format: ParticleFormat,
    /// Also (or alone) write the water's surface of every frame into this new folder: `surface_00000.ply`,
    /// ... (mesh k is the surface of the live particles at exactly k / fps simulated seconds, its time in
    /// the file), reconstructed on the CPU by splashsurf_lib (marching cubes over the particles' SPH
    /// density; the --surface-* settings), as binary PLY with vertex normals or OBJ (--surface-format).
    /// One GPU only for now.
    #[arg(long, conflicts_with = "record_cost")]
    pub surface: Option<PathBuf>,
    /// Format of the --surface meshes: `ply` (binary little-endian, float x y z nx ny nz, uint faces;
    /// Blender, Houdini, ParaView) or `obj` (text, with vertex normals).
    #[arg(long, default_value = "ply", requires = "surface")]
    pub surface_format: crate::surface::MeshFormat,
    #[command(flatten)]
    pub surface_settings: surface::SurfaceArgs,
    /// Measure what live recording costs instead of capturing: render the same --frames frames at --size
    /// with and without the recording path (staging ring, read-back, H.264 encoder thread), --rounds runs
    /// of each, alternating, and print ms per frame both ways (wall clock, and CPU time on Linux; medians
    /// over the runs) and the frame rate lost, in percent.
    #[arg(long)]
    pub record_cost: bool,
    /// --record-cost: timed frames per run.
    #[arg(long, default_value_t = 20, requires = "record_cost", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub frames: u32,
    /// --record-cost: untimed frames before each run.
    #[arg(long, default_value_t = 5, requires = "record_cost", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub warmup: u32,
    /// --record-cost: runs of each kind (without and with recording), alternating.
    #[arg(long, default_value_t = 3, requires = "record_cost", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Override the scene's particle spacing dx (metres).
    #[arg(long, allow_negative_numbers = true)]
    pub dx: Option<f32>,
    /// What the video shows: final, depth, smoothed, thickness, normals, tiles or spheres (as `run --view`).
    #[arg(long, default_value = "final", value_parser = parse_view, conflicts_with = "record_cost")]
    pub view: crate::render::FluidView,
    /// The filter that smooths the water's depth: curvature-flow or narrow-range (as `run --depth-filter`).
    #[arg(long, value_parser = parse_depth_filter, conflicts_with = "record_cost")]
    pub depth_filter: Option<crate::render::DepthFilter>,
    /// GPUs to decompose the simulation over (`all`: every discrete GPU; see `run --gpus`): each renders
    /// its own particles' depth and thickness, composited sort-last on the first, which writes the video.
    /// Several GPUs capture no --particles, no scene with emitters or sinks and no --view spheres
    /// (refused), and draw no foam or spray, no wet ground and no wave maker's paddle.
    #[arg(long, default_value = "1")]
    pub gpus: crate::cluster::GpuCount,
}

/// Arguments of `waterview bench` (the scene comes from the global `--scene`).
#[derive(Clone, Debug, Args)]
pub struct BenchArgs {
    /// Target particle counts, comma-separated (e.g. 100000,200000 or 100k,1M); the scene's dx is scaled
    /// to reach each. Default: the scene's own count on this adapter.
    #[arg(long, value_parser = parse_count, value_delimiter = ',', conflicts_with = "sweep")]
    pub particles: Vec<u64>,
    /// Double the particle count from about 1 000 until a step takes over a second, the GPU refuses
    /// the size, or --max-particles is passed; reports the log-log slope of ms per step against N.
    #[arg(long)]
    pub sweep: bool,
    /// Threads per workgroup of the simulation kernels, comma-separated powers of two (e.g. 32,64,128,256);
    /// every particle count is run at each.
    #[arg(long, value_parser = parse_workgroup_size, value_delimiter = ',', default_value = "128")]
    pub workgroup_sizes: Vec<u32>,
    /// Timed frames per configuration (each frame = `substeps` steps plus one render).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub frames: u32,
    /// Untimed frames run first in each configuration.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub warmup: u32,
    /// Time frames until this many simulated seconds have passed after the warm-up (at most --frames
    /// frames), for the real-time factor of a scene's first seconds (e.g. --warmup 0 --seconds 0.5
    /// --frames 100000).
    #[arg(long, value_parser = parse_seconds)]
    pub seconds: Option<f64>,
    /// Size of the off-screen render target, WIDTHxHEIGHT.
    #[arg(long, default_value = "1920x1080", value_parser = parse_size)]
    pub size: (u32, u32),
    /// Largest particle count the sweep tries.
    #[arg(long, default_value = "16M", value_parser = parse_count)]
    pub max_particles: u64,
    /// Neighbour-grid cells per support radius: 1 (cells of 2h, 9 rows of 3 cells), 2 (cells of h, 25 rows
    /// of 5) or 3. An optimisation experiment; the default is what the app uses.
    #[arg(long, default_value_t = crate::sim::CELL_SPLIT, value_parser = clap::value_parser!(u32).range(1..=3))]
    pub cell_split: u32,
    /// Cells of the neighbour grid's folded table per particle (an optimisation experiment; the app uses
    /// the default).
    #[arg(long, default_value_t = crate::sim::CELLS_PER_PARTICLE, value_parser = parse_cells_per_particle)]
    pub cells_per_particle: f64,
    /// Submit every simulation step separately (with a wait) instead of one submission per frame, to
    /// measure the per-submission overhead in the wall-clock column.
    #[arg(long)]
    pub submit_per_step: bool,
    /// Frames of the scene's `substeps` steps each, as before frames followed the simulated time (by
    /// default a frame takes the steps that cover the scene's `frame_dt`, as the window does), to compare
    /// with runs of that time.
    #[arg(long)]
    pub fixed_substeps: bool,
    /// How the fluid's splats are drawn: `raster` (instanced quads) or `compute` (per-pixel atomics, the
    /// app's default).
    #[arg(long, default_value = "compute", value_parser = parse_splats)]
    pub splats: crate::render::SplatMethod,
    /// Draw the terrain and the sky every frame, as a moving camera does, instead of restoring them from
    /// the background cache while the view stands still (the app's default, and the bench's camera
    /// stands still).
    #[arg(long)]
    pub redraw_background: bool,
    /// Leave out the water's shadow and tinted light on the terrain (the "water shadow" passes in the
    /// table; its splat is drawn as --splats says).
    #[arg(long)]
    pub no_water_shadow: bool,
    /// The filter that smooths the water's depth: curvature-flow or narrow-range (default: the app's, see
    /// docs/rendering.md).
    #[arg(long, value_parser = parse_depth_filter)]
    pub depth_filter: Option<crate::render::DepthFilter>,
    /// Sum the DFSPH solves' errors by a tree in workgroup memory even where the GPU has subgroup
    /// operations (an optimisation experiment; the app uses subgroups when present).
    #[arg(long)]
    pub no_subgroups: bool,
    /// Walk the neighbour grid's rows in every DFSPH loop instead of the step's neighbour lists (an
    /// optimisation experiment; the app builds the lists where they fit, src/sim/neighbours.rs).
    #[arg(long)]
    pub no_neighbour_list: bool,
    /// Output directory (created if missing).
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// The gate: compare this run with a baseline bench.csv of the same card (docs/bench-baseline-h100.csv
    /// on an H100) and exit non-zero when a figure is worse than its tolerance (times by --tolerance,
    /// iterations by 25 %, the time step by 10 %); writes gate.md beside bench.csv.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// The gate's tolerance on times and the real-time factor, a fraction (0.05 = 5 %).
    #[arg(long, default_value_t = 0.05, value_parser = parse_tolerance)]
    pub tolerance: f64,
    /// GPUs to decompose the simulation over: a count or `all` (the discrete GPUs). More than one
    /// benches the scene's own count, `--frames` steps after `--warmup`, and writes cluster.csv and
    /// cluster.md (src/cluster).
    #[arg(long, default_value = "1")]
    pub gpus: crate::cluster::GpuCount,
    /// What decomposing costs one GPU (issue 30): step the scene (at each --particles count, or its own)
    /// plainly and as one rank that sends its real halos to itself through the transport, --frames steps
    /// each after --warmup; prints T_plain / T_loop (the upper bound of several GPUs' efficiency) with the
    /// read-backs, messages and bytes per step, and writes loopback.md into --out.
    #[arg(long, conflicts_with_all = ["sweep", "baseline", "seconds"])]
    pub loopback: bool,
}

impl BenchArgs {
    /// The measurement plan of these arguments.
    pub fn plan(&self) -> crate::bench::Plan {
        crate::bench::Plan {
            targets: (!self.particles.is_empty()).then(|| self.particles.clone()),
            sweep: self.sweep,
            max_particles: self.max_particles,
            workgroup_sizes: self.workgroup_sizes.clone(),
            frames: self.frames,
            warmup: self.warmup,
            seconds: self.seconds.map(|s| s as f32),
            size: self.size,
            cell_split: self.cell_split,
            cells_per_particle: self.cells_per_particle,
            submit_per_step: self.submit_per_step,
            fixed_substeps: self.fixed_substeps,
            splats: self.splats,
            redraw_background: self.redraw_background,
            no_water_shadow: self.no_water_shadow,
            no_subgroups: self.no_subgroups,
            no_neighbour_list: self.no_neighbour_list,
            depth_filter: self.depth_filter.unwrap_or_default(),
        }
    }
}

// clap value parsers: their message is shown by clap as is (the command line is an edge of the program,
// so these return `String` rather than an error type).

/// Parses `--particle-format`: `ply` or `vtu`.
fn parse_particle_format(s: &str) -> Result<ParticleFormat, String> {
    s.parse().map_err(|e: crate::particle_io::ParticleFileError| e.to_string())
}

/// Parses `--splats`: `raster` or `compute`.
fn parse_splats(s: &str) -> Result<crate::render::SplatMethod, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "raster" => Ok(crate::render::SplatMethod::Raster),
        "compute" => Ok(crate::render::SplatMethod::Compute),
        other => Err(format!("unknown splat method '{other}': use raster or compute")),
    }
}

/// Parses `--cells-per-particle`: a number in (0, 64].
fn parse_cells_per_particle(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 64.0 => Ok(v),
        _ => Err(format!("cells per particle `{s}` must be a number in (0, 64], e.g. 1 or 0.5")),
    }
}

/// Parses a particle count: an integer with an optional `k` (10^3) or `M` (10^6) suffix, at least 1.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000.0),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000.0),
        _ => (t, 1.0),
    };
    let v: f64 =
        digits.trim().parse().map_err(|_| format!("particle count `{s}` is not a number (e.g. 4000, 250k, 1M)"))?;
    let n = v * scale;
    if !(n.is_finite() && (1.0..=1e10).contains(&n)) {
        return Err(format!("particle count `{s}` is out of range 1 ..= 1e10"));
    }
    Ok(n.round() as u64)
}

/// Parses a workgroup size: a power of two in 1 ..= 1024 (the GPU may refuse some; that is recorded).
pub fn parse_workgroup_size(s: &str) -> Result<u32, String> {
    let v: u32 = s.trim().parse().map_err(|_| format!("workgroup size `{s}` is not a whole number"))?;
    if !v.is_power_of_two() || v > 1024 {
        return Err(format!("workgroup size {v} is not a power of two up to 1024"));
    }
    Ok(v)
}

/// Arguments of `waterview run`.
#[derive(Clone, Debug, Args)]
pub struct RunArgs {
    /// Simulation steps to run, rounded up to whole frames of the scene's `substeps` steps each.
    #[arg(long, conflicts_with = "seconds", value_parser = clap::value_parser!(u64).range(1..))]
    pub steps: Option<u64>,
    /// Simulated seconds to run.
    #[arg(long, allow_negative_numbers = true)]
    pub seconds: Option<f32>,
    /// Final image: PNG, or with a `.exr` path an OpenEXR file of the linear image (32-bit float RGBA,
    /// the tone-mapped colours before sRGB encoding).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Per-frame diagnostics (CSV).
    #[arg(long)]
    pub stats: Option<PathBuf>,
    /// Image size WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", value_parser = parse_size)]
    pub size: (u32, u32),
    /// Override the scene's particle spacing dx (metres).
    #[arg(long, allow_negative_numbers = true, conflicts_with = "resume")]
    pub dx: Option<f32>,
    /// What the image (--out) shows: final (the shaded water), depth (the splats' raw depth, nearer =
    /// brighter), smoothed (the depth after the depth filter), thickness, normals (of the smoothed depth,
    /// rgb = n/2 + 1/2), tiles (the depth filter's active tiles), foam (the foam target), spheres (sphere impostors).
    #[arg(long, default_value = "final", value_parser = parse_view)]
    pub view: crate::render::FluidView,
    /// The filter that smooths the water's depth: curvature-flow or narrow-range (default: the render
    /// settings' default, see docs/rendering.md).
    #[arg(long, value_parser = parse_depth_filter)]
    pub depth_filter: Option<crate::render::DepthFilter>,
    /// The sun's height above the horizon in the image, degrees (-90 ..= 90; default: the render
    /// settings' 38).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_sun_elevation)]
    pub sun_elevation: Option<f32>,
    /// Draw the image without the water's shadow on the terrain (for comparison).
    #[arg(long)]
    pub no_water_shadow: bool,
    /// Draw the image without the wet ground where the water has passed (for comparison).
    #[arg(long)]
    pub no_wet_ground: bool,
    /// Go on from this checkpoint (written by --save-checkpoint or the Simulation panel) instead of the
    /// scene's start: its scene, spacing, solver parameters and sources (with --scene: that scene, which
    /// must have the checkpoint's domain, terrain and initial water; one GPU only). --steps and --seconds
    /// count from the checkpoint. A checkpoint written on one GPU resumes on several and the other way round.
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Write a checkpoint of the whole simulation state to this file at the end of the run (on one GPU
    /// also when it is stopped by Ctrl-C; on several, rank 0 gathers every rank's particles into it).
    #[arg(long)]
    pub save_checkpoint: Option<PathBuf>,
    /// GPUs to decompose the simulation over: a count or `all` (the discrete GPUs; one device per rank,
    /// several on one GPU when there are fewer). More than one simulates and reports only: --stats
    /// writes every step's particle counts, step and exchange ms and bytes moved per rank, and a table is
    /// printed.
    #[arg(long, default_value = "1")]
    pub gpus: crate::cluster::GpuCount,
    /// Write the final particles to this file: binary PLY, or VTU with a `.vtu` path (positions,
    /// velocities, densities). On several GPUs or MPI ranks rank 0 gathers them and writes them in the
    /// order of the scene's initial particles (each exactly once, checked).
    #[arg(long)]
    pub save_particles: Option<PathBuf>,
    /// Write the water's surface at the end of the run to this file: a triangle mesh reconstructed from
    /// the final particles by splashsurf_lib (the --surface-* settings), binary PLY with vertex normals,
    /// or OBJ with an `.obj` path. On several GPUs or MPI ranks rank 0 gathers the particles and meshes
    /// them (one mesh, no seams).
    #[arg(long)]
    pub save_surface: Option<PathBuf>,
    #[command(flatten)]
    pub surface_settings: surface::SurfaceArgs,
}

impl RunArgs {
    /// What the image shows.
    pub fn image(&self) -> crate::engine::batch::ImageOptions {
        crate::engine::batch::ImageOptions {
            view: self.view,
            depth_filter: self.depth_filter,
            sun_elevation_deg: self.sun_elevation,
            no_water_shadow: self.no_water_shadow,
            no_wet_ground: self.no_wet_ground,
        }
    }
}

// clap value parsers: their message is shown by clap as is (the command line is an edge of the program,
// so these return `String` rather than an error type).

/// Parses `--view`: a [`crate::render::FluidView::key`].
pub fn parse_view(s: &str) -> Result<crate::render::FluidView, String> {
    use crate::render::FluidView;
    FluidView::from_key(s).ok_or_else(|| {
        let names: Vec<&str> = FluidView::ALL.iter().map(|v| v.key()).collect();
        format!("unknown view `{}`: the views are {}", crate::text::printable(s), names.join(", "))
    })
}

/// Parses `--sun-elevation`: degrees, finite, -90 ..= 90.
pub fn parse_sun_elevation(s: &str) -> Result<f32, String> {
    let shown = crate::text::printable(s);
    let v: f32 = s.trim().parse().map_err(|_| format!("--sun-elevation `{shown}` is not a number of degrees"))?;
    if !(-90.0..=90.0).contains(&v) {
        return Err(format!("--sun-elevation {v} is outside -90 ..= 90 degrees"));
    }
    Ok(v)
}

/// Parses `--depth-filter`: a [`crate::render::DepthFilter::key`].
pub fn parse_depth_filter(s: &str) -> Result<crate::render::DepthFilter, String> {
    use crate::render::DepthFilter;
    DepthFilter::from_key(s).ok_or_else(|| {
        let names: Vec<&str> = DepthFilter::ALL.iter().map(|d| d.key()).collect();
        format!("unknown depth filter `{}`: the filters are {}", crate::text::printable(s), names.join(", "))
    })
}

/// Parses "WIDTHxHEIGHT" (each 1..=16384).
pub fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| format!("size `{s}` is not WIDTHxHEIGHT"))?;
    let w: u32 = w.trim().parse().map_err(|_| format!("width `{w}` is not a number"))?;
    let h: u32 = h.trim().parse().map_err(|_| format!("height `{h}` is not a number"))?;
    if !(1..=16384).contains(&w) || !(1..=16384).contains(&h) {
        return Err(format!("size {w}x{h} is out of range 1..=16384"));
    }
    Ok((w, h))
}
