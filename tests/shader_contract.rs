//! The Rust/WGSL contract, checked with naga and no GPU (`CODE_STYLE.md`, "GPU data"):
//! - every embedded shader with an entry point, and every (file, defines) of `shader::VARIANTS`, parses and
//!   validates;
//! - every Rust "WGSL twin" struct has the size of its WGSL struct and each of its named fields the offset
//!   of the WGSL member of the same name (naga's layout), and every such struct in `src/` is listed here;
//! - the enum codes, constants and workgroup sizes that Rust and WGSL both spell out agree.
//!
//! Pipeline-override constants (`override WG`, `MAX_GROUPS_X`, `FLOOR_FACTOR`, ...) are set from Rust when
//! the pipeline is created and need no check.

use naga::{
    proc::Layouter,
    valid::{Capabilities, ValidationFlags, Validator},
    Expression, Literal, Module, TypeInner,
};
use std::collections::{BTreeSet, HashMap};
use std::mem::{offset_of, size_of};
use waterview::gpu::shader;
use waterview::render::{self, ColorMode, FluidView};
use waterview::sim::{self, Method};

// ---------------------------------------------------------------------------------------------------
// Modules

/// Whether a file's own text (imports not resolved) declares an entry point.
fn has_entry_point(path: &str) -> bool {
    let src = shader::raw_source(path).unwrap_or_else(|| panic!("{path} is not embedded"));
    src.lines()
        .map(str::trim_start)
        .filter(|l| !l.starts_with("//"))
        .any(|l| ["@compute", "@vertex", "@fragment"].iter().any(|stage| l.contains(stage)))
}

/// The files a file imports, directly or through other imports (not itself); a split array
/// (`#split_array`) imports `common/split.wgsl`.
fn imports(path: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![path.to_string()];
    while let Some(p) = todo.pop() {
        let src = shader::raw_source(&p).unwrap_or_else(|| panic!("{p} is not embedded"));
        for line in src.lines() {
            let line = line.trim_start();
            let dep = match line.strip_prefix("#import") {
                Some(rest) => Some(rest.trim().trim_matches('"').to_string()),
                None => line.starts_with("#split_array").then(|| "common/split.wgsl".to_string()),
            };
            if let Some(dep) = dep {
                if seen.insert(dep.clone()) {
                    todo.push(dep);
                }
            }
        }
    }
    seen
}

/// `path` resolved with `defines`, parsed and validated; the error names the file, the defines and naga's
/// message.
fn validated(path: &str, defines: &[&str]) -> Result<Module, String> {
    validated_source(path, defines, shader::resolve_with(path, defines))
}

/// [`validated`] of the resolved text `src` of `path`.
fn validated_source(path: &str, defines: &[&str], src: String) -> Result<Module, String> {
    // Line numbers in naga's messages count in the resolved text (imports inlined).
    let path = &format!("{path}, resolved");
    let module = naga::front::wgsl::parse_str(&src)
        .map_err(|e| format!("{path} {defines:?}: parse error\n{}", e.emit_to_string_with_path(&src, path)))?;
    Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .map_err(|e| format!("{path} {defines:?}: validation error\n{}", e.emit_to_string_with_path(&src, path)))?;
    Ok(module)
}

/// Parsed modules by file (no defines), so each file is parsed once per test.
#[derive(Default)]
struct Modules(HashMap<String, Module>);

impl Modules {
    /// The module of `path` (no defines); panics with naga's message if it does not validate.
    fn get(&mut self, path: &str) -> &Module {
        self.0.entry(path.to_string()).or_insert_with(|| validated(path, &[]).unwrap_or_else(|e| panic!("{e}")))
    }

    /// A module that declares `path`'s items: `path` itself where it has an entry point, else the first
    /// file with one that imports it (include-only files do not compile alone).
    fn declaring(&mut self, path: &str) -> (String, &Module) {
        let file = if has_entry_point(path) {
            path.to_string()
        } else {
            shader::files()
                .find(|f| has_entry_point(f) && imports(f).contains(path))
                .unwrap_or_else(|| panic!("no shader with an entry point imports {path}"))
                .to_string()
        };
        let module = self.get(&file);
        (file, module)
    }
}

// ---------------------------------------------------------------------------------------------------
// 1. Every shader validates

#[test]
fn every_shader_and_variant_validates() {
    let mut checked: Vec<(String, Vec<&str>)> = Vec::new();
    let mut failures = Vec::new();
    let entry_files: Vec<&str> = shader::files().filter(|f| has_entry_point(f)).collect();
    let variants = shader::VARIANTS.iter().map(|(p, d)| (*p, d.to_vec()));
    for (path, defines) in entry_files.iter().map(|f| (*f, Vec::new())).chain(variants) {
        if let Err(e) = validated(path, &defines) {
            failures.push(e);
        }
        checked.push((path.to_string(), defines));
    }
    assert!(
        failures.is_empty(),
        "{} of {} shader modules fail:\n\n{}",
        failures.len(),
        checked.len(),
        failures.join("\n\n")
    );

    // It checked something, and the files that matter.
    assert!(!checked.is_empty(), "no shader was checked");
    for must in ["sim/dfsph.wgsl", "render/composite.wgsl", "render/splat.wgsl", "gpu/scan.wgsl", "app/blit.wgsl"] {
        assert!(checked.iter().any(|(p, d)| p == must && d.is_empty()), "{must} was not checked: {checked:?}");
    }
    assert!(
        checked.iter().any(|(p, d)| p == "sim/dfsph.wgsl" && d == &["SUBGROUPS"]),
        "the SUBGROUPS variant was not checked"
    );
    // Split arrays (src/gpu/split.rs) at every chunk count a simulation or pass resolves them with.
    let split: Vec<&str> = entry_files.iter().copied().filter(|f| imports(f).contains("common/split.wgsl")).collect();
    for must in [
        "sim/dfsph.wgsl",
        "sim/grid.wgsl",
        "render/particles.wgsl",
        "render/wetness.wgsl",
        "render/anisotropy.wgsl",
        "render/splat.wgsl",
    ] {
        assert!(split.contains(&must), "{must} has no split arrays: {split:?}");
    }
    for path in split {
        for chunks in 1..=waterview::gpu::split::MAX_CHUNKS {
            let src = shader::resolve_split(path, &[], chunks);
            assert!(src.contains(&format!("_{}: array<", chunks - 1)), "{path} in {chunks} chunks");
            if let Err(e) = validated_source(path, &[], src) {
                panic!("{path} in {chunks} chunks:\n{e}");
            }
        }
    }
    // Include-only files are checked through the files that import them: none may be left out.
    for f in shader::files().filter(|f| !has_entry_point(f)) {
        assert!(
            entry_files.iter().any(|e| imports(e).contains(f)),
            "{f} has no entry point and nothing imports it: unchecked"
        );
    }
}

// ---------------------------------------------------------------------------------------------------
// 2. Struct layouts

/// One Rust struct and its WGSL twin: the Rust size and every Rust field's (name, offset).
struct Twin {
    rust: &'static str,
    /// The file that declares the WGSL struct, relative to `shaders/`.
    file: &'static str,
    wgsl: &'static str,
    size: usize,
    fields: Vec<(&'static str, usize)>,
}

/// `RustType => "file.wgsl" :: WgslStruct { every Rust field, padding included }`. The fields are
/// destructured without `..`, so a Rust field missing from the list does not compile.
macro_rules! twins {
    ($($rust:path => $file:literal :: $wgsl:ident { $($field:ident),* $(,)? }),* $(,)?) => {
        vec![$({
            #[allow(unused)]
            fn exhaustive(v: &$rust) {
                let $rust { $($field: _),* } = v;
            }
            Twin {
                rust: stringify!($rust),
                file: $file,
                wgsl: stringify!($wgsl),
                size: size_of::<$rust>(),
                fields: vec![$((stringify!($field), offset_of!($rust, $field))),*],
            }
        }),*]
    };
}

fn twins() -> Vec<Twin> {
    use render::anisotropy::{AnisotropyUniform, Ellipsoid};
    use render::composite::CompositeUniform;
    use render::curvature_flow::FlowUniform;
    use render::fluid_tiles::TilesUniform;
    use render::foam::FoamUniform;
    use render::frame::CameraUniform;
    use render::ghosts::GhostUniform;
    use render::heightfield::TerrainUniform;
    use render::narrow_range::NarrowRangeUniform;
    use render::obstacle_shadow::ObstacleShadowUniform;
    use render::obstacles::{ObstacleCorner, ObstacleStyle};
    use render::particles::ParticleUniform;
    use render::sky::SkyGenUniform;
    use render::splat::SplatUniform;
    use render::tank::TankUniform;
    use render::terrain_ao::{AoLevel, AoUniform};
    use render::water_shadow::{WaterLightUniform, WaterShadowUniform};
    use render::wave_maker::PaddleUniform;
    use render::wetness::WetnessUniform;
    use sim::bodies::StatsAndBodies;
    use sim::border::BorderUniform;
    use sim::dfsph::{IterationArgs, SolveState, UpdateRegion};
    use sim::diffuse::{DiffuseParticle, DiffuseState};
    use sim::diffuse_params::DiffuseUniform;
    use sim::gpu_data::{SimUniforms, StepState};
    use sim::obstacles::{ObstacleGpu, ObstacleList};
    use sim::sources::{EmitState, EmitterGpu, SinkGpu, SourcesGpu};
    twins![
        SimUniforms => "sim/common.wgsl" :: Params {
            domain_min, h, domain_max, mass, grid_origin, cell_size, grid_dims, num_particles, gravity, rho0,
            terrain_origin, terrain_spacing, terrain_dims, table_n, num_cells, viscosity, xsph, cfl, max_dt,
            delta_unit, friction, r_collide, warm_start, boundary_factor, grad_correction, method, sound_speed,
            tait_b, err_scale, target_density, target_divergence, density_max_iter, divergence_max_iter,
            frame_end, surface_tension, wave_axis, wave_rest, wave_amplitude, wave_omega,
        },
        StepState => "sim/common.wgsl" :: StepState {
            dt, time, max_speed_bits, steps, err_sum, density_iterations, divergence_iterations, fluid_top_bits,
        },
        EmitterGpu => "sim/common.wgsl" :: EmitterGpu { center, radius, velocity, rate, axis_u, layer_points, axis_v, _pad },
        EmitState => "sim/common.wgsl" :: EmitState { carry, base, count, emitted },
        SinkGpu => "sim/common.wgsl" :: SinkGpu { min, _pad0, max, _pad1 },
        SourcesGpu => "sim/common.wgsl" :: Sources {
            num_emitters, num_sinks, first_id, slab_axis, slab_lo, slab_hi, _pad, emitters, state, sinks,
        },
        ObstacleCorner => "render/obstacles.wgsl" :: ObstacleCorner { position, normal },
        ObstacleStyle => "render/obstacles.wgsl" :: ObstacleStyle { albedo, fog_density, terrain_shadow, _pad0, _pad1, _pad2 },
        ObstacleGpu => "sim/common.wgsl" :: ObstacleGpu {
            axis_x, axis_y, axis_z, position, grid_min, spacing, dims, offset, velocity, angular, centre,
        },
        ObstacleList => "sim/common.wgsl" :: ObstacleList { count, first_body, _pad1, _pad2, list },
        SolveState => "sim/dfsph.wgsl" :: SolveState { iteration, _pad },
        StatsAndBodies => "sim/body_sums.wgsl" :: StatsAndBodies { stats, bodies },
        UpdateRegion => "sim/dfsph.wgsl" :: UpdateRegion { axis, lo, hi, part },
        BorderUniform => "sim/border.wgsl" :: Border {
            axis, live, ids_from, list_capacity, lo, hi, halo_lo, halo_hi, park,
        },
        IterationArgs => "sim/dfsph.wgsl" :: IterationArgs { src, upd },
        DiffuseUniform => "sim/diffuse.wgsl" :: Diffuse {
            capacity, budget, spray_below, bubble_above, trapped_air_rate, wave_crest_rate, trapped_air, wave_crest,
            kinetic_energy, lifetime, spray_drag, bubble_buoyancy, bubble_drag, weight_sum, spawn_radius, _pad,
        },
        DiffuseState => "sim/diffuse.wgsl" :: DiffuseState {
            count, spray, foam, bubbles, kept, spawned, room, frame, last_time, dt, scale, demand, draw,
        },
        DiffuseParticle => "common/diffuse.wgsl" :: DiffuseParticle { pos, vel },
        ObstacleShadowUniform => "common/obstacle_shadow.wgsl" :: ObstacleShadow {
            light_from_world, texel, enabled, depth_bias, _pad
        },
        ObstacleShadowUniform => "render/obstacle_shadow.wgsl" :: ObstacleShadow {
            light_from_world, texel, enabled, depth_bias, _pad
        },
        FoamUniform => "render/foam.wgsl" :: Foam {
            radius, absorption, opacity, allowance, depth_scale, shutter, bubbles, lace, clock_index, _pad,
        },
        CameraUniform => "common/camera.wgsl" :: Camera {
            clip_from_world, view_from_world, clip_from_view, world_from_clip, eye, time, sun_dir, sun_intensity,
            viewport, near, far,
        },
        AnisotropyUniform => "render/anisotropy.wgsl" :: Params {
            count, table_size, radius, splat_radius, kr, scale, n_eps, lambda, enabled, k_n, _pad,
        },
        Ellipsoid => "render/ellipsoid.wgsl" :: Ellipsoid { centre, g_packed },
        SplatUniform => "render/splat.wgsl" :: Splat { size, depth_scale, fixed_scale, count, _pad },
        GhostUniform => "render/ghosts.wgsl" :: Ghosts { count, offset, ghost_bit, _pad },
        FlowUniform => "render/curvature_flow.wgsl" :: Flow { size, tiles_x, step, cx, cy, threshold, _pad },
        TilesUniform => "render/fluid_tiles.wgsl" :: Tiles { size, tiles_x, _pad },
        NarrowRangeUniform => "render/narrow_range.wgsl" :: NarrowRange {
            size, tiles_x, max_radius, radius_scale, range, clamp_offset, _pad,
        },
        CompositeUniform => "render/composite.wgsl" :: Composite {
            absorption, ior, f0, view, tiles_x, sky_exposure, depth_vis, thickness_vis, thickness_scale, scattering,
            droplet_thickness, surface_allowance, _pad,
        },
        ParticleUniform => "render/particles.wgsl" :: Style { uniform_color, radius, range, color_mode, _pad },
        PaddleUniform => "render/wave_maker.wgsl" :: Paddle {
            domain_min, axis, domain_max, rest, amplitude, omega, thickness, _pad,
        },
        TerrainUniform => "render/heightfield.wgsl" :: Terrain {
            origin, spacing, nx, nz, h_min, h_max, fog_density, shadow_steps, sky_exposure, bounce, sun_dir, bounce_stride,
        },
        SkyGenUniform => "render/sky.wgsl" :: SkyGen {
            sun_dir, sun_intensity, turbidity, face_size, exposure, sun_disc, model, _pad,
        },
        TankUniform => "render/tank.wgsl" :: Tank { min, frame_width, max, grid, fog_density, floor, sky_exposure, _pad },
        AoUniform => "render/terrain_ao.wgsl" :: Ao { levels, azimuths, rings, brute_force, level },
        AoLevel => "render/terrain_ao.wgsl" :: AoLevel { index, _pad0, _pad1, _pad2 },
        WaterLightUniform => "render/water_light.wgsl" :: WaterLight {
            light_from_world, sun_dir, top, absorption, margin, right, enabled, up, _pad,
        },
        WaterShadowUniform => "render/water_shadow.wgsl" :: WaterShadow { size, fixed_scale, count, _pad },
        WetnessUniform => "render/wetness.wgsl" :: Wet {
            count, keep, contact, use_clock, dry_seconds, _pad0, _pad1, _pad2,
        },
    ]
}

/// naga's layout of the struct `name` in `module`: (size, member (name, offset)s).
fn wgsl_layout(module: &Module, name: &str) -> Option<(u32, Vec<(String, u32)>)> {
    let mut layouter = Layouter::default();
    layouter.update(module.to_ctx()).expect("naga lays out the module");
    module.types.iter().find_map(|(handle, ty)| match &ty.inner {
        TypeInner::Struct { members, span } if ty.name.as_deref() == Some(name) => {
            assert_eq!(layouter[handle].size, *span, "naga's layouter and the struct's span disagree for {name}");
            Some((
                layouter[handle].size,
                members.iter().map(|m| (m.name.clone().unwrap_or_default(), m.offset)).collect(),
            ))
        }
        _ => None,
    })
}

#[test]
fn rust_twins_match_the_wgsl_layout() {
    let mut modules = Modules::default();
    let mut failures = Vec::new();
    for t in twins() {
        let what = format!("{} <-> {} ({})", t.rust, t.wgsl, t.file);
        let declared = shader::raw_source(t.file).is_some_and(|s| s.contains(&format!("struct {} {{", t.wgsl)));
        assert!(declared, "{what}: shaders/{} does not declare struct {}", t.file, t.wgsl);
        let (module_file, module) = modules.declaring(t.file);
        let (size, members) =
            wgsl_layout(module, t.wgsl).unwrap_or_else(|| panic!("{what}: not in naga's module of {module_file}"));
        if size as usize != t.size {
            failures.push(format!("{what}: Rust size {} bytes, WGSL {size}", t.size));
        }
        for &(field, offset) in t.fields.iter().filter(|(f, _)| !f.starts_with('_')) {
            match members.iter().find(|(m, _)| m == field) {
                None => failures.push(format!("{what}: WGSL has no member `{field}`")),
                Some(&(_, o)) if o as usize != offset => {
                    failures.push(format!("{what}: `{field}` at {offset} in Rust, {o} in WGSL"))
                }
                _ => {}
            }
        }
        // A WGSL member that is not padding must be a Rust field too.
        for (m, _) in members.iter().filter(|(m, _)| !m.starts_with('_')) {
            if !t.fields.iter().any(|(f, _)| f == m) {
                failures.push(format!("{what}: WGSL member `{m}` has no Rust field"));
            }
        }
    }
    assert!(failures.is_empty(), "Rust/WGSL layouts differ:\n{}", failures.join("\n"));
}

/// Every `pub struct` in `src/` whose doc comment names a "WGSL twin", with the comment's WGSL struct name
/// and file (when it names one, relative to `shaders/`).
fn documented_twins() -> Vec<(String, String, Option<String>)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if !(line.starts_with("///") && line.contains("WGSL twin:")) {
                continue;
            }
            let mut doc = String::new();
            let mut k = i;
            while k < lines.len() && lines[k].starts_with("///") {
                doc += lines[k].trim_start_matches('/');
                doc.push(' ');
                k += 1;
            }
            while k < lines.len() && lines[k].starts_with("#[") {
                k += 1;
            }
            let rust = lines
                .get(k)
                .and_then(|l| l.strip_prefix("pub struct "))
                .map(|l| l.split([' ', '{', '<']).next().unwrap());
            let rust = rust
                .unwrap_or_else(|| panic!("{}:{}: a \"WGSL twin\" comment not on a pub struct", path.display(), i + 1));
            let clean = |w: &str| {
                w.trim_matches(|c: char| c == '`' || c == '.' || c == ',' || c == '(' || c == ')').to_string()
            };
            let mut words = doc.split("WGSL twin:").nth(1).unwrap().split_whitespace();
            let wgsl = clean(words.next().expect("a WGSL struct name after \"WGSL twin:\""));
            let file = match (words.next(), words.next()) {
                (Some("in"), Some(f)) => clean(f).strip_prefix("shaders/").map(str::to_string),
                _ => None,
            };
            found.push((rust.to_string(), wgsl, file));
        }
    }
    found
}

#[test]
fn every_documented_twin_is_checked() {
    let twins = twins();
    let documented = documented_twins();
    assert!(documented.len() >= 17, "found only {} \"WGSL twin\" comments in src/", documented.len());
    for (rust, wgsl, file) in &documented {
        let twin = twins.iter().find(|t| t.rust.rsplit("::").next().unwrap().trim() == rust);
        let twin = twin.unwrap_or_else(|| panic!("{rust} (WGSL twin {wgsl}) is not in this test's twins! list"));
        assert_eq!(twin.wgsl, wgsl, "{rust}: its comment names WGSL struct {wgsl}, the test {}", twin.wgsl);
        if let Some(file) = file {
            let ok = file == twin.file || imports(file).contains(twin.file);
            assert!(ok, "{rust}: its comment names shaders/{file}, which neither is nor imports shaders/{}", twin.file);
        }
    }
}

/// WGSL's `SimClock` (wave_maker.wgsl) reads the first two fields of the step state.
#[test]
fn the_paddle_reads_the_step_state_clock() {
    let mut modules = Modules::default();
    // The paddle and the ground's drying read the simulated time from the step state.
    for file in ["render/wave_maker.wgsl", "render/wetness.wgsl"] {
        let (_, members) = wgsl_layout(modules.get(file), "SimClock").unwrap_or_else(|| panic!("SimClock in {file}"));
        let offset = |name: &str| members.iter().find(|(m, _)| m == name).map(|(_, o)| *o as usize);
        assert_eq!(offset("dt"), Some(offset_of!(sim::gpu_data::StepState, dt)), "{file}");
        assert_eq!(offset("time"), Some(offset_of!(sim::gpu_data::StepState, time)), "{file}");
    }
}

// ---------------------------------------------------------------------------------------------------
// 3. Constants, enum codes and workgroup sizes

/// The value of the WGSL `const name` in `module`.
fn wgsl_const<'m>(module: &'m Module, file: &str, name: &str) -> &'m Literal {
    let c = module.constants.iter().find(|(_, c)| c.name.as_deref() == Some(name));
    let (_, c) = c.unwrap_or_else(|| panic!("{file} has no const {name}"));
    match &module.global_expressions[c.init] {
        Expression::Literal(l) => l,
        e => panic!("{file}: const {name} is not a literal: {e:?}"),
    }
}

fn wgsl_u32(modules: &mut Modules, file: &str, name: &str) -> u32 {
    match wgsl_const(modules.get(file), file, name) {
        Literal::U32(v) => *v,
        l => panic!("{file}: const {name} is {l:?}, not a u32"),
    }
}

fn wgsl_f32(modules: &mut Modules, file: &str, name: &str) -> f32 {
    match wgsl_const(modules.get(file), file, name) {
        Literal::F32(v) => *v,
        l => panic!("{file}: const {name} is {l:?}, not an f32"),
    }
}

/// Names of the WGSL consts of `module` that start with `prefix`.
fn wgsl_consts_with_prefix(module: &Module, prefix: &str) -> BTreeSet<String> {
    module.constants.iter().filter_map(|(_, c)| c.name.clone()).filter(|n| n.starts_with(prefix)).collect()
}

#[test]
fn solver_codes_match() {
    let mut modules = Modules::default();
    let file = "sim/time_step.wgsl"; // imports sim/common.wgsl, which declares them
    for m in Method::ALL {
        let name = format!("METHOD_{}", m.name());
        assert_eq!(wgsl_u32(&mut modules, file, &name), m.code(), "{m:?}: Method::code() vs {name} in sim/common.wgsl");
    }
    let declared = wgsl_consts_with_prefix(modules.get(file), "METHOD_");
    assert_eq!(declared.len(), Method::ALL.len(), "sim/common.wgsl declares {declared:?}");
}

#[test]
fn fluid_view_codes_match() {
    let mut modules = Modules::default();
    let file = "render/composite.wgsl";
    let named = [
        (FluidView::RawDepth, "VIEW_RAW_DEPTH"),
        (FluidView::SmoothedDepth, "VIEW_SMOOTHED_DEPTH"),
        (FluidView::Thickness, "VIEW_THICKNESS"),
        (FluidView::Normals, "VIEW_NORMALS"),
        (FluidView::TileMask, "VIEW_TILES"),
        (FluidView::Foam, "VIEW_FOAM"),
    ];
    for (view, name) in named {
        assert_eq!(wgsl_u32(&mut modules, file, name), view.code(), "{view:?}: FluidView::code() vs {name} in {file}");
    }
    // The views without a WGSL const draw the final image (code 0, `fs_main`, not `fs_debug`).
    for view in FluidView::ALL.into_iter().filter(|v| !named.iter().any(|(n, _)| n == v)) {
        assert_eq!(view.code(), 0, "{view:?} has a debug-view code but no VIEW_ const in {file}");
    }
    let declared = wgsl_consts_with_prefix(modules.get(file), "VIEW_");
    assert_eq!(declared, named.iter().map(|(_, n)| n.to_string()).collect(), "VIEW_ consts of {file}");
}

#[test]
fn particle_colour_modes_match() {
    let mut modules = Modules::default();
    let file = "render/particles.wgsl";
    let named = [
        (ColorMode::Speed, "MODE_SPEED"),
        (ColorMode::Density, "MODE_DENSITY"),
        (ColorMode::Pressure, "MODE_PRESSURE"),
    ];
    for (mode, name) in named {
        assert_eq!(
            wgsl_u32(&mut modules, file, name),
            mode.gpu_code(),
            "{mode:?}: ColorMode::gpu_code() vs {name} in {file}"
        );
    }
    // The shader draws `uniform_color` for every code above MODE_PRESSURE.
    let pressure = wgsl_u32(&mut modules, file, "MODE_PRESSURE");
    assert!(ColorMode::Uniform.gpu_code() > pressure, "ColorMode::Uniform must be above MODE_PRESSURE");
    assert_eq!(ColorMode::ALL.len(), named.len() + 1, "a new ColorMode needs its MODE_ const in {file}");
    let declared = wgsl_consts_with_prefix(modules.get(file), "MODE_");
    assert_eq!(declared, named.iter().map(|(_, n)| n.to_string()).collect(), "MODE_ consts of {file}");
}

#[test]
fn shared_constants_match() {
    let mut modules = Modules::default();
    let max_sources = wgsl_u32(&mut modules, "sim/sources.wgsl", "MAX_SOURCES");
    assert_eq!(max_sources as usize, sim::sources::MAX_SOURCES, "MAX_SOURCES: src/sim/sources.rs vs sim/common.wgsl");
    let max_obstacles = wgsl_u32(&mut modules, "sim/sources.wgsl", "MAX_OBSTACLES");
    assert_eq!(
        max_obstacles as usize,
        sim::obstacles::MAX_OBSTACLES,
        "MAX_OBSTACLES: src/sim/obstacles.rs vs sim/common.wgsl"
    );
    assert_eq!(
        wgsl_u32(&mut modules, "sim/stats.wgsl", "STATS_WG"),
        sim::STATS_WG,
        "STATS_WG: src/sim/stats.rs vs sim/stats.wgsl"
    );
    let sqrt_n = wgsl_f32(&mut modules, "sim/time_step.wgsl", "PRESSURE_SQRT_N");
    let rust = sim::PRESSURE_SQRT_N;
    assert_eq!(
        sqrt_n.to_bits(),
        rust.to_bits(),
        "PRESSURE_SQRT_N: {rust} in src/sim/advance.rs, {sqrt_n} in sim/time_step.wgsl"
    );
    assert_eq!(wgsl_u32(&mut modules, "render/splat.wgsl", "SPLAT_WG"), render::splat::SPLAT_WG, "SPLAT_WG");
    let no_water = wgsl_f32(&mut modules, "render/water_shadow.wgsl", "NO_WATER_DEPTH");
    assert_eq!(no_water, render::water_shadow::NO_WATER_DEPTH, "NO_WATER_DEPTH: src/render/water_shadow.rs vs WGSL");
    let ageing = wgsl_f32(&mut modules, "sim/diffuse.wgsl", "SLOW_AGEING");
    assert_eq!(ageing, sim::diffuse_params::SLOW_AGEING, "SLOW_AGEING: src/sim/diffuse_params.rs vs sim/diffuse.wgsl");
    // Both the simulation's diffuse stage and the foam splats read the kinds.
    for file in ["sim/diffuse.wgsl", "render/foam.wgsl"] {
        for kind in sim::DiffuseKind::ALL {
            let name = format!("KIND_{}", format!("{kind:?}").to_uppercase());
            assert_eq!(
                wgsl_u32(&mut modules, file, &name),
                kind.code(),
                "{kind:?}: DiffuseKind::code() vs {name} in {file}"
            );
        }
        let declared = wgsl_consts_with_prefix(modules.get(file), "KIND_");
        assert_eq!(declared.len(), sim::DiffuseKind::ALL.len(), "{file} declares {declared:?}");
    }
    let tile = render::targets::TILE_SIZE;
    for file in ["render/fluid_tiles.wgsl", "render/curvature_flow.wgsl", "render/narrow_range.wgsl"] {
        assert_eq!(wgsl_u32(&mut modules, file, "TILE"), tile, "TILE ({file}) vs TILE_SIZE");
    }
    assert_eq!(wgsl_u32(&mut modules, "render/composite.wgsl", "TILE"), tile, "TILE (composite.wgsl) vs TILE_SIZE");
    assert_eq!(
        wgsl_u32(&mut modules, "render/sky.wgsl", "MS_SIZE"),
        render::sky::MS_TABLE_SIZE,
        "MS_SIZE (sky.wgsl) vs MS_TABLE_SIZE"
    );
}

/// Workgroup sizes the Rust side divides its dispatches by.
#[test]
fn workgroup_sizes_match() {
    let mut modules = Modules::default();
    let mut size = |file: &str, entry: &str| -> [u32; 3] {
        let ep = modules.get(file).entry_points.iter().find(|e| e.name == entry);
        ep.unwrap_or_else(|| panic!("{file} has no entry point {entry}")).workgroup_size
    };
    assert_eq!(size("sim/sources.wgsl", "emit"), [sim::sources::EMIT_WG, 1, 1], "emit vs EMIT_WG");
    assert_eq!(
        size("sim/diffuse.wgsl", "diffuse_advect"),
        [sim::diffuse::DIFFUSE_WG, 1, 1],
        "diffuse_advect vs DIFFUSE_WG"
    );
    for entry in ["stats_partial", "stats_final"] {
        assert_eq!(size("sim/stats.wgsl", entry), [sim::STATS_WG, 1, 1], "{entry} vs STATS_WG");
    }
    for entry in ["count", "scatter", "anisotropy"] {
        assert_eq!(
            size("render/anisotropy.wgsl", entry),
            [render::anisotropy::WORKGROUP, 1, 1],
            "{entry} vs WORKGROUP"
        );
    }
    let compute = |m: &Module| {
        m.entry_points.iter().filter(|e| e.stage == naga::ShaderStage::Compute).map(|e| e.name.clone()).collect()
    };
    let splat_entries: Vec<String> = compute(&validated("render/splat.wgsl", &[]).unwrap());
    assert!(!splat_entries.is_empty(), "render/splat.wgsl has no compute entry point");
    for entry in &splat_entries {
        assert_eq!(size("render/splat.wgsl", entry), [render::splat::SPLAT_WG, 1, 1], "{entry} vs SPLAT_WG");
    }
    assert_eq!(size("render/sky.wgsl", "multiscatter"), [render::sky::MS_WG, 1, 1], "multiscatter vs MS_WG");
    assert_eq!(size("render/water_shadow.wgsl", "cs_shadow"), [render::splat::SPLAT_WG, 1, 1], "cs_shadow vs SPLAT_WG");
    let tile = render::targets::TILE_SIZE;
    assert_eq!(size("render/fluid_tiles.wgsl", "classify"), [tile, tile, 1], "classify vs TILE_SIZE");
    for entry in ["flow_tiles", "flow_full"] {
        assert_eq!(size("render/curvature_flow.wgsl", entry), [tile, tile, 1], "{entry} vs TILE_SIZE");
    }
    for entry in ["filter_h_tiles", "filter_v_tiles", "filter_h_full", "filter_v_full"] {
        assert_eq!(size("render/narrow_range.wgsl", entry), [tile, tile, 1], "{entry} vs TILE_SIZE");
    }
    for entry in ["scan_blocks", "add_offsets"] {
        let [x, y, z] = size("gpu/scan.wgsl", entry);
        assert_eq!(
            [2 * x, y, z],
            [waterview::gpu::scan::SCAN_BLOCK, 1, 1],
            "{entry}: two values per thread make SCAN_BLOCK"
        );
    }
}
