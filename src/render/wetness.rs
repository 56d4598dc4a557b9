//! Wet ground where the water has passed (`shaders/render/wetness.wgsl`): one wetness value per height
//! sample of the terrain (0 dry .. 1 soaked), updated on the GPU every frame that has particles. "terrain
//! wetness" first dries every sample, `w *= exp(-dt / DRY_SECONDS)`, then soaks (sets to 1) the sample
//! nearest each live particle that is within a contact distance of the surface above it. `dt` is the
//! simulated time since the last update, read on the GPU from the simulation's step state (so a paused
//! simulation's ground stays as it is, and an offline render is the same however fast it runs; a clock
//! going back, a reset, dries nothing), or the wall-clock time given when there is no simulation clock.
//! The terrain pass draws the result over the terrain as its own overlay
//! ([`super::TerrainPass::encode_wet`]), so the cached background stays valid while the ground dries.

use crate::gpu::{
    self,
    split::{self, SplitBuffer},
    GpuContext,
};

/// Seconds for wet ground to dry to 1/e (about a minute to look dry).
pub const DRY_SECONDS: f32 = 20.0;

/// The update's parameters, bind group 1 binding 2.
/// WGSL twin: `Wet` in `shaders/render/wetness.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WetnessUniform {
    /// Particles to read.
    pub count: u32,
    /// Factor every sample keeps this frame without a simulation clock, `exp(-dt / DRY_SECONDS)`.
    pub keep: f32,
    /// A particle at most this high above the surface wets it, metres.
    pub contact: f32,
    /// 1: dry on the simulation's clock (binding 5); 0: by `keep`.
    pub use_clock: u32,
    /// [`DRY_SECONDS`].
    pub dry_seconds: f32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<WetnessUniform>() == 32);

/// What wets the ground this frame.
#[derive(Clone, Copy)]
pub struct WetInput<'a> {
    /// `array<vec4<f32>>`: xyz = position (m), w < 0 = parked (not water).
    pub positions: &'a SplitBuffer,
    /// Particles in `positions` (0: the ground only dries).
    pub count: u32,
    /// The simulation's step state (bytes 4..8: simulated time, s), the clock the ground dries on.
    pub clock: Option<&'a wgpu::Buffer>,
    /// Without a `clock`: wall-clock seconds since the last update, at least 0.
    pub dt: f32,
    /// A particle at most this high above the surface wets it, metres (about a particle spacing).
    pub contact: f32,
}

/// The update's pipelines and its bind group over the current buffers.
pub struct WetnessUpdate {
    layout: wgpu::BindGroupLayout,
    dry: wgpu::ComputePipeline,
    /// The chunk length of the split positions it reads (its `SPLIT_N`) and the pipeline: made again
    /// when the particles come in chunks of another length (only where a test lowers it).
    soak: (u32, wgpu::ComputePipeline),
    module: wgpu::ShaderModule,
    pipeline_layout: wgpu::PipelineLayout,
    stamp: wgpu::ComputePipeline,
    /// "terrain wetness merge" (several GPUs): its own bind group layout (group 2) and pipeline.
    merge: (wgpu::BindGroupLayout, wgpu::ComputePipeline),
    uniform: wgpu::Buffer,
    /// The simulated time of the last update and whether there was one (`WetClock` in the shader).
    state: wgpu::Buffer,
    /// Stands in for the simulation's clock when there is none.
    no_clock: wgpu::Buffer,
    /// The positions, wetness and clock buffers the bind group was made over, and the group.
    bound: Option<([wgpu::Buffer; 3], wgpu::BindGroup)>,
}

impl WetnessUpdate {
    /// Builds the pipelines (bind group 1 only).
    pub fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        let cs = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("terrain wetness bind group layout"),
            entries: &[
                [
                    gpu::uniform_entry::<super::heightfield::TerrainUniform>(0, cs),
                    gpu::storage_entry::<f32>(1, true, cs),
                    gpu::uniform_entry::<WetnessUniform>(2, cs),
                    gpu::storage_entry::<f32>(3, false, cs),
                    gpu::storage_entry::<[f32; 2]>(5, true, cs),
                    gpu::storage_entry::<[f32; 2]>(6, false, cs),
                ]
                .as_slice(),
                &split::layout_entries::<[f32; 4]>(4, true, cs, split::MAX_CHUNKS),
            ]
            .concat(),
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("terrain wetness pipeline layout"),
            bind_group_layouts: &[None, Some(&layout)],
            immediate_size: 0,
        });
        let module = gpu::shader::module(device, "render/wetness.wgsl");
        let dry = gpu::compute_pipeline(device, &module, &pipeline_layout, "dry");
        let per_binding = split::per_binding(&device.limits());
        let soak = (per_binding, Self::soak(device, &module, &pipeline_layout, per_binding));
        let stamp = gpu::compute_pipeline(device, &module, &pipeline_layout, "stamp");
        let merge_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("terrain wetness merge layout"),
            entries: &[gpu::storage_entry::<f32>(0, false, cs), gpu::storage_entry::<f32>(1, true, cs)],
        });
        let merge_pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("terrain wetness merge pipeline layout"),
            bind_group_layouts: &[None, None, Some(&merge_layout)],
            immediate_size: 0,
        });
        let merge_pipeline = gpu::compute_pipeline(device, &module, &merge_pipeline_layout, "merge");
        let zero = WetnessUniform {
            count: 0,
            keep: 1.0,
            contact: 0.0,
            use_clock: 0,
            dry_seconds: DRY_SECONDS,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        let uniform = gpu::uniform_buffer_init(device, "terrain wetness uniform", bytemuck::bytes_of(&zero));
        let state = gpu::storage_buffer(device, "terrain wetness clock", 16);
        let no_clock = gpu::storage_buffer(device, "terrain wetness no clock", 16);
        let merge = (merge_layout, merge_pipeline);
        Self { layout, dry, soak, module, pipeline_layout, stamp, merge, uniform, state, no_clock, bound: None }
    }

    /// The `soak` pipeline reading positions in chunks of `per_binding` particles.
    fn soak(
        device: &wgpu::Device,
        module: &wgpu::ShaderModule,
        layout: &wgpu::PipelineLayout,
        per_binding: u32,
    ) -> wgpu::ComputePipeline {
        gpu::compute_pipeline_with(device, module, layout, "soak", &[(split::CONSTANT, per_binding as f64)])
    }

    /// Records "terrain wetness merge": every sample of `wetness` becomes the largest of its own value
    /// and the same sample of each map in `maps` (the other ranks' of a decomposed simulation, as
    /// `wetness` holds them: f32 per sample; see the module docs of shaders/render/wetness.wgsl). Maps of
    /// another length than `wetness` are left out. Errors when the samples need more workgroups than the
    /// device allows.
    pub fn encode_merge(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &gpu::Profiler,
        (device, queue): (&wgpu::Device, &wgpu::Queue),
        wetness: &wgpu::Buffer,
        maps: &[Vec<u8>],
    ) -> Result<(), gpu::DispatchError> {
        let len = wetness.size();
        let whole: Vec<u8> = maps.iter().filter(|m| m.len() as u64 == len).flatten().copied().collect();
        if whole.is_empty() {
            return Ok(());
        }
        let samples = len / 4;
        let groups = gpu::workgroups("terrain wetness merge", samples, 64, 1, &device.limits())?;
        let received = gpu::storage_buffer(device, "terrain wetness received", whole.len() as u64);
        queue.write_buffer(&received, 0, &whole);
        let group = gpu::bind_at(device, "terrain wetness merge", &self.merge.0, [(0, wetness), (1, &received)]);
        let mut pass = profiler.compute_pass(encoder, "terrain wetness merge");
        pass.set_bind_group(2, &group, &[]);
        pass.set_pipeline(&self.merge.1);
        gpu::dispatch(&mut pass, groups);
        Ok(())
    }

    /// Records "terrain wetness" over the `nx` x `nz` samples of `wetness` (f32 each), whose heights and
    /// grid uniform are `heights` and `terrain`. Errors when the samples or particles need more
    /// workgroups than the device allows.
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &gpu::Profiler,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        (terrain, heights, wetness): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
        (nx, nz): (u32, u32),
        input: WetInput<'_>,
    ) -> Result<(), gpu::DispatchError> {
        let limits = device.limits();
        let grid = gpu::workgroups_grid("terrain wetness", [nx, nz, 1], [8, 8, 1], &limits)?;
        let particles = gpu::workgroups("terrain wetness", input.count as u64, 64, 1, &limits)?;
        let params = WetnessUniform {
            count: input.count,
            keep: (-input.dt.max(0.0) / DRY_SECONDS).exp(),
            contact: input.contact.max(0.0),
            use_clock: input.clock.is_some() as u32,
            dry_seconds: DRY_SECONDS,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&params));
        let clock = input.clock.unwrap_or(&self.no_clock);
        let buffers = [input.positions.chunks()[0].clone(), wetness.clone(), clock.clone()];
        if self.bound.as_ref().is_none_or(|(b, _)| *b != buffers) {
            // Another clock: no last update on it yet.
            queue.write_buffer(&self.state, 0, &[0u8; 16]);
            let fixed = [(0, terrain), (1, heights), (2, &self.uniform), (3, wetness), (5, clock), (6, &self.state)];
            let entries = fixed.into_iter().chain(input.positions.bindings(4, split::MAX_CHUNKS));
            let group = gpu::bind_at(device, "terrain wetness bind group", &self.layout, entries);
            self.bound = Some((buffers, group));
        }
        let per_binding = input.positions.per_binding();
        if self.soak.0 != per_binding {
            self.soak = (per_binding, Self::soak(device, &self.module, &self.pipeline_layout, per_binding));
        }
        let Some((_, group)) = &self.bound else { return Ok(()) };
        let mut pass = profiler.compute_pass(encoder, "terrain wetness");
        pass.set_bind_group(1, group, &[]);
        pass.set_pipeline(&self.dry);
        gpu::dispatch(&mut pass, grid);
        if input.count > 0 {
            pass.set_pipeline(&self.soak.1);
            gpu::dispatch(&mut pass, particles);
        }
        pass.set_pipeline(&self.stamp);
        gpu::dispatch(&mut pass, gpu::Workgroups::ONE);
        Ok(())
    }
}
