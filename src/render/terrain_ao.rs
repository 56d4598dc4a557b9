//! The terrain's sky visibility (ambient occlusion), baked once per heightfield on the GPU
//! (`shaders/render/terrain_ao.wgsl`) and read by the terrain shader for its sky light.
//!
//! From every height sample, [`RAYS`] rays leave the surface (cosine-weighted about its normal: 16
//! azimuths, jittered per sample, on 4 rings) and are marched against the bilinear heightfield in steps
//! of half a cell until they leave the grid, rise above its highest point, or pass under the surface;
//! the fraction that escapes is the sample's visibility (1 = the whole sky). The march skips empty space
//! with a maximum mipmap of the heightfield (Tevs, Ihrke & Seidel, "Maximum mipmaps for fast, accurate,
//! and scalable dynamic height field rendering", I3D 2008): level 0 holds the highest corner of every
//! grid cell, each level above the highest of 2 x 2 cells below, and where the ray's lowest point across
//! a cell of the current level clears the cell's maximum the march jumps to the cell's exit and tries
//! the next coarser level, else it refines. Only the steps that cannot hit are skipped, so the pyramid
//! and the plain march ([`AoMethod::BruteForce`], kept to measure against) test the same points and agree
//! up to rounding.
//!
//! Two timed compute passes, "terrain ao pyramid" (one dispatch per level) and "terrain ao", recorded when
//! a terrain is loaded or changed ([`super::TerrainPass`]), never per frame. `cargo run --release
//! --example terrain_ao -- 4096` prints the bake's cost with and without the pyramid.

use crate::gpu::{self, GpuContext};
use crate::terrain::Heightfield;

/// Azimuths per ring of rays.
pub const AZIMUTHS: u32 = 16;
/// Rings of rays (cosine-weighted polar angles).
pub const RINGS: u32 = 4;
/// Rays per height sample.
pub const RAYS: u32 = AZIMUTHS * RINGS;
/// Most pyramid levels: enough for 2^15 cells per side (heightmaps stop at 4096, `MAX_HEIGHTMAP_SIZE`).
pub const MAX_LEVELS: usize = 16;
/// Stride of the per-level parameters in their uniform buffer (wgpu's default
/// `min_uniform_buffer_offset_alignment`).
const LEVEL_STRIDE: u64 = 256;

/// How the rays are marched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AoMethod {
    /// Skipping empty space with the maximum mipmap (what the renderer uses).
    Pyramid,
    /// Every half-cell step tested (for comparison).
    BruteForce,
}

/// The bake's parameters and the pyramid's layout, bind group 1 binding 2.
/// WGSL twin: `Ao` in `shaders/render/terrain_ao.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AoUniform {
    /// Pyramid levels in use (level `levels - 1` is one cell).
    pub levels: u32,
    /// Azimuths per ring and rings of rays.
    pub azimuths: u32,
    pub rings: u32,
    /// 1: test every step ([`AoMethod::BruteForce`]); 0: skip with the pyramid.
    pub brute_force: u32,
    /// Per level: (offset of its first cell in the pyramid buffer, cells along x, cells along z, 0).
    pub level: [[u32; 4]; MAX_LEVELS],
}
const _: () = assert!(size_of::<AoUniform>() == 272);

/// Which level a pyramid dispatch builds, bind group 1 binding 5 (at a dynamic offset of 256 bytes per
/// level). WGSL twin: `AoLevel` in `shaders/render/terrain_ao.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AoLevel {
    pub index: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<AoLevel>() == 16);

impl AoUniform {
    /// The pyramid of an `nx` x `nz`-sample heightfield (`(nx - 1) x (nz - 1)` cells at level 0, each
    /// level above half as many per side, rounded up, down to one cell) and the rays of `method`.
    pub fn new(nx: u32, nz: u32, method: AoMethod) -> Self {
        let mut level = [[0u32; 4]; MAX_LEVELS];
        let (mut w, mut h, mut offset, mut levels) = ((nx.max(2) - 1), (nz.max(2) - 1), 0u32, 0u32);
        for entry in level.iter_mut() {
            *entry = [offset, w, h, 0];
            offset += w * h;
            levels += 1;
            if w == 1 && h == 1 {
                break;
            }
            (w, h) = (w.div_ceil(2), h.div_ceil(2));
        }
        Self { levels, azimuths: AZIMUTHS, rings: RINGS, brute_force: (method == AoMethod::BruteForce) as u32, level }
    }

    /// Cells in all levels (the pyramid buffer's length in f32).
    pub fn cells(&self) -> u32 {
        let [offset, w, h, _] = self.level[self.levels as usize - 1];
        offset + w * h
    }
}

/// The bake's pipelines.
pub struct TerrainAo {
    layout: wgpu::BindGroupLayout,
    build: wgpu::ComputePipeline,
    bake: wgpu::ComputePipeline,
}

/// The GPU side of one heightfield's bake: its parameters, pyramid and result.
pub struct AoData {
    uniform: wgpu::Buffer,
    /// The parameters as uploaded.
    params: AoUniform,
    /// `nx * nz` visibilities (f32, 0..1), index `iz * nx + ix`.
    pub ao: wgpu::Buffer,
    /// The maximum mipmap the rays are marched with (f32 per cell of every level).
    pyramid: wgpu::Buffer,
    _levels: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    nx: u32,
    nz: u32,
}

impl AoData {
    /// What the rays of another bake over the same heightfield read ([`super::terrain_bounce`]): the
    /// bake's parameters ([`AoUniform`]), the pyramid and the sky visibilities.
    pub fn ray_buffers(&self) -> [&wgpu::Buffer; 3] {
        [&self.uniform, &self.pyramid, &self.ao]
    }
}

impl TerrainAo {
    /// Builds the pipelines (bind group 1 only: the bake reads no camera).
    pub fn new(device: &wgpu::Device) -> Self {
        let cs = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("terrain ao bind group layout"),
            entries: &[
                gpu::uniform_entry::<super::heightfield::TerrainUniform>(0, cs),
                gpu::storage_entry::<f32>(1, true, cs),
                gpu::uniform_entry::<AoUniform>(2, cs),
                gpu::storage_entry::<f32>(3, false, cs),
                gpu::storage_entry::<f32>(4, false, cs),
                wgpu::BindGroupLayoutEntry {
                    binding: 5,
                    visibility: cs,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: true,
                        min_binding_size: std::num::NonZeroU64::new(size_of::<AoLevel>() as u64),
                    },
                    count: None,
                },
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("terrain ao pipeline layout"),
            bind_group_layouts: &[None, Some(&layout)],
            immediate_size: 0,
        });
        let module = gpu::shader::module(device, "render/terrain_ao.wgsl");
        let build = gpu::compute_pipeline(device, &module, &pipeline_layout, "build_level");
        let bake = gpu::compute_pipeline(device, &module, &pipeline_layout, "bake");
        Self { layout, build, bake }
    }

    /// The buffers of a bake of `hf`, whose grid uniform and heights are `terrain` and `heights` (as the
    /// terrain pass uploads them), marched by `method`.
    pub fn data(
        &self,
        device: &wgpu::Device,
        hf: &Heightfield,
        terrain: &wgpu::Buffer,
        heights: &wgpu::Buffer,
        method: AoMethod,
    ) -> AoData {
        let params = AoUniform::new(hf.nx, hf.nz, method);
        let uniform = gpu::uniform_buffer_init(device, "terrain ao uniform", bytemuck::bytes_of(&params));
        let pyramid = gpu::storage_buffer(device, "terrain ao pyramid", params.cells() as u64 * 4);
        let ao = gpu::storage_buffer(device, "terrain ao", hf.nx as u64 * hf.nz as u64 * 4);
        let mut level_bytes = vec![0u8; MAX_LEVELS * LEVEL_STRIDE as usize];
        for i in 0..MAX_LEVELS {
            let at = i * LEVEL_STRIDE as usize;
            let level = AoLevel { index: i as u32, _pad0: 0, _pad1: 0, _pad2: 0 };
            level_bytes[at..at + size_of::<AoLevel>()].copy_from_slice(bytemuck::bytes_of(&level));
        }
        let levels = gpu::uniform_buffer_init(device, "terrain ao levels", &level_bytes);
        let level_binding = wgpu::BufferBinding {
            buffer: &levels,
            offset: 0,
            size: std::num::NonZeroU64::new(size_of::<AoLevel>() as u64),
        };
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("terrain ao bind group"),
            layout: &self.layout,
            entries: &[
                whole(0, terrain),
                whole(1, heights),
                whole(2, &uniform),
                whole(3, &pyramid),
                whole(4, &ao),
                wgpu::BindGroupEntry { binding: 5, resource: wgpu::BindingResource::Buffer(level_binding) },
            ],
        });
        AoData { uniform, params, ao, pyramid, _levels: levels, bind_group, nx: hf.nx, nz: hf.nz }
    }

    /// Records the bake of `data`: "terrain ao pyramid" (one dispatch per level; none for the plain
    /// march) and "terrain ao" (one thread per height sample). Errors when the grid needs more
    /// workgroups than the device allows (not at 4096 x 4096 samples, the largest heightmap).
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &gpu::Profiler,
        limits: &wgpu::Limits,
        data: &AoData,
    ) -> Result<(), gpu::DispatchError> {
        let p = &data.params;
        if p.brute_force == 0 {
            let mut pass = profiler.compute_pass(encoder, "terrain ao pyramid");
            pass.set_pipeline(&self.build);
            for (i, [_, w, h, _]) in p.level.iter().take(p.levels as usize).enumerate() {
                let groups = gpu::workgroups_grid("terrain ao pyramid", [*w, *h, 1], [8, 8, 1], limits)?;
                pass.set_bind_group(1, &data.bind_group, &[(i as u64 * LEVEL_STRIDE) as u32]);
                gpu::dispatch(&mut pass, groups);
            }
        }
        let groups = gpu::workgroups_grid("terrain ao", [data.nx, data.nz, 1], [8, 8, 1], limits)?;
        let mut pass = profiler.compute_pass(encoder, "terrain ao");
        pass.set_pipeline(&self.bake);
        pass.set_bind_group(1, &data.bind_group, &[0]);
        gpu::dispatch(&mut pass, groups);
        Ok(())
    }

    /// Switches `data` to `method` (one uniform write; the next [`TerrainAo::encode`] uses it).
    pub fn set_method(queue: &wgpu::Queue, data: &mut AoData, method: AoMethod) {
        data.params.brute_force = (method == AoMethod::BruteForce) as u32;
        queue.write_buffer(&data.uniform, 0, bytemuck::bytes_of(&data.params));
    }
}

/// A bind group entry over the whole of `buffer`.
fn whole(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry { binding, resource: buffer.as_entire_binding() }
}

/// Bakes the visibility of `hf` with `method`, `repeats` times (at least once), waiting for each:
/// returns the `nx * nz` visibilities (index `iz * nx + ix`) and the fastest bake's wall time from
/// submission to completion, milliseconds. **Blocking**: for tests and measurements.
pub fn bake_blocking(
    ctx: &GpuContext,
    hf: &Heightfield,
    method: AoMethod,
    repeats: u32,
) -> Result<(Vec<f32>, f64), gpu::DispatchError> {
    let device = &ctx.device;
    let uniform = super::heightfield::TerrainUniform::from_heightfield(hf);
    let terrain = gpu::uniform_buffer_init(device, "terrain uniform", bytemuck::bytes_of(&uniform));
    let heights = gpu::storage_buffer_init(device, "terrain heights", bytemuck::cast_slice(&hf.heights));
    let ao = TerrainAo::new(device);
    let data = ao.data(device, hf, &terrain, &heights, method);
    let mut profiler = gpu::Profiler::new(device);
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("terrain ao") });
        ao.encode(&mut encoder, &profiler, &device.limits(), &data)?;
        profiler.resolve(&mut encoder);
        let started = std::time::Instant::now();
        let index = ctx.queue.submit([encoder.finish()]);
        // A lost device is no answer to wait for; the read-back below then reports it.
        let _ = device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None });
        best = best.min(started.elapsed().as_secs_f64() * 1e3);
        profiler.end_frame(&ctx.queue);
    }
    let bytes = gpu::readback::read_buffer_blocking(ctx, &data.ao);
    // Empty when nothing came back (a test's comparison then fails on the length).
    let mut ao: Vec<f32> = bytemuck::pod_collect_to_vec(&bytes);
    ao.truncate(hf.heights.len());
    Ok((ao, best))
}
