// Neighbour grid by counting sort (Green 2010, "Particle simulation using CUDA"; Hoetzlein 2014):
// `count` atomically inserts each particle into its cell (the returned value is its slot in the cell),
// an exclusive prefix sum over the counts (scan.wgsl) gives each cell's start, and `scatter` writes
// every particle to cell_start[cell] + slot, so each cell's particles are contiguous.
#import "sim/common.wgsl"

@group(0) @binding(6) var<storage, read_write> cell_start: array<atomic<u32>>;

fn cell_start_at(i: u32) -> u32 {
    return atomicLoad(&cell_start[i]);
}

@compute @workgroup_size(WG)
fn count(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.num_particles) {
        return;
    }
    let p = pos[i];
    var c = params.num_cells;
    if (p.w >= 0.0) {
        c = cell_index(cell_coord(p.xyz));
    }
    let slot = atomicAdd(&cell_start[c], 1u);
    cell_slot[i] = vec2<u32>(c, slot);
}

@compute @workgroup_size(WG)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.num_particles) {
        return;
    }
    let cs = cell_slot[i];
    let dst = atomicLoad(&cell_start[cs.x]) + cs.y;
    spos[dst] = pos[i];
    svel[dst] = vel[i];
}
