//! Particle files as a scene's water through the engine (lavapipe in CI): a file declaring more particles
//! than the GPU simulates is refused from its header, before a particle is decoded (before, the count was
//! checked against the GPU's limit only after the whole file was decoded), and a build cancelled while it
//! decodes a large file stops inside the decoding (before, the window's Cancel waited for the whole file,
//! and a file too large for the host's memory got the app killed).
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use waterview::engine::{BuildOptions, BuildPhase, BuildProgress, Engine, EngineError};
use waterview::particle_io;
use waterview::scene::Scene;

/// A 2 m box whose water is the file `file` in `dir`, dx = 0.05 m.
fn scene(dir: &Path, file: &str) -> Scene {
    let text = format!(
        "(name: \"filed\", domain: (min: (0.0, 0.0, 0.0), max: (2.0, 2.0, 2.0)),
          fluid_files: [(path: \"{file}\")],
          camera: (target: (1.0, 0.3, 1.0), distance: 4.0, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.05), cpu_dx_scale: 1.0)"
    );
    Scene::from_str(&text, &dir.join("filed.ron")).expect("the scene file itself is valid")
}

/// A binary PLY header declaring `n` vertices (x, y, z floats) followed by one vertex: refused by the
/// engine from the GPU's limit, not from the missing bytes (the header is all it reads first).
#[test]
fn a_file_past_the_gpus_limit_is_refused_from_its_header() {
    let ctx = common::gpu();
    let dir = common::scratch("hostile-particles-limit");
    let limit = waterview::engine::particle_limit(&ctx).max;
    let n = limit + 1000;
    let mut bytes = format!(
        "ply\nformat binary_little_endian 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
    )
    .into_bytes();
    bytes.extend([1.0f32; 3].iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.join("many.ply"), &bytes).expect("write");
    let e = match Engine::new(&ctx, scene(&dir, "many.ply"), BuildOptions::default()) {
        Ok(_) => panic!("built"),
        Err(e) => e,
    };
    assert!(matches!(e, EngineError::TooManyFileParticles { files, .. } if files == n), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains(&format!("its fluid files hold {n} particles, more than this GPU can simulate: {limit} at most")),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A build cancelled while it decodes a large ASCII PLY stops within a few thousand of its lines: it
/// returns `Cancelled` in a fraction of the time the whole file takes to decode (measured first, in the
/// same process). Before, the decoding ran to the end of the file whatever the panel's Cancel said.
#[test]
fn a_build_cancelled_while_decoding_a_file_stops_at_once() {
    let ctx = common::gpu();
    let dir = common::scratch("hostile-particles-cancel");
    // 4 000 000 particles on a 4.5 mm lattice, 1.8 m x 0.45 m x 0.45 m: about 80 MB of text.
    let n = 4_000_000usize;
    let mut text = format!(
        "ply\nformat ascii 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
    );
    for i in 0..n {
        let (x, y, z) = ((i % 400) as f32, (i / 400 % 100) as f32, (i / 40_000) as f32);
        text += &format!("{} {} {}\n", 0.01 + 0.0045 * x, 0.01 + 0.0045 * y, 0.01 + 0.0045 * z);
    }
    std::fs::write(dir.join("big.ply"), &text).expect("write");
    drop(text);
    let started = Instant::now();
    assert_eq!(particle_io::read(&dir.join("big.ply")).expect("the whole file decodes").len(), n);
    let whole = started.elapsed();
    eprintln!("the whole file decodes in {whole:?}");
    assert!(whole > Duration::from_millis(200), "the file decodes too fast ({whole:?}) to tell a cancel apart");

    let progress = Arc::new(BuildProgress::default());
    let (shared, scene) = (progress.clone(), scene(&dir, "big.ply"));
    let ctx_builder = ctx.clone();
    let builder = std::thread::spawn(move || {
        let result = Engine::new_with_progress(&ctx_builder, scene, BuildOptions::default(), &shared);
        (result.map(|_| ()), Instant::now())
    });
    while progress.phase() != BuildPhase::LayingOut {
        assert!(!builder.is_finished(), "the build ended before it laid out particles");
        std::thread::yield_now();
    }
    // The engine reads the files' headers first: give the decoding itself a moment to start.
    std::thread::sleep(whole / 10);
    let cancelled_at = Instant::now();
    progress.cancel();
    let (result, ended) = builder.join().expect("the builder");
    assert!(matches!(result, Err(EngineError::Cancelled)), "{result:?}");
    let after = ended.saturating_duration_since(cancelled_at);
    eprintln!("cancelled {after:?} after the cancel");
    assert!(after < whole / 2, "the build went on for {after:?} after the cancel; the whole file takes {whole:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
