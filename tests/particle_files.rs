//! Particle files out and in, on the GPU (lavapipe in CI).
//!
//! Out: the particle export the offline capture uses ([`ParticleExporter`], asynchronous read-back ring and
//! worker thread) writes one file per frame; frames lie exactly 1/fps apart (`advance_to`, as
//! `waterview capture` steps). Each PLY file is read back with `serde-ply`, a PLY reader of another project
//! than the writer's (`ply-rs-bw`), and holds exactly the simulation's live particles at that moment
//! (read back blocking from the same state), the emitters' parked ones left out, with the frame's time in
//! its header. `tests/check_ply.py` reads the files `waterview capture --particles` writes with Python's
//! `plyfile` the same way (not run here: CI has no Python packages).
//!
//! In: a scene whose water comes from a particle file builds exactly the file's particles plus its blocks'.
mod common;

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use waterview::capture::particles::{frame_path, ParticleExporter, ParticleOutput};
use waterview::engine::{BuildOptions, Engine};
use waterview::gpu::{GpuContext, Profiler};
use waterview::particle_io::{self, ParticleFormat, Particles};
use waterview::scene::Scene;
use waterview::sim::SimParams;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waterview-particles-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// A 1 m box with a 0.1 m layer of water and a fountain (so the pool holds parked particles),
/// dx = 0.05 m: 2 000 particles and a pool of 4 096.
const FOUNTAIN: &str = "(name: \"fountain\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.1, 1.0))],
    emitters: [(center: (0.5, 0.7, 0.5), radius: 0.15, velocity: (0.0, -1.0, 0.0), rate: 0.02)],
    camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
    solver: (dx: 0.05), cpu_dx_scale: 1.0)";

#[derive(Deserialize)]
struct Vertex {
    x: f32,
    y: f32,
    z: f32,
    vx: f32,
    vy: f32,
    vz: f32,
    density: f32,
}

#[derive(Deserialize)]
struct Cloud {
    vertex: Vec<Vertex>,
}

/// A PLY file as `serde-ply` reads it: its particles and the time in its `time_s` comment.
fn read_with_serde_ply(path: &Path) -> (Particles, f32) {
    let bytes = std::fs::read(path).expect("read PLY");
    let reader = serde_ply::PlyReader::from_reader(std::io::Cursor::new(&bytes)).expect("serde-ply parses the header");
    let header = reader.header();
    assert!(matches!(header.format, serde_ply::PlyFormat::BinaryLittleEndian), "{:?}", header.format);
    let time =
        header.comments.iter().find_map(|c| c.strip_prefix("time_s ")?.parse::<f32>().ok()).expect("a time_s comment");
    let cloud: Cloud = serde_ply::from_bytes(&bytes).expect("serde-ply reads the vertices");
    let mut p = Particles::default();
    for v in cloud.vertex {
        p.positions.push([v.x, v.y, v.z]);
        p.velocities.push([v.vx, v.vy, v.vz]);
        p.densities.push(v.density);
    }
    (p, time)
}

/// Exports `frames` frames at `fps` of the fountain through the exporter, as the capture does, and
/// returns the particles read back blocking at each frame (the expected files).
fn export(ctx: &GpuContext, dir: &Path, format: ParticleFormat, fps: f32, frames: u64) -> Vec<(Particles, f32)> {
    let scene = Scene::from_str(FOUNTAIN, Path::new("fountain.ron")).expect("scene");
    let mut engine = Engine::new(ctx, scene, BuildOptions::default()).expect("builds");
    let params = SimParams { frame_dt: 1.0 / fps, ..engine.params().clone() };
    engine.set_params(ctx, &params).expect("frame_dt");
    let mut profiler = Profiler::new(&ctx.device);
    let mut exporter = ParticleExporter::start(ParticleOutput { dir: dir.to_path_buf(), format }).expect("start");
    let mut expected = Vec::new();
    for k in 0..frames {
        while !exporter.can_record(engine.sim()) {
            let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
            assert!(exporter.poll().is_none(), "export failed");
        }
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        assert!(exporter.record(&mut enc, &ctx.device, engine.sim(), k), "frame {k} recorded");
        ctx.queue.submit([enc.finish()]);
        exporter.after_submit();
        let state = engine.sim().read_state_blocking(ctx).expect("state");
        expected.push((Particles::from_state(&state.positions, &state.velocities), state.step.time));
        engine.sim_mut().advance_to(ctx, &mut profiler, ((k + 1) as f64 / fps as f64) as f32).expect("advance");
        let _ = ctx.device.poll(wgpu::PollType::Poll);
        assert!(exporter.poll().map(|e| e.to_string()).is_none(), "export of frame {k} failed");
    }
    let summary = exporter.finish_blocking(&ctx.device).expect("all files written");
    assert_eq!(summary.frames.len() as u64, frames);
    let capacity = engine.sim().capacity() as usize;
    assert!(expected.iter().all(|(p, _)| p.len() < capacity), "parked particles are left out");
    expected
}

#[test]
fn exported_ply_frames_are_the_simulations_particles_one_frame_apart() {
    let ctx = common::gpu();
    let dir = scratch("ply");
    let fps = 10.0;
    let expected = export(&ctx, &dir, ParticleFormat::Ply, fps, 5);
    let mut counts = Vec::new();
    for (k, (want, want_time)) in expected.iter().enumerate() {
        let (got, time) = read_with_serde_ply(&frame_path(&dir, ParticleFormat::Ply, k as u64));
        assert_eq!(got.len(), want.len(), "frame {k}: particle count");
        assert!(got == *want, "frame {k}: the values differ from the simulation's");
        assert_eq!(time, *want_time, "frame {k}: the file's time is the state's");
        assert_eq!(time, (k as f64 / fps as f64) as f32, "frame {k} lies at exactly k / fps");
        counts.push(got.len());
    }
    println!("PLY frames at t = k/10 s with {counts:?} live particles");
    assert!(counts.last() > counts.first(), "the fountain added water between frames: {counts:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exported_vtu_frames_carry_the_same_particles_and_a_collection() {
    let ctx = common::gpu();
    let dir = scratch("vtu");
    let expected = export(&ctx, &dir, ParticleFormat::Vtu, 20.0, 3);
    for (k, (want, time)) in expected.iter().enumerate() {
        let path = frame_path(&dir, ParticleFormat::Vtu, k as u64);
        let got = particle_io::read(&path).expect("the VTU reads back");
        assert!(got == *want, "frame {k}: the values differ from the simulation's");
        let text = String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned();
        assert!(text.contains(&format!("format=\"ascii\">{time}</DataArray>")), "frame {k}: TimeValue {time}");
    }
    let pvd = std::fs::read_to_string(dir.join("particles.pvd")).expect("the collection is written");
    assert!(pvd.contains("timestep=\"0.05\" part=\"0\" file=\"particles_00001.vtu\""), "{pvd}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `waterview capture --particles DIR` without `--out`: only particle files, one per frame, each with its
/// frame's time; the PLY files hold the scene's water (no emitters: a constant count).
#[test]
fn the_capture_command_writes_particle_files_one_frame_apart() {
    let dir = scratch("cli");
    let scene = "(name: \"basin\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
        fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.3, 1.0))],
        camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
        solver: (dx: 0.05), cpu_dx_scale: 1.0)";
    std::fs::write(dir.join("basin.ron"), scene).expect("write scene");
    let out = Command::new(env!("CARGO_BIN_EXE_waterview"))
        .args(["--scene", "basin.ron", "capture", "--seconds", "0.3", "--fps", "10", "--particles", "frames"])
        .current_dir(&dir)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run waterview");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("3 particle files"), "{text}");
    let built = Scene::from_str(scene, Path::new("basin.ron")).unwrap().build(false).unwrap().len() as usize;
    for k in 0..3u64 {
        let (p, time) = read_with_serde_ply(&frame_path(&dir.join("frames"), ParticleFormat::Ply, k));
        assert_eq!(time, (k as f64 / 10.0) as f32, "file {k}'s time");
        assert_eq!(p.len(), built, "file {k} holds the scene's {built} particles");
        assert!(p.densities.iter().all(|d| *d > 0.0), "live particles only (parked ones have density < 0)");
    }
    assert!(!dir.join("frames/particles_00003.ply").exists(), "exactly 3 frames");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scene whose water is a particle file (moved by its offset) plus a block builds exactly those
/// particles, on the CPU and in the engine.
#[test]
fn a_scene_with_a_fluid_file_builds_exactly_its_particles_and_its_blocks() {
    let ctx = common::gpu();
    let dir = scratch("fluid-file");
    // 5 x 5 x 4 particles on a 0.05 m lattice, written as PLY, placed by the offset at x = 0.6.
    let mut cache = Particles::default();
    for i in 0..100 {
        let (x, y, z) = ((i % 5) as f32, ((i / 5) % 5) as f32, (i / 25) as f32);
        cache.positions.push([0.025 + 0.05 * x, 0.025 + 0.05 * y, 0.025 + 0.05 * z]);
        cache.velocities.push([0.0, -0.1, 0.0]);
    }
    particle_io::write(&dir.join("cache.ply"), &cache, ParticleFormat::Ply, 0.0).expect("write cache");
    let text = "(name: \"cached\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
        fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.1, 1.0))],
        fluid_files: [(path: \"cache.ply\", offset: (0.6, 0.0, 0.3))],
        camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
        solver: (dx: 0.05), cpu_dx_scale: 1.0)";
    std::fs::write(dir.join("cached.ron"), text).expect("write scene");
    let scene = Scene::load(&dir.join("cached.ron")).expect("the scene loads");
    let setup = scene.build(false).expect("builds");
    let block = 10 * 2 * 20;
    let (positions, velocities) = setup.to_vecs();
    assert_eq!(positions.len(), block + 100, "the block's 400 particles and the file's 100");
    for (i, p) in cache.positions.iter().enumerate() {
        let got = positions[block + i];
        assert_eq!(got.to_array(), [p[0] + 0.6, p[1], p[2] + 0.3], "particle {i} moved by the offset");
        assert_eq!(velocities[block + i].to_array(), [0.0, -0.1, 0.0], "particle {i}'s velocity");
    }
    let engine = Engine::new(&ctx, scene, BuildOptions::default()).expect("the engine builds it");
    assert_eq!(engine.live_particles(), 500);
    let _ = std::fs::remove_dir_all(&dir);
}
