// Anisotropic kernels for screen-space fluid splats: Yu & Turk, "Reconstructing surfaces of
// particle-based fluids using anisotropic kernels" (SCA 2010 / ACM TOG 2013). For every particle i, the
// neighbours j within r (= 2h) give weights w_ij = 1 - (|x_i - x_j| / r)^3, a weighted mean xw_i and a
// weighted covariance C_i. A cyclic Jacobi eigen-solver gives C = R diag(s1 >= s2 >= s3) R^T; the axis
// lengths are the standard deviations sqrt(s_k), clamped so that no axis is shorter than the longest / kr,
// then normalised to the volume of the splat sphere and scaled. Fewer than n_eps neighbours: a sphere,
// smaller the fewer they are, down to k_n times the splat radius for a particle alone (Yu & Turk's
// k_n I for isolated particles, k_n = 0.5 in the paper; here blended over 1 .. n_eps neighbours so a
// particle leaving the water shrinks instead of popping): spray and lone particles on the banks read as
// small droplets, not as discs as wide as the water's splats.
// The centre is smoothed: x' = (1 - lambda) x + lambda xw.
// Neighbours come from a small spatial-hash grid built here by counting sort (count, scan, scatter;
// Green 2010): cells of r/2, hashed so that each row of cells along x stays whole and in order in the
// table (bucket = hash(y, z) + x), so a row's cells within r of the particle are one range of `sorted`:
// 25 ranges (rows trimmed to the sphere of radius r) instead of 27 cells of r, about 0.4x the candidates.
// Rows of other (y, z) folded onto the same buckets are filtered by comparing each candidate's own row.
// Output per particle (the splat pass reads it directly): centre (xyz, w = bounding radius) and
// G = R diag(1 / axes) R^T, which maps a world offset from the centre into the ellipsoid's unit sphere
// (32 bytes, G in 16-bit floats, in two 16-byte arrays: render/ellipsoid.wgsl).

#import "common/dispatch.wgsl"
#import "render/ellipsoid.wgsl"

// Rust twin: AnisotropyUniform in src/render/anisotropy.rs (48 bytes).
struct Params {
    count: u32,
    table_size: u32,
    radius: f32,       // neighbour radius r = 2h, metres (the hash grid's cells are r/2)
    splat_radius: f32, // radius of the sphere splat, metres
    kr: f32,           // largest axis ratio
    scale: f32,        // overall scale of the ellipsoid axes
    n_eps: u32,        // fewer neighbours than this: sphere
    lambda: f32,       // centre smoothing, 0..1
    enabled: u32,      // 0: every particle a sphere at its own centre
    k_n: f32,          // radius of a lone particle's sphere, of splat_radius
    _pad1: u32,
    _pad2: u32,
}

@group(1) @binding(0) var<uniform> params: Params;
// The particles' positions, split over bindings like the simulation's (src/gpu/split.rs).
#split_array 1 1 read positions vec4<f32>
// table_size (a power of two) + 1 counters; after the scan, the first index of each bucket in `sorted`.
@group(1) @binding(2) var<storage, read_write> cells: array<atomic<u32>>;
@group(1) @binding(3) var<storage, read_write> slots: array<u32>;
// After the scatter: the positions in bucket order (coherent reads for the neighbour rows). Split like
// the positions (16 bytes per particle), in chunks of the same length.
#split_array 1 4 read_write sorted vec4<f32>
// The ellipsoids' halves (render/ellipsoid.wgsl), two arrays of 16 bytes per particle, each split.
#split_array 1 5 read_write ellipsoid_centres vec4<f32>
#split_array 1 6 read_write ellipsoid_gs vec4<u32>

fn store_ellipsoid(i: u32, e: Ellipsoid) {
    ellipsoid_centres_store(i, e.centre);
    ellipsoid_gs_store(i, e.g_packed);
}

fn cell_size() -> f32 {
    return 0.5 * params.radius;
}

// The cell of p; one reciprocal, multiplied (the same expression wherever cells are computed).
fn cell_of(p: vec3<f32>) -> vec3<i32> {
    return vec3<i32>(floor(p * (1.0 / cell_size())));
}

// Row (y, z) hashed, plus x: consecutive cells of a row take consecutive buckets (modulo the table size,
// a power of two, so the wrap of u32 arithmetic agrees with it).
fn bucket(c: vec3<i32>) -> u32 {
    let u = bitcast<vec3<u32>>(c);
    return (((u.y * 19349663u) ^ (u.z * 83492791u)) + u.x) & (params.table_size - 1u);
}

@compute @workgroup_size(128)
fn count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, 128u);
    if i >= params.count {
        return;
    }
    slots[i] = atomicAdd(&cells[bucket(cell_of(positions_load(i).xyz))], 1u);
}

@compute @workgroup_size(128)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, 128u);
    if i >= params.count {
        return;
    }
    let p = positions_load(i);
    let start = atomicLoad(&cells[bucket(cell_of(p.xyz))]);
    sorted_store(start + slots[i], p);
}

// Eigen-decomposition of a symmetric 3x3 matrix: `values` unsorted, `vectors` column k for values[k].
struct Eigen {
    values: vec3<f32>,
    vectors: mat3x3<f32>,
}

// One Jacobi rotation zeroing a[p][q] (p < q); accumulates the rotation into v.
fn jacobi_rotate(a: ptr<function, mat3x3<f32>>, v: ptr<function, mat3x3<f32>>, p: i32, q: i32) {
    let apq = (*a)[q][p];
    if abs(apq) < 1e-30 {
        return;
    }
    let theta = ((*a)[q][q] - (*a)[p][p]) / (2.0 * apq);
    let t = sign(theta + select(0.0, 1e-30, theta == 0.0)) / (abs(theta) + sqrt(theta * theta + 1.0));
    let c = 1.0 / sqrt(t * t + 1.0);
    let s = t * c;
    // A' = J^T A J with J the rotation in the (p, q) plane.
    var j = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    j[p][p] = c;
    j[q][q] = c;
    j[q][p] = s;
    j[p][q] = -s;
    *a = transpose(j) * (*a) * j;
    (*a)[q][p] = 0.0;
    (*a)[p][q] = 0.0;
    *v = (*v) * j;
}

fn eigen_symmetric(m: mat3x3<f32>) -> Eigen {
    var a = m;
    var v = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    for (var sweep = 0; sweep < 6; sweep++) {
        jacobi_rotate(&a, &v, 0, 1);
        jacobi_rotate(&a, &v, 0, 2);
        jacobi_rotate(&a, &v, 1, 2);
    }
    return Eigen(vec3<f32>(a[0][0], a[1][1], a[2][2]), v);
}

fn sphere(c: vec3<f32>, r: f32) -> Ellipsoid {
    let g = 1.0 / r;
    return pack_ellipsoid(c, r, mat3x3<f32>(vec3<f32>(g, 0.0, 0.0), vec3<f32>(0.0, g, 0.0), vec3<f32>(0.0, 0.0, g)));
}

// Weighted sums over the neighbours of x_i: weights, offsets q = x_j - x_i (which keep the sums well
// conditioned far from the origin), their outer products (symmetric: the diagonal xx, yy, zz and
// xy, xz, yz), and the count.
struct Sums {
    w: f32,
    q: vec3<f32>,
    qq_diag: vec3<f32>,
    qq_off: vec3<f32>,
    n: u32,
}

// Distance from coordinate x to the slab of cells c (along one axis), 0 inside it.
fn slab_gap(x: f32, c: i32, cs: f32) -> f32 {
    return max(max(f32(c) * cs - x, x - f32(c + 1) * cs), 0.0);
}

// Adds the particles sorted[k0 .. k1] that lie in row `row` (y, z) and within r of x_i.
fn gather(k0: u32, k1: u32, xi: vec3<f32>, row: vec2<i32>, sums: ptr<function, Sums>) {
    let r = params.radius;
    let inv_r = 1.0 / r;
    for (var k = k0; k < k1; k++) {
        let pj = sorted_load(k);
        let q = pj.xyz - xi;
        let d2 = dot(q, q);
        // The distance first (most candidates fail it), then whether the candidate belongs here.
        if d2 >= r * r || any(cell_of(pj.xyz).yz != row) || pj.w < 0.0 {
            continue; // beyond r, another row folded onto these buckets, or a parked particle
        }
        let s = sqrt(d2) * inv_r;
        let w = 1.0 - s * s * s;
        let wq = w * q;
        (*sums).w += w;
        (*sums).q += wq;
        (*sums).qq_diag += wq * q;
        (*sums).qq_off += wq.xxy * q.yzz;
        (*sums).n += 1u;
    }
}

@compute @workgroup_size(128)
fn anisotropy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, 128u);
    if i >= params.count {
        return;
    }
    let pi = positions_load(i);
    let xi = pi.xyz;
    if pi.w < 0.0 {
        // Parked in the emitters' pool (see sim/common.wgsl): not drawn (the splat pass culls r = 0).
        store_ellipsoid(i, Ellipsoid(vec4<f32>(xi, 0.0), vec4<u32>(0u)));
        return;
    }
    if params.enabled == 0u {
        store_ellipsoid(i, sphere(xi, params.splat_radius));
        return;
    }
    let r = params.radius;
    let cs = cell_size();
    let ci = cell_of(xi);
    let t = params.table_size;
    var sums = Sums(0.0, vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0), 0u);
    for (var dz = -2; dz <= 2; dz++) {
        let cz = ci.z + dz;
        let gz = slab_gap(xi.z, cz, cs);
        for (var dy = -2; dy <= 2; dy++) {
            let cy = ci.y + dy;
            let gy = slab_gap(xi.y, cy, cs);
            let rest = r * r - gy * gy - gz * gz;
            if rest <= 0.0 {
                continue; // the row lies beyond r
            }
            // The row's cells within r of x_i along x: one run of buckets, split where it wraps.
            let rx = sqrt(rest);
            let x0 = i32(floor((xi.x - rx) * (1.0 / cs)));
            let x1 = i32(floor((xi.x + rx) * (1.0 / cs)));
            let b0 = bucket(vec3<i32>(x0, cy, cz));
            let b1 = b0 + u32(x1 - x0 + 1);
            gather(atomicLoad(&cells[b0]), atomicLoad(&cells[min(b1, t)]), xi, vec2<i32>(cy, cz), &sums);
            if b1 > t {
                gather(atomicLoad(&cells[0]), atomicLoad(&cells[b1 - t]), xi, vec2<i32>(cy, cz), &sums);
            }
        }
    }
    let mean = sums.q / max(sums.w, 1e-20);
    let centre = xi + params.lambda * mean;
    if sums.n < params.n_eps {
        // 1 (alone) .. n_eps - 1 neighbours, the particle included: k_n .. nearly 1 of the radius.
        let crowd = f32(sums.n - 1u) / f32(max(params.n_eps, 2u) - 1u);
        store_ellipsoid(i, sphere(centre, params.splat_radius * mix(params.k_n, 1.0, crowd)));
        return;
    }
    let d = sums.qq_diag;
    let o = sums.qq_off;
    let qq = mat3x3<f32>(vec3<f32>(d.x, o.x, o.y), vec3<f32>(o.x, d.y, o.z), vec3<f32>(o.y, o.z, d.z));
    let cov = qq * (1.0 / sums.w) - mat3x3<f32>(mean * mean.x, mean * mean.y, mean * mean.z);
    let e = eigen_symmetric(cov);
    // Standard deviations along the principal axes, ratio-clamped and normalised to the sphere's volume.
    let sd = sqrt(max(e.values, vec3<f32>(0.0)));
    let s1 = max(max(sd.x, max(sd.y, sd.z)), 1e-12);
    let clamped = max(sd, vec3<f32>(s1 / max(params.kr, 1.0)));
    let norm = pow(clamped.x * clamped.y * clamped.z, 1.0 / 3.0);
    let axes = params.splat_radius * params.scale * clamped / norm;
    // G = R diag(1 / axes) R^T (symmetric: its columns are its rows).
    let rot = e.vectors;
    let g = rot * mat3x3<f32>(vec3<f32>(1.0 / axes.x, 0.0, 0.0), vec3<f32>(0.0, 1.0 / axes.y, 0.0), vec3<f32>(0.0, 0.0, 1.0 / axes.z)) * transpose(rot);
    let bound = max(axes.x, max(axes.y, axes.z));
    store_ellipsoid(i, pack_ellipsoid(centre, bound, g));
}
