//! Particle files as a scene's water (`fluid_files`), with no GPU: hostile files (truncated, a count far
//! past their bytes, NaN, outside the domain, inside the terrain or an obstacle, a FIFO, too fast) are refused when the
//! scene is built, each with a message naming the scene, the file and, for bad particles, how many there
//! are and the first of them.
use std::path::{Path, PathBuf};
use std::process::Command;
use waterview::particle_io::{self, ParticleFormat, Particles};
use waterview::scene::Scene;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waterview-fluid-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// A 1 m box without blocks whose water is `file` (in `dir`), over `terrain` (RON, or "None").
fn scene(dir: &Path, file: &str, terrain: &str) -> Scene {
    let text = format!(
        "(name: \"cached\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)), terrain: {terrain},
          fluid_files: [(path: \"{file}\")],
          camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.05), cpu_dx_scale: 1.0)"
    );
    Scene::from_str(&text, &dir.join("cached.ron")).expect("the scene file itself is valid")
}

/// The error building `file` as the water gives.
fn refused(dir: &Path, file: &str, terrain: &str) -> String {
    match scene(dir, file, terrain).build(false) {
        Ok(s) => panic!("{file} built {} particles", s.len()),
        Err(e) => e.to_string(),
    }
}

fn cloud(points: &[[f32; 3]]) -> Particles {
    Particles { positions: points.to_vec(), velocities: vec![[0.0; 3]; points.len()], densities: vec![] }
}

#[test]
fn hostile_particle_files_are_refused_with_the_reason() {
    let dir = scratch("hostile");
    let good = cloud(&[[0.5, 0.5, 0.5], [0.55, 0.5, 0.5], [0.6, 0.5, 0.5], [0.65, 0.5, 0.5]]);
    let whole = particle_io::encode(&good, ParticleFormat::Ply, 0.0);
    let prefix = format!("scene {}: fluid file 1 (", dir.join("cached.ron").display());

    std::fs::write(dir.join("truncated.ply"), &whole[..whole.len() - 10]).expect("write");
    let e = refused(&dir, "truncated.ply", "None");
    assert!(e.starts_with(&format!("{prefix}truncated.ply): particle file ")), "{e}");
    assert!(e.contains("declares 4 vertices, which need at least 112 bytes") && e.contains("102 bytes"), "{e}");

    let huge = String::from_utf8_lossy(&whole).replace("element vertex 4\n", "element vertex 999999999999\n");
    std::fs::write(dir.join("huge.ply"), huge.as_bytes()).expect("write");
    let started = std::time::Instant::now();
    let e = refused(&dir, "huge.ply", "None");
    assert!(e.contains("declares 999999999999 vertices"), "{e}");
    assert!(started.elapsed().as_secs_f32() < 3.0, "refused from the sizes, nothing allocated");

    let mut nan = good.clone();
    nan.positions[2][1] = f32::NAN;
    nan.velocities[3][0] = f32::INFINITY;
    particle_io::write(&dir.join("nan.ply"), &nan, ParticleFormat::Ply, 0.0).expect("write");
    let e = refused(&dir, "nan.ply", "None");
    assert_eq!(
        e,
        format!(
            "{prefix}nan.ply): 2 of 4 particles have a position or velocity that is not finite (NaN or infinite); \
             the first is particle 2 at (0.6, NaN, 0.5) with velocity (0, 0, 0)"
        )
    );
    // The same file as VTU: the same check, whatever the format.
    particle_io::write(&dir.join("nan.vtu"), &nan, ParticleFormat::Vtu, 0.0).expect("write");
    assert!(
        refused(&dir, "nan.vtu", "None").contains("2 of 4 particles have a position or velocity that is not finite")
    );

    let outside = cloud(&[[0.5, 0.5, 0.5], [1.5, 0.2, 0.3], [0.5, -0.1, 0.5]]);
    particle_io::write(&dir.join("outside.ply"), &outside, ParticleFormat::Ply, 0.0).expect("write");
    let e = refused(&dir, "outside.ply", "None");
    assert_eq!(
        e,
        format!(
            "{prefix}outside.ply): 2 of 3 particles lie outside the domain (0, 0, 0) .. (1, 1, 1); the first is \
             particle 1 at (1.5, 0.2, 0.3)"
        )
    );

    let mut fast = good.clone();
    fast.velocities[1] = [0.0, 150.0, 0.0];
    particle_io::write(&dir.join("fast.ply"), &fast, ParticleFormat::Ply, 0.0).expect("write");
    assert!(
        refused(&dir, "fast.ply", "None").contains("1 of 4 particles are faster than 100 m/s; the first is particle 1")
    );

    let e = refused(&dir, "missing.ply", "None");
    assert!(e.contains("missing.ply") && e.contains("cannot read particle file"), "{e}");
    std::fs::write(dir.join("cube.stl"), "solid cube\nendsolid\n").expect("write");
    assert!(refused(&dir, "cube.stl", "None").contains("is neither PLY"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Particles under a heightfield terrain are refused as inside it, with the ground's height there.
#[test]
fn particles_inside_the_terrain_are_refused() {
    let dir = scratch("terrain");
    // 2 x 2 heightmap: the west column at the top of the 16-bit range (0.25 m: a quarter of the 1 m
    // extent without a units JSON), the east column at 0.
    let mut img = image::ImageBuffer::<image::Luma<u16>, Vec<u16>>::new(2, 2);
    for (x, _, p) in img.enumerate_pixels_mut() {
        *p = image::Luma([if x == 0 { 65535 } else { 0 }]);
    }
    img.save(dir.join("ramp.png")).expect("write heightmap");
    let terrain = "Some((heightmap: \"ramp.png\", extent: (1.0, 1.0)))";
    let under = cloud(&[[0.9, 0.5, 0.5], [0.1, 0.1, 0.5], [0.2, 0.05, 0.5]]);
    particle_io::write(&dir.join("under.ply"), &under, ParticleFormat::Ply, 0.0).expect("write");
    let e = refused(&dir, "under.ply", terrain);
    let first =
        "2 of 3 particles lie inside the terrain; the first is particle 1 at (0.1, 0.1, 0.5), under the ground at 0.22";
    assert!(e.contains(first), "{e}");
    let above = cloud(&[[0.9, 0.5, 0.5], [0.1, 0.3, 0.5]]);
    particle_io::write(&dir.join("above.ply"), &above, ParticleFormat::Ply, 0.0).expect("write");
    assert_eq!(scene(&dir, "above.ply", terrain).build(false).expect("above the ground").len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Particles inside an obstacle are refused, naming the obstacle and how deep the first one lies (0.088 m
/// at the centre of a 0.2 m box, 0.1 m exactly: its distance field is trilinear between samples); those
/// outside it are kept (and those closer than dx/2 to it dropped, as the blocks' lattice points are).
#[test]
fn particles_inside_an_obstacle_are_refused() {
    let dir = scratch("obstacle");
    let cube = waterview::mesh::TriangleMesh::cuboid(glam::Vec3::ZERO, glam::Vec3::ONE);
    std::fs::write(dir.join("box.obj"), cube.to_obj()).expect("write box.obj");
    let build = |file: &str| {
        let text = format!(
            "(name: \"cached\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
              fluid_files: [(path: \"{file}\")],
              obstacles: [(mesh: \"box.obj\", position: (0.4, 0.0, 0.4), scale: 0.2)],
              camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
              solver: (dx: 0.05), cpu_dx_scale: 1.0)"
        );
        Scene::from_str(&text, &dir.join("cached.ron")).expect("valid scene file").build(false)
    };
    let water = cloud(&[[0.1, 0.1, 0.1], [0.5, 0.1, 0.5], [0.45, 0.05, 0.55], [0.9, 0.1, 0.9]]);
    particle_io::write(&dir.join("in.ply"), &water, ParticleFormat::Ply, 0.0).expect("write");
    let e = build("in.ply").map(|s| s.len()).expect_err("particles inside the box");
    let first = "2 of 4 particles lie inside an obstacle; the first is particle 1 at (0.5, 0.1, 0.5), 0.088 m inside \
                 obstacle 1 (box.obj)";
    assert!(e.to_string().contains(first), "{e}");
    let around = cloud(&[[0.1, 0.1, 0.1], [0.9, 0.1, 0.9], [0.5, 0.1, 0.62]]);
    particle_io::write(&dir.join("around.ply"), &around, ParticleFormat::Ply, 0.0).expect("write");
    assert_eq!(build("around.ply").expect("none inside").len(), 2, "the one 0.02 m from the box is dropped");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A FIFO named as a fluid file is refused without blocking (the bounded reader's check).
#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = scratch("fifo");
    let fifo = dir.join("pipe.ply");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let e = refused(&dir, "pipe.ply", "None");
    assert!(e.contains("is a FIFO (named pipe), not a regular file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scene needs water from a block or a file; fluid files need a path and a finite offset.
#[test]
fn fluid_files_are_validated_with_the_scene() {
    let parse = |fields: &str| {
        let text = format!(
            "(name: \"s\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)), {fields}
              camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0), solver: (dx: 0.05))"
        );
        Scene::from_str(&text, Path::new("s.ron")).map(|_| ()).map_err(|e| e.to_string())
    };
    let e = parse("").unwrap_err();
    assert!(e.contains("`fluid_blocks` = [] is empty and so is fluid_files"), "{e}");
    let e = parse("fluid_files: [(path: \" \")],").unwrap_err();
    assert!(e.contains("fluid file 1: `path` = \"\" is empty"), "{e}");
    let e = parse("fluid_files: [(path: \"a.ply\", offset: (0.0, inf, 0.0))],").unwrap_err();
    assert!(e.contains("fluid file 1: `offset` = (0, inf, 0) must be finite"), "{e}");
    parse("fluid_files: [(path: \"a.ply\")],").expect("a fluid file alone is water enough");
}

/// A scene of `blocks` (RON list) and `files` (paths, with offsets) in `dir`, dx = 0.05 m.
fn scene_of(dir: &Path, blocks: &str, files: &[(&str, [f32; 3])]) -> Scene {
    let files: Vec<String> =
        files.iter().map(|(f, o)| format!("(path: \"{f}\", offset: ({}, {}, {}))", o[0], o[1], o[2])).collect();
    let text = format!(
        "(name: \"piles\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
          fluid_blocks: {blocks}, fluid_files: [{}],
          camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.05), cpu_dx_scale: 1.0)",
        files.join(", ")
    );
    Scene::from_str(&text, &dir.join("piles.ron")).expect("the scene file itself is valid")
}

/// `n` particles on a lattice of spacing 0.05 m from `corner`, 10 a row, 10 rows a layer.
fn lattice(corner: [f32; 3], n: usize) -> Particles {
    cloud(
        &(0..n)
            .map(|i| {
                let (x, y, z) = ((i % 10) as f32, (i / 10 % 10) as f32, (i / 100) as f32);
                [corner[0] + 0.05 * x, corner[1] + 0.05 * y, corner[2] + 0.05 * z]
            })
            .collect::<Vec<_>>(),
    )
}

/// Coincident particles explode the simulation (2 000 at one point: a density error of 40 000 % and
/// 177 000 m/s), so a fluid file with a pile of particles in cells of dx / 8 (three in one, two at one
/// position, more than 1 % in pairs) is refused, naming the file, how many particles share a cell and the
/// first; so are two files that overlap, and a file whose particles sit on a fluid block's lattice points.
/// A single pair among many (as the simulation's own frames have) builds; so do files beside each other
/// and beside a block.
#[test]
fn coincident_and_overlapping_fluid_files_are_refused_naming_the_count() {
    let dir = scratch("coincident");
    let build = |blocks: &str, files: &[(&str, [f32; 3])]| scene_of(&dir, blocks, files).build(false).map(|s| s.len());
    let prefix = format!("scene {}: fluid file ", dir.join("piles.ron").display());

    particle_io::write(&dir.join("pile.ply"), &cloud(&[[0.5, 0.5, 0.5]; 2000]), ParticleFormat::Ply, 0.0)
        .expect("write");
    let e = build("[]", &[("pile.ply", [0.0; 3])]).expect_err("a pile").to_string();
    assert!(
        e.starts_with(&format!(
            "{prefix}1 (pile.ply): 2000 of 2000 particles share a cell of dx/8 = 0.00625 m with another particle of \
             the file (2000 in one cell at most)"
        )) && e.ends_with("the first is particle 0 at (0.5, 0.5, 0.5)"),
        "{e}"
    );
    // Two particles 0.5 mm apart among 200 on a lattice: one pair, as a simulation leaves a few, is water;
    // the same pair among 100 (2 %), or two particles at one position, is not.
    let with = |n: usize, extra: [f32; 3]| {
        let mut c = lattice([0.1, 0.1, 0.1], n);
        c.positions.push(extra);
        c.velocities.push([0.0; 3]);
        c
    };
    particle_io::write(&dir.join("pair.vtu"), &with(200, [0.1005, 0.1, 0.1]), ParticleFormat::Vtu, 0.0).expect("write");
    assert_eq!(build("[]", &[("pair.vtu", [0.0; 3])]).expect("one pair in 201"), 201);
    particle_io::write(&dir.join("crowded.vtu"), &with(99, [0.1005, 0.1, 0.1]), ParticleFormat::Vtu, 0.0)
        .expect("write");
    let e = build("[]", &[("crowded.vtu", [0.0; 3])]).expect_err("a pair in 100").to_string();
    assert!(
        e.contains("(crowded.vtu): 2 of 100 particles share a cell") && e.contains("particle 0 at (0.1, 0.1, 0.1)"),
        "{e}"
    );
    particle_io::write(&dir.join("twins.ply"), &with(200, [0.1, 0.15, 0.1]), ParticleFormat::Ply, 0.0).expect("write");
    let e = build("[]", &[("twins.ply", [0.0; 3])]).expect_err("two at one position").to_string();
    assert!(
        e.contains("2 of 201 particles share a cell")
            && e.contains("two at the same position")
            && e.contains("particle 10 at"),
        "{e}"
    );

    // Two copies of one file: the second overlaps the first everywhere; moved by 0.5 m, it does not.
    particle_io::write(&dir.join("cube.ply"), &lattice([0.025, 0.5, 0.025], 500), ParticleFormat::Ply, 0.0)
        .expect("write");
    let e = build("[]", &[("cube.ply", [0.0; 3]), ("cube.ply", [0.0; 3])]).expect_err("overlap").to_string();
    assert!(
        e.starts_with(&format!(
            "{prefix}2 (cube.ply): 500 of 500 particles share a cell of dx/8 = 0.00625 m with a particle of fluid \
             file 1 (cube.ply): the files overlap"
        )),
        "{e}"
    );
    assert_eq!(build("[]", &[("cube.ply", [0.0; 3]), ("cube.ply", [0.5, 0.0, 0.5])]).expect("beside"), 1000);

    // On a block's lattice points (min + (i + 0.5) dx: 0.025, 0.075, ...): refused; between them, and
    // above the block, built.
    let block = "[(min: (0.0, 0.0, 0.0), max: (1.0, 0.5, 1.0))]";
    let on = lattice([0.025, 0.025, 0.025], 100);
    particle_io::write(&dir.join("on.ply"), &on, ParticleFormat::Ply, 0.0).expect("write");
    let e = build(block, &[("on.ply", [0.0; 3])]).expect_err("on the lattice").to_string();
    assert!(
        e.contains("(on.ply): 100 of 100 particles lie within dx/8 = 0.00625 m of a lattice point of fluid block 1")
            && e.contains("the first is particle 0 at (0.025, 0.025, 0.025), 0 m from its point (0.025, 0.025, 0.025)"),
        "{e}"
    );
    let e = build(block, &[("on.ply", [0.004, 0.0, 0.0])]).expect_err("4 mm off the lattice").to_string();
    assert!(e.contains("100 of 100 particles lie within dx/8"), "{e}");
    let blocks = 20 * 10 * 20;
    assert_eq!(build(block, &[("on.ply", [0.0, 0.5, 0.0])]).expect("above the block"), blocks + 100);
    assert_eq!(build(block, &[("on.ply", [0.025, 0.025, 0.025])]).expect("between its points"), blocks + 100);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A build cancelled while it reads a fluid file stops with `SceneError::Cancelled` (the window's Cancel
/// reaches the decoder through the build's scope, `waterview::cancel`).
#[test]
fn a_cancelled_build_stops_reading_a_fluid_file() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let dir = scratch("cancelled");
    particle_io::write(&dir.join("cube.ply"), &lattice([0.025, 0.5, 0.025], 500), ParticleFormat::Ply, 0.0)
        .expect("write");
    let scene = scene_of(&dir, "[]", &[("cube.ply", [0.0; 3])]);
    let e = waterview::cancel::scope(Arc::new(AtomicBool::new(true)), || scene.build(false)).expect_err("cancelled");
    assert!(matches!(e, waterview::scene::SceneError::Cancelled), "{e:?}");
    assert_eq!(scene.build(false).expect("outside the scope it builds").len(), 500);
    let _ = std::fs::remove_dir_all(&dir);
}
