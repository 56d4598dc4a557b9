// Sky background: one full-screen triangle at the far plane (depth 0 under reversed-Z). Each pixel's
// world-space view ray comes from world_from_clip; its colour is the analytic daylight model of
// common/camera.wgsl (gradient sky, Mie glow, dark ground below the horizon) plus the sun disc.
#import "common/camera.wgsl"

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) ndc: vec2<f32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32) -> VsOut {
    // (-1,-1), (3,-1), (-1,3): covers the screen.
    let ndc = vec2<f32>(f32((vi << 1u) & 2u) * 2.0 - 1.0, f32(vi & 2u) * 2.0 - 1.0);
    var out: VsOut;
    out.clip = vec4<f32>(ndc, 0.0, 1.0);
    out.ndc = ndc;
    return out;
}

// Angular radius of the drawn sun disc, radians (about twice the real sun's, to stay visible).
const SUN_RADIUS: f32 = 0.009;

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    // A point on the near plane (depth 1 under reversed-Z) through this pixel.
    let p = camera.world_from_clip * vec4<f32>(in.ndc, 1.0, 1.0);
    let dir = normalize(p.xyz / p.w - camera.eye);
    var col = sky_radiance(dir);
    let mu = dot(dir, camera.sun_dir);
    let disc = smoothstep(cos(SUN_RADIUS * 1.25), cos(SUN_RADIUS * 0.75), mu);
    let above = smoothstep(-0.01, 0.005, dir.y);
    col += disc * above * 40.0 * sun_radiance();
    return output_color(col);
}
