//! What every rank runs (SPMD; Werner 2015, docs/background.md section 6): a [`Simulation`] on its own
//! device holding its slab's particles (owned) followed by ghost copies of the neighbours' particles
//! within the halo. Ghosts take part in every neighbour sum; the step integrates them too, but their
//! results are thrown away: every step starts from the owners' fresh copies.
//!
//! One step ([`Rank::step`]), N > 1:
//! 1. load balance every `balance_every` steps: the ranks' step times (all-reduced) move the slowest
//!    slab's border one layer toward its faster neighbour ([`Slabs::rebalance`]);
//! 2. read the particles back with their ids (the ids ride through the sort: src/sim/ids.rs), drop the
//!    ghosts, send the particles that left the slab (migrants, with all their state and id) to the
//!    neighbour on that side and append those received;
//! 3. send the owned particles within the halo of each border to that neighbour (ghosts);
//! 4. all-reduce the largest owned speed, so every rank's CFL step takes the same dt;
//! 5. write owned + ghosts back (the rest of the capacity parked), record the step, wait for it.
//!
//! The halo is `halo_supports` support radii deep. A WCSPH step reads the ghosts' densities, which need
//! their own neighbours: 2 support radii make an owned particle's step the single-GPU one (up to the
//! order of the sums); surface tension (normals from densities) needs 3. DFSPH's solves run host-driven
//! on several ranks (src/sim/ranked_step.rs): every iteration the ghosts' velocities come fresh from
//! their owners and the convergence test is the joint mean error over all ranks' owned particles, so
//! every rank takes the single-GPU iteration count. PCISPH's fixed iterations run host-driven too, the
//! ghosts' densities and pressures exchanged after each.
//! Everything goes through host memory (wgpu has no peer-to-peer copies); this first version reads the
//! whole state back each step rather than only the border particles.

use super::exchange::{decode, decode_vec4, encode, encode_vec4};
use super::slab::{longest_axis, Slabs};
use super::transport::{Reduce, Side, Transport};
use super::ClusterError;
use crate::gpu::{GpuContext, Profiler};
use crate::scene::Aabb;
use crate::sim::{Method, RankExchange, RankParticles, SimOptions, SimParams, Simulation};
use crate::terrain::Heightfield;
use std::time::Instant;

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
}

impl RankConfig {
    /// The halo `params` need (see the module docs), balancing every 20 steps at 5 %.
    pub fn for_params(params: &SimParams) -> Self {
        let halo_supports = if params.surface_tension > 0.0 { 3 } else { 2 };
        Self { halo_supports, balance_every: 20, balance_tolerance: 0.05 }
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
    /// Wall-clock time of the read-back, exchange and upload, ms.
    pub exchange_ms: f64,
    /// The slab borders now, m along the axis.
    pub borders: Vec<f32>,
}

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
    /// GPU step time summed since the last balancing, ms.
    busy_ms: f64,
    last: Option<RankStats>,
}

impl<T: Transport> Rank<T> {
    /// The rank `transport.rank()` of the simulation of `all` (every particle of the scene, ids = their
    /// index; each rank is given the same) in `domain` over `terrain`: slabs along the particles' longest
    /// axis at equal counts, the own slab's particles on `ctx`'s device (capacity for every particle, as
    /// owned and ghosts are distinct particles).
    /// Errors: the domain is too thin for the ranks' slabs, a rank gets no particles, the simulation
    /// cannot be built (the cause names the rank).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        transport: T,
        ctx: GpuContext,
        domain: &Aabb,
        terrain: &Heightfield,
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
        let mut own = RankParticles::default();
        for i in 0..all.len() {
            if slabs.owner(all.pos[i][axis]) == rank {
                own.push_from(all, i);
            }
        }
        if own.is_empty() {
            return Err(ClusterError::EmptyRank { rank, ranks });
        }
        let sim = Simulation::for_rank(&ctx, domain, terrain, params, options, all.len() as u32, &own)
            .map_err(|cause| ClusterError::Sim { rank, cause })?;
        let profiler = Profiler::new(&ctx.device);
        let halo = config.halo_supports as f32 * support;
        Ok(Self { transport, ctx, sim, profiler, slabs, config, halo, steps: 0, busy_ms: 0.0, last: None })
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

    /// The figures of the last step (`None` before the first).
    pub fn last_stats(&self) -> Option<&RankStats> {
        self.last.as_ref()
    }

    /// Every rank's (owned, ghosts, step ms, exchange ms) of `stats` (this rank's last step), by rank, on
    /// every rank (one all-reduce). Every rank must call it together.
    /// Errors: a peer is gone.
    pub fn gather(&self, stats: &RankStats) -> Result<Vec<[f64; 4]>, ClusterError> {
        let size = self.transport.size();
        let mut mine = vec![0.0; 4 * size];
        let r = self.transport.rank();
        mine[4 * r..4 * r + 4].copy_from_slice(&[
            stats.owned as f64,
            stats.ghosts as f64,
            stats.step_ms,
            stats.exchange_ms,
        ]);
        let all = self.transport.all_reduce(&mine, Reduce::Sum)?;
        Ok(all.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect())
    }

    /// The transport this rank talks through.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// This rank (0 ..< ranks).
    pub fn rank(&self) -> usize {
        self.transport.rank()
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

    /// Steps 2 and 3 of [`Rank::step`] (see the module docs): the migrants sent and received, then the
    /// ghosts. Every rank must call it together. Errors: a peer is gone or sent a malformed message.
    fn exchange(&self) -> Result<Exchanged, ClusterError> {
        let rank = self.transport.rank();
        // Migrants: owned particles outside the slab go to the neighbour on that side.
        let axis = self.slabs.axis;
        let (lo, hi) = self.slabs.range(rank);
        let all = self.sim.read_rank_particles_blocking(&self.ctx).map_err(ClusterError::Step)?;
        let mut keep = RankParticles::default();
        let mut out = [RankParticles::default(), RankParticles::default()];
        for i in 0..all.len() {
            if all.pos[i][3] < 0.0 || all.ids[i] & GHOST != 0 {
                continue;
            }
            let c = all.pos[i][axis];
            let dst = if c < lo {
                &mut out[0]
            } else if c >= hi {
                &mut out[1]
            } else {
                &mut keep
            };
            dst.push_from(&all, i);
        }
        self.send(Side::Left, &out[0])?;
        self.send(Side::Right, &out[1])?;
        let from = [self.recv(Side::Left)?, self.recv(Side::Right)?];
        let migrated_in = [from[0].len() as u32, from[1].len() as u32];
        keep.extend(&from[0]);
        keep.extend(&from[1]);
        // Ghosts: owned particles within the halo of each border, to that neighbour.
        let mut halo = [RankParticles::default(), RankParticles::default()];
        for i in 0..keep.len() {
            let c = keep.pos[i][axis];
            if c < lo + self.halo {
                halo[0].push_from(&keep, i);
            }
            if c >= hi - self.halo {
                halo[1].push_from(&keep, i);
            }
        }
        self.send(Side::Left, &halo[0])?;
        self.send(Side::Right, &halo[1])?;
        let mut ghosts = self.recv(Side::Left)?;
        ghosts.extend(&self.recv(Side::Right)?);
        for id in &mut ghosts.ids {
            *id |= GHOST;
        }
        Ok(Exchanged { keep, ghosts, halo, migrated_in })
    }

    /// Exchanges migrants and ghosts as the start of [`Rank::step`] does and writes owned + ghosts to the
    /// GPU without stepping: the state a step leaves, ghosts included, for a frame drawn before the first
    /// step (sort-last rendering, src/capture/ranks.rs: the ghosts shape the border's ellipsoids). The next
    /// step exchanges again from the owned particles. Every rank must call it together.
    /// Errors: as [`Rank::step`]'s exchange; the particles do not fit (cannot happen, see [`Rank::new`]).
    pub fn share_ghosts(&mut self) -> Result<(), ClusterError> {
        let rank = self.transport.rank();
        let Exchanged { mut keep, ghosts, .. } = self.exchange()?;
        keep.extend(&ghosts);
        self.sim.write_rank_particles(&self.ctx, &keep).map_err(|cause| ClusterError::Sim { rank, cause })
    }

    /// One step of the decomposed simulation (see the module docs). Every rank must call it together.
    /// Errors: a peer is gone or sent a malformed message, or the particles do not fit (cannot happen
    /// with the capacity [`Rank::new`] gives).
    pub fn step(&mut self) -> Result<RankStats, ClusterError> {
        let rank = self.transport.rank();
        let t0 = Instant::now();
        // 1. Load balance on the all-reduced GPU times (one-hot sum: every rank gets every time).
        if self.config.balance_every > 0
            && self.steps > 0
            && self.steps.is_multiple_of(self.config.balance_every as u64)
        {
            let mut times = vec![0.0; self.transport.size()];
            times[rank] = self.busy_ms;
            let times = self.transport.all_reduce(&times, Reduce::Sum)?;
            self.slabs.rebalance(&times, self.config.balance_tolerance);
            self.busy_ms = 0.0;
        }
        let Exchanged { mut keep, ghosts, halo, migrated_in } = self.exchange()?;
        // 4. The joint time step: the largest owned speed over all ranks; and whether any rank holds a
        //    non-finite particle (a blow-up ends the run on every rank).
        let speed = keep.vel.iter().map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()).fold(0.0f32, f32::max);
        let finite = |v: &[f32; 4]| v[..3].iter().all(|c| c.is_finite());
        let broken = keep.pos.iter().zip(&keep.vel).any(|(p, v)| !finite(p) || !finite(v));
        let joint = self.transport.all_reduce(&[speed as f64, broken as u8 as f64], Reduce::Max)?;
        if joint[1] > 0.0 {
            let time = self.last.as_ref().map_or(0.0, |l| l.time);
            return Err(ClusterError::BlowUp { time });
        }
        let speed = joint[0] as f32;
        // 5. Owned then ghosts onto the GPU; the grid's box around them; the step.
        let owned = keep.len() as u32;
        let ghost_count = ghosts.len() as u32;
        keep.extend(&ghosts);
        self.sim.write_rank_particles(&self.ctx, &keep).map_err(|cause| ClusterError::Sim { rank, cause })?;
        self.sim.set_max_speed(&self.ctx, speed);
        let (blo, bhi) = keep.pos.iter().fold(([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]), |(l, h), p| {
            (std::array::from_fn(|a| l[a].min(p[a])), std::array::from_fn(|a| h[a].max(p[a])))
        });
        if (0..3).all(|a| blo[a].is_finite() && bhi[a].is_finite() && blo[a] <= bhi[a]) {
            self.sim.set_grid_box(blo, bhi);
        }
        let t1 = Instant::now();
        let mut exchange_s = 0.0;
        let mut encoder =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rank step") });
        if self.transport.size() > 1 && self.sim.params().method != Method::Wcsph {
            // Host-driven solves with the ghosts' velocities exchanged every iteration (src/sim/ranked_step.rs).
            let mut x = IterationExchange {
                transport: &self.transport,
                sent: [halo[0].ids.clone(), halo[1].ids.clone()],
                ghost_ids: &keep.ids[owned as usize..],
                owned,
                seconds: 0.0,
            };
            self.sim.step_ranked(&self.ctx, &mut self.profiler, &mut x)?;
            exchange_s = x.seconds;
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
        self.busy_ms += step_ms;
        self.steps += 1;
        let stats = RankStats {
            rank,
            owned,
            ghosts: ghost_count,
            migrated_in,
            time: state.time,
            iterations: (state.density_iterations, state.divergence_iterations),
            step_ms,
            exchange_ms: ((t1 - t0).as_secs_f64() + exchange_s) * 1e3,
            borders: (0..self.slabs.borders().len()).map(|k| self.slabs.border(k)).collect(),
        };
        self.last = Some(stats.clone());
        Ok(stats)
    }
}

/// What [`Rank::exchange`] leaves: the owned particles (after migration), the ghosts received (ids with
/// [`GHOST`] set, from the left neighbour first), the particles sent as ghosts to the (left, right)
/// neighbour, and the migrants received from each side.
struct Exchanged {
    keep: RankParticles,
    ghosts: RankParticles,
    halo: [RankParticles; 2],
    migrated_in: [u32; 2],
}

/// The per-iteration exchange of one host-driven step (src/sim/ranked_step.rs) over the rank's transport:
/// the sent particles and the ghosts are those of this step's ghost exchange, in its order, so both
/// sides agree on the order of the values without sending ids again.
struct IterationExchange<'a, T: Transport> {
    transport: &'a T,
    /// Ids sent as ghosts to the left and to the right neighbour, in the order sent.
    sent: [Vec<u32>; 2],
    /// Ids (ghost bit set) of the ghosts, from the left neighbour first, in the order received.
    ghost_ids: &'a [u32],
    owned: u32,
    /// Wall-clock time in the exchange and the joint error, s.
    seconds: f64,
}

impl<T: Transport> RankExchange for IterationExchange<'_, T> {
    type Error = ClusterError;

    fn slots(&mut self, sorted_ids: &[u32]) -> Result<(Vec<u32>, Vec<u32>), ClusterError> {
        let rank = self.transport.rank();
        let mut slot_of = std::collections::HashMap::with_capacity(sorted_ids.len());
        for (slot, &id) in sorted_ids.iter().enumerate() {
            if id != u32::MAX {
                slot_of.insert(id, slot as u32);
            }
        }
        let find = |id: u32| slot_of.get(&id).copied().ok_or(ClusterError::Missing { rank, id: id & !GHOST });
        let send = self.sent.iter().flatten().map(|&id| find(id)).collect::<Result<Vec<_>, _>>()?;
        let ghosts = self.ghost_ids.iter().map(|&id| find(id)).collect::<Result<Vec<_>, _>>()?;
        Ok((send, ghosts))
    }

    fn exchange(&mut self, gathered: &[[f32; 4]]) -> Result<Vec<[f32; 4]>, ClusterError> {
        let t = Instant::now();
        let split = (2 * self.sent[0].len()).min(gathered.len());
        for (side, part) in [(Side::Left, &gathered[..split]), (Side::Right, &gathered[split..])] {
            if self.transport.neighbour(side).is_some() {
                self.transport.send(side, encode_vec4(part))?;
            }
        }
        let mut out = Vec::with_capacity(2 * self.ghost_ids.len());
        for side in [Side::Left, Side::Right] {
            if self.transport.neighbour(side).is_some() {
                out.extend(decode_vec4(&self.transport.recv(side)?)?);
            }
        }
        self.seconds += t.elapsed().as_secs_f64();
        Ok(out)
    }

    fn joint_error(&mut self, err_sum: f64) -> Result<(f64, f64), ClusterError> {
        let t = Instant::now();
        let joint = self.transport.all_reduce(&[err_sum, self.owned as f64], Reduce::Sum)?;
        self.seconds += t.elapsed().as_secs_f64();
        Ok((joint[0], joint[1]))
    }
}
