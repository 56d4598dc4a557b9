//! Screen-space fluid composite (`shaders/render/composite.wgsl`), the last stage of van der Laan, Green &
//! Sainz, "Screen space fluid rendering with curvature flow" (I3D 2009), with Green's GDC 2010 shading:
//! normals from the smoothed depth, Schlick Fresnel, Beer-Lambert absorption of the refracted background,
//! the sky cubemap reflected, a sun highlight, and the smoothed depth written (reversed-Z) so water and
//! terrain occlude each other. One full-screen triangle ("fluid composite") over the frame's colour and
//! depth; the debug views draw an intermediate target over the whole screen instead.

use super::camera::{camera_bind_group_layout, DEPTH_COMPARE, DEPTH_FORMAT};
use super::targets::FluidTargets;
use crate::gpu::{self, GpuContext, Profiler};

/// Shading parameters, bind group 1 binding 0. WGSL twin: `Composite` in `shaders/render/composite.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CompositeUniform {
    /// Beer-Lambert absorption per channel, 1/m.
    pub absorption: [f32; 3],
    /// Refraction offset of the background, in screen fractions at full thickness.
    pub refraction: f32,
    /// Fresnel reflectance at normal incidence.
    pub f0: f32,
    /// 0 final, else the debug view's code (see `FluidView`).
    pub view: u32,
    /// Tiles across (tile-mask view).
    pub tiles_x: u32,
    /// Radiance multiplier of the sky cubemap.
    pub sky_exposure: f32,
    /// Linear depths (m) drawn white and dark in the depth views (the renderer uses 0.75 and 1.25 times
    /// the orbit distance).
    pub depth_vis: [f32; 2],
    /// Thickness (m) drawn at 63% brightness in the thickness view.
    pub thickness_vis: f32,
    /// Multiplier of the thickness target's values (1).
    pub thickness_scale: f32,
}
const _: () = assert!(size_of::<CompositeUniform>() == 48);

/// The composite pass: final and debug pipelines (screen-independent), uniform and sampler.
pub struct CompositePass {
    layout: wgpu::BindGroupLayout,
    final_pipeline: wgpu::RenderPipeline,
    debug_pipeline: wgpu::RenderPipeline,
    uniform: wgpu::Buffer,
    sampler: wgpu::Sampler,
}

fn texture_entry(binding: u32, sample_type: wgpu::TextureSampleType, dim: wgpu::TextureViewDimension) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Texture { sample_type, view_dimension: dim, multisampled: false },
        count: None,
    }
}

impl CompositePass {
    /// Builds the pipelines for colour targets of `color_format` (depth: `Depth32Float`).
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/composite.wgsl");
        let camera_layout = camera_bind_group_layout(device);
        let fs = wgpu::ShaderStages::FRAGMENT;
        let unfilterable = wgpu::TextureSampleType::Float { filterable: false };
        let filterable = wgpu::TextureSampleType::Float { filterable: true };
        let d2 = wgpu::TextureViewDimension::D2;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("composite bind group layout"),
            entries: &[
                gpu::uniform_entry(0, fs),
                texture_entry(1, unfilterable, d2),
                texture_entry(2, unfilterable, d2),
                texture_entry(3, filterable, d2),
                texture_entry(4, filterable, d2),
                texture_entry(5, filterable, wgpu::TextureViewDimension::Cube),
                wgpu::BindGroupLayoutEntry {
                    binding: 6,
                    visibility: fs,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                },
                gpu::storage_entry(7, true, fs),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("composite pipeline layout"),
            bind_group_layouts: &[Some(&camera_layout), Some(&layout)],
            immediate_size: 0,
        });
        let constants = super::output_constants(color_format);
        let pipeline = |label: &str, entry: &str, compare: wgpu::CompareFunction, write: bool| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&pipeline_layout),
                vertex: wgpu::VertexState { module: &module, entry_point: Some("vs_main"), compilation_options: Default::default(), buffers: &[] },
                primitive: wgpu::PrimitiveState::default(),
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    depth_write_enabled: Some(write),
                    depth_compare: Some(compare),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() },
                    targets: &[Some(wgpu::ColorTargetState::from(color_format))],
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("composite sampler"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            address_mode_u: wgpu::AddressMode::ClampToEdge,
            address_mode_v: wgpu::AddressMode::ClampToEdge,
            ..Default::default()
        });
        Self {
            final_pipeline: pipeline("composite pipeline", "fs_final", DEPTH_COMPARE, true),
            debug_pipeline: pipeline("composite debug pipeline", "fs_debug", wgpu::CompareFunction::Always, false),
            uniform: gpu::uniform_buffer_init(device, "composite uniform", bytemuck::bytes_of(&CompositeUniform::zeroed())),
            layout,
            sampler,
        }
    }

    /// Records "fluid composite" into `color` / `depth` (loaded, not cleared): the shaded water
    /// (`params.view == 0`) or a debug view, from `targets` (smoothed depth in `targets.smooth[smoothed]`)
    /// and the sky cubemap `sky_cube`.
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        camera_bind_group: &wgpu::BindGroup,
        color: &wgpu::TextureView,
        depth: &wgpu::TextureView,
        targets: &FluidTargets,
        smoothed: usize,
        sky_cube: &wgpu::TextureView,
        params: &CompositeUniform,
    ) {
        ctx.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(params));
        let tex = wgpu::BindingResource::TextureView;
        let entry = |binding, resource| wgpu::BindGroupEntry { binding, resource };
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("composite bind group"),
            layout: &self.layout,
            entries: &[
                entry(0, self.uniform.as_entire_binding()),
                entry(1, tex(&targets.smooth_views[smoothed])),
                entry(2, tex(&targets.raw_depth_view)),
                entry(3, tex(&targets.thickness_view)),
                entry(4, tex(&targets.background_view)),
                entry(5, tex(sky_cube)),
                entry(6, wgpu::BindingResource::Sampler(&self.sampler)),
                entry(7, targets.tile_mask.as_entire_binding()),
            ],
        });
        let mut pass = profiler.render_pass(
            encoder,
            "fluid composite",
            wgpu::RenderPassDescriptor {
                label: Some("fluid composite"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: color,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations { load: wgpu::LoadOp::Load, store: wgpu::StoreOp::Store },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: depth,
                    depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Load, store: wgpu::StoreOp::Store }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            },
        );
        pass.set_pipeline(if params.view == 0 { &self.final_pipeline } else { &self.debug_pipeline });
        pass.set_bind_group(0, camera_bind_group, &[]);
        pass.set_bind_group(1, &bind_group, &[]);
        pass.draw(0..3, 0..1);
    }
}

use bytemuck::Zeroable as _;
