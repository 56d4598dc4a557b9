// Ellipsoid splats for screen-space fluid rendering (van der Laan, Green & Sainz, I3D 2009; ellipsoids
// after Yu & Turk 2013, ray casting after Sigg et al. 2006 "GPU-based ray-casting of quadratic surfaces").
// One instanced quad per particle, read from the anisotropy pass's ellipsoids: the quad lies on the front
// tangent plane of the ellipsoid's bounding sphere, sized to its tangent cone, so it covers the
// ellipsoid's whole screen footprint. The fragment shader moves the pixel's view ray into the ellipsoid's
// unit-sphere space (x -> G (x - c)), solves the ray-sphere quadratic there and discards misses.
//   fs_depth:     nearest hit; frag_depth (reversed-Z) for the depth test, linear view depth (m) as colour.
//   fs_thickness: the ray's path length through the ellipsoid (m), summed additively, clipped at the terrain.
// Both test against the scene's depth (terrain) themselves, by textureLoad, so the thickness target may
// be at half resolution.
#import "common/camera.wgsl"

// Rust twin: SplatUniform in src/render/splat.rs (16 bytes).
struct Splat {
    // Scene-depth pixels per target pixel (1 full resolution, 2 half).
    depth_scale: f32,
    _pad0: f32,
    _pad1: f32,
    _pad2: f32,
}

// Rust twin: Ellipsoid in src/render/anisotropy.rs (64 bytes).
struct Ellipsoid {
    centre: vec4<f32>,
    g0: vec4<f32>,
    g1: vec4<f32>,
    g2: vec4<f32>,
}

@group(1) @binding(0) var<uniform> splat: Splat;
@group(1) @binding(1) var<storage, read> ellipsoids: array<Ellipsoid>;
@group(1) @binding(2) var scene_depth: texture_depth_2d;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) index: u32,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) i: u32) -> VsOut {
    var out: VsOut;
    out.index = i;
    let e = ellipsoids[i];
    let c = e.centre.xyz;
    let r = e.centre.w;
    let to_eye = camera.eye - c;
    let d = length(to_eye);
    // Culled: eye inside the bounding sphere, or a non-finite ellipsoid.
    if !(d > r * 1.001) || !(d < 3.0e38) || !(r > 0.0) {
        out.clip = vec4<f32>(0.0, 0.0, -1.0, 1.0);
        return out;
    }
    let world = sphere_billboard_corner(c, r, d, vi);
    out.clip = camera.clip_from_world * vec4<f32>(world, 1.0);
    out.world = world;
    return out;
}

struct Hit {
    // Entry and exit distances along the unit ray from the eye, metres.
    t0: f32,
    t1: f32,
    dir: vec3<f32>,
}

// Entry/exit of the pixel's ray through ellipsoid i; discards on a miss.
fn intersect(in: VsOut) -> Hit {
    let e = ellipsoids[in.index];
    let g = mat3x3<f32>(e.g0.xyz, e.g1.xyz, e.g2.xyz); // symmetric: columns = rows
    let dir = normalize(in.world - camera.eye);
    let o = g * (camera.eye - e.centre.xyz);
    let d = g * dir;
    let a = dot(d, d);
    let b = dot(o, d);
    // Robust form (Haines et al., Ray Tracing Gems ch. 7): the offset perpendicular to the ray.
    let perp = o - (b / a) * d;
    let disc = a * (1.0 - dot(perp, perp));
    if disc < 0.0 {
        discard;
    }
    let sq = sqrt(disc);
    let t0 = (-b - sq) / a;
    let t1 = (-b + sq) / a;
    if t1 <= 0.0 {
        discard;
    }
    return Hit(max(t0, 0.0), t1, dir);
}

fn forward() -> vec3<f32> {
    let m = camera.view_from_world;
    return -vec3<f32>(m[0][2], m[1][2], m[2][2]);
}

// Reversed-Z depth of the scene (terrain) under this fragment.
fn terrain_depth(frag: vec2<f32>) -> f32 {
    let size = vec2<i32>(textureDimensions(scene_depth));
    let p = clamp(vec2<i32>(frag * splat.depth_scale), vec2<i32>(0), size - 1);
    return textureLoad(scene_depth, p, 0);
}

// Linear view depth (m) of a reversed-Z depth value.
fn linear_depth(depth: f32) -> f32 {
    return camera.near * camera.far / (depth * (camera.far - camera.near) + camera.near);
}

struct DepthOut {
    @location(0) view_depth: f32,
    @builtin(frag_depth) depth: f32,
}

@fragment
fn fs_depth(in: VsOut) -> DepthOut {
    let hit = intersect(in);
    let p = camera.eye + hit.t0 * hit.dir;
    let clip = camera.clip_from_world * vec4<f32>(p, 1.0);
    let depth = clip.z / clip.w;
    if depth < terrain_depth(in.clip.xy) {
        discard; // behind the terrain
    }
    var out: DepthOut;
    out.view_depth = hit.t0 * dot(hit.dir, forward());
    out.depth = depth;
    return out;
}

@fragment
fn fs_thickness(in: VsOut) -> @location(0) vec4<f32> {
    let hit = intersect(in);
    let cos_view = max(dot(hit.dir, forward()), 1e-4);
    let t_terrain = linear_depth(terrain_depth(in.clip.xy)) / cos_view;
    let path = min(hit.t1, t_terrain) - hit.t0;
    if path <= 0.0 {
        discard;
    }
    return vec4<f32>(path, 0.0, 0.0, 0.0);
}
