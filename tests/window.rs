//! The window end to end under a virtual X server: `xvfb-run` starts Xvfb, the built binary opens its
//! window on it (winit on X11, wgpu presenting through lavapipe or the machine's GPU), records one second of
//! the window from its first frame (`--record --record-seconds 1 --quit-after-record`), completes the MP4
//! and exits with status 0 on its own. The MP4 is read back with the `mp4` crate: one H.264 track of the
//! window's size with at least one frame.
//!
//! The Capture panel's offline render ("Render video") the same way: started with the first frame
//! (`WATERVIEW_TEST_RENDER_VIDEO=1`, the panel's settings from the settings file), the app quits once the
//! file is complete; every frame it logged shows exactly k / fps simulated seconds, and the MP4 holds
//! them all.
//!
//! Needs `xvfb-run` (Debian: `apt-get install -y xvfb xauth`, as `.ci/run` does); without it the tests fail
//! with that message, they never skip.

use std::ffi::OsStr;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::scratch;

/// The window's inner size asked for on the command line (even, so H.264 keeps it whole).
const SIZE: (u32, u32) = (640, 360);
/// The longest the app may take to start, record a second and finish the file (lavapipe on two cores).
const TIMEOUT: Duration = Duration::from_secs(600);

/// A small flat-floored box of still water (2 000 particles on a CPU adapter), so frames come quickly.
fn small_scene(dir: &Path) -> PathBuf {
    let path = dir.join("small.ron");
    std::fs::write(
        &path,
        r#"(
    name: "Window test",
    domain: (min: (0.0, 0.0, 0.0), max: (2.0, 1.0, 1.0)),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.5, 1.0))],
    camera: (target: (1.0, 0.3, 0.5), distance: 3.0, yaw_deg: 0.0, pitch_deg: 25.0),
    solver: (dx: 0.025),
)
"#,
    )
    .expect("write scene");
    path
}

/// Fails (never skips) when `xvfb-run` is not installed, naming the fix.
fn require_xvfb_run() {
    match Command::new("xvfb-run").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {
            panic!(
                "the window test needs xvfb-run (a virtual X server): install it with `apt-get install -y xvfb xauth`"
            )
        }
        Err(e) => panic!("cannot run xvfb-run ({e}); install it with `apt-get install -y xvfb xauth`"),
    }
}

/// Runs the app under Xvfb in `dir` (its own settings folder `dir/config`, X11 only) with `args` and `envs`
/// until it quits on its own; returns its log. Panics if it does not quit in time or fails.
fn run_app(dir: &Path, args: &[&OsStr], envs: &[(&str, &str)]) -> String {
    let log_path = dir.join("app.log");
    let log = std::fs::File::create(&log_path).expect("create log");
    let mut command = Command::new("xvfb-run");
    command
        .args(["-a", "-s", "-screen 0 1280x720x24"])
        .arg(env!("CARGO_BIN_EXE_waterview"))
        .args(args)
        .args(["--window-size", &format!("{}x{}", SIZE.0, SIZE.1)])
        // A settings file of its own (the window size and last scene are saved on exit), X11 only.
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("WAYLAND_DISPLAY")
        .env("RUST_LOG", "info,wgpu_core=warn,wgpu_hal=warn,naga=warn")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log);
    for (k, v) in envs {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("start xvfb-run");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the app") {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            panic!("the app did not quit within {} s; its log:\n{text}", TIMEOUT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(status.success(), "the app exited with {status}; its log:\n{text}");
    eprintln!("app ran {:.1} s", started.elapsed().as_secs_f64());
    text
}

/// The MP4 at `path`: (width, height, frames) of its one H.264 track.
fn mp4_track(path: &Path) -> (u32, u32, u32) {
    let bytes = std::fs::read(path).expect("read mp4");
    let size = bytes.len() as u64;
    let reader = mp4::Mp4Reader::read_header(std::io::Cursor::new(bytes), size).expect("parse mp4");
    assert_eq!(reader.tracks().len(), 1);
    let (&id, track) = reader.tracks().iter().next().expect("one track");
    assert_eq!(track.media_type().expect("media type"), mp4::MediaType::H264);
    (track.width() as u32, track.height() as u32, reader.sample_count(id).expect("sample count"))
}

/// The window's arguments to open `scene`, record `seconds` of it at `fps` into `out` and quit.
fn record_args<'a>(scene: &'a Path, out: &'a Path, seconds: &'a str, fps: &'a str) -> [&'a OsStr; 9] {
    [
        "--scene".as_ref(),
        scene.as_os_str(),
        "--record".as_ref(),
        out.as_os_str(),
        "--record-seconds".as_ref(),
        seconds.as_ref(),
        "--record-fps".as_ref(),
        fps.as_ref(),
        "--quit-after-record".as_ref(),
    ]
}

#[test]
fn window_records_a_second_of_video_and_exits_cleanly() {
    require_xvfb_run();
    let dir = scratch("record");
    let scene = small_scene(&dir);
    let out = dir.join("window.mp4");
    let text = run_app(&dir, &record_args(&scene, &out, "1", "30"), &[]);

    assert!(out.exists(), "no video under {}; the app's log:\n{text}", out.display());
    assert!(!dir.join("window.mp4.part").exists(), "temporary file left behind");
    let (width, height, frames) = mp4_track(&out);
    assert_eq!((width, height), SIZE, "the video has the window's size");
    assert!(frames >= 1, "the video holds no frame");
    eprintln!("recorded {frames} frames of {}x{}", SIZE.0, SIZE.1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn window_renders_an_offline_video_of_exact_frames() {
    require_xvfb_run();
    let dir = scratch("render");
    let scene = small_scene(&dir);
    // The Capture panel's settings: offline, 24 fps (1/24 s is no binary fraction), 64x48, 0.25 s = 6 frames,
    // and the particles of every frame as PLY files.
    let (fps, frames) = (24.0f64, 6usize);
    std::fs::create_dir_all(dir.join("config").join("waterview")).expect("config folder");
    std::fs::write(
        dir.join("config").join("waterview").join("settings.json"),
        r#"{"capture": {"format": "Mp4", "mode": "Offline", "fps": 24.0, "offline_size": [64, 48], "offline_seconds": 0.25,
             "particles": true, "particle_format": "Ply"}}"#,
    )
    .expect("write settings");
    let args = ["--scene".as_ref(), scene.as_os_str()];
    let text = run_app(
        &dir,
        &args,
        &[
            ("WATERVIEW_TEST_RENDER_VIDEO", "1"),
            ("RUST_LOG", "info,wgpu_core=warn,wgpu_hal=warn,naga=warn,waterview::app::recording=debug"),
        ],
    );
    // "offline frame K: simulated time T s, video time V s", one per frame rendered.
    let times: Vec<(usize, f32)> = text
        .lines()
        .filter_map(|line| {
            let rest = &line[line.find("offline frame ")? + "offline frame ".len()..];
            let (k, rest) = rest.split_once(": simulated time ")?;
            let (t, _) = rest.split_once(" s")?;
            Some((k.parse().ok()?, t.parse().ok()?))
        })
        .collect();
    assert_eq!(times.len(), frames, "one line per frame rendered; the app's log:\n{text}");
    let t0 = times[0].1;
    assert_eq!(t0, 0.0, "the render started before anything was simulated");
    for (i, &(k, t)) in times.iter().enumerate() {
        assert_eq!(k, i, "frames in order");
        let want = t0 as f64 + k as f64 / fps;
        assert!((t as f64 - want).abs() <= 1e-5 * want.max(1.0), "frame {k} shows t = {t} s, not {want} s");
        assert_eq!(t, want as f32, "frame {k} lands on its frame end exactly");
    }
    let (folders, videos): (Vec<PathBuf>, Vec<PathBuf>) = std::fs::read_dir(dir.join("captures"))
        .expect("captures folder")
        .map(|e| e.expect("entry").path())
        .partition(|p| p.is_dir());
    assert_eq!(videos.len(), 1, "one video, no temporary file: {videos:?}");
    // The particle files beside it: one per frame, each with the time of the frame the video shows.
    assert_eq!(folders.len(), 1, "one folder of particle files: {folders:?}");
    assert!(folders[0].display().to_string().ends_with("-particles"), "{folders:?}");
    for &(k, t) in &times {
        let file = waterview::capture::particles::frame_path(
            &folders[0],
            waterview::particle_io::ParticleFormat::Ply,
            k as u64,
        );
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(waterview::particle_io::ply::time_of(&bytes), Some(t), "{} holds frame {k}'s time", file.display());
        let particles = waterview::particle_io::decode(&bytes, &file).expect("the PLY reads back");
        assert!(!particles.is_empty() && particles.densities.iter().all(|d| *d > 0.0), "live particles");
    }
    let files = std::fs::read_dir(&folders[0]).expect("particle folder").count();
    assert_eq!(files, frames, "one file per frame, no temporary file");
    assert_eq!(videos[0].extension().and_then(|e| e.to_str()), Some("mp4"));
    let (width, height, samples) = mp4_track(&videos[0]);
    assert_eq!((width, height), (64, 48), "the video has the panel's size");
    assert_eq!(samples as usize, frames, "the video holds every frame");
    eprintln!("rendered {frames} exact frames at 64x48 with their particle files");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The particle counts the window logged: the scene's at startup ("scene `NAME`: N particles"), then each
/// frame-rate line's ("frame rate: F fps at WxH, N particles"), in order. Counts are printed with spaces
/// between thousands.
fn logged_counts(log: &str) -> (u64, Vec<u64>) {
    let number = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>().parse::<u64>().ok();
    let mut start = None;
    let mut counts = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split_once("scene `").and_then(|(_, r)| r.split_once("`: ")).map(|(_, r)| r) {
            start = start.or_else(|| rest.split_once(" particles").and_then(|(n, _)| number(n)));
        }
        if let Some((_, rest)) = line.split_once("frame rate: ") {
            if let Some(n) =
                rest.split_once(", ").and_then(|(_, r)| r.split_once(" particles")).and_then(|(n, _)| number(n))
            {
                counts.push(n);
            }
        }
    }
    (start.unwrap_or_else(|| panic!("no startup count in the log:\n{log}")), counts)
}

/// Runs `scene_text` in the window for `seconds` of wall time (recording, so the app quits on its own),
/// with a frame-rate line every second; returns the particle counts it logged.
fn window_counts(name: &str, scene_text: &str, seconds: &str) -> (u64, Vec<u64>) {
    require_xvfb_run();
    let dir = scratch(name);
    let scene = dir.join("scene.ron");
    std::fs::write(&scene, scene_text).expect("write scene");
    let out = dir.join("window.mp4");
    let text = run_app(&dir, &record_args(&scene, &out, seconds, "5"), &[("WATERVIEW_TEST_LOG_EVERY_S", "1")]);
    assert!(!text.contains(" ERROR "), "the window reported an error:\n{text}");
    let counts = logged_counts(&text);
    eprintln!("{name}: {} particles at the start, then {:?}", counts.0, counts.1);
    assert!(counts.1.len() >= 3, "too few frame-rate lines; the app's log:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
    counts
}

/// `--scene` with an emitter: the window runs it (the pool sized from the scene), and the live count it
/// logs rises.
#[test]
fn window_runs_an_emitter_from_the_scene_file() {
    let (start, counts) = window_counts(
        "emitter",
        r#"(
    name: "Window emitter",
    domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.1, 1.0))],
    emitters: [(center: (0.5, 0.8, 0.5), radius: 0.15, velocity: (0.0, -1.0, 0.0), rate: 0.05)],
    camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
    solver: (dx: 0.025),
)
"#,
        "6",
    );
    // Any rise: how many particles 6 s of wall time emits depends on how fast the machine runs the window
    // (a loaded 2-core CI machine ran one layer of 28 in one run, where an idle one emits hundreds).
    let last = *counts.last().unwrap();
    assert!(last > start, "the emitter added {} particles to {start}", last as i64 - start as i64);
    assert!(counts.windows(2).all(|w| w[1] >= w[0]), "the count never falls without a sink: {counts:?}");
}

/// `--scene` with a sink over half the water: the live count the window logs falls.
#[test]
fn window_runs_a_sink_from_the_scene_file() {
    let (start, counts) = window_counts(
        "sink",
        r#"(
    name: "Window sink",
    domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.3, 1.0))],
    sinks: [(min: (0.0, 0.0, 0.0), max: (0.5, 1.0, 1.0))],
    camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
    solver: (dx: 0.025),
)
"#,
        "4",
    );
    let last = *counts.last().unwrap();
    assert!(last < start * 2 / 3, "the sink left {last} of {start} particles");
}

/// A particle gone NaN (poisoned at frame 5: no valid scene is known to blow up) pauses the window's
/// simulation and puts the frame and the likely cause in the banner, once; the window keeps running.
#[test]
fn window_pauses_and_reports_a_blow_up() {
    require_xvfb_run();
    let dir = scratch("blow-up");
    let scene = small_scene(&dir);
    let out = dir.join("window.mp4");
    let envs = [("WATERVIEW_TEST_POISON_FRAME", "5"), ("WATERVIEW_TEST_LOG_EVERY_S", "1")];
    let text = run_app(&dir, &record_args(&scene, &out, "4", "5"), &envs);
    let reports: Vec<&str> = text.lines().filter(|l| l.contains("blew up at frame")).collect();
    assert_eq!(reports.len(), 1, "one report of the blow-up; the app's log:\n{text}");
    assert!(reports[0].contains("likely cause") && reports[0].contains("Paused"), "{}", reports[0]);
    let after = text.split(reports[0]).nth(1).unwrap_or_default();
    assert!(after.contains("frame rate: "), "the window went on after the blow-up; the app's log:\n{text}");
    assert!(out.exists(), "the recording finished");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A larger scene loaded while the window runs (`WATERVIEW_TEST_LOAD_SCENE`, at frame 5) is built on a
/// worker thread: the window goes on drawing the small scene meanwhile (the frames drawn during the
/// build, which the app logs, are more than none; building on the event loop drew none) and then shows
/// the new scene with all its particles. 256 000 particles take about 1.3 s to build on lavapipe.
#[test]
fn window_keeps_drawing_while_a_larger_scene_builds() {
    let dir = scratch("background-build");
    let text = load_larger_scene(&dir, &[]);
    let built = text
        .lines()
        .find_map(|l| l.split_once("; ").filter(|_| l.contains("built in")).map(|(_, r)| r.to_string()))
        .unwrap_or_else(|| panic!("no build result in the log:\n{text}"));
    let frames: u64 = built
        .split_once(" frames drawn during the build")
        .and_then(|(n, _)| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no frame count in `{built}`"));
    eprintln!("{built}");
    assert!(frames > 0, "no frame was drawn while the scene was built; the app's log:\n{text}");
    assert!(
        text.contains("WATERVIEW_TEST_LOAD_SCENE: scene `Larger box` with 256000 particles"),
        "the window did not end with the larger scene; the app's log:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same build cancelled (as by the panel's Cancel) at the first frame after it started: the window
/// goes on with the small scene and its particles, and nothing is reported as an error.
#[test]
fn window_cancels_a_build_and_keeps_the_current_scene() {
    let dir = scratch("cancelled-build");
    let text = load_larger_scene(&dir, &[("WATERVIEW_TEST_CANCEL_BUILD", "1")]);
    assert!(text.contains("build cancelled"), "the build was not cancelled; the app's log:\n{text}");
    assert!(!text.contains("frames drawn during the build"), "the cancelled build was shown:\n{text}");
    assert!(
        text.contains("WATERVIEW_TEST_LOAD_SCENE: scene `Window test` with 2000 particles"),
        "the window did not keep the small scene; the app's log:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scene loaded as from the Scene panel whose obstacle is a glTF that gltf 1.4.1's reader asserted on
/// (a POSITION byte stride of 4, shorter than a vertex): the banner names the mesh file and why, and the
/// window goes on with the scene it had. Before, the builder thread died and the banner said only "the
/// scene builder stopped without a result".
#[test]
fn window_reports_a_hostile_mesh_and_keeps_the_current_scene() {
    require_xvfb_run();
    let dir = scratch("hostile-mesh");
    let small = small_scene(&dir);
    let bad = strided_mesh_scene(&dir, 4);
    let bad_path = bad.display().to_string();
    let text = run_app(&dir, &["--scene".as_ref(), small.as_os_str()], &[("WATERVIEW_TEST_LOAD_SCENE", &bad_path)]);
    let banner = text
        .lines()
        .find(|l| l.contains(" ERROR ") && l.contains("strided.gltf"))
        .unwrap_or_else(|| panic!("no error naming the mesh; the app's log:\n{text}"));
    assert!(banner.contains("byteStride 4, shorter than its 12-byte elements"), "{banner}");
    assert!(!text.contains("stopped without a result"), "the builder died; the app's log:\n{text}");
    assert!(
        text.contains("WATERVIEW_TEST_LOAD_SCENE: scene `Window test` with 2000 particles"),
        "the window did not keep its scene; the app's log:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The window started on a scene whose obstacle gltf 1.4.1's reader asserted on (exit status 101 before)
/// shows why in its banner, runs the built-in valley instead, and records and quits as asked.
#[test]
fn window_starts_on_a_hostile_mesh_scene_and_says_why() {
    require_xvfb_run();
    let dir = scratch("hostile-mesh-start");
    let scene = strided_mesh_scene(&dir, 8);
    let out = dir.join("start.mp4");
    let text = run_app(&dir, &record_args(&scene, &out, "0.5", "10"), &[]);
    let banner = text
        .lines()
        .find(|l| l.contains(" ERROR ") && l.contains("strided.gltf"))
        .unwrap_or_else(|| panic!("no error naming the mesh; the app's log:\n{text}"));
    assert!(banner.contains("byteStride 8, shorter than its 12-byte elements"), "{banner}");
    assert!(out.exists(), "the window did not go on to record; the app's log:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `dir`/bad.ron, a scene whose obstacle `strided.gltf` (also written) gives its POSITION
/// accessor a byte stride of `stride` (shorter than a vertex: gltf 1.4.1's reader asserted on it).
fn strided_mesh_scene(dir: &Path, stride: u32) -> std::path::PathBuf {
    std::fs::write(dir.join("strided.gltf"), common::cube_gltf(Some(stride), 1, 0)).expect("write mesh");
    let scene = dir.join("bad.ron");
    std::fs::write(
        &scene,
        r#"(
    name: "Strided",
    domain: (min: (0.0, 0.0, 0.0), max: (2.0, 1.0, 1.0)),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.5, 1.0))],
    obstacles: [(mesh: "strided.gltf", position: (1.2, 0.0, 0.3), scale: 0.4)],
    camera: (target: (1.0, 0.3, 0.5), distance: 3.0, yaw_deg: 0.0, pitch_deg: 25.0),
    solver: (dx: 0.025),
)
"#,
    )
    .expect("write scene");
    scene
}

/// Runs the window on the small scene in `dir`, loading a scene of 256 000 particles at frame 5
/// (`WATERVIEW_TEST_LOAD_SCENE`, with `envs` too) until the app quits on its own; returns its log.
fn load_larger_scene(dir: &Path, envs: &[(&str, &str)]) -> String {
    require_xvfb_run();
    let small = small_scene(dir);
    let big = dir.join("big.ron");
    // 80 x 40 x 80 lattice points at dx = 0.0125 m, on a CPU adapter too (cpu_dx_scale 1).
    std::fs::write(
        &big,
        r#"(
    name: "Larger box",
    domain: (min: (0.0, 0.0, 0.0), max: (2.0, 1.0, 1.0)),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.5, 1.0))],
    camera: (target: (1.0, 0.3, 0.5), distance: 3.0, yaw_deg: 0.0, pitch_deg: 25.0),
    solver: (dx: 0.0125),
    cpu_dx_scale: 1.0,
)
"#,
    )
    .expect("write scene");
    let big_path = big.display().to_string();
    let mut envs = envs.to_vec();
    envs.push(("WATERVIEW_TEST_LOAD_SCENE", &big_path));
    let text = run_app(dir, &["--scene".as_ref(), small.as_os_str()], &envs);
    assert!(!text.contains(" ERROR "), "the window reported an error:\n{text}");
    assert!(text.contains("building in the background"), "the build did not start; the app's log:\n{text}");
    text
}

/// The built-in dam break's scene file.
fn dam_break() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/scenes/dam_break.ron")
}

/// Water pixels of a recorded PNG frame: blue well above red and green (the sky is pale, the terrain green
/// or grey).
fn water_mask(path: &Path) -> Vec<bool> {
    let img = image::open(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display())).to_rgb8();
    img.pixels().map(|p| p[2] as i32 > p[0] as i32 + 40 && p[2] as i32 > p[1] as i32 + 20).collect()
}

/// The last frame recorded into the folder `dir`.
fn last_frame(dir: &Path) -> PathBuf {
    let mut frames: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("frames folder").map(|e| e.expect("entry").path()).collect();
    frames.sort();
    frames.pop().unwrap_or_else(|| panic!("no frame in {}", dir.display()))
}

/// The per-GPU panel's last line for `rank` in the log: (owned, ghosts).
fn panel_line(log: &str, rank: usize) -> Option<(u64, u64)> {
    let tag = format!("per-GPU panel: rank {rank} on ");
    let line = log.lines().rev().find(|l| l.contains(&tag))?;
    let field = |name: &str| {
        line.split_once(name).and_then(|(_, r)| r.split(',').next()).and_then(|n| n.trim().parse::<u64>().ok())
    };
    Some((field(" owned ")?, field(" ghosts ")?))
}

/// `--gpus 2` on the dam break, paused at t = 0 (`WATERVIEW_TEST_PAUSED`): once the two ranks are built the
/// window shows their sort-last picture, whose water lies where the one-GPU window draws it, and the
/// per-GPU panel lists both ranks with every particle owned once. The control, rank 0 compositing without
/// rank 1's layers (`WATERVIEW_TEST_DROP_RECEIVED`), must not match.
#[test]
fn window_on_two_gpus_draws_the_water_of_one_gpu() {
    require_xvfb_run();
    let dir = scratch("two-gpus");
    let scene = dam_break();
    let envs = [("WATERVIEW_TEST_PAUSED", "1"), ("WATERVIEW_TEST_LOG_EVERY_S", "1")];
    let one = dir.join("one");
    run_app(&dir, &record_args(&scene, &one, "3", "5"), &envs);
    let two = dir.join("two");
    let mut args = record_args(&scene, &two, "8", "5").to_vec();
    args.extend([OsStr::new("--gpus"), OsStr::new("2")]);
    let text = run_app(&dir, &args, &envs);
    let built = text
        .lines()
        .find_map(|l| l.split_once("scene on 2 GPUs: ").and_then(|(_, r)| r.split_once(" particles")))
        .and_then(|(n, _)| n.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("the ranks were not built; the log:\n{text}"));
    assert!(!text.contains(" ERROR "), "the window reported an error:\n{text}");
    let ranks: Vec<(u64, u64)> =
        (0..2).map(|r| panel_line(&text, r).unwrap_or_else(|| panic!("no panel line for rank {r}:\n{text}"))).collect();
    assert!(panel_line(&text, 2).is_none(), "a third rank in the panel");
    assert_eq!(ranks[0].0 + ranks[1].0, built, "the ranks own every particle once: {ranks:?}");
    assert!(ranks.iter().all(|&(owned, ghosts)| owned > 0 && ghosts > 0), "{ranks:?}");

    let (a, b) = (water_mask(&last_frame(&one)), water_mask(&last_frame(&two)));
    assert_eq!(a.len(), b.len(), "frames of different sizes");
    let count = |m: &[bool]| m.iter().filter(|&&w| w).count();
    let both = a.iter().zip(&b).filter(|(x, y)| **x && **y).count();
    let either = a.iter().zip(&b).filter(|(x, y)| **x || **y).count();
    let iou = both as f64 / either.max(1) as f64;
    eprintln!("water pixels: one GPU {}, two GPUs {}, intersection over union {iou:.3}", count(&a), count(&b));
    assert!(count(&a) > 2000, "the one-GPU window shows too little water ({})", count(&a));
    assert!(iou > 0.85, "the two-GPU window's water differs from the one-GPU window's: IoU {iou:.3}");

    // The control: rank 0 composites without rank 1's layers; its picture must fail the same comparison.
    let half = dir.join("half");
    let mut args = record_args(&scene, &half, "8", "5").to_vec();
    args.extend([OsStr::new("--gpus"), OsStr::new("2")]);
    run_app(&dir, &args, &[envs[0], envs[1], ("WATERVIEW_TEST_DROP_RECEIVED", "1")]);
    let c = water_mask(&last_frame(&half));
    let both = a.iter().zip(&c).filter(|(x, y)| **x && **y).count();
    let either = a.iter().zip(&c).filter(|(x, y)| **x || **y).count();
    let control = both as f64 / either.max(1) as f64;
    eprintln!("control (rank 0's layers only): {} water pixels, IoU {control:.3}", count(&c));
    assert!(
        control < 0.7,
        "without rank 1's layers the picture still matches (IoU {control:.3}): the test cannot fail"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The GPUs field set from 1 to 2 (`WATERVIEW_TEST_SET_GPUS`, as its Apply button) rebuilds the scene on
/// two ranks in the background; the window keeps drawing, and the ranks step on (their time moves).
#[test]
fn window_moves_a_scene_to_two_gpus_from_the_field() {
    require_xvfb_run();
    let dir = scratch("set-gpus");
    let scene = small_scene(&dir);
    let args: [&OsStr; 2] = ["--scene".as_ref(), scene.as_os_str()];
    let text = run_app(&dir, &args, &[("WATERVIEW_TEST_SET_GPUS", "2"), ("WATERVIEW_TEST_LOG_EVERY_S", "1")]);
    assert!(!text.contains(" ERROR "), "the window reported an error:\n{text}");
    let line = text
        .lines()
        .find(|l| l.contains("WATERVIEW_TEST_SET_GPUS: the scene runs on"))
        .unwrap_or_else(|| panic!("no outcome in the log:\n{text}"));
    assert!(line.contains("runs on 2 GPU(s)"), "{line}");
    let time: f32 = line
        .split_once("the ranks at t = ")
        .and_then(|(_, r)| r.trim_end().strip_suffix(" s"))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no time in `{line}`"));
    assert!(time > 0.0, "the ranks did not step: {line}");
    assert!(panel_line(&text, 1).is_some(), "no panel line for rank 1:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The simulation panel's parameters applied while the scene runs on two GPUs (viscosity doubled, as its
/// Apply does; `WATERVIEW_TEST_RANK_PARAMS`): every rank takes them live, the water goes on from where it
/// was (its time moves on from the change, no rebuild restarts it at t = 0).
#[test]
fn window_changes_parameters_live_on_two_gpus() {
    require_xvfb_run();
    let dir = scratch("rank-params");
    let scene = small_scene(&dir);
    let args: [&OsStr; 2] = ["--scene".as_ref(), scene.as_os_str()];
    let envs = [("WATERVIEW_TEST_SET_GPUS", "2"), ("WATERVIEW_TEST_RANK_PARAMS", "1")];
    let text = run_app(&dir, &args, &envs);
    assert!(!text.contains(" ERROR "), "the window reported an error:\n{text}");
    let time_in = |line: &str, after: &str, end: &str| -> f32 {
        line.split_once(after)
            .and_then(|(_, r)| r.split_once(end))
            .and_then(|(t, _)| t.trim().parse().ok())
            .unwrap_or_else(|| panic!("no time in `{line}`"))
    };
    let applied = text
        .lines()
        .find(|l| l.contains("WATERVIEW_TEST_RANK_PARAMS: viscosity doubled"))
        .unwrap_or_else(|| panic!("the parameters were not applied:\n{text}"));
    assert!(applied.ends_with(", live"), "{applied}");
    let at = time_in(applied, " at t = ", " s,");
    let line = text
        .lines()
        .find(|l| l.contains("WATERVIEW_TEST_SET_GPUS: the scene runs on"))
        .unwrap_or_else(|| panic!("no outcome in the log:\n{text}"));
    assert!(line.contains("runs on 2 GPU(s)"), "{line}");
    let end = time_in(line, "the ranks at t = ", " s");
    println!("parameters applied at t = {at} s; the ranks at t = {end} s twenty frames later");
    assert!(at > 0.0 && end > at, "the ranks did not go on from t = {at} s: {line}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two GPUs asked for a scene with an emitter: the scene runs on both, its emitter pouring (every rank
/// places the points in its slab, src/sim/sources.rs), and by t = 0.05 s the particle count the window
/// shows has grown past the scene's 800 (dx 0.05 m on a CPU adapter: a layer of 28 every 0.0175 s).
#[test]
fn window_runs_an_emitter_on_two_gpus() {
    require_xvfb_run();
    let dir = scratch("emitter-gpus");
    let scene = dir.join("scene.ron");
    std::fs::write(
        &scene,
        r#"(
    name: "Window emitter",
    domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.1, 1.0))],
    emitters: [(center: (0.5, 0.8, 0.5), radius: 0.15, velocity: (0.0, -3.0, 0.0), rate: 0.2)],
    camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
    solver: (dx: 0.025),
)
"#,
    )
    .expect("write scene");
    let args: [&OsStr; 2] = ["--scene".as_ref(), scene.as_os_str()];
    let text = run_app(&dir, &args, &[("WATERVIEW_TEST_SET_GPUS", "2"), ("WATERVIEW_TEST_GPUS_UNTIL", "0.05")]);
    let line = text
        .lines()
        .find(|l| l.contains("WATERVIEW_TEST_SET_GPUS: the scene runs on"))
        .unwrap_or_else(|| panic!("no outcome in the log:\n{text}"));
    assert!(line.contains("runs on 2 GPU(s)"), "{line}");
    let count: u64 = line
        .split("GPU(s), ")
        .nth(1)
        .and_then(|rest| rest.split(" particles").next())
        .map(|n| n.replace([',', ' ', '\u{202f}', '\u{a0}'], ""))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no particle count in {line}"));
    println!("{line}");
    assert!(count > 800, "the emitter added nothing on two GPUs: {count} particles ({line})");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The window draws the scene's obstacles from its first frame (the startup scene's too, not only one
/// opened later): the built-in dam break against a box, paused at t = 0, against the same scene without
/// its `obstacles` line. The frames differ where the box and its shadow stand; the water is the same.
#[test]
fn window_draws_the_scenes_obstacles() {
    require_xvfb_run();
    let dir = scratch("obstacles");
    let with = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/scenes/dam_break_box.ron");
    let text = std::fs::read_to_string(&with).expect("read the scene");
    let start = text.find("    obstacles: [").expect("the scene's obstacles");
    let end = start + text[start..].find("    ],\n").expect("their end") + "    ],\n".len();
    let without = dir.join("no_box.ron");
    std::fs::write(&without, format!("{}{}", &text[..start], &text[end..])).expect("write the scene");
    let envs = [("WATERVIEW_TEST_PAUSED", "1")];
    let frames = |scene: &Path, name: &str| {
        let out = dir.join(name);
        run_app(&dir, &record_args(scene, &out, "2", "5"), &envs);
        image::open(last_frame(&out)).expect("read the frame").to_rgb8()
    };
    let (a, b) = (frames(&with, "box"), frames(&without, "none"));
    assert_eq!(a.dimensions(), b.dimensions(), "frames of different sizes");
    let differ = a.pixels().zip(b.pixels()).filter(|(p, q)| (0..3).any(|c| (p[c] as i32 - q[c] as i32).abs() > 40));
    let differ = differ.count();
    eprintln!("{differ} pixels differ between the scene with its box and without it");
    assert!(differ > 150, "the window does not draw the box ({differ} pixels differ)");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Scene panel's obstacle moved live (`WATERVIEW_TEST_MOVE_OBSTACLE`, as a drag of its x sends it):
/// the box travels through the water to its new place in steps of dx / 4 a frame while the scene goes on
/// (the simulated time keeps rising; a rebuild would have started a simulation with no move counted), with
/// every particle (about 2 900 at dx = 0.025 m).
#[test]
fn window_moves_an_obstacle_live_through_the_water() {
    require_xvfb_run();
    let dir = scratch("move-obstacle");
    let cube = waterview::mesh::TriangleMesh::cuboid(glam::Vec3::ZERO, glam::Vec3::ONE);
    std::fs::write(dir.join("box.obj"), cube.to_obj()).expect("write box.obj");
    let scene = dir.join("scene.ron");
    std::fs::write(
        &scene,
        r#"(
    name: "Window moving box",
    domain: (min: (0.0, 0.0, 0.0), max: (1.0, 0.6, 0.3)),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.15, 0.3))],
    obstacles: [(mesh: "box.obj", position: (0.2, 0.0, 0.09), scale: 0.12)],
    camera: (target: (0.5, 0.2, 0.15), distance: 2.0, yaw_deg: 0.0, pitch_deg: 25.0),
    solver: (dx: 0.025),
    cpu_dx_scale: 1.0,
)
"#,
    )
    .expect("write scene");
    let args: [&OsStr; 2] = ["--scene".as_ref(), scene.as_os_str()];
    let text = run_app(&dir, &args, &[("WATERVIEW_TEST_MOVE_OBSTACLE", "0.3")]);
    assert!(!text.contains(" ERROR "), "the window reported an error:\n{text}");
    let field = |line: &str, key: &str, end: &str| -> f64 {
        line.split_once(key)
            .and_then(|(_, r)| r.split(end).next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{key}` in `{line}`"))
    };
    let find = |what: &str| {
        text.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no `{what}` in the log:\n{text}")).to_string()
    };
    let start = find("WATERVIEW_TEST_MOVE_OBSTACLE: moving obstacle 1");
    let end = find("WATERVIEW_TEST_MOVE_OBSTACLE: obstacle 1 at");
    eprintln!("{start}\n{end}");
    assert!((field(&end, "at x = ", " m") - 0.5).abs() < 1e-5, "the box is not at x = 0.5 m: {end}");
    assert!(field(&end, "after ", " moves") >= 40.0, "0.3 m at dx / 4 a frame is 48 moves: {end}");
    let particles = |line: &str| field(line, "s, ", " particles");
    assert_eq!(particles(&start), field(&end, "moves, ", " particles"), "particles lost: {start} / {end}");
    assert!(field(&end, "t = ", " s") > field(&start, "at t = ", " s"), "the water restarted: {start} / {end}");
    let _ = std::fs::remove_dir_all(&dir);
}
