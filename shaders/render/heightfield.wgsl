// The terrain's heightfield as the render passes read it (terrain.wgsl, terrain_shadow.wgsl): grid
// uniform and f32 heights in bind group 1, point and bilinear height lookups, and the soft shadow
// toward the sun.
// Rust twin: TerrainUniform in src/render/heightfield.rs (64 bytes).
struct Terrain {
    origin: vec2<f32>,
    spacing: vec2<f32>,
    nx: u32,
    nz: u32,
    h_min: f32,
    h_max: f32,
    fog_density: f32,
    shadow_steps: u32,
    // Radiance multiplier of the sky cubemap the terrain's fog fades toward (terrain.wgsl).
    sky_exposure: f32,
    // 1: light the ground with the light bounced off the terrain around (terrain_bounce.wgsl).
    bounce: u32,
    sun_dir: vec3<f32>, // unit, toward the sun (for terrain_shadow.wgsl)
    // Height samples per texel of the bounce light's grid along each axis (terrain_bounce.wgsl), >= 1.
    bounce_stride: u32,
}

@group(1) @binding(0) var<uniform> terrain: Terrain;
@group(1) @binding(1) var<storage, read> heights: array<f32>;

fn height(ix: i32, iz: i32) -> f32 {
    let x = u32(clamp(ix, 0, i32(terrain.nx) - 1));
    let z = u32(clamp(iz, 0, i32(terrain.nz) - 1));
    return heights[z * terrain.nx + x];
}

// Bilinear height at world (x, z), edge values continued outside (as Heightfield::height_at).
fn height_at(p: vec2<f32>) -> f32 {
    let g = clamp((p - terrain.origin) / terrain.spacing, vec2<f32>(0.0), vec2<f32>(f32(terrain.nx - 1u), f32(terrain.nz - 1u)));
    let i = floor(g);
    let f = g - i;
    let ix = i32(i.x);
    let iz = i32(i.y);
    let a = mix(height(ix, iz), height(ix + 1, iz), f.x);
    let b = mix(height(ix, iz + 1), height(ix + 1, iz + 1), f.x);
    return mix(a, b, f.y);
}

// Soft shadow toward the sun: 1 = lit, 0 = occluded by the heightfield.
fn sun_shadow(p: vec3<f32>, n: vec3<f32>, l: vec3<f32>) -> f32 {
    if l.y <= 0.0 {
        return 0.0;
    }
    let step0 = 0.5 * min(terrain.spacing.x, terrain.spacing.y);
    let start = p + n * step0 * 0.5;
    var t = step0;
    var lit = 1.0;
    for (var i = 0u; i < terrain.shadow_steps; i++) {
        let q = start + l * t;
        if q.y > terrain.h_max {
            break;
        }
        let gap = q.y - height_at(q.xz);
        lit = min(lit, 8.0 * gap / t);
        if lit <= 0.0 {
            break;
        }
        t *= 1.18;
    }
    return smoothstep(0.0, 1.0, lit);
}


// Texels of the bounce light's grid along x and z: every bounce_stride-th height sample, and the last.
fn bounce_dims() -> vec2<u32> {
    let s = max(terrain.bounce_stride, 1u);
    return (vec2<u32>(terrain.nx, terrain.nz) + s - 2u) / s + 1u;
}

// The height sample of bounce texel t.
fn bounce_sample(t: vec2<u32>) -> vec2<u32> {
    return min(t * max(terrain.bounce_stride, 1u), vec2<u32>(terrain.nx, terrain.nz) - 1u);
}

// A bilinear lookup in the bounce light's grid at grid coordinates g (height samples): the index of the
// lower corner texel, the next texel's offsets along x and z (0 at the last), and the weights.
struct BounceCorner {
    base: u32,
    step: vec2<u32>,
    f: vec2<f32>,
}

fn bounce_corner(g: vec2<f32>) -> BounceCorner {
    let dims = bounce_dims();
    let last = vec2<f32>(dims - 1u);
    let c = clamp(g / f32(max(terrain.bounce_stride, 1u)), vec2<f32>(0.0), last);
    let i = min(floor(c), max(last - 1.0, vec2<f32>(0.0)));
    let t = vec2<u32>(i);
    let step = vec2<u32>(select(0u, 1u, t.x + 1u < dims.x), select(0u, dims.x, t.y + 1u < dims.y));
    return BounceCorner(t.y * dims.x + t.x, step, c - i);
}
