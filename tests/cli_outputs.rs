//! The command line as a user meets it: outputs that cannot be written are refused before any work (no
//! GPU is even opened), a scene name holding terminal escapes is printed escaped, `--steps` counts steps,
//! and options that do not apply are refused rather than ignored. Runs the built binary (lavapipe in CI).
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{scratch, waterview};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every output a command writes is checked before the scene is built or the GPU opened: the error comes
/// at once, names the path and the reason, and no adapter line was printed.
#[test]
fn unwritable_outputs_are_refused_before_any_work() {
    let dir = scratch("outputs");
    std::fs::create_dir_all(dir.join("existing")).expect("folder");
    let cases: [(&[&str], &str); 7] = [
        (&["run", "--steps", "3", "--out", "/proc/waterview/final.png"], "no file can be created in /proc"),
        (&["run", "--steps", "3", "--out", "existing"], "it is a folder"),
        (&["run", "--steps", "3", "--stats", "existing"], "it is a folder"),
        (&["capture", "--seconds", "0.1", "--out", "/proc/waterview.mp4"], "no file can be created in /proc"),
        (&["capture", "--seconds", "0.1", "--out", "existing"], "already exists"),
        (&["bench", "--particles", "1k", "--out", "/proc/waterview"], "no file can be created in /proc"),
        (&["validate", "--quick", "--out", "/proc/waterview"], "no file can be created in /proc"),
    ];
    for (args, reason) in cases {
        let (out, took) = waterview(&dir, args);
        let text = stderr(&out);
        assert!(!out.status.success(), "{args:?} succeeded: {text}");
        assert!(text.contains(reason), "{args:?}: `{reason}` missing from: {text}");
        assert!(!text.contains("adapter:"), "{args:?} opened the GPU before refusing: {text}");
        assert!(took < Duration::from_secs(10), "{args:?} took {took:?} to refuse");
    }
    assert_eq!(std::fs::read_dir(dir.join("existing")).expect("list").count(), 0, "nothing written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Outputs that exist and are not regular files (a device, a FIFO with no reader, a socket) are refused
/// by name before any work, and stay what they were: the writers rename their finished file over the
/// path, which would turn `/dev/full` (as root) or a FIFO into a regular file, and a CSV opened on a FIFO
/// with no reader would block the run (and its Ctrl-C) for ever.
#[test]
fn outputs_that_are_devices_fifos_or_sockets_are_refused_and_left_alone() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("special-outputs");
    let fifo = dir.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("no NUL");
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let c = std::ffi::CString::new(dir.join("video.mp4").to_str().expect("utf-8")).expect("no NUL");
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("socket")).expect("a socket");
    let cases: [(&[&str], &str); 6] = [
        (&["run", "--steps", "3", "--out", "/dev/null"], "/dev/null: it is a character device, not a regular file"),
        (&["run", "--steps", "3", "--save-checkpoint", "/dev/full"], "/dev/full: it is a character device"),
        (&["run", "--steps", "3", "--stats", "pipe"], "pipe: it is a FIFO (named pipe), not a regular file"),
        (&["run", "--steps", "3", "--out", "pipe"], "it is a FIFO (named pipe)"),
        (&["run", "--steps", "3", "--save-checkpoint", "socket"], "socket: it is a socket, not a regular file"),
        (&["capture", "--seconds", "0.1", "--out", "video.mp4"], "video.mp4: it is a FIFO (named pipe)"),
    ];
    for (args, reason) in cases {
        let (out, _) = waterview(&dir, args);
        let text = stderr(&out);
        assert!(!out.status.success(), "{args:?} succeeded: {text}");
        assert!(text.contains(reason), "{args:?}: `{reason}` missing from: {text}");
        assert!(!text.contains("adapter:"), "{args:?} opened the GPU before refusing: {text}");
    }
    let kind = |p: &str| std::fs::metadata(p).expect("still there").file_type();
    assert!(kind("/dev/null").is_char_device() && kind("/dev/full").is_char_device());
    assert!(std::fs::symlink_metadata(&fifo).expect("still there").file_type().is_fifo());
    assert!(std::fs::symlink_metadata(dir.join("socket")).expect("still there").file_type().is_socket());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An image the GPU cannot render (on lavapipe a target past 8192 x 4096 pixels: its splat buffer passes
/// the 128 MiB storage binding) ends `run` with the
/// GPU's report and a non-zero status, and no image is written, as `capture` does; before, `run` wrote an
/// all-black PNG and exited 0.
#[test]
fn a_gpu_error_while_rendering_the_image_fails_the_run() {
    let dir = scratch("gpu-error-image");
    std::fs::write(
        dir.join("small.ron"),
        "(name: \"small\", domain: (min: (0.0, 0.0, 0.0), max: (0.5, 0.5, 0.5)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.1, 0.5))],
          camera: (target: (0.25, 0.1, 0.25), distance: 1.5, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.05), cpu_dx_scale: 1.0)",
    )
    .expect("write scene");
    // A splat target of 4 bytes a pixel past the largest storage binding (128 MiB on lavapipe).
    let binding = common::gpu().device.limits().max_storage_buffer_binding_size;
    let height = binding / (4 * 16384) + 8;
    assert!(
        height <= 16384,
        "this adapter binds {binding} bytes; the test needs one that refuses a 16384 x 16384 target"
    );
    let size = format!("16384x{height}");
    let (out, _) =
        waterview(&dir, &["--scene", "small.ron", "run", "--steps", "1", "--size", &size, "--out", "big.png"]);
    let text = stderr(&out);
    assert!(!out.status.success(), "the run succeeded: {text}");
    assert!(text.contains("rendering the image big.png: the GPU reported an error"), "{text}");
    assert!(!dir.join("big.png").exists() && !dir.join("big.png.part").exists(), "an image was written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scene whose name holds an escape sequence (clear screen) and a bell: printed escaped, never raw.
#[test]
fn control_characters_in_a_scene_name_are_printed_escaped() {
    let dir = scratch("escapes");
    let scene = "(name: \"evil\\u{1b}[2J\\u{7}name\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
        fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.1, 1.0))],
        camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
        solver: (dx: 0.05), cpu_dx_scale: 1.0)";
    std::fs::write(dir.join("evil.ron"), scene).expect("write scene");
    let (out, _) = waterview(&dir, &["--scene", "evil.ron", "run", "--steps", "3"]);
    let text = stderr(&out);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "a raw control character was printed: {text:?}");
    assert!(text.contains("evil\\u{1b}[2J\\u{7}name"), "the name is shown escaped: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--steps N` runs N steps rounded up to whole frames of `substeps` (4 by default): 9 steps = 3 frames,
/// each with its row in the statistics CSV (records that land together are all written).
#[test]
fn steps_count_steps_not_frames() {
    let dir = scratch("steps");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/scenes/tank.ron"), dir.join("tank.ron")).expect("copy");
    let (out, _) = waterview(&dir, &["--scene", "tank.ron", "run", "--steps", "9", "--stats", "stats.csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = std::fs::read_to_string(dir.join("stats.csv")).expect("the CSV");
    let frames: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap_or("")).collect();
    assert_eq!(frames, ["1", "2", "3"], "9 steps at 4 substeps per frame = 3 frames, a row each:\n{csv}");
    let (help, _) = waterview(&dir, &["run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    let steps_line = help.lines().find(|l| l.contains("--steps")).expect("--steps in the help");
    assert!(steps_line.contains("steps") && !steps_line.contains("frames to simulate"), "{steps_line}");
    let (zero, _) = waterview(&dir, &["run", "--steps", "0"]);
    assert!(!zero.status.success(), "--steps 0 is refused");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--seconds` runs frames that cover the scene's `frame_dt` (1/60 s) whatever the time step: with a CFL
/// number of 0.05 the falling block steps well under `frame_dt / substeps`, and its frames take the
/// steps that make up the difference (their simulated time is read from the statistics CSV), and the run
/// stops on the time asked for.
#[test]
fn seconds_run_frames_that_cover_their_simulated_time() {
    let dir = scratch("frame-time");
    let scene = "(name: \"short steps\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 0.2)),
        fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.4, 0.4, 0.2))],
        camera: (target: (0.5, 0.3, 0.1), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
        solver: (dx: 0.05, cfl: 0.05), cpu_dx_scale: 1.0)";
    std::fs::write(dir.join("short.ron"), scene).expect("write scene");
    let (out, _) = waterview(&dir, &["--scene", "short.ron", "run", "--seconds", "0.4", "--stats", "stats.csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = std::fs::read_to_string(dir.join("stats.csv")).expect("the CSV");
    let rows: Vec<[f64; 3]> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let v: Vec<f64> = l.split(',').take(3).map(|x| x.parse().expect("a number")).collect();
            [v[0], v[1], v[2]]
        })
        .collect();
    let (frame_dt, longest) = (1.0 / 60.0, 1.0 / 240.0);
    // Consecutive records whose step is under half the longest (the block has started to fall).
    let covered: Vec<f64> = rows
        .windows(2)
        .filter(|w| w[1][0] == w[0][0] + 1.0 && w[1][2] > 0.0 && w[1][2] < 0.5 * longest)
        .map(|w| (w[1][1] - w[0][1]) / frame_dt)
        .collect();
    assert!(covered.len() >= 5, "too few frames of short steps: {covered:?}\n{csv}");
    let mut sorted = covered.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    assert!((0.85..=1.2).contains(&median), "frames cover {median} x frame_dt (median): {covered:?}\n{csv}");
    // The run ends on the time asked for, not up to the frames in flight past it.
    let end = rows.last().expect("rows")[1];
    assert!((end - 0.4).abs() < 1e-6, "the run ended at t = {end} s\n{csv}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Options that would be silently ignored are refused: `validate` runs its own scenes; negative numbers
/// reach the range checks instead of clap's "unexpected argument".
#[test]
fn options_that_do_not_apply_are_refused_with_the_reason() {
    let dir = scratch("options");
    let (out, took) = waterview(&dir, &["--scene", "x.ron", "validate", "--quick"]);
    assert!(!out.status.success() && stderr(&out).contains("--scene does not apply"), "{}", stderr(&out));
    assert!(took < Duration::from_secs(10), "refused at once, not after validating ({took:?})");
    let (out, _) = waterview(&dir, &["run", "--steps", "1", "--dx", "-0.025"]);
    let text = stderr(&out);
    assert!(!out.status.success() && text.contains("dx") && !text.contains("unexpected argument"), "{text}");
    // The window's `--gpus` before a subcommand applies to the window only; a bad count is named.
    let (out, _) = waterview(&dir, &["--gpus", "2", "run", "--steps", "1"]);
    assert!(!out.status.success() && stderr(&out).contains("--gpus (before a subcommand)"), "{}", stderr(&out));
    let (out, _) = waterview(&dir, &["--gpus", "0"]);
    assert!(!out.status.success() && stderr(&out).contains("`0` is not a GPU count"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A long run reports its progress every 10 s (particles, the lost ones, process and GPU memory) and a
/// Ctrl-C (SIGINT) ends it at the next frame with its outputs written and exit status 0, for soaks that
/// end with `timeout -s INT` (README "Long runs").
#[test]
fn a_long_run_reports_progress_and_stops_cleanly_on_ctrl_c() {
    let dir = scratch("ctrl-c");
    let mut child = Command::new(env!("CARGO_BIN_EXE_waterview"))
        .args(["run", "--seconds", "100000", "--stats", "stats.csv", "--out", "last.png"])
        .current_dir(&dir)
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start waterview");
    // Its stderr is read as it comes; the Ctrl-C is sent once the first progress line is out (10 s into
    // the run, after the device's start and the build, however long a loaded machine takes for those).
    let (tx, rx) = std::sync::mpsc::channel();
    let pipe = child.stderr.take().expect("stderr is piped");
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(pipe)).map_while(Result::ok) {
            all += &line;
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    let progress = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line.starts_with("progress: ") => break line,
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no progress line within 300 s ({e}):\n{}", reader.join().unwrap_or_default());
            }
        }
    };
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill -INT");
    assert!(status.success(), "kill -INT failed");
    let started = Instant::now();
    let exit = child.wait().expect("wait for waterview");
    let err = reader.join().expect("the stderr reader");
    assert!(exit.success(), "a run stopped by Ctrl-C exits 0: {exit:?}\n{err}");
    assert!(started.elapsed() < Duration::from_secs(60), "stopping took {:?}", started.elapsed());
    assert!(err.contains("stopped early, as asked"), "{err}");
    for field in ["particles", "non-finite 0", "outside 0", "below terrain 0", "process memory", "GPU memory"] {
        assert!(progress.contains(field), "`{field}` missing from `{progress}`");
    }
    let rows = std::fs::read_to_string(dir.join("stats.csv")).expect("the statistics CSV").lines().count();
    assert!(rows > 2, "{rows} lines in the CSV");
    assert!(dir.join("last.png").is_file(), "the image of the last frame is written");
}

/// `run --view NAME` takes the names of the views: a bad one is refused before any work with the list of
/// valid names (so is a bad `--depth-filter`, and a `--sun-elevation` that is not a number of degrees
/// within -90 ..= 90), and `--view depth` writes a picture of the raw depth that
/// differs from the final image.
#[test]
fn run_views_are_named_checked_and_drawn() {
    let dir = scratch("views");
    let (help, _) = waterview(&dir, &["run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--view") && help.contains("smoothed") && help.contains("--depth-filter"), "{help}");
    for (args, names) in [
        (["--view", "bogus"], &["final", "depth", "smoothed", "thickness", "normals", "tiles", "foam", "spheres"][..]),
        (["--depth-filter", "blur"], &["curvature-flow", "narrow-range"][..]),
        (["--sun-elevation", "100"], &["-90", "90", "degrees"][..]),
        (["--sun-elevation", "NaN"], &["-90", "90", "degrees"][..]),
        (["--sun-elevation", "high"], &["not a number of degrees"][..]),
    ] {
        let (out, took) = waterview(&dir, &[&["run", "--steps", "1", "--out", "x.png"][..], &args[..]].concat());
        let text = stderr(&out);
        assert!(!out.status.success(), "{args:?} accepted: {text}");
        assert!(text.contains(args[1]) && names.iter().all(|n| text.contains(n)), "{args:?}: {text}");
        assert!(!text.contains("adapter:") && took < Duration::from_secs(10), "{args:?} refused late: {text}");
    }
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/scenes/tank.ron"), dir.join("tank.ron")).expect("copy");
    let mut pictures = Vec::new();
    for view in ["final", "depth"] {
        let out = format!("{view}.png");
        let args = ["--scene", "tank.ron", "run", "--steps", "4", "--dx", "0.08", "--size", "96x64", "--view", view];
        let (run, _) = waterview(&dir, &[&args[..], &["--out", &out]].concat());
        assert!(run.status.success(), "--view {view}: {}", stderr(&run));
        pictures.push(image::open(dir.join(&out)).expect("the picture").to_rgb8());
    }
    let diff = pictures[0]
        .pixels()
        .zip(pictures[1].pixels())
        .map(|(a, b)| (0..3).map(|c| (a[c] as f64 - b[c] as f64).abs()).sum::<f64>() / 3.0);
    let mean = diff.sum::<f64>() / (96.0 * 64.0);
    assert!(mean > 10.0, "--view depth differs from final by only {mean:.1} levels on average");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run --save-particles`: the final particles on one GPU and on two (gathered on rank 0, each once) as
/// PLY and VTU, the same count and nearly the same centroid after 4 steps; a path that is neither `.ply`
/// nor `.vtu` is refused before any work.
#[test]
fn save_particles_writes_the_final_particles_on_one_and_two_gpus() {
    let dir = scratch("save-particles");
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/scenes/dam_break.ron");
    let scene = scene.to_str().expect("path");
    let mut centroids = Vec::new();
    let mut counts = Vec::new();
    for (gpus, file) in [("1", "end.ply"), ("2", "end.vtu")] {
        let args = ["--scene", scene, "run", "--dx", "0.08", "--steps", "4", "--gpus", gpus, "--save-particles", file];
        let (out, _) = waterview(&dir, &args);
        assert!(out.status.success(), "--gpus {gpus}: {}", stderr(&out));
        let p = waterview::particle_io::read(&dir.join(file)).expect("the particles read back");
        assert!(p.densities.iter().all(|d| d.is_finite() && *d > 0.0), "--gpus {gpus}: densities");
        let n = p.len() as f64;
        centroids.push(std::array::from_fn::<f64, 3, _>(|a| p.positions.iter().map(|q| q[a] as f64).sum::<f64>() / n));
        counts.push(p.len());
    }
    assert!(counts[0] > 1000, "{counts:?}");
    assert_eq!(counts[0], counts[1], "one GPU and two hold the same particles");
    let dc = (0..3).map(|a| (centroids[0][a] - centroids[1][a]).abs()).fold(0.0, f64::max);
    assert!(dc < 1e-4, "centroids {centroids:?}");
    let (out, took) = waterview(&dir, &["run", "--steps", "3", "--save-particles", "end.txt"]);
    assert!(!out.status.success() && stderr(&out).contains("give a .ply or .vtu file"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("adapter:") && took < Duration::from_secs(10), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
