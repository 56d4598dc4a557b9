// Sky visibility (ambient occlusion) of the terrain, baked once per heightfield (src/render/terrain_ao.rs).
// build_level: one level of the maximum mipmap (Tevs, Ihrke & Seidel, I3D 2008): level 0 holds the
//   highest of each grid cell's four corner heights (a bound on the bilinear surface over the cell),
//   level l the highest of the 2 x 2 cells of level l - 1 (clamped at the odd edge).
// bake: per height sample, azimuths x rings rays cosine-weighted about the normal (polar angle of ring j:
//   sin^2 = (j + 1/2) / rings; azimuths jittered per sample), each marched in steps of half a cell
//   through the grid (x, z in samples, y in metres) from a point a little off the surface along the
//   normal. A step under the bilinear surface occludes; leaving the grid, or rising above the highest
//   sample, escapes. With the pyramid, where the ray's lower end across a cell of the current level is
//   above the cell's maximum, no step inside it can hit: the march jumps to the first step past the
//   cell's exit and tries the next coarser level; otherwise it refines, and at level 0 tests the step.
//   The same steps are tested either way, so the pyramid changes the cost, not the answer.
#import "render/heightfield.wgsl"
#import "common/noise.wgsl"

// Rust twin: AoUniform in src/render/terrain_ao.rs (272 bytes).
struct Ao {
    levels: u32,
    azimuths: u32,
    rings: u32,
    brute_force: u32,
    // Per level: x = offset of its first cell in `pyramid`, y = cells along x, z = cells along z.
    level: array<vec4<u32>, 16>,
}

// Rust twin: AoLevel in src/render/terrain_ao.rs (16 bytes).
struct AoLevel {
    index: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(1) @binding(2) var<uniform> ao: Ao;
@group(1) @binding(3) var<storage, read_write> pyramid: array<f32>;
@group(1) @binding(4) var<storage, read_write> ao_out: array<f32>;
@group(1) @binding(5) var<uniform> build: AoLevel;

@compute @workgroup_size(8, 8)
fn build_level(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = build.index;
    let dims = ao.level[l];
    if gid.x >= dims.y || gid.y >= dims.z {
        return;
    }
    var m: f32;
    if l == 0u {
        let ix = i32(gid.x);
        let iz = i32(gid.y);
        m = max(max(height(ix, iz), height(ix + 1, iz)), max(height(ix, iz + 1), height(ix + 1, iz + 1)));
    } else {
        let below = ao.level[l - 1u];
        let x0 = 2u * gid.x;
        let z0 = 2u * gid.y;
        let x1 = min(x0 + 1u, below.y - 1u);
        let z1 = min(z0 + 1u, below.z - 1u);
        let r0 = below.x + z0 * below.y;
        let r1 = below.x + z1 * below.y;
        m = max(max(pyramid[r0 + x0], pyramid[r0 + x1]), max(pyramid[r1 + x0], pyramid[r1 + x1]));
    }
    pyramid[dims.x + gid.y * dims.y + gid.x] = m;
}

// Bilinear height at grid coordinates g (samples), as height_at in world units.
fn grid_height(g: vec2<f32>) -> f32 {
    let i = min(floor(g), vec2<f32>(f32(terrain.nx - 2u), f32(terrain.nz - 2u)));
    let f = g - i;
    let ix = i32(i.x);
    let iz = i32(i.y);
    let a = mix(height(ix, iz), height(ix + 1, iz), f.x);
    let b = mix(height(ix, iz + 1), height(ix + 1, iz + 1), f.x);
    return mix(a, b, f.y);
}

// Whether the ray p0 + t d escapes (p0, d: x and z in samples, y in metres).
fn escapes(p0: vec3<f32>, d: vec3<f32>) -> bool {
    return first_hit(p0, d) < 0.0;
}

// The ray parameter t of the first step of p0 + t d under the bilinear surface (p0, d: x and z in
// samples, y in metres), or -1 where the ray escapes.
fn first_hit(p0: vec3<f32>, d: vec3<f32>) -> f32 {
    let horizontal = length(d.xz);
    if horizontal < 1e-6 {
        return select(0.0, -1.0, d.y > 0.0); // straight up never meets a heightfield
    }
    let dt = 0.5 / horizontal;
    let last = vec2<f32>(f32(terrain.nx - 1u), f32(terrain.nz - 1u));
    // Half-cell steps to cross the grid diagonally, and a bound on the iterations that refine.
    let max_steps = 2u * (terrain.nx + terrain.nz) + 2u;
    let max_iterations = (ao.levels + 1u) * max_steps;
    let moving = abs(d.xz) > vec2<f32>(1e-12);
    let inv = 1.0 / select(vec2<f32>(1.0), d.xz, moving);
    var k = 1u;
    var level = 0u;
    for (var it = 0u; it < max_iterations && k <= max_steps; it++) {
        let t = f32(k) * dt;
        let p = p0 + t * d;
        if any(p.xz < vec2<f32>(0.0)) || any(p.xz > last) || (d.y >= 0.0 && p.y > terrain.h_max) {
            return -1.0;
        }
        if ao.brute_force == 0u {
            let dims = ao.level[level];
            let size = f32(1u << level);
            let cell = min(vec2<u32>(p.xz / size), dims.yz - 1u);
            let top = pyramid[dims.x + cell.y * dims.y + cell.x];
            // Where the ray leaves the cell (x or z boundary first).
            let lo = vec2<f32>(cell) * size;
            let bound = select(lo, lo + size, d.xz > vec2<f32>(0.0));
            let tb = select(vec2<f32>(3.0e38), (bound - p0.xz) * inv, moving);
            let t_exit = min(tb.x, tb.y);
            if min(p.y, p0.y + t_exit * d.y) > top {
                k = max(k + 1u, u32(min(ceil(t_exit / dt), f32(max_steps + 1u))));
                level = min(level + 1u, ao.levels - 1u);
                continue;
            }
            if level > 0u {
                level -= 1u;
                continue;
            }
        }
        if p.y < grid_height(p.xz) {
            return t;
        }
        k += 1u;
    }
    return -1.0;
}

// Where the rays of height sample (ix, iz) start and how they are spread: the surface normal (central
// differences, as terrain.wgsl and terrain_shadow.wgsl) and two tangents, the start a fiftieth of a cell
// off the surface (grid units: x and z in samples, y in metres), and the sample's jitter of the azimuths.
struct RayFan {
    n: vec3<f32>,
    tx: vec3<f32>,
    tz: vec3<f32>,
    p0: vec3<f32>,
    jitter: f32,
}

fn ray_fan(ix: i32, iz: i32) -> RayFan {
    let n = sample_normal(ix, iz);
    // Tangents: n.y > 0, so cross(z, n) = (-n.y, n.x, 0) never vanishes.
    let tx = normalize(vec3<f32>(-n.y, n.x, 0.0));
    let tz = cross(n, tx);
    let lift = n * (0.02 * min(terrain.spacing.x, terrain.spacing.y));
    let p0 = vec3<f32>(f32(ix) + lift.x / terrain.spacing.x, height(ix, iz) + lift.y, f32(iz) + lift.z / terrain.spacing.y);
    return RayFan(n, tx, tz, p0, hash2(vec2<f32>(f32(ix), f32(iz))));
}

// Unit normal of height sample (ix, iz) by central differences (one-sided at the edges).
fn sample_normal(ix: i32, iz: i32) -> vec3<f32> {
    let x0 = max(ix - 1, 0);
    let x1 = min(ix + 1, i32(terrain.nx) - 1);
    let z0 = max(iz - 1, 0);
    let z1 = min(iz + 1, i32(terrain.nz) - 1);
    let dhdx = (height(x1, iz) - height(x0, iz)) / (f32(max(x1 - x0, 1)) * terrain.spacing.x);
    let dhdz = (height(ix, z1) - height(ix, z0)) / (f32(max(z1 - z0, 1)) * terrain.spacing.y);
    return normalize(vec3<f32>(-dhdx, 1.0, -dhdz));
}

// Ray i of ring j of the fan f, cosine-weighted about its normal, in grid units (x and z per sample):
// ring j at sin^2(polar angle) = (j + 1/2) / rings, azimuths jittered per sample.
fn fan_ray(f: RayFan, j: u32, i: u32) -> vec3<f32> {
    let offset = fract(f.jitter + 0.618034 * f32(j));
    let phi = 6.2831853 * (f32(i) + offset) / f32(ao.azimuths);
    return fan_direction(f, sqrt((f32(j) + 0.5) / f32(ao.rings)), phi);
}

// The direction of polar angle asin(sin_t) and azimuth phi about the fan's normal, in grid units.
fn fan_direction(f: RayFan, sin_t: f32, phi: f32) -> vec3<f32> {
    let cos_t = sqrt(max(1.0 - sin_t * sin_t, 0.0));
    let w = (f.tx * cos(phi) + f.tz * sin(phi)) * sin_t + f.n * cos_t;
    return vec3<f32>(w.x / terrain.spacing.x, w.y, w.z / terrain.spacing.y);
}

@compute @workgroup_size(8, 8)
fn bake(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= terrain.nx || gid.y >= terrain.nz {
        return;
    }
    let fan = ray_fan(i32(gid.x), i32(gid.y));
    var seen = 0u;
    for (var j = 0u; j < ao.rings; j++) {
        for (var i = 0u; i < ao.azimuths; i++) {
            if escapes(fan.p0, fan_ray(fan, j, i)) {
                seen += 1u;
            }
        }
    }
    ao_out[gid.y * terrain.nx + gid.x] = f32(seen) / f32(max(ao.rings * ao.azimuths, 1u));
}
