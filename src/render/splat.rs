//! Ellipsoid splats (`shaders/render/splat.wgsl`), the first stage of screen-space fluid rendering
//! (van der Laan, Green & Sainz, "Screen space fluid rendering with curvature flow", I3D 2009), with the
//! anisotropic ellipsoids of Yu & Turk 2013 ray-cast per pixel (Sigg et al. 2006).
//!
//! Two render passes over one instanced quad per particle, reading the [`super::anisotropy`] output:
//! - "splat depth": the nearest hit's linear view depth (m) into the `R32Float` raw-depth target, nearest
//!   winning through a private `Depth32Float` attachment (reversed-Z, cleared to far);
//! - "splat thickness": the ray's path length through each ellipsoid (m), blended One + One into the
//!   `R16Float` thickness target (full or half resolution), clipped where the terrain cuts the ray.
//!
//! Both test against the scene's depth (sky and terrain, drawn first) by loading it in the fragment
//! shader, so no fluid fragment behind the terrain survives and the thickness target's size is free.

use super::camera::{camera_bind_group_layout, DEPTH_CLEAR, DEPTH_FORMAT};
use super::targets::{FluidTargets, RAW_DEPTH_FORMAT, THICKNESS_FORMAT};
use crate::gpu::{self, GpuContext, Profiler};

/// Per-pass constants, bind group 1 binding 0. WGSL twin: `Splat` in `shaders/render/splat.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SplatUniform {
    /// Scene-depth pixels per target pixel: 1 at full resolution, 2 at half.
    pub depth_scale: f32,
    pub _pad: [f32; 3],
}
const _: () = assert!(size_of::<SplatUniform>() == 16);

fn clear(view: &wgpu::TextureView) -> wgpu::RenderPassColorAttachment<'_> {
    wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations { load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT), store: wgpu::StoreOp::Store },
    }
}

/// The splat passes: two pipelines and their per-pass uniforms (screen-independent).
pub struct SplatPass {
    layout: wgpu::BindGroupLayout,
    depth_pipeline: wgpu::RenderPipeline,
    thickness_pipeline: wgpu::RenderPipeline,
    depth_uniform: wgpu::Buffer,
    thickness_uniform: wgpu::Buffer,
}

impl SplatPass {
    /// Builds both pipelines.
    pub fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/splat.wgsl");
        let camera_layout = camera_bind_group_layout(device);
        let vf = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("splat bind group layout"),
            entries: &[
                gpu::uniform_entry(0, vf),
                gpu::storage_entry(1, true, vf),
                wgpu::BindGroupLayoutEntry {
                    binding: 2,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Depth,
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                    count: None,
                },
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("splat pipeline layout"),
            bind_group_layouts: &[Some(&camera_layout), Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = |label: &str, entry: &str, target: wgpu::ColorTargetState, depth: Option<wgpu::DepthStencilState>| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&pipeline_layout),
                vertex: wgpu::VertexState { module: &module, entry_point: Some("vs_main"), compilation_options: Default::default(), buffers: &[] },
                primitive: wgpu::PrimitiveState::default(),
                depth_stencil: depth,
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    targets: &[Some(target)],
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let depth_pipeline = pipeline(
            "splat depth pipeline",
            "fs_depth",
            wgpu::ColorTargetState::from(RAW_DEPTH_FORMAT),
            Some(wgpu::DepthStencilState {
                format: DEPTH_FORMAT,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Greater),
                stencil: Default::default(),
                bias: Default::default(),
            }),
        );
        let add = wgpu::BlendComponent { src_factor: wgpu::BlendFactor::One, dst_factor: wgpu::BlendFactor::One, operation: wgpu::BlendOperation::Add };
        let thickness_pipeline = pipeline(
            "splat thickness pipeline",
            "fs_thickness",
            wgpu::ColorTargetState {
                format: THICKNESS_FORMAT,
                blend: Some(wgpu::BlendState { color: add, alpha: add }),
                write_mask: wgpu::ColorWrites::ALL,
            },
            None,
        );
        let uniform = |label: &str, scale: f32| {
            gpu::uniform_buffer_init(device, label, bytemuck::bytes_of(&SplatUniform { depth_scale: scale, _pad: [0.0; 3] }))
        };
        Self {
            layout,
            depth_pipeline,
            thickness_pipeline,
            depth_uniform: uniform("splat depth uniform", 1.0),
            thickness_uniform: uniform("splat thickness uniform", 1.0),
        }
    }

    /// Records "splat depth" then "splat thickness": `count` ellipsoids from `ellipsoids`
    /// (`array<Ellipsoid>`), tested against `scene_depth` (the frame's `Depth32Float` target, sky and
    /// terrain drawn), into `targets.raw_depth` (cleared to 0 = no fluid) and `targets.thickness`
    /// (cleared to 0).
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        camera_bind_group: &wgpu::BindGroup,
        ellipsoids: &wgpu::Buffer,
        count: u32,
        scene_depth: &wgpu::TextureView,
        targets: &FluidTargets,
    ) {
        let scale = targets.size.0 as f32 / targets.thickness_size.0 as f32;
        ctx.queue.write_buffer(&self.thickness_uniform, 0, bytemuck::bytes_of(&SplatUniform { depth_scale: scale, _pad: [0.0; 3] }));
        let bind = |uniform: &wgpu::Buffer| {
            ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("splat bind group"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: ellipsoids.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::TextureView(scene_depth) },
                ],
            })
        };
        {
            let bind_group = bind(&self.depth_uniform);
            let mut pass = profiler.render_pass(
                encoder,
                "splat depth",
                wgpu::RenderPassDescriptor {
                    label: Some("splat depth"),
                    color_attachments: &[Some(clear(&targets.raw_depth_view))],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: &targets.splat_depth_view,
                        depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(DEPTH_CLEAR), store: wgpu::StoreOp::Discard }),
                        stencil_ops: None,
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                },
            );
            if count > 0 {
                pass.set_pipeline(&self.depth_pipeline);
                pass.set_bind_group(0, camera_bind_group, &[]);
                pass.set_bind_group(1, &bind_group, &[]);
                pass.draw(0..6, 0..count);
            }
        }
        let bind_group = bind(&self.thickness_uniform);
        let mut pass = profiler.render_pass(
            encoder,
            "splat thickness",
            wgpu::RenderPassDescriptor {
                label: Some("splat thickness"),
                color_attachments: &[Some(clear(&targets.thickness_view))],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            },
        );
        if count > 0 {
            pass.set_pipeline(&self.thickness_pipeline);
            pass.set_bind_group(0, camera_bind_group, &[]);
            pass.set_bind_group(1, &bind_group, &[]);
            pass.draw(0..6, 0..count);
        }
    }
}
