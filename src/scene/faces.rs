//! The water's vertical free faces at the start, for its first pressure: a particle's first pressure is
//! rho0 g times the smaller of its depth below its column's top and its horizontal distance to the nearest
//! free face ([`Hydrostatic::pressure_near_face`]). A column held by walls (the domain's, the terrain) or by
//! more water all around starts hydrostatic; the face of a column that is released (a dam break) starts at
//! zero pressure and the pressure grows inward at rho0 g per metre, as the pressure of a column released
//! at t = 0 does near its face (it vanishes on the face, the free surface, and its horizontal gradient is
//! of the order of rho0 g there; Stansby, Chegini & Barnes 1998, "The initial stages of dam-break flow",
//! J. Fluid Mech. 374). Before, the whole column started hydrostatic, its face too: the solvers' warm
//! start pushed the face out with the full pressure of its depth (a 0.62 m column's face left at 0.96 m/s
//! in the first frame, where gravity alone gives 0.16 m/s).
//!
//! The faces are found on the same dx x dx bins of (x, z) as the columns' tops ([`Hydrostatic::bin`]):
//! from a column, each of the four directions +-x, +-z is walked bin by bin; a bin supports a particle at
//! height y when its water reaches y (its top + dx / 2 >= y), the terrain there is at least y high, or it
//! lies outside the domain (a wall). The first bin that does not is the face, at (k - 1/2) dx for the k-th
//! bin. The running minimum of the bins' support heights along a direction makes the walk one search per
//! particle ([`Profile`]).

use crate::sim::initial::Hydrostatic;
use crate::terrain::Heightfield;
use glam::{Vec2, Vec3};
use std::collections::HashMap;

/// The four horizontal directions walked from a column: +x, -x, +z, -z.
const DIRECTIONS: [Vec2; 4] = [Vec2::X, Vec2::NEG_X, Vec2::Y, Vec2::NEG_Y];

/// What a column's walk needs: every bin's top, the terrain and the domain.
pub(super) struct Faces<'a> {
    /// The highest particle of each (x, z) bin that holds water, metres.
    pub(super) tops: HashMap<(i64, i64), f32>,
    pub(super) terrain: &'a Heightfield,
    pub(super) first: Hydrostatic,
    /// The box kept points lie in (the domain shrunk by dx / 2), metres.
    pub(super) lo: Vec3,
    pub(super) hi: Vec3,
}

/// The running minimum of the support heights along each direction from one column, bin by bin (entry k
/// for bin k + 1), grown as deeper particles ask.
#[derive(Clone, Debug, Default)]
pub(super) struct Profile {
    /// The (x, z) the walk starts from, metres.
    start: Vec2,
    minima: [Vec<f32>; 4],
}

impl Faces<'_> {
    /// The water's support at (x, z), metres: its top + dx / 2, or the terrain's height if higher; +inf
    /// outside the domain (a wall). Rounding may leave a bin of a block empty between two full ones (a bin
    /// may hold 0, 1 or 2 columns): the bins a quarter dx to either side along the walk are looked at too.
    fn support(&self, q: Vec2, along: Vec2) -> f32 {
        let half = 0.5 * self.first.dx;
        if q.x < self.lo.x - half || q.x > self.hi.x + half || q.y < self.lo.z - half || q.y > self.hi.z + half {
            return f32::INFINITY;
        }
        let quarter = 0.25 * self.first.dx * along;
        let water = [q - quarter, q + quarter]
            .iter()
            .filter_map(|p| self.tops.get(&self.first.bin(p.x, p.y)))
            .fold(f32::NEG_INFINITY, |a, &t| a.max(t + half));
        water.max(self.terrain.height_at(q.x, q.y))
    }

    /// A profile from (x, z) with nothing walked yet.
    pub(super) fn profile(&self, x: f32, z: f32) -> Profile {
        Profile { start: Vec2::new(x, z), minima: Default::default() }
    }

    /// Horizontal distance (m) from a particle at height `y` of `profile`'s column to the nearest free face,
    /// looking no farther than `reach` metres (+inf when none is that close).
    pub(super) fn free_distance(&self, profile: &mut Profile, y: f32, reach: f32) -> f32 {
        let dx = self.first.dx;
        let bins = (reach / dx).ceil().clamp(0.0, 1e6) as usize;
        let mut best = f32::INFINITY;
        for (d, minima) in DIRECTIONS.iter().zip(profile.minima.iter_mut()) {
            while minima.len() < bins {
                let k = minima.len() + 1;
                let s = self.support(profile.start + (k as f32 * dx) * *d, *d);
                minima.push(minima.last().map_or(s, |m| m.min(s)));
            }
            // The minima never grow along the walk: the first bin below y is found by bisection.
            let k = minima[..bins].partition_point(|&m| m >= y);
            if k < bins {
                best = best.min((k as f32 + 0.5) * dx);
            }
        }
        best
    }

    /// The first pressure of a particle at `p` whose column's top is `top` (m), Pa.
    pub(super) fn pressure(&self, profile: &mut Profile, top: f32, p: Vec3) -> f32 {
        let depth = top + 0.5 * self.first.dx - p.y;
        if !self.first.on() || depth <= 0.0 {
            return 0.0;
        }
        let free = self.free_distance(profile, p.y, depth);
        self.first.pressure_near_face(top, p.y, free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faces<'a>(tops: &[((i64, i64), f32)], terrain: &'a Heightfield) -> Faces<'a> {
        let first = Hydrostatic { dx: 0.1, rho0: 1000.0, g: 10.0 };
        Faces {
            tops: tops.iter().copied().collect(),
            terrain,
            first,
            lo: Vec3::new(0.05, 0.05, 0.05),
            hi: Vec3::new(0.95, 0.95, 0.95),
        }
    }

    /// A 0.5 m column in bins x = 0..=4 of a 1 m domain (z: the whole width, so only x has faces): the
    /// face at x = 0.5 m. Particles at x = 0.05 .. 0.45 m start at rho0 g min(depth, distance to it).
    #[test]
    fn the_pressure_falls_to_zero_at_a_free_face_and_not_at_a_wall() {
        let terrain = Heightfield::flat(Vec2::ZERO, Vec2::ONE, 0.0);
        let tops: Vec<_> = (0..5).flat_map(|x| (0..10).map(move |z| ((x, z), 0.45))).collect();
        let f = faces(&tops, &terrain);
        let at = |x: f32, y: f32| f.pressure(&mut f.profile(x, 0.55), 0.45, Vec3::new(x, y, 0.55));
        let rho_g = 1000.0 * 10.0;
        // The face column: half a dx from the face, at every depth.
        assert!((at(0.45, 0.05) - rho_g * 0.05).abs() < 1e-2, "{}", at(0.45, 0.05));
        // Four columns in: 0.45 m from the face, deeper than the bottom particle's 0.45 m: hydrostatic.
        assert!((at(0.05, 0.05) - rho_g * 0.45).abs() < 1e-2, "{}", at(0.05, 0.05));
        // Near the surface the depth is the smaller.
        assert!((at(0.25, 0.45) - rho_g * 0.05).abs() < 1e-2, "{}", at(0.25, 0.45));
        // Two columns in at the bottom: 0.25 m from the face.
        assert!((at(0.25, 0.05) - rho_g * 0.25).abs() < 1e-2, "{}", at(0.25, 0.05));
        // The same column against the far wall (bins 5..=9, the wall at x = 1): the wall holds it.
        let tops: Vec<_> = (5..10).flat_map(|x| (0..10).map(move |z| ((x, z), 0.45))).collect();
        let f = faces(&tops, &terrain);
        let at = |x: f32, y: f32| f.pressure(&mut f.profile(x, 0.55), 0.45, Vec3::new(x, y, 0.55));
        assert!((at(0.95, 0.05) - rho_g * 0.45).abs() < 1e-2, "at the wall: {}", at(0.95, 0.05));
        assert!((at(0.55, 0.05) - rho_g * 0.05).abs() < 1e-2, "at the face: {}", at(0.55, 0.05));
    }

    /// Terrain higher than a particle holds its column like a wall; lower terrain does not.
    #[test]
    fn terrain_above_a_particle_holds_it() {
        // A step: 0.3 m high for x >= 0.5, flat 0 below.
        let heights: Vec<f32> = (0..11).flat_map(|_| (0..11).map(|i| if i >= 5 { 0.3 } else { 0.0 })).collect();
        let terrain = Heightfield { nx: 11, nz: 11, origin: Vec2::ZERO, extent: Vec2::ONE, heights };
        let tops: Vec<_> = (0..4).flat_map(|x| (0..10).map(move |z| ((x, z), 0.45))).collect();
        let f = faces(&tops, &terrain);
        let rho_g = 1000.0 * 10.0;
        let at = |y: f32| f.pressure(&mut f.profile(0.35, 0.55), 0.45, Vec3::new(0.35, y, 0.55));
        // At y = 0.05 the step (from x = 0.5 on) is a wall: no face within 0.45 m on +x; none on -x.
        assert!((at(0.05) - rho_g * 0.45).abs() < 1e-2, "{}", at(0.05));
        // At y = 0.35, above the step: the face is the bin at x = 0.45 (k = 1), 0.05 m away.
        assert!((at(0.35) - rho_g * 0.05).abs() < 1e-2, "{}", at(0.35));
    }
}
