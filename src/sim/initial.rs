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

    /// [`Hydrostatic::pressure`] of a particle `free` metres (horizontally) from the water's nearest free
    /// face: rho0 g min(depth, free), Pa (see `crate::scene::faces`: the pressure of a released column
    /// vanishes on its face and grows inward at about rho0 g per metre).
    pub fn pressure_near_face(&self, top: f32, y: f32, free: f32) -> f32 {
        if !self.on() {
            return 0.0;
        }
        self.rho0 * self.g * (top + 0.5 * self.dx - y).min(free).max(0.0)
    }
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
}
