// Halo exchange of a decomposed simulation's ranks (Rust: src/sim/halo.rs; Werner 2015's slabs, see
// src/cluster): within a host-driven DFSPH solve, `gather` copies the velocities (svel, v*) of the
// particles a neighbour holds as ghosts into `values` (read back and sent), and `scatter` writes the
// values a neighbour sent into this rank's ghosts, so every iteration's source sees the owners' fresh
// velocities. The host names particles by their slot as written before the step (it wrote them there);
// the grid build's slot map (the ids' last third, grid.wgsl's `scatter_ids`) gives their sorted slot, so
// nothing is read back to find them. `gather_density` and `scatter_density` move (density, pressure)
// (rho_p) the same way for PCISPH's iterations (in the first of each slot's two values).
#import "sim/common.wgsl"
#import "sim/cells.wgsl"

// Particle ids; from 2 * num_particles on, the sorted slot of each slot as written (src/sim/ids.rs).
@group(0) @binding(7) var<storage, read> ids: array<u32>;
// slots[0] = how many, then that many slots as written before the step.
@group(1) @binding(0) var<storage, read> slots: array<u32>;

// The sorted slot of entry k.
fn sorted_slot(k: u32) -> u32 {
    return ids[2u * params.num_particles + slots[k + 1u]];
}
// Two per slot: svel, v*.
@group(1) @binding(1) var<storage, read_write> values: array<vec4<f32>>;

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    let i = sorted_slot(k);
    values[2u * k] = svel_load(i);
    values[2u * k + 1u] = vstar_load(i);
}

@compute @workgroup_size(64)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    let i = sorted_slot(k);
    svel_store(i, values[2u * k]);
    vstar_store(i, values[2u * k + 1u]);
}

@compute @workgroup_size(64)
fn gather_density(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    values[2u * k] = vec4<f32>(rho_p_load(sorted_slot(k)), 0.0, 0.0);
    values[2u * k + 1u] = vec4<f32>(0.0);
}

@compute @workgroup_size(64)
fn scatter_density(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    rho_p_store(sorted_slot(k), values[2u * k].xy);
}
