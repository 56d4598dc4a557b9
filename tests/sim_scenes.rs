//! Physics of the shipped scenes on the GPU (lavapipe in CI): a resting tank is hydrostatic, and the dam
//! break and the valley flood run without NaN, leaks through the terrain, or particles leaving the domain.
mod common;

use waterview::engine::batch::{render_image, run_frames, step_and_read};
use waterview::engine::Engine;
use waterview::gpu::Profiler;
use waterview::scene::Scene;
use waterview::sim::SimStats;

fn run(name: &str, seconds: f32) -> (waterview::gpu::GpuContext, Engine, Vec<SimStats>) {
    let ctx = common::gpu();
    let scene = Scene::builtin(name).expect("built-in scene");
    let mut engine = common::engine(&ctx, &scene, None);
    let mut profiler = Profiler::new(&ctx.device);
    let mut all = Vec::new();
    run_frames(&ctx, engine.sim_mut(), &mut profiler, None, Some(seconds), |s| all.push(s.clone()));
    (ctx, engine, all)
}

fn assert_contained(name: &str, all: &[SimStats], n: u32) {
    for s in all {
        assert_eq!(s.particle_count, n, "{name}: particle count changed");
        assert_eq!(s.non_finite, 0, "{name}: non-finite particles at t = {}", s.time);
        assert_eq!(s.outside_domain, 0, "{name}: particles outside the domain at t = {}", s.time);
        assert_eq!(s.below_terrain, 0, "{name}: particles below the terrain at t = {}", s.time);
        assert!(s.kinetic_energy.is_finite() && s.max_speed < 50.0, "{name}: blow-up at t = {}: {s:?}", s.time);
    }
}

#[test]
fn tank_settles_hydrostatic() {
    let (ctx, mut engine, all) = run("tank", 2.5);
    let n = engine.live_particles();
    assert_contained("tank", &all, n);
    let last = all.last().unwrap();
    println!("tank after {:.2} s: {last:?}", last.time);
    assert!(last.mean_density_error <= 0.01, "mean density error {} > 1 %", last.mean_density_error);

    // Bottom pressure against rho0 g depth, away from the side walls.
    let sim = engine.sim_mut();
    let p = sim.params().clone();
    let (dx, rho0, g) = (p.dx, p.rho0, -p.gravity[1]);
    let d = *sim.domain();
    let inner = |q: &[f32; 4]| {
        q[0] > d.min[0] + 3.0 * dx
            && q[0] < d.max[0] - 3.0 * dx
            && q[2] > d.min[2] + 3.0 * dx
            && q[2] < d.max[2] - 3.0 * dx
    };
    // Hydrostatic profile: pressure against height by least squares over the particles away from the
    // side walls and more than two spacings from the floor and the free surface (the boundary layer of
    // particles is distorted by the boundary model; see docs), extrapolated to the floor. The reference
    // depth is the depth the water has at rest density: volume N m / rho0 over the floor area.
    // The fit is averaged over 80 consecutive steps: a step's DFSPH pressure (the sum of its solves'
    // kappa rho) alternates by about ±20 % from one step to the next in this coarse 20-layer tank, whose
    // density solve stops on its iteration limit (0.82, 1.15, 1.03, 0.92, 1.12, ... x rho0 g depth).
    // Means over 80 consecutive steps read 1.013-1.017 (gradient) and 1.005-1.008 (floor) in three runs;
    // reads once per frame (every 4th step) sampled one phase of the alternation: means of 8 to 80
    // frames read 0.87-1.18.
    let floor = d.min[1];
    let area = (d.max[0] - d.min[0]) * (d.max[2] - d.min[2]);
    let surface = floor + n as f32 * sim.mass() / (rho0 * area);
    let mut profiler = Profiler::new(&ctx.device);
    let (mut slope_sum, mut floor_sum, steps) = (0.0f64, 0.0f64, 80);
    for _ in 0..steps {
        let (pos, vel) = step_and_read(&ctx, sim, &mut profiler);
        let (mut n, mut sy, mut sp, mut syy, mut syp) = (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for (q, v) in pos.iter().zip(&vel) {
            if inner(q) && q[1] > floor + 2.0 * dx && q[1] < surface - 2.0 * dx {
                let (y, p) = (q[1] as f64, v[3] as f64);
                n += 1.0;
                sy += y;
                sp += p;
                syy += y * y;
                syp += y * p;
            }
        }
        assert!(n > 100.0, "too few interior particles ({n})");
        let slope = (n * syp - sy * sp) / (n * syy - sy * sy);
        slope_sum += slope;
        floor_sum += (sp - slope * sy) / n + slope * floor as f64;
    }
    let slope = slope_sum / steps as f64;
    let p_floor = floor_sum / steps as f64;
    let expected_floor = (rho0 * g * (surface - floor)) as f64;
    let gradient_ratio = -slope / (rho0 * g) as f64;
    let floor_ratio = p_floor / expected_floor;
    println!("pressure gradient {:.1} Pa/m ({gradient_ratio:.4} x rho0 g); floor pressure {p_floor:.1} Pa vs rho0 g depth {expected_floor:.1} Pa ({floor_ratio:.4})", -slope);
    // At rest: no particle faster than 5 % of the free-fall speed over the column's height.
    let v_ref = (2.0 * g * (surface - floor)).sqrt();
    assert!(
        last.max_speed < 0.05 * v_ref,
        "max speed {} m/s is not at rest (free-fall speed {v_ref} m/s)",
        last.max_speed
    );
    assert!((gradient_ratio - 1.0).abs() <= 0.05, "pressure gradient is {gradient_ratio:.4} x rho0 g");
    assert!((floor_ratio - 1.0).abs() <= 0.05, "bottom pressure is {floor_ratio:.4} x rho0 g depth");
}

#[test]
fn dam_break_stays_contained() {
    let (_ctx, sim, all) = run("dam_break", 1.0);
    assert_contained("dam_break", &all, sim.sim().capacity());
    let last = all.last().unwrap();
    println!("dam_break after {:.2} s: {last:?}", last.time);
    assert!(last.time >= 1.0);
}

#[test]
fn valley_flood_stays_above_terrain_and_renders() {
    let (ctx, engine, all) = run("valley", 1.5);
    assert_contained("valley", &all, engine.sim().capacity());
    let last = all.last().unwrap();
    println!("valley after {:.2} s: {last:?}", last.time);
    assert!(last.max_speed > 0.5, "the flood is moving");

    // The headless render shows both water and terrain.
    let img = render_image(&ctx, &engine, (480, 270));
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../test-output");
    std::fs::create_dir_all(&dir).unwrap();
    img.save(dir.join("valley_headless.png")).unwrap();
    let total = (img.width() * img.height()) as f32;
    let water = img.pixels().filter(|p| p[2] as i32 > p[0] as i32 + 40 && p[2] as i32 > p[1] as i32 + 10).count()
        as f32
        / total;
    let terrain =
        img.pixels().filter(|p| p[1] as i32 > p[2] as i32 + 10 && p[1] as i32 > p[0] as i32).count() as f32 / total;
    println!("valley render: water {:.1} %, terrain {:.1} %", 100.0 * water, 100.0 * terrain);
    assert!(water > 0.01, "water covers {:.2} % of the image", 100.0 * water);
    assert!(terrain > 0.15, "terrain covers {:.2} % of the image", 100.0 * terrain);
}

/// A scene's water starts at hydrostatic rest (see `sim::initial`): the particles the simulation is
/// built with carry rho0 g depth as their first pressure, which the solvers' warm start takes up.
#[test]
fn tank_starts_at_hydrostatic_pressure() {
    let ctx = common::gpu();
    let scene = Scene::builtin("tank").expect("built-in scene");
    let engine = common::engine(&ctx, &scene, None);
    let sim = engine.sim();
    let p = sim.params().clone();
    let (pos, vel) = sim.read_particles_blocking(&ctx);
    let top = pos.iter().map(|q| q[1]).fold(f32::MIN, f32::max) + 0.5 * p.dx;
    let rho_g = p.rho0 * -p.gravity[1];
    let worst = pos.iter().zip(&vel).map(|(q, v)| (v[3] - rho_g * (top - q[1])).abs()).fold(0.0f32, f32::max);
    println!("tank: {} particles, top {top:.3} m, largest deviation from rho0 g depth {worst:.2} Pa", pos.len());
    assert!(worst <= 1e-3 * rho_g * top, "start pressure off rho0 g depth by {worst} Pa");
    let bottom = pos.iter().zip(&vel).filter(|(q, _)| q[1] < 0.6 * p.dx).map(|(_, v)| v[3]).fold(f32::MAX, f32::min);
    assert!(bottom >= 0.9 * rho_g * top, "bottom layer starts at {bottom} Pa, not about rho0 g depth");
}
