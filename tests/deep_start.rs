//! Water many particle layers deep starts without a kick (DFSPH, lavapipe): thin slabs of the resting
//! tank and of the dam break, 105 layers at dx = 5.7 mm (the layer count of the dam break at dx = 0.0057
//! m, whose column threw droplets off its top at 1080p on the H200). The start-up kick grows with the
//! number of layers, not with the particle count, so 16 x 4 columns show it: before the time step's
//! pressure bound applied to DFSPH (shaders/sim/time_step.wgsl, docs/validation.md "Depth in layers") the
//! tank's floor corners were crushed to 1.55 rho0 in the first frame (15 ms) and the water reached 3 m/s
//! there, 12 m/s by t = 0.02 s in the 52-column slab.
mod common;

use std::path::Path;
use waterview::scene::Scene;

/// Spacing, metres, and the water's layers, columns along x and along z.
const DX: f32 = 0.0057;
const LAYERS: u32 = 105;
const NX: u32 = 16;
const NZ: u32 = 4;

/// A block of NX x LAYERS x NZ particles against the walls at x = 0, z = 0 and z = max, dx/2 from its outer
/// particles (the block a thousandth of a spacing wider than the lattice, so rounding never drops a
/// column), in a box `headroom` times as high as the water and `length` metres long (the block's own
/// length: a resting tank; longer: a dam break).
fn deep_block(name: &str, length: Option<f32>, headroom: f32) -> Scene {
    let w = |n: u32| (n as f32 + 1e-3) * DX;
    let (x, y, z) = (w(NX), LAYERS as f32 * DX, w(NZ));
    let text = format!(
        "(name: \"{name}\", domain: (min: (0.0, 0.0, 0.0), max: ({length}, {top}, {z})), terrain: None,
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: ({x}, {y}, {z}))],
          camera: (target: (0.0, 0.3, 0.0), distance: 2.0, yaw_deg: 0.0, pitch_deg: 10.0),
          solver: (dx: {DX}), cpu_dx_scale: 1.0)",
        top = headroom * y,
        length = length.unwrap_or(x)
    );
    Scene::from_str(&text, Path::new("deep_block.ron")).expect("the deep block parses")
}

/// Runs `scene` for `seconds` and returns its frames' statistics, printed.
fn run(scene: &Scene, seconds: f32) -> Vec<waterview::sim::SimStats> {
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, scene, Some(DX));
    assert_eq!(engine.live_particles(), NX * LAYERS * NZ, "the lattice fills the block");
    let all = common::run_checked(&ctx, &mut engine, None, Some(seconds));
    for s in &all {
        println!(
            "t = {:.4} s: dt {:.5} s, max speed {:.3} m/s, max density error {:.4}, kinetic energy {:.4} J, top {:.4} m",
            s.time, s.dt, s.max_speed, s.max_density_error, s.kinetic_energy, s.bbox_max[1]
        );
    }
    all
}

#[test]
fn a_column_105_layers_deep_starts_without_a_kick() {
    let all = run(&deep_block("deep tank", None, 1.6), 0.04);
    let height = LAYERS as f32 * DX;
    // The speed the column's top would reach falling its own height, sqrt(2 g H) = 3.43 m/s: a collapse's
    // speed. The resting water still moves while its first layer settles onto the boundary (0.26-0.61 m/s
    // in two runs to t = 0.048 s), but never approaches it; the kick reached 3.0 m/s in the first frame.
    let collapse = (2.0 * 9.81 * height).sqrt();
    for s in &all {
        assert!(
            s.max_speed < 0.5 * collapse,
            "t = {} s: {} m/s >= sqrt(2 g H) / 2 = {}",
            s.time,
            s.max_speed,
            0.5 * collapse
        );
        assert_held_together(s, height);
    }
}

/// No particle compressed by 10 % or more, none thrown above the water's surface (its top particle starts
/// dx/2 below `height`, m).
fn assert_held_together(s: &waterview::sim::SimStats, height: f32) {
    assert!(s.max_density_error < 0.1, "t = {} s: a particle compressed by {}", s.time, s.max_density_error);
    assert!(s.bbox_max[1] <= height + DX, "t = {} s: a particle at y = {} m, above {}", s.time, s.bbox_max[1], height);
}

#[test]
fn a_dam_105_layers_high_collapses_without_a_kick() {
    // The column 16 spacings long in a 0.4 m box: its face at x = 0.091 m is open from t = 0.
    let all = run(&deep_block("deep dam", Some(0.4), 1.6), 0.03);
    let height = LAYERS as f32 * DX;
    // In 0.03 s a collapsing column's face has barely moved (g t^2 / 2 = 4 mm): only its foot, where the
    // open face meets the floor, is pushed out by the whole hydrostatic pressure, at about 900 m/s^2 in the
    // first step (the continuum's corner singularity, sampled at dx; the first pressure is hydrostatic up
    // to the face). That impulse is the first step's: 0.88 m/s after a step of 1.0 ms, which it keeps; the
    // unbounded 4.2 ms step before the pressure bound gave 2.35 m/s (and a first frame of 8 ms, 2.4 m/s).
    // Bound: 1.5 m/s, 0.44 sqrt(2 g H).
    for s in &all {
        assert!(s.max_speed < 1.5, "t = {} s: {} m/s", s.time, s.max_speed);
        assert_held_together(s, height);
    }
}

/// The pressure bound takes the water's height, not the domain's: the same resting column in a box five
/// times as high steps at sqrt(0.2) h / sqrt(g H) for its own H (1.26 ms) once its top is known (after the
/// first step), not at the 0.56 ms the box's height gives, and stays as calm as above.
#[test]
fn the_pressure_bound_follows_the_water_not_the_box() {
    let headroom = 5.0;
    let all = run(&deep_block("deep tank, tall box", None, headroom), 0.04);
    let height = LAYERS as f32 * DX;
    let h = 1.2 * DX;
    let bound = |depth: f32| waterview::sim::PRESSURE_SQRT_N * h / (9.81 * depth).sqrt();
    let (water, box_) = (bound(height), bound(headroom * height));
    // (The last record's step lands on the time asked for, so it may be shorter.)
    for s in all.iter().skip(1).take(all.len().saturating_sub(2)) {
        assert!(s.dt > 1.5 * box_, "t = {} s: dt {} s, the box's bound is {box_} s", s.time, s.dt);
        // (The top particle sits up to a spacing below the block's top: a bound up to 0.5 % longer.)
        assert!(s.dt <= 1.01 * water, "t = {} s: dt {} s past the water's bound {water} s", s.time, s.dt);
        assert!(s.max_speed < 0.5 * (2.0 * 9.81 * height).sqrt(), "t = {} s: {} m/s", s.time, s.max_speed);
        assert!(s.max_density_error < 0.1, "t = {} s: compressed by {}", s.time, s.max_density_error);
    }
}
