//! GPU plumbing shared by simulation and rendering: device context, shader loading, per-pass profiling,
//! and small helpers for buffers and compute pipelines.

pub mod context;
pub mod dispatch;
pub mod faults;
pub mod profiler;
pub mod readback;
pub mod scan;
pub mod shader;
pub mod split;

pub use context::{GpuContext, GpuError};
pub use dispatch::{
    dispatch, max_groups_x, row_length, set_max_groups_x, workgroups, workgroups_grid, DispatchError, Workgroups,
};
pub use faults::GpuFaults;
pub use profiler::{FrameTimes, PassTime, Profiler};

use wgpu::util::DeviceExt;

/// Creates a storage buffer (also copy source/destination) of `size` bytes.
pub fn storage_buffer(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(16),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// Creates a storage buffer initialised with `data`.
pub fn storage_buffer_init(device: &wgpu::Device, label: &str, data: &[u8]) -> wgpu::Buffer {
    if data.is_empty() {
        return storage_buffer(device, label, 16);
    }
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: data,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
    })
}

/// Creates a uniform buffer (copy destination) holding `data`.
pub fn uniform_buffer_init(device: &wgpu::Device, label: &str, data: &[u8]) -> wgpu::Buffer {
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: data,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    })
}

/// A compute pipeline from an embedded shader file and entry point, with an explicit layout.
pub fn compute_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
    entry: &str,
) -> wgpu::ComputePipeline {
    compute_pipeline_with(device, module, layout, entry, &[])
}

/// A compute pipeline with values for the shader's `override` constants, e.g. `[("WG", 256.0)]`.
pub fn compute_pipeline_with(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
    entry: &str,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: Some(layout),
        module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
        cache: None,
    })
}

/// Bind group layout entry for a storage buffer (read-write unless `read_only`) whose binding holds at
/// least one `T`: the struct, or the element of a runtime-sized `array<T>`. `min_binding_size` is
/// `size_of::<T>()`, so wgpu checks every bind group against the shader's expectation at creation
/// instead of at draw time.
pub fn storage_entry<T>(binding: u32, read_only: bool, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: min_size::<T>(),
        },
        count: None,
    }
}

/// Bind group layout entry for a uniform buffer holding a `T` (`min_binding_size` = `size_of::<T>()`).
pub fn uniform_entry<T>(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: min_size::<T>(),
        },
        count: None,
    }
}

/// `size_of::<T>()` as a binding size (`None` for a zero-sized `T`).
fn min_size<T>() -> Option<std::num::NonZeroU64> {
    std::num::NonZeroU64::new(size_of::<T>() as u64)
}

/// Bind group over whole buffers at the given bindings (e.g. a split array's [`split::SplitBuffer::bindings`]).
pub fn bind_at<'a>(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    buffers: impl IntoIterator<Item = (u32, &'a wgpu::Buffer)>,
) -> wgpu::BindGroup {
    let entries: Vec<_> = buffers
        .into_iter()
        .map(|(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout, entries: &entries })
}

/// Bind group over whole buffers, binding `i` = `buffers[i]`.
pub fn bind_buffers(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let entries: Vec<_> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout, entries: &entries })
}
