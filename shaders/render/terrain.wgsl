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
// interpolated) plus the light bounced off the slopes around (terrain_bounce.wgsl, per sample, when the
// bake is on), and exponential distance fog toward the sky cubemap seen along the view ray, so far
// ground fades into the sky behind it.
// fs_wet darkens wet ground over the drawn terrain (wetness.wgsl). fs_water_shadow takes away the sun's
// light the water above absorbs (render/water_receiver.wgsl): the colour with the sun attenuated over the
// colour without (both of the ground without its sub-cell detail), which the pipeline multiplies into
// the frame.
#import "render/surface_light.wgsl"
#import "render/terrain_surface.wgsl"
#import "common/obstacle_shadow.wgsl"

// Sun shadow factor per height sample (1 = lit), from terrain_shadow.wgsl; recomputed when the sun moves.
@group(1) @binding(2) var<storage, read> shadow: array<f32>;

// Sky visibility per height sample (1 = the whole sky), from terrain_ao.wgsl; baked per terrain.
@group(1) @binding(3) var<storage, read> sky_visibility: array<f32>;

// Wetness per height sample (0 dry .. 1 soaked), from wetness.wgsl; updated every frame.
@group(1) @binding(4) var<storage, read> wetness: array<f32>;

// Irradiance bounced off the terrain around per height sample (rgb), from terrain_bounce.wgsl; recomputed
// when the sun or the terrain changes.
@group(1) @binding(5) var<storage, read> bounce: array<vec4<f32>>;

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

// Bilinear bounced irradiance at world (x, z), over the bounce light's grid.
fn bounce_at(p: vec2<f32>) -> vec3<f32> {
    let c = bounce_corner((p - terrain.origin) / terrain.spacing);
    let a = mix(bounce[c.base].rgb, bounce[c.base + c.step.x].rgb, c.f.x);
    let b = mix(bounce[c.base + c.step.y].rgb, bounce[c.base + c.step.y + c.step.x].rgb, c.f.x);
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
    let sun = shadow_at(p.xz) * obstacle_shadow(p, n_mesh);
    if terrain.bounce == 0u {
        // Without the bake, a constant share of the light reaches even where no sky is seen.
        return surface_light(p, ground.albedo, n, sun, 0.15 + 0.85 * sky_visibility_at(p.xz), terrain.fog_density);
    }
    // The sky's light where it is seen, and the light bounced off the slopes around (terrain_bounce.wgsl).
    var l = surface_light(p, ground.albedo, n, sun, sky_visibility_at(p.xz), terrain.fog_density);
    l.sky += bounce_at(p.xz);
    return l;
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
