//! Sky background (`shaders/render/sky.wgsl`): one full-screen triangle at the far plane, drawn first,
//! neither testing nor writing depth. Each pixel's colour comes from its world-space view ray through
//! the shared daylight model in `shaders/common/camera.wgsl` (gradient sky, sun glow and disc, dark ground
//! below the horizon). No per-pass resources besides the pipeline.

use super::camera::{camera_bind_group_layout, DEPTH_FORMAT};
use crate::gpu::GpuContext;

/// The sky pass: a pipeline only.
pub struct SkyPass {
    pipeline: wgpu::RenderPipeline,
}

impl SkyPass {
    /// Builds the pipeline for colour targets of `color_format` (depth: `Depth32Float`).
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = crate::gpu::shader::module(device, "render/sky.wgsl");
        let camera_layout = camera_bind_group_layout(device);
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("sky pipeline layout"),
            bind_group_layouts: &[Some(&camera_layout)],
            immediate_size: 0,
        });
        let constants = super::output_constants(color_format);
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("sky pipeline"),
            layout: Some(&layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: DEPTH_FORMAT,
                depth_write_enabled: Some(false),
                depth_compare: Some(wgpu::CompareFunction::Always),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_main"),
                compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() },
                targets: &[Some(wgpu::ColorTargetState::from(color_format))],
            }),
            multiview_mask: None,
            cache: None,
        });
        Self { pipeline }
    }

    /// Records the full-screen triangle; bind group 0 is the frame's camera.
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>, camera_bind_group: &wgpu::BindGroup) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, camera_bind_group, &[]);
        pass.draw(0..3, 0..1);
    }
}
