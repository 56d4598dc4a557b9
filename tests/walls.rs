//! The walls that hold a terrain scene's water are drawn (issue 31, "no invisible walls";
//! src/engine/walls.rs): the built-in valley's dam stands against the domain's x = 0 and z = 0 sides.
//! Seen from inside the domain, the walls change the picture behind the water (the render setting
//! `show_tank` on against off); seen from outside, beyond a wall, they are not drawn (its face looks into
//! the domain and is culled), so they never hide the water. Box scenes get no walls (their glass tank).
mod common;

use glam::Vec3;
use waterview::engine::{BuildOptions, Engine};
use waterview::render::{self, OrbitCamera, RenderSettings, Renderer};

/// The water's pixels of `img`: clearly blue (blue over red by 40 levels).
fn water(img: &image::RgbaImage) -> Vec<bool> {
    img.pixels().map(|p| p[2] as i32 > p[0] as i32 + 40).collect()
}

/// Of the pixels where `b` shows water, how many and the share where `a` shows none (a wall in front of
/// it; a wall behind the water changes its colour, seen through it, but leaves it water).
fn water_hidden(a: &image::RgbaImage, b: &image::RgbaImage) -> (usize, f64) {
    let (shown, still) = (water(b), water(a));
    let count = shown.iter().filter(|&&w| w).count();
    let hidden = shown.iter().zip(&still).filter(|(&w, &s)| w && !s).count();
    (count, hidden as f64 / count.max(1) as f64)
}

/// Mean absolute difference of two images, levels of 255 per channel, and the share of pixels that differ
/// by more than 8 levels in any channel.
fn difference(a: &image::RgbaImage, b: &image::RgbaImage) -> (f64, f64) {
    let (mut sum, mut changed) = (0.0, 0usize);
    for (p, q) in a.pixels().zip(b.pixels()) {
        let d = (0..3).map(|c| (p[c] as f64 - q[c] as f64).abs());
        let most = d.clone().fold(0.0, f64::max);
        sum += d.sum::<f64>() / 3.0;
        changed += (most > 8.0) as usize;
    }
    let n = (a.width() * a.height()) as f64;
    (sum / n, changed as f64 / n)
}

#[test]
fn the_valleys_walls_show_from_inside_and_never_hide_the_water_from_outside() {
    let ctx = common::gpu();
    let scene = waterview::scene::Scene::builtin("valley").expect("the built-in valley");
    let engine = Engine::new(&ctx, scene, BuildOptions { dx: Some(0.6), ..BuildOptions::default() }).expect("builds");
    let walls = engine.wall_meshes();
    assert!(!walls.is_empty(), "the valley's dam stands against the domain's sides");
    let mut renderer = Renderer::new(&ctx, render::OFFSCREEN_FORMAT, engine.terrain());
    renderer.set_walls(&ctx, &walls);
    let (scene_camera, mut settings) = waterview::engine::batch::scene_view(&engine);
    let size = (160, 90);
    let mut image = |camera: &OrbitCamera, settings: &RenderSettings| {
        render::render_to_image(&ctx, &mut renderer, camera, Some(engine.particles()), settings, size)
    };
    settings.show_tank = true;
    let inside = image(&scene_camera, &settings);
    // From outside the x = 0 wall, 30 m beyond it, looking at the dam (yaw about +y: -90 degrees puts the
    // eye at -x of the target).
    let outside_camera = OrbitCamera {
        target: Vec3::new(6.0, 4.0, 7.0),
        distance: 36.0,
        yaw: -std::f32::consts::FRAC_PI_2,
        pitch: 0.15,
        ..scene_camera
    };
    let outside = image(&outside_camera, &settings);
    settings.show_tank = false;
    let (inside_off, outside_off) = (image(&scene_camera, &settings), image(&outside_camera, &settings));
    if let Ok(dir) = std::env::var("WATERVIEW_TEST_IMAGES") {
        for (name, img) in
            [("inside", &inside), ("inside_off", &inside_off), ("outside", &outside), ("outside_off", &outside_off)]
        {
            img.save(std::path::Path::new(&dir).join(format!("walls_{name}.png"))).expect("save");
        }
    }
    let (mean_in, share_in) = difference(&inside, &inside_off);
    let (water_in, hidden_in) = water_hidden(&inside, &inside_off);
    let (water_out, hidden_out) = water_hidden(&outside, &outside_off);
    println!(
        "walls on against off: inside {mean_in:.2} levels, {:.1} % of pixels changed, {:.2} % of {water_in} water \
         pixels; outside {:.2} % of {water_out} water pixels",
        100.0 * share_in,
        100.0 * hidden_in,
        100.0 * hidden_out
    );
    assert!(share_in > 0.01 && mean_in > 0.5, "the walls do not show from inside: {mean_in}, {share_in}");
    assert!(water_in > 50 && water_out > 50, "the views show the water: {water_in}, {water_out} pixels");
    assert!(hidden_in < 0.02 && hidden_out < 0.02, "the walls hid the water: {hidden_in}, {hidden_out}");
    let tank = waterview::scene::Scene::builtin("dam_break").expect("the built-in dam break");
    let tank = Engine::new(&ctx, tank, BuildOptions { dx: Some(0.1), ..BuildOptions::default() }).expect("builds");
    assert!(tank.wall_meshes().is_empty(), "a box scene's walls are its glass tank");
}
