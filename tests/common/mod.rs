//! Helpers shared by the GPU integration tests.
#![allow(dead_code)]

use waterview::gpu::readback::read_buffer_blocking;
use waterview::gpu::{storage_buffer_init, GpuContext, Profiler};
use waterview::render::{AnisotropyPass, Ellipsoid, RenderSettings};

/// The headless GPU context. A machine with no adapter FAILS here with a message naming the fix
/// (install Mesa's software Vulkan); GPU tests never pass by skipping.
pub fn gpu() -> GpuContext {
    match GpuContext::headless() {
        Ok(ctx) => ctx,
        Err(e) => panic!("GPU test needs a GPU adapter: {e}"),
    }
}

/// Runs the anisotropy pass over `positions` (xyz metres, w < 0 parked; spacing `dx`) with the default
/// settings, blocking; returns one ellipsoid per position.
pub fn anisotropy_of(ctx: &GpuContext, positions: &[glam::Vec4], dx: f32) -> Vec<Ellipsoid> {
    let buffer = storage_buffer_init(&ctx.device, "test positions", bytemuck::cast_slice(positions));
    let mut settings = RenderSettings::default();
    settings.fluid.dx = dx;
    let mut pass = AnisotropyPass::new(ctx);
    let profiler = Profiler::new(&ctx.device);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    pass.encode(ctx, &mut enc, &profiler, &buffer, positions.len() as u32, settings.anisotropy_uniform(), None);
    ctx.queue.submit([enc.finish()]);
    let bytes = read_buffer_blocking(ctx, pass.ellipsoids().expect("ellipsoids made"));
    bytemuck::cast_slice::<u8, Ellipsoid>(&bytes)[..positions.len()].to_vec()
}
