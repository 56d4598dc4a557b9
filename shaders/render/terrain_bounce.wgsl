// Light bounced between the terrain's height samples (src/render/terrain_bounce.rs): a radiosity bake of
// one or two bounces of the sun's and the sky's light, run when the sun or the terrain changes.
// emit_direct: per sample, the radiosity J = albedo E_direct (times pi, the radiance a Lambertian sample
//   sends every way), with E_direct the sunlight on it (Lambert, times the terrain's soft shadow) and the
//   sky light (the hemispheric ambient times the baked sky visibility), as terrain.wgsl lights it.
// gather: per sample, the irradiance from the terrain around, E_bounce = pi mean L over cosine-weighted
//   rays = the mean of J where the rays hit the heightfield (0 where they escape to the sky): 128 rays
//   (8 stratified, jittered rings of 16 azimuths) marched as the sky-visibility bake's (terrain_ao.wgsl),
//   J interpolated bilinearly at the hit.
// emit_bounced: J = albedo (E_direct + E_bounce), for a second gather (two bounces).
// On a large heightfield the bake runs on every bounce_stride-th sample (render/heightfield.wgsl
// `bounce_dims`; at most MAX_BOUNCE_SIDE texels a side, src/render/terrain_bounce.rs), the light bounced
// between slopes being smooth over a few samples. The albedo is the ground's colour without its sub-cell detail (terrain_surface.wgsl, at one sample's
// footprint), so the bounced light takes the grass's green and the rock's grey.
#import "common/camera.wgsl"
#import "render/terrain_ao.wgsl"
#import "render/terrain_surface.wgsl"

// Rays gathered per height sample: rings of cosine-weighted polar angles, azimuths per ring.
const GATHER_RINGS: u32 = 8u;
const GATHER_AZIMUTHS: u32 = 16u;

// Sun shadow factor per height sample (1 = lit), from terrain_shadow.wgsl.
@group(1) @binding(6) var<storage, read> shadow: array<f32>;
// Radiosity per height sample (rgb, W-like units of the renderer's radiance times pi; a unused).
@group(1) @binding(7) var<storage, read_write> radiosity: array<vec4<f32>>;
// Irradiance per height sample bounced off the terrain around (rgb; a unused); terrain.wgsl reads it.
@group(1) @binding(8) var<storage, read_write> bounce: array<vec4<f32>>;

// The ground's palette (terrain_surface.wgsl) is display colour under the renderer's bright sun (its grass
// about 0.06, a third of what grass reflects); the reflectance that bounces light is the palette times
// this, so that the grass reflects 0.2, the broadband albedo of grassland (Liang 2001, "Narrowband to
// broadband conversions of land surface albedo"; MODIS), and bare rock 0.25-0.45.
const REFLECTANCE_PER_PALETTE: f32 = 3.0;

// The ground's reflectance at height sample (ix, iz) of normal n.
fn albedo_at(ix: i32, iz: i32, n: vec3<f32>) -> vec3<f32> {
    let p = vec3<f32>(terrain.origin.x + f32(ix) * terrain.spacing.x, height(ix, iz), terrain.origin.y + f32(iz) * terrain.spacing.y);
    let q = p.xz / max(terrain.spacing, vec2<f32>(1e-6));
    let mean = Detail(0.5, 0.5, 0.5, 0.0, vec2<f32>(0.0));
    return REFLECTANCE_PER_PALETTE * surface(p, n, q, 1.0, mean).albedo;
}

// Sun and sky light falling on height sample i of normal n, as terrain.wgsl's (without the obstacles'
// shadow and the sub-cell relief).
fn direct_irradiance(i: u32, n: vec3<f32>) -> vec3<f32> {
    let sun = sun_radiance() * max(dot(n, camera.sun_dir), 0.0) * shadow[i];
    return sun + sky_ambient(n) * ao_out[i];
}

fn emit(gid: vec3<u32>, bounced: bool) {
    let dims = bounce_dims();
    if gid.x >= dims.x || gid.y >= dims.y {
        return;
    }
    let s = bounce_sample(gid.xy);
    let ix = i32(s.x);
    let iz = i32(s.y);
    let t = gid.y * dims.x + gid.x;
    let n = sample_normal(ix, iz);
    var e = direct_irradiance(s.y * terrain.nx + s.x, n);
    if bounced {
        e += bounce[t].rgb;
    }
    radiosity[t] = vec4<f32>(albedo_at(ix, iz, n) * e, 0.0);
}

@compute @workgroup_size(8, 8)
fn emit_direct(@builtin(global_invocation_id) gid: vec3<u32>) {
    emit(gid, false);
}

@compute @workgroup_size(8, 8)
fn emit_bounced(@builtin(global_invocation_id) gid: vec3<u32>) {
    emit(gid, true);
}

// Radiosity at grid coordinates g (height samples), bilinear over the bounce grid.
fn radiosity_at(g: vec2<f32>) -> vec3<f32> {
    let c = bounce_corner(g);
    let a = mix(radiosity[c.base].rgb, radiosity[c.base + c.step.x].rgb, c.f.x);
    let b = mix(radiosity[c.base + c.step.y].rgb, radiosity[c.base + c.step.y + c.step.x].rgb, c.f.x);
    return mix(a, b, c.f.y);
}

@compute @workgroup_size(8, 8)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>) {
    let dims = bounce_dims();
    if gid.x >= dims.x || gid.y >= dims.y {
        return;
    }
    let s = bounce_sample(gid.xy);
    let fan = ray_fan(i32(s.x), i32(s.y));
    let g = vec2<f32>(s);
    var sum = vec3<f32>(0.0);
    for (var j = 0u; j < GATHER_RINGS; j++) {
        // Stratified: a polar angle jittered within each ring's band of sin^2, per sample and ring (the
        // sky-visibility bake's fixed rings resolve a slope low over the horizon poorly).
        let sin_t = sqrt((f32(j) + hash2(g + vec2<f32>(0.37, 1.91) * f32(j + 1u))) / f32(GATHER_RINGS));
        let offset = fract(fan.jitter + 0.618034 * f32(j));
        for (var k = 0u; k < GATHER_AZIMUTHS; k++) {
            let d = fan_direction(fan, sin_t, 6.2831853 * (f32(k) + offset) / f32(GATHER_AZIMUTHS));
            let t = first_hit(fan.p0, d);
            if t >= 0.0 {
                sum += radiosity_at((fan.p0 + t * d).xz);
            }
        }
    }
    bounce[gid.y * dims.x + gid.x] = vec4<f32>(sum / f32(GATHER_RINGS * GATHER_AZIMUTHS), 0.0);
}
