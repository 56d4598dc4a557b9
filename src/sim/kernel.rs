//! The SPH kernel on the CPU (twin of `shaders/common/kernels.wgsl`) and the constants derived from it
//! once per scene: the particle volume that makes a full lattice sum to rho0, the PCISPH pressure
//! coefficient delta (Solenthaler & Pajarola 2009, eq. 8) from a full-neighbourhood prototype particle,
//! and the boundary table: the kernel's integral over a half space at signed distance d
//! (the density of a planar wall of rest density, after Koschier & Bender 2017's density maps).
//!
//! Kernel: 3-D Wendland C2, support radius 2h, q = r/h:
//! `W = 21/(16 pi h^3) (1 - q/2)^4 (2q + 1)`, `grad W = -5 * 21/(16 pi h^3) / h^2 (1 - q/2)^3 x`.

use std::f64::consts::PI;

/// W(r, h) in 1/m^3.
pub fn w(r: f64, h: f64) -> f64 {
    let q = r / h;
    if q >= 2.0 {
        return 0.0;
    }
    let t = 1.0 - 0.5 * q;
    21.0 / (16.0 * PI * h.powi(3)) * t.powi(4) * (2.0 * q + 1.0)
}

/// grad W(x, h) in 1/m^4 (points from the neighbour towards... i.e. along -x for x = x_i - x_j, as usual).
pub fn grad_w(x: [f64; 3], h: f64) -> [f64; 3] {
    let r = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
    let q = r / h;
    if q >= 2.0 {
        return [0.0; 3];
    }
    let t = 1.0 - 0.5 * q;
    let f = -5.0 * 21.0 / (16.0 * PI * h.powi(3)) / (h * h) * t.powi(3);
    [f * x[0], f * x[1], f * x[2]]
}

/// Offsets (in units of dx) of every lattice neighbour within the support, the particle itself included.
pub(crate) fn lattice_offsets(h_over_dx: f64) -> Vec<[f64; 3]> {
    let n = (2.0 * h_over_dx).ceil() as i32 + 1;
    let mut out = Vec::new();
    for i in -n..=n {
        for j in -n..=n {
            for k in -n..=n {
                let o = [i as f64, j as f64, k as f64];
                if (o[0] * o[0] + o[1] * o[1] + o[2] * o[2]).sqrt() < 2.0 * h_over_dx {
                    out.push(o);
                }
            }
        }
    }
    out
}

/// Sum of W over a full cubic lattice of spacing dx around a particle (itself included), 1/m^3.
pub fn lattice_sum_w(dx: f64, h: f64) -> f64 {
    lattice_offsets(h / dx).iter().map(|o| w(dx * (o[0] * o[0] + o[1] * o[1] + o[2] * o[2]).sqrt(), h)).sum()
}

/// Particle volume V such that a particle inside a full lattice has density rho0: m = rho0 V, V = 1 / sum W.
/// Close to dx^3 (within a few per cent for h = 1.2 dx).
pub fn particle_volume(dx: f64, h: f64) -> f64 {
    1.0 / lattice_sum_w(dx, h)
}

/// PCISPH delta for dt = 1 s (the GPU divides by dt^2): delta = 1 / (beta (|sum grad W|^2 + sum |grad W|^2)),
/// beta = 2 (m / rho0)^2 = 2 V^2, over a full-neighbourhood prototype on the lattice.
pub fn pcisph_delta_unit(dx: f64, h: f64) -> f64 {
    let v = particle_volume(dx, h);
    let mut sum = [0.0; 3];
    let mut sum_sq = 0.0;
    for o in lattice_offsets(h / dx) {
        if o == [0.0, 0.0, 0.0] {
            continue;
        }
        let g = grad_w([o[0] * dx, o[1] * dx, o[2] * dx], h);
        for a in 0..3 {
            sum[a] += g[a];
        }
        sum_sq += g[0] * g[0] + g[1] * g[1] + g[2] * g[2];
    }
    let dot = sum[0] * sum[0] + sum[1] * sum[1] + sum[2] * sum[2];
    1.0 / (2.0 * v * v * (dot + sum_sq))
}

/// Integral of W over the disc at height z, I(z) = 2 pi int_|z|^2h W(r) r dr, in 1/m.
fn disc_integral(z: f64, h: f64, steps: usize) -> f64 {
    let a = z.abs();
    let b = 2.0 * h;
    if a >= b {
        return 0.0;
    }
    let dr = (b - a) / steps as f64;
    (0..steps)
        .map(|k| {
            let r = a + (k as f64 + 0.5) * dr;
            w(r, h) * r * dr
        })
        .sum::<f64>()
        * 2.0
        * PI
}

/// Boundary table of `n` samples over d in [-2h, 2h]: (Phi(d), I(|d|)) where Phi(d) is the fraction of the
/// kernel's mass beyond a plane at signed distance d (Phi(2h) = 0, Phi(0) = 1/2, Phi(-2h) = 1) and
/// I = -dPhi/dd (1/m). A wall of rest density adds rho0 Phi(d) to a particle's density.
/// This is the continuous integral; [`boundary_table_for_lattice`] matches it to the particle lattice.
pub fn boundary_table(h: f64, n: usize) -> Vec<[f32; 2]> {
    let r = 2.0 * h;
    let fine = 4096;
    // Cumulative integral of I from z to 2h, tabulated finely then sampled.
    let dz = 2.0 * r / fine as f64;
    let mut phi = vec![0.0; fine + 1];
    for k in (0..fine).rev() {
        let z = -r + (k as f64 + 0.5) * dz;
        phi[k] = phi[k + 1] + disc_integral(z, h, 256) * dz;
    }
    (0..n)
        .map(|i| {
            let d = -r + 2.0 * r * i as f64 / (n - 1) as f64;
            let u = (d + r) / dz;
            let k = (u.floor() as usize).min(fine - 1);
            let f = u - k as f64;
            let p = phi[k] * (1.0 - f) + phi[k + 1] * f;
            [p as f32, disc_integral(d, h, 256) as f32]
        })
        .collect()
}

/// f32 helpers for the CPU reference.
pub fn w32(r: f32, h: f32) -> f32 {
    w(r as f64, h as f64) as f32
}

/// Density deficit (as a fraction of rho0) of a lattice particle whose nearest lattice layer beyond a
/// plane is `layers` spacings away: V sum of W over the lattice sites with normal offset <= -layers.
pub fn lattice_missing_fraction(dx: f64, h: f64, layers: f64) -> f64 {
    let v = particle_volume(dx, h);
    lattice_offsets(h / dx)
        .iter()
        .filter(|o| o[1] <= -layers)
        .map(|o| v * w(dx * (o[0] * o[0] + o[1] * o[1] + o[2] * o[2]).sqrt(), h))
        .sum()
}

/// The boundary table matched to the particle lattice: the continuous half-space integral, shifted along d
/// so that a particle of the initial lattice at dx/2 from a wall (the first layer a scene fills) has exactly
/// rest density, Phi(dx/2) = the lattice's missing fraction. Unshifted, the integral overestimates the
/// missing lattice layers by a few per cent, which a stiff pressure solver turns into a start-up burst;
/// scaling instead of shifting softens the wall. The shift is found by bisection (Phi is monotone).
pub fn boundary_table_for_lattice(dx: f64, h: f64, n: usize) -> Vec<[f32; 2]> {
    let r = 2.0 * h;
    let fine = boundary_table(h, 4097);
    let step = 2.0 * r / 4096.0;
    let sample = |d: f64, c: usize| {
        let u = ((d + r) / step).clamp(0.0, 4096.0);
        let k = (u.floor() as usize).min(4095);
        let f = u - k as f64;
        fine[k][c] as f64 * (1.0 - f) + fine[k + 1][c] as f64 * f
    };
    let target = lattice_missing_fraction(dx, h, 1.0);
    let (mut lo, mut hi) = (-r, r);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if sample(mid, 0) > target {
            lo = mid
        } else {
            hi = mid
        }
    }
    let shift = 0.5 * (lo + hi) - 0.5 * dx;
    (0..n)
        .map(|i| {
            let d = -r + 2.0 * r * i as f64 / (n - 1) as f64 + shift;
            [sample(d, 0) as f32, sample(d, 1) as f32]
        })
        .collect()
}

/// Kernel gradient normalisation on the lattice: C = -V sum_j (x_ij . e)(grad W_ij . e) for any axis e
/// (1 for the continuous kernel; a few per cent less on the particle lattice at h = 1.2 dx). Pressure
/// forces divided by C reproduce a linear pressure field's gradient exactly on the lattice, so a resting
/// column's pressure gradient is rho0 g instead of about 5 % more (kernel gradient correction in the
/// spirit of Bonet & Lok 1999, as one scalar for the rest lattice).
pub fn gradient_normalization(dx: f64, h: f64) -> f64 {
    let v = particle_volume(dx, h);
    -lattice_offsets(h / dx)
        .iter()
        .map(|o| {
            let x = [o[0] * dx, o[1] * dx, o[2] * dx];
            x[1] * grad_w(x, h)[1] * v
        })
        .sum::<f64>()
}
