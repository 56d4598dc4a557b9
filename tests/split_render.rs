//! The renderer's own per-particle arrays split over several storage bindings (src/gpu/split.rs), on
//! lavapipe: with the chunk length lowered (`gpu::split::set_per_binding`) to 512 particles, a dam break of
//! 1 680 particles puts the positions, the anisotropy's sorted positions and both ellipsoid arrays in 4
//! chunks each (asserted), and the pictures must be what one binding gives:
//! - the splats (depth and thickness, raster and compute) of the same ellipsoids: bit for bit (the same
//!   arithmetic on the same values; the last ellipsoid left out changes them: the comparison can fail),
//!   one pass drawing one binding, four chunks and one again;
//! - the anisotropy's ellipsoids: within the rounding of its neighbour sums, whose order follows the hash
//!   grid's counting sort and is not deterministic in general (on lavapipe they came out bit for bit the
//!   same), also by one pass whose arrays grow from one chunk to four and whose positions change;
//! - the final image of the whole renderer: within a step of the 8-bit colour on a few pixels, as the
//!   simulation's split test allows (tests/split_bindings.rs). The images are written to
//!   `target/test-output/split_render_{one,four}.png` to be looked at.
mod common;

use common::read_float_texture;
use glam::Vec3;
use std::path::PathBuf;
use std::sync::Mutex;
use waterview::engine::batch::run_frames;
use waterview::gpu::{split, split::SplitBuffer, GpuContext, Profiler};
use waterview::render::{
    self, AnisotropyInput, AnisotropyPass, Ellipsoid, EllipsoidBuffers, FluidTargets, FluidView, Offscreen,
    OrbitCamera, ParticleSource, Pass, RenderSettings, Renderer, SplatInput, SplatMethod, SplatPass, Targets,
    OFFSCREEN_FORMAT,
};
use waterview::scene::Scene;
use waterview::sim::{SimParams, Simulation};
use waterview::terrain::Heightfield;

/// The chunk length is process-wide: the tests of this file take turns.
static HOOK: Mutex<()> = Mutex::new(());

/// Elements per chunk in the split runs: 1 680 particles in 4 chunks (512, 512, 512, 144).
const PER: u32 = 512;

/// The dam break of tests/split_bindings.rs (1 680 particles at dx = 0.035 m) after 8 frames, read back
/// (positions, velocities), with its scene and terrain.
fn dam_state(ctx: &GpuContext) -> (Scene, Heightfield, Vec<[f32; 4]>, Vec<[f32; 4]>) {
    let text = "(name: \"split dam\", domain: (min: (0.0, 0.0, 0.0), max: (1.0, 0.8, 0.35)),
          fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.42, 0.5, 0.35))],
          camera: (target: (0.5, 0.25, 0.17), distance: 1.6, yaw_deg: 20.0, pitch_deg: 25.0),
          solver: (dx: 0.035), cpu_dx_scale: 1.0)";
    let scene = Scene::from_str(text, std::path::Path::new("split_dam.ron")).expect("test scene parses");
    let setup = scene.build(false).expect("builds");
    let params = SimParams { dx: scene.solver.dx, ..scene.solver.clone() };
    let mut sim = Simulation::new(ctx, &scene.domain, &setup, &params).expect("the dam builds");
    let mut profiler = Profiler::new(&ctx.device);
    run_frames(ctx, &mut sim, &mut profiler, Some(8), None, |_| {}).expect("statistics came back");
    let (pos, vel) = sim.read_particles_blocking(ctx);
    (scene, sim.terrain().clone(), pos, vel)
}

/// `data` (16-byte elements) in a split array chunked by `per` elements (0: the device's own length).
fn split_array(ctx: &GpuContext, label: &str, data: &[[f32; 4]], per: u32) -> SplitBuffer {
    split::set_per_binding(per);
    let b = SplitBuffer::new_init(&ctx.device, &ctx.queue, label, 16, bytemuck::cast_slice(data));
    split::set_per_binding(0);
    b.expect("fits 4 chunks")
}

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-output");
    std::fs::create_dir_all(&dir).expect("create target/test-output");
    dir
}

/// The ellipsoids of the first `count` of `positions` (split as they are) by `pass` with the default
/// settings at spacing `dx`, and the chunks of the pass's arrays (its pipelines' and its ellipsoids').
fn encode(
    ctx: &GpuContext,
    pass: &mut AnisotropyPass,
    (positions, count): (&SplitBuffer, u32),
    dx: f32,
) -> (Vec<Ellipsoid>, usize, usize) {
    let mut settings = RenderSettings::default();
    settings.fluid.dx = dx;
    let input = AnisotropyInput { positions, count, params: settings.anisotropy_uniform(), version: None };
    let target = Offscreen::new(ctx, (1, 1));
    common::record_frame(ctx, &target, &common::default_camera((1, 1)), |frame| pass.encode(frame, input));
    let ellipsoids = pass.ellipsoids().expect("ellipsoids made");
    (ellipsoids.read_blocking(ctx, count as usize), pass.chunks(), ellipsoids.chunks())
}

/// [`encode`] of all of `positions` by a new pass.
fn ellipsoids_of(ctx: &GpuContext, positions: &SplitBuffer, dx: f32) -> (Vec<Ellipsoid>, usize, usize) {
    encode(ctx, &mut AnisotropyPass::new(ctx, OFFSCREEN_FORMAT), (positions, positions.len() as u32), dx)
}

/// Checks that ellipsoids `b` are `a` within the rounding of the neighbour sums: the same drawn, centres
/// within 1e-6 m, G and the bounding radius within 4e-3 of themselves (8 f16 steps). Their order follows
/// the hash grid's counting sort, which is not deterministic in general (on lavapipe two runs, one binding
/// or four chunks, came out bit for bit the same); a wrong chunk gives other particles' centres and shapes
/// (0.035 m apart and more). Returns how many are drawn.
fn assert_close(a: &[Ellipsoid], b: &[Ellipsoid], what: &str) -> usize {
    assert_eq!(a.len(), b.len(), "{what}");
    let (mut worst_centre, mut worst_g, mut drawn) = (0f32, 0f32, 0);
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.centre[3] > 0.0, y.centre[3] > 0.0, "{what}: particle {i} drawn in one run only");
        if x.centre[3] <= 0.0 {
            continue;
        }
        drawn += 1;
        let d = Vec3::from_slice(&x.centre[..3]).distance(Vec3::from_slice(&y.centre[..3]));
        let (gx, gy) = (x.g(), y.g());
        let scale = gx.to_cols_array().iter().fold(0f32, |m, v| m.max(v.abs()));
        let dg = (gx - gy).to_cols_array().iter().fold(0f32, |m, v| m.max(v.abs())) / scale;
        let dr = (x.centre[3] - y.centre[3]).abs() / x.centre[3];
        worst_centre = worst_centre.max(d);
        worst_g = worst_g.max(dg.max(dr));
    }
    println!("{what}: {drawn} ellipsoids, centres within {worst_centre} m, G and radius within {worst_g}");
    assert!(worst_centre <= 1e-6, "{what}: centres differ by {worst_centre} m");
    assert!(worst_g <= 4e-3, "{what}: matrices or radii differ by {worst_g} of themselves");
    drawn
}

/// One splat pass over its own targets, seen by a scene's camera at 240 x 160 pixels, drawn again and
/// again (its pipelines are made again when the ellipsoids' chunks change).
struct Splats {
    camera: waterview::render::CameraUniform,
    target: Offscreen,
    targets: FluidTargets,
    pass: SplatPass,
}

impl Splats {
    fn new(ctx: &GpuContext, scene: &Scene) -> Self {
        let size = (240u32, 160u32);
        let camera = OrbitCamera::from_desc(&scene.camera).uniform(size, Vec3::Y, 1.0, 0.0);
        let (target, targets) = (Offscreen::new(ctx, size), FluidTargets::new(ctx, size, OFFSCREEN_FORMAT, false));
        let mut pass = SplatPass::new(ctx, OFFSCREEN_FORMAT);
        pass.resize(&ctx.device, Some(Targets { scene: &target, fluid: &targets }));
        Self { camera, target, targets, pass }
    }

    /// The raw depth and thickness (bit patterns) of the first `count` of `ellipsoids` splatted with
    /// `method` (spacing `dx`), and the chunks of the pass's pipelines.
    fn draw(
        &mut self,
        ctx: &GpuContext,
        (ellipsoids, count): (&EllipsoidBuffers, u32),
        method: SplatMethod,
        dx: f32,
    ) -> (Vec<u32>, Vec<u32>, usize) {
        let pass = &mut self.pass;
        common::record_frame(ctx, &self.target, &self.camera, |frame| {
            drop(frame.target_pass("clear", true));
            pass.encode(frame, SplatInput { ellipsoids, count, method, dx });
        });
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<u32>>();
        let depth = bits(read_float_texture(ctx, &self.targets.raw_depth));
        let thickness = bits(read_float_texture(ctx, self.targets.thickness_view.texture()));
        (depth, thickness, self.pass.chunks())
    }
}

#[test]
fn the_splats_of_ellipsoids_in_four_chunks_are_those_of_one_bit_for_bit() {
    let _turn = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let ctx = common::gpu();
    let (scene, _, pos, _) = dam_state(&ctx);
    let dx = scene.solver.dx;
    let positions = split_array(&ctx, "test positions", &pos, 0);
    let (stored, _, _) = ellipsoids_of(&ctx, &positions, dx);
    let count = stored.len() as u32;
    let one = EllipsoidBuffers::from_ellipsoids(&ctx, &stored).expect("fits");
    split::set_per_binding(PER);
    let four = EllipsoidBuffers::from_ellipsoids(&ctx, &stored);
    split::set_per_binding(0);
    let four = four.expect("fits 4 chunks");
    assert_eq!((one.chunks(), four.chunks()), (1, 4), "{count} ellipsoids in chunks of {PER}");
    assert_eq!(four.read_blocking(&ctx, stored.len()), stored, "uploaded and read across the chunks");
    let mut splats = Splats::new(&ctx, &scene);
    for method in [SplatMethod::Raster, SplatMethod::Compute] {
        // One pass drawing one binding, four chunks, one again: its pipelines follow the chunks.
        let (d1, t1, c1) = splats.draw(&ctx, (&one, count), method, dx);
        let (d4, t4, c4) = splats.draw(&ctx, (&four, count), method, dx);
        let (d1b, t1b, c1b) = splats.draw(&ctx, (&one, count), method, dx);
        assert_eq!((c1, c4, c1b), (1, 4, 1), "{method:?}: the pipelines' bindings per array");
        let covered = d1.iter().filter(|&&d| d != 0).count();
        println!("{method:?}: {covered} of {} pixels covered", d1.len());
        assert!(covered > 2000, "{method:?}: the water is in the picture ({covered} pixels)");
        assert!((&d1b, &t1b) == (&d1, &t1), "{method:?}: one binding drawn again differs");
        assert!(d4 == d1, "{method:?}: depth differs on {} pixels", d1.iter().zip(&d4).filter(|(a, b)| a != b).count());
        assert!(
            t4 == t1,
            "{method:?}: thickness differs on {} pixels",
            t1.iter().zip(&t4).filter(|(a, b)| a != b).count()
        );
        // Control: without the last chunk's last ellipsoid the pictures differ, so the comparison sees what
        // the last chunk holds.
        let (d_less, t_less, _) = splats.draw(&ctx, (&four, count - 1), method, dx);
        assert!(d_less != d1 || t_less != t1, "{method:?}: the last ellipsoid is not seen");
    }
}

#[test]
fn the_anisotropy_in_four_chunks_gives_the_ellipsoids_of_one() {
    let _turn = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let ctx = common::gpu();
    let (scene, _, pos, _) = dam_state(&ctx);
    let dx = scene.solver.dx;
    let (one, four) = (split_array(&ctx, "one", &pos, 0), split_array(&ctx, "four", &pos, PER));
    let n = pos.len() as u32;
    let (a, pass_chunks1, chunks1) = ellipsoids_of(&ctx, &one, dx);
    let (b, pass_chunks4, chunks4) = ellipsoids_of(&ctx, &four, dx);
    assert_eq!((pass_chunks1, chunks1), (1, 1), "one binding per array");
    assert_eq!((pass_chunks4, chunks4), (4, 4), "{n} particles in chunks of {PER}");
    let drawn = assert_close(&a, &b, "four chunks");
    assert!(drawn > 1500, "{drawn} of {n} drawn");

    // One pass kept, as the renderer keeps it: 400 particles of the four-chunk positions (its own arrays
    // one chunk, its pipelines four), then all of them (its arrays grow to four chunks), then the
    // one-binding positions again (one binding per array).
    let few = 400;
    let (a_few, _, _) = encode(&ctx, &mut AnisotropyPass::new(&ctx, OFFSCREEN_FORMAT), (&one, few), dx);
    let mut pass = AnisotropyPass::new(&ctx, OFFSCREEN_FORMAT);
    let (e, pass_chunks, chunks) = encode(&ctx, &mut pass, (&four, few), dx);
    assert_eq!((pass_chunks, chunks), (4, 1), "{few} of the four-chunk positions");
    assert_close(&a_few, &e, "400 of four chunks");
    let (e, pass_chunks, chunks) = encode(&ctx, &mut pass, (&four, n), dx);
    assert_eq!((pass_chunks, chunks), (4, 4), "grown to {n}");
    assert_close(&a, &e, "grown to four chunks");
    let (e, pass_chunks, chunks) = encode(&ctx, &mut pass, (&one, n), dx);
    assert_eq!((pass_chunks, chunks), (1, 1), "one binding again");
    assert_close(&a, &e, "one binding again");
}

#[test]
fn the_renderer_with_its_arrays_in_four_chunks_draws_the_picture_of_one() {
    let _turn = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let ctx = common::gpu();
    let (scene, terrain, pos, vel) = dam_state(&ctx);
    let camera = OrbitCamera::from_desc(&scene.camera);
    let image = |per: u32, count: u32| {
        let (positions, velocities) = (split_array(&ctx, "p", &pos, per), split_array(&ctx, "v", &vel, per));
        let mut renderer = Renderer::new(&ctx, render::OFFSCREEN_FORMAT, &terrain);
        let mut settings = RenderSettings { view: FluidView::Final, ..RenderSettings::default() };
        settings.fluid.dx = scene.solver.dx;
        let source = ParticleSource::buffers(&positions, &velocities, count);
        (
            positions.chunks().len(),
            render::render_to_image(&ctx, &mut renderer, &camera, Some(source), &settings, (480, 320)),
        )
    };
    let n = pos.len() as u32;
    let (c1, one) = image(0, n);
    let (c4, four) = image(PER, n);
    let (_, empty) = image(0, 0);
    assert_eq!((c1, c4), (1, 4), "{n} particles in chunks of {PER}");
    one.save(out_dir().join("split_render_one.png")).expect("write png");
    four.save(out_dir().join("split_render_four.png")).expect("write png");
    let drawn = one.pixels().zip(empty.pixels()).filter(|(x, y)| x != y).count();
    let off: Vec<u8> =
        one.pixels().zip(four.pixels()).map(|(x, y)| (0..3).map(|c| x[c].abs_diff(y[c])).max().unwrap_or(0)).collect();
    let (worst, beyond) = (off.iter().copied().max().unwrap_or(0), off.iter().filter(|&&d| d > 1).count());
    println!("final: {drawn} pixels drawn; largest difference {worst}/255, {beyond} pixels past 1/255");
    assert!(drawn > 10_000, "the water is in the picture ({drawn} pixels)");
    assert!(worst <= 8 && beyond <= 20, "the images differ: {worst}/255 at most, {beyond} past 1/255");
}

/// Up to one binding's worth of particles (134 M on Vulkan) the renderer's arrays have one chunk and its
/// shaders are resolved as the one-binding code: one binding per array, accessors that index it directly,
/// the chunk length declared but never used.
#[test]
fn one_chunk_resolves_to_the_one_binding_shaders() {
    let arrays = [
        ("render/anisotropy.wgsl", &["positions", "sorted", "ellipsoid_centres", "ellipsoid_gs"][..]),
        ("render/splat.wgsl", &["ellipsoid_centres", "ellipsoid_gs"][..]),
    ];
    for (path, names) in arrays {
        let src = waterview::gpu::shader::resolve_split(path, &[], 1);
        for name in names {
            assert!(
                src.contains(&format!(" {name}_0: array<")) && !src.contains(&format!(" {name}_1: ")),
                "{path}: {name}"
            );
            let load = format!(") -> vec4<f32> {{\n    return {name}_0[i];\n}}");
            let load_u = format!(") -> vec4<u32> {{\n    return {name}_0[i];\n}}");
            assert!(src.contains(&load) || src.contains(&load_u), "{path}: {name}_load indexes one binding\n{src}");
        }
        let uses = src.lines().filter(|l| !l.trim_start().starts_with("//") && l.contains("SPLIT_N")).count();
        assert_eq!(uses, 1, "{path}: SPLIT_N only declared");
        // Four chunks: every array in four bindings.
        let four = waterview::gpu::shader::resolve_split(path, &[], 4);
        for name in names {
            assert!(four.contains(&format!(" {name}_3: array<")), "{path}: {name} in 4 chunks");
        }
    }
}
