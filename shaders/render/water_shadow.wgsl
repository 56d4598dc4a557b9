// "water shadow": the water's ellipsoids (render/ellipsoid.wgsl, from the anisotropy pass) splatted into
// the light-space map seen from the sun (render/water_light.wgsl), the sun's counterpart of the splat
// pass's thickness (splat.wgsl; ray casting after Sigg et al. 2006). Each texel a splat may cover casts the
// sun's ray (direction -sun_dir, orthographic) from the sunward tangent plane of the ellipsoid's bounding
// sphere through the ellipsoid; a hit adds its path length (m) to the texel and keeps the light-space depth
// where it enters if it is the smallest (the water's sunward surface). Two ways to visit the texels, as
// the camera's splats (SplatMethod in src/render/splat.rs):
//   raster (vs_main, fs_main): one instanced quad per ellipsoid on that tangent plane (the radius wide);
//     r = path (One + One blending: summed), a = entry depth (Min blending). Misses are discarded.
//   compute (cs_shadow, then fs_resolve): the workgroup's boxes shared out over its threads
//     (render/splat_boxes.wgsl, point-cloud rasterisation in compute after Schuetz, Kerbl & Wimmer 2021);
//     per texel three u32s: the path in fixed point summed by atomicAdd (low word), its carries (high
//     word: deep water cannot overflow), and the entry depth as an order-preserving key kept by
//     atomicMax of its complement (0 = no water); a full-screen pass writes them into the map.
#import "render/ellipsoid.wgsl"
#import "render/water_light.wgsl"
#import "render/splat_boxes.wgsl"

// Rust twin: WaterShadowUniform in src/render/water_shadow.rs (16 bytes).
struct WaterShadow {
    // Texels along each side of the map.
    size: u32,
    // Path fixed point: units per metre.
    fixed_scale: f32,
    // Ellipsoids to splat.
    count: u32,
    _pad: u32,
}

// Light-space depth (m) of a map texel no water covers (NO_WATER_DEPTH in src/render/water_shadow.rs).
const NO_WATER_DEPTH: f32 = 60000.0;

@group(1) @binding(0) var<uniform> shadow: WaterShadow;
#split_array 1 1 read ellipsoid_centres vec4<f32>
#split_array 1 4 read ellipsoid_gs vec4<u32>
// Compute path: per texel i of n = size²: [i] the path's low word, [n + i] its high word, [2n + i] the
// complement of the entry depth's key (`depth_key`; 0 = no water).
@group(1) @binding(3) var<storage, read_write> texel_bits: array<atomic<u32>>;

// ---- raster path ----

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) index: u32,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) i: u32) -> VsOut {
    var out: VsOut;
    out.index = i;
    let centre = ellipsoid_centres_load(i);
    let r = centre.w;
    if !(r > 0.0 && r < 1.0e30) {
        out.clip = vec4<f32>(0.0, 0.0, -1.0, 1.0); // not drawn: outside the clip volume
        return out;
    }
    var corners = array<vec2<f32>, 6>(
        vec2<f32>(-1.0, -1.0), vec2<f32>(1.0, -1.0), vec2<f32>(1.0, 1.0),
        vec2<f32>(-1.0, -1.0), vec2<f32>(1.0, 1.0), vec2<f32>(-1.0, 1.0),
    );
    let k = corners[vi] * r * 1.02;
    let world = centre.xyz + water_light.sun_dir * r + water_light.right * k.x + water_light.up * k.y;
    let c = water_light.light_from_world * vec4<f32>(world, 1.0);
    out.clip = vec4<f32>(c.xy, 0.5, 1.0);
    out.world = world;
    return out;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let e = Ellipsoid(ellipsoid_centres_load(in.index), ellipsoid_gs_load(in.index));
    let t = ray_ellipsoid_from(e, in.world, -water_light.sun_dir);
    if t.y <= t.x {
        discard;
    }
    return vec4<f32>(t.y - t.x, 0.0, 0.0, water_light_depth(in.world) + t.x);
}

// ---- compute path ----

// Light clip-space units per metre along the light's x and y axes (rows 0 and 1 of light_from_world are
// the axes scaled by 2 / width and 2 / height).
fn clip_per_metre() -> vec2<f32> {
    let m = water_light.light_from_world;
    return vec2<f32>(length(vec3<f32>(m[0].x, m[1].x, m[2].x)), length(vec3<f32>(m[0].y, m[1].y, m[2].y)));
}

// Texels that may see the ellipsoid of `centre` (xyz, w = bounding radius): the map box of its bounding
// sphere, clipped to the map; empty for an ellipsoid not drawn.
fn texel_box(centre: vec4<f32>) -> vec4<i32> {
    let r = centre.w;
    if !(r > 0.0 && r < 1.0e30) {
        return vec4<i32>(0);
    }
    let c = (water_light.light_from_world * vec4<f32>(centre.xyz, 1.0)).xy;
    let uv = vec2<f32>(0.5 + 0.5 * c.x, 0.5 - 0.5 * c.y);
    let half = 0.5 * r * 1.02 * clip_per_metre();
    let size = f32(shadow.size);
    let n = vec2<i32>(i32(shadow.size));
    let a = clamp(vec2<i32>(floor((uv - half) * size)), vec2<i32>(0), n);
    let b = clamp(vec2<i32>(ceil((uv + half) * size)), a, n);
    return vec4<i32>(a, b);
}

// An order-preserving u32 key of a finite float (a < b <=> key(a) < key(b)), never 0xffffffff.
fn depth_key(d: f32) -> u32 {
    let bits = bitcast<u32>(d);
    return select(bits | 0x80000000u, ~bits, (bits & 0x80000000u) != 0u);
}

fn depth_from_key(key: u32) -> f32 {
    return bitcast<f32>(select(~key, key & 0x7fffffffu, (key & 0x80000000u) != 0u));
}

// Casts the sun's ray of texel `px` through ellipsoid `e` (bounding radius r, light clip position `c` of
// its centre) and adds the hit into the texel's words.
fn splat_texel(e: Ellipsoid, c: vec2<f32>, px: vec2<i32>) {
    let size = f32(shadow.size);
    let uv = (vec2<f32>(px) + 0.5) / size;
    let offset = (vec2<f32>(2.0 * uv.x - 1.0, 1.0 - 2.0 * uv.y) - c) / clip_per_metre();
    let r = e.centre.w;
    // On the sunward tangent plane of the bounding sphere (a hair beyond it for G's 16-bit rounding).
    let origin = e.centre.xyz + water_light.sun_dir * (r * 1.01) + water_light.right * offset.x
        + water_light.up * offset.y;
    let t = ray_ellipsoid_from(e, origin, -water_light.sun_dir);
    if t.y <= t.x {
        return;
    }
    let n = shadow.size * shadow.size;
    let i = u32(px.y) * shadow.size + u32(px.x);
    let v = u32(min((t.y - t.x) * shadow.fixed_scale + 0.5, 4.0e9));
    let old = atomicAdd(&texel_bits[i], v);
    if old > 0xffffffffu - v {
        atomicAdd(&texel_bits[n + i], 1u); // the low word wrapped: carry
    }
    atomicMax(&texel_bits[2u * n + i], ~depth_key(water_light_depth(origin) + t.x));
}

@compute @workgroup_size(SPLAT_WG)
fn cs_shadow(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let first = splat_workgroup(wg, nwg) * SPLAT_WG;
    var b = vec4<i32>(0);
    if first + lid < shadow.count {
        b = texel_box(ellipsoid_centres_load(first + lid));
    }
    let total = share_boxes(lid, b);
    for (var k = lid; k < total; k += SPLAT_WG) {
        let hit = box_pixel(k);
        let i = first + u32(hit.x);
        let e = Ellipsoid(ellipsoid_centres_load(i), ellipsoid_gs_load(i));
        let c = (water_light.light_from_world * vec4<f32>(e.centre.xyz, 1.0)).xy;
        splat_texel(e, c, hit.yz);
    }
}

// The map texel under `frag` from its words: r = summed path (m), a = entry depth (m), in half-float range.
@fragment
fn fs_resolve(@builtin(position) frag: vec4<f32>) -> @location(0) vec4<f32> {
    let n = shadow.size * shadow.size;
    let p = vec2<u32>(frag.xy);
    let i = p.y * shadow.size + p.x;
    let lo = atomicLoad(&texel_bits[i]);
    let hi = atomicLoad(&texel_bits[n + i]);
    let key = atomicLoad(&texel_bits[2u * n + i]);
    let path = f32(hi) * (4294967296.0 / shadow.fixed_scale) + f32(lo) / shadow.fixed_scale;
    var depth = NO_WATER_DEPTH;
    if key != 0u {
        depth = clamp(depth_from_key(~key), -NO_WATER_DEPTH, NO_WATER_DEPTH);
    }
    return vec4<f32>(min(path, NO_WATER_DEPTH), 0.0, 0.0, depth);
}
