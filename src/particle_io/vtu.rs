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
//! against the bytes there before it is used, the point count against [`super::check_count`] (text
//! arrays against the ASCII limit) before a value is decoded; inline arrays are not copied out of the
//! file's bytes (their extent is noted and skipped by the XML reader), and every array is decoded
//! straight into the output: ASCII a word at a time, base64 a few KiB at a time, raw in place.

use super::{ParticleFileError, Particles};
use base64::Engine as _;
use quick_xml::events::{BytesStart, Event};
use std::fmt::Write as _;
use std::io::BufRead;
use std::ops::Range;
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
    /// Inside its element (this range of the file's bytes): `ascii` numbers or `binary` base64.
    Inline { binary: bool, text: Range<usize> },
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

/// Most bytes read to find the `Piece` and its `NumberOfPoints` ([`declared_count`]).
const MAX_PROLOGUE: u64 = 16 << 20;

/// The point count a VTU stream declares (its `Piece`'s `NumberOfPoints`), read from the XML up to that
/// element (at most 16 MiB of it). Errors: malformed XML, no `Piece` with a count there.
pub fn declared_count<R: BufRead>(source: R, path: &Path) -> Result<u64, ParticleFileError> {
    let bad = |m: String| ParticleFileError::malformed(path, m);
    let mut reader = quick_xml::Reader::from_reader(source.take(MAX_PROLOGUE));
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_event_into(&mut buf).map_err(|e| bad(format!("is not well-formed XML: {e}")))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"Piece" => {
                let n = attr(&e, "NumberOfPoints").and_then(|v| v.trim().parse::<u64>().ok());
                return n.ok_or_else(|| bad("has a `Piece` without a valid `NumberOfPoints`".into()));
            }
            Event::Eof => {
                return Err(bad(format!(
                    "has no `Piece` with `NumberOfPoints` in its first {}",
                    super::files::human_bytes(MAX_PROLOGUE)
                )))
            }
            _ => {}
        }
    }
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
    let arrays = [Some(positions), layout.velocity.as_ref(), layout.density.as_ref()];
    let text = arrays.iter().flatten().any(|a| matches!(a.source, Source::Inline { binary: false, .. }));
    super::check_count(n as u64, text, path)?;
    fn read<const C: usize>(
        bytes: &[u8],
        layout: &Layout,
        a: &Array,
        n: usize,
        name: &str,
        path: &Path,
    ) -> Result<Vec<[f32; C]>, ParticleFileError> {
        let bad = |m: String| ParticleFileError::malformed(path, format!("`{name}`: {m}"));
        if a.components != C {
            return Err(ParticleFileError::malformed(
                path,
                format!("`{name}` has {} components; it must have {C}", a.components),
            ));
        }
        let mut out = Vec::with_capacity(n);
        let (mut item, mut k) = ([0f32; C], 0);
        values(bytes, layout, a, n * C, path, &mut |v| {
            item[k] = v;
            k += 1;
            if k == C {
                out.push(item);
                k = 0;
            }
        })
        .map_err(|e| match e {
            Stop::Malformed(m) => bad(m),
            Stop::Cancelled(cancelled) => cancelled,
        })?;
        Ok(out)
    }
    let positions = read::<3>(bytes, &layout, positions, n, "Points", path)?;
    let velocities = match &layout.velocity {
        Some(a) => read::<3>(bytes, &layout, a, n, "velocity", path)?,
        None => vec![[0.0; 3]; n],
    };
    let densities = match &layout.density {
        // One-element arrays to values, in place.
        Some(a) => read::<1>(bytes, &layout, a, n, "density", path)?.into_iter().map(|[d]| d).collect(),
        None => Vec::new(),
    };
    Ok(Particles { positions, velocities, densities })
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
                        let mut array = data_array(e)?;
                        if !empty {
                            // The content is skipped, not copied: its extent is what is kept.
                            let span =
                                reader.read_to_end(e.name()).map_err(|e| format!("is not well-formed XML: {e}"))?;
                            if let Source::Inline { text, .. } = &mut array.source {
                                *text = span.start as usize..span.end as usize;
                            }
                        }
                        finish(&mut layout, slot, array)?;
                        continue;
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
            Event::End(_) => {
                path.pop();
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
        Some("ascii") => Source::Inline { binary: false, text: 0..0 },
        Some("binary") => Source::Inline { binary: true, text: 0..0 },
        Some("appended") => {
            let offset = attr(e, "offset").and_then(|o| o.trim().parse::<usize>().ok());
            Source::Appended(offset.ok_or(format!("appended array `{name}` has no valid offset"))?)
        }
        other => return Err(format!("array `{name}` has format {other:?}; ascii, binary or appended expected")),
    };
    Ok(Array { size, components, source })
}

/// Why decoding an array stopped.
enum Stop {
    /// The array does not hold exactly the values its points need, or its bytes are malformed.
    Malformed(String),
    /// The build reading the file was cancelled.
    Cancelled(ParticleFileError),
}

impl From<String> for Stop {
    fn from(message: String) -> Self {
        Stop::Malformed(message)
    }
}

/// Hands the `count` values of array `a`, as f32, to `push`, in order. Errors: [`Stop`].
fn values(
    bytes: &[u8],
    layout: &Layout,
    a: &Array,
    count: usize,
    path: &Path,
    push: &mut dyn FnMut(f32),
) -> Result<(), Stop> {
    let cancelled = |done: usize| match done.is_multiple_of(crate::cancel::CHECK_EVERY) {
        true => super::check_cancel(path).map_err(Stop::Cancelled),
        false => Ok(()),
    };
    let mut elements = Elements { size: a.size, big_endian: layout.big_endian, partial: [0; 8], filled: 0, done: 0 };
    match &a.source {
        Source::Inline { binary: false, text } => {
            let text = bytes.get(text.clone()).unwrap_or_default();
            let mut done = 0;
            for word in text.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty()) {
                if done == count {
                    return Err(Stop::Malformed(format!("holds more than the {count} values its points need")));
                }
                let number = std::str::from_utf8(word).ok().and_then(|w| w.parse::<f64>().ok());
                let number = number
                    .ok_or_else(|| Stop::Malformed(format!("`{}` is not a number", String::from_utf8_lossy(word))))?;
                cancelled(done)?;
                push(number as f32);
                done += 1;
            }
            if done < count {
                return Err(Stop::Malformed(format!("holds {done} values; its points need {count}")));
            }
            return Ok(());
        }
        Source::Inline { binary: true, text } => {
            base64_block(bytes.get(text.clone()).unwrap_or_default(), layout, count, a.size, &mut |chunk| {
                elements.feed(chunk, push);
                cancelled(elements.done)
            })?;
        }
        Source::Appended(offset) => {
            let (start, base64) =
                layout.appended.ok_or(Stop::Malformed("is appended but the file has no AppendedData".to_string()))?;
            let at = start
                .checked_add(*offset)
                .filter(|&at| at <= bytes.len())
                .ok_or(Stop::Malformed("its offset is past the end".to_string()))?;
            if base64 {
                base64_block(&bytes[at..], layout, count, a.size, &mut |chunk| {
                    elements.feed(chunk, push);
                    cancelled(elements.done)
                })?;
            } else {
                let h = layout.header;
                let header = bytes
                    .get(at..at + h)
                    .ok_or(Stop::Malformed("its header is past the end of the file".to_string()))?;
                let len = header_len(header, layout.big_endian);
                let len =
                    usize::try_from(len).map_err(|_| Stop::Malformed("its byte count is too large".to_string()))?;
                let data = at.checked_add(h).and_then(|s| Some(s..s.checked_add(len)?));
                let data = data
                    .and_then(|r| bytes.get(r))
                    .ok_or_else(|| Stop::Malformed(format!("declares {len} bytes, past the end of the file")))?;
                check_length(len as u64, count, a.size)?;
                for chunk in data.chunks(crate::cancel::CHECK_EVERY * a.size) {
                    elements.feed(chunk, push);
                    cancelled(elements.done)?;
                }
            }
        }
    }
    Ok(())
}

/// `Err` unless a block of `len` bytes holds exactly `count` values of `size` bytes.
fn check_length(len: u64, count: usize, size: usize) -> Result<(), Stop> {
    let need = (count as u64).checked_mul(size as u64).ok_or(Stop::Malformed("its size overflows".to_string()))?;
    if len != need {
        return Err(Stop::Malformed(format!("holds {len} bytes; its points need {need}")));
    }
    Ok(())
}

/// Bytes turned into f32 values as they come, in chunks that may split a value.
struct Elements {
    /// 4 (Float32) or 8 (Float64).
    size: usize,
    big_endian: bool,
    /// A value split by the end of the last chunk, and how many of its bytes came.
    partial: [u8; 8],
    filled: usize,
    /// Values handed out so far.
    done: usize,
}

impl Elements {
    fn feed(&mut self, mut chunk: &[u8], push: &mut dyn FnMut(f32)) {
        if self.filled > 0 {
            let take = (self.size - self.filled).min(chunk.len());
            self.partial[self.filled..self.filled + take].copy_from_slice(&chunk[..take]);
            self.filled += take;
            chunk = &chunk[take..];
            if self.filled < self.size {
                return;
            }
            let value = self.partial;
            self.value(&value[..self.size], push);
            self.filled = 0;
        }
        let mut values = chunk.chunks_exact(self.size);
        for c in &mut values {
            self.value(c, push);
        }
        let rest = values.remainder();
        self.partial[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    fn value(&mut self, c: &[u8], push: &mut dyn FnMut(f32)) {
        let v = match (self.size, self.big_endian) {
            (4, false) => f32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            (4, true) => f32::from_be_bytes([c[0], c[1], c[2], c[3]]),
            (_, big) => {
                let b: [u8; 8] = [c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]];
                (if big { f64::from_be_bytes(b) } else { f64::from_le_bytes(b) }) as f32
            }
        };
        self.done += 1;
        push(v);
    }
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

/// Base64 characters of `text` from its first non-blank one to the first that is neither base64 nor
/// blank, blanks skipped.
fn base64_chars(text: &[u8]) -> impl Iterator<Item = u8> + '_ {
    text.iter()
        .copied()
        .skip_while(u8::is_ascii_whitespace)
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=') || c.is_ascii_whitespace())
        .filter(|c| !c.is_ascii_whitespace())
}

/// Decodes a base64 block (a header of `layout.header` bytes giving the data's byte count, then the data)
/// whether the writer encoded the header and the data together or separately (VTK does the latter: the
/// header's base64 then ends in padding), handing the data to `sink` a few KiB at a time. The byte count
/// must be `count` values of `size` bytes, checked before any data is decoded; the block's characters end
/// there (more may follow: the next appended array) or at the first that is neither base64 nor blank.
fn base64_block(
    text: &[u8],
    layout: &Layout,
    count: usize,
    size: usize,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), Stop>,
) -> Result<(), Stop> {
    const CHUNK: usize = 4096;
    let engine = base64::engine::general_purpose::STANDARD;
    let malformed =
        |what: &str, e: base64::DecodeSliceError| Stop::Malformed(format!("its base64 {what} is malformed: {e}"));
    let h = layout.header;
    let header_chars = h.div_ceil(3) * 4;
    let mut chars = base64_chars(text);
    let head: Vec<u8> = chars.by_ref().take(header_chars).collect();
    if head.len() < header_chars {
        return Err(Stop::Malformed("its base64 block is shorter than its header".into()));
    }
    let mut decoded_head = [0u8; 12];
    let got = engine.decode_slice(&head, &mut decoded_head).map_err(|e| malformed("header", e))?;
    if got < h {
        return Err(Stop::Malformed("its base64 header is too short".into()));
    }
    let len = header_len(&decoded_head[..h], layout.big_endian);
    check_length(len, count, size)?;
    // Separately: the data's own characters follow; together: the header's characters began the data.
    let separate = head.ends_with(b"=");
    let (mut remaining, data_chars) = match separate {
        true => (len, len.div_ceil(3) * 4),
        false => {
            let first = (got - h) as u64;
            let first = first.min(len);
            sink(&decoded_head[h..h + first as usize])?;
            (len - first, ((h as u64 + len).div_ceil(3) * 4).saturating_sub(header_chars as u64))
        }
    };
    let mut chars = chars.take(usize::try_from(data_chars).unwrap_or(usize::MAX));
    let (mut quad, mut out) = (Vec::with_capacity(CHUNK), vec![0u8; CHUNK / 4 * 3]);
    while remaining > 0 {
        quad.clear();
        quad.extend(chars.by_ref().take(CHUNK));
        if quad.is_empty() {
            break;
        }
        let got = engine.decode_slice(&quad, &mut out).map_err(|e| malformed("data", e))?;
        let take = (got as u64).min(remaining) as usize;
        remaining -= take as u64;
        sink(&out[..take])?;
        if quad.len() < CHUNK {
            break;
        }
    }
    if remaining > 0 {
        return Err(Stop::Malformed(format!("declares {len} bytes but its base64 holds {}", len - remaining)));
    }
    Ok(())
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
