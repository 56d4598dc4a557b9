//! The benchmark's frame loop: `warmup` frames, then up to `frames` timed ones (or until `seconds` of
//! simulated time have passed), each the steps that cover the scene's frame time (or `substeps` with
//! `--fixed-substeps`), the statistics and one render, recorded into one encoder and submitted.
//!
//! As in the window, the next frame is recorded while the GPU runs the last one: after submitting frame
//! k the CPU waits for frame k-1, so the CPU's encoding hides behind the GPU's work. A frame's wall clock
//! is the time from the end of the previous frame's wait to the end of its own, the pace at which frames
//! come out (the GPU's span when the CPU keeps up, the CPU's time when it does not). Its GPU timings
//! arrive a frame or two later; each profiler frame is matched to its frame by their common count.

use super::Plan;
use crate::engine::Engine;
use crate::gpu::profiler::{gaps, span_union};
use crate::gpu::{GpuContext, PassTime, Profiler};
use crate::render::{Offscreen, OrbitCamera, RenderSettings, Renderer};
use anyhow::{Context, Result};
use std::time::Instant;

/// What the timed frames measured.
#[derive(Default)]
pub(super) struct TimedFrames {
    /// Per timed frame whose timings arrived: the simulation's and the renderer's passes, and the GPU
    /// span over both, ms.
    pub sim_samples: Vec<Vec<PassTime>>,
    pub render_samples: Vec<Vec<PassTime>>,
    pub spans_ms: Vec<f64>,
    /// Per timed frame: wall clock and CPU encoding, ms, and steps.
    pub wall_ms: Vec<f64>,
    pub encode_ms: Vec<f64>,
    pub steps: Vec<u32>,
    /// Per statistics record of a timed frame: density and divergence iterations, dt in ms.
    pub solver: Vec<[f64; 3]>,
    /// Simulated time at the end of the warm-up and at the last timed record, seconds, and the timed
    /// frames up to that record.
    pub t_start: f64,
    pub t_end: Option<f64>,
    pub frames_to_t_end: usize,
}

impl TimedFrames {
    /// Wall-clock seconds of the timed frames up to the last timed record (the span `t_end - t_start`
    /// covers).
    pub fn wall_seconds(&self) -> f64 {
        self.wall_ms.iter().take(self.frames_to_t_end).sum::<f64>() / 1e3
    }
}

/// The renderer's part of a frame: what it draws and where.
pub(super) struct View<'a> {
    pub renderer: &'a mut Renderer,
    pub target: &'a Offscreen,
    pub camera: &'a OrbitCamera,
    pub settings: &'a RenderSettings,
}

/// Runs the frames of `plan` on `engine` (see the module docs).
/// Errors: the GPU could not be waited for (a lost device).
pub(super) fn run(ctx: &GpuContext, engine: &mut Engine, view: View<'_>, plan: &Plan) -> Result<TimedFrames> {
    let (warmup, frames) = (u64::from(plan.warmup), u64::from(plan.frames));
    let timed = |k: u64| (warmup..warmup + frames).contains(&k);
    let substeps = engine.params().substeps;
    let mut sim_profiler = Profiler::new(&ctx.device);
    let mut render_profiler = Profiler::new(&ctx.device);
    let mut out = TimedFrames::default();
    let wait = |index: wgpu::SubmissionIndex| {
        ctx.device
            .poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None })
            .context("waiting for the GPU")
    };
    let mut in_flight: Option<(u64, wgpu::SubmissionIndex)> = None;
    let mut last_done = Instant::now();
    // Two frames past the timed ones bring in the last timed frame's GPU timings.
    for i in 0..warmup + frames + 2 {
        let started = Instant::now();
        let label = Some("bench frame");
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label });
        let steps = if plan.fixed_substeps { substeps } else { engine.sim().frame_steps() };
        if plan.submit_per_step {
            // Every step but the last in a submission of its own, waited for (the last goes with the frame).
            for _ in 1..steps {
                engine.sim_mut().encode_step(&mut encoder, &sim_profiler);
                wait(ctx.queue.submit([encoder.finish()]))?;
                let label = Some("bench step");
                encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label });
            }
            engine.sim_mut().encode_step(&mut encoder, &sim_profiler);
        } else {
            engine.sim_mut().encode_frame(&mut encoder, &sim_profiler, steps);
        }
        engine.sim_mut().encode_stats(&mut encoder, &sim_profiler);
        let source = engine.particles();
        view.renderer.encode(
            ctx,
            &mut encoder,
            &render_profiler,
            view.target,
            view.camera,
            Some(source),
            view.settings,
        );
        sim_profiler.resolve(&mut encoder);
        render_profiler.resolve(&mut encoder);
        let index = ctx.queue.submit([encoder.finish()]);
        let encoded = started.elapsed().as_secs_f64();
        engine.sim_mut().after_submit();
        let finished_before = (sim_profiler.frames_finished(), render_profiler.frames_finished());
        sim_profiler.end_frame(&ctx.queue);
        render_profiler.end_frame(&ctx.queue);
        collect_timings(&mut out, (&sim_profiler, &render_profiler), finished_before, timed, warmup + frames);
        if timed(i) {
            out.steps.push(steps);
            out.encode_ms.push(1e3 * encoded);
        }
        // The previous frame ran while this one was recorded: wait for it alone.
        if let Some((k, previous)) = in_flight.replace((i, index)) {
            wait(previous)?;
            let done = Instant::now();
            if timed(k) {
                out.wall_ms.push(1e3 * (done - last_done).as_secs_f64());
            }
            last_done = done;
        }
        let _ = engine.sim_mut().poll_stats();
        for s in engine.sim().arrived_stats() {
            if s.frame > warmup && s.frame <= warmup + frames {
                out.solver.push([s.density_iterations as f64, s.divergence_iterations as f64, 1e3 * s.dt as f64]);
                out.t_end = Some(s.time as f64);
                out.frames_to_t_end = (s.frame - warmup) as usize;
            } else if s.frame <= warmup {
                out.t_start = s.time as f64;
            }
        }
        let simulated = |secs: f32| out.t_end.is_some_and(|t| t >= out.t_start + f64::from(secs));
        if plan.seconds.is_some_and(simulated) {
            // Simulated the asked time; the frames still in flight are not timed.
            break;
        }
    }
    if let Some((_, index)) = in_flight {
        wait(index)?;
    }
    // A frame whose wall clock was not measured (the run stopped at `seconds`) keeps no timings.
    out.steps.truncate(out.wall_ms.len());
    out.encode_ms.truncate(out.wall_ms.len());
    Ok(out)
}

/// Takes in the profiler frames that finished since `before` (each profiler's count): a timed frame's
/// passes per profiler and, when both arrived, the GPU span over both. The profilers end one frame per
/// recorded frame, so the n-th finished profiler frame is frame n - 1.
fn collect_timings(
    out: &mut TimedFrames,
    (sim, render): (&Profiler, &Profiler),
    before: (u64, u64),
    timed: impl Fn(u64) -> bool,
    end: u64,
) {
    let (sim_new, render_new) = (sim.frames_finished() > before.0, render.frames_finished() > before.1);
    let (sim_frame, render_frame) = (sim.latest_frame(), render.latest_frame());
    let frame = |p: &Profiler| p.frames_finished().checked_sub(1);
    let (sim_k, render_k) = (frame(sim), frame(render));
    if sim_new && sim_k.is_some_and(&timed) && !sim_frame.passes.is_empty() {
        out.sim_samples.push(sim_frame.passes.clone());
    }
    if render_new && render_k.is_some_and(&timed) && !render_frame.passes.is_empty() {
        out.render_samples.push(render_frame.passes.clone());
    }
    if sim_new && render_new && sim_k == render_k && sim_k.is_some_and(&timed) {
        if let Some(s) = span_union(sim_frame.span.clone(), render_frame.span.clone()) {
            out.spans_ms.push(1e3 * (s.end - s.start));
        }
        if sim_k == end.checked_sub(1) {
            let queries: Vec<_> = sim_frame.queries.iter().chain(&render_frame.queries).cloned().collect();
            let g: Vec<String> = gaps(&queries).iter().take(12).map(|(k, ms)| format!("{k} {ms:.3}")).collect();
            log::debug!("bench: idle GPU time between passes of the last timed frame, ms: {}", g.join(", "));
        }
    }
}
