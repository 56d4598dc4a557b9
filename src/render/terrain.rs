//! Terrain mesh (`shaders/render/terrain.wgsl`) drawn from the same f32 heights the simulation collides
//! with: the heights go to a storage buffer once per scene, and the vertex shader builds one triangle strip
//! per grid row from `vertex_index` (column) and `instance_index` (row), normals by central differences.
//! No vertex or index buffers. Lit by the sun (Lambert with heightfield soft shadows) and the sky, with
//! distance fog; writes reversed-Z depth so particles and terrain occlude each other.

use super::camera::camera_bind_group_layout;
use crate::gpu::GpuContext;
use crate::terrain::Heightfield;

/// Steps of the shadow ray march toward the sun per terrain pixel.
const SHADOW_STEPS: u32 = 40;

/// Grid description and shading constants of the terrain, bind group 1 binding 0.
/// WGSL twin: `Terrain` in `shaders/render/terrain.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TerrainUniform {
    /// World (x, z) of sample (0, 0), metres.
    pub origin: [f32; 2],
    /// Sample spacing along (x, z), metres.
    pub spacing: [f32; 2],
    /// Samples along x and z.
    pub nx: u32,
    pub nz: u32,
    /// Lowest and highest height, metres.
    pub h_min: f32,
    pub h_max: f32,
    /// Fog extinction, 1/m.
    pub fog_density: f32,
    /// Shadow ray-march steps.
    pub shadow_steps: u32,
    pub _pad: [u32; 2],
}
const _: () = assert!(size_of::<TerrainUniform>() == 48);

impl TerrainUniform {
    /// Grid and shading constants for `hf`; fog thins with the terrain's size (about 6% at one
    /// terrain extent away).
    pub fn from_heightfield(hf: &Heightfield) -> Self {
        let spacing = hf.spacing();
        let (h_min, h_max) = hf.range();
        let size = hf.extent.x.max(hf.extent.y).max(h_max - h_min).max(1e-3);
        Self {
            origin: hf.origin.to_array(),
            spacing: spacing.to_array(),
            nx: hf.nx,
            nz: hf.nz,
            h_min,
            h_max,
            fog_density: 0.06 / size,
            shadow_steps: SHADOW_STEPS,
            _pad: [0; 2],
        }
    }
}

/// The terrain pass: pipeline, and the heights + grid uniform of the current heightfield.
pub struct TerrainPass {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    heights: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    nx: u32,
    nz: u32,
}

impl TerrainPass {
    /// Builds the pipeline for colour targets of `color_format` (depth: `Depth32Float`) and uploads `hf`.
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat, hf: &Heightfield) -> Self {
        let device = &ctx.device;
        let module = crate::gpu::shader::module(device, "render/terrain.wgsl");
        let camera_layout = camera_bind_group_layout(device);
        let stages = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("terrain bind group layout"),
            entries: &[crate::gpu::uniform_entry(0, stages), crate::gpu::storage_entry(1, true, stages)],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("terrain pipeline layout"),
            bind_group_layouts: &[Some(&camera_layout), Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = super::opaque_pipeline(device, "terrain pipeline", &pipeline_layout, &module, wgpu::PrimitiveState { topology: wgpu::PrimitiveTopology::TriangleStrip, cull_mode: None, ..Default::default() }, color_format);
        let (uniform, heights, bind_group) = upload(ctx, &layout, hf);
        Self { pipeline, layout, uniform, heights, bind_group, nx: hf.nx, nz: hf.nz }
    }

    /// Uploads a new heightfield (e.g. on a scene change); buffers are recreated when its sample count changes.
    pub fn set_heightfield(&mut self, ctx: &GpuContext, hf: &Heightfield) {
        let bytes: &[u8] = bytemuck::cast_slice(&hf.heights);
        if !bytes.is_empty() && bytes.len() as u64 == self.heights.size() {
            ctx.queue.write_buffer(&self.heights, 0, bytes);
            ctx.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&TerrainUniform::from_heightfield(hf)));
        } else {
            (self.uniform, self.heights, self.bind_group) = upload(ctx, &self.layout, hf);
        }
        (self.nx, self.nz) = (hf.nx, hf.nz);
    }

    /// Records the terrain: `nz - 1` strips of `2 nx` vertices. Bind group 0 is the frame's camera.
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>, camera_bind_group: &wgpu::BindGroup) {
        if self.nx < 2 || self.nz < 2 {
            return;
        }
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, camera_bind_group, &[]);
        pass.set_bind_group(1, &self.bind_group, &[]);
        pass.draw(0..2 * self.nx, 0..self.nz - 1);
    }
}

fn upload(ctx: &GpuContext, layout: &wgpu::BindGroupLayout, hf: &Heightfield) -> (wgpu::Buffer, wgpu::Buffer, wgpu::BindGroup) {
    debug_assert_eq!(hf.heights.len(), (hf.nx * hf.nz) as usize, "heightfield holds nx * nz heights");
    let uniform = crate::gpu::uniform_buffer_init(
        &ctx.device,
        "terrain uniform",
        bytemuck::bytes_of(&TerrainUniform::from_heightfield(hf)),
    );
    let heights = crate::gpu::storage_buffer_init(&ctx.device, "terrain heights", bytemuck::cast_slice(&hf.heights));
    let bind_group = crate::gpu::bind_buffers(&ctx.device, "terrain bind group", layout, &[&uniform, &heights]);
    (uniform, heights, bind_group)
}
