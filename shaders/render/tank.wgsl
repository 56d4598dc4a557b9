// The glass tank of a box scene and the ground under it (src/render/tank.rs).
// Ground: the plane y = tank.min.y ray-cast per pixel from a full-screen triangle (frag_depth from the
// hit, reversed-Z), so it runs to the horizon with no edge: pale tiles under the tank, concrete with a
// faint grid outside it, anti-aliased by the pixel's footprint on the plane (lines thinner than a pixel
// fade to their coverage, lines closer than a few pixels fade out); lit by the sun (a faint shadow of the
// glass walls it passes, 12% per wall) and the sky with contact darkening at the walls; exponential
// distance fog toward the sky's colour just above the horizon (the cubemap the sky pass draws, so the
// ground meets it without a seam).
// Walls: the four sides (the top is open), 24 vertices from vertex_index. Each face is near (the eye on
// its outer side) or far; the far and near entry points each draw one kind and collapse the other's
// vertices. Glass: Schlick Fresnel (F0 = 0.04) reflection of the surroundings along reflect(view, n)
// (the sky above the horizon, the lit ground below it) with the sun's glint, over the background dimmed
// by the glass's absorption, premultiplied alpha. Frame: a dark metal strip along every edge of each
// face, at least 1.5 pixels wide, with a thin bright line where the glass pane's edge meets it; the
// frame also shades the ground (where the sun's ray crosses a wall within a frame width of its edge).
#import "common/camera.wgsl"
#import "render/water_receiver.wgsl"
#import "common/obstacle_shadow.wgsl"
#import "common/noise.wgsl"

// Rust twin: TankUniform in src/render/tank.rs (48 bytes).
struct Tank {
    min: vec3<f32>,
    frame_width: f32,   // m
    max: vec3<f32>,
    grid: f32,          // m between the ground's grid lines (tiles under the tank: a quarter)
    fog_density: f32,   // 1/m
    floor: u32,         // 1: the ground covers the tank's footprint too
    sky_exposure: f32,  // radiance multiplier of the sky cubemap
    _pad: f32,
}

@group(1) @binding(0) var<uniform> tank: Tank;
// The sky's cubemap (as the sky pass draws it), for the haze at the horizon and the glass's reflections.
@group(1) @binding(1) var sky_cube: texture_cube<f32>;
@group(1) @binding(2) var sky_sampler: sampler;

// The sky drawn along `dir`, no sun disc.
fn sky_at(dir: vec3<f32>) -> vec3<f32> {
    return textureSampleLevel(sky_cube, sky_sampler, dir, 0.0).rgb * tank.sky_exposure;
}

// The haze distance fades the ground into: the sky just above the horizon in the direction `dir`, so
// the far ground meets the sky's horizon without a seam.
fn haze(dir: vec3<f32>) -> vec3<f32> {
    return sky_at(normalize(vec3<f32>(dir.x, 0.01, dir.z)));
}

const GLASS_F0: f32 = 0.04;
// Transmittance of one glass wall crossed by the sun's light (two surfaces' reflection and absorption).
const GLASS_SHADOW: f32 = 0.92;
// Albedo of the ground outside the tank (concrete) and of the tiles under it.
const CONCRETE: vec3<f32> = vec3<f32>(0.105, 0.1, 0.092);
const TILE: vec3<f32> = vec3<f32>(0.22, 0.23, 0.225);

// Premultiplied output: `rgb` display-linear (already tone-mapped) and weighted by coverage `a`.
fn premultiplied(rgb: vec3<f32>, a: f32) -> vec4<f32> {
    var c = clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0));
    if ENCODE_SRGB {
        c = linear_to_srgb(c);
    }
    return vec4<f32>(c, a);
}

// World-space size of one pixel at distance `dist` from the eye, metres (across the view ray).
fn pixel_size(dist: f32) -> f32 {
    return dist * 2.0 / (camera.viewport.y * camera.clip_from_view[1][1]);
}

// ---------------------------------------------------------------------------------------------------
// Ground

struct GroundIn {
    @builtin(position) clip: vec4<f32>,
}

struct GroundOut {
    @location(0) color: vec4<f32>,
    @builtin(frag_depth) depth: f32,
}

@vertex
fn vs_ground(@builtin(vertex_index) vi: u32) -> GroundIn {
    // (-1,-1), (3,-1), (-1,3): covers the screen.
    let ndc = vec2<f32>(f32((vi << 1u) & 2u) * 2.0 - 1.0, f32(vi & 2u) * 2.0 - 1.0);
    return GroundIn(vec4<f32>(ndc, 0.0, 1.0));
}


// Value noise of features `size` metres, faded to its mean where they are under about two pixels of
// `foot` metres.
fn noise_at(p: vec2<f32>, size: f32, foot: f32) -> f32 {
    return mix(value_noise(p / size), 0.5, smoothstep(0.5, 1.0, 2.0 * foot / size));
}

// Coverage of grid lines `spacing` metres apart and `width` metres wide at `p`, for a pixel footprint of
// `foot` metres: lines under a pixel wide are drawn a pixel wide at their coverage, and the whole grid
// fades out before its lines come closer than about six pixels.
fn grid_lines(p: vec2<f32>, spacing: f32, width: f32, foot: f32) -> f32 {
    let d = abs(fract(p / spacing + 0.5) - 0.5) * spacing;
    let w = max(width, foot);
    let line = 1.0 - smoothstep(0.5 * w - 0.5 * foot, 0.5 * w + 0.5 * foot, min(d.x, d.y));
    return line * min(width / max(foot, 1e-9), 1.0) * (1.0 - smoothstep(0.08, 0.16, foot / spacing));
}

// Distance from point q on a side wall to the wall's nearest edge, metres (`along_z`: the wall spans z,
// i.e. it is an x = const wall).
fn edge_distance(q: vec3<f32>, along_z: bool) -> f32 {
    let s = select(q.x, q.z, along_z);
    let lo = select(tank.min.x, tank.min.z, along_z);
    let hi = select(tank.max.x, tank.max.z, along_z);
    return min(min(s - lo, hi - s), min(q.y - tank.min.y, tank.max.y - q.y));
}

// Light passing a side wall at q: the glass's, or none through the frame.
fn wall_transmittance(q: vec3<f32>, along_z: bool) -> f32 {
    return select(GLASS_SHADOW, 0.0, edge_distance(q, along_z) < tank.frame_width);
}

// Sun transmittance at ground point `p` through the tank's walls: 1 where the ray toward the sun misses
// the box, GLASS_SHADOW per side wall it crosses (the top is open), 0 through the frame.
fn glass_shadow(p: vec3<f32>) -> f32 {
    let l = camera.sun_dir;
    if l.y <= 0.0 {
        return 1.0;
    }
    let inv = 1.0 / select(l, vec3<f32>(1e-9), abs(l) < vec3<f32>(1e-9));
    let a = (tank.min - p) * inv;
    let b = (tank.max - p) * inv;
    let lo = min(a, b);
    let hi = max(a, b);
    let t_in = max(max(lo.x, lo.z), 0.0);
    let t_side_out = min(hi.x, hi.z);
    let t_top = hi.y; // the ray rises: it leaves the slab y <= max.y here
    if t_side_out <= t_in || t_in >= t_top {
        return 1.0; // misses the walls, or clears the top before reaching them
    }
    // Entering through a side wall (from outside), and leaving through one before the top.
    let inside = all(p.xz >= tank.min.xz) && all(p.xz <= tank.max.xz);
    var light = 1.0;
    if !inside {
        light *= wall_transmittance(p + t_in * l, lo.x > lo.z);
    }
    if t_side_out < t_top {
        light *= wall_transmittance(p + t_side_out * l, hi.x < hi.z);
    }
    return light;
}

// Radiance of the ground seen far off along `dir` (dir.y < 0): the concrete lit by sun and sky, in the
// haze.
fn far_ground(dir: vec3<f32>) -> vec3<f32> {
    let up = vec3<f32>(0.0, 1.0, 0.0);
    let lit = CONCRETE * (sun_radiance() * max(camera.sun_dir.y, 0.0) + sky_ambient(up));
    return mix(haze(dir), lit, clamp(-dir.y * 4.0, 0.0, 1.0));
}

// What a mirror sees along `dir`: the sky above the horizon, the ground below it.
fn surroundings(dir: vec3<f32>) -> vec3<f32> {
    if dir.y >= 0.0 {
        return sky_at(dir);
    }
    return far_ground(dir);
}

// Where the view ray of pixel `clip` meets the ground plane (`ok` false: no ground at this pixel), the
// cheap part of `ground_hit`.
struct GroundPoint {
    ok: bool,
    p: vec3<f32>,
    dir: vec3<f32>,
    t: f32,
    depth: f32,
    inside: bool,
}

fn ground_point(clip: vec4<f32>) -> GroundPoint {
    let none = GroundPoint(false, vec3<f32>(0.0), vec3<f32>(0.0), 0.0, 0.0, false);
    let ndc = vec2<f32>(clip.x / camera.viewport.x * 2.0 - 1.0, 1.0 - clip.y / camera.viewport.y * 2.0);
    let q = camera.world_from_clip * vec4<f32>(ndc, 1.0, 1.0);
    let dir = normalize(q.xyz / q.w - camera.eye);
    let height = camera.eye.y - tank.min.y;
    if height <= 0.0 || dir.y >= -1e-6 {
        return none; // looking up, or from below the ground
    }
    let t = height / -dir.y;
    let p = camera.eye + t * dir;
    let inside = all(p.xz > tank.min.xz) && all(p.xz < tank.max.xz);
    if inside && tank.floor == 0u {
        return none; // the terrain covers the footprint
    }
    let c = camera.clip_from_world * vec4<f32>(p, 1.0);
    let depth = c.z / c.w;
    if depth <= 0.0 {
        return none; // past the far plane: the sky's
    }
    return GroundPoint(true, p, dir, t, depth, inside);
}

// How the ground looks and is lit at a pixel's `GroundPoint`, the sun's light apart.
struct GroundHit {
    at: GroundPoint,
    albedo: vec3<f32>,
    // The sun's light (before the water) and the sky's.
    sun: vec3<f32>,
    sky: vec3<f32>,
}

// The ground at `at`, which must be `ok`.
fn ground_hit(at: GroundPoint) -> GroundHit {
    let p = at.p;
    let inside = at.inside;
    // The pixel's footprint on the plane, metres, along the view (the longer axis).
    let foot = pixel_size(at.t) / max(-at.dir.y, 0.02);
    var albedo: vec3<f32>;
    if inside {
        // Pale tiles with darker grout, a quarter of the grid apart.
        let tile = 0.25 * tank.grid;
        let cell = floor(p.xz / tile);
        let shade = mix(0.93, 1.04, hash2(cell)) * mix(0.96, 1.03, noise_at(p.xz, 0.3 * tile, foot));
        let grout = grid_lines(p.xz, tile, 0.05 * tile, foot);
        albedo = mix(TILE * shade, vec3<f32>(0.07, 0.072, 0.072), 0.8 * grout);
    } else {
        // Concrete: broad blotches and fine grain; a faint grid.
        let broad = noise_at(p.xz, 1.7 * tank.grid, foot);
        let grain = noise_at(p.xz + 31.0, 0.06 * tank.grid, foot);
        albedo = CONCRETE * (0.85 + 0.22 * broad) * (0.92 + 0.14 * grain);
        albedo *= 1.0 - 0.25 * grid_lines(p.xz, tank.grid, 0.012 * tank.grid, foot);
    }
    // Contact darkening within a few frame widths of the walls, outside and in.
    let size = tank.max - tank.min;
    let outside_d = length(max(max(tank.min.xz - p.xz, p.xz - tank.max.xz), vec2<f32>(0.0)));
    let inside_d = min(min(p.x - tank.min.x, tank.max.x - p.x), min(p.z - tank.min.z, tank.max.z - p.z));
    let reach = 0.06 * min(size.x, size.z);
    let contact = select(exp(-outside_d / reach), exp(-max(inside_d, 0.0) / (0.5 * reach)), inside);
    let ao = 1.0 - 0.3 * contact;
    let up = vec3<f32>(0.0, 1.0, 0.0);
    return GroundHit(
        at,
        albedo,
        sun_radiance() * (max(camera.sun_dir.y, 0.0) * glass_shadow(p) * obstacle_shadow(p, up)),
        sky_ambient(up) * ao,
    );
}

// The ground's radiance with the sun's light times `water` (the water's transmittance, 1 = none).
fn ground_color(g: GroundHit, water: vec3<f32>) -> vec3<f32> {
    let col = g.albedo * (g.sun * water + g.sky);
    let fog = 1.0 - exp(-g.at.t * tank.fog_density);
    return mix(col, haze(g.at.dir), fog);
}

@fragment
fn fs_ground(in: GroundIn) -> GroundOut {
    let at = ground_point(in.clip);
    if !at.ok {
        discard;
    }
    return GroundOut(output_color(ground_color(ground_hit(at), vec3<f32>(1.0))), at.depth);
}

// "tank ground water shadow", over the ground already drawn: the ratio of the ground's output colour
// with the sun's light through the water (render/water_receiver.wgsl) to the colour without it, which
// the pipeline multiplies into the frame (as terrain.wgsl's fs_water_shadow). Its depth is the ground's,
// a hair nearer, tested GreaterEqual: the far walls drawn over the ground keep their pixels.
@fragment
fn fs_ground_water_shadow(in: GroundIn) -> GroundOut {
    // The water's transmittance first: most of the ground lies outside the water's shadow, and the
    // ground's look and its other shadows are needed only inside it.
    let at = ground_point(in.clip);
    if at.ok {
        let water = water_transmittance(at.p);
        if any(water < vec3<f32>(0.999)) {
            let g = ground_hit(at);
            let dimmed = output_color(ground_color(g, water)).rgb;
            let whole = output_color(ground_color(g, vec3<f32>(1.0))).rgb;
            let ratio = clamp(dimmed / max(whole, vec3<f32>(1e-5)), vec3<f32>(0.0), vec3<f32>(1.0));
            return GroundOut(vec4<f32>(ratio, 1.0), at.depth * (1.0 + 1e-6));
        }
    }
    discard;
}

// ---------------------------------------------------------------------------------------------------
// Walls

struct WallOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    // Outward unit normal of the wall.
    @location(1) normal: vec3<f32>,
}

// Corner `vi` of the walls, collapsed unless the face is near (`front`) or far (not `front`).
fn wall_vertex(vi: u32, front: bool) -> WallOut {
    // Face 0: x = min, 1: x = max, 2: z = min, 3: z = max; corner (along, up) of its quad.
    let face = vi / 6u;
    var quad = array<vec2<f32>, 6>(
        vec2<f32>(0.0, 0.0), vec2<f32>(1.0, 0.0), vec2<f32>(1.0, 1.0),
        vec2<f32>(0.0, 0.0), vec2<f32>(1.0, 1.0), vec2<f32>(0.0, 1.0),
    );
    let c = quad[vi % 6u];
    let axis = select(2u, 0u, face < 2u);
    let side = f32(face & 1u);
    var t = vec3<f32>(0.0);
    t[axis] = side;
    t[2u - axis] = c.x;
    t.y = c.y;
    let world = mix(tank.min, tank.max, t);
    var n = vec3<f32>(0.0);
    n[axis] = 2.0 * side - 1.0;
    // The same for every vertex of a face: world[axis] is the face's plane.
    let near = dot(n, camera.eye - world) > 0.0;
    var out: WallOut;
    out.clip = camera.clip_from_world * vec4<f32>(world, 1.0);
    if near != front {
        out.clip = vec4<f32>(0.0); // the other pipeline's face: nothing rasterised
    }
    out.world = world;
    out.normal = n;
    return out;
}

@vertex
fn vs_far_walls(@builtin(vertex_index) vi: u32) -> WallOut {
    return wall_vertex(vi, false);
}

@vertex
fn vs_near_walls(@builtin(vertex_index) vi: u32) -> WallOut {
    return wall_vertex(vi, true);
}

@fragment
fn fs_far_walls(in: WallOut) -> @location(0) vec4<f32> {
    return shade_wall(in, 0.10);
}

@fragment
fn fs_near_walls(in: WallOut) -> @location(0) vec4<f32> {
    return shade_wall(in, 0.03);
}

// A wall's glass (absorbing `absorb` of the light through it) and frame, premultiplied.
fn shade_wall(in: WallOut, absorb: f32) -> vec4<f32> {
    let to_p = in.world - camera.eye;
    let dist = length(to_p);
    let v = to_p / max(dist, 1e-9);
    // The normal on the eye's side.
    let n = select(-in.normal, in.normal, dot(in.normal, v) < 0.0);
    // Distance to the face's nearest edge, metres.
    let d = edge_distance(in.world, abs(in.normal.x) > 0.5);
    // Edge widths: a pixel across the view, stretched on walls seen obliquely.
    let pix = pixel_size(dist) / max(abs(dot(n, v)), 0.2);
    let w = max(tank.frame_width, 1.5 * pix);
    let frame = 1.0 - smoothstep(w - 0.5 * pix, w + 0.5 * pix, d);
    let g = w + max(0.15 * w, pix);
    let glint = (1.0 - frame) * (1.0 - smoothstep(g - 0.5 * pix, g + 0.5 * pix, d));

    let cos_v = abs(dot(n, v));
    let r = reflect(v, n);
    let sun = sun_radiance();
    let h = normalize(camera.sun_dir - v);
    let spec = pow(max(dot(n, h), 0.0), 200.0) * sun * 4.0;
    let fresnel = GLASS_F0 + (1.0 - GLASS_F0) * pow(1.0 - cos_v, 5.0);

    // Glass: the sky's reflection over the background seen through it, dimmed by absorption.
    let reflected = tonemap(surroundings(r) + spec);
    let a_glass = 1.0 - (1.0 - fresnel) * (1.0 - absorb);
    let tint = tonemap(vec3<f32>(0.02, 0.035, 0.032) * sky_ambient(n));
    let glass = fresnel * reflected + (1.0 - fresnel) * absorb * tint;

    // Frame: dark anodised metal, lit, with a little of the sky's reflection.
    let metal = vec3<f32>(0.045, 0.047, 0.05);
    let frame_lit = metal * (sun * max(dot(n, camera.sun_dir), 0.0) + sky_ambient(n)) + 0.3 * fresnel * surroundings(r)
        + 0.25 * spec;
    let edge = tonemap(vec3<f32>(0.55, 0.62, 0.6) * (0.35 * sun + sky_ambient(n)));

    let rgb = mix(mix(glass, edge, glint), tonemap(frame_lit), frame);
    let a = mix(mix(a_glass, 0.85, glint), 1.0, frame);
    return premultiplied(rgb, a);
}
