//! Static obstacles from meshes (src/mesh, src/scene/obstacles.rs, src/sim/obstacles.rs), on the GPU
//! (lavapipe in CI): a dam break hitting a box never puts a particle inside it; a pool at rest around a
//! submerged box keeps the density next to it at rho0 (not underestimated) and stays at rest; every bad
//! mesh or placement is refused when the scene is built, naming the scene file, the obstacle, its mesh
//! file and the field; particles squeezed under a box on the floor are led out; the obstacles are
//! shadowed by the terrain.
mod common;

use glam::Vec3;
use std::path::{Path, PathBuf};
use waterview::mesh::TriangleMesh;
use waterview::scene::Scene;
use waterview::sim::obstacles::Obstacle;

/// A fresh folder under the system's temporary one for this test's files.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waterview-obstacles-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

/// The scene `text` as if read from `dir/scene.ron`, with a unit cube (0..1 on every axis) in
/// `dir/box.obj`.
fn scene_in(dir: &Path, text: &str) -> Scene {
    std::fs::write(dir.join("box.obj"), TriangleMesh::cuboid(Vec3::ZERO, Vec3::ONE).to_obj()).expect("write box.obj");
    Scene::from_str(text, &dir.join("scene.ron")).expect("the test scene parses")
}

/// Smallest signed distance from `pos` (xyz metres, w < 0 parked) to any of `obstacles`, metres, and
/// how many particles lie inside one.
fn deepest(obstacles: &[Obstacle], pos: &[[f32; 4]]) -> (f32, usize) {
    let mut min = f32::INFINITY;
    let mut inside = 0;
    for q in pos.iter().filter(|q| q[3] >= 0.0) {
        let d = obstacles.iter().map(|o| o.distance(Vec3::new(q[0], q[1], q[2]))).fold(f32::INFINITY, f32::min);
        min = min.min(d);
        inside += (d < 0.0) as usize;
    }
    (min, inside)
}

#[test]
fn a_dam_break_against_a_box_never_enters_it() {
    let dir = folder("dam");
    // A 0.25 m column released toward a 0.15 m box standing on the floor 0.25 m downstream.
    let scene = scene_in(
        &dir,
        "(name: \"dam against a box\", domain: (min: (0, 0, 0), max: (1.0, 0.6, 0.4)),
          fluid_blocks: [(min: (0, 0, 0), max: (0.25, 0.4, 0.4))],
          obstacles: [(mesh: \"box.obj\", position: (0.5, 0.0, 0.1), scale: 0.15)],
          camera: (target: (0.5, 0.2, 0.2), distance: 1.5, yaw_deg: 0, pitch_deg: 20),
          solver: (dx: 0.025), cpu_dx_scale: 1.0)",
    );
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &scene, None);
    let obstacles = engine.sim().obstacles().to_vec();
    assert_eq!(obstacles.len(), 1);
    let (start, inside) = deepest(&obstacles, &engine.sim().read_particles_blocking(&ctx).0);
    assert_eq!(inside, 0, "the lattice put {inside} particles inside the box");
    assert!(start >= 0.5 * 0.025 * 0.999, "a particle starts {start} m from the box");
    let mut closest = f32::INFINITY;
    let mut time = 0.0;
    while time < 0.8 {
        let stats = common::run_checked(&ctx, &mut engine, Some(4), None);
        time = stats.last().expect("statistics").time;
        let (pos, _) = engine.sim().read_particles_blocking(&ctx);
        let (min, inside) = deepest(&obstacles, &pos);
        assert_eq!(inside, 0, "t = {time} s: {inside} particles inside the box (deepest {min} m)");
        closest = closest.min(min);
    }
    println!("dam break against a box: closest approach {closest} m over {time} s");
    assert!(closest < 0.5 * 0.025, "the water reached the box ({closest} m)");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_pool_around_a_submerged_box_rests_at_rho0_next_to_it() {
    let dir = folder("pool");
    // A 0.3 m deep pool over a 0.16 m box held 0.06 m above the floor (water under, around and over it).
    let scene = scene_in(
        &dir,
        "(name: \"pool with a box\", domain: (min: (0, 0, 0), max: (0.5, 0.45, 0.5)),
          fluid_blocks: [(min: (0, 0, 0), max: (0.5, 0.3, 0.5))],
          obstacles: [(mesh: \"box.obj\", position: (0.17, 0.06, 0.17), scale: 0.16)],
          camera: (target: (0.25, 0.15, 0.25), distance: 1.2, yaw_deg: 0, pitch_deg: 20),
          solver: (dx: 0.025), cpu_dx_scale: 1.0)",
    );
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &scene, None);
    let stats = common::run_checked(&ctx, &mut engine, None, Some(1.5));
    let last = stats.last().expect("statistics");
    let sim = engine.sim();
    let (rho0, h, g) = (sim.params().rho0, sim.params().h(), -sim.params().gravity[1]);
    let (pos, _) = sim.read_particles_blocking(&ctx);
    let obstacles = sim.obstacles().to_vec();
    let (min, inside) = deepest(&obstacles, &pos);
    assert_eq!(inside, 0, "{inside} particles inside the box (deepest {min} m)");
    // Particles within h of the box, away from the free surface (whose particles lack neighbours).
    let near: Vec<f32> = pos
        .iter()
        .filter(|q| q[3] >= 0.0 && q[1] < 0.3 - 2.0 * h)
        .filter(|q| obstacles[0].distance(Vec3::new(q[0], q[1], q[2])) < h)
        .map(|q| q[3])
        .collect();
    assert!(near.len() > 50, "only {} particles next to the box", near.len());
    let mean = near.iter().sum::<f32>() / near.len() as f32;
    let ratio = mean / rho0;
    let v_ref = (2.0 * g * 0.3).sqrt();
    println!(
        "pool with a box after {} s: {} particles within h of it, mean density {mean} kg/m^3 ({ratio} rho0); \
         max speed {} m/s ({} of the free-fall speed)",
        last.time,
        near.len(),
        last.max_speed,
        last.max_speed / v_ref
    );
    assert!((0.98..=1.03).contains(&ratio), "density next to the box is {ratio} rho0");
    assert!(last.max_speed < 0.05 * v_ref, "max speed {} m/s: not at rest", last.max_speed);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_meshes_and_placements_are_refused_naming_the_file_the_obstacle_and_the_field() {
    let dir = folder("bad");
    let mut open = TriangleMesh::cuboid(Vec3::ZERO, Vec3::ONE);
    open.triangles.pop();
    std::fs::write(dir.join("open.obj"), open.to_obj()).unwrap();
    std::fs::write(dir.join("garbage.stl"), b"\x01\x02 not an STL").unwrap();
    std::fs::write(dir.join("empty.glb"), b"").unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.obj")).unwrap();
    let with = |obstacle: &str| {
        format!(
            "(name: \"bad\", domain: (min: (0, 0, 0), max: (1, 1, 1)),
              fluid_blocks: [(min: (0, 0, 0), max: (0.5, 0.5, 0.5))],
              obstacles: [(mesh: \"box.obj\", position: (0.6, 0, 0.6), scale: 0.2), {obstacle}],
              camera: (target: (0.5, 0.5, 0.5), distance: 2, yaw_deg: 0, pitch_deg: 20),
              solver: (dx: 0.05), cpu_dx_scale: 1.0)"
        )
    };
    let cases = [
        ("(mesh: \"missing.obj\")", "obstacle 2 (missing.obj): cannot read mesh"),
        ("(mesh: \"open.obj\", scale: 0.2)", "obstacle 2 (open.obj): mesh"),
        ("(mesh: \"garbage.stl\")", "obstacle 2 (garbage.stl): mesh"),
        ("(mesh: \"empty.glb\")", "not a valid glTF file"),
        ("(mesh: \"zero.obj\")", "is a character device, not a regular file"),
        ("(mesh: \"box.obj\", scale: 0.05)", "obstacle 2 (box.obj): is 0.05 m across at its thinnest"),
        ("(mesh: \"box.obj\", scale: 1.5)", "obstacle 2 (box.obj): is 1.5 m along x once placed"),
        ("(mesh: \"box.obj\", position: (3, 0, 0), scale: 0.2)", "obstacle 2 (box.obj): lies outside the domain"),
    ];
    for (obstacle, expected) in cases {
        let scene = scene_in(&dir, &with(obstacle));
        let e = scene.build(false).expect_err(obstacle).to_string();
        assert!(e.contains("scene.ron") && e.contains(expected), "{obstacle}: {e}");
    }
    // Out-of-range fields are refused when the scene is read, before any file is opened.
    for (obstacle, expected) in [
        ("(mesh: \"box.obj\", scale: 0)", "obstacle 2: `scale` = 0 must be > 0 and finite"),
        ("(mesh: \"box.obj\", scale: -1)", "`scale` = -1 must be > 0"),
        ("(mesh: \"\")", "obstacle 2: `mesh` = \"\" is empty"),
        ("(mesh: \"box.obj\", position: (0, inf, 0))", "obstacle 2: `position` = (0, inf, 0) must be finite"),
        ("(mesh: \"box.obj\", rotation_deg: (0, 1e9, 0))", "obstacle 2: `rotation_deg` = (0, 1e9, 0) must be finite"),
    ] {
        let e = Scene::from_str(&with(obstacle), &dir.join("scene.ron")).expect_err(obstacle).to_string();
        assert!(e.contains("scene.ron") && e.contains(expected), "{obstacle}: {e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_shipped_dam_break_against_a_box_builds_from_any_folder() {
    let scene = Scene::builtin("dam_break_box").expect("built in");
    let setup = scene.build(true).expect("builds from assets/scenes");
    assert_eq!(setup.obstacles.len(), 1);
    let (lo, hi) = setup.obstacles[0].world_bounds();
    assert!((lo - Vec3::new(2.3955, 0.0, 0.2985)).abs().max_element() < 1e-5, "{lo}");
    assert!((hi - Vec3::new(2.5565, 0.161, 0.7015)).abs().max_element() < 1e-5, "{hi}");
    // Run from a folder without assets/: the mesh comes from the copy embedded in the binary.
    let elsewhere = Scene { base_dir: folder("elsewhere"), ..scene };
    let away = elsewhere.build(true).expect("builds from the embedded mesh");
    assert_eq!(away.len(), setup.len());
    assert_eq!(away.obstacles[0].mesh, setup.obstacles[0].mesh);
    std::fs::remove_dir_all(&elsewhere.base_dir).ok();
}

/// A decomposed run simulates the obstacles on every rank: `run --gpus 2` takes such a scene and prints
/// both ranks' figures (tests/cluster.rs compares the particles with one GPU's).
#[test]
fn several_gpus_run_a_scene_with_obstacles() {
    let dir = folder("gpus");
    std::fs::write(dir.join("box.obj"), TriangleMesh::cuboid(Vec3::ZERO, Vec3::ONE).to_obj()).unwrap();
    std::fs::write(
        dir.join("scene.ron"),
        "(name: \"two gpus\", domain: (min: (0, 0, 0), max: (1, 1, 1)),
          fluid_blocks: [(min: (0, 0, 0), max: (0.5, 0.5, 1))],
          obstacles: [(mesh: \"box.obj\", position: (0.6, 0, 0.4), scale: 0.2)],
          camera: (target: (0.5, 0.5, 0.5), distance: 2, yaw_deg: 0, pitch_deg: 20),
          solver: (dx: 0.05), cpu_dx_scale: 1.0)",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_waterview"))
        .current_dir(&dir)
        .args(["run", "--scene", "scene.ron", "--gpus", "2", "--steps", "1"])
        .output()
        .expect("waterview runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "exit {:?}: {err}", out.status);
    assert!(table.lines().any(|l| l.starts_with("| 1 |")), "rank 1's row in the table:\n{table}\n{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The obstacles cast the sun's shadow (src/render/obstacle_shadow.rs): in the built-in dam break
/// against a box, drawn at its start, the ground where the sun's ray through the box's top centre lands
/// is much darker than the ground a quarter metre beside it (toward the tank's middle), and the box's
/// sunward top is lit. Measured on lavapipe: luminance 95 in the shadow against 175 beside it and 213 on
/// the box's top (without the shadow map the ground is the same on both sides).
#[test]
fn an_obstacle_casts_its_shadow_on_the_ground() {
    let ctx = common::gpu();
    let scene = Scene::builtin("dam_break_box").expect("built-in scene");
    let engine = common::engine(&ctx, &scene, None);
    let size = (480, 270);
    let img = waterview::engine::batch::render_image(&ctx, &engine, size);
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    if std::fs::create_dir_all(&out).is_ok() {
        img.save(out.join("obstacle_shadow.png")).ok();
    }
    let (camera, settings) = waterview::engine::batch::scene_view(&engine);
    let sun = settings.sun();
    let (lo, hi) = engine.sim().obstacles()[0].world_bounds();
    let top = Vec3::new(0.5 * (lo.x + hi.x), hi.y, 0.5 * (lo.z + hi.z));
    let shadowed = top - sun * (top.y / sun.y);
    // Across the sun's ray on the ground, toward the tank's middle (z = 0.5 m).
    let across = Vec3::new(-sun.z, 0.0, sun.x).normalize();
    let off_middle = |p: Vec3| (p.z - 0.5).abs();
    let side = if off_middle(shadowed + across) < off_middle(shadowed - across) { across } else { -across };
    let beside = shadowed + 0.25 * side;
    let clip = camera.clip_from_world(size.0 as f32 / size.1 as f32);
    let luma = |p: Vec3| {
        let q = clip.project_point3(p);
        let (x, y) = (((q.x + 1.0) * 0.5 * size.0 as f32) as u32, ((1.0 - q.y) * 0.5 * size.1 as f32) as u32);
        let c = img.get_pixel(x.min(size.0 - 1), y.min(size.1 - 1)).0;
        0.2126 * c[0] as f32 + 0.7152 * c[1] as f32 + 0.0722 * c[2] as f32
    };
    let (dark, lit, roof) = (luma(shadowed), luma(beside), luma(top - 0.01 * Vec3::Y));
    println!("ground in the box's shadow {dark}, beside it {lit}, the box's top {roof}");
    assert!(dark < 0.7 * lit, "the ground in the box's shadow ({dark}) is not darker than beside it ({lit})");
    assert!(roof > dark, "the box's sunward top ({roof}) is darker than its shadow ({dark})");
}

/// The terrain shadows the obstacles (src/render/obstacles.rs, the heightfield's soft shadow marched from
/// each pixel toward the sun): a box's top behind a ridge, on the side away from a low sun (lit by the sky
/// alone), is darker than the same box's top once the renderer's terrain is set to flat ground of another
/// sample count (the obstacles then read the terrain's new buffers). Measured on lavapipe: luminance 147
/// behind the ridge against 221 on flat ground (before the obstacles were shadowed by the terrain, the same
/// on both).
#[test]
fn the_terrain_shadows_an_obstacle() {
    use waterview::render::{render_to_image, OrbitCamera, RenderSettings, Renderer, OFFSCREEN_FORMAT};
    use waterview::terrain::Heightfield;
    let ctx = common::gpu();
    // 4 m x 4 m, a sample every 0.1 m; the ridge: 2.5 m high over x = 3.0 .. 3.8 m, sloping to 0 over 0.1 m.
    let mut ridge = Heightfield::flat(glam::Vec2::ZERO, glam::Vec2::splat(4.0), 0.0);
    (ridge.nx, ridge.nz) = (41, 41);
    ridge.heights = (0..41 * 41)
        .map(|i| {
            let x = (i % 41) as f32 * 0.1;
            2.5 * ((x - 2.9) / 0.1).clamp(0.0, 1.0) * ((3.9 - x) / 0.1).clamp(0.0, 1.0)
        })
        .collect();
    // Another sample count: the terrain's buffers are made anew, and the obstacles must read the new ones.
    let flat = Heightfield::flat(glam::Vec2::ZERO, glam::Vec2::splat(4.0), 0.0);
    let (lo, hi) = (Vec3::new(1.85, 0.0, 1.7), Vec3::new(2.15, 0.8, 2.3));
    // From the -x side, above; the sun from +x, 35 degrees up: the ridge's shadow reaches 3.6 m toward -x.
    let camera = OrbitCamera {
        target: Vec3::new(2.0, 0.5, 2.0),
        distance: 4.0,
        yaw: -std::f32::consts::FRAC_PI_2,
        pitch: 0.7,
        fov_y: 40f32.to_radians(),
        lens_shift: 0.0,
    };
    let settings = RenderSettings { sun_azimuth_deg: 90.0, sun_elevation_deg: 35.0, ..Default::default() };
    let size = (240, 180);
    let top = Vec3::new(2.0, hi.y, 2.0);
    let clip = camera.clip_from_world(size.0 as f32 / size.1 as f32);
    let q = clip.project_point3(top);
    let (x, y) = (((q.x + 1.0) * 0.5 * size.0 as f32) as u32, ((1.0 - q.y) * 0.5 * size.1 as f32) as u32);
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    std::fs::create_dir_all(&out).ok();
    let mut luma = Vec::new();
    let mut renderer = Renderer::new(&ctx, OFFSCREEN_FORMAT, &ridge);
    renderer.set_obstacles(&ctx, &[common::box_mesh(lo, hi)]);
    for (name, hf) in [("ridge", &ridge), ("flat", &flat)] {
        renderer.set_terrain(&ctx, hf);
        let img = render_to_image(&ctx, &mut renderer, &camera, None, &settings, size);
        img.save(out.join(format!("obstacle_terrain_shadow_{name}.png"))).ok();
        let c = img.get_pixel(x.min(size.0 - 1), y.min(size.1 - 1)).0;
        luma.push(0.2126 * c[0] as f32 + 0.7152 * c[1] as f32 + 0.0722 * c[2] as f32);
    }
    println!("the box's top behind the ridge {}, on flat ground {}", luma[0], luma[1]);
    assert!(
        luma[0] < 0.8 * luma[1],
        "the box's top behind the ridge ({}) is not darker than on flat ground ({})",
        luma[0],
        luma[1]
    );
}

/// Particles squeezed into a box standing on the floor (the film a body that settles leaves under it, or
/// the water at the foot of a box moved live; the floor's projection comes after the box's, so it cannot
/// push them out downwards) are led out along the floor within a few steps, without being thrown.
#[test]
fn particles_squeezed_under_a_box_on_the_floor_are_led_out() {
    let dir = folder("squeezed");
    let scene = scene_in(
        &dir,
        "(name: \"pool around a box on the floor\", domain: (min: (0, 0, 0), max: (0.5, 0.4, 0.5)),
          fluid_blocks: [(min: (0, 0, 0), max: (0.5, 0.15, 0.5))],
          obstacles: [(mesh: \"box.obj\", position: (0.17, 0.0, 0.17), scale: 0.16)],
          camera: (target: (0.25, 0.1, 0.25), distance: 1.2, yaw_deg: 0, pitch_deg: 20),
          solver: (dx: 0.025), cpu_dx_scale: 1.0)",
    );
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &scene, None);
    common::run_checked(&ctx, &mut engine, None, Some(0.2));
    let obstacles = engine.sim().obstacles().to_vec();
    // r_collide (src/sim/gpu_data.rs): the floor's contact distance.
    let rc = 0.25 * engine.params().dx;
    // Three particles of the pool's far corner on the floor moved under the box, at the floor's contact
    // distance: right under its centre, halfway to a side, and near a corner.
    let mut state = engine.sim().read_state_blocking(&ctx).expect("the state");
    let spots = [Vec3::new(0.25, rc, 0.25), Vec3::new(0.29, rc, 0.25), Vec3::new(0.19, rc, 0.31)];
    let far = |q: &[f32; 4]| q[3] >= 0.0 && q[0] > 0.45 && q[2] > 0.45 && q[1] < 0.02;
    let corner: Vec<usize> = (0..state.positions.len()).filter(|&i| far(&state.positions[i])).collect();
    assert!(corner.len() >= spots.len(), "too few particles in the pool's far corner");
    for (&i, spot) in corner.iter().zip(spots) {
        state.positions[i] = [spot.x, spot.y, spot.z, state.positions[i][3]];
        state.velocities[i] = [0.0, 0.0, 0.0, state.velocities[i][3]];
    }
    let (depth, inside) = deepest(&obstacles, &state.positions);
    assert_eq!(inside, spots.len(), "the particles put under the box are not inside it ({depth} m)");
    engine.sim_mut().restore(&ctx, &state).expect("the state goes back");
    let mut out_at = None;
    let mut fastest = 0.0f32;
    let mut time = 0.0;
    while time < 0.3 {
        let stats = common::run_checked(&ctx, &mut engine, Some(2), None);
        time = stats.last().expect("statistics").time - 0.2;
        fastest = stats.iter().map(|s| s.max_speed).fold(fastest, f32::max);
        let (min, inside) = deepest(&obstacles, &engine.sim().read_particles_blocking(&ctx).0);
        match (inside, out_at) {
            (0, None) => out_at = Some(time),
            (0, _) => {}
            (n, Some(t)) => {
                panic!("{n} particles back inside the box at {time} s after all were out at {t} s ({min} m)")
            }
            (_, None) => {}
        }
    }
    let v_ref = (2.0 * 9.81f32 * 0.15).sqrt();
    println!("particles squeezed under a box: all out after {out_at:?} s; fastest particle {fastest} m/s");
    let out_at = out_at.expect("particles still inside the box after 0.3 s");
    // Led out at most dx/2 a step they are out in 0.07-0.1 s on lavapipe; the pool, still settling, moves
    // at 0.6 m/s, the particles let out among their neighbours at the box's foot up to 1.9 m/s (led out
    // up to 4 dx in one step, the film under a sinking box was thrown at 6.6 m/s, 3.8 v_ref; before
    // the escape existed they stayed r_collide inside the box for good).
    assert!(out_at < 0.2, "the squeezed particles took {out_at} s to leave the box");
    assert!(
        fastest < 2.0 * v_ref,
        "a particle was thrown at {fastest} m/s (free fall from the pool's top: {v_ref} m/s)"
    );
    std::fs::remove_dir_all(&dir).ok();
}
