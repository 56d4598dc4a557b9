//! The simulation's GPU buffers as one bind group (group 0 of every simulation kernel): the binding
//! table, its layouts (the grid build writes what later kernels only read) and the bind group.

use super::gpu_data::{SimUniforms, StepState};
use super::sources::SourcesGpu;
use crate::gpu;

/// Every GPU buffer of the simulation (bind group 0 of all simulation kernels, binding = field order).
pub(super) struct Buffers {
    pub(super) uniforms: wgpu::Buffer,
    pub(super) step: wgpu::Buffer,
    pub(super) pos: wgpu::Buffer,
    pub(super) vel: wgpu::Buffer,
    pub(super) spos: wgpu::Buffer,
    pub(super) svel: wgpu::Buffer,
    pub(super) cell_start: wgpu::Buffer,
    pub(super) vstar: wgpu::Buffer,
    pub(super) rho_p: wgpu::Buffer,
    pub(super) heights: wgpu::Buffer,
    pub(super) boundary_table: wgpu::Buffer,
    pub(super) partials: wgpu::Buffer,
    pub(super) stats_out: wgpu::Buffer,
    pub(super) sources: wgpu::Buffer,
    /// Particle ids, `2 * capacity` u32 (src/sim/ids.rs), or a 2-entry stand-in when not tracked.
    pub(super) ids: wgpu::Buffer,
}

impl Buffers {
    /// (binding, buffer) for every binding of the simulation's bind group 0.
    pub(super) fn all(&self) -> [(u32, &wgpu::Buffer); 17] {
        [
            (0, &self.uniforms),
            (1, &self.step),
            (2, &self.pos),
            (3, &self.vel),
            (4, &self.spos),
            (5, &self.svel),
            (6, &self.cell_start),
            (7, &self.ids),
            (8, &self.vstar),
            // Scratch that lives only between the grid's scatter and `integrate`, bound onto the unsorted
            // state, which is dead in that window (the scatter has read it, integrate rewrites it):
            // `pred` (PCISPH predicted positions, DFSPH alpha and kappas) aliases `pos`, `accel` (pressure
            // acceleration, surface normals) aliases `vel`. Saves 32 bytes per particle.
            (9, &self.pos),
            (10, &self.vel),
            (11, &self.rho_p),
            (12, &self.heights),
            (13, &self.boundary_table),
            (14, &self.partials),
            (15, &self.stats_out),
            (16, &self.sources),
        ]
    }

    /// A layout over every binding of [`Self::all`], the bindings in `read_only` read-only; each binding's
    /// `min_binding_size` is its WGSL type's (the struct, or the element of its array).
    pub(super) fn layout(&self, device: &wgpu::Device, label: &str, read_only: &[u32]) -> wgpu::BindGroupLayout {
        let vis = wgpu::ShaderStages::COMPUTE;
        let entries: Vec<_> = self
            .all()
            .iter()
            .map(|&(b, _)| {
                let ro = read_only.contains(&b);
                match b {
                    0 => gpu::uniform_entry::<SimUniforms>(0, vis),
                    1 => gpu::storage_entry::<StepState>(b, ro, vis),
                    6 | 7 => gpu::storage_entry::<u32>(b, ro, vis),
                    11 | 13 => gpu::storage_entry::<[f32; 2]>(b, ro, vis),
                    12 => gpu::storage_entry::<f32>(b, ro, vis),
                    16 => gpu::storage_entry::<SourcesGpu>(b, ro, vis),
                    _ => gpu::storage_entry::<[f32; 4]>(b, ro, vis),
                }
            })
            .collect();
        device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(label), entries: &entries })
    }

    pub(super) fn bind_group(&self, device: &wgpu::Device, layout: &wgpu::BindGroupLayout) -> wgpu::BindGroup {
        let entries: Vec<_> = self
            .all()
            .iter()
            .map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("sim bind group"),
            layout,
            entries: &entries,
        })
    }
}
