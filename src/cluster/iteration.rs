//! The per-iteration exchange of one host-driven step (src/sim/ranked_step.rs) over a rank's transport
//! ([`super::Rank::step`]): the sent particles and the ghosts are those of the step's ghost exchange, in
//! its order, so both sides agree on the order of the values without sending ids again; the GPU finds
//! them by the slots the rank wrote them to (src/sim/halo.rs), so nothing but the values is read back.

use super::exchange::{decode_f32, encode_f32};
use super::transport::{Reduce, Side, Transport};
use super::ClusterError;
use crate::sim::RankExchange;
use std::ops::Range;
use std::time::Instant;

/// One step's per-iteration exchange (see the module docs).
pub(super) struct IterationExchange<'a, T: Transport> {
    pub transport: &'a T,
    /// Slots (as written before the step) of the particles sent as ghosts to the left and to the right
    /// neighbour, in the order sent.
    pub sent: &'a [Vec<u32>; 2],
    /// Slots of the ghosts (from the left neighbour first, in the order received): they follow the owned.
    pub ghosts: Range<u32>,
    pub owned: u32,
    /// This step's inner region (axis, lo, hi) when the inner update overlaps the exchange, see
    /// [`RankExchange::inner_region`].
    pub inner: Option<(u32, f32, f32)>,
    /// Wall-clock time in the exchange and the joint error, s.
    pub seconds: f64,
    /// Bytes read back from and written to the device (the values sent and received).
    pub bytes: u64,
    /// Exchanges so far: each follows one blocking read-back of the values and the error sum.
    pub read_backs: u32,
}

impl<T: Transport> RankExchange for IterationExchange<'_, T> {
    type Error = ClusterError;

    fn slots(&mut self) -> Result<(Vec<u32>, Vec<u32>), ClusterError> {
        Ok((self.sent.concat(), self.ghosts.clone().collect()))
    }

    fn exchange(&mut self, gathered: &[f32], per_slot: usize) -> Result<Vec<f32>, ClusterError> {
        let t = Instant::now();
        self.read_backs += 1;
        let split = (per_slot * self.sent[0].len()).min(gathered.len());
        for (side, part) in [(Side::Left, &gathered[..split]), (Side::Right, &gathered[split..])] {
            if self.transport.neighbour(side).is_some() {
                self.transport.send(side, encode_f32(part))?;
            }
        }
        self.bytes += gathered.len() as u64 * 4;
        let mut out = Vec::with_capacity(per_slot * self.ghosts.len());
        for side in [Side::Left, Side::Right] {
            if self.transport.neighbour(side).is_some() {
                out.extend(decode_f32(&self.transport.recv(side)?)?);
            }
        }
        self.bytes += out.len() as u64 * 4;
        self.seconds += t.elapsed().as_secs_f64();
        Ok(out)
    }

    fn inner_region(&self) -> Option<(u32, f32, f32)> {
        self.inner
    }

    fn joint_error(&mut self, err_sum: f64) -> Result<(f64, f64), ClusterError> {
        let t = Instant::now();
        let joint = self.transport.all_reduce(&[err_sum, self.owned as f64], Reduce::Sum)?;
        self.seconds += t.elapsed().as_secs_f64();
        Ok((joint[0], joint[1]))
    }
}
