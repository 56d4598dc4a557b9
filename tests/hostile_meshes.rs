//! Hostile meshes through the command line, as a user meets them (lavapipe in CI): a glTF whose POSITION
//! buffer view has a byte stride shorter than a vertex (gltf 1.4.1's reader asserted on it: exit status
//! 101) and a mesh of a million vertices instanced by many nodes (each node visit appended all its
//! positions: `run` grew past 8 GB). Each is refused with exit status 1 and a message naming the mesh
//! file, in `run`, in `run --gpus 2` and in `run --resume` of a checkpoint whose scene names the mesh.
use std::process::Output;

mod common;
use common::{cube_gltf, scratch, waterview};

/// A 2 m box of water with the cube `mesh` as an obstacle, dx = 0.1 m (a few hundred particles).
fn scene(mesh: &str) -> String {
    format!(
        "(name: \"box\", domain: (min: (0.0, 0.0, 0.0), max: (2.0, 1.5, 2.0)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (2.0, 0.4, 0.6))],
          obstacles: [(mesh: \"{mesh}\", position: (0.5, 0.0, 1.0), scale: 0.5)],
          camera: (target: (1.0, 0.3, 1.0), distance: 4.0, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.1), cpu_dx_scale: 1.0)"
    )
}

/// Asserts a refusal: exit status 1 (not 101, a panic's), the mesh file and `reason` named, no panic
/// message.
fn assert_refused(out: &Output, what: &str, reason: &str) {
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: exit status {:?}: {text}", out.status.code());
    assert!(text.contains("mesh.gltf") && text.contains(reason), "{what}: `{reason}` missing: {text}");
    assert!(!text.contains("RUST_BACKTRACE"), "{what}: the decoder's panic reached the top: {text}");
}

#[test]
fn a_gltf_with_a_short_stride_is_refused_by_run_two_gpus_and_a_resume() {
    let dir = scratch("hostile-meshes-stride");
    std::fs::write(dir.join("box.ron"), scene("mesh.gltf")).expect("scene");
    // A checkpoint of the scene with a sound cube, whose mesh is then replaced.
    std::fs::write(dir.join("mesh.gltf"), cube_gltf(None, 1, 0)).expect("mesh");
    let (out, _) = waterview(&dir, &["--scene", "box.ron", "run", "--steps", "4", "--save-checkpoint", "box.wvc"]);
    assert!(out.status.success(), "the sound cube runs: {}", String::from_utf8_lossy(&out.stderr));
    for stride in [4, 8] {
        std::fs::write(dir.join("mesh.gltf"), cube_gltf(Some(stride), 1, 0)).expect("mesh");
        let reason = format!("byteStride {stride}, shorter than its 12-byte elements");
        let (out, _) = waterview(&dir, &["--scene", "box.ron", "run", "--steps", "4"]);
        assert_refused(&out, "run", &reason);
        let (out, _) = waterview(&dir, &["--scene", "box.ron", "run", "--steps", "4", "--gpus", "2"]);
        assert_refused(&out, "run --gpus 2", &reason);
        let (out, _) = waterview(&dir, &["run", "--resume", "box.wvc", "--steps", "4"]);
        assert_refused(&out, "run --resume", &reason);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A cube whose POSITION accessor holds a million vertices, instanced by 16 nodes: 16 million vertices
/// are refused from the accessor's count and the nodes, at once. Before, every node's instance was laid
/// out (192 MB here; 65 536 nodes grew `run` past 8 GB).
#[test]
fn an_instanced_million_vertex_mesh_is_refused_from_its_header() {
    let dir = scratch("hostile-meshes-instanced");
    std::fs::write(dir.join("box.ron"), scene("mesh.gltf")).expect("scene");
    std::fs::write(dir.join("mesh.gltf"), cube_gltf(None, 16, 1_000_000 - 8)).expect("mesh");
    let (out, _) = waterview(&dir, &["--scene", "box.ron", "run", "--steps", "4"]);
    assert_refused(&out, "run", "has 16000000 vertices or more (instances included); meshes are limited to 3145728");
    let _ = std::fs::remove_dir_all(&dir);
}
