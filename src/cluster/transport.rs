//! How the ranks of a decomposed simulation talk: byte buffers to and from the left and right neighbour
//! (slab `rank - 1` and `rank + 1`) and collectives over all ranks (all-reduce of a few `f64`s, barrier).
//! [`Transport`] is object-safe and knows no wgpu type, so the rank logic ([`super::rank`]) is written
//! once for every transport: [`ThreadTransport`] here (one host thread per GPU in one process, std
//! channels), and with `--features mpi` the MPI one in src/cluster/mpi.rs (one process per GPU; immediate
//! sends, reductions in rank order on rank 0).
//!
//! Ordering: every rank runs the same program (SPMD), so the messages between two ranks arrive in the
//! order they were sent; neighbour data and collectives travel on separate channels and never mix. A
//! reduction combines the ranks' values in rank order on every rank, so all ranks get bit-identical
//! results (a joint time step or convergence test must not differ in the last bit between ranks).
//! Nothing blocks forever: a rank whose peer has gone (its thread ended or panicked) gets
//! [`TransportError::Disconnected`].
//!
//! [`LoopbackTransport`] is one rank that is its own left and right neighbour (issue 30's loopback): it
//! sends its real halos through the transport to itself, so one GPU measures what the exchange costs a
//! rank ([`super::Rank`] places the returned ghosts out of reach, `waterview bench --loopback`).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::mpsc::{channel, Receiver, Sender};
use thiserror::Error;

/// A neighbour of a rank along the decomposition axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Rank `rank - 1` (the slab below along the axis).
    Left,
    /// Rank `rank + 1`.
    Right,
}

/// How an all-reduce combines the ranks' values (element-wise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    Min,
    Max,
}

impl Reduce {
    /// `a` combined with `b` (the order of a sum matters in its last bits: reduce in rank order).
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Reduce::Sum => a + b,
            Reduce::Min => a.min(b),
            Reduce::Max => a.max(b),
        }
    }
}

/// Why a message could not be sent or received.
#[derive(Debug, Error)]
pub enum TransportError {
    /// The peer's end is gone (its thread or process ended, e.g. after an error of its own).
    #[error("rank {rank}: rank {peer} is gone (it stopped, probably on an error of its own)")]
    Disconnected { rank: usize, peer: usize },
    /// A neighbour that does not exist (left of rank 0, right of the last rank).
    #[error("rank {rank} of {size} has no {side:?} neighbour")]
    NoNeighbour { rank: usize, size: usize, side: Side },
    /// A peer sent a reduction of another length (the ranks' programs diverged: a bug).
    #[error("rank {rank}: all-reduce of {got} values from rank {peer}, {want} expected")]
    Mismatch { rank: usize, peer: usize, got: usize, want: usize },
    /// The loopback rank waited for a message it had not sent (it would wait forever: a bug).
    #[error("the loopback rank receives from its {side:?} side, where it sent nothing")]
    NothingSent { side: Side },
}

/// The messages a rank exchanges. Object-safe and free of wgpu types (an MPI transport implements it
/// too). Every rank must call the collectives in the same order.
pub trait Transport: Send {
    /// This rank, 0 ..< [`Transport::size`].
    fn rank(&self) -> usize;
    /// Ranks in all.
    fn size(&self) -> usize;
    /// Sends `bytes` to the neighbour on `side` (never blocks on the receiver).
    /// Errors: no neighbour there, or it is gone.
    fn send(&self, side: Side, bytes: Vec<u8>) -> Result<(), TransportError>;
    /// The next buffer the neighbour on `side` sent, waiting for it.
    /// Errors: no neighbour there, or it is gone.
    fn recv(&self, side: Side) -> Result<Vec<u8>, TransportError>;
    /// Every rank's `values` combined element-wise by `op` (the same on every rank, bit for bit).
    /// Errors: a peer is gone or sent another length.
    fn all_reduce(&self, values: &[f64], op: Reduce) -> Result<Vec<f64>, TransportError>;
    /// Returns once every rank has called it. Errors: a peer is gone.
    fn barrier(&self) -> Result<(), TransportError> {
        self.all_reduce(&[], Reduce::Sum).map(|_| ())
    }

    /// The neighbour rank on `side`, if there is one.
    fn neighbour(&self, side: Side) -> Option<usize> {
        match side {
            Side::Left => self.rank().checked_sub(1),
            Side::Right => Some(self.rank() + 1).filter(|&r| r < self.size()),
        }
    }

    /// True for [`LoopbackTransport`]: the one rank is its own neighbour on both sides.
    fn loops_back(&self) -> bool {
        false
    }
}

/// The in-process transport: one rank per host thread, all channels between them made up front
/// ([`ThreadTransport::group`]); move each to its thread.
pub struct ThreadTransport {
    rank: usize,
    size: usize,
    /// Neighbour data to each rank (index = destination; `None` for self).
    data_to: Vec<Option<Sender<Vec<u8>>>>,
    /// Neighbour data from each rank (index = source).
    data_from: Vec<Option<Receiver<Vec<u8>>>>,
    /// Collective contributions to and from each rank.
    coll_to: Vec<Option<Sender<Vec<f64>>>>,
    coll_from: Vec<Option<Receiver<Vec<f64>>>>,
}

impl ThreadTransport {
    /// `size` connected ranks (index = rank), `size` >= 1.
    pub fn group(size: usize) -> Vec<ThreadTransport> {
        let mut ranks: Vec<ThreadTransport> = (0..size)
            .map(|rank| ThreadTransport {
                rank,
                size,
                data_to: (0..size).map(|_| None).collect(),
                data_from: (0..size).map(|_| None).collect(),
                coll_to: (0..size).map(|_| None).collect(),
                coll_from: (0..size).map(|_| None).collect(),
            })
            .collect();
        for from in 0..size {
            for to in 0..size {
                if from != to {
                    let (tx, rx) = channel();
                    ranks[from].data_to[to] = Some(tx);
                    ranks[to].data_from[from] = Some(rx);
                    let (tx, rx) = channel();
                    ranks[from].coll_to[to] = Some(tx);
                    ranks[to].coll_from[from] = Some(rx);
                }
            }
        }
        ranks
    }

    fn peer(&self, side: Side) -> Result<usize, TransportError> {
        self.neighbour(side).ok_or(TransportError::NoNeighbour { rank: self.rank, size: self.size, side })
    }

    fn gone(&self, peer: usize) -> TransportError {
        TransportError::Disconnected { rank: self.rank, peer }
    }
}

impl Transport for ThreadTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn send(&self, side: Side, bytes: Vec<u8>) -> Result<(), TransportError> {
        let peer = self.peer(side)?;
        let tx = self.data_to[peer].as_ref().ok_or(self.gone(peer))?;
        tx.send(bytes).map_err(|_| self.gone(peer))
    }

    fn recv(&self, side: Side) -> Result<Vec<u8>, TransportError> {
        let peer = self.peer(side)?;
        let rx = self.data_from[peer].as_ref().ok_or(self.gone(peer))?;
        rx.recv().map_err(|_| self.gone(peer))
    }

    fn all_reduce(&self, values: &[f64], op: Reduce) -> Result<Vec<f64>, TransportError> {
        for (peer, tx) in self.coll_to.iter().enumerate() {
            if let Some(tx) = tx {
                tx.send(values.to_vec()).map_err(|_| self.gone(peer))?;
            }
        }
        // Combine in rank order (own values at their place), so every rank computes the same bits.
        let mut acc: Option<Vec<f64>> = None;
        for peer in 0..self.size {
            let theirs = match &self.coll_from[peer] {
                None => values.to_vec(),
                Some(rx) => rx.recv().map_err(|_| self.gone(peer))?,
            };
            if theirs.len() != values.len() {
                return Err(TransportError::Mismatch { rank: self.rank, peer, got: theirs.len(), want: values.len() });
            }
            acc = Some(match acc {
                None => theirs,
                Some(a) => a.iter().zip(&theirs).map(|(&x, &y)| op.apply(x, y)).collect(),
            });
        }
        Ok(acc.unwrap_or_default())
    }
}

/// One rank that is its own left and right neighbour (see the module docs): what it sends to its right
/// arrives as what its left neighbour sent, and the reverse, as on a ring of one; reductions return its
/// own values. It counts what passes through it, for the loopback's figures. Single-threaded (the rank's
/// own thread): a receive with nothing sent is an error, not a wait.
#[derive(Debug, Default)]
pub struct LoopbackTransport {
    /// Messages waiting to be received from the (left, right) side.
    inbox: [RefCell<VecDeque<Vec<u8>>>; 2],
    /// Neighbour messages sent, their bytes, and all-reduces, since the start.
    messages: Cell<u64>,
    bytes: Cell<u64>,
    reductions: Cell<u64>,
}

/// What a [`LoopbackTransport`] carried since its start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopbackCounts {
    /// Neighbour messages sent (each received once).
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
    /// All-reduces (collective rounds, barriers included).
    pub reductions: u64,
}

impl LoopbackTransport {
    /// What passed through so far.
    pub fn counts(&self) -> LoopbackCounts {
        LoopbackCounts { messages: self.messages.get(), bytes: self.bytes.get(), reductions: self.reductions.get() }
    }

    fn inbox(&self, from: Side) -> &RefCell<VecDeque<Vec<u8>>> {
        &self.inbox[(from == Side::Right) as usize]
    }
}

impl Transport for LoopbackTransport {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    /// What goes to the right arrives from the left (the right neighbour's left neighbour is this rank).
    fn send(&self, side: Side, bytes: Vec<u8>) -> Result<(), TransportError> {
        let from = match side {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        };
        self.messages.set(self.messages.get() + 1);
        self.bytes.set(self.bytes.get() + bytes.len() as u64);
        self.inbox(from).borrow_mut().push_back(bytes);
        Ok(())
    }

    fn recv(&self, side: Side) -> Result<Vec<u8>, TransportError> {
        self.inbox(side).borrow_mut().pop_front().ok_or(TransportError::NothingSent { side })
    }

    fn all_reduce(&self, values: &[f64], _op: Reduce) -> Result<Vec<f64>, TransportError> {
        self.reductions.set(self.reductions.get() + 1);
        Ok(values.to_vec())
    }

    fn neighbour(&self, _side: Side) -> Option<usize> {
        Some(0)
    }

    fn loops_back(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on every rank of a group of `size` on its own thread; the results by rank.
    fn on_ranks<R: Send + 'static>(
        size: usize,
        f: impl Fn(ThreadTransport) -> R + Send + Sync + Copy + 'static,
    ) -> Vec<R> {
        let handles: Vec<_> =
            ThreadTransport::group(size).into_iter().map(|t| std::thread::spawn(move || f(t))).collect();
        handles.into_iter().map(|h| h.join().expect("rank thread")).collect()
    }

    #[test]
    fn neighbours_exchange_in_order() {
        let got = on_ranks(3, |t| {
            for side in [Side::Left, Side::Right] {
                if t.neighbour(side).is_some() {
                    t.send(side, vec![t.rank() as u8, 1]).unwrap();
                    t.send(side, vec![t.rank() as u8, 2]).unwrap();
                }
            }
            let mut got = Vec::new();
            for side in [Side::Left, Side::Right] {
                if t.neighbour(side).is_some() {
                    got.push(t.recv(side).unwrap());
                    got.push(t.recv(side).unwrap());
                }
            }
            got
        });
        assert_eq!(got[0], vec![vec![1, 1], vec![1, 2]]);
        assert_eq!(got[1], vec![vec![0, 1], vec![0, 2], vec![2, 1], vec![2, 2]]);
        assert_eq!(got[2], vec![vec![1, 1], vec![1, 2]]);
    }

    #[test]
    fn all_reduce_agrees_bit_for_bit() {
        let got = on_ranks(4, |t| {
            let r = t.rank() as f64;
            let sum = t.all_reduce(&[0.1 * r, 1e16 * (r - 1.5), 1.0], Reduce::Sum).unwrap();
            let min = t.all_reduce(&[r], Reduce::Min).unwrap();
            let max = t.all_reduce(&[r], Reduce::Max).unwrap();
            t.barrier().unwrap();
            (sum, min[0], max[0])
        });
        let expect = (0..4).map(|r| 0.1 * r as f64).fold(0.0, |a, b| a + b);
        for (sum, min, max) in &got {
            assert_eq!(sum[0].to_bits(), expect.to_bits());
            assert_eq!(sum[1].to_bits(), got[0].0[1].to_bits());
            assert_eq!((sum[2], *min, *max), (4.0, 0.0, 3.0));
        }
    }

    #[test]
    fn missing_neighbour_and_gone_peer_are_errors() {
        let mut group = ThreadTransport::group(2);
        let right = group.pop().unwrap();
        let left = group.pop().unwrap();
        assert!(matches!(left.send(Side::Left, vec![]), Err(TransportError::NoNeighbour { rank: 0, .. })));
        drop(right);
        assert!(matches!(left.recv(Side::Right), Err(TransportError::Disconnected { rank: 0, peer: 1 })));
        assert!(matches!(left.all_reduce(&[1.0], Reduce::Sum), Err(TransportError::Disconnected { .. })));
    }

    #[test]
    fn loopback_returns_what_went_right_from_the_left_and_counts_it() {
        let t = LoopbackTransport::default();
        assert_eq!((t.neighbour(Side::Left), t.neighbour(Side::Right), t.loops_back()), (Some(0), Some(0), true));
        t.send(Side::Right, vec![1, 2]).unwrap();
        t.send(Side::Right, vec![3]).unwrap();
        t.send(Side::Left, vec![4, 5, 6]).unwrap();
        assert_eq!(t.recv(Side::Right).unwrap(), vec![4, 5, 6]);
        assert_eq!(t.recv(Side::Left).unwrap(), vec![1, 2]);
        assert_eq!(t.recv(Side::Left).unwrap(), vec![3]);
        assert!(matches!(t.recv(Side::Left), Err(TransportError::NothingSent { side: Side::Left })));
        assert_eq!(t.all_reduce(&[1.5], Reduce::Sum).unwrap(), vec![1.5]);
        assert_eq!(t.counts(), LoopbackCounts { messages: 3, bytes: 6, reductions: 1 });
    }

    #[test]
    fn one_rank_reduces_to_itself() {
        let t = ThreadTransport::group(1).pop().unwrap();
        assert_eq!(t.all_reduce(&[2.5, -1.0], Reduce::Max).unwrap(), vec![2.5, -1.0]);
        assert_eq!(t.neighbour(Side::Right), None);
    }
}
