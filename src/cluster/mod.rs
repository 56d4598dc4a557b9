//! One simulation over several GPUs (issue 16, part 2; Werner 2015's slab decomposition, summarised in
//! docs/background.md section 6). SPMD: every rank runs the same code ([`rank`]) on its own GPU device
//! ([`devices`]), owning the particles of one slab along the fluid's longest axis ([`slab`]) plus ghost
//! copies of its neighbours' particles within the halo, and talks to the others only through a
//! [`Transport`] ([`transport`]: threads in one process, [`run_threads`]; or, built with `--features mpi`,
//! one process per rank started by `mpirun` on one host or several, `mpi::MpiTransport`, running the same
//! [`Rank`]; [`launch`] tells which). What travels is bytes ([`exchange`]); rank 0 gathers the particles
//! at the end ([`collect`]).
//! Drawing a decomposed simulation is sort-last (`waterview capture --gpus N`, src/capture/ranks.rs):
//! every rank draws its own particles' fluid layers (anisotropy with the ghosts as neighbours, the ghosts
//! culled, [`crate::render::ghosts`]), ranks > 0 send them to rank 0 as bytes
//! ([`collect::gather_bytes_to_root`]), and rank 0 composites them ([`crate::render::sort_last`]: nearest
//! depth, summed thickness) and draws the rest of the frame once. [`Rank::new`] places the first
//! ghosts, so a frame drawn before the first step has them too.
//! With one GPU nothing here runs: the engine steps its [`crate::sim::Simulation`] as before.

pub mod collect;
pub mod devices;
pub mod exchange;
mod iteration;
pub mod launch;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod rank;
pub mod slab;
pub mod transport;

pub use devices::{rank_contexts, GpuCount};
pub use rank::{live_params, rank_capacity, Rank, RankConfig, RankStats, GHOST, MIN_SPARE, OWN_SHARE, WHOLE_SCENE};
pub use slab::{longest_axis, BorderMove, Slabs};
pub use transport::{Reduce, Side, ThreadTransport, Transport, TransportError};

use crate::gpu::{GpuContext, GpuError};
use crate::scene::SceneSetup;
use crate::sim::{initial, RankParticles, SimError, SimParams};
use thiserror::Error;

/// Why a decomposed simulation could not be built or stepped. Causes are part of the message (no
/// `source()`), so `{:#}` prints each once.
#[derive(Debug, Error)]
pub enum ClusterError {
    #[error("{0}")]
    Transport(#[from] TransportError),
    #[error("{0}")]
    Exchange(#[from] exchange::ExchangeError),
    #[error("GPU of rank {rank}: {cause}")]
    Gpu { rank: usize, cause: GpuError },
    #[error("rank {rank}: {cause}")]
    Sim { rank: usize, cause: SimError },
    /// A host-driven step failed on the GPU side.
    #[error("a rank's step: {0}")]
    Step(SimError),
    /// The domain along the decomposition axis has too few layers for the slabs.
    #[error(
        "the domain is {extent} m along the decomposition axis: too thin for {ranks} slabs of at least \
         {min_layers} layers of {cell} m (the halo's depth); use fewer GPUs"
    )]
    TooThin { ranks: usize, extent: f32, cell: f32, min_layers: u32 },
    #[error("rank {rank} of {ranks} would start with no particles; use fewer GPUs for this scene")]
    EmptyRank { rank: usize, ranks: usize },
    #[error("{count} particles: several GPUs number particles below 2^31")]
    TooManyParticles { count: u64 },
    #[error("rank {rank} panicked")]
    Panicked { rank: usize },
    /// A rank held a non-finite particle after the step that ended at `time`.
    #[error(
        "the simulation blew up after t = {time} s (non-finite particles); try a smaller time step (cfl) or larger dx"
    )]
    BlowUp { time: f32 },
    /// The gathered particles are not every id of the scene once (a bug).
    #[error("the ranks hold {got} particles with {distinct} distinct ids of 0 ..< {expected}: particles were lost or doubled")]
    Ids { got: usize, distinct: usize, expected: usize },
    /// A checkpoint of a decomposed scene with emitters or sinks (its particles are no longer the scene's).
    #[error(
        "checkpoints of a scene with emitters or sinks need one GPU for now: give --gpus 1, or leave out --save-checkpoint"
    )]
    SourcesCheckpoint,
    /// The scene has floating or sinking bodies, which the ranks do not simulate yet.
    #[error("floating and sinking bodies are not supported on several GPUs yet; run this scene with --gpus 1")]
    Bodies,
    /// A gathered message is not whole length-prefixed parts (a bug or a damaged transport).
    #[error("a gathered message of {len} bytes is not whole length-prefixed parts")]
    Parts { len: usize },
}

impl From<SimError> for ClusterError {
    fn from(e: SimError) -> Self {
        ClusterError::Step(e)
    }
}

/// Every particle of a scene as the ranks start from it (the same on every rank): positions with rest
/// density, velocities with the hydrostatic pressure the single-GPU build starts from, ids = index.
pub fn initial_particles(setup: &SceneSetup, params: &SimParams) -> RankParticles {
    let mut all = RankParticles::default();
    let first = initial::Hydrostatic::new(params);
    let _ = setup.for_each_chunk(&first, |_, pos, vel| -> Result<(), std::convert::Infallible> {
        all.pos.extend_from_slice(pos);
        all.vel.extend_from_slice(vel);
        Ok(())
    });
    all.ids = (0..all.pos.len() as u32).collect();
    all
}

/// An error of a rank's thread in [`run_threads_with`]: whether it only says a peer is gone (which
/// follows from another rank's error, the one worth reporting), and the error of a panicking rank.
pub trait RankError: Send {
    /// True when the error is only a peer gone.
    fn peer_gone(&self) -> bool;
    /// The error of rank `rank`, which panicked.
    fn panicked(rank: usize) -> Self;
}

impl RankError for ClusterError {
    fn peer_gone(&self) -> bool {
        matches!(self, ClusterError::Transport(TransportError::Disconnected { .. }))
    }

    fn panicked(rank: usize) -> Self {
        ClusterError::Panicked { rank }
    }
}

/// Runs `f` on one thread per context, rank `r` with `contexts[r]` and its [`ThreadTransport`]; the
/// results by rank. Errors: the first rank's error that is not just a peer gone (which follows from
/// another rank's error), else the first error; a panicking rank is [`ClusterError::Panicked`].
pub fn run_threads<R: Send>(
    contexts: Vec<GpuContext>,
    f: impl Fn(ThreadTransport, GpuContext) -> Result<R, ClusterError> + Sync,
) -> Result<Vec<R>, ClusterError> {
    run_threads_with(contexts, f)
}

/// [`run_threads`] for ranks whose errors are of another type `E` (e.g. a capture's, which also has the
/// video's errors): the first error that is not [`RankError::peer_gone`], else the first error.
pub fn run_threads_with<R: Send, E: RankError>(
    contexts: Vec<GpuContext>,
    f: impl Fn(ThreadTransport, GpuContext) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    let transports = ThreadTransport::group(contexts.len());
    let results: Vec<Result<R, E>> = std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = transports.into_iter().zip(contexts).map(|(t, ctx)| s.spawn(move || f(t, ctx))).collect();
        handles.into_iter().enumerate().map(|(rank, h)| h.join().unwrap_or(Err(E::panicked(rank)))).collect()
    });
    let first_cause = results.iter().position(|r| matches!(r, Err(e) if !e.peer_gone()));
    let mut out = Vec::new();
    let mut first_err = None;
    for (k, r) in results.into_iter().enumerate() {
        match r {
            Ok(v) => out.push(v),
            Err(e) if first_cause.is_none_or(|c| c == k) && first_err.is_none() => first_err = Some(e),
            Err(_) => {}
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
