//! Light that bounces between the terrain's slopes: a radiosity bake over the height samples on the GPU
//! (`shaders/render/terrain_bounce.wgsl`), redone when the sun or the terrain changes, read by the terrain
//! shader as indirect light (sunlit slopes lighting the shaded valley floor beside them).
//!
//! Each sample is a Lambertian patch of the ground's albedo. "terrain bounce emit" writes its radiosity
//! J = albedo E (E: the sun on it through the terrain's soft shadow, and the sky through its baked sky
//! visibility, as the terrain is lit); "terrain bounce gather" sends 128 cosine-weighted rays per sample
//! (8 rings, each jittered in polar angle per sample, of 16 azimuths), marched through the sky-visibility
//! bake's maximum mipmap ([`super::terrain_ao`]), and averages J where they hit the heightfield: for
//! cosine-weighted directions the mean of the radiance
//! seen, times pi, is the irradiance, and a Lambertian patch's radiance is J / pi, so
//! E_bounce = mean(J at the hits) (0 for rays that escape to the sky). The second bounce emits again with
//! E + E_bounce and gathers once more (Goral, Torrance, Greenberg & Battaile, "Modeling the interaction of
//! light between diffuse surfaces", SIGGRAPH 1984, gathered by ray casting instead of form factors).
//! Ray marching a heightfield (no kd-tree, no stack) is what the sky-visibility bake already does. A
//! heightfield over [`MAX_BOUNCE_SIDE`] samples a side is baked on every few samples. The terrain adds
//! E_bounce to its sky light; the obstacles standing on it take J below them times a ground plane's view
//! factor ([`super::ObstaclesPass`]).

use super::pass::Frame;
use super::terrain_ao::AoData;
use crate::gpu;

/// Bounces baked: the sun's and the sky's light reflected once off the terrain, then once more.
pub const BOUNCES: u32 = 2;

pub use super::heightfield::{bounce_dims as dims, bounce_stride as stride, MAX_BOUNCE_SIDE};

/// Bytes per height sample of one of the bake's buffers (rgb + one unused f32).
const TEXEL_BYTES: u64 = 16;

/// The bake's pipelines.
pub struct TerrainBounce {
    layout: wgpu::BindGroupLayout,
    emit_direct: wgpu::ComputePipeline,
    emit_bounced: wgpu::ComputePipeline,
    gather: wgpu::ComputePipeline,
}

/// The buffers of one heightfield's bake, over its grid of [`dims`] texels (index `tz * bx + tx`; texel
/// (tx, tz) at height sample (tx, tz) x stride, the last clamped to the heightfield's edge).
pub struct BounceData {
    /// Per texel, the radiosity of the last emit (rgb, a unused).
    pub radiosity: wgpu::Buffer,
    /// Per texel, the irradiance bounced off the terrain around (rgb, a unused; the renderer's radiance
    /// units, as the sun's and the sky's light).
    pub bounce: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    /// Texels along x and z.
    pub dims: (u32, u32),
}

impl TerrainBounce {
    /// Builds the pipelines (bind group 0: the frame's, for the sun and the sky; 1: the heightfield, the
    /// sky-visibility bake's rays and results, the terrain's shadow and the bake's two buffers).
    pub fn new(device: &wgpu::Device) -> Self {
        let cs = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("terrain bounce bind group layout"),
            entries: &[
                gpu::uniform_entry::<super::heightfield::TerrainUniform>(0, cs),
                gpu::storage_entry::<f32>(1, true, cs),
                gpu::uniform_entry::<super::terrain_ao::AoUniform>(2, cs),
                gpu::storage_entry::<f32>(3, false, cs),
                gpu::storage_entry::<f32>(4, false, cs),
                gpu::storage_entry::<f32>(6, true, cs),
                gpu::storage_entry::<[f32; 4]>(7, false, cs),
                gpu::storage_entry::<[f32; 4]>(8, false, cs),
            ],
        });
        let pipeline_layout = super::frame::pass_pipeline_layout(device, "terrain bounce pipeline layout", &layout);
        let module = gpu::shader::module(device, "render/terrain_bounce.wgsl");
        let pipeline = |entry| gpu::compute_pipeline(device, &module, &pipeline_layout, entry);
        Self {
            emit_direct: pipeline("emit_direct"),
            emit_bounced: pipeline("emit_bounced"),
            gather: pipeline("gather"),
            layout,
        }
    }

    /// The buffers of a bake over the heightfield of `nx` x `nz` samples whose grid uniform (with its
    /// `bounce_stride` = `stride`) and heights are `heightfield`, whose sky visibility `ao` holds and whose
    /// sun shadow factors `shadow` holds (f32 per sample).
    pub fn data(
        &self,
        device: &wgpu::Device,
        (nx, nz, stride): (u32, u32, u32),
        heightfield: super::heightfield::HeightfieldBuffers<'_>,
        ao: &AoData,
        shadow: &wgpu::Buffer,
    ) -> BounceData {
        let dims = dims(nx, nz, stride);
        let bytes = dims.0 as u64 * dims.1 as u64 * TEXEL_BYTES;
        let radiosity = gpu::storage_buffer(device, "terrain radiosity", bytes);
        let bounce = gpu::storage_buffer(device, "terrain bounce", bytes);
        let [rays, pyramid, visibility] = ao.ray_buffers();
        let buffers = [
            (0, heightfield.0),
            (1, heightfield.1),
            (2, rays),
            (3, pyramid),
            (4, visibility),
            (6, shadow),
            (7, &radiosity),
            (8, &bounce),
        ];
        let entries: Vec<_> = buffers
            .iter()
            .map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() })
            .collect();
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("terrain bounce bind group"),
            layout: &self.layout,
            entries: &entries,
        });
        BounceData { radiosity, bounce, bind_group, dims }
    }

    /// Records `bounces` bounces (at least one) into `frame` (whose camera gives the sun and the sky):
    /// "terrain bounce emit" and "terrain bounce gather" each time. The sky visibility and the sun's
    /// shadow must be current. Errors when the grid needs more workgroups than the device allows (not at
    /// 4096 x 4096 samples, the largest heightmap).
    pub fn encode(&self, frame: &mut Frame<'_>, data: &BounceData, bounces: u32) -> Result<(), gpu::DispatchError> {
        let (bx, bz) = data.dims;
        let groups = gpu::workgroups_grid("terrain bounce", [bx, bz, 1], [8, 8, 1], &frame.device.limits())?;
        for k in 0..bounces.max(1) {
            let mut pass = frame.compute_pass("terrain bounce emit");
            pass.set_pipeline(if k == 0 { &self.emit_direct } else { &self.emit_bounced });
            pass.set_bind_group(1, &data.bind_group, &[]);
            gpu::dispatch(&mut pass, groups);
            drop(pass);
            let mut pass = frame.compute_pass("terrain bounce gather");
            pass.set_pipeline(&self.gather);
            pass.set_bind_group(1, &data.bind_group, &[]);
            gpu::dispatch(&mut pass, groups);
        }
        Ok(())
    }
}

/// What a blocking bake returns: per texel of its grid ([`BounceData`]), the last radiosity emitted and
/// the bounced irradiance (rgb); the grid's texels along x and z and its stride; the fastest bake's wall
/// time from submission to completion, ms.
pub struct BakeResult {
    pub radiosity: Vec<glam::Vec3>,
    pub bounce: Vec<glam::Vec3>,
    pub dims: (u32, u32),
    pub stride: u32,
    pub ms: f64,
}

/// Bakes `bounces` bounces over `hf` on a grid of at most `max_side` texels a side, under the sun toward
/// `sun` (unit vector) of intensity `sun_intensity`, with every sample lit (no terrain shadow), `repeats`
/// times (at least once), waiting for each. The sky visibility is baked first (not timed).
/// **Blocking**: for tests and measurements.
pub fn bake_blocking(
    ctx: &crate::gpu::GpuContext,
    hf: &crate::terrain::Heightfield,
    (sun, sun_intensity): (glam::Vec3, f32),
    (bounces, max_side): (u32, u32),
    repeats: u32,
) -> Result<BakeResult, gpu::DispatchError> {
    let device = &ctx.device;
    let mut uniform = super::heightfield::TerrainUniform::from_heightfield(hf);
    uniform.sun_dir = sun.to_array();
    uniform.bounce_stride = stride(hf.nx, hf.nz, max_side);
    let terrain = gpu::uniform_buffer_init(device, "terrain uniform", bytemuck::bytes_of(&uniform));
    let heights = gpu::storage_buffer_init(device, "terrain heights", bytemuck::cast_slice(&hf.heights));
    let lit = vec![1.0f32; hf.heights.len()];
    let shadow = gpu::storage_buffer_init(device, "terrain shadow", bytemuck::cast_slice(&lit));
    let ao = super::terrain_ao::TerrainAo::new(device);
    let ao_data = ao.data(device, hf, &terrain, &heights, super::terrain_ao::AoMethod::Pyramid);
    let mut profiler = gpu::Profiler::new(device);
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("terrain ao") });
    ao.encode(&mut encoder, &profiler, &device.limits(), &ao_data)?;
    ctx.queue.submit([encoder.finish()]);
    let pass = TerrainBounce::new(device);
    let data = pass.data(device, (hf.nx, hf.nz, uniform.bounce_stride), (&terrain, &heights), &ao_data, &shadow);
    let size = (16, 16);
    let camera = super::OrbitCamera::default().uniform(size, sun, sun_intensity, 0.0);
    let camera_buffer = gpu::uniform_buffer_init(device, "bake camera", bytemuck::bytes_of(&camera));
    let obstacle_shadow = super::ObstacleShadowPass::new(ctx);
    let group = super::frame::frame_bind_group(device, &camera_buffer, obstacle_shadow.frame_resources());
    let target = super::Offscreen::new(ctx, size);
    let mut ms = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("terrain bounce") });
        let mut frame = Frame {
            device,
            queue: &ctx.queue,
            encoder: &mut encoder,
            profiler: &profiler,
            frame_bind_group: &group,
            camera: &camera,
            target: &target,
        };
        pass.encode(&mut frame, &data, bounces)?;
        profiler.resolve(&mut encoder);
        let started = std::time::Instant::now();
        let index = ctx.queue.submit([encoder.finish()]);
        // A lost device is no answer to wait for; the read-back below then reports it.
        let _ = device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None });
        ms = ms.min(started.elapsed().as_secs_f64() * 1e3);
        profiler.end_frame(&ctx.queue);
    }
    let read = |b: &wgpu::Buffer| -> Vec<glam::Vec3> {
        let texels: Vec<[f32; 4]> = bytemuck::pod_collect_to_vec(&gpu::readback::read_buffer_blocking(ctx, b));
        let count = (data.dims.0 * data.dims.1) as usize;
        texels.iter().take(count).map(|c| glam::Vec3::new(c[0], c[1], c[2])).collect()
    };
    let (radiosity, bounce) = (read(&data.radiosity), read(&data.bounce));
    Ok(BakeResult { radiosity, bounce, dims: data.dims, stride: uniform.bounce_stride, ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_keeps_at_most_max_side_texels_and_the_edges() {
        assert_eq!((stride(403, 344, MAX_BOUNCE_SIDE), dims(403, 344, 1)), (1, (403, 344)));
        assert_eq!(stride(512, 2, 512), 1);
        for (nx, nz) in [(513, 40), (4096, 4096), (1000, 3000), (2, 2)] {
            let s = stride(nx, nz, MAX_BOUNCE_SIDE);
            let (bx, bz) = dims(nx, nz, s);
            assert!(bx <= MAX_BOUNCE_SIDE && bz <= MAX_BOUNCE_SIDE, "{nx} x {nz}: stride {s}, {bx} x {bz}");
            // The last texel reaches the last sample; the one before does not.
            assert!((bx - 1) * s >= nx - 1 && (bx.max(2) - 2) * s < nx - 1, "{nx}: stride {s}, {bx} texels");
            assert!((bz - 1) * s >= nz - 1 && (bz.max(2) - 2) * s < nz - 1, "{nz}: stride {s}, {bz} texels");
        }
    }
}
