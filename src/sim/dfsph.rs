//! DFSPH (Bender & Koschier 2015/2017) on the GPU, see shaders/sim/dfsph.wgsl: the divergence-free solve
//! and the constant-density solve, each iterating until its mean error is below the target or its
//! iteration limit, decided on the GPU. Every iteration is recorded (up to the limit); once a solve has
//! converged, its `SolveControl` sets the remaining iterations' indirect dispatches to zero workgroups,
//! so the frame never waits on a read-back and a converged step costs little more than its iterations.

use crate::gpu::{self, Profiler};
use bytemuck::{Pod, Zeroable};

/// WGSL twin: `SolveControl` in shaders/sim/dfsph.wgsl (also the indirect dispatch arguments).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct SolveControl {
    pub args_src: [u32; 4],
    pub args_upd: [u32; 4],
    pub iteration: u32,
    pub done: u32,
    pub _pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<SolveControl>() == 48);

/// Byte offset of the update kernels' dispatch arguments in a `SolveControl`.
const ARGS_UPD_OFFSET: u64 = 16;

struct Solve {
    control: wgpu::Buffer,
    bind: wgpu::BindGroup,
}

/// Pipelines and control buffers of the DFSPH step.
pub struct DfsphPass {
    factor: wgpu::ComputePipeline,
    divergence_source: wgpu::ComputePipeline,
    divergence_update: wgpu::ComputePipeline,
    nonpressure: wgpu::ComputePipeline,
    density_source: wgpu::ComputePipeline,
    density_update: wgpu::ComputePipeline,
    begin: wgpu::ComputePipeline,
    check_divergence: wgpu::ComputePipeline,
    check_density: wgpu::ComputePipeline,
    divergence: Solve,
    density: Solve,
    workgroup_size: u32,
}

impl DfsphPass {
    /// `sim_layout` is the simulation's bind group 0 layout; `workgroup_size` the per-particle kernels' WG;
    /// `subgroups`: sum the solves' errors with subgroup operations (the device must have
    /// `Features::SUBGROUP`), else by a tree in workgroup memory.
    pub fn new(device: &wgpu::Device, sim_layout: &wgpu::BindGroupLayout, workgroup_size: u32, subgroups: bool) -> Self {
        let mut source = gpu::shader::resolve("sim/dfsph.wgsl");
        if subgroups {
            let tree = gpu::shader::raw_source("sim/error_sum.wgsl").unwrap_or_default();
            let subgroup = gpu::shader::raw_source("sim/error_sum_subgroup.wgsl").unwrap_or_default();
            debug_assert!(!tree.is_empty() && source.contains(tree), "dfsph.wgsl imports sim/error_sum.wgsl");
            // (naga takes the subgroup builtins under `Features::SUBGROUP` without `enable subgroups;`.)
            source = source.replacen(tree, subgroup, 1);
        }
        let module = gpu::shader::module_from_source(device, "sim/dfsph.wgsl", source);
        let vis = wgpu::ShaderStages::COMPUTE;
        let control_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("dfsph control layout"),
            entries: &[gpu::storage_entry(0, false, vis)],
        });
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("dfsph pipeline layout"),
            bind_group_layouts: &[Some(sim_layout)],
            immediate_size: 0,
        });
        let pl_control = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("dfsph control pipeline layout"),
            bind_group_layouts: &[Some(sim_layout), Some(&control_layout)],
            immediate_size: 0,
        });
        let wg = [
            ("WG", workgroup_size as f64),
            ("FLOOR_FACTOR", super::gpu_data::DFSPH_BOUNDARY_FACTOR as f64),
            ("WALL_FACTOR", super::gpu_data::DFSPH_WALL_FACTOR as f64),
            ("MIN_DIVERGENCE_ITERATIONS", super::gpu_data::DFSPH_MIN_DIVERGENCE_ITERATIONS as f64),
            ("MAX_GROUPS_X", gpu::max_groups_x() as f64),
        ];
        let pipe = |entry: &str| gpu::compute_pipeline_with(device, &module, &pl, entry, &wg);
        let control_pipe = |entry: &str| gpu::compute_pipeline_with(device, &module, &pl_control, entry, &wg);
        let solve = |label: &str| {
            let control = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: std::mem::size_of::<SolveControl>() as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
                mapped_at_creation: false,
            });
            let bind = gpu::bind_buffers(device, label, &control_layout, &[&control]);
            Solve { control, bind }
        };
        Self {
            factor: pipe("df_factor"),
            divergence_source: pipe("df_divergence_source"),
            divergence_update: pipe("df_divergence_update"),
            nonpressure: pipe("df_nonpressure"),
            density_source: pipe("df_density_source"),
            density_update: pipe("df_density_update"),
            begin: control_pipe("df_begin"),
            check_divergence: control_pipe("df_check_divergence"),
            check_density: control_pipe("df_check_density"),
            divergence: solve("dfsph divergence control"),
            density: solve("dfsph density control"),
            workgroup_size,
        }
    }

    /// Records a solve's iterations (up to `max_iterations`) into `pass`, whose bind groups are set:
    /// source, update and check each; the first iteration's source is left out when `first_source` is
    /// false (df_factor computed it).
    fn encode_iterations(
        pass: &mut wgpu::ComputePass<'_>,
        solve: &Solve,
        (source, update, check): (&wgpu::ComputePipeline, &wgpu::ComputePipeline, &wgpu::ComputePipeline),
        max_iterations: u32,
        first_source: bool,
    ) {
        for k in 0..max_iterations {
            if k > 0 || first_source {
                pass.set_pipeline(source);
                pass.dispatch_workgroups_indirect(&solve.control, 0);
            }
            pass.set_pipeline(update);
            pass.dispatch_workgroups_indirect(&solve.control, ARGS_UPD_OFFSET);
            pass.set_pipeline(check);
            pass.dispatch_workgroups(1, 1, 1);
        }
    }

    /// Binds `bind` and the solve's control, and records its `df_begin`.
    fn begin(&self, pass: &mut wgpu::ComputePass<'_>, bind: &wgpu::BindGroup, solve: &Solve) {
        pass.set_bind_group(0, bind, &[]);
        pass.set_bind_group(1, &solve.bind, &[]);
        pass.set_pipeline(&self.begin);
        pass.dispatch_workgroups(1, 1, 1);
    }

    /// Records one DFSPH step after the grid build and the time step: factor, divergence solve,
    /// `separate_forces` (with surface tension: it records the surface normals, which live in `accel`,
    /// the divergence solve's scratch) and the non-pressure forces with the density solve's warm start,
    /// density solve. The caller integrates afterwards. `separate_forces` None (no surface tension):
    /// df_factor computes the non-pressure forces and the warm start itself (see `fused_forces` in the
    /// shader) and no forces pass is recorded.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        bind: &wgpu::BindGroup,
        capacity: u32,
        (divergence_iterations, density_iterations): (u32, u32),
        separate_forces: Option<impl FnOnce(&mut wgpu::CommandEncoder)>,
    ) {
        let g = gpu::groups(capacity, self.workgroup_size);
        {
            // df_factor also sums the divergence solve's first errors: that solve begins here.
            let mut pass = profiler.compute_pass(encoder, "density");
            self.begin(&mut pass, bind, &self.divergence);
            pass.set_pipeline(&self.factor);
            gpu::dispatch_rows(&mut pass, gpu::groups(capacity, 128));
        }
        {
            let mut pass = profiler.compute_pass(encoder, "divergence");
            pass.set_bind_group(0, bind, &[]);
            pass.set_bind_group(1, &self.divergence.bind, &[]);
            let p = (&self.divergence_source, &self.divergence_update, &self.check_divergence);
            Self::encode_iterations(&mut pass, &self.divergence, p, divergence_iterations, false);
        }
        if let Some(before_forces) = separate_forces {
            before_forces(encoder);
            // Non-pressure forces and the density solve's warm start (fused).
            let mut pass = profiler.compute_pass(encoder, "forces");
            pass.set_bind_group(0, bind, &[]);
            pass.set_pipeline(&self.nonpressure);
            gpu::dispatch_rows(&mut pass, g);
        }
        {
            let mut pass = profiler.compute_pass(encoder, "pressure");
            self.begin(&mut pass, bind, &self.density);
            let p = (&self.density_source, &self.density_update, &self.check_density);
            Self::encode_iterations(&mut pass, &self.density, p, density_iterations, true);
        }
    }
}
