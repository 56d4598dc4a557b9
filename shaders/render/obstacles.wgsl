// Static obstacles and floating bodies (Rust: src/render/obstacles.rs): their triangles, flat-shaded,
// drawn straight from a storage buffer of corners (position, face normal) by vertex index (no vertex
// buffers). Lit as the terrain they stand on is, by the same function (render/surface_light.wgsl):
// Lambert sun shadowed by the obstacles (common/obstacle_shadow.wgsl) and by the terrain (the
// heightfield's soft shadow marched toward the sun from the point, render/heightfield.wgsl, as
// terrain_shadow.wgsl does per height sample), the hemispheric sky ambient, and the distance fog of the
// ground they stand on (the terrain's, or a box scene's ground's) toward the sky cubemap; over a terrain
// with its bounce light on, the light its ground sends up on the faces that see it (terrain_bounce.wgsl).
// Opaque, depth tested and written (reversed Z), drawn with the background so
// the water refracts them and hides what lies behind it. fs_water_shadow, over the obstacles already drawn
// (equal depth), multiplies the frame by the ratio of their colour with the sun's light through the water
// (render/water_receiver.wgsl) to the colour without, as terrain.wgsl's does for the ground.
// Bind group 1: the heightfield (bindings 0 and 1, render/heightfield.wgsl), the style, the corners and the
// ground's radiosity.
#import "render/surface_light.wgsl"
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
    terrain_shadow: f32,  // 1: the terrain shadows the obstacles, 0: not (the terrain is not drawn)
    _pad0: f32,
    _pad1: f32,
    _pad2: f32,
}

@group(1) @binding(2) var<uniform> style: ObstacleStyle;
@group(1) @binding(3) var<storage, read> corners: array<ObstacleCorner>;
// The terrain's radiosity on its bounce-light grid (terrain_bounce.wgsl; rgb): the light its ground sends up.
@group(1) @binding(4) var<storage, read> ground_radiosity: array<vec4<f32>>;

// The ground's radiosity below world (x, z), bilinear over the bounce grid.
fn ground_radiosity_at(p: vec2<f32>) -> vec3<f32> {
    let c = bounce_corner((p - terrain.origin) / terrain.spacing);
    let a = mix(ground_radiosity[c.base].rgb, ground_radiosity[c.base + c.step.x].rgb, c.f.x);
    let b = mix(ground_radiosity[c.base + c.step.y].rgb, ground_radiosity[c.base + c.step.y + c.step.x].rgb, c.f.x);
    return mix(a, b, c.f.y);
}

struct VsOut {
    // Invariant: "obstacles water shadow" draws the triangles again over the same depths (depth test equal).
    @builtin(position) @invariant clip: vec4<f32>,
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

// The obstacle's light at one pixel (the sun's before the water).
fn obstacle_light(in: VsOut) -> SurfaceLight {
    let n = normalize(in.normal);
    var sun = obstacle_shadow(in.world, n);
    if style.terrain_shadow > 0.5 {
        sun *= sun_shadow(in.world, n, camera.sun_dir);
    }
    var l = surface_light(in.world, style.albedo, n, sun, 1.0, style.fog_density);
    if terrain.bounce != 0u && style.terrain_shadow > 0.5 {
        // The ground's light on the faces that see it: its radiosity below times the view factor of a
        // ground plane from a face of normal n, (1 - n.y) / 2 (half for a wall, none for a roof).
        l.sky += ground_radiosity_at(in.world.xz) * (0.5 - 0.5 * n.y);
    }
    return l;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    return output_color(surface_color(obstacle_light(in), vec3<f32>(1.0)));
}

// "obstacles water shadow": `water_shadow_ratio` (render/surface_light.wgsl), multiplied into the frame by
// the pipeline; pixels the water's light does not reach are discarded.
@fragment
fn fs_water_shadow(in: VsOut) -> @location(0) vec4<f32> {
    // Wholly under the water one margin past its surface: none on a wall above the water with water
    // behind it (render/water_receiver.wgsl).
    let water = water_transmittance_behind(in.world, water_light.margin);
    // The shading inside the branch (a discarded fragment goes on as a helper invocation).
    if any(water < vec3<f32>(0.999)) {
        return water_shadow_ratio(obstacle_light(in), water);
    }
    discard;
}
