//! A rank's border exchange before a step (steps 2 and 3 of [`super`]'s module docs) and its growth when
//! what it receives outgrows its simulation ([`super::RankConfig::spare`]).

use super::{rank_capacity, Rank};
use crate::cluster::transport::{Side, Transport};
use crate::cluster::{ClusterError, GHOST};
use crate::sim::border::ENTRY_BYTES;
use crate::sim::{BorderRange, RankParticles};

impl<T: Transport> Rank<T> {
    /// Steps 2 and 3 of [`super`]'s module docs after a step: the GPU selects the migrants and the halo copies and
    /// drops the ghosts (src/sim/border.rs); only those travel, through the host, and what the neighbours
    /// sent (their migrants, then the ghosts) is appended after the kept particles.
    pub(super) fn exchange_border(&mut self) -> Result<BorderOutcome, ClusterError> {
        let rank = self.transport.rank();
        let (lo, hi) = self.range();
        let axis = self.slabs.axis;
        let range = BorderRange { axis, lo, hi, halo: self.halo };
        let sel = self
            .sim
            .select_border_blocking(&self.ctx, &self.profiler, &range)
            .map_err(|cause| ClusterError::Sim { rank, cause })?;
        self.send(Side::Left, &sel.migrants[0])?;
        self.send(Side::Right, &sel.migrants[1])?;
        let mut appended = self.recv(Side::Left)?;
        let from_right = self.recv(Side::Right)?;
        let migrated_in = [appended.len() as u32, from_right.len() as u32];
        appended.extend(&from_right);
        // The received migrants within a halo are halo copies too (after the GPU's, in this order); they
        // will sit after the kept particles.
        let [mut left, mut right] = sel.halo;
        let mut sent = sel.halo_slots;
        for i in 0..appended.len() {
            let c = appended.pos[i][axis];
            if c < lo + self.halo {
                left.push_from(&appended, i);
                sent[0].push(sel.kept + i as u32);
            }
            if c >= hi - self.halo {
                right.push_from(&appended, i);
                sent[1].push(sel.kept + i as u32);
            }
        }
        self.send(Side::Left, &left)?;
        self.send(Side::Right, &right)?;
        let mut ghosts = self.recv_ghosts(Side::Left)?;
        ghosts.extend(&self.recv_ghosts(Side::Right)?);
        for id in &mut ghosts.ids {
            *id |= GHOST;
        }
        let migrants = appended.len();
        let finite = |v: &[f32; 4]| v[..3].iter().all(|c| c.is_finite());
        let speed =
            appended.vel.iter().map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()).fold(sel.max_speed, f32::max);
        let broken = sel.broken || appended.pos.iter().zip(&appended.vel).any(|(p, v)| !finite(p) || !finite(v));
        let owned = sel.kept + migrants as u32;
        appended.extend(&ghosts);
        let bounds = appended.pos.iter().fold(sel.bounds, |(l, h), p| {
            (std::array::from_fn(|a| l[a].min(p[a])), std::array::from_fn(|a| h[a].max(p[a])))
        });
        let reserve = self.sim.emission_per_step() as u64;
        let grew = sel.kept as u64 + appended.len() as u64 + reserve > self.sim.capacity() as u64;
        let written = if grew {
            self.grow(&appended, reserve as u32)?
        } else {
            self.sim
                .append_rank_particles(&self.ctx, sel.kept, &appended)
                .map_err(|cause| ClusterError::Sim { rank, cause })?
        };
        self.sent = sent;
        self.ghosts = owned..owned + ghosts.len() as u32;
        Ok(BorderOutcome {
            owned,
            ghosts: self.ghosts.len() as u32,
            migrated_in,
            speed,
            broken,
            bounds,
            bytes: sel.bytes_read + written,
            retries: sel.retries,
            read_backs: sel.read_backs + grew as u32,
            grew,
        })
    }

    /// Rebuilds this rank's simulation with room for the particles it holds, `appended` after them,
    /// `reserve` slots (a step's emission) and [`RankConfig::spare`] more ([`Simulation::grown_for_rank`]),
    /// after a border selection or before the first step: the held particles are read back (blocking) and
    /// written again with the rest. Returns the bytes
    /// moved.
    /// Errors: the read-back failed or the larger simulation does not fit the device.
    pub(super) fn grow(&mut self, appended: &RankParticles, reserve: u32) -> Result<u64, ClusterError> {
        let rank = self.transport.rank();
        let started = std::time::Instant::now();
        let mut held = self.sim.read_rank_particles_blocking(&self.ctx).map_err(ClusterError::Step)?;
        let read = held.len() as u64 * ENTRY_BYTES;
        held.extend(appended);
        // Without emitters a rank never holds more than the scene's particles.
        let most = if reserve > 0 { u32::MAX } else { super::most_held(self.total, self.ring.is_some()) };
        // At least GROWTH more, at most as much again (a whole-scene room past the scene's count, with
        // emitters, would be unbounded).
        let spare = self.config.spare.clamp(GROWTH, 1.0);
        let capacity = rank_capacity(held.len() as u32 + reserve, spare, most);
        self.sim =
            self.sim.grown_for_rank(&self.ctx, capacity, &held).map_err(|cause| ClusterError::Sim { rank, cause })?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        log::info!("rank {rank}: {} particles outgrew its slots; rebuilt with {capacity} in {ms:.0} ms", held.len());
        Ok(read + held.len() as u64 * ENTRY_BYTES)
    }
}

/// Least room a growth leaves, as a fraction of the particles held (so a rank with no spare room does
/// not rebuild at every gain).
const GROWTH: f32 = 0.25;

/// What the border exchange before a step leaves the step (see [`Rank::step`]).
pub(super) struct BorderOutcome {
    pub(super) owned: u32,
    pub(super) ghosts: u32,
    pub(super) migrated_in: [u32; 2],
    /// Largest owned speed on this rank, m/s.
    pub(super) speed: f32,
    /// An owned particle is non-finite.
    pub(super) broken: bool,
    /// Bounds of owned and ghosts, m.
    pub(super) bounds: ([f32; 3], [f32; 3]),
    /// Bytes read back from and written to the device.
    pub(super) bytes: u64,
    pub(super) retries: u32,
    /// Blocking GPU-to-host read-backs of the selection (and of a growth).
    pub(super) read_backs: u32,
    /// The simulation grew to hold what arrived.
    pub(super) grew: bool,
}
