// Sunlight through the water (src/render/water_shadow.rs), for the surfaces it falls on (terrain.wgsl,
// tank.wgsl's ground) and for the pass that makes it (water_shadow.wgsl). The water's ellipsoids are
// splatted into a light-space map seen from the sun (orthographic over the scene's bounds): r = the sun
// ray's summed path through the water (m), a = the light-space depth of the water's sunward surface (m,
// the nearest, Min blend). A receiver at world point p behind that surface (from the sun) gets the sun's
// light attenuated by Beer-Lambert, exp(-absorption * path), with the composite's absorption colour;
// one in front of it (a slope lit before the sun's ray reaches water beyond it) gets it whole.

// Rust twin: WaterLightUniform in src/render/water_shadow.rs (128 bytes).
struct WaterLight {
    // World -> light clip space: x, y in -1..1 over the scene's bounds (z unused).
    light_from_world: mat4x4<f32>,
    sun_dir: vec3<f32>,    // unit, toward the sun
    top: f32,              // light-space depth 0: the bounds' largest dot(p, sun_dir), m
    absorption: vec3<f32>, // Beer-Lambert absorption per channel, 1/m
    margin: f32,           // m: a receiver at most this far in front of the water's sunward surface is under it
    right: vec3<f32>,      // unit light-space x axis in the world
    enabled: u32,          // 0: no water light (transmittance 1 everywhere)
    up: vec3<f32>,         // unit light-space y axis in the world
    _pad: f32,
}

@group(2) @binding(0) var<uniform> water_light: WaterLight;

// Light-space depth of world point p: metres from the bounds' sunward plane along the sun's ray.
fn water_light_depth(p: vec3<f32>) -> f32 {
    return water_light.top - dot(p, water_light.sun_dir);
}

// Texture coordinates of world point p in the light-space map (outside 0..1: off the map).
fn water_light_uv(p: vec3<f32>) -> vec2<f32> {
    let c = water_light.light_from_world * vec4<f32>(p, 1.0);
    return vec2<f32>(0.5 + 0.5 * c.x, 0.5 - 0.5 * c.y);
}
