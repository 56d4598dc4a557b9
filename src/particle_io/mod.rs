//! Particle files out and in: binary little-endian PLY (`element vertex N` with float properties x, y, z,
//! vx, vy, vz, density; read by Houdini, Blender and ParaView; through the `ply-rs-bw` crate) and VTK's
//! XML unstructured grid `.vtu` (ParaView; one vertex cell per particle, the arrays appended raw, written
//! and read by the small codec in [`vtu`]).
//!
//! Writing ([`write()`]) goes to `PATH.part` first and is renamed when complete, so a file under its final
//! name is always whole. Reading ([`read`]) goes through the app's bounded reader
//! ([`crate::files`], kind [`FileKind::Particles`]) and then decodes bytes ([`decode`]); a declared count
//! is checked against the bytes that follow it before anything is allocated for it, so a hostile header
//! (a billion vertices in a 1 KiB file) is refused at once. Values are returned as written, NaN included:
//! what is valid depends on where they go (the scene checks them, [`crate::scene`]).

pub mod ply;
pub mod vtu;

use crate::files::{self, FileKind, ReadError};
use std::io::Write;
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

impl Particles {
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

/// The particles of the PLY or VTU file at `path` (the format from its first bytes: `ply` or XML),
/// through the bounded reader ([`FileKind::Particles`]).
/// Errors: the file cannot be read or is over the limit, or is not a PLY or VTU particle file (the
/// message says why: a truncated body, a count its bytes cannot hold, no x, y and z, a compressed VTU).
pub fn read(path: &Path) -> Result<Particles, ParticleFileError> {
    let bytes = files::read(path, FileKind::Particles)?;
    decode(&bytes, path)
}

/// Decodes a PLY or VTU file's bytes (`path` names it in errors). See [`read`].
pub fn decode(bytes: &[u8], path: &Path) -> Result<Particles, ParticleFileError> {
    let start = files::without_bom(bytes);
    let head = &start[..start.len().min(64)];
    if head.starts_with(b"ply") {
        ply::decode(start, path)
    } else if String::from_utf8_lossy(head).trim_start().starts_with('<') {
        vtu::decode(start, path)
    } else {
        Err(ParticleFileError::malformed(path, "is neither PLY (it does not start with `ply`) nor VTU (XML)"))
    }
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
    fn neither_format_is_refused_by_name() {
        let e = decode(b"solid cube\n", Path::new("cube.stl")).unwrap_err().to_string();
        assert_eq!(e, "particle file cube.stl: is neither PLY (it does not start with `ply`) nor VTU (XML)");
    }
}
