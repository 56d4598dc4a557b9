// Halo exchange of a decomposed simulation's ranks (Rust: src/sim/halo.rs; Werner 2015's slabs, see
// src/cluster): `gather` copies the velocities (svel, v*) of the particles a neighbour holds as ghosts
// into `values` (read back and sent), and `scatter` writes the values a neighbour sent into this rank's
// ghosts, once per solve of a host-driven DFSPH step; within a solve's iterations `gather_kappa` and
// `scatter_kappa` move only kappa / rho. The host names particles by their slot as written before the
// step (it wrote them there); the grid build's slot map (the ids' last third, grid.wgsl's `scatter_ids`)
// gives their sorted slot, so nothing is read back to find them. `gather_density` and `scatter_density` move (density, pressure)
// (rho_p) the same way for PCISPH's iterations.
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
// The values, packed per slot as the host reads them back: 8 floats (svel, v*), 2 (rho_p) or 1 (kappa/rho).
@group(1) @binding(1) var<storage, read_write> values: array<f32>;

fn put4(at: u32, v: vec4<f32>) {
    values[at] = v.x;
    values[at + 1u] = v.y;
    values[at + 2u] = v.z;
    values[at + 3u] = v.w;
}

fn get4(at: u32) -> vec4<f32> {
    return vec4<f32>(values[at], values[at + 1u], values[at + 2u], values[at + 3u]);
}

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    let i = sorted_slot(k);
    put4(8u * k, svel_load(i));
    put4(8u * k + 4u, vstar_load(i));
}

@compute @workgroup_size(64)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    let i = sorted_slot(k);
    svel_store(i, get4(8u * k));
    vstar_store(i, get4(8u * k + 4u));
}

@compute @workgroup_size(64)
fn gather_density(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    let rp = rho_p_load(sorted_slot(k));
    values[2u * k] = rp.x;
    values[2u * k + 1u] = rp.y;
}

@compute @workgroup_size(64)
fn scatter_density(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    rho_p_store(sorted_slot(k), vec2<f32>(values[2u * k], values[2u * k + 1u]));
}

// DFSPH's iterations: kappa_i / rho_i of the solve (accel.w, written by the source kernels), the one value
// of a ghost the next update reads that its rank cannot compute (see src/sim/ranked_step.rs).
@compute @workgroup_size(64)
fn gather_kappa(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    values[k] = accel_load(sorted_slot(k)).w;
}

@compute @workgroup_size(64)
fn scatter_kappa(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = flat_index(gid, nwg, 64u);
    if (k >= slots[0]) {
        return;
    }
    let i = sorted_slot(k);
    accel_store(i, vec4<f32>(accel_load(i).xyz, values[k]));
}
