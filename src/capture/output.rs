//! Outputs checked before the work that fills them starts: a run of minutes must not end in "cannot write".
//! [`check_writable`] looks at the path and proves the folder that will hold it writable by creating (and
//! removing) a probe file there; it creates no folder itself (the writers create missing ones later).
//! A file's path must name nothing yet or a regular file: a device (`/dev/null`, `/dev/full`), a FIFO, a
//! socket or a folder is refused, since the writers rename their finished file over the path (and the
//! writers check again, [`crate::files::replace`]).

use super::CaptureError;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// What will be written at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A file (an image, a video, a CSV, a checkpoint): the path must name nothing yet or a regular file
    /// (not a folder, device, FIFO or socket).
    File,
    /// A folder of files (screenshots, a report), new or existing: the path must not be a file.
    Folder,
    /// A folder the writer creates (numbered PNG frames): nothing may exist at the path yet.
    NewFolder,
}

/// Checks that `path` can be written as `what` before any work starts: nothing or a regular file where a
/// file goes (no folder, device, FIFO or socket), no file where a folder goes, and the nearest existing
/// folder above it (or the folder itself) writable, proved by creating and removing a probe file in it.
/// Errors: [`CaptureError::Write`] naming `path` and why (a folder, a device, a FIFO, a socket, a file, a
/// missing or read-only folder, or whatever the probe hit); [`CaptureError::Exists`] for a
/// [`Output::NewFolder`] that exists.
pub fn check_writable(path: &Path, what: Output) -> Result<(), CaptureError> {
    let fail = |cause: String| Err(CaptureError::write(path, cause));
    if path.as_os_str().is_empty() {
        return fail("the path is empty".into());
    }
    match (std::fs::metadata(path), what) {
        (Ok(m), Output::File) if m.is_dir() => return fail("it is a folder".into()),
        (Ok(m), Output::File) if !m.is_file() => {
            return fail(format!(
                "it is {}, not a regular file (a finished output is renamed over its path)",
                crate::files::what_is(m.file_type())
            ))
        }
        (Ok(m), Output::Folder) if !m.is_dir() => return fail("it is a file, not a folder".into()),
        (Ok(_), Output::NewFolder) => return Err(CaptureError::Exists { path: path.to_path_buf() }),
        _ => {}
    }
    let folder = match what {
        Output::Folder if path.is_dir() => path.to_path_buf(),
        _ => match nearest_existing_folder(path) {
            Some(f) => f,
            None => return fail("no folder above it exists".into()),
        },
    };
    let probe = folder.join(format!(".waterview-write-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(file) => {
            drop(file);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        // A probe left by a killed run of the same process id: the folder took it, so it is writable.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => fail(format!("no file can be created in {} ({e})", folder.display())),
    }
}

/// The deepest existing ancestor of `path` that is a folder (`.` for a bare relative name); `None` when an
/// existing ancestor is a file (nothing can be created below it) or none exists.
fn nearest_existing_folder(path: &Path) -> Option<PathBuf> {
    let mut dir = path.parent();
    while let Some(d) = dir {
        let d = if d.as_os_str().is_empty() { Path::new(".") } else { d };
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => return Some(d.to_path_buf()),
            Ok(_) => return None,
            Err(_) => dir = d.parent(),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("waterview-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch folder");
        dir
    }

    #[test]
    fn writable_paths_pass_and_leave_nothing_behind() {
        let dir = scratch("ok");
        check_writable(&dir.join("out.png"), Output::File).expect("a new file in a writable folder");
        check_writable(&dir.join("new/deeper/out.mp4"), Output::File).expect("missing folders are created later");
        check_writable(&dir.join("frames"), Output::Folder).expect("a new folder");
        check_writable(&dir, Output::Folder).expect("an existing folder");
        assert_eq!(std::fs::read_dir(&dir).expect("list").count(), 0, "the probe was removed, no folder created");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn folders_files_and_missing_roots_are_refused_with_the_reason() {
        let dir = scratch("refused");
        let file = dir.join("file.txt");
        std::fs::write(&file, b"x").expect("write");
        let message = |p: &Path, w: Output| check_writable(p, w).expect_err("refused").to_string();
        assert!(message(&dir, Output::File).contains("it is a folder"));
        assert!(message(&file, Output::Folder).contains("not a folder"));
        assert!(message(&file.join("below.png"), Output::File).contains("no folder above it"));
        let m = message(Path::new("/proc/waterview-test/out.png"), Output::File);
        assert!(m.contains("/proc/waterview-test/out.png") && m.contains("no file can be created in /proc"), "{m}");
        assert!(message(&dir, Output::NewFolder).contains("already exists"));
        for device in ["/dev/null", "/dev/full"] {
            let m = message(Path::new(device), Output::File);
            assert!(m.contains(device) && m.contains("it is a character device, not a regular file"), "{m}");
        }
        let fifo = dir.join("stats.csv");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("no NUL");
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(message(&fifo, Output::File).contains("it is a FIFO (named pipe), not a regular file"));
        let socket = dir.join("out.png");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("a socket");
        assert!(message(&socket, Output::File).contains("it is a socket, not a regular file"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
