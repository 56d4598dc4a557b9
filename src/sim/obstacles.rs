//! Static obstacles as the simulation sees them: a closed mesh placed in the world (a rotation and a
//! position; the scale is already in its vertices) with its signed distance field
//! ([`crate::mesh::sdf::DistanceField`], computed once per build on the CPU over the mesh's bounds plus the
//! support radius). On the GPU (binding 17 of the simulation, `Obstacles` in shaders/sim/common.wgsl)
//! every obstacle is one [`ObstacleGpu`] entry of a short list ([`ObstacleList`], at most
//! [`MAX_OBSTACLES`]) followed by all fields' samples. The boundary model reads each as one more
//! half-space of the density-map boundary (Koschier & Bender 2017): the plane through the particle's
//! distance d along the field's normal n, looked up in the same table as the walls, and the collision
//! projection moves a particle closer than `r_collide` out along n. A scene without obstacles uploads an
//! empty list, and the shaders' loops over it run no iteration.

use crate::mesh::sdf::{DistanceField, FieldError};
use crate::mesh::TriangleMesh;
use bytemuck::{Pod, Zeroable};
use glam::{Quat, UVec3, Vec3};
use std::sync::Arc;

/// Most obstacles in one simulation (the WGSL constant `MAX_OBSTACLES`).
pub const MAX_OBSTACLES: usize = 16;

/// Most distance samples of all obstacles together (64 MiB of f32, under lavapipe's 128 MiB storage
/// binding); each field is at most [`crate::mesh::sdf::MAX_FIELD_SAMPLES`].
pub const MAX_TOTAL_SAMPLES: usize = 1 << 24;

/// One obstacle placed in the world: `world = rotation * local + position`, local being the mesh's frame
/// (metres: any scale is already applied to `mesh`).
#[derive(Clone, Debug)]
pub struct Obstacle {
    /// Its name in messages and the Scene panel (the mesh file's name).
    pub name: String,
    /// The closed, outward-wound mesh, local frame, metres.
    pub mesh: Arc<TriangleMesh>,
    /// Its signed distance field, local frame.
    pub field: Arc<DistanceField>,
    /// Local to world rotation.
    pub rotation: Quat,
    /// World position of the local origin, metres.
    pub position: Vec3,
    /// The scale `mesh` has, applied to its file's coordinates (1 unless placed from a scene with
    /// `scale`): `mesh` / `scale` is the file's mesh, which an obstacle scaled live starts from
    /// (src/sim/live_obstacles.rs).
    pub scale: f32,
}

impl Obstacle {
    /// Places `mesh` (local frame, metres) at `rotation`, `position` and samples its distance field every
    /// `spacing` metres over its bounds plus `margin` metres (the support radius and a sample or more).
    pub fn new(
        name: String,
        mesh: TriangleMesh,
        rotation: Quat,
        position: Vec3,
        margin: f32,
        spacing: f32,
    ) -> Result<Self, FieldError> {
        let field = DistanceField::new(&mesh, margin, spacing)?;
        Ok(Self { name, mesh: Arc::new(mesh), field: Arc::new(field), rotation, position, scale: 1.0 })
    }

    /// World point `p` in the local frame.
    pub fn to_local(&self, p: Vec3) -> Vec3 {
        self.rotation.inverse() * (p - self.position)
    }

    /// Signed distance from world point `p` to the surface, metres (negative inside; trilinear, as the
    /// shaders read it); `f32::INFINITY` farther than the field's margin.
    pub fn distance(&self, p: Vec3) -> f32 {
        self.field.distance(self.to_local(p))
    }

    /// The mesh's vertices in world space, metres.
    pub fn world_vertices(&self) -> Vec<Vec3> {
        self.mesh.vertices.iter().map(|&v| self.rotation * v + self.position).collect()
    }

    /// (min, max) world corners of the mesh, metres.
    pub fn world_bounds(&self) -> (Vec3, Vec3) {
        crate::mesh::bounds(&self.world_vertices())
    }
}

/// One obstacle on the GPU. WGSL twin: ObstacleGpu in shaders/sim/common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct ObstacleGpu {
    /// The local x axis in world space (the rotation's first column), w unused.
    pub axis_x: [f32; 4],
    /// The local y axis in world space.
    pub axis_y: [f32; 4],
    /// The local z axis in world space.
    pub axis_z: [f32; 4],
    /// World position of the local origin, metres; w unused.
    pub position: [f32; 4],
    /// Local position of the field's sample (0, 0, 0), metres.
    pub grid_min: [f32; 3],
    /// Distance between samples, metres.
    pub spacing: f32,
    /// Samples per axis.
    pub dims: [u32; 3],
    /// Index of the field's first sample in the samples that follow the list.
    pub offset: u32,
    /// A body's velocity at its centre of mass (xyz, m/s; zero for a static obstacle); w: the fixed-point
    /// scale of its impulse sums, units per N s ([`super::bodies`]; 0 for a static obstacle).
    pub velocity: [f32; 4],
    /// A body's angular velocity in world space (xyz, rad/s); w: the fixed-point scale of its angular
    /// impulse sums, units per N m s.
    pub angular: [f32; 4],
    /// A body's centre of mass in world space (xyz, m), about which its angular impulse is summed; a static
    /// obstacle's field centre (the middle of its mesh's bounds). A particle trapped inside the obstacle
    /// is led out away from it (`escape` in shaders/sim/integrate.wgsl). w: the simulated time (s) of
    /// this frame, from which the shaders carry a body on with its velocities to the step's time
    /// (`obstacle_at` in shaders/sim/common.wgsl).
    pub centre: [f32; 4],
}

impl ObstacleGpu {
    /// The entry of `o` (its frame and its field, whose samples start at `offset`), at rest.
    pub fn placed(o: &Obstacle, offset: u32) -> Self {
        let f = &o.field;
        let axis = |v: Vec3| [v.x, v.y, v.z, 0.0];
        let middle = f.min + 0.5 * f.spacing * (f.dims - UVec3::ONE).as_vec3();
        let centre = o.rotation * middle + o.position;
        Self {
            axis_x: axis(o.rotation * Vec3::X),
            axis_y: axis(o.rotation * Vec3::Y),
            axis_z: axis(o.rotation * Vec3::Z),
            position: [o.position.x, o.position.y, o.position.z, 0.0],
            grid_min: f.min.to_array(),
            spacing: f.spacing,
            dims: f.dims.to_array(),
            offset,
            centre: [centre.x, centre.y, centre.z, 0.0],
            ..Self::default()
        }
    }
}

/// The obstacles' list, followed on the GPU by their samples (`array<f32>`). WGSL twin: ObstacleList in
/// shaders/sim/common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ObstacleList {
    /// Obstacles in `list` (the rest is zero).
    pub count: u32,
    /// Index of the first body in `list` (static obstacles come first, then the bodies up to `count`).
    pub first_body: u32,
    pub _pad1: u32,
    pub _pad2: u32,
    pub list: [ObstacleGpu; MAX_OBSTACLES],
}

/// The bytes of binding 17: the list of `obstacles` (at most [`MAX_OBSTACLES`]: more are left out,
/// which the scene's checks never let happen; those from index `first_body` on are bodies, whose motion
/// [`super::bodies`] writes), then every field's samples; at least four, so the binding is never smaller
/// than its layout's minimum (the list and four samples).
pub fn to_gpu(obstacles: &[&Obstacle], first_body: usize) -> Vec<u8> {
    let mut head = ObstacleList {
        count: 0,
        first_body: first_body.min(MAX_OBSTACLES) as u32,
        _pad1: 0,
        _pad2: 0,
        list: [ObstacleGpu::default(); MAX_OBSTACLES],
    };
    let mut samples: Vec<f32> = Vec::new();
    for (slot, o) in head.list.iter_mut().zip(obstacles) {
        *slot = ObstacleGpu::placed(o, samples.len() as u32);
        samples.extend_from_slice(&o.field.values);
        head.count += 1;
    }
    samples.resize(samples.len().max(4), 0.0);
    let mut bytes = bytemuck::bytes_of(&head).to_vec();
    bytes.extend_from_slice(bytemuck::cast_slice(&samples));
    bytes
}

/// The smallest binding 17 holds, its bind group layout's `min_binding_size`: the list and one sample,
/// rounded up to the struct's 16-byte alignment (WGSL's `Obstacles`, whose samples are a runtime-sized
/// array).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct SmallestBinding {
    head: ObstacleList,
    samples: [f32; 4],
}
