//! glTF 2.0 through the `gltf` crate: `.glb` (binary chunk) or `.gltf` (JSON, buffers as `data:` URIs or
//! files beside it, read through [`crate::files`]). The default scene's nodes (or the first scene's, or
//! every mesh once when there is no scene) are walked with their transforms, and every primitive of
//! mode `TRIANGLES` is taken (points and lines are skipped; strips and fans are refused). Before any
//! buffer is read, every primitive's accessors are checked against their buffer views (types, stride,
//! extent: what the crate's reader would otherwise assert on) and the vertices and triangles of every mesh
//! times the nodes that instance it are counted against [`super::MAX_VERTICES`] and
//! [`super::MAX_TRIANGLES`].

use super::{MeshError, Soup};
use crate::files::{self, FileKind};
use base64::Engine as _;
use glam::{Mat4, Vec3};
use std::path::Path;

/// Most node visits while walking the scene graph (a hostile file can share children many times).
const MAX_NODE_VISITS: usize = 1 << 16;

/// Deepest node nesting followed.
const MAX_DEPTH: usize = 64;

/// The triangles of glTF or GLB `bytes` (`path` names the file in errors and locates external buffers).
pub(super) fn decode(bytes: &[u8], path: &Path) -> Result<Soup, MeshError> {
    let parse = |message: String| MeshError::Parse { path: path.to_path_buf(), format: "glTF", message };
    let gltf = gltf::Gltf::from_slice_without_validation(bytes).map_err(|e| parse(e.to_string()))?;
    // gltf-json 1.4's validation indexes a primitive's POSITION accessor without a bounds check (a file
    // naming accessor 0 with no accessors panics it), so the attributes' and indices' accessors are
    // checked here first; the crate's validation then checks every other index.
    let json = gltf.document.into_json();
    for (m, mesh) in json.meshes.iter().enumerate() {
        for (p, primitive) in mesh.primitives.iter().enumerate() {
            let used = primitive.attributes.values().chain(primitive.indices.as_ref());
            if let Some(a) = used.map(|a| a.value()).find(|&a| a >= json.accessors.len()) {
                return Err(parse(format!(
                    "mesh {m} primitive {p} uses accessor {a}, but there are {}",
                    json.accessors.len()
                )));
            }
        }
    }
    let document = gltf::Document::from_json(json).map_err(|e| parse(e.to_string()))?;
    // What the file asks for, before a byte of its buffers is decoded: every primitive's accessors are
    // checked against their buffer views (the crate's reader asserts on a stride shorter than an element),
    // and the vertices and triangles of every mesh times the nodes that instance it are counted against
    // the limits (a mesh of a million vertices instanced by 65 536 nodes is 786 GB of positions).
    let sizes = document.meshes().map(|m| mesh_size(&m, path)).collect::<Result<Vec<_>, _>>()?;
    let instances = instances(&document, path)?;
    let (mut triangles, mut vertices) = (0u64, 0u64);
    for (mesh, _) in &instances {
        let (t, v) = sizes[mesh.index()];
        (triangles, vertices) = (triangles.saturating_add(t), vertices.saturating_add(v));
    }
    super::check_limits(triangles, vertices, path)?;
    let mut blob = gltf.blob;
    let mut buffers: Vec<Vec<u8>> = Vec::new();
    for buffer in document.buffers() {
        let data = match buffer.source() {
            gltf::buffer::Source::Bin => {
                // Taken, not copied: only one buffer may be the binary chunk (a file of many buffers
                // without a URI made a copy of up to 256 MiB each).
                blob.take().ok_or_else(|| {
                    parse(format!(
                        "buffer {} refers to a binary chunk the file lacks (or gave another buffer)",
                        buffer.index()
                    ))
                })?
            }
            gltf::buffer::Source::Uri(uri) => match uri.strip_prefix("data:") {
                Some(data) => {
                    let (_, encoded) = data
                        .split_once(";base64,")
                        .ok_or_else(|| parse(format!("buffer {}: a data URI that is not base64", buffer.index())))?;
                    base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .map_err(|e| parse(format!("buffer {}: {e}", buffer.index())))?
                }
                None => {
                    let file = path.parent().unwrap_or(Path::new("")).join(uri);
                    files::read(&file, FileKind::Mesh)?
                }
            },
        };
        if (data.len() as u64) < buffer.length() as u64 {
            return Err(parse(format!(
                "buffer {} holds {} bytes, less than its declared {}",
                buffer.index(),
                data.len(),
                buffer.length()
            )));
        }
        buffers.push(data);
    }
    let mut soup = Soup::default();
    for (mesh, world) in &instances {
        add_mesh(&mut soup, mesh, *world, &buffers, path)?;
    }
    Ok(soup)
}

/// The meshes to read with their world transforms: the default scene's nodes (or the first scene's)
/// walked with their transforms, a mesh once for every node that has it; every mesh once, untransformed,
/// when there is no scene. Errors: a graph deeper than [`MAX_DEPTH`] or of more than [`MAX_NODE_VISITS`]
/// node visits.
fn instances<'a>(document: &'a gltf::Document, path: &Path) -> Result<Vec<(gltf::Mesh<'a>, Mat4)>, MeshError> {
    let scene = document.default_scene().or_else(|| document.scenes().next());
    let Some(scene) = scene else {
        return Ok(document.meshes().map(|m| (m, Mat4::IDENTITY)).collect());
    };
    let mut out = Vec::new();
    let mut stack: Vec<(gltf::Node, Mat4, usize)> = scene.nodes().map(|n| (n, Mat4::IDENTITY, 0)).collect();
    let mut visits = 0;
    while let Some((node, parent, depth)) = stack.pop() {
        visits += 1;
        if visits > MAX_NODE_VISITS || depth > MAX_DEPTH {
            return Err(MeshError::Parse {
                path: path.to_path_buf(),
                format: "glTF",
                message: format!(
                    "the scene graph is deeper than {MAX_DEPTH} or has more than {MAX_NODE_VISITS} node visits"
                ),
            });
        }
        let world = parent * Mat4::from_cols_array_2d(&node.transform().matrix());
        if let Some(mesh) = node.mesh() {
            out.push((mesh, world));
        }
        stack.extend(node.children().map(|c| (c, world, depth + 1)));
    }
    Ok(out)
}

/// Whether a primitive of `mode` is read: triangles are, points and lines are skipped; strips and fans
/// are refused (`Err` with the message).
fn reads(mode: gltf::mesh::Mode) -> Result<bool, String> {
    match mode {
        gltf::mesh::Mode::Triangles => Ok(true),
        gltf::mesh::Mode::Points
        | gltf::mesh::Mode::Lines
        | gltf::mesh::Mode::LineLoop
        | gltf::mesh::Mode::LineStrip => Ok(false),
        mode => Err(format!("mode {mode:?} is not read; export triangles")),
    }
}

/// (triangles, vertices) one instance of `mesh` adds, after checking every triangle primitive's
/// accessors as [`add_mesh`] reads them: POSITION float VEC3, indices unsigned integer scalars, neither
/// sparse, each within its buffer view ([`check_accessor`]).
fn mesh_size(mesh: &gltf::Mesh, path: &Path) -> Result<(u64, u64), MeshError> {
    let parse = |message: String| MeshError::Parse { path: path.to_path_buf(), format: "glTF", message };
    let (mut triangles, mut vertices) = (0u64, 0u64);
    for primitive in mesh.primitives() {
        let what = || format!("mesh {} primitive {}", mesh.index(), primitive.index());
        if !reads(primitive.mode()).map_err(|m| parse(format!("{}: {m}", what())))? {
            continue;
        }
        let Some(positions) = primitive.get(&gltf::Semantic::Positions) else {
            return Err(parse(format!("{} has no POSITION", what())));
        };
        // The crate's reader assumes the types the specification allows (an index accessor of another
        // type reaches an `unreachable!`), so they are checked here; sparse accessors are not read.
        use gltf::accessor::{DataType, Dimensions};
        if positions.data_type() != DataType::F32 || positions.dimensions() != Dimensions::Vec3 {
            return Err(parse(format!("{}: POSITION is not float VEC3", what())));
        }
        if let Some(i) = primitive.indices() {
            if !matches!(i.data_type(), DataType::U8 | DataType::U16 | DataType::U32)
                || i.dimensions() != Dimensions::Scalar
            {
                return Err(parse(format!("{}: its indices are not unsigned integer scalars", what())));
            }
        }
        if positions.sparse().is_some() || primitive.indices().is_some_and(|i| i.sparse().is_some()) {
            return Err(parse(format!("{}: sparse accessors are not read", what())));
        }
        for (role, accessor) in [("POSITION", Some(positions.clone())), ("indices", primitive.indices())] {
            if let Some(a) = accessor {
                check_accessor(&a).map_err(|m| parse(format!("{}: {role} (accessor {}) {m}", what(), a.index())))?;
            }
        }
        let corners = primitive.indices().map_or(positions.count(), |a| a.count()) as u64;
        triangles = triangles.saturating_add(corners / 3);
        vertices = vertices.saturating_add(positions.count() as u64);
    }
    Ok((triangles, vertices))
}

/// Checks that a (non-sparse) accessor's elements lie where the crate's reader will take them: in a
/// buffer view, at least one of them, a byte stride no shorter than an element (the reader asserts
/// otherwise: gltf 1.4.1, `accessor/util.rs`), and the last element's end within the view, the view's
/// within its buffer's declared length (64-bit arithmetic: the reader's `usize` products may wrap).
/// `Err` says what is wrong.
fn check_accessor(a: &gltf::Accessor) -> Result<(), String> {
    let Some(view) = a.view() else { return Err("has no bufferView".into()) };
    let size = a.size() as u64;
    let stride = view.stride().map_or(size, |s| s as u64);
    if stride < size {
        return Err(format!(
            "lies in bufferView {} of byteStride {stride}, shorter than its {size}-byte elements",
            view.index()
        ));
    }
    let count = a.count() as u64;
    if count == 0 {
        return Err("has count 0".into());
    }
    let end = stride.checked_mul(count - 1).and_then(|b| b.checked_add(a.offset() as u64 + size));
    if end.is_none_or(|end| end > view.length() as u64) {
        return Err(format!(
            "runs past the end of bufferView {} ({} elements every {stride} bytes from byte {}, in {} bytes)",
            view.index(),
            count,
            a.offset(),
            view.length()
        ));
    }
    let buffer = view.buffer();
    if (view.offset() as u64).saturating_add(view.length() as u64) > buffer.length() as u64 {
        return Err(format!(
            "lies in bufferView {}, which runs past the end of buffer {} ({} + {} bytes of {})",
            view.index(),
            buffer.index(),
            view.offset(),
            view.length(),
            buffer.length()
        ));
    }
    Ok(())
}

/// Adds the triangle primitives of `mesh`, transformed by `world`.
fn add_mesh(
    soup: &mut Soup,
    mesh: &gltf::Mesh,
    world: Mat4,
    buffers: &[Vec<u8>],
    path: &Path,
) -> Result<(), MeshError> {
    let parse = |message: String| MeshError::Parse { path: path.to_path_buf(), format: "glTF", message };
    for primitive in mesh.primitives() {
        let what = || format!("mesh {} primitive {}", mesh.index(), primitive.index());
        // Modes, types and extents were checked by `mesh_size`.
        if !reads(primitive.mode()).map_err(|m| parse(format!("{}: {m}", what())))? {
            continue;
        }
        let Some(positions) = primitive.get(&gltf::Semantic::Positions) else {
            return Err(parse(format!("{} has no POSITION", what())));
        };
        let corners = primitive.indices().map_or(positions.count(), |a| a.count());
        soup.room_for(corners as u64 / 3, positions.count() as u64, path)?;
        let reader = primitive.reader(|b| buffers.get(b.index()).map(Vec::as_slice));
        let base = soup.vertices.len() as u64;
        let before = soup.vertices.len();
        let Some(read) = reader.read_positions() else {
            return Err(parse(format!("{}: POSITION lies outside its buffer", what())));
        };
        soup.vertices.extend(read.map(|p| world.transform_point3(Vec3::from(p)).to_array()));
        let count = (soup.vertices.len() - before) as u64;
        let indices: Vec<u32> = match reader.read_indices() {
            Some(i) => i.into_u32().collect(),
            None if primitive.indices().is_some() => {
                return Err(parse(format!("{}: its indices lie outside their buffer", what())))
            }
            None => (0..count as u32).collect(),
        };
        if let Some(&i) = indices.iter().find(|&&i| i as u64 >= count) {
            return Err(parse(format!("{}: index {i} past its {count} vertices", what())));
        }
        // A mirroring transform turns the winding inside out; the check's signed volume turns it back
        // only for the whole mesh, so flip this instance here.
        let mirrored = world.determinant() < 0.0;
        for t in indices.chunks_exact(3) {
            let [a, b, c] = [t[0], t[1], t[2]].map(|i| (base + i as u64) as u32);
            soup.triangles.push(if mirrored { [a, c, b] } else { [a, b, c] });
        }
    }
    Ok(())
}
