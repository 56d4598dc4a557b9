// The light of the opaque things outdoors, shared by the terrain (terrain.wgsl) and the obstacles standing
// on it (obstacles.wgsl), so a house sits in the same light and haze as the ground around it: Lambert sun
// times the shadows falling on the point (the caller's: the terrain's soft shadow, the obstacles' shadow
// map), the hemispheric sky ambient (common/camera.wgsl) times the caller's sky visibility, and
// exponential distance fog (the caller's extinction: the terrain's, or a box scene's ground's for the
// obstacles standing on it) toward the sky cubemap seen along the view ray
// (the generated atmosphere or a loaded sky, as the background draws it), so far things fade into the sky
// behind them. The water's shadow (render/water_receiver.wgsl) takes away part of the sun's light in a
// second draw over the first: `water_shadow_ratio` is the factor that draw multiplies into the frame.
// Bind groups: 1 = the heightfield (render/heightfield.wgsl: the sky's exposure),
// 2 = the water's light (the water-shadow draws only), 3 = the sky cubemap and its sampler.
#import "common/camera.wgsl"
#import "render/heightfield.wgsl"
#import "render/water_receiver.wgsl"

// The sky cubemap (src/render/sky.rs; linear radiance before terrain.sky_exposure) the fog fades toward.
@group(3) @binding(0) var sky_cube: texture_cube<f32>;
@group(3) @binding(1) var sky_sampler: sampler;

// The colour distance fog fades toward along unit `dir` from the eye: the sky seen that way, kept a little
// above the horizon (below it the cubemap holds darkened land, not the haze in front of the ground).
fn fog_sky(dir: vec3<f32>) -> vec3<f32> {
    let d = normalize(vec3<f32>(dir.x, max(dir.y, 0.02), dir.z));
    return textureSampleLevel(sky_cube, sky_sampler, d, 0.0).rgb * terrain.sky_exposure;
}

// A surface's light at one pixel: albedo, the sun's and the sky's light (the sun's unattenuated by
// water) and the fog over them; `surface_color` puts them together.
struct SurfaceLight {
    base: vec3<f32>,
    sun: vec3<f32>,
    sky: vec3<f32>,
    fog_color: vec3<f32>,
    fog: f32,
}

// The light of world point `p` with diffuse `albedo` and unit shading normal `n`: `sun_visible` (0..1) of
// the sun reaches it past the terrain and the obstacles, `sky_visible` (0..1) scales the sky's light;
// the fog's extinction is `fog_density` (1/m).
fn surface_light(p: vec3<f32>, albedo: vec3<f32>, n: vec3<f32>, sun_visible: f32, sky_visible: f32, fog_density: f32) -> SurfaceLight {
    let to_eye = camera.eye - p;
    let dist = length(to_eye);
    return SurfaceLight(
        albedo,
        sun_radiance() * (max(dot(n, camera.sun_dir), 0.0) * sun_visible),
        sky_ambient(n) * sky_visible,
        fog_sky(-to_eye / max(dist, 1e-6)),
        1.0 - exp(-dist * fog_density),
    );
}

// The surface's radiance with the sun's light times `water` (the water's transmittance, 1 = none).
fn surface_color(l: SurfaceLight, water: vec3<f32>) -> vec3<f32> {
    return mix(l.base * (l.sun * water + l.sky), l.fog_color, l.fog);
}

// What a "... water shadow" draw over the surface already drawn (equal depth) multiplies into the frame:
// the ratio of its output colour with the sun's light through the water (`water`) to the colour without
// it, so the surface ends as if it had been drawn with the attenuated sun (the tone map and the sRGB
// encoding included).
fn water_shadow_ratio(l: SurfaceLight, water: vec3<f32>) -> vec4<f32> {
    let dimmed = output_color(surface_color(l, water)).rgb;
    let whole = output_color(surface_color(l, vec3<f32>(1.0))).rgb;
    return vec4<f32>(clamp(dimmed / max(whole, vec3<f32>(1e-5)), vec3<f32>(0.0), vec3<f32>(1.0)), 1.0);
}
