//! The GPU device shared by every pass: adapter selection (Vulkan first), device creation with the
//! adapter's own limits, and the optional features the engine uses when present (timestamp queries,
//! subgroup operations).
//! The same context serves the window (created against a surface) and headless runs (no surface).

use super::GpuFaults;
use thiserror::Error;

/// Why no usable GPU device could be created.
#[derive(Debug, Error)]
pub enum GpuError {
    /// No adapter at all: on a machine without a GPU, install Mesa's software Vulkan.
    #[error(
        "no GPU adapter found ({0}). On a machine without a GPU install Mesa's software Vulkan: \
         `apt-get install -y mesa-vulkan-drivers libvulkan1` (or set WGPU_BACKEND to another backend)"
    )]
    NoAdapter(String),
    /// The adapter refused the device request. The cause is part of the message (not a `source()`), so
    /// printing the error with its chain shows it once.
    #[error("the GPU adapter refused to create a device: {0}")]
    Device(wgpu::RequestDeviceError),
    /// A blocking read-back got nothing back: `what` names it, `cause` is what the device reported
    /// ([`GpuFaults::describe`]) or why the mapping failed.
    #[error("{what} could not be read back from the GPU: {cause}")]
    Readback { what: String, cause: String },
    /// The device reported an error or was lost while `what` was under way ([`GpuContext::check`]).
    #[error("{what}: {cause}")]
    Reported { what: String, cause: String },
}

/// Adapter, device and queue, plus what the engine needs to know about them. A clone shares them (wgpu
/// handles are reference-counted, `Send` and `Sync`): the window builds scenes on a worker thread with one.
#[derive(Clone)]
pub struct GpuContext {
    pub instance: wgpu::Instance,
    pub adapter: wgpu::Adapter,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// Name, backend and device type of the adapter in use (shown in the UI).
    pub info: wgpu::AdapterInfo,
    /// The errors the device reported outside an error scope and its loss (headless contexts; the window
    /// installs its own handler over it, src/app/device.rs).
    pub faults: GpuFaults,
}

impl GpuContext {
    /// A wgpu instance for the primary backends (Vulkan on Linux and Windows, Metal on macOS),
    /// overridable by the `WGPU_BACKEND` environment variable.
    ///
    /// Indirect dispatches go unvalidated except on Windows: wgpu otherwise checks the arguments of every
    /// `dispatch_workgroups_indirect` with a one-thread dispatch and two barriers of its own, which cost
    /// 19 % of a step at 10 K particles and 60 % of the curvature flow on an H100 (docs/performance.md).
    /// Every indirect argument here comes from this crate's kernels and stays within the limits (rows of
    /// at most `gpu::max_groups_x()` workgroups: `dispatch_args` in shaders/sim/dfsph.wgsl, `write_args`
    /// in shaders/render/curvature_flow.wgsl). Windows keeps the check because its D3D12 backend needs it
    /// for `@builtin(num_workgroups)`, which the row layout reads. `WGPU_VALIDATION_INDIRECT_CALL=1`
    /// turns it back on anywhere.
    pub fn create_instance(display: Option<Box<dyn wgpu::wgt::WgpuHasDisplayHandle>>) -> wgpu::Instance {
        let mut desc = match display {
            Some(d) => wgpu::InstanceDescriptor::new_with_display_handle(d),
            None => wgpu::InstanceDescriptor::new_without_display_handle(),
        };
        desc.backends = wgpu::Backends::PRIMARY;
        if !cfg!(windows) {
            desc.flags.remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
        }
        wgpu::Instance::new(desc.with_env())
    }

    /// A headless context: no surface, renders into textures.
    pub fn headless() -> Result<Self, GpuError> {
        Self::new(Self::create_instance(None), None)
    }

    /// Picks the high-performance adapter able to present to `surface` (if given) and creates the device
    /// with the adapter's limits and the optional features it supports.
    pub fn new(instance: wgpu::Instance, surface: Option<&wgpu::Surface<'_>>) -> Result<Self, GpuError> {
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: surface,
            apply_limit_buckets: false,
        }))
        .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        Self::on_adapter(instance, adapter)
    }

    /// A context on `adapter` (of `instance`): the device with the adapter's limits and the optional
    /// features it supports. Called once per rank for several devices (src/cluster), also several times
    /// on one adapter. Errors: the adapter refused the device.
    pub fn on_adapter(instance: wgpu::Instance, adapter: wgpu::Adapter) -> Result<Self, GpuError> {
        let info = adapter.get_info();
        let wanted = wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
            | wgpu::Features::SUBGROUP;
        let required_features = adapter.features() & wanted;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("waterview device"),
            required_features,
            required_limits: adapter.limits(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(GpuError::Device)?;
        log::info!("GPU adapter: {} ({:?}, {:?})", info.name, info.backend, info.device_type);
        let faults = GpuFaults::install(&device);
        Ok(Self { instance, adapter, device, queue, info, faults })
    }

    /// True for software rasterisers (lavapipe/llvmpipe, WARP, SwiftShader): scenes scale their
    /// default particle count down so the app stays interactive.
    pub fn is_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// Whether GPU timestamp queries are available for the per-pass timing table.
    pub fn has_timestamps(&self) -> bool {
        self.device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
    }

    /// Whether compute shaders may use subgroup operations (`enable subgroups;`).
    pub fn has_subgroups(&self) -> bool {
        self.device.features().contains(wgpu::Features::SUBGROUP)
    }

    /// One line for the UI and logs: "NVIDIA H100 80GB HBM3 (Vulkan, DiscreteGpu)".
    pub fn adapter_summary(&self) -> String {
        format!("{} ({:?}, {:?})", self.info.name, self.info.backend, self.info.device_type)
    }

    /// Errors when the device reported an error or was lost since it was made ([`GpuFaults`]): the
    /// message names what it reported, after `what` (the work that was under way).
    pub fn check(&self, what: &str) -> Result<(), GpuError> {
        match self.faults.describe() {
            Some(cause) => Err(GpuError::Reported { what: what.to_string(), cause }),
            None => Ok(()),
        }
    }

    /// Largest storage buffer binding in bytes; bounds the particle count.
    pub fn max_storage_binding(&self) -> u64 {
        let l = self.device.limits();
        l.max_storage_buffer_binding_size.min(l.max_buffer_size)
    }
}
