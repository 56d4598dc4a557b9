//! Particle files out and in: binary little-endian PLY (`element vertex N` with float properties x, y, z,
//! vx, vy, vz, density; read by Houdini, Blender and ParaView; through the `ply-rs-bw` crate) and VTK's
//! XML unstructured grid `.vtu` (ParaView; one vertex cell per particle, the arrays appended raw, written
//! and read by the small codec in [`vtu`]).
//!
//! Writing ([`write()`]) goes to `PATH.part` first and is renamed when complete, so a file under its final
//! name is always whole. Reading ([`read`]) goes through the app's bounded reader ([`crate::files`], kind
//! [`FileKind::Particles`]); a PLY file is decoded as it is read (its bytes are never held whole), a VTU
//! file from its bytes ([`decode`] takes bytes for both: the fuzz targets' entry point). What a file costs
//! is bounded from its header, before a particle is decoded ([`check_count`]): the declared count against
//! the bytes that follow it (a billion vertices in a 1 KiB file is refused at once), against
//! [`MAX_FILE_PARTICLES`], against [`MAX_ASCII_PARTICLES`] for text, and its [`HOST_BYTES_PER_PARTICLE`]
//! against the host's available memory; particles are then decoded straight into the output arrays
//! (reserved once), and the decoding stops with [`ParticleFileError::Cancelled`] when the build reading
//! it is cancelled ([`crate::cancel`]). The engine checks the declared counts against the GPU's limit
//! before a build reads them ([`declared_count`]). A decoder's panic is an error naming the file
//! ([`crate::files::guarded`]). Values are returned as written, NaN included: what is valid depends on
//! where they go (the scene checks them, [`crate::scene`]).

pub mod ply;
pub mod vtu;

use crate::files::{self, FileKind, ReadError};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Particles as arrays of the same length: positions (m), velocities (m/s) and densities (kg/m^3).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Particles {
    /// Positions, metres.
    pub positions: Vec<[f32; 3]>,
    /// Velocities, m/s (zero where a file has none).
    pub velocities: Vec<[f32; 3]>,
    /// Densities, kg/m^3 (empty when read from a file without them).
    pub densities: Vec<f32>,
}

/// Most particles one file may hold: the scene's particle indices are `u32`.
pub const MAX_FILE_PARTICLES: u64 = u32::MAX as u64;

/// Most particles a text file (ASCII PLY, ASCII or inline base64 VTU) may hold: text takes 2-10 times the
/// bytes of binary and is parsed at a few million values a second, so past this a binary file is asked
/// for (8 388 608 particles: about 0.5 GiB of text, seconds to parse).
pub const MAX_ASCII_PARTICLES: u64 = 1 << 23;

/// Host memory a particle read from a file costs until the scene is built, bytes: the decoded position,
/// velocity and density (28), the scene's copy of position and velocity (24) and the coincidence check's
/// cell key (8), rounded up. Checked against the host's available memory before a particle is decoded.
pub const HOST_BYTES_PER_PARTICLE: u64 = 64;

impl Particles {
    /// Empty arrays with room for `n` particles (densities too when `densities`), reserved at once.
    fn with_capacity(n: usize, densities: bool) -> Self {
        Particles {
            positions: Vec::with_capacity(n),
            velocities: Vec::with_capacity(n),
            densities: Vec::with_capacity(if densities { n } else { 0 }),
        }
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// The live particles of a simulation's state (`positions` and `velocities` as the GPU holds them:
    /// `vec4`s, xyz = position or velocity, w of a position = density, < 0 for particles parked in the
    /// emitters' pool, which are left out).
    pub fn from_state(positions: &[[f32; 4]], velocities: &[[f32; 4]]) -> Self {
        let mut out = Particles::default();
        for (p, v) in positions.iter().zip(velocities) {
            if p[3] >= 0.0 {
                out.positions.push([p[0], p[1], p[2]]);
                out.velocities.push([v[0], v[1], v[2]]);
                out.densities.push(p[3]);
            }
        }
        out
    }
}

/// A file format for particles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ParticleFormat {
    /// Binary little-endian PLY (`.ply`).
    #[default]
    Ply,
    /// VTK XML unstructured grid (`.vtu`).
    Vtu,
}

impl ParticleFormat {
    /// The file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            ParticleFormat::Ply => "ply",
            ParticleFormat::Vtu => "vtu",
        }
    }

    /// The format named by `path`'s extension (any case), if it is one.
    pub fn of_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?;
        [ParticleFormat::Ply, ParticleFormat::Vtu].into_iter().find(|f| ext.eq_ignore_ascii_case(f.extension()))
    }
}

impl std::str::FromStr for ParticleFormat {
    type Err = ParticleFileError;

    /// `ply` or `vtu` (any case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ply" => Ok(ParticleFormat::Ply),
            "vtu" => Ok(ParticleFormat::Vtu),
            _ => Err(ParticleFileError::UnknownFormat(s.to_string())),
        }
    }
}

/// Why particles could not be read or written. Messages name the file; causes are part of the message.
#[derive(Debug, Error)]
pub enum ParticleFileError {
    /// The bounded reader refused the file (missing, not a regular file, over the size limit).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The file is not a PLY or VTU file this reader understands: `message` says what is wrong.
    #[error("particle file {}: {message}", path.display())]
    Malformed { path: PathBuf, message: String },
    /// The header declares more particles than may be read: `limit` of them, `why` says what sets it.
    #[error("particle file {}: declares {count} particles, more than {limit}, {why}", path.display())]
    TooMany { path: PathBuf, count: u64, limit: u64, why: String },
    /// The build reading the file was cancelled ([`crate::cancel`]).
    #[error("particle file {}: reading it was cancelled", path.display())]
    Cancelled { path: PathBuf },
    /// A format name that is neither `ply` nor `vtu`.
    #[error("unknown particle format `{0}`: use ply or vtu")]
    UnknownFormat(String),
    /// Writing failed (`cause`: the I/O error).
    #[error("cannot write particle file {}: {cause}", path.display())]
    Write { path: PathBuf, cause: std::io::Error },
}

impl ParticleFileError {
    fn malformed(path: &Path, message: impl Into<String>) -> Self {
        ParticleFileError::Malformed { path: path.to_path_buf(), message: message.into() }
    }
}

/// Checks a count declared by the file at `path` before a particle is decoded: at most
/// [`MAX_FILE_PARTICLES`], at most [`MAX_ASCII_PARTICLES`] when the file is `text`, and
/// [`HOST_BYTES_PER_PARTICLE`] each within the host's available memory (where it is known). Errors:
/// [`ParticleFileError::TooMany`] saying which limit.
pub fn check_count(count: u64, text: bool, path: &Path) -> Result<(), ParticleFileError> {
    let too_many = |limit: u64, why: String| ParticleFileError::TooMany { path: path.to_path_buf(), count, limit, why };
    if count > MAX_FILE_PARTICLES {
        return Err(too_many(MAX_FILE_PARTICLES, "the most a scene indexes (u32)".into()));
    }
    if text && count > MAX_ASCII_PARTICLES {
        return Err(too_many(
            MAX_ASCII_PARTICLES,
            "the most read from a text (ASCII) file; save it as binary PLY or raw appended VTU".into(),
        ));
    }
    if let Some(available) = crate::process::memory_available() {
        let fit = available / HOST_BYTES_PER_PARTICLE;
        if count > fit {
            return Err(too_many(
                fit,
                format!(
                    "what the {} of memory available fits at {HOST_BYTES_PER_PARTICLE} bytes a particle while the \
                     scene is built",
                    files::human_bytes(available)
                ),
            ));
        }
    }
    Ok(())
}

/// [`ParticleFileError::Cancelled`] when the build reading `path` was cancelled ([`crate::cancel`]).
fn check_cancel(path: &Path) -> Result<(), ParticleFileError> {
    if crate::cancel::requested() {
        return Err(ParticleFileError::Cancelled { path: path.to_path_buf() });
    }
    Ok(())
}

/// Which format `head` (a file's first bytes, a byte-order mark skipped) is in: `Some(true)` PLY,
/// `Some(false)` VTU (XML), `None` neither.
fn sniff(head: &[u8]) -> Option<bool> {
    let head = &head[..head.len().min(64)];
    if head.starts_with(b"ply") {
        Some(true)
    } else if String::from_utf8_lossy(head).trim_start().starts_with('<') {
        Some(false)
    } else {
        None
    }
}

/// The error for a file that is neither PLY nor VTU.
fn neither(path: &Path) -> ParticleFileError {
    ParticleFileError::malformed(path, "is neither PLY (it does not start with `ply`) nor VTU (XML)")
}

/// The particles of the PLY or VTU file at `path` (the format from its first bytes: `ply` or XML),
/// through the bounded reader ([`FileKind::Particles`]): a PLY file is decoded as it is read, straight
/// into the arrays; a VTU file is read whole and decoded from its bytes. See the module docs for the
/// limits checked first.
/// Errors: the file cannot be read or is over the limit, declares more particles than may be read
/// ([`check_count`]), is not a PLY or VTU particle file (the message says why: a truncated body, a count its
/// bytes cannot hold, no x, y and z, a compressed VTU), or the build reading it was cancelled.
pub fn read(path: &Path) -> Result<Particles, ParticleFileError> {
    let (mut reader, size) = open(path)?;
    let is_ply = sniff(reader.fill_buf().map_err(|e| io_error(path, e))?).ok_or_else(|| neither(path))?;
    if is_ply {
        return files::guarded(|| ply::decode_from(reader, size, path))
            .unwrap_or_else(|m| Err(ParticleFileError::malformed(path, m)));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    reader.read_to_end(&mut bytes).map_err(|e| io_error(path, e))?;
    files::guarded(|| vtu::decode(&bytes, path)).unwrap_or_else(|m| Err(ParticleFileError::malformed(path, m)))
}

/// The particles a PLY or VTU file at `path` declares, from its header alone (PLY: `element vertex N`;
/// VTU: the `Piece`'s `NumberOfPoints`), through the bounded reader: what the engine checks against the
/// GPU's limit before a scene's fluid files are read. Errors: as [`read`]'s for the header.
pub fn declared_count(path: &Path) -> Result<u64, ParticleFileError> {
    let (mut reader, _) = open(path)?;
    match sniff(reader.fill_buf().map_err(|e| io_error(path, e))?) {
        Some(true) => ply::declared_count(reader, path),
        Some(false) => vtu::declared_count(reader, path),
        None => Err(neither(path)),
    }
}

/// The file at `path` opened through the bounded reader, buffered, past a UTF-8 byte-order mark, and its
/// size in bytes.
fn open(path: &Path) -> Result<(std::io::BufReader<std::io::Take<std::fs::File>>, u64), ParticleFileError> {
    let file = files::open(path, FileKind::Particles)?;
    let size = file.get_ref().metadata().map_err(|e| io_error(path, e))?.len();
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let bom = reader.fill_buf().map_err(|e| io_error(path, e))?.starts_with(b"\xEF\xBB\xBF");
    if bom {
        reader.consume(3);
    }
    Ok((reader, size - if bom { 3 } else { 0 }))
}

fn io_error(path: &Path, cause: std::io::Error) -> ParticleFileError {
    ParticleFileError::Read(ReadError::Io { kind: FileKind::Particles, path: path.to_path_buf(), cause })
}

/// Decodes a PLY or VTU file's bytes (`path` names it in errors), with [`read`]'s checks. What [`read`]
/// does once the file is open, from bytes (the fuzz targets' entry point).
pub fn decode(bytes: &[u8], path: &Path) -> Result<Particles, ParticleFileError> {
    let start = files::without_bom(bytes);
    let decoded = match sniff(start).ok_or_else(|| neither(path))? {
        true => files::guarded(|| ply::decode_from(start, start.len() as u64, path)),
        false => files::guarded(|| vtu::decode(start, path)),
    };
    decoded.unwrap_or_else(|m| Err(ParticleFileError::malformed(path, m)))
}

/// The bytes of a file of `particles` in `format`, with the simulated time `time` (seconds) in it: a
/// PLY header comment `time_s T`, a VTU `TimeValue` field (which ParaView shows as the time).
pub fn encode(particles: &Particles, format: ParticleFormat, time: f32) -> Vec<u8> {
    match format {
        ParticleFormat::Ply => ply::encode(particles, time),
        ParticleFormat::Vtu => vtu::encode(particles, time),
    }
}

/// Writes `particles` to `path` in `format` ([`encode`]): first to `PATH.part`, then renamed, so `path`
/// only ever holds a whole file. The folder must exist. Errors name the file; nothing is left behind.
pub fn write(path: &Path, particles: &Particles, format: ParticleFormat, time: f32) -> Result<(), ParticleFileError> {
    write_bytes(path, &encode(particles, format, time))
}

/// Writes `bytes` to `path` through `PATH.part` (see [`write()`]).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), ParticleFileError> {
    let mut part = path.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    let result = files::create(&part)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()))
        .and_then(|()| files::replace(&part, path));
    result.map_err(|cause| {
        let _ = std::fs::remove_file(&part);
        ParticleFileError::Write { path: path.to_path_buf(), cause }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Particles {
        Particles {
            positions: vec![[0.5, 1.25, -2.0], [1e-3, 3.0, 4.5], [0.1, 0.2, 0.3]],
            velocities: vec![[1.0, -0.5, 0.25], [0.0, 0.0, 0.0], [-9.75, 2.0, 1e-7]],
            densities: vec![1000.0, 998.5, 1002.25],
        }
    }

    #[test]
    fn parked_particles_are_left_out_of_the_state() {
        let pos = [[1.0, 2.0, 3.0, 1000.0], [5.0, 5.0, 5.0, -1.0], [4.0, 5.0, 6.0, 999.0]];
        let vel = [[0.1, 0.2, 0.3, 7.0], [0.0; 4], [0.4, 0.5, 0.6, 8.0]];
        let p = Particles::from_state(&pos, &vel);
        assert_eq!(p.positions, vec![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        assert_eq!(p.velocities, vec![[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]);
        assert_eq!(p.densities, vec![1000.0, 999.0]);
    }

    #[test]
    fn both_formats_round_trip_exactly() {
        for format in [ParticleFormat::Ply, ParticleFormat::Vtu] {
            let bytes = encode(&sample(), format, 0.5);
            let back = decode(&bytes, Path::new("x")).unwrap_or_else(|e| panic!("{format:?}: {e}"));
            assert_eq!(back, sample(), "{format:?}");
        }
    }

    #[test]
    fn formats_by_name_and_extension() {
        assert_eq!("PLY".parse::<ParticleFormat>().unwrap(), ParticleFormat::Ply);
        assert_eq!("vtu".parse::<ParticleFormat>().unwrap(), ParticleFormat::Vtu);
        assert_eq!(
            "obj".parse::<ParticleFormat>().unwrap_err().to_string(),
            "unknown particle format `obj`: use ply or vtu"
        );
        assert_eq!(ParticleFormat::of_path(Path::new("a/b.VTU")), Some(ParticleFormat::Vtu));
        assert_eq!(ParticleFormat::of_path(Path::new("a/b.csv")), None);
    }

    #[test]
    fn counts_are_bounded_before_decoding() {
        let path = Path::new("big.ply");
        check_count(MAX_ASCII_PARTICLES, true, path).expect("at the text limit");
        let e = check_count(MAX_ASCII_PARTICLES + 1, true, path).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "particle file big.ply: declares 8388609 particles, more than 8388608, the most read from a text"
            ),
            "{e}"
        );
        let e = check_count(1 << 40, false, path).unwrap_err().to_string();
        assert!(e.contains("more than 4294967295, the most a scene indexes (u32)"), "{e}");
        let available = crate::process::memory_available().expect("MemAvailable on Linux");
        let e = check_count(available / HOST_BYTES_PER_PARTICLE + 1, false, path).unwrap_err().to_string();
        assert!(e.contains("of memory available fits at 64 bytes a particle"), "{e}");
    }

    #[test]
    fn declared_counts_come_from_the_header_alone() {
        let dir = std::env::temp_dir().join(format!("waterview-declared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        for format in [ParticleFormat::Ply, ParticleFormat::Vtu] {
            let path = dir.join(format!("s.{}", format.extension()));
            let mut bytes = encode(&sample(), format, 0.0);
            std::fs::write(&path, &bytes).expect("write");
            assert_eq!(declared_count(&path).expect("a count"), 3, "{format:?}");
            // Cut after the header (PLY) or the `Piece` (VTU): the count is still known.
            let marker = ["end_header\n", "<Points>"][format as usize];
            let end = String::from_utf8_lossy(&bytes).find(marker).expect("the marker") + marker.len();
            bytes.truncate(end);
            std::fs::write(&path, &bytes).expect("write");
            assert_eq!(declared_count(&path).expect("a count from the header"), 3, "{format:?} cut short");
        }
        std::fs::write(dir.join("x.ply"), b"solid x").expect("write");
        assert!(declared_count(&dir.join("x.ply")).unwrap_err().to_string().contains("is neither PLY"));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn neither_format_is_refused_by_name() {
        let e = decode(b"solid cube\n", Path::new("cube.stl")).unwrap_err().to_string();
        assert_eq!(e, "particle file cube.stl: is neither PLY (it does not start with `ply`) nor VTU (XML)");
    }
}
