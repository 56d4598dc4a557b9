//! Per-pass GPU timing from timestamp queries (through `wgpu-profiler`). Every compute or render pass the
//! engine records is opened with [`Profiler::compute_pass`] / [`Profiler::render_pass`]; results arrive
//! asynchronously a few frames later and are summed per label into a table (ms per frame).
//! Without timestamp support the table stays empty and nothing else changes.

use std::collections::BTreeMap;
use wgpu_profiler::{GpuProfiler, GpuProfilerQuery, GpuProfilerSettings, GpuTimerQueryResult};

/// GPU time of one labelled pass, summed over all its dispatches in one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct PassTime {
    pub label: String,
    /// Milliseconds of GPU time in the frame.
    pub ms: f64,
}

/// Wraps a [`GpuProfiler`] and keeps the latest finished frame's per-pass table.
pub struct Profiler {
    inner: GpuProfiler,
    latest: Vec<PassTime>,
    enabled: bool,
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
        let settings = GpuProfilerSettings { enable_timer_queries: enabled, enable_debug_groups: false, max_num_pending_frames: 4 };
        let inner = GpuProfiler::new(device, settings).expect("valid profiler settings");
        Self { inner, latest: Vec::new(), enabled }
    }

    /// Whether timings are being collected.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Turns timer queries on or off (off removes their small cost, e.g. for a clean benchmark of totals).
    pub fn set_enabled(&mut self, device: &wgpu::Device, on: bool) {
        let on = on && device.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        if on != self.enabled {
            let settings = GpuProfilerSettings { enable_timer_queries: on, enable_debug_groups: false, max_num_pending_frames: 4 };
            if self.inner.change_settings(settings).is_ok() {
                self.enabled = on;
            }
        }
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
    /// earlier frame into [`Profiler::latest`]. Never waits on the GPU.
    pub fn end_frame(&mut self, queue: &wgpu::Queue) {
        if self.inner.end_frame().is_err() {
            log::warn!("GPU profiler: frame ended with unclosed queries");
        }
        while let Some(results) = self.inner.process_finished_frame(queue.get_timestamp_period()) {
            self.latest = summarize(&results);
        }
    }

    /// Per-pass GPU time of the most recent finished frame, in the order passes first appeared.
    pub fn latest(&self) -> &[PassTime] {
        &self.latest
    }
}

/// Sums results per label (a pass dispatched in many substeps appears once), keeping first-seen order.
pub fn summarize(results: &[GpuTimerQueryResult]) -> Vec<PassTime> {
    fn walk(r: &[GpuTimerQueryResult], order: &mut Vec<String>, sums: &mut BTreeMap<String, f64>) {
        for q in r {
            if let Some(t) = &q.time {
                if !sums.contains_key(&q.label) {
                    order.push(q.label.clone());
                }
                *sums.entry(q.label.clone()).or_default() += (t.end - t.start) * 1e3;
            }
            walk(&q.nested_queries, order, sums);
        }
    }
    let mut order = Vec::new();
    let mut sums = BTreeMap::new();
    walk(results, &mut order, &mut sums);
    order.into_iter().map(|label| PassTime { ms: sums[&label], label }).collect()
}
