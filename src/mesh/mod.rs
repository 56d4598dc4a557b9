//! Triangle meshes for static obstacles: OBJ (through `tobj`), STL, ASCII or binary (through `stl_io`),
//! and glTF 2.0, `.gltf` or `.glb` (through `gltf`), read into one [`TriangleMesh`].
//!
//! [`load`] reads the file through the app's bounded reader ([`crate::files`], kind [`FileKind::Mesh`]:
//! regular files only, at most 256 MiB, so `/dev/zero` or a FIFO is refused without being opened) and
//! hands the bytes to [`from_bytes`], which every decoder shares. What comes out is checked before
//! anything else sees it:
//!
//! - at most [`MAX_TRIANGLES`] triangles and [`MAX_VERTICES`] vertices, counted before they are decoded
//!   wherever the file says how many (a binary STL's declared count against the file's length; an OBJ's
//!   `v` and `f` lines before `tobj` parses them; a glTF's accessor counts times the nodes that instance
//!   each mesh, and every accessor's stride and extent within its buffer, before any buffer is read), and
//!   counted while decoding otherwise (ASCII STL);
//! - every vertex finite, at least one triangle;
//! - vertices at the same position welded (glTF and STL repeat them per face), triangles that collapse to
//!   an edge or a point dropped;
//! - **watertight**: every edge shared by exactly two triangles, wound consistently (each directed edge
//!   once), so the inside is well defined; a mesh wound inward is turned outward (by its signed volume).
//!
//! An error names the file and what is wrong ([`MeshError`]); a decoder that panics on a hostile file (an
//! assertion in a dependency) is an error naming the file too ([`crate::files::guarded`]). Decoding
//! stops with [`MeshError::Cancelled`] when the build it belongs to is cancelled ([`crate::cancel`]).
//! Sizes against the simulation's spacing and domain are checked where the mesh is placed (`scene`).

mod gltf_mesh;
mod obj;
pub mod sdf;
mod stl;

use crate::files::{self, FileKind, ReadError};
use glam::Vec3;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Most triangles a mesh may have: the obstacles' distance fields are computed on the CPU once per build
/// with a bounding-volume hierarchy, about a second per million triangles on a desktop CPU.
pub const MAX_TRIANGLES: usize = 1 << 20;

/// Most vertices a mesh may have as decoded (before welding; 12 bytes each): three per triangle, as an
/// STL file or an unindexed glTF has them, so 36 MiB at most.
pub const MAX_VERTICES: usize = 3 * MAX_TRIANGLES;

/// A closed, outward-wound triangle mesh: positions in the file's units (metres once placed) and
/// triangles as indices into them, counter-clockwise seen from outside.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriangleMesh {
    /// Vertex positions, each finite, none repeated.
    pub vertices: Vec<Vec3>,
    /// Triangles, three indices into `vertices` each.
    pub triangles: Vec<[u32; 3]>,
}

/// A mesh file format, from the file's extension ([`MeshFormat::from_path`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeshFormat {
    /// Wavefront OBJ (`.obj`); materials are not read.
    Obj,
    /// STL (`.stl`), ASCII or binary.
    Stl,
    /// glTF 2.0 (`.gltf` JSON with embedded or neighbouring buffers, `.glb` binary).
    Gltf,
}

impl MeshFormat {
    /// The format named by `path`'s extension (case-insensitive), `None` for any other.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "obj" => Some(Self::Obj),
            "stl" => Some(Self::Stl),
            "gltf" | "glb" => Some(Self::Gltf),
            _ => None,
        }
    }

    /// The format's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Obj => "OBJ",
            Self::Stl => "STL",
            Self::Gltf => "glTF",
        }
    }
}

/// Why a mesh could not be loaded. Each message names the file; a cause is part of the message (no
/// `source()`).
#[derive(Debug, Error)]
pub enum MeshError {
    /// The file could not be read (missing, not a regular file, past [`FileKind::Mesh`]'s limit).
    #[error(transparent)]
    File(#[from] ReadError),
    /// The extension names no format read here.
    #[error("mesh {}: unknown format; the file name must end in .obj, .stl, .gltf or .glb", path.display())]
    UnknownFormat { path: PathBuf },
    /// The decoder refused the bytes.
    #[error("mesh {}: not a valid {format} file: {message}", path.display())]
    Parse { path: PathBuf, format: &'static str, message: String },
    /// More than [`MAX_TRIANGLES`] triangles (`count`: as many as were counted or declared).
    #[error("mesh {}: has {count} triangles or more; meshes are limited to {MAX_TRIANGLES} triangles", path.display())]
    TooManyTriangles { path: PathBuf, count: u64 },
    /// More than [`MAX_VERTICES`] vertices as stored (`count`: as many as were counted or declared, a
    /// glTF mesh's once for every node that instances it).
    #[error(
        "mesh {}: has {count} vertices or more (instances included); meshes are limited to {MAX_VERTICES} vertices",
        path.display()
    )]
    TooManyVertices { path: PathBuf, count: u64 },
    /// The build reading the mesh was cancelled ([`crate::cancel`]).
    #[error("mesh {}: reading it was cancelled", path.display())]
    Cancelled { path: PathBuf },
    /// No triangle (after dropping those that collapse to an edge or a point).
    #[error("mesh {}: holds no triangles", path.display())]
    Empty { path: PathBuf },
    /// A vertex coordinate is NaN or infinite (`index`: 0-based, as decoded).
    #[error("mesh {}: vertex {index} is not finite ({x}, {y}, {z})", path.display())]
    NotFinite { path: PathBuf, index: usize, x: f32, y: f32, z: f32 },
    /// An edge is not shared by exactly two triangles (`count` of them: 1 for a hole's rim, 3 or more
    /// where surfaces meet); `edges` of them are so in all.
    #[error(
        "mesh {}: is not watertight: {edges} edges are not shared by exactly two triangles; the first, from \
         ({}, {}, {}) to ({}, {}, {}), has {count} (a closed surface is needed to tell inside from outside)",
        path.display(), a.x, a.y, a.z, b.x, b.y, b.z
    )]
    NotWatertight { path: PathBuf, edges: usize, a: Vec3, b: Vec3, count: u32 },
    /// Two triangles sharing an edge are wound the same way along it (their normals disagree).
    #[error(
        "mesh {}: its triangles are not wound consistently: two triangles run the edge from ({}, {}, {}) to \
         ({}, {}, {}) the same way",
        path.display(), a.x, a.y, a.z, b.x, b.y, b.z
    )]
    NotOriented { path: PathBuf, a: Vec3, b: Vec3 },
    /// Closed but encloses no volume (all triangles in one plane, folded onto themselves).
    #[error("mesh {}: encloses no volume", path.display())]
    NoVolume { path: PathBuf },
}

/// Reads and checks the mesh at `path` (format from its extension, [`MeshFormat::from_path`]). A glTF
/// file's buffers in other files are read from beside it, through the same bounded reader.
///
/// Errors: see [`MeshError`].
pub fn load(path: &Path) -> Result<TriangleMesh, MeshError> {
    let format = MeshFormat::from_path(path).ok_or_else(|| MeshError::UnknownFormat { path: path.to_path_buf() })?;
    let bytes = files::read(path, FileKind::Mesh)?;
    from_bytes(&bytes, format, path)
}

/// Decodes and checks the bytes of a mesh file of `format`; `path` names it in errors (and locates a
/// glTF's external buffers). What [`load`] does once the file is read.
/// A decoder that panics (a dependency's assertion) gives [`MeshError::Parse`] naming the file.
pub fn from_bytes(bytes: &[u8], format: MeshFormat, path: &Path) -> Result<TriangleMesh, MeshError> {
    let decode = || {
        let soup = match format {
            MeshFormat::Obj => obj::decode(bytes, path)?,
            MeshFormat::Stl => stl::decode(bytes, path)?,
            MeshFormat::Gltf => gltf_mesh::decode(bytes, path)?,
        };
        soup.checked(path)
    };
    files::guarded(decode)
        .unwrap_or_else(|message| Err(MeshError::Parse { path: path.to_path_buf(), format: format.name(), message }))
}

/// [`MeshError::Cancelled`] when the build this runs in was cancelled ([`crate::cancel::requested`]).
pub(crate) fn check_cancel(path: &Path) -> Result<(), MeshError> {
    if crate::cancel::requested() {
        return Err(MeshError::Cancelled { path: path.to_path_buf() });
    }
    Ok(())
}

/// Triangles as decoded, before the checks: positions (possibly repeated) and index triples.
#[derive(Default)]
pub(crate) struct Soup {
    pub(crate) vertices: Vec<[f32; 3]>,
    pub(crate) triangles: Vec<[u32; 3]>,
}

impl Soup {
    /// [`MeshError::TooManyTriangles`] or [`MeshError::TooManyVertices`] once the triangles and vertices
    /// decoded so far plus `triangles` and `vertices` more pass [`MAX_TRIANGLES`] or [`MAX_VERTICES`]; also
    /// [`MeshError::Cancelled`] when the build was cancelled (decoders call this as they go).
    pub(crate) fn room_for(&self, triangles: u64, vertices: u64, path: &Path) -> Result<(), MeshError> {
        check_limits(self.triangles.len() as u64 + triangles, self.vertices.len() as u64 + vertices, path)?;
        check_cancel(path)
    }

    /// The checked mesh (see the module docs): finite, welded, not empty, watertight, outward.
    fn checked(self, path: &Path) -> Result<TriangleMesh, MeshError> {
        let path_buf = || path.to_path_buf();
        if let Some((index, v)) = self.vertices.iter().enumerate().find(|(_, v)| !v.iter().all(|c| c.is_finite())) {
            return Err(MeshError::NotFinite { path: path_buf(), index, x: v[0], y: v[1], z: v[2] });
        }
        // Weld by exact position (bit pattern; -0 and 0 are one position).
        let mut remap = Vec::with_capacity(self.vertices.len());
        let mut welded: Vec<Vec3> = Vec::new();
        let mut seen: HashMap<[u32; 3], u32> = HashMap::new();
        for (i, v) in self.vertices.iter().enumerate() {
            if i.is_multiple_of(crate::cancel::CHECK_EVERY) {
                check_cancel(path)?;
            }
            let key = v.map(|c| if c == 0.0 { 0 } else { c.to_bits() });
            let index = *seen.entry(key).or_insert_with(|| {
                welded.push(Vec3::from(*v));
                (welded.len() - 1) as u32
            });
            remap.push(index);
        }
        let mut triangles = Vec::with_capacity(self.triangles.len());
        for t in &self.triangles {
            let Some(w) = t.iter().map(|&i| remap.get(i as usize).copied()).collect::<Option<Vec<u32>>>() else {
                return Err(MeshError::Parse {
                    path: path_buf(),
                    format: "mesh",
                    message: format!("a triangle indexes vertex {} of {}", t.iter().max().unwrap_or(&0), remap.len()),
                });
            };
            if w[0] != w[1] && w[1] != w[2] && w[0] != w[2] {
                triangles.push([w[0], w[1], w[2]]);
            }
        }
        if triangles.is_empty() {
            return Err(MeshError::Empty { path: path_buf() });
        }
        check_closed(&welded, &triangles, path)?;
        // Signed volume (divergence theorem): negative when wound inward.
        let volume: f64 = triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| welded[i as usize].as_dvec3());
                a.dot(b.cross(c)) / 6.0
            })
            .sum();
        let (lo, hi) = bounds(&welded);
        let extent = (hi - lo).as_dvec3();
        if volume.abs() <= 1e-9 * extent.x * extent.y * extent.z || !volume.is_finite() {
            return Err(MeshError::NoVolume { path: path_buf() });
        }
        if volume < 0.0 {
            for t in &mut triangles {
                t.swap(1, 2);
            }
        }
        Ok(TriangleMesh { vertices: welded, triangles })
    }
}

/// [`MeshError::TooManyTriangles`] or [`MeshError::TooManyVertices`] when `triangles` or `vertices` pass
/// [`MAX_TRIANGLES`] or [`MAX_VERTICES`].
pub(crate) fn check_limits(triangles: u64, vertices: u64, path: &Path) -> Result<(), MeshError> {
    if triangles > MAX_TRIANGLES as u64 {
        return Err(MeshError::TooManyTriangles { path: path.to_path_buf(), count: triangles });
    }
    if vertices > MAX_VERTICES as u64 {
        return Err(MeshError::TooManyVertices { path: path.to_path_buf(), count: vertices });
    }
    Ok(())
}

/// Every undirected edge in exactly two triangles, each direction once.
fn check_closed(vertices: &[Vec3], triangles: &[[u32; 3]], path: &Path) -> Result<(), MeshError> {
    // Per undirected edge (low, high): triangles running low -> high, and high -> low.
    let mut edges: HashMap<(u32, u32), (u32, u32)> = HashMap::with_capacity(triangles.len() * 3 / 2);
    for t in triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            let e = edges.entry((a.min(b), a.max(b))).or_insert((0, 0));
            if a < b {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
    }
    let v = |i: u32| vertices[i as usize];
    let mut open: Vec<((u32, u32), u32)> =
        edges.iter().filter(|(_, &(f, b))| f + b != 2).map(|(&e, &(f, b))| (e, f + b)).collect();
    if !open.is_empty() {
        open.sort_unstable();
        let ((a, b), count) = open[0];
        return Err(MeshError::NotWatertight { path: path.to_path_buf(), edges: open.len(), a: v(a), b: v(b), count });
    }
    let mut flipped: Vec<(u32, u32)> = edges.iter().filter(|(_, &(f, b))| f != 1 || b != 1).map(|(&e, _)| e).collect();
    if !flipped.is_empty() {
        flipped.sort_unstable();
        let (a, b) = flipped[0];
        return Err(MeshError::NotOriented { path: path.to_path_buf(), a: v(a), b: v(b) });
    }
    Ok(())
}

/// (min, max) corners of `points`; (0, 0) for none.
pub fn bounds(points: &[Vec3]) -> (Vec3, Vec3) {
    match points.first() {
        None => (Vec3::ZERO, Vec3::ZERO),
        Some(&p) => points.iter().fold((p, p), |(lo, hi), &q| (lo.min(q), hi.max(q))),
    }
}

impl TriangleMesh {
    /// The axis-aligned cube from `min` to `max` (metres), 12 triangles wound outward: obstacles in code
    /// and tests.
    pub fn cuboid(min: Vec3, max: Vec3) -> Self {
        let vertices = (0..8)
            .map(|i| {
                Vec3::new(
                    if i & 1 == 0 { min.x } else { max.x },
                    if i & 2 == 0 { min.y } else { max.y },
                    if i & 4 == 0 { min.z } else { max.z },
                )
            })
            .collect();
        // Faces as quads (outward, counter-clockwise), split in two.
        let quads = [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]];
        let triangles = quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect();
        Self { vertices, triangles }
    }

    /// The mesh as Wavefront OBJ text (`v` and `f` lines, 1-based): to write a generated mesh to a file.
    pub fn to_obj(&self) -> String {
        let mut s = String::new();
        for v in &self.vertices {
            s += &format!("v {} {} {}\n", v.x, v.y, v.z);
        }
        for t in &self.triangles {
            s += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
        }
        s
    }

    /// (min, max) corners of the vertices, in the mesh's units.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        bounds(&self.vertices)
    }

    /// Surface area: the sum of the triangles' areas, in the mesh's units squared.
    pub fn area(&self) -> f32 {
        let p = |i: u32| self.vertices[i as usize];
        self.triangles.iter().map(|t| 0.5 * (p(t[1]) - p(t[0])).cross(p(t[2]) - p(t[0])).length()).sum()
    }
}

#[cfg(test)]
mod tests;
