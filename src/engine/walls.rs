//! The walls that hold a terrain scene's water, drawn (issue 31, "no invisible walls"). The simulation's
//! domain is a box whose side walls hold the water wherever the terrain along them is lower than the
//! water; in a box scene the renderer draws them as the glass tank ([`crate::render::tank`]), but over a
//! terrain nothing was drawn, and the valley's dam stood against the domain's sides as a sharp-edged prism
//! held by nothing. Here every stretch of the four side walls where the ground is below the water's
//! highest level becomes a concrete wall face on the domain's wall plane, from the ground up to that
//! level plus a freeboard, facing into the domain. Only that face is drawn: the obstacles' pipeline culls
//! back faces, so a wall between the camera and the water (seen from outside the domain) is not drawn
//! and never hides the water, as the glass tank draws its near walls faint. They are drawn as the
//! obstacles are ([`crate::render::Renderer::set_walls`]: lit by the sun, the sky and the terrain's
//! shadow; the render setting `show_tank` turns them off), cast no shadow map of their own (their extent
//! would spread the obstacles' map over the whole domain), and take no part in the simulation, whose walls
//! they show.

use crate::render::ObstacleMesh;
use crate::scene::{Aabb, Scene};
use crate::terrain::Heightfield;
use glam::Vec3;

/// The walls of `scene` (none for a box scene: the renderer draws its glass tank) over `terrain`, holding
/// its water up to `water_top` metres ([`water_top`] of the initial particles) at spacing `dx`.
pub fn scene_walls(scene: &Scene, terrain: &Heightfield, water_top: f32, dx: f32) -> Vec<ObstacleMesh> {
    match scene.terrain {
        Some(_) => wall_meshes(&scene.domain, terrain, water_top, dx),
        None => Vec::new(),
    }
}

/// [`scene_walls`] for the water of the particles at `positions` (x, y, z, w), their [`water_top`].
pub fn scene_walls_for(scene: &Scene, terrain: &Heightfield, positions: &[[f32; 4]], dx: f32) -> Vec<ObstacleMesh> {
    scene_walls(scene, terrain, water_top(positions, dx), dx)
}

/// The top of the water the particles at `positions` (x, y, z, w; parked ones, w < 0, left out) fill at
/// spacing `dx`: the highest centre plus half a spacing, metres (negative infinity for none).
pub fn water_top(positions: &[[f32; 4]], dx: f32) -> f32 {
    positions.iter().filter(|p| p[3] >= 0.0).map(|p| p[1]).fold(f32::NEG_INFINITY, f32::max) + 0.5 * dx
}

/// Most samples along one side (the terrain's spacing, or coarser on a fine heightfield).
const MAX_SAMPLES: usize = 512;

/// The walls of `domain` over `terrain` that hold water up to `water_top` (metres): one mesh per run of
/// samples along a side where the ground is below the wall's top, `water_top` plus a freeboard of a
/// twentieth of the water's depth (at least `dx` and at most the domain's top), facing into the domain.
/// None where the ground stands higher, and none at all when the water is below the ground everywhere.
pub fn wall_meshes(domain: &Aabb, terrain: &Heightfield, water_top: f32, dx: f32) -> Vec<ObstacleMesh> {
    let (lo, hi) = (Vec3::from(domain.min), Vec3::from(domain.max));
    let ground_low = terrain.range().0.max(lo.y);
    let top = (water_top + (0.05 * (water_top - ground_low)).max(dx)).min(hi.y);
    if !(top.is_finite() && top > ground_low) {
        return Vec::new();
    }
    // Each side: a corner it starts at, the direction along it and the outward normal.
    let sides = [
        (Vec3::new(lo.x, 0.0, hi.z), Vec3::new(0.0, 0.0, -(hi.z - lo.z)), Vec3::NEG_X),
        (Vec3::new(hi.x, 0.0, lo.z), Vec3::new(0.0, 0.0, hi.z - lo.z), Vec3::X),
        (Vec3::new(lo.x, 0.0, lo.z), Vec3::new(hi.x - lo.x, 0.0, 0.0), Vec3::NEG_Z),
        (Vec3::new(hi.x, 0.0, hi.z), Vec3::new(-(hi.x - lo.x), 0.0, 0.0), Vec3::Z),
    ];
    let spacing = terrain.spacing().min_element().max(1e-6);
    let mut meshes = Vec::new();
    for (start, along, out) in sides {
        let samples = ((along.length() / spacing).ceil() as usize).clamp(1, MAX_SAMPLES);
        let point = |k: usize| start + along * (k as f32 / samples as f32);
        let ground = |k: usize| {
            let p = point(k);
            terrain.height_at(p.x, p.z).clamp(lo.y, hi.y)
        };
        let mut run: Vec<(Vec3, f32)> = Vec::new();
        for k in 0..=samples {
            let g = ground(k);
            if g < top {
                run.push((point(k), g));
            }
            if (g >= top || k == samples) && !run.is_empty() {
                if run.len() > 1 {
                    meshes.push(face(&run, -out, top));
                }
                run.clear();
            }
        }
    }
    meshes
}

/// The wall face along `run` (points on the wall plane with the ground's height there) from the ground
/// to `top`, its triangles counter-clockwise seen from the side `inward` points to.
fn face(run: &[(Vec3, f32)], inward: Vec3, top: f32) -> ObstacleMesh {
    let mut vertices = Vec::with_capacity(2 * run.len());
    for &(p, ground) in run {
        vertices.push(Vec3::new(p.x, ground, p.z));
        vertices.push(Vec3::new(p.x, top, p.z));
    }
    let mut triangles = Vec::with_capacity(2 * run.len());
    for k in 0..run.len() as u32 - 1 {
        let (a, b, c, d) = (2 * k, 2 * k + 2, 2 * k + 3, 2 * k + 1);
        triangles.push([a, b, c]);
        triangles.push([a, c, d]);
    }
    // Wound to face `inward`: flip when the first triangle's normal points the other way.
    let n = |t: &[u32; 3]| {
        let [p, q, r] = t.map(|i| vertices[i as usize]);
        (q - p).cross(r - p)
    };
    if triangles.first().is_some_and(|t| n(t).dot(inward) < 0.0) {
        for t in &mut triangles {
            t.swap(1, 2);
        }
    }
    ObstacleMesh { vertices, triangles }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec2;

    /// Every triangle's normal against the direction toward the domain's centre (5, _, 5) from it.
    fn faces_inward(m: &ObstacleMesh) -> bool {
        m.triangles.iter().all(|t| {
            let [a, b, c] = t.map(|i| m.vertices[i as usize]);
            let n = (b - a).cross(c - a);
            let to_centre = Vec3::new(5.0, a.y, 5.0) - a;
            n.length() < 1e-9 || n.dot(to_centre) > 0.0
        })
    }

    #[test]
    fn walls_stand_where_the_ground_is_below_the_water() {
        // A 10 m square domain over ground rising along x from 0 to 8 m; water up to 3 m.
        let mut t = Heightfield::flat(Vec2::ZERO, Vec2::new(10.0, 10.0), 0.0);
        (t.nx, t.nz) = (11, 11);
        t.heights = (0..121).map(|i| (i % 11) as f32 * 0.8).collect();
        let domain = Aabb { min: [0.0; 3], max: [10.0, 12.0, 10.0] };
        let walls = wall_meshes(&domain, &t, 3.0, 0.1);
        // The x = 0 side (ground 0) has a whole wall; x = 10 (ground 8) none; the z sides a wall each up
        // to where the ground reaches the top (3.15 m: x < 4).
        assert_eq!(walls.len(), 3, "{} walls", walls.len());
        for w in &walls {
            assert!(faces_inward(w), "faces into the domain");
            let (lo, hi) =
                w.vertices.iter().fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(l, h), p| (l.min(*p), h.max(*p)));
            assert!((hi.y - 3.15).abs() < 1e-4, "top {hi:?}");
            assert!(lo.x == 0.0 || lo.z == 0.0 || hi.z == 10.0, "on a wall plane: {lo:?} .. {hi:?}");
            assert!(hi.x <= 4.0 + 1e-3 || hi.x == 0.0, "no wall where the ground is above the top: {lo:?} .. {hi:?}");
            let bottoms = w.vertices.iter().step_by(2);
            assert!(bottoms.clone().all(|p| p.y < 3.15), "from the ground up");
        }
        assert!(wall_meshes(&domain, &t, -1.0, 0.1).is_empty(), "water below the ground: no wall");
    }
}
