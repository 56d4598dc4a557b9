// The obstacles' sun shadow as its receivers read it (Rust: src/render/obstacle_shadow.rs): a depth map
// of the obstacles seen from the sun, orthographic over their bounding sphere (render/obstacle_shadow.wgsl
// draws it when the obstacles or the sun change). A receiver at world p with unit normal n is moved one
// and a half texels along n (normal-offset bias, against self-shadowing acne), projected into the map and
// compared with a 3 x 3 percentage-closer filter over the hardware's bilinear comparisons; outside the
// map, or with no obstacle, it is lit. Group 3 of the terrain, tank and obstacle pipelines.

// Rust twin: ObstacleShadowUniform in src/render/obstacle_shadow.rs (80 bytes).
struct ObstacleShadow {
    light_from_world: mat4x4<f32>,  // world -> light clip space (x, y in -1..1, depth in 0..1)
    texel: f32,                     // one map texel, metres
    enabled: f32,                   // 1: obstacles cast shadows, 0: none (everything lit)
    depth_bias: f32,                // subtracted from the receiver's depth, depth units
    _pad: f32,
}

@group(0) @binding(1) var<uniform> obstacle_shadow_light: ObstacleShadow;
@group(0) @binding(2) var obstacle_shadow_map: texture_depth_2d;
@group(0) @binding(3) var obstacle_shadow_sampler: sampler_comparison;

// Fraction of the sun that reaches world point `p` (unit normal `n`) past the obstacles, 0..1.
fn obstacle_shadow(p: vec3<f32>, n: vec3<f32>) -> f32 {
    let s = obstacle_shadow_light;
    if s.enabled < 0.5 {
        return 1.0;
    }
    let q = s.light_from_world * vec4<f32>(p + 1.5 * s.texel * n, 1.0);
    let uv = vec2<f32>(0.5 * q.x + 0.5, 0.5 - 0.5 * q.y);
    if any(uv < vec2<f32>(0.0)) || any(uv > vec2<f32>(1.0)) || q.z <= 0.0 {
        return 1.0;
    }
    // Past the far plane still behind whatever the map holds, but lit where it holds nothing (1.0).
    let depth = min(q.z - s.depth_bias, 0.999999);
    let step = 1.0 / vec2<f32>(textureDimensions(obstacle_shadow_map));
    var lit = 0.0;
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            let at = uv + vec2<f32>(f32(dx), f32(dy)) * step;
            lit += textureSampleCompareLevel(obstacle_shadow_map, obstacle_shadow_sampler, at, depth);
        }
    }
    return lit / 9.0;
}
