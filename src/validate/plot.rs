//! PNG charts of the validation cases (plotters, bitmap backend), drawn the way the benchmark's plot
//! is (`src/bench/plot.rs`): text with a font embedded in the binary (Ubuntu Light from
//! `epaint_default_fonts`), so no system fonts are needed. One generic x-y chart ([`Chart`]) with
//! lines and markers; several charts side by side make one image ([`write_panels`]). Log axes are
//! drawn as linear axes of log10 values with labels formatted back (see [`Chart::log_labels`]).

use crate::bench::plot::{plot_err, register_font};
use anyhow::{Context, Result};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Size of one chart panel, pixels.
pub const PANEL_SIZE: (u32, u32) = (900, 600);

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Style {
    /// A line through the points.
    Line,
    /// Markers only (open circles of the given radius, pixels).
    Markers(u32),
    /// Small filled dots (for scatter of many particles).
    Dots,
    /// A line with markers at the points.
    LineMarkers,
}

/// One plotted series.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    pub color: RGBColor,
}

/// One x-y chart.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub series: Vec<Series>,
    /// Axis ranges; `None` fits the data with a margin.
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
    /// (x, y): true where the axis holds log10 of the value (labels print 10^v).
    pub log_labels: (bool, bool),
    /// Tick positions on x (in axis units, so log10 values on a log axis); `None` picks 1-2-5 steps.
    pub x_ticks: Option<Vec<f64>>,
}

/// Colours per solver and series (matplotlib's "tab10", shared with `bench`'s plots; 7 is grey).
pub use crate::bench::plot::TAB10 as COLORS;

/// Range of the finite values in `v`, widened by 5 % (and made non-empty).
fn fit_range(v: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) =
        v.filter(|x| x.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.5 * lo.abs().max(1e-9) };
    (lo - pad, hi + pad)
}

/// A linear f64 axis with explicit tick positions (plotters' `with_key_points` on a plain f64 range
/// loses the value formatter that `configure_mesh` needs).
#[derive(Clone, Debug)]
struct TickAxis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for TickAxis {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }
}

/// Ticks at 1-2-5 steps inside `lo..hi` (on a log axis: at log10 of 1, 2, 5 times powers of ten).
fn nice_ticks(lo: f64, hi: f64, log: bool) -> Vec<f64> {
    if log {
        let mut out = Vec::new();
        let mut decade = lo.floor();
        while decade <= hi && out.len() < 40 {
            out.extend([1.0f64, 2.0, 5.0].map(|m| decade + m.log10()).into_iter().filter(|v| (lo..=hi).contains(v)));
            decade += 1.0;
        }
        return out;
    }
    let raw = (hi - lo) / 8.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    (first..).map(|i| i as f64 * step).take_while(|v| *v <= hi).take(40).collect()
}

/// Axis label of `v` (log10 of the value when `log`).
fn label(v: f64, log: bool) -> String {
    if v.abs() < 1e-12 && !log {
        return "0".into();
    }
    if log {
        let x = 10f64.powf(v);
        if (1e-3..1e4).contains(&x.abs()) {
            format!("{}", (x * 1e4).round() / 1e4)
        } else {
            format!("{x:.0e}")
        }
    } else if v.abs() >= 1e4 || (v != 0.0 && v.abs() < 1e-3) {
        format!("{v:.1e}")
    } else {
        format!("{}", (v * 1e4).round() / 1e4)
    }
}

/// Draws `chart` onto `area`.
fn draw(area: &DrawingArea<BitMapBackend, Shift>, chart: &Chart) -> Result<()> {
    let points = || chart.series.iter().flat_map(|s| s.points.iter());
    let x = chart.x_range.unwrap_or_else(|| fit_range(points().map(|p| p.0)));
    let y = chart.y_range.unwrap_or_else(|| fit_range(points().map(|p| p.1)));
    let mut ctx = ChartBuilder::on(area)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(
            TickAxis {
                lo: x.0,
                hi: x.1,
                ticks: chart.x_ticks.clone().unwrap_or_else(|| nice_ticks(x.0, x.1, chart.log_labels.0)),
            },
            TickAxis { lo: y.0, hi: y.1, ticks: nice_ticks(y.0, y.1, chart.log_labels.1) },
        )
        .map_err(plot_err)?;
    let (lx, ly) = chart.log_labels;
    ctx.configure_mesh()
        .x_desc(&chart.x_desc)
        .y_desc(&chart.y_desc)
        .x_label_formatter(&|v| label(*v, lx))
        .y_label_formatter(&|v| label(*v, ly))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(plot_err)?;
    for s in &chart.series {
        let color = s.color.to_rgba();
        let pts = s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite());
        let legend = move |(px, py): (i32, i32)| PathElement::new(vec![(px, py), (px + 20, py)], color.stroke_width(3));
        match s.style {
            Style::Line | Style::LineMarkers => {
                ctx.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(plot_err)?
                    .label(s.name.as_str())
                    .legend(legend);
                if s.style == Style::LineMarkers {
                    ctx.draw_series(pts.map(|p| Circle::new(p, 3, color.filled()))).map_err(plot_err)?;
                }
            }
            Style::Markers(r) => {
                ctx.draw_series(pts.map(|p| Circle::new(p, r, color.stroke_width(2))))
                    .map_err(plot_err)?
                    .label(s.name.as_str())
                    .legend(legend);
            }
            Style::Dots => {
                ctx.draw_series(pts.map(|p| Circle::new(p, 2, color.mix(0.6).filled())))
                    .map_err(plot_err)?
                    .label(s.name.as_str())
                    .legend(legend);
            }
        }
    }
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

/// Writes one chart as a PNG.
pub fn write_chart(path: &Path, chart: &Chart) -> Result<()> {
    write_panels(path, std::slice::from_ref(chart))
}

/// Writes `charts` side by side (each [`PANEL_SIZE`]) as one PNG.
pub fn write_panels(path: &Path, charts: &[Chart]) -> Result<()> {
    register_font()?;
    let n = charts.len().max(1) as u32;
    let size = (PANEL_SIZE.0 * n, PANEL_SIZE.1);
    let mut buf = vec![255u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let areas = root.split_evenly((1, n as usize));
        for (area, chart) in areas.iter().zip(charts) {
            draw(area, chart)?;
        }
        root.present().map_err(plot_err)?;
    }
    let img = image::RgbImage::from_raw(size.0, size.1, buf).context("plot buffer has the wrong size")?;
    img.save(path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
