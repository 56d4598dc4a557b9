// Narrow-range depth filter after Truong & Yuksel, "A narrow-range filter for screen-space fluid rendering"
// (Proc. ACM Comput. Graph. Interact. Tech. 1(1), 2018): a bilateral-like Gaussian of the fluid's linear
// view depth z (metres, the positive distance; 0 = no fluid) that only averages depths within a narrow range
// of the surface through the centre, applied separably (a horizontal then a vertical 1-D pass per
// iteration). Neighbours come in pairs (a, b) at -k and +k pixels around the centre z:
//   |(a + b) / 2 - z| <= range, both fluid       the pair is on the surface (a plane through the centre
//                                                 at any slope, up to `range` of curvature or noise):
//                                                 averaged as it is;
//   otherwise the pair's outlier (a side without fluid, else the one farther from z) is
//     in front of the plane through z and its partner (2 z - partner)
//                                                 another layer (a splash before the pool): the pair is
//                                                 ignored (both sides, so the filter stays symmetric);
//     behind it, or without fluid                 across a silhouette: clamped, counted as the mirror of
//                                                 its partner through the centre, clamp_offset behind, so
//                                                 the pair adds 2 z + clamp_offset: silhouettes stay where
//                                                 they are and round off slightly instead of being dragged
//                                                 to the layer behind (or flattened, as ignoring would).
// Measuring the range on the pair's mean (against the plane through the centre) rather than on each
// neighbour against the centre's depth is this project's adaptation: with the latter a surface seen at a
// grazing angle, whose depth changes by more than the range within the radius, was hardly filtered at all
// along its slope (docs/rendering.md has the figures).
// z' = (z + sum_k w_k pair_k) / (1 + 2 sum_k w_k) over the pairs kept, w_k = exp(-k^2 / (2 s^2)) with s half
// the radius. The radius is a world length projected at the pixel's depth, radius_scale / z pixels, at
// most max_radius. Pixels without fluid stay 0, so the filter needs no dilation of the tile list.
// Empty-space skipping as the curvature flow (common/tiles.wgsl): `*_tiles` run one workgroup per listed
// tile, dispatched indirectly; `*_full` run the same per-pixel update over the whole screen.

#import "common/tiles.wgsl"

// Rust twin: NarrowRangeUniform in src/render/narrow_range.rs (32 bytes).
struct NarrowRange {
    size: vec2<u32>,
    tiles_x: u32,
    max_radius: u32,
    radius_scale: f32,
    range: f32,
    clamp_offset: f32,
    _pad: u32,
}

@group(1) @binding(0) var<uniform> nr: NarrowRange;
@group(1) @binding(1) var src: texture_2d<f32>;
@group(1) @binding(2) var dst: texture_storage_2d<r32float, write>;
// Bindings 3 and 4: the tile list (common/tiles.wgsl).

fn z_at(p: vec2<i32>) -> f32 {
    let q = clamp(p, vec2<i32>(0), vec2<i32>(nr.size) - 1);
    return textureLoad(src, q, 0).x;
}

// One 1-D pass at pixel p along `dir` ((1, 0) or (0, 1)).
fn filter_pixel(p: vec2<i32>, dir: vec2<i32>) {
    if any(p >= vec2<i32>(nr.size)) {
        return;
    }
    let z = z_at(p);
    if z <= 0.0 {
        textureStore(dst, p, vec4<f32>(z, 0.0, 0.0, 0.0));
        return;
    }
    let r = min(nr.radius_scale / z, f32(nr.max_radius));
    let n = i32(ceil(r));
    let s = max(0.5 * r, 0.5);
    let falloff = -0.5 / (s * s);
    var sum = z;
    var weight = 1.0;
    for (var k = 1; k <= n; k++) {
        let a = z_at(p - k * dir);
        let b = z_at(p + k * dir);
        var pair = a + b;
        if !(a > 0.0 && b > 0.0 && abs(pair - 2.0 * z) <= 2.0 * nr.range) {
            let a_out = a <= 0.0 || (b > 0.0 && abs(a - z) > abs(b - z));
            let outlier = select(b, a, a_out);
            let partner = select(a, b, a_out);
            if outlier > 0.0 && outlier < 2.0 * z - partner {
                continue;
            }
            pair = 2.0 * z + nr.clamp_offset;
        }
        let w = exp(falloff * f32(k * k));
        sum += w * pair;
        weight += 2.0 * w;
    }
    textureStore(dst, p, vec4<f32>(sum / weight, 0.0, 0.0, 0.0));
}

@compute @workgroup_size(16, 16)
fn filter_h_tiles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let p = listed_pixel(wid, nwg, lid, nr.tiles_x);
    if p.x >= 0 {
        filter_pixel(p, vec2<i32>(1, 0));
    }
}

@compute @workgroup_size(16, 16)
fn filter_v_tiles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let p = listed_pixel(wid, nwg, lid, nr.tiles_x);
    if p.x >= 0 {
        filter_pixel(p, vec2<i32>(0, 1));
    }
}

@compute @workgroup_size(16, 16)
fn filter_h_full(@builtin(global_invocation_id) gid: vec3<u32>) {
    filter_pixel(vec2<i32>(gid.xy), vec2<i32>(1, 0));
}

@compute @workgroup_size(16, 16)
fn filter_v_full(@builtin(global_invocation_id) gid: vec3<u32>) {
    filter_pixel(vec2<i32>(gid.xy), vec2<i32>(0, 1));
}
