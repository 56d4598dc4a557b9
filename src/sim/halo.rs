//! The halo exchange's GPU side for the ranks of a decomposed simulation (src/cluster), beside
//! shaders/sim/halo.wgsl: `gather` copies what [`Exchanged`] names (velocities, density and pressure, or
//! kappa / rho) of the particles the neighbours hold as ghosts into a buffer that is read back, with the
//! step state in front of it (one read-back per exchange); `scatter` writes the neighbours' values into
//! this rank's ghosts. Particles are named by their
//! slots as the host wrote them before the step ([`HaloStage::set_slots`], once per step); the shader maps
//! them to this step's sorted slots through the grid build's slot map, so nothing is read back to find
//! them. Only the ranks' simulations ([`super::SimOptions::track_ids`]) build it.

use super::gpu_data::StepState;
use super::stage::{StageLayouts, StepContext};
use crate::gpu::{self, DispatchError, Workgroups};

/// What a halo exchange moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Exchanged {
    /// svel and v* (DFSPH, once per solve).
    Velocities,
    /// rho_p: density and pressure (PCISPH's iterations).
    Density,
    /// kappa / rho of the solve (DFSPH's iterations).
    Kappa,
}

impl Exchanged {
    /// Floats per particle, as read back and sent.
    pub(super) fn floats(self) -> usize {
        match self {
            Exchanged::Velocities => 8,
            Exchanged::Density => 2,
            Exchanged::Kappa => 1,
        }
    }

    /// Entry points of halo.wgsl: (gather, scatter).
    fn entries(self) -> (&'static str, &'static str) {
        match self {
            Exchanged::Velocities => ("gather", "scatter"),
            Exchanged::Density => ("gather_density", "scatter_density"),
            Exchanged::Kappa => ("gather_kappa", "scatter_kappa"),
        }
    }

    const ALL: [Exchanged; 3] = [Exchanged::Velocities, Exchanged::Density, Exchanged::Kappa];
}

/// Bytes at the start of the read-back buffer for a copy of the step state (its error sum travels with
/// the values: one read-back per iteration).
pub(super) const STATE_BYTES: u64 = size_of::<StepState>() as u64;

/// Pipelines and buffers of the halo exchange, sized for `capacity` particles on each side.
pub(super) struct HaloStage {
    /// (gather, scatter) per [`Exchanged`], in the order of `Exchanged::ALL`.
    pipelines: Vec<(wgpu::ComputePipeline, wgpu::ComputePipeline)>,
    send_slots: wgpu::Buffer,
    recv_slots: wgpu::Buffer,
    /// Gathered values (up to 8 floats per sent particle), copied to `staging`.
    pub(super) send_values: wgpu::Buffer,
    /// Received values, written by the host.
    pub(super) recv_values: wgpu::Buffer,
    /// Read-back copy of the step state ([`STATE_BYTES`]) and then of `send_values`.
    pub(super) staging: wgpu::Buffer,
    gather_bind: wgpu::BindGroup,
    scatter_bind: wgpu::BindGroup,
    /// Workgroups of 64 covering `capacity` entries.
    groups: Workgroups,
    /// Entries of this step: (sent, received).
    pub(super) counts: (u32, u32),
}

impl HaloStage {
    /// Errors: `capacity` entries need more workgroups than the device dispatches.
    pub fn new(layouts: &StageLayouts, capacity: u32) -> Result<Self, DispatchError> {
        let device = layouts.device;
        let vis = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("halo layout"),
            entries: &[gpu::storage_entry::<u32>(0, true, vis), gpu::storage_entry::<f32>(1, false, vis)],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("halo pipeline layout"),
            bind_group_layouts: &[Some(layouts.bind_group_layout), Some(&layout)],
            immediate_size: 0,
        });
        let module = layouts.module("sim/halo.wgsl", &[]);
        let slots = |label| gpu::storage_buffer(device, label, (capacity as u64 + 1) * 4);
        let (send_slots, recv_slots) = (slots("halo send slots"), slots("halo ghost slots"));
        let value_bytes = (capacity as u64 * 4 * Exchanged::Velocities.floats() as u64).max(32);
        let buffer = |label, size, usage| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage, mapped_at_creation: false })
        };
        use wgpu::BufferUsages as U;
        let send_values = buffer("halo sent values", value_bytes, U::STORAGE | U::COPY_SRC);
        let recv_values = buffer("halo received values", value_bytes, U::STORAGE | U::COPY_DST);
        let staging = buffer("halo read-back", STATE_BYTES + value_bytes, U::MAP_READ | U::COPY_DST);
        let gather_bind = gpu::bind_buffers(device, "halo gather", &layout, &[&send_slots, &send_values]);
        let scatter_bind = gpu::bind_buffers(device, "halo scatter", &layout, &[&recv_slots, &recv_values]);
        let pipeline = |entry| gpu::compute_pipeline_with(device, &module, &pipeline_layout, entry, &[layouts.split]);
        let pipelines = Exchanged::ALL
            .iter()
            .map(|what| {
                let (gather, scatter) = what.entries();
                (pipeline(gather), pipeline(scatter))
            })
            .collect();
        Ok(Self {
            pipelines,
            send_slots,
            recv_slots,
            send_values,
            recv_values,
            staging,
            gather_bind,
            scatter_bind,
            groups: gpu::workgroups("halo exchange", capacity as u64, 64, 1, &device.limits())?,
            counts: (0, 0),
        })
    }

    /// This step's particles by their slot as written before the step (below the live count): those
    /// whose values are sent (in the order the neighbours expect) and those of the ghosts (in the order
    /// their values arrive). Each at most the capacity (the caller's lists come from distinct particles).
    pub fn set_slots(&mut self, queue: &wgpu::Queue, send: &[u32], ghosts: &[u32]) {
        for (buffer, list) in [(&self.send_slots, send), (&self.recv_slots, ghosts)] {
            let mut data = Vec::with_capacity(list.len() + 1);
            data.push(list.len() as u32);
            data.extend_from_slice(list);
            queue.write_buffer(buffer, 0, bytemuck::cast_slice(&data));
        }
        self.counts = (send.len() as u32, ghosts.len() as u32);
    }

    /// Bytes of the sent values of `what` this step.
    pub fn sent_bytes(&self, what: Exchanged) -> u64 {
        self.counts.0 as u64 * 4 * what.floats() as u64
    }

    /// Records the gather of `what`, and the copies of the step state `state` (its first [`STATE_BYTES`])
    /// and of the gathered values into the read-back buffer.
    pub fn encode_gather(&self, step: &mut StepContext<'_>, what: Exchanged, state: &wgpu::Buffer) {
        {
            let mut pass = step.pass("halo");
            pass.set_bind_group(1, &self.gather_bind, &[]);
            pass.set_pipeline(&self.pipelines[what as usize].0);
            gpu::dispatch(&mut pass, self.groups);
        }
        step.encoder.copy_buffer_to_buffer(state, 0, &self.staging, 0, STATE_BYTES);
        let bytes = self.sent_bytes(what);
        if bytes > 0 {
            step.encoder.copy_buffer_to_buffer(&self.send_values, 0, &self.staging, STATE_BYTES, bytes);
        }
    }

    /// Records the scatter of the received values of `what` (written into `recv_values` before).
    pub fn encode_scatter(&self, step: &mut StepContext<'_>, what: Exchanged) {
        let mut pass = step.pass("halo");
        pass.set_bind_group(1, &self.scatter_bind, &[]);
        pass.set_pipeline(&self.pipelines[what as usize].1);
        gpu::dispatch(&mut pass, self.groups);
    }
}
