//! Water that never explodes (lavapipe in CI): deficient neighbourhoods stay physical on all three
//! solvers. Each case's fastest particle is held to the free-fall speed over the scene's height range plus
//! 20 % (plus the scene's own inflow speed), the bound a real flow of that height keeps; before the fixes
//! these cases reached 33-162 025 m/s (free-standing blocks of 2-5 particles across, whose grid folded
//! two rows of a neighbour loop onto one), 5-15 m/s (a column one or two dx from a wall) and 7.2 m/s in
//! the valley's first frame (lattice points dx / 2 above a steep slope, dx / 4 from it).
mod common;

use waterview::engine::batch::run_frames;
use waterview::gpu::{GpuContext, Profiler};
use waterview::scene::{Emitter, Scene};
use waterview::sim::{Method, SimStats};

const G: f32 = 9.81;

/// A scene in a 1 x `height` x 0.5 m box (no terrain) with one block `min..max` at spacing `dx`.
fn box_scene(height: f32, min: [f32; 3], max: [f32; 3], dx: f32, method: Method) -> Scene {
    let t = |v: [f32; 3]| format!("({:?}, {:?}, {:?})", v[0], v[1], v[2]);
    let text = format!(
        "(name: \"case\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, {height:?}, 0.5)),
          fluid_blocks: [(min: {}, max: {})],
          camera: (target: (0.5, 0.2, 0.25), distance: 1.8, yaw_deg: 20.0, pitch_deg: 25.0),
          solver: (dx: {dx:?}), cpu_dx_scale: 1.0)",
        t(min),
        t(max)
    );
    let mut scene = Scene::from_str(&text, std::path::Path::new("case.ron")).expect("test scene parses");
    scene.solver.method = method;
    scene
}

/// Runs `scene` for `seconds` (or until a blow-up, which fails the test) and returns every record.
fn run(ctx: &GpuContext, scene: &Scene, seconds: f32) -> Vec<SimStats> {
    let mut engine = common::engine(ctx, scene, None);
    let all = common::run_checked(ctx, &mut engine, None, Some(seconds));
    if let Some(b) = engine.sim().blow_up() {
        panic!("{} ({:?}): {b}", scene.name, scene.solver.method);
    }
    all
}

/// The fastest particle over `records`, m/s, and the time it was seen.
fn fastest(records: &[SimStats]) -> (f32, f32) {
    records.iter().fold((0.0, 0.0), |(v, t), s| if s.max_speed > v { (s.max_speed, s.time) } else { (v, t) })
}

/// Free fall over `height` metres plus 20 %, m/s.
fn bound(height: f32) -> f32 {
    1.2 * (2.0 * G * height).sqrt()
}

/// Blocks of 1 to 5 particles across (dx = 0.05 m) standing on the floor and falling from 0.3 m, and one
/// of 4 across at dx = 0.01 m, on each solver: every particle within free fall over the box's 0.6 m plus
/// 20 % (4.12 m/s; the falling blocks hit the floor at 2.43 m/s). Measured on lavapipe: standing 0.3-1.8
/// m/s, falling 2.5-3.6 m/s (WCSPH's block of 5 across); DFSPH's block of 5 across threw its splash sheet
/// at 4.33-4.52 m/s while the density solve's warm start could not be given back (dfsph.wgsl,
/// df_density_source), 3.0 m/s since; the 4 x 4 x 4 block once reached 33 m/s in its first frame.
#[test]
fn small_blocks_stay_within_free_fall_on_every_solver() {
    let ctx = common::gpu();
    let mut seen = Vec::new();
    for method in Method::ALL {
        let mut cases: Vec<(f32, f32, f32)> = Vec::new(); // (dx, particles across, floor gap)
        for n in 1..=5 {
            cases.push((0.05, n as f32, 0.0));
            cases.push((0.05, n as f32, 0.3));
        }
        cases.push((0.01, 4.0, 0.0));
        for (dx, n, y0) in cases {
            let w = n * dx;
            let (x0, z0) = (0.5 - 0.5 * w, 0.25 - 0.5 * w);
            let scene = box_scene(0.6, [x0, y0, z0], [x0 + w, y0 + w, z0 + w], dx, method);
            let records = run(&ctx, &scene, if y0 > 0.0 { 0.45 } else { 0.3 });
            let (v, t) = fastest(&records);
            seen.push(format!("{} {n} x {dx} m from {y0} m: {v:.2} m/s at {t:.3} s", method.name()));
            assert!(v <= bound(0.6), "{}: a block of {n} at dx {dx} from {y0} m: {v} m/s at t = {t}", method.name());
        }
    }
    println!("{}", seen.join("\n"));
}

/// A 0.3 m column one and two dx from the side wall (dx = 0.02 m): the gap, narrower than the kernel's
/// support, is filled at the build (the block's face moved onto the wall), and the collapse's first 0.2 s
/// stay within free fall over the box's 0.4 m plus 20 % (3.36 m/s) on every solver. Before, such a gap filled from
/// the floor up at once as the face was released and shot a sheet up the wall (the box dam break's
/// 0.78 m column 1.25 dx from the wall: 4.2-15 m/s at t = 0.08-0.1 s).
#[test]
fn a_column_one_or_two_dx_from_a_wall_fills_the_gap_and_stays_within_free_fall() {
    let ctx = common::gpu();
    let dx = 0.02;
    for gap in [1.0, 2.0] {
        for method in Method::ALL {
            let scene = box_scene(0.4, [0.0, 0.0, 0.0], [0.3, 0.3, 0.5 - gap * dx], dx, method);
            let setup = scene.build(true).expect("the column builds");
            assert_eq!(setup.len(), 15 * 15 * 25, "the gap of {gap} dx is filled: 15 x 15 x 25 particles");
            // The collapse until its front nears the far wall (0.7 m away), whose run-up is another matter.
            let records = run(&ctx, &scene, 0.2);
            let (v, t) = fastest(&records);
            println!("{} gap {gap} dx: fastest {v:.2} m/s at {t:.3} s", method.name());
            assert!(v <= bound(0.4), "{}: gap {gap} dx: {v} m/s at t = {t}", method.name());
        }
    }
}

/// The built-in valley scenes' first ten frames on every solver (lavapipe's dx = 0.432 m): within free fall
/// over the scene's 18 m plus 20 %; the valley itself, whose lattice is cut only by the terrain, within
/// 1.5 m/s in its first frame (1.1 m/s; 7.2 m/s before the lattice kept dx / 2 from the terrain's
/// tangent plane instead of dx / 2 above it).
#[test]
fn the_valley_scenes_start_calmly() {
    let ctx = common::gpu();
    for name in ["valley", "valley_river", "valley_town"] {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("assets/scenes/{name}.ron"));
        for method in Method::ALL {
            let mut scene = Scene::load(&path).expect("built-in scene loads");
            scene.solver.method = method;
            let mut engine = common::engine(&ctx, &scene, None);
            let records = common::run_checked(&ctx, &mut engine, Some(10), None);
            assert!(engine.sim().blow_up().is_none(), "{name}: {:?}", engine.sim().blow_up());
            let (v, t) = fastest(&records);
            println!(
                "{name} {}: first frame {:.2} m/s, fastest {v:.2} m/s at {t:.3} s",
                method.name(),
                records[0].max_speed
            );
            assert!(v <= bound(18.0), "{name} {}: {v} m/s at {t}", method.name());
            if name == "valley" {
                assert!(records[0].max_speed <= 1.5, "valley {}: first frame {}", method.name(), records[0].max_speed);
            }
        }
    }
}

/// An emitter at the rate its disc carries (0.95 of it: radius 0.15 m at 2.06 m/s, dx = 0.05 m) pours for
/// 0.6 s on each solver without packing: the fastest particle within free fall over the box plus 20 % plus the
/// inflow's speed, the density error bounded. Seven times that rate is refused with both numbers (it
/// packed its water to 51 % density error and 868 m/s before).
#[test]
fn an_emitter_at_its_carried_rate_stays_physical_and_a_faster_one_is_refused() {
    let ctx = common::gpu();
    let speed = 2.06;
    let carried = waterview::sim::sources::carried_rate(0.15, speed, 0.05);
    for method in Method::ALL {
        let mut scene = box_scene(1.0, [0.0, 0.0, 0.0], [1.0, 0.1, 0.5], 0.05, method);
        scene.emitters = vec![Emitter {
            center: [0.5, 0.8, 0.25],
            radius: 0.15,
            velocity: [0.0, -speed, 0.0],
            rate: 0.95 * carried,
        }];
        let records = run(&ctx, &scene, 0.6);
        let (v, t) = fastest(&records);
        let worst_error = records.iter().map(|s| s.max_density_error).fold(0.0, f32::max);
        println!(
            "{} emitter: fastest {v:.2} m/s at {t:.3} s, max density error {:.1} %",
            method.name(),
            100.0 * worst_error
        );
        assert!(v <= bound(1.0) + speed, "{}: {v} m/s at t = {t}", method.name());
        assert!(worst_error < 0.3, "{}: max density error {worst_error}", method.name());
        assert!(records.last().unwrap().particle_count > records[0].particle_count + 100, "the emitter poured");
    }
    let mut packed = box_scene(1.0, [0.0, 0.0, 0.0], [1.0, 0.1, 0.5], 0.05, Method::Dfsph);
    packed.emitters = vec![Emitter { center: [0.5, 0.8, 0.25], radius: 0.15, velocity: [0.0, -speed, 0.0], rate: 1.0 }];
    let err =
        waterview::engine::Engine::new(&ctx, packed, Default::default()).err().expect("the packed emitter is refused");
    let text = format!("{err:#}");
    assert!(text.contains("`rate` = 1 m^3/s is more than the disc carries") && text.contains("2.06 m/s"), "{text}");
}

/// Finite water that leaves physics is a blow-up: a particle given 5 000 m/s (finite) stops the run within
/// a few frames, naming the speed, the bound and the particle's position.
#[test]
fn a_finite_particle_past_the_speed_bound_stops_the_run() {
    let ctx = common::gpu();
    let scene = box_scene(0.6, [0.3, 0.0, 0.1], [0.7, 0.2, 0.4], 0.05, Method::Dfsph);
    let mut engine = common::engine(&ctx, &scene, None);
    let mut profiler = Profiler::new(&ctx.device);
    run_frames(&ctx, engine.sim_mut(), &mut profiler, Some(3), None, |_| {});
    assert!(engine.sim().blow_up().is_none(), "a calm start");
    waterview::engine::batch::set_particle_velocity(&ctx, &engine, 5, [5000.0, 0.0, 0.0]);
    let mut frames = 0;
    run_frames(&ctx, engine.sim_mut(), &mut profiler, Some(100), None, |_| frames += 1);
    let b = engine.sim().blow_up().expect("5 000 m/s is a blow-up").clone();
    assert!(frames < 20, "the run stopped at the blow-up ({frames} frames)");
    assert_eq!(b.non_finite, 0, "the water was finite: {b:?}");
    assert!(matches!(b.cause, waterview::sim::Cause::SpeedBound { .. }), "{b:?}");
    let text = b.to_string();
    assert!(
        text.contains("blew up at frame") && text.contains("this scene allows") && text.contains(") m moves at"),
        "{text}"
    );
    let bound = engine.sim().bounds().speed;
    assert!((bound - 10.0 * (2.0 * G * 0.6f32).sqrt()).abs() < 0.01, "bound {bound} from the box's 0.6 m");
}
