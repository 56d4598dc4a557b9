// One particle's splat, written by the anisotropy pass (anisotropy.wgsl) and read by the splats
// (splat.wgsl). Rust twin: Ellipsoid in src/render/anisotropy.rs. 32 bytes as a value, stored as two
// 16-byte arrays in separate bindings (`centre` and `g_packed`, index = particle), so each array of N
// particles needs a binding of 16 N bytes (268 M particles in a 4 GiB binding, not 134 M), and the splats'
// culling and pixel boxes read only the centres. The centre in 32-bit floats (a 60 m scene at 4 um), the six
// entries of the symmetric G = R diag(1 / axes) R^T (1/m) in 16-bit floats. Rounding G's entries to 16 bits
// (relative 2^-11) gives a slightly different ellipsoid, not a displaced one: the splat ray-casts it
// exactly, and its axes and orientation change by about 5e-4 of themselves (the axis ratio is clamped to
// kr, so it stays positive definite).
struct Ellipsoid {
    centre: vec4<f32>,   // xyz = smoothed centre (m), w = bounding radius = longest semi-axis (m); 0 = not drawn
    g_packed: vec4<u32>, // pack2x16float: (g00, g11), (g22, g01), (g02, g12), unused
}

// Largest magnitude stored (16-bit floats end at 65504): an axis of 15 um.
const G_MAX: f32 = 65000.0;

fn pack_ellipsoid(centre: vec3<f32>, bound: f32, g: mat3x3<f32>) -> Ellipsoid {
    let a = clamp(vec3<f32>(g[0][0], g[1][1], g[2][2]), vec3<f32>(-G_MAX), vec3<f32>(G_MAX));
    let b = clamp(vec3<f32>(g[0][1], g[0][2], g[1][2]), vec3<f32>(-G_MAX), vec3<f32>(G_MAX));
    return Ellipsoid(vec4<f32>(centre, bound), vec4<u32>(pack2x16float(a.xy), pack2x16float(vec2<f32>(a.z, b.x)), pack2x16float(b.yz), 0u));
}

// G as a matrix (symmetric: its columns are its rows).
fn ellipsoid_g(e: Ellipsoid) -> mat3x3<f32> {
    let d01 = unpack2x16float(e.g_packed.x);
    let d2o = unpack2x16float(e.g_packed.y);
    let o12 = unpack2x16float(e.g_packed.z);
    return mat3x3<f32>(
        vec3<f32>(d01.x, d2o.y, o12.x),
        vec3<f32>(d2o.y, d01.y, o12.y),
        vec3<f32>(o12.x, o12.y, d2o.x),
    );
}

// Entry and exit distances (t0 <= t1, metres) of the unit ray from `origin` along `dir` through ellipsoid
// e; t1 <= 0 when the ray misses it or it lies behind the origin. The ray is solved in the ellipsoid's
// unit-sphere space (x -> G (x - c)) in the robust form of Haines et al. (Ray Tracing Gems ch. 7: the
// offset perpendicular to the ray).
fn ray_ellipsoid_from(e: Ellipsoid, origin: vec3<f32>, dir: vec3<f32>) -> vec2<f32> {
    let g = ellipsoid_g(e);
    let o = g * (origin - e.centre.xyz);
    let d = g * dir;
    let a = dot(d, d);
    let b = dot(o, d);
    let perp = o - (b / a) * d;
    let disc = a * (1.0 - dot(perp, perp));
    if disc < 0.0 {
        return vec2<f32>(0.0, -1.0);
    }
    let sq = sqrt(disc);
    return vec2<f32>(max((-b - sq) / a, 0.0), (-b + sq) / a);
}
