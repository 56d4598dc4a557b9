//! GPU plumbing shared by simulation and rendering: device context, shader loading, per-pass profiling,
//! and small helpers for buffers and compute pipelines.

pub mod context;
pub mod profiler;
pub mod readback;
pub mod scan;
pub mod shader;

pub use context::{GpuContext, GpuError};
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

/// Number of workgroups of `size` threads covering `n` items.
pub fn groups(n: u32, size: u32) -> u32 {
    n.div_ceil(size).max(1)
}

/// Most workgroups along x of a per-particle dispatch: WebGPU's guaranteed 65 535 per dimension.
/// Tests lower it ([`set_max_groups_x`]) to run the two-dimensional layout at small counts.
static MAX_GROUPS_X: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(65_535);

/// The current limit of [`dispatch_size`] (read when pipelines and dispatches are made).
pub fn max_groups_x() -> u32 {
    MAX_GROUPS_X.load(std::sync::atomic::Ordering::Relaxed)
}

/// Lowers (or restores) the workgroups per row of [`dispatch_size`], clamped to 1..=65 535, for the
/// whole process. For tests: simulations made afterwards lay out their dispatches in rows of `x`.
pub fn set_max_groups_x(x: u32) {
    MAX_GROUPS_X.store(x.clamp(1, 65_535), std::sync::atomic::Ordering::Relaxed);
}

/// (x, y) workgroups covering `groups` workgroups in rows of at most [`max_groups_x`]: a per-particle
/// kernel takes index `gid.x + gid.y * num_workgroups.x * size` (`flat_index` in
/// shaders/common/dispatch.wgsl) and skips the indices past its count. One row below 65 536 workgroups.
pub fn dispatch_size(groups: u32) -> (u32, u32) {
    let x = groups.min(max_groups_x()).max(1);
    (x, groups.div_ceil(x))
}

/// Records a per-particle dispatch of `groups` workgroups laid out by [`dispatch_size`].
pub fn dispatch_rows(pass: &mut wgpu::ComputePass<'_>, groups: u32) {
    let (x, y) = dispatch_size(groups);
    pass.dispatch_workgroups(x, y, 1);
}
