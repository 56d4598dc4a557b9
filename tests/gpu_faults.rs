//! A GPU error in a headless path is an error with the GPU's report, never wgpu's uncaptured-error panic
//! (src/gpu/faults.rs, the checked read-backs of src/gpu/readback.rs): on lavapipe, a read-back past the
//! end of its buffer (a validation error) and the step-state read after the device is gone (the path that
//! panicked on an H200 during a 200 M particle capture: "Buffer with 'blocking read-back' label is
//! invalid" from `map_async`).
mod common;

use waterview::gpu::readback::try_read_range_blocking;

/// A copy past the end of its buffer is a validation error: reported, recorded, returned.
#[test]
fn an_oversized_read_back_is_an_error_naming_the_gpus_report() {
    let ctx = common::gpu();
    let src = waterview::gpu::storage_buffer_init(&ctx.device, "test source", &[7u8; 64]);
    assert_eq!(try_read_range_blocking(&ctx, &src, 0, 64, "the test buffer").expect("in bounds"), vec![7u8; 64]);
    let err = try_read_range_blocking(&ctx, &src, 0, 128, "the test buffer").expect_err("past the end");
    let text = err.to_string();
    assert!(text.starts_with("the test buffer could not be read back from the GPU: "), "{text}");
    assert!(text.contains("the GPU reported an error: Validation Error / In a CommandEncoder"), "{text}");
    assert!(!text.contains('\n'), "{text}");
    // The copy's error, and the submission's of the invalid command buffer.
    assert_eq!(ctx.faults.count(), 2, "{text}");
    // The errors after the first few are counted, not kept.
    for _ in 0..10 {
        assert!(try_read_range_blocking(&ctx, &src, 32, 64, "the test buffer").is_err());
    }
    assert_eq!(ctx.faults.count(), 22);
    let described = ctx.faults.describe().expect("errors recorded");
    assert_eq!(described.matches("the GPU reported an error").count(), waterview::gpu::faults::KEPT, "{described}");
    assert!(described.ends_with("and 18 more errors"), "{described}");
    let checked = ctx.check("the test").expect_err("errors recorded").to_string();
    assert!(checked.starts_with("the test: the GPU reported an error: Validation Error"), "{checked}");
}

/// After the device is gone, the offline capture's blocking step-state read (and `advance_to`, which the
/// capture calls every frame) returns an error that says so instead of panicking.
#[test]
fn reading_the_step_state_of_a_destroyed_device_is_an_error() {
    let ctx = common::gpu();
    let scene = waterview::scene::Scene::builtin("dam_break").expect("built-in scene");
    let mut engine = common::engine(&ctx, &scene, Some(0.08));
    let mut profiler = waterview::gpu::Profiler::new(&ctx.device);
    let a = engine.sim_mut().advance_to(&ctx, &mut profiler, 0.01).expect("advances on a live device");
    assert_eq!(a.time, 0.01);
    assert!(ctx.check("the capture").is_ok(), "{:?}", ctx.faults.describe());
    ctx.device.destroy();
    let err = engine.sim().step_state_blocking(&ctx).expect_err("nothing to read on a destroyed device");
    let text = err.to_string();
    assert!(
        text.starts_with("the step state could not be read back from the GPU: the GPU reported an error"),
        "{text}"
    );
    let err = engine.sim_mut().advance_to(&ctx, &mut profiler, 0.02).expect_err("no advancing either");
    assert!(err.to_string().contains("could not be read back from the GPU"), "{err}");
}

/// The offline capture (`waterview capture`'s path) ends with the GPU's report and writes nothing when the
/// device reports an error during it (here a bad copy on its device after frame 1) or is destroyed under
/// it (after frame 1): no panic, no frames left under the final name.
#[test]
fn a_capture_ends_with_the_gpus_report_and_writes_nothing() {
    use waterview::capture::offline::{capture_scene_frames, OfflineOptions};
    let scene = waterview::scene::Scene::builtin("dam_break").expect("built-in scene");
    for destroy in [false, true] {
        let ctx = common::gpu();
        let dir = common::scratch(&format!("gpu-faults-capture-{destroy}")).join("frames");
        let opts = OfflineOptions {
            seconds: 0.2,
            fps: 20.0,
            size: (64, 48),
            out: Some(dir.clone()),
            particles: None,
            surface: None,
            dx: Some(0.08),
            image: Default::default(),
        };
        let bad = waterview::gpu::storage_buffer_init(&ctx.device, "test source", &[0u8; 16]);
        let mut frames = 0;
        let result = capture_scene_frames(&ctx, &scene, &opts, |f| {
            frames += 1;
            if f.index == 1 {
                if destroy {
                    ctx.device.destroy();
                } else {
                    let _ = try_read_range_blocking(&ctx, &bad, 0, 32, "the test buffer");
                }
            }
        });
        let err = result.err().unwrap_or_else(|| panic!("destroy = {destroy}: the capture went on"));
        let text = format!("{:#}", anyhow::Error::from(err));
        assert_eq!(frames, 2, "destroy = {destroy}: ended at the next frame: {text}");
        assert!(text.contains("the GPU reported an error"), "destroy = {destroy}: {text}");
        if !destroy {
            assert!(text.starts_with("frame 2 of the capture: the GPU reported an error: Validation Error"), "{text}");
            assert!(text.ends_with("; nothing was written"), "{text}");
        }
        assert!(!dir.exists(), "destroy = {destroy}: frames left under {}", dir.display());
    }
}
