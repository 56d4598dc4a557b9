//! A host-driven step for the ranks of a decomposed simulation (src/cluster; Werner 2015, see
//! docs/background.md section 6). DFSPH's solves iterate on the GPU with a GPU-side convergence test
//! (src/sim/dfsph.rs); on several GPUs every iteration needs the neighbours' fresh values and the test
//! is a global one, so here the host records each iteration itself:
//! 1. grid build (ids carried through the sort, and each particle's sorted slot), time step, df_factor;
//!    ask the rank for the slots (as it wrote them) it sends and those of its ghosts
//!    ([`RankExchange::slots`]): the halo stage maps them to sorted slots on the GPU, nothing is read back;
//! 2. each solve: after each source, read back this rank's error sum (ghosts left out by dfsph.wgsl's
//!    `GHOSTS` variant) together with the kappa / rho of the particles its neighbours hold as ghosts (one
//!    read-back), exchange those ([`RankExchange::exchange`]) and all-reduce the error sum with the owned
//!    counts ([`RankExchange::joint_error`]); then, in one submission, scatter the neighbours' kappa / rho
//!    into the ghosts, record the update and, unless the joint mean error is at the goal (after the least
//!    iterations) or the limit is reached, the next source. Once per solve the ghosts' velocities (svel, v*)
//!    come fresh from their owners (after the divergence solve, and after the forces with surface tension);
//! 3. integrate, and the emission (src/sim/sources.rs: each rank places its slab's points).
//!
//! PCISPH runs its fixed iterations the same way: after `density_forces` and after every
//! `predict_density` the ghosts' (density, pressure) come fresh from their owners, so the next
//! `pressure_force` of the ghosts next to the border, whose predicted positions the owned particles
//! read, is their owners'. (No convergence test: the iteration count is fixed, the same everywhere.)
//!
//! Why kappa / rho is enough within a solve (a halo of two support radii, 2 x 2h): call the ghosts within
//! one support radius of the slab's border g1, the rest g2. Let the velocities of the owned particles and of
//! g1 be their owners' at the start of an iteration (true after a velocity exchange). Then every owned
//! particle's source, and so its kappa, is its owner's (its neighbours are owned or g1); the ghosts' kappa /
//! rho arrive from their owners; so every owned and g1 particle's update, whose neighbours lie within the
//! halo, is its owner's, and the velocities of the owned and g1 are again their owners'. Only g2's go
//! wrong, which no owned source reads. So each iteration moves one float per ghost (32 bytes before, the
//! velocities), and every owned particle's update is the single-GPU one; the same joint mean gives every
//! rank the same iteration count, the one a single GPU takes (up to the order of the sums). WCSPH needs no
//! exchange inside the step (the 2-support halo covers its one density pass).

use super::dfsph::{SolveKind, UpdatePart};
use super::gpu_data::{StepState, DFSPH_MIN_DIVERGENCE_ITERATIONS};
use super::halo::{Exchanged, STATE_BYTES};
use super::*;

/// Work recorded into a step's encoder.
type Record<'a> = dyn Fn(&Simulation, &mut StepContext) + 'a;

/// What a host-driven step asks of its rank (src/cluster implements it over its transport).
pub trait RankExchange {
    type Error: From<SimError>;
    /// Once per step: the slots (as the rank wrote its particles before the step, below its live count)
    /// whose velocities the neighbours hold as ghosts, in the order they expect them, and the slots of
    /// this rank's ghosts, in the order their values arrive.
    fn slots(&mut self) -> Result<(Vec<u32>, Vec<u32>), Self::Error>;
    /// Sends the values gathered from the send slots (`per_slot` floats each, in the slots' order) and
    /// returns the ghosts' (`per_slot` per ghost slot, in their order).
    fn exchange(&mut self, gathered: &[f32], per_slot: usize) -> Result<Vec<f32>, Self::Error>;
    /// (sum over all ranks of `err_sum`, of the ranks' owned particles): the joint mean's parts.
    fn joint_error(&mut self, err_sum: f64) -> Result<(f64, f64), Self::Error>;
    /// This step's inner region (axis, lo, hi), when the inner particles' update is to run while the
    /// ghosts' values travel (`None`: one update of every particle after they arrive): owned particles
    /// whose coordinate along the axis (0 = x)
    /// lies in `[lo, hi)`, metres, have no ghost within one support radius (the slab shrunk by it on each
    /// side with a neighbour).
    fn inner_region(&self) -> Option<(u32, f32, f32)>;
}

impl Simulation {
    /// One step with host-driven DFSPH solves and halo exchange (see the module docs); other methods
    /// record [`Simulation::encode_step`]. Blocks on the GPU several times per iteration.
    /// Errors: the rank's (the exchange failed), or [`SimError::State`] when this simulation tracks no
    /// ids or a read-back failed.
    pub fn step_ranked<X: RankExchange>(
        &mut self,
        ctx: &GpuContext,
        profiler: &mut Profiler,
        rank: &mut X,
    ) -> Result<(), X::Error> {
        let submit = |sim: &mut Simulation, profiler: &mut Profiler, f: &dyn Fn(&Simulation, &mut StepContext)| {
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("ranked step") });
            f(sim, &mut sim.step_context(&mut encoder, profiler));
            ctx.queue.submit([encoder.finish()]);
        };
        if self.params.method == Method::Pcisph {
            return self.pcisph_ranked(ctx, profiler, rank);
        }
        if self.params.method != Method::Dfsph {
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("ranked step") });
            self.encode_step(&mut encoder, profiler);
            ctx.queue.submit([encoder.finish()]);
            return Ok(());
        }
        if self.stages.halo.is_none() || self.ids.is_none() {
            return Err(SimError::State("a host-driven step needs a simulation built for a rank").into());
        }
        self.particles_version += 1;
        submit(self, profiler, &|sim, step| {
            sim.stages.grid.encode(step, ());
            sim.stages.time_step.encode(step, ());
            sim.stages.dfsph.encode_factor(step);
        });
        self.ranked_slots(ctx, rank)?;
        let overlap = rank.inner_region();
        if let Some((axis, lo, hi)) = overlap {
            self.stages.dfsph.set_region(&ctx.queue, axis, lo, hi);
        }
        // The solves' limits, goals and error scale exactly as the GPU has them.
        let u =
            SimUniforms::new(&self.params, &self.derived, &self.domain, &self.grid_shape, &self.terrain, self.capacity);
        let scale = u.err_scale as f64;
        // The iteration budget of one GPU (its limits, or 2 u + 4 after u).
        let (most_div, most_dens) = self.iteration_budget();
        let (div, dens) = (
            (u.divergence_max_iter.min(most_div), u.target_divergence, scale),
            (u.density_max_iter.min(most_dens), u.target_density, scale),
        );
        let overlap = overlap.is_some();
        self.solve_ranked(ctx, profiler, rank, SolveKind::Divergence, DFSPH_MIN_DIVERGENCE_ITERATIONS, div, overlap)?;
        // The last update changed the ghosts' v too (wrongly at the halo's edge): fresh from their owners
        // before the forces and the density solve read them.
        self.exchange_ghosts(ctx, profiler, rank, Exchanged::Velocities)?;
        let surface_tension = self.params.surface_tension > 0.0;
        submit(self, profiler, &|sim, step| {
            if surface_tension {
                sim.stages.surface_tension.encode(step, ());
                sim.stages.dfsph.encode_nonpressure(step);
            }
        });
        if surface_tension {
            // v* of the ghosts from their owners before the density solve's first source.
            self.exchange_ghosts(ctx, profiler, rank, Exchanged::Velocities)?;
        }
        submit(self, profiler, &|sim, step| sim.stages.dfsph.encode_begin(step, SolveKind::Density, true));
        self.solve_ranked(ctx, profiler, rank, SolveKind::Density, 2, dens, overlap)?;
        submit(self, profiler, &|sim, step| sim.encode_integrate(step));
        self.ids_stepped();
        Ok(())
    }

    /// Records integrate (with the boundaries and sinks) and the emission while there are emitters.
    fn encode_integrate(&self, step: &mut StepContext) {
        self.stages.integrate.encode(step, ());
        if self.sources.num_emitters > 0 {
            self.stages.emit.encode(step, ());
        }
    }

    /// The iterations of one solve whose first source has been submitted (see the module docs):
    /// `limits` = (most iterations, goal of the mean error, fixed-point scale of the error sums). Each
    /// iteration reads back once (the source's error sum with the sent particles' kappa / rho), exchanges,
    /// and records the ghosts' kappa / rho, the update and the next source in one submission. With
    /// `overlap` the inner particles' update runs while the values travel and the rest after them (two
    /// update dispatches, each over every particle: where the inner and the border particles share
    /// warps, as they do along x, each costs nearly a whole update); without, one update after them.
    #[allow(clippy::too_many_arguments)]
    fn solve_ranked<X: RankExchange>(
        &mut self,
        ctx: &GpuContext,
        profiler: &mut Profiler,
        rank: &mut X,
        kind: SolveKind,
        min_iterations: u32,
        (max_iterations, goal, scale): (u32, f32, f64),
        overlap: bool,
    ) -> Result<(), X::Error> {
        let mut k = 0u32;
        let (first, rest) =
            if overlap { (UpdatePart::Inner, UpdatePart::Border) } else { (UpdatePart::All, UpdatePart::All) };
        loop {
            let update = k;
            let inner =
                |sim: &Simulation, step: &mut StepContext| sim.stages.dfsph.encode_update(step, kind, update, first);
            let meanwhile: Option<&Record<'_>> = if overlap { Some(&inner) } else { None };
            let (state, received) = self.halo_values(ctx, profiler, rank, Exchanged::Kappa, meanwhile)?;
            let (sum, owned) = rank.joint_error(state.err_sum as f64)?;
            let mean = sum / scale / owned.max(1.0);
            k += 1;
            let done = (k >= min_iterations && mean <= goal as f64) || k >= max_iterations;
            self.scatter_and(ctx, profiler, Exchanged::Kappa, &received, &|sim, step| {
                sim.stages.dfsph.encode_update(step, kind, update, rest);
                if !done {
                    sim.stages.dfsph.encode_source(step, kind);
                }
            })?;
            if done {
                return Ok(());
            }
        }
    }

    /// PCISPH's step with the ghosts' (density, pressure) exchanged after the density pass and after
    /// every iteration (see the module docs).
    fn pcisph_ranked<X: RankExchange>(
        &mut self,
        ctx: &GpuContext,
        profiler: &mut Profiler,
        rank: &mut X,
    ) -> Result<(), X::Error> {
        if self.stages.halo.is_none() || self.ids.is_none() {
            return Err(SimError::State("a host-driven step needs a simulation built for a rank").into());
        }
        self.particles_version += 1;
        let run = |sim: &mut Simulation, profiler: &mut Profiler, f: &dyn Fn(&Simulation, &mut StepContext)| {
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("ranked step") });
            f(sim, &mut sim.step_context(&mut encoder, profiler));
            ctx.queue.submit([encoder.finish()]);
        };
        let surface_tension = self.params.surface_tension > 0.0;
        run(self, profiler, &|sim, step| {
            sim.stages.grid.encode(step, ());
            if surface_tension {
                sim.stages.surface_tension.encode(step, ());
            }
            sim.stages.time_step.encode(step, ());
            sim.stages.pcisph.encode_density(step);
        });
        self.ranked_slots(ctx, rank)?;
        self.exchange_ghosts(ctx, profiler, rank, Exchanged::Density)?;
        for _ in 0..self.params.solver_iterations {
            run(self, profiler, &|sim, step| sim.stages.pcisph.encode_pressure(step, false));
            self.exchange_ghosts(ctx, profiler, rank, Exchanged::Density)?;
        }
        run(self, profiler, &|sim, step| {
            sim.stages.pcisph.encode_pressure(step, true);
            sim.encode_integrate(step);
        });
        self.ids_stepped();
        Ok(())
    }

    /// Sets the halo's slots from the rank's lists (see [`RankExchange::slots`]).
    fn ranked_slots<X: RankExchange>(&mut self, ctx: &GpuContext, rank: &mut X) -> Result<(), X::Error> {
        let live = self.ids.as_ref().map_or(0, |t| t.live);
        let (send, ghosts) = rank.slots()?;
        if send.iter().chain(&ghosts).any(|&s| s >= live) {
            return Err(SimError::State("a halo slot past the rank's particles").into());
        }
        if let Some(h) = &mut self.stages.halo {
            h.set_slots(&ctx.queue, &send, &ghosts);
        }
        Ok(())
    }

    /// Gathers the sent particles' `what`, exchanges them through `rank` and scatters the ghosts'.
    fn exchange_ghosts<X: RankExchange>(
        &mut self,
        ctx: &GpuContext,
        profiler: &mut Profiler,
        rank: &mut X,
        what: Exchanged,
    ) -> Result<(), X::Error> {
        let (_, received) = self.halo_values(ctx, profiler, rank, what, None)?;
        Ok(self.scatter_and(ctx, profiler, what, &received, &|_, _| {})?)
    }

    /// Gathers the sent particles' `what`, reads it back with the step state (one read-back), and
    /// exchanges it through `rank`: (the step state, the ghosts' values in their order). `meanwhile`,
    /// recorded after the gather, runs on the GPU while the values are read back and exchanged (work
    /// that needs no ghost's new values: the thesis's overlap of the inner particles with the transfer).
    fn halo_values<X: RankExchange>(
        &mut self,
        ctx: &GpuContext,
        profiler: &mut Profiler,
        rank: &mut X,
        what: Exchanged,
        meanwhile: Option<&Record<'_>>,
    ) -> Result<(StepState, Vec<f32>), X::Error> {
        let Some(halo) = &self.stages.halo else {
            return Err(SimError::State("a host-driven step needs a simulation built for a rank").into());
        };
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("halo gather") });
        halo.encode_gather(&mut self.step_context(&mut encoder, profiler), what, &self.buffers.step);
        let gathered_at = ctx.queue.submit([encoder.finish()]);
        if let Some(work) = meanwhile {
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("halo overlap") });
            work(self, &mut self.step_context(&mut encoder, profiler));
            ctx.queue.submit([encoder.finish()]);
        }
        let bytes = STATE_BYTES + halo.sent_bytes(what);
        let slice = halo.staging.slice(..bytes);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        let wait = wgpu::PollType::Wait { submission_index: Some(gathered_at), timeout: None };
        let _ = ctx.device.poll(wait);
        let read = slice.get_mapped_range().map(|v| {
            let state: StepState = bytemuck::pod_read_unaligned(&v[..STATE_BYTES as usize]);
            (state, bytemuck::pod_collect_to_vec::<u8, f32>(&v[STATE_BYTES as usize..]))
        });
        halo.staging.unmap();
        let Ok((state, gathered)) = read else {
            return Err(SimError::State("the halo's values could not be read back").into());
        };
        let received = rank.exchange(&gathered, what.floats())?;
        if received.len() != what.floats() * halo.counts.1 as usize {
            return Err(SimError::State("a neighbour sent another number of ghost values").into());
        }
        Ok((state, received))
    }

    /// Writes `received` into the ghosts (the scatter of `what`) and records `then` after it, in one
    /// submission.
    fn scatter_and(
        &mut self,
        ctx: &GpuContext,
        profiler: &mut Profiler,
        what: Exchanged,
        received: &[f32],
        then: &Record<'_>,
    ) -> Result<(), SimError> {
        let Some(halo) = &self.stages.halo else {
            return Err(SimError::State("a host-driven step needs a simulation built for a rank"));
        };
        if !received.is_empty() {
            ctx.queue.write_buffer(&halo.recv_values, 0, bytemuck::cast_slice(received));
        }
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("halo scatter") });
        {
            let mut step = self.step_context(&mut encoder, profiler);
            halo.encode_scatter(&mut step, what);
            then(self, &mut step);
        }
        ctx.queue.submit([encoder.finish()]);
        Ok(())
    }
}
