//! `waterview run` and `waterview bench` (and [`capture`]'s options) on several ranks (src/cluster): `--gpus N` for N > 1 (one thread
//! and one GPU device each, [`run`]) or, built with `--features mpi`, one process per rank started by
//! `mpirun` (`run_mpi`). Both run the same per-rank loop over their [`Transport`]. Per-rank particle
//! counts, step and exchange times and the joint DFSPH iterations are printed and written as CSV by rank 0,
//! which also writes the final particles (`--save-particles`, gathered from every rank) and the final
//! image (`--out`: every rank draws its particles' layers, rank 0 composites them sort-last, as
//! `capture --gpus N` does each frame: [`crate::capture::ranks::rank_image`]). `--save-checkpoint` gathers
//! every rank's particles on rank 0 into one checkpoint, as one GPU's of the same state
//! ([`Checkpoint::of_ranks`]); `--resume` starts every rank from a checkpoint's particles and step state
//! (written by one GPU or by several).

use crate::capture::ranks::{check_size, rank_image, RankCaptureError, RankPicture};
use crate::cluster::{self, collect, rank_contexts, ClusterError, Rank, RankConfig, Transport};
use crate::engine;
use crate::engine::batch::ImageOptions;
use crate::engine::{Checkpoint, RanksState};
use crate::gpu::GpuContext;
use crate::particle_io::{self, ParticleFormat, Particles};
use crate::scene::{Scene, SceneSetup};
use crate::sim::{RankParticles, SimOptions, SimParams};
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// How long a decomposed run goes and what it writes.
pub struct MultiRun<'a> {
    pub ranks: usize,
    /// Override of the scene's dx, m (`None`: the scene's, scaled on a CPU adapter).
    pub dx: Option<f32>,
    /// Steps to run, or simulated seconds (the first given; one of them is).
    pub steps: Option<u64>,
    pub seconds: Option<f32>,
    /// Steps run before the figures are summed (bench).
    pub warmup: u64,
    /// CSV of every step's figures per rank.
    pub csv: Option<&'a Path>,
    /// The final particles, in id order (PLY or VTU by the extension), written by rank 0.
    pub particles: Option<&'a Path>,
    /// The final surface (PLY or OBJ by the extension) and its settings: rank 0 meshes the particles it
    /// gathered (one mesh over every rank's particles, so no seams at the slab borders).
    pub surface: Option<(&'a Path, crate::surface::SurfaceSettings)>,
    /// The final image (PNG, or with a `.exr` path an OpenEXR file of the linear values) at a size,
    /// pixels, showing what the options ask for: every rank draws its particles' layers and rank 0
    /// composites them (sort-last, [`crate::capture::ranks::rank_image`]).
    pub image: Option<(&'a Path, (u32, u32), ImageOptions)>,
    /// Write a checkpoint of the whole simulation here at the end (rank 0, from every rank's particles).
    pub save_checkpoint: Option<&'a Path>,
    /// Go on from this checkpoint (its scene, spacing, particles and step state) instead of the scene's
    /// start; `steps` and `seconds` count from it.
    pub resume: Option<&'a Path>,
}

/// Per-rank sums of a decomposed run (after the warm-up).
#[derive(Clone, Debug, Default)]
pub struct MultiSummary {
    /// Particles over all ranks at the end (the scene's, less what sinks took, plus what emitters added).
    pub particles: usize,
    /// Mass of one particle, kg (the same on every rank).
    pub particle_mass: f32,
    pub steps: u64,
    pub time: f32,
    /// By rank: (owned at the end, ghosts at the end, mean step ms, mean exchange ms, mean bytes of the
    /// border exchange per step, mean bytes of the solves' per-iteration exchanges per step, slots of its
    /// simulation at the end: owned, ghosts and free room, [`cluster::RankStats::capacity`]).
    pub ranks: Vec<[f64; 7]>,
    /// Mean over the steps of the slowest rank's step + exchange, ms (the decomposed step's wall time).
    pub ms_per_step: f64,
}

impl MultiSummary {
    /// Total mass of the fluid, kg (particles x particle mass).
    pub fn total_mass(&self) -> f64 {
        self.particles as f64 * self.particle_mass as f64
    }
}

/// CSV columns of a decomposed run's statistics (the iterations are DFSPH's joint ones, the same on
/// every rank; 0 for the other solvers; the bytes are [`cluster::RankStats::exchange_bytes`] and
/// [`cluster::RankStats::iteration_bytes`]; `gpu_ms` is [`cluster::RankStats::gpu_ms`], what the load
/// balancing equalises, NaN where the device has no timestamps; `capacity` the rank's slots,
/// [`cluster::RankStats::capacity`]).
pub const CSV_HEADER: &str = "step,time_s,rank,owned,ghosts,step_ms,exchange_ms,density_iterations,\
                              divergence_iterations,exchange_bytes,iteration_bytes,gpu_ms,capacity";

/// The scene every rank simulates, built at the joint spacing, and the walls its image draws.
struct Job {
    scene: Scene,
    setup: SceneSetup,
    params: SimParams,
    all: RankParticles,
    walls: Vec<crate::render::ObstacleMesh>,
    /// The checkpoint resumed (`--resume`): its step state goes onto every rank.
    resumed: Option<Checkpoint>,
}

/// Loads the scene (every rank does, from the same path), or with `--resume` the checkpoint and its
/// scene. Errors: the scene or checkpoint; emitters or sinks when `opts` refuses them; a checkpoint with
/// an emitters' pool or a `--scene` beside it (one GPU resumes those).
fn load(scene_path: Option<&Path>, opts: &MultiRun) -> Result<(Scene, Option<Checkpoint>)> {
    let (scene, checkpoint) = match opts.resume {
        None => (engine::load_scene(scene_path)?, None),
        Some(path) => {
            if scene_path.is_some() {
                bail!(
                    "--resume with --scene needs one GPU for now: give --gpus 1, or resume the checkpoint's own scene"
                );
            }
            let checkpoint = Checkpoint::read(path)?;
            if checkpoint.capacity() != checkpoint.scene_particles() {
                bail!(
                    "checkpoint {}: its emitters' pool ({} particles) needs one GPU: give --gpus 1",
                    path.display(),
                    checkpoint.capacity() - checkpoint.scene_particles()
                );
            }
            (checkpoint.scene()?, Some(checkpoint))
        }
    };
    if !scene.bodies.is_empty() {
        bail!(ClusterError::Bodies);
    }
    if !(scene.emitters.is_empty() && scene.sinks.is_empty()) && opts.save_checkpoint.is_some() {
        bail!(ClusterError::SourcesCheckpoint);
    }
    Ok((scene, checkpoint))
}

/// Builds `scene` at `opts`' dx, or the scene's own scaled for a CPU adapter when `cpu`; with a
/// checkpoint, at its spacing and from its particles (ids in its order).
fn build((mut scene, resumed): (Scene, Option<Checkpoint>), opts: &MultiRun, cpu: bool) -> Result<Job> {
    scene.solver.dx = match &resumed {
        Some(c) => c.dx(),
        None => opts.dx.unwrap_or_else(|| scene.effective_dx(cpu)),
    };
    let params = scene.solver.clone();
    let setup = scene.build(false)?;
    let all = match &resumed {
        Some(c) => {
            let state = c.state();
            let ids = (0..state.positions.len() as u32).collect();
            RankParticles { pos: state.positions.clone(), vel: state.velocities.clone(), ids }
        }
        None => cluster::initial_particles(&setup, &params),
    };
    // The walls are drawn only in the final image.
    let walls = match opts.image {
        Some(_) => engine::walls::scene_walls_for(&scene, &setup.terrain, &all.pos, params.dx),
        None => Vec::new(),
    };
    Ok(Job { scene, setup, params, all, walls, resumed })
}

/// The CSV writer with its header (`None` without `--stats`). Errors: the file cannot be written.
fn open_csv(opts: &MultiRun) -> Result<Mutex<Option<std::io::BufWriter<std::fs::File>>>> {
    let mut csv = match opts.csv {
        Some(p) => Some(std::io::BufWriter::new(
            crate::files::create(p).with_context(|| format!("cannot write {}", p.display()))?,
        )),
        None => None,
    };
    if let (Some(w), Some(p)) = (&mut csv, opts.csv) {
        writeln!(w, "{CSV_HEADER}").with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(Mutex::new(csv))
}

fn flush_csv(csv: &Mutex<Option<std::io::BufWriter<std::fs::File>>>, opts: &MultiRun) -> Result<()> {
    if let Ok(mut guard) = csv.lock() {
        if let (Some(w), Some(p)) = (guard.as_mut(), opts.csv) {
            w.flush().with_context(|| format!("cannot write {}", p.display()))?;
        }
    }
    Ok(())
}

/// What one rank ends with: the run's figures, and on rank 0 only every rank's particles gathered in id
/// order (with `--save-particles` or `--save-surface`), the final image (with `--out`) and the checkpoint
/// (with `--save-checkpoint`).
#[derive(Default)]
struct RankEnd {
    summary: MultiSummary,
    particles: Option<RankParticles>,
    image: Option<RankPicture>,
    checkpoint: Option<Checkpoint>,
}

/// What one rank runs: from the scene's start or the resumed checkpoint's state, the steps, rank 0's CSV
/// rows, and at the end (with `--save-particles` or `--save-checkpoint`) every rank's particles gathered
/// on rank 0 in id order (`Some` there only), and with `--out` its share of the sort-last image (rank 0
/// composites it).
fn rank_loop<T: Transport>(
    t: T,
    ctx: GpuContext,
    job: &Job,
    opts: &MultiRun,
    csv: &Mutex<Option<std::io::BufWriter<std::fs::File>>>,
) -> Result<RankEnd, RankCaptureError> {
    let Job { scene, setup, params, all, walls, resumed } = job;
    if let Some((_, size, _)) = opts.image {
        check_size(t.rank(), &ctx, size)?;
    }
    let config = RankConfig::for_params(params);
    let mut rank = Rank::new(
        t,
        ctx,
        &scene.domain,
        (&setup.terrain, &setup.obstacles),
        params,
        SimOptions::default(),
        config,
        all,
    )?;
    if let Some(c) = resumed {
        c.check_terrain(rank.sim().terrain(), &crate::text::printable(&scene.name))?;
        rank.restore_step(&c.state().step, c.state().iterations);
    }
    if !(scene.emitters.is_empty() && scene.sinks.is_empty()) {
        rank.set_sources(&scene.emitters, &scene.sinks)?;
    }
    // --seconds counts from the checkpoint's time.
    let start = resumed.as_ref().map_or(0.0, Checkpoint::time);
    let mut sum =
        MultiSummary { particles: all.len(), particle_mass: rank.sim().mass(), time: start, ..MultiSummary::default() };
    let mut totals = vec![[0.0f64; 7]; opts.ranks];
    let (mut wall, mut counted, mut step) = (0.0f64, 0u64, 0u64);
    loop {
        let done = match (opts.steps, opts.seconds) {
            (Some(n), _) => step >= n + opts.warmup,
            (None, Some(t)) => sum.time >= start + t,
            (None, None) => true,
        };
        if done {
            break;
        }
        let stats = rank.step()?;
        step += 1;
        sum.time = stats.time;
        let all_ranks = rank.gather(&stats)?;
        if rank.rank() == 0 {
            if let Ok(mut guard) = csv.lock() {
                if let Some(w) = guard.as_mut() {
                    let (dens, div) = stats.iterations;
                    for (r, s) in all_ranks.iter().enumerate() {
                        // A failed write shows at the flush.
                        let _ = writeln!(
                            w,
                            "{step},{},{r},{},{},{},{},{dens},{div},{},{},{},{}",
                            stats.time, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
                        );
                    }
                }
            }
        }
        if step > opts.warmup {
            counted += 1;
            wall += all_ranks.iter().map(|s| s[2] + s[3]).fold(0.0, f64::max);
            for (t, s) in totals.iter_mut().zip(&all_ranks) {
                *t = [s[0], s[1], t[2] + s[2], t[3] + s[3], t[4] + s[4], t[5] + s[5], s[7]];
            }
        }
        // Emitters and sinks change the count: the owned particles over all ranks now.
        sum.particles = all_ranks.iter().map(|s| s[0] as usize).sum();
    }
    let c = counted.max(1) as f64;
    sum.steps = counted;
    sum.ms_per_step = wall / c;
    sum.ranks = totals.into_iter().map(|t| [t[0], t[1], t[2] / c, t[3] / c, t[4] / c, t[5] / c, t[6]]).collect();
    let gathered = match opts.particles.is_some() || opts.surface.is_some() || opts.save_checkpoint.is_some() {
        true => collect::gather_to_root(rank.transport(), &rank.owned_blocking()?)?,
        false => None,
    };
    let sorted = match scene.emitters.is_empty() && scene.sinks.is_empty() {
        true => gathered.map(|g| collect::by_id(&g, all.len())).transpose()?,
        false => gathered.map(|g| collect::in_id_order(&g)).transpose()?,
    };
    let image = match opts.image {
        Some((path, size, options)) => rank_image(&rank, scene, walls, (size, crate::capture::is_exr(path)), &options)?,
        None => None,
    };
    let checkpoint = match (&sorted, opts.save_checkpoint) {
        (Some(p), Some(_)) => Some(ranks_checkpoint(&rank, scene, params.dx, p)?),
        _ => None,
    };
    Ok(RankEnd { summary: sum, particles: sorted, image, checkpoint })
}

/// Rank 0's checkpoint of every rank's `particles` (gathered in id order) with its own step state, which
/// is every rank's (the time step and the iterations are joint). Blocking. Errors: the step state cannot
/// be read back, the scene cannot be written as RON.
fn ranks_checkpoint<T: Transport>(
    rank: &Rank<T>,
    scene: &Scene,
    dx: f32,
    particles: &RankParticles,
) -> Result<Checkpoint, RankCaptureError> {
    let sim = rank.sim();
    let own = sim.read_state_blocking(rank.ctx()).map_err(ClusterError::Step)?;
    let state = RanksState {
        scene,
        dx,
        terrain: sim.terrain(),
        step: own.step,
        cell_size: sim.grid_shape().cell_size,
        iterations: sim.solver_iterations(),
        positions: particles.pos.clone(),
        velocities: particles.vel.clone(),
    };
    Ok(Checkpoint::of_ranks(state)?)
}

/// ", resumed at t = T s after N steps" for a job resumed from a checkpoint, else nothing.
fn resumed_text(job: &Job) -> String {
    match &job.resumed {
        Some(c) => format!(", resumed at t = {} s after {} steps", c.time(), c.steps()),
        None => String::new(),
    }
}

/// Writes rank 0's checkpoint to `opts.save_checkpoint` (nothing without one). Errors: the file.
fn write_checkpoint(opts: &MultiRun, checkpoint: Option<Checkpoint>) -> Result<()> {
    if let (Some(path), Some(c)) = (opts.save_checkpoint, checkpoint) {
        c.write(path)?;
        eprintln!(
            "wrote checkpoint {}: t = {} s after {} steps, {} particles",
            path.display(),
            c.time(),
            c.steps(),
            c.capacity()
        );
    }
    Ok(())
}

/// Writes rank 0's gathered particles to `opts.particles` and their surface to `opts.surface` (nothing
/// without them). Errors: the files, the surface's reconstruction.
fn write_particles(opts: &MultiRun, particles: Option<RankParticles>, time: f32, job: &Job) -> Result<()> {
    let Some(p) = particles else { return Ok(()) };
    let particles = Particles::from_state(&p.pos, &p.vel);
    if let Some(path) = opts.particles {
        let format = ParticleFormat::of_path(path).unwrap_or_default();
        particle_io::write(path, &particles, format, time)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some((path, settings)) = opts.surface {
        let walls = (job.scene.domain.min, job.scene.domain.max);
        let input = super::surface::SurfaceInput { positions: &particles.positions, dx: job.params.dx, walls, time };
        super::surface::save_surface(path, &input, &settings)?;
    }
    Ok(())
}

/// Writes rank 0's sort-last image to `opts.image`'s path, a PNG or an OpenEXR file (nothing without
/// one). Errors: the file.
fn write_image(opts: &MultiRun, image: Option<RankPicture>) -> Result<()> {
    if let (Some((path, _, _)), Some(image)) = (opts.image, image) {
        match image {
            RankPicture::Srgb(image) => crate::capture::save_png_blocking(&image, path)?,
            RankPicture::Linear(image) => crate::capture::save_exr_blocking(&image, path)?,
        }
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// Runs `scene_path`'s scene on `opts.ranks` threads of this process (see [`MultiRun`]). Errors: the
/// scene, the GPUs, a rank, the CSV or particle file; the reason names the rank where one failed.
pub fn run(scene_path: Option<&Path>, opts: &MultiRun) -> Result<MultiSummary> {
    let scene = load(scene_path, opts)?;
    let contexts = rank_contexts(opts.ranks)?;
    for (r, c) in contexts.iter().enumerate() {
        eprintln!("rank {r}: {}", c.adapter_summary());
    }
    let job = build(scene, opts, contexts[0].is_cpu())?;
    eprintln!(
        "scene `{}`: {} particles, dx = {} m, {} ranks{}",
        crate::text::printable(&job.scene.name),
        job.all.len(),
        job.params.dx,
        opts.ranks,
        resumed_text(&job)
    );
    if let Some((_, s)) = opts.surface {
        s.check(job.all.len())?;
    }
    let csv = open_csv(opts)?;
    let results = cluster::run_threads_with(contexts, |t, ctx| rank_loop(t, ctx, &job, opts, &csv))?;
    flush_csv(&csv, opts)?;
    let end = results.into_iter().next().unwrap_or_default();
    write_particles(opts, end.particles, end.summary.time, &job)?;
    write_image(opts, end.image)?;
    write_checkpoint(opts, end.checkpoint)?;
    Ok(end.summary)
}

/// Runs `scene_path`'s scene as this process's rank of an MPI job (`opts.ranks` = the job's size): the
/// rank's GPU is its local rank on its host ([`cluster::devices::local_context`]); every rank reads the
/// scene from the same path (on several hosts: a shared folder, or the same file on each). Rank 0 prints
/// and writes the outputs and gets `Some` summary; the others print nothing and get `None`. Errors: as
/// [`run`]; a rank that fails must end the job ([`cluster::mpi::MpiWorld::abort`]), as its peers wait.
#[cfg(feature = "mpi")]
pub fn run_mpi(
    world: &cluster::mpi::MpiWorld,
    scene_path: Option<&Path>,
    opts: &MultiRun,
) -> Result<Option<MultiSummary>> {
    use crate::cluster::Reduce;
    let transport = world.transport();
    let rank = transport.rank();
    let (local, _) = world.local_rank();
    let scene = load(scene_path, opts)?;
    let ctx = cluster::devices::local_context(local, rank)?;
    // One spacing for all: the CPU scaling when any rank runs on a CPU adapter.
    let cpu = transport.all_reduce(&[ctx.is_cpu() as u8 as f64], Reduce::Max).map_err(ClusterError::from)?[0] > 0.0;
    let job = build(scene, opts, cpu)?;
    let root = rank == 0;
    if root {
        eprintln!("rank 0: {}", ctx.adapter_summary());
        eprintln!(
            "scene `{}`: {} particles, dx = {} m, {} MPI ranks{}",
            crate::text::printable(&job.scene.name),
            job.all.len(),
            job.params.dx,
            opts.ranks,
            resumed_text(&job)
        );
    }
    if let (Some((_, s)), true) = (opts.surface, root) {
        s.check(job.all.len())?;
    }
    let csv = if root { open_csv(opts)? } else { Mutex::new(None) };
    let end = rank_loop(transport, ctx, &job, opts, &csv)?;
    if !root {
        return Ok(None);
    }
    flush_csv(&csv, opts)?;
    write_particles(opts, end.particles, end.summary.time, &job)?;
    write_image(opts, end.image)?;
    write_checkpoint(opts, end.checkpoint)?;
    Ok(Some(end.summary))
}

/// The summary as a Markdown table (one row per rank).
pub fn summary_markdown(s: &MultiSummary) -> String {
    let mut out = format!(
        "{} particles ({} kg in all), {} steps to t = {} s, {:.3} ms per step (slowest rank's step + exchange)\n\n\
         | rank | owned | ghosts | slots | step ms | exchange ms | exchange bytes | iteration bytes |\n\
         |---|---|---|---|---|---|---|---|\n",
        s.particles,
        s.total_mass(),
        s.steps,
        s.time,
        s.ms_per_step
    );
    for (r, v) in s.ranks.iter().enumerate() {
        out += &format!(
            "| {r} | {} | {} | {} | {:.3} | {:.3} | {:.0} | {:.0} |\n",
            v[0], v[1], v[6], v[2], v[3], v[4], v[5]
        );
    }
    out
}

/// The options of `waterview capture` on several ranks (`--gpus N` with N > 1, or under `mpirun`).
/// Errors: what needs one GPU (`--record-cost`, `--particles`, `--surface`), no `--out`.
pub fn capture_options(a: super::CaptureArgs) -> Result<crate::capture::offline::OfflineOptions> {
    if a.record_cost {
        bail!("--record-cost measures one GPU: give --gpus 1");
    }
    if a.surface.is_some() {
        bail!("--surface needs one GPU for now: give --gpus 1 (run --save-surface meshes the last frame on several)");
    }
    let out = match (a.out, a.particles) {
        (_, Some(_)) => bail!("--particles needs one GPU for now: give --gpus 1"),
        (None, None) => bail!("give --out VIDEO.mp4 (or a folder for PNGs)"),
        (Some(out), None) => out,
    };
    Ok(crate::capture::offline::OfflineOptions {
        seconds: a.seconds,
        fps: a.fps,
        size: a.size,
        out: Some(out),
        particles: None,
        surface: None,
        dx: a.dx,
        image: crate::engine::batch::ImageOptions { view: a.view, depth_filter: a.depth_filter, ..Default::default() },
    })
}

/// `waterview capture --gpus N` with N > 1 (src/capture/ranks.rs): a video, rendered sort-last. Errors:
/// as [`capture_options`], and what the capture reports.
pub fn capture(scene: Option<&Path>, a: super::CaptureArgs, ranks: usize) -> Result<()> {
    crate::capture::ranks_cli::run_cli(scene, &capture_options(a)?, ranks)
}
