//! Replays the fuzzers' seed corpus (`fuzz/corpus/<target>/`) through the fuzz targets' own code
//! (`fuzz/harness.rs`, the library's byte-level entry points), so CI runs every seed and every
//! regression input the fuzzers found, without libFuzzer or nightly. A seed named `ok_*` must load, one
//! named `bad_*` must be refused with an error (never a panic); any other (inputs the fuzzer found) must
//! simply not panic and return. No GPU needed.

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::Path;
use std::time::{Duration, Instant};

/// Runs every file of `fuzz/corpus/<target>` through `run`; returns how many seeds there were.
fn replay<E: std::fmt::Display>(target: &str, run: impl Fn(&[u8]) -> Result<(), E>) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    entries.sort();
    let (mut ok, mut bad) = (0, 0);
    for path in &entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let bytes = std::fs::read(path).expect("read a seed");
        let start = Instant::now();
        let result = run(&bytes);
        // Seeds are tiny; a slow one is a hang the fuzzer would report as a timeout.
        assert!(start.elapsed() < Duration::from_secs(20), "{target}/{name} took {:?}", start.elapsed());
        if name.starts_with("ok_") {
            if let Err(e) = &result {
                panic!("{target}/{name} must load: {e}");
            }
            ok += 1;
        } else if name.starts_with("bad_") {
            match &result {
                Ok(()) => panic!("{target}/{name} must be refused"),
                Err(e) => assert!(!e.to_string().is_empty()),
            }
            bad += 1;
        }
    }
    assert!(ok >= 3 && bad >= 3, "{target}: {ok} ok_ and {bad} bad_ seeds; the corpus lost its seeds");
    entries.len()
}

#[test]
fn scene_text_corpus() {
    replay("scene_text", harness::scene_text);
}

#[test]
fn heightmap_bytes_corpus() {
    replay("heightmap_bytes", harness::heightmap_bytes);
}

#[test]
fn sky_image_corpus() {
    replay("sky_image", harness::sky_image);
}

#[test]
fn mesh_bytes_corpus() {
    replay("mesh_bytes", harness::mesh_bytes);
}

#[test]
fn gltf_mesh_corpus() {
    replay("gltf_mesh", harness::gltf_mesh);
}

#[test]
fn obj_mesh_corpus() {
    replay("obj_mesh", harness::obj_mesh);
}

#[test]
fn stl_mesh_corpus() {
    replay("stl_mesh", harness::stl_mesh);
}

#[test]
fn particles_ply_corpus() {
    replay("particles_ply", harness::particles);
}

#[test]
fn particles_vtu_corpus() {
    replay("particles_vtu", harness::particles);
}

#[test]
fn checkpoint_bytes_corpus() {
    replay("checkpoint_bytes", harness::checkpoint_bytes);
}

/// The harness's checksum repair makes a checkpoint's CRC-32s what the writer computes (crc32fast).
#[test]
fn checkpoint_checksums_are_repaired_as_written() {
    let seed = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/checkpoint_bytes/ok_tiny"))
        .expect("the seed");
    let written = &seed[1..];
    let mut damaged = written.to_vec();
    let n = damaged.len();
    damaged[n - 4..].fill(0);
    let len = u32::from_le_bytes(written[12..16].try_into().expect("4 bytes")) as usize;
    damaged[16 + len..20 + len].fill(0);
    harness::fix_checkpoint_checksums(&mut damaged);
    assert_eq!(&damaged[16 + len..20 + len], &written[16 + len..20 + len], "the header's CRC");
    assert_eq!(&damaged[n - 4..], &written[n - 4..], "the state's CRC");
}

#[test]
fn heightmap_inputs_split_as_documented() {
    let (units, crop, png) =
        harness::split_heightmap_input(&[2, 0, b'{', b'}', 1, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 9]);
    assert_eq!((units, crop, png), (Some(&b"{}"[..]), Some([1, 2, 3, 4]), &[9][..]));
    let (units, crop, png) = harness::split_heightmap_input(&[0xFF, 0xFF, 0, 7, 8]);
    assert_eq!((units, crop, png), (None, None, &[7, 8][..]));
    assert_eq!(harness::split_heightmap_input(&[5]), (None, None, &[][..]));
}
