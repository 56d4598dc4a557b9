//! The benchmark (`waterview bench`) end to end on the headless adapter (lavapipe in CI): a tiny sweep
//! of two particle counts at two workgroup sizes, then checks of the CSV, the markdown and the plot.
//! Nothing here asserts how fast anything is. Without a GPU adapter the test fails with the context's
//! message (never skips).

mod common;

use std::path::{Path, PathBuf};
use waterview::bench::{self, report::CSV_HEADER, ConfigResult, Plan};
use waterview::cli::{parse_count, parse_workgroup_size, BenchArgs};
use waterview::render::SplatMethod;
use waterview::scene::Scene;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waterview-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn column(header: &csv::StringRecord, name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap_or_else(|| panic!("bench.csv has no column {name}"))
}

/// The frame times of one result: with GPU timings a finite positive span that covers every single pass
/// (simulation and render, each a median over the same frames), and always a positive median wall clock.
fn check_frame_times(r: &ConfigResult) {
    assert!(r.wall_ms_per_frame > 0.0 && r.wall_ms_per_frame.is_finite(), "median wall {} ms", r.wall_ms_per_frame);
    assert!(
        r.wall_mean_ms_per_frame > 0.0 && r.wall_mean_ms_per_frame.is_finite(),
        "mean wall {} ms",
        r.wall_mean_ms_per_frame
    );
    if !r.gpu_timed() {
        return;
    }
    let span = r.gpu_span_ms_per_frame.unwrap_or_else(|| panic!("no GPU span with per-pass timings: {r:?}"));
    assert!(span > 0.0 && span.is_finite(), "GPU span {span} ms");
    // The frame's GPU work lies inside its submit-and-wait; the slack allows for a GPU clock that runs
    // apart from the CPU's, and a unit slip (s or us for ms) still fails.
    assert!(
        span <= 2.0 * r.wall_ms_per_frame,
        "GPU span {span} ms beyond the median wall clock {} ms",
        r.wall_ms_per_frame
    );
    let (label, largest) = r
        .passes
        .iter()
        .chain(&r.render)
        .map(|p| (p.label.as_str(), p.ms_per_frame))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("passes");
    assert!(span >= largest * (1.0 - 1e-9), "GPU span {span} ms shorter than the pass {label} ({largest} ms)");
}

/// A plan for lavapipe: 800 particles, workgroup 64, 2 frames after 1 of warm-up, a 64 x 48 target and
/// every option at its default.
fn tiny_plan() -> Plan {
    Plan {
        targets: Some(vec![800]),
        sweep: false,
        max_particles: 1 << 24,
        workgroup_sizes: vec![64],
        frames: 2,
        warmup: 1,
        seconds: None,
        size: (64, 48),
        cell_split: 1,
        cells_per_particle: 1.0,
        submit_per_step: false,
        fixed_substeps: false,
        splats: SplatMethod::Compute,
        redraw_background: false,
        no_water_shadow: false,
        no_subgroups: false,
        no_neighbour_list: false,
        depth_filter: Default::default(),
    }
}

#[test]
fn tiny_sweep_writes_csv_markdown_and_plot() {
    let ctx = common::gpu();
    let scene = Scene::builtin("valley").expect("built-in valley");
    let plan =
        Plan { targets: Some(vec![500, 1000]), workgroup_sizes: vec![64, 128], frames: 3, warmup: 2, ..tiny_plan() };
    let report = bench::run_plan(&ctx, &scene, &plan).expect("benchmark runs");
    assert!(report.failures.is_empty(), "configurations failed: {:?}", report.failures);
    assert_eq!(report.results.len(), 4, "2 counts x 2 workgroup sizes");
    let slopes = report.slopes();
    assert_eq!(slopes.len(), 2, "one slope per workgroup size: {slopes:?}");
    assert!(slopes.iter().all(|(_, s)| s.is_finite()), "slopes {slopes:?}");
    for r in &report.results {
        check_frame_times(r);
        if ctx.has_timestamps() {
            assert!(r.gpu_span_ms_per_frame.is_some(), "lavapipe has timestamp queries: a span is expected: {r:?}");
        }
    }

    let dir = temp_dir("bench-test");
    bench::report::write_all(&report, &dir).expect("outputs written");

    // CSV: the documented columns and plausible values.
    let mut rdr = csv::Reader::from_path(dir.join("bench.csv")).expect("bench.csv");
    let header = rdr.headers().expect("header").clone();
    assert_eq!(header.iter().collect::<Vec<_>>(), CSV_HEADER.to_vec());
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.expect("csv row")).collect();
    let (c_target, c_n, c_wg, c_pass) = (
        column(&header, "target_particles"),
        column(&header, "particles"),
        column(&header, "workgroup_size"),
        column(&header, "pass"),
    );
    let (c_step, c_frame, c_mem, c_tput) = (
        column(&header, "ms_per_step"),
        column(&header, "ms_per_frame"),
        column(&header, "bytes_per_particle"),
        column(&header, "particle_steps_per_s"),
    );
    let num = |r: &csv::StringRecord, c: usize| -> f64 {
        r[c].parse().unwrap_or_else(|_| panic!("not a number in column {c}: {r:?}"))
    };
    assert!(rows.iter().all(|r| &r[c_pass] != "error"), "error rows: {rows:?}");
    for r in &rows {
        assert!(!r[0].is_empty() && r[1] == scene.name, "adapter and scene named: {r:?}");
        let (target, n) = (num(r, c_target), num(r, c_n));
        assert!((n / target - 1.0).abs() < 0.2, "{n} particles built for a target of {target}");
        assert!(num(r, c_step) > 0.0 && num(r, c_frame) > 0.0, "times positive: {r:?}");
        let mem = num(r, c_mem);
        assert!((50.0..=2000.0).contains(&mem), "{mem} bytes per particle");
        assert!(num(r, c_tput) > 0.0 && num(r, c_tput).is_finite());
        // The scene's solver is DFSPH: at least one iteration of each solve per step, a positive step.
        let (its, div, dt) = (
            num(r, column(&header, "density_iterations")),
            num(r, column(&header, "divergence_iterations")),
            num(r, column(&header, "dt_ms")),
        );
        assert!(its >= 1.0 && div >= 1.0 && dt > 0.0, "solver figures: {its} + {div} iterations, dt {dt} ms");
        // The configuration's frame times: median and mean wall always, the GPU span with timestamp queries.
        let (wall, wall_mean) =
            (num(r, column(&header, "wall_ms_per_frame")), num(r, column(&header, "wall_mean_ms_per_frame")));
        assert!(
            wall > 0.0 && wall.is_finite() && wall_mean > 0.0 && wall_mean.is_finite(),
            "wall {wall} ms, mean {wall_mean} ms"
        );
        let c_span = column(&header, "gpu_span_ms_per_frame");
        if ctx.has_timestamps() {
            let span = num(r, c_span);
            assert!(span > 0.0 && span.is_finite(), "GPU span {span} ms: {r:?}");
        } else {
            assert!(r[c_span].is_empty(), "a GPU span without timestamp queries: {r:?}");
        }
        if &r[c_pass] == "wall" {
            assert!((num(r, c_frame) - wall).abs() < 1e-5, "the wall row is the median wall clock: {r:?}");
        }
    }
    for target in ["500", "1000"] {
        for wg in ["64", "128"] {
            let passes: Vec<&str> = rows
                .iter()
                .filter(|r| &r[c_target] == target && &r[c_wg] == wg)
                .map(|r| r.get(c_pass).unwrap_or(""))
                .collect();
            for needed in ["total", "frame", "wall"] {
                assert!(passes.contains(&needed), "no {needed} row for {target} particles, workgroup {wg}: {passes:?}");
            }
            if ctx.has_timestamps() {
                assert!(passes.contains(&"render"), "no render row: {passes:?}");
                assert!(passes.len() > 5, "per-pass rows expected with timestamp queries: {passes:?}");
            }
        }
    }

    // Markdown: the summary table, the slopes and one pass table per configuration.
    let md = std::fs::read_to_string(dir.join("bench.md")).expect("bench.md");
    assert!(md.contains("## Summary") && md.contains("| particles | workgroup | ms/step |"), "{md}");
    for col in ["pass sum ms/frame", "GPU span ms/frame", "median wall ms/frame"] {
        assert!(md.contains(col), "no summary column {col}: {md}");
    }
    assert!(
        md.contains("first to last timestamp, idle gaps included")
            && md.contains("the next frame is recorded while the GPU runs the last"),
        "{md}"
    );
    assert!(md.contains("slope"), "{md}");
    assert_eq!(md.matches("| pass | ms/step | share % |").count(), 4, "{md}");

    // Plot: a PNG of the documented size.
    let img = image::open(dir.join("bench.png")).expect("bench.png decodes");
    assert_eq!((img.width(), img.height()), bench::plot::PLOT_SIZE);
    let rgb = img.to_rgb8();
    let dark = rgb.pixels().filter(|p| p.0.iter().all(|&c| c < 100)).count();
    assert!(dark > 500, "the plot has text and axes ({dark} dark pixels)");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_an_error() {
    assert!(parse_count("abc").is_err());
    assert!(parse_count("0").is_err());
    assert_eq!(parse_count("250k"), Ok(250_000));
    assert_eq!(parse_count("1.5M"), Ok(1_500_000));
    assert!(parse_workgroup_size("100").is_err());
    assert_eq!(parse_workgroup_size("64"), Ok(64));

    // An output "folder" that is a file: refused before any GPU work.
    let file = temp_dir("bench-not-a-dir");
    std::fs::write(&file, b"x").expect("temp file");
    let args = BenchArgs {
        particles: vec![1000],
        sweep: false,
        workgroup_sizes: vec![128],
        frames: 1,
        warmup: 0,
        seconds: None,
        size: (8, 8),
        max_particles: 1 << 20,
        cell_split: 1,
        cells_per_particle: 1.0,
        submit_per_step: false,
        fixed_substeps: false,
        splats: SplatMethod::Raster,
        redraw_background: false,
        no_water_shadow: false,
        no_subgroups: false,
        no_neighbour_list: false,
        depth_filter: None,
        out: file.clone(),
        gpus: waterview::cluster::GpuCount::N(1),
        baseline: None,
        tolerance: 0.05,
        loopback: false,
    };
    let err = bench::run(None, &args.plan(), &args.out).expect_err("unwritable output folder");
    assert!(format!("{err:#}").contains("not a folder"), "{err:#}");
    let _ = std::fs::remove_file(&file);

    // A missing scene file.
    let err = bench::run(Some(Path::new("no/such/scene.ron")), &args.plan(), &temp_dir("bench-unused"))
        .expect_err("missing scene");
    assert!(format!("{err:#}").contains("scene.ron"), "{err:#}");
}

/// The optimisation experiments' options run: half-size cells, a folded table of a quarter cell per
/// particle, one submission per step.
#[test]
fn experiment_options_run() {
    let ctx = common::gpu();
    let scene = Scene::builtin("valley").expect("built-in valley");
    let base = Plan { targets: Some(vec![800]), ..tiny_plan() };
    let small = Plan {
        cell_split: 2,
        cells_per_particle: 0.25,
        submit_per_step: true,
        fixed_substeps: true,
        splats: SplatMethod::Raster,
        redraw_background: true,
        no_subgroups: true,
        no_neighbour_list: false,
        depth_filter: waterview::render::DepthFilter::CurvatureFlow,
        ..base.clone()
    };
    let run = |plan: &Plan| {
        let report = bench::run_plan(&ctx, &scene, plan).expect("benchmark runs");
        assert!(report.failures.is_empty(), "configurations failed: {:?}", report.failures);
        report.results[0].clone()
    };
    let (a, b) = (run(&base), run(&small));
    check_frame_times(&a);
    check_frame_times(&b);
    assert_eq!(a.particles, b.particles, "same scene, same count");
    assert!(b.ms_per_step() > 0.0 && b.ms_per_step().is_finite(), "ms/step {}", b.ms_per_step());
    // Frames follow the simulated time (the scene's substeps or more); fixed ones hold the substeps.
    let substeps = f64::from(scene.solver.substeps);
    assert!(a.steps_per_frame >= substeps, "{} steps a frame, {substeps} substeps", a.steps_per_frame);
    assert_eq!(b.steps_per_frame, substeps, "fixed substeps");
    // (At 800 particles the table's least rows bind, GridShape::min_rows: its cells per particle change no
    // memory here; tests/sim_kernels.rs checks a table folded below them.)
}

/// A count past the GPU's particle limit (125 M on lavapipe's 8 388 608), asked for or the scene's own, is
/// recorded as refused at once, without laying out its particles (which took 8.4 s and 2.9 GB for the
/// scene of a run).
#[test]
fn a_count_past_the_gpus_limit_is_refused_before_building() {
    let ctx = common::gpu();
    // The plan's one cell per particle (below) sizes the grid's table the limit counts.
    let options = waterview::sim::SimOptions { cells_per_particle: 1.0, ..Default::default() };
    let limit = waterview::engine::particle_limit_with(&ctx, &options).max;
    let target = 125_000_000u64.max(limit + 1);
    // A 5 m cube of water at dx = 0.01 m: 500^3 = 125 M lattice points at its own spacing.
    let text = "(name: \"cube\", domain: (min: (0.0, 0.0, 0.0), max: (6.0, 6.0, 6.0)),
        fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (5.0, 5.0, 5.0))],
        camera: (target: (1.0, 1.0, 1.0), distance: 3.0, yaw_deg: 0.0, pitch_deg: 25.0),
        solver: (dx: 0.01), cpu_dx_scale: 1.0)";
    let cube = Scene::from_str(text, Path::new("cube.ron")).expect("the cube parses");
    let tank = Scene::builtin("tank").expect("tank");
    let more = "more than this GPU can simulate: ";
    let cases = [
        (&tank, vec![target], format!("{target} particles are more than this GPU can simulate ({limit} at most")),
        (
            &cube,
            vec![],
            format!("cube.ron: the fluid blocks hold up to 125000000 particles at dx = 0.01 m, {more}{limit}"),
        ),
    ];
    for (scene, particles, says) in cases {
        let args = BenchArgs {
            particles,
            sweep: false,
            workgroup_sizes: vec![128],
            frames: 1,
            warmup: 0,
            seconds: None,
            size: (8, 8),
            max_particles: 1 << 20,
            cell_split: 1,
            cells_per_particle: 1.0,
            submit_per_step: false,
            fixed_substeps: false,
            splats: SplatMethod::Raster,
            redraw_background: false,
            no_water_shadow: false,
            no_subgroups: false,
            no_neighbour_list: false,
            depth_filter: None,
            out: temp_dir("bench-limit"),
            gpus: waterview::cluster::GpuCount::N(1),
            baseline: None,
            tolerance: 0.05,
            loopback: false,
        };
        let started = std::time::Instant::now();
        let report = bench::run_plan(&ctx, scene, &args.plan()).expect("the plan runs");
        let took = started.elapsed().as_secs_f64();
        println!("{} refused in {took:.3} s: {:?}", scene.name, report.failures);
        assert!(report.results.is_empty());
        assert_eq!(report.failures.len(), 1);
        let f = &report.failures[0];
        assert!(f.error.contains(&says), "{}", f.error);
        assert!(took < 2.0, "refused only after {took:.1} s");
    }
}

/// A count at the GPU's limit runs: the spacing search keeps only builds within the limit (the count is a
/// step function of dx, so aiming at the limit itself lands above it half the time). CPU only: a build
/// only counts the particles. (`bench --particles 4194304` on lavapipe found no spacing before.)
#[test]
fn a_target_at_the_limit_builds_within_it() {
    let scene = waterview::scene::Scene::builtin("valley").expect("valley");
    let dx0 = scene.solver.dx;
    let n0 = scene.build(false).expect("builds").len();
    for max in [4_194_304u64, 1_000_000, 134_217_727] {
        let (dx, setup) = waterview::bench::setup_for_count(&scene, n0, dx0, max, max).expect("a spacing fits");
        println!("limit {max}: {} particles at dx = {dx} m", setup.len());
        assert!(setup.len() <= max && setup.len() as f64 >= 0.97 * max as f64, "{} for {max}", setup.len());
    }
}

/// `--seconds`: the timed frames stop once that much simulated time has passed after the warm-up, and the
/// real-time factor is the simulated over the wall-clock seconds of those frames.
#[test]
fn seconds_times_frames_until_that_simulated_time_and_gives_the_realtime_factor() {
    let ctx = common::gpu();
    let scene = Scene::builtin("valley").expect("built-in valley");
    let plan = Plan { targets: Some(vec![500]), frames: 1000, warmup: 0, seconds: Some(0.1), ..tiny_plan() };
    let report = waterview::bench::run_plan(&ctx, &scene, &plan).expect("the bench runs");
    let r = &report.results[0];
    println!("{} s simulated in {} s wall: {}", r.sim_seconds, r.wall_seconds, r.realtime_factor());
    // Frames of at most 1/60 s: 0.1 s is 6 frames or more, and it stopped within a frame or two of it.
    assert!(r.sim_seconds >= 0.1 && r.sim_seconds < 0.1 + 3.0 / 60.0, "simulated {} s", r.sim_seconds);
    assert!(r.wall_seconds > 0.0 && (r.realtime_factor() - r.sim_seconds / r.wall_seconds).abs() < 1e-12);
    assert!(r.dt_median_ms > 0.0 && r.dt_median_ms <= 1e3 / 60.0, "dt {} ms", r.dt_median_ms);
}

/// `bench --loopback` (src/bench/loopback.rs): the dam break stepped plainly and as the loopback rank on
/// one device; both take the same time steps, the loopback exchanges its halos every step (messages,
/// read-backs, ghosts), and loopback.md holds the row.
#[test]
fn loopback_times_one_gpu_against_the_rank_that_is_its_own_neighbour() {
    let scene = waterview::scene::Scene::builtin("dam_break").expect("built-in dam break");
    let out = temp_dir("bench-loopback");
    waterview::bench::loopback::run(&scene, &[6000], 2, 4, &out).expect("loopback runs");
    let md = std::fs::read_to_string(out.join("loopback.md")).expect("loopback.md");
    let row = md
        .lines()
        .find(|l| l.starts_with("| ") && l.split('|').nth(1).is_some_and(|c| c.trim().parse::<u64>().is_ok()));
    let cells: Vec<&str> = row.unwrap_or_else(|| panic!("no row in\n{md}")).split('|').map(str::trim).collect();
    let number = |k: usize| cells[k].parse::<f64>().unwrap_or_else(|_| panic!("column {k} of {cells:?}"));
    let (particles, ghosts, steps, ratio) = (number(1), number(2), number(3), number(6));
    assert!((5000.0..7000.0).contains(&particles) && ghosts > 0.0 && steps == 4.0, "{cells:?}");
    assert!(ratio > 0.0 && ratio.is_finite(), "T_plain / T_loop {ratio}");
    let dts: Vec<f64> = cells[10].split('/').map(|s| s.trim().parse().expect("dt")).collect();
    assert!((dts[0] - dts[1]).abs() <= 1e-3 * dts[0], "the plain and loopback time steps differ: {dts:?}");
    let overlapped = number(7);
    assert!(overlapped > 0.0 && overlapped.is_finite(), "T_loop overlapped {overlapped}");
    let (read_backs, messages) = (number(12), number(13));
    // Every step: the border selection's and the step state's read-backs and the solves' (DFSPH), and
    // four messages (migrants and halos, both sides) besides the solves'.
    assert!(read_backs >= 4.0 && messages >= 4.0, "{read_backs} read-backs, {messages} messages per step");
    let _ = std::fs::remove_dir_all(&out);
}
