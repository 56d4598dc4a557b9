// Neighbour grid by counting sort (Green 2010, "Particle simulation using CUDA"; Hoetzlein 2014):
// `clear` zeroes the table, `count` atomically counts the particles of each cell, an exclusive prefix sum over the counts (gpu/scan.wgsl)
// gives each cell's start, and `scatter` claims a place for every particle with a second atomic add on its
// cell's start, so each cell's particles are contiguous (in arbitrary order within the cell, as the
// count's slots were). No per-particle (cell, slot) is stored: the scatter re-derives the cell from the
// position, and leaves cell_start[c] at the end of cell c (the layout every neighbour loop reads, see
// row_range in common.wgsl). The IDS variant (`scatter_ids`, src/sim/ids.rs) also carries each particle's
// id into the sorted order, for the ranks of a decomposed simulation (src/cluster).
#import "sim/common.wgsl"

@group(0) @binding(6) var<storage, read_write> cell_start: array<atomic<u32>>;
#split_array 0 4 read_write spos vec4<f32>

fn cell_start_at(i: u32) -> u32 {
    return atomicLoad(&cell_start[i]);
}

// Table cell of a particle: its grid cell, or the parking cell after the last one when inactive (w < 0).
fn table_cell(p: vec4<f32>) -> u32 {
    if (p.w >= 0.0) {
        return cell_index(cell_coord(p.xyz));
    }
    return params.num_cells;
}

// Zeroes the cell table (every cell, the parking cell and the total) before `count`.
@compute @workgroup_size(WG)
fn clear(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = flat_index(gid, nwg, WG);
    if (c < arrayLength(&cell_start)) {
        atomicStore(&cell_start[c], 0u);
    }
}

@compute @workgroup_size(WG)
fn count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= params.num_particles) {
        return;
    }
    atomicAdd(&cell_start[table_cell(pos_load(i))], 1u);
}

@compute @workgroup_size(WG)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= params.num_particles) {
        return;
    }
    let p = pos_load(i);
    let dst = atomicAdd(&cell_start[table_cell(p)], 1u);
    spos_store(dst, p);
    svel_store(dst, vel_load(i));
}

#ifdef IDS
// Particle ids (src/sim/ids.rs): the first num_particles entries in the order of `pos`, the next
// num_particles written here in the sorted order, the last num_particles the sorted slot of each slot of
// `pos` (the halo exchange's map from the slots the host knows to this step's sorted ones, halo.wgsl).
@group(0) @binding(7) var<storage, read_write> ids: array<u32>;

@compute @workgroup_size(WG)
fn scatter_ids(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= params.num_particles) {
        return;
    }
    let p = pos_load(i);
    let dst = atomicAdd(&cell_start[table_cell(p)], 1u);
    spos_store(dst, p);
    svel_store(dst, vel_load(i));
    ids[params.num_particles + dst] = ids[i];
    ids[2u * params.num_particles + i] = dst;
}
#endif
