//! A long headless run holds its memory: the process's resident set after many frames stays within a few
//! MB of what it was after the first ones. The one test of this binary, so no other test's allocations
//! share its process (RSS is per process).
//!
//! What it guards: Mesa 22.3's lavapipe (the CI and this machine's Vulkan) "inlines" uniform-buffer values
//! that decide a branch or a loop bound into a freshly compiled copy of the shader at every bind of the
//! pipeline, and keeps every copy until the device is destroyed. With the simulation's parameters in a
//! uniform buffer (`params.method`, `params.surface_tension`, `params.wave_axis` ... in `if`s) `waterview
//! run` grew by ~10 MB per wall-clock second (152 MB at 2 s, 1.2 GB at 77 s, valley_town 2 GB in 235 s);
//! the parameters are a read-only storage buffer now, which lavapipe never inlines
//! (shaders/sim/common.wgsl). On other drivers the test passes either way.
mod common;

use waterview::engine::batch::run_frames;
use waterview::gpu::Profiler;
use waterview::scene::Scene;

/// Resident set size of this process, kB (`VmRSS` of /proc/self/status; Linux, where the GPU tests run).
fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status is readable");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmRSS in kB")
}

/// A 1 m box with a 0.3 m column of water falling into a 0.05 m layer: a few hundred particles that keep
/// moving for the whole run.
fn column() -> Scene {
    let text = "(name: \"column\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (1.0, 0.05, 1.0)), (min: (0.0, 0.05, 0.0), max: (0.3, 0.35, 0.3))],
          camera: (target: (0.5, 0.3, 0.5), distance: 2.5, yaw_deg: 0.0, pitch_deg: 25.0),
          solver: (dx: 0.05), cpu_dx_scale: 1.0)";
    Scene::from_str(text, std::path::Path::new("column.ron")).expect("test scene parses")
}

#[test]
fn a_long_run_holds_its_memory() {
    let ctx = common::gpu();
    let mut engine = common::engine(&ctx, &column(), None);
    let mut profiler = Profiler::new(&ctx.device);
    // Warm up: pipelines compiled, read-back ring and the profiler's query pools in use.
    let mut records = 0u64;
    run_frames(&ctx, engine.sim_mut(), &mut profiler, Some(30), None, |_| records += 1);
    let before = rss_kb();
    let frames = 120;
    run_frames(&ctx, engine.sim_mut(), &mut profiler, Some(frames), None, |_| records += 1);
    let after = rss_kb();
    assert!(records > frames / 2, "statistics came back: {records} records");
    let sim = engine.sim();
    assert!(sim.blow_up().is_none(), "the column ran without blowing up");
    let grown_mb = after.saturating_sub(before) as f64 / 1024.0;
    eprintln!("resident memory {} -> {} kB over {frames} frames", before, after);
    // Measured on lavapipe: 0.1 MB with the parameters in a storage buffer, 312 MB in a uniform buffer.
    assert!(
        grown_mb < 16.0,
        "resident memory grew by {grown_mb:.1} MB over {frames} frames ({} -> {} MB)",
        before / 1024,
        after / 1024
    );
}
