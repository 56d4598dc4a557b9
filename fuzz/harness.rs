//! What each fuzz target does with its input, shared by the targets (`fuzz/fuzz_targets/`) and by the
//! corpus replay test (`tests/fuzz_corpus.rs`), so CI runs the seeds through exactly what the fuzzer
//! runs. Each function goes through the library's byte-level entry points, the ones its file paths use
//! (`Scene::from_bytes`, `heightfield_from_bytes`, `equirect_from_bytes` / `face_from_bytes`,
//! `mesh::from_bytes`, `particle_io::decode`, `Checkpoint::from_bytes`), checks
//! what a success promises (panicking if not: the fuzzer reports that as a crash) and returns the
//! library's error otherwise. None needs a GPU.
#![allow(dead_code)]

use std::path::Path;
use waterview::engine::{Checkpoint, CheckpointError};
use waterview::mesh::{from_bytes, MeshError, MeshFormat, MAX_TRIANGLES, MAX_VERTICES};
use waterview::particle_io::{ParticleFileError, MAX_FILE_PARTICLES};
use waterview::render::sky_image::{cube_from_faces, equirect_from_bytes, face_from_bytes, LOADED_FACE};
use waterview::render::SkyError;
use waterview::scene::{heightfield_from_bytes, Aabb, Scene, SceneError, TerrainDesc};

/// Scenes whose fluid blocks hold more lattice points than this are parsed and validated but not built:
/// the library allows up to `MAX_PARTICLES` (2^32 - 1; its lattice is counted, never laid out, but the
/// check below lays it out), past libFuzzer's 2 GiB memory limit. 2^20 particles take 24 MiB.
pub const MAX_BUILT_PARTICLES: u64 = 1 << 20;

/// Scene file bytes -> parse -> validate -> the initial particles and terrain, on a GPU adapter's dx and
/// on a CPU adapter's (no GPU: `Scene::build` is the CPU half of the engine's build). Terrain paths
/// resolve against `fuzz/` (the Jacksboro DEM comes from the copy embedded in the binary).
pub fn scene_text(data: &[u8]) -> Result<(), SceneError> {
    let scene = Scene::from_bytes(data, Path::new("fuzz/scene.ron"))?;
    for on_cpu in [false, true] {
        if scene.estimate_particle_count(on_cpu) > MAX_BUILT_PARTICLES {
            continue;
        }
        let setup = scene.build(on_cpu)?;
        let (positions, velocities) = setup.to_vecs();
        assert!(!positions.is_empty() && positions.len() == velocities.len());
        assert_eq!(positions.len() as u64, setup.len(), "the count is the particles handed out");
        let d = &scene.domain;
        for p in &positions {
            assert!(p.is_finite(), "particle at {p}");
            assert!((0..3).all(|a| p[a] >= d.min[a] && p[a] <= d.max[a]), "particle {p} outside the domain {d:?}");
        }
        let t = &setup.terrain;
        assert_eq!(t.heights.len(), t.nx as usize * t.nz as usize);
        assert!(t.heights.iter().all(|h| h.is_finite()), "non-finite terrain heights");
    }
    Ok(())
}

/// Splits a heightmap input: `[json length: u16 LE (0xFFFF: no units file)][json][crop flag: u8][crop:
/// 4 x u32 LE, when the flag is not 0][PNG bytes]`; missing bytes count as absent.
pub fn split_heightmap_input(data: &[u8]) -> (Option<&[u8]>, Option<[u32; 4]>, &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else { return (None, None, &[]) };
    let len = u16::from_le_bytes(*len);
    let (units, rest) = match len {
        0xFFFF => (None, rest),
        n => {
            let n = (n as usize).min(rest.len());
            (Some(&rest[..n]), &rest[n..])
        }
    };
    let (crop, png) = match rest.split_first() {
        None => (None, &[][..]),
        Some((0, png)) => (None, png),
        Some((_, rest)) => match rest.split_first_chunk::<16>() {
            Some((crop, png)) => {
                let c = |i: usize| u32::from_le_bytes([crop[4 * i], crop[4 * i + 1], crop[4 * i + 2], crop[4 * i + 3]]);
                (Some([c(0), c(1), c(2), c(3)]), png)
            }
            None => (None, &[][..]),
        },
    };
    (units, crop, png)
}

/// Heightmap PNG bytes and units JSON bytes ([`split_heightmap_input`]) -> the heightfield of a 60 m x
/// 60 m terrain (as the valley's), checking that every height is finite.
pub fn heightmap_bytes(data: &[u8]) -> Result<(), SceneError> {
    let (units, crop, png) = split_heightmap_input(data);
    let desc = TerrainDesc { heightmap: "fuzz.png".into(), crop, extent: [60.0, 60.0], vertical_scale: 2.5, base: 0.0 };
    let domain = Aabb { min: [0.0, 0.0, 0.0], max: [60.0, 20.0, 60.0] };
    let hf = heightfield_from_bytes(&desc, png, units, Path::new("fuzz.png"), &domain)?;
    assert_eq!(hf.heights.len(), hf.nx as usize * hf.nz as usize);
    assert!(hf.nx >= 2 && hf.nz >= 2);
    assert!(hf.heights.iter().all(|h| h.is_finite()), "non-finite terrain heights");
    Ok(())
}

/// Sky image bytes -> cube faces. The first byte picks the path and the file name the bytes come with
/// (whose extension is the decoder's fallback when the bytes' signature is not recognised): bit 0 set =
/// one cube face used for all six, clear = an equirectangular image; bits 1-2 = `.hdr`, `.exr`, `.png`,
/// `.jpg`.
pub fn sky_image(data: &[u8]) -> Result<(), SkyError> {
    let Some((&mode, bytes)) = data.split_first() else { return Ok(()) };
    let name = ["fuzz.hdr", "fuzz.exr", "fuzz.png", "fuzz.jpg"][(mode as usize >> 1) & 3];
    let cube = if mode & 1 == 0 {
        equirect_from_bytes(bytes, Path::new(name))?
    } else {
        let face = face_from_bytes(bytes, Path::new(name))?;
        assert!(face.width() == face.height() && face.width() <= LOADED_FACE);
        cube_from_faces(&std::array::from_fn(|_| face.clone()), Vec::new())
    };
    assert!(cube.face >= 1 && cube.face <= LOADED_FACE);
    assert_eq!(cube.texels.len(), 6 * cube.face as usize * cube.face as usize * 4);
    for t in cube.texels.chunks_exact(4) {
        // Finite, non-negative half floats (sign bit clear, exponent not all ones).
        assert!(t.iter().all(|&h| h & 0x8000 == 0 && h & 0x7c00 != 0x7c00), "texel {t:?}");
    }
    Ok(())
}

/// Mesh file bytes -> a checked triangle mesh. The first byte picks the file name the bytes come with, and
/// so the decoder: bits 0-1 = `.obj`, `.stl`, `.gltf`, `.glb` (a glTF's external buffers resolve against
/// `fuzz/`). A mesh that loads must have triangles, at most `MAX_TRIANGLES`, finite vertices, indices
/// within them, and be closed (every edge in two triangles).
pub fn mesh_bytes(data: &[u8]) -> Result<(), MeshError> {
    let Some((&mode, bytes)) = data.split_first() else { return Ok(()) };
    mesh_file(bytes, ["fuzz.obj", "fuzz.stl", "fuzz.gltf", "fuzz.glb"][mode as usize & 3])
}

/// glTF or GLB bytes (as `fuzz/fuzz.gltf`: the crate tells GLB from JSON by its magic) -> a checked mesh,
/// as [`mesh_bytes`] checks it.
pub fn gltf_mesh(data: &[u8]) -> Result<(), MeshError> {
    mesh_file(data, "fuzz.gltf")
}

/// OBJ bytes -> a checked mesh, as [`mesh_bytes`] checks it.
pub fn obj_mesh(data: &[u8]) -> Result<(), MeshError> {
    mesh_file(data, "fuzz.obj")
}

/// STL bytes (ASCII or binary) -> a checked mesh, as [`mesh_bytes`] checks it.
pub fn stl_mesh(data: &[u8]) -> Result<(), MeshError> {
    mesh_file(data, "fuzz.stl")
}

/// `bytes` decoded as the mesh file `name` in `fuzz/`, and what a mesh that loads promises checked.
fn mesh_file(bytes: &[u8], name: &str) -> Result<(), MeshError> {
    let path = Path::new("fuzz").join(name);
    let format = MeshFormat::from_path(&path).expect("a mesh extension");
    let mesh = from_bytes(bytes, format, &path)?;
    assert!(mesh.vertices.len() <= MAX_VERTICES, "{} vertices", mesh.vertices.len());
    assert!(!mesh.triangles.is_empty() && mesh.triangles.len() <= MAX_TRIANGLES);
    assert!(mesh.vertices.iter().all(|v| v.is_finite()), "a vertex is not finite");
    let mut edges = std::collections::HashMap::new();
    for t in &mesh.triangles {
        assert!(t.iter().all(|&i| (i as usize) < mesh.vertices.len()), "triangle {t:?}");
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *edges.entry((a.min(b), a.max(b))).or_insert(0) += 1;
        }
    }
    assert!(edges.values().all(|&n| n == 2), "a loaded mesh is not closed");
    Ok(())
}

/// PLY or VTU bytes -> particles (`particle_io::decode`, what reading a fluid file runs). Particles that
/// load come as arrays of one length (densities empty or of that length too), at most
/// `MAX_FILE_PARTICLES`, and no more than the input's bytes could describe (4 bytes a particle at the
/// least).
pub fn particles(data: &[u8]) -> Result<(), ParticleFileError> {
    let p = waterview::particle_io::decode(data, Path::new("fuzz/fuzz.particles"))?;
    assert_eq!(p.positions.len(), p.velocities.len());
    assert!(p.densities.is_empty() || p.densities.len() == p.positions.len());
    assert!(p.len() as u64 <= MAX_FILE_PARTICLES);
    assert!(p.len() <= data.len() / 4 + 1, "{} particles from {} bytes", p.len(), data.len());
    Ok(())
}

/// Makes a checkpoint file's two CRC-32s agree with its bytes (`WVCHECKP`, version, header length,
/// header, its CRC, the state, its CRC), where the bytes are long enough to hold them: what lets the
/// fuzzer past the checksums to the header's and the state's checks.
pub fn fix_checkpoint_checksums(bytes: &mut [u8]) {
    let Some(len) = bytes.get(12..16).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize) else {
        return;
    };
    let Some(header_end) = 16usize.checked_add(len).filter(|&e| e + 4 <= bytes.len()) else { return };
    let crc = crc32(&bytes[..header_end]);
    bytes[header_end..header_end + 4].copy_from_slice(&crc.to_le_bytes());
    let state = header_end + 4;
    if bytes.len() >= state + 4 {
        let end = bytes.len() - 4;
        let crc = crc32(&bytes[state..end]);
        bytes[end..].copy_from_slice(&crc.to_le_bytes());
    }
}

/// CRC-32 (IEEE, as crc32fast computes it), bit by bit: the harness needs no dependency of its own.
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

/// `[mode: u8][checkpoint file]` -> a checkpoint (`Checkpoint::from_bytes`, what `--resume` and the
/// window's Resume read). Bit 0 of the mode set: the file's checksums are made to agree first
/// ([`fix_checkpoint_checksums`]), so the header's and the state's checks are reached. A checkpoint that
/// loads holds finite positions and velocities, as many as its capacity, and its scene.
pub fn checkpoint_bytes(data: &[u8]) -> Result<(), CheckpointError> {
    let Some((&mode, bytes)) = data.split_first() else { return Ok(()) };
    let mut bytes = bytes.to_vec();
    if mode & 1 != 0 {
        fix_checkpoint_checksums(&mut bytes);
    }
    let c = Checkpoint::from_bytes(&bytes, Path::new("fuzz/fuzz.wvc"))?;
    let s = c.state();
    assert_eq!(s.positions.len(), c.capacity() as usize);
    assert_eq!(s.velocities.len(), c.capacity() as usize);
    assert!(s.positions.iter().chain(&s.velocities).all(|v| v.iter().all(|x| x.is_finite())));
    assert!(c.time().is_finite() && c.time() >= 0.0);
    c.scene().expect("a checkpoint that loads has a scene that parses");
    Ok(())
}
