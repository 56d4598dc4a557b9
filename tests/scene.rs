//! Scene files: the built-in scenes parse, validate and build into the particle counts they promise,
//! the valley's terrain has real relief, and bad files fail with a message naming the problem.
//! No GPU needed.

use std::path::{Path, PathBuf};
use waterview::scene::{load_heightfield, Scene, SceneError, TankStyle, BUILTIN_SCENES, MAX_PARTICLES};

/// A fresh, empty directory under the system temp dir, unique to this process and `tag`.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waterview_scene_test_{}_{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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

/// Parses `text` as if read from `path`, expecting an error; returns its message.
fn parse_err(text: &str, path: &Path) -> String {
    match Scene::from_str(text, path) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// Builds `text` (a scene in `dir`), expecting the build to fail; returns the error.
fn build_err(text: &str, dir: &Path) -> SceneError {
    let scene = Scene::from_str(text, &dir.join("scene.ron")).expect("scene parses");
    match scene.build(false) {
        Ok(s) => panic!("expected a build error, got {} particles", s.len()),
        Err(e) => e,
    }
}

#[test]
fn builtin_scenes_build_with_the_promised_counts() {
    // (name, target on a GPU, target on a CPU adapter); the tank's GPU count only needs dx in 0.02..=0.04.
    let targets = [
        ("valley", Some(250_000.0), 5_500.0),
        ("valley_river", Some(250_000.0), 5_500.0),
        ("valley_town", Some(250_000.0), 5_500.0),
        ("dam_break", Some(100_000.0), 5_000.0),
        ("dam_break_box", Some(82_000.0), 5_280.0),
        ("dam_break_crates", Some(90_000.0), 5_760.0),
        ("tank", None, 12_500.0),
        ("wave_tank", Some(118_000.0), 7_552.0),
    ];
    assert_eq!(BUILTIN_SCENES.len(), targets.len());
    for (name, gpu_target, cpu_target) in targets {
        assert!(BUILTIN_SCENES.contains(&name));
        let scene = Scene::builtin(name).unwrap_or_else(|| panic!("built-in scene {name} parses"));
        scene.validate().expect("built-in scene validates");
        for on_cpu in [false, true] {
            let setup = scene.build(on_cpu).unwrap_or_else(|e| panic!("{name} builds: {e}"));
            let n = setup.len() as usize;
            let estimate = scene.estimate_particle_count(on_cpu);
            println!(
                "{name:>9} on {}: dx = {:.4} m, {n} particles (estimate {estimate})",
                if on_cpu { "CPU" } else { "GPU" },
                scene.effective_dx(on_cpu)
            );
            let (positions, velocities) = setup.to_vecs();
            assert_eq!((positions.len(), velocities.len()), (n, n));
            assert!(estimate >= n as u64, "the estimate is an upper bound");
            let target = if on_cpu { Some(cpu_target) } else { gpu_target };
            if let Some(t) = target {
                assert!((t / 2.0..=t * 2.0).contains(&(n as f64)), "{name}: {n} particles, target {t}");
            }
        }
        if name == "tank" {
            assert!((0.02..=0.04).contains(&scene.effective_dx(false)));
        }
    }
    assert!(Scene::builtin("no_such_scene").is_none());
}

#[test]
fn builtin_scenes_match_the_files_on_disk() {
    for name in BUILTIN_SCENES {
        let path = manifest_dir().join("assets/scenes").join(format!("{name}.ron"));
        let mut from_disk = Scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(from_disk.base_dir, manifest_dir().join("assets/scenes"));
        assert_eq!(from_disk.file, path, "the scene knows its file (errors found later name it)");
        let builtin = Scene::builtin(name).expect("built-in");
        from_disk.base_dir = builtin.base_dir.clone();
        from_disk.file = builtin.file.clone();
        assert_eq!(from_disk, builtin);
    }
}

#[test]
fn valley_terrain_has_relief_and_particles_sit_above_it() {
    let scene = Scene::builtin("valley").expect("valley");
    let d = scene.domain;
    for on_cpu in [false, true] {
        let setup = scene.build(on_cpu).expect("valley builds");
        let (lo, hi) = setup.terrain.range();
        println!("valley terrain: {lo:.2} .. {hi:.2} m, {}x{} samples", setup.terrain.nx, setup.terrain.nz);
        assert!(hi - lo > 3.0, "relief {} m", hi - lo);
        assert!(hi < d.max[1], "the terrain fits under the domain's top");
        let dx = scene.effective_dx(on_cpu);
        let (positions, _) = setup.to_vecs();
        for p in &positions {
            let ground = setup.terrain.height_at(p.x, p.z);
            assert!(p.y >= ground + 0.49 * dx, "particle {p} is within dx/2 of the terrain at {ground}");
            for a in 0..3 {
                assert!(p[a] >= d.min[a] + 0.49 * dx && p[a] <= d.max[a] - 0.49 * dx, "particle {p} outside");
            }
        }
        // Some water stands well above the valley floor (a real column, not a film).
        let top = positions.iter().map(|p| p.y).fold(f32::MIN, f32::max);
        assert!(top - lo > 4.0, "water column top {top}");
    }
}

#[test]
fn embedded_heightmap_is_used_when_the_file_is_missing() {
    let scene = Scene::builtin("valley").expect("valley");
    let desc = scene.terrain.clone().expect("valley has terrain");
    let on_disk = load_heightfield(&desc, &manifest_dir().join("assets/scenes"), &scene.domain).expect("from disk");
    let dir = temp_dir("embedded");
    let embedded = load_heightfield(&desc, &dir.join("scenes"), &scene.domain).expect("embedded fallback");
    assert_eq!(on_disk, embedded);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_scene_file_names_the_path() {
    let dir = temp_dir("missing");
    let path = dir.join("does_not_exist.ron");
    let e = Scene::load(&path).expect_err("missing file");
    assert!(matches!(&e, SceneError::File(r) if r.is_not_found()), "{e:?}");
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    // Printed with its chain (as the command line does), the cause appears once.
    let chain = format!("{:#}", anyhow::Error::from(e));
    assert_eq!(chain.matches("os error").count(), 1, "{chain}");
    let e = Scene::load(&dir).expect_err("a folder is not a scene file");
    let chain = format!("{:#}", anyhow::Error::from(e));
    assert_eq!(chain.matches("is a directory").count(), 1, "{chain}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_ron_gives_the_line() {
    let text = "(\n    name: \"broken\",\n    domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)),\n    fluid_blocks: [(min: (0.0, 0.0 0.0))],\n)";
    let msg = parse_err(text, Path::new("broken.ron"));
    println!("{msg}");
    assert!(msg.contains("broken.ron") && msg.contains("line:column 4:"), "{msg}");
}

#[test]
fn unknown_and_missing_fields_are_named() {
    let msg = parse_err(&minimal("colour: 3.0,"), Path::new("x.ron"));
    assert!(msg.contains("colour"), "{msg}");
    let msg = parse_err(&minimal("solver: (dx: 0.1, visc: 0.1),"), Path::new("x.ron"));
    assert!(msg.contains("visc"), "{msg}");
    let msg = parse_err(
        "(name: \"no camera\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 1.0, 1.0)), fluid_blocks: [])",
        Path::new("x.ron"),
    );
    assert!(msg.contains("camera"), "{msg}");
}

#[test]
fn invalid_values_are_named() {
    let p = Path::new("bad.ron");
    let msg = parse_err(
        &minimal("")
            .replace("max: (0.5, 0.5, 0.5)", "max: (0.5, 0.5, 0.5)), (min: (0.5, 0.5, 0.5), max: (1.5, 0.9, 0.9)"),
        p,
    );
    assert!(msg.contains("fluid block 2") && msg.contains("domain"), "{msg}");
    assert!(msg.contains("bad.ron"), "{msg}");
    let msg = parse_err(&minimal("").replace("max: (1.0, 1.0, 1.0)", "max: (1.0, -1.0, 1.0)"), p);
    assert!(msg.contains("domain") && msg.contains("along y"), "{msg}");
    let msg = parse_err(&minimal("").replace("max: (0.5, 0.5, 0.5)", "max: (0.5, 0.5, 0.0)"), p);
    assert!(msg.contains("fluid block 1") && msg.contains("along z"), "{msg}");
    for dx in ["0.0", "-0.1"] {
        let msg = parse_err(&minimal(&format!("solver: (dx: {dx}),")), p);
        assert!(msg.contains("`dx`"), "{msg}");
    }
    let msg = parse_err(&minimal("cpu_dx_scale: 0.5,"), p);
    assert!(msg.contains("cpu_dx_scale"), "{msg}");
    let msg = parse_err(&minimal("").replace("pitch_deg: 30.0", "pitch_deg: 30.0, fov_y_deg: 180.0"), p);
    assert!(msg.contains("fov_y_deg"), "{msg}");
    let msg = parse_err(&minimal("").replace("distance: 3.0", "distance: 0.0"), p);
    assert!(msg.contains("distance"), "{msg}");
    let msg = parse_err(&minimal("terrain: Some((heightmap: \"h.png\", extent: (1.0, 0.0))),"), p);
    assert!(msg.contains("extent"), "{msg}");
    let msg = parse_err(&minimal("terrain: Some((heightmap: \"h.png\", extent: (1.0, 1.0), vertical_scale: 0.0)),"), p);
    assert!(msg.contains("vertical_scale"), "{msg}");
    let msg = parse_err(
        &minimal("").replace("fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.5, 0.5))]", "fluid_blocks: []"),
        p,
    );
    assert!(msg.contains("fluid_blocks"), "{msg}");
}

#[test]
fn heightmap_problems_are_named() {
    let dir = temp_dir("heightmap");
    let terrain = |map: &str, crop: &str| {
        minimal(&format!("terrain: Some((heightmap: {map:?}, crop: {crop}, extent: (1.0, 1.0))),"))
    };

    let e = build_err(&terrain("missing_map.png", "None"), &dir);
    assert!(matches!(&e, SceneError::File(r) if r.is_not_found()), "{e:?}");
    assert!(e.to_string().contains(&dir.join("missing_map.png").display().to_string()), "{e}");

    std::fs::write(dir.join("not_an_image.png"), "this is text, not a PNG\n").expect("write");
    let e = build_err(&terrain("not_an_image.png", "None"), &dir);
    println!("{e}");
    assert!(matches!(e, SceneError::Heightmap { .. }) && e.to_string().contains("decode"), "{e}");

    let real = manifest_dir().join("assets/terrain/jacksboro_dem.png").display().to_string();
    let e = build_err(&terrain(&real, "Some((350, 0, 100, 100))"), &dir);
    println!("{e}");
    assert!(e.to_string().contains("outside") && e.to_string().contains("403x344"), "{e}");

    let msg = parse_err(&terrain(&real, "Some((0, 0, 1, 100))"), &dir.join("scene.ron"));
    assert!(msg.contains("crop"), "{msg}");

    image::RgbImage::new(4, 4).save(dir.join("rgb.png")).expect("write rgb png");
    let e = build_err(&terrain("rgb.png", "None"), &dir);
    assert!(e.to_string().contains("grayscale"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn heightmap_without_units_spans_a_quarter_of_the_extent() {
    let dir = temp_dir("no_units");
    let mut img = image::ImageBuffer::<image::Luma<u16>, Vec<u16>>::new(4, 3);
    img.put_pixel(3, 2, image::Luma([65535]));
    img.save(dir.join("ramp16.png")).expect("write 16-bit png");
    let mut img8 = image::GrayImage::new(4, 3);
    img8.put_pixel(3, 2, image::Luma([255]));
    img8.save(dir.join("ramp8.png")).expect("write 8-bit png");
    for map in ["ramp16.png", "ramp8.png"] {
        let text = minimal(&format!(
            "terrain: Some((heightmap: {map:?}, extent: (8.0, 6.0), vertical_scale: 0.5, base: 0.1)),"
        ))
        .replace("max: (1.0, 1.0, 1.0)", "max: (8.0, 2.0, 6.0)");
        let scene = Scene::from_str(&text, &dir.join("scene.ron")).expect("parses");
        let setup = scene.build(false).expect("builds");
        let t = &setup.terrain;
        assert_eq!((t.nx, t.nz), (4, 3));
        let (lo, hi) = t.range();
        // 0.25 * extent x (8 m) * vertical_scale (0.5) = 1 m of relief above base.
        assert!((lo - 0.1).abs() < 1e-6 && (hi - 1.1).abs() < 1e-5, "{map}: {lo} .. {hi}");
        // Pixel (3, 2) is the last column (x = max) and the last row (z = max, south).
        assert!((t.height_at(8.0, 6.0) - 1.1).abs() < 1e-5 && (t.height_at(0.0, 0.0) - 0.1).abs() < 1e-6);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Found writing the fuzz targets (seeds `fuzz/corpus/heightmap_bytes/bad_units_*.bin`,
/// `scene_text/bad_terrain_overflow.ron`): units at the ends of the f32 range, or a huge vertical_scale and
/// base, gave infinite or NaN terrain heights (and then "builds no particles"); they are refused naming the
/// file that causes it.
#[test]
fn heights_past_the_f32_range_are_refused() {
    let dir = temp_dir("overflow");
    let mut img = image::ImageBuffer::<image::Luma<u16>, Vec<u16>>::new(4, 3);
    img.put_pixel(3, 2, image::Luma([65535]));
    img.save(dir.join("ramp.png")).expect("write 16-bit png");
    let scene =
        |scales: &str| minimal(&format!("terrain: Some((heightmap: \"ramp.png\", extent: (1.0, 1.0){scales})),"));
    let units = |min: &str, max: &str, cell: &str| {
        let json = format!(
            r#"{{"min_elevation_m": {min}, "max_elevation_m": {max}, "cell_size_x_m": {cell}, "cell_size_y_m": 1}}"#
        );
        std::fs::write(dir.join("ramp.json"), json).expect("write units");
    };
    let json_path = dir.join("ramp.json").display().to_string();
    for (min, max, cell) in [("-3e38", "3e38", "1"), ("0", "1", "1e-44")] {
        units(min, max, cell);
        let e = build_err(&scene(""), &dir);
        let msg = e.to_string();
        println!("{msg}");
        assert!(matches!(e, SceneError::Heightmap { .. }), "{e:?}");
        assert!(msg.contains(&json_path) && msg.contains("must give a finite height"), "{msg}");
    }
    units("0", "1000", "0.25");
    let e = build_err(&scene(", vertical_scale: 3e38, base: 3.3e38"), &dir);
    let msg = e.to_string();
    println!("{msg}");
    assert!(
        msg.contains("ramp.png")
            && msg.contains("reach inf m")
            && msg.contains("vertical_scale 300000000000000000000000000000000000000"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn empty_and_oversized_builds_fail_cleanly() {
    let dir = temp_dir("empty");
    // A block thinner than dx holds no lattice point.
    let e = build_err(&minimal("").replace("max: (0.5, 0.5, 0.5)", "max: (0.5, 0.05, 0.5)"), &dir);
    assert!(e.to_string().contains("\"test\"") && e.to_string().contains("no particles"), "{e}");
    let e = build_err(&minimal("solver: (dx: 0.0002),"), &dir);
    assert!(e.to_string().contains(&MAX_PARTICLES.to_string()), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn save_then_load_round_trips() {
    let dir = temp_dir("round_trip");
    for name in BUILTIN_SCENES {
        let scene = Scene::builtin(name).expect("built-in");
        let path = dir.join(format!("{name}.ron"));
        scene.save(&path).expect("save");
        let mut loaded = Scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.base_dir, dir);
        assert_eq!(loaded.file, path);
        loaded.base_dir = scene.base_dir.clone();
        loaded.file = scene.file.clone();
        assert_eq!(loaded, scene);
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("read dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `tank` field: a glass tank by default without terrain, none with terrain, either when asked; an
/// unknown style is refused by name; a chosen style survives saving and the default is not written.
#[test]
fn tank_field_defaults_by_terrain_and_round_trips() {
    let p = Path::new("tank.ron");
    let scene = |extra: &str| Scene::from_str(&minimal(extra), p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scene("").tank, TankStyle::Auto);
    assert!(scene("").draws_tank(), "a box scene without terrain draws its tank");
    assert!(!scene("tank: None,").draws_tank());
    assert!(scene("tank: Glass,").draws_tank());
    for name in ["dam_break", "dam_break_box", "tank", "wave_tank"] {
        assert!(Scene::builtin(name).expect("built-in").draws_tank(), "{name} draws its tank");
    }
    for name in ["valley", "valley_river", "valley_town"] {
        assert!(!Scene::builtin(name).expect("built-in").draws_tank(), "{name} (terrain) draws none");
    }
    let mut valley = Scene::builtin("valley").expect("built-in");
    valley.tank = TankStyle::Glass;
    assert!(valley.draws_tank(), "a terrain scene that asks for a tank gets one");
    let msg = parse_err(&minimal("tank: Plastic,"), p);
    assert!(msg.contains("tank.ron") && msg.contains("Plastic"), "{msg}");

    let dir = temp_dir("tank");
    let path = dir.join("glass.ron");
    scene("tank: None,").save(&path).expect("save");
    assert_eq!(Scene::load(&path).expect("load").tank, TankStyle::None);
    scene("").save(&path).expect("save");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(!text.contains("tank"), "the default is not written:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dropped_files_are_classified_by_kind() {
    use waterview::scene::{classify_dropped_file, DroppedFile};
    let dir = temp_dir("dropped");
    let scene = dir.join("a.ron");
    std::fs::write(&scene, "()").unwrap();
    let height = dir.join("h.png");
    image::ImageBuffer::<image::Luma<u16>, Vec<u16>>::from_pixel(4, 4, image::Luma([1000])).save(&height).unwrap();
    let sky = dir.join("s.png");
    image::RgbImage::from_pixel(8, 4, image::Rgb([100, 150, 250])).save(&sky).unwrap();
    let text = dir.join("notes.txt");
    std::fs::write(&text, "x").unwrap();
    assert_eq!(classify_dropped_file(&scene).ok(), Some(DroppedFile::Scene));
    assert_eq!(classify_dropped_file(&height).ok(), Some(DroppedFile::Heightmap));
    assert_eq!(classify_dropped_file(&sky).ok(), Some(DroppedFile::Sky));
    assert_eq!(classify_dropped_file(&dir).ok(), Some(DroppedFile::Sky), "a folder of cube faces");
    let e = classify_dropped_file(&text).unwrap_err().to_string();
    assert!(e.contains("notes.txt") && e.contains(".ron") && e.contains("heightmap"), "{e}");
    let e = classify_dropped_file(&dir.join("missing.ron")).unwrap_err().to_string();
    assert!(e.contains("no such file"), "{e}");
    let broken = dir.join("broken.png");
    std::fs::write(&broken, b"not a png").unwrap();
    assert!(classify_dropped_file(&broken).unwrap_err().to_string().contains("PNG"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where the window's "Add mesh…" places a new obstacle: its origin on the ground at the domain's centre,
/// unturned, at scale 1, with the mesh's path made absolute; the scene builds with it (a house on the
/// valley's ground at its centre, the MARIN box on the dam break's flat floor). A mesh too large for the
/// domain is refused with the reason, which the window shows while the current scene keeps running.
#[test]
fn an_added_obstacle_stands_on_the_ground_at_the_centre() {
    let meshes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/meshes");
    for (name, mesh, x, z) in [("valley", "house.obj", 30.0, 30.0), ("dam_break", "marin_box.obj", 1.61, 0.5)] {
        let mut scene = Scene::builtin(name).expect("built in");
        let terrain = scene.build(true).expect("builds").terrain;
        let o = waterview::scene::ObstacleDesc::on_the_ground(&meshes.join(mesh), &scene, &terrain);
        assert_eq!(o.position, [x, terrain.height_at(x, z), z], "{name}");
        assert!((o.rotation_deg, o.scale) == ([0.0; 3], 1.0), "{name}: {o:?}");
        assert!(std::path::Path::new(&o.mesh).is_absolute(), "{name}: {}", o.mesh);
        scene.obstacles.push(o);
        let setup = scene.build(true).unwrap_or_else(|e| panic!("{name} with {mesh}: {e}"));
        assert_eq!(setup.obstacles.len(), 1, "{name}");
    }
    let mut dam = Scene::builtin("dam_break").expect("built in");
    let terrain = dam.build(true).expect("builds").terrain;
    dam.obstacles.push(waterview::scene::ObstacleDesc::on_the_ground(&meshes.join("house.obj"), &dam, &terrain));
    let e = dam.build(true).map(|s| s.len()).expect_err("a house larger than the tank").to_string();
    assert!(e.contains("is 4.2 m along y once placed (`scale` 1), larger than the domain"), "{e}");
}
