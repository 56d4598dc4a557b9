// Blit of the rendered scene (an offscreen colour target of the window's size) onto the window surface.
// One full-screen triangle (the standard three-vertex trick: no vertex buffer); each fragment loads the
// texel under it with textureLoad, so the copy is 1:1 and needs no sampler. The source is sRGB, read as
// linear, and the surface re-encodes it (or stores it as is for a non-sRGB surface, see `fs_main_gamma`).

@group(0) @binding(0) var src: texture_2d<f32>;

struct VsOut {
    @builtin(position) pos: vec4<f32>,
};

@vertex
fn vs_main(@builtin(vertex_index) i: u32) -> VsOut {
    // (-1,-1), (3,-1), (-1,3): covers the whole clip square.
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    var out: VsOut;
    out.pos = vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
    return out;
}

fn load(pos: vec4<f32>) -> vec4<f32> {
    let dims = vec2<i32>(textureDimensions(src));
    let p = clamp(vec2<i32>(pos.xy), vec2<i32>(0), dims - 1);
    return vec4<f32>(textureLoad(src, p, 0).rgb, 1.0);
}

/// For an sRGB surface: the hardware encodes the linear value on store.
@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    return load(in.pos);
}

fn linear_to_srgb(c: vec3<f32>) -> vec3<f32> {
    let lo = c * 12.92;
    let hi = 1.055 * pow(c, vec3<f32>(1.0 / 2.4)) - 0.055;
    return select(hi, lo, c <= vec3<f32>(0.0031308));
}

/// For a non-sRGB (gamma-space) surface: encode by hand so colours match.
@fragment
fn fs_main_gamma(in: VsOut) -> @location(0) vec4<f32> {
    let c = load(in.pos);
    return vec4<f32>(linear_to_srgb(clamp(c.rgb, vec3<f32>(0.0), vec3<f32>(1.0))), 1.0);
}
