//! VTK XML unstructured grids (`.vtu`; Kitware, "VTK File Formats",
//! <https://docs.vtk.org/en/latest/design_documents/VTKFileFormats.html>) holding particles, for ParaView.
//!
//! Written: `byte_order="LittleEndian"`, `header_type="UInt64"`, one `Piece` of N points and N
//! `VTK_VERTEX` cells (so every representation draws them), point data `velocity` (3 x Float32) and
//! `density` (Float32), the simulated time as the `TimeValue` field ParaView shows, and every array
//! appended raw after the XML (`<AppendedData encoding="raw">_`, each array a UInt64 byte count and its
//! bytes). No crate fitted: `vtkio`'s reader indexes its input with offsets taken from the file
//! (a hostile file panics it) and its stable release depends on nom 3, so this small codec writes the
//! one layout above and reads the common uncompressed ones.
//!
//! Read: `UnstructuredGrid` or `PolyData` files with one `Piece`, little- or big-endian, UInt32 or
//! UInt64 headers, whose points (and point data `velocity` and `density`, if present; other arrays are
//! skipped) are Float32 or Float64 arrays in `ascii`, inline `binary` (base64) or `appended` (raw or
//! base64) format. Compressed files are refused by name. Every count and offset from the file is checked
//! against the bytes there before it is used.

use super::{ParticleFileError, Particles};
use base64::Engine as _;
use quick_xml::events::{BytesStart, Event};
use std::fmt::Write as _;
use std::path::Path;

/// `VTK_VERTEX`, the cell type of one point.
const VTK_VERTEX: u8 = 1;

/// The bytes of a `.vtu` file of `particles` at simulated time `time` (seconds). Densities missing from
/// `particles` are written as 0.
pub fn encode(particles: &Particles, time: f32) -> Vec<u8> {
    let n = particles.len();
    let vel = |i: usize| particles.velocities.get(i).copied().unwrap_or_default();
    let arrays: [(&str, &str, usize, Vec<u8>); 6] = [
        ("Float32", "Points", 3, particles.positions.iter().flatten().flat_map(|v| v.to_le_bytes()).collect()),
        ("Float32", "velocity", 3, (0..n).flat_map(vel).flat_map(|v| v.to_le_bytes()).collect()),
        (
            "Float32",
            "density",
            1,
            (0..n).flat_map(|i| particles.densities.get(i).copied().unwrap_or(0.0).to_le_bytes()).collect(),
        ),
        ("Int32", "connectivity", 1, (0..n as i32).flat_map(|i| i.to_le_bytes()).collect()),
        ("Int32", "offsets", 1, (1..=n as i32).flat_map(|i| i.to_le_bytes()).collect()),
        ("UInt8", "types", 1, vec![VTK_VERTEX; n]),
    ];
    let mut offsets = [0usize; 6];
    let mut at = 0;
    for (k, a) in arrays.iter().enumerate() {
        offsets[k] = at;
        at += 8 + a.3.len();
    }
    let array = |k: usize| {
        let (t, name, c, _) = &arrays[k];
        format!(
            "<DataArray type=\"{t}\" Name=\"{name}\" NumberOfComponents=\"{c}\" format=\"appended\" offset=\"{}\"/>",
            offsets[k]
        )
    };
    let mut xml = String::new();
    let _ = write!(
        xml,
        "<?xml version=\"1.0\"?>\n\
         <VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n\
         \x20 <UnstructuredGrid>\n\
         \x20   <FieldData>\n\
         \x20     <DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" format=\"ascii\">{time}</DataArray>\n\
         \x20   </FieldData>\n\
         \x20   <Piece NumberOfPoints=\"{n}\" NumberOfCells=\"{n}\">\n\
         \x20     <Points>\n        {}\n      </Points>\n\
         \x20     <PointData Vectors=\"velocity\" Scalars=\"density\">\n        {}\n        {}\n      </PointData>\n\
         \x20     <Cells>\n        {}\n        {}\n        {}\n      </Cells>\n\
         \x20   </Piece>\n\
         \x20 </UnstructuredGrid>\n\
         \x20 <AppendedData encoding=\"raw\">\n   _",
        array(0),
        array(1),
        array(2),
        array(3),
        array(4),
        array(5)
    );
    let mut out = xml.into_bytes();
    out.reserve(at + 40);
    for a in &arrays {
        out.extend_from_slice(&(a.3.len() as u64).to_le_bytes());
        out.extend_from_slice(&a.3);
    }
    out.extend_from_slice(b"\n  </AppendedData>\n</VTKFile>\n");
    out
}

/// Where an array's values are.
#[derive(Clone, Debug)]
enum Source {
    /// Inside its element: `ascii` numbers or `binary` base64.
    Inline { binary: bool, text: String },
    /// In the appended data at this offset (bytes, or base64 characters for base64 appended data).
    Appended(usize),
}

/// A point array the reader wants.
#[derive(Clone, Debug)]
struct Array {
    /// 4 for Float32, 8 for Float64.
    size: usize,
    components: usize,
    source: Source,
}

/// What the XML says, up to the appended data.
#[derive(Default)]
struct Layout {
    big_endian: bool,
    /// Bytes of a binary block's header: 4 (UInt32) or 8 (UInt64).
    header: usize,
    points: Option<usize>,
    positions: Option<Array>,
    velocity: Option<Array>,
    density: Option<Array>,
    /// Where the appended data starts (after its `_`) and whether it is base64.
    appended: Option<(usize, bool)>,
}

/// Which array a `DataArray` element is: in `Points`, or a point-data array named velocity or density.
#[derive(Clone, Copy, PartialEq)]
enum Slot {
    Positions,
    Velocity,
    Density,
}

/// The particles of a `.vtu` (or `.vtp`) file's bytes (see the module docs). `path` names the file.
pub fn decode(bytes: &[u8], path: &Path) -> Result<Particles, ParticleFileError> {
    let bad = |m: String| ParticleFileError::malformed(path, m);
    let layout = parse_layout(bytes).map_err(bad)?;
    let n = layout.points.ok_or_else(|| bad("has no `Piece` with `NumberOfPoints`".into()))?;
    // Every point takes at least 4 bytes in any encoding (ascii: a digit and a space per coordinate).
    if (n as u64).saturating_mul(4) > bytes.len() as u64 {
        return Err(bad(format!("declares {n} points, more than its {} bytes can hold", bytes.len())));
    }
    let positions = layout.positions.as_ref().ok_or_else(|| bad("has no `Points` data array".into()))?;
    let read = |a: &Array, name: &str, components: usize| -> Result<Vec<f32>, ParticleFileError> {
        if a.components != components {
            return Err(bad(format!("`{name}` has {} components; it must have {components}", a.components)));
        }
        values(bytes, &layout, a, n * components).map_err(|m| bad(format!("`{name}`: {m}")))
    };
    let p = read(positions, "Points", 3)?;
    let v = layout.velocity.as_ref().map(|a| read(a, "velocity", 3)).transpose()?;
    let d = layout.density.as_ref().map(|a| read(a, "density", 1)).transpose()?;
    let triples = |v: &[f32]| v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect::<Vec<_>>();
    Ok(Particles {
        positions: triples(&p),
        velocities: v.as_deref().map_or_else(|| vec![[0.0; 3]; n], triples),
        densities: d.unwrap_or_default(),
    })
}

/// An attribute's value as text (`None` when absent or not UTF-8).
fn attr(e: &BytesStart, name: &str) -> Option<String> {
    let a = e.try_get_attribute(name).ok()??;
    a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|v| v.into_owned())
}

/// Reads the XML up to `<AppendedData>` (whose raw bytes are not XML) and notes what [`decode`] needs.
fn parse_layout(bytes: &[u8]) -> Result<Layout, String> {
    let mut reader = quick_xml::Reader::from_reader(bytes);
    let mut layout = Layout { header: 4, ..Layout::default() };
    let mut path: Vec<Vec<u8>> = Vec::new();
    // The DataArray being read, if it is one the reader wants, and its text so far.
    let mut open: Option<(Slot, Array)> = None;
    loop {
        let event = reader.read_event().map_err(|e| format!("is not well-formed XML: {e}"))?;
        let (start, empty) = match &event {
            Event::Start(e) => (Some(e), false),
            Event::Empty(e) => (Some(e), true),
            _ => (None, false),
        };
        if let Some(e) = start {
            let name = e.local_name().as_ref().to_vec();
            match name.as_slice() {
                b"VTKFile" => {
                    let kind = attr(e, "type").unwrap_or_default();
                    if kind != "UnstructuredGrid" && kind != "PolyData" {
                        return Err(format!(
                            "is a VTK `{kind}` file; particles are read from UnstructuredGrid or PolyData"
                        ));
                    }
                    if let Some(c) = attr(e, "compressor") {
                        return Err(format!(
                            "is compressed ({c}); save it uncompressed (ParaView: Compressor Type None)"
                        ));
                    }
                    layout.big_endian = attr(e, "byte_order").as_deref() == Some("BigEndian");
                    layout.header = match attr(e, "header_type").as_deref() {
                        None | Some("UInt32") => 4,
                        Some("UInt64") => 8,
                        Some(other) => return Err(format!("has header_type `{other}`; UInt32 or UInt64 expected")),
                    };
                }
                b"Piece" => {
                    if layout.points.is_some() {
                        return Err("has more than one `Piece`; particles are read from one".into());
                    }
                    let n = attr(e, "NumberOfPoints").and_then(|v| v.trim().parse::<usize>().ok());
                    layout.points = Some(n.ok_or("has a `Piece` without a valid `NumberOfPoints`")?);
                }
                b"DataArray" => {
                    let parent = path.last().map(Vec::as_slice);
                    let array_name = attr(e, "Name").unwrap_or_default().to_ascii_lowercase();
                    let slot = match parent {
                        Some(b"Points") => Some(Slot::Positions),
                        Some(b"PointData") if ["velocity", "velocities", "vel", "v"].contains(&array_name.as_str()) => {
                            Some(Slot::Velocity)
                        }
                        Some(b"PointData") if ["density", "rho"].contains(&array_name.as_str()) => Some(Slot::Density),
                        _ => None,
                    };
                    if let Some(slot) = slot {
                        let array = data_array(e)?;
                        if empty {
                            finish(&mut layout, slot, array)?;
                        } else {
                            open = Some((slot, array));
                        }
                    }
                }
                b"AppendedData" => {
                    let base64 = match attr(e, "encoding").as_deref() {
                        Some("raw") => false,
                        Some("base64") => true,
                        other => return Err(format!("has AppendedData encoding {other:?}; raw or base64 expected")),
                    };
                    let after = reader.buffer_position() as usize;
                    let underscore = bytes.get(after..).and_then(|b| b.iter().position(|&c| c == b'_'));
                    let start = underscore.ok_or("has AppendedData without its `_` marker")? + after + 1;
                    layout.appended = Some((start, base64));
                    return Ok(layout);
                }
                _ => {}
            }
            if !empty {
                path.push(name);
            }
        }
        match event {
            Event::Text(t) => {
                if let Some((_, Array { source: Source::Inline { text, .. }, .. })) = open.as_mut() {
                    text.push_str(&t.decode().map_err(|e| format!("has a data array that is not text: {e}"))?);
                }
            }
            Event::End(_) => {
                path.pop();
                if let Some((slot, array)) = open.take() {
                    finish(&mut layout, slot, array)?;
                }
            }
            Event::Eof => return Ok(layout),
            _ => {}
        }
    }
}

/// Stores a finished array in its slot (the first of each kind counts).
fn finish(layout: &mut Layout, slot: Slot, array: Array) -> Result<(), String> {
    let target = match slot {
        Slot::Positions => &mut layout.positions,
        Slot::Velocity => &mut layout.velocity,
        Slot::Density => &mut layout.density,
    };
    target.get_or_insert(array);
    Ok(())
}

/// A `DataArray` element's type, components and format.
fn data_array(e: &BytesStart) -> Result<Array, String> {
    let name = attr(e, "Name").unwrap_or_else(|| "Points".into());
    let size = match attr(e, "type").as_deref() {
        Some("Float32") => 4,
        Some("Float64") => 8,
        other => return Err(format!("array `{name}` has type {other:?}; Float32 or Float64 expected")),
    };
    let components = match attr(e, "NumberOfComponents") {
        None => 1,
        Some(c) => c.trim().parse::<usize>().map_err(|_| format!("array `{name}` has NumberOfComponents `{c}`"))?,
    };
    let source = match attr(e, "format").as_deref() {
        Some("ascii") => Source::Inline { binary: false, text: String::new() },
        Some("binary") => Source::Inline { binary: true, text: String::new() },
        Some("appended") => {
            let offset = attr(e, "offset").and_then(|o| o.trim().parse::<usize>().ok());
            Source::Appended(offset.ok_or(format!("appended array `{name}` has no valid offset"))?)
        }
        other => return Err(format!("array `{name}` has format {other:?}; ascii, binary or appended expected")),
    };
    Ok(Array { size, components, source })
}

/// The `count` values of array `a` as f32.
fn values(bytes: &[u8], layout: &Layout, a: &Array, count: usize) -> Result<Vec<f32>, String> {
    let raw: Vec<u8> = match &a.source {
        Source::Inline { binary: false, text } => {
            let mut out = Vec::with_capacity(count.min(text.len() / 2 + 1));
            for word in text.split_ascii_whitespace() {
                if out.len() == count {
                    return Err(format!("holds more than the {count} values its points need"));
                }
                out.push(word.parse::<f64>().map_err(|_| format!("`{word}` is not a number"))? as f32);
            }
            if out.len() < count {
                return Err(format!("holds {} values; its points need {count}", out.len()));
            }
            return Ok(out);
        }
        Source::Inline { binary: true, text } => base64_block(text.as_bytes(), layout)?,
        Source::Appended(offset) => {
            let (start, base64) = layout.appended.ok_or("is appended but the file has no AppendedData")?;
            let at = start.checked_add(*offset).filter(|&at| at <= bytes.len()).ok_or("its offset is past the end")?;
            if base64 {
                base64_block(&bytes[at..], layout)?
            } else {
                let h = layout.header;
                let header = bytes.get(at..at + h).ok_or("its header is past the end of the file")?;
                let len = header_len(header, layout.big_endian);
                let len = usize::try_from(len).map_err(|_| "its byte count is too large".to_string())?;
                let data = at.checked_add(h).and_then(|s| Some(s..s.checked_add(len)?));
                data.and_then(|r| bytes.get(r))
                    .ok_or(format!("declares {len} bytes, past the end of the file"))?
                    .to_vec()
            }
        }
    };
    let need = count.checked_mul(a.size).ok_or("its size overflows")?;
    if raw.len() != need {
        return Err(format!("holds {} bytes; its points need {need}", raw.len()));
    }
    Ok(raw
        .chunks_exact(a.size)
        .map(|c| match (a.size, layout.big_endian) {
            (4, false) => f32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            (4, true) => f32::from_be_bytes([c[0], c[1], c[2], c[3]]),
            (_, big) => {
                let b: [u8; 8] = [c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]];
                (if big { f64::from_be_bytes(b) } else { f64::from_le_bytes(b) }) as f32
            }
        })
        .collect())
}

/// A binary block's byte count from its header (4 or 8 bytes).
fn header_len(h: &[u8], big_endian: bool) -> u64 {
    match (h.len(), big_endian) {
        (4, false) => u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as u64,
        (4, true) => u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as u64,
        (_, big) => {
            let b: [u8; 8] = std::array::from_fn(|k| h.get(k).copied().unwrap_or(0));
            if big {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            }
        }
    }
}

/// The data of a base64 block (a header of `layout.header` bytes, then that many bytes), whether the
/// writer encoded the header and the data together or separately (VTK does the latter: the header's
/// base64 then ends in padding). The block ends at the first character that is not base64.
fn base64_block(text: &[u8], layout: &Layout) -> Result<Vec<u8>, String> {
    let engine = base64::engine::general_purpose::STANDARD;
    let chars: Vec<u8> = text
        .iter()
        .copied()
        .skip_while(u8::is_ascii_whitespace)
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=') || c.is_ascii_whitespace())
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let h = layout.header;
    let header_chars = h.div_ceil(3) * 4;
    let head = chars.get(..header_chars).ok_or("its base64 block is shorter than its header")?;
    let decoded_head = engine.decode(head).map_err(|e| format!("its base64 header is malformed: {e}"))?;
    let len = header_len(decoded_head.get(..h).ok_or("its base64 header is too short")?, layout.big_endian);
    let separate = head.ends_with(b"=");
    let data = if separate {
        // The data's own base64: ceil(len / 3) * 4 characters (more may follow: the next appended array).
        let rest = &chars[header_chars..];
        let want = usize::try_from(len).ok().and_then(|l| l.checked_add(2)).map_or(usize::MAX, |l| l / 3 * 4);
        engine.decode(&rest[..rest.len().min(want)]).map_err(|e| format!("its base64 data is malformed: {e}"))?
    } else {
        let all = engine.decode(&chars).map_err(|e| format!("its base64 data is malformed: {e}"))?;
        all.get(h..).unwrap_or_default().to_vec()
    };
    if (data.len() as u64) < len {
        return Err(format!("declares {len} bytes but its base64 holds {}", data.len()));
    }
    Ok(data[..len as usize].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        decode(text.as_bytes(), Path::new("p.vtu")).unwrap_err().to_string()
    }

    #[test]
    fn the_written_file_is_appended_raw_with_vertex_cells_and_the_time() {
        let p =
            Particles { positions: vec![[1.0, 2.0, 3.0]; 2], velocities: vec![[0.5; 3]; 2], densities: vec![9.0; 2] };
        let bytes = encode(&p, 0.125);
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("Name=\"TimeValue\" NumberOfTuples=\"1\" format=\"ascii\">0.125<"), "{text}");
        assert!(text.contains("<Piece NumberOfPoints=\"2\" NumberOfCells=\"2\">"), "{text}");
        assert!(text.contains("Name=\"types\" NumberOfComponents=\"1\" format=\"appended\""), "{text}");
        assert!(text.ends_with("\n  </AppendedData>\n</VTKFile>\n"));
        assert_eq!(decode(&bytes, Path::new("p.vtu")).unwrap(), p);
    }

    #[test]
    fn ascii_and_base64_files_are_read() {
        let ascii = r#"<VTKFile type="PolyData" byte_order="LittleEndian"><PolyData><Piece NumberOfPoints="2">
            <PointData><DataArray type="Float64" Name="Velocity" NumberOfComponents="3" format="ascii">1 2 3 4 5 6</DataArray></PointData>
            <Points><DataArray type="Float32" NumberOfComponents="3" format="ascii">0.5 0 0
            1 1 1</DataArray></Points></Piece></PolyData></VTKFile>"#;
        let p = decode(ascii.as_bytes(), Path::new("a.vtp")).unwrap();
        assert_eq!(p.positions, vec![[0.5, 0.0, 0.0], [1.0, 1.0, 1.0]]);
        assert_eq!(p.velocities, vec![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        let data: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let b64 = base64::engine::general_purpose::STANDARD;
        // VTK's way (header and data encoded separately) and meshio's (together).
        for text in [
            b64.encode(12u32.to_le_bytes()) + &b64.encode(&data),
            b64.encode([12u32.to_le_bytes().as_slice(), &data].concat()),
        ] {
            let file = format!(
                r#"<VTKFile type="UnstructuredGrid"><UnstructuredGrid><Piece NumberOfPoints="1">
                <Points><DataArray type="Float32" NumberOfComponents="3" format="binary">
                {text}
                </DataArray></Points></Piece></UnstructuredGrid></VTKFile>"#
            );
            assert_eq!(decode(file.as_bytes(), Path::new("b.vtu")).unwrap().positions, vec![[1.0, 2.0, 3.0]], "{text}");
        }
    }

    #[test]
    fn hostile_files_are_refused_with_the_reason() {
        let p = Particles { positions: vec![[1.0; 3]; 3], velocities: vec![[0.0; 3]; 3], densities: vec![1.0; 3] };
        let whole = encode(&p, 0.0);
        // Cut inside the velocities (the points' 8 + 36 bytes come first after the `_`).
        let tag = String::from_utf8_lossy(&whole).find("<AppendedData").unwrap();
        let appended = tag + whole[tag..].iter().position(|&c| c == b'_').unwrap() + 1;
        let e = decode(&whole[..appended + 60], Path::new("p.vtu")).unwrap_err().to_string();
        assert_eq!(e, "particle file p.vtu: `velocity`: declares 36 bytes, past the end of the file");
        let huge = String::from_utf8_lossy(&whole).replace("NumberOfPoints=\"3\"", "NumberOfPoints=\"3000000000\"");
        let e = err(&huge);
        assert!(e.contains("declares 3000000000 points, more than its"), "{e}");
        let e = err(r#"<VTKFile type="UnstructuredGrid" compressor="vtkZLibDataCompressor"></VTKFile>"#);
        assert!(e.contains("is compressed (vtkZLibDataCompressor)"), "{e}");
        let e = err(r#"<VTKFile type="ImageData"></VTKFile>"#);
        assert!(e.contains("VTK `ImageData` file"), "{e}");
        let e = err(
            r#"<VTKFile type="UnstructuredGrid"><Piece NumberOfPoints="1"><Points><DataArray type="Float32" NumberOfComponents="3" format="appended" offset="99999"/></Points></Piece><AppendedData encoding="raw">_abc</AppendedData></VTKFile>"#,
        );
        assert!(e.contains("`Points`: its offset is past the end"), "{e}");
        let e = err(
            r#"<VTKFile type="UnstructuredGrid"><Piece NumberOfPoints="2"><Points><DataArray type="Float32" NumberOfComponents="3" format="ascii">1 2 3 4 5</DataArray></Points></Piece></VTKFile>"#,
        );
        assert!(e.contains("holds 5 values; its points need 6"), "{e}");
        let e = err(
            r#"<VTKFile type="UnstructuredGrid"><Piece NumberOfPoints="1"><Points><DataArray type="Int32" NumberOfComponents="3" format="ascii">1 2 3</DataArray></Points></Piece></VTKFile>"#,
        );
        assert!(e.contains("type Some(\"Int32\")"), "{e}");
        let e = err("<VTKFile type=\"UnstructuredGrid\"><Piece");
        assert!(e.contains("not well-formed XML") || e.contains("NumberOfPoints"), "{e}");
    }
}
