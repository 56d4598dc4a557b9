//! Exact video frames without a blocking read-back, for the window's offline render ("Render video" in the
//! Capture panel): video frame k shows the simulation at exactly t0 + k / fps simulated seconds (t0: the
//! simulated time when the render started), like `waterview capture` ([`super::offline`]), but nothing ever
//! waits on the GPU, so the window keeps drawing and answering while the video is made.
//!
//! [`ExactFrames`] is a small state machine driven once per window frame:
//!
//! 1. Start: the 32-byte step state ([`StepState`]: dt, simulated time, max speed, step count) is copied
//!    into a staging buffer of a [`ReadbackRing`] and mapped asynchronously. When it arrives (a frame or
//!    more later), its time is t0, and that state is frame 0.
//! 2. A frame whose time is confirmed is rendered (by the caller, into the capture target) and its copy
//!    recorded into the [`VideoRecorder`], whose ring hands it to the encoder thread, and/or its particles
//!    copied for their file ([`ParticleExporter`]); when an output has no room the frame waits (nothing
//!    else is recorded meanwhile).
//! 3. Then, in the same encoder, the steps toward the next frame: the simulation's `frame_end` uniform is
//!    set to that frame's time ([`crate::sim::Simulation::set_frame_end`]: the step that reaches it lands on it, the
//!    steps after it are exact no-ops with dt = 0), a generous number of steps is recorded,
//!    `ceil(STEP_MARGIN * remaining / dt) + STEP_EXTRA`, dt being the step the GPU takes next (from the
//!    last step state's max speed, [`crate::sim::Simulation::next_step_dt`]), and the step state is copied for
//!    read-back again.
//! 4. When that copy arrives and shows the frame's time (within [`TIME_TOLERANCE`], relative), the frame is
//!    confirmed (2.). If it shows an earlier time (the speed grew more than the margin allows within the
//!    frame: rare), more steps are recorded toward the same end (3.) and checked again. No simulation
//!    work is recorded while a copy is on its way, so the particles the caller renders are exactly those
//!    of the confirmed state.
//!
//! A frame's image is therefore only ever rendered from a confirmed state: nothing is rendered for
//! nothing, and the recorder needs no way to take an image back. The cost over the headless capture is the
//! no-op steps of the margin and a read-back's latency (a frame or two of the window) per video frame.

use super::particles::ParticleExporter;
use super::recorder::VideoRecorder;
use super::CaptureError;
use crate::engine::Engine;
use crate::gpu::{readback::ReadbackRing, GpuContext, Profiler};
use crate::sim::gpu_data::StepState;

/// Steps recorded toward a frame's end: `ceil(STEP_MARGIN * remaining / dt) + STEP_EXTRA` (dt from the last
/// step state). Steps past the end cost nearly a full step of GPU time each but change nothing; too few
/// cost a read-back's latency and another round. Room for the speed to grow by a quarter within a frame:
/// a lavapipe dam break (24 frames at 24 fps, dx 0.08) took 109 steps of 154 recorded, none redone
/// (1.5 and 2: 119 of 212; 1.0 and 1: 106 of 129, none redone either).
pub const STEP_MARGIN: f32 = 1.25;
/// See [`STEP_MARGIN`].
pub const STEP_EXTRA: u32 = 1;
/// Most steps recorded into one window frame (a frame needing more takes several rounds).
pub const MAX_STEPS_PER_FRAME: u32 = 256;
/// Relative tolerance of the check that a step state shows a frame's end (the GPU lands on it exactly).
pub const TIME_TOLERANCE: f32 = 1e-6;
/// Most rounds of steps toward one frame's end before the render gives up.
const MAX_ROUNDS: u32 = 1000;

/// Where each exact frame goes: a video (its recorder and the texture the caller renders the frame
/// into) and/or the particle files of the frame.
pub struct FrameOutputs<'a> {
    pub video: Option<(&'a mut VideoRecorder, &'a wgpu::Texture)>,
    pub particles: Option<&'a mut ParticleExporter>,
}

impl FrameOutputs<'_> {
    /// Whether every output has room for a frame of `engine` now.
    fn can_record(&self, engine: &Engine) -> bool {
        self.video.as_ref().is_none_or(|(r, _)| r.can_record())
            && self.particles.as_ref().is_none_or(|p| p.can_record(engine.sim()))
    }
}

/// One video frame as [`ExactFrames::encode`] rendered and recorded it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactFrame {
    /// Index k of the frame, from 0.
    pub index: u64,
    /// Simulated time of the state rendered, seconds, as read back from the GPU: t0 + k / fps (as f32).
    pub sim_time: f32,
    /// Time of the frame in the video, seconds: k / fps.
    pub video_time: f64,
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Nothing recorded yet: copy the step state to learn the start time.
    Start,
    /// A copy of the step state (`tag`) is on its way back; it should show `target` (`None`: the start's
    /// copy); `before` is the time the steps started from.
    Waiting { tag: u64, target: Option<f32>, before: f32 },
    /// The current frame is confirmed at `state.time`: render it.
    Due { state: StepState },
    /// Record steps toward the current frame's end from `state`.
    Simulate { state: StepState },
    /// Every frame is rendered.
    Done,
}

/// The state machine of the module docs. One per offline render; drop it to abandon the render.
pub struct ExactFrames {
    fps: f64,
    total: u64,
    /// The frame being made (= frames rendered so far).
    frame: u64,
    /// Simulated time of frame 0, once read back.
    t0: Option<f32>,
    ring: ReadbackRing,
    next_tag: u64,
    phase: Phase,
    margin: (f32, u32),
    /// Rounds of steps toward the current frame.
    rounds: u32,
    /// Steps recorded in all (no-ops past a frame's end included).
    pub steps_recorded: u64,
    /// Rounds that fell short of their frame's end and were followed by more steps.
    pub redos: u64,
}

impl ExactFrames {
    /// A render of `total` frames at `fps` from the simulation's current state, with the default step
    /// margin ([`STEP_MARGIN`], [`STEP_EXTRA`]).
    pub fn new(device: &wgpu::Device, fps: f32, total: u64) -> Self {
        Self::with_margin(device, fps, total, STEP_MARGIN, STEP_EXTRA)
    }

    /// [`ExactFrames::new`] recording `ceil(margin * remaining / dt) + extra` steps per round (at least one;
    /// tests use a small margin to exercise the rounds that fall short).
    pub fn with_margin(device: &wgpu::Device, fps: f32, total: u64, margin: f32, extra: u32) -> Self {
        Self {
            fps: fps as f64,
            total,
            frame: 0,
            t0: None,
            ring: ReadbackRing::new(device, "offline step state", std::mem::size_of::<StepState>() as u64, 2),
            next_tag: 0,
            phase: Phase::Start,
            margin: (margin.max(0.0), extra),
            rounds: 0,
            steps_recorded: 0,
            redos: 0,
        }
    }

    /// Frames rendered and recorded so far.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Frames in the whole render.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// True once every frame is rendered.
    pub fn done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// Simulated time of frame 0, seconds, once read back.
    pub fn start_time(&self) -> Option<f32> {
        self.t0
    }

    /// True while a copy of the step state is on its way back (no simulation work is recorded then).
    pub fn waiting(&self) -> bool {
        matches!(self.phase, Phase::Waiting { .. })
    }

    /// Simulated time of frame `k`: t0 + k / fps, rounded once to f32 (the `frame_end` the GPU lands on).
    fn target(&self, k: u64) -> f32 {
        (self.t0.unwrap_or(0.0) as f64 + k as f64 / self.fps) as f32
    }

    /// Takes the step states that have arrived (call `device.poll(PollType::Poll)` first, once per frame)
    /// and confirms the current frame or plans more steps toward it. Never blocks.
    /// Errors: the simulated time went past the frame's end or is not finite, stopped moving, took too
    /// many rounds, or the read-back failed (device lost); the render cannot go on.
    pub fn poll(&mut self) -> Result<(), CaptureError> {
        while let Some((tag, bytes)) = self.ring.try_take() {
            let Phase::Waiting { tag: want, target, before } = self.phase else { continue };
            if tag != want {
                continue;
            }
            let Some(b) = bytes.get(..std::mem::size_of::<StepState>()) else {
                return Err(CaptureError::StepStateShort);
            };
            let state: StepState = bytemuck::pod_read_unaligned(b);
            let time = state.time;
            if !time.is_finite() {
                return Err(CaptureError::TimeNotFinite { frame: self.frame, time });
            }
            let Some(end) = target else {
                self.t0 = Some(time);
                self.phase = Phase::Due { state };
                continue;
            };
            if (time - end).abs() <= TIME_TOLERANCE * end.abs() {
                self.phase = Phase::Due { state };
                self.rounds = 0;
            } else if time > end {
                return Err(CaptureError::PastFrameEnd { frame: self.frame, time, end });
            } else if time <= before {
                return Err(CaptureError::TimeStopped { frame: self.frame, time, end });
            } else if self.rounds >= MAX_ROUNDS {
                return Err(CaptureError::TooManyRounds { frame: self.frame, time, end, rounds: MAX_ROUNDS });
            } else {
                self.redos += 1;
                self.phase = Phase::Simulate { state };
            }
        }
        if self.waiting() && !self.ring.in_flight() {
            return Err(CaptureError::StepStateLost);
        }
        Ok(())
    }

    /// Records this window frame's share of the render into `enc`: when a frame is confirmed and the
    /// `outputs` have room, `render(enc, engine)` (which must draw the simulation into the video's
    /// texture; skipped without a video), the copy of that texture for the video (shown at k / fps), the
    /// copy of the particles for their file, and then the steps toward the next frame; at the start, the
    /// first copy of the step state; after a round that fell short, more steps. Nothing while a copy of
    /// the step state is on its way back. Returns the frame recorded, if one was.
    /// Call [`ExactFrames::after_submit`] after submitting `enc`.
    /// Errors: an output refused the frame (a texture not of the recorder's size, a simulation whose
    /// particle count changed under the particle export).
    pub fn encode(
        &mut self,
        ctx: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        engine: &mut Engine,
        profiler: &Profiler,
        outputs: FrameOutputs<'_>,
        render: impl FnOnce(&mut wgpu::CommandEncoder, &Engine),
    ) -> Result<Option<ExactFrame>, CaptureError> {
        let mut rendered = None;
        if let Phase::Due { state } = self.phase {
            if !outputs.can_record(engine) {
                return Ok(None);
            }
            let video_time = self.frame as f64 / self.fps;
            if let Some((recorder, target)) = outputs.video {
                render(enc, engine);
                if !recorder.record(enc, target, video_time) {
                    return Err(CaptureError::FrameRefused {
                        frame: self.frame,
                        target: (target.width(), target.height()),
                        video: recorder.size(),
                    });
                }
            }
            if let Some(p) = outputs.particles {
                if !p.record(enc, &ctx.device, engine.sim(), self.frame) {
                    return Err(CaptureError::ParticlesRefused { frame: self.frame });
                }
            }
            rendered = Some(ExactFrame { index: self.frame, sim_time: state.time, video_time });
            self.frame += 1;
            self.phase = if self.frame >= self.total { Phase::Done } else { Phase::Simulate { state } };
        }
        let sim = engine.sim_mut();
        match self.phase {
            Phase::Start => {
                let tag = self.next_tag;
                if self.ring.copy_buffer(enc, sim.step_state(), 0, tag) {
                    self.next_tag += 1;
                    self.phase = Phase::Waiting { tag, target: None, before: f32::NAN };
                }
            }
            Phase::Simulate { state } => {
                let end = self.target(self.frame);
                let tag = self.next_tag;
                // A free staging buffer first, so steps are never recorded without their check.
                if let Some(dst) = self.ring.reserve(tag) {
                    let dt = sim.next_step_dt(&state).max(f32::MIN_POSITIVE) as f64;
                    let remaining = (end as f64 - state.time as f64).max(0.0);
                    let (margin, extra) = self.margin;
                    let n = ((margin as f64 * remaining / dt).ceil().min(MAX_STEPS_PER_FRAME as f64) as u32 + extra)
                        .clamp(1, MAX_STEPS_PER_FRAME);
                    sim.set_frame_end(ctx, end);
                    for _ in 0..n {
                        sim.encode_step(enc, profiler);
                    }
                    // The diffuse particles follow over the simulated time these steps advanced.
                    sim.encode_diffuse(enc, profiler);
                    let size = std::mem::size_of::<StepState>() as u64;
                    enc.copy_buffer_to_buffer(sim.step_state(), 0, dst, 0, size);
                    self.next_tag += 1;
                    self.steps_recorded += n as u64;
                    self.rounds += 1;
                    self.phase = Phase::Waiting { tag, target: Some(end), before: state.time };
                }
            }
            Phase::Waiting { .. } | Phase::Due { .. } | Phase::Done => {}
        }
        Ok(rendered)
    }

    /// Call right after the submission holding [`ExactFrames::encode`]'s work: starts mapping the copy.
    pub fn after_submit(&mut self) {
        self.ring.submitted();
    }
}
