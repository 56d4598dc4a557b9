// Frame block shared by every render pass: the camera (reversed-Z perspective, see src/render/camera.rs),
// the sun, and the analytic daylight model the passes light with (the terrain's ambient light, the water's
// scattered colour; the terrain's fog and the reflections take the sky cubemap instead, src/render/sky.rs).
// That sky is a single-scattering look-alike, not a simulation:
// a Rayleigh-like blue-to-haze gradient with a (1 + mu^2) phase term, a Henyey-Greenstein-like Mie glow
// around the sun, sun colour from Beer-Lambert extinction over the air mass, and a dark ground below
// the horizon. Output: linear radiance, ACES filmic tone map (Narkowicz 2015 fit), sRGB encoding when
// the target format holds encoded values and does not encode itself.

// Rust twin: CameraUniform in src/render/camera.rs (304 bytes).
struct Camera {
    clip_from_world: mat4x4<f32>,
    view_from_world: mat4x4<f32>,
    clip_from_view: mat4x4<f32>,
    world_from_clip: mat4x4<f32>,
    eye: vec3<f32>,
    time: f32,
    sun_dir: vec3<f32>,
    sun_intensity: f32,
    viewport: vec2<f32>,
    near: f32,
    far: f32,
}

@group(0) @binding(0) var<uniform> camera: Camera;

// Set by the pipeline when the colour target holds display-encoded values (an 8-bit Unorm format, not
// sRGB): the shader then encodes sRGB itself. sRGB and float (HDR) targets get the linear values.
override ENCODE_SRGB: bool = false;

const PI: f32 = 3.14159265;

// World-space right and up axes of the camera (rows of view_from_world).
fn camera_right() -> vec3<f32> {
    let m = camera.view_from_world;
    return vec3<f32>(m[0][0], m[1][0], m[2][0]);
}

fn camera_up() -> vec3<f32> {
    let m = camera.view_from_world;
    return vec3<f32>(m[0][1], m[1][1], m[2][1]);
}

// Corner `vi` (0..6, two triangles) of a camera-facing quad that covers the silhouette of the sphere
// (centre c, radius r) seen from the eye at distance d = |eye - c| > r: the quad lies on the sphere's front
// tangent plane, half-size (d - r) r / sqrt(d^2 - r^2) (the tangent cone), plus a 2 % margin so the
// rasteriser never trims the silhouette. Returns the corner's world position.
fn sphere_billboard_corner(c: vec3<f32>, r: f32, d: f32, vi: u32) -> vec3<f32> {
    let axis = (camera.eye - c) / d;
    var right = cross(camera_up(), axis);
    if dot(right, right) < 1e-8 {
        right = camera_right();
    }
    right = normalize(right);
    let up = cross(axis, right);
    let half = (d - r) * r / sqrt(d * d - r * r);
    var corners = array<vec2<f32>, 6>(
        vec2<f32>(-1.0, -1.0), vec2<f32>(1.0, -1.0), vec2<f32>(1.0, 1.0),
        vec2<f32>(-1.0, -1.0), vec2<f32>(1.0, 1.0), vec2<f32>(-1.0, 1.0),
    );
    let k = corners[vi] * half * 1.02;
    return c + axis * r + right * k.x + up * k.y;
}

// Radiance of direct sunlight: white attenuated through the air mass of the sun's elevation.
fn sun_radiance() -> vec3<f32> {
    let air_mass = 1.0 / max(camera.sun_dir.y + 0.06, 0.04);
    let night = smoothstep(-0.08, 0.02, camera.sun_dir.y);
    return camera.sun_intensity * night * exp(-vec3<f32>(0.025, 0.06, 0.14) * air_mass);
}

// Sky radiance seen along unit direction `dir` (no sun disc). Below the horizon: haze fading into ground.
fn sky_radiance(dir: vec3<f32>) -> vec3<f32> {
    let s = camera.sun_dir;
    let mu = dot(dir, s);
    let up = max(dir.y, 0.0);
    let day = camera.sun_intensity * smoothstep(-0.15, 0.1, s.y);
    // Low sun: redder horizon, dimmer zenith.
    let low = 1.0 - smoothstep(0.0, 0.45, s.y);
    let zenith = mix(vec3<f32>(0.06, 0.16, 0.46), vec3<f32>(0.05, 0.09, 0.25), low);
    let horizon = mix(vec3<f32>(0.48, 0.62, 0.82), vec3<f32>(0.72, 0.55, 0.42), low);
    let haze = pow(1.0 - up, 4.0);
    var col = mix(zenith, horizon, haze);
    col *= 0.85 + 0.25 * (1.0 + mu * mu);                 // Rayleigh phase
    let g = max(mu, 0.0);
    let glow = 0.10 * pow(g, 8.0) + 0.45 * pow(g, 48.0);    // Mie forward scattering
    col += glow * sun_radiance() / max(camera.sun_intensity, 1e-4) * (0.4 + 0.6 * haze);
    col *= day * 0.42;
    if dir.y < 0.0 {
        // Distant land: dark neutral grey lit by sun and sky, fading into the horizon haze.
        let land = vec3<f32>(0.026, 0.028, 0.026) * (0.8 * sun_radiance() * max(s.y, 0.0) + 0.35 * day);
        col = mix(col, land, 1.0 - exp(dir.y * 12.0));
    }
    return col;
}

// Haze colour distance fog fades toward (the horizon's colour seen along `dir`).
fn fog_radiance(dir: vec3<f32>) -> vec3<f32> {
    return sky_radiance(normalize(vec3<f32>(dir.x, max(dir.y, 0.02), dir.z)));
}

// Irradiance-like ambient term for a surface with unit normal `n`: sky from above, ground bounce below.
fn sky_ambient(n: vec3<f32>) -> vec3<f32> {
    let sky_col = sky_radiance(normalize(vec3<f32>(0.0, 1.0, 0.0) + 0.5 * n));
    // Half-desaturated: the whole sky dome lights a surface, not only its bluest part.
    let sky = mix(vec3<f32>(dot(sky_col, vec3<f32>(0.2126, 0.7152, 0.0722))), sky_col, 0.5) * 1.1;
    let ground = vec3<f32>(0.20, 0.18, 0.14) * (0.25 * sun_radiance() * max(camera.sun_dir.y, 0.0));
    return mix(ground, sky, 0.5 + 0.5 * n.y);
}

// ACES filmic curve (Narkowicz 2015 fit), linear radiance -> display-linear 0..1.
fn tonemap(x: vec3<f32>) -> vec3<f32> {
    let a = 2.51;
    let b = 0.03;
    let c = 2.43;
    let d = 0.59;
    let e = 0.14;
    return clamp((x * (a * x + b)) / (x * (c * x + d) + e), vec3<f32>(0.0), vec3<f32>(1.0));
}

fn linear_to_srgb(c: vec3<f32>) -> vec3<f32> {
    let lo = c * 12.92;
    let hi = 1.055 * pow(c, vec3<f32>(1.0 / 2.4)) - 0.055;
    return select(hi, lo, c <= vec3<f32>(0.0031308));
}

// Final colour written to the target: tone-mapped, sRGB-encoded if the format does not encode.
fn output_color(radiance: vec3<f32>) -> vec4<f32> {
    var c = tonemap(radiance);
    if ENCODE_SRGB {
        c = linear_to_srgb(c);
    }
    return vec4<f32>(c, 1.0);
}
