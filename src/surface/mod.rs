//! The water's surface as a triangle mesh, from its particles: marching cubes over the particles' SPH
//! density field on a sparse grid, by `splashsurf_lib` (F. Loschner, T. Böttcher, S. Rhys Jeske and
//! J. Bender (2023), "Weighted Laplacian smoothing for surface reconstruction of particle-based fluids",
//! Proc. VMV; the library of the `splashsurf` tool). Each particle is a sphere of `particle_radius` whose
//! mass spreads over a cubic spline kernel of radius `support`; the surface is where the interpolated
//! density falls to `iso` times the rest density, sampled on a grid of cubes `cube_size` wide.
//!
//! Marching cubes over particles leave a bump per surface particle. As in Loschner et al. (2023), the mesh
//! is then smoothed (`smoothing` iterations of Taubin's lambda | mu pair of Laplacian steps, which keeps
//! the volume) with a weight per vertex that keeps thin features: here the weight is a smoothstep of the
//! particles' SPH density interpolated at the vertex (relative to the rest density; about 0.6 at a flat
//! surface, lower in a thin sheet, under 0.2 at a droplet) from 0 at 0.25 to 1 at 0.55, so open water is
//! smoothed fully and spray and sheets keep their shape. Vertex normals are the
//! gradient of the SPH density at the vertex (out of the water), averaged over their neighbours as many
//! times as the mesh is smoothed over 2.5.
//!
//! [`SurfaceSettings`] holds those four lengths in particle spacings dx, so one setting suits every scene;
//! [`SurfaceSettings::check`] refuses bad values and a reconstruction whose estimated memory exceeds the
//! host's available memory before any work. [`reconstruct`] makes the mesh, [`mesh_file`] writes it
//! (binary PLY with normals, or OBJ).
//!
//! Users: `waterview capture --surface DIR` and the Capture panel (a mesh per frame, on the particle
//! export's worker thread: [`crate::capture::particles`]), and `run --save-surface FILE` (the last frame;
//! on several GPUs from the particles gathered on rank 0).

pub mod mesh_file;

pub use mesh_file::MeshFormat;

use splashsurf_lib::mesh::Mesh3d;
use splashsurf_lib::nalgebra::Vector3;
use splashsurf_lib::postprocessing::{par_laplacian_smoothing_inplace, par_laplacian_smoothing_normals_inplace};
use splashsurf_lib::sph_interpolation::SphInterpolator;
use splashsurf_lib::Parameters;
use thiserror::Error;

/// Why a surface could not be made.
#[derive(Debug, Error)]
pub enum SurfaceError {
    #[error("surface {name} = {value} is out of range: it must be {range} particle spacings (dx)")]
    Setting { name: &'static str, value: f32, range: &'static str },
    #[error(
        "surface of {particles} particles with cubes of {cube_dx} dx needs about {need} of memory, more \
         than the {available} available: use larger cubes (surface cube_size)"
    )]
    Memory { particles: usize, cube_dx: f32, need: String, available: String },
    #[error("surface reconstruction failed: {0}")]
    Reconstruction(String),
    #[error("surface of {0} vertices: more than a 32-bit index can address")]
    TooLarge(usize),
}

/// The reconstruction's lengths in particle spacings dx, the iso level and the smoothing. Defaults follow
/// `splashsurf`'s recommendations (its README): the particle radius dx / 2, a smoothing length of 2
/// radii (support 4 radii: 2 dx), cubes of one radius (the coarse end of its half to one), iso 0.6. On a
/// lattice block they put the top 0.02 dx under its physical surface (half a spacing above the last
/// layer) and enclose 98.7 % of its volume (`a_block_becomes_...` below).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SurfaceSettings {
    /// Radius of each particle, dx (0.25 ..= 2). `splashsurf_lib` gives a particle the volume of the cube
    /// of its diameter, (2 r)^3: the default, 0.5, is one particle's volume dx^3, so that the water's
    /// inside has the rest density. (The surface's place depends on the support and iso level only.)
    pub particle_radius: f32,
    /// Compact support radius of the cubic spline kernel, dx (1 ..= 6; at least twice the radius).
    pub support: f32,
    /// Edge of the marching cubes, dx (1/16 ..= 4): smaller is finer and costs its cube in time and memory.
    pub cube_size: f32,
    /// Surface level as a fraction of the rest density (0.05 ..= 1.5).
    pub iso: f32,
    /// Smoothing iterations, each a pair of weighted Laplacian steps (Taubin's lambda | mu; 0 ..= 200; 0:
    /// the marching cubes' mesh as it is).
    pub smoothing: u32,
}

impl Default for SurfaceSettings {
    fn default() -> Self {
        Self { particle_radius: 0.5, support: 2.0, cube_size: 0.5, iso: 0.6, smoothing: 25 }
    }
}

/// Most smoothing iterations.
pub const MAX_SMOOTHING: u32 = 200;

/// Host bytes a reconstruction takes per particle beyond its cubes (the particle copies per subdomain and
/// their neighbour lists, kept for the smoothing weights), and per grid point of the density map (value, index and the subdomain's dense
/// arrays): the terms of [`SurfaceSettings::memory_estimate`], rounded up from `splashsurf_lib`'s
/// structures.
const BYTES_PER_PARTICLE: u64 = 640;
const BYTES_PER_POINT: u64 = 48;

impl SurfaceSettings {
    /// Checks every field's range (the error names the field, its value and the range).
    pub fn check_values(&self) -> Result<(), SurfaceError> {
        let fields: [(&'static str, f32, f32, f32, &'static str); 4] = [
            ("particle_radius", self.particle_radius, 0.25, 2.0, "0.25 ..= 2"),
            ("support", self.support, 1.0, 6.0, "1 ..= 6"),
            ("cube_size", self.cube_size, 1.0 / 16.0, 4.0, "1/16 ..= 4"),
            ("iso", self.iso, 0.05, 1.5, "0.05 ..= 1.5 (a fraction of the rest density, not dx)"),
        ];
        for (name, value, lo, hi, range) in fields {
            if !(value.is_finite() && (lo..=hi).contains(&value)) {
                return Err(SurfaceError::Setting { name, value, range });
            }
        }
        if self.smoothing > MAX_SMOOTHING {
            return Err(SurfaceError::Setting {
                name: "smoothing",
                value: self.smoothing as f32,
                range: "0 ..= 200 iterations",
            });
        }
        if self.support < 2.0 * self.particle_radius {
            return Err(SurfaceError::Setting {
                name: "support",
                value: self.support,
                range: "at least twice particle_radius",
            });
        }
        Ok(())
    }

    /// A rough upper estimate of the host memory a reconstruction of `particles` particles takes, bytes:
    /// a fixed share per particle and one grid point per cube of the water's volume (dx^3 per particle).
    pub fn memory_estimate(&self, particles: usize) -> u64 {
        let points_per_particle = (1.0 / (self.cube_size as f64).powi(3)).ceil() as u64;
        particles as u64 * (BYTES_PER_PARTICLE + BYTES_PER_POINT * points_per_particle)
    }

    /// [`SurfaceSettings::check_values`], then the memory estimate for `particles` against the host's
    /// available memory (where it is known). Call before any work.
    pub fn check(&self, particles: usize) -> Result<(), SurfaceError> {
        self.check_values()?;
        let need = self.memory_estimate(particles);
        match crate::process::memory_available() {
            Some(available) if need > available => Err(SurfaceError::Memory {
                particles,
                cube_dx: self.cube_size,
                need: crate::files::human_bytes(need),
                available: crate::files::human_bytes(available),
            }),
            _ => Ok(()),
        }
    }

    /// `splashsurf_lib`'s parameters at spacing `dx` (metres); relative rest density 1.
    fn parameters(&self, dx: f32) -> Parameters<f32> {
        let mut p = Parameters::new(self.particle_radius * dx, self.support * dx, self.cube_size * dx);
        p.rest_density = 1.0;
        p.iso_surface_threshold = self.iso;
        p
    }
}

/// A triangle mesh: positions (metres), unit vertex normals (out of the water) and triangles (indices into
/// the positions, counter-clockwise seen from outside).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SurfaceMesh {
    pub positions: Vec<[f32; 3]>,
    pub normals: Vec<[f32; 3]>,
    pub triangles: Vec<[u32; 3]>,
}

impl SurfaceMesh {
    /// Enclosed volume, m^3, by the divergence theorem (sum over triangles of a . (b x c) / 6): the water's
    /// volume for a closed mesh wound outwards.
    pub fn volume(&self) -> f64 {
        let p = |i: u32| glam::DVec3::from(self.positions[i as usize].map(f64::from));
        self.triangles.iter().map(|t| p(t[0]).dot(p(t[1]).cross(p(t[2])))).sum::<f64>() / 6.0
    }

    /// Edges used by one triangle only (0 for a closed mesh).
    pub fn boundary_edges(&self) -> usize {
        let mut count = std::collections::HashMap::<(u32, u32), u32>::new();
        for t in &self.triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                *count.entry((a.min(b), a.max(b))).or_default() += 1;
            }
        }
        count.values().filter(|&&n| n == 1).count()
    }

    /// Axis-aligned bounds (min, max) of the vertices, metres; `None` for an empty mesh.
    pub fn bounds(&self) -> Option<([f32; 3], [f32; 3])> {
        let first = *self.positions.first()?;
        Some(self.positions.iter().fold((first, first), |(lo, hi), p| {
            (std::array::from_fn(|k| lo[k].min(p[k])), std::array::from_fn(|k| hi[k].max(p[k])))
        }))
    }
}

/// The surface of the particles at `positions` (metres; non-finite ones are left out) at spacing `dx`
/// (metres), inside `walls` (min, max corners, metres) when given: the marching cubes reach about a
/// particle radius past the outermost particles, and water resting against a wall has its outer layer a
/// quarter spacing from it, so the mesh would stand out of a tank's walls by a quarter spacing (5.5 % of
/// the volume of a 16-layer tank); its vertices are moved onto the walls instead (the normals follow).
/// No particles give an empty mesh. Errors: bad settings, a reconstruction that failed (or panicked:
/// caught and reported), more vertices than 32-bit indices address. Uses the rayon thread pool
/// (`RAYON_NUM_THREADS` sets its size).
pub fn reconstruct(
    positions: &[[f32; 3]],
    dx: f32,
    settings: &SurfaceSettings,
    walls: Option<([f32; 3], [f32; 3])>,
) -> Result<SurfaceMesh, SurfaceError> {
    settings.check_values()?;
    if !(dx.is_finite() && dx > 0.0) {
        return Err(SurfaceError::Reconstruction(format!("the particle spacing dx = {dx} m is not positive")));
    }
    let points: Vec<Vector3<f32>> =
        positions.iter().filter(|p| p.iter().all(|v| v.is_finite())).map(|p| Vector3::new(p[0], p[1], p[2])).collect();
    if points.is_empty() {
        return Ok(SurfaceMesh::default());
    }
    let parameters = settings.parameters(dx);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        splashsurf_lib::reconstruct_surface::<i64, f32>(&points, &parameters)
    }));
    let mut reconstruction = match result {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(SurfaceError::Reconstruction(format!("{e:#}"))),
        Err(panic) => {
            let message = crate::files::panic_message(panic.as_ref());
            return Err(SurfaceError::Reconstruction(format!("splashsurf_lib panicked ({message})")));
        }
    };
    let normals = finish(&points, &mut reconstruction, settings, dx, walls);
    let mesh = reconstruction.mesh;
    if mesh.vertices.len() > u32::MAX as usize {
        return Err(SurfaceError::TooLarge(mesh.vertices.len()));
    }
    Ok(SurfaceMesh {
        positions: mesh.vertices.iter().map(|v| [v.x, v.y, v.z]).collect(),
        normals: normals.iter().map(|n| [n.x, n.y, n.z]).collect(),
        triangles: mesh.triangles.iter().map(|t| t.map(|i| i as u32)).collect(),
    })
}

/// The mesh's weighted smoothing, its walls and its normals (see the module docs); returns the unit
/// normals.
fn finish(
    points: &[Vector3<f32>],
    reconstruction: &mut splashsurf_lib::SurfaceReconstruction<i64, f32>,
    settings: &SurfaceSettings,
    dx: f32,
    walls: Option<([f32; 3], [f32; 3])>,
) -> Vec<Vector3<f32>> {
    // splashsurf_lib's particle mass: the rest density (1 here) times the cube of the diameter.
    let diameter = 2.0 * settings.particle_radius;
    let mass = (diameter * dx).powi(3);
    // Densities relative to a particle volume of dx^3, whatever the radius.
    let densities: Vec<f32> = match reconstruction.particle_densities.take() {
        Some(d) => d.iter().map(|rho| rho / diameter.powi(3)).collect(),
        None => vec![1.0; points.len()],
    };
    let interpolator = SphInterpolator::new(points, &densities, mass, settings.support * dx);
    let mesh = &mut reconstruction.mesh;
    let connectivity = mesh.vertex_vertex_connectivity();
    if settings.smoothing > 0 {
        let at_vertices = interpolator.interpolate_scalar_quantity(&densities, &mesh.vertices, true);
        let weights: Vec<f32> = at_vertices.iter().map(|&rho| smoothstep(0.25, 0.55, rho)).collect();
        // Taubin's (1995) pairs of a shrinking and an inflating step, so that smoothing keeps the volume.
        for _ in 0..settings.smoothing {
            par_laplacian_smoothing_inplace(mesh, &connectivity, 1, TAUBIN.0, &weights);
            par_laplacian_smoothing_inplace(mesh, &connectivity, 1, TAUBIN.1, &weights);
        }
    }
    if let Some((lo, hi)) = walls {
        for v in &mut mesh.vertices {
            for a in 0..3 {
                v[a] = v[a].clamp(lo[a], hi[a].max(lo[a]));
            }
        }
    }
    let mut normals: Vec<Vector3<f32>> =
        interpolator.interpolate_normals(&mesh.vertices).into_iter().map(|n| n.into_inner()).collect();
    let normal_passes = (settings.smoothing as f32 / 2.5).round() as usize;
    if normal_passes > 0 {
        par_laplacian_smoothing_normals_inplace(&mut normals, &connectivity, normal_passes);
    }
    // A vertex whose gradient vanished (far from every particle, or a symmetric spot) takes its faces'.
    let faces = mesh.par_vertex_normals();
    for (n, f) in normals.iter_mut().zip(&faces) {
        if !(n.iter().all(|v| v.is_finite()) && (n.norm() - 1.0).abs() < 1e-3) {
            *n = f.into_inner();
        }
    }
    normals
}

/// Taubin's lambda and mu: each smoothing iteration moves a vertex half way to its neighbours' mean, then
/// back past where it was by a little more (G. Taubin (1995), "A signal processing approach to fair
/// surface design", Proc. SIGGRAPH), which flattens bumps without shrinking the water.
const TAUBIN: (f32, f32) = (0.5, -0.53);

/// 0 below `lo`, 1 above `hi`, the cubic 3t^2 - 2t^3 between.
fn smoothstep(lo: f32, hi: f32, x: f32) -> f32 {
    let t = ((x - lo) / (hi - lo)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of `n` x `m` x `l` particles at spacing `dx`, the first at (dx/2, dx/2, dx/2).
    fn block(n: usize, m: usize, l: usize, dx: f32) -> Vec<[f32; 3]> {
        let mut p = Vec::new();
        for i in 0..n {
            for j in 0..m {
                for k in 0..l {
                    p.push([(i as f32 + 0.5) * dx, (j as f32 + 0.5) * dx, (k as f32 + 0.5) * dx]);
                }
            }
        }
        p
    }

    #[test]
    fn a_block_becomes_a_closed_mesh_of_its_volume_with_a_flat_top() {
        let dx = 0.05;
        let (n, m, l) = (16, 10, 12);
        let mesh = reconstruct(&block(n, m, l, dx), dx, &SurfaceSettings::default(), None).expect("a mesh");
        assert_eq!(mesh.boundary_edges(), 0, "closed");
        assert_eq!(mesh.normals.len(), mesh.positions.len());
        let water = (n * m * l) as f64 * (dx as f64).powi(3);
        let v = mesh.volume();
        eprintln!("block {n} x {m} x {l}: volume / particles' {:.4}, {} triangles", v / water, mesh.triangles.len());
        assert!((v / water - 1.0).abs() < 0.05, "volume {v} against the particles' {water}");
        // The top face, away from the edges: flat at the block's top (m dx) within dx / 2, normals up.
        let top = m as f32 * dx;
        let inner = |p: &[f32; 3]| {
            p[0] > 3.0 * dx && p[0] < (n as f32 - 3.0) * dx && p[2] > 3.0 * dx && p[2] < (l as f32 - 3.0) * dx
        };
        let tops: Vec<usize> = (0..mesh.positions.len())
            .filter(|&i| inner(&mesh.positions[i]) && mesh.positions[i][1] > top - 2.0 * dx)
            .collect();
        assert!(tops.len() > 100, "{} vertices on the top face", tops.len());
        let ys: Vec<f32> = tops.iter().map(|&i| mesh.positions[i][1] - top).collect();
        eprintln!(
            "top - m dx: mean {:.4} min {:.4} max {:.4} (dx {dx})",
            ys.iter().sum::<f32>() / ys.len() as f32,
            ys.iter().copied().fold(1.0, f32::min),
            ys.iter().copied().fold(-1.0, f32::max)
        );
        for &i in &tops {
            assert!((mesh.positions[i][1] - top).abs() < 0.5 * dx, "top vertex at y = {}", mesh.positions[i][1]);
            assert!(mesh.normals[i][1] > 0.95, "top normal {:?}", mesh.normals[i]);
        }
    }

    #[test]
    fn smoothing_flattens_the_bumps_of_open_water_and_keeps_a_droplet() {
        // A jittered block (a pseudo-random 0.15 dx per axis) and a lone droplet 10 dx above it.
        let dx = 0.05;
        let mut seed = 7u32;
        let mut jitter = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 * 0.3 - 0.15
        };
        let mut p: Vec<[f32; 3]> = block(16, 8, 16, dx).iter().map(|q| q.map(|v| v + jitter() * dx)).collect();
        let droplet = [0.4, 18.0 * dx, 0.4];
        p.push(droplet);
        let rough = SurfaceSettings { smoothing: 0, ..SurfaceSettings::default() };
        // The top's roughness: the mean distance of a vertex from its neighbours' mean (the umbrella).
        let measure = |mesh: &SurfaceMesh| {
            let inner = |q: &[f32; 3]| q[0] > 0.2 && q[0] < 0.6 && q[2] > 0.2 && q[2] < 0.6 && q[1] > 0.3 && q[1] < 0.6;
            let mut sums = vec![([0.0f32; 3], 0u32); mesh.positions.len()];
            for t in &mesh.triangles {
                for k in 0..3 {
                    let (a, b) = (t[k] as usize, t[(k + 1) % 3] as usize);
                    for (i, j) in [(a, b), (b, a)] {
                        sums[i].1 += 1;
                        (0..3).for_each(|c| sums[i].0[c] += mesh.positions[j][c]);
                    }
                }
            }
            let top: Vec<f32> = (0..mesh.positions.len())
                .filter(|&i| inner(&mesh.positions[i]) && sums[i].1 > 0)
                .map(|i| {
                    let q = mesh.positions[i];
                    (0..3).map(|c| (sums[i].0[c] / sums[i].1 as f32 - q[c]).powi(2)).sum::<f32>().sqrt()
                })
                .collect();
            let spread = top.iter().sum::<f32>() / top.len() as f32;
            let drop = mesh.positions.iter().filter(|q| q[1] > 0.7).map(|q| q[1] - droplet[1]).fold(0.0, f32::max);
            (spread, drop)
        };
        let (bumps, drop) = measure(&reconstruct(&p, dx, &rough, None).expect("mesh"));
        let (smooth_bumps, smooth_drop) =
            measure(&reconstruct(&p, dx, &SurfaceSettings::default(), None).expect("mesh"));
        eprintln!("top roughness {bumps:.5} -> {smooth_bumps:.5} m; droplet top {drop:.4} -> {smooth_drop:.4} m");
        assert!(smooth_bumps < 0.5 * bumps, "smoothing left the top's bumps at {smooth_bumps} (from {bumps})");
        assert!(drop > 0.0 && (smooth_drop / drop - 1.0).abs() < 0.1, "the droplet shrank: {drop} -> {smooth_drop}");
    }

    #[test]
    fn walls_hold_the_mesh_inside_the_box() {
        // Particles a quarter spacing from the walls x = 0 and y = 0, as water resting against them.
        let dx = 0.1;
        let p: Vec<[f32; 3]> = block(8, 8, 8, dx).iter().map(|q| [q[0] - 0.25 * dx, q[1] - 0.25 * dx, q[2]]).collect();
        let s = SurfaceSettings::default();
        let free = reconstruct(&p, dx, &s, None).expect("mesh");
        let (lo, _) = free.bounds().expect("bounds");
        assert!(lo[0] < -0.2 * dx && lo[1] < -0.2 * dx, "past the walls: {lo:?}");
        let walled = reconstruct(&p, dx, &s, Some(([0.0, 0.0, -1.0], [10.0, 10.0, 10.0]))).expect("mesh");
        let (lo, _) = walled.bounds().expect("bounds");
        assert!(lo[0] >= 0.0 && lo[1] >= 0.0 && lo[2] < 0.0, "{lo:?}");
        assert_eq!(walled.boundary_edges(), 0);
        assert!(walled.volume() < free.volume());
        // A vertex on the wall x = 0, away from the edges: its normal points out through the wall.
        let on_wall = (0..walled.positions.len())
            .find(|&i| walled.positions[i][0] == 0.0 && (0.3..0.5).contains(&walled.positions[i][1]))
            .expect("a vertex on the wall");
        assert!(walled.normals[on_wall][0] < -0.9, "{:?}", walled.normals[on_wall]);
    }

    #[test]
    fn bad_settings_and_memory_are_refused_before_work() {
        let bad = SurfaceSettings { cube_size: 0.01, ..SurfaceSettings::default() };
        let e = reconstruct(&block(2, 2, 2, 0.1), 0.1, &bad, None).unwrap_err().to_string();
        assert!(e.contains("cube_size = 0.01") && e.contains("1/16"), "{e}");
        let nan = SurfaceSettings { iso: f32::NAN, ..SurfaceSettings::default() };
        assert!(nan.check_values().unwrap_err().to_string().contains("iso"));
        let narrow = SurfaceSettings { particle_radius: 0.8, support: 1.2, ..SurfaceSettings::default() };
        assert!(narrow.check_values().unwrap_err().to_string().contains("twice particle_radius"));
        // A billion particles at the finest cubes is hundreds of terabytes: refused wherever memory is known.
        let finest = SurfaceSettings { cube_size: 1.0 / 16.0, ..SurfaceSettings::default() };
        assert!(finest.memory_estimate(1_000_000_000) > 100_000_000_000_000);
        if crate::process::memory_available().is_some() {
            let e = finest.check(1_000_000_000).unwrap_err().to_string();
            assert!(e.contains("available") && e.contains("larger cubes"), "{e}");
        }
        assert!(SurfaceSettings::default().check(1000).is_ok());
    }

    #[test]
    fn no_particles_give_an_empty_mesh_and_non_finite_ones_are_left_out() {
        let s = SurfaceSettings::default();
        assert_eq!(reconstruct(&[], 0.1, &s, None).expect("empty"), SurfaceMesh::default());
        let mut p = block(6, 6, 6, 0.1);
        let clean = reconstruct(&p, 0.1, &s, None).expect("mesh");
        p.push([f32::NAN, 0.0, 0.0]);
        p.push([f32::INFINITY, 1.0, 1.0]);
        assert_eq!(reconstruct(&p, 0.1, &s, None).expect("mesh").triangles.len(), clean.triangles.len());
        assert!(reconstruct(&p, 0.0, &s, None).is_err());
    }
}
