// Particle kernels are dispatched as rows of at most 65 535 workgroups along x, continued along y past
// that (src/gpu/mod.rs `dispatch_size`): 8.4 M particles at 128 threads do not fit one dimension.
// The particle index of an invocation in a workgroup of `size` threads (x only):
fn flat_index(gid: vec3<u32>, nwg: vec3<u32>, size: u32) -> u32 {
    return gid.x + gid.y * nwg.x * size;
}

// Most workgroups along x of the indirect dispatches whose arguments a kernel writes (gpu::max_groups_x in
// src/gpu/mod.rs, whose dispatch_size `dispatch_args` mirrors; the pipeline sets it).
override MAX_GROUPS_X: u32 = 65535u;

// Indirect arguments (x, y, 1, 0) covering `groups` workgroups in rows of at most MAX_GROUPS_X.
fn dispatch_args(groups: u32) -> vec4<u32> {
    let x = max(min(groups, MAX_GROUPS_X), 1u);
    return vec4<u32>(x, (groups + x - 1u) / x, 1u, 0u);
}
