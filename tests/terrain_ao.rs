//! The terrain's sky-visibility bake (src/render/terrain_ao.rs) on whatever adapter wgpu finds (lavapipe
//! in CI; a machine with none FAILS): a flat plane sees the whole sky, the floor of a deep narrow pit
//! almost none, the floor of a long trench what the view factor of its opening says, and the
//! maximum-mipmap march agrees with the plain march on a rough synthetic terrain and on the valley's DEM.
//! Both marches' times are printed, never asserted (`cargo run --release --example terrain_ao` measures
//! larger grids).

mod common;

use glam::Vec2;
use std::path::Path;
use waterview::render::terrain_ao::{bake_blocking, AoMethod, RAYS};
use waterview::scene::{load_heightfield, Aabb, TerrainDesc};
use waterview::terrain::Heightfield;

/// A heightfield of `nx` x `nz` samples 1 m apart with heights `f(ix, iz)`.
fn grid(nx: u32, nz: u32, f: impl Fn(u32, u32) -> f32) -> Heightfield {
    let heights = (0..nx * nz).map(|i| f(i % nx, i / nx)).collect();
    Heightfield { nx, nz, origin: Vec2::ZERO, extent: Vec2::new((nx - 1) as f32, (nz - 1) as f32), heights }
}

/// Both marches' visibilities of `hf`, with their times printed under `name`.
fn both(name: &str, hf: &Heightfield) -> (Vec<f32>, Vec<f32>) {
    let ctx = common::gpu();
    let (pyramid, t_pyramid) = bake_blocking(&ctx, hf, AoMethod::Pyramid, 1).expect("bake");
    let (brute, t_brute) = bake_blocking(&ctx, hf, AoMethod::BruteForce, 1).expect("bake");
    println!(
        "{name} ({} x {}, {RAYS} rays per sample): pyramid {t_pyramid:.1} ms, brute force {t_brute:.1} ms ({})",
        hf.nx,
        hf.nz,
        ctx.adapter_summary()
    );
    (pyramid, brute)
}

#[test]
fn a_flat_plane_sees_the_whole_sky() {
    let hf = grid(33, 21, |_, _| 3.0);
    let (pyramid, brute) = both("flat", &hf);
    assert!(pyramid.iter().chain(&brute).all(|&v| v == 1.0), "{pyramid:?}\n{brute:?}");
}

#[test]
fn a_deep_narrow_pit_floor_sees_little_sky() {
    // A 4 m wide, 30 m deep pit (floor samples |d| <= 2 at -30 m) in flat ground: from the floor's centre
    // the opening spans 3 m / 30 m, a view factor sin^2(atan(0.1)) = 1%.
    let pit = |i: u32| (i as i32 - 20).abs() <= 2;
    let hf = grid(41, 41, |ix, iz| if pit(ix) && pit(iz) { -30.0 } else { 0.0 });
    let at = |v: &[f32], ix: u32, iz: u32| v[(iz * 41 + ix) as usize];
    let (pyramid, brute) = both("pit", &hf);
    for (name, v) in [("pyramid", pyramid), ("brute force", brute)] {
        assert!(at(&v, 20, 20) < 0.1, "{name}: the pit's floor sees {} of the sky", at(&v, 20, 20));
        assert_eq!(at(&v, 5, 5), 1.0, "{name}: flat ground away from the pit sees the whole sky");
    }
}

#[test]
fn a_long_trench_floor_sees_its_opening() {
    // A trench along z: floor samples |x - 20| <= 4 at -4 m, its walls rising to 0 m between x = 4 and 5
    // from the axis. The view factor of the opening from the floor's centre line (infinite trench) is
    // sin(theta) with tan(theta) = 5 / 4: 0.781.
    let (nx, nz) = (41u32, 201u32);
    let hf = grid(nx, nz, |ix, _| if (ix as i32 - 20).abs() <= 4 { -4.0 } else { 0.0 });
    let expected = 5.0 / 41f32.sqrt();
    let (pyramid, brute) = both("trench", &hf);
    for (name, v) in [("pyramid", pyramid), ("brute force", brute)] {
        // The centre line away from the trench's ends, averaged over the per-sample jitter.
        let line: Vec<f32> = (60..140).map(|iz| v[(iz * nx + 20) as usize]).collect();
        let mean = line.iter().sum::<f32>() / line.len() as f32;
        assert!((mean - expected).abs() < 0.05, "{name}: the trench floor sees {mean}, the view factor is {expected}");
    }
}

/// A rough terrain: a sum of sines at six scales, 12 m of relief over 96 x 82 samples.
fn rough() -> Heightfield {
    grid(96, 82, |ix, iz| {
        let (x, z) = (ix as f32, iz as f32);
        (0..6)
            .map(|k| {
                let f = 0.05 * 1.9f32.powi(k);
                let a = 6.0 / 1.8f32.powi(k);
                a * (f * x + 1.3 * k as f32).sin() * (0.8 * f * z + 0.7 * k as f32).cos()
            })
            .sum()
    })
}

/// The built-in valley's terrain: 100 x 81 samples of the Jacksboro DEM over 60 m x 60 m, heights x 2.5.
fn valley() -> Heightfield {
    let desc = TerrainDesc {
        heightmap: "assets/terrain/jacksboro_dem.png".into(),
        crop: Some([160, 84, 100, 81]),
        extent: [60.0, 60.0],
        vertical_scale: 2.5,
        base: 0.0,
    };
    let domain = Aabb { min: [0.0; 3], max: [60.0, 18.0, 60.0] };
    load_heightfield(&desc, Path::new(env!("CARGO_MANIFEST_DIR")), &domain).expect("the shipped DEM loads")
}

#[test]
fn the_pyramid_agrees_with_the_plain_march() {
    for (name, hf) in [("rough", rough()), ("valley DEM", valley())] {
        let (pyramid, brute) = both(name, &hf);
        let diff: Vec<f32> = pyramid.iter().zip(&brute).map(|(a, b)| (a - b).abs()).collect();
        let mean = diff.iter().sum::<f32>() / diff.len() as f32;
        let worst = diff.iter().fold(0.0f32, |m, &d| m.max(d));
        let visibility = brute.iter().sum::<f32>() / brute.len() as f32;
        println!("{name}: mean visibility {visibility:.3}, pyramid vs brute force: mean |diff| {mean:e}, max {worst}");
        assert!(visibility < 0.97, "{name}: a test terrain with so little occlusion proves nothing ({visibility})");
        // The same steps are tested; only rounding at a grazing step may flip a ray (1/64 each).
        assert!(mean < 1e-3 && worst <= 2.0 / RAYS as f32 + 1e-6, "{name}: mean |diff| {mean}, max {worst}");
    }
}
