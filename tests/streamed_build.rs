//! The streamed build (issue 16): a scene's particles are counted and handed out in chunks, never laid
//! out whole, and the simulation keeps its initial state on the GPU. Checked here against the list the
//! builder made before (every lattice point pushed in order, then the fluid files', with the first
//! pressure over the whole list), bit for bit, on the CPU and after the upload (GPU read-back); a reset
//! after stepping restores the initial state exactly; scenes past the memory guards are refused at once.

mod common;

use glam::Vec3;
use std::path::PathBuf;
use std::time::Instant;
use waterview::engine::{BuildOptions, Engine, EngineError};
use waterview::particle_io::{self, ParticleFormat, Particles};
use waterview::scene::{Emitter, Scene};
use waterview::sim::initial::Hydrostatic;
use waterview::sim::{SimOptions, SimParams, Simulation};

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waterview_streamed_{}_{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The builder as a list of every particle, the reference: blocks point by point (z, y, x), their side
/// faces moved onto a side wall closer than the support and their points kept dx / 2 from the terrain's
/// tangent plane, then each fluid file's particles moved by their offset.
fn old_build(scene: &Scene, on_cpu: bool) -> (Vec<Vec3>, Vec<Vec3>) {
    let terrain = scene.build(on_cpu).expect("builds").terrain;
    let dx = scene.effective_dx(on_cpu);
    let count = |len: f32| {
        let n = (len as f64 / dx as f64 + 1e-4).floor();
        if n.is_finite() && n > 0.0 {
            n.min(u32::MAX as f64) as u64
        } else {
            0
        }
    };
    let d = &scene.domain;
    let eps = 1e-4 * dx;
    let mut lo = Vec3::from(d.min) + (0.5 * dx - eps);
    if let Some(w) = &scene.solver.wave_maker {
        lo[w.axis.index()] += w.rest;
    }
    let hi = Vec3::from(d.max) - (0.5 * dx - eps);
    let (mut positions, mut velocities) = (Vec::new(), Vec::new());
    let support = 2.0 * scene.solver.h_over_dx * dx;
    for b in &scene.fluid_blocks {
        let mut n = [0, 1, 2].map(|a| count(b.max[a] - b.min[a]));
        let mut min = Vec3::from(b.min);
        // Side faces closer to a side wall than the support reach the wall (but not a paddle's).
        for a in [0, 2] {
            let layers = |gap: f32| if gap > 0.0 && gap < support { (gap / dx + 1e-4).floor() as u64 } else { 0 };
            n[a] += layers(d.max[a] - (min[a] + n[a] as f32 * dx));
            if scene.solver.wave_maker.map(|w| w.axis.index()) != Some(a) {
                let low = layers(min[a] - d.min[a]);
                min[a] -= low as f32 * dx;
                n[a] += low;
            }
        }
        for iz in 0..n[2] {
            for iy in 0..n[1] {
                for ix in 0..n[0] {
                    let p = min + (Vec3::new(ix as f32, iy as f32, iz as f32) + 0.5) * dx;
                    let inside = p.cmpge(lo).all() && p.cmple(hi).all();
                    // dx / 2 from the terrain's tangent plane under the point's column.
                    let column = min + (Vec3::new(ix as f32, 0.0, iz as f32) + 0.5) * dx;
                    let (height, slope) = terrain.height_and_slope_at(column.x, column.z);
                    if inside && p.y >= height + 0.5 * dx * (1.0 + slope.length_squared()).sqrt() - eps {
                        positions.push(p);
                        velocities.push(Vec3::from(b.velocity));
                    }
                }
            }
        }
    }
    for f in &scene.fluid_files {
        let file = particle_io::read(&scene.base_dir.join(&f.path)).expect("fluid file reads");
        positions.extend(file.positions.iter().map(|p| Vec3::from(*p) + Vec3::from(f.offset)));
        velocities.extend(file.velocities.iter().map(|v| Vec3::from(*v)));
    }
    (positions, velocities)
}

/// The first pressure of every particle of the list, walked particle by particle: rho0 g min(depth below
/// its bin's top, distance to the nearest free face), a face being the first bin along +-x or +-z (a
/// quarter dx either way, for columns rounded into a neighbouring bin) whose water and terrain stay below
/// the particle, inside the domain (a listed particle walks from its bin's first particle).
fn first_pressure(positions: &[Vec3], params: &SimParams, scene: &Scene, on_cpu: bool) -> Vec<f32> {
    let first = Hydrostatic::new(params);
    if !first.on() {
        return vec![0.0; positions.len()];
    }
    let terrain = scene.build(on_cpu).expect("builds").terrain;
    let dx = first.dx;
    let (eps, d) = (1e-4 * dx, &scene.domain);
    let (mut lo, hi) = (Vec3::from(d.min) + (0.5 * dx - eps), Vec3::from(d.max) - (0.5 * dx - eps));
    if let Some(w) = &scene.solver.wave_maker {
        // The paddle at its rest position is a wall.
        lo[w.axis.index()] += w.rest;
    }
    let mut tops: std::collections::HashMap<(i64, i64), f32> = Default::default();
    let mut starts: std::collections::HashMap<(i64, i64), glam::Vec2> = Default::default();
    for p in positions {
        let t = tops.entry(first.bin(p.x, p.z)).or_insert(f32::MIN);
        *t = t.max(p.y);
        starts.entry(first.bin(p.x, p.z)).or_insert(glam::Vec2::new(p.x, p.z));
    }
    let half = 0.5 * dx;
    let support = |q: glam::Vec2, along: glam::Vec2| -> f32 {
        if q.x < lo.x - half || q.x > hi.x + half || q.y < lo.z - half || q.y > hi.z + half {
            return f32::INFINITY;
        }
        let quarter = 0.25 * dx * along;
        let water = [q - quarter, q + quarter]
            .iter()
            .filter_map(|p| tops.get(&first.bin(p.x, p.y)))
            .fold(f32::NEG_INFINITY, |a, &t| a.max(t + half));
        water.max(terrain.height_at(q.x, q.y))
    };
    positions
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let bin = first.bin(p.x, p.z);
            let top = tops[&bin];
            let depth = top + half - p.y;
            if depth <= 0.0 {
                return 0.0;
            }
            // Lattice particles walk from their own column, listed ones from their bin's first.
            let start =
                if i < positions.len() - scene_listed(scene) { glam::Vec2::new(p.x, p.z) } else { starts[&bin] };
            let bins = (depth / dx).ceil() as usize;
            let mut free = f32::INFINITY;
            for e in [glam::Vec2::X, glam::Vec2::NEG_X, glam::Vec2::Y, glam::Vec2::NEG_Y] {
                let mut lowest = f32::INFINITY;
                for k in 1..=bins {
                    lowest = lowest.min(support(start + (k as f32 * dx) * e, e));
                    if lowest < p.y {
                        free = free.min((k as f32 - 0.5) * dx);
                        break;
                    }
                }
            }
            first.pressure_near_face(top, p.y, free)
        })
        .collect()
}

/// Particles of `scene`'s fluid files (after the blocks' in the list).
fn scene_listed(scene: &Scene) -> usize {
    scene
        .fluid_files
        .iter()
        .map(|f| particle_io::read(&scene.base_dir.join(&f.path)).expect("fluid file reads").positions.len())
        .sum()
}

/// The old arrays as the GPU holds them: positions with rho0, velocities with the first pressure.
fn old_arrays(scene: &Scene, on_cpu: bool) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
    let (positions, velocities) = old_build(scene, on_cpu);
    let params = SimParams { dx: scene.effective_dx(on_cpu), ..scene.solver.clone() };
    let pressure = first_pressure(&positions, &params, scene, on_cpu);
    (
        positions.iter().map(|p| [p.x, p.y, p.z, params.rho0]).collect(),
        velocities.iter().zip(pressure).map(|(v, p)| [v.x, v.y, v.z, p]).collect(),
    )
}

/// The streamed chunks of `scene`, gathered (CPU side of the upload).
fn streamed(scene: &Scene, on_cpu: bool) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
    let setup = scene.build(on_cpu).expect("builds");
    let params = SimParams { dx: scene.effective_dx(on_cpu), ..scene.solver.clone() };
    let mut out = (Vec::new(), Vec::new());
    let r: Result<(), ()> = setup.for_each_chunk(&Hydrostatic::new(&params), |offset, pos, vel| {
        assert_eq!(offset, out.0.len() as u64, "chunks come in order");
        out.0.extend_from_slice(pos);
        out.1.extend_from_slice(vel);
        Ok(())
    });
    r.expect("no error");
    assert_eq!(out.0.len() as u64, setup.len(), "the count is what is handed out");
    out
}

fn bits(a: &[[f32; 4]]) -> Vec<[u32; 4]> {
    a.iter().map(|v| v.map(f32::to_bits)).collect()
}

fn assert_same(name: &str, what: &str, got: &[[f32; 4]], want: &[[f32; 4]]) {
    assert_eq!(got.len(), want.len(), "{name}: {what} count");
    if let Some(i) = bits(got).iter().zip(bits(want)).position(|(a, b)| *a != b) {
        panic!("{name}: {what} of particle {i}: streamed {:?}, old {:?}", got[i], want[i]);
    }
}

/// Two blocks whose columns share bins at an offset of a fraction of dx (the upper one standing on the
/// lower), a third moving one, and a fluid file whose particles stand over the first block's columns.
fn mixed_scene() -> Scene {
    let dir = temp_dir("mixed");
    let cache = Particles {
        positions: vec![[0.11, 0.93, 0.12], [0.31, 0.97, 0.33], [0.81, 0.55, 0.21], [0.12, 0.6, 0.14]],
        velocities: vec![[0.0, -0.1, 0.0]; 4],
        densities: Vec::new(),
    };
    particle_io::write(&dir.join("drops.ply"), &cache, ParticleFormat::Ply, 0.0).expect("write PLY");
    let text = "(name: \"mixed\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
        fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.5, 0.5)),
                       (min: (0.213, 0.5, 0.137), max: (0.7, 0.8, 0.6)),
                       (min: (0.6, 0.0, 0.6), max: (0.93, 0.3, 0.9), velocity: (1.0, 0.0, -0.5))],
        fluid_files: [(path: \"drops.ply\")],
        camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
        solver: (dx: 0.0317), cpu_dx_scale: 1.0)";
    std::fs::write(dir.join("mixed.ron"), text).expect("write scene");
    Scene::load(&dir.join("mixed.ron")).expect("the scene loads")
}

/// Every built-in scene at the GPU's and the CPU adapter's spacing, and a scene of overlapping blocks
/// with a fluid file: the streamed particles are the old arrays, bit for bit (positions, velocities,
/// first pressures), in the same order.
#[test]
fn streamed_particles_equal_the_old_arrays() {
    let mut scenes: Vec<(Scene, bool)> = Vec::new();
    for name in ["valley", "dam_break", "wave_tank", "tank"] {
        let s = Scene::builtin(name).expect("built-in");
        scenes.push((s.clone(), true));
        scenes.push((s, false));
    }
    scenes.push((mixed_scene(), false));
    for (scene, on_cpu) in &scenes {
        let name = format!("{} ({})", scene.name, if *on_cpu { "CPU dx" } else { "GPU dx" });
        let t = Instant::now();
        let (pos, vel) = streamed(scene, *on_cpu);
        let streamed_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (old_pos, old_vel) = old_arrays(scene, *on_cpu);
        println!(
            "{name}: {} particles, streamed in {streamed_s:.3} s, old arrays {:.3} s",
            pos.len(),
            t.elapsed().as_secs_f64()
        );
        assert!(!pos.is_empty());
        assert_same(&name, "position", &pos, &old_pos);
        assert_same(&name, "velocity and first pressure", &vel, &old_vel);
        assert!(vel.iter().any(|v| v[3] > 0.0), "{name}: the water starts with pressure");
        // The grid's first box: bounds from the columns equal the list's.
        let setup = scene.build(*on_cpu).expect("builds");
        let (lo, hi) = setup.bounds().expect("bounds");
        let list_lo = old_pos.iter().fold(Vec3::INFINITY, |a, p| a.min(Vec3::new(p[0], p[1], p[2])));
        let list_hi = old_pos.iter().fold(Vec3::NEG_INFINITY, |a, p| a.max(Vec3::new(p[0], p[1], p[2])));
        assert_eq!((lo, hi), (list_lo, list_hi), "{name}: bounds");
    }
}

/// The upload: a simulation built from the streamed chunks holds the old arrays, read back from the
/// GPU before any step (the dam break, the valley and the mixed scene with its fluid file), the parked
/// pool after them.
#[test]
fn the_upload_holds_the_old_arrays() {
    let ctx = common::gpu();
    for scene in [Scene::builtin("dam_break").unwrap(), Scene::builtin("valley").unwrap(), mixed_scene()] {
        let on_cpu = ctx.is_cpu();
        let setup = scene.build(on_cpu).expect("builds");
        let params = SimParams { dx: scene.effective_dx(on_cpu), ..scene.solver.clone() };
        let options = SimOptions { pool: 5000, ..SimOptions::default() };
        let sim = Simulation::new_with(&ctx, &scene.domain, &setup, &params, options).expect("simulation builds");
        let (pos, vel) = sim.read_particles_blocking(&ctx);
        let (old_pos, old_vel) = old_arrays(&scene, on_cpu);
        let n = old_pos.len();
        println!("{}: {n} particles uploaded and read back, pool {}", scene.name, sim.pool());
        assert_eq!(sim.scene_particles() as usize, n);
        assert_same(&scene.name, "uploaded position", &pos[..n], &old_pos);
        assert_same(&scene.name, "uploaded velocity", &vel[..n], &old_vel);
        assert_eq!(pos.len(), n + 5000);
        assert!(pos[n..].iter().all(|p| p[3] < 0.0), "the pool is parked");
        assert!(vel[n..].iter().all(|v| *v == [0.0; 4]), "the pool is at rest");
    }
}

/// A reset after stepping restores the initial state exactly (copied from the GPU's initial buffers),
/// also after the pool was grown for an emitter (the new simulation copies the scene's part from the
/// old one's initial buffers).
#[test]
fn reset_after_stepping_restores_the_initial_state_exactly() {
    let ctx = common::gpu();
    let scene = Scene::builtin("dam_break").expect("dam break");
    let mut engine = common::engine(&ctx, &scene, None);
    let (pos0, vel0) = engine.sim().read_particles_blocking(&ctx);
    common::run_checked(&ctx, &mut engine, Some(3), None);
    let (moved, _) = engine.sim().read_particles_blocking(&ctx);
    assert_ne!(bits(&moved), bits(&pos0), "the steps moved the water");
    engine.reset(&ctx);
    let (pos1, vel1) = engine.sim().read_particles_blocking(&ctx);
    assert_same("reset", "position", &pos1, &pos0);
    assert_same("reset", "velocity", &vel1, &vel0);
    // Grow the pool for an emitter, step, reset: the scene's particles, then the parked pool.
    let n = engine.sim().scene_particles() as usize;
    let d = scene.domain;
    let dx = engine.params().dx;
    let emitter = Emitter {
        center: [0.5 * (d.min[0] + d.max[0]), 0.8 * d.max[1], 0.5 * (d.min[2] + d.max[2])],
        radius: 3.0 * dx,
        velocity: [0.0, -1.0, 0.0],
        rate: 0.5 * dx * dx,
    };
    engine.set_sources(&ctx, &[emitter], &[]).expect("emitter added");
    assert!(engine.sim().pool() > 0, "the pool grew");
    common::run_checked(&ctx, &mut engine, Some(3), None);
    engine.reset(&ctx);
    let (pos2, vel2) = engine.sim().read_particles_blocking(&ctx);
    assert_same("reset after the pool grew", "position", &pos2[..n], &pos0);
    assert_same("reset after the pool grew", "velocity", &vel2[..n], &vel0);
    assert!(pos2[n..].iter().all(|p| p[3] < 0.0), "the pool is parked again");
}

/// Scenes past the GPU's memory (as the adapter reports it, here given) are refused before anything is
/// built, with the count, the bytes and what fits; the simulation maps the same budget to its own error.
#[test]
fn scenes_past_the_gpu_memory_are_refused_at_once() {
    let ctx = common::gpu();
    let scene = Scene::builtin("dam_break").expect("dam break");
    let sim = SimOptions { memory: Some(1 << 20), ..SimOptions::default() };
    let t = Instant::now();
    let e = Engine::new(&ctx, scene.clone(), BuildOptions { sim, ..BuildOptions::default() }).err().expect("refused");
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let msg = e.to_string();
    println!("{msg} ({ms:.1} ms)");
    assert!(matches!(e, EngineError::GpuMemory { .. }), "{e:?}");
    assert!(
        msg.contains("dam_break") && msg.contains("of GPU memory") && msg.contains("the 1.0 MiB this GPU has"),
        "{msg}"
    );
    assert!(msg.contains("212 bytes per particle") && msg.contains("about 4931 particles fit"), "{msg}");
    assert!(ms < 2000.0, "refused in {ms} ms");
    // The simulation's own check (a caller that builds it directly).
    let setup = scene.build(ctx.is_cpu()).expect("builds");
    let params = SimParams { dx: scene.effective_dx(ctx.is_cpu()), ..scene.solver.clone() };
    let sim = SimOptions { memory: Some(1 << 18), ..SimOptions::default() };
    let e = Simulation::new_with(&ctx, &scene.domain, &setup, &params, sim).err().expect("refused");
    let msg = e.to_string();
    println!("{msg}");
    assert!(msg.contains(&format!("{} particles", setup.len())) && msg.contains("more than the 0.2 MiB"), "{msg}");
}
