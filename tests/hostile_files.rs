//! Hostile files never hurt: every file the app reads goes through one bounded reader
//! (`waterview::files`), so devices, FIFOs, folders and files past their kind's size limit are refused
//! at once with a message naming the path, and image headers that claim huge sizes are refused by the
//! decoders' limits. Each test runs the read on a thread with a deadline, so a regression (a read that
//! blocks on a FIFO or never ends on `/dev/zero`) fails instead of hanging. No GPU needed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use waterview::scene::Scene;

/// A fresh, empty directory under the system temp dir, unique to this process and `tag`.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waterview_hostile_{}_{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Runs `f` on a thread and returns its result, failing the test when it takes longer than `secs`
/// seconds (the thread is left behind; the test process ends with the failure).
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not return within {secs} s (a blocking or unbounded read)"),
    }
}

/// Scene::load of `path` within 5 s, expecting an error; returns its message.
fn scene_load_err(path: &Path) -> String {
    let p = path.to_path_buf();
    match within(5, &format!("Scene::load({})", path.display()), move || Scene::load(&p).map(|s| s.name)) {
        Ok(name) => panic!("{} loaded as scene {name}", path.display()),
        Err(e) => e.to_string(),
    }
}

/// A small valid scene (flat floor) as RON; `{extra}` is inserted after the camera.
fn minimal(extra: &str) -> String {
    format!(
        r#"(
    name: "test",
    domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),
    fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.5, 0.5))],
    camera: (target: (0.5, 0.5, 0.5), distance: 3.0, yaw_deg: 0.0, pitch_deg: 30.0),
    {extra}
)"#
    )
}

/// Builds the minimal scene with its terrain's heightmap at `heightmap` (absolute) within 5 s, expecting
/// an error; returns its message.
fn heightmap_build_err(heightmap: &Path, dir: &Path) -> String {
    let text =
        minimal(&format!("terrain: Some((heightmap: {:?}, extent: (1.0, 1.0))),", heightmap.display().to_string()));
    let scene = Scene::from_str(&text, &dir.join("scene.ron")).expect("the scene parses");
    match within(5, &format!("building with heightmap {}", heightmap.display()), move || {
        scene.build(false).map(|s| s.len() as usize)
    }) {
        Ok(n) => panic!("{} built {n} particles", heightmap.display()),
        Err(e) => e.to_string(),
    }
}

/// A named pipe at `path` (nobody ever writes to it: opening it for reading in blocking mode would hang).
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("run mkfifo");
    assert!(status.success(), "mkfifo {} failed", path.display());
}

#[test]
fn devices_as_scene_or_heightmap_are_refused_at_once() {
    let dir = temp_dir("devices");
    for dev in ["/dev/zero", "/dev/urandom"] {
        let e = scene_load_err(Path::new(dev));
        assert!(e.contains(dev) && e.contains("character device") && e.contains("not a regular file"), "{e}");
        let e = heightmap_build_err(Path::new(dev), &dir);
        assert!(e.contains(dev) && e.contains("character device") && e.contains("not a regular file"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fifos_as_scene_or_heightmap_are_refused_without_blocking() {
    let dir = temp_dir("fifo");
    let fifo = dir.join("pipe.ron");
    mkfifo(&fifo);
    let e = scene_load_err(&fifo);
    assert!(e.contains("pipe.ron") && e.contains("FIFO") && e.contains("not a regular file"), "{e}");
    let fifo_png = dir.join("pipe.png");
    mkfifo(&fifo_png);
    let e = heightmap_build_err(&fifo_png, &dir);
    assert!(e.contains("pipe.png") && e.contains("FIFO") && e.contains("not a regular file"), "{e}");
    // A FIFO where the units JSON belongs to a good heightmap: refused too (not taken for "no units").
    let png = dir.join("ok.png");
    image::ImageBuffer::<image::Luma<u16>, Vec<u16>>::from_pixel(4, 4, image::Luma([1000])).save(&png).unwrap();
    mkfifo(&dir.join("ok.json"));
    let e = heightmap_build_err(&png, &dir);
    assert!(e.contains("ok.json") && e.contains("FIFO"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_folder_as_scene_is_refused() {
    let dir = temp_dir("folder");
    let e = scene_load_err(&dir);
    assert!(
        e.contains(&dir.display().to_string()) && e.contains("directory") && e.contains("not a regular file"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn oversized_files_are_refused_from_their_size_without_reading() {
    let dir = temp_dir("sparse");
    // Sparse files: reading them would take minutes and all the memory; the size alone refuses them.
    let scene = dir.join("huge.ron");
    std::fs::File::create(&scene).unwrap().set_len(100 << 30).unwrap();
    let start = Instant::now();
    let e = scene_load_err(&scene);
    assert!(e.contains("huge.ron") && e.contains("100 GiB") && e.contains("scene files are limited to 16 MiB"), "{e}");
    let png = dir.join("huge.png");
    std::fs::File::create(&png).unwrap().set_len(600 << 20).unwrap();
    let e = heightmap_build_err(&png, &dir);
    assert!(e.contains("huge.png") && e.contains("600 MiB") && e.contains("heightmaps are limited to 512 MiB"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(2), "took {:?}: the files were read", start.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The CRC-32 of PNG chunks (ISO 3309, polynomial 0xEDB88320), bit by bit.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A PNG whose header claims `width` x `height` pixels of `color_type` (0 grey, 2 RGB) at `depth` bits,
/// with a few bytes of image data: a decoding bomb if the decoder believed the header.
fn png_claiming(width: u32, height: u32, depth: u8, color_type: u8) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend((data.len() as u32).to_be_bytes());
        let body: Vec<u8> = kind.iter().chain(data).copied().collect();
        out.extend(&body);
        out.extend(crc32(&body).to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([depth, color_type, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
    chunk(b"IEND", &[]);
    out
}

#[test]
fn a_png_claiming_100000_pixels_a_side_is_refused_by_the_decoder_limits() {
    let dir = temp_dir("bomb");
    let png = dir.join("bomb.png");
    std::fs::write(&png, png_claiming(100_000, 100_000, 16, 0)).unwrap();
    let e = heightmap_build_err(&png, &dir);
    assert!(e.contains("bomb.png") && e.contains("limited to 16384 x 16384 pixels"), "{e}");
    // The same as a sky (an RGB PNG twice as wide as high, as a sky's header would claim).
    let sky = dir.join("bomb_sky.png");
    std::fs::write(&sky, png_claiming(200_000, 100_000, 8, 2)).unwrap();
    let e = sky_err(&sky);
    assert!(e.contains("bomb_sky.png") && e.contains("limited to 16384 x 16384 pixels"), "{e}");
    // Within the sizes but past the decoded-bytes limit: 16384 x 16384 RGB 16-bit is 1.5 GiB for a
    // heightmap (512 MiB allowed).
    std::fs::write(&png, png_claiming(16384, 16384, 16, 2)).unwrap();
    let e = heightmap_build_err(&png, &dir);
    assert!(e.contains("bomb.png") && e.contains("512 MiB decoded"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `load_sky(path)` within 10 s, expecting an error; returns its message.
fn sky_err(path: &Path) -> String {
    let p = path.to_path_buf();
    match within(10, &format!("load_sky({})", path.display()), move || waterview::render::load_sky(&p).map(|c| c.face))
    {
        Ok(face) => panic!("{} loaded as a sky with {face}-texel faces", path.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn skies_that_cannot_be_used_name_their_path() {
    let dir = temp_dir("sky");
    let e = sky_err(&dir.join("missing.hdr"));
    assert!(e.contains("missing.hdr") && e.contains("cannot read sky image"), "{e}");
    // A folder without the six faces (a stray image in it is not a face).
    image::RgbImage::new(4, 2).save(dir.join("stray.png")).unwrap();
    let e = sky_err(&dir);
    assert!(e.contains(&dir.display().to_string()) && e.contains("no face px"), "{e}");
    let hdr = dir.join("bad.hdr");
    std::fs::write(&hdr, b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 8 +X 16\n garbage, not pixels").unwrap();
    let e = sky_err(&hdr);
    assert!(e.contains("bad.hdr") && e.contains("cannot decode sky image"), "{e}");
    for dev in ["/dev/zero", "/dev/urandom"] {
        let e = sky_err(Path::new(dev));
        assert!(e.contains(dev) && e.contains("not a regular file"), "{e}");
    }
    let fifo = dir.join("pipe.hdr");
    mkfifo(&fifo);
    let e = sky_err(&fifo);
    assert!(e.contains("pipe.hdr") && e.contains("FIFO"), "{e}");
    // A face that is a FIFO in an otherwise complete folder.
    let faces = temp_dir("sky_faces");
    for name in ["px", "nx", "py", "ny", "pz"] {
        image::RgbImage::from_pixel(8, 8, image::Rgb([100, 150, 250])).save(faces.join(format!("{name}.png"))).unwrap();
    }
    mkfifo(&faces.join("nz.png"));
    let e = sky_err(&faces);
    assert!(e.contains("nz.png") && e.contains("FIFO"), "{e}");
    std::fs::remove_file(faces.join("nz.png")).unwrap();
    image::RgbImage::from_pixel(8, 8, image::Rgb([100, 150, 250])).save(faces.join("nz.png")).unwrap();
    let cube = waterview::render::load_sky(&faces).expect("six 8x8 faces load");
    assert_eq!((cube.face, cube.sources.len()), (8, 6));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&faces);
}

#[test]
fn a_scene_with_a_utf8_byte_order_mark_parses() {
    let dir = temp_dir("bom");
    let text = format!("\u{feff}{}", minimal(""));
    let scene = Scene::from_str(&text, &dir.join("bom.ron")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scene.name, "test");
    let path = dir.join("bom.ron");
    std::fs::write(&path, text.as_bytes()).unwrap();
    let scene = Scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scene.name, "test");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `waterview ARGS` (the built binary), within `secs` seconds: (exit success, stderr).
fn cli(args: Vec<std::ffi::OsString>, secs: u64) -> (bool, String) {
    within(secs, "the waterview binary", move || {
        let out = Command::new(env!("CARGO_BIN_EXE_waterview")).args(args).output().expect("run waterview");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    })
}

#[test]
fn the_cli_refuses_a_device_or_a_fifo_as_scene_within_seconds() {
    let dir = temp_dir("cli");
    let fifo = dir.join("pipe.ron");
    mkfifo(&fifo);
    for scene in [PathBuf::from("/dev/zero"), fifo] {
        let args = ["run".into(), "--scene".into(), scene.clone().into_os_string(), "--steps".into(), "1".into()];
        let (ok, stderr) = cli(args.to_vec(), 20);
        assert!(!ok, "waterview run --scene {} succeeded", scene.display());
        assert!(stderr.contains(&scene.display().to_string()) && stderr.contains("not a regular file"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
