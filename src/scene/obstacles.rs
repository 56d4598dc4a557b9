//! A scene's static obstacles (`obstacles: [(mesh: "pier.obj", position: (x, y, z), rotation_deg: (x, y,
//! z), scale: s)]`): the fields are checked with the rest of the scene ([`check_obstacles`], no file
//! read), and when the scene is built each mesh is read ([`crate::mesh::load`]: OBJ, STL or glTF, closed
//! and consistently wound), scaled, rotated and placed, checked against the spacing and the domain
//! (at least [`MIN_SIZE_DX`] dx across at its thinnest, no larger than the domain along any axis, and
//! overlapping it) and given its signed distance field ([`crate::sim::obstacles::Obstacle`]).
//! Errors name the scene file, the obstacle (1-based, as in the Scene panel), its mesh file and the
//! field.

use super::invalid::{tuple, InvalidValue};
use super::{Scene, SceneError};
use crate::sim::obstacles::{Obstacle, MAX_OBSTACLES, MAX_TOTAL_SAMPLES};
use crate::sim::params::fmt_f32;
use glam::{EulerRot, Quat, Vec3};
use serde::{Deserialize, Serialize};

/// Fewest particle spacings an obstacle measures across at its thinnest: thinner, the kernel's support
/// (2.4 dx) reaches through it and the half-space model sees water on both sides as one.
pub const MIN_SIZE_DX: f32 = 2.0;

/// (file name, bytes) of the meshes embedded in the binary: a built-in scene's mesh missing on disk
/// (the app run from another folder) is read from here.
const EMBEDDED_MESHES: &[(&str, &[u8])] = &[
    ("marin_box.obj", include_bytes!("../../assets/meshes/marin_box.obj")),
    ("house.obj", include_bytes!("../../assets/meshes/house.obj")),
    ("crate.obj", include_bytes!("../../assets/meshes/crate.obj")),
];

/// The mesh at `path`, or the embedded one of the same file name when no file is there.
fn load_mesh(path: &std::path::Path) -> Result<crate::mesh::TriangleMesh, crate::mesh::MeshError> {
    match crate::mesh::load(path) {
        Err(crate::mesh::MeshError::File(e)) if e.is_not_found() => {
            let name = path.file_name().and_then(|n| n.to_str());
            match (EMBEDDED_MESHES.iter().find(|(n, _)| Some(*n) == name), crate::mesh::MeshFormat::from_path(path)) {
                (Some((_, bytes)), Some(format)) => crate::mesh::from_bytes(bytes, format, path),
                _ => Err(crate::mesh::MeshError::File(e)),
            }
        }
        other => other,
    }
}

/// Largest rotation angle accepted, degrees (ten turns: anything larger is a typing error).
const MAX_ANGLE_DEG: f32 = 3600.0;

/// A static obstacle: a closed mesh placed in the domain. The water flows around it and never enters it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObstacleDesc {
    /// Path of the `.obj`, `.stl`, `.gltf` or `.glb` file, relative to the scene file. Its units are
    /// taken as metres (before `scale`).
    pub mesh: String,
    /// World position of the mesh's origin, metres.
    #[serde(default)]
    pub position: [f32; 3],
    /// Rotation about the world x, then y, then z axis, degrees (about the mesh's origin).
    #[serde(default)]
    pub rotation_deg: [f32; 3],
    /// Uniform scale applied to the mesh's coordinates (about its origin) before the rotation; > 0.
    #[serde(default = "super::one")]
    pub scale: f32,
}

impl ObstacleDesc {
    /// The rotation from the mesh's frame to the world: about x, then y, then z (fixed axes).
    pub fn rotation(&self) -> Quat {
        let [x, y, z] = self.rotation_deg.map(f32::to_radians);
        Quat::from_euler(EulerRot::ZYX, z, y, x)
    }

    /// A new obstacle from the mesh at `path` (made absolute when it can be, so that the scene may be
    /// saved elsewhere) with its origin on `terrain`'s ground at the centre of `scene`'s domain (the
    /// domain's floor where the ground lies lower), unturned, at scale 1: where the window's "Add mesh…"
    /// puts it, to be moved from there.
    pub fn on_the_ground(path: &std::path::Path, scene: &Scene, terrain: &crate::terrain::Heightfield) -> Self {
        let d = &scene.domain;
        let (x, z) = (0.5 * (d.min[0] + d.max[0]), 0.5 * (d.min[2] + d.max[2]));
        let ground = terrain.height_at(x, z);
        let y = if ground.is_finite() { ground.clamp(d.min[1], d.max[1]) } else { d.min[1] };
        let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        Self { mesh: path.to_string_lossy().into_owned(), position: [x, y, z], rotation_deg: [0.0; 3], scale: 1.0 }
    }
}

/// The obstacles' fields: at most [`MAX_OBSTACLES`], each with a mesh path, a finite position and
/// rotation (at most 3600 degrees about an axis) and a scale > 0.
pub fn check_obstacles(obstacles: &[ObstacleDesc]) -> Result<(), InvalidValue> {
    if obstacles.len() > MAX_OBSTACLES {
        return Err(InvalidValue::new("obstacles", "count", obstacles.len(), format!("is more than {MAX_OBSTACLES}")));
    }
    for (k, o) in obstacles.iter().enumerate() {
        check_placement(&format!("obstacle {}", k + 1), o)?;
    }
    Ok(())
}

/// The placement fields of one obstacle or body (`item` in the message): a mesh path, a finite position
/// and rotation (at most 3600 degrees about an axis) and a scale > 0.
pub(super) fn check_placement(item: &str, o: &ObstacleDesc) -> Result<(), InvalidValue> {
    if o.mesh.trim().is_empty() {
        return Err(InvalidValue::new(item, "mesh", "\"\"", "is empty"));
    }
    if !o.position.iter().all(|v| v.is_finite()) {
        return Err(InvalidValue::new(item, "position", tuple(&o.position), "must be finite"));
    }
    if !o.rotation_deg.iter().all(|v| v.is_finite() && v.abs() <= MAX_ANGLE_DEG) {
        return Err(InvalidValue::new(
            item,
            "rotation_deg",
            tuple(&o.rotation_deg),
            format!("must be finite and within -{MAX_ANGLE_DEG} ..= {MAX_ANGLE_DEG} degrees"),
        ));
    }
    if !(o.scale.is_finite() && o.scale > 0.0) {
        return Err(InvalidValue::new(item, "scale", fmt_f32(o.scale), "must be > 0 and finite"));
    }
    Ok(())
}

impl Scene {
    /// Reads, checks and places every obstacle at spacing `dx` (see the module docs); each distance
    /// field is sampled every dx / 2 over the mesh's bounds plus the support radius `support` and two
    /// samples.
    pub(super) fn place_obstacles(&self, dx: f32, support: f32) -> Result<Vec<Obstacle>, SceneError> {
        let mut placed: Vec<Obstacle> = Vec::with_capacity(self.obstacles.len());
        for (k, o) in self.obstacles.iter().enumerate() {
            let item = format!("obstacle {} ({})", k + 1, o.mesh);
            placed.push(self.place_mesh(&item, o, dx, support)?);
        }
        self.check_samples(&placed, dx)?;
        Ok(placed)
    }

    /// Fails when `placed` (obstacles and bodies together) need more distance samples than the GPU list
    /// holds.
    pub(super) fn check_samples(&self, placed: &[Obstacle], dx: f32) -> Result<(), SceneError> {
        let samples: usize = placed.iter().map(|o| o.field.values.len()).sum();
        if samples > MAX_TOTAL_SAMPLES {
            return Err(self.invalid(format!(
                "the obstacles' and bodies' distance fields need {samples} samples at dx = {dx} m, more than \
                 {MAX_TOTAL_SAMPLES}; use fewer or smaller obstacles or raise solver.dx"
            )));
        }
        Ok(())
    }

    /// Reads, scales, checks and places the mesh of `o` (named `item` in errors) with its distance field
    /// (see the module docs and [`Scene::place_obstacles`]).
    pub(super) fn place_mesh(
        &self,
        item: &str,
        o: &ObstacleDesc,
        dx: f32,
        support: f32,
    ) -> Result<Obstacle, SceneError> {
        let path = self.base_dir.join(&o.mesh);
        let mesh = load_mesh(&path).map_err(|e| match e {
            crate::mesh::MeshError::Cancelled { .. } => SceneError::Cancelled,
            e => self.invalid(format!("{item}: {e}")),
        })?;
        let mesh = self.scaled_mesh(item, o, &mesh, dx)?;
        let spacing = 0.5 * dx;
        let margin = support + 2.0 * spacing;
        let placed = Obstacle::new(o.mesh.clone(), mesh, o.rotation(), Vec3::from(o.position), margin, spacing)
            .map_err(|e| self.invalid(format!("{item}: {e}")))?;
        Ok(Obstacle { scale: o.scale, ..placed })
    }

    /// `mesh` (as read from `o`'s file, metres, unscaled) scaled by `o.scale`, after checking `o`'s
    /// placement of it against the spacing `dx` and the domain (see the module docs; `item` names it in
    /// errors): what a scene build places, and what an obstacle moved live is checked with
    /// ([`crate::engine::Engine::move_obstacles`]; no file read).
    pub fn scaled_mesh(
        &self,
        item: &str,
        o: &ObstacleDesc,
        mesh: &crate::mesh::TriangleMesh,
        dx: f32,
    ) -> Result<crate::mesh::TriangleMesh, SceneError> {
        let d = &self.domain;
        let (dlo, dhi) = (Vec3::from(d.min), Vec3::from(d.max));
        let fail = |what: String| self.invalid(format!("{item}: {what}"));
        let mut mesh = mesh.clone();
        for v in &mut mesh.vertices {
            *v *= o.scale;
        }
        let rotation = o.rotation();
        let position = Vec3::from(o.position);
        // A scale (or position) that carries a vertex past the f32 range passed every check below (the
        // bounds' differences are NaN then) and reached the distance field as infinite.
        let placed = |v: Vec3| rotation * v + position;
        if let Some(v) = mesh.vertices.iter().find(|&&v| !(v.is_finite() && placed(v).is_finite())) {
            return Err(fail(format!(
                "`scale` = {} with `position` {} places a vertex at {}, past the f32 range",
                fmt_f32(o.scale),
                tuple(&o.position),
                tuple(&placed(*v).to_array())
            )));
        }
        let (lo, hi) = mesh.bounds();
        let thinnest = (hi - lo).min_element();
        if thinnest < MIN_SIZE_DX * dx {
            return Err(fail(format!(
                "is {} m across at its thinnest (scale {}), less than {MIN_SIZE_DX} dx = {} m: the water \
                 would not see it; raise `scale` or lower solver.dx",
                fmt_f32(thinnest),
                fmt_f32(o.scale),
                fmt_f32(MIN_SIZE_DX * dx)
            )));
        }
        let (wlo, whi) = crate::mesh::bounds(&mesh.vertices.iter().map(|&v| placed(v)).collect::<Vec<_>>());
        let domain = format!("{} .. {}", tuple(&d.min), tuple(&d.max));
        if let Some(a) = (0..3).find(|&a| whi[a] - wlo[a] > dhi[a] - dlo[a]) {
            return Err(fail(format!(
                "is {} m along {} once placed (`scale` {}), larger than the domain {domain}",
                fmt_f32(whi[a] - wlo[a]),
                ["x", "y", "z"][a],
                fmt_f32(o.scale)
            )));
        }
        if (0..3).any(|a| whi[a] <= dlo[a] || wlo[a] >= dhi[a]) {
            return Err(fail(format!(
                "lies outside the domain {domain} once placed (its bounds {} .. {}); check `position`",
                tuple(&wlo.to_array()),
                tuple(&whi.to_array())
            )));
        }
        Ok(mesh)
    }
}
