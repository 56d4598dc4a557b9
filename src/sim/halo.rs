//! The halo exchange's GPU side for the ranks of a decomposed simulation (src/cluster), beside
//! shaders/sim/halo.wgsl: `gather` copies the velocities (svel, v*) of the particles the neighbours hold
//! as ghosts into a buffer that is read back; `scatter` writes the neighbours' values into this rank's
//! ghosts; [`Exchanged::Density`] moves (density, pressure) instead (PCISPH). Particles are named by their
//! slots as the host wrote them before the step ([`HaloStage::set_slots`], once per step); the shader maps
//! them to this step's sorted slots through the grid build's slot map, so nothing is read back to find
//! them. Only the ranks' simulations ([`super::SimOptions::track_ids`]) build it.

use super::stage::{StageLayouts, StepContext};
use crate::gpu::{self, DispatchError, Workgroups};

/// What a halo exchange moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Exchanged {
    /// svel and v* (DFSPH's solves).
    Velocities,
    /// rho_p: density and pressure (PCISPH's iterations).
    Density,
}

/// Pipelines and buffers of the halo exchange, sized for `capacity` particles on each side.
pub(super) struct HaloStage {
    gather: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
    gather_density: wgpu::ComputePipeline,
    scatter_density: wgpu::ComputePipeline,
    send_slots: wgpu::Buffer,
    recv_slots: wgpu::Buffer,
    /// Gathered values (2 `vec4<f32>` per sent particle), copied to `staging`.
    pub(super) send_values: wgpu::Buffer,
    /// Received values, written by the host.
    pub(super) recv_values: wgpu::Buffer,
    /// Read-back copy of `send_values`.
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
            entries: &[gpu::storage_entry::<u32>(0, true, vis), gpu::storage_entry::<[f32; 4]>(1, false, vis)],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("halo pipeline layout"),
            bind_group_layouts: &[Some(layouts.bind_group_layout), Some(&layout)],
            immediate_size: 0,
        });
        let module = layouts.module("sim/halo.wgsl", &[]);
        let slots = |label| gpu::storage_buffer(device, label, (capacity as u64 + 1) * 4);
        let (send_slots, recv_slots) = (slots("halo send slots"), slots("halo ghost slots"));
        let value_bytes = capacity as u64 * 32;
        let values = |label, extra| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: value_bytes.max(32),
                usage: wgpu::BufferUsages::STORAGE | extra,
                mapped_at_creation: false,
            })
        };
        let send_values = values("halo sent values", wgpu::BufferUsages::COPY_SRC);
        let recv_values = values("halo received values", wgpu::BufferUsages::COPY_DST);
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("halo read-back"),
            size: value_bytes.max(32),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let gather_bind = gpu::bind_buffers(device, "halo gather", &layout, &[&send_slots, &send_values]);
        let scatter_bind = gpu::bind_buffers(device, "halo scatter", &layout, &[&recv_slots, &recv_values]);
        Ok(Self {
            gather: gpu::compute_pipeline_with(device, &module, &pipeline_layout, "gather", &[layouts.split]),
            scatter: gpu::compute_pipeline_with(device, &module, &pipeline_layout, "scatter", &[layouts.split]),
            gather_density: gpu::compute_pipeline_with(
                device,
                &module,
                &pipeline_layout,
                "gather_density",
                &[layouts.split],
            ),
            scatter_density: gpu::compute_pipeline_with(
                device,
                &module,
                &pipeline_layout,
                "scatter_density",
                &[layouts.split],
            ),
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

    /// Records the gather of `what` and the copy of its values into the read-back buffer.
    pub fn encode_gather(&self, step: &mut StepContext<'_>, what: Exchanged) {
        {
            let mut pass = step.pass("halo");
            pass.set_bind_group(1, &self.gather_bind, &[]);
            pass.set_pipeline(match what {
                Exchanged::Velocities => &self.gather,
                Exchanged::Density => &self.gather_density,
            });
            gpu::dispatch(&mut pass, self.groups);
        }
        let bytes = self.counts.0 as u64 * 32;
        if bytes > 0 {
            step.encoder.copy_buffer_to_buffer(&self.send_values, 0, &self.staging, 0, bytes);
        }
    }

    /// Records the scatter of the received values of `what` (written into `recv_values` before).
    pub fn encode_scatter(&self, step: &mut StepContext<'_>, what: Exchanged) {
        let mut pass = step.pass("halo");
        pass.set_bind_group(1, &self.scatter_bind, &[]);
        pass.set_pipeline(match what {
            Exchanged::Velocities => &self.scatter,
            Exchanged::Density => &self.scatter_density,
        });
        gpu::dispatch(&mut pass, self.groups);
    }
}
