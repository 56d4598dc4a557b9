// "obstacle shadow" (Rust: src/render/obstacle_shadow.rs): the obstacles' triangles drawn depth-only
// into the sun's shadow map, orthographic (common/obstacle_shadow.wgsl reads it). The corners are the
// obstacle pass's (render/obstacles.wgsl): world position and face normal, three per triangle. Both faces
// are drawn (no culling): a closed mesh's nearest face to the sun is its front either way.

// Rust twin: ObstacleShadowUniform in src/render/obstacle_shadow.rs (80 bytes).
struct ObstacleShadow {
    light_from_world: mat4x4<f32>,
    texel: f32,
    enabled: f32,
    depth_bias: f32,
    _pad: f32,
}

// Rust twin: ObstacleCorner in src/render/obstacles.rs.
struct ObstacleCorner {
    position: vec4<f32>,
    normal: vec4<f32>,
}

@group(0) @binding(0) var<uniform> light: ObstacleShadow;
@group(0) @binding(1) var<storage, read> corners: array<ObstacleCorner>;

@vertex
fn vs_depth(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4<f32> {
    return light.light_from_world * vec4<f32>(corners[vi].position.xyz, 1.0);
}
