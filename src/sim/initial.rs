//! The initial state of a scene's particles beyond positions and velocities: the water starts at
//! hydrostatic rest.

use super::params::SimParams;
use glam::Vec3;
use std::collections::HashMap;

/// The pressure of water at rest, rho0 |g_y| (surface - y) per particle (Pa), `positions` in metres: the
/// surface of a particle's column is the highest particle in its (x, z) bin of dx x dx, plus dx / 2. It is
/// the particles' first pressure, which the solvers' warm start takes up (DFSPH's density solve, PCISPH),
/// so a scene's water starts at hydrostatic rest like a column held behind a gate, instead of building
/// its pressure over the first steps while it compresses (the 0.3 m dam break at dx = 5 mm lagged the
/// experiment by about 15 ms that way, and at low viscosity blew up). It does not calm every start: the
/// coarse lavapipe tank (0.8 m, dx = 0.04 m) moves more in its first frame (largest speed 0.82 against
/// 0.34 m/s, kinetic energy 10.7 against 7.7 J) and the same after that; the settled figures of
/// `waterview validate` did not change. Zero where gravity does not point down (negative y).
pub fn hydrostatic_pressure(positions: &[Vec3], params: &SimParams) -> Vec<f32> {
    let first = Hydrostatic::new(params);
    if !first.on() || positions.is_empty() {
        return vec![0.0; positions.len()];
    }
    let mut top: HashMap<(i64, i64), f32> = HashMap::new();
    for p in positions {
        let t = top.entry(first.bin(p.x, p.z)).or_insert(f32::MIN);
        *t = t.max(p.y);
    }
    positions.iter().map(|p| first.pressure(top[&first.bin(p.x, p.z)], p.y)).collect()
}

/// The first pressure of [`hydrostatic_pressure`] piece by piece, for builds that never hold every
/// particle (`crate::scene::SceneSetup::for_each_chunk` finds each column's surface from the fluid
/// blocks): the (x, z) bin of a particle and the pressure at a depth below its column's top.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hydrostatic {
    /// Bin size along x and z, metres (the spacing dx).
    pub dx: f32,
    /// Rest density, kg/m^3 (also the density every particle starts with).
    pub rho0: f32,
    /// Downward gravity, m/s^2 (-g_y); at or below zero every pressure is zero.
    pub g: f32,
}

impl Hydrostatic {
    /// From the solver parameters: their dx, rho0 and -gravity.y.
    pub fn new(params: &SimParams) -> Self {
        Self { dx: params.dx, rho0: params.rho0, g: -params.gravity[1] }
    }

    /// Whether gravity points down (else every first pressure is 0 and no column top is needed).
    pub fn on(&self) -> bool {
        self.g > 0.0
    }

    /// The (x, z) bin of dx x dx that holds world (x, z), metres.
    pub fn bin(&self, x: f32, z: f32) -> (i64, i64) {
        ((x / self.dx).floor() as i64, (z / self.dx).floor() as i64)
    }

    /// Pressure, Pa, of a particle at height `y` (m) whose bin's highest particle is at `top` (m):
    /// rho0 g (top + dx / 2 - y), at least 0; 0 when gravity does not point down.
    pub fn pressure(&self, top: f32, y: f32) -> f32 {
        if !self.on() {
            return 0.0;
        }
        self.rho0 * self.g * (top + 0.5 * self.dx - y).max(0.0)
    }

    /// The first pressure of a particle `free` metres (horizontally) from the nearest free face of water
    /// released at t = 0, Pa: the pressure at t = 0+ of a column of height `top + dx / 2 - floor` standing
    /// on a rigid floor at `floor` (m), its top and its face free, at rest ([`released_column`]); `free`
    /// = +inf gives [`Hydrostatic::pressure`]. 0 when gravity does not point down.
    pub fn pressure_near_face(&self, top: f32, floor: f32, y: f32, free: f32) -> f32 {
        let height = top + 0.5 * self.dx - floor;
        if !self.on() || height <= 0.0 {
            return 0.0;
        }
        let eta = ((y - floor) / height).clamp(0.0, 1.0);
        self.rho0 * self.g * height * released_column(eta, free / height)
    }
}

/// The pressure at t = 0+ of a column of water released from rest, over rho0 g H: `eta` = height above the
/// floor over the column's height H (0..1), `s` = horizontal distance to the free face over H (>= 0; +inf
/// far from any face). Dimensionless, 0..1.
///
/// At the instant of release the water is at rest, so the pressure is harmonic (div u = 0 and u = 0 give
/// laplace(p) = 0), vanishes on the free surfaces (the top, eta = 1, and the face, s = 0) and holds the
/// water's weight on the floor (dp/dy = -rho0 g at eta = 0). The 2-D solution for a deep column beside its
/// face (the initial stage of dam-break flow: Stansby, Chegini & Barnes 1998, J. Fluid Mech. 374) is the
/// hydrostatic pressure less the Fourier cosine series of 1 - eta in the quarter waves that meet the top's
/// and the floor's conditions, each decaying away from the face as a harmonic function does:
///
/// p / (rho0 g H) = (1 - eta) - sum_n 8 / (pi^2 k_n^2) cos(k_n pi eta / 2) exp(-k_n pi s / 2),  k_n = 2n - 1.
///
/// Far from the face it is the hydrostatic 1 - eta; at the face 0; at the floor 0.62 of the hydrostatic
/// pressure half a column height in, 0.83 one column height in, 0.22 a tenth of it in (where the earlier
/// min(depth, distance) gave 0.5, 1.0 and 0.1).
pub fn released_column(eta: f32, s: f32) -> f32 {
    let (eta, s) = (f64::from(eta.clamp(0.0, 1.0)), f64::from(s.max(0.0)));
    let mut p = 1.0 - eta;
    for n in 1..=256 {
        let k = f64::from(2 * n - 1) * std::f64::consts::FRAC_PI_2;
        let decay = (-k * s).exp();
        if decay < 1e-9 {
            break;
        }
        p -= 2.0 / (k * k) * (k * eta).cos() * decay;
    }
    p.clamp(0.0, 1.0) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_starts_at_rho0_g_depth_and_two_columns_have_their_own_surfaces() {
        let params = SimParams { dx: 0.1, ..SimParams::default() };
        // Column A: 10 layers at x = 0.05; column B: 3 layers at x = 0.55.
        let mut positions: Vec<Vec3> = (0..10).map(|k| Vec3::new(0.05, 0.05 + 0.1 * k as f32, 0.05)).collect();
        positions.extend((0..3).map(|k| Vec3::new(0.55, 0.05 + 0.1 * k as f32, 0.05)));
        let p = hydrostatic_pressure(&positions, &params);
        let rho_g = 1000.0 * 9.81;
        assert!((p[0] - rho_g * 0.95).abs() < 1.0, "bottom of A: {}", p[0]);
        assert!((p[9] - rho_g * 0.05).abs() < 1.0, "top of A: {}", p[9]);
        assert!((p[10] - rho_g * 0.25).abs() < 1.0, "bottom of B: {}", p[10]);
        let up = SimParams { dx: 0.1, gravity: [0.0, 9.81, 0.0], ..SimParams::default() };
        assert!(hydrostatic_pressure(&positions, &up).iter().all(|&q| q == 0.0));
    }

    /// The series is the pressure of water released from rest: harmonic, zero on the top and on the face,
    /// dp/dy = -rho0 g on the floor, hydrostatic far from the face.
    #[test]
    fn the_released_column_is_harmonic_with_the_free_surfaces_and_the_floor_it_needs() {
        let p = |eta: f32, s: f32| f64::from(released_column(eta, s));
        for &eta in &[0.1f32, 0.3, 0.5, 0.8] {
            for &s in &[0.2f32, 0.5, 1.0] {
                let e = 0.01f32;
                let laplacian = (p(eta + e, s) + p(eta - e, s) + p(eta, s + e) + p(eta, s - e) - 4.0 * p(eta, s))
                    / f64::from(e * e);
                assert!(laplacian.abs() < 0.05, "laplacian {laplacian} at eta {eta}, s {s}");
            }
        }
        for &s in &[0.3f32, 2.0] {
            assert!(p(1.0, s).abs() < 1e-6, "top at s {s}: {}", p(1.0, s));
            let e = 1e-3f32;
            let slope = (p(e, s) - p(0.0, s)) / f64::from(e);
            assert!((slope + 1.0).abs() < 0.01, "floor slope {slope} at s {s}");
        }
        for &eta in &[0.05f32, 0.5, 0.95] {
            assert!(p(eta, 0.0) < 0.02, "face at eta {eta}: {}", p(eta, 0.0));
            assert!((p(eta, 8.0) - f64::from(1.0 - eta)).abs() < 1e-5, "far at eta {eta}");
            assert!((p(eta, f32::INFINITY) - f64::from(1.0 - eta)).abs() < 1e-6);
        }
        // The figures the docs quote, at the floor.
        for (s, want) in [(0.1, 0.22), (0.5, 0.62), (1.0, 0.83)] {
            assert!((p(0.0, s) - want).abs() < 0.01, "floor at s {s}: {}", p(0.0, s));
        }
    }
}
