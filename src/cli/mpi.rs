//! `mpirun -np N waterview run|bench|capture ...`: this process is one of N ranks of one simulation
//! ([`crate::cluster::launch`] tells from the launcher's environment). Built with `--features mpi`, each
//! process runs its rank over MPI on the GPU of its local rank; rank 0 prints the summary and writes the
//! statistics, particles and bench files, or (capture, [`crate::capture::ranks_cli`]) composites the ranks'
//! fluid layers and writes the video; the others print nothing but errors. A failing rank prints
//! its reason and ends the whole job (`MPI_Abort`: its peers would wait for it forever). Built without
//! the feature, a process started as one of several refuses to run rather than running N independent
//! copies of the same simulation.

use super::Cli;
use anyhow::{bail, Result};

/// What a command that runs on one process only says under `mpirun` with several processes.
#[cfg(feature = "mpi")]
fn single_process(what: &str) -> String {
    format!("{what} runs in one process: start it without mpirun (or with -np 1)")
}

/// Runs `cli` as one of `size` (> 1) processes started by an MPI launcher. Errors: the build has no MPI,
/// the command cannot run on several ranks, or (before MPI is up) the options are bad; after that a
/// rank's error ends the job with exit status 1.
#[cfg(not(feature = "mpi"))]
pub fn run_launched(size: usize, _cli: Cli) -> Result<()> {
    bail!(
        "this is one of {size} processes started by mpirun, but waterview was {}",
        crate::cluster::launch::BUILT_WITHOUT_MPI
    )
}

/// Runs `cli` as one of `size` (> 1) processes started by an MPI launcher. Errors: the build has no MPI,
/// the command cannot run on several ranks, or (before MPI is up) the options are bad; after that a
/// rank's error ends the job with exit status 1.
#[cfg(feature = "mpi")]
pub fn run_launched(size: usize, cli: Cli) -> Result<()> {
    use super::{multi, Command};
    use crate::cluster::mpi::MpiWorld;
    use crate::cluster::GpuCount;
    let gpus_flag = "--gpus applies without mpirun: under mpirun every process is one rank on one GPU (its local rank)";
    match &cli.command {
        None => bail!(single_process("the window")),
        Some(Command::Validate(_)) => bail!(single_process("validate")),
        Some(Command::Capture(a)) if a.gpus != GpuCount::N(1) => bail!(gpus_flag),
        Some(Command::Capture(a)) if a.record_cost => bail!(single_process("capture --record-cost")),
        Some(Command::Capture(a)) if a.particles.is_some() => {
            bail!(single_process("capture --particles (several ranks write no particle files yet)"))
        }
        Some(Command::Run(a)) if a.gpus != GpuCount::N(1) => bail!(gpus_flag),
        Some(Command::Bench(a)) if a.gpus != GpuCount::N(1) => bail!(gpus_flag),
        Some(_) if cli.window.any() => bail!("--window-size and the --record options apply to the window only"),
        _ => {}
    }
    let scene = cli.scene.as_deref();
    // Checked before MPI is up: every rank refuses bad options alike, without aborting the job.
    let capture = match &cli.command {
        Some(Command::Capture(a)) => Some(multi::capture_options(a.clone())?),
        _ => None,
    };
    let world = MpiWorld::init()?;
    if world.size() != size {
        bail!("the launcher says {size} processes, MPI {}", world.size());
    }
    let root = world.rank() == 0;
    let result = match &cli.command {
        Some(Command::Run(args)) => super::multi_run_options(args, size, root)
            .and_then(|opts| multi::run_mpi(&world, scene, &opts))
            .map(|summary| {
                if let Some(s) = summary {
                    println!("{}", multi::summary_markdown(&s));
                }
            }),
        Some(Command::Bench(args)) => super::bench_prepare(args, root).and_then(|csv| {
            let opts = super::multi_bench_options(args, size, &csv);
            match multi::run_mpi(&world, scene, &opts)? {
                Some(s) => super::bench_report(args, &s),
                None => Ok(()),
            }
        }),
        Some(Command::Capture(_)) => match &capture {
            Some(opts) => crate::capture::ranks_cli::run_mpi_cli(&world, scene, opts),
            None => Ok(()),
        },
        _ => Ok(()),
    };
    if let Err(e) = result {
        eprintln!("error: rank {} of {size}: {}", world.rank(), crate::text::printable_lines(&format!("{e:#}")));
        world.abort(1);
    }
    Ok(())
}
