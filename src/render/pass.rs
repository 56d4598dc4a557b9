//! The one shape of a render pass. Every pass (`src/render/X.rs` ↔ `shaders/render/X.wgsl`) is built once
//! for a colour format, `new(ctx, color_format)`, and keeps its screen-independent state (pipelines,
//! layouts, uniform buffers); [`Pass::resize`] rebuilds what depends on the screen-sized targets (bind
//! groups over them) when those change, never per frame; [`Pass::encode`] records the pass into the
//! [`Frame`] with what it reads this frame (plain data and buffers). A pass opens its own timed passes, so
//! the per-pass table names it. [`super::Renderer::encode`] records the passes in a fixed order.

use super::frame::{CameraUniform, DEPTH_CLEAR};
use super::targets::{FluidTargets, Offscreen};
use crate::gpu::profiler::{TimedComputePass, TimedRenderPass};
use crate::gpu::Profiler;

/// What every pass records into: the device and queue, the frame's encoder and profiler, bind group 0
/// (the camera) and the frame's colour and depth targets.
pub struct Frame<'a> {
    pub device: &'a wgpu::Device,
    pub queue: &'a wgpu::Queue,
    pub encoder: &'a mut wgpu::CommandEncoder,
    pub profiler: &'a Profiler,
    /// Bind group 0 of every pass: the frame's [`CameraUniform`].
    pub frame_bind_group: &'a wgpu::BindGroup,
    /// The frame's camera uniform as written into bind group 0 (projection terms, viewport, sun).
    pub camera: &'a CameraUniform,
    /// The colour and depth targets the frame draws into.
    pub target: &'a Offscreen,
}

impl Frame<'_> {
    /// Opens the timed render pass `label` over the frame's colour and depth targets, cleared (colour to
    /// black, depth to [`DEPTH_CLEAR`]) when `clear`, else loaded; both stored. Bind group 0 is set.
    pub fn target_pass(&mut self, label: &str, clear: bool) -> TimedRenderPass<'_> {
        let (color, depth) = if clear {
            (wgpu::LoadOp::Clear(wgpu::Color::BLACK), wgpu::LoadOp::Clear(DEPTH_CLEAR))
        } else {
            (wgpu::LoadOp::Load, wgpu::LoadOp::Load)
        };
        let mut pass = render_pass(
            self.profiler,
            self.encoder,
            label,
            &self.target.color_view,
            color,
            Some((&self.target.depth_view, depth, wgpu::StoreOp::Store)),
        );
        pass.set_bind_group(0, self.frame_bind_group, &[]);
        pass
    }

    /// Opens the timed compute pass `label` with bind group 0 set.
    pub fn compute_pass(&mut self, label: &str) -> TimedComputePass<'_> {
        let mut pass = self.profiler.compute_pass(self.encoder, label);
        pass.set_bind_group(0, self.frame_bind_group, &[]);
        pass
    }
}

/// A timed render pass `label` into `color` (loaded or cleared by `load`, stored) and, when given, a depth
/// attachment with its load and store operations.
pub fn render_pass<'p>(
    profiler: &'p Profiler,
    encoder: &mut wgpu::CommandEncoder,
    label: &str,
    color: &wgpu::TextureView,
    load: wgpu::LoadOp<wgpu::Color>,
    depth: Option<(&wgpu::TextureView, wgpu::LoadOp<f32>, wgpu::StoreOp)>,
) -> TimedRenderPass<'p> {
    profiler.render_pass(
        encoder,
        label,
        wgpu::RenderPassDescriptor {
            label: Some(label),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: color,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations { load, store: wgpu::StoreOp::Store },
            })],
            depth_stencil_attachment: depth.map(|(view, load, store)| wgpu::RenderPassDepthStencilAttachment {
                view,
                depth_ops: Some(wgpu::Operations { load, store }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        },
    )
}

/// The screen-sized targets a pass may bind: the frame's colour and depth ([`Offscreen`]) and the fluid
/// renderer's intermediate targets ([`FluidTargets`]) of the same size.
#[derive(Clone, Copy)]
pub struct Targets<'a> {
    pub scene: &'a Offscreen,
    pub fluid: &'a FluidTargets,
}

/// A render pass: built once (`new(ctx, color_format)`), resized when the screen-sized targets change,
/// recorded every frame.
pub trait Pass {
    /// What the pass reads this frame besides the [`Frame`] (plain data and buffers).
    type Input<'a>;

    /// Rebuilds the pass's bind groups over new screen-sized targets, or drops them (`None`, so the
    /// targets can be freed). Passes that bind none keep the default, which does nothing.
    fn resize(&mut self, _device: &wgpu::Device, _targets: Option<Targets<'_>>) {}

    /// Records the pass into `frame`.
    fn encode(&mut self, frame: &mut Frame<'_>, input: Self::Input<'_>);
}
