//! A signed distance field of a closed mesh sampled on a regular grid: negative inside, positive outside,
//! metres in the mesh's frame. Each sample is the exact distance to the nearest point of the surface
//! (`parry3d`'s `TriMesh` point projection through its bounding-volume hierarchy), signed by the
//! angle-weighted pseudo-normal of the nearest feature (Baerentzen & Aanaes 2005; `parry3d`'s
//! `TriMeshFlags::ORIENTED`), which is exact for a closed, consistently wound mesh such as
//! [`super::load`] returns. Between samples the field is trilinear ([`DistanceField::sample`]), as the
//! simulation's shaders read it (`obstacle_sample` in shaders/sim/common.wgsl).
//!
//! Sampling runs on up to 16 threads, a slab of z layers each.

use super::TriangleMesh;
use glam::{UVec3, Vec3};
use parry3d::query::PointQueryWithLocation;
use parry3d::shape::{TriMesh, TriMeshFlags};
use thiserror::Error;

/// Most samples of one field (16 MiB of f32): a grid that would need more is coarsened to fit.
pub const MAX_FIELD_SAMPLES: usize = 1 << 22;

/// Most threads sampling one field at once.
const MAX_THREADS: usize = 16;

/// A mesh `parry3d` could not index (it has been checked closed before, so this is not expected).
#[derive(Clone, Debug, Error, PartialEq)]
#[error("cannot index the mesh for distance queries: {0}")]
pub struct FieldError(pub String);

/// Signed distances on a grid: sample (i, j, k) lies at `min + (i, j, k) * spacing`, index
/// `(k * dims.y + j) * dims.x + i`.
#[derive(Clone, Debug, PartialEq)]
pub struct DistanceField {
    /// Position of sample (0, 0, 0), metres (mesh frame).
    pub min: Vec3,
    /// Distance between neighbouring samples, metres.
    pub spacing: f32,
    /// Samples per axis (each >= 2).
    pub dims: UVec3,
    /// `dims.x * dims.y * dims.z` signed distances, metres.
    pub values: Vec<f32>,
}

impl DistanceField {
    /// The field of `mesh` over its bounds grown by `margin` metres on every side, sampled every
    /// `spacing` metres or more coarsely where that would pass [`MAX_FIELD_SAMPLES`].
    pub fn new(mesh: &TriangleMesh, margin: f32, spacing: f32) -> Result<Self, FieldError> {
        Self::with_cap(mesh, margin, spacing, MAX_FIELD_SAMPLES)
    }

    /// [`DistanceField::new`] with at most `max_samples` samples (at least 8; and never more than
    /// [`MAX_FIELD_SAMPLES`]): the grid is coarsened until it fits. A static obstacle scaled up live keeps
    /// the room its field had on the GPU this way (src/sim/live_obstacles.rs).
    pub fn with_cap(mesh: &TriangleMesh, margin: f32, spacing: f32, max_samples: usize) -> Result<Self, FieldError> {
        let max_samples = max_samples.clamp(8, MAX_FIELD_SAMPLES);
        let (lo, hi) = mesh.bounds();
        let min = lo - margin;
        let size = hi - lo + 2.0 * margin;
        let mut spacing = spacing.max(size.max_element() * 1e-4);
        let dims_at = |s: f32| (size / s).ceil().as_uvec3().max(UVec3::ONE) + 1;
        let mut dims = dims_at(spacing);
        while dims.as_u64vec3().element_product() > max_samples as u64 {
            let scale = (dims.as_dvec3().element_product() / max_samples as f64).cbrt() as f32;
            spacing *= scale.max(1.01);
            dims = dims_at(spacing);
        }
        let vertices = mesh.vertices.iter().map(|v| parry3d::math::Vector::new(v.x, v.y, v.z)).collect();
        let trimesh = TriMesh::with_flags(vertices, mesh.triangles.clone(), TriMeshFlags::ORIENTED)
            .map_err(|e| FieldError(e.to_string()))?;
        let layer = (dims.x * dims.y) as usize;
        let mut values = vec![0.0f32; layer * dims.z as usize];
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_THREADS);
        let per_thread = (dims.z as usize).div_ceil(threads);
        std::thread::scope(|scope| {
            for (t, slab) in values.chunks_mut(per_thread * layer).enumerate() {
                let trimesh = &trimesh;
                scope.spawn(move || {
                    for (n, value) in slab.iter_mut().enumerate() {
                        let index = t * per_thread * layer + n;
                        let (i, j, k) =
                            (index % dims.x as usize, (index / dims.x as usize) % dims.y as usize, index / layer);
                        let p = min + Vec3::new(i as f32, j as f32, k as f32) * spacing;
                        let q = parry3d::math::Vector::new(p.x, p.y, p.z);
                        let (proj, _) = trimesh.project_local_point_and_get_location(q, false);
                        let d = (q - proj.point).length();
                        *value = if proj.is_inside { -d } else { d };
                    }
                });
            }
        });
        Ok(Self { min, spacing, dims, values })
    }

    /// The field of the mesh scaled by `k` (> 0) about its origin, from this one without sampling again:
    /// the signed distance to `k M` at `k p` is `k` times the distance to `M` at `p`, so the samples,
    /// their spacing and the grid's corner all scale by `k` (exact at the samples; the margin and the
    /// spacing scale too: a field shrunk this way reaches less far out).
    pub fn scaled(&self, k: f32) -> Self {
        Self {
            min: self.min * k,
            spacing: self.spacing * k,
            dims: self.dims,
            values: self.values.iter().map(|v| v * k).collect(),
        }
    }

    /// Sample (i, j, k), clamped to the grid.
    fn at(&self, i: i64, j: i64, k: i64) -> f32 {
        let c = |v: i64, n: u32| v.clamp(0, n as i64 - 1) as usize;
        let (i, j, k) = (c(i, self.dims.x), c(j, self.dims.y), c(k, self.dims.z));
        self.values[(k * self.dims.y as usize + j) * self.dims.x as usize + i]
    }

    /// The trilinear distance at `p` (metres, mesh frame) and its gradient (the trilinear function's,
    /// not normalised); `None` outside the grid, where the surface is farther than the margin.
    pub fn sample(&self, p: Vec3) -> Option<(f32, Vec3)> {
        let g = (p - self.min) / self.spacing;
        let top = (self.dims - 1).as_vec3();
        if g.cmplt(Vec3::ZERO).any() || g.cmpgt(top).any() || !g.is_finite() {
            return None;
        }
        let base = g.floor().min(top - 1.0);
        let f = g - base;
        let (i, j, k) = (base.x as i64, base.y as i64, base.z as i64);
        let v = |a: i64, b: i64, c: i64| self.at(i + a, j + b, k + c);
        let (c000, c100, c010, c110) = (v(0, 0, 0), v(1, 0, 0), v(0, 1, 0), v(1, 1, 0));
        let (c001, c101, c011, c111) = (v(0, 0, 1), v(1, 0, 1), v(0, 1, 1), v(1, 1, 1));
        let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
        let x00 = lerp(c000, c100, f.x);
        let x10 = lerp(c010, c110, f.x);
        let x01 = lerp(c001, c101, f.x);
        let x11 = lerp(c011, c111, f.x);
        let y0 = lerp(x00, x10, f.y);
        let y1 = lerp(x01, x11, f.y);
        let d = lerp(y0, y1, f.z);
        let dx = lerp(lerp(c100 - c000, c110 - c010, f.y), lerp(c101 - c001, c111 - c011, f.y), f.z);
        let dy = lerp(x10 - x00, x11 - x01, f.z);
        let dz = y1 - y0;
        Some((d, Vec3::new(dx, dy, dz) / self.spacing))
    }

    /// The trilinear distance at `p` (metres, mesh frame); `f32::INFINITY` outside the grid.
    pub fn distance(&self, p: Vec3) -> f32 {
        self.sample(p).map_or(f32::INFINITY, |(d, _)| d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cubes_field_is_its_exact_signed_distance_at_the_samples() {
        let mesh = TriangleMesh::cuboid(Vec3::ZERO, Vec3::ONE);
        let f = DistanceField::new(&mesh, 0.25, 0.05).expect("a cube");
        assert_eq!(f.dims, UVec3::splat(31));
        let exact = |p: Vec3| {
            let q = (p - 0.5).abs() - 0.5;
            q.max(Vec3::ZERO).length() + q.max_element().min(0.0)
        };
        for (n, &v) in f.values.iter().enumerate() {
            let (i, j, k) = (n % 31, (n / 31) % 31, n / 961);
            let p = f.min + Vec3::new(i as f32, j as f32, k as f32) * f.spacing;
            assert!((v - exact(p)).abs() < 1e-5, "at {p}: {v} vs {}", exact(p));
        }
        let (d, g) = f.sample(Vec3::new(0.5, 0.5, 0.1)).unwrap();
        assert!((d + 0.1).abs() < 1e-5 && (g.normalize() - Vec3::NEG_Z).length() < 1e-4, "{d} {g}");
        assert_eq!(f.distance(Vec3::splat(5.0)), f32::INFINITY);
    }

    #[test]
    fn a_scaled_field_is_the_scaled_meshs_field() {
        let mesh = TriangleMesh::cuboid(Vec3::ZERO, Vec3::ONE);
        let f = DistanceField::new(&mesh, 0.25, 0.05).expect("a cube");
        let big = TriangleMesh { vertices: mesh.vertices.iter().map(|&v| 1.5 * v).collect(), ..mesh.clone() };
        let exact = DistanceField::new(&big, 0.375, 0.075).expect("a larger cube");
        let scaled = f.scaled(1.5);
        assert_eq!((scaled.dims, scaled.values.len()), (exact.dims, exact.values.len()));
        assert!((scaled.min - exact.min).length() < 1e-5 && (scaled.spacing - exact.spacing).abs() < 1e-6);
        for (a, b) in scaled.values.iter().zip(&exact.values) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }

    #[test]
    fn a_capped_field_fits_its_room() {
        let mesh = TriangleMesh::cuboid(Vec3::ZERO, Vec3::ONE);
        let f = DistanceField::with_cap(&mesh, 0.25, 0.05, 10_000).expect("a cube");
        assert!(f.values.len() <= 10_000 && f.spacing > 0.05, "{:?} {}", f.dims, f.spacing);
        assert!((f.distance(Vec3::splat(0.5)) + 0.5).abs() < 0.05);
    }

    #[test]
    fn a_large_grid_is_coarsened_to_the_sample_cap() {
        let mesh = TriangleMesh::cuboid(Vec3::ZERO, Vec3::new(100.0, 1.0, 1.0));
        let f = DistanceField::new(&mesh, 0.1, 0.001).expect("a long box");
        assert!(f.values.len() <= MAX_FIELD_SAMPLES && f.spacing > 0.001, "{:?} {}", f.dims, f.spacing);
        assert!(f.distance(Vec3::new(50.0, 0.5, 0.5)) < 0.0);
    }
}
