//! Per-pass GPU timing from timestamp queries (through `wgpu-profiler`). Every compute or render pass the
//! engine records is opened with [`Profiler::compute_pass`] / [`Profiler::render_pass`]; results arrive
//! asynchronously a few frames later and are summed per label into a table (ms per frame). Besides the
//! table each finished frame keeps its GPU span, the first timestamp to the last over all its queries
//! ([`FrameTimes::span`]): unlike the sum of the passes it includes the idle gaps between them.
//! Without timestamp support the table stays empty, the span is `None` and nothing else changes.

use std::collections::BTreeMap;
use std::ops::Range;
use wgpu_profiler::{GpuProfiler, GpuProfilerQuery, GpuProfilerSettings, GpuTimerQueryResult};

/// GPU time of one labelled pass, summed over all its dispatches in one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct PassTime {
    pub label: String,
    /// Milliseconds of GPU time in the frame.
    pub ms: f64,
    /// Times the pass ran in the frame (a simulation pass once per step: see `sim::steps_in`).
    pub runs: u32,
}

/// The GPU timings of one finished profiler frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameTimes {
    /// Per-label GPU time, in the order labels first appeared ([`summarize`]).
    pub passes: Vec<PassTime>,
    /// Earliest start to latest end over all the frame's timestamp queries, nested ones included
    /// ([`span`]), in seconds of the GPU clock (the origin is undefined, only differences and
    /// comparisons with other profilers' spans on the same queue mean something). `None` when the frame
    /// had no timed query.
    pub span: Option<Range<f64>>,
    /// Every timed top-level query of the frame (one per pass recorded), its label and its time on the
    /// GPU clock in seconds, in recording order: what [`gaps`] reads.
    pub queries: Vec<(String, Range<f64>)>,
}

impl FrameTimes {
    /// Timings of one frame's results: the per-label table, the span and the passes' times.
    pub fn from_results(results: &[GpuTimerQueryResult]) -> Self {
        let queries = results.iter().filter_map(|q| Some((q.label.clone(), q.time.clone()?))).collect();
        Self { passes: summarize(results), span: span(results), queries }
    }

    /// Length of [`FrameTimes::span`], milliseconds: the frame's GPU time from the first pass's start to
    /// the last pass's end, idle gaps included.
    pub fn span_ms(&self) -> Option<f64> {
        self.span.as_ref().map(|s| (s.end - s.start) * 1e3)
    }
}

/// Wraps a [`GpuProfiler`] and keeps the latest finished frame's timings ([`FrameTimes`]).
pub struct Profiler {
    inner: GpuProfiler,
    latest: FrameTimes,
    /// Frames collected so far (tells a new frame from a repeat of the same table).
    frames_finished: u64,
    /// Timer queries are on (the device has `TIMESTAMP_QUERY`).
    timed: bool,
}

/// A compute pass whose GPU time is recorded under its label; ends the pass and its query when dropped.
pub struct TimedComputePass<'p> {
    profiler: &'p GpuProfiler,
    query: Option<GpuProfilerQuery>,
    pub pass: wgpu::ComputePass<'static>,
}

impl Drop for TimedComputePass<'_> {
    fn drop(&mut self) {
        if let Some(q) = self.query.take() {
            self.profiler.end_query(&mut self.pass, q);
        }
    }
}

impl std::ops::Deref for TimedComputePass<'_> {
    type Target = wgpu::ComputePass<'static>;
    fn deref(&self) -> &Self::Target {
        &self.pass
    }
}
impl std::ops::DerefMut for TimedComputePass<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.pass
    }
}

/// A render pass whose GPU time is recorded under its label; ends the pass and its query when dropped.
pub struct TimedRenderPass<'p> {
    profiler: &'p GpuProfiler,
    query: Option<GpuProfilerQuery>,
    pub pass: wgpu::RenderPass<'static>,
}

impl Drop for TimedRenderPass<'_> {
    fn drop(&mut self) {
        if let Some(q) = self.query.take() {
            self.profiler.end_query(&mut self.pass, q);
        }
    }
}

impl std::ops::Deref for TimedRenderPass<'_> {
    type Target = wgpu::RenderPass<'static>;
    fn deref(&self) -> &Self::Target {
        &self.pass
    }
}
impl std::ops::DerefMut for TimedRenderPass<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.pass
    }
}

impl Profiler {
    /// Timer queries are used when the device has `TIMESTAMP_QUERY`; otherwise passes are untimed.
    pub fn new(device: &wgpu::Device) -> Self {
        let enabled = device.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let settings = GpuProfilerSettings {
            enable_timer_queries: enabled,
            enable_debug_groups: false,
            max_num_pending_frames: 4,
        };
        let inner = GpuProfiler::new(device, settings).expect("valid profiler settings");
        Self { inner, latest: FrameTimes::default(), frames_finished: 0, timed: enabled }
    }

    /// Opens a timed compute pass.
    pub fn compute_pass<'p>(&'p self, encoder: &mut wgpu::CommandEncoder, label: &str) -> TimedComputePass<'p> {
        let query = self.inner.begin_pass_query(label, encoder);
        let pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(label),
                timestamp_writes: query.compute_pass_timestamp_writes(),
            })
            .forget_lifetime();
        TimedComputePass { profiler: &self.inner, query: Some(query), pass }
    }

    /// Opens a timed render pass (the descriptor's own `timestamp_writes` is replaced).
    pub fn render_pass<'p>(
        &'p self,
        encoder: &mut wgpu::CommandEncoder,
        label: &str,
        desc: wgpu::RenderPassDescriptor<'_>,
    ) -> TimedRenderPass<'p> {
        let query = self.inner.begin_pass_query(label, encoder);
        let pass = encoder
            .begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some(label),
                timestamp_writes: query.render_pass_timestamp_writes(),
                ..desc
            })
            .forget_lifetime();
        TimedRenderPass { profiler: &self.inner, query: Some(query), pass }
    }

    /// Call once per frame on the frame's last encoder, before submitting it.
    pub fn resolve(&mut self, encoder: &mut wgpu::CommandEncoder) {
        self.inner.resolve_queries(encoder);
    }

    /// Call once per frame after submitting: closes the profiler frame and collects any finished
    /// earlier frame into [`Profiler::latest_frame`]. Never waits on the GPU.
    pub fn end_frame(&mut self, queue: &wgpu::Queue) {
        if self.inner.end_frame().is_err() {
            log::warn!("GPU profiler: frame ended with unclosed queries");
        }
        while let Some(results) = self.inner.process_finished_frame(queue.get_timestamp_period()) {
            self.latest = FrameTimes::from_results(&results);
            self.frames_finished += 1;
        }
    }

    /// Whether passes are timed (the device has `TIMESTAMP_QUERY`); without, [`Profiler::latest`] stays
    /// empty.
    pub fn is_timed(&self) -> bool {
        self.timed
    }

    /// Per-pass GPU time of the most recent finished frame, in the order passes first appeared.
    pub fn latest(&self) -> &[PassTime] {
        &self.latest.passes
    }

    /// All timings of the most recent finished frame: the per-pass table and the GPU span.
    pub fn latest_frame(&self) -> &FrameTimes {
        &self.latest
    }

    /// How many frames have been collected since this profiler was made; it grows by one for each
    /// finished frame [`Profiler::end_frame`] brings in, whatever its timings.
    pub fn frames_finished(&self) -> u64 {
        self.frames_finished
    }
}

/// Earliest start to latest end over `results` and all their nested queries, seconds; `None` when no
/// query has a time (timer queries off). Spans of several profilers on one queue combine with
/// [`span_union`], as their timestamps come from the same GPU clock.
pub fn span(results: &[GpuTimerQueryResult]) -> Option<Range<f64>> {
    results.iter().fold(None, |acc, q| span_union(span_union(acc, q.time.clone()), span(&q.nested_queries)))
}

/// The smallest range covering both (either may be `None`).
pub fn span_union(a: Option<Range<f64>>, b: Option<Range<f64>>) -> Option<Range<f64>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.start.min(b.start)..a.end.max(b.end)),
        (a, b) => a.or(b),
    }
}

/// The idle GPU time between consecutive passes of `queries` (label and GPU time in seconds, from one or
/// more profilers of one queue), summed per pair of labels ("a -> b"), in milliseconds, largest first.
/// Passes are ordered by their start; overlapping passes leave no gap.
pub fn gaps(queries: &[(String, Range<f64>)]) -> Vec<(String, f64)> {
    let mut sorted: Vec<&(String, Range<f64>)> = queries.iter().collect();
    sorted.sort_by(|a, b| a.1.start.total_cmp(&b.1.start));
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut end = f64::NEG_INFINITY;
    let mut previous: Option<&str> = None;
    for (label, time) in sorted {
        if let Some(p) = previous {
            let gap = time.start - end;
            if gap > 0.0 {
                *sums.entry(format!("{p} -> {label}")).or_default() += gap * 1e3;
            }
        }
        end = end.max(time.end);
        previous = Some(label);
    }
    let mut out: Vec<(String, f64)> = sums.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// Sums results per label (a pass dispatched in many substeps appears once), keeping first-seen order.
pub fn summarize(results: &[GpuTimerQueryResult]) -> Vec<PassTime> {
    fn walk(r: &[GpuTimerQueryResult], order: &mut Vec<String>, sums: &mut BTreeMap<String, (f64, u32)>) {
        for q in r {
            if let Some(t) = &q.time {
                if !sums.contains_key(&q.label) {
                    order.push(q.label.clone());
                }
                let sum = sums.entry(q.label.clone()).or_default();
                *sum = (sum.0 + (t.end - t.start) * 1e3, sum.1 + 1);
            }
            walk(&q.nested_queries, order, sums);
        }
    }
    let mut order = Vec::new();
    let mut sums = BTreeMap::new();
    walk(results, &mut order, &mut sums);
    order.into_iter().map(|label| PassTime { ms: sums[&label].0, runs: sums[&label].1, label }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(label: &str, time: Option<Range<f64>>, nested: Vec<GpuTimerQueryResult>) -> GpuTimerQueryResult {
        GpuTimerQueryResult {
            label: label.into(),
            pid: 0,
            tid: std::thread::current().id(),
            time,
            nested_queries: nested,
        }
    }

    #[test]
    fn span_covers_nested_queries_and_gaps() {
        // Two top-level passes with a 1 ms gap; the second holds a nested query that ends after it and one
        // untimed query; a third, untimed top-level query adds nothing.
        let results = vec![
            query("a", Some(1.000..1.002), vec![]),
            query(
                "b",
                Some(1.003..1.004),
                vec![query("b.inner", Some(1.0035..1.005), vec![]), query("b.off", None, vec![])],
            ),
            query("c", None, vec![query("c.inner", Some(0.9995..0.9999), vec![])]),
        ];
        let s = span(&results).expect("timed queries");
        assert!((s.start - 0.9995).abs() < 1e-12 && (s.end - 1.005).abs() < 1e-12, "span {s:?}");
        let frame = FrameTimes::from_results(&results);
        let ms = frame.span_ms().expect("span");
        assert!((ms - 5.5).abs() < 1e-9, "span {ms} ms");
        // The sum of passes leaves the gaps out: 2 + 1 + 1.5 + 0.4 ms.
        let sum: f64 = frame.passes.iter().map(|p| p.ms).sum();
        assert!((sum - 4.9).abs() < 1e-9, "sum {sum} ms");
        assert!(ms > sum);
    }

    #[test]
    fn summarize_counts_the_runs_of_a_pass() {
        let results = vec![
            query("grid", Some(0.000..0.001), vec![]),
            query("density", Some(0.001..0.003), vec![]),
            query("grid", Some(0.003..0.004), vec![]),
            query("untimed", None, vec![]),
        ];
        let passes = summarize(&results);
        let runs: Vec<(&str, u32)> = passes.iter().map(|p| (p.label.as_str(), p.runs)).collect();
        assert_eq!(runs, [("grid", 2), ("density", 1)]);
        assert!((passes[0].ms - 2.0).abs() < 1e-9, "{passes:?}");
    }

    #[test]
    fn gaps_sum_the_idle_time_between_passes_per_pair() {
        let q = |label: &str, t: Range<f64>| (label.to_string(), t);
        // a [0, 1], b [3, 4] (2 ms after a), a [4.5, 5] (0.5 ms after b), b [5, 6] (none), b overlapping.
        let queries = [
            q("a", 0.000..0.001),
            q("b", 0.003..0.004),
            q("a", 0.0045..0.005),
            q("b", 0.005..0.006),
            q("c", 0.0055..0.0058),
        ];
        let g = gaps(&queries);
        assert_eq!(g.len(), 2, "{g:?}");
        assert_eq!(g[0].0, "a -> b");
        assert!((g[0].1 - 2.0).abs() < 1e-9, "{g:?}");
        assert_eq!(g[1].0, "b -> a");
        assert!((g[1].1 - 0.5).abs() < 1e-9, "{g:?}");
    }

    #[test]
    fn span_of_untimed_frames_is_none_and_union_combines() {
        assert_eq!(span(&[]), None);
        assert_eq!(span(&[query("off", None, vec![query("off.inner", None, vec![])])]), None);
        assert_eq!(span_union(None, None), None);
        assert_eq!(span_union(Some(2.0..3.0), None), Some(2.0..3.0));
        assert_eq!(span_union(None, Some(1.0..1.5)), Some(1.0..1.5));
        assert_eq!(span_union(Some(2.0..3.0), Some(1.0..2.5)), Some(1.0..3.0));
    }
}
