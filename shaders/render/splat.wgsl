// Ellipsoid splats for screen-space fluid rendering (van der Laan, Green & Sainz, I3D 2009; ellipsoids
// after Yu & Turk 2013, ray casting after Sigg et al. 2006 "GPU-based ray-casting of quadratic surfaces").
// Every pixel a splat may cover casts its view ray into the ellipsoid's unit-sphere space
// (x -> G (x - c)) and solves the ray-sphere quadratic there; misses are dropped.
//   depth:     nearest hit's linear view depth (m), tested against the scene's depth (reversed-Z).
//   thickness: the ray's path length through the ellipsoid (m), summed, clipped at the terrain.
// Both test against the scene's depth (terrain) themselves, by textureLoad, so the thickness target may
// be at half resolution. Two ways to visit the pixels (SplatMethod in src/render/splat.rs):
//   raster (vs_main, fs_depth, fs_thickness): one instanced quad per particle on the front tangent plane
//     of the ellipsoid's bounding sphere, sized to its tangent cone; depth test + One/One blending.
//   compute (cs_depth, cs_thickness, then fs_resolve_*): a workgroup takes 64 particles, sums their
//     pixel boxes (prefix sum in workgroup memory) and spreads the pixels evenly over its threads; each
//     hit goes into a per-pixel u32 by atomicMax (depth, as the complement of the float's bits: nearer =
//     larger, 0 = none) or atomicAdd (thickness, fixed point); a full-screen pass converts them into the
//     targets. Point-cloud rasterisation in compute after Schuetz, Kerbl & Wimmer 2021. It keeps GPUs
//     whose rasteriser is a small part of the chip busy (the H100 runs pixel shaders on 2 of its TPCs).
#import "common/camera.wgsl"
#import "render/ellipsoid.wgsl"
#import "render/splat_boxes.wgsl"

// Rust twin: SplatUniform in src/render/splat.rs (32 bytes).
struct Splat {
    // Target size, pixels (the compute path's pixel boxes and buffer rows).
    size: vec2<u32>,
    // Scene-depth pixels per target pixel (1 full resolution, 2 half).
    depth_scale: f32,
    // Thickness fixed point: units per metre of path (compute path).
    fixed_scale: f32,
    // Ellipsoids to splat (compute path).
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(1) @binding(0) var<uniform> splat: Splat;
// The ellipsoids' halves (render/ellipsoid.wgsl): centres (culling, boxes, quads) and packed G (rays).
// Each split over bindings like the particles' arrays (src/gpu/split.rs; one binding up to 134 M).
#split_array 1 1 read ellipsoid_centres vec4<f32>
#split_array 1 4 read ellipsoid_gs vec4<u32>
@group(1) @binding(2) var scene_depth: texture_depth_2d;
// Compute path only: one u32 per target pixel (depth: complement of the float bits; thickness: fixed point).
@group(1) @binding(3) var<storage, read_write> pixel_bits: array<atomic<u32>>;

// Ellipsoid i, both halves.
fn ellipsoid_at(i: u32) -> Ellipsoid {
    return Ellipsoid(ellipsoid_centres_load(i), ellipsoid_gs_load(i));
}

// Whether the ellipsoid of `centre` (xyz, w = bounding radius) is drawn: the eye outside its bounding
// sphere and the ellipsoid finite.
fn visible(centre: vec4<f32>) -> bool {
    let d = length(camera.eye - centre.xyz);
    let r = centre.w;
    return d > r * 1.001 && d < 3.0e38 && r > 0.0;
}

// Entry and exit distances (t0 <= t1, metres) of the unit ray from the eye along `dir` through ellipsoid e;
// t1 <= 0 when the ray misses it or it lies behind the eye.
fn ray_ellipsoid(e: Ellipsoid, dir: vec3<f32>) -> vec2<f32> {
    return ray_ellipsoid_from(e, camera.eye, dir);
}

fn forward() -> vec3<f32> {
    let m = camera.view_from_world;
    return -vec3<f32>(m[0][2], m[1][2], m[2][2]);
}

// Reversed-Z depth of the scene (terrain) under the target pixel position `frag`.
fn terrain_depth(frag: vec2<f32>) -> f32 {
    let size = vec2<i32>(textureDimensions(scene_depth));
    let p = clamp(vec2<i32>(frag * splat.depth_scale), vec2<i32>(0), size - 1);
    return textureLoad(scene_depth, p, 0);
}

// Linear view depth (m) of a reversed-Z depth value.
fn linear_depth(depth: f32) -> f32 {
    return camera.near * camera.far / (depth * (camera.far - camera.near) + camera.near);
}

// The nearest hit of `dir` in front of the terrain at `frag`: (linear view depth in m, reversed-Z
// depth); (0, 0) when there is none.
fn hit_depth(e: Ellipsoid, dir: vec3<f32>, frag: vec2<f32>) -> vec2<f32> {
    let t = ray_ellipsoid(e, dir);
    if t.y <= 0.0 {
        return vec2<f32>(0.0);
    }
    let clip = camera.clip_from_world * vec4<f32>(camera.eye + t.x * dir, 1.0);
    let depth = clip.z / clip.w;
    if depth < terrain_depth(frag) {
        return vec2<f32>(0.0); // behind the terrain
    }
    return vec2<f32>(t.x * dot(dir, forward()), depth);
}

// Path length (m) of `dir` through the ellipsoid in front of the terrain at `frag` (<= 0: none).
fn hit_path(e: Ellipsoid, dir: vec3<f32>, frag: vec2<f32>) -> f32 {
    let t = ray_ellipsoid(e, dir);
    if t.y <= 0.0 {
        return 0.0;
    }
    let cos_view = max(dot(dir, forward()), 1e-4);
    let t_terrain = linear_depth(terrain_depth(frag)) / cos_view;
    return min(t.y, t_terrain) - t.x;
}

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
    if !visible(centre) {
        out.clip = vec4<f32>(0.0, 0.0, -1.0, 1.0);
        return out;
    }
    let c = centre.xyz;
    let world = sphere_billboard_corner(c, centre.w, length(camera.eye - c), vi);
    out.clip = camera.clip_from_world * vec4<f32>(world, 1.0);
    out.world = world;
    return out;
}

struct DepthOut {
    @location(0) view_depth: f32,
    @builtin(frag_depth) depth: f32,
}

@fragment
fn fs_depth(in: VsOut) -> DepthOut {
    let hit = hit_depth(ellipsoid_at(in.index), normalize(in.world - camera.eye), in.clip.xy);
    if hit.x <= 0.0 {
        discard;
    }
    var out: DepthOut;
    out.view_depth = hit.x;
    out.depth = hit.y; // reversed-Z, for the nearest-wins depth test
    return out;
}

@fragment
fn fs_thickness(in: VsOut) -> @location(0) vec4<f32> {
    let dir = normalize(in.world - camera.eye);
    let path = hit_path(ellipsoid_at(in.index), dir, in.clip.xy);
    if path <= 0.0 {
        discard;
    }
    return vec4<f32>(path, 0.0, 0.0, 0.0);
}

// ---- compute path ----

// Target pixels that may see the ellipsoid of `centre` (xyz, w = bounding radius): the screen box of its
// bounding sphere's tangent-plane quad, clipped to the target; empty when culled or when the quad reaches
// behind the near plane.
fn pixel_box(centre: vec4<f32>) -> vec4<i32> {
    if !visible(centre) {
        return vec4<i32>(0);
    }
    let c = centre.xyz;
    let d = length(camera.eye - c);
    let size = vec2<f32>(splat.size);
    var lo = vec2<f32>(3.0e38);
    var hi = vec2<f32>(-3.0e38);
    // The quad's four distinct corners (vertices 3 and 4 repeat 0 and 2).
    let corners = array<u32, 4>(0u, 1u, 2u, 5u);
    for (var k = 0u; k < 4u; k += 1u) {
        let clip = camera.clip_from_world * vec4<f32>(sphere_billboard_corner(c, centre.w, d, corners[k]), 1.0);
        if clip.w < camera.near {
            return vec4<i32>(0);
        }
        let ndc = clip.xy / clip.w;
        let px = vec2<f32>(0.5 + 0.5 * ndc.x, 0.5 - 0.5 * ndc.y) * size;
        lo = min(lo, px);
        hi = max(hi, px);
    }
    let a = clamp(vec2<i32>(floor(lo)), vec2<i32>(0), vec2<i32>(splat.size));
    let b = clamp(vec2<i32>(ceil(hi)), a, vec2<i32>(splat.size));
    return vec4<i32>(a, b);
}

// World-space unit ray from the eye through the centre of target pixel `px`.
fn pixel_ray(px: vec2<i32>) -> vec3<f32> {
    let uv = (vec2<f32>(px) + 0.5) / vec2<f32>(splat.size);
    let near = camera.world_from_clip * vec4<f32>(2.0 * uv.x - 1.0, 1.0 - 2.0 * uv.y, 1.0, 1.0);
    return normalize(near.xyz / near.w - camera.eye);
}

// Splats the workgroup's 64 particles (render/splat_boxes.wgsl): thread lid boxes particle wg * 64 + lid,
// then the threads walk the concatenated pixel boxes together.
fn splat_pixels(wg: u32, lid: u32, thickness: bool) {
    let first = wg * SPLAT_WG;
    var b = vec4<i32>(0);
    if first + lid < splat.count {
        b = pixel_box(ellipsoid_centres_load(first + lid));
    }
    let total = share_boxes(lid, b);
    for (var k = lid; k < total; k += SPLAT_WG) {
        let hit = box_pixel(k);
        let px = hit.yz;
        let e = ellipsoid_at(first + u32(hit.x));
        let dir = pixel_ray(px);
        let frag = vec2<f32>(px) + 0.5;
        let idx = u32(px.y) * splat.size.x + u32(px.x);
        if thickness {
            let path = hit_path(e, dir, frag);
            if path > 0.0 {
                atomicAdd(&pixel_bits[idx], u32(path * splat.fixed_scale + 0.5));
            }
        } else {
            let view_depth = hit_depth(e, dir, frag).x;
            if view_depth > 0.0 {
                atomicMax(&pixel_bits[idx], ~bitcast<u32>(view_depth));
            }
        }
    }
}

@compute @workgroup_size(SPLAT_WG)
fn cs_depth(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    splat_pixels(splat_workgroup(wg, nwg), lid, false);
}

@compute @workgroup_size(SPLAT_WG)
fn cs_thickness(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    splat_pixels(splat_workgroup(wg, nwg), lid, true);
}

fn pixel_value(frag: vec4<f32>) -> u32 {
    let p = vec2<u32>(frag.xy);
    return atomicLoad(&pixel_bits[p.y * splat.size.x + p.x]);
}

@fragment
fn fs_resolve_depth(@builtin(position) frag: vec4<f32>) -> @location(0) f32 {
    let v = pixel_value(frag);
    return select(bitcast<f32>(~v), 0.0, v == 0u);
}

@fragment
fn fs_resolve_thickness(@builtin(position) frag: vec4<f32>) -> @location(0) vec4<f32> {
    return vec4<f32>(f32(pixel_value(frag)) / splat.fixed_scale, 0.0, 0.0, 0.0);
}
