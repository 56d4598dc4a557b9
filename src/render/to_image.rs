//! Blocking one-frame renders into a new off-screen target, read back as an image: for headless runs and
//! tests ([`render_to_image`] for 8-bit colour formats, [`render_to_image_hdr`] for [`HDR_FORMAT`](super::HDR_FORMAT)).

use super::{
    read_texture_rgba, read_texture_rgba_f32, Offscreen, OrbitCamera, ParticleSource, RenderSettings, Renderer,
};
use crate::gpu::{GpuContext, Profiler};

/// Renders one frame off-screen at `size` pixels and reads it back as RGBA (sRGB-encoded bytes).
/// `renderer` must be made for an 8-bit colour format (see [`render_to_image_hdr`] for [`HDR_FORMAT`](super::HDR_FORMAT)).
/// **Blocking** (waits for the GPU): for headless runs and tests only.
pub fn render_to_image(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    camera: &OrbitCamera,
    particles: Option<ParticleSource<'_>>,
    settings: &RenderSettings,
    size: (u32, u32),
) -> image::RgbaImage {
    let target = render_offscreen(ctx, renderer, camera, particles, settings, size);
    read_texture_rgba(ctx, &target.color)
}

/// Renders one frame off-screen at `size` pixels with a renderer made for [`HDR_FORMAT`](super::HDR_FORMAT) and reads it
/// back as linear RGBA floats: the tone-mapped image before sRGB encoding (what an sRGB target would
/// encode on store), alpha 1. **Blocking** (waits for the GPU): for headless runs and tests only.
///
/// Panics when `renderer` was made for a format [`read_texture_rgba_f32`] cannot read (a programming
/// error).
pub fn render_to_image_hdr(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    camera: &OrbitCamera,
    particles: Option<ParticleSource<'_>>,
    settings: &RenderSettings,
    size: (u32, u32),
) -> image::Rgba32FImage {
    let target = render_offscreen(ctx, renderer, camera, particles, settings, size);
    read_texture_rgba_f32(ctx, &target.color)
}

/// One frame into a new off-screen target of the renderer's colour format, submitted.
fn render_offscreen(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    camera: &OrbitCamera,
    particles: Option<ParticleSource<'_>>,
    settings: &RenderSettings,
    size: (u32, u32),
) -> Offscreen {
    let target = Offscreen::with_format(ctx, size, renderer.color_format());
    let mut profiler = Profiler::new(&ctx.device);
    let mut encoder =
        ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("render to image") });
    renderer.encode(ctx, &mut encoder, &profiler, &target, camera, particles, settings);
    profiler.resolve(&mut encoder);
    ctx.queue.submit([encoder.finish()]);
    profiler.end_frame(&ctx.queue);
    target
}
