//! Wavefront OBJ through `tobj`: every object's faces, triangulated (fans), positions only; `mtllib` is
//! not followed (materials do not matter to an obstacle). The faces and the vertices (`v` lines) are
//! counted in the text before `tobj` parses it, so a file of millions of either is refused before it is
//! laid out.

use super::{MeshError, Soup};
use std::path::Path;

/// The triangles of OBJ `bytes` (`path` names the file in errors).
pub(super) fn decode(bytes: &[u8], path: &Path) -> Result<Soup, MeshError> {
    let parse = |message: String| MeshError::Parse { path: path.to_path_buf(), format: "OBJ", message };
    let mut soup = Soup::default();
    // Triangles the `f` lines make once fanned (corners - 2 per face), and the `v` lines' vertices.
    let (mut faces, mut vertices) = (0u64, 0u64);
    for line in bytes.split(|&b| b == b'\n') {
        let line = line.trim_ascii_start();
        if line.starts_with(b"f ") || line.starts_with(b"f\t") {
            faces += (line[1..].split(|b| b.is_ascii_whitespace()).filter(|t| !t.is_empty()).count() as u64).max(2) - 2;
        } else if line.starts_with(b"v ") || line.starts_with(b"v\t") {
            vertices += 1;
        }
    }
    soup.room_for(faces, vertices, path)?;
    let options = tobj::LoadOptions { triangulate: true, single_index: false, ..Default::default() };
    let mut reader = std::io::BufReader::new(bytes);
    let (models, _) = tobj::load_obj_buf(&mut reader, &options, |_| Err(tobj::LoadError::OpenFileFailed))
        .map_err(|e| parse(e.to_string()))?;
    for model in &models {
        let m = &model.mesh;
        if m.positions.len() % 3 != 0 || m.indices.len() % 3 != 0 {
            return Err(parse(format!("object \"{}\" has a partial vertex or triangle", model.name)));
        }
        soup.room_for((m.indices.len() / 3) as u64, (m.positions.len() / 3) as u64, path)?;
        let base = soup.vertices.len() as u64;
        let count = (m.positions.len() / 3) as u64;
        soup.vertices.extend(m.positions.chunks_exact(3).map(|p| [p[0], p[1], p[2]]));
        for t in m.indices.chunks_exact(3) {
            if let Some(&i) = t.iter().find(|&&i| i as u64 >= count) {
                return Err(parse(format!("object \"{}\" has a face on vertex {}, of {count}", model.name, i + 1)));
            }
            soup.triangles.push([t[0], t[1], t[2]].map(|i| (base + i as u64) as u32));
        }
    }
    Ok(soup)
}
