//! The state a step reads and writes, copied out and put back: everything a resumed run needs to go on
//! as the original would ([`SimState`]). On the GPU: the step state (dt, the simulated time, the largest
//! speed that sets the next CFL step, the step counter), the emitters' owed volume, and every particle's
//! position, density, velocity and pressure, the parked pool included (DFSPH warm-starts its density solve
//! from the pressure and density carried in w, so they are part of the state). On the CPU: the neighbour
//! grid's box (the particles' sort order follows it) and the solver iteration counts last read back,
//! which bound the iterations recorded per step. The wave maker's phase is the simulated time.
//!
//! [`Simulation::encode_state_copy`] records the GPU part into any buffer (a read-back ring's slot: the
//! window's particle export and checkpoints never wait), laid out as [`StateLayout`] says;
//! [`Simulation::read_state_blocking`] is the blocking form for batch tools; [`Simulation::restore`]
//! uploads a state.

use super::gpu_data::StepState;
use super::sources::{EmitState, SourcesGpu, MAX_SOURCES};
use super::{SimError, Simulation};
use crate::gpu::GpuContext;

/// Where the parts of a state copy lie in its bytes: the step state, the sources block (with the
/// emitters' state), then `capacity` positions and `capacity` velocities (`vec4<f32>` each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateLayout {
    /// Particles copied (the simulation's capacity).
    pub capacity: u32,
}

impl StateLayout {
    /// Byte offset of the sources block.
    pub const SOURCES: u64 = size_of::<StepState>() as u64;
    /// Byte offset of the positions.
    pub const POSITIONS: u64 = Self::SOURCES + size_of::<SourcesGpu>() as u64;

    /// Byte offset of the velocities.
    pub fn velocities(self) -> u64 {
        Self::POSITIONS + self.capacity as u64 * 16
    }

    /// Bytes of the whole copy.
    pub fn bytes(self) -> u64 {
        self.velocities() + self.capacity as u64 * 16
    }

    /// The step state, positions and velocities in `bytes` (a copy of this layout), or `None` when it is
    /// too short or misaligned.
    pub fn split(self, bytes: &[u8]) -> Option<StateView<'_>> {
        let (v, end) = (self.velocities() as usize, self.bytes() as usize);
        Some(StateView {
            step: bytemuck::pod_read_unaligned(bytes.get(..size_of::<StepState>())?),
            positions: bytemuck::try_cast_slice(bytes.get(Self::POSITIONS as usize..v)?).ok()?,
            velocities: bytemuck::try_cast_slice(bytes.get(v..end)?).ok()?,
        })
    }
}

/// The parts of a state copy's bytes ([`StateLayout::split`]), borrowed.
#[derive(Clone, Copy, Debug)]
pub struct StateView<'a> {
    pub step: StepState,
    /// `capacity` positions (xyz m, w density kg/m^3, < 0 parked).
    pub positions: &'a [[f32; 4]],
    /// `capacity` velocities (xyz m/s, w pressure Pa).
    pub velocities: &'a [[f32; 4]],
}

/// A simulation's state (see the module docs). Plain data: the engine writes it to checkpoint files.
#[derive(Clone, Debug, PartialEq)]
pub struct SimState {
    /// dt and time (s) of the last step, its largest speed (bits of an f32, m/s), the step counter and
    /// the solvers' last iteration counts.
    pub step: StepState,
    /// Volume each emitter is owed, m^3 (`carry` of `EmitState`; the other fields are replanned every
    /// step).
    pub emit_carry: [f32; MAX_SOURCES],
    /// Per particle (capacity of them, parked ones included): xyz = position (m), w = density (kg/m^3;
    /// < 0 = parked).
    pub positions: Vec<[f32; 4]>,
    /// Per particle: xyz = velocity (m/s), w = pressure (Pa).
    pub velocities: Vec<[f32; 4]>,
    /// The neighbour grid's box: origin (m, on the domain's cell lattice) and cells per axis.
    pub grid_origin: [f32; 3],
    pub grid_dims: [u32; 3],
    /// The (density, divergence) iteration counts the step recording bounds its solves by, if any had
    /// come back.
    pub iterations: Option<(u32, u32)>,
}

impl Simulation {
    /// The layout of this simulation's state copies.
    pub fn state_layout(&self) -> StateLayout {
        StateLayout { capacity: self.capacity }
    }

    /// Records a copy of the GPU part of the state into `dst` at byte `offset` (laid out as
    /// [`Simulation::state_layout`]; `dst` needs `COPY_DST` and room for it). Nothing waits.
    pub fn encode_state_copy(&self, encoder: &mut wgpu::CommandEncoder, dst: &wgpu::Buffer, offset: u64) {
        let layout = self.state_layout();
        let b = &self.buffers;
        let sources = size_of::<SourcesGpu>() as u64;
        encoder.copy_buffer_to_buffer(&b.step, 0, dst, offset, size_of::<StepState>() as u64);
        encoder.copy_buffer_to_buffer(&b.sources, 0, dst, offset + StateLayout::SOURCES, sources);
        let n = self.capacity as u64;
        b.pos.copy_to_buffer(encoder, 0, n, dst, offset + StateLayout::POSITIONS);
        b.vel.copy_to_buffer(encoder, 0, n, dst, offset + layout.velocities());
    }

    /// The state from a copy's `bytes` ([`Simulation::encode_state_copy`]) and the CPU part as it is now.
    /// `None` when `bytes` is shorter than the layout.
    pub fn decode_state(&self, bytes: &[u8]) -> Option<SimState> {
        let layout = self.state_layout();
        let view = layout.split(bytes)?;
        let end = StateLayout::POSITIONS as usize;
        let sources: SourcesGpu = bytemuck::pod_read_unaligned(bytes.get(StateLayout::SOURCES as usize..end)?);
        Some(SimState {
            step: view.step,
            emit_carry: sources.state.map(|s| s.carry),
            positions: view.positions.to_vec(),
            velocities: view.velocities.to_vec(),
            grid_origin: self.grid_shape.origin,
            grid_dims: self.grid_shape.dims,
            iterations: self.solver_iterations(),
        })
    }

    /// Blocking copy of the whole state. For batch tools and tests: it waits for the GPU.
    /// Errors: [`SimError::State`] when nothing comes back (the device is lost).
    pub fn read_state_blocking(&self, ctx: &GpuContext) -> Result<SimState, SimError> {
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sim state read-back"),
            size: self.state_layout().bytes(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sim state copy") });
        self.encode_state_copy(&mut encoder, &staging, 0);
        ctx.queue.submit([encoder.finish()]);
        staging.map_async(wgpu::MapMode::Read, .., |_| {});
        let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
        let data = staging.get_mapped_range(..).map(|v| v.to_vec()).unwrap_or_default();
        staging.unmap();
        self.decode_state(&data).ok_or(SimError::State("the state could not be read back from the GPU"))
    }

    /// Puts `state` on the GPU and the CPU: the particles, the step state, the emitters' owed volume, the
    /// grid's box and the iteration bounds; the statistics start afresh (those in flight are dropped). The
    /// next step goes on from it as the run that saved it did. The solver parameters and sources are the
    /// caller's to set first (the engine does, from the checkpoint).
    /// Errors ([`SimError::State`]): a state of another capacity, a grid box outside this simulation's
    /// domain lattice or larger than its table, a non-finite or negative owed volume.
    pub fn restore(&mut self, ctx: &GpuContext, state: &SimState) -> Result<(), SimError> {
        let n = self.capacity as usize;
        if state.positions.len() != n || state.velocities.len() != n {
            return Err(SimError::State("its particle count is not this simulation's"));
        }
        if !state.emit_carry.iter().all(|c| c.is_finite() && *c >= 0.0) {
            return Err(SimError::State("an emitter's owed volume is not a finite, non-negative number"));
        }
        // The box must be one this simulation's grid could take: on the domain's cell lattice, at most
        // the domain's cells and one table row along x.
        let cells = self.grid_shape.cell_size;
        let centre = |a: usize, k: f32| state.grid_origin[a] + (k + 0.5) * cells;
        let lo: [f32; 3] = std::array::from_fn(|a| centre(a, 0.0));
        let hi: [f32; 3] = std::array::from_fn(|a| centre(a, state.grid_dims[a].max(1) as f32 - 1.0));
        let boxed = self.grid_shape.boxed(&self.domain, lo, hi, 0);
        if boxed.origin != state.grid_origin || boxed.dims != state.grid_dims {
            return Err(SimError::State("its neighbour grid does not fit this simulation's domain"));
        }
        let mut sources = self.sources;
        for (s, carry) in sources.state.iter_mut().zip(state.emit_carry) {
            *s = EmitState { carry, ..EmitState::default() };
        }
        let q = &ctx.queue;
        self.buffers.pos.write(q, 0, bytemuck::cast_slice(&state.positions));
        self.buffers.vel.write(q, 0, bytemuck::cast_slice(&state.velocities));
        q.write_buffer(&self.buffers.step, 0, bytemuck::bytes_of(&state.step));
        // The owed volume lives on the GPU only (the CPU's copy keeps it at zero, for `reset`).
        q.write_buffer(&self.buffers.sources, 0, bytemuck::bytes_of(&sources));
        self.grid_shape = boxed;
        self.write_grid_box();
        self.particles_version += 1;
        self.latest = None;
        self.blow_up = None;
        self.fresh_after = self.frame;
        self.restored_iterations = state.iterations;
        Ok(())
    }

    /// Puts a saved step state (time, dt, the largest speed, the step counter) and the solves' iteration
    /// bounds on this simulation, its particles as they are: a rank of a decomposed simulation built from
    /// a checkpoint's particles (src/cli/multi.rs), whose grid and particles are its own slab's. The
    /// statistics start afresh, as after [`Simulation::restore`].
    pub fn restore_step(&mut self, ctx: &GpuContext, step: &StepState, iterations: Option<(u32, u32)>) {
        ctx.queue.write_buffer(&self.buffers.step, 0, bytemuck::bytes_of(step));
        self.latest = None;
        self.fresh_after = self.frame;
        self.restored_iterations = iterations;
    }

    /// The (density, divergence) iteration counts that bound the solves recorded next: the newest
    /// statistics', else those of a restored state or of a rank's last step.
    pub fn solver_iterations(&self) -> Option<(u32, u32)> {
        self.latest.as_ref().map(|s| (s.density_iterations, s.divergence_iterations)).or(self.restored_iterations)
    }

    /// The most (divergence, density) iterations the next step's solves run: the limits, or fewer when
    /// the solves recently needed far fewer (2 u + 4 after u; a solve cut short gets more next time), one
    /// rule for one GPU (from the asynchronously read statistics) and for the ranks (from their last step,
    /// [`Simulation::note_iterations`]), so both spend the same iteration budget.
    pub(super) fn iteration_budget(&self) -> (u32, u32) {
        let cap = |used: Option<u32>, max: u32| used.map_or(max, |u| (2 * u + 4).min(max));
        let last = self.solver_iterations();
        (
            cap(last.map(|(_, divergence)| divergence), self.params.divergence_iterations),
            cap(last.map(|(density, _)| density), self.params.density_iterations),
        )
    }

    /// Records the (density, divergence) iterations of the step just run, read from its step state: a
    /// rank's simulation, which reads no statistics, bounds its next solves by them as one GPU does by its
    /// statistics (2 u + 4 after u, see `Simulation::iteration_budget`).
    pub fn note_iterations(&mut self, iterations: (u32, u32)) {
        self.restored_iterations = Some(iterations);
    }
}
