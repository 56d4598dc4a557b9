// Halo exchange of a decomposed simulation's ranks (Rust: src/sim/halo.rs; Werner 2015's slabs, see
// src/cluster): within a host-driven DFSPH solve, `gather` copies the velocities (svel, v*) of the
// particles a neighbour holds as ghosts, by sorted slot, into `values` (read back and sent), and `scatter`
// writes the values a neighbour sent into this rank's ghosts' sorted slots, so every iteration's source
// sees the owners' fresh velocities. `gather_density` and `scatter_density` move (density, pressure)
// (rho_p) the same way for PCISPH's iterations (in the first of each slot's two values).
#import "sim/common.wgsl"
#import "sim/cells.wgsl"

// slots[0] = how many, then that many sorted slots.
@group(1) @binding(0) var<storage, read> slots: array<u32>;
// Two per slot: svel, v*.
@group(1) @binding(1) var<storage, read_write> values: array<vec4<f32>>;

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    let i = slots[k + 1u];
    values[2u * k] = svel[i];
    values[2u * k + 1u] = vstar[i];
}

@compute @workgroup_size(64)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    let i = slots[k + 1u];
    svel[i] = values[2u * k];
    vstar[i] = values[2u * k + 1u];
}

@compute @workgroup_size(64)
fn gather_density(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    values[2u * k] = vec4<f32>(rho_p[slots[k + 1u]], 0.0, 0.0);
    values[2u * k + 1u] = vec4<f32>(0.0);
}

@compute @workgroup_size(64)
fn scatter_density(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    rho_p[slots[k + 1u]] = values[2u * k].xy;
}
