//! A scene's floating and sinking bodies (`bodies: [(mesh: "crate.obj", position: (x, y, z), rotation_deg:
//! (x, y, z), scale: s, density: 500.0)]`): a body is an obstacle whose frame moves. Its placement is
//! checked and placed exactly as an obstacle's (`obstacles.rs`: the same loader, size and domain checks,
//! the same signed distance field); its density (kg/m^3, 1 ..= 1e5 as the water's rho0) gives its mass
//! and inertia ([`crate::sim::bodies`]). Errors name the scene file, the body (1-based), its mesh file and the field.

use super::invalid::InvalidValue;
use super::obstacles::{check_placement, ObstacleDesc};
use super::{Scene, SceneError};
use crate::sim::bodies::Body;
use crate::sim::obstacles::MAX_OBSTACLES;
use crate::sim::params::{fmt_f32, RHO0_RANGE};
use serde::{Deserialize, Serialize};

/// A rigid body: a closed mesh placed in the domain that the water carries (floating, sinking) and that
/// pushes the water back. Its mass and inertia come from the mesh's volume and `density`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyDesc {
    /// Path of the `.obj`, `.stl`, `.gltf` or `.glb` file, relative to the scene file; its units are
    /// metres (before `scale`). Closed and consistently wound, as an obstacle's.
    pub mesh: String,
    /// World position of the mesh's origin at the start, metres.
    #[serde(default)]
    pub position: [f32; 3],
    /// Rotation at the start about the world x, then y, then z axis, degrees (about the mesh's origin).
    #[serde(default)]
    pub rotation_deg: [f32; 3],
    /// Uniform scale applied to the mesh's coordinates (about its origin) before the rotation; > 0.
    #[serde(default = "super::one")]
    pub scale: f32,
    /// Density of the body, kg/m^3 (1 ..= 1e5, the range of the water's rho0): below the water's rho0 it
    /// floats, above it sinks.
    pub density: f32,
}

impl BodyDesc {
    /// Its placement, as an obstacle's fields (the mesh, position, rotation and scale).
    pub fn placement(&self) -> ObstacleDesc {
        ObstacleDesc {
            mesh: self.mesh.clone(),
            position: self.position,
            rotation_deg: self.rotation_deg,
            scale: self.scale,
        }
    }
}

/// The bodies' fields: obstacles and bodies together at most [`MAX_OBSTACLES`] (they share the GPU's
/// list), each body placed as an obstacle ([`crate::scene::check_obstacles`] checks the same fields) with a
/// density in [`RHO0_RANGE`] (1 ..= 1e5 kg/m^3): a body of 1e24 kg/m^3 or more hung in the air (rapier
/// took its mass of about 1e21 kg for an immovable one), and a range shared with the water keeps their
/// ratio within 1e5.
pub fn check_bodies(bodies: &[BodyDesc], obstacles: usize) -> Result<(), InvalidValue> {
    if bodies.len() + obstacles > MAX_OBSTACLES {
        return Err(InvalidValue::new(
            "bodies",
            "count",
            bodies.len(),
            format!("and {obstacles} obstacles are more than {MAX_OBSTACLES} in all"),
        ));
    }
    for (k, b) in bodies.iter().enumerate() {
        let item = format!("body {}", k + 1);
        check_placement(&item, &b.placement())?;
        let (lo, hi) = RHO0_RANGE;
        if !(lo..=hi).contains(&b.density) {
            return Err(InvalidValue::new(
                item,
                "density",
                fmt_f32(b.density),
                format!("must be {lo} ..= {hi} kg/m^3 (the range of the water's rho0)"),
            ));
        }
    }
    Ok(())
}

impl Scene {
    /// Reads, checks and places every body at spacing `dx` as [`Scene::place_obstacles`] does an
    /// obstacle.
    pub(super) fn place_bodies(&self, dx: f32, support: f32) -> Result<Vec<Body>, SceneError> {
        let mut placed = Vec::with_capacity(self.bodies.len());
        for (k, b) in self.bodies.iter().enumerate() {
            let item = format!("body {} ({})", k + 1, b.mesh);
            let obstacle = self.place_mesh(&item, &b.placement(), dx, support)?;
            placed.push(Body { obstacle, density: b.density });
        }
        Ok(placed)
    }
}
