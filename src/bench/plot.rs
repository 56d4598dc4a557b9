//! `bench.png`: ms per step against particle count on log-log axes (plotters, bitmap backend). One
//! line per simulation pass plus the total at the first workgroup size, and the total of every other
//! workgroup size. Text is drawn with a font embedded in the binary (Ubuntu Light from
//! `epaint_default_fonts`, through plotters' `ab_glyph` feature), so no system fonts are needed.

use super::Report;
use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::OnceLock;

/// Size of `bench.png`, pixels.
pub const PLOT_SIZE: (u32, u32) = (1024, 640);

/// Registers the embedded font as plotters' "sans-serif" (once per process). Shared with `validate`'s plots.
pub(crate) fn register_font() -> Result<()> {
    static OK: OnceLock<bool> = OnceLock::new();
    let ok = *OK.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(anyhow!("the embedded plot font could not be loaded"))
    }
}

/// One plotted line: a name and (particles, ms per step) points sorted by particles.
type Series = (String, Vec<(f64, f64)>);

/// The lines to draw (see the module docs); points with a non-positive time are left out.
pub fn series(report: &Report) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    let Some(&first) =
        report.plan.workgroup_sizes.iter().find(|wg| report.results.iter().any(|r| r.workgroup_size == **wg))
    else {
        return out;
    };
    let mut add = |name: String, x: f64, y: f64| {
        if y > 0.0 && y.is_finite() {
            match out.iter_mut().find(|s| s.0 == name) {
                Some(s) => s.1.push((x, y)),
                None => out.push((name, vec![(x, y)])),
            }
        }
    };
    let multi = report.plan.workgroup_sizes.len() > 1;
    for r in report.results.iter().filter(|r| r.workgroup_size == first) {
        for p in &r.passes {
            add(
                if multi { format!("{} (wg {first})", p.label) } else { p.label.clone() },
                r.particles as f64,
                p.ms_per_step,
            );
        }
        add(if multi { format!("total (wg {first})") } else { "total".into() }, r.particles as f64, r.ms_per_step());
    }
    for &wg in report.plan.workgroup_sizes.iter().filter(|wg| **wg != first) {
        for r in report.results.iter().filter(|r| r.workgroup_size == wg) {
            add(format!("total (wg {wg})"), r.particles as f64, r.ms_per_step());
        }
    }
    for s in &mut out {
        s.1.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Draws the plot into `path` (PNG of `size` pixels). Returns `Ok(false)` and writes nothing when
/// fewer than two distinct particle counts ran.
pub fn write_plot(report: &Report, path: &Path, size: (u32, u32)) -> Result<bool> {
    let lines = series(report);
    let pts = || lines.iter().flat_map(|s| s.1.iter());
    let mut xs: Vec<f64> = pts().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    if xs.len() < 2 {
        return Ok(false);
    }
    register_font()?;
    let (x0, x1) = (xs[0] / 1.25, xs[xs.len() - 1] * 1.25);
    let y0 = pts().map(|p| p.1).fold(f64::INFINITY, f64::min) / 2.0;
    let y1 = pts().map(|p| p.1).fold(0.0, f64::max) * 2.0;
    let mut buf = vec![255u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let title = format!("ms per step vs particles - {} ({})", report.scene, report.adapter);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(
                (x0..x1).log_scale().with_key_points(x_ticks(&xs)),
                (y0..y1).log_scale().with_key_points(y_ticks(y0, y1)),
            )
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("particles")
            .y_desc("GPU ms per step")
            .x_label_formatter(&|x| fmt_count(*x))
            .y_label_formatter(&|y| fmt_ms(*y))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 18))
            .draw()
            .map_err(plot_err)?;
        for (i, (name, points)) in lines.iter().enumerate() {
            let color = if name == "total" { BLACK.to_rgba() } else { TAB10[i % TAB10.len()].to_rgba() };
            let width = if name.starts_with("total") { 3 } else { 2 };
            chart
                .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(width)))
                .map_err(plot_err)?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width)));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(plot_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    let img = image::RgbImage::from_raw(size.0, size.1, buf).context("plot buffer has the wrong size")?;
    img.save(path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(true)
}

/// A plotters error as an anyhow error (shared with `validate`'s plots).
pub(crate) fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing the plot failed: {e:?}")
}

/// Line colours (matplotlib's "tab10"; 7 is grey); the single total is black.
pub const TAB10: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Ticks at the measured particle counts (sorted, distinct), every k-th so that at most 12 remain.
fn x_ticks(xs: &[f64]) -> Vec<f64> {
    let k = xs.len().div_ceil(12).max(1);
    xs.iter().step_by(k).copied().collect()
}

/// Ticks at 1, 2, 5 times powers of ten inside `lo..hi`.
fn y_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi && out.len() < 64 {
        out.extend([1.0, 2.0, 5.0].map(|m| m * decade).into_iter().filter(|v| (lo..=hi).contains(v)));
        decade *= 10.0;
    }
    out
}

/// Axis label for a particle count: 500, 1k, 2.5k, 1.5M.
fn fmt_count(x: f64) -> String {
    let (v, suffix) = if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    let s = format!("{v:.1}");
    format!("{}{suffix}", s.strip_suffix(".0").unwrap_or(&s))
}

/// Axis label for milliseconds: 0.05, 0.2, 1, 20.
fn fmt_ms(y: f64) -> String {
    let decimals = (-y.log10().floor()).clamp(0.0, 9.0) as usize;
    format!("{y:.decimals$}")
}
