//! The compute splats' sharing of pixel boxes over a workgroup (`shaders/render/splat_boxes.wgsl`) with
//! large splats, on whatever adapter wgpu finds (lavapipe in CI; none FAILS with the context's message).
//! llvmpipe ends a shader's loops after 65 535 iterations of them all together per invocation; a binary
//! search written as a loop in every pixel's visit reached that with a workgroup of splats a few thousand
//! pixels each, and the compute thickness of 8 stacked close-up spheres came out as that of 3. (The limit
//! still holds for the pixel loop itself: a workgroup's 64 threads visit at most 64 x 65 535 pixels on
//! llvmpipe, an average box of 256² pixels per particle.)

mod common;

use glam::{Mat3, Vec3};
use waterview::render::{
    Ellipsoid, EllipsoidBuffers, FluidTargets, Offscreen, OrbitCamera, Pass, SplatInput, SplatMethod, SplatPass,
    Targets, OFFSCREEN_FORMAT,
};

/// Spheres of 3 m on one spot 10 m from the camera (boxes of about 360² pixels at 960 x 640): the compute
/// thickness where they all cover the pixel is the number of spheres times one sphere's, as the raster's.
#[test]
fn stacked_close_up_spheres_sum_their_whole_thickness() {
    let ctx = common::gpu();
    let size = (960u32, 640u32);
    let camera = OrbitCamera::default().uniform(size, Vec3::Y, 1.0, 0.0);
    let (target, targets) = (Offscreen::new(&ctx, size), FluidTargets::new(&ctx, size, OFFSCREEN_FORMAT, false));
    let mut pass = SplatPass::new(&ctx, OFFSCREEN_FORMAT);
    pass.resize(&ctx.device, Some(Targets { scene: &target, fluid: &targets }));
    let mut thickest = |n: usize, method: SplatMethod| {
        let stack = vec![Ellipsoid::new(Vec3::ZERO, 3.0, Mat3::IDENTITY / 3.0); n];
        let buffers = EllipsoidBuffers::from_ellipsoids(&ctx, &stack).expect("fits");
        common::record_frame(&ctx, &target, &camera, |frame| {
            drop(frame.target_pass("clear", true));
            pass.encode(frame, SplatInput { ellipsoids: &buffers, count: n as u32, method, dx: 0.1 });
        });
        let t = common::read_float_texture(&ctx, targets.thickness_view.texture());
        let covered = t.iter().filter(|&&v| v > 0.0).count();
        (t.into_iter().fold(0f32, f32::max), covered)
    };
    let (one, covered) = thickest(1, SplatMethod::Compute);
    println!("one sphere: {one} m thick, {covered} pixels");
    assert!(one > 5.5 && covered > 50_000, "one sphere: {one} m over {covered} pixels");
    // 16 spheres of 146 000 pixels: 36 600 pixels per thread, within llvmpipe's limit.
    for n in [8, 16] {
        let (compute, _) = thickest(n, SplatMethod::Compute);
        let (raster, _) = thickest(n, SplatMethod::Raster);
        println!("{n} spheres: compute {compute} m, raster {raster} m");
        let want = n as f32 * one;
        assert!((compute - want).abs() < 0.01 * want, "{n} spheres: compute {compute} m, not {want}");
        assert!((raster - want).abs() < 0.01 * want, "{n} spheres: raster {raster} m, not {want}");
    }
}
