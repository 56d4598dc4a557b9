//! What reading a particle file costs in memory, measured by a counting allocator (this binary's global
//! allocator; one test, so no other test's allocations share the count): a file's particles are decoded
//! straight into the output arrays, reserved once from the header, so the peak is those arrays (28 bytes
//! a particle with densities, 24 without) and, for a VTU file, the file's bytes; a PLY file is decoded as
//! it is read, never held whole. Before, a 1 GiB ASCII PLY peaked at 10 GB, a 1 GiB binary PLY at 5.5 GB
//! and a 600 MB inline base64 VTU of 8 points at 1.9 GB (the text copied, then its characters, then the
//! bytes decoded from them).
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use waterview::particle_io::{self, ParticleFormat, Particles};

/// Counts the bytes allocated now and their peak.
struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size > layout.size() {
                let now = NOW.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                NOW.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result and the most bytes it had allocated at once beyond what was allocated
/// when it started.
fn peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = NOW.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed) - base)
}

const MIB: usize = 1 << 20;

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waterview-particle-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// `n` particles on a lattice of 1 cm, with velocities and densities.
fn particles(n: usize) -> Particles {
    let p = |i: usize| [(i % 100) as f32 * 0.01, (i / 100 % 100) as f32 * 0.01, (i / 10_000) as f32 * 0.01];
    Particles {
        positions: (0..n).map(p).collect(),
        velocities: (0..n).map(|i| [0.0, -((i % 7) as f32), 0.0]).collect(),
        densities: vec![1000.0; n],
    }
}

/// Reads `path` and checks the particles and the peak: at most `bound` bytes.
fn read_within(path: &Path, n: usize, bound: usize, what: &str) {
    let (read, bytes) = peak(|| particle_io::read(path));
    let read = read.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(read.len(), n, "{what}");
    eprintln!(
        "{what}: {n} particles, peak {:.1} MiB (bound {:.1} MiB)",
        bytes as f64 / MIB as f64,
        bound as f64 / MIB as f64
    );
    assert!(bytes <= bound, "{what}: peak {bytes} bytes, more than {bound}");
}

#[test]
fn particle_files_cost_their_arrays_and_no_more() {
    let dir = scratch();
    let n = 1_000_000;
    let cloud = particles(n);
    let arrays = 28 * n;

    // Binary PLY (28 MB): decoded as it is read; the arrays and a 1 MiB read buffer.
    let ply = dir.join("cloud.ply");
    particle_io::write(&ply, &cloud, ParticleFormat::Ply, 0.0).expect("write");
    read_within(&ply, n, arrays + 2 * MIB, "binary PLY");

    // ASCII PLY without densities (24 bytes a particle): the same, a line at a time.
    let m = 300_000;
    let mut text = format!(
        "ply\nformat ascii 1.0\nelement vertex {m}\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
    );
    for p in &cloud.positions[..m] {
        text += &format!("{} {} {}\n", p[0], p[1], p[2]);
    }
    let ascii = dir.join("cloud_ascii.ply");
    std::fs::write(&ascii, &text).expect("write");
    drop(text);
    read_within(&ascii, m, 24 * m + 2 * MIB, "ASCII PLY");

    // Raw appended VTU (28 MB): the file's bytes and the arrays.
    let vtu = dir.join("cloud.vtu");
    particle_io::write(&vtu, &cloud, ParticleFormat::Vtu, 0.0).expect("write");
    let size = std::fs::metadata(&vtu).expect("size").len() as usize;
    read_within(&vtu, n, size + arrays + 2 * MIB, "raw appended VTU");

    // Inline base64 VTU of 8 points followed by 48 MiB more base64 in the same array: the points are
    // decoded, the rest is never copied (before: the text, its characters and their bytes, 3.3 times).
    let points: Vec<u8> = (0..24).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let b64 = |bytes: &[u8]| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes);
    let mut body = b64(&96u32.to_le_bytes()) + &b64(&points);
    body += &"QUFB".repeat(12 * MIB);
    let inline = format!(
        "<VTKFile type=\"UnstructuredGrid\"><UnstructuredGrid><Piece NumberOfPoints=\"8\"><Points>\
         <DataArray type=\"Float32\" NumberOfComponents=\"3\" format=\"binary\">{body}</DataArray></Points>\
         </Piece></UnstructuredGrid></VTKFile>"
    );
    drop(body);
    let big = dir.join("inline.vtu");
    std::fs::write(&big, &inline).expect("write");
    let (decoded, bytes) = peak(|| particle_io::decode(inline.as_bytes(), &big));
    let decoded = decoded.expect("the 8 points");
    assert_eq!(decoded.positions[7], [21.0, 22.0, 23.0]);
    eprintln!("inline base64 VTU from bytes: peak {} KiB", bytes / 1024);
    assert!(bytes <= MIB, "decoding 8 points took {bytes} bytes");
    read_within(&big, 8, inline.len() + 2 * MIB, "inline base64 VTU");
    let _ = std::fs::remove_dir_all(&dir);
}
