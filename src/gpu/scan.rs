//! Multi-level exclusive prefix sum of a `u32` buffer on the GPU (`shaders/gpu/scan.wgsl`): Blelloch 1990;
//! Harris, Sengupta & Owens, GPU Gems 3 ch. 39. Shared by the simulation's neighbour grid and the
//! renderer's anisotropy hash grid (both counting sorts).

use crate::gpu;

/// Values per scan block (256 threads x 2).
pub const SCAN_BLOCK: u32 = 512;

/// Multi-level exclusive prefix sum over a u32 buffer of fixed length.
pub struct ScanPass {
    scan_blocks: wgpu::ComputePipeline,
    add_offsets: wgpu::ComputePipeline,
    /// Per level: its dispatch (one workgroup per block of its elements) and bind group (uniform n,
    /// data, sums = next level's data).
    levels: Vec<(gpu::Workgroups, wgpu::BindGroup)>,
    _buffers: Vec<wgpu::Buffer>,
}

impl ScanPass {
    /// Prepares an in-place exclusive scan of `data` (n u32 values).
    /// Errors: a level's dispatch exceeds the device's limits (never below 2^41 values).
    pub fn new(device: &wgpu::Device, data: &wgpu::Buffer, n: u32) -> Result<Self, gpu::DispatchError> {
        let vis = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("scan layout"),
            entries: &[
                gpu::uniform_entry::<[u32; 4]>(0, vis),
                gpu::storage_entry::<u32>(1, false, vis),
                gpu::storage_entry::<u32>(2, false, vis),
            ],
        });
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("scan pipeline layout"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let module = gpu::shader::module(device, "gpu/scan.wgsl");
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
            levels.push((gpu::workgroups("scan", s as u64, SCAN_BLOCK, 1, &device.limits())?, bg));
        }
        Ok(Self { scan_blocks, add_offsets, levels, _buffers: buffers })
    }

    /// Records the scan into an open compute pass.
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        for (groups, bg) in &self.levels {
            pass.set_pipeline(&self.scan_blocks);
            pass.set_bind_group(0, bg, &[]);
            gpu::dispatch(pass, *groups);
        }
        for (groups, bg) in self.levels.iter().rev().skip(1) {
            pass.set_pipeline(&self.add_offsets);
            pass.set_bind_group(0, bg, &[]);
            gpu::dispatch(pass, *groups);
        }
    }
}
