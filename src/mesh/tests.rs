use super::*;
use base64::Engine as _;

fn cube() -> TriangleMesh {
    TriangleMesh::cuboid(Vec3::ZERO, Vec3::ONE)
}

fn volume(m: &TriangleMesh) -> f32 {
    m.triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| m.vertices[i as usize]);
            a.dot(b.cross(c)) / 6.0
        })
        .sum()
}

/// A unit cube as binary STL (one facet per triangle, vertices repeated), under `header`.
fn binary_stl(m: &TriangleMesh, header: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 80];
    out[..header.len()].copy_from_slice(header);
    out.extend((m.triangles.len() as u32).to_le_bytes());
    for t in &m.triangles {
        out.extend([0f32; 3].iter().flat_map(|c| c.to_le_bytes()));
        for &i in t {
            out.extend(m.vertices[i as usize].to_array().iter().flat_map(|c| c.to_le_bytes()));
        }
        out.extend([0u8; 2]);
    }
    out
}

fn ascii_stl(m: &TriangleMesh) -> String {
    let mut s = String::from("solid cube\n");
    for t in &m.triangles {
        s += "facet normal 0 0 0\nouter loop\n";
        for &i in t {
            let v = m.vertices[i as usize];
            s += &format!("vertex {} {} {}\n", v.x, v.y, v.z);
        }
        s += "endloop\nendfacet\n";
    }
    s + "endsolid cube\n"
}

/// A glTF JSON with the mesh's positions and u16 indices in one `data:` buffer.
fn gltf_json(m: &TriangleMesh, translation: [f32; 3]) -> String {
    let mut buffer: Vec<u8> = m.vertices.iter().flat_map(|v| v.to_array()).flat_map(f32::to_le_bytes).collect();
    let positions_len = buffer.len();
    buffer.extend(m.triangles.iter().flatten().flat_map(|&i| (i as u16).to_le_bytes()));
    let (lo, hi) = m.bounds();
    format!(
        r#"{{"asset":{{"version":"2.0"}},"scene":0,"scenes":[{{"nodes":[0]}}],
        "nodes":[{{"mesh":0,"translation":[{},{},{}]}}],
        "meshes":[{{"primitives":[{{"attributes":{{"POSITION":0}},"indices":1}}]}}],
        "buffers":[{{"byteLength":{},"uri":"data:application/octet-stream;base64,{}"}}],
        "bufferViews":[{{"buffer":0,"byteOffset":0,"byteLength":{positions_len}}},
                       {{"buffer":0,"byteOffset":{positions_len},"byteLength":{}}}],
        "accessors":[{{"bufferView":0,"componentType":5126,"count":{},"type":"VEC3","min":[{},{},{}],"max":[{},{},{}]}},
                     {{"bufferView":1,"componentType":5123,"count":{},"type":"SCALAR"}}]}}"#,
        translation[0],
        translation[1],
        translation[2],
        buffer.len(),
        base64::engine::general_purpose::STANDARD.encode(&buffer),
        buffer.len() - positions_len,
        m.vertices.len(),
        lo.x,
        lo.y,
        lo.z,
        hi.x,
        hi.y,
        hi.z,
        m.triangles.len() * 3
    )
}

fn decode(text: &[u8], name: &str) -> Result<TriangleMesh, MeshError> {
    let path = Path::new(name);
    from_bytes(text, MeshFormat::from_path(path).expect("a known extension"), path)
}

#[test]
fn a_cube_reads_the_same_from_obj_stl_and_gltf() {
    let m = cube();
    let from_obj = decode(m.to_obj().as_bytes(), "c.obj").expect("OBJ");
    assert_eq!((from_obj.vertices.len(), from_obj.triangles.len()), (8, 12));
    // STL repeats every vertex per facet: welded back to 8.
    for (bytes, what) in [
        (binary_stl(&m, b""), "binary"),
        (binary_stl(&m, b"solid cube written by a CAD program"), "binary under a \"solid\" header"),
        (ascii_stl(&m).into_bytes(), "ascii"),
    ] {
        let s = decode(&bytes, "c.stl").unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!((s.vertices.len(), s.triangles.len()), (8, 12), "{what}");
        assert!((volume(&s) - 1.0).abs() < 1e-6, "{what}");
    }
    let g = decode(gltf_json(&m, [2.0, 0.0, 0.0]).as_bytes(), "c.gltf").expect("glTF");
    assert_eq!((g.vertices.len(), g.triangles.len()), (8, 12));
    assert_eq!(g.bounds(), (Vec3::new(2.0, 0.0, 0.0), Vec3::new(3.0, 1.0, 1.0)), "the node's translation applies");
    assert!((volume(&from_obj) - 1.0).abs() < 1e-6);
}

#[test]
fn a_mesh_wound_inward_is_turned_outward() {
    let mut m = cube();
    for t in &mut m.triangles {
        t.swap(0, 1);
    }
    assert!(volume(&m) < 0.0);
    let read = decode(m.to_obj().as_bytes(), "in.obj").expect("closed, only inside out");
    assert!((volume(&read) - 1.0).abs() < 1e-6, "volume {}", volume(&read));
}

#[test]
fn open_or_inconsistent_meshes_are_refused_naming_the_file() {
    let mut open = cube();
    open.triangles.pop();
    let e = decode(open.to_obj().as_bytes(), "dir/open.obj").unwrap_err();
    assert!(matches!(e, MeshError::NotWatertight { edges: 3, count: 1, .. }), "{e:?}");
    assert!(e.to_string().starts_with("mesh dir/open.obj: is not watertight: 3 edges"), "{e}");

    let mut fin = cube();
    fin.vertices.push(Vec3::new(2.0, 0.0, 0.0));
    fin.triangles.push([0, 1, 8]);
    let e = decode(fin.to_obj().as_bytes(), "fin.obj").unwrap_err();
    assert!(matches!(e, MeshError::NotWatertight { .. }), "{e:?}");

    let mut flipped = cube();
    flipped.triangles[0].swap(0, 1);
    flipped.triangles[1].swap(0, 1);
    let e = decode(flipped.to_obj().as_bytes(), "flip.obj").unwrap_err();
    assert!(matches!(e, MeshError::NotOriented { .. }), "{e:?}");
    assert!(e.to_string().contains("flip.obj"), "{e}");
}

#[test]
fn garbage_empty_and_flat_files_are_refused_naming_the_file() {
    for (bytes, name) in [
        (&b""[..], "empty.obj"),
        (b"# nothing here\nv 0 0 0\n", "novertex.obj"),
        (b"", "empty.stl"),
        (b"\x00\x01\x02 not a mesh at all", "garbage.stl"),
        (b"{\"asset\": 5}", "garbage.gltf"),
        (b"glTF\x02\x00\x00\x00\xff\xff\xff\xff", "garbage.glb"),
        (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 3 2\n", "flat.obj"),
        (b"v 0 0 0\nv 1 0 0\nv nan 1 0\nf 1 2 3\nf 1 3 2\n", "nan.obj"),
        (b"v 0 0 0\nf 1 2 3\n", "badindex.obj"),
    ] {
        let e = decode(bytes, name).expect_err(name).to_string();
        assert!(e.starts_with(&format!("mesh {name}: ")), "{e}");
    }
    let e = decode(&binary_stl(&cube(), b"")[..300], "cut.stl").unwrap_err().to_string();
    assert!(e.contains("declares 12 triangles, 684 bytes, but the file has 300"), "{e}");
    let e = load(Path::new("cube.ply")).unwrap_err().to_string();
    assert!(e.contains("must end in .obj, .stl, .gltf or .glb"), "{e}");
}

#[test]
fn too_many_triangles_are_refused_before_they_are_parsed() {
    let mut text = String::from("v 0 0 0\nv 1 0 0\nv 0 1 0\n");
    text += &"f 1 2 3\n".repeat(MAX_TRIANGLES + 1);
    let e = decode(text.as_bytes(), "big.obj").unwrap_err();
    assert!(matches!(e, MeshError::TooManyTriangles { count, .. } if count == MAX_TRIANGLES as u64 + 1), "{e:?}");
    // A binary STL header declaring 4 billion triangles in a file of 84 + 50 n bytes is refused by its
    // length; one whose length matches is refused by the count before a triangle is read. Only the
    // header is checked, so a short file stands in for the declared length.
    let mut header = binary_stl(&cube(), b"");
    header.truncate(84);
    header[80..84].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = decode(&header, "huge.stl").unwrap_err().to_string();
    assert!(e.contains("declares 4294967295 triangles"), "{e}");
}

#[test]
fn devices_and_fifos_are_refused_without_reading() {
    let e = load(Path::new("/dev/zero.stl")).unwrap_err();
    assert!(matches!(e, MeshError::File(_)), "{e:?}");
    let dir = std::env::temp_dir().join(format!("waterview-mesh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("zero.obj");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let e = load(&link).unwrap_err().to_string();
    assert!(e.ends_with("is a character device, not a regular file"), "{e}");
    let fifo = dir.join("pipe.stl");
    let _ = std::fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = load(&fifo).unwrap_err().to_string();
    assert!(e.ends_with("is a FIFO (named pipe), not a regular file"), "{e}");
    let file = dir.join("cube.obj");
    std::fs::write(&file, cube().to_obj()).unwrap();
    assert_eq!(load(&file).expect("a regular file").triangles.len(), 12);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Deterministic mutations of valid files of every format (bytes flipped, runs zeroed or set to 0xFF,
/// the file cut short, a run repeated) through the decoders: each returns a mesh or an error, never
/// panics. A cheap stand-in for the `mesh_bytes` fuzz target in every test run.
#[test]
fn mutated_files_never_panic_the_decoders() {
    let m = cube();
    let seeds: Vec<(Vec<u8>, &str)> = vec![
        (m.to_obj().into_bytes(), "m.obj"),
        (binary_stl(&m, b""), "m.stl"),
        (ascii_stl(&m).into_bytes(), "m.stl"),
        (gltf_json(&m, [0.0; 3]).into_bytes(), "m.gltf"),
        // The fuzz corpus's GLB cube (its first byte picks the format there).
        (include_bytes!("../../fuzz/corpus/mesh_bytes/ok_cube_glb")[1..].to_vec(), "m.glb"),
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut outcomes = [0usize; 2];
    for (seed, name) in &seeds {
        for _ in 0..3000 {
            let mut bytes = seed.clone();
            let at = (next() % bytes.len() as u64) as usize;
            let run = 1 + (next() % 16) as usize;
            match next() % 5 {
                0 => bytes[at] ^= 1 << (next() % 8),
                1 => bytes[at..(at + run).min(seed.len())].fill(0),
                2 => bytes[at..(at + run).min(seed.len())].fill(0xFF),
                3 => bytes.truncate(at),
                _ => {
                    let piece = bytes[at..(at + run).min(seed.len())].to_vec();
                    bytes.splice(at..at, piece);
                }
            }
            let result = std::panic::catch_unwind(|| decode(&bytes, name));
            match result {
                Ok(r) => outcomes[r.is_ok() as usize] += 1,
                Err(_) => panic!("{name}: a mutation panicked the decoder: {:?}", String::from_utf8_lossy(&bytes)),
            }
        }
    }
    println!("mutated meshes: {} refused, {} loaded", outcomes[0], outcomes[1]);
    assert!(outcomes[0] > 100, "mutations are refused ({outcomes:?})");
}

/// A glTF JSON whose POSITION accessor (float VEC3, `count` vertices, in bufferView 0 of `stride` bytes
/// when given) and indices (u16, one triangle) lie in one buffer of `uri` declaring room for them, with
/// `nodes` nodes that each instance mesh 0 (children of node 0).
fn gltf_instanced(count: u64, stride: Option<u32>, nodes: usize, uri: &str) -> String {
    let positions = count * u64::from(stride.unwrap_or(12).max(12));
    let stride = stride.map_or(String::new(), |s| format!(",\"byteStride\":{s}"));
    let children: Vec<String> = (1..=nodes).map(|k| k.to_string()).collect();
    let leaves = vec!["{\"mesh\":0}"; nodes].join(",");
    format!(
        r#"{{"asset":{{"version":"2.0"}},"scene":0,"scenes":[{{"nodes":[0]}}],
        "nodes":[{{"children":[{}]}},{leaves}],
        "meshes":[{{"primitives":[{{"attributes":{{"POSITION":0}},"indices":1}}]}}],
        "buffers":[{{"byteLength":{},"uri":"{uri}"}}],
        "bufferViews":[{{"buffer":0,"byteOffset":0,"byteLength":{positions}{stride}}},
                       {{"buffer":0,"byteOffset":{positions},"byteLength":6}}],
        "accessors":[{{"bufferView":0,"componentType":5126,"count":{count},"type":"VEC3","min":[0,0,0],"max":[1,1,1]}},
                     {{"bufferView":1,"componentType":5123,"count":3,"type":"SCALAR"}}]}}"#,
        children.join(","),
        positions + 6,
    )
}

/// A mesh of a million vertices instanced by many nodes is refused from its accessor's count times the
/// nodes, before its buffer is read (here a file that does not exist: reading it would fail otherwise;
/// 65 535 instances and their parent are the most node visits read).
/// Before, each node visit appended all the mesh's positions and only triangles were counted: 65 536
/// nodes grew the process past 8 GB.
#[test]
fn instanced_vertices_are_counted_before_any_buffer_is_read() {
    for (nodes, total) in [(4usize, 4_000_000u64), (65_535, 65_535_000_000)] {
        let text = gltf_instanced(1_000_000, None, nodes, "absent.bin");
        let e = decode(text.as_bytes(), "dir/bomb.gltf").expect_err("refused");
        assert!(matches!(e, MeshError::TooManyVertices { count, .. } if count == total), "{nodes} nodes: {e:?}");
        assert!(e.to_string().starts_with(&format!("mesh dir/bomb.gltf: has {total} vertices or more")), "{e}");
    }
    // One instance of a million vertices is within the limit: the buffer is then read (and is missing).
    let e = decode(gltf_instanced(1_000_000, None, 1, "absent.bin").as_bytes(), "one.gltf").expect_err("no buffer");
    assert!(matches!(e, MeshError::File(_)), "{e:?}");
}

/// A POSITION buffer view whose byte stride is shorter than a VEC3 of floats (4 or 8 bytes) is refused
/// naming the file, the accessor and the stride; gltf 1.4.1's reader asserted on it (exit 101 in `run`,
/// "the scene builder stopped without a result" in the window).
#[test]
fn a_position_stride_shorter_than_a_vertex_is_refused_not_a_panic() {
    let b64 = base64::engine::general_purpose::STANDARD;
    for stride in [4u32, 8] {
        let data = b64.encode(vec![0u8; 3 * 12 + 6]);
        let text = gltf_instanced(3, Some(stride), 1, &format!("data:application/octet-stream;base64,{data}"));
        let e = decode(text.as_bytes(), "strided.gltf").expect_err("refused").to_string();
        assert!(
            e.starts_with(
                "mesh strided.gltf: not a valid glTF file: mesh 0 primitive 0: POSITION (accessor 0) lies in \
                           bufferView 0 of byteStride "
            ) && e.contains(&format!("byteStride {stride}, shorter than its 12-byte elements")),
            "{e}"
        );
    }
}

/// A decoder that panics all the same (a dependency's assertion nobody has found yet) is an error naming
/// the file; `from_bytes` catches it ([`crate::files::guarded`]).
#[test]
fn a_panic_in_a_decoder_names_the_file() {
    let e = files::guarded(|| -> Result<TriangleMesh, MeshError> { panic!("assertion failed: slice.len() >= 12") })
        .map_or_else(|m| MeshError::Parse { path: "x.glb".into(), format: "glTF", message: m }, |_| unreachable!());
    assert_eq!(
        e.to_string(),
        "mesh x.glb: not a valid glTF file: its decoder failed (assertion failed: slice.len() >= 12)"
    );
}

/// A build that is cancelled stops a mesh's decoding with [`MeshError::Cancelled`].
#[test]
fn a_cancelled_build_stops_decoding() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let obj = cube().to_obj();
    let e = crate::cancel::scope(Arc::new(AtomicBool::new(true)), || decode(obj.as_bytes(), "c.obj")).unwrap_err();
    assert!(matches!(e, MeshError::Cancelled { .. }), "{e:?}");
    decode(obj.as_bytes(), "c.obj").expect("outside the scope it loads");
}

/// An OBJ of more `v` lines than the vertex limit is refused before `tobj` lays them out.
#[test]
fn too_many_obj_vertices_are_refused_before_they_are_parsed() {
    let text = "v 0 0 0\n".repeat(MAX_VERTICES + 1) + "f 1 2 3\n";
    let e = decode(text.as_bytes(), "points.obj").unwrap_err();
    assert!(matches!(e, MeshError::TooManyVertices { count, .. } if count == MAX_VERTICES as u64 + 1), "{e:?}");
}
