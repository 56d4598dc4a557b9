//! Static obstacles moved, turned and scaled on the running simulation (the Scene panel's drags; issue 19
//! part 1), without a rebuild: the water goes on and the obstacle pushes it aside.
//!
//! [`Simulation::move_obstacles`] takes each static obstacle's new placement (rotation, position, scale
//! of the same mesh) as a target. The obstacle then travels there at most [`MAX_MOVE_DX`] dx per rendered
//! frame (the first step recorded after each statistics record, `Simulation::step_obstacles`): its
//! entry in the GPU list (binding 17, `ObstacleGpu`) gets the new frame by `queue.write_buffer`, nothing
//! waits, and the collision projection of the next step (`integrate` and `project_out` in
//! shaders/sim/common.wgsl) moves the particles it now covers out along its field's normal, at most that
//! far. A jump of the whole way at once would put every covered particle onto the surface in one step, a
//! dense sheet the pressure solve then throws apart; a quarter of a spacing at a time adds a fraction of
//! a layer's compression. What the water does follows the jump more than the box's mean speed: pushed,
//! turned and scaled through a 2 320-particle pool at dx = 0.025 m (tests/live_obstacles.rs) the fastest
//! particle ran 1.4 m/s at 0.25 dx a frame of 4 steps (the box at up to 0.38 m/s), 1.1 m/s at 0.25 dx every
//! step (the window's pace while its frames are slow; the box at 0.82 m/s) and 3.6 m/s at 0.5 dx a frame of
//! 4 steps; the kinetic energy peaked at 0.12 to 0.19 of all the water's at the box's speed. A jump per step
//! is bounded by the CFL step too: particles thrown faster shorten dt, and the box then moves less per
//! second.
//!
//! The distance field is in the mesh's frame, metres after scaling: a move or a turn only rewrites the
//! entry's axes and position. A scale changes the field: on the way it is the field as sampled, scaled
//! ([`DistanceField::scaled`]: exact at the samples, the spacing and the margin scaled with it), and on
//! arrival it is sampled again at dx / 2 with the support radius and two samples of margin, coarser when
//! that needs more samples than the room the obstacle's field had when the simulation was built (each
//! keeps its room and its offset in the samples, so no buffer or bind group changes and the bodies'
//! entries stay valid). The floating bodies' rapier world gets the static colliders' new shapes
//! ([`super::bodies::Bodies::set_statics`]); the renderer's copy follows
//! [`Simulation::obstacles_version`].
//!
//! A paused simulation records no step: its obstacles travel when it runs again (or steps).

use super::obstacles::{Obstacle, ObstacleGpu, ObstacleList};
use super::{SimError, Simulation};
use crate::mesh::sdf::DistanceField;
use crate::mesh::TriangleMesh;
use glam::{Quat, Vec3};
use std::sync::Arc;

/// Farthest any point of a static obstacle's surface travels per rendered frame, in particle spacings dx
/// (see the module docs for the choice).
pub const MAX_MOVE_DX: f32 = 0.25;

/// Where a static obstacle is: `world = rotation * (scale * file) + position`, the file's mesh in metres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    /// Mesh-to-world rotation.
    pub rotation: Quat,
    /// World position of the mesh's origin, m.
    pub position: Vec3,
    /// Uniform scale of the file's coordinates, > 0.
    pub scale: f32,
}

impl Placement {
    /// The placement `t` (0 ..= 1) of the way from `self` to `to` (position and scale linear, rotation
    /// along the shorter arc).
    fn lerp(&self, to: &Placement, t: f32) -> Placement {
        Placement {
            rotation: self.rotation.slerp(to.rotation, t).normalize(),
            position: self.position.lerp(to.position, t),
            scale: self.scale + (to.scale - self.scale) * t,
        }
    }

    /// How far (m) a point of a mesh reaching `reach` metres from its origin (the file's units) moves at
    /// most from `self` to `to`, to first order: the translation, the turn's arc and the scale's stretch.
    fn travel(&self, to: &Placement, reach: f32) -> f32 {
        let angle = self.rotation.angle_between(to.rotation);
        (to.position - self.position).length()
            + angle * reach * self.scale.max(to.scale)
            + (to.scale - self.scale).abs() * reach
    }

    /// The next frame's placement from `self` towards `to` for a mesh of `reach` metres (file units):
    /// `to` when it is at most `step` metres of travel away (`Placement::travel`), else that part of the
    /// way.
    pub fn step_towards(&self, to: &Placement, reach: f32, step: f32) -> Placement {
        let travel = self.travel(to, reach);
        if travel <= step || !travel.is_finite() {
            *to
        } else {
            self.lerp(to, step / travel)
        }
    }
}

/// One static obstacle on its way ([`LiveObstacles`]).
struct Slot {
    /// The file's mesh (metres, unscaled).
    unit_mesh: Arc<TriangleMesh>,
    /// Farthest vertex of `unit_mesh` from its origin, m.
    reach: f32,
    /// The field as last sampled, and the scale it was sampled at.
    field: Arc<DistanceField>,
    field_scale: f32,
    /// The scale of the samples on the GPU now.
    gpu_scale: f32,
    /// Where its samples start on the GPU and how many it has room for.
    offset: u32,
    room: usize,
    current: Placement,
    target: Placement,
}

/// The static obstacles' live placements (a field of [`Simulation`]); empty until the first move.
#[derive(Default)]
pub(super) struct LiveObstacles {
    slots: Vec<Slot>,
    /// Bumped whenever an obstacle moved ([`Simulation::obstacles_version`]).
    version: u64,
    /// The statistics frame (`Simulation::step_obstacles`) of the last move.
    moved_in: Option<u64>,
}

impl Simulation {
    /// Sends the static obstacles (all of them, in the scene's order) towards `targets`, live: see the
    /// module docs. The caller checks each placement against the domain and the spacing (the engine does,
    /// [`crate::engine::Engine::move_obstacles`]). Errors: not one placement per static obstacle, or a
    /// scale that is not finite and > 0; nothing changes then.
    pub fn move_obstacles(&mut self, targets: &[Placement]) -> Result<(), SimError> {
        if targets.len() != self.obstacles.len() {
            return Err(SimError::State("a live move needs one placement per static obstacle"));
        }
        let finite = |p: &Placement| p.position.is_finite() && p.rotation.is_finite() && p.scale.is_finite();
        if targets.iter().any(|p| !finite(p) || p.scale <= 0.0 || p.rotation.length() < 0.5) {
            return Err(SimError::State("an obstacle's placement is not finite or its scale not > 0"));
        }
        if self.live.slots.is_empty() {
            // The rooms as the build laid the samples out: one after the other, in order.
            let mut offset = 0u32;
            for o in &self.obstacles {
                let scale = if o.scale > 0.0 { o.scale } else { 1.0 };
                let unit = TriangleMesh {
                    vertices: o.mesh.vertices.iter().map(|&v| v / scale).collect(),
                    triangles: o.mesh.triangles.clone(),
                };
                let reach = unit.vertices.iter().map(|v| v.length()).fold(0.0f32, f32::max);
                let here = Placement { rotation: o.rotation, position: o.position, scale };
                self.live.slots.push(Slot {
                    unit_mesh: Arc::new(unit),
                    reach,
                    field: o.field.clone(),
                    field_scale: scale,
                    gpu_scale: scale,
                    offset,
                    room: o.field.values.len(),
                    current: here,
                    target: here,
                });
                offset += o.field.values.len() as u32;
            }
        }
        for (slot, t) in self.live.slots.iter_mut().zip(targets) {
            slot.target = Placement { rotation: t.rotation.normalize(), ..*t };
        }
        Ok(())
    }

    /// True while a static obstacle has not reached the placement it was last sent to.
    pub fn obstacles_moving(&self) -> bool {
        self.live.slots.iter().any(|s| s.current != s.target)
    }

    /// A number that changes whenever a static obstacle moved (the renderer draws them anew then).
    pub fn obstacles_version(&self) -> u64 {
        self.live.version
    }

    /// Moves every travelling static obstacle one frame's way ([`MAX_MOVE_DX`] dx of travel at most)
    /// and writes their entries (and, for a new scale, their samples) into the GPU's list; once per
    /// statistics frame (the first step recorded after each `encode_stats`), as every write of one
    /// submission lands before all of its steps. Called by `encode_step`.
    pub(super) fn step_obstacles(&mut self) {
        if self.live.moved_in == Some(self.frame) || !self.obstacles_moving() {
            return;
        }
        self.live.moved_in = Some(self.frame);
        self.live.version += 1;
        let step = MAX_MOVE_DX * self.params.dx;
        let (dx, support) = (self.params.dx, self.params.support());
        let list = std::mem::offset_of!(ObstacleList, list);
        let samples_at = std::mem::size_of::<ObstacleList>() as u64;
        for (k, slot) in self.live.slots.iter_mut().enumerate() {
            if slot.current == slot.target {
                continue;
            }
            slot.current = slot.current.step_towards(&slot.target, slot.reach, step);
            let p = slot.current;
            let mesh = TriangleMesh {
                vertices: slot.unit_mesh.vertices.iter().map(|&v| v * p.scale).collect(),
                triangles: slot.unit_mesh.triangles.clone(),
            };
            // The samples change with the scale only: the field as sampled, scaled on the way; on arrival at
            // a scale it was not sampled at, sampled again in the room the field has.
            let rescaled = p.scale != slot.gpu_scale;
            let field = if !rescaled {
                self.obstacles[k].field.clone()
            } else {
                if slot.current == slot.target && p.scale != slot.field_scale {
                    let spacing = 0.5 * dx;
                    match DistanceField::with_cap(&mesh, support + 2.0 * spacing, spacing, slot.room) {
                        Ok(f) => (slot.field, slot.field_scale) = (Arc::new(f), p.scale),
                        Err(e) => log::warn!("obstacle {}: its field is kept scaled, not sampled again: {e}", k + 1),
                    }
                }
                slot.gpu_scale = p.scale;
                if p.scale == slot.field_scale {
                    slot.field.clone()
                } else {
                    Arc::new(slot.field.scaled(p.scale / slot.field_scale))
                }
            };
            let o = &mut self.obstacles[k];
            *o = Obstacle {
                name: o.name.clone(),
                mesh: Arc::new(mesh),
                field,
                rotation: p.rotation,
                position: p.position,
                scale: p.scale,
            };
            let entry = ObstacleGpu::placed(o, slot.offset);
            let at = (list + k * std::mem::size_of::<ObstacleGpu>()) as u64;
            self.queue.write_buffer(&self.buffers.obstacles, at, bytemuck::bytes_of(&entry));
            if rescaled {
                let values = &o.field.values[..o.field.values.len().min(slot.room)];
                let at = samples_at + 4 * slot.offset as u64;
                self.queue.write_buffer(&self.buffers.obstacles, at, bytemuck::cast_slice(values));
            }
        }
        if let Some(b) = &mut self.bodies {
            b.set_statics(&self.obstacles);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: f32, angle_deg: f32, scale: f32) -> Placement {
        Placement { rotation: Quat::from_rotation_y(angle_deg.to_radians()), position: Vec3::new(x, 0.0, 0.0), scale }
    }

    #[test]
    fn a_placement_travels_at_most_its_step_per_frame_and_arrives_exactly() {
        let (from, to) = (at(0.0, 0.0, 1.0), at(1.0, 0.0, 1.0));
        let next = from.step_towards(&to, 0.5, 0.1);
        assert!((next.position.x - 0.1).abs() < 1e-6, "{next:?}");
        let mut p = from;
        let mut frames = 0;
        while p != to {
            p = p.step_towards(&to, 0.5, 0.1);
            frames += 1;
            assert!(frames < 100, "never arrives");
        }
        assert!((10..=11).contains(&frames), "1 m at 0.1 m a frame (and rounding): {frames} frames");
    }

    #[test]
    fn a_turn_and_a_scale_count_the_travel_of_the_farthest_point() {
        // A quarter turn of a mesh reaching 2 m: an arc of pi m; at 0.1 m a frame, 1/(10 pi) of the way.
        let (from, to) = (at(0.0, 0.0, 1.0), at(0.0, 90.0, 1.0));
        let next = from.step_towards(&to, 2.0, 0.1);
        let angle = from.rotation.angle_between(next.rotation);
        assert!((angle * 2.0 - 0.1).abs() < 1e-4, "the far point moved {} m", angle * 2.0);
        // Doubling a mesh reaching 2 m stretches it 2 m: 0.05 of scale a frame.
        let next = at(0.0, 0.0, 1.0).step_towards(&at(0.0, 0.0, 2.0), 2.0, 0.1);
        assert!((next.scale - 1.05).abs() < 1e-5, "{next:?}");
        // Both at once share the step.
        let both = at(0.0, 0.0, 1.0).step_towards(&at(1.0, 0.0, 2.0), 2.0, 0.1);
        assert!((both.position.x + 2.0 * (both.scale - 1.0) - 0.1).abs() < 1e-5, "{both:?}");
    }

    #[test]
    fn the_entry_of_a_moved_obstacle_has_its_new_frame_and_the_same_field() {
        let mesh = TriangleMesh::cuboid(Vec3::ZERO, Vec3::ONE);
        let o = Obstacle::new("box".into(), mesh, Quat::IDENTITY, Vec3::ZERO, 0.2, 0.1).expect("a box");
        let p = at(2.0, 90.0, 1.0);
        let moved = Obstacle { rotation: p.rotation, position: p.position, ..o.clone() };
        let (before, after) = (ObstacleGpu::placed(&o, 7), ObstacleGpu::placed(&moved, 7));
        assert_eq!(after.position, [2.0, 0.0, 0.0, 0.0]);
        assert!((Vec3::from_slice(&after.axis_x[..3]) - Vec3::NEG_Z).length() < 1e-6, "{:?}", after.axis_x);
        assert_eq!(
            (after.grid_min, after.spacing, after.dims, after.offset),
            (before.grid_min, before.spacing, before.dims, 7)
        );
        // A point inside the moved box, and the same point outside the old one.
        let inside = Vec3::new(2.5, 0.5, -0.5);
        assert!(moved.distance(inside) < 0.0 && o.distance(inside) > 0.0);
    }

    /// A body resting on a static box falls to the floor once the box is moved from under it: the rapier
    /// world's fixed collider follows the move ([`super::super::bodies::Bodies::set_statics`]).
    #[test]
    fn a_body_falls_when_the_static_box_under_it_moves_away() {
        use crate::sim::bodies::{Bodies, Body};
        let domain = (Vec3::ZERO, Vec3::splat(2.0));
        let floor = crate::terrain::Heightfield::flat(glam::Vec2::ZERO, glam::Vec2::splat(2.0), 0.0);
        let cube = |size: f32| TriangleMesh::cuboid(Vec3::ZERO, Vec3::splat(size));
        let place = |mesh, at: Vec3| Obstacle::new("box".into(), mesh, Quat::IDENTITY, at, 0.05, 0.05).expect("a box");
        let pedestal = place(cube(0.5), Vec3::new(0.75, 0.0, 0.75));
        let body = Body { obstacle: place(cube(0.2), Vec3::new(0.9, 0.55, 0.9)), density: 500.0 };
        let entries = [ObstacleGpu::placed(&body.obstacle, 0)];
        let water = crate::sim::params::SimParams { gravity: [0.0, -9.81, 0.0], ..Default::default() };
        let mut bodies =
            Bodies::new(domain, &floor, std::slice::from_ref(&pedestal), &[body], &water, &entries).expect("bodies");
        let sums = [0i32; 8];
        bodies.advance(0.5, &sums);
        let resting = bodies.state(0).position.y;
        assert!((resting - 0.5).abs() < 0.02, "the body rests on the pedestal's top (0.5 m): {resting}");
        let moved = Obstacle { position: Vec3::new(0.1, 0.0, 0.1), ..pedestal };
        bodies.set_statics(&[moved]);
        bodies.advance(1.0, &sums);
        let fallen = bodies.state(0).position.y;
        // In the air (no water, so no drag) it falls freely and lies on the floor after 0.5 s; on a
        // pedestal left where it was it would stay at 0.5 m.
        assert!(fallen < 0.25, "the body did not fall once the pedestal moved from under it: {fallen} m");
    }
}
