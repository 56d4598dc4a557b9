// Empty-space skipping of the screen-space depth filters (van der Laan, Green & Sainz, I3D 2009, smooth
// only where there is fluid): `classify` marks the 16x16 screen tiles with fluid within one pixel (the
// curvature flow's 3x3 stencil; the narrow-range filter needs none, since it leaves pixels without fluid
// at 0), appends them to a list with an atomic counter, and writes 0 into both of the filters' ping-pong
// textures over every tile it does not list (the raw depth is 0 there), so those textures hold this
// frame's depth everywhere without a copy of the raw depth. `write_args` turns the count into indirect
// dispatch arguments: one workgroup per listed tile, in rows of at most MAX_GROUPS_X workgroups (over
// 65 535 tiles of 16x16 from about 5400x3000 pixels on).

#import "common/dispatch.wgsl"

// Rust twin: TilesUniform in src/render/fluid_tiles.rs (16 bytes).
struct Tiles {
    size: vec2<u32>,
    tiles_x: u32,
    _pad: u32,
}

// Edge of the square screen tiles, pixels (TILE_SIZE in src/render/targets.rs).
const TILE: u32 = 16u;

@group(1) @binding(0) var<uniform> params: Tiles;
@group(1) @binding(1) var raw_depth: texture_2d<f32>;
@group(1) @binding(2) var<storage, read_write> tile_list: array<u32>;
@group(1) @binding(3) var<storage, read_write> tile_counter: atomic<u32>;
@group(1) @binding(4) var<storage, read_write> tile_args: array<u32>;
@group(1) @binding(5) var<storage, read_write> tile_mask: array<u32>;
// The two ping-pong textures, zeroed over the tiles not listed.
@group(1) @binding(6) var zero_a: texture_storage_2d<r32float, write>;
@group(1) @binding(7) var zero_b: texture_storage_2d<r32float, write>;

fn z_at(p: vec2<i32>) -> f32 {
    let q = clamp(p, vec2<i32>(0), vec2<i32>(params.size) - 1);
    return textureLoad(raw_depth, q, 0).x;
}

var<workgroup> tile_has_fluid: atomic<u32>;

@compute @workgroup_size(16, 16)
fn classify(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    if all(lid.xy == vec2<u32>(0u)) {
        atomicStore(&tile_has_fluid, 0u);
    }
    workgroupBarrier();
    let p = vec2<i32>(wid.xy * TILE + lid.xy);
    if all(p < vec2<i32>(params.size)) {
        var any_fluid = false;
        for (var dy = -1; dy <= 1; dy++) {
            for (var dx = -1; dx <= 1; dx++) {
                any_fluid = any_fluid || z_at(p + vec2<i32>(dx, dy)) > 0.0;
            }
        }
        if any_fluid {
            atomicOr(&tile_has_fluid, 1u);
        }
    }
    workgroupBarrier();
    let flag = atomicLoad(&tile_has_fluid);
    if flag == 0u && all(p < vec2<i32>(params.size)) {
        textureStore(zero_a, p, vec4<f32>(0.0));
        textureStore(zero_b, p, vec4<f32>(0.0));
    }
    if all(lid.xy == vec2<u32>(0u)) {
        let tile = wid.y * params.tiles_x + wid.x;
        tile_mask[tile] = flag;
        if flag != 0u {
            tile_list[atomicAdd(&tile_counter, 1u)] = tile;
        }
    }
}

@compute @workgroup_size(1)
fn write_args() {
    let n = atomicLoad(&tile_counter);
    let args = dispatch_args(n);
    tile_args[0] = args.x;
    tile_args[1] = args.y;
    tile_args[2] = args.z;
    tile_args[3] = n;
}
