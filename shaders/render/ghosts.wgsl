// Ghost cull for sort-last rendering of a decomposed simulation (src/cluster; Molnar et al. 1994,
// "A sorting classification of parallel rendering", sort-last): a rank holds its own particles and ghost
// copies of its neighbours' within the halo. The anisotropy uses them all as neighbours (so the
// ellipsoids at a slab border are those of the whole fluid), but only a particle's owner may splat it, or
// the composited thickness would count it twice. This kernel marks the ellipsoid of every ghost as not
// drawn (bounding radius 0, which the splats cull), reading the simulation's particle ids (bit `ghost_bit`
// set = ghost) in the order of the positions the ellipsoids were computed from.

#import "common/dispatch.wgsl"

// Rust twin: GhostUniform in src/render/ghosts.rs (16 bytes).
struct Ghosts {
    // Ellipsoids (= particles) to look at.
    count: u32,
    // Index into `ids` of particle 0's id.
    offset: u32,
    // The id bit of a ghost.
    ghost_bit: u32,
    _pad: u32,
}

@group(1) @binding(0) var<uniform> ghosts: Ghosts;
@group(1) @binding(1) var<storage, read> ids: array<u32>;
// The anisotropy's ellipsoid centres (xyz m, w = bounding radius m; 0 = not drawn).
@group(1) @binding(2) var<storage, read_write> centres: array<vec4<f32>>;

@compute @workgroup_size(128)
fn cull(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, 128u);
    if i >= ghosts.count || ghosts.offset + i >= arrayLength(&ids) || i >= arrayLength(&centres) {
        return;
    }
    if (ids[ghosts.offset + i] & ghosts.ghost_bit) != 0u {
        centres[i].w = 0.0;
    }
}
