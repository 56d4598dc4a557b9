//! The engine every front end builds and rebuilds through (src/engine), on the GPU (lavapipe in CI):
//! emitters and sinks work from every path the window offers, not only from the scene file. An emitter
//! added to a running scene that was built without one grows the pool and keeps the water; a rebuild at
//! another dx keeps the sources; Reset keeps them and restarts the water; a sink added live removes water;
//! the live count follows; a parameter change applies live or by a rebuild by the one rule.
mod common;

use waterview::engine::{Applied, Engine};
use waterview::gpu::GpuContext;
use waterview::scene::{Emitter, Scene, Sink};
use waterview::sim::{SimParams, SimStats};

/// A 1 m box with a 0.1 m layer of still water, dx = 0.05 m everywhere (no CPU scaling): 2 000 particles.
fn basin() -> Scene {
    let text = "(name: \"basin\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.1, 1.0))],
          camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.05), cpu_dx_scale: 1.0)";
    Scene::from_str(text, std::path::Path::new("basin.ron")).expect("test scene parses")
}

fn fountain(rate: f32) -> Emitter {
    Emitter { center: [0.5, 0.8, 0.5], radius: 0.15, velocity: [0.0, -1.0, 0.0], rate }
}

/// Runs `frames` frames; asserts nothing leaked or blew up; returns the statistics.
fn frames(ctx: &GpuContext, engine: &mut Engine, frames: u64) -> Vec<SimStats> {
    let all = common::run_checked(ctx, engine, Some(frames), None);
    assert_eq!(engine.live_particles(), all.last().expect("statistics came back").particle_count);
    all
}

#[test]
fn an_emitter_added_live_grows_the_pool_and_keeps_the_water() {
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &basin(), None);
    let built = engine.live_particles();
    assert_eq!(engine.sim().pool(), 0, "a scene without emitters pays for no pool");
    let before = frames(&ctx, &mut engine, 10);
    let time = before.last().unwrap().time;
    let (pos, _) = engine.sim().read_particles_blocking(&ctx);

    // "Add emitter" in the Scene panel: the pool grows, the running water is carried over.
    engine.set_sources(&ctx, &[fountain(0.05)], &[]).expect("the emitter is taken");
    assert!(engine.sim().pool() > 0, "a pool was made");
    assert_eq!(engine.scene().emitters.len(), 1, "the scene (saved with it) holds the emitter");
    let (carried, _) = engine.sim().read_particles_blocking(&ctx);
    assert_eq!(&carried[..pos.len()], &pos[..], "the particles are carried over bit for bit");
    let after = frames(&ctx, &mut engine, 30);
    assert!(after.last().unwrap().time > time + 0.1, "the clock goes on ({} after {time})", after.last().unwrap().time);
    let last = after.last().unwrap();
    println!("basin: {built} particles built, {} after 30 frames with the emitter", last.particle_count);
    assert!(last.particle_count > built + 100, "the emitter added {} particles", last.particle_count - built);

    // A higher rate needs a larger pool: it grows again, keeping the water.
    let pool = engine.sim().pool();
    engine.set_sources(&ctx, &[fountain(0.5)], &[]).expect("the faster emitter is taken");
    assert!(engine.sim().pool() > pool, "the pool grew for the higher rate");
    let more = frames(&ctx, &mut engine, 5);
    assert!(more.last().unwrap().particle_count >= last.particle_count, "no water lost in the regrowth");

    // A bad emitter is refused and changes nothing.
    let bad = Emitter { radius: -1.0, ..fountain(0.05) };
    assert!(engine.set_sources(&ctx, &[bad], &[]).is_err());
    assert_eq!(engine.scene().emitters[0].rate, 0.5, "the refused emitter did not replace the running one");
}

#[test]
fn reset_and_rebuild_keep_the_sources() {
    let ctx = common::gpu();
    let mut scene = basin();
    scene.emitters = vec![fountain(0.05)];
    let mut engine = common::engine(&ctx, &scene, None);
    let built = engine.live_particles();
    let ran = frames(&ctx, &mut engine, 20);
    assert!(ran.last().unwrap().particle_count > built, "the scene's emitter runs");

    // Reset: the water restarts from the scene's, the emitter stays.
    engine.reset(&ctx);
    assert_eq!(engine.live_particles(), built, "after a reset the live count is the scene's again");
    let again = frames(&ctx, &mut engine, 20);
    assert!(again[0].time < ran.last().unwrap().time, "the clock restarted");
    assert!(again.last().unwrap().particle_count > built, "the emitter runs after the reset");

    // Rebuild at another dx (the rule: dx needs new buffers): sources kept, emitter runs at the new spacing.
    let params = SimParams { dx: 0.04, ..engine.params().clone() };
    assert_eq!(engine.set_params(&ctx, &params).expect("rebuilds"), Applied::Rebuilt);
    assert_eq!(engine.params().dx, 0.04);
    let rebuilt = engine.live_particles();
    assert!(rebuilt > built, "a finer spacing has more particles ({rebuilt} vs {built})");
    assert_eq!(engine.scene().emitters.len(), 1);
    let after = frames(&ctx, &mut engine, 20);
    assert!(after.last().unwrap().particle_count > rebuilt, "the emitter runs after the rebuild");

    // A live parameter applies without a rebuild and shows in the scene that would be saved.
    let params = SimParams { viscosity: 0.001, ..engine.params().clone() };
    assert_eq!(engine.set_params(&ctx, &params).expect("applies"), Applied::Live);
    assert_eq!(engine.scene().solver.viscosity, 0.001);
    assert_eq!(engine.scene().solver.dx, 0.04, "the scene keeps its rebuilt spacing");
}

#[test]
fn a_sink_added_live_removes_water_and_the_live_count_follows() {
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &basin(), None);
    let built = engine.live_particles();
    frames(&ctx, &mut engine, 3);
    engine.set_sources(&ctx, &[], &[Sink { min: [0.0, 0.0, 0.0], max: [0.5, 1.0, 1.0] }]).expect("the sink is taken");
    assert_eq!(engine.sim().pool(), 0, "a sink needs no pool");
    let after = frames(&ctx, &mut engine, 5);
    let left = after.last().unwrap().particle_count;
    println!("basin: {built} particles, {left} after a sink over half of it");
    assert!(left < built * 6 / 10, "the half inside the sink is removed ({left} of {built} left)");
    assert_eq!(engine.live_particles(), left);
}

#[test]
fn a_bad_emitter_set_live_is_refused_and_the_running_sources_go_on() {
    let ctx = common::gpu();
    let mut scene = basin();
    scene.emitters = vec![fountain(0.05)];
    let mut engine = common::engine(&ctx, &scene, None);
    let ran = frames(&ctx, &mut engine, 10);
    let (pool, count) = (engine.sim().pool(), ran.last().unwrap().particle_count);
    // The Scene panel's edits, each refused with the file, the emitter and the field named.
    let wide = Emitter { radius: 100.0, ..fountain(0.05) };
    let cases: [(&[Emitter], &[Sink], &str); 5] = [
        (&[fountain(0.05), Emitter { rate: f32::INFINITY, ..fountain(0.05) }], &[], "emitter 2: `rate` = inf"),
        (&[Emitter { center: [0.5, f32::NAN, 0.5], ..fountain(0.05) }], &[], "emitter 1: `center`"),
        (&[wide], &[], "emitter 1: `radius` = 100"),
        (&[Emitter { velocity: [0.0, -1e30, 0.0], ..fountain(0.05) }], &[], "emitter 1: `velocity`"),
        (&[], &[Sink { min: [2.0, 0.0, 0.0], max: [3.0, 1.0, 1.0] }], "sink 1: `min` = (2, 0, 0)"),
    ];
    for (emitters, sinks, says) in cases {
        let e = engine.set_sources(&ctx, emitters, sinks).expect_err(says).to_string();
        println!("{e}");
        assert!(e.starts_with("scene basin.ron: ") && e.contains(says), "{e}");
    }
    assert_eq!(engine.scene().emitters, vec![fountain(0.05)], "the scene keeps its emitter");
    assert!(engine.scene().sinks.is_empty());
    assert_eq!(engine.sim().pool(), pool, "no pool was grown for a refused emitter");
    let after = frames(&ctx, &mut engine, 20);
    assert!(after.last().unwrap().particle_count > count, "the running emitter goes on emitting");
}
