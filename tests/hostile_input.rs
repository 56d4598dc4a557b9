//! Hostile scene files through the command line (the binary, as a user runs it): each is refused with a
//! message naming the file, the item and the field, exit status 1, before anything runs; none reaches a
//! wgpu validation panic (exit 101). An emitter of radius 100 m or 1e6 m at dx = 0.05 m (once 196 350
//! workgroups in one dimension), rho0 = 1e-30 and a block at 1e30 m/s (every particle non-finite after a frame),
//! 125 M particles (refused after 8.4 s and 2.9 GB), emitters with rates of 1e12 or inf, a centre of NaN
//! or outside the domain. GPU tests (lavapipe in CI): the commands open a headless device first.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::scratch;

/// A scene file `name` in `dir`: a `domain_max` box (metres) with a 0.5 x 0.5 x 1 m block of water at dx
/// = 0.05 m on every adapter; `block` is inserted into the block, `extra` after the solver.
fn scene_file(dir: &Path, name: &str, domain_max: &str, block: &str, extra: &str) -> PathBuf {
    let text = format!(
        "(
    name: \"hostile\",
    domain: (min: (0.0, 0.0, 0.0), max: {domain_max}),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.5, 1.0){block})],
    camera: (target: (1.0, 0.3, 0.5), distance: 3.0, yaw_deg: 0.0, pitch_deg: 25.0),
    solver: (dx: 0.05),
    cpu_dx_scale: 1.0,
    {extra}
)"
    );
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the scene file");
    path
}

/// `waterview ARGS --scene SCENE`; its output and wall time.
fn waterview(scene: &Path, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_waterview"))
        .args(args)
        .arg("--scene")
        .arg(scene)
        .output()
        .expect("the binary runs");
    (out, started.elapsed())
}

/// Runs `waterview run --seconds 0.01` on `scene`, which must be refused (exit 1, not a panic's 101)
/// before any frame runs with a message holding every one of `says` and the file's name; returns the
/// message and the wall time.
fn refused(scene: &Path, args: &[&str], says: &[&str]) -> (String, Duration) {
    let (out, took) = waterview(scene, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // The binary prints the reason last (a driver may log lines of its own before).
    let error = stderr.lines().rfind(|l| l.starts_with("error: ")).unwrap_or_default().to_string();
    println!("{} {}: exit {:?} in {:.2} s: {error}", args[0], scene.display(), out.status.code(), took.as_secs_f64());
    assert_eq!(out.status.code(), Some(1), "{scene:?} was not refused cleanly:\n{stderr}");
    assert!(!stderr.contains("panicked"), "a panic:\n{stderr}");
    assert!(!stderr.contains("simulated"), "it ran before it was refused:\n{stderr}");
    let name = scene.file_name().unwrap().to_string_lossy();
    for s in says.iter().chain([&name.as_ref()]) {
        assert!(error.contains(s), "the message does not say `{s}`:\n{stderr}");
    }
    (error, took)
}

const RUN: &[&str] = &["run", "--seconds", "0.01"];

#[test]
fn an_emitter_of_radius_100_m_is_refused_by_run_and_capture() {
    let dir = scratch("radius");
    let emitter = "emitters: [(center: (1.0, 0.5, 0.5), radius: 100.0, velocity: (1.0, 0.0, 0.0), rate: 0.1)],";
    // In the 2 m box the disc does not fit; in a 300 m one it would make 12.6 M particles per layer.
    let small = scene_file(&dir, "radius_small.ron", "(2.0, 1.0, 1.0)", "", emitter);
    let wide = scene_file(&dir, "radius_wide.ron", "(300.0, 10.0, 300.0)", "", emitter);
    let huge = scene_file(&dir, "radius_huge.ron", "(2.0, 1.0, 1.0)", "", &emitter.replace("100.0", "1e6"));
    let says = ["emitter 1", "`radius` = 100"];
    refused(&small, RUN, &[&says[..], &["does not fit the domain"]].concat());
    refused(&wide, RUN, &[&says[..], &["makes layers of 12566370 particles at dx = 0.05 m"]].concat());
    refused(&huge, RUN, &["emitter 1: `radius` = 1000000 is more than half"]);
    let video = dir.join("out.mp4");
    let capture = ["capture", "--seconds", "0.05", "--fps", "20", "--size", "64x48", "--out", video.to_str().unwrap()];
    for scene in [&small, &wide, &huge] {
        refused(scene, &capture, &["emitter 1", "`radius` = "]);
    }
    assert!(!video.exists() && !dir.join("out.mp4.part").exists(), "no video was started");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rest_density_of_1e_30_and_a_block_at_1e30_m_s_are_refused_before_running() {
    let dir = scratch("physics");
    let rho0 = scene_file(&dir, "rho0.ron", "(2.0, 1.0, 1.0)", "", "").display().to_string();
    let text = std::fs::read_to_string(&rho0).unwrap().replace("(dx: 0.05)", "(dx: 0.05, rho0: 1e-30)");
    std::fs::write(&rho0, text).unwrap();
    refused(Path::new(&rho0), RUN, &["`rho0` = 1e-30 is out of range: 1 ..= 1e5 kg/m^3"]);
    let fast = scene_file(&dir, "fast.ron", "(2.0, 1.0, 1.0)", ", velocity: (1e30, 0.0, 0.0)", "");
    refused(&fast, RUN, &["fluid block 1: `velocity` = (1e30, 0, 0) is too fast", "at most 100 m/s"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_scene_of_125_million_particles_is_refused_at_once_naming_the_limit() {
    let dir = scratch("count");
    // A 5 m cube of water at dx = 0.01 m: 500^3 = 125 000 000 lattice points (under the scene's 2^27, over
    // lavapipe's 8 388 608; on this branch's parent it was refused after 24.7 s on the 2-core test machine).
    let scene = scene_file(&dir, "count.ron", "(6.0, 6.0, 6.0)", "", "").display().to_string();
    let text = std::fs::read_to_string(&scene).unwrap().replace("max: (0.5, 0.5, 1.0)", "max: (5.0, 5.0, 5.0)");
    std::fs::write(&scene, text.replace("(dx: 0.05)", "(dx: 0.01)")).unwrap();
    let says = ["up to 125000000 particles at dx = 0.01 m", "more than this GPU can simulate", "m would fit"];
    let (error, took) = refused(Path::new(&scene), RUN, &says);
    // The estimate is a few multiplications: the time is the device's start (0.2-0.4 s on lavapipe); the
    // particles themselves took 8.4 s and 2.9 GB to lay out before the GPU refused them.
    assert!(took < Duration::from_secs(10), "refused only after {:.1} s", took.as_secs_f64());
    let limit: String = error.split("simulate: ").nth(1).unwrap().chars().take_while(char::is_ascii_digit).collect();
    let limit: u64 = limit.parse().expect("the message gives the limit");
    assert!((1 << 20..125_000_000).contains(&limit), "limit {limit}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_emitters_are_refused_naming_the_file_the_emitter_and_the_field() {
    let dir = scratch("emitters");
    let emitter = |center: &str, rate: &str| {
        format!("emitters: [(center: {center}, radius: 0.1, velocity: (1.0, 0.0, 0.0), rate: {rate})],")
    };
    let cases = [
        ("rate_1e12.ron", emitter("(1.0, 0.5, 0.5)", "1e12"), "`rate` = 1e12 is out of range"),
        ("rate_inf.ron", emitter("(1.0, 0.5, 0.5)", "inf"), "`rate` = inf is out of range"),
        ("centre_nan.ron", emitter("(NaN, 0.5, 0.5)", "0.1"), "`center` = (NaN, 0.5, 0.5) must be finite"),
        ("centre_out.ron", emitter("(5.0, 0.5, 0.5)", "0.1"), "`center` = (5, 0.5, 0.5) is outside the domain"),
    ];
    for (name, extra, says) in cases {
        let scene = scene_file(&dir, name, "(2.0, 1.0, 1.0)", "", &extra);
        let (error, _) = refused(&scene, RUN, &["emitter 1: ", says]);
        assert!(!error.contains("fluid block"), "the emitter is blamed, not the blocks: {error}");
    }
    let sink = "sinks: [(min: (0.0, NaN, 0.0), max: (1.0, 1.0, 1.0))],";
    refused(&scene_file(&dir, "sink.ron", "(2.0, 1.0, 1.0)", "", sink), RUN, &["sink 1: `min` = (0, NaN, 0)"]);
    let _ = std::fs::remove_dir_all(&dir);
}
