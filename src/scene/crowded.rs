//! Lattice points that would start compressed beside an obstacle or a body. The simulation's boundary is
//! the half-space beyond each boundary's tangent plane (shaders/sim/common.wgsl, `boundary_density`): at a
//! convex edge or corner of an obstacle it counts the space beside the edge as solid, while the lattice
//! points there are kept (they lie more than dx / 2 from the surface). Such a point starts denser than
//! rest, and the first pressure solve pushes it off within one step (valley_town's crates: a point 0.8 dx
//! from a crate's edge started 5 % over rho0 and left at 5 m/s). This finds them before the start: the
//! density the GPU's first step will sum at each point near an obstacle (its lattice neighbours through the
//! CPU kernel, `crate::sim::kernel`, and the boundaries through the same lattice-matched table and the same
//! combination of planes), relative to rho0.

use crate::sim::kernel;
use crate::sim::obstacles::Obstacle;
use crate::terrain::Heightfield;
use glam::Vec3;
use std::collections::HashMap;

/// Relative density (1 = rho0) above which a point near an obstacle is left out: the lattice's own
/// density beside a flat wall at dx / 2 is 1 within the table's matching; a fraction of a per cent over it
/// settles without a kick.
pub(super) const MOST: f32 = 1.01;

/// The relative density each of `positions` would start with, or `None` for points farther than the
/// support radius from every obstacle (`obstacles`: their distance fields, world space), for particles of
/// spacing `dx` and smoothing length `h` in the box `min..max` over `terrain`.
pub(super) fn start_density(
    positions: &[Vec3],
    obstacles: &[&Obstacle],
    terrain: &Heightfield,
    (min, max): (Vec3, Vec3),
    dx: f32,
    h: f32,
) -> Vec<Option<f32>> {
    let support = 2.0 * h;
    let near = |p: Vec3, reach: f32| obstacles.iter().any(|o| o.distance(p) < reach);
    // Every point within two supports of an obstacle goes into the grid: the neighbours of the points
    // within one.
    let cell = |p: Vec3| ((p / support).floor()).as_ivec3();
    let mut grid: HashMap<glam::IVec3, Vec<usize>> = HashMap::new();
    for (i, &p) in positions.iter().enumerate() {
        if near(p, 2.0 * support) {
            grid.entry(cell(p)).or_default().push(i);
        }
    }
    let (dx64, h64) = (dx as f64, h as f64);
    let volume = kernel::particle_volume(dx64, h64);
    let table = kernel::boundary_table_for_lattice(dx64, h64, 1024);
    let phi = |d: f32| -> f64 {
        if d >= support {
            return 0.0;
        }
        let u = ((d + support) / (2.0 * support)).clamp(0.0, 1.0) * 1023.0;
        let k = (u.floor() as usize).min(1022);
        let f = (u - k as f32) as f64;
        table[k][0] as f64 * (1.0 - f) + table[k + 1][0] as f64 * f
    };
    positions
        .iter()
        .map(|&p| {
            if !near(p, support) {
                return None;
            }
            let c = cell(p);
            let mut sum = 0.0;
            for dz in -1..=1 {
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        for &j in grid.get(&(c + glam::IVec3::new(dx, dy, dz))).into_iter().flatten() {
                            sum += kernel::w((p - positions[j]).length() as f64, h64);
                        }
                    }
                }
            }
            // The planes the GPU combines: the terrain's tangent plane, the side walls and the ceiling, each
            // obstacle's tangent plane at its distance.
            let (height, slope) = terrain.height_and_slope_at(p.x, p.z);
            let floor = (p.y - height) / (1.0 + slope.length_squared()).sqrt();
            let planes = [floor, p.x - min.x, max.x - p.x, p.z - min.z, max.z - p.z, max.y - p.y];
            let free = planes
                .into_iter()
                .chain(obstacles.iter().map(|o| o.distance(p)))
                .fold(1.0, |q, d| q * (1.0 - phi(d)).max(1e-3));
            Some((volume * sum + 1.0 - free) as f32)
        })
        .collect()
}
