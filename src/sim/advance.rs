//! Offline time control: `frame_end` (steps stop exactly at a simulated time, later ones are no-ops) and
//! [`Simulation::advance_to`], which records steps until the GPU's clock is there, for batch capture.

use super::gpu_data::{self, SimUniforms, StepState};
use super::{Method, SimError, Simulation};
use crate::gpu::{self, GpuContext, Profiler};

/// sqrt of the largest pressure number p dt^2 / (rho0 h^2) a PCISPH or DFSPH step may reach (twin of the
/// constant in shaders/sim/time_step.wgsl, which explains it): dt <= PRESSURE_SQRT_N h / sqrt(|g| H), H
/// the last step's highest particle above the domain's floor (the domain's height before it is known).
pub const PRESSURE_SQRT_N: f32 = 0.4472136;

/// Most steps [`Simulation::advance_to`] records into one submission (plus one).
const MAX_STEPS_PER_SUBMISSION: u32 = 256;
/// Most particle-steps (steps x particle capacity) [`Simulation::advance_to`] records into one submission,
/// the window's and `run`'s `substeps` steps always allowed: 256 steps at 1 M particles, the substeps
/// alone at 200 M. Without it a submission at 200 M particles could hold up to 257 CFL steps (tens of
/// seconds of GPU work), where `run` and `bench` submit `substeps` steps a frame: a suspect (not
/// confirmed) of the device lost about 30 s into a 200 M particle capture on an H200.
pub const MAX_PARTICLE_STEPS_PER_SUBMISSION: u64 = 1 << 28;

/// Steps one submission of [`Simulation::advance_to`] may record for `capacity` particles and `substeps`
/// steps a frame (see [`MAX_PARTICLE_STEPS_PER_SUBMISSION`]).
pub fn steps_per_submission(capacity: u32, substeps: u32) -> u32 {
    let by_work = MAX_PARTICLE_STEPS_PER_SUBMISSION / u64::from(capacity.max(1));
    (by_work.min(u64::from(MAX_STEPS_PER_SUBMISSION)) as u32).max(substeps.clamp(1, MAX_STEPS_PER_SUBMISSION))
}
/// Most submissions of one [`Simulation::advance_to`] call before it gives up.
const MAX_ADVANCE_SUBMISSIONS: u32 = 4096;

/// What one [`Simulation::advance_to`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Advance {
    /// Simulated time reached, seconds (the target, exactly).
    pub time: f32,
    /// Steps that advanced the time (dt > 0).
    pub steps: u32,
    /// Steps recorded, including the no-ops past the target.
    pub steps_recorded: u32,
    /// Queue submissions, each followed by a blocking read of the step state.
    pub submissions: u32,
}

impl Simulation {
    /// Sets the `frame_end` uniform (see `time_step` in shaders/sim/time_step.wgsl: the step that reaches
    /// `t_end` lands on it exactly, later steps are no-ops with dt = 0), then repeatedly records
    /// `ceil(remaining / dt) + 1` steps in one submission, dt being the CFL step the GPU will take next
    /// (computed from the [`StepState`]'s max speed, as the shader does), and reads the 32-byte
    /// [`StepState`] back, until its time equals `t_end`. Each submission also resolves and ends a
    /// `profiler` frame. `frame_end` is back at 0 (free running) when this returns.
    ///
    /// **Blocks** on the GPU once per submission (usually one or two per call). The window never calls
    /// this: its offline render ([`crate::capture::exact`]) reads the step state asynchronously instead.
    ///
    /// Errors ([`SimError::Advance`]): `t_end` not finite or not after the current time, the step state
    /// could not be read (device lost), or the time stopped moving (non-finite state) or did not get
    /// there within a bounded number of submissions.
    pub fn advance_to(&mut self, ctx: &GpuContext, profiler: &mut Profiler, t_end: f32) -> Result<Advance, SimError> {
        let mut state = self.step_state_blocking(ctx)?;
        let fail = |time: f32, reason: &'static str| SimError::Advance { target: t_end, time, reason };
        if !t_end.is_finite() || t_end <= 0.0 {
            return Err(fail(state.time, "the target must be a positive, finite time"));
        }
        if state.time > t_end {
            return Err(fail(state.time, "the target lies before the current time"));
        }
        let mut report = Advance { time: state.time, steps: 0, steps_recorded: 0, submissions: 0 };
        if state.time == t_end {
            return Ok(report);
        }
        let start_steps = state.steps;
        self.set_frame_end(ctx, t_end);
        let result = loop {
            if report.submissions >= MAX_ADVANCE_SUBMISSIONS {
                break Err(fail(state.time, "it did not get there within the bounded number of submissions"));
            }
            let dt = self.next_step_dt(&state);
            let most = steps_per_submission(self.capacity, self.params.substeps);
            // Plus one to land on `t_end` when the steps need not shrink; fewer when `most` caps them.
            let n = (((t_end - state.time) as f64 / dt as f64).ceil() as u32).saturating_add(1).min(most);
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("advance to") });
            for _ in 0..n {
                self.encode_step(&mut encoder, profiler);
            }
            self.encode_diffuse(&mut encoder, profiler);
            profiler.resolve(&mut encoder);
            ctx.queue.submit([encoder.finish()]);
            profiler.end_frame(&ctx.queue);
            report.submissions += 1;
            report.steps_recorded += n;
            let before = state.time;
            state = match self.step_state_blocking(ctx) {
                Ok(s) => s,
                Err(e) => break Err(e),
            };
            if state.time == t_end {
                break Ok(());
            }
            if !state.time.is_finite() || state.time > t_end {
                break Err(fail(state.time, "the simulated time left the expected range"));
            }
            if state.time <= before {
                break Err(fail(state.time, "the simulated time stopped moving"));
            }
        };
        self.set_frame_end(ctx, 0.0);
        result?;
        report.time = state.time;
        report.steps = state.steps.wrapping_sub(start_steps);
        Ok(report)
    }

    /// Blocking read of the 32-byte [`StepState`] (dt and time of the last step, its max speed, the step
    /// count, the DFSPH iteration counts). Offline and test use only: it waits for the GPU.
    /// Errors: [`SimError::Readback`] when nothing comes back (the device was lost or reported an error,
    /// which the message names).
    pub fn step_state_blocking(&self, ctx: &GpuContext) -> Result<StepState, SimError> {
        let step = &self.buffers.step;
        let bytes = gpu::readback::try_read_range_blocking(ctx, step, 0, step.size(), "the step state")
            .map_err(SimError::Readback)?;
        match bytes.get(..std::mem::size_of::<StepState>()) {
            Some(b) => Ok(bytemuck::pod_read_unaligned(b)),
            None => Err(SimError::Advance {
                target: f32::NAN,
                time: f32::NAN,
                reason: "the step state could not be read back",
            }),
        }
    }

    /// The time step the GPU's `time_step` takes next from `state` (a [`StepState`] read back, e.g.
    /// asynchronously by the window's offline render, [`crate::capture::exact`]), before any `frame_end`
    /// clamp: min(max_dt, cfl h / signal speed, 0.1 h^2 / nu, for PCISPH and DFSPH sqrt(0.2) h / sqrt(|g| H)), at
    /// least 1e-3 max_dt. For planning how many steps to record; the GPU decides the step itself.
    /// Twin of `time_step` in shaders/sim/time_step.wgsl.
    pub fn next_step_dt(&self, state: &StepState) -> f32 {
        let p = &self.params;
        let v_max = f32::from_bits(state.max_speed_bits);
        let signal =
            if p.method == Method::Wcsph { v_max + gpu_data::wcsph_sound_speed(p, &self.domain) } else { v_max };
        let mut dt = p.max_dt();
        if signal > 0.0 {
            dt = dt.min(p.cfl * p.h() / signal);
        }
        if p.viscosity > 0.0 {
            dt = dt.min(0.1 * p.h() * p.h() / p.viscosity);
        }
        let domain = self.domain.max[1] - self.domain.min[1];
        let top = f32::from_bits(state.fluid_top_bits);
        let height = if top > 0.0 { top.min(domain) } else { domain };
        let gh = glam::Vec3::from(p.gravity).length() * height;
        if p.method != Method::Wcsph && gh > 0.0 {
            dt = dt.min(PRESSURE_SQRT_N * p.h() / gh.sqrt());
        }
        if dt.is_finite() {
            dt.max(1e-3 * p.max_dt())
        } else {
            1e-3 * p.max_dt()
        }
    }

    /// Writes the `frame_end` uniform alone: absolute simulated time, seconds, at which steps stop (the
    /// step reaching it lands on it, later ones are exact no-ops with dt = 0); 0 = free running. Takes
    /// effect from the next submission; [`Simulation::set_params`] puts it back to 0.
    /// [`Simulation::advance_to`] sets and clears it; tests use it to record steps past the end.
    pub fn set_frame_end(&self, ctx: &GpuContext, t: f32) {
        let offset = std::mem::offset_of!(SimUniforms, frame_end) as u64;
        ctx.queue.write_buffer(&self.buffers.uniforms, offset, bytemuck::bytes_of(&t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The steps of one submission shrink with the particle count down to a frame's substeps (what `run`
    /// submits at once), never below one.
    #[test]
    fn steps_per_submission_shrink_with_the_particles() {
        assert_eq!(steps_per_submission(1_000_000, 2), 256);
        assert_eq!(steps_per_submission(10_000_000, 2), 26);
        assert_eq!(steps_per_submission(200_000_000, 2), 2, "a 200 M capture submits a frame's substeps");
        assert_eq!(steps_per_submission(200_000_000, 0), 1);
        assert_eq!(steps_per_submission(0, 1), 256);
        assert_eq!(steps_per_submission(u32::MAX, 1000), 256);
    }
}
