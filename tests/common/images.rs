//! The toleranced image comparison of the sort-last captures (tests/sort_last.rs, tests/mpi.rs): a
//! decomposed capture's frames against one GPU's or the threads' own.

/// A pixel "differs" when one of its R, G, B channels differs by more than this (of 255): well above the
/// 8-bit rounding of a surface moved by a fraction of a pixel, well below water against no water.
pub const PIXEL_THRESHOLD: u8 = 24;
/// Image tolerance of [`agree`]: mean absolute difference per channel (R, G, B, 0..255 units) and fraction
/// of the pixels that differ. The decomposed run's particles differ from one rank's by the counting sort's
/// order (about 1e-3 m after 15 steps, tests/cluster.rs); a pixel here is about 1.7 cm at the water, so
/// the two images differ by sub-pixel moves of the surface (measured on lavapipe: a few dozen pixels of
/// 76 800 differ at all, by 1 of 255); the fraction allows a silhouette's worth of whole pixels flipping
/// (150 pixels). Without the second rank's layers, about 2 % of the pixels differ (mean about 0.8).
pub const MEAN_TOLERANCE: f64 = 0.1;
pub const FRACTION_TOLERANCE: f64 = 0.002;

/// (mean absolute difference per channel over R, G and B in 0..255 units, fraction of the pixels whose
/// largest channel difference exceeds [`PIXEL_THRESHOLD`]).
pub fn image_difference(a: &image::RgbaImage, b: &image::RgbaImage) -> (f64, f64) {
    assert_eq!(a.dimensions(), b.dimensions());
    let (mut sum, mut over) = (0u64, 0u64);
    for (p, q) in a.pixels().zip(b.pixels()) {
        let d = [0, 1, 2].map(|c| p.0[c].abs_diff(q.0[c]));
        sum += d.iter().map(|&v| v as u64).sum::<u64>();
        over += (d.iter().copied().max().unwrap_or(0) > PIXEL_THRESHOLD) as u64;
    }
    let n = (a.width() * a.height()) as f64;
    (sum as f64 / (3.0 * n), over as f64 / n)
}

/// Whether two images agree within the tolerance ([`MEAN_TOLERANCE`], [`FRACTION_TOLERANCE`]).
pub fn agree((mean, fraction): (f64, f64)) -> bool {
    mean <= MEAN_TOLERANCE && fraction <= FRACTION_TOLERANCE
}

/// sRGB encoding of a linear value to 8 bits (IEC 61966-2-1), as an sRGB texture stores it; non-finite
/// values give 0.
pub fn srgb8(v: f32) -> u8 {
    let v = if v.is_finite() { v.clamp(0.0, 1.0) } else { 0.0 };
    let e = if v <= 0.003_130_8 { v * 12.92 } else { 1.055 * v.powf(1.0 / 2.4) - 0.055 };
    (e * 255.0).round() as u8
}

/// An OpenEXR image's linear values sRGB-encoded to 8 bits ([`srgb8`]; alpha as stored, 0..1), for the
/// toleranced comparison ([`image_difference`]).
pub fn srgb_image(linear: &image::Rgba32FImage) -> image::RgbaImage {
    image::RgbaImage::from_fn(linear.width(), linear.height(), |x, y| {
        let p = linear.get_pixel(x, y).0;
        image::Rgba([srgb8(p[0]), srgb8(p[1]), srgb8(p[2]), (p[3].clamp(0.0, 1.0) * 255.0).round() as u8])
    })
}
