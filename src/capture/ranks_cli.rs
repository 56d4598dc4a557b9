//! The command line's captures on several ranks ([`super::ranks`]): `waterview capture --gpus N` (one
//! thread and device per rank in this process, [`run_cli`]) and, built with `--features mpi`, `mpirun -np
//! N waterview capture` (one process per rank, `run_mpi_cli`). Both run the same per-rank capture over
//! their transport; rank 0 writes the video and prints the summary, the other ranks write and print
//! nothing but their errors.

use super::offline::{format_for, validate, OfflineOptions};
use super::output::Output;
use super::ranks::{capture_ranks, RankCaptureError, RankCaptureOptions, RankCaptureReport};
use super::video::VideoFormat;
use super::CaptureError;
use crate::cluster;
use std::path::Path;
use std::time::Instant;

/// Refuses what no capture on several ranks does (particle files, the spheres view, no output) before
/// anything is loaded. Errors: those, and bad options.
fn check_options(opts: &OfflineOptions) -> Result<&Path, RankCaptureError> {
    validate(opts)?;
    if opts.particles.is_some() {
        return Err(RankCaptureError::Unsupported("particle files (--particles)"));
    }
    if opts.image.view == crate::render::FluidView::Spheres {
        return Err(RankCaptureError::Unsupported("the spheres view (--view spheres)"));
    }
    opts.out.as_deref().ok_or_else(|| CaptureError::NoOutput.into())
}

/// Errors when `out` cannot be written (an MP4 file, or a new folder of PNGs).
fn check_output(out: &Path) -> anyhow::Result<()> {
    let what = if format_for(out) == VideoFormat::Mp4 { Output::File } else { Output::NewFolder };
    super::output::check_writable(out, what)?;
    Ok(())
}

/// A terminal progress bar over `total` video frames.
fn progress_bar(total: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} frames, {per_sec}, ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// Prints the video written, its speed over `wall` seconds and the per-rank frame timings of `ranks`.
fn print_report(report: &RankCaptureReport, opts: &OfflineOptions, ranks: usize, wall: f64) {
    let v = &report.video;
    eprintln!(
        "wrote {}: {} frames, {:.2} s of video at {} fps, {:.1} MB, in {:.1} s ({:.2} frames/s), {ranks} ranks",
        v.path.display(),
        v.frames,
        v.duration_s,
        opts.fps,
        v.bytes as f64 / 1e6,
        wall,
        v.frames as f64 / wall.max(1e-9)
    );
    let by_rank = |v: &[f64], from: usize| {
        v.iter().enumerate().skip(from).map(|(r, ms)| format!("rank {r} {ms:.2}")).collect::<Vec<_>>().join(", ")
    };
    // GPU times come back a frame or two late: a short capture (or a device without timestamp queries)
    // has none, which is said rather than printed as zeros.
    let timed = report.display_gpu_ms > 0.0 || report.layers_gpu_ms.iter().any(|&ms| ms > 0.0);
    let gpu = if timed {
        format!(
            "fluid layers (GPU: anisotropy, ghost cull, splats) {}; sort-last composite (GPU) {:.2}; rest of the \
             display frame (GPU) {:.2}",
            by_rank(&report.layers_gpu_ms, 0),
            report.composite_gpu_ms,
            report.display_gpu_ms
        )
    } else {
        "GPU times: none came back (too few frames, or no timestamp queries)".to_string()
    };
    eprintln!(
        "per frame, ms: {gpu}; read-back (wall) {}; rank 0 waited {:.2} (wall) for the others' layers",
        by_rank(&report.readback_ms, 1),
        report.transfer_ms,
    );
    eprintln!("simulated {:.6} s: {} steps on {ranks} ranks", report.sim_time, report.steps);
}

/// `waterview capture --gpus N` (N > 1): loads the scene, opens one device per rank
/// ([`cluster::rank_contexts`]) and captures with a terminal progress bar; prints the video written and
/// the per-rank frame timings. Errors: as [`capture_ranks`], and an output that cannot be written.
pub fn run_cli(scene_path: Option<&Path>, opts: &OfflineOptions, ranks: usize) -> anyhow::Result<()> {
    check_output(check_options(opts)?)?;
    let scene = crate::engine::load_scene(scene_path)?;
    let contexts = cluster::rank_contexts(ranks)?;
    for (r, c) in contexts.iter().enumerate() {
        eprintln!("rank {r}: {}", c.adapter_summary());
    }
    let bar = progress_bar(super::offline::frame_count(opts.seconds, opts.fps));
    let started = Instant::now();
    let result = capture_ranks(contexts, &scene, opts, RankCaptureOptions::default(), |w, _| bar.set_position(w));
    bar.finish_and_clear();
    print_report(&result?, opts, ranks, started.elapsed().as_secs_f64());
    Ok(())
}

/// `mpirun -np N waterview capture` (N = the job's size > 1): this process is one rank, on the GPU of its
/// local rank on its host ([`cluster::devices::local_context`]); every rank reads the scene from the same
/// path. Rank 0 checks and writes the output and prints the summary; the others write and print nothing.
/// Errors: as [`run_cli`]; a rank that fails must end the job ([`cluster::mpi::MpiWorld::abort`]), as its
/// peers wait for it.
#[cfg(feature = "mpi")]
pub fn run_mpi_cli(
    world: &cluster::mpi::MpiWorld,
    scene_path: Option<&Path>,
    opts: &OfflineOptions,
) -> anyhow::Result<()> {
    use super::ranks::{check_size, prepare, rank_capture, start_video};
    use crate::cluster::{ClusterError, Reduce, Transport};
    let out = check_options(opts)?;
    let transport = world.transport();
    let (rank, size) = (transport.rank(), transport.size());
    let root = rank == 0;
    if root {
        check_output(out)?;
    }
    let scene = crate::engine::load_scene(scene_path)?;
    let (local, _) = world.local_rank();
    let ctx = cluster::devices::local_context(local, rank)?;
    // One spacing for all: the CPU scaling when any rank runs on a CPU adapter.
    let cpu = transport.all_reduce(&[ctx.is_cpu() as u8 as f64], Reduce::Max).map_err(ClusterError::from)?[0] > 0.0;
    check_size(rank, &ctx, opts.size)?;
    let job = prepare(&scene, opts, cpu)?;
    let rec = if root {
        eprintln!("rank 0: {}", ctx.adapter_summary());
        Some(start_video(&ctx, opts)?)
    } else {
        None
    };
    let bar = if root { progress_bar(job.total) } else { indicatif::ProgressBar::hidden() };
    let started = Instant::now();
    let ranked = RankCaptureOptions::default();
    let result = rank_capture(transport, ctx, &job, opts, ranked, rec, &|w, _| bar.set_position(w));
    bar.finish_and_clear();
    if let Some(report) = result? {
        print_report(&report, opts, size, started.elapsed().as_secs_f64());
    }
    Ok(())
}
