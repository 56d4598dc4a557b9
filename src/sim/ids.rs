//! Particle ids and the particle arrays of one rank of a decomposed simulation (src/cluster): a
//! simulation built from given particles with room for more ([`Simulation::for_rank`]), an id per
//! particle carried through the grid's counting sort (binding 7, `2 * capacity` u32: the ids in the order
//! of `pos` as written, then in the sorted order of the last step, written by the `IDS` variant's
//! `scatter_ids` in shaders/sim/grid.wgsl, which is the order of `pos` after that step; ids with bit 31
//! set are ghosts, left out of the DFSPH errors by dfsph.wgsl's `GHOSTS` variant), and whole-state
//! writes and blocking reads with the ids. A simulation without ids (every single-GPU one, the default
//! [`SimOptions::track_ids`] = false) records exactly what it did before.

use super::*;

/// Whether the ids of `pos` are in the buffer's first half (as written) or second (sorted by a step).
pub(super) struct IdTrack {
    /// True once a step ran since the last write: the ids of `pos` are the second half.
    pub(super) stepped: bool,
    /// Slots written by the last [`Simulation::write_rank_particles`]: a rank's particles stay the first
    /// this many slots through its steps (the parked rest sorts last, and a rank has no sinks).
    pub(super) live: u32,
}

/// Particles as one rank writes them: positions (xyz m, w density kg/m^3), velocities (xyz m/s, w
/// pressure Pa) and ids, all the same length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankParticles {
    pub pos: Vec<[f32; 4]>,
    pub vel: Vec<[f32; 4]>,
    pub ids: Vec<u32>,
}

impl RankParticles {
    /// Particles held.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// Appends particle `i` of `other`.
    pub fn push_from(&mut self, other: &RankParticles, i: usize) {
        self.pos.push(other.pos[i]);
        self.vel.push(other.vel[i]);
        self.ids.push(other.ids[i]);
    }

    /// Appends all of `other`.
    pub fn extend(&mut self, other: &RankParticles) {
        self.pos.extend_from_slice(&other.pos);
        self.vel.extend_from_slice(&other.vel);
        self.ids.extend_from_slice(&other.ids);
    }
}

impl Simulation {
    /// Puts `particles` into slots `0..len` and parks every other slot; the ids ride along when tracked.
    /// Errors: [`SimError::State`] when the arrays differ in length or exceed the capacity.
    pub fn write_rank_particles(&mut self, ctx: &GpuContext, particles: &RankParticles) -> Result<(), SimError> {
        let n = particles.len();
        if particles.vel.len() != n || particles.ids.len() != n {
            return Err(SimError::State("positions, velocities and ids differ in length"));
        }
        if n > self.capacity as usize {
            return Err(SimError::State("more particles than the simulation's capacity"));
        }
        let cap = self.capacity as usize;
        let d = &self.domain;
        let park = [0.5 * (d.min[0] + d.max[0]), 0.5 * (d.min[1] + d.max[1]), 0.5 * (d.min[2] + d.max[2]), -1.0];
        let mut pos = particles.pos.clone();
        let mut vel = particles.vel.clone();
        pos.resize(cap, park);
        vel.resize(cap, [0.0; 4]);
        let q = &ctx.queue;
        self.buffers.pos.write(q, 0, bytemuck::cast_slice(&pos));
        self.buffers.vel.write(q, 0, bytemuck::cast_slice(&vel));
        if let Some(ids) = &mut self.ids {
            let mut all = particles.ids.clone();
            all.resize(cap, u32::MAX);
            q.write_buffer(&self.buffers.ids, 0, bytemuck::cast_slice(&all));
            ids.stepped = false;
        }
        self.set_live(n as u32);
        self.particles_version += 1;
        Ok(())
    }

    /// A simulation like this one (domain, boundary, parameters, options, border lists) with room for
    /// `capacity` particles, holding `particles` in its first slots as [`Simulation::write_rank_particles`]
    /// puts them, and going on from this one's clock: the step state (time, dt, step counter) is copied on
    /// the GPU, and so are the inflows and outflows with the emitters' state; the frame counter, the newest
    /// statistics and the blow-up bounds are carried. A rank
    /// grows into it when migrants and ghosts outgrow its capacity (src/cluster/rank.rs). The pipelines
    /// are built again (a growth is rare; see `RankConfig::spare`). Errors: as [`Simulation::for_rank`].
    pub fn grown_for_rank(
        &self,
        ctx: &GpuContext,
        capacity: u32,
        particles: &RankParticles,
    ) -> Result<Simulation, SimError> {
        let boundary = (&self.terrain, &self.obstacles[..]);
        let mut sim = Self::for_rank(ctx, &self.domain, boundary, &self.params, self.options, capacity, particles)?;
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rank growth") });
        encoder.copy_buffer_to_buffer(&self.buffers.step, 0, &sim.buffers.step, 0, self.buffers.step.size());
        // The inflows and outflows with the emitters' state as the GPU has it.
        encoder.copy_buffer_to_buffer(&self.buffers.sources, 0, &sim.buffers.sources, 0, self.buffers.sources.size());
        ctx.queue.submit([encoder.finish()]);
        sim.sources = self.sources;
        sim.dispatch.emit = self.dispatch.emit;
        sim.reserve_border(ctx, self.border_capacity());
        sim.frame = self.frame;
        sim.fresh_after = self.fresh_after;
        sim.latest = self.latest.clone();
        sim.restored_iterations = self.restored_iterations;
        sim.bounds = self.bounds;
        sim.blow_up = self.blow_up.clone();
        sim.particles_version = self.particles_version + 1;
        Ok(sim)
    }

    /// Blocking read of the particles with their ids, in the order of the last step: with ids tracked
    /// the slots of the last [`Simulation::write_rank_particles`] only (a rank's particles; the parked
    /// rest is not read), else every slot with ids `u32::MAX`. For the ranks of src/cluster, tests and
    /// batch tools. Errors: [`SimError::Readback`] (the device was lost or reported an error).
    pub fn read_rank_particles_blocking(&self, ctx: &GpuContext) -> Result<RankParticles, SimError> {
        let Some(t) = &self.ids else {
            let (pos, vel) = self.try_read_particles_blocking(ctx)?;
            let ids = vec![u32::MAX; pos.len()];
            return Ok(RankParticles { pos, vel, ids });
        };
        let n = t.live as u64;
        let (p, v) = (&self.buffers.pos, &self.buffers.vel);
        let pos = p.try_read_range_blocking(ctx, 0, n, "the rank's positions").map_err(SimError::Readback)?;
        let vel = v.try_read_range_blocking(ctx, 0, n, "the rank's velocities").map_err(SimError::Readback)?;
        let half = if t.stepped { self.capacity as u64 * 4 } else { 0 };
        let ids = gpu::readback::try_read_range_blocking(ctx, &self.buffers.ids, half, n * 4, "the rank's ids")
            .map_err(SimError::Readback)?;
        Ok(RankParticles {
            pos: bytemuck::pod_collect_to_vec(&pos),
            vel: bytemuck::pod_collect_to_vec(&vel),
            ids: bytemuck::pod_collect_to_vec(&ids),
        })
    }

    /// The ids of the particles in the order `pos` holds them now, for the renderer's ghost cull
    /// ([`crate::render::ghosts`]): the ids buffer (`array<u32>`, `2 * capacity` entries) and the index of
    /// the entry of slot 0 (0 after [`Simulation::write_rank_particles`], `capacity` once a step sorted
    /// them). `None` when ids are not tracked (every single-GPU simulation).
    pub fn ids_in_position_order(&self) -> Option<(&wgpu::Buffer, u32)> {
        self.ids.as_ref().map(|t| (&self.buffers.ids, if t.stepped { self.capacity } else { 0 }))
    }

    /// Sets what the next step's time step reads of the last step: the largest particle speed (m/s,
    /// `max_speed_bits`, the CFL condition) and the highest particle above the domain's floor (m,
    /// `fluid_top_bits`, the pressure bound's water height; 0: the domain's height, as before a first
    /// step). Ranks write the same all-reduced maxima, so they all take the dt one GPU takes.
    pub fn set_max_speed(&self, ctx: &GpuContext, speed: f32, top: f32) {
        let offset = std::mem::offset_of!(StepState, max_speed_bits) as u64;
        ctx.queue.write_buffer(&self.buffers.step, offset, bytemuck::bytes_of(&speed.to_bits()));
        let offset = std::mem::offset_of!(StepState, fluid_top_bits) as u64;
        ctx.queue.write_buffer(&self.buffers.step, offset, bytemuck::bytes_of(&top.max(0.0).to_bits()));
    }

    /// Records that slots `0..live` hold a rank's particles (the rest parked): what the ids cover, and
    /// the DFSPH kernels' dispatch ([`stage::Dispatches::solving`]).
    pub(super) fn set_live(&mut self, live: u32) {
        if let Some(t) = &mut self.ids {
            t.live = live;
            self.dispatch = self.dispatch.solving(live, self.options.workgroup_size);
        }
    }

    /// Marks that a step was recorded (the ids of `pos` are now the sorted half).
    pub(super) fn ids_stepped(&mut self) {
        if let Some(t) = &mut self.ids {
            t.stepped = true;
        }
    }
}
