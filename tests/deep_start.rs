//! Water at rest many particle layers deep starts at rest (DFSPH, lavapipe): a thin slab of the resting
//! tank, 105 layers at dx = 5.7 mm (the layer count of the dam break at dx = 0.0057 m, whose column threw
//! droplets off its top at 1080p on the H200). The start-up kick grows with the number of layers, not
//! with the particle count, so 16 x 4 columns show it: before the time step's pressure bound applied to
//! DFSPH (shaders/sim/time_step.wgsl, docs/validation.md "Depth in layers") the tank's floor corners were
//! crushed to 1.37-1.69 rho0 within the first 4 ms and the water reached 3-12 m/s by t = 0.02 s.
mod common;

use std::path::Path;
use waterview::scene::Scene;

/// Spacing, metres, and the water's layers, columns along x and along z.
const DX: f32 = 0.0057;
const LAYERS: u32 = 105;
const NX: u32 = 16;
const NZ: u32 = 4;

/// A resting tank NX x LAYERS x NZ particles deep, its walls dx/2 from the outer particles (the width a
/// thousandth of a spacing more than the lattice, so rounding never drops a column), 1.6 times as high as
/// the water.
fn deep_tank() -> Scene {
    let w = |n: u32| (n as f32 + 1e-3) * DX;
    let (x, y, z) = (w(NX), LAYERS as f32 * DX, w(NZ));
    let text = format!(
        "(name: \"deep tank\", domain: (min: (0.0, 0.0, 0.0), max: ({x}, {top}, {z})), terrain: None,
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: ({x}, {y}, {z}))],
          camera: (target: (0.0, 0.3, 0.0), distance: 2.0, yaw_deg: 0.0, pitch_deg: 10.0),
          solver: (dx: {DX}), cpu_dx_scale: 1.0)",
        top = 1.6 * y
    );
    Scene::from_str(&text, Path::new("deep_tank.ron")).expect("the deep tank parses")
}

#[test]
fn a_column_105_layers_deep_starts_at_rest() {
    let ctx = common::gpu();
    let scene = deep_tank();
    let mut engine = common::engine(&ctx, &scene, Some(DX));
    assert_eq!(engine.live_particles(), NX * LAYERS * NZ, "the lattice fills the tank");
    let all = common::run_checked(&ctx, &mut engine, None, Some(0.04));
    let height = LAYERS as f32 * DX;
    // The speed the column's top would reach falling its own height, sqrt(2 g H) = 3.43 m/s: a collapse's
    // speed. Water at rest may jitter (0.3-0.9 m/s measured at the floor corners while the first layer
    // settles onto the boundary), never approach it.
    let collapse = (2.0 * 9.81 * height).sqrt();
    for s in &all {
        println!(
            "t = {:.4} s: dt {:.5} s, max speed {:.3} m/s, max density error {:.4}, kinetic energy {:.4} J, top {:.4} m",
            s.time, s.dt, s.max_speed, s.max_density_error, s.kinetic_energy, s.bbox_max[1]
        );
        assert!(
            s.max_speed < 0.5 * collapse,
            "t = {} s: {} m/s >= sqrt(2 g H) / 2 = {}",
            s.time,
            s.max_speed,
            0.5 * collapse
        );
        assert!(s.max_density_error < 0.1, "t = {} s: a particle compressed by {}", s.time, s.max_density_error);
        // Nothing thrown above the water's surface (its top particle starts dx/2 below it).
        assert!(
            s.bbox_max[1] <= height + DX,
            "t = {} s: a particle at y = {} m, above {}",
            s.time,
            s.bbox_max[1],
            height
        );
    }
}
