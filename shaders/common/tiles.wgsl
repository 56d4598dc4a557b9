// The list of screen tiles holding fluid (src/render/fluid_tiles.rs, shaders/render/fluid_tiles.wgsl), as the
// depth filters read it: one workgroup of TILE x TILE threads per listed tile, dispatched indirectly in rows
// of at most MAX_GROUPS_X workgroups (flat_index in common/dispatch.wgsl). Bindings 3 and 4 of group 1 in
// every filter that imports this file.
#import "common/dispatch.wgsl"

// Edge of the square screen tiles, pixels (TILE_SIZE in src/render/targets.rs).
const TILE: u32 = 16u;

// Indices of the listed tiles (row-major tile index), the first `listed[3]` valid.
@group(1) @binding(3) var<storage, read> tiles: array<u32>;
// The tiles' indirect arguments (x, y, 1, tile count), read-only beside their use as indirect arguments.
@group(1) @binding(4) var<storage, read> listed: array<u32>;

// The pixel of invocation `lid` in workgroup `wid` (of `nwg`) over the listed tiles of a screen `tiles_x`
// tiles across, or (-1, -1) past the list's end.
fn listed_pixel(wid: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, tiles_x: u32) -> vec2<i32> {
    let k = flat_index(wid, nwg, 1u);
    if k >= listed[3] {
        return vec2<i32>(-1);
    }
    let tile = tiles[k];
    let origin = vec2<u32>(tile % tiles_x, tile / tiles_x) * TILE;
    return vec2<i32>(origin + lid.xy);
}
