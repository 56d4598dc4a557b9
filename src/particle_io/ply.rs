//! PLY particle files through `ply-rs-bw` (Bourke's PLY format, <http://paulbourke.net/dataformats/ply/>).
//!
//! Written: `format binary_little_endian 1.0`, one `element vertex N` with `float` properties x, y, z, vx,
//! vy, vz, density (the names Houdini and Blender's importers map to positions and attributes), and a
//! header comment `time_s T` with the simulated time in seconds.
//!
//! Read: ASCII or binary (either byte order) files whose first element is `vertex` with scalar `x`, `y`,
//! `z` (float or double; any other properties are skipped) and optionally `vx`, `vy`, `vz` and `density`.
//! The header (at most [`MAX_HEADER`] bytes) is parsed from a stream; before the body is read, the
//! declared count is checked against the bytes after the header (binary: N times the vertex's size must
//! fit; ASCII: N lines of at least two bytes per property), so a header declaring more vertices than the
//! file can hold is refused without allocating for them, and against the limits of
//! [`super::check_count`]. The body is then read one vertex at a time (the crate's element readers; an
//! ASCII line at most [`MAX_LINE`] bytes) straight into the output arrays, reserved once.

use super::{ParticleFileError, Particles};
use ply_rs_bw::parser::{Parser, Reader};
use ply_rs_bw::ply::{
    Addable, ElementDef, Encoding, Ply, PropertyAccess, PropertyAccessResult, PropertyDef, PropertyType, ScalarType,
};
use ply_rs_bw::writer::Writer;
use std::io::{BufRead, Read};
use std::path::Path;

/// The header comment that carries the simulated time: `comment time_s 0.033333335`.
pub const TIME_COMMENT: &str = "time_s";

/// Most bytes of a header read (a few lines of elements, properties and comments).
pub const MAX_HEADER: u64 = 1 << 20;

/// Most bytes of one ASCII vertex line (a few dozen numbers).
pub const MAX_LINE: u64 = 1 << 16;

/// Property names of a written vertex, in file order.
const PROPERTIES: [&str; 7] = ["x", "y", "z", "vx", "vy", "vz", "density"];

/// One vertex as read or written.
#[derive(Clone, Copy, Debug, Default)]
struct Vertex {
    /// x, y, z, vx, vy, vz, density in [`PROPERTIES`] order.
    values: [f32; 7],
}

impl Vertex {
    fn index(name: &str) -> Option<usize> {
        PROPERTIES.iter().position(|p| *p == name)
    }
}

impl PropertyAccess for Vertex {
    fn new() -> Self {
        Self::default()
    }

    fn set_float(&mut self, name: &str, value: f32) -> PropertyAccessResult {
        match Self::index(name) {
            Some(k) => {
                self.values[k] = value;
                PropertyAccessResult::Set
            }
            None => PropertyAccessResult::Ignored,
        }
    }

    fn set_double(&mut self, name: &str, value: f64) -> PropertyAccessResult {
        self.set_float(name, value as f32)
    }

    fn get_float(&self, name: &str) -> Option<f32> {
        Self::index(name).map(|k| self.values[k])
    }
}

/// The bytes of a binary little-endian PLY file of `particles` at simulated time `time` (seconds).
/// Densities missing from `particles` are written as 0.
pub fn encode(particles: &Particles, time: f32) -> Vec<u8> {
    let mut ply = Ply::<Vertex>::new();
    ply.header.encoding = Encoding::BinaryLittleEndian;
    ply.header.comments.push("waterview particles: position (m), velocity (m/s), density (kg/m^3)".into());
    ply.header.comments.push(format!("{TIME_COMMENT} {time}"));
    let mut vertex = ElementDef::new("vertex".to_string());
    for name in PROPERTIES {
        vertex.properties.add(PropertyDef::new(name.to_string(), PropertyType::Scalar(ScalarType::Float)));
    }
    vertex.count = particles.len();
    ply.header.elements.add(vertex);
    let vertices = (0..particles.len())
        .map(|i| {
            let (p, v) = (particles.positions[i], particles.velocities.get(i).copied().unwrap_or_default());
            Vertex { values: [p[0], p[1], p[2], v[0], v[1], v[2], particles.densities.get(i).copied().unwrap_or(0.0)] }
        })
        .collect();
    ply.payload.insert("vertex".to_string(), vertices);
    let mut out = Vec::with_capacity(256 + particles.len() * 28);
    // Writing into memory with a header made to match the payload cannot fail.
    if let Err(e) = Writer::new().write_ply_unchecked(&mut out, &ply) {
        log::error!("PLY encoding failed: {e}");
    }
    out
}

/// Size in bytes of a binary scalar.
fn scalar_size(t: &ScalarType) -> u64 {
    match t {
        ScalarType::Char | ScalarType::UChar => 1,
        ScalarType::Short | ScalarType::UShort => 2,
        ScalarType::Int | ScalarType::UInt | ScalarType::Float => 4,
        ScalarType::Double => 8,
    }
}

/// The header of the PLY stream `source` (read through a reader that counts the bytes: at most
/// [`MAX_HEADER`]) and how many bytes it took.
fn read_header<R: BufRead>(
    source: R,
    path: &Path,
) -> Result<(Header, Reader<std::io::Take<R>>, u64), ParticleFileError> {
    let mut reader = Reader::new(source.take(MAX_HEADER));
    let header = Parser::<Vertex>::new()
        .read_header(&mut reader)
        .map_err(|e| ParticleFileError::malformed(path, format!("its PLY header is malformed: {e}")))?;
    let used = MAX_HEADER - reader.get_ref().limit();
    Ok((header, reader, used))
}

use ply_rs_bw::ply::Header;

/// The vertex count the PLY stream `source` declares (`element vertex N`, its first element), from its
/// header alone. Errors: a malformed header, or a first element that is not `vertex`.
pub fn declared_count<R: BufRead>(source: R, path: &Path) -> Result<u64, ParticleFileError> {
    let (header, _, _) = read_header(source, path)?;
    match header.elements.iter().next() {
        Some((_, v)) if v.name == "vertex" => Ok(v.count as u64),
        _ => Err(ParticleFileError::malformed(path, "declares no first element `vertex`")),
    }
}

/// The particles of a PLY file's bytes (see the module docs). `path` names the file in errors.
pub fn decode(bytes: &[u8], path: &Path) -> Result<Particles, ParticleFileError> {
    decode_from(bytes, bytes.len() as u64, path)
}

/// The particles of a PLY stream of `len` bytes (see the module docs): the header, the checks, then one
/// vertex at a time into the arrays. `path` names the file in errors.
pub fn decode_from<R: BufRead>(source: R, len: u64, path: &Path) -> Result<Particles, ParticleFileError> {
    let bad = |m: String| ParticleFileError::malformed(path, m);
    let (header, reader, used) = read_header(source, path)?;
    let body = len.saturating_sub(used);
    let Some((_, vertex)) = header.elements.iter().next() else {
        return Err(bad("declares no element (`element vertex N`)".into()));
    };
    if vertex.name != "vertex" {
        return Err(bad(format!(
            "its first element is `{}`; particles are read from a first element `vertex`",
            vertex.name
        )));
    }
    let float = |name: &str| match vertex.properties.get(name).map(|p| &p.data_type) {
        None => Ok(false),
        Some(PropertyType::Scalar(ScalarType::Float | ScalarType::Double)) => Ok(true),
        Some(other) => Err(bad(format!("vertex property `{name}` is {other:?}; it must be float or double"))),
    };
    for name in ["x", "y", "z"] {
        if !float(name)? {
            return Err(bad(format!("its vertices have no property `{name}`")));
        }
    }
    let velocity = [float("vx")?, float("vy")?, float("vz")?];
    if velocity.iter().any(|&v| v) && !velocity.iter().all(|&v| v) {
        return Err(bad("its vertices have some of vx, vy, vz but not all three".into()));
    }
    let density = float("density")?;
    let mut size = 0u64;
    for (name, p) in &vertex.properties {
        match &p.data_type {
            PropertyType::Scalar(t) => size += scalar_size(t),
            PropertyType::List(..) => {
                return Err(bad(format!("vertex property `{name}` is a list; particles have none")))
            }
        }
    }
    let n = vertex.count as u64;
    let ascii = header.encoding == Encoding::Ascii;
    let (need, per) = match ascii {
        true => (n.saturating_mul(2 * vertex.properties.len() as u64).saturating_sub(1), "2 bytes per value"),
        false => (n.saturating_mul(size), "its binary size"),
    };
    if need > body {
        return Err(bad(format!(
            "declares {n} vertices, which need at least {need} bytes ({per}), but only {body} bytes follow its header"
        )));
    }
    super::check_count(n, ascii, path)?;
    let parser = Parser::<Vertex>::new();
    let mut input = reader.into_inner();
    input.set_limit(u64::MAX);
    let mut out = Particles::with_capacity(n as usize, density);
    let mut line = String::new();
    for i in 0..n as usize {
        if i.is_multiple_of(crate::cancel::CHECK_EVERY) {
            super::check_cancel(path)?;
        }
        let read = match header.encoding {
            Encoding::Ascii => {
                line.clear();
                let got = (&mut input).take(MAX_LINE).read_line(&mut line);
                match got {
                    Ok(0) => {
                        return Err(bad(format!("its vertices cannot be read: the file ends at vertex {i} of {n}")))
                    }
                    Ok(k) if k as u64 == MAX_LINE && !line.ends_with('\n') => {
                        return Err(bad(format!("vertex {i} is a line of more than {MAX_LINE} bytes")))
                    }
                    Ok(_) => parser.read_ascii_element(&line, vertex).map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                }
            }
            Encoding::BinaryLittleEndian => {
                parser.read_little_endian_element(&mut input, vertex).map_err(|e| e.to_string())
            }
            Encoding::BinaryBigEndian => parser.read_big_endian_element(&mut input, vertex).map_err(|e| e.to_string()),
        };
        let a = read.map_err(|e| bad(format!("its vertices cannot be read: vertex {i}: {e}")))?.values;
        out.positions.push([a[0], a[1], a[2]]);
        out.velocities.push([a[3], a[4], a[5]]);
        if density {
            out.densities.push(a[6]);
        }
    }
    Ok(out)
}

/// The simulated time (seconds) in a PLY file's `time_s` header comment, if it has one.
pub fn time_of(bytes: &[u8]) -> Option<f32> {
    let header = Parser::<Vertex>::new().read_header(&mut Reader::new(bytes)).ok()?;
    header.comments.iter().find_map(|c| c.strip_prefix(TIME_COMMENT)?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(bytes: &[u8]) -> String {
        decode(bytes, Path::new("p.ply")).unwrap_err().to_string()
    }

    #[test]
    fn the_header_is_binary_little_endian_with_float_properties_and_the_time() {
        let p = Particles { positions: vec![[1.0, 2.0, 3.0]], velocities: vec![[4.0, 5.0, 6.0]], densities: vec![7.0] };
        let bytes = encode(&p, 0.25);
        let text = String::from_utf8_lossy(&bytes);
        let header = &text[..text.find("end_header\n").unwrap() + 11];
        assert!(header.starts_with("ply\nformat binary_little_endian 1.0\n"), "{header}");
        assert!(header.contains("comment time_s 0.25\n") && header.contains("element vertex 1\n"), "{header}");
        for name in PROPERTIES {
            assert!(header.contains(&format!("property float {name}\n")), "{name}: {header}");
        }
        let body = &bytes[header.len()..];
        let values: Vec<f32> = body.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(values, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        assert_eq!(time_of(&bytes), Some(0.25));
    }

    #[test]
    fn ascii_files_with_doubles_and_extra_properties_are_read() {
        let text = b"ply\nformat ascii 1.0\nelement vertex 2\nproperty double x\nproperty uchar red\n\
                     property double y\nproperty float z\nend_header\n1.5 255 2 3\n-1 0 0.25 1e-3\n";
        let p = decode(text, Path::new("a.ply")).unwrap();
        assert_eq!(p.positions, vec![[1.5, 2.0, 3.0], [-1.0, 0.25, 1e-3]]);
        assert_eq!(p.velocities, vec![[0.0; 3]; 2]);
        assert!(p.densities.is_empty());
    }

    #[test]
    fn hostile_headers_and_bodies_are_refused_with_the_reason() {
        let p = Particles { positions: vec![[0.0; 3]; 4], velocities: vec![[0.0; 3]; 4], densities: vec![0.0; 4] };
        let whole = encode(&p, 0.0);
        // Truncated: the body lacks half a vertex.
        let e = err(&whole[..whole.len() - 14]);
        assert!(e.starts_with("particle file p.ply: declares 4 vertices, which need at least 112 bytes"), "{e}");
        // A huge count in a small file: refused from the sizes, nothing allocated for it.
        let huge = String::from_utf8_lossy(&whole).replace("element vertex 4", "element vertex 4000000000000");
        let e = err(huge.as_bytes());
        assert!(e.contains("declares 4000000000000 vertices") && e.contains("follow its header"), "{e}");
        let e = err(b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n1 2\n");
        assert_eq!(e, "particle file p.ply: its vertices have no property `z`");
        let e = err(b"ply\nformat ascii 1.0\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n");
        assert!(e.contains("first element is `face`"), "{e}");
        let e = err(b"ply\nformat ascii 1.0\nelement vertex 1\nproperty int x\nend_header\n1\n");
        assert!(e.contains("vertex property `x` is Scalar(Int)"), "{e}");
        let e = err(b"ply\nformat binary_little_endian 1.0\nelement vertex 1\nend_heade");
        assert!(e.contains("header is malformed"), "{e}");
        let e = err(b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n4 5 x\n");
        assert!(e.contains("cannot be read"), "{e}");
    }
}
