//! Times the terrain's sky-visibility bake (src/render/terrain_ao.rs) with and without its maximum-mipmap
//! pyramid, and checks that both agree; then the bounce-light bake (src/render/terrain_bounce.rs, its
//! two bounces under the default sun).
//!
//! `cargo run --release --example terrain_ao -- [SIZE | dem]...` (default: `512 dem`): SIZE x SIZE
//! samples of a synthetic rough terrain (1 m apart, the same landscape at every size, relief a tenth of
//! its side), `dem` the whole shipped Jacksboro DEM (403 x 344) at the built-in valley's scale. Prints
//! the fastest of three pyramid bakes and one plain march, and of three bounce bakes, wall time from
//! submission to completion.

use anyhow::{bail, Context};
use glam::Vec2;
use std::path::Path;
use waterview::gpu::GpuContext;
use waterview::render::terrain_ao::{bake_blocking, AoMethod, RAYS};
use waterview::render::terrain_bounce::{BOUNCES, MAX_BOUNCE_SIDE};
use waterview::scene::{load_heightfield, Aabb, TerrainDesc};
use waterview::terrain::Heightfield;

/// `n` x `n` samples 1 m apart: sines at scales from the whole terrain down to 4 samples.
fn rough(n: u32) -> Heightfield {
    let scale = n as f32 / 96.0;
    let octaves = (1..).take_while(|&k| 0.05 * 1.9f32.powi(k) / scale < 0.25 * std::f32::consts::TAU).count() as i32;
    let heights = (0..n * n)
        .map(|i| {
            let (x, z) = ((i % n) as f32 / scale, (i / n) as f32 / scale);
            let h: f32 = (0..=octaves)
                .map(|k| {
                    let f = 0.05 * 1.9f32.powi(k);
                    let a = 6.0 / 1.8f32.powi(k);
                    a * (f * x + 1.3 * k as f32).sin() * (0.8 * f * z + 0.7 * k as f32).cos()
                })
                .sum();
            h * scale
        })
        .collect();
    Heightfield { nx: n, nz: n, origin: Vec2::ZERO, extent: Vec2::splat((n - 1) as f32), heights }
}

/// The whole Jacksboro DEM at the built-in valley's scale (1 : 124, heights x 2.5).
fn jacksboro() -> anyhow::Result<Heightfield> {
    let desc = TerrainDesc {
        heightmap: "assets/terrain/jacksboro_dem.png".into(),
        crop: None,
        extent: [403.0 * 74.48 / 124.0, 344.0 * 92.15 / 124.0],
        vertical_scale: 2.5,
        base: 0.0,
    };
    let domain = Aabb { min: [0.0; 3], max: [250.0, 50.0, 260.0] };
    Ok(load_heightfield(&desc, Path::new(env!("CARGO_MANIFEST_DIR")), &domain)?)
}

fn main() -> anyhow::Result<()> {
    env_logger::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = if args.is_empty() { vec!["512".to_string(), "dem".to_string()] } else { args };
    let ctx = GpuContext::headless().context("no GPU adapter")?;
    println!("adapter: {}", ctx.adapter_summary());
    for arg in &args {
        let (name, hf) = match arg.as_str() {
            "dem" => ("Jacksboro DEM".to_string(), jacksboro()?),
            size => {
                let n: u32 = size.parse().with_context(|| format!("`{size}` is neither a size nor `dem`"))?;
                if !(2..=4096).contains(&n) {
                    bail!("size {n} is outside 2 ..= 4096");
                }
                (format!("rough {n}"), rough(n))
            }
        };
        let (pyramid, t_pyramid) = bake_blocking(&ctx, &hf, AoMethod::Pyramid, 3)?;
        let (brute, t_brute) = bake_blocking(&ctx, &hf, AoMethod::BruteForce, 1)?;
        let worst = pyramid.iter().zip(&brute).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        let mean = pyramid.iter().sum::<f32>() / pyramid.len() as f32;
        println!(
            "{name}: {} x {} samples, {RAYS} rays each, mean visibility {mean:.3}: pyramid {t_pyramid:.2} ms, \
             brute force {t_brute:.2} ms, speed-up {:.1}x, max |difference| {worst}",
            hf.nx,
            hf.nz,
            t_brute / t_pyramid
        );
        let sun = waterview::render::sun_direction(140.0, 38.0);
        let bounce =
            waterview::render::terrain_bounce::bake_blocking(&ctx, &hf, (sun, 2.6), (BOUNCES, MAX_BOUNCE_SIDE), 3)?;
        let mean = bounce.bounce.iter().map(|b| b.y).sum::<f32>() / bounce.bounce.len() as f32;
        println!(
            "{name}: bounce light, {BOUNCES} bounces on {} x {} texels (stride {}): {:.2} ms, mean bounced \
             irradiance (green) {mean:.4}",
            bounce.dims.0, bounce.dims.1, bounce.stride, bounce.ms
        );
    }
    Ok(())
}
