//! Surface mesh files: binary little-endian PLY through `ply-rs-bw` (`element vertex` with float x, y, z,
//! nx, ny, nz; `element face` with `list uchar uint vertex_indices`; a header comment `time_s T`), read by
//! Blender, Houdini, ParaView, trimesh and meshio; or Wavefront OBJ text (`v`, `vn`, `f a//a b//b c//c`,
//! 1-based, and a `# time_s T` comment). Written to `PATH.part` and renamed when whole, as particle files
//! are ([`crate::particle_io::write_bytes`]).

use super::SurfaceMesh;
use crate::particle_io::ply::TIME_COMMENT;
use crate::particle_io::ParticleFileError;
use ply_rs_bw::ply::{Addable, ElementDef, Encoding, Ply, PropertyAccess, PropertyDef, PropertyType, ScalarType};
use ply_rs_bw::writer::Writer;
use std::fmt::Write as _;
use std::path::Path;

/// A surface mesh file's format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MeshFormat {
    /// Binary little-endian PLY with vertex normals.
    #[default]
    Ply,
    /// Wavefront OBJ text with vertex normals.
    Obj,
}

impl MeshFormat {
    /// The file extension: `ply` or `obj`.
    pub fn extension(self) -> &'static str {
        match self {
            MeshFormat::Ply => "ply",
            MeshFormat::Obj => "obj",
        }
    }

    /// The format named by `path`'s extension (any case), if it is one.
    pub fn of_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?;
        [MeshFormat::Ply, MeshFormat::Obj].into_iter().find(|f| ext.eq_ignore_ascii_case(f.extension()))
    }
}

impl std::str::FromStr for MeshFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [MeshFormat::Ply, MeshFormat::Obj]
            .into_iter()
            .find(|f| s.eq_ignore_ascii_case(f.extension()))
            .ok_or_else(|| format!("unknown surface format {s:?}: give ply or obj"))
    }
}

/// Vertex property names in file order.
const VERTEX: [&str; 6] = ["x", "y", "z", "nx", "ny", "nz"];
/// The face element's list property.
const FACE: &str = "vertex_indices";

/// One PLY element as written: a vertex (position and normal) or a face (three indices).
#[derive(Clone, Copy, Debug, Default)]
struct Element {
    vertex: [f32; 6],
    face: [u32; 3],
}

impl PropertyAccess for Element {
    fn new() -> Self {
        Self::default()
    }

    fn get_float(&self, name: &str) -> Option<f32> {
        VERTEX.iter().position(|p| *p == name).map(|k| self.vertex[k])
    }

    fn get_list_uint(&self, name: &str) -> Option<&[u32]> {
        (name == FACE).then_some(&self.face[..])
    }
}

/// The bytes of a binary PLY file of `mesh` at simulated time `time` (seconds).
pub fn encode_ply(mesh: &SurfaceMesh, time: f32) -> Vec<u8> {
    let mut ply = Ply::<Element>::new();
    ply.header.encoding = Encoding::BinaryLittleEndian;
    ply.header.comments.push("waterview water surface: position (m), unit normal out of the water".into());
    ply.header.comments.push(format!("{TIME_COMMENT} {time}"));
    let mut vertex = ElementDef::new("vertex".to_string());
    for name in VERTEX {
        vertex.properties.add(PropertyDef::new(name.to_string(), PropertyType::Scalar(ScalarType::Float)));
    }
    vertex.count = mesh.positions.len();
    let mut face = ElementDef::new("face".to_string());
    face.properties.add(PropertyDef::new(FACE.to_string(), PropertyType::List(ScalarType::UChar, ScalarType::UInt)));
    face.count = mesh.triangles.len();
    ply.header.elements.add(vertex);
    ply.header.elements.add(face);
    let vertices = mesh
        .positions
        .iter()
        .zip(&mesh.normals)
        .map(|(p, n)| Element { vertex: [p[0], p[1], p[2], n[0], n[1], n[2]], face: [0; 3] })
        .collect();
    let faces = mesh.triangles.iter().map(|&face| Element { vertex: [0.0; 6], face }).collect();
    ply.payload.insert("vertex".to_string(), vertices);
    ply.payload.insert("face".to_string(), faces);
    let mut out = Vec::with_capacity(512 + mesh.positions.len() * 24 + mesh.triangles.len() * 13);
    // Writing into memory with a header made to match the payload cannot fail.
    if let Err(e) = Writer::new().write_ply_unchecked(&mut out, &ply) {
        log::error!("PLY encoding failed: {e}");
    }
    out
}

/// The text of an OBJ file of `mesh` at simulated time `time` (seconds).
pub fn encode_obj(mesh: &SurfaceMesh, time: f32) -> Vec<u8> {
    let mut text = String::with_capacity(64 + mesh.positions.len() * 70 + mesh.triangles.len() * 40);
    // Writing into a String cannot fail.
    let _ = writeln!(
        text,
        "# waterview water surface: position (m), unit normal out of the water\n# {TIME_COMMENT} {time}"
    );
    for p in &mesh.positions {
        let _ = writeln!(text, "v {} {} {}", p[0], p[1], p[2]);
    }
    for n in &mesh.normals {
        let _ = writeln!(text, "vn {} {} {}", n[0], n[1], n[2]);
    }
    for t in &mesh.triangles {
        let [a, b, c] = t.map(|i| i as u64 + 1);
        let _ = writeln!(text, "f {a}//{a} {b}//{b} {c}//{c}");
    }
    text.into_bytes()
}

/// Writes `mesh` to `path` in `format` (through `PATH.part`, renamed when whole); returns the bytes
/// written. Errors: the file cannot be written (the message names it).
pub fn write(path: &Path, mesh: &SurfaceMesh, format: MeshFormat, time: f32) -> Result<u64, ParticleFileError> {
    let bytes = match format {
        MeshFormat::Ply => encode_ply(mesh, time),
        MeshFormat::Obj => encode_obj(mesh, time),
    };
    crate::particle_io::write_bytes(path, &bytes)?;
    Ok(bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tetrahedron() -> SurfaceMesh {
        SurfaceMesh {
            positions: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            normals: vec![[-0.57735, -0.57735, -0.57735], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            triangles: vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
        }
    }

    #[test]
    fn ply_holds_the_header_and_the_binary_payload() {
        let mesh = tetrahedron();
        assert!((mesh.volume() - 1.0 / 6.0).abs() < 1e-9, "outward winding");
        let bytes = encode_ply(&mesh, 0.5);
        let end = b"end_header\n";
        let at = bytes.windows(end.len()).position(|w| w == end).expect("a header") + end.len();
        let header = std::str::from_utf8(&bytes[..at]).expect("text header");
        for line in ["format binary_little_endian 1.0", "element vertex 4", "property float nz", "element face 4"] {
            assert!(header.contains(line), "{line} missing in {header}");
        }
        assert!(header.contains("property list uchar uint vertex_indices") && header.contains("time_s 0.5"));
        // 4 vertices of 6 floats, 4 faces of a count byte and 3 u32.
        assert_eq!(bytes.len() - at, 4 * 24 + 4 * 13);
        let face = &bytes[at + 96 + 13 * 3..];
        assert_eq!(face[0], 3);
        let index = |k: usize| u32::from_le_bytes(face[1 + 4 * k..5 + 4 * k].try_into().expect("4 bytes"));
        assert_eq!([index(0), index(1), index(2)], [1, 2, 3]);
    }

    #[test]
    fn obj_is_one_based_with_normals() {
        let text = String::from_utf8(encode_obj(&tetrahedron(), 1.25)).expect("text");
        assert!(text.contains("# time_s 1.25"));
        assert_eq!(text.lines().filter(|l| l.starts_with("v ")).count(), 4);
        assert_eq!(text.lines().filter(|l| l.starts_with("vn ")).count(), 4);
        assert!(text.lines().any(|l| l == "f 2//2 3//3 4//4"), "{text}");
        assert_eq!(MeshFormat::of_path(Path::new("a/b.OBJ")), Some(MeshFormat::Obj));
        assert_eq!("ply".parse::<MeshFormat>(), Ok(MeshFormat::Ply));
        assert!("stl".parse::<MeshFormat>().is_err());
    }
}
