//! The one way the app reads a user's file: scenes, heightmaps and their units, sky images, particle
//! files, checkpoints, the settings, the headers of dropped files ([`read`], [`open`]).
//! Whatever the path names, reading it returns promptly, with a bounded amount of memory, or fails with a
//! message naming the path:
//!
//! - **Regular files only.** The path's metadata (symbolic links followed) is checked before opening, so
//!   a device (`/dev/zero`, a tape drive), a FIFO, a socket or a folder is refused without being opened;
//!   on Unix the file is then opened with `O_NONBLOCK | O_NOCTTY`, so a FIFO swapped in after the check
//!   cannot block the open, and checked again on the open handle (`fstat`), which is what is read.
//!   `O_NONBLOCK` changes nothing for regular files.
//! - **A size limit per kind of file** ([`FileKind::limit`]), checked against the open handle's size
//!   and enforced while reading (`Read::take(limit + 1)`), so a file that grows while it is read, or
//!   reports a size it does not have (procfs, some FUSE file systems), still cannot exceed it. The
//!   message gives the size and the limit ("scene file big.ron is 5.3 GiB; scene files are limited to
//!   16 MiB").
//!
//! Decoders of what is read have limits of their own (image size and decoded bytes: see
//! `scene::heightmap` and `render::sky_image`); the limits are listed in README.md ("Limits").
//!
//! Writing goes through here too ([`create`], [`replace`], [`check_replaceable`]): what is written
//! replaces only a regular file, so an output path naming a device (`/dev/null`, `/dev/full`), a FIFO, a
//! socket or a folder is refused instead of being renamed over (as root, a rename turns `/dev/full` into
//! a regular file), and a file is opened for writing without blocking, so a FIFO never stalls a run.
//! Decoding a user's file runs under [`guarded`], which turns a panic of the decoder (a dependency's
//! assertion) into an error naming the file.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use thiserror::Error;

const MIB: u64 = 1 << 20;

/// What a file is read as; each kind has its own size limit ([`FileKind::limit`]) and name in messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A scene (`.ron`), at most 16 MiB: the built-in scenes are 1-2 KiB, so even a scene written out by
    /// a program with thousands of emitters stays far below it.
    Scene,
    /// A heightmap PNG, at most 512 MiB: the largest image the heightmap decoder accepts, 16384 x 16384
    /// 16-bit samples, is 512 MiB stored uncompressed.
    Heightmap,
    /// A heightmap's units JSON, at most 1 MiB (four numbers and whatever notes come with them).
    HeightmapUnits,
    /// A sky image (equirectangular `.hdr`, `.exr`, `.png`, `.jpg`, or one cube face), at most 1 GiB: a
    /// 16384 x 8192 HDRI (the largest the sky decoder accepts) is 0.3-0.8 GiB as Radiance HDR or EXR.
    Sky,
    /// The window's settings JSON, at most 1 MiB (it holds a few dozen values).
    Settings,
    /// A mesh (for the mesh import to come), at most 256 MiB: millions of triangles.
    Mesh,
    /// A particle file (PLY or VTU) used as a scene's water, at most 1 GiB: 38 million particles as binary
    /// PLY with positions and velocities (28 bytes each), beyond what a GPU here simulates (32 M on an
    /// H200, 4 M on lavapipe).
    Particles,
    /// A simulation checkpoint, at most 2 GiB: 32 bytes per particle (position, density, velocity,
    /// pressure) for the 32 M particles an H200 simulates, plus a small header.
    Checkpoint,
    /// A benchmark's `bench.csv` used as the gate's baseline, at most 16 MiB (a sweep of every count and
    /// workgroup size is a few hundred rows).
    BenchCsv,
}

impl FileKind {
    /// The largest file of this kind that is read, bytes.
    pub const fn limit(self) -> u64 {
        match self {
            FileKind::Scene => 16 * MIB,
            FileKind::Heightmap => 512 * MIB,
            FileKind::HeightmapUnits | FileKind::Settings => MIB,
            FileKind::Sky => 1024 * MIB,
            FileKind::Mesh => 256 * MIB,
            FileKind::Particles => 1024 * MIB,
            FileKind::Checkpoint => 2048 * MIB,
            FileKind::BenchCsv => 16 * MIB,
        }
    }

    /// The kind in messages, singular ("scene file").
    pub const fn name(self) -> &'static str {
        match self {
            FileKind::Scene => "scene file",
            FileKind::Heightmap => "heightmap",
            FileKind::HeightmapUnits => "heightmap units file",
            FileKind::Sky => "sky image",
            FileKind::Settings => "settings file",
            FileKind::Mesh => "mesh",
            FileKind::Particles => "particle file",
            FileKind::Checkpoint => "checkpoint",
            FileKind::BenchCsv => "benchmark baseline",
        }
    }

    /// The kind in messages, plural ("scene files").
    pub const fn plural(self) -> &'static str {
        match self {
            FileKind::Scene => "scene files",
            FileKind::Heightmap => "heightmaps",
            FileKind::HeightmapUnits => "heightmap units files",
            FileKind::Sky => "sky images",
            FileKind::Settings => "settings files",
            FileKind::Mesh => "meshes",
            FileKind::Particles => "particle files",
            FileKind::Checkpoint => "checkpoints",
            FileKind::BenchCsv => "benchmark baselines",
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A byte count for messages: "512 bytes", "16 MiB", "5.3 GiB" (binary units, one decimal unless whole).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Why a file could not be read. Every message names the kind of file and its path; the cause is part
/// of the message (no `source()`).
#[derive(Debug, Error)]
pub enum ReadError {
    /// The file does not exist or the system refused to open or read it.
    #[error("cannot read {kind} {}: {cause}", path.display())]
    Io { kind: FileKind, path: PathBuf, cause: io::Error },
    /// A folder, FIFO, device or socket: `what` says which ("a FIFO (named pipe)").
    #[error("{kind} {} is {what}, not a regular file", path.display())]
    NotRegular { kind: FileKind, path: PathBuf, what: &'static str },
    /// Larger than `limit` (the kind's, bytes) by its size on disk (`size`, bytes); nothing was read.
    #[error("{kind} {} is {}; {} are limited to {}", path.display(), human_bytes(*size), kind.plural(),
        human_bytes(*limit))]
    TooLarge { kind: FileKind, path: PathBuf, size: u64, limit: u64 },
    /// Reported `size` bytes on disk but held more than `limit` bytes when read (it grew, or its size is
    /// not a real one, as in procfs); reading stopped there.
    #[error("{kind} {} holds more than {} though its size was {}; {} are limited to {}", path.display(),
        human_bytes(*limit), human_bytes(*size), kind.plural(), human_bytes(*limit))]
    Grew { kind: FileKind, path: PathBuf, size: u64, limit: u64 },
}

impl ReadError {
    /// Whether the file does not exist (callers that fall back to a default or an embedded copy check
    /// this; every other error is reported).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io { cause, .. } if cause.kind() == io::ErrorKind::NotFound)
    }

    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Io { path, .. }
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Grew { path, .. } => path,
        }
    }
}

/// What a file that is not a regular one is, for messages ("a directory", "a FIFO (named pipe)", ...).
pub fn what_is(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

/// Checks that `path` is a regular file of at most `limit` bytes, opens it without blocking and checks
/// the open handle again. Returns the file and its size in bytes.
fn open_checked(path: &Path, kind: FileKind, limit: u64) -> Result<(File, u64), ReadError> {
    let io_err = |cause| ReadError::Io { kind, path: path.to_path_buf(), cause };
    let check = |meta: std::fs::Metadata| {
        if !meta.is_file() {
            return Err(ReadError::NotRegular { kind, path: path.to_path_buf(), what: what_is(meta.file_type()) });
        }
        if meta.len() > limit {
            return Err(ReadError::TooLarge { kind, path: path.to_path_buf(), size: meta.len(), limit });
        }
        Ok(meta.len())
    };
    // Before opening: a device or FIFO is never opened (opening one can block or have side effects).
    check(std::fs::metadata(path).map_err(io_err)?)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(io_err)?;
    // The handle is what is read: check it, in case the path changed since.
    let size = check(file.metadata().map_err(io_err)?)?;
    Ok((file, size))
}

/// Opens the regular file at `path` for reading at most `kind`'s limit of bytes (reading stops there),
/// e.g. to read a header. Errors: see [`read`].
pub fn open(path: &Path, kind: FileKind) -> Result<io::Take<File>, ReadError> {
    let (file, _) = open_checked(path, kind, kind.limit())?;
    Ok(file.take(kind.limit()))
}

/// The bytes of the regular file at `path`, at most `kind`'s limit ([`FileKind::limit`]).
///
/// Errors: a missing or unreadable file ([`ReadError::Io`]; [`ReadError::is_not_found`] tells a missing
/// one), a folder, FIFO, device or socket ([`ReadError::NotRegular`], refused without reading or
/// blocking), a file larger than the limit ([`ReadError::TooLarge`], from its size, nothing read) or one
/// that held more than the limit when read ([`ReadError::Grew`]).
pub fn read(path: &Path, kind: FileKind) -> Result<Vec<u8>, ReadError> {
    read_within(path, kind, kind.limit())
}

/// [`read`] with a limit of `limit` bytes.
fn read_within(path: &Path, kind: FileKind, limit: u64) -> Result<Vec<u8>, ReadError> {
    let (file, size) = open_checked(path, kind, limit)?;
    // `size` is at most the limit; a file that grows is caught by `take`.
    let mut bytes = Vec::with_capacity(size as usize + 1);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|cause| ReadError::Io {
        kind,
        path: path.to_path_buf(),
        cause,
    })?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::Grew { kind, path: path.to_path_buf(), size, limit });
    }
    Ok(bytes)
}

/// Checks that whatever is at `path` may be replaced by a file written there: nothing, or a regular file
/// (symbolic links followed). Errors (kind [`io::ErrorKind::AlreadyExists`]) say what is there instead,
/// for a message that names the path already: "it is a character device, not a regular file (it is not
/// replaced)".
pub fn check_replaceable(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(not_regular(meta.file_type())),
        _ => Ok(()),
    }
}

/// The error of [`check_replaceable`] for a file of `file_type`.
fn not_regular(file_type: std::fs::FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("it is {}, not a regular file (it is not replaced)", what_is(file_type)),
    )
}

/// Renames the finished temporary file `part` over `path`, once [`check_replaceable`] says `path` is
/// nothing or a regular file; `part` is removed when the rename does not happen. Errors: what is at
/// `path` is not a regular file, or the rename failed.
pub fn replace(part: &Path, path: &Path) -> io::Result<()> {
    let result = check_replaceable(path).and_then(|()| std::fs::rename(part, path));
    if result.is_err() {
        let _ = std::fs::remove_file(part);
    }
    result
}

/// Creates (or empties) the regular file at `path` for writing, without ever blocking: whatever is there
/// must be nothing or a regular file ([`check_replaceable`]), and the file is opened with `O_NONBLOCK |
/// O_NOCTTY` on Unix (a FIFO swapped in after the check fails to open instead of waiting for a reader)
/// and checked again on the open handle before it is emptied. Errors: not a regular file, or the
/// system's reason.
pub fn create(path: &Path) -> io::Result<File> {
    check_replaceable(path)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    file.set_len(0)?;
    Ok(file)
}

/// Runs `decode` (the decoding of a user's file) and returns its result, or, when it panics (an assertion
/// in a dependency's reader that a hostile file reaches), `Err` with the panic's message, so the caller
/// reports the file instead of the process exiting with status 101. Under `cfg(fuzzing)` (cargo-fuzz)
/// the panic is not caught, so the fuzzer reports it as the crash it is.
pub fn guarded<T>(decode: impl FnOnce() -> T) -> Result<T, String> {
    #[cfg(fuzzing)]
    {
        Ok(decode())
    }
    #[cfg(not(fuzzing))]
    {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode))
            .map_err(|payload| format!("its decoder failed ({})", panic_message(payload.as_ref())))
    }
}

/// The first line of a caught panic's message (`&str` or `String` payloads; "no message" otherwise).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    message.lines().next().unwrap_or_default().to_string()
}

/// `bytes` without a leading UTF-8 byte-order mark (EF BB BF), which some editors write at the start of
/// text files and parsers such as serde_json reject.
pub fn without_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(512), "512 bytes");
        assert_eq!(human_bytes(16 * MIB), "16 MiB");
        assert_eq!(human_bytes(5_690_000_000), "5.3 GiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }

    /// A file whose size on disk says 0 bytes but that holds more (procfs files do) is read in full
    /// when it fits, and stopped at the limit when it does not.
    #[test]
    fn a_file_whose_size_lies_is_bounded_while_reading() {
        let path = Path::new("/proc/self/maps");
        let meta = std::fs::metadata(path).expect("procfs");
        assert!(meta.is_file() && meta.len() == 0, "procfs files are regular files of size 0");
        let bytes = read(path, FileKind::Settings).expect("the maps are far below 1 MiB");
        assert!(bytes.len() > 64, "the size on disk (0) is not taken for the content's length");
        match read_within(path, FileKind::Settings, 64) {
            Err(e @ ReadError::Grew { size: 0, limit: 64, .. }) => {
                let m = e.to_string();
                assert!(m.contains("/proc/self/maps") && m.contains("more than 64 bytes"), "{m}");
            }
            other => panic!("expected Grew, got {other:?}"),
        }
    }

    #[test]
    fn special_files_are_refused_by_what_they_are() {
        let e = read(Path::new("/dev/null"), FileKind::Scene).unwrap_err().to_string();
        assert_eq!(e, "scene file /dev/null is a character device, not a regular file");
        let e = read(Path::new("/proc/self"), FileKind::Sky).unwrap_err().to_string();
        assert!(e.ends_with("is a directory, not a regular file"), "{e}");
        let e = read(Path::new("/no/such/file.ron"), FileKind::Scene).unwrap_err();
        assert!(e.is_not_found() && e.to_string().starts_with("cannot read scene file /no/such/file.ron: "), "{e}");
    }

    /// Devices, FIFOs and folders are never replaced or opened for writing; regular files are.
    #[test]
    fn outputs_replace_only_regular_files() {
        let dir = std::env::temp_dir().join(format!("waterview-files-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch folder");
        let part = dir.join("x.part");
        std::fs::write(&part, b"new").expect("write");
        let e = replace(&part, Path::new("/dev/null")).expect_err("a device is not replaced").to_string();
        assert_eq!(e, "it is a character device, not a regular file (it is not replaced)");
        assert!(!part.exists(), "the temporary file is removed");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/null").expect("still there").file_type().is_char_device());
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("no NUL");
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Opening a FIFO for writing without a reader would block: refused at once instead.
        let e = create(&fifo).expect_err("a FIFO").to_string();
        assert_eq!(e, "it is a FIFO (named pipe), not a regular file (it is not replaced)");
        let e = create(&dir).expect_err("a folder").to_string();
        assert_eq!(e, "it is a directory, not a regular file (it is not replaced)");
        let file = dir.join("out.csv");
        std::fs::write(&file, b"old contents").expect("write");
        drop(create(&file).expect("a regular file"));
        assert_eq!(std::fs::read(&file).expect("read"), b"", "emptied");
        std::fs::write(&part, b"new").expect("write");
        replace(&part, &file).expect("a regular file is replaced");
        assert_eq!(std::fs::read(&file).expect("read"), b"new");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_panicking_decoder_is_an_error_with_its_message() {
        assert_eq!(guarded(|| 7), Ok(7));
        let e = guarded(|| -> u32 { panic!("assertion failed: stride >= size") }).expect_err("caught");
        assert_eq!(e, "its decoder failed (assertion failed: stride >= size)");
    }

    #[test]
    fn byte_order_marks_are_dropped() {
        assert_eq!(without_bom(b"\xEF\xBB\xBF{}"), b"{}");
        assert_eq!(without_bom(b"{}"), b"{}");
    }
}
