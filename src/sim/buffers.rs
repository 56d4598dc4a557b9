//! The simulation's GPU buffers as one bind group (group 0 of every simulation kernel): the binding
//! table, its layouts (the grid build writes what later kernels only read) and the bind group.

use super::gpu_data::{SimUniforms, StepState};
use super::sources::SourcesGpu;
use crate::gpu::{self, split::SplitBuffer};

/// Every GPU buffer of the simulation (bind group 0 of all simulation kernels, see [`Buffers::all`]).
pub(super) struct Buffers {
    /// The parameters ([`SimUniforms`]): a read-only storage buffer, not a uniform buffer, which Mesa
    /// 22.3's lavapipe would recompile the kernels for at every bind (shaders/sim/common.wgsl).
    pub(super) uniforms: wgpu::Buffer,
    pub(super) step: wgpu::Buffer,
    pub(super) pos: SplitBuffer,
    pub(super) vel: SplitBuffer,
    pub(super) spos: SplitBuffer,
    pub(super) svel: SplitBuffer,
    pub(super) cell_start: wgpu::Buffer,
    pub(super) vstar: SplitBuffer,
    pub(super) rho_p: SplitBuffer,
    pub(super) heights: wgpu::Buffer,
    pub(super) boundary_table: wgpu::Buffer,
    pub(super) partials: wgpu::Buffer,
    pub(super) stats_out: wgpu::Buffer,
    pub(super) sources: wgpu::Buffer,
    /// Particle ids and the sort's slot map, `3 * capacity` u32 (src/sim/ids.rs), or a 2-entry stand-in
    /// when not tracked.
    pub(super) ids: wgpu::Buffer,
    /// The static obstacles: their list and distance samples (src/sim/obstacles.rs).
    pub(super) obstacles: wgpu::Buffer,
    /// DFSPH's neighbour lists, [`super::neighbours::LIST_WORDS`] u32 per particle of capacity, or a
    /// stand-in of one particle's words when there are none (src/sim/neighbours.rs).
    pub(super) neighbours: wgpu::Buffer,
}

impl Buffers {
    /// (binding, buffer) for every binding of the simulation's bind group 0 (binding 10 is unused; 7
    /// holds the particle ids, 9 the neighbour lists). The per-particle arrays are split ([`SplitBuffer::bindings`]): their chunks past the first
    /// sit at `binding + k * gpu::split::BINDING_STRIDE`. Scratch that lives only between the grid's
    /// scatter and `integrate` uses the unsorted state's buffers, dead in that window (the scatter has read
    /// them, integrate rewrites them): `pred` (PCISPH predicted positions, DFSPH alpha and kappas) is
    /// `pos`, `accel` (pressure acceleration, surface normals) is `vel` (`#split_alias` in
    /// shaders/sim/common.wgsl). Saves 32 bytes per particle.
    pub(super) fn all(&self) -> Vec<(u32, &wgpu::Buffer)> {
        let chunks = self.chunks();
        let mut all =
            vec![(0, &self.uniforms), (1, &self.step), (6, &self.cell_start), (7, &self.ids), (9, &self.neighbours)];
        let split =
            [(2, &self.pos), (3, &self.vel), (4, &self.spos), (5, &self.svel), (8, &self.vstar), (11, &self.rho_p)];
        all.extend(split.into_iter().flat_map(|(b, s)| s.bindings(b, chunks)));
        all.extend([
            (12, &self.heights),
            (13, &self.boundary_table),
            (14, &self.partials),
            (15, &self.stats_out),
            (16, &self.sources),
            (17, &self.obstacles),
        ]);
        all
    }

    /// Chunks of every per-particle array (they have one length), the bindings each takes.
    pub(super) fn chunks(&self) -> usize {
        self.pos.chunks().len()
    }

    /// A layout over every binding of [`Self::all`], the bindings in `read_only` (every chunk of a split
    /// array declared there) read-only; each binding's
    /// `min_binding_size` is its WGSL type's (the struct, or the element of its array).
    pub(super) fn layout(&self, device: &wgpu::Device, label: &str, read_only: &[u32]) -> wgpu::BindGroupLayout {
        let vis = wgpu::ShaderStages::COMPUTE;
        let entries: Vec<_> = self
            .all()
            .iter()
            .map(|&(b, _)| {
                let ro = read_only.contains(&(b % gpu::split::BINDING_STRIDE));
                match b % gpu::split::BINDING_STRIDE {
                    0 => gpu::storage_entry::<SimUniforms>(0, true, vis),
                    1 => gpu::storage_entry::<StepState>(b, ro, vis),
                    6 | 7 | 9 => gpu::storage_entry::<u32>(b, ro, vis),
                    11 | 13 => gpu::storage_entry::<[f32; 2]>(b, ro, vis),
                    12 => gpu::storage_entry::<f32>(b, ro, vis),
                    15 => gpu::storage_entry::<super::bodies::StatsAndBodies>(b, ro, vis),
                    16 => gpu::storage_entry::<SourcesGpu>(b, ro, vis),
                    17 => gpu::storage_entry::<super::obstacles::SmallestBinding>(b, ro, vis),
                    _ => gpu::storage_entry::<[f32; 4]>(b, ro, vis),
                }
            })
            .collect();
        device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(label), entries: &entries })
    }

    pub(super) fn bind_group(&self, device: &wgpu::Device, layout: &wgpu::BindGroupLayout) -> wgpu::BindGroup {
        gpu::bind_at(device, "sim bind group", layout, self.all())
    }
}
