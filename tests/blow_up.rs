//! Non-finite state is found on the GPU and stops the run (lavapipe in CI): a particle whose velocity is
//! made NaN (no scene that passes validation is known to blow up, so the tests poison one) is counted in
//! the statistics; `run_frames` stops, the simulation names the frame and the likely cause, `run` exits
//! with that message and keeps the CSV up to it; Reset clears it and late records of before the reset are
//! not taken for a new blow-up.
mod common;

use waterview::cli::RunArgs;
use waterview::engine::batch::{poison_particle, run_frames};
use waterview::engine::Engine;
use waterview::gpu::{GpuContext, Profiler};
use waterview::scene::Scene;

/// A 1 m box with a 0.1 m layer of still water: a few hundred particles, nothing moves much.
fn basin() -> Scene {
    let text = "(name: \"basin\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.1, 1.0))],
          camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.05), cpu_dx_scale: 1.0)";
    Scene::from_str(text, std::path::Path::new("basin.ron")).expect("test scene parses")
}

/// Runs `frames` frames; returns how many statistics records came back.
fn run(ctx: &GpuContext, engine: &mut Engine, frames: u64) -> Vec<u32> {
    let mut profiler = Profiler::new(&ctx.device);
    let mut non_finite = Vec::new();
    run_frames(ctx, engine.sim_mut(), &mut profiler, Some(frames), None, |s| non_finite.push(s.non_finite));
    non_finite
}

#[test]
fn a_nan_particle_stops_the_run_with_its_frame_and_cause() {
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &basin(), None);
    let clean = run(&ctx, &mut engine, 5);
    assert!(clean.iter().all(|&n| n == 0) && engine.sim().blow_up().is_none(), "a clean start: {clean:?}");

    poison_particle(&ctx, &engine, 7);
    let records = run(&ctx, &mut engine, 200);
    let blow_up = engine.sim().blow_up().expect("the NaN particle was found").clone();
    println!("{blow_up}");
    assert!(records.len() < 50, "the run stopped at the blow-up, not after 200 frames ({} records)", records.len());
    assert!(blow_up.non_finite >= 1 && blow_up.particles == engine.live_particles(), "{blow_up:?}");
    assert!(blow_up.frame > 5, "the blow-up is after the clean frames: {blow_up:?}");
    let text = blow_up.to_string();
    assert!(text.contains(&format!("frame {}", blow_up.frame)) && text.contains("likely cause"), "{text}");

    // Reset: the state is the scene's again, the blow-up is cleared and stays so.
    engine.reset(&ctx);
    assert!(engine.sim().blow_up().is_none(), "reset clears the blow-up");
    let after = run(&ctx, &mut engine, 10);
    assert!(after.iter().all(|&n| n == 0), "no non-finite particle after the reset: {after:?}");
    assert!(engine.sim().blow_up().is_none(), "records of before the reset were not taken for a new blow-up");
}

#[test]
fn run_exits_with_the_blow_up_and_keeps_the_statistics_up_to_it() {
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &basin(), None);
    let dir = std::env::temp_dir().join(format!("waterview-blow-up-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let (csv, png) = (dir.join("stats.csv"), dir.join("final.png"));
    let args = RunArgs {
        steps: Some(600),
        seconds: None,
        out: Some(png.clone()),
        stats: Some(csv.clone()),
        size: (64, 48),
        dx: None,
        view: Default::default(),
        depth_filter: None,
        sun_elevation: None,
        no_water_shadow: false,
        no_wet_ground: false,
        resume: None,
        save_checkpoint: None,
        gpus: waterview::cluster::GpuCount::N(1),
        save_particles: None,
        save_surface: None,
        surface_settings: Default::default(),
    };
    poison_particle(&ctx, &engine, 0);
    let err = waterview::cli::run::simulate(&ctx, &mut engine, &args, &Default::default())
        .expect_err("a blown-up run is an error");
    let message = format!("{err:#}");
    assert!(message.contains("blew up at frame"), "{message}");
    let text = std::fs::read_to_string(&csv).expect("the CSV was written");
    let rows: Vec<&str> = text.lines().skip(1).collect();
    let non_finite = |row: &str| row.split(',').nth(16).and_then(|v| v.parse::<u32>().ok()).expect("non_finite");
    assert!(!rows.is_empty() && rows.len() < 100, "rows up to the blow-up only: {}", rows.len());
    assert!(non_finite(rows[rows.len() - 1]) >= 1, "the last row shows the non-finite particle");
    assert!(!png.exists(), "no image of a blown-up state");
    let _ = std::fs::remove_dir_all(&dir);
}
