//! The surface options shared by `capture --surface DIR` and `run --save-surface FILE` (the reconstruction
//! itself: [`crate::surface`]): its four settings in particle spacings dx, and the final frame's mesh.

use crate::surface::{self, MeshFormat, SurfaceSettings};
use anyhow::{bail, Result};
use clap::Args;
use std::path::Path;

/// How surface meshes are made (`splashsurf_lib`'s reconstruction; lengths in particle spacings dx of the
/// simulation, so the defaults suit every scene).
#[derive(Clone, Debug, Args)]
pub struct SurfaceArgs {
    /// Surface meshes: each particle's radius, in dx (0.25 ..= 2; its volume is the cube of its
    /// diameter, so 0.5 holds one particle's volume dx^3).
    #[arg(long, default_value_t = SurfaceSettings::default().particle_radius)]
    pub surface_radius: f32,
    /// Surface meshes: the kernel's compact support radius, in dx (1 ..= 6, at least twice the radius).
    #[arg(long, default_value_t = SurfaceSettings::default().support)]
    pub surface_support: f32,
    /// Surface meshes: edge of the marching cubes, in dx (1/16 ..= 4; smaller is finer, slower and
    /// takes more memory: refused when the estimate exceeds the host's available memory).
    #[arg(long, default_value_t = SurfaceSettings::default().cube_size)]
    pub surface_cube: f32,
    /// Surface meshes: iso level, a fraction of the rest density (0.05 ..= 1.5).
    #[arg(long, default_value_t = SurfaceSettings::default().iso)]
    pub surface_iso: f32,
    /// Surface meshes: smoothing iterations, each a pair of weighted Laplacian steps that keeps the volume
    /// (0 ..= 200; 0 keeps the marching cubes' bumps of single particles; spray and thin sheets are
    /// smoothed less, so they keep their shape).
    #[arg(long, default_value_t = SurfaceSettings::default().smoothing)]
    pub surface_smoothing: u32,
}

impl Default for SurfaceArgs {
    fn default() -> Self {
        let s = SurfaceSettings::default();
        Self {
            surface_radius: s.particle_radius,
            surface_support: s.support,
            surface_cube: s.cube_size,
            surface_iso: s.iso,
            surface_smoothing: s.smoothing,
        }
    }
}

impl SurfaceArgs {
    /// The settings, checked (the error names the option's field and its range).
    pub fn settings(&self) -> Result<SurfaceSettings> {
        let s = SurfaceSettings {
            particle_radius: self.surface_radius,
            support: self.surface_support,
            cube_size: self.surface_cube,
            iso: self.surface_iso,
            smoothing: self.surface_smoothing,
        };
        s.check_values()?;
        Ok(s)
    }
}

/// `--save-surface PATH`: a `.ply` or `.obj` file that can be written; returns its format.
pub fn check_surface_path(path: &Path) -> Result<MeshFormat> {
    let Some(format) = MeshFormat::of_path(path) else {
        bail!("--save-surface {}: give a .ply or .obj file", path.display());
    };
    crate::capture::output::check_writable(path, crate::capture::output::Output::File)?;
    Ok(format)
}

/// The particles of a frame to mesh: positions (metres), the spacing dx (metres) and the domain's walls
/// (min, max corners, metres) the mesh is held inside.
pub struct SurfaceInput<'a> {
    pub positions: &'a [[f32; 3]],
    pub dx: f32,
    pub walls: ([f32; 3], [f32; 3]),
    /// Simulated time, seconds (written in the file).
    pub time: f32,
}

/// Reconstructs the surface of `input`'s particles and writes it to `path` (PLY or OBJ by its
/// extension); prints what it wrote. The callers checked the memory estimate before the run
/// ([`SurfaceSettings::check`] on the particle capacity). Errors: the settings, the reconstruction, the
/// file.
pub fn save_surface(path: &Path, input: &SurfaceInput, settings: &SurfaceSettings) -> Result<()> {
    let SurfaceInput { positions, dx, walls, time } = *input;
    let started = std::time::Instant::now();
    let mesh = surface::reconstruct(positions, dx, settings, Some(walls))?;
    let seconds = started.elapsed().as_secs_f64();
    let format = MeshFormat::of_path(path).unwrap_or_default();
    let bytes = surface::mesh_file::write(path, &mesh, format, time)?;
    eprintln!(
        "wrote {}: the surface of {} particles, {} vertices, {} triangles, {:.1} MB, reconstructed in {seconds:.3} s",
        path.display(),
        positions.len(),
        mesh.positions.len(),
        mesh.triangles.len(),
        bytes as f64 / 1e6
    );
    Ok(())
}
