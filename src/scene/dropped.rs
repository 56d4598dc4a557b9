//! What a file dropped on the window (or chosen in the open dialog) is: a scene, a heightmap or a sky.

use crate::files::{self, FileKind, ReadError};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// What a file dropped on the window (or chosen in the open dialog) is taken to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DroppedFile {
    /// A scene file (`.ron`).
    Scene,
    /// A 16-bit grayscale PNG: replaces the terrain's heightmap.
    Heightmap,
    /// A sky: an equirectangular image (`.hdr`, `.exr`, `.jpg`, or a PNG that is not 16-bit grayscale) or a
    /// folder of six cube faces.
    Sky,
}

/// Why a dropped file cannot be used. Every message names the file; the cause is part of it (no
/// `source()`).
#[derive(Debug, Error)]
pub enum DropError {
    #[error("cannot open {}: no such file", path.display())]
    Missing { path: PathBuf },
    /// Not a regular file (FIFO, device, socket) or past the size limit of the kind it was taken for.
    #[error(transparent)]
    File(ReadError),
    #[error("cannot read {} as a PNG: {cause}", path.display())]
    Png { path: PathBuf, cause: image::ImageError },
    #[error("cannot open {}: {}", path.display(), DROPPABLE)]
    Unusable { path: PathBuf },
}

/// What [`DropError::Unusable`] says can be dropped.
const DROPPABLE: &str = "drop a scene (.ron), a 16-bit grayscale heightmap (.png) or a sky (.hdr, .exr, .png, .jpg, or a folder of six faces)";

/// Classifies a dropped path by its extension and, for PNGs, by its pixel format (read from the header
/// only). A file is checked by the bounded reader ([`crate::files`]) as the kind it is taken for (a
/// regular file within that kind's size limit) before anything is read; a PNG is checked as a sky image,
/// the larger limit. Errors: a missing path, a path that is not a regular file (FIFO, device) or is too
/// large, an unreadable PNG, or a kind of file the app cannot use (the message says what can be
/// dropped).
pub fn classify_dropped_file(path: &Path) -> Result<DroppedFile, DropError> {
    if path.is_dir() {
        return Ok(DroppedFile::Sky);
    }
    let missing_or = |e: ReadError| match e.is_not_found() {
        true => DropError::Missing { path: path.to_path_buf() },
        false => DropError::File(e),
    };
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("ron") => {
            files::open(path, FileKind::Scene).map_err(missing_or)?;
            Ok(DroppedFile::Scene)
        }
        Some("hdr" | "exr" | "jpg" | "jpeg") => {
            files::open(path, FileKind::Sky).map_err(missing_or)?;
            Ok(DroppedFile::Sky)
        }
        Some("png") => {
            use image::ImageDecoder;
            let file = files::open(path, FileKind::Sky).map_err(missing_or)?;
            let decoder = image::codecs::png::PngDecoder::new(std::io::BufReader::new(file))
                .map_err(|cause| DropError::Png { path: path.to_path_buf(), cause })?;
            Ok(match decoder.color_type() {
                image::ColorType::L16 | image::ColorType::La16 => DroppedFile::Heightmap,
                _ => DroppedFile::Sky,
            })
        }
        _ if !path.exists() => Err(DropError::Missing { path: path.to_path_buf() }),
        _ => Err(DropError::Unusable { path: path.to_path_buf() }),
    }
}
