//! Neighbour grid rebuilt every step by counting sort (shaders/sim/grid.wgsl): `clear` the cell counts,
//! `count` (atomic count per cell), exclusive prefix sum over cells ([`crate::gpu::scan`], multi-level),
//! `scatter` (each particle claims its place with a second atomic add, so each cell is contiguous).
//! Green 2010; Hoetzlein 2014. The grid's box follows the fluid's bounding box from the asynchronous
//! statistics (`Simulation::poll_stats`); the table is folded onto about 2 cells per particle
//! ([`super::gpu_data::GridShape`]).

use super::gpu_data::SimUniforms;
use super::stage::{Stage, StageLayouts, StepContext};
use super::Simulation;
use crate::gpu::{self, scan::ScanPass};

/// Cells of margin around the fluid's bounding box in the neighbour grid's box: statistics arrive a few
/// frames late, and a step moves a particle at most cfl h (CFL), a fraction of a cell.
pub const GRID_BOX_PAD: u32 = 3;

/// Axis-aligned bounds (min, max) of points; (+inf, -inf) when there are none.
pub(super) fn bounds(points: impl IntoIterator<Item = [f32; 3]>) -> ([f32; 3], [f32; 3]) {
    points.into_iter().fold(([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]), |(lo, hi), p| {
        (std::array::from_fn(|a| lo[a].min(p[a])), std::array::from_fn(|a| hi[a].max(p[a])))
    })
}

/// The profiler label of the grid pass, the first of every step (so its runs in a profiled frame are the
/// frame's steps: [`super::frame_steps::steps_in`]).
pub const PASS: &str = "grid";

/// The "grid" pass: `clear` the cell counts, `count`, scan, `scatter`.
pub(super) struct GridStage {
    clear: wgpu::ComputePipeline,
    count: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
    /// The scatter that also carries the particle ids (`IDS` variant), when they are tracked.
    scatter_ids: Option<wgpu::ComputePipeline>,
    scan: ScanPass,
    /// Workgroups over the cell table's entries (the cells, the parking cell and the total).
    table: gpu::Workgroups,
}

impl GridStage {
    /// The build over `cell_start` (`num_cells` cells, plus the parking cell of inactive particles and
    /// the total).
    /// Errors: the scan's dispatch exceeds the device's limits.
    pub fn new(layouts: &StageLayouts, cell_start: &wgpu::Buffer, num_cells: u32) -> Result<Self, gpu::DispatchError> {
        let module = layouts.module("sim/grid.wgsl", &[]);
        let wg = layouts.per_particle_constants();
        let limits = layouts.device.limits();
        Ok(Self {
            clear: gpu::compute_pipeline_with(layouts.device, &module, &layouts.grid, "clear", &wg),
            count: gpu::compute_pipeline_with(layouts.device, &module, &layouts.grid, "count", &wg),
            scatter: gpu::compute_pipeline_with(layouts.device, &module, &layouts.grid, "scatter", &wg),
            scatter_ids: layouts.ghosts.then(|| {
                let module = layouts.module("sim/grid.wgsl", &["IDS"]);
                gpu::compute_pipeline_with(layouts.device, &module, &layouts.grid, "scatter_ids", &wg)
            }),
            scan: ScanPass::new(layouts.device, cell_start, num_cells + 2)?,
            table: gpu::workgroups("the cell table", u64::from(num_cells) + 2, layouts.workgroup_size, 1, &limits)?,
        })
    }
}

impl Stage for GridStage {
    type Input<'a> = ();

    fn encode(&self, step: &mut StepContext<'_>, (): ()) {
        let groups = step.dispatch.particles;
        let mut pass = step.profiler.compute_pass(step.encoder, PASS);
        pass.set_bind_group(0, step.grid_bind, &[]);
        // Zeroed by a dispatch in the pass rather than a buffer clear before it: on the H100 a clear
        // between the step's passes left the GPU idle for about 45 us a step.
        pass.set_pipeline(&self.clear);
        gpu::dispatch(&mut pass, self.table);
        pass.set_pipeline(&self.count);
        gpu::dispatch(&mut pass, groups);
        self.scan.encode(&mut pass);
        pass.set_bind_group(0, step.grid_bind, &[]);
        pass.set_pipeline(self.scatter_ids.as_ref().unwrap_or(&self.scatter));
        gpu::dispatch(&mut pass, groups);
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
        let domain = self.domain;
        self.set_grid_box_within(lo, hi, &domain);
    }

    /// [`Simulation::set_grid_box`] within `bounds` instead of the domain: a box that holds the domain,
    /// grown by whole cells of the grid's lattice, for particles that lie outside the walls on purpose
    /// (the loopback rank's ghosts, src/cluster/rank). The walls stay the domain's.
    pub fn set_grid_box_within(&mut self, lo: [f32; 3], hi: [f32; 3], bounds: &crate::scene::Aabb) {
        self.grid_shape = self.grid_shape.boxed(bounds, lo, hi, GRID_BOX_PAD);
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
