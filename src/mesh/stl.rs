//! STL through `stl_io`, ASCII (`solid ...`) or binary (an 80-byte header, a triangle count and 50 bytes a
//! triangle). A binary file's count must match its length before a triangle is read, and at most
//! [`super::MAX_TRIANGLES`] triangles are taken from an ASCII one (each is counted as it is read).

use super::{MeshError, Soup, MAX_TRIANGLES};
use std::io::Cursor;
use std::path::Path;

/// The triangles of STL `bytes` (`path` names the file in errors).
pub(super) fn decode(bytes: &[u8], path: &Path) -> Result<Soup, MeshError> {
    let parse = |message: String| MeshError::Parse { path: path.to_path_buf(), format: "STL", message };
    let declared = bytes.get(80..84).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64);
    let binary = declared.is_some_and(|n| bytes.len() as u64 == 84 + 50 * n);
    let mut soup = Soup::default();
    let owned;
    let bytes = match declared {
        Some(count) if binary => {
            soup.room_for(count, 3 * count, path)?;
            if bytes.starts_with(b"solid ") {
                // A binary file whose free-form header starts as ASCII STL does (some CAD programs write
                // "solid NAME"): `stl_io` decides by that word, so hand it the triangles under a blank header.
                owned = [&[0u8; 80][..], &bytes[80..]].concat();
                &owned[..]
            } else {
                bytes
            }
        }
        _ if bytes.starts_with(b"solid ") => bytes,
        Some(count) => {
            return Err(parse(format!(
                "neither ASCII (it does not start with \"solid \") nor binary (the header declares {count} \
                 triangles, {} bytes, but the file has {})",
                84 + 50 * count,
                bytes.len()
            )))
        }
        None => {
            return Err(parse(format!(
                "neither ASCII (it does not start with \"solid \") nor binary ({} bytes is shorter than the \
                 84-byte header)",
                bytes.len()
            )))
        }
    };
    let mut cursor = Cursor::new(bytes);
    let reader = stl_io::create_stl_reader(&mut cursor).map_err(|e| parse(e.to_string()))?;
    for triangle in reader {
        let triangle = triangle.map_err(|e| parse(e.to_string()))?;
        if soup.triangles.len() >= MAX_TRIANGLES {
            return Err(MeshError::TooManyTriangles { path: path.to_path_buf(), count: MAX_TRIANGLES as u64 + 1 });
        }
        if soup.triangles.len().is_multiple_of(crate::cancel::CHECK_EVERY) {
            super::check_cancel(path)?;
        }
        let base = soup.vertices.len() as u32;
        soup.vertices.extend(triangle.vertices.iter().map(|v| [v[0], v[1], v[2]]));
        soup.triangles.push([base, base + 1, base + 2]);
    }
    Ok(soup)
}
