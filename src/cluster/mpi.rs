//! The MPI transport (`--features mpi`): one process per rank, started by `mpirun` on one host or
//! several, through the `mpi` crate (rsmpi) on the system's OpenMPI or MPICH. It implements the same
//! [`Transport`] as the threads, so [`super::Rank`] runs unchanged.
//!
//! - Neighbour data ([`Transport::send`]) goes out as an immediate send (`MPI_Isend`) of a buffer the
//!   transport owns until MPI is done with it, so a send never waits for the receiver: every rank may send
//!   left and right before it receives, whatever the size (a blocking send of a large message would wait
//!   for the matching receive and two neighbours sending to each other would deadlock). Finished sends are
//!   collected (`MPI_Test`) at every later call; the transport waits for the rest when it is dropped.
//! - Data and collectives use different tags ([`DATA_TAG`], [`COLLECTIVE_TAG`]), and MPI keeps the order of
//!   the messages of one tag between two ranks, so they never mix.
//! - [`Transport::all_reduce`] gathers every rank's values on rank 0, combines them in rank order and sends
//!   the result back: bit-identical on every rank (`MPI_Allreduce` may add in any order, and a joint time
//!   step must not differ in the last bit between ranks).
//!
//! A failed rank cannot tell its peers (they would wait on it forever): the front end aborts the whole job
//! (`MPI_Abort`) after printing the reason ([`MpiWorld::abort`]).

use super::transport::{Reduce, Side, Transport, TransportError};
use mpi::request::{Request, StaticScope};
use mpi::traits::{Communicator, Destination, Source};
use mpi::Threading;
use std::cell::RefCell;
use thiserror::Error;

/// Tag of neighbour data.
pub const DATA_TAG: i32 = 1;
/// Tag of collective contributions and results.
pub const COLLECTIVE_TAG: i32 = 2;

/// Why MPI could not be started.
#[derive(Debug, Error)]
pub enum MpiError {
    #[error("MPI is already initialised in this process")]
    AlreadyInitialised,
    #[error(
        "the MPI library offers thread level {got:?}; waterview needs {want:?} (build OpenMPI or MPICH with thread support)"
    )]
    Threading { got: Threading, want: Threading },
}

/// MPI, initialised for this process (finalised when dropped: drop every [`MpiTransport`] first).
pub struct MpiWorld {
    universe: mpi::environment::Universe,
}

impl MpiWorld {
    /// Initialises MPI with `MPI_THREAD_SERIALIZED` (the rank may run on another thread than `main`, one
    /// thread at a time). Errors: MPI was initialised before, or the library offers less.
    pub fn init() -> Result<Self, MpiError> {
        let want = Threading::Serialized;
        let (universe, got) = mpi::initialize_with_threading(want).ok_or(MpiError::AlreadyInitialised)?;
        if !matches!(got, Threading::Serialized | Threading::Multiple) {
            return Err(MpiError::Threading { got, want });
        }
        Ok(Self { universe })
    }

    /// This process's rank in `MPI_COMM_WORLD`.
    pub fn rank(&self) -> usize {
        self.universe.world().rank() as usize
    }

    /// Processes in `MPI_COMM_WORLD`.
    pub fn size(&self) -> usize {
        self.universe.world().size() as usize
    }

    /// This process's rank among the ranks on its host (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`), and
    /// how many share the host: the rank's GPU is its local rank.
    pub fn local_rank(&self) -> (usize, usize) {
        let world = self.universe.world();
        let local = world.split_shared(world.rank());
        (local.rank() as usize, local.size() as usize)
    }

    /// The transport of this rank (one per process; several would share tags).
    pub fn transport(&self) -> MpiTransport {
        let world = self.universe.world();
        MpiTransport {
            rank: world.rank() as usize,
            size: world.size() as usize,
            world,
            pending: RefCell::new(Vec::new()),
        }
    }

    /// Ends every rank of the job with exit status `code` (after a rank's error: its peers would wait for
    /// it forever).
    pub fn abort(&self, code: i32) -> ! {
        self.universe.world().abort(code)
    }
}

/// A send in flight and the buffer it reads (owned by the transport until the send completes).
struct Pending {
    request: Request<'static, [u8], StaticScope>,
    buf: *mut [u8],
}

impl Pending {
    /// Takes back the buffer of a completed send.
    fn release(buf: *mut [u8]) {
        // SAFETY: `buf` came from `Box::into_raw` in `MpiTransport::send` and was lent to MPI only for the
        // request, which has completed; nothing else refers to it.
        drop(unsafe { Box::from_raw(buf) });
    }
}

/// One rank's end of the MPI transport (see the module docs); made by [`MpiWorld::transport`].
pub struct MpiTransport {
    rank: usize,
    size: usize,
    world: mpi::topology::SimpleCommunicator,
    pending: RefCell<Vec<Pending>>,
}

// SAFETY: MPI runs at `MPI_THREAD_SERIALIZED` (checked in `MpiWorld::init`), so the transport may be
// used from any thread as long as one thread at a time does, which `Send` without `Sync` guarantees. The
// raw buffers are owned by the transport (see `Pending`).
unsafe impl Send for MpiTransport {}

impl MpiTransport {
    fn peer(&self, side: Side) -> Result<usize, TransportError> {
        self.neighbour(side).ok_or(TransportError::NoNeighbour { rank: self.rank, size: self.size, side })
    }

    /// Releases the sends that have completed (never waits).
    fn collect(&self) {
        let mut pending = self.pending.borrow_mut();
        let mut still = Vec::with_capacity(pending.len());
        for Pending { request, buf } in pending.drain(..) {
            match request.test() {
                Ok(_) => Pending::release(buf),
                Err(request) => still.push(Pending { request, buf }),
            }
        }
        *pending = still;
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        for Pending { request, buf } in self.pending.get_mut().drain(..) {
            request.wait();
            Pending::release(buf);
        }
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn send(&self, side: Side, bytes: Vec<u8>) -> Result<(), TransportError> {
        let peer = self.peer(side)?;
        self.collect();
        let buf: *mut [u8] = Box::into_raw(bytes.into_boxed_slice());
        // SAFETY: the buffer stays alive and untouched until the request completes (`collect` or `drop`
        // release it only then), which is what the static scope asks of it.
        let view: &'static [u8] = unsafe { &*buf };
        let request = self.world.process_at_rank(peer as i32).immediate_send_with_tag(StaticScope, view, DATA_TAG);
        self.pending.borrow_mut().push(Pending { request, buf });
        Ok(())
    }

    fn recv(&self, side: Side) -> Result<Vec<u8>, TransportError> {
        let peer = self.peer(side)?;
        self.collect();
        let (bytes, _) = self.world.process_at_rank(peer as i32).receive_vec_with_tag::<u8>(DATA_TAG);
        Ok(bytes)
    }

    fn all_reduce(&self, values: &[f64], op: Reduce) -> Result<Vec<f64>, TransportError> {
        self.collect();
        let root = self.world.process_at_rank(0);
        let want = values.len();
        if self.rank == 0 {
            let mut acc = values.to_vec();
            let mut mismatch = None;
            for peer in 1..self.size {
                let (theirs, _) = self.world.process_at_rank(peer as i32).receive_vec_with_tag::<f64>(COLLECTIVE_TAG);
                if theirs.len() != want {
                    mismatch.get_or_insert(TransportError::Mismatch { rank: 0, peer, got: theirs.len(), want });
                    continue;
                }
                acc.iter_mut().zip(&theirs).for_each(|(a, &b)| *a = op.apply(*a, b));
            }
            // Answer every rank even after a mismatch, so none waits for rank 0; each sees the length.
            for peer in 1..self.size {
                self.world.process_at_rank(peer as i32).send_with_tag(&acc[..], COLLECTIVE_TAG);
            }
            mismatch.map_or(Ok(acc), Err)
        } else {
            root.send_with_tag(values, COLLECTIVE_TAG);
            let (acc, _) = root.receive_vec_with_tag::<f64>(COLLECTIVE_TAG);
            if acc.len() != want {
                return Err(TransportError::Mismatch { rank: self.rank, peer: 0, got: acc.len(), want });
            }
            Ok(acc)
        }
    }
}
