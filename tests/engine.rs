//! The engine every front end builds and rebuilds through (src/engine), on the GPU (lavapipe in CI):
//! emitters and sinks work from every path the window offers, not only from the scene file. An emitter
//! added to a running scene that was built without one grows the pool and keeps the water; a rebuild at
//! another dx keeps the sources; Reset keeps them and restarts the water; a sink added live removes water;
//! the live count follows; a parameter change applies live or by a rebuild by the one rule. Sources edited
//! live are checked as a scene file's (refused naming the file, the item and the field; the running ones
//! stay), and the emitters' pool counts toward the GPU's particle limit, checked before anything is built.
mod common;

use waterview::engine::{self, Applied, BuildOptions, Engine, EngineError};
use waterview::gpu::GpuContext;
use waterview::scene::{Emitter, Scene, Sink};
use waterview::sim::{sources, SimOptions, SimParams, SimStats};

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

    // A higher rate needs a larger pool: it grows again, keeping the water (0.065 m^3/s: within the 0.0707
    // m^3/s the disc carries at 1 m/s).
    let pool = engine.sim().pool();
    engine.set_sources(&ctx, &[fountain(0.065)], &[]).expect("the faster emitter is taken");
    assert!(engine.sim().pool() > pool, "the pool grew for the higher rate");
    let more = frames(&ctx, &mut engine, 5);
    assert!(more.last().unwrap().particle_count >= last.particle_count, "no water lost in the regrowth");

    // A bad emitter is refused and changes nothing.
    let bad = Emitter { radius: -1.0, ..fountain(0.05) };
    assert!(engine.set_sources(&ctx, &[bad], &[]).is_err());
    assert_eq!(engine.scene().emitters[0].rate, 0.065, "the refused emitter did not replace the running one");
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

/// The emitters' pool counts toward the GPU's particle limit, checked from the estimate before anything
/// is built: blocks of half a pool under the limit fit alone and are refused with a full pool beside them.
#[test]
fn the_emitters_pool_counts_toward_the_gpus_limit_before_building() {
    let ctx = common::gpu();
    let limit = engine::particle_limit(&ctx).max;
    // 100 x ny x 100 lattice points at dx = 0.01 m, ny chosen for limit - MAX_POOL / 2 points (no particle
    // is laid out, whatever the limit).
    let ny = (limit - sources::MAX_POOL as u64 / 2) / 10_000;
    let height = ny as f32 * 0.01;
    let text = format!(
        "(name: \"tall\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, {top}, 1.0)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, {height}, 1.0))],
          camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.01), cpu_dx_scale: 1.0,
          emitters: [(center: (0.5, {top}, 0.5), radius: 0.5, velocity: (0.0, -2.0, 0.0), rate: 1.0)])",
        top = height + 0.5
    );
    let scene = Scene::from_str(&text, std::path::Path::new("tall.ron")).expect("test scene parses");
    let estimate = scene.estimate_particle_count_at(0.01);
    assert_eq!(estimate, ny * 10_000);
    assert_eq!(sources::pool_size(&scene.emitters, 0.01), sources::MAX_POOL, "one m^3/s fills the largest pool");
    engine::check_fits(&ctx, &scene, false, 0, &SimOptions::default()).expect("the blocks alone fit");
    let started = std::time::Instant::now();
    let e =
        Engine::new(&ctx, scene.clone(), BuildOptions::default()).err().expect("blocks and pool are past the limit");
    let took = started.elapsed().as_secs_f64();
    println!("{estimate} + {} particles refused in {took:.3} s: {e}", sources::MAX_POOL);
    assert!(matches!(e, EngineError::TooManyParticles { pool, .. } if pool == sources::MAX_POOL as u64), "{e:?}");
    let says =
        format!("scene tall.ron: the fluid blocks hold up to {estimate} particles at dx = 0.01 m plus a pool of");
    assert!(e.to_string().starts_with(&says), "{e}");
    assert!(took < 3.0, "refused from the estimate, not after building ({took:.1} s)");
    // The spacing the message offers fits, blocks and pool.
    let EngineError::TooManyParticles { fit: Some(fit), .. } = e else { panic!("no spacing offered: {e}") };
    engine::check_fits(&ctx, &scene.at_dx(fit), true, 0, &SimOptions::default()).expect("the offered spacing fits");
}

/// Past the split renderer's and simulation's arrays (4 and 3 chunks on lavapipe: 33.5 M and 25 M
/// particles), the simulation's buffers that stay in one binding (the grid's table on lavapipe, the diffuse
/// pool on wgpu's Vulkan) bound the engine, and a scene past them is refused from its estimate before its
/// particles are laid out, naming that buffer; with options that need less of them it fits.
#[test]
fn the_simulations_one_binding_buffers_bound_the_engine_before_building() {
    let ctx = common::gpu();
    let limit = engine::particle_limit(&ctx);
    let render = engine::render_limit(&ctx).max;
    let split = waterview::sim::Simulation::particle_limit(&ctx).max;
    println!("engine {} ({}), renderer {render}, split simulation {split}", limit.max, limit.why);
    assert!(limit.max < split.min(render), "{} is the split arrays' limit", limit.max);
    // 100 x ny x 100 lattice points at dx = 0.01 m, 0.5 M past the limit.
    let ny = (limit.max + 500_000) / 10_000;
    let text = format!(
        "(name: \"tall\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, {top}, 1.0)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, {height}, 1.0))],
          camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.01), cpu_dx_scale: 1.0)",
        height = ny as f32 * 0.01,
        top = ny as f32 * 0.01 + 0.5
    );
    let scene = Scene::from_str(&text, std::path::Path::new("tall.ron")).expect("test scene parses");
    let estimate = scene.estimate_particle_count_at(0.01);
    assert!(estimate > limit.max && estimate < split.min(render), "{estimate} between the limits");
    let started = std::time::Instant::now();
    let e = Engine::new(&ctx, scene.clone(), BuildOptions::default()).err().expect("past the limit");
    let took = started.elapsed().as_secs_f64();
    println!("{estimate} particles refused in {took:.3} s: {e}");
    assert!(matches!(e, EngineError::TooManyParticles { .. }), "{e:?}");
    let says = format!("more than this GPU can simulate: {} at most ({})", limit.max, limit.why);
    assert!(e.to_string().contains(&says), "{e}");
    assert!(took < 3.0, "refused from the estimate, not after building ({took:.1} s)");
    // No diffuse pool and one cell per particle: the same scene fits the check.
    let lean = SimOptions { diffuse_pool: 0.0, cells_per_particle: 1.0, ..SimOptions::default() };
    engine::check_fits(&ctx, &scene, false, 0, &lean).expect("fits with leaner buffers");
}
