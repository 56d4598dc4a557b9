//! What every render pass shares, in one leaf module the passes import (it imports none of them): the
//! formats and the depth convention, the frame uniform and bind group 0 (the camera), and the helpers
//! that build layouts and pipelines.
//!
//! Depth convention: **reversed-Z**. `clip_from_view` maps the near plane to depth 1 and the far plane to
//! depth 0 (wgpu's 0..1 range), which spreads float precision evenly over large terrains. Depth targets
//! are cleared to [`DEPTH_CLEAR`] and tested with [`DEPTH_COMPARE`]; the sky sits at depth 0.
//!
//! Bind groups are numbered the same way everywhere: 0 = the frame ([`CameraUniform`]), 1 = the pass's
//! own parameters and resources.

use crate::gpu;

/// Depth value the depth target is cleared to (the far plane under reversed-Z).
pub const DEPTH_CLEAR: f32 = 0.0;
/// Depth test of passes that write depth under reversed-Z (nearer = larger depth).
pub const DEPTH_COMPARE: wgpu::CompareFunction = wgpu::CompareFunction::GreaterEqual;
/// Format of every depth target the renderer draws into.
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// Colour format of [`super::Offscreen::new`]: 8-bit sRGB, so shaders write linear values.
pub const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;

/// Colour format of HDR (EXR) screenshots: 16-bit float RGBA, holding the linear (tone-mapped, not
/// sRGB-encoded) image. Half floats keep 11 significant bits (better than 8-bit sRGB everywhere) and,
/// unlike `Rgba32Float`, are filterable on every adapter, which the water's refraction lookup needs.
pub const HDR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;

/// Format of the raw and smoothed fluid depth targets: linear view depth in metres, 0 = no fluid.
pub const RAW_DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R32Float;
/// Format of the fluid thickness target: summed path length in metres (blendable).
pub const THICKNESS_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R16Float;
/// Format of the foam target ([`super::foam`]): foam and spray opacity (r, g, summed), nearest foam view
/// depth in metres (a, Min blend).
pub const FOAM_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;

/// Per-frame camera and light block, bind group 0 binding 0 of every render pass.
/// WGSL twin: `Camera` in `shaders/common/camera.wgsl`. Matrices are column-major.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CameraUniform {
    pub clip_from_world: [[f32; 4]; 4],
    pub view_from_world: [[f32; 4]; 4],
    pub clip_from_view: [[f32; 4]; 4],
    /// Inverse of `clip_from_world` (turns a pixel into a world-space ray, e.g. for the sky).
    pub world_from_clip: [[f32; 4]; 4],
    /// Eye position, metres.
    pub eye: [f32; 3],
    /// Seconds since the renderer was created.
    pub time: f32,
    /// Unit vector toward the sun.
    pub sun_dir: [f32; 3],
    /// Sun radiance scale (1 = nominal daylight).
    pub sun_intensity: f32,
    /// Viewport size in pixels.
    pub viewport: [f32; 2],
    /// Near and far clip distances, metres (reversed-Z: near -> depth 1).
    pub near: f32,
    pub far: f32,
}
const _: () = assert!(size_of::<CameraUniform>() == 304);

/// Bytes of the obstacles' sun-shadow uniform, binding 1 of bind group 0 (`ObstacleShadowUniform` of
/// [`super::obstacle_shadow`], which asserts it; named here by size, so that this module, which every
/// pass imports, imports no pass).
pub const OBSTACLE_SHADOW_BYTES: usize = 80;

/// Layout of bind group 0: the frame's [`CameraUniform`] (vertex, fragment and compute stages) and the
/// obstacles' sun shadow (fragment: its uniform, map and comparison sampler, read by
/// `shaders/common/obstacle_shadow.wgsl`; [`super::obstacle_shadow`]). Every pass builds its pipeline
/// layout with an identical one.
pub fn frame_bind_group_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    let stages = wgpu::ShaderStages::VERTEX_FRAGMENT | wgpu::ShaderStages::COMPUTE;
    let fs = wgpu::ShaderStages::FRAGMENT;
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("frame bind group layout"),
        entries: &[
            gpu::uniform_entry::<CameraUniform>(0, stages),
            gpu::uniform_entry::<[u8; OBSTACLE_SHADOW_BYTES]>(1, fs),
            depth_texture_entry(2, fs),
            wgpu::BindGroupLayoutEntry {
                binding: 3,
                visibility: fs,
                ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Comparison),
                count: None,
            },
        ],
    })
}

/// Bind group 0 over `camera` (a [`CameraUniform`] buffer) and the obstacles' sun shadow: its uniform,
/// depth map and comparison sampler (`ObstacleShadowPass::frame_resources`).
pub fn frame_bind_group(
    device: &wgpu::Device,
    camera: &wgpu::Buffer,
    shadow: (&wgpu::Buffer, &wgpu::TextureView, &wgpu::Sampler),
) -> wgpu::BindGroup {
    let (uniform, map, sampler) = shadow;
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("frame bind group"),
        layout: &frame_bind_group_layout(device),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: camera.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: uniform.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::TextureView(map) },
            wgpu::BindGroupEntry { binding: 3, resource: wgpu::BindingResource::Sampler(sampler) },
        ],
    })
}

/// A pipeline layout of bind group 0 (the frame) and `pass` (the pass's own group 1).
pub fn pass_pipeline_layout(device: &wgpu::Device, label: &str, pass: &wgpu::BindGroupLayout) -> wgpu::PipelineLayout {
    let frame = frame_bind_group_layout(device);
    device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: &[Some(&frame), Some(pass)],
        immediate_size: 0,
    })
}

/// Layout entry of a sampled 2-D (or `dimension`) float texture at `binding`.
pub fn texture_entry(
    binding: u32,
    visibility: wgpu::ShaderStages,
    filterable: bool,
    dimension: wgpu::TextureViewDimension,
) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Float { filterable },
            view_dimension: dimension,
            multisampled: false,
        },
        count: None,
    }
}

/// Layout entry of a 2-D depth texture at `binding` (read by `textureLoad` or a comparison sampler).
pub fn depth_texture_entry(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Depth,
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        count: None,
    }
}

/// Layout entry of a filtering sampler at `binding`.
pub fn sampler_entry(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
        count: None,
    }
}

/// A render pipeline of `module` with no vertex buffers: `vs` and `fs` entry points, one colour target,
/// an optional depth state, the fragment stage's `constants`.
#[allow(clippy::too_many_arguments)]
pub fn render_pipeline(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    (vs, fs): (&str, &str),
    primitive: wgpu::PrimitiveState,
    target: wgpu::ColorTargetState,
    depth_stencil: Option<wgpu::DepthStencilState>,
    constants: &[(&str, f64)],
) -> wgpu::RenderPipeline {
    render_pipeline_with(device, label, layout, module, (vs, fs), primitive, target, depth_stencil, (&[], constants))
}

/// Pipeline-overridable constants of one stage: (name, value).
pub type Constants<'a> = &'a [(&'a str, f64)];

/// [`render_pipeline`] with constants for both stages: `(vertex, fragment)`.
#[allow(clippy::too_many_arguments)]
pub fn render_pipeline_with(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    (vs, fs): (&str, &str),
    primitive: wgpu::PrimitiveState,
    target: wgpu::ColorTargetState,
    depth_stencil: Option<wgpu::DepthStencilState>,
    (vertex_constants, constants): (Constants<'_>, Constants<'_>),
) -> wgpu::RenderPipeline {
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout: Some(layout),
        vertex: wgpu::VertexState {
            module,
            entry_point: Some(vs),
            compilation_options: wgpu::PipelineCompilationOptions { constants: vertex_constants, ..Default::default() },
            buffers: &[],
        },
        primitive,
        depth_stencil,
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some(fs),
            compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
            targets: &[Some(target)],
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// A depth state of [`DEPTH_FORMAT`]: test with `compare`, write when `write`.
pub fn depth_state(compare: wgpu::CompareFunction, write: bool) -> wgpu::DepthStencilState {
    wgpu::DepthStencilState {
        format: DEPTH_FORMAT,
        depth_write_enabled: Some(write),
        depth_compare: Some(compare),
        stencil: Default::default(),
        bias: Default::default(),
    }
}

/// An opaque scene pipeline (terrain, sphere impostors, the wave maker's paddle): `vs_main` and `fs_main` of
/// `module`, no vertex buffers, depth tested and written (reversed-Z), one colour target of `color_format`
/// with the sRGB-encoding constant when that format needs it.
pub fn opaque_pipeline(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    primitive: wgpu::PrimitiveState,
    color_format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    opaque_pipeline_with(device, label, layout, module, primitive, color_format, &[])
}

/// [`opaque_pipeline`] with constants for the vertex stage (`SPLIT_N` of a shader reading split arrays).
pub fn opaque_pipeline_with(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    primitive: wgpu::PrimitiveState,
    color_format: wgpu::TextureFormat,
    vertex_constants: &[(&str, f64)],
) -> wgpu::RenderPipeline {
    let constants = output_constants(color_format);
    let depth = depth_state(DEPTH_COMPARE, true);
    render_pipeline_with(
        device,
        label,
        layout,
        module,
        ("vs_main", "fs_main"),
        primitive,
        color_format.into(),
        Some(depth),
        (vertex_constants, &constants),
    )
}

/// Whether a colour target of `format` holds linear values: an sRGB format (the hardware encodes on
/// store) or a float format (stores the shader's values as they are, e.g. [`HDR_FORMAT`] for EXR
/// screenshots). Any other format (8-bit `Unorm`) holds what is shown, so the shaders encode sRGB into it.
pub fn stores_linear(format: wgpu::TextureFormat) -> bool {
    use wgpu::TextureFormat as F;
    format.is_srgb()
        || matches!(
            format,
            F::R16Float
                | F::Rg16Float
                | F::Rgba16Float
                | F::R32Float
                | F::Rg32Float
                | F::Rgba32Float
                | F::Rg11b10Ufloat
        )
}

/// Pipeline constants for the fragment stage: ask the shader to encode sRGB itself when the target
/// format holds display-encoded values (8-bit `Unorm`); sRGB and float targets get linear values
/// (see [`stores_linear`]).
pub fn output_constants(color_format: wgpu::TextureFormat) -> Vec<(&'static str, f64)> {
    if stores_linear(color_format) {
        Vec::new()
    } else {
        vec![("ENCODE_SRGB", 1.0)]
    }
}
