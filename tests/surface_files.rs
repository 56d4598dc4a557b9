//! Surface meshes out, as a user makes them (the built binary on lavapipe in CI; issue 32):
//! - `run --save-surface` of a resting tank: the mesh (read back with `serde-ply`, another project's PLY
//!   reader than the writer's `ply-rs-bw`) is closed, inside the tank's walls, holds the particles'
//!   volume (their mass / rho0) within 5 %, and its top is flat at the water's height within dx / 2 with
//!   normals up;
//! - `capture --surface`: ten frames of a dam break read by Python's meshio (`tests/check_surface.py`:
//!   counts, closedness, unit normals, bounds inside the domain), PLY and OBJ;
//! - on two GPUs rank 0 meshes the particles it gathered: the same mesh as one GPU's;
//! - bad settings and paths refused before any work.
mod common;

use common::{scratch, waterview};
use serde::Deserialize;
use std::path::Path;
use std::process::Output;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn scene(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/scenes").join(name).to_str().expect("path").to_string()
}

#[derive(Deserialize)]
struct Vertex {
    x: f32,
    y: f32,
    z: f32,
    nx: f32,
    ny: f32,
    nz: f32,
}

#[derive(Deserialize)]
struct Face {
    vertex_indices: Vec<u32>,
}

#[derive(Deserialize)]
struct MeshFile {
    vertex: Vec<Vertex>,
    face: Vec<Face>,
}

/// A surface mesh read back: positions, normals, triangles.
struct Mesh {
    points: Vec<[f64; 3]>,
    normals: Vec<[f64; 3]>,
    triangles: Vec<[usize; 3]>,
}

impl Mesh {
    fn read(path: &Path) -> Mesh {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file: MeshFile = serde_ply::from_bytes(&bytes).expect("serde-ply reads the mesh");
        let triangles = file
            .face
            .iter()
            .map(|f| {
                assert_eq!(f.vertex_indices.len(), 3, "triangles only");
                std::array::from_fn(|k| f.vertex_indices[k] as usize)
            })
            .collect::<Vec<[usize; 3]>>();
        assert!(triangles.iter().flatten().all(|&i| i < file.vertex.len()), "indices in range");
        Mesh {
            points: file.vertex.iter().map(|v| [v.x, v.y, v.z].map(f64::from)).collect(),
            normals: file.vertex.iter().map(|v| [v.nx, v.ny, v.nz].map(f64::from)).collect(),
            triangles,
        }
    }

    /// Enclosed volume by the divergence theorem, m^3.
    fn volume(&self) -> f64 {
        let p = |i: usize| self.points[i];
        let det = |a: [f64; 3], b: [f64; 3], c: [f64; 3]| {
            a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0])
        };
        self.triangles.iter().map(|t| det(p(t[0]), p(t[1]), p(t[2]))).sum::<f64>() / 6.0
    }

    /// Edges not shared by exactly two triangles.
    fn open_edges(&self) -> usize {
        let mut uses = std::collections::HashMap::<(usize, usize), u32>::new();
        for t in &self.triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                *uses.entry((a.min(b), a.max(b))).or_default() += 1;
            }
        }
        uses.values().filter(|&&n| n != 2).count()
    }
}

/// The resting tank (1 x 1 m floor, 0.8 m of water) at dx = 0.05 m after 0.3 s: its surface is closed,
/// holds the particles' volume and is flat at the water's height.
#[test]
fn a_resting_tanks_surface_is_closed_flat_and_holds_its_water() {
    let dir = scratch("surface-tank");
    let dx: f64 = 0.05;
    let args = ["--scene", &scene("tank.ron"), "run", "--dx", "0.05", "--seconds", "0.3"];
    let (out, _) = waterview(&dir, &[&args[..], &["--save-particles", "p.ply", "--save-surface", "s.ply"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("wrote s.ply: the surface of"), "{}", stderr(&out));
    let particles = waterview::particle_io::read(&dir.join("p.ply")).expect("particles");
    let mesh = Mesh::read(&dir.join("s.ply"));
    assert_eq!(mesh.open_edges(), 0, "closed");
    // mass / rho0 of each particle: the lattice-normalised volume (Wendland C2, h = 1.2 dx).
    let water = particles.len() as f64 * waterview::sim::kernel::particle_volume(dx, 1.2 * dx);
    let volume = mesh.volume();
    let inside = mesh.points.iter().all(|p| p.iter().all(|&v| (0.0..=1.5).contains(&v)));
    assert!(inside, "the mesh stays inside the tank's walls");
    println!(
        "tank: {} particles, {water:.5} m^3; mesh {volume:.5} m^3 ({} triangles)",
        particles.len(),
        mesh.triangles.len()
    );
    assert!((volume / water - 1.0).abs() < 0.05, "mesh volume {volume} against the particles' {water} m^3");
    // The water's height: its volume over the 1 m^2 floor. The top, 3 dx from the walls.
    let height = water;
    let inner = |p: &[f64; 3]| (3.0 * 0.05..1.0 - 3.0 * 0.05).contains(&p[0]) && (0.15..0.85).contains(&p[2]);
    let top: Vec<usize> =
        (0..mesh.points.len()).filter(|&i| inner(&mesh.points[i]) && mesh.points[i][1] > 0.5 * height).collect();
    assert!(top.len() > 50, "{} vertices on the top", top.len());
    let worst = top.iter().map(|&i| (mesh.points[i][1] - height).abs()).fold(0.0, f64::max);
    println!("top: {} vertices within {worst:.4} m of the water's height {height:.4} m", top.len());
    assert!(worst < 0.5 * dx, "the top is {worst} m off the water's height {height}");
    assert!(top.iter().all(|&i| mesh.normals[i][1] > 0.9), "the top's normals point up");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `capture --surface`: ten frames of the dam break, read by meshio (PLY), and two as OBJ.
#[test]
fn captured_surfaces_are_read_by_meshio() {
    let dir = scratch("surface-capture");
    let dam = scene("dam_break.ron");
    let domain = waterview::engine::load_scene(Some(Path::new(&dam))).expect("the scene").domain;
    let common = ["--scene", &dam, "capture", "--dx", "0.08", "--fps", "20"];
    let (out, _) = waterview(&dir, &[&common[..], &["--seconds", "0.5", "--surface", "ply"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("10 surface meshes"), "{}", stderr(&out));
    // Mesh k holds the surface at exactly k / fps: the time in its header.
    for k in 0..10u32 {
        let path = dir.join(format!("ply/surface_{k:05}.ply"));
        let bytes = std::fs::read(&path).expect("a mesh per frame");
        let reader = serde_ply::PlyReader::from_reader(std::io::Cursor::new(&bytes)).expect("a PLY header");
        let time = reader.header().comments.iter().find_map(|c| c.strip_prefix("time_s ")?.parse::<f32>().ok());
        assert_eq!(time, Some((k as f64 / 20.0) as f32), "mesh {k}'s time");
    }
    let obj = ["--seconds", "0.1", "--surface", "obj", "--surface-format", "obj"];
    let (out, _) = waterview(&dir, &[&common[..], &obj[..]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    // The mesh is held inside the domain's walls (a float's rounding of slack).
    let margin = 1e-4;
    let lo = domain.min.map(|v| (v - margin).to_string());
    let hi = domain.max.map(|v| (v + margin).to_string());
    for (folder, frames, format) in [("ply", "10", "ply"), ("obj", "2", "obj")] {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_surface.py");
        let mut args = vec![script.to_str().expect("path"), folder, "--frames", frames, "--format", format, "--min"];
        args.extend(lo.iter().map(String::as_str));
        args.push("--max");
        args.extend(hi.iter().map(String::as_str));
        let checked = std::process::Command::new("python3").args(&args).current_dir(&dir).output();
        let checked = checked.expect("python3 runs (install Python 3 and `pip install meshio`)");
        let text = format!("{}{}", String::from_utf8_lossy(&checked.stdout), stderr(&checked));
        assert!(checked.status.success(), "meshio's check of the {format} frames failed:\n{text}");
        println!("{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// On two GPUs (lavapipe: two devices on the CPU) rank 0 gathers the particles and meshes them: the mesh
/// of one GPU's run, within what 4 steps on a decomposed domain change. Paths and settings that cannot
/// work are refused before any work.
#[test]
fn two_gpus_mesh_the_gathered_particles_and_bad_settings_are_refused() {
    let dir = scratch("surface-ranks");
    let dam = scene("dam_break.ron");
    let mut volumes = Vec::new();
    for gpus in ["1", "2"] {
        let args = ["--scene", &dam, "run", "--dx", "0.08", "--steps", "4", "--gpus", gpus, "--save-surface", "s.ply"];
        let (out, _) = waterview(&dir, &args);
        assert!(out.status.success(), "--gpus {gpus}: {}", stderr(&out));
        let mesh = Mesh::read(&dir.join("s.ply"));
        assert_eq!(mesh.open_edges(), 0, "--gpus {gpus}: closed");
        volumes.push((mesh.volume(), mesh.triangles.len()));
    }
    println!("one GPU and two: {volumes:?}");
    assert!((volumes[0].0 / volumes[1].0 - 1.0).abs() < 1e-3, "volumes {volumes:?}");
    let cases: [(&[&str], &str); 4] = [
        (&["run", "--steps", "3", "--save-surface", "s.stl"], "give a .ply or .obj file"),
        (&["run", "--steps", "3", "--save-surface", "s.ply", "--surface-cube", "0.001"], "cube_size = 0.001"),
        (&["capture", "--seconds", "0.1", "--surface", "d", "--surface-iso", "9"], "iso = 9"),
        (&["capture", "--seconds", "0.1", "--surface", "d", "--gpus", "2"], "--surface needs one GPU"),
    ];
    for (args, reason) in cases {
        let (out, _) = waterview(&dir, args);
        let text = stderr(&out);
        assert!(!out.status.success() && text.contains(reason), "{args:?}: `{reason}` missing from {text}");
        assert!(!text.contains("adapter:"), "{args:?} opened the GPU before refusing: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
