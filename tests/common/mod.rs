//! Helpers shared by the GPU integration tests.
#![allow(dead_code)]

use waterview::gpu::GpuContext;

/// The headless GPU context. A machine with no adapter FAILS here with a message naming the fix
/// (install Mesa's software Vulkan); GPU tests never pass by skipping.
pub fn gpu() -> GpuContext {
    match GpuContext::headless() {
        Ok(ctx) => ctx,
        Err(e) => panic!("GPU test needs a GPU adapter: {e}"),
    }
}
