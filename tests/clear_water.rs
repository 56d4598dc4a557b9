//! Clear water that reads as water (issue 31): in the glass-tank dam break, the pixels the water covers
//! change clearly against the same view without the water, both where the column stands (t = 0) and
//! where the thin layer spreads after the collapse. Measured as the mean absolute difference over the
//! water's pixels, levels of 255 per channel (the water's pixels: those with thickness in the thickness
//! view).
mod common;

use waterview::engine::{BuildOptions, Engine};
use waterview::render::{self, FluidView, OrbitCamera, RenderSettings, Renderer};

const SIZE: (u32, u32) = (640, 360);

/// Mean absolute RGB difference of `a` and `b` over the pixels where `mask` holds, and their count.
fn difference_over(a: &image::RgbaImage, b: &image::RgbaImage, mask: &[bool]) -> (f64, usize) {
    let (mut sum, mut n) = (0.0, 0usize);
    for ((p, q), &m) in a.pixels().zip(b.pixels()).zip(mask) {
        if m {
            sum += (0..3).map(|c| (p[c] as f64 - q[c] as f64).abs()).sum::<f64>() / 3.0;
            n += 1;
        }
    }
    (sum / n.max(1) as f64, n)
}

/// The final image with and without the water, and the water's pixels.
fn shots(ctx: &waterview::gpu::GpuContext, engine: &Engine, camera: &OrbitCamera, name: &str) -> (f64, usize) {
    let mut renderer = Renderer::new(ctx, render::OFFSCREEN_FORMAT, engine.terrain());
    renderer.set_walls(ctx, &engine.wall_meshes());
    let (_, mut settings) = waterview::engine::batch::scene_view(engine);
    let mut image = |settings: &RenderSettings| {
        render::render_to_image(ctx, &mut renderer, camera, Some(engine.particles()), settings, SIZE)
    };
    let with = image(&settings);
    settings.view = FluidView::Thickness;
    let thick = image(&settings);
    settings.view = FluidView::Final;
    settings.show_particles = false;
    let without = image(&settings);
    if let Ok(dir) = std::env::var("WATERVIEW_TEST_IMAGES") {
        let dir = std::path::Path::new(&dir);
        with.save(dir.join(format!("clear_{name}.png"))).expect("save");
        without.save(dir.join(format!("clear_{name}_dry.png"))).expect("save");
        thick.save(dir.join(format!("clear_{name}_thick.png"))).expect("save");
    }
    let mask: Vec<bool> = thick.pixels().map(|p| p[0] as u32 + p[1] as u32 + p[2] as u32 > 24).collect();
    difference_over(&with, &without, &mask)
}

#[test]
fn clear_water_changes_the_pixels_it_covers() {
    let ctx = common::gpu();
    let scene = waterview::scene::Scene::builtin("dam_break").expect("the built-in dam break");
    let mut engine = Engine::new(&ctx, scene, BuildOptions::default()).expect("builds");
    let camera = waterview::engine::batch::scene_view(&engine).0;
    let (column, column_px) = shots(&ctx, &engine, &camera, "column");
    common::run_checked(&ctx, &mut engine, None, Some(1.5));
    let (layer, layer_px) = shots(&ctx, &engine, &camera, "layer");
    println!("clear water: column {column:.1} levels over {column_px} px, layer {layer:.1} over {layer_px} px");
    assert!(column_px > 2000 && layer_px > 2000, "too few water pixels: {column_px}, {layer_px}");
    assert!(column >= 30.0, "the standing column changes its pixels by {column:.1} levels only");
    assert!(layer >= 30.0, "the layer after the collapse changes its pixels by {layer:.1} levels only");
}
