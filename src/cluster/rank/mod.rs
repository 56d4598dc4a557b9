//! What every rank runs (SPMD; Werner 2015, docs/background.md section 6): a [`Simulation`] on its own
//! device holding its slab's particles (owned) followed by ghost copies of the neighbours' particles
//! within the halo. Ghosts take part in every neighbour sum; the step integrates them too, but their
//! results are thrown away: every step starts from the owners' fresh copies.
//!
//! One step ([`Rank::step`]), N > 1:
//! 1. load balance every `balance_every` steps: the ranks' step times (all-reduced) move the slowest
//!    slab's border toward its faster neighbour by half the layers that would equalise them
//!    ([`Slabs::rebalance`]). The times are the
//!    steps' GPU time from timestamp queries (src/gpu/profiler.rs; the exchange's passes left out), which
//!    no host wait or other rank's thread inflates; on a device without timestamps, the wall clock from
//!    the step's submission to its end; each rank's median over the steps measured since the last
//!    decision (one slow step moves no border);
//! 2. on the GPU (src/sim/border.rs): drop the ghosts, compact the particles that stay into the first
//!    slots and list the owned particles that left the slab (migrants, with all their state and id) and
//!    those within the halo of each border; read back only the counts and those lists; send the migrants
//!    to the neighbour on that side;
//! 3. send the halo copies (the received migrants within a halo included) to that neighbour (ghosts) and
//!    append the received migrants and ghosts after the kept particles (`queue.write_buffer` of those
//!    slots only);
//! 4. all-reduce the largest owned speed (from the selection) and the highest particle of the last step
//!    (the pressure bound's water height), so every rank takes the same dt, one GPU's;
//! 5. record the step, wait for it.
//!
//! The first step's ghosts are placed by [`Rank::new`], which has every particle. A list that overflows
//! its capacity is counted, not written: the selection runs again with room for it (nothing is lost).
//!
//! The halo is `halo_supports` support radii deep. A WCSPH step reads the ghosts' densities, which need
//! their own neighbours: 2 support radii make an owned particle's step the single-GPU one (up to the
//! order of the sums); surface tension (normals from densities) needs 3. DFSPH's solves run host-driven
//! on several ranks (src/sim/ranked_step.rs): every iteration the ghosts' kappa / rho come fresh from
//! their owners (their velocities once per solve) and the convergence test is the joint mean error over all ranks' owned particles, so
//! every rank takes the single-GPU iteration count. PCISPH's fixed iterations run host-driven too, the
//! ghosts' densities and pressures exchanged after each.
//! Everything goes through host memory (wgpu has no peer-to-peer copies), but only what must be
//! exchanged: [`RankStats::exchange_bytes`] counts it. Each DFSPH iteration's update runs once the
//! ghosts' values have arrived ([`RankConfig::overlap`] runs the inner particles' while they travel,
//! src/sim/ranked_step.rs); the border exchange once per step is waited for too.

use super::exchange::{decode, encode};
use super::iteration::IterationExchange;
use super::slab::{longest_axis, Slabs};
use super::transport::{Reduce, Side, Transport};
use super::ClusterError;
use crate::gpu::{GpuContext, Profiler};
use crate::scene::Aabb;
use crate::scene::{Emitter, Sink};
use crate::sim::obstacles::Obstacle;
use crate::sim::sources::RankEmission;
use crate::sim::{Method, RankParticles, SimOptions, SimParams, Simulation};
use crate::terrain::Heightfield;
use std::time::Instant;

mod border;
mod ring;
use border::BorderOutcome;
use ring::Ring;

/// Id bit of a ghost (ids of particles are below it).
pub const GHOST: u32 = 1 << 31;

/// How the ranks decompose and balance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankConfig {
    /// Halo depth in support radii (2 for WCSPH, 3 with surface tension; see the module docs).
    pub halo_supports: u32,
    /// Steps between load-balancing decisions (0 = borders never move).
    pub balance_every: u32,
    /// A border moves only when the slowest rank is slower than its faster neighbour by more than this
    /// fraction.
    pub balance_tolerance: f64,
    /// First capacity of each border list, entries (src/sim/border.rs; `None`: a sixteenth of the
    /// particles, at least 64). Lists grow when a selection overflows them; tests set a tiny one.
    pub border_lists: Option<u32>,
    /// Room a rank's simulation keeps beyond the particles it holds (owned and ghosts), as a fraction of
    /// them: it starts with `(1 + spare)` times its first particles (at least [`MIN_SPARE`] more, at most
    /// the scene's count) and, when migrants and ghosts outgrow it, is rebuilt with `(1 + spare)` times what
    /// it then holds ([`Simulation::grown_for_rank`]). So a rank holds, allocates and sorts about its
    /// share of the particles, not the whole scene's ([`OWN_SHARE`]; the default is [`WHOLE_SCENE`] for now).
    /// Tests set 0 to grow at the first gain.
    pub spare: f32,
    /// Run each DFSPH iteration's update of the inner particles (no ghost within their support) while the
    /// ghosts' values travel, and the rest's after them (src/sim/ranked_step.rs), instead of one update of
    /// every particle after they arrive. Off by default: the two dispatches each span nearly every warp
    /// when the slabs cut along x (the grid's rows), so the loopback's iteration cost 1.48 times one GPU's
    /// with it on lavapipe (`bench --loopback`, docs/performance.md).
    pub overlap: bool,
}

/// Fewest free slots a rank's simulation starts with (see [`RankConfig::spare`]).
pub const MIN_SPARE: u32 = 1024;

/// A [`RankConfig::spare`] that gives every rank slots for the whole scene (capped there by
/// [`rank_capacity`]): the default until a rank holding its own share is understood on NVIDIA. On one
/// H100 the dam break at 3.32 M particles on two ranks (two devices on the GPU) with each rank's own share
/// did not finish 10 steps in 100 s, nor 20 in 450 s, and logged no growth; with the whole scene's slots
/// it ran at 77.9 ms a step (2026-12-07 and -08; on lavapipe and in the loopback up to 32 M particles
/// the own share runs, docs/performance.md).
pub const WHOLE_SCENE: f32 = 1.0e6;

/// The room of a rank that holds its own share (owned and ghosts) and a quarter more
/// ([`RankConfig::spare`]): the loopback's (`bench --loopback`) and the tests'.
pub const OWN_SHARE: f32 = 0.25;

/// Most particles a rank of a scene of `total` holds without emitters: owned particles and ghosts are
/// distinct particles of the scene, except on the loopback rank, whose ghosts copy its own particles.
fn most_held(total: u32, loopback: bool) -> u32 {
    if loopback {
        total.saturating_mul(2)
    } else {
        total
    }
}

/// Slots for a rank that holds `held` particles of a scene of `total`, keeping `spare` of them free (at
/// least [`MIN_SPARE`] slots where `spare` > 0); never more than `total` (owned particles and ghosts are
/// distinct particles of the scene) nor fewer than `held`.
pub fn rank_capacity(held: u32, spare: f32, total: u32) -> u32 {
    let room = (held as f64 * spare.max(0.0) as f64).ceil() as u64;
    let room = if spare > 0.0 { room.max(MIN_SPARE as u64) } else { room };
    (held as u64 + room).min(total as u64).max(held as u64) as u32
}

impl RankConfig {
    /// The halo `params` need (see the module docs), balancing every 5 steps at 5 %.
    pub fn for_params(params: &SimParams) -> Self {
        let halo_supports = if params.surface_tension > 0.0 { 3 } else { 2 };
        Self {
            halo_supports,
            balance_every: 5,
            balance_tolerance: 0.05,
            border_lists: None,
            spare: WHOLE_SCENE,
            overlap: false,
        }
    }
}

/// One rank's figures for its last step.
#[derive(Clone, Debug, PartialEq)]
pub struct RankStats {
    pub rank: usize,
    /// Particles owned (counted once over all ranks).
    pub owned: u32,
    /// Ghost copies held.
    pub ghosts: u32,
    /// Particles received from the neighbours as migrants this step (left, right).
    pub migrated_in: [u32; 2],
    /// Simulated time after the step, s (the same on every rank: the time step is joint).
    pub time: f32,
    /// DFSPH's (density, divergence) solve iterations of the step (the same on every rank: the
    /// convergence test is joint).
    pub iterations: (u32, u32),
    /// Wall-clock time of the step's GPU work (recorded to finished), ms.
    pub step_ms: f64,
    /// GPU time of the step's passes from timestamp queries (the border selection and halo passes left
    /// out: they are exchange), ms, of the latest step whose timestamps came back (they arrive a step or
    /// so late); `None` where the device has no timestamps. Load balancing sums it, or `step_ms` without.
    pub gpu_ms: Option<f64>,
    /// Wall-clock time of the read-back, exchange and upload, ms.
    pub exchange_ms: f64,
    /// Bytes of the border exchange before the step that moved between this rank's device and the host:
    /// the counts and the migrants and halo copies read back, the received migrants and ghosts written
    /// (36 bytes per particle: position, velocity, id; a growth reads and writes every particle). 0 for
    /// the first step (`new` placed the ghosts).
    pub exchange_bytes: u64,
    /// Slots of this rank's simulation (owned, ghosts and free; [`RankConfig::spare`]).
    pub capacity: u32,
    /// Whether the simulation grew before this step (migrants and ghosts outgrew its capacity).
    pub grew: bool,
    /// Bytes the host-driven solves moved between the device and the host within the step (the sorted
    /// ids once, the halo's values and the ghosts' each exchange; 0 for WCSPH).
    pub iteration_bytes: u64,
    /// Border selections run again because a list overflowed its capacity (src/sim/border.rs).
    pub border_retries: u32,
    /// Blocking GPU-to-host read-backs of the step: the border selection's, one a solve iteration (the
    /// ghosts' values with the error sum) and one a velocity exchange, the step state's at the end.
    pub read_backs: u32,
    /// The slab borders now, m along the axis.
    pub borders: Vec<f32>,
}

/// Whether ranks running with `old` can take `new` live ([`Rank::set_params`]): no rebuild and the same
/// halo depth.
pub fn live_params(old: &SimParams, new: &SimParams) -> bool {
    !old.needs_rebuild(new) && same_halo(old, new)
}

/// Whether `old` and `new` need the same halo depth (surface tension on or off changes it).
fn same_halo(old: &SimParams, new: &SimParams) -> bool {
    RankConfig::for_params(old).halo_supports == RankConfig::for_params(new).halo_supports
}

/// The median of `times` (sorted in place), NaN when empty: a rank's step time for the load balancing.
/// A median, not a sum: the timestamps come back for some steps only, a different number on each rank,
/// and one slow step (a shared machine, a driver hiccup) must not move a border.
fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    match times.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => times[n / 2],
        n => 0.5 * (times[n / 2 - 1] + times[n / 2]),
    }
}

/// Figures per rank of [`Rank::gather`].
pub const GATHERED: usize = 8;

/// One rank of a decomposed simulation (see the module docs).
pub struct Rank<T: Transport> {
    transport: T,
    ctx: GpuContext,
    sim: Simulation,
    profiler: Profiler,
    slabs: Slabs,
    config: RankConfig,
    halo: f32,
    steps: u64,
    /// Step times measured since the last balancing, ms: GPU time from timestamps where the device has
    /// them (they come back for some steps only), else wall clock (see [`RankStats::gpu_ms`]).
    busy_ms: Vec<f64>,
    /// Profiler frames seen (a new one carries a step's GPU times).
    frames_seen: u64,
    last: Option<RankStats>,
    /// Slots (as written before the current step) of the particles sent as ghosts to the (left, right)
    /// neighbour, in the order sent.
    sent: [Vec<u32>; 2],
    /// Slots of this rank's ghosts (after the owned particles), from the left neighbour first.
    ghosts: std::ops::Range<u32>,
    /// The first step's border, placed by [`Rank::new`] (taken by the first step).
    first: Option<BorderOutcome>,
    /// Particles of the scene at the start: without emitters a rank never holds more; with them, the
    /// first emitted id ([`RankEmission`]).
    total: u32,
    /// The highest of this rank's particles after its last step above the domain's floor, m (0 before
    /// the first: the domain's height, as one GPU's first step takes).
    top: f32,
    /// The loopback rank's slab and ghost placement (`None` for ranks with real neighbours; see
    /// src/cluster/rank/ring.rs).
    ring: Option<Ring>,
}

impl<T: Transport> Rank<T> {
    /// The rank `transport.rank()` of the simulation of `all` (every particle of the scene, ids = their
    /// index; each rank is given the same) in `domain` against `boundary` (the terrain and the static
    /// obstacles, which every rank holds whole): slabs along the particles' longest
    /// axis at equal counts, the own slab's particles and ghosts on `ctx`'s device with the room of
    /// [`RankConfig::spare`].
    /// Errors: the domain is too thin for the ranks' slabs, a rank gets no particles, the simulation
    /// cannot be built (the cause names the rank).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        transport: T,
        ctx: GpuContext,
        domain: &Aabb,
        boundary: (&Heightfield, &[Obstacle]),
        params: &SimParams,
        options: SimOptions,
        config: RankConfig,
        all: &RankParticles,
    ) -> Result<Self, ClusterError> {
        let rank = transport.rank();
        if all.len() as u64 >= GHOST as u64 {
            return Err(ClusterError::TooManyParticles { count: all.len() as u64 });
        }
        let (lo, hi) = all.pos.iter().fold(([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]), |(lo, hi), p| {
            (std::array::from_fn(|a| lo[a].min(p[a])), std::array::from_fn(|a| hi[a].max(p[a])))
        });
        let axis = if lo[0] <= hi[0] { longest_axis(lo, hi) } else { 0 };
        let support = params.support();
        let coords: Vec<f32> = all.pos.iter().map(|p| p[axis]).collect();
        let extent = domain.max[axis] - domain.min[axis];
        let ranks = transport.size();
        let min_layers = config.halo_supports.max(1);
        let slabs = Slabs::balanced(axis, domain.min[axis], extent, support, min_layers, ranks, &coords)
            .ok_or(ClusterError::TooThin { ranks, extent, cell: support, min_layers })?;
        // Owned particles, then the ghosts from the left and the right neighbour, each in the order of
        // `all`: the order the neighbours list them as halo copies, so no message is needed.
        let halo = config.halo_supports as f32 * support;
        let ring = transport.loops_back().then(|| Ring::new(domain, axis, halo, support));
        let (lo, hi) = ring.map_or(slabs.range(rank), |r| (r.lo, r.hi));
        let has = |side| transport.neighbour(side).is_some();
        let (left, right) = (has(Side::Left), has(Side::Right));
        let mut own = RankParticles::default();
        let mut sent = [Vec::new(), Vec::new()];
        let mut from = [RankParticles::default(), RankParticles::default()];
        for i in 0..all.len() {
            let c = all.pos[i][axis];
            let owner = slabs.owner(c);
            if owner == rank {
                let slot = own.len() as u32;
                own.push_from(all, i);
                if c < lo + halo && left {
                    sent[0].push(slot);
                }
                if c >= hi - halo && right {
                    sent[1].push(slot);
                }
            } else if owner + 1 == rank && c >= lo - halo {
                from[0].push_from(all, i);
            } else if owner == rank + 1 && c < hi + halo {
                from[1].push_from(all, i);
            }
        }
        if own.is_empty() {
            return Err(ClusterError::EmptyRank { rank, ranks });
        }
        if let Some(ring) = &ring {
            // The loopback rank's ghosts are its own halo copies, sent to the other side and back.
            for (side, copies) in [(Side::Left, &sent[1]), (Side::Right, &sent[0])] {
                let k = (side == Side::Right) as usize;
                copies.iter().for_each(|&slot| from[k].push_from(&own, slot as usize));
                ring.place(side, &mut from[k]);
            }
        }
        let owned = own.len() as u32;
        let finite = |v: &[f32; 4]| v[..3].iter().all(|c| c.is_finite());
        let speed = own.vel.iter().map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()).fold(0.0f32, f32::max);
        let broken = own.pos.iter().zip(&own.vel).any(|(p, v)| !finite(p) || !finite(v));
        let mut start = own;
        for side in &mut from {
            side.ids.iter_mut().for_each(|id| *id |= GHOST);
            start.extend(side);
        }
        let ghosts = owned..start.len() as u32;
        let bounds = start.pos.iter().fold(([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]), |(l, h), p| {
            (std::array::from_fn(|a| l[a].min(p[a])), std::array::from_fn(|a| h[a].max(p[a])))
        });
        let total = all.len() as u32;
        let capacity = rank_capacity(start.len() as u32, config.spare, most_held(total, ring.is_some()));
        let mut sim = Simulation::for_rank(&ctx, domain, boundary, params, options, capacity, &start)
            .map_err(|cause| ClusterError::Sim { rank, cause })?;
        if let Some(entries) = config.border_lists {
            sim.set_border_capacity(&ctx, entries);
        }
        let profiler = Profiler::new(&ctx.device);
        let first = BorderOutcome {
            owned,
            ghosts: ghosts.len() as u32,
            migrated_in: [0, 0],
            speed,
            broken,
            bounds,
            bytes: 0,
            retries: 0,
            read_backs: 0,
            grew: false,
        };
        Ok(Self {
            transport,
            ctx,
            sim,
            profiler,
            slabs,
            config,
            halo,
            steps: 0,
            busy_ms: Vec::new(),
            frames_seen: 0,
            last: None,
            sent,
            ghosts,
            first: Some(first),
            total,
            top: 0.0,
            ring,
        })
    }

    /// This rank's simulation (owned particles and ghosts, in the order of the last step).
    pub fn sim(&self) -> &Simulation {
        &self.sim
    }

    /// This rank's device.
    pub fn ctx(&self) -> &GpuContext {
        &self.ctx
    }

    /// The slabs as every rank has them now.
    pub fn slabs(&self) -> &Slabs {
        &self.slabs
    }

    /// (owned, ghosts) this rank holds now: as [`Rank::new`] placed them before the first step (ghosts
    /// included, so a frame can be drawn before it), else as the last step left them.
    pub fn counts(&self) -> (u32, u32) {
        match (&self.first, &self.last) {
            (Some(first), _) => (first.owned, first.ghosts),
            (None, Some(last)) => (last.owned, last.ghosts),
            (None, None) => (0, self.ghosts.len() as u32),
        }
    }

    /// The figures of the last step (`None` before the first).
    pub fn last_stats(&self) -> Option<&RankStats> {
        self.last.as_ref()
    }

    /// Every rank's (owned, ghosts, step ms, exchange ms, exchange bytes, iteration bytes, GPU ms or NaN
    /// without timestamps, slots) of `stats` (this rank's last step), by rank, on every rank (one all-reduce).
    /// Every rank must call it together. Errors: a peer is gone.
    pub fn gather(&self, stats: &RankStats) -> Result<Vec<[f64; GATHERED]>, ClusterError> {
        let size = self.transport.size();
        let mut mine = vec![0.0; GATHERED * size];
        let r = self.transport.rank();
        mine[GATHERED * r..GATHERED * (r + 1)].copy_from_slice(&[
            stats.owned as f64,
            stats.ghosts as f64,
            stats.step_ms,
            stats.exchange_ms,
            stats.exchange_bytes as f64,
            stats.iteration_bytes as f64,
            stats.gpu_ms.unwrap_or(f64::NAN),
            stats.capacity as f64,
        ]);
        let all = self.transport.all_reduce(&mine, Reduce::Sum)?;
        Ok(all.chunks_exact(GATHERED).map(|c| std::array::from_fn(|k| c[k])).collect())
    }

    /// The GPU time of each pass of the newest step whose timestamps came back (border selection and halo
    /// passes included; empty without timestamps).
    pub fn passes(&self) -> &[crate::gpu::PassTime] {
        self.profiler.latest()
    }

    /// The transport this rank talks through.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// This rank (0 ..< ranks).
    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    /// Sets the scene's inflows and outflows on this rank, as [`Simulation::set_sources`] does on one GPU:
    /// every rank the same ones, before the first step. Every rank runs every sink on its particles and
    /// every emitter on the joint clock, placing the points within its own slab ([`RankEmission`]), so
    /// the water that enters is one GPU's, whatever slab it enters through. The rank keeps room for one
    /// layer of every emitter besides its particles (growing now if it has not). Errors: the sources are
    /// invalid or do not fit ([`ClusterError::Sim`]), the rank's simulation could not grow.
    pub fn set_sources(&mut self, emitters: &[Emitter], sinks: &[Sink]) -> Result<(), ClusterError> {
        let rank = self.transport.rank();
        let dx = self.sim.params().dx;
        let reserve: u32 = emitters.iter().map(|e| crate::sim::sources::layer_points(e.radius, dx)).sum();
        let (owned, ghosts) = self.counts();
        if (owned + ghosts) as u64 + reserve as u64 > self.sim.capacity() as u64 {
            self.grow(&RankParticles::default(), reserve)?;
        }
        self.sim.set_sources(&self.ctx, emitters, sinks).map_err(|cause| ClusterError::Sim { rank, cause })?;
        self.sim.set_rank_emission(&self.ctx, &self.emission());
        Ok(())
    }

    /// Where this rank places emitted points now (its slab) and the first emitted id.
    fn emission(&self) -> RankEmission {
        let (lo, hi) = self.range();
        let finite = |c: f32| c.clamp(-f32::MAX, f32::MAX);
        RankEmission { first_id: self.total, axis: self.slabs.axis, lo: finite(lo), hi: finite(hi) }
    }

    /// Applies `params` from the next step on, as [`Simulation::set_params`] does on one GPU; every rank
    /// must apply the same parameters before the same step (the joint time step and convergence tests
    /// assume one set). Errors ([`ClusterError::Sim`]): the parameters are invalid, need a rebuild (dx,
    /// h_over_dx, rho0: [`Simulation::set_params`] refuses them) or another halo depth (surface tension on
    /// or off, [`live_params`]).
    pub fn set_params(&mut self, params: &SimParams) -> Result<(), ClusterError> {
        let rank = self.transport.rank();
        if !same_halo(self.sim.params(), params) {
            let cause = crate::sim::SimError::Param(crate::sim::params::ParamError {
                field: "surface_tension",
                value: crate::sim::params::fmt_f32(params.surface_tension),
                range: "on several GPUs surface tension turns on or off only with a rebuild of the scene",
            });
            return Err(ClusterError::Sim { rank, cause });
        }
        self.sim.set_params(&self.ctx, params).map_err(|cause| ClusterError::Sim { rank, cause })
    }

    /// Goes on from a checkpoint's step state (time, dt, the step counter) and iteration bounds: every rank,
    /// right after [`Rank::new`] from the checkpoint's particles.
    pub fn restore_step(&mut self, step: &crate::sim::gpu_data::StepState, iterations: Option<(u32, u32)>) {
        self.sim.restore_step(&self.ctx, step, iterations);
    }

    /// Blocking read of the particles this rank owns (ghosts and parked slots left out), with their ids.
    /// Errors: nothing came back from the GPU ([`ClusterError::Step`] with the device's report).
    pub fn owned_blocking(&self) -> Result<RankParticles, ClusterError> {
        let all = self.sim.read_rank_particles_blocking(&self.ctx).map_err(ClusterError::Step)?;
        let mut own = RankParticles::default();
        for i in 0..all.len() {
            if all.pos[i][3] >= 0.0 && all.ids[i] & GHOST == 0 {
                own.push_from(&all, i);
            }
        }
        Ok(own)
    }

    /// Sends `msg` to the neighbour on `side` if there is one (an empty side has nothing to send).
    fn send(&self, side: Side, msg: &RankParticles) -> Result<(), ClusterError> {
        if self.transport.neighbour(side).is_some() {
            self.transport.send(side, encode(msg))?;
        }
        Ok(())
    }

    /// What the neighbour on `side` sent (nothing where there is none).
    fn recv(&self, side: Side) -> Result<RankParticles, ClusterError> {
        match self.transport.neighbour(side) {
            Some(_) => Ok(decode(&self.transport.recv(side)?)?),
            None => Ok(RankParticles::default()),
        }
    }

    /// The halo copies the neighbour on `side` sent, where this rank's ghosts from that side sit (the
    /// loopback rank moves its own copies past the walls, [`Ring::place`]).
    fn recv_ghosts(&self, side: Side) -> Result<RankParticles, ClusterError> {
        let mut ghosts = self.recv(side)?;
        if let Some(ring) = &self.ring {
            ring.place(side, &mut ghosts);
        }
        Ok(ghosts)
    }

    /// This rank's slab `lo <= c < hi` along the axis, m (infinite at the outer ends; the domain for the
    /// loopback rank).
    fn range(&self) -> (f32, f32) {
        self.ring.map_or(self.slabs.range(self.transport.rank()), |r| (r.lo, r.hi))
    }

    /// Whether this rank exchanges with a neighbour (one rank alone steps as one GPU does).
    fn exchanges(&self) -> bool {
        [Side::Left, Side::Right].iter().any(|&side| self.transport.neighbour(side).is_some())
    }

    /// One step of the decomposed simulation (see the module docs). Every rank must call it together.
    /// Errors: a peer is gone or sent a malformed message, a read-back failed, or the particles do not fit
    /// (cannot happen with the capacity [`Rank::new`] gives).
    pub fn step(&mut self) -> Result<RankStats, ClusterError> {
        let rank = self.transport.rank();
        let t0 = Instant::now();
        // 1. Load balance on the all-reduced step times (one-hot sum: every rank gets every time).
        if self.config.balance_every > 0
            && self.steps > 0
            && self.steps.is_multiple_of(self.config.balance_every as u64)
        {
            let mut times = vec![0.0; self.transport.size()];
            times[rank] = median(&mut self.busy_ms);
            let times = self.transport.all_reduce(&times, Reduce::Sum)?;
            self.slabs.rebalance(&times, self.config.balance_tolerance);
            self.busy_ms.clear();
        }
        // 2.-3. Migrants and ghosts (the first step's were placed by `new`).
        let border = match self.first.take() {
            Some(first) => first,
            None => self.exchange_border()?,
        };
        // 4. The joint time step: the largest owned speed over all ranks; and whether any rank holds a
        //    non-finite particle (a blow-up ends the run on every rank).
        //    And the highest particle of the last step over all ranks: the pressure bound's water height,
        //    one GPU's (each rank's top is its own particles' and ghosts').
        let mine = [border.speed as f64, border.broken as u8 as f64, self.top as f64];
        let joint = self.transport.all_reduce(&mine, Reduce::Max)?;
        if joint[1] > 0.0 {
            let time = self.last.as_ref().map_or(0.0, |l| l.time);
            return Err(ClusterError::BlowUp { time });
        }
        let (speed, top) = (joint[0] as f32, joint[2] as f32);
        // 5. The grid's box around owned and ghosts; the emission's slab (after the balancing); the step.
        self.sim.set_max_speed(&self.ctx, speed, top);
        if self.sim.emission_per_step() > 0 {
            self.sim.set_rank_emission(&self.ctx, &self.emission());
        }
        let (blo, bhi) = border.bounds;
        if (0..3).all(|a| blo[a].is_finite() && bhi[a].is_finite() && blo[a] <= bhi[a]) {
            match &self.ring {
                Some(ring) => self.sim.set_grid_box_within(blo, bhi, &ring.grid),
                None => self.sim.set_grid_box(blo, bhi),
            }
        }
        let t1 = Instant::now();
        let mut exchange_s = 0.0;
        let mut iteration_bytes = 0;
        // The step state's read-back at the end, and the border's.
        let mut read_backs = 1 + border.read_backs;
        let mut encoder =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rank step") });
        if self.exchanges() && self.sim.params().method != Method::Wcsph {
            // Host-driven solves with the ghosts' kappa / rho exchanged every iteration (src/sim/ranked_step.rs).
            let mut x = IterationExchange {
                transport: &self.transport,
                sent: &self.sent,
                ghosts: self.ghosts.clone(),
                owned: border.owned,
                inner: self.config.overlap.then(|| self.inner_region()),
                seconds: 0.0,
                bytes: 0,
                read_backs: 0,
            };
            self.sim.step_ranked(&self.ctx, &mut self.profiler, &mut x)?;
            exchange_s = x.seconds;
            iteration_bytes = x.bytes;
            read_backs += x.read_backs;
        } else {
            self.sim.encode_step(&mut encoder, &self.profiler);
        }
        self.profiler.resolve(&mut encoder);
        self.ctx.queue.submit([encoder.finish()]);
        self.profiler.end_frame(&self.ctx.queue);
        let _ = self.ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
        let t2 = Instant::now();
        let step_ms = ((t2 - t1).as_secs_f64() - exchange_s) * 1e3;
        let state = self.sim.step_state_blocking(&self.ctx).map_err(|cause| ClusterError::Sim { rank, cause })?;
        self.top = f32::from_bits(state.fluid_top_bits);
        self.sim.note_iterations((state.density_iterations, state.divergence_iterations));
        let gpu_ms = self.step_gpu_ms();
        match (self.profiler.is_timed(), gpu_ms) {
            (false, _) => self.busy_ms.push(step_ms),
            (true, Some(ms)) => self.busy_ms.push(ms),
            (true, None) => {}
        }
        self.steps += 1;
        let stats = RankStats {
            rank,
            owned: border.owned,
            ghosts: border.ghosts,
            migrated_in: border.migrated_in,
            time: state.time,
            iterations: (state.density_iterations, state.divergence_iterations),
            step_ms,
            gpu_ms: gpu_ms.or(self.last.as_ref().and_then(|l| l.gpu_ms)),
            exchange_ms: ((t1 - t0).as_secs_f64() + exchange_s) * 1e3,
            exchange_bytes: border.bytes,
            capacity: self.sim.capacity(),
            grew: border.grew,
            iteration_bytes,
            border_retries: border.retries,
            read_backs,
            borders: (0..self.slabs.borders().len()).map(|k| self.slabs.border(k)).collect(),
        };
        self.last = Some(stats.clone());
        Ok(stats)
    }

    /// The GPU time of the step passes of the profiler frame that came back since the last call, ms (the
    /// border and halo passes left out); `None` when none did or the device has no timestamps.
    fn step_gpu_ms(&mut self) -> Option<f64> {
        if !self.profiler.is_timed() || self.profiler.frames_finished() == self.frames_seen {
            return None;
        }
        self.frames_seen = self.profiler.frames_finished();
        let passes = self.profiler.latest().iter().filter(|p| p.label != "border" && p.label != "halo");
        Some(passes.map(|p| p.ms).sum())
    }

    /// (axis, lo, hi): this rank's slab shrunk by one support radius on each side with a neighbour (the
    /// outer ends stay at f32::MIN, f32::MAX): its owned particles within it have no ghost neighbour.
    fn inner_region(&self) -> (u32, f32, f32) {
        let (lo, hi) = self.range();
        let support = self.halo / self.config.halo_supports.max(1) as f32;
        let finite = |c: f32| c.clamp(f32::MIN, f32::MAX);
        (self.slabs.axis as u32, finite(lo + support), finite(hi - support))
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_ignores_one_slow_step_and_counts_nothing_as_nan() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 400.0, 2.0]), 3.0);
        // Ten steps at 10 ms and one at 400 (a hiccup): the sum would call this rank twice as slow as one
        // at 19 ms a step; the median says 10.
        let mut times = vec![10.0; 10];
        times.push(400.0);
        assert_eq!(median(&mut times), 10.0);
        assert!(median(&mut []).is_nan());
    }
}
