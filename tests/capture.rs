//! Video capture end to end on the GPU (lavapipe on CI): the headless fixed-step capture writes a valid
//! H.264 MP4 (read back with the `mp4` crate) and a numbered PNG sequence; every video frame advances
//! exactly 1/fps simulated seconds (frame k shows time k / fps), and steps past a frame's end are exact
//! no-ops; an unwritable output is an error with a message and leaves nothing under the final name.
//! Without a GPU adapter these tests fail with the context's message (never skip).

use std::path::Path;
use waterview::capture::offline::{capture_scene, capture_scene_frames, OfflineOptions};
use waterview::gpu::GpuContext;
use waterview::scene::Scene;

mod common;
use common::scratch;

fn gpu() -> GpuContext {
    match GpuContext::headless() {
        Ok(ctx) => ctx,
        Err(e) => panic!("capture tests need a GPU adapter: {e}"),
    }
}

/// A small, fast capture: the tank at a coarse spacing, 96x64 pixels, 10 fps.
fn options(out: &Path, frames: u32) -> OfflineOptions {
    OfflineOptions {
        seconds: frames as f32 / 10.0,
        fps: 10.0,
        size: (96, 64),
        out: Some(out.to_path_buf()),
        particles: None,
        surface: None,
        dx: Some(0.08),
        image: Default::default(),
    }
}

fn tank() -> Scene {
    Scene::builtin("tank").expect("built-in tank scene")
}

#[test]
fn headless_capture_writes_a_valid_mp4() {
    let ctx = gpu();
    let dir = scratch("mp4");
    let out = dir.join("tank.mp4");
    let mut calls = 0;
    let summary = capture_scene(&ctx, &tank(), &options(&out, 6), |_, total| {
        calls += 1;
        assert_eq!(total, 6);
    })
    .expect("capture");
    assert!(calls >= 6);
    assert_eq!(summary.frames, 6);
    assert!((summary.duration_s - 0.6).abs() < 1e-3, "duration {}", summary.duration_s);
    assert!(out.exists(), "no file under the final name");
    assert!(!dir.join("tank.mp4.part").exists(), "temporary file left behind");

    let bytes = std::fs::read(&out).expect("read mp4");
    assert!(bytes.len() > 100);
    assert_eq!(&bytes[4..8], b"ftyp", "the file does not start with an ftyp box");

    let size = bytes.len() as u64;
    let reader = mp4::Mp4Reader::read_header(std::io::Cursor::new(bytes), size).expect("parse mp4");
    assert_eq!(reader.tracks().len(), 1);
    let (&id, track) = reader.tracks().iter().next().unwrap();
    assert_eq!(track.media_type().unwrap(), mp4::MediaType::H264);
    assert_eq!((track.width(), track.height()), (96, 64));
    assert_eq!(reader.sample_count(id).unwrap(), 6);
    let d = track.duration().as_secs_f64();
    assert!((d - 0.6).abs() < 0.01, "track duration {d} s");
    assert!(!track.sequence_parameter_set().unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn headless_capture_writes_a_numbered_png_sequence() {
    let ctx = gpu();
    let dir = scratch("png");
    let out = dir.join("frames");
    let summary = capture_scene(&ctx, &tank(), &options(&out, 4), |_, _| {}).expect("capture");
    assert_eq!(summary.frames, 4);
    assert!(!dir.join("frames.part").exists());
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .expect("folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["frame_00000.png", "frame_00001.png", "frame_00002.png", "frame_00003.png"]);
    let img = image::open(out.join("frame_00003.png")).expect("decode png").to_rgba8();
    assert_eq!(img.dimensions(), (96, 64));
    // Something was drawn (the sky is never black).
    assert!(img.pixels().any(|p| p.0[0] > 0 || p.0[1] > 0 || p.0[2] > 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unwritable_output_is_an_error_and_leaves_no_file() {
    let ctx = gpu();
    let dir = scratch("unwritable");
    // A regular file where a folder is needed: cannot be written even as root.
    let blocker = dir.join("not-a-folder");
    std::fs::write(&blocker, b"x").unwrap();
    for out in [blocker.join("video.mp4"), blocker.join("sub").join("frames")] {
        let err =
            capture_scene(&ctx, &tank(), &options(&out, 2), |_, _| {}).expect_err("writing under a file must fail");
        assert!(err.to_string().contains("not-a-folder"), "the message names the path: {err}");
        assert!(!out.exists());
    }
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "only the blocker is left: {names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_video_writer_cancels_without_leaving_files() {
    use waterview::capture::{VideoFormat, VideoFrame, VideoWriter};
    let dir = scratch("cancel");
    let out = dir.join("c.mp4");
    let mut w = VideoWriter::start(&out, VideoFormat::Mp4, 30.0).expect("start");
    w.push_blocking(VideoFrame::from_rgba(32, 32, vec![128; 32 * 32 * 4], 0.0)).unwrap();
    w.cancel();
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "nothing is left after a cancel");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Relative difference |a - b| / |b| (absolute for b = 0).
fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1.0)
}

#[test]
fn every_video_frame_advances_exactly_one_over_fps() {
    let ctx = gpu();
    let dir = scratch("exact");
    let fps = 24.0f32; // 1/24 s is no binary fraction: a sum of substeps would not land on it
    let frames = 5u32;
    // The tank's water column released from rest plus a dam break (moving water, so the CFL condition
    // shortens the steps and the last step of a frame is clamped or halved).
    for (name, scene) in [("tank", tank()), ("dam_break", Scene::builtin("dam_break").expect("built-in dam break"))] {
        let out = dir.join(format!("{name}.mp4"));
        let opts = OfflineOptions {
            seconds: frames as f32 / fps,
            fps,
            size: (64, 48),
            out: Some(out.clone()),
            particles: None,
            surface: None,
            dx: Some(0.08),
            image: Default::default(),
        };
        let mut seen = Vec::new();
        let report =
            capture_scene_frames(&ctx, &scene, &opts, |f| seen.push((f.index, f.sim_time, f.total))).expect("capture");
        assert_eq!(report.video.as_ref().expect("a video").frames, frames as u64);
        assert_eq!(seen.len(), frames as usize, "{name}: one report per frame");
        for (k, (index, time, total)) in seen.into_iter().enumerate() {
            assert_eq!((index, total), (k as u64, frames as u64));
            let want = k as f64 / fps as f64;
            assert!(rel(time as f64, want) <= 1e-5, "{name}: frame {k} shows t = {time} s, not {want} s");
        }
        let want = frames as f64 / fps as f64;
        assert!(
            rel(report.sim_time as f64, want) <= 1e-5,
            "{name}: simulated {} s after {frames} frames, not {want} s",
            report.sim_time
        );
        assert!(report.steps >= frames as u64 && report.steps <= report.steps_recorded, "{name}: {report:?}");
        assert!(report.submissions >= frames as u64, "{name}: the step state is read at least once per frame");
        eprintln!(
            "{name}: {} steps, {} recorded, {} submissions",
            report.steps, report.steps_recorded, report.submissions
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn steps_past_the_frame_end_are_exact_no_ops() {
    use waterview::gpu::Profiler;
    let ctx = gpu();
    let mut scene = Scene::builtin("dam_break").expect("built-in dam break");
    scene.solver.dx = 0.08;
    for method in [waterview::sim::Method::Dfsph, waterview::sim::Method::Pcisph, waterview::sim::Method::Wcsph] {
        scene.solver.method = method;
        let options = waterview::engine::BuildOptions { dx: Some(0.08), ..Default::default() };
        let mut engine = waterview::engine::Engine::new(&ctx, scene.clone(), options).expect("simulation");
        let sim = engine.sim_mut();
        let mut profiler = Profiler::new(&ctx.device);
        let t = 0.05f32;
        let a = sim.advance_to(&ctx, &mut profiler, t).expect("advance");
        assert_eq!(a.time, t, "{method:?}: lands exactly");
        let before = sim.step_state_blocking(&ctx).expect("step state");
        let (p0, v0) = sim.read_particles_blocking(&ctx);
        // Three more steps with the end still set: no time passes, no particle moves.
        sim.set_frame_end(&ctx, t);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        for _ in 0..3 {
            sim.encode_step(&mut enc, &profiler);
        }
        ctx.queue.submit([enc.finish()]);
        sim.set_frame_end(&ctx, 0.0);
        let after = sim.step_state_blocking(&ctx).expect("step state");
        assert_eq!((after.time, after.dt, after.steps), (t, 0.0, before.steps), "{method:?}: {after:?}");
        assert_eq!(after.max_speed_bits, before.max_speed_bits, "{method:?}: the CFL speed is kept");
        let (p1, v1) = sim.read_particles_blocking(&ctx);
        // The grid sort may reorder particles: compare the states as sets, bit for bit.
        let key = |p: &[f32; 4], v: &[f32; 4]| p.iter().chain(v).map(|x| x.to_bits()).collect::<Vec<u32>>();
        let mut s0: Vec<_> = p0.iter().zip(&v0).map(|(p, v)| key(p, v)).collect();
        let mut s1: Vec<_> = p1.iter().zip(&v1).map(|(p, v)| key(p, v)).collect();
        s0.sort();
        s1.sort();
        assert!(s0 == s1, "{method:?}: a step with dt = 0 changed the particles");
        // And the simulation goes on from there.
        let b = sim.advance_to(&ctx, &mut profiler, 2.0 * t).expect("advance again");
        assert_eq!(b.time, 2.0 * t);
    }
}
