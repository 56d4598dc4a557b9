// Screen-space fluid composite (van der Laan, Green & Sainz, I3D 2009; Green, GDC 2010): one full-screen
// triangle that shades the smoothed fluid depth over the scene.
//   normals: view-space positions rebuilt from the smoothed depth; of the forward and backward difference
//            along each axis the one with the smaller depth change (edges stay sharp);
//   Fresnel: Schlick, F0 about 0.02;
//   transmission: the background (scene colour copied before the water) seen where the refracted ray
//            leaves the water (Snell's law at the surface, then the path a slab of the pixel's thickness
//            gives it: `refracted`), attenuated per channel by Beer-Lambert a = exp(-k_rgb path) and filled
//            in by the water's own in-scattered colour:
//            T = a I_background + (1 - a) I_scatter;
//   reflection: the sky cubemap along reflect(view, n), plus a sun highlight (Blinn-Phong);
//   I = (1 - F) T + F I_sky + specular, and frag_depth from the smoothed depth (reversed-Z) so terrain and
//   water occlude each other. fs_debug shows the intermediate targets instead (no depth test).
//   foam (render/foam.wgsl, Ihmsen et al. 2012's diffuse particles): lit white laid over the water, and
//   over the scene where there is no water (spray in the air, foam on the shore; depth from the foam
//   target's nearest splat), covering 1 - exp(-opacity) per channel; a zero foam target changes nothing.
//   Foam whose nearest splat lies deeper than the splats' allowance behind the water's surface is bubbles
//   inside the water: its white tinted by the water's absorption over that depth.
// Droplets: where the water is thin (a lone particle or two: thickness below droplet_thickness, fading out
// at twice it) the smoothed depth says little about the shape, so the pixel is shaded as a small droplet
// instead: normals of the raw (unfiltered) splat depth (the splat's own round shape), the background seen
// through it as through a lens (offset against the normal by the full refraction, not scaled down by the
// thin water), slightly tinted and lit from inside, the sky reflected and a sharp, bright sun glint.
#import "common/camera.wgsl"

// Rust twin: CompositeUniform in src/render/composite.rs (80 bytes).
struct Composite {
    absorption: vec3<f32>,
    ior: f32,
    f0: f32,
    view: u32,
    tiles_x: u32,
    sky_exposure: f32,
    depth_vis: vec2<f32>,
    thickness_vis: f32,
    thickness_scale: f32,
    scattering: vec3<f32>,
    droplet_thickness: f32,
    surface_allowance: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(1) @binding(0) var<uniform> comp: Composite;
@group(1) @binding(1) var smoothed: texture_2d<f32>;
@group(1) @binding(2) var raw: texture_2d<f32>;
@group(1) @binding(3) var thickness_tex: texture_2d<f32>;
@group(1) @binding(4) var background: texture_2d<f32>;
@group(1) @binding(5) var sky_cube: texture_cube<f32>;
@group(1) @binding(6) var lin: sampler;
@group(1) @binding(7) var<storage, read> tile_mask: array<u32>;
// r = foam and bubbles, g = spray (summed opacity), b = the foam's bubble shading (summed departure of
// its splats' bubble pattern from smooth splats), a = nearest foam view depth, m (render/foam.wgsl); at the
// thickness target's resolution.
@group(1) @binding(8) var foam_tex: texture_2d<f32>;

// Views, as FluidView::code in src/render/settings.rs.
const VIEW_RAW_DEPTH: u32 = 1u;
const VIEW_SMOOTHED_DEPTH: u32 = 2u;
const VIEW_THICKNESS: u32 = 3u;
const VIEW_NORMALS: u32 = 4u;
const VIEW_TILES: u32 = 5u;
const VIEW_FOAM: u32 = 6u;

// Edge of the curvature flow's screen tiles, pixels (TILE_SIZE in src/render/targets.rs).
const TILE: u32 = 16u;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32) -> VsOut {
    let ndc = vec2<f32>(f32((vi << 1u) & 2u) * 2.0 - 1.0, f32(vi & 2u) * 2.0 - 1.0);
    return VsOut(vec4<f32>(ndc, 0.0, 1.0));
}

fn depth_at(p: vec2<i32>) -> f32 {
    return depth_in(smoothed, p);
}

// Depth of `tex` (smoothed or raw) at pixel p, 0 outside the screen.
fn depth_in(tex: texture_2d<f32>, p: vec2<i32>) -> f32 {
    let size = vec2<i32>(textureDimensions(tex));
    if any(p < vec2<i32>(0)) || any(p >= size) {
        return 0.0;
    }
    return textureLoad(tex, p, 0).x;
}

// View-space position of pixel p at linear depth z: the inverse of clip_from_view, whose [2][0] and [2][1]
// are minus the lens shift (the window's off-centre projection, src/render/camera.rs). Twin of
// camera::pos_in_view_from_ndc.
fn view_pos(p: vec2<i32>, z: f32) -> vec3<f32> {
    let ndc = vec2<f32>((f32(p.x) + 0.5) / camera.viewport.x * 2.0 - 1.0, 1.0 - (f32(p.y) + 0.5) / camera.viewport.y * 2.0);
    let m = camera.clip_from_view;
    return vec3<f32>((ndc.x + m[2][0]) / m[0][0] * z, (ndc.y + m[2][1]) / m[1][1] * z, -z);
}

// Of the forward and backward differences of `tex`'s depth along `step`, the one with the smaller depth
// change.
fn difference(tex: texture_2d<f32>, p: vec2<i32>, c: vec3<f32>, z: f32, step: vec2<i32>) -> vec3<f32> {
    let zf = depth_in(tex, p + step);
    let zb = depth_in(tex, p - step);
    let fwd = view_pos(p + step, zf) - c;
    let bwd = c - view_pos(p - step, zb);
    let df = select(1e30, abs(zf - z), zf > 0.0);
    let db = select(1e30, abs(zb - z), zb > 0.0);
    if df >= 1e30 && db >= 1e30 {
        return view_pos(p + step, z) - c; // isolated pixel: facing the camera
    }
    return select(bwd, fwd, df < db);
}

// View-space unit normal of the smoothed depth facing the camera at pixel p (depth z > 0).
fn normal_view(p: vec2<i32>, z: f32) -> vec3<f32> {
    return normal_in(smoothed, p, z);
}

// View-space unit normal of `tex`'s depth facing the camera at pixel p (depth z > 0).
fn normal_in(tex: texture_2d<f32>, p: vec2<i32>, z: f32) -> vec3<f32> {
    let c = view_pos(p, z);
    let dx = difference(tex, p, c, z, vec2<i32>(1, 0));
    let dy = difference(tex, p, c, z, vec2<i32>(0, 1));
    var n = normalize(cross(dy, dx));
    if dot(n, -c) < 0.0 {
        n = -n;
    }
    return n;
}

fn world_from_view_dir(v: vec3<f32>) -> vec3<f32> {
    let m = camera.view_from_world;
    return transpose(mat3x3<f32>(m[0].xyz, m[1].xyz, m[2].xyz)) * v;
}

fn encode(c: vec3<f32>) -> vec4<f32> {
    var o = clamp(c, vec3<f32>(0.0), vec3<f32>(1.0));
    if ENCODE_SRGB {
        o = linear_to_srgb(o);
    }
    return vec4<f32>(o, 1.0);
}

fn srgb_to_linear(c: vec3<f32>) -> vec3<f32> {
    return select(pow((c + 0.055) / 1.055, vec3<f32>(2.4)), c / 12.92, c <= vec3<f32>(0.04045));
}

// Display-linear background colour (an 8-bit Unorm target stores encoded bytes: decode them; sRGB and
// float targets hold linear values).
fn background_at(uv: vec2<f32>) -> vec3<f32> {
    let c = textureSampleLevel(background, lin, uv, 0.0).rgb;
    return select(c, srgb_to_linear(c), ENCODE_SRGB);
}

struct FinalOut {
    @location(0) color: vec4<f32>,
    @builtin(frag_depth) depth: f32,
}

// Reversed-Z depth of linear view depth z (m).
fn depth_of(z: f32) -> f32 {
    return camera.near * (camera.far - z) / ((camera.far - camera.near) * z);
}

// The foam target at screen position uv: opacities and bubble shading filtered (it may be at half
// resolution), the nearest depth of the four texels they were filtered from.
fn foam_at(uv: vec2<f32>) -> vec4<f32> {
    let cover = textureSampleLevel(foam_tex, lin, uv, 0.0).xyz;
    let z = textureGather(3, foam_tex, lin, uv);
    return vec4<f32>(cover, min(min(z.x, z.y), min(z.z, z.w)));
}

// Brightness of the foam per unit of its summed bubble shading (foam target b), and its bounds: a lone
// splat's clear bubble (b about -0.1) is about 18 % darker, a rim about 10 % brighter; in dense foam the
// sum of many splats' patterns (their spread grows as the square root of their number) keeps it bubbly
// where the coverage is saturated.
const FOAM_SHADE: f32 = 1.8;
const FOAM_SHADE_RANGE: vec2<f32> = vec2<f32>(0.65, 1.2);

// Coverage of the foam (foam and bubbles) and the spray of a foam sample, 0..1 each.
fn foam_cover(f: vec4<f32>) -> vec2<f32> {
    return 1.0 - exp(-max(f.xy, vec2<f32>(0.0)));
}

// `col` with the foam and spray of `f` laid over it: diffuse white lit by the sun and the sky, the foam's
// times `tint` (the water's transmittance in front of bubbles inside it; 1 on the surface and in the air).
fn with_foam(col: vec3<f32>, f: vec4<f32>, tint: vec3<f32>) -> vec3<f32> {
    let cover = foam_cover(f);
    if max(cover.x, cover.y) <= 0.0 {
        return col;
    }
    let lit = 0.8 * sun_radiance() * max(camera.sun_dir.y, 0.0) + sky_ambient(vec3<f32>(0.0, 1.0, 0.0));
    let shade = clamp(1.0 + FOAM_SHADE * f.z, FOAM_SHADE_RANGE.x, FOAM_SHADE_RANGE.y);
    let white = tonemap(0.85 * shade * lit) * tint;
    let bright = tonemap(1.1 * lit);
    return mix(mix(col, white, cover.x), bright, cover.y);
}

@fragment
fn fs_final(in: VsOut) -> FinalOut {
    let p = vec2<i32>(in.clip.xy);
    let z = depth_at(p);
    let uv = in.clip.xy / camera.viewport;
    let foam = foam_at(uv);
    if z <= 0.0 {
        // No water: spray and foam alone over the scene, or nothing.
        let cover = foam_cover(foam);
        if max(cover.x, cover.y) < 1.0 / 512.0 {
            discard;
        }
        var out: FinalOut;
        out.color = encode(with_foam(background_at(uv), foam, vec3<f32>(1.0)));
        out.depth = depth_of(foam.w);
        return out;
    }
    let nv = normal_view(p, z);
    let n = world_from_view_dir(nv);
    let pos = camera.eye + world_from_view_dir(view_pos(p, z));
    let v = normalize(pos - camera.eye);

    let thickness = textureSampleLevel(thickness_tex, lin, uv, 0.0).x * comp.thickness_scale;
    let through = refracted(p, z, nv, thickness);
    let absorb = exp(-comp.absorption * through.w);
    let background_col = background_at(through.xy);
    // Light scattered inside the water toward the eye: the sun's and the sky's light times the water's
    // single-scattering albedo b / (a + b) (deep water's blue), isotropic over the half space above.
    let sun = sun_radiance();
    let lit = 0.6 * sun * max(camera.sun_dir.y, 0.0) + sky_ambient(vec3<f32>(0.0, 1.0, 0.0));
    let albedo = comp.scattering / max(comp.absorption + comp.scattering, vec3<f32>(1e-6));
    let scatter = tonemap(0.5 * albedo * lit);
    let transmitted = absorb * background_col + (1.0 - absorb) * scatter;

    let cos_v = max(dot(n, -v), 0.0);
    let fresnel = comp.f0 + (1.0 - comp.f0) * pow(1.0 - cos_v, 5.0);
    let r = reflect(v, n);
    let sky_col = tonemap(textureSampleLevel(sky_cube, lin, r, 0.0).rgb * comp.sky_exposure);
    let h = normalize(camera.sun_dir - v);
    let spec = tonemap(sun * (2.0 * pow(max(dot(n, h), 0.0), 700.0) + 0.15 * pow(max(dot(n, h), 0.0), 60.0)) * f32(dot(n, camera.sun_dir) > 0.0));
    var col = (1.0 - fresnel) * transmitted + fresnel * sky_col + spec;
    let drop = 1.0 - smoothstep(comp.droplet_thickness, 2.0 * comp.droplet_thickness, thickness);
    if drop > 0.0 {
        col = mix(col, droplet(p, uv, v), drop);
    }

    // Bubbles inside the water (the nearest foam splat behind the surface) are seen through the water in
    // front of them: tinted by its absorption over that depth (the splat pass has dimmed them too).
    let tint = exp(-comp.absorption * max(foam.w - z - comp.surface_allowance, 0.0));
    var out: FinalOut;
    out.color = encode(with_foam(col, foam, tint));
    out.depth = depth_of(z);
    return out;
}

// Where the view ray through pixel p (water surface at depth z, view-space normal nv) leaves water of
// `thickness` (m, along the view ray), and how far it travels inside: Snell's law at the surface
// (index comp.ior), then straight on for the path a slab of that thickness gives the refracted ray
// (thickness cos(theta_i) / cos(theta_t)); past the back surface, taken parallel to the front one, the ray
// goes on along the view direction again, so the background seen is the one behind the exit point.
// Returns the exit point's screen position (xy, clamped to the screen; for the background lookup) and the
// path in the water (w, m; for the absorption). A flat face seen obliquely shifts what lies behind it by
// the slab's lateral displacement, a curved surface bends it as a lens.
fn refracted(p: vec2<i32>, z: f32, nv: vec3<f32>, thickness: f32) -> vec4<f32> {
    let pos = view_pos(p, z);
    let v = normalize(pos);
    let cos_i = max(dot(-v, nv), 1e-3);
    let t = refract(v, nv, 1.0 / max(comp.ior, 1.0));
    let cos_t = max(dot(-t, nv), 1e-3);
    let path = thickness * cos_i / cos_t;
    let exit = camera.clip_from_view * vec4<f32>(pos + t * path, 1.0);
    var uv = (vec2<f32>(p) + 0.5) / camera.viewport;
    if exit.w > camera.near {
        uv = vec2<f32>(0.5, -0.5) * exit.xy / exit.w + 0.5;
    }
    return vec4<f32>(clamp(uv, vec2<f32>(0.0), vec2<f32>(1.0)), 0.0, path);
}

// Screen fractions the background seen through a droplet moves per unit of (index of refraction - 1)
// and of its normal's screen component: a small sphere is a strong lens (0.03 at water's 1.333).
const DROPLET_LENS: f32 = 0.09;

// A small droplet at pixel p (screen coordinates uv, view direction v): see the header.
fn droplet(p: vec2<i32>, uv: vec2<f32>, v: vec3<f32>) -> vec3<f32> {
    let zr = depth_in(raw, p);
    if zr <= 0.0 {
        return background_at(uv);
    }
    let nv = normal_in(raw, p, zr);
    let n = world_from_view_dir(nv);
    let cos_v = max(dot(n, -v), 0.0);
    let fresnel = comp.f0 + (1.0 - comp.f0) * pow(1.0 - cos_v, 5.0);
    let sky_col = tonemap(textureSampleLevel(sky_cube, lin, reflect(v, n), 0.0).rgb * comp.sky_exposure);
    // A small sphere acts as a strong lens: the background seen through it, offset against the normal.
    let lens = DROPLET_LENS * (comp.ior - 1.0);
    let seen = background_at(clamp(uv + nv.xy * vec2<f32>(-1.0, 1.0) * lens, vec2<f32>(0.0), vec2<f32>(1.0)));
    let sun = sun_radiance();
    let inside = tonemap(0.25 * (sun * (0.5 + 0.5 * dot(n, camera.sun_dir)) + sky_ambient(n)));
    let h = normalize(camera.sun_dir - v);
    let glint = tonemap(sun * 6.0 * pow(max(dot(n, h), 0.0), 400.0) * f32(dot(n, camera.sun_dir) > 0.0));
    let body = mix(seen * vec3<f32>(0.82, 0.93, 0.97), inside, 0.2);
    return (1.0 - fresnel) * body + fresnel * sky_col + glint;
}

fn depth_grey(z: f32) -> vec3<f32> {
    if z <= 0.0 {
        return vec3<f32>(0.0);
    }
    let t = clamp((comp.depth_vis.y - z) / (comp.depth_vis.y - comp.depth_vis.x), 0.0, 1.0);
    return vec3<f32>(0.08 + 0.92 * t);
}

@fragment
fn fs_debug(in: VsOut) -> @location(0) vec4<f32> {
    let p = vec2<i32>(in.clip.xy);
    let uv = in.clip.xy / camera.viewport;
    var col = vec3<f32>(0.0);
    switch comp.view {
        case VIEW_RAW_DEPTH: {
            col = depth_grey(textureLoad(raw, p, 0).x);
        }
        case VIEW_SMOOTHED_DEPTH: {
            col = depth_grey(depth_at(p));
        }
        case VIEW_THICKNESS: {
            let t = textureSampleLevel(thickness_tex, lin, uv, 0.0).x * comp.thickness_scale;
            let s = 1.0 - exp(-t / comp.thickness_vis);
            col = s * vec3<f32>(0.55, 0.8, 1.0);
        }
        case VIEW_NORMALS: {
            let z = depth_at(p);
            if z > 0.0 {
                col = world_from_view_dir(normal_view(p, z)) * 0.5 + 0.5;
            }
        }
        case VIEW_TILES: {
            let tile = vec2<u32>(p) / TILE;
            let on = tile_mask[tile.y * comp.tiles_x + tile.x] != 0u;
            col = background_at(uv) * 0.5;
            if on {
                col = mix(col, vec3<f32>(1.0, 0.25, 0.1), 0.45);
            }
            if textureLoad(raw, p, 0).x > 0.0 {
                col = mix(col, vec3<f32>(0.3, 0.7, 1.0), 0.6);
            }
        }
        case VIEW_FOAM: {
            let cover = foam_cover(foam_at(uv));
            col = cover.x * vec3<f32>(1.0) + cover.y * vec3<f32>(1.0, 0.55, 0.15);
            if textureLoad(raw, p, 0).x > 0.0 {
                col = max(col, vec3<f32>(0.05, 0.12, 0.25));
            }
        }
        default: {}
    }
    return encode(col);
}
