// Surface tension after Akinci, Akinci & Teschner 2013, "Versatile surface tension and adhesion for SPH
// fluids" (ACM TOG 32(6), eq. 1-6), with their h = our support radius R = 2h:
//   surface_normals (a pass of its own, after the grid build): n_i = R sum_j m_j / rho_j grad W_ij,
//       dimensionless, large only near the free surface; stored in `accel`.
//   surface_tension_accel (called from the non-pressure force kernels, dfsph.wgsl `df_nonpressure` and
//       pcisph.wgsl `density_forces`):
//       a_i = -gamma sum_{j != i} K_ij (m_j C(r_ij) x_ij / r_ij + (n_i - n_j)),  K_ij = 2 rho0 / (rho_i + rho_j)
//   with the cohesion spline (eq. 2)
//       C(r) = 32 / (pi R^9) * { (R - r)^3 r^3                  if R/2 < r <= R
//                              { 2 (R - r)^3 r^3 - R^6 / 64     if 0 < r <= R/2
// (repulsive below about 0.28 R, attractive beyond). Cohesion pulls the surface particles inward; the
// curvature term minimises the surface area. K_ij makes both stronger where the fluid is thin.
// Densities are those of the previous step, carried through the sort in spos.w (the current ones are not
// known yet when PCISPH computes its forces); both forces are antisymmetric in i, j, so momentum is kept.
// Storage: `accel` is free from the grid build until the pressure force of PCISPH/WCSPH writes it; DFSPH
// uses it as the solves' scratch, so there the normals are computed after the divergence-free solve and
// read by df_nonpressure before the density solve overwrites them. No buffer of their own.
// Its functions are imported by pcisph.wgsl and dfsph.wgsl; `surface_normals` is the stage of
// src/sim/surface_tension.rs, recorded only when gamma > 0.
#import "sim/common.wgsl"
#import "sim/cells.wgsl"

// Density of sorted particle j from the previous step (spos.w), kept away from zero.
fn st_density(j: u32) -> f32 {
    return max(spos_load(j).w, 0.1 * params.rho0);
}

// Akinci et al. 2013's cohesion spline C(r) for support radius `big_r`, 1/m^3 (written in q = r / R to
// stay in f32 range for small R).
fn akinci_cohesion(r: f32, big_r: f32) -> f32 {
    let q = r / big_r;
    if (q <= 0.0 || q >= 1.0) {
        return 0.0;
    }
    let s = (1.0 - q) * q;
    let a = s * s * s;
    var c = a;
    if (q <= 0.5) {
        c = 2.0 * a - 1.0 / 64.0;
    }
    return 32.0 / (PI * big_r * big_r * big_r) * c;
}

// n_i = R sum_j m_j / rho_j grad W_ij into accel[i].xyz (w = 1 marks a valid normal).
@compute @workgroup_size(WG)
fn surface_normals(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= active_end()) {
        return;
    }
    let h = params.h;
    let m = params.mass;
    let xi = spos_load(i).xyz;
    let c = cell_coord(xi);
    let k = wendland(h);
    var n = vec3<f32>(0.0);
    for (var dz = -reach(); dz <= reach(); dz++) {
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_range(xi, c, dy, dz);
            for (var j = range.x; j < range.y; j++) {
                let xij = xi - spos_load(j).xyz;
                let r2 = dot(xij, xij);
                if (r2 < 4.0 * h * h && j != i) {
                    n += m / st_density(j) * wendland_grad(k, xij, sqrt(r2));
                }
            }
        }
    }
    accel_store(i, vec4<f32>(2.0 * h * n, 1.0));
}

// Surface tension acceleration of sorted particle i (m/s^2), from the normals of `surface_normals`.
// Call only when params.surface_tension > 0.
fn surface_tension_accel(i: u32) -> vec3<f32> {
    let h = params.h;
    let big_r = 2.0 * h;
    let m = params.mass;
    let xi = spos_load(i).xyz;
    let ni = accel_load(i).xyz;
    let rho_i = st_density(i);
    let c = cell_coord(xi);
    var a = vec3<f32>(0.0);
    for (var dz = -reach(); dz <= reach(); dz++) {
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_range(xi, c, dy, dz);
            for (var j = range.x; j < range.y; j++) {
                let xij = xi - spos_load(j).xyz;
                let r2 = dot(xij, xij);
                if (r2 < big_r * big_r && j != i && r2 > 1e-12 * h * h) {
                    let r = sqrt(r2);
                    let k_ij = 2.0 * params.rho0 / (rho_i + st_density(j));
                    let cohesion = m * akinci_cohesion(r, big_r) / r * xij;
                    let curvature = ni - accel_load(j).xyz;
                    a += k_ij * (cohesion + curvature);
                }
            }
        }
    }
    return -params.surface_tension * a;
}
