// Static obstacles (Rust: src/render/obstacles.rs): their triangles, flat-shaded, drawn straight from a
// storage buffer of corners (position, face normal) by vertex index (no vertex buffers). Lit as the
// terrain is: Lambert sun (shadowed by the obstacles, common/obstacle_shadow.wgsl) plus the hemispheric
// sky ambient (common/camera.wgsl), with the terrain's
// exponential distance fog toward the horizon haze. Opaque, depth tested and written (reversed Z), drawn
// with the background so the water refracts them and hides what lies behind it.
#import "common/camera.wgsl"
#import "common/obstacle_shadow.wgsl"

// Rust twin: ObstacleCorner in src/render/obstacles.rs.
struct ObstacleCorner {
    position: vec4<f32>,  // world, metres; w = 1
    normal: vec4<f32>,    // the face's unit normal, w = 0
}

// Rust twin: ObstacleStyle in src/render/obstacles.rs.
struct ObstacleStyle {
    albedo: vec3<f32>,
    fog_density: f32,     // 1/m
}

@group(1) @binding(0) var<uniform> style: ObstacleStyle;
@group(1) @binding(1) var<storage, read> corners: array<ObstacleCorner>;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32) -> VsOut {
    let c = corners[vi];
    var out: VsOut;
    out.clip = camera.clip_from_world * vec4<f32>(c.position.xyz, 1.0);
    out.world = c.position.xyz;
    out.normal = c.normal.xyz;
    return out;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let n = normalize(in.normal);
    let ndl = max(dot(n, camera.sun_dir), 0.0) * obstacle_shadow(in.world, n);
    var col = style.albedo * (sun_radiance() * ndl + sky_ambient(n));
    let to_eye = camera.eye - in.world;
    let dist = length(to_eye);
    let fog = 1.0 - exp(-dist * style.fog_density);
    col = mix(col, fog_radiance(-to_eye / dist), fog);
    return output_color(col);
}
