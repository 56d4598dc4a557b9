//! Floating and sinking rigid bodies, two-way coupled with the water. A body is an obstacle whose frame
//! moves: it sits in the GPU's obstacle list after the static obstacles (`ObstacleList::first_body`, the
//! same signed distance field and the same half-space boundary term, src/sim/obstacles.rs) with its
//! velocity, angular velocity and centre of mass, so the boundary moves the water: the DFSPH solves take
//! a particle's density rate against the body's surface velocity v + w x (x - c) and the collision
//! projection its contact relative to it (shaders/sim/common.wgsl, dfsph.wgsl, integrate.wgsl).
//!
//! The water pushes back (Akinci et al. 2012, "Versatile rigid-fluid coupling for incompressible SPH";
//! Bender et al. 2019's volume maps): every velocity change a body's share of the boundary term gives a
//! particle (the density solve's warm start and every update of both solves) and every contact's velocity
//! change (the collision projection) is added, opposite, to that body's impulse and angular impulse about
//! its centre of mass, in fixed point with atomics on a small
//! block after the statistics record (binding 15, [`BODY_SUMS_OFFSET`]), summed over the frame's steps
//! and copied with the statistics into their read-back ring; the block is cleared after each copy. When
//! the record lands (a frame or two late, never waited for) [`Bodies::advance`] applies the mean force
//! over the simulated time the record covers (impulse / time) to `rapier3d` bodies (mass and inertia from
//! the mesh's convex hull and the density, gravity, contacts with the domain's walls, the terrain as a
//! heightfield and the static obstacles as fixed triangle meshes), steps them over that time and writes
//! the new frames into the GPU list (`queue.write_buffer`, nothing waits), each with its time, from which
//! the shaders carry it on with its velocities to the step's time. The bodies' forces thus lag the water
//! by the read-back's delay, and an explicit, late coupling makes a light body overshoot: a submerged
//! body carries an added mass of the water it displaces ([`ADDED_MASS`]), which keeps every static balance
//! and slows only the response, and it is dragged toward the water's mean velocity around it ([`DAMPING`],
//! summed on the GPU with the impulses), so a flood carries it and it falls freely in the air. Under
//! PCISPH and WCSPH the bodies' share of the last pressure force's boundary term is summed the same way,
//! once a step (integrate.wgsl's `pressure_impulses_on_bodies`). Left out: the water's friction (viscous)
//! force on a body (pressure and contacts only), the wave maker's paddle as a contact and decomposed runs.

use super::obstacles::{Obstacle, ObstacleGpu, ObstacleList, MAX_OBSTACLES};
use super::params::SimParams;
use crate::terrain::Heightfield;
use glam::{Quat, Vec3};
use rapier3d::prelude as rp;
use thiserror::Error;

/// A floating or sinking body: its mesh placed at its starting frame, and its density.
#[derive(Clone, Debug)]
pub struct Body {
    /// The mesh, its field and its frame (the starting one as built; [`Bodies::placed`] gives the current).
    pub obstacle: Obstacle,
    /// kg/m^3.
    pub density: f32,
}

/// Byte offset of the bodies' impulse sums in the statistics buffer (binding 15), right after the
/// statistics record (its 112 bytes; `StatsAndBodies` in shaders/sim/body_sums.wgsl).
pub const BODY_SUMS_OFFSET: u64 = 112;

/// i32 sums per body: impulse (3), angular impulse (3), the water's velocity around it (3) and that sum's
/// weight, two unused.
pub const SUMS_PER_BODY: usize = 12;

/// Bytes of the sums: [`SUMS_PER_BODY`] i32 per possible body ([`MAX_OBSTACLES`]).
pub const BODY_SUMS_BYTES: u64 = (MAX_OBSTACLES * SUMS_PER_BODY * 4) as u64;

/// The statistics buffer (binding 15) as the DFSPH kernels see it: the statistics record, then the bodies'
/// impulse sums, 8 i32 per body (impulse x, y, z; angular impulse x, y, z; two unused), fixed point. Its
/// size is the binding's `min_binding_size`. WGSL twin: StatsAndBodies in shaders/sim/body_sums.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct StatsAndBodies {
    /// The statistics record ([`super::SimStats`]'s 112 bytes).
    pub stats: [[f32; 4]; 7],
    /// The impulse sums of body k at `8 k ..`.
    pub bodies: [i32; SUMS_PER_BODY * MAX_OBSTACLES],
}

const _: () = assert!(std::mem::offset_of!(StatsAndBodies, bodies) as u64 == BODY_SUMS_OFFSET);
const _: () = assert!(std::mem::size_of::<StatsAndBodies>() as u64 == BODY_SUMS_OFFSET + BODY_SUMS_BYTES);

/// Fixed-point units per (the body's weight times this many seconds) of impulse: 2^24, so one frame's
/// sum holds up to 128 weight-seconds / 0.1 s before it wraps, with a resolution of 6e-9 of it.
const FIXED_UNITS: f32 = 16_777_216.0;

/// Reference impulse time, s: the fixed point's unit is the body's weight times this over FIXED_UNITS.
const REFERENCE_TIME: f32 = 0.1;

/// Drag of the water on a submerged body, 1/s: each rapier step its velocity relative to the water's mean
/// velocity around it, and its angular velocity, are divided by 1 + dt c, c = this times the share of
/// its shell (the water within the support radius of its surface) that holds water. Without it the
/// 500 kg/m^3 box of tests/bodies.rs oscillated with growing amplitude under the delayed, swinging force
/// and was thrown out of the water (docs/validation.md); taken against the water rather than the ground,
/// it lets a flood carry a crate along, and a body in the air falls freely.
pub const DAMPING: f32 = 10.0;

/// Added mass of a submerged body, in units of the water it displaces (the wet share of it): the body's
/// inertia in rapier is its mass plus this much water, its weight still its own. The coupling is
/// explicit and a few frames late, and a light body's response to the water's force then overshoots
/// (the added-mass instability of partitioned fluid-structure coupling, Causin, Gerbeau & Nobile 2005);
/// the extra inertia (Forster, Wall & Ramm 2007) leaves every static balance, Archimedes' included, as it
/// was and slows only the response.
pub const ADDED_MASS: f32 = 1.0;

/// Fixed-point units of a body's water-velocity weight per second of a step times its shell's full
/// particle count: 2^26, so a frame's weight sum is about 2^26 times the frame's time times the wet share.
const WATER_UNITS: f32 = 67_108_864.0;

/// Longest rapier step, s: a record covering more simulated time is stepped in several.
const MAX_RIGID_STEP: f32 = 0.004;

/// Time constant of the water's force that [`Bodies::predict`] carries the bodies on with, s.
const PREDICT_SMOOTHING: f32 = 0.1;

/// Longest look-ahead of [`Bodies::predict`], s (the shaders carry a frame on at most 0.2 s too).
const MAX_AHEAD: f32 = 0.2;

/// Why the bodies could not be set up.
#[derive(Debug, Error)]
pub enum BodyError {
    /// The convex hull of body `body`'s (1-based) mesh could not be built (a flat or degenerate mesh).
    #[error("body {body} ({name}): its mesh has no convex hull (flat or degenerate) to give it mass and contacts")]
    Hull { body: usize, name: String },
    /// A static obstacle's mesh (1-based) could not become a collider.
    #[error("obstacle {obstacle} ({name}): its mesh cannot be a collider for the bodies: {cause}")]
    Obstacle { obstacle: usize, name: String, cause: String },
}

/// The bodies' motion as a checkpoint keeps it ([`Bodies::snapshot`], [`Bodies::restore`]): their clock
/// and each body's frame, velocities and the water's last forces on it. Rapier's contact caches are not
/// kept (they are rebuilt by the next step).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BodiesSnapshot {
    /// Simulated time the bodies are at, s (that of the last record that reached them).
    pub time: f32,
    /// Each body in the scene's order.
    pub bodies: Vec<BodySnapshot>,
}

/// One body in a [`BodiesSnapshot`]: world frame (m, quaternion x, y, z, w), velocities (m/s, rad/s), the
/// water's last force and torque and their 0.1 s means (N, N m), the water's velocity around it (m/s)
/// and its wet share.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BodySnapshot {
    pub position: [f32; 3],
    pub rotation: [f32; 4],
    pub velocity: [f32; 3],
    pub angular: [f32; 3],
    pub force: [f32; 3],
    pub torque: [f32; 3],
    pub smoothed_force: [f32; 3],
    pub smoothed_torque: [f32; 3],
    pub water_velocity: [f32; 3],
    pub wet: f32,
}

/// Where a body is and how it moves now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyState {
    /// Local-to-world rotation of its mesh.
    pub rotation: Quat,
    /// World position of its mesh's origin, m.
    pub position: Vec3,
    /// Its centre of mass, world, m.
    pub centre: Vec3,
    /// Velocity of its centre of mass, m/s.
    pub velocity: Vec3,
    /// Angular velocity, world, rad/s.
    pub angular: Vec3,
    /// The water's last force on it (impulse over the time the record covered), N.
    pub force: Vec3,
    /// The water's mean velocity around it over the last record, m/s (zero in the air).
    pub water_velocity: Vec3,
    /// The share of its shell (the water within the support radius of its surface) that held water over
    /// the last record: 0 in the air, 1 submerged.
    pub wet: f32,
    /// Its mass, kg.
    pub mass: f32,
}

/// The scene's bodies in a rapier world (see the module docs). Only built when a scene has bodies: a
/// scene without does no rapier work.
pub struct Bodies {
    bodies: Vec<Body>,
    world: rp::PhysicsWorld,
    handles: Vec<rp::RigidBodyHandle>,
    /// Index of the first body in the GPU's obstacle list.
    first: usize,
    /// The GPU list's entries of the bodies (samples' offsets set at build time).
    entries: Vec<ObstacleGpu>,
    /// Fixed-point scales (impulse, angular impulse) per body.
    scales: Vec<(f32, f32)>,
    /// Simulated time the bodies are at, s.
    time: f32,
    /// The water's last force per body, N.
    forces: Vec<Vec3>,
    /// Fixed-point units of each body's water-velocity sums per second per particle ([`WATER_UNITS`] over
    /// the particles its shell holds when submerged).
    water_scales: Vec<f32>,
    /// The water's last mean velocity around each body (m/s) and the wet share of its shell (0 ..= 1).
    water: Vec<(Vec3, f32)>,
    /// The water's force and torque on each body smoothed over [`PREDICT_SMOOTHING`] (N, N m): what
    /// [`Bodies::predict`] carries the bodies on with (a single record's swings from 0 to 15 times the
    /// weight would throw the prediction about).
    smoothed: Vec<(Vec3, Vec3)>,
    /// Each body's own mass (kg, from its hull and density) and the mass of the water it displaces when
    /// submerged (kg).
    masses: Vec<(f32, f32)>,
    /// The entries the last recorded step used ([`Bodies::water_frames`]).
    seen: Vec<ObstacleGpu>,
    /// The static obstacles' fixed colliders, in the scene's order ([`Bodies::set_statics`]).
    statics: Vec<rp::ColliderHandle>,
}

fn v(a: Vec3) -> rp::Vector {
    rp::Vector::new(a.x, a.y, a.z)
}

fn g(a: rp::Vector) -> Vec3 {
    Vec3::new(a.x, a.y, a.z)
}

fn q(r: Quat) -> rp::Rotation {
    rp::Rotation::from_xyzw(r.x, r.y, r.z, r.w)
}

/// Sets the constant force (N) and torque (N m) rapier applies to `body` until they are set again.
fn load(body: &mut rp::RigidBody, force: Vec3, torque: Vec3) {
    body.reset_forces(true);
    body.reset_torques(true);
    body.add_force(v(force), true);
    body.add_torque(v(torque), true);
}

fn gq(r: &rp::Rotation) -> Quat {
    Quat::from_xyzw(r.x, r.y, r.z, r.w)
}

impl Bodies {
    /// The rapier world of `bodies` (dynamic; mass and inertia from each mesh's convex hull and its
    /// density) among fixed colliders: the domain's side walls and ceiling (boxes outside `domain`, its
    /// (min, max) corners, metres), the
    /// `terrain` as a heightfield (the floor) and the `statics` as triangle meshes; the water's gravity,
    /// rest density and the particles a submerged body's shell holds (its mesh's area times the support
    /// radius 2h over dx^3) from `water`. `entries` are the bodies' GPU entries as built (after the
    /// `first` static obstacles).
    /// Errors: a body's mesh without a convex hull, a static mesh rapier refuses.
    pub fn new(
        domain: (Vec3, Vec3),
        terrain: &Heightfield,
        statics: &[Obstacle],
        bodies: &[Body],
        water: &SimParams,
        entries: &[ObstacleGpu],
    ) -> Result<Self, BodyError> {
        let gravity = Vec3::from(water.gravity);
        let particle_volume = water.dx.powi(3);
        let mut world = rp::PhysicsWorld::new();
        world.gravity = v(gravity);
        let fixed = |world: &mut rp::PhysicsWorld, c: rp::ColliderBuilder| {
            world.colliders.insert(c.build());
        };
        // Walls: boxes 1 m thick just outside the domain on the four sides and over the top.
        let (lo, hi) = domain;
        let (mid, half) = (0.5 * (lo + hi), 0.5 * (hi - lo));
        let t = 0.5;
        for (centre, size) in [
            (Vec3::new(lo.x - t, mid.y, mid.z), Vec3::new(t, half.y + 2.0 * t, half.z + 2.0 * t)),
            (Vec3::new(hi.x + t, mid.y, mid.z), Vec3::new(t, half.y + 2.0 * t, half.z + 2.0 * t)),
            (Vec3::new(mid.x, mid.y, lo.z - t), Vec3::new(half.x + 2.0 * t, half.y + 2.0 * t, t)),
            (Vec3::new(mid.x, mid.y, hi.z + t), Vec3::new(half.x + 2.0 * t, half.y + 2.0 * t, t)),
            (Vec3::new(mid.x, hi.y + t, mid.z), Vec3::new(half.x + 2.0 * t, t, half.z + 2.0 * t)),
            (Vec3::new(mid.x, lo.y - t, mid.z), Vec3::new(half.x + 2.0 * t, t, half.z + 2.0 * t)),
        ] {
            fixed(&mut world, rp::ColliderBuilder::cuboid(size.x, size.y, size.z).translation(v(centre)));
        }
        // The terrain: heights of row iz (z), column ix (x), stored column-major for parry.
        let (nx, nz) = (terrain.nx as usize, terrain.nz as usize);
        let mut heights = Vec::with_capacity(nx * nz);
        for ix in 0..nx {
            for iz in 0..nz {
                heights.push(terrain.heights[iz * nx + ix]);
            }
        }
        let centre = terrain.origin + 0.5 * terrain.extent;
        fixed(
            &mut world,
            rp::ColliderBuilder::heightfield(
                rapier3d::parry::utils::Array2::new(nz, nx, heights),
                rp::Vector::new(terrain.extent.x, 1.0, terrain.extent.y),
            )
            .translation(rp::Vector::new(centre.x, 0.0, centre.y)),
        );
        let mut static_handles = Vec::with_capacity(statics.len());
        for (k, o) in statics.iter().enumerate() {
            let vertices = o.world_vertices().into_iter().map(v).collect();
            let collider = rp::ColliderBuilder::trimesh(vertices, o.mesh.triangles.clone())
                .map_err(|e| BodyError::Obstacle { obstacle: k + 1, name: o.name.clone(), cause: e.to_string() })?;
            static_handles.push(world.colliders.insert(collider.build()));
        }
        let mut handles = Vec::with_capacity(bodies.len());
        let mut handles_mass = Vec::with_capacity(bodies.len());
        let mut scales = Vec::with_capacity(bodies.len());
        for (k, b) in bodies.iter().enumerate() {
            let o = &b.obstacle;
            let points: Vec<rp::Vector> = o.mesh.vertices.iter().map(|&p| v(p)).collect();
            let collider = rp::ColliderBuilder::convex_hull(&points)
                .ok_or_else(|| BodyError::Hull { body: k + 1, name: o.name.clone() })?
                .density(b.density);
            let body = rp::RigidBodyBuilder::dynamic()
                .pose(rp::Pose::from_parts(v(o.position), q(o.rotation)))
                .can_sleep(false)
                .linear_damping(0.0)
                .angular_damping(0.0)
                .build();
            let handle = world.bodies.insert(body);
            let collider = collider.build();
            // The body's own mass is only updated at the next step: take the collider's.
            let mass = collider.mass();
            handles_mass.push(mass);
            world.colliders.insert_with_parent(collider, handle, &mut world.bodies);
            let (lo, hi) = o.mesh.bounds();
            let reach = (0.5 * (hi - lo).length()).max(1e-3);
            let unit = (mass * gravity.length().max(1.0) * REFERENCE_TIME).max(1e-12) / FIXED_UNITS;
            scales.push((1.0 / unit, 1.0 / (unit * reach)));
            handles.push(handle);
        }
        let mut s = Self {
            bodies: bodies.to_vec(),
            world,
            handles,
            first: statics.len(),
            entries: entries.to_vec(),
            scales,
            time: 0.0,
            forces: vec![Vec3::ZERO; bodies.len()],
            water_scales: bodies
                .iter()
                .map(|b| {
                    WATER_UNITS * particle_volume / (b.obstacle.mesh.area() * water.support()).max(particle_volume)
                })
                .collect(),
            water: vec![(Vec3::ZERO, 0.0); bodies.len()],
            smoothed: vec![(Vec3::ZERO, Vec3::ZERO); bodies.len()],
            masses: bodies.iter().zip(&handles_mass).map(|(b, &m)| (m, water.rho0 * m / b.density)).collect(),
            seen: Vec::new(),
            statics: static_handles,
        };
        s.update_entries();
        Ok(s)
    }

    /// The bodies as the scene placed them (their starting frames).
    pub fn initial(&self) -> &[Body] {
        &self.bodies
    }

    /// Sets the gravity the bodies fall with, m/s^2 (the simulation's, when its parameters change).
    pub fn set_gravity(&mut self, gravity: Vec3) {
        self.world.gravity = v(gravity);
    }

    /// Bodies in the scene.
    pub fn len(&self) -> usize {
        self.bodies.len()
    }

    /// True when there is none (never built so).
    pub fn is_empty(&self) -> bool {
        self.bodies.is_empty()
    }

    /// Body `k`'s state now (as the GPU has it after the last [`Bodies::advance`]).
    pub fn state(&self, k: usize) -> BodyState {
        let b = &self.world.bodies[self.handles[k]];
        BodyState {
            rotation: gq(b.rotation()),
            position: g(b.translation()),
            centre: g(b.center_of_mass()),
            velocity: g(b.linvel()),
            angular: g(b.angvel()),
            force: self.forces[k],
            water_velocity: self.water[k].0,
            wet: self.water[k].1,
            mass: self.masses[k].0,
        }
    }

    /// Every body's state, in the scene's order.
    pub fn states(&self) -> Vec<BodyState> {
        (0..self.len()).map(|k| self.state(k)).collect()
    }

    /// The bodies as obstacles at their current frames (mesh and field shared with the build), e.g. to
    /// measure a particle's distance to one ([`Obstacle::distance`]).
    pub fn placed(&self) -> Vec<Obstacle> {
        self.bodies
            .iter()
            .enumerate()
            .map(|(k, b)| {
                let s = self.state(k);
                Obstacle { rotation: s.rotation, position: s.position, ..b.obstacle.clone() }
            })
            .collect()
    }

    /// Notes the entries the GPU has now as those of the step being recorded (the writes of
    /// [`Bodies::write`] reach the GPU before the next submission).
    pub(super) fn stepped(&mut self) {
        self.seen.clone_from(&self.entries);
    }

    /// The bodies as the water saw them in the last recorded step, at the water's time `time` (s, that
    /// step's): the frames written before it carried on with their velocities as the shaders do
    /// (`obstacle_at` in shaders/sim/common.wgsl). These lag [`Bodies::placed`] (the rigid bodies' own
    /// frames) by the read-back's delay: what a particle's distance to a body is checked against.
    pub fn water_frames(&self, time: f32) -> Vec<Obstacle> {
        let seen = if self.seen.is_empty() { &self.entries } else { &self.seen };
        self.bodies
            .iter()
            .zip(seen)
            .map(|(b, e)| {
                let dt = (time - e.centre[3]).clamp(-MAX_AHEAD, MAX_AHEAD);
                let xyz = |a: [f32; 4]| Vec3::new(a[0], a[1], a[2]);
                let (p, c, turn) = (xyz(e.position), xyz(e.centre), xyz(e.angular) * dt);
                let axes = [e.axis_x, e.axis_y, e.axis_z].map(|a| xyz(a) + turn.cross(xyz(a)));
                let rotation = Quat::from_mat3(&glam::Mat3::from_cols(axes[0], axes[1], axes[2])).normalize();
                let position = p + xyz(e.velocity) * dt + turn.cross(p - c);
                Obstacle { rotation, position, ..b.obstacle.clone() }
            })
            .collect()
    }

    /// Simulated time the bodies are at, s.
    pub fn time(&self) -> f32 {
        self.time
    }

    /// Back to the scene's starting frames, at rest, at time 0.
    pub fn reset(&mut self) {
        for (b, &h) in self.bodies.iter().zip(&self.handles) {
            let body = &mut self.world.bodies[h];
            body.set_position(rp::Pose::from_parts(v(b.obstacle.position), q(b.obstacle.rotation)), true);
            body.set_linvel(rp::Vector::ZERO, true);
            body.set_angvel(rp::Vector::ZERO, true);
            load(body, Vec3::ZERO, Vec3::ZERO);
        }
        self.forces.iter_mut().for_each(|f| *f = Vec3::ZERO);
        self.water.iter_mut().for_each(|w| *w = (Vec3::ZERO, 0.0));
        self.smoothed.iter_mut().for_each(|f| *f = (Vec3::ZERO, Vec3::ZERO));
        self.time = 0.0;
        self.update_entries();
    }

    /// The bodies' motion now, for a checkpoint.
    pub fn snapshot(&self) -> BodiesSnapshot {
        let bodies = (0..self.len())
            .map(|k| {
                let s = self.state(k);
                let b = &self.world.bodies[self.handles[k]];
                let (smoothed_force, smoothed_torque) = self.smoothed[k];
                BodySnapshot {
                    position: s.position.into(),
                    rotation: s.rotation.into(),
                    velocity: s.velocity.into(),
                    angular: s.angular.into(),
                    force: self.forces[k].into(),
                    torque: g(b.user_torque()).into(),
                    smoothed_force: smoothed_force.into(),
                    smoothed_torque: smoothed_torque.into(),
                    water_velocity: s.water_velocity.into(),
                    wet: s.wet,
                }
            })
            .collect();
        BodiesSnapshot { time: self.time, bodies }
    }

    /// Puts the bodies where `snapshot` says, moving as it says, at its time (the GPU's entries follow:
    /// [`Bodies::write`]). Errors: another number of bodies, or a value that is not finite.
    pub fn restore(&mut self, snapshot: &BodiesSnapshot) -> Result<(), String> {
        if snapshot.bodies.len() != self.len() {
            return Err(format!("it holds {} bodies; the scene has {}", snapshot.bodies.len(), self.len()));
        }
        let finite = |a: &[f32]| a.iter().all(|x| x.is_finite());
        for (k, b) in snapshot.bodies.iter().enumerate() {
            let values = [&b.position[..], &b.rotation, &b.velocity, &b.angular, &b.force, &b.torque];
            let more = [&b.smoothed_force[..], &b.smoothed_torque, &b.water_velocity, &[b.wet, snapshot.time]];
            if !values.iter().chain(&more).all(|a| finite(a)) || Quat::from_array(b.rotation).length() < 0.5 {
                return Err(format!("body {}'s saved motion is not finite", k + 1));
            }
        }
        for (k, b) in snapshot.bodies.iter().enumerate() {
            let body = &mut self.world.bodies[self.handles[k]];
            // Saved unit length (to rounding): normalised only when it is not, so it comes back exactly.
            let rotation = Quat::from_array(b.rotation);
            let rotation = if rotation.is_normalized() { rotation } else { rotation.normalize() };
            body.set_position(rp::Pose::from_parts(v(Vec3::from(b.position)), q(rotation)), true);
            body.set_linvel(v(Vec3::from(b.velocity)), true);
            body.set_angvel(v(Vec3::from(b.angular)), true);
            load(body, Vec3::from(b.force), Vec3::from(b.torque));
            self.forces[k] = Vec3::from(b.force);
            self.smoothed[k] = (Vec3::from(b.smoothed_force), Vec3::from(b.smoothed_torque));
            self.water[k] = (Vec3::from(b.water_velocity), b.wet.clamp(0.0, 1.0));
        }
        self.time = snapshot.time.max(0.0);
        self.update_entries();
        Ok(())
    }

    /// Carries another simulation's bodies on (their frames, velocities and clock; a larger pool's copy).
    pub fn carry_from(&mut self, other: &Bodies) {
        for (k, &h) in self.handles.iter().enumerate() {
            let s = other.state(k);
            let body = &mut self.world.bodies[h];
            body.set_position(rp::Pose::from_parts(v(s.position), q(s.rotation)), true);
            body.set_linvel(v(s.velocity), true);
            body.set_angvel(v(s.angular), true);
        }
        self.forces.clone_from(&other.forces);
        self.water.clone_from(&other.water);
        self.smoothed.clone_from(&other.smoothed);
        self.time = other.time;
        self.update_entries();
    }

    /// Moves the bodies to the water's simulated time `time` (s) under gravity and the water's impulses
    /// of the record that reached it (`sums`: the i32 block at [`BODY_SUMS_OFFSET`], summed since the
    /// previous record): the mean force impulse / (time - the bodies' time) over that interval, in rapier
    /// steps of at most 4 ms. A record at or before the bodies' time (a paused or reset simulation) moves
    /// nothing.
    pub fn advance(&mut self, time: f32, sums: &[i32]) {
        let span = time - self.time;
        if !(span > 0.0 && span.is_finite()) {
            if time < self.time {
                self.time = time.max(0.0);
            }
            return;
        }
        for (k, &h) in self.handles.iter().enumerate() {
            let (fs, ts) = self.scales[k];
            let at = |i: usize| sums.get(SUMS_PER_BODY * k + i).copied().unwrap_or(0) as f32;
            let impulse = Vec3::new(at(0), at(1), at(2)) / fs;
            let angular = Vec3::new(at(3), at(4), at(5)) / ts;
            self.forces[k] = impulse / span;
            let blend = 1.0 - (-span / PREDICT_SMOOTHING).exp();
            let (f, t) = &mut self.smoothed[k];
            *f += (impulse / span - *f) * blend;
            *t += (angular / span - *t) * blend;
            let weight = at(9);
            let water = if weight > 0.0 { Vec3::new(at(6), at(7), at(8)) / weight } else { Vec3::ZERO };
            let wet = (weight / (span * WATER_UNITS)).clamp(0.0, 1.0);
            self.water[k] = (water, wet);
            // The added mass (see ADDED_MASS): inertia m + m_a, gravity still m g.
            let (m, displaced) = self.masses[k];
            let added = ADDED_MASS * displaced * wet;
            let body = &mut self.world.bodies[h];
            body.set_additional_mass(added, true);
            body.set_gravity_scale(m / (m + added), true);
            load(body, impulse / span, angular / span);
        }
        self.step_over(span, 1000.0, |_| {});
        self.time = time;
        self.update_entries();
    }

    /// Steps rapier over `span` s in equal steps of at most [`MAX_RIGID_STEP`] (at most `max_steps`), each
    /// after the water's drag, calling `after_each` after every step.
    fn step_over(&mut self, span: f32, max_steps: f32, mut after_each: impl FnMut(&Self)) {
        let steps = (span / MAX_RIGID_STEP).ceil().clamp(1.0, max_steps);
        let dt = span / steps;
        self.world.integration_parameters.dt = dt;
        for _ in 0..steps as u32 {
            self.drag(dt);
            self.world.step();
            after_each(self);
        }
    }

    /// The water's drag on each body over a rapier step of `dt` s ([`DAMPING`], implicit so it never
    /// overshoots): its velocity relative to the water around it and its angular velocity divided by
    /// 1 + dt c, c = DAMPING times its wet share.
    fn drag(&mut self, dt: f32) {
        for (k, &h) in self.handles.iter().enumerate() {
            let (water, wet) = self.water[k];
            let keep = 1.0 / (1.0 + dt * DAMPING * wet);
            let body = &mut self.world.bodies[h];
            let linear = water + (g(body.linvel()) - water) * keep;
            let angular = g(body.angvel()) * keep;
            body.set_linvel(v(linear), true);
            body.set_angvel(v(angular), true);
        }
    }

    /// Puts the static obstacles' colliders where `statics` (the same obstacles in the same order, moved,
    /// turned or scaled live: src/sim/live_obstacles.rs) are now. A mesh rapier refuses (not expected: it
    /// took the same triangles when built) keeps its collider where it was.
    pub fn set_statics(&mut self, statics: &[Obstacle]) {
        for (&h, o) in self.statics.iter().zip(statics) {
            let vertices = o.world_vertices().into_iter().map(v).collect();
            if let (Some(c), Ok(shape)) =
                (self.world.colliders.get_mut(h), rp::SharedShape::trimesh(vertices, o.mesh.triangles.clone()))
            {
                c.set_shape(shape);
            }
        }
    }

    /// Writes the bodies into their GPU entries as they will be `ahead` s after the last record (the
    /// water's time when its next frame starts, the records being a few frames late): rapier steps them on
    /// under the water's smoothed force and drag, with their contacts, and puts them back; a body that
    /// touches the terrain, a wall, an obstacle or another body on the way goes to the GPU as predicted. The water thus
    /// meets each body where rapier expects it, not where its last velocity carries it: a crate stopped by
    /// the terrain is not carried into it (docs/validation.md, "Floating and sinking bodies").
    pub fn predict(&mut self, ahead: f32) {
        if !(ahead > 0.0 && ahead.is_finite()) {
            return;
        }
        let ahead = ahead.min(MAX_AHEAD);
        let saved: Vec<(rp::Pose, rp::Vector, rp::Vector)> = self
            .handles
            .iter()
            .map(|&h| {
                let b = &self.world.bodies[h];
                (*b.position(), b.linvel(), b.angvel())
            })
            .collect();
        for (&h, &(f, t)) in self.handles.iter().zip(&self.smoothed) {
            load(&mut self.world.bodies[h], f, t);
        }
        let base = self.entries.clone();
        let mut touched = vec![false; self.len()];
        self.step_over(ahead, 100.0, |s| {
            for (t, &h) in touched.iter_mut().zip(&s.handles) {
                let w = &s.world;
                *t |= w.bodies[h]
                    .colliders()
                    .iter()
                    .any(|&c| w.narrow_phase.contact_pairs_with(c).any(|p| p.has_any_active_contact()));
            }
        });
        self.update_entries_at(self.time + ahead);
        // A body that met nothing keeps its last frame, carried on by the shaders with its velocity:
        // the prediction under a force averaged over 0.1 s lets a floating body bob (its submerged
        // share swung by +-0.03 and sat 8 % high in tests/bodies.rs), the plain carrying-on does not.
        for ((e, b), t) in self.entries.iter_mut().zip(base).zip(touched) {
            if !t {
                *e = b;
            }
        }
        for (&h, (pose, linvel, angvel)) in self.handles.iter().zip(saved) {
            let b = &mut self.world.bodies[h];
            b.set_position(pose, true);
            b.set_linvel(linvel, true);
            b.set_angvel(angvel, true);
        }
    }

    /// Recomputes the bodies' GPU entries from their rapier state, at the bodies' time.
    fn update_entries(&mut self) {
        self.update_entries_at(self.time);
    }

    /// Recomputes the bodies' GPU entries from their rapier state, as the frames at simulated time `time`.
    fn update_entries_at(&mut self, time: f32) {
        for k in 0..self.len() {
            let s = self.state(k);
            let e = &mut self.entries[k];
            let axis = |a: Vec3| [a.x, a.y, a.z, 0.0];
            e.axis_x = axis(s.rotation * Vec3::X);
            e.axis_y = axis(s.rotation * Vec3::Y);
            e.axis_z = axis(s.rotation * Vec3::Z);
            e.position = [s.position.x, s.position.y, s.position.z, self.water_scales[k]];
            let (fs, ts) = self.scales[k];
            e.velocity = [s.velocity.x, s.velocity.y, s.velocity.z, fs];
            e.angular = [s.angular.x, s.angular.y, s.angular.z, ts];
            e.centre = [s.centre.x, s.centre.y, s.centre.z, time];
        }
    }

    /// Byte offset of the first body's entry in the obstacle list.
    fn offset(&self) -> usize {
        std::mem::offset_of!(ObstacleList, list) + self.first * std::mem::size_of::<ObstacleGpu>()
    }

    /// Writes the bodies' entries into the GPU's obstacle list (binding 17); nothing waits.
    pub fn write(&self, queue: &wgpu::Queue, obstacles: &wgpu::Buffer) {
        queue.write_buffer(obstacles, self.offset() as u64, bytemuck::cast_slice(&self.entries));
    }

    /// Writes the bodies' entries into `bytes`, the obstacle list's bytes before they are uploaded.
    pub(super) fn write_into(&self, bytes: &mut [u8]) {
        let entries: &[u8] = bytemuck::cast_slice(&self.entries);
        let at = self.offset();
        if let Some(dst) = bytes.get_mut(at..at + entries.len()) {
            dst.copy_from_slice(entries);
        }
    }
}
