//! Sky images on the CPU: a user's sky file decoded into the texels of the sky's cubemap ([`SkyCube`]),
//! with no GPU involved, so the window can do it on a worker thread (the frame never waits for a decoder)
//! and the fuzzer can drive it (`fuzz/fuzz_targets/sky_image.rs`). [`super::SkyPass::set_cube`] uploads
//! the result.
//!
//! A sky is an equirectangular image ([`equirect_from_bytes`]: Radiance `.hdr` and OpenEXR radiance as
//! stored, PNG and JPEG decoded from sRGB) or a folder of six square faces `px nx py ny pz nz`
//! ([`face_from_bytes`], [`cube_from_faces`]). [`load_sky`] reads either through the bounded reader
//! ([`crate::files`], [`FileKind::Sky`]: regular files of at most 1 GiB). The decoder refuses, from the
//! header and before decoding, images over [`SKY_DECODE_SIZE`] pixels per axis or [`SKY_DECODE_BYTES`]
//! decoded. The decoded image is box-filtered down to what the cubemap can show (4n x 2n texels for an
//! equirectangular image with n x n faces, n x n for a face) while it is converted to linear RGB one row
//! at a time, so a 16384 x 8192 8-bit PNG costs its 384 MiB of decoded pixels and no full-size float copy;
//! the filtered image is then resampled bilinearly into six faces of RGBA half floats. Non-finite and
//! negative radiance becomes 0, radiance above the half-float range 65504.

use crate::files::{self, human_bytes, FileKind, ReadError};
use glam::Vec3;
use image::DynamicImage;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Largest cube face edge of a loaded sky, texels.
pub const LOADED_FACE: u32 = 512;

/// Largest sky image decoded, pixels per axis (a 16384 x 8192 HDRI is the largest common size).
pub const SKY_DECODE_SIZE: u32 = 16384;

/// Most bytes the decoder may allocate for one decoded sky image (2 GiB: 16384 x 8192 pixels of RGBA
/// 32-bit floats); a header claiming more is refused before decoding.
pub const SKY_DECODE_BYTES: u64 = 2 << 30;

/// The face file names of a sky folder, in the cubemap's order (+x, -x, +y, -y, +z, -z; y up).
pub const FACE_NAMES: [&str; 6] = ["px", "nx", "py", "ny", "pz", "nz"];

/// The extensions a face file may have, in the order they are looked for.
const FACE_EXTENSIONS: [&str; 5] = ["hdr", "exr", "png", "jpg", "jpeg"];

/// Why a sky could not be used (the current sky stays). Every message names the file or folder; the
/// cause is part of the message (no `source()`), so printing the error with its chain shows it once.
#[derive(Debug, Error)]
pub enum SkyError {
    /// The file is missing, not a regular file (FIFO, device) or over 1 GiB.
    #[error(transparent)]
    File(#[from] ReadError),
    /// The bytes are not an image of a format the sky reads (HDR, EXR, PNG, JPEG), or are corrupt.
    #[error("cannot decode sky image {}: {cause}", path.display())]
    Decode { path: PathBuf, cause: image::ImageError },
    /// The image's header claims more than the decoder's limits.
    #[error("sky image {} is refused by the decoder's limits ({cause}): sky images are limited to {SKY_DECODE_SIZE} x \
        {SKY_DECODE_SIZE} pixels and {} decoded", path.display(), human_bytes(SKY_DECODE_BYTES))]
    Limits { path: PathBuf, cause: image::error::LimitError },
    /// Decoded, but of a shape that cannot be a sky (`reason`).
    #[error("sky image {} is {width}x{height}: {reason}", path.display())]
    Shape { path: PathBuf, width: u32, height: u32, reason: &'static str },
    /// A folder of cube faces without the face `name` (`px`, `nx`, ...).
    #[error("sky folder {} has no face {name} ({name}.hdr, .exr, .png, .jpg or .jpeg); a sky folder holds the six \
        faces px nx py ny pz nz", dir.display())]
    MissingFace { dir: PathBuf, name: &'static str },
}

/// A sky ready for the GPU: the texels of a cubemap, in linear radiance.
#[derive(Clone, Debug, PartialEq)]
pub struct SkyCube {
    /// Face edge, texels (at most [`LOADED_FACE`]).
    pub face: u32,
    /// Six faces in the order +x, -x, +y, -y, +z, -z (y up), each `face` rows of `face` texels, top row
    /// first; a texel is RGBA as IEEE half-float bits (alpha 1): `6 * face * face * 4` values.
    pub texels: Vec<u16>,
    /// The files it came from (one equirectangular image, or the six faces in order).
    pub sources: Vec<PathBuf>,
}

/// Reads the sky at `path`: a folder of six faces ([`face_paths`]) or an equirectangular image, each
/// file through the bounded reader ([`FileKind::Sky`]). Blocking and CPU-heavy (up to seconds for a
/// 16k image): the window calls it on a worker thread. Errors: see [`SkyError`].
pub fn load_sky(path: &Path) -> Result<SkyCube, SkyError> {
    if path.is_dir() {
        let paths = face_paths(path)?;
        let mut faces = Vec::with_capacity(6);
        for p in &paths {
            // One file's bytes at a time: each face is filtered down before the next is read.
            faces.push(face_from_bytes(&files::read(p, FileKind::Sky)?, p)?);
        }
        let faces: [image::Rgb32FImage; 6] = match faces.try_into() {
            Ok(f) => f,
            Err(_) => unreachable!("six paths give six faces"),
        };
        Ok(cube_from_faces(&faces, paths.to_vec()))
    } else {
        equirect_from_bytes(&files::read(path, FileKind::Sky)?, path)
    }
}

/// The six face files `px nx py ny pz nz` in `dir`, each the first of `NAME.hdr`, `.exr`, `.png`,
/// `.jpg`, `.jpeg` that exists (whatever it is: reading it checks that). Error: [`SkyError::MissingFace`].
pub fn face_paths(dir: &Path) -> Result<[PathBuf; 6], SkyError> {
    let find = |name: &'static str| {
        FACE_EXTENSIONS
            .iter()
            .map(|ext| dir.join(format!("{name}.{ext}")))
            .find(|p| std::fs::metadata(p).is_ok())
            .ok_or_else(|| SkyError::MissingFace { dir: dir.to_path_buf(), name })
    };
    Ok([find("px")?, find("nx")?, find("py")?, find("ny")?, find("pz")?, find("nz")?])
}

/// Decodes the bytes of an image file (format from its first bytes, else from `path`'s extension) with
/// the sky's limits. `path` names the file in errors.
fn decode(bytes: &[u8], path: &Path) -> Result<DynamicImage, SkyError> {
    let decode_err = |cause| SkyError::Decode { path: path.to_path_buf(), cause };
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes));
    if let Ok(format) = image::ImageFormat::from_path(path) {
        reader.set_format(format);
    }
    let mut reader = reader.with_guessed_format().map_err(|e| decode_err(image::ImageError::IoError(e)))?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(SKY_DECODE_SIZE);
    limits.max_image_height = Some(SKY_DECODE_SIZE);
    limits.max_alloc = Some(SKY_DECODE_BYTES);
    reader.limits(limits);
    reader.decode().map_err(|e| match e {
        image::ImageError::Limits(cause) => SkyError::Limits { path: path.to_path_buf(), cause },
        e => decode_err(e),
    })
}

/// An equirectangular sky from the bytes of its file (`path` names it in errors; its extension is the
/// format's fallback): longitude along x (u = 0.5 looks toward -z, increasing toward +x), latitude along
/// y (top row = straight up). The face edge is the image's width / 4 rounded up to a power of two,
/// between 8 and [`LOADED_FACE`]. Errors: [`SkyError::Decode`], [`SkyError::Limits`], and
/// [`SkyError::Shape`] for an image that is not twice as wide as high.
pub fn equirect_from_bytes(bytes: &[u8], path: &Path) -> Result<SkyCube, SkyError> {
    let img = decode(bytes, path)?;
    let (w, h) = (img.width(), img.height());
    if w < 2 || h < 1 || w != 2 * h {
        return Err(SkyError::Shape {
            path: path.into(),
            width: w,
            height: h,
            reason: "an equirectangular sky must be twice as wide as high",
        });
    }
    let n = (w / 4).next_power_of_two().clamp(8, LOADED_FACE);
    let img = linear_box(&img, w.min(4 * n), h.min(2 * n));
    let (w, h) = img.dimensions();
    let mut texels = Vec::with_capacity((6 * n * n * 4) as usize);
    for face in 0..6 {
        for y in 0..n {
            for x in 0..n {
                let uv = [(x as f32 + 0.5) / n as f32 * 2.0 - 1.0, (y as f32 + 0.5) / n as f32 * 2.0 - 1.0];
                let d = face_dir(face, uv);
                let u = 0.5 + d.x.atan2(-d.z) / std::f32::consts::TAU;
                let v = 0.5 - d.y.clamp(-1.0, 1.0).asin() / std::f32::consts::PI;
                push_half(&mut texels, bilinear(&img, u * w as f32 - 0.5, v * h as f32 - 0.5));
            }
        }
    }
    Ok(SkyCube { face: n, texels, sources: vec![path.into()] })
}

/// One cube face from the bytes of its file (`path` names it in errors): decoded, checked square, and
/// box-filtered to at most [`LOADED_FACE`] texels a side in linear RGB. Errors: [`SkyError::Decode`],
/// [`SkyError::Limits`], and [`SkyError::Shape`] for a face that is not square.
pub fn face_from_bytes(bytes: &[u8], path: &Path) -> Result<image::Rgb32FImage, SkyError> {
    let img = decode(bytes, path)?;
    let (w, h) = (img.width(), img.height());
    if w != h || w == 0 {
        return Err(SkyError::Shape { path: path.into(), width: w, height: h, reason: "a cube face must be square" });
    }
    let n = w.min(LOADED_FACE);
    Ok(linear_box(&img, n, n))
}

/// The cubemap of six faces ([`face_from_bytes`]; +x, -x, +y, -y, +z, -z), resampled bilinearly to the
/// first face's size; `sources` are the files they came from.
pub fn cube_from_faces(faces: &[image::Rgb32FImage; 6], sources: Vec<PathBuf>) -> SkyCube {
    let n = faces[0].width().clamp(1, LOADED_FACE);
    let mut texels = Vec::with_capacity((6 * n * n * 4) as usize);
    for img in faces {
        let s = img.width() as f32 / n as f32;
        for y in 0..n {
            for x in 0..n {
                push_half(&mut texels, bilinear(img, (x as f32 + 0.5) * s - 0.5, (y as f32 + 0.5) * s - 0.5));
            }
        }
    }
    SkyCube { face: n, texels, sources }
}

/// World direction of cube texel uv (-1..1, y down) on `face` (+x, -x, +y, -y, +z, -z): the same
/// convention as `face_dir` in the shader and as cube sampling.
fn face_dir(face: u32, uv: [f32; 2]) -> Vec3 {
    let (u, v) = (uv[0], -uv[1]);
    match face {
        0 => Vec3::new(1.0, v, -u),
        1 => Vec3::new(-1.0, v, u),
        2 => Vec3::new(u, 1.0, -v),
        3 => Vec3::new(u, -1.0, v),
        4 => Vec3::new(u, v, 1.0),
        _ => Vec3::new(-u, v, -1.0),
    }
    .normalize()
}

/// Linear value of an sRGB-encoded one in 0..=1.
fn srgb_to_linear(v: f32) -> f32 {
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

/// Radiance as stored in a float image, made safe for the cubemap: non-finite and negative values 0,
/// at most the largest half float.
fn radiance(v: f32) -> f32 {
    if v.is_finite() {
        v.clamp(0.0, 65504.0)
    } else {
        0.0
    }
}

/// Writes row `y` of `raw` (`width` pixels of `channels` samples; 1-2 channels are grey) into `out` as
/// linear RGB through `to_linear`.
fn row_rgb<T: Copy>(
    raw: &[T],
    width: usize,
    channels: usize,
    y: usize,
    to_linear: impl Fn(T) -> f32,
    out: &mut [[f32; 3]],
) {
    let row = &raw[y * width * channels..(y + 1) * width * channels];
    for (o, px) in out.iter_mut().zip(row.chunks_exact(channels)) {
        *o = if channels < 3 { [to_linear(px[0]); 3] } else { [to_linear(px[0]), to_linear(px[1]), to_linear(px[2])] };
    }
}

/// `img` box-filtered to `tw` x `th` pixels (at most its own size) in linear RGB: HDR and EXR as stored,
/// 8- and 16-bit images decoded from sRGB, alpha dropped. Each source pixel falls in exactly one target
/// pixel (column `x * tw / w`, row `y * th / h`), which is the mean of its source pixels. The source is
/// converted one row at a time.
fn linear_box(img: &DynamicImage, tw: u32, th: u32) -> image::Rgb32FImage {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let (tw, th) = ((tw as usize).clamp(1, w.max(1)), (th as usize).clamp(1, h.max(1)));
    let column = |x: usize| x * tw / w;
    let mut per_column = vec![0u32; tw];
    for x in 0..w {
        per_column[column(x)] += 1;
    }
    let lut8: Vec<f32> = (0..=255u32).map(|v| srgb_to_linear(v as f32 / 255.0)).collect();
    let lut16: Vec<f32> = match img {
        DynamicImage::ImageLuma16(_)
        | DynamicImage::ImageLumaA16(_)
        | DynamicImage::ImageRgb16(_)
        | DynamicImage::ImageRgba16(_) => (0..=65535u32).map(|v| srgb_to_linear(v as f32 / 65535.0)).collect(),
        _ => Vec::new(),
    };
    let mut row = vec![[0.0f32; 3]; w];
    let mut out = vec![0.0f32; tw * th * 3];
    let mut y = 0;
    for ty in 0..th {
        let acc = &mut out[ty * tw * 3..(ty + 1) * tw * 3];
        let mut rows = 0u32;
        while y < h && y * th / h == ty {
            let l8 = |v: u8| lut8[v as usize];
            let l16 = |v: u16| lut16[v as usize];
            match img {
                DynamicImage::ImageLuma8(b) => row_rgb(b.as_raw(), w, 1, y, l8, &mut row),
                DynamicImage::ImageLumaA8(b) => row_rgb(b.as_raw(), w, 2, y, l8, &mut row),
                DynamicImage::ImageRgb8(b) => row_rgb(b.as_raw(), w, 3, y, l8, &mut row),
                DynamicImage::ImageRgba8(b) => row_rgb(b.as_raw(), w, 4, y, l8, &mut row),
                DynamicImage::ImageLuma16(b) => row_rgb(b.as_raw(), w, 1, y, l16, &mut row),
                DynamicImage::ImageLumaA16(b) => row_rgb(b.as_raw(), w, 2, y, l16, &mut row),
                DynamicImage::ImageRgb16(b) => row_rgb(b.as_raw(), w, 3, y, l16, &mut row),
                DynamicImage::ImageRgba16(b) => row_rgb(b.as_raw(), w, 4, y, l16, &mut row),
                DynamicImage::ImageRgb32F(b) => row_rgb(b.as_raw(), w, 3, y, radiance, &mut row),
                DynamicImage::ImageRgba32F(b) => row_rgb(b.as_raw(), w, 4, y, radiance, &mut row),
                // Pixel formats added to `image` later: through its 8-bit view.
                other => {
                    for (x, o) in row.iter_mut().enumerate() {
                        let p = image::GenericImageView::get_pixel(other, x as u32, y as u32).0;
                        *o = [l8(p[0]), l8(p[1]), l8(p[2])];
                    }
                }
            }
            for (x, rgb) in row.iter().enumerate() {
                let t = &mut acc[column(x) * 3..column(x) * 3 + 3];
                for k in 0..3 {
                    t[k] += rgb[k];
                }
            }
            rows += 1;
            y += 1;
        }
        for (tx, t) in acc.chunks_exact_mut(3).enumerate() {
            let n = (rows * per_column[tx]).max(1) as f32;
            for v in t {
                *v /= n;
            }
        }
    }
    match image::Rgb32FImage::from_raw(tw as u32, th as u32, out) {
        Some(img) => img,
        None => unreachable!("the buffer holds tw * th RGB pixels"),
    }
}

/// Bilinear sample at continuous texel coordinates, x wrapping (longitude), y clamped.
fn bilinear(img: &image::Rgb32FImage, x: f32, y: f32) -> [f32; 3] {
    let (w, h) = (img.width() as i64, img.height() as i64);
    let (x0, y0) = (x.floor(), y.floor());
    let (fx, fy) = (x - x0, y - y0);
    let px = |ix: i64, iy: i64| img.get_pixel(ix.rem_euclid(w) as u32, iy.clamp(0, h - 1) as u32).0;
    let (ix, iy) = (x0 as i64, y0 as i64);
    let (a, b, c, d) = (px(ix, iy), px(ix + 1, iy), px(ix, iy + 1), px(ix + 1, iy + 1));
    std::array::from_fn(|k| (a[k] * (1.0 - fx) + b[k] * fx) * (1.0 - fy) + (c[k] * (1.0 - fx) + d[k] * fx) * fy)
}

/// Appends `rgb` with alpha 1 as half-float bits.
fn push_half(out: &mut Vec<u16>, rgb: [f32; 3]) {
    out.extend(rgb.iter().chain(&[1.0]).map(|&v| half::f16::from_f32(v).to_bits()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_bytes(img: image::RgbImage) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).expect("encode PNG");
        out.into_inner()
    }

    fn texel(cube: &SkyCube, i: usize) -> [f32; 4] {
        std::array::from_fn(|k| half::f16::from_bits(cube.texels[4 * i + k]).to_f32())
    }

    #[test]
    fn a_uniform_srgb_sky_is_uniform_linear_radiance() {
        let bytes = png_bytes(image::RgbImage::from_pixel(64, 32, image::Rgb([188, 188, 188])));
        let cube = equirect_from_bytes(&bytes, Path::new("grey.png")).expect("decodes");
        assert_eq!(cube.face, 16, "64 texels around the horizon: 16 a face");
        assert_eq!(cube.texels.len(), 6 * 16 * 16 * 4);
        let want = srgb_to_linear(188.0 / 255.0);
        for i in 0..6 * 16 * 16 {
            let t = texel(&cube, i);
            assert!((0..3).all(|k| (t[k] - want).abs() < 2e-3) && t[3] == 1.0, "texel {i}: {t:?} != {want}");
        }
    }

    #[test]
    fn the_box_filter_averages_linear_values_and_cleans_float_radiance() {
        // 4x2 to 2x1: each target pixel is the mean of a 2x2 block.
        let img = image::Rgb32FImage::from_fn(4, 2, |x, y| {
            let v = (x + 4 * y) as f32;
            let blue = match (x, y) {
                (_, 1) => 1e9,
                (0, _) => f32::INFINITY,
                _ => -v,
            };
            image::Rgb([v, if x == 3 { f32::NAN } else { v }, blue])
        });
        let out = linear_box(&DynamicImage::ImageRgb32F(img), 2, 1);
        assert_eq!(out.dimensions(), (2, 1));
        // Left block: values 0, 1, 4, 5; right: 2, 3, 6, 7. NaN and infinity count 0, negatives 0, 1e9
        // (past the half-float range) 65504.
        assert_eq!(out.get_pixel(0, 0).0, [2.5, 2.5, 32752.0]);
        assert_eq!(out.get_pixel(1, 0).0, [4.5, 2.0, 32752.0]);
        // 8-bit input is decoded from sRGB before averaging: black and white give the linear mean 0.5.
        let bw = image::GrayImage::from_fn(2, 1, |x, _| image::Luma([if x == 0 { 0 } else { 255 }]));
        let out = linear_box(&DynamicImage::ImageLuma8(bw), 1, 1);
        assert_eq!(out.get_pixel(0, 0).0, [0.5; 3]);
    }

    #[test]
    fn equirect_shape_and_faces_are_checked() {
        let square = png_bytes(image::RgbImage::new(16, 16));
        let e = equirect_from_bytes(&square, Path::new("square.png")).unwrap_err().to_string();
        assert!(e.contains("square.png") && e.contains("twice as wide"), "{e}");
        let wide = png_bytes(image::RgbImage::new(16, 8));
        let e = face_from_bytes(&wide, Path::new("px.png")).unwrap_err().to_string();
        assert!(e.contains("px.png") && e.contains("square"), "{e}");
        let e = equirect_from_bytes(b"not an image", Path::new("sky.hdr")).unwrap_err().to_string();
        assert!(e.starts_with("cannot decode sky image sky.hdr"), "{e}");
        // Six faces of different colours keep their order (+x first).
        let faces: [image::Rgb32FImage; 6] =
            std::array::from_fn(|i| image::Rgb32FImage::from_pixel(4, 4, image::Rgb([i as f32, 0.0, 1.0])));
        let cube = cube_from_faces(&faces, Vec::new());
        assert_eq!(cube.face, 4);
        for f in 0..6 {
            assert_eq!(texel(&cube, f * 16 + 5), [f as f32, 0.0, 1.0, 1.0]);
        }
    }
}
