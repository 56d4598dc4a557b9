//! Benchmark outputs: `bench.csv` (one row per configuration and pass, see [`CSV_HEADER`]), `bench.md`
//! (a summary table, the log-log slopes, then a pass | ms/step | share % table per configuration) and
//! `bench.png` (see [`super::plot`]). Three frame times are reported side by side (see the module docs of
//! [`super`]): the GPU span of a frame (first to last timestamp, idle gaps included), the sum of pass
//! times, and the median wall clock per frame (the pace at which frames come out, one in flight).

use super::{ConfigResult, Report};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::Path;

/// Columns of `bench.csv`, in order. Rows per configuration: one per simulation pass, then `total`
/// (sum of the simulation passes), one `render:<label>` per render pass when there are several, `render`
/// (their sum), `frame` (the frame's steps + render: the sum of pass times) and `wall` (the median wall
/// clock per frame, one frame in flight); `steps_per_frame` is the median over the timed frames.
/// `ms_per_step` of the once-per-frame rows is amortised over the frame's steps; `share_pct` is a
/// pass's share of `total`, or for `render` its share of `frame`. `bytes_per_particle` and
/// `particle_steps_per_s` belong to the configuration and repeat on its rows, as do the solver's mean
/// `density_iterations`, `divergence_iterations` per step and time step `dt_ms` (from the statistics read
/// back during the timed frames, see [`ConfigResult`]), and the frame times of the configuration:
/// `gpu_span_ms_per_frame` (GPU span of a frame, first to last timestamp, idle gaps included; median over
/// the timed frames; empty without timestamp queries), `wall_ms_per_frame` (median wall clock per frame,
/// one frame in flight), `wall_mean_ms_per_frame` (its mean) and `encode_ms_per_frame` (median CPU time from the
/// start of encoding to the return of the submission), the median time step `dt_median_ms`, and the
/// simulated and wall-clock seconds of the timed frames with their ratio, the `realtime_factor`
/// (rendering included). A configuration that
/// could not run has one row with `pass` = `error` and the reason in `error`.
pub const CSV_HEADER: [&str; 24] = [
    "adapter",
    "scene",
    "target_particles",
    "particles",
    "workgroup_size",
    "steps_per_frame",
    "pass",
    "ms_per_step",
    "ms_per_frame",
    "share_pct",
    "bytes_per_particle",
    "particle_steps_per_s",
    "density_iterations",
    "divergence_iterations",
    "dt_ms",
    "gpu_span_ms_per_frame",
    "wall_ms_per_frame",
    "wall_mean_ms_per_frame",
    "encode_ms_per_frame",
    "dt_median_ms",
    "sim_seconds",
    "wall_seconds",
    "realtime_factor",
    "error",
];

/// Writes `bench.csv`, `bench.md` and, with more than one particle count, `bench.png` into `dir`.
pub fn write_all(report: &Report, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create the output folder {}", dir.display()))?;
    let csv_path = dir.join("bench.csv");
    write_csv(report, &csv_path).with_context(|| format!("cannot write {}", csv_path.display()))?;
    let md_path = dir.join("bench.md");
    std::fs::write(&md_path, markdown(report)).with_context(|| format!("cannot write {}", md_path.display()))?;
    let png_path = dir.join("bench.png");
    if super::plot::write_plot(report, &png_path, super::plot::PLOT_SIZE)? {
        eprintln!("plot: {}", png_path.display());
    } else {
        eprintln!("plot: skipped (one particle count only)");
    }
    Ok(())
}

/// Writes the CSV described at [`CSV_HEADER`].
pub fn write_csv(report: &Report, path: &Path) -> Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record(CSV_HEADER)?;
    for r in &report.results {
        for row in result_rows(r) {
            let mut rec = vec![
                report.adapter.clone(),
                report.scene.clone(),
                r.target_particles.to_string(),
                r.particles.to_string(),
                r.workgroup_size.to_string(),
                format!("{:.1}", r.steps_per_frame),
            ];
            rec.push(row.0);
            rec.extend([row.1, row.2].map(|v| format!("{v:.6}")));
            rec.push(row.3.map_or(String::new(), |s| format!("{s:.2}")));
            rec.push(format!("{:.1}", r.bytes_per_particle()));
            rec.push(format!("{:.6e}", r.particle_steps_per_s()));
            rec.extend([r.density_iterations, r.divergence_iterations, r.dt_ms].map(|v| format!("{v:.3}")));
            rec.push(r.gpu_span_ms_per_frame.map_or(String::new(), |v| format!("{v:.6}")));
            rec.extend(
                [r.wall_ms_per_frame, r.wall_mean_ms_per_frame, r.encode_ms_per_frame].map(|v| format!("{v:.6}")),
            );
            rec.push(format!("{:.4}", r.dt_median_ms));
            rec.extend([r.sim_seconds, r.wall_seconds, r.realtime_factor()].map(|v| format!("{v:.4}")));
            rec.push(String::new());
            w.write_record(&rec)?;
        }
    }
    for f in &report.failures {
        let mut rec = vec![report.adapter.clone(), report.scene.clone(), f.target_particles.to_string(), String::new()];
        rec.extend([f.workgroup_size.to_string(), String::new(), "error".into()]);
        rec.extend(std::iter::repeat_n(String::new(), CSV_HEADER.len() - 8));
        rec.push(f.error.clone());
        w.write_record(&rec)?;
    }
    w.flush()?;
    Ok(())
}

/// (pass, ms per step, ms per frame, share %) rows of one configuration, as described at [`CSV_HEADER`].
fn result_rows(r: &ConfigResult) -> Vec<(String, f64, f64, Option<f64>)> {
    let steps = r.steps_per_frame.max(1.0);
    let total = r.ms_per_step();
    let mut rows: Vec<_> = r
        .passes
        .iter()
        .map(|p| (p.label.clone(), p.ms_per_step, p.ms_per_frame, Some(100.0 * p.ms_per_step / total)))
        .collect();
    rows.push(("total".into(), total, total * steps, Some(100.0)));
    let frame = r.ms_per_frame();
    if r.render.len() > 1 {
        rows.extend(r.render.iter().map(|p| {
            (format!("render:{}", p.label), p.ms_per_step, p.ms_per_frame, Some(100.0 * p.ms_per_frame / frame))
        }));
    }
    if !r.render.is_empty() {
        let render = r.render_ms_per_frame();
        rows.push(("render".into(), render / steps, render, Some(100.0 * render / frame)));
    }
    rows.push(("frame".into(), frame / steps, frame, Some(100.0)));
    rows.push(("wall".into(), r.wall_ms_per_frame / steps, r.wall_ms_per_frame, None));
    rows
}

/// What the summary's three frame-time columns are, printed above the table.
const FRAME_TIMES_LEGEND: &str = "Frame times, each the median over the timed frames: **pass sum** = sum of pass times \
(steps/frame x ms/step + render; gaps between passes excluded); **GPU span** = GPU span of a frame (first to last timestamp, \
idle gaps included); **median wall** = median wall clock per frame (the pace at which frames come out: the next frame is \
recorded while the GPU runs the last, as in the window).\n\n";

/// The GPU span per frame with three decimals, or `n/a` without timestamp queries.
fn span_text(r: &ConfigResult) -> String {
    r.gpu_span_ms_per_frame.map_or("n/a".to_string(), |v| format!("{v:.3}"))
}

/// Thousands separated by thin spaces: 1 234 567.
fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// The header, the summary table, the slopes and the failures (what `waterview bench` prints).
pub fn summary_markdown(report: &Report) -> String {
    let p = &report.plan;
    let mut s = String::from("# waterview benchmark\n\n");
    let _ = writeln!(s, "- adapter: {}", report.adapter);
    let _ = writeln!(s, "- scene: {}", report.scene);
    let _ = writeln!(
        s,
        "- {} timed frames after {} warm-up frames; render target {}x{}",
        p.frames, p.warmup, p.size.0, p.size.1
    );
    let submit = if p.submit_per_step { "one per step" } else { "one per frame" };
    let background = if p.redraw_background { "drawn every frame" } else { "cached while the camera stands still" };
    let sums = if p.no_subgroups { "workgroup tree" } else { "subgroups where the GPU has them" };
    let shadow = if p.no_water_shadow { "off" } else { "on" };
    let lists = if p.no_neighbour_list { "off (grid rows)" } else { "on where they fit" };
    let _ = writeln!(
        s,
        "- grid: {} cell(s) per support radius, {} table cells per particle; submissions: {submit}; splats: {:?}; depth filter: {}; terrain and sky: {background}; water shadow: {shadow}; DFSPH error sums: {sums}; neighbour lists: {lists}",
        p.cell_split, p.cells_per_particle, p.splats, p.depth_filter.name()
    );
    if report.is_cpu {
        s.push_str(
            "- **software adapter: these figures are only for relative comparisons, not for GPU performance**\n",
        );
    }
    if report.results.iter().any(|r| !r.gpu_timed()) {
        s.push_str(
            "- no GPU timestamp queries on this adapter: ms/step is wall clock / steps per frame, no per-pass times\n",
        );
    }
    s.push_str("\n## Summary\n\n");
    s.push_str(FRAME_TIMES_LEGEND);
    s.push_str(
        "| particles | workgroup | ms/step | steps/frame | render ms/frame | pass sum ms/frame | GPU span ms/frame | median wall ms/frame \
         | particle-steps/s | bytes/particle | iterations (density + divergence) | dt ms | real-time factor |\n",
    );
    s.push_str("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for r in &report.results {
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.1} | {:.3} | {:.3} | {} | {:.3} | {:.3e} | {:.0} | {:.1} + {:.1} | {:.2} | {:.3} |",
            count(r.particles as u64),
            r.workgroup_size,
            r.ms_per_step(),
            r.steps_per_frame,
            r.render_ms_per_frame(),
            r.ms_per_frame(),
            span_text(r),
            r.wall_ms_per_frame,
            r.particle_steps_per_s(),
            r.bytes_per_particle(),
            r.density_iterations,
            r.divergence_iterations,
            r.dt_ms,
            r.realtime_factor()
        );
    }
    let slopes = report.slopes();
    if !slopes.is_empty() {
        s.push_str("\nLog-log slope of ms per step against particles (least squares; 1 = linear):\n\n");
        for (wg, slope) in slopes {
            let ns = report.results.iter().filter(|r| r.workgroup_size == wg).map(|r| r.particles as u64);
            let (lo, hi) = (ns.clone().min().unwrap_or(0), ns.max().unwrap_or(0));
            let _ = writeln!(s, "- workgroup {wg}: slope {slope:.3} (N = {} .. {})", count(lo), count(hi));
        }
    }
    if !report.failures.is_empty() {
        s.push_str("\n## Not run\n\n| target particles | workgroup | reason |\n|--:|--:|---|\n");
        for f in &report.failures {
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                count(f.target_particles),
                f.workgroup_size,
                f.error.replace('|', "\\|").replace('\n', " ")
            );
        }
    }
    s
}

/// [`summary_markdown`] followed by one pass | ms/step | share % table per configuration.
pub fn markdown(report: &Report) -> String {
    let mut s = summary_markdown(report);
    s.push_str("\n## Configurations\n");
    for r in &report.results {
        let _ = writeln!(
            s,
            "\n### {} particles (target {}), workgroup {}\n\ndx = {} m, {:.1} steps per frame (median), {} timed frames sampled.\n",
            count(r.particles as u64),
            count(r.target_particles),
            r.workgroup_size,
            r.dx,
            r.steps_per_frame,
            r.samples
        );
        s.push_str("| pass | ms/step | share % |\n|---|--:|--:|\n");
        for p in &r.passes {
            let _ =
                writeln!(s, "| {} | {:.4} | {:.1} |", p.label, p.ms_per_step, 100.0 * p.ms_per_step / r.ms_per_step());
        }
        let _ = writeln!(s, "| **total** | **{:.4}** | 100.0 |", r.ms_per_step());
        let _ = writeln!(
            s,
            "\nrender {:.3} ms/frame{}; sum of pass times {:.3} ms per rendered frame; GPU span of a frame (first to last \
             timestamp, idle gaps included) {} ms; median wall clock per frame (one frame in flight) {:.3} ms (mean {:.3} ms; the CPU encodes and submits a frame in \
             {:.3} ms while the GPU runs the last); \
             {:.3e} particle-steps/s; {:.0} bytes/particle ({:.1} MiB).",
            r.render_ms_per_frame(),
            if r.render.len() > 1 {
                let parts: Vec<String> = r.render.iter().map(|p| format!("{} {:.3}", p.label, p.ms_per_frame)).collect();
                format!(" ({})", parts.join(", "))
            } else {
                String::new()
            },
            r.ms_per_frame(),
            span_text(r),
            r.wall_ms_per_frame,
            r.wall_mean_ms_per_frame,
            r.encode_ms_per_frame,
            r.particle_steps_per_s(),
            r.bytes_per_particle(),
            r.bytes_allocated as f64 / (1024.0 * 1024.0)
        );
    }
    s
}
