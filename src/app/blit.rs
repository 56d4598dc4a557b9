//! The full-screen-triangle copy of the offscreen scene onto the surface (or onto the include-UI
//! screenshot target), `shaders/app/blit.wgsl`; an sRGB target encodes on store, a gamma-space one in the
//! shader.

use crate::gpu::{self, GpuContext};

/// Full-screen-triangle copy of the offscreen scene onto a target of the surface's format
/// (`shaders/app/blit.wgsl`).
pub(super) struct Blit {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    pub(super) bind_group: wgpu::BindGroup,
}

impl Blit {
    pub(super) fn new(ctx: &GpuContext, target_format: wgpu::TextureFormat, source: &wgpu::TextureView) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "app/blit.wgsl");
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("blit"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Texture {
                    sample_type: wgpu::TextureSampleType::Float { filterable: false },
                    view_dimension: wgpu::TextureViewDimension::D2,
                    multisampled: false,
                },
                count: None,
            }],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("blit"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        // An sRGB target encodes on store; a gamma-space one needs the shader to encode.
        let fs = if target_format.is_srgb() { "fs_main" } else { "fs_main_gamma" };
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("blit"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some(fs),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: target_format,
                    blend: None,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            multiview_mask: None,
            cache: None,
        });
        let bind_group = Self::bind(ctx, &layout, source);
        Self { pipeline, layout, bind_group }
    }

    fn bind(ctx: &GpuContext, layout: &wgpu::BindGroupLayout, source: &wgpu::TextureView) -> wgpu::BindGroup {
        ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("blit source"),
            layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::TextureView(source) }],
        })
    }

    /// Points the blit at a new source view (after the offscreen target was resized).
    pub(super) fn set_source(&mut self, ctx: &GpuContext, source: &wgpu::TextureView) {
        self.bind_group = Self::bind(ctx, &self.layout, source);
    }

    /// A bind group for another source of the same size as the target (e.g. a k x screenshot).
    pub(super) fn bind_source(&self, ctx: &GpuContext, source: &wgpu::TextureView) -> wgpu::BindGroup {
        Self::bind(ctx, &self.layout, source)
    }

    /// Draws `source` (this blit's own bind group or one from [`Blit::bind_source`]).
    pub(super) fn draw(&self, pass: &mut wgpu::RenderPass<'_>, source: &wgpu::BindGroup) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, source, &[]);
        pass.draw(0..3, 0..1);
    }
}
