//! Static obstacles moved live (src/sim/live_obstacles.rs, `Engine::move_obstacles`), on the GPU (lavapipe
//! in CI): a box pushed, turned and scaled through a resting pool in a running engine keeps every
//! particle, has none inside it where it ends up, keeps the water's kinetic energy bounded by what the
//! box's own speed can give it, and the simulated time goes on (no restart); a placement outside the
//! domain or another list of obstacles is refused and nothing moves.
mod common;

use glam::Vec3;
use std::path::PathBuf;
use waterview::engine::{Engine, EngineError};
use waterview::mesh::TriangleMesh;
use waterview::scene::Scene;
use waterview::sim::live_obstacles::MAX_MOVE_DX;
use waterview::sim::SimStats;

const DX: f32 = 0.025;

/// A 0.5 x 0.3 x 0.25 m pool (about 2 400 particles at dx = 0.025 m) around a 0.1 m box (a unit cube
/// scaled) standing on the floor near its low-x end, its mesh in a fresh temporary folder (`name`'s).
fn pool(name: &str) -> (PathBuf, Scene) {
    let dir = std::env::temp_dir().join(format!("waterview-live-obstacles-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    std::fs::write(dir.join("box.obj"), TriangleMesh::cuboid(Vec3::ZERO, Vec3::ONE).to_obj()).expect("box.obj");
    let scene = Scene::from_str(
        "(name: \"pool with a moving box\", domain: (min: (0, 0, 0), max: (0.5, 0.45, 0.25)),
          fluid_blocks: [(min: (0, 0, 0), max: (0.5, 0.3, 0.25))],
          obstacles: [(mesh: \"box.obj\", position: (0.06, 0.0, 0.075), scale: 0.1)],
          camera: (target: (0.25, 0.15, 0.125), distance: 1.2, yaw_deg: 0, pitch_deg: 20),
          solver: (dx: 0.025), cpu_dx_scale: 1.0)",
        &dir.join("scene.ron"),
    )
    .expect("the test scene parses");
    (dir, scene)
}

/// Particles (not parked) inside any of the engine's static obstacles now, and the deepest one's distance.
fn inside(ctx: &waterview::gpu::GpuContext, engine: &Engine) -> (usize, f32) {
    let (pos, _) = engine.sim().read_particles_blocking(ctx);
    let mut count = 0;
    let mut deepest = f32::INFINITY;
    for q in pos.iter().filter(|q| q[3] >= 0.0) {
        let p = Vec3::new(q[0], q[1], q[2]);
        let d = engine.sim().obstacles().iter().map(|o| o.distance(p)).fold(f32::INFINITY, f32::min);
        deepest = deepest.min(d);
        count += (d < 0.0) as usize;
    }
    (count, deepest)
}

#[test]
fn a_box_moved_live_through_a_resting_pool_pushes_the_water_aside() {
    push_through_pool("move", None);
}

/// As above with one step per frame, as the window steps while its frames are slow (lavapipe): the box
/// moves its quarter dx every step, four times as fast in simulated time, and the bounds, relative to its
/// speed, still hold (the particles it throws shorten the CFL step, which slows it in turn).
#[test]
fn a_box_moved_live_a_quarter_dx_every_step_stays_bounded() {
    push_through_pool("every-step", Some(1));
}

/// Settles the pool, moves the box live and checks the outcome (see the module docs); `substeps` replaces
/// the scene's steps per frame.
fn push_through_pool(name: &str, substeps: Option<u32>) {
    let (dir, scene) = pool(name);
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &scene, None);
    if let Some(n) = substeps {
        let params = waterview::sim::SimParams { substeps: n, ..engine.params().clone() };
        engine.set_params(&ctx, &params).expect("substeps change live");
    }
    let settled = common::run_checked(&ctx, &mut engine, None, Some(0.3));
    let before = settled.last().expect("statistics").clone();
    let count = before.particle_count;
    let mass = engine.sim().mass();
    let substeps = engine.params().substeps as f32;

    // 0.2 m along x, turned 30 degrees about y and made 1.3 times larger: for its farthest corner
    // (sqrt(3) file metres from the origin) 0.2 + 0.52 * 0.13 sqrt(3) + 0.03 sqrt(3) = 0.37 m of travel,
    // 60 frames at 0.25 dx a frame; it ends 0.06 m (2.4 dx) from the far wall.
    let mut moved = scene.obstacles.clone();
    moved[0].position = [0.26, 0.0, 0.075];
    moved[0].rotation_deg = [0.0, 30.0, 0.0];
    moved[0].scale = 0.13;
    engine.move_obstacles(&moved).expect("a live move within the domain");
    assert_eq!(engine.scene().obstacles, moved, "the scene keeps the new placement");
    assert!(engine.sim().obstacles_moving(), "the box is on its way");
    let version = engine.obstacles_version();
    let travel = common::run_checked(&ctx, &mut engine, Some(80), None);
    assert!(!engine.sim().obstacles_moving(), "the box has not arrived after 80 frames");
    assert!(engine.obstacles_version() > version + 10, "the box moved in steps: {}", engine.obstacles_version());
    let o = &engine.sim().obstacles()[0];
    assert!((o.position - Vec3::new(0.26, 0.0, 0.075)).length() < 1e-6 && o.scale == 0.13, "{o:?}");
    let after = common::run_checked(&ctx, &mut engine, Some(10), None);

    let all: Vec<&SimStats> = travel.iter().chain(&after).collect();
    assert!(all.iter().all(|s| s.particle_count == count), "the particle count changed (it was {count})");
    assert!(all[0].time > before.time, "the simulated time restarted: {} after {}", all[0].time, before.time);
    let (inside, deepest) = inside(&ctx, &engine);
    assert_eq!(inside, 0, "{inside} particles inside the box where it ended (deepest {deepest} m)");

    // The box's top speed: MAX_MOVE_DX dx per frame of `substeps` steps of the CFL time step. The water it pushes
    // cannot all move faster than the box does without a source of energy other than the push (the pool
    // starts at rest, its surface flat): the kinetic energy stays under that of all the water at the
    // box's top speed, 1/2 M v^2 (measured: 0.19 of it at 4 steps a frame, 0.12 at one). The fastest
    // particle (round the box's corners, out of the layer it squeezes) ran 3.7 times the box's speed at 4
    // steps a frame and 1.4 times at one; a blow-up puts particles at tens of metres per second, far past
    // six times.
    let dt = travel.iter().map(|s| s.dt).fold(f32::INFINITY, f32::min);
    let v_box = MAX_MOVE_DX * DX / (substeps * dt);
    let bound = 0.5 * count as f32 * mass * v_box * v_box;
    let peak = all.iter().map(|s| s.kinetic_energy).fold(0.0f32, f32::max);
    let top = all.iter().map(|s| s.max_speed).fold(0.0f32, f32::max);
    println!(
        "live move through a pool of {count} particles, {substeps} steps a frame: box at up to {v_box:.3} m/s; kinetic energy {:.2e} J \
         at rest, peak {peak:.2e} J (bound {bound:.2e} J), top particle speed {top:.3} m/s; {} frames of \
         travel, t {:.3} -> {:.3} s",
        before.kinetic_energy,
        engine.obstacles_version() - version,
        before.time,
        all.last().map_or(0.0, |s| s.time)
    );
    assert!(peak < bound, "kinetic energy {peak} J past the bound {bound} J: the move blew the water apart");
    assert!(top < 6.0 * v_box, "a particle at {top} m/s, past six times the box's speed {v_box} m/s");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_live_move_is_refused_and_nothing_moves() {
    let (dir, scene) = pool("refused");
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &scene, None);
    let mut outside = scene.obstacles.clone();
    outside[0].position = [2.0, 0.0, 0.0];
    let e = engine.move_obstacles(&outside).expect_err("outside the domain");
    assert!(e.to_string().contains("obstacle 1 (box.obj)") && e.to_string().contains("outside"), "{e}");
    let mut thin = scene.obstacles.clone();
    thin[0].scale = 0.01;
    assert!(engine.move_obstacles(&thin).is_err(), "thinner than 2 dx");
    let e = engine.move_obstacles(&[]).expect_err("a removal needs a rebuild");
    assert!(matches!(e, EngineError::ObstaclesChanged), "{e}");
    assert_eq!(engine.scene().obstacles, scene.obstacles, "the scene kept its obstacles");
    assert!(!engine.sim().obstacles_moving() && engine.obstacles_version() == 0, "nothing moved");
    std::fs::remove_dir_all(&dir).ok();
}
