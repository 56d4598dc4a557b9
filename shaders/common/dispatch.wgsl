// Particle kernels are dispatched as rows of at most 65 535 workgroups along x, continued along y past
// that (src/gpu/mod.rs `dispatch_size`): 8.4 M particles at 128 threads do not fit one dimension.
// The particle index of an invocation in a workgroup of `size` threads (x only):
fn flat_index(gid: vec3<u32>, nwg: vec3<u32>, size: u32) -> u32 {
    return gid.x + gid.y * nwg.x * size;
}
