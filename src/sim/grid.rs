//! Neighbour grid rebuilt every step by counting sort (shaders/sim/grid.wgsl): clear the cell counts,
//! `count` (atomic count per cell), exclusive prefix sum over cells (shaders/sim/scan.wgsl, multi-level),
//! `scatter` (each particle claims its place with a second atomic add, so each cell is contiguous).
//! Green 2010; Hoetzlein 2014. The grid's box follows the fluid's bounding box from the asynchronous
//! statistics (`Simulation::poll_stats`); the table is folded onto about 2 cells per particle
//! ([`super::gpu_data::GridShape`]).

use super::gpu_data::SimUniforms;
use super::Simulation;
use crate::gpu::{self, Profiler};

/// Cells of margin around the fluid's bounding box in the neighbour grid's box: statistics arrive a few
/// frames late, and a step moves a particle at most cfl h (CFL), a fraction of a cell.
pub const GRID_BOX_PAD: u32 = 3;

/// Axis-aligned bounds (min, max) of points; (+inf, -inf) when there are none.
pub(super) fn bounds(points: impl IntoIterator<Item = [f32; 3]>) -> ([f32; 3], [f32; 3]) {
    points.into_iter().fold(([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]), |(lo, hi), p| {
        (std::array::from_fn(|a| lo[a].min(p[a])), std::array::from_fn(|a| hi[a].max(p[a])))
    })
}

/// Values per scan block (256 threads x 2).
const SCAN_BLOCK: u32 = 512;

/// Multi-level exclusive prefix sum over a u32 buffer of fixed length.
pub struct ScanPass {
    scan_blocks: wgpu::ComputePipeline,
    add_offsets: wgpu::ComputePipeline,
    /// Per level: element count and bind group (uniform n, data, sums = next level's data).
    levels: Vec<(u32, wgpu::BindGroup)>,
    _buffers: Vec<wgpu::Buffer>,
}

impl ScanPass {
    /// Prepares an in-place exclusive scan of `data` (n u32 values).
    pub fn new(device: &wgpu::Device, data: &wgpu::Buffer, n: u32) -> Self {
        let vis = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("scan layout"),
            entries: &[gpu::uniform_entry(0, vis), gpu::storage_entry(1, false, vis), gpu::storage_entry(2, false, vis)],
        });
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("scan pipeline layout"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let module = gpu::shader::module(device, "sim/scan.wgsl");
        let scan_blocks = gpu::compute_pipeline(device, &module, &pl, "scan_blocks");
        let add_offsets = gpu::compute_pipeline(device, &module, &pl, "add_offsets");

        let mut sizes = vec![n];
        while *sizes.last().unwrap() > SCAN_BLOCK {
            let last = *sizes.last().unwrap();
            sizes.push(last.div_ceil(SCAN_BLOCK));
        }
        let mut buffers: Vec<wgpu::Buffer> = sizes[1..]
            .iter()
            .enumerate()
            .map(|(k, &s)| gpu::storage_buffer(device, &format!("scan level {}", k + 1), s as u64 * 4))
            .collect();
        buffers.push(gpu::storage_buffer(device, "scan top sum", 16));
        let mut levels = Vec::new();
        for (k, &s) in sizes.iter().enumerate() {
            let uniform = gpu::uniform_buffer_init(device, "scan n", bytemuck::cast_slice(&[s, 0, 0, 0]));
            let src = if k == 0 { data } else { &buffers[k - 1] };
            let bg = gpu::bind_buffers(device, "scan level", &layout, &[&uniform, src, &buffers[k]]);
            buffers.push(uniform);
            levels.push((s, bg));
        }
        Self { scan_blocks, add_offsets, levels, _buffers: buffers }
    }

    /// Records the scan into an open compute pass.
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        for (n, bg) in &self.levels {
            pass.set_pipeline(&self.scan_blocks);
            pass.set_bind_group(0, bg, &[]);
            gpu::dispatch_rows(pass, n.div_ceil(SCAN_BLOCK));
        }
        for (n, bg) in self.levels.iter().rev().skip(1) {
            pass.set_pipeline(&self.add_offsets);
            pass.set_bind_group(0, bg, &[]);
            gpu::dispatch_rows(pass, n.div_ceil(SCAN_BLOCK));
        }
    }
}

/// Count, scan and scatter: the grid build of one step.
pub struct GridPass {
    count: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
    scan: ScanPass,
    workgroup_size: u32,
}

impl GridPass {
    /// `workgroup_size` threads per workgroup for `count` and `scatter` (the scan uses 256).
    pub fn new(device: &wgpu::Device, layout: &wgpu::PipelineLayout, cell_start: &wgpu::Buffer, num_cells: u32, workgroup_size: u32) -> Self {
        let module = gpu::shader::module(device, "sim/grid.wgsl");
        let wg = [("WG", workgroup_size as f64)];
        Self {
            count: gpu::compute_pipeline_with(device, &module, layout, "count", &wg),
            scatter: gpu::compute_pipeline_with(device, &module, layout, "scatter", &wg),
            // cells + 1 entries: the parking cell of inactive particles, then the total.
            scan: ScanPass::new(device, cell_start, num_cells + 2),
            workgroup_size,
        }
    }

    /// Records the whole grid build; `cell_start` is cleared first.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler, bind: &wgpu::BindGroup, cell_start: &wgpu::Buffer, n: u32) {
        encoder.clear_buffer(cell_start, 0, None);
        let mut pass = profiler.compute_pass(encoder, "grid");
        pass.set_bind_group(0, bind, &[]);
        pass.set_pipeline(&self.count);
        gpu::dispatch_rows(&mut pass, gpu::groups(n, self.workgroup_size));
        self.scan.encode(&mut pass);
        pass.set_bind_group(0, bind, &[]);
        pass.set_pipeline(&self.scatter);
        gpu::dispatch_rows(&mut pass, gpu::groups(n, self.workgroup_size));
    }
}

/// The grid's box follows the fluid (see [`super::gpu_data::GridShape`]).
impl Simulation {
    /// Moves the grid's box onto the last statistics' particle bounds and the emitters (see `poll_stats`).
    pub(super) fn follow_fluid(&mut self) {
        // Before the first statistics: the current box (which held the initial particles).
        let g = &self.grid_shape;
        let fluid = match &self.latest {
            Some(s) => [s.bbox_min, s.bbox_max],
            None => [g.origin, std::array::from_fn(|a| g.origin[a] + g.dims[a] as f32 * g.cell_size)],
        };
        let emitters = &self.sources.emitters[..self.sources.num_emitters as usize];
        let discs = emitters.iter().flat_map(|e| {
            let c = glam::Vec3::from(e.center);
            [(c - glam::Vec3::splat(e.radius)).to_array(), (c + glam::Vec3::splat(e.radius)).to_array()]
        });
        let (lo, hi) = bounds(fluid.into_iter().chain(discs));
        if !(lo.iter().chain(&hi).all(|v| v.is_finite()) && (0..3).all(|a| lo[a] <= hi[a])) {
            return;
        }
        let next = self.grid_shape.boxed(&self.domain, lo, hi, GRID_BOX_PAD);
        if next != self.grid_shape {
            self.grid_shape = next;
            self.write_grid_box();
        }
    }

    /// Puts the neighbour grid's box on `lo..hi` (metres, padded by [`GRID_BOX_PAD`] cells, within the
    /// domain) until the next statistics move it onto the fluid again. Particles outside the box are
    /// clamped into its border cells, which changes speed, not results; tests use this to check that.
    pub fn set_grid_box(&mut self, lo: [f32; 3], hi: [f32; 3]) {
        self.grid_shape = self.grid_shape.boxed(&self.domain, lo, hi, GRID_BOX_PAD);
        self.write_grid_box();
    }

    /// Writes the grid box's uniforms alone (origin and dims; the table and cell size never change).
    pub(super) fn write_grid_box(&self) {
        let g = &self.grid_shape;
        let origin = std::mem::offset_of!(SimUniforms, grid_origin) as u64;
        let dims = std::mem::offset_of!(SimUniforms, grid_dims) as u64;
        self.queue.write_buffer(&self.buffers.uniforms, origin, bytemuck::bytes_of(&g.origin));
        self.queue.write_buffer(&self.buffers.uniforms, dims, bytemuck::bytes_of(&g.dims));
    }
}
