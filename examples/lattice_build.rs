//! Times the CPU half of building a large scene, no GPU needed: a box dam break (a block of water filling
//! the lower part of a tank) of about N particles is counted (`Scene::build`) and its particles generated
//! chunk by chunk with their first pressures (`SceneSetup::for_each_chunk`), as the simulation's upload
//! receives them, but dropped instead of written to a GPU.
//!
//! `cargo run --release --example lattice_build -- [N]...` (N like 50M, 100M; default 50M).

use std::time::Instant;
use waterview::scene::Scene;
use waterview::sim::initial::Hydrostatic;
use waterview::sim::SimParams;

fn main() -> anyhow::Result<()> {
    let counts: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| waterview::cli::parse_count(&a).map_err(anyhow::Error::msg))
        .collect::<Result<_, _>>()?;
    for n in if counts.is_empty() { vec![50_000_000] } else { counts } {
        // A 4 x 1 x 2 m block in a 6 x 2 x 2 m tank; dx from the block's volume over n.
        let dx = (8.0 / n as f64).cbrt() as f32;
        let text = format!(
            "(name: \"box\", domain: (min: (0.0, 0.0, 0.0), max: (6.0, 2.0, 2.0)),
             fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (4.0, 1.0, 2.0))],
             camera: (target: (3.0, 0.5, 1.0), distance: 8.0, yaw_deg: 0.0, pitch_deg: 25.0),
             solver: (dx: {dx}))"
        );
        let scene = Scene::from_str(&text, std::path::Path::new("box.ron"))?;
        let t = Instant::now();
        let setup = scene.build(false)?;
        let counted = t.elapsed().as_secs_f64();
        let bounds = setup.bounds();
        let bounded = t.elapsed().as_secs_f64() - counted;
        let params = SimParams { dx, ..scene.solver.clone() };
        let (mut chunks, mut max_pressure) = (0u64, 0f32);
        let t = Instant::now();
        let r: Result<(), std::convert::Infallible> = setup.for_each_chunk(&Hydrostatic::new(&params), |_, _, vel| {
            chunks += 1;
            max_pressure = vel.iter().fold(max_pressure, |m, v| m.max(v[3]));
            Ok(())
        });
        r.ok();
        let generated = t.elapsed().as_secs_f64();
        println!(
            "{} particles (dx = {dx} m): counted in {counted:.3} s, bounds {bounds:?} in {bounded:.3} s, generated \
             in {chunks} chunks in {generated:.2} s ({:.1} M particles/s; deepest pressure {max_pressure} Pa); \
             {} threads",
            setup.len(),
            setup.len() as f64 / generated / 1e6,
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
    }
    Ok(())
}
