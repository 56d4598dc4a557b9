//! A host-driven step for the ranks of a decomposed simulation (src/cluster; Werner 2015, see
//! docs/background.md section 6). DFSPH's solves iterate on the GPU with a GPU-side convergence test
//! (src/sim/dfsph.rs); on several GPUs every iteration needs the neighbours' fresh values and the test
//! is a global one, so here the host records each iteration itself:
//! 1. grid build (ids carried through the sort, and each particle's sorted slot), time step, df_factor;
//!    ask the rank for the slots (as it wrote them) it sends and those of its ghosts
//!    ([`RankExchange::slots`]): the halo stage maps them to sorted slots on the GPU, nothing is read back;
//! 2. each solve: read this rank's error sum of the last source (ghosts left out by dfsph.wgsl's
//!    `GHOSTS` variant), all-reduce it with the owned counts ([`RankExchange::joint_error`]), record the
//!    update; unless the joint mean error is at the goal (after the least iterations) or the limit is
//!    reached, gather the sent particles' velocities (svel, v*), exchange them
//!    ([`RankExchange::exchange`]), scatter them into the ghosts and record the next source;
//! 3. integrate.
//!
//! PCISPH runs its fixed iterations the same way: after `density_forces` and after every
//! `predict_density` the ghosts' (density, pressure) come fresh from their owners, so the next
//! `pressure_force` of the ghosts next to the border, whose predicted positions the owned particles
//! read, is their owners'. (No convergence test: the iteration count is fixed, the same everywhere.)
//!
//! With a halo of two support radii the ghosts next to the border see all their neighbours, so their
//! sources come out as their owners' and every owned particle's update is the single-GPU one; the same
//! joint mean gives every rank the same iteration count, the one a single GPU takes (up to the order of
//! the sums). WCSPH needs no exchange inside the step (the 2-support halo covers its one density pass).

use super::dfsph::SolveKind;
use super::gpu_data::{StepState, DFSPH_MIN_DIVERGENCE_ITERATIONS};
use super::halo::Exchanged;
use super::*;

/// What a host-driven step asks of its rank (src/cluster implements it over its transport).
pub trait RankExchange {
    type Error: From<SimError>;
    /// Once per step: the slots (as the rank wrote its particles before the step, below its live count)
    /// whose velocities the neighbours hold as ghosts, in the order they expect them, and the slots of
    /// this rank's ghosts, in the order their values arrive.
    fn slots(&mut self) -> Result<(Vec<u32>, Vec<u32>), Self::Error>;
    /// Sends the velocities gathered from the send slots (svel and v* per slot) and returns the ghosts'
    /// (two per ghost slot, in their order).
    fn exchange(&mut self, gathered: &[[f32; 4]]) -> Result<Vec<[f32; 4]>, Self::Error>;
    /// (sum over all ranks of `err_sum`, of the ranks' owned particles): the joint mean's parts.
    fn joint_error(&mut self, err_sum: f64) -> Result<(f64, f64), Self::Error>;
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
        // The solves' limits, goals and error scale exactly as the GPU has them.
        let u =
            SimUniforms::new(&self.params, &self.derived, &self.domain, &self.grid_shape, &self.terrain, self.capacity);
        let scale = u.err_scale as f64;
        let (div, dens) =
            ((u.divergence_max_iter, u.target_divergence, scale), (u.density_max_iter, u.target_density, scale));
        self.solve_ranked(ctx, profiler, rank, SolveKind::Divergence, DFSPH_MIN_DIVERGENCE_ITERATIONS, div)?;
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
        self.solve_ranked(ctx, profiler, rank, SolveKind::Density, 2, dens)?;
        submit(self, profiler, &|sim, step| sim.stages.integrate.encode(step, ()));
        self.ids_stepped();
        Ok(())
    }

    /// The iterations of one solve whose first source has been submitted (see the module docs):
    /// `limits` = (most iterations, goal of the mean error, fixed-point scale of the error sums).
    fn solve_ranked<X: RankExchange>(
        &mut self,
        ctx: &GpuContext,
        profiler: &mut Profiler,
        rank: &mut X,
        kind: SolveKind,
        min_iterations: u32,
        (max_iterations, goal, scale): (u32, f32, f64),
    ) -> Result<(), X::Error> {
        let mut k = 0u32;
        loop {
            let step = &self.buffers.step;
            let bytes = gpu::readback::try_read_range_blocking(ctx, step, 0, step.size(), "the step state")
                .map_err(SimError::Readback)?;
            let state: StepState = bytes
                .get(..size_of::<StepState>())
                .map(bytemuck::pod_read_unaligned)
                .ok_or(SimError::State("the step state could not be read back"))?;
            let (sum, owned) = rank.joint_error(state.err_sum as f64)?;
            let mean = sum / scale / owned.max(1.0);
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("ranked update") });
            self.stages.dfsph.encode_update(&mut self.step_context(&mut encoder, profiler), kind, k);
            ctx.queue.submit([encoder.finish()]);
            k += 1;
            if (k >= min_iterations && mean <= goal as f64) || k >= max_iterations {
                return Ok(());
            }
            self.exchange_ghosts(ctx, profiler, rank, Exchanged::Velocities)?;
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("ranked source") });
            self.stages.dfsph.encode_source(&mut self.step_context(&mut encoder, profiler), kind);
            ctx.queue.submit([encoder.finish()]);
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
            sim.stages.integrate.encode(step, ());
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
        let Some(halo) = &self.stages.halo else {
            return Err(SimError::State("a host-driven step needs a simulation built for a rank").into());
        };
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("halo gather") });
        halo.encode_gather(&mut self.step_context(&mut encoder, profiler), what);
        ctx.queue.submit([encoder.finish()]);
        let sent = halo.counts.0 as u64 * 32;
        let gathered: Vec<[f32; 4]> = if sent > 0 {
            let slice = halo.staging.slice(..sent);
            slice.map_async(wgpu::MapMode::Read, |_| {});
            let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
            let data = slice.get_mapped_range().map(|v| bytemuck::cast_slice(&v).to_vec()).unwrap_or_default();
            halo.staging.unmap();
            data
        } else {
            Vec::new()
        };
        if gathered.len() as u64 * 16 != sent {
            return Err(SimError::State("the halo's velocities could not be read back").into());
        }
        let received = rank.exchange(&gathered)?;
        if received.len() != 2 * halo.counts.1 as usize {
            return Err(SimError::State("a neighbour sent another number of ghost velocities").into());
        }
        if !received.is_empty() {
            ctx.queue.write_buffer(&halo.recv_values, 0, bytemuck::cast_slice(&received));
        }
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("halo scatter") });
        halo.encode_scatter(&mut self.step_context(&mut encoder, profiler), what);
        ctx.queue.submit([encoder.finish()]);
        Ok(())
    }
}
