// Sort-last compositing of the fluid layers of a decomposed simulation (Molnar, Cox, Ellsworth & Fuchs
// 1994, "A sorting classification of parallel rendering": each GPU renders its own part of the scene in
// full-screen images, which are then merged per pixel by depth). Every rank splats its own particles into
// a linear-depth target (view depth in metres, 0 = no fluid; not the reversed-Z depth buffer) and a
// thickness target (summed path length in metres); the display device holds its own layer and the others'
// in two texture arrays (layer 0 = its own), and one full-screen triangle per output writes
//   depth:     the nearest fluid over the layers, the minimum of the positive depths (0 where none has any);
//   thickness: the sum over the layers (path lengths through disjoint sets of particles add).
// into the targets the fluid tiles, the depth filter and the composite read. The depth filter then smooths
// across the seams as it smooths within one rank's splats.

// Layer k of the ranks' linear depths (R32Float) and thicknesses (R16Float, thickness resolution).
@group(1) @binding(0) var depth_layers: texture_2d_array<f32>;
@group(1) @binding(1) var thickness_layers: texture_2d_array<f32>;

// Full-screen triangle.
@vertex
fn vs_fullscreen(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4<f32> {
    let uv = vec2<f32>(f32((vi << 1u) & 2u), f32(vi & 2u));
    return vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
}

@fragment
fn fs_depth(@builtin(position) frag: vec4<f32>) -> @location(0) f32 {
    let p = vec2<i32>(frag.xy);
    var nearest = 0.0;
    for (var k = 0u; k < textureNumLayers(depth_layers); k += 1u) {
        let d = textureLoad(depth_layers, p, k, 0).r;
        if d > 0.0 && (nearest == 0.0 || d < nearest) {
            nearest = d;
        }
    }
    return nearest;
}

@fragment
fn fs_thickness(@builtin(position) frag: vec4<f32>) -> @location(0) vec4<f32> {
    let p = vec2<i32>(frag.xy);
    var sum = 0.0;
    for (var k = 0u; k < textureNumLayers(thickness_layers); k += 1u) {
        sum += textureLoad(thickness_layers, p, k, 0).r;
    }
    return vec4<f32>(sum, 0.0, 0.0, 0.0);
}
