//! Heightmaps: a 16-bit grayscale PNG and the units JSON beside it (README "Heightmaps and their units"),
//! read from disk or, for the Jacksboro DEM, from the copies embedded in the binary, into the
//! [`Heightfield`] the simulation collides with and the renderer draws.

use super::{Aabb, SceneError, TerrainDesc, MAX_HEIGHTMAP_SIZE};
use crate::files::{self, FileKind, ReadError};
use crate::terrain::Heightfield;
use glam::Vec2;
use serde::Deserialize;
use std::borrow::Cow;
use std::path::Path;

/// (file name, bytes) of the heightmaps and unit files embedded in the binary.
pub(super) const EMBEDDED_TERRAIN: &[(&str, &[u8])] = &[
    ("jacksboro_dem.png", include_bytes!("../../assets/terrain/jacksboro_dem.png")),
    ("jacksboro_dem.json", include_bytes!("../../assets/terrain/jacksboro_dem.json")),
];

/// Largest heightmap image decoded (before the crop), pixels per axis.
pub const MAX_HEIGHTMAP_DECODE_SIZE: u32 = 16384;

/// Most bytes the heightmap decoder may allocate for the decoded image (512 MiB: 16384 x 16384 16-bit
/// grayscale samples); a header claiming more is refused before decoding.
pub const MAX_HEIGHTMAP_DECODE_BYTES: u64 = 512 << 20;

/// Units of a heightmap, read from the JSON file beside the PNG (extra fields are ignored).
#[derive(Debug, Deserialize)]
struct HeightmapUnits {
    /// Elevation of pixel value 0, metres.
    min_elevation_m: f32,
    /// Elevation of the largest pixel value (65535, or 255 for 8-bit images), metres.
    max_elevation_m: f32,
    /// Ground distance between neighbouring pixels along x (east), metres.
    cell_size_x_m: f32,
    /// Ground distance between neighbouring pixels along image rows (south), metres.
    cell_size_y_m: f32,
}

/// The embedded copy of the asset with `path`'s file name, if there is one.
fn embedded(path: &Path) -> Option<&'static [u8]> {
    let name = path.file_name().and_then(|n| n.to_str());
    EMBEDDED_TERRAIN.iter().find(|(n, _)| Some(*n) == name).map(|(_, bytes)| *bytes)
}

/// The bytes of `path` read as `kind` (through the bounded reader, [`crate::files`]), or of the embedded
/// asset with the same file name when the file does not exist; the flag says whether the embedded copy
/// was used.
fn read_asset(path: &Path, kind: FileKind) -> Result<(Cow<'static, [u8]>, bool), ReadError> {
    match files::read(path, kind) {
        Ok(bytes) => Ok((bytes.into(), false)),
        Err(e) if e.is_not_found() => embedded(path).map(|b| (Cow::Borrowed(b), true)).ok_or(e),
        Err(e) => Err(e),
    }
}

/// Parses the units JSON of `json_path` (`bytes`; a leading byte-order mark is skipped) and checks its
/// ranges.
fn parse_units(bytes: &[u8], json_path: &Path) -> Result<HeightmapUnits, SceneError> {
    let err = |message: String| SceneError::Heightmap { path: json_path.to_path_buf(), message };
    let u: HeightmapUnits =
        serde_json::from_slice(files::without_bom(bytes)).map_err(|e| err(format!("malformed units file: {e}")))?;
    let finite = [u.min_elevation_m, u.max_elevation_m, u.cell_size_x_m, u.cell_size_y_m].iter().all(|v| v.is_finite());
    if !finite || u.max_elevation_m < u.min_elevation_m || u.cell_size_x_m <= 0.0 || u.cell_size_y_m <= 0.0 {
        return Err(err(format!("units out of range: {u:?} (need max >= min elevation, cell sizes > 0)")));
    }
    Ok(u)
}

/// Loads the heightmap of `desc` (path relative to `base_dir`) into a heightfield whose sample (0, 0)
/// sits at the domain's (min x, min z) and which spans `desc.extent`.
///
/// Pixel column i maps to +x, image row j (row 0 = north edge) to +z, one sample per pixel of the crop.
/// With a units JSON beside the PNG (same stem), the crop's true size is `width * cell_size_x_m` by
/// `height * cell_size_y_m`, `scale = extent[0] / true width`, and a pixel of elevation `e` gets
/// `y = base + (e - lowest e in the crop) * scale * vertical_scale`. Without a JSON the full 16-bit range
/// is taken to span `0.25 * extent[0]` metres (before `vertical_scale`).
///
/// The PNG and the JSON are read through the bounded reader ([`crate::files`], [`FileKind::Heightmap`]
/// and [`FileKind::HeightmapUnits`]); the decoding is [`heightfield_from_bytes`].
///
/// Errors: [`SceneError::File`] for a PNG or units file that is missing (a missing units file only means
/// "no units"), not a regular file (folder, FIFO, device) or past its size limit;
/// [`SceneError::Heightmap`] for an image that is not 16- or 8-bit grayscale PNG (8-bit is accepted with
/// a warning) or is past the decoder's limits, a crop outside the image or smaller than 2x2, more than
/// [`MAX_HEIGHTMAP_SIZE`] samples per axis after the crop, a malformed units file, units whose relief is
/// not finite (an elevation range or a cell size at the ends of the f32 range), heights that are not finite
/// (a `vertical_scale` or `base` that carries them past the f32 range).
pub fn load_heightfield(desc: &TerrainDesc, base_dir: &Path, domain: &Aabb) -> Result<Heightfield, SceneError> {
    let png_path = base_dir.join(&desc.heightmap);
    let (png, from_binary) = read_asset(&png_path, FileKind::Heightmap)?;
    // The units come from the same place as the PNG: the disk, or the copies embedded in the binary.
    let json_path = png_path.with_extension("json");
    let units = if from_binary {
        embedded(&json_path).map(Cow::Borrowed)
    } else {
        match files::read(&json_path, FileKind::HeightmapUnits) {
            Ok(bytes) => Some(Cow::Owned(bytes)),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        }
    };
    heightfield_from_bytes(desc, &png, units.as_deref(), &png_path, domain)
}

/// [`load_heightfield`] from bytes already read: `png`, the heightmap's PNG file, and `units`, its units
/// JSON (`None`: there is none); `png_path` names the PNG in errors (the units file is `png_path` with the
/// extension `json`). The PNG decoder refuses images over [`MAX_HEIGHTMAP_DECODE_SIZE`] pixels per axis or
/// [`MAX_HEIGHTMAP_DECODE_BYTES`] decoded, from the header, before decoding. Errors: as [`load_heightfield`], less
/// the reading.
pub fn heightfield_from_bytes(
    desc: &TerrainDesc,
    png: &[u8],
    units: Option<&[u8]>,
    png_path: &Path,
    domain: &Aabb,
) -> Result<Heightfield, SceneError> {
    let err = |message: String| SceneError::Heightmap { path: png_path.to_path_buf(), message };
    let extent_ok = desc.extent.iter().all(|e| e.is_finite() && *e > 0.0);
    if !(extent_ok && desc.vertical_scale.is_finite() && desc.vertical_scale > 0.0) {
        return Err(err(format!("extent {:?} and vertical_scale {} must be > 0", desc.extent, desc.vertical_scale)));
    }
    let units = units.map(|bytes| parse_units(bytes, &png_path.with_extension("json"))).transpose()?;
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(png), image::ImageFormat::Png);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_HEIGHTMAP_DECODE_SIZE);
    limits.max_image_height = Some(MAX_HEIGHTMAP_DECODE_SIZE);
    limits.max_alloc = Some(MAX_HEIGHTMAP_DECODE_BYTES);
    reader.limits(limits);
    // A decoder's panic (a hostile PNG reaching an assertion) is an error naming the file.
    let decoded = crate::files::guarded(|| reader.decode()).map_err(err)?;
    let image = decoded.map_err(|e| match e {
        image::ImageError::Limits(l) => err(format!(
            "refused by the decoder's limits ({l}): heightmaps are limited to {MAX_HEIGHTMAP_DECODE_SIZE} x {MAX_HEIGHTMAP_DECODE_SIZE} \
             pixels and {} decoded",
            crate::files::human_bytes(MAX_HEIGHTMAP_DECODE_BYTES)
        )),
        e => err(format!("cannot decode as PNG: {e}")),
    })?;
    let (width, height) = (image.width(), image.height());
    let (pixels, full_scale): (Vec<u16>, f32) = match image {
        image::DynamicImage::ImageLuma16(img) => (img.into_raw(), 65535.0),
        image::DynamicImage::ImageLuma8(img) => {
            log::warn!("heightmap {}: 8-bit grayscale, heights have only 256 levels", png_path.display());
            (img.into_raw().into_iter().map(u16::from).collect(), 255.0)
        }
        other => {
            return Err(err(format!("expected a 16-bit grayscale image, found {:?}", other.color())));
        }
    };

    let [cx, cy, cw, ch] = desc.crop.unwrap_or([0, 0, width, height]);
    if cw < 2 || ch < 2 {
        return Err(err(format!("crop {cw}x{ch} is smaller than 2x2 pixels")));
    }
    if cx as u64 + cw as u64 > width as u64 || cy as u64 + ch as u64 > height as u64 {
        return Err(err(format!(
            "crop (x {cx}, y {cy}, width {cw}, height {ch}) lies outside the {width}x{height} image"
        )));
    }
    if cw > MAX_HEIGHTMAP_SIZE || ch > MAX_HEIGHTMAP_SIZE {
        return Err(err(format!("{cw}x{ch} samples is more than {MAX_HEIGHTMAP_SIZE} per axis; crop it")));
    }
    let mut levels = Vec::with_capacity(cw as usize * ch as usize);
    for row in cy..cy + ch {
        let start = row as usize * width as usize + cx as usize;
        levels.extend(pixels[start..start + cw as usize].iter().map(|&v| v as f32 / full_scale));
    }
    let lowest = levels.iter().copied().fold(f32::MAX, f32::min);

    // World metres per unit of `level` (0..1).
    let metres_per_level = match &units {
        Some(u) => {
            let scale = desc.extent[0] / (cw as f32 * u.cell_size_x_m);
            let scale_z = desc.extent[1] / (ch as f32 * u.cell_size_y_m);
            if (scale_z / scale - 1.0).abs() > 0.05 {
                log::warn!(
                    "heightmap {}: extent {:?} stretches the crop's true shape ({:.0} m x {:.0} m) by {:.2} along z",
                    png_path.display(),
                    desc.extent,
                    cw as f32 * u.cell_size_x_m,
                    ch as f32 * u.cell_size_y_m,
                    scale_z / scale
                );
            }
            (u.max_elevation_m - u.min_elevation_m) * scale
        }
        None => 0.25 * desc.extent[0],
    };
    if !metres_per_level.is_finite() {
        // Only units can do this: an elevation range or a cell size at the ends of the f32 range.
        let units = units.as_ref().map(|u| format!("{u:?}")).unwrap_or_default();
        return Err(SceneError::Heightmap {
            path: png_path.with_extension("json"),
            message: format!(
                "units {units} give {metres_per_level} m of relief for the extent {:?}: elevations and cell sizes \
                 must give a finite height",
                desc.extent
            ),
        });
    }
    let heights: Vec<f32> =
        levels.iter().map(|&l| desc.base + (l - lowest) * metres_per_level * desc.vertical_scale).collect();
    if let Some(h) = heights.iter().find(|h| !h.is_finite()) {
        return Err(err(format!(
            "heights reach {h} m with base {} m and vertical_scale {} over {metres_per_level} m of relief: \
             they must stay finite",
            desc.base, desc.vertical_scale
        )));
    }
    Ok(Heightfield {
        nx: cw,
        nz: ch,
        origin: Vec2::new(domain.min[0], domain.min[2]),
        extent: Vec2::from(desc.extent),
        heights,
    })
}
