//! Sort-last compositing of a decomposed simulation's fluid (src/render/sort_last.rs, src/render/layers.rs,
//! src/render/ghosts.rs), on lavapipe (several devices on one adapter):
//! - the pass on synthetic layers: three ranks' depth and thickness (each its own device; two read back
//!   through the staging copy and sent as bytes) give per pixel the nearest positive depth and the summed
//!   thickness, read back exactly, at full and at half thickness resolution;
//! - a capture of the dam break on 2 ranks against 1 rank (see `two_ranks_match_one`).
mod common;

use waterview::render::{
    FluidLayers, FluidTargets, LayerReadback, Offscreen, Pass, SortLastInput, SortLastPass, Targets,
};

/// Rank `r`'s synthetic layers at `size` pixels: linear depths (m; 0 = no fluid in about one pixel in
/// five) and thicknesses (m; multiples of 1/8 up to 1, exact in binary16 and in their sums).
fn pattern(r: usize, size: (u32, u32), thickness_size: (u32, u32)) -> (Vec<f32>, Vec<f32>) {
    let n = (size.0 * size.1) as usize;
    let depth = (0..n)
        .map(|i| {
            if (i * 7 + r * 3).is_multiple_of(5) {
                0.0
            } else {
                1.0 + ((i * 13 + r * 29) % 97) as f32 * 0.031_25 + r as f32 * 1e-3
            }
        })
        .collect();
    let nt = (thickness_size.0 * thickness_size.1) as usize;
    let thickness = (0..nt).map(|i| ((i * 11 + r * 5) % 9) as f32 * 0.125).collect();
    (depth, thickness)
}

/// Writes `depth` and `thickness` (row-major) into `targets`' raw depth and thickness.
fn write_layers(ctx: &waterview::gpu::GpuContext, targets: &FluidTargets, depth: &[f32], thickness: &[f32]) {
    common::write_depth(ctx, targets, depth);
    let halves: Vec<u16> = thickness.iter().map(|&t| half::f16::from_f32(t).to_bits()).collect();
    let (w, h) = targets.thickness_size;
    ctx.queue.write_texture(
        targets.thickness.as_image_copy(),
        bytemuck::cast_slice(&halves),
        wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(w * 2), rows_per_image: Some(h) },
        targets.thickness.size(),
    );
}

#[test]
fn sort_last_keeps_the_nearest_depth_and_sums_the_thickness_exactly() {
    // Odd sizes: the rows of the staging copy are padded to 256 bytes.
    let size = (37, 23);
    for half_thickness in [false, true] {
        let display = common::gpu();
        let target = Offscreen::new(&display, size);
        let fluid = FluidTargets::new(&display, size, target.format(), half_thickness);
        let tsize = fluid.thickness_size;
        let layers: Vec<_> = (0..3).map(|r| pattern(r, size, tsize)).collect();
        write_layers(&display, &fluid, &layers[0].0, &layers[0].1);
        // Ranks 1 and 2: their own devices, read back as a rank other than the display does.
        let received: Vec<FluidLayers> = layers[1..]
            .iter()
            .map(|(depth, thickness)| {
                let ctx = common::gpu();
                let own = FluidTargets::new(&ctx, size, target.format(), half_thickness);
                write_layers(&ctx, &own, depth, thickness);
                let mut readback = LayerReadback::default();
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                readback.encode_copy(&ctx.device, &mut encoder, &own);
                ctx.queue.submit([encoder.finish()]);
                readback.map();
                let got = readback.read_blocking(&ctx).expect("layers map");
                // Through the transport as bytes.
                FluidLayers::from_bytes(&got.to_bytes()).expect("layers decode")
            })
            .collect();
        let mut pass = SortLastPass::new(&display, target.format());
        pass.resize(&display.device, Some(Targets { scene: &target, fluid: &fluid }));
        common::record_frame(&display, &target, &common::default_camera(size), |frame| {
            pass.encode(frame, SortLastInput { received: &received })
        });
        let depth = common::read_float_texture(&display, &fluid.raw_depth);
        let thickness = common::read_float_texture(&display, &fluid.thickness);
        let mut with_fluid = 0;
        for (i, &got) in depth.iter().enumerate() {
            let nearest =
                layers.iter().map(|l| l.0[i]).filter(|&d| d > 0.0).fold(
                    0.0f32,
                    |m, d| {
                        if m == 0.0 {
                            d
                        } else {
                            m.min(d)
                        }
                    },
                );
            with_fluid += (nearest > 0.0) as usize;
            assert_eq!(got, nearest, "half = {half_thickness}: depth of pixel {i}");
        }
        assert!(with_fluid > depth.len() / 2, "the pattern has fluid in most pixels");
        assert_eq!(thickness.len(), (tsize.0 * tsize.1) as usize);
        for (i, &got) in thickness.iter().enumerate() {
            let sum: f32 = layers.iter().map(|l| l.1[i]).sum();
            assert_eq!(got, sum, "half = {half_thickness}: thickness of pixel {i}");
        }
        // Nothing received (one GPU): the pass leaves the display's own layers as they are.
        write_layers(&display, &fluid, &layers[0].0, &layers[0].1);
        common::record_frame(&display, &target, &common::default_camera(size), |frame| {
            pass.encode(frame, SortLastInput { received: &[] })
        });
        assert_eq!(common::read_float_texture(&display, &fluid.raw_depth), layers[0].0);
    }
}
