// Heightfield terrain drawn straight from the simulation's f32 heights (no mesh on the CPU): one
// vertex-less triangle strip per grid row (instance = row, vertex = 2 * column + row offset); normals by
// central differences of the heights. Shading: albedo from slope and relative height (grass on flat low
// ground, dry grass higher up, rock on steep slopes, pale rock near the top) broken up by value noise;
// Lambert sun with soft heightfield shadows (per height sample, from terrain_shadow.wgsl, interpolated),
// hemispheric sky ambient scaled by the sky visibility baked per height sample (terrain_ao.wgsl,
// interpolated), and exponential distance fog toward the horizon haze (all from common/camera.wgsl).
#import "common/camera.wgsl"

#import "render/heightfield.wgsl"

// Sun shadow factor per height sample (1 = lit), from terrain_shadow.wgsl; recomputed when the sun moves.
@group(1) @binding(2) var<storage, read> shadow: array<f32>;

// Sky visibility per height sample (1 = the whole sky), from terrain_ao.wgsl; baked per terrain.
@group(1) @binding(3) var<storage, read> sky_visibility: array<f32>;

// A bilinear lookup of a per-sample array at world (x, z): the index of the lower corner and the weights.
struct Corner {
    base: u32,
    f: vec2<f32>,
}

fn corner_at(p: vec2<f32>) -> Corner {
    let g = clamp((p - terrain.origin) / terrain.spacing, vec2<f32>(0.0), vec2<f32>(f32(terrain.nx - 1u), f32(terrain.nz - 1u)));
    let i = min(floor(g), vec2<f32>(f32(max(terrain.nx, 2u) - 2u), f32(max(terrain.nz, 2u) - 2u)));
    return Corner(u32(i.y) * terrain.nx + u32(i.x), g - i);
}

// Bilinear shadow factor at world (x, z).
fn shadow_at(p: vec2<f32>) -> f32 {
    let c = corner_at(p);
    let a = mix(shadow[c.base], shadow[c.base + 1u], c.f.x);
    let b = mix(shadow[c.base + terrain.nx], shadow[c.base + terrain.nx + 1u], c.f.x);
    return mix(a, b, c.f.y);
}

// Bilinear sky visibility at world (x, z).
fn sky_visibility_at(p: vec2<f32>) -> f32 {
    let c = corner_at(p);
    let a = mix(sky_visibility[c.base], sky_visibility[c.base + 1u], c.f.x);
    let b = mix(sky_visibility[c.base + terrain.nx], sky_visibility[c.base + terrain.nx + 1u], c.f.x);
    return mix(a, b, c.f.y);
}

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) row: u32) -> VsOut {
    let ix = i32(vi >> 1u);
    let iz = i32(row + (vi & 1u));
    let world = vec3<f32>(
        terrain.origin.x + f32(ix) * terrain.spacing.x,
        height(ix, iz),
        terrain.origin.y + f32(iz) * terrain.spacing.y,
    );
    // Central differences (one-sided at the edges, over the distance actually spanned).
    let x0 = max(ix - 1, 0);
    let x1 = min(ix + 1, i32(terrain.nx) - 1);
    let z0 = max(iz - 1, 0);
    let z1 = min(iz + 1, i32(terrain.nz) - 1);
    let dhdx = (height(x1, iz) - height(x0, iz)) / (f32(x1 - x0) * terrain.spacing.x);
    let dhdz = (height(ix, z1) - height(ix, z0)) / (f32(z1 - z0) * terrain.spacing.y);
    var out: VsOut;
    out.clip = camera.clip_from_world * vec4<f32>(world, 1.0);
    out.world = world;
    out.normal = normalize(vec3<f32>(-dhdx, 1.0, -dhdz));
    return out;
}

// Hash without sine (Dave Hoskins), integer lattice point -> 0..1.
fn hash2(p: vec2<f32>) -> f32 {
    var q = fract(vec3<f32>(p.xyx) * 0.1031);
    q += dot(q, q.yzx + 33.33);
    return fract((q.x + q.y) * q.z);
}

// Smooth value noise in 0..1.
fn value_noise(p: vec2<f32>) -> f32 {
    let i = floor(p);
    let f = fract(p);
    let u = f * f * (3.0 - 2.0 * f);
    let a = hash2(i);
    let b = hash2(i + vec2<f32>(1.0, 0.0));
    let c = hash2(i + vec2<f32>(0.0, 1.0));
    let d = hash2(i + vec2<f32>(1.0, 1.0));
    return mix(mix(a, b, u.x), mix(c, d, u.x), u.y);
}

// Weight of a noise octave of `freq` cycles per sample at a pixel footprint of `fw` samples:
// octaves finer than about two pixels fade to their mean (0.5) instead of shimmering.
fn octave(p: vec2<f32>, freq: f32, fw: f32) -> f32 {
    return mix(value_noise(p * freq), 0.5, smoothstep(0.25, 0.5, fw * freq));
}

// Four octaves, scaled to the grid: features of about 8, 2, 0.5 and 0.125 samples; `fw` = pixel
// footprint in samples.
fn fbm(q: vec2<f32>, fw: f32) -> f32 {
    return 0.45 * octave(q, 0.125, fw) + 0.27 * octave(q + 17.0, 0.5, fw) + 0.17 * octave(q + 41.0, 2.0, fw)
        + 0.11 * octave(q + 73.0, 8.0, fw);
}

fn albedo(p: vec3<f32>, n: vec3<f32>, q: vec2<f32>, fw: f32) -> vec3<f32> {
    let noise = smoothstep(0.2, 0.8, fbm(q, fw));
    let fine = 0.6 * octave(q + 7.0, 4.0, fw) + 0.4 * octave(q + 3.0, 16.0, fw);
    let rel = clamp((p.y - terrain.h_min) / max(terrain.h_max - terrain.h_min, 1e-3), 0.0, 1.0);
    let slope = 1.0 - n.y;
    let grass = mix(vec3<f32>(0.030, 0.055, 0.016), vec3<f32>(0.070, 0.095, 0.030), noise);
    let dry = mix(vec3<f32>(0.11, 0.095, 0.045), vec3<f32>(0.15, 0.125, 0.065), fine);
    let rock = mix(vec3<f32>(0.085, 0.075, 0.062), vec3<f32>(0.16, 0.145, 0.125), 0.6 * noise + 0.4 * fine);
    let pale = vec3<f32>(0.22, 0.21, 0.19);
    var c = mix(grass, dry, smoothstep(0.3, 0.85, rel + 0.3 * (noise - 0.5)) * 0.75);
    c = mix(c, rock, smoothstep(0.2, 0.42, slope + 0.15 * (noise - 0.5)));
    c = mix(c, pale, smoothstep(0.85, 1.0, rel + 0.1 * (fine - 0.5)) * 0.5);
    return c * (0.85 + 0.3 * fine);
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let n = normalize(in.normal);
    let p = in.world;
    // Grid coordinates and the pixel footprint in samples (for noise anti-aliasing).
    let q = p.xz / max(terrain.spacing, vec2<f32>(1e-6));
    let fw = max(length(dpdx(q)), length(dpdy(q)));
    let base = albedo(p, n, q, fw);
    let ndl = max(dot(n, camera.sun_dir), 0.0);
    // Some light reaches even where no sky is seen (bounced off the slopes around).
    let ambient = 0.15 + 0.85 * sky_visibility_at(p.xz);
    let lit = sun_radiance() * (ndl * shadow_at(p.xz)) + sky_ambient(n) * ambient;
    var col = base * lit;
    let to_eye = camera.eye - p;
    let dist = length(to_eye);
    let fog = 1.0 - exp(-dist * terrain.fog_density);
    col = mix(col, fog_radiance(-to_eye / dist), fog);
    return output_color(col);
}
