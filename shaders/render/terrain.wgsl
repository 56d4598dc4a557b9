// Heightfield terrain drawn straight from the simulation's f32 heights (no mesh on the CPU): one
// vertex-less triangle strip per grid row (instance = row, vertex = 2 * column + row offset); normals by
// central differences of the heights. Shading: albedo from slope and relative height (grass on flat low
// ground, dry grass higher up, rock on steep slopes, pale rock near the top) broken up by value noise,
// with detail finer than a cell for close views (grass tufts, cracked and grainy rock) and a fractal
// detail normal from value-noise gradients (rougher on rock), both projected on the three axis planes
// (triplanar, so steep slopes are not smeared) and fading out by pixel footprint;
// lit as the obstacles standing on it are (render/surface_light.wgsl): Lambert sun with soft heightfield
// shadows (per height sample, from terrain_shadow.wgsl, interpolated) and the obstacles' shadow,
// hemispheric sky ambient scaled by the sky visibility baked per height sample (terrain_ao.wgsl,
// interpolated), and exponential distance fog toward the sky cubemap seen along the view ray, so far
// ground fades into the sky behind it.
// fs_wet darkens wet ground over the drawn terrain (wetness.wgsl). fs_water_shadow takes away the sun's
// light the water above absorbs (render/water_receiver.wgsl): the colour with the sun attenuated over the
// colour without (both of the ground without its sub-cell detail), which the pipeline multiplies into
// the frame.
#import "render/surface_light.wgsl"
#import "common/obstacle_shadow.wgsl"

// Sun shadow factor per height sample (1 = lit), from terrain_shadow.wgsl; recomputed when the sun moves.
@group(1) @binding(2) var<storage, read> shadow: array<f32>;

// Sky visibility per height sample (1 = the whole sky), from terrain_ao.wgsl; baked per terrain.
@group(1) @binding(3) var<storage, read> sky_visibility: array<f32>;

// Wetness per height sample (0 dry .. 1 soaked), from wetness.wgsl; updated every frame.
@group(1) @binding(4) var<storage, read> wetness: array<f32>;

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

// Bilinear wetness at world (x, z).
fn wetness_at(p: vec2<f32>) -> f32 {
    let c = corner_at(p);
    let a = mix(wetness[c.base], wetness[c.base + 1u], c.f.x);
    let b = mix(wetness[c.base + terrain.nx], wetness[c.base + terrain.nx + 1u], c.f.x);
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
    // Invariant: "terrain wet" draws the mesh again over the same depths (depth test equal).
    @builtin(position) @invariant clip: vec4<f32>,
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

// Value noise and its gradient: (value 0..1, d/dp.x, d/dp.y).
fn value_noise_grad(p: vec2<f32>) -> vec3<f32> {
    let i = floor(p);
    let f = fract(p);
    let u = f * f * (3.0 - 2.0 * f);
    let du = 6.0 * f * (1.0 - f);
    let a = hash2(i);
    let b = hash2(i + vec2<f32>(1.0, 0.0));
    let c = hash2(i + vec2<f32>(0.0, 1.0));
    let d = hash2(i + vec2<f32>(1.0, 1.0));
    let k = a - b - c + d;
    let v = a + (b - a) * u.x + (c - a) * u.y + k * u.x * u.y;
    return vec3<f32>(v, du * vec2<f32>(b - a + k * u.y, c - a + k * u.x));
}

// Detail finer than a cell, from noise over one projection plane (coordinates `c` in cells, pixel
// footprint `fw` in cells; octaves under about two pixels fade to their mean, so a close view gets grain
// and a far one no shimmer).
struct Detail {
    // Brightness variations: 4 and 16 cycles per cell; grass tufts down to 1/96 cell; rock grain.
    fine: f32,
    tufts: f32,
    grain: f32,
    // Thin cracks in rock, 0..1.
    crack: f32,
    // Gradient (per cell, along c) of a fractal relief: four octaves from one cell down to 1/64, each as
    // tall as its wavelength, so every scale tilts the normal alike.
    slope: vec2<f32>,
}

fn detail_plane(c: vec2<f32>, fw: f32) -> Detail {
    var d: Detail;
    d.fine = 0.6 * octave(c + 7.0, 4.0, fw) + 0.4 * octave(c + 3.0, 16.0, fw);
    d.tufts = 0.45 * octave(c + 23.0, 8.0, fw) + 0.35 * octave(c + 29.0, 32.0, fw) + 0.2 * octave(c + 37.0, 96.0, fw);
    d.grain = octave(c + 61.0, 32.0, fw);
    let ridge = abs(value_noise(c * 4.0 + 51.0) - 0.5);
    d.crack = (1.0 - smoothstep(0.0, 0.04, ridge)) * (1.0 - smoothstep(0.05, 0.12, fw * 4.0));
    var slope = vec2<f32>(0.0);
    var freq = 1.0;
    for (var k = 0; k < 4; k++) {
        let keep = 1.0 - smoothstep(0.25, 0.5, fw * freq);
        slope += keep * value_noise_grad(c * freq + 19.0 * f32(k)).yz;
        freq *= 4.0;
    }
    d.slope = slope;
    return d;
}

// Detail blended over the three axis planes by the mesh normal n (weights |n|^4, renormalised over the
// planes kept: those of 2% or more), so steep slopes get the same detail as flat ground instead of the
// top view's smears. `bump` is the world-space tilt of the normal from the relief's slopes.
struct Triplanar {
    d: Detail,
    bump: vec3<f32>,
}

fn add_detail(acc: ptr<function, Triplanar>, d: Detail, w: f32, bump: vec3<f32>) {
    (*acc).d.fine += w * d.fine;
    (*acc).d.tufts += w * d.tufts;
    (*acc).d.grain += w * d.grain;
    (*acc).d.crack += w * d.crack;
    (*acc).bump += w * bump;
}

fn triplanar_detail(c: vec3<f32>, n: vec3<f32>, fw: f32) -> Triplanar {
    var w = pow(abs(n), vec3<f32>(4.0));
    w = select(vec3<f32>(0.0), w, w >= vec3<f32>(0.02 * (w.x + w.y + w.z)));
    w /= w.x + w.y + w.z;
    var acc: Triplanar;
    if w.y > 0.0 {
        let d = detail_plane(c.xz, fw);
        add_detail(&acc, d, w.y, vec3<f32>(-d.slope.x, 0.0, -d.slope.y));
    }
    if w.x > 0.0 {
        let d = detail_plane(c.zy, fw);
        add_detail(&acc, d, w.x, vec3<f32>(0.0, -d.slope.y, -d.slope.x));
    }
    if w.z > 0.0 {
        let d = detail_plane(c.xy + 101.0, fw);
        add_detail(&acc, d, w.z, vec3<f32>(-d.slope.x, -d.slope.y, 0.0));
    }
    return acc;
}

// The ground's colour and how rocky it is (0 grass .. 1 bare rock), from relative height, slope and
// noise (`q`: grid coordinates, `fw` their pixel footprint), broken up by the detail `d`.
struct Surface {
    albedo: vec3<f32>,
    rock: f32,
}

fn surface(p: vec3<f32>, n: vec3<f32>, q: vec2<f32>, fw: f32, d: Detail) -> Surface {
    let noise = smoothstep(0.2, 0.8, fbm(q, fw));
    let rel = clamp((p.y - terrain.h_min) / max(terrain.h_max - terrain.h_min, 1e-3), 0.0, 1.0);
    let slope = 1.0 - n.y;
    var grass = mix(vec3<f32>(0.030, 0.055, 0.016), vec3<f32>(0.070, 0.095, 0.030), noise);
    // Tufts: darker, greener blades and paler, drier tips.
    grass *= mix(vec3<f32>(0.45, 0.6, 0.45), vec3<f32>(1.45, 1.35, 1.1), smoothstep(0.2, 0.8, d.tufts));
    let dry = mix(vec3<f32>(0.11, 0.095, 0.045), vec3<f32>(0.15, 0.125, 0.065), d.fine) * (0.8 + 0.4 * d.tufts);
    var rock = mix(vec3<f32>(0.085, 0.075, 0.062), vec3<f32>(0.16, 0.145, 0.125), 0.6 * noise + 0.4 * d.fine);
    rock *= (1.0 - 0.45 * d.crack) * (0.9 + 0.2 * d.grain);
    let pale = vec3<f32>(0.22, 0.21, 0.19);
    let rockiness = smoothstep(0.2, 0.42, slope + 0.15 * (noise - 0.5));
    var c = mix(grass, dry, smoothstep(0.3, 0.85, rel + 0.3 * (noise - 0.5)) * 0.75);
    c = mix(c, rock, rockiness);
    c = mix(c, pale, smoothstep(0.85, 1.0, rel + 0.1 * (d.fine - 0.5)) * 0.5);
    return Surface(c * (0.85 + 0.3 * d.fine), rockiness);
}

// The pixel footprints the shading needs, taken in uniform control flow (before any discard): in grid
// samples (noise anti-aliasing) and in world cells (the detail's planes: the geometric mean of the
// pixel's two sides, so a slope seen at a grazing angle keeps its detail across the view).
struct Footprint {
    samples: f32,
    cells: f32,
}

fn footprint(p: vec3<f32>) -> Footprint {
    let q = p.xz / max(terrain.spacing, vec2<f32>(1e-6));
    let cell = 0.5 * (terrain.spacing.x + terrain.spacing.y);
    return Footprint(max(length(dpdx(q)), length(dpdy(q))), sqrt(length(dpdx(p)) * length(dpdy(p))) / cell);
}

fn terrain_light(in: VsOut, fw: Footprint) -> SurfaceLight {
    let p = in.world;
    let cell = 0.5 * (terrain.spacing.x + terrain.spacing.y);
    let detail = triplanar_detail(p / cell, normalize(in.normal), fw.cells);
    return lit_by(in, fw, detail);
}

// The ground's light without the detail finer than a cell (its mean instead: no cracks, no relief), for
// "terrain water shadow", which only needs the ratio of two colours of the same ground: the full detail
// costs several times more and changes that ratio little.
fn terrain_light_smooth(in: VsOut, fw: Footprint) -> SurfaceLight {
    let mean = Detail(0.5, 0.5, 0.5, 0.0, vec2<f32>(0.0));
    return lit_by(in, fw, Triplanar(mean, vec3<f32>(0.0)));
}

fn lit_by(in: VsOut, fw: Footprint, detail: Triplanar) -> SurfaceLight {
    let n_mesh = normalize(in.normal);
    let p = in.world;
    let q = p.xz / max(terrain.spacing, vec2<f32>(1e-6));
    let ground = surface(p, n_mesh, q, fw.samples, detail.d);
    // The detail relief tilts the normal, rock more than grass.
    let n = normalize(n_mesh + mix(0.25, 0.45, ground.rock) * detail.bump);
    // Some light reaches even where no sky is seen (bounced off the slopes around).
    let ambient = 0.15 + 0.85 * sky_visibility_at(p.xz);
    let sun = shadow_at(p.xz) * obstacle_shadow(p, n_mesh);
    return surface_light(p, ground.albedo, n, sun, ambient, terrain.fog_density);
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let fw = footprint(in.world);
    return output_color(surface_color(terrain_light(in, fw), vec3<f32>(1.0)));
}

// "terrain water shadow", over the terrain already drawn (equal depth), multiplied into the frame:
// `water_shadow_ratio` (render/surface_light.wgsl) of the ground without its sub-cell detail (which the
// frame's colour keeps). Pixels the water's light does not reach are discarded.
@fragment
fn fs_water_shadow(in: VsOut) -> @location(0) vec4<f32> {
    let fw = footprint(in.world);
    let water = water_transmittance(in.world);
    // The shading inside the branch: a discarded fragment goes on as a helper invocation, so work after
    // a discard would still be done where no water shades the ground.
    if any(water < vec3<f32>(0.999)) {
        return water_shadow_ratio(terrain_light_smooth(in, fw), water);
    }
    discard;
}

// "terrain wet", over the terrain already drawn (equal depth): wet ground is darker (up to 45%, as soil
// and grass soaked) and has a water film's sheen, the sky's Schlick-Fresnel reflection (F0 = 0.02) and
// a sun highlight in the lit parts; both fade with the distance fog. Premultiplied alpha: the darkening
// is the alpha, the sheen the colour. The highlight is the film's: normalised Blinn-Phong, (s + 8) / (8 pi)
// (n.h)^s (n.l) with s = WET_GLOSS (a wet, still rough ground), times Schlick's Fresnel of the half-vector
// F(v.h) with F0 = 0.02 (Akenine-Moller et al., Real-Time Rendering 4th ed., 9.8). Without the Fresnel
// factor (as before) it was about 15 times too bright: white patches on wet banks (and seen through the
// water's edges, bright blue ones) shaped by the coarse terrain's triangles.
// Blinn-Phong exponent of the wet ground's sun highlight.
const WET_GLOSS: f32 = 60.0;

@fragment
fn fs_wet(in: VsOut) -> @location(0) vec4<f32> {
    let p = in.world;
    let w = wetness_at(p.xz);
    if w < 0.004 {
        discard;
    }
    let n = normalize(in.normal);
    let to_p = p - camera.eye;
    let dist = length(to_p);
    let v = to_p / max(dist, 1e-6);
    let near = exp(-dist * terrain.fog_density);
    let cos_v = max(dot(n, -v), 0.0);
    let fresnel = 0.02 + 0.98 * pow(1.0 - cos_v, 5.0);
    let h = normalize(camera.sun_dir - v);
    let lobe = (WET_GLOSS + 8.0) / (8.0 * PI) * pow(max(dot(n, h), 0.0), WET_GLOSS) * max(dot(n, camera.sun_dir), 0.0);
    let film = 0.02 + 0.98 * pow(1.0 - max(dot(h, -v), 0.0), 5.0);
    let highlight = lobe * film * sun_radiance() * shadow_at(p.xz) * obstacle_shadow(p, n);
    let sheen = fresnel * tonemap(sky_radiance(reflect(v, n))) + tonemap(highlight);
    var c = w * near * sheen;
    if ENCODE_SRGB {
        c = linear_to_srgb(clamp(c, vec3<f32>(0.0), vec3<f32>(1.0)));
    }
    return vec4<f32>(c, 0.45 * w * near);
}
