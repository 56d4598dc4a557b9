//! How many steps a rendered frame records. A frame stands for `frame_dt` of simulated time (1/60 s by
//! default), split into `substeps` steps of at most `frame_dt / substeps` each. Where the CFL condition
//! (or the pressure or viscous bound, `time_step.wgsl`) shortens the step, `substeps` steps fall short of
//! the frame: the box dam break at 1 M particles steps 0.6 ms, so four steps cover 2.4 ms and every
//! simulated second was rendered 400 times, a third of its wall clock. A frame therefore records as many
//! steps as its time needs at the step the last statistics reported, at least `substeps` and at most
//! [`MAX_FRAME_STEPS`]; the window bounds them further by its frame budget (`app::pace`), and
//! `run --steps` keeps whole frames of `substeps` steps (a step count asked is a step count run).
//!
//! The estimate lags the GPU by the frames in flight (the statistics come back asynchronously, nothing
//! waits): a frame whose step shrinks meanwhile covers less than `frame_dt`, one whose step grows a little
//! more. The offline capture lands its frames exactly instead (`Simulation::advance_to`).

use super::Simulation;
use crate::gpu::PassTime;

/// Most steps one rendered frame records (the step's floor, 1e-3 of `frame_dt / substeps`, would
/// otherwise ask for thousands): at 1 M particles on an H100, about 0.3 s of GPU work.
pub const MAX_FRAME_STEPS: u32 = 64;

/// Steps that cover `frame_dt` seconds at steps of `dt` seconds: ceil(frame_dt / dt), at least `substeps`
/// (which a step of `frame_dt / substeps` gives) and at most [`MAX_FRAME_STEPS`] (or `substeps`, if more).
/// A `dt` that is not a positive number (no statistics yet, a paused or blown-up run) gives `substeps`.
pub fn steps_covering(frame_dt: f32, dt: f32, substeps: u32) -> u32 {
    let substeps = substeps.max(1);
    if !(dt > 0.0 && dt.is_finite() && frame_dt > 0.0) {
        return substeps;
    }
    // A step a hair shorter than frame_dt / substeps (rounding) must not ask for one step more.
    // (`as` saturates: a step near its floor asks for more than u32 holds and gets the bound.)
    let needed = (frame_dt / dt * (1.0 - 1e-4)).ceil() as u32;
    needed.clamp(substeps, MAX_FRAME_STEPS.max(substeps))
}

/// Steps in a profiled frame: the runs of the grid pass, which every step records first (0 without
/// timestamp queries).
pub fn steps_in(passes: &[PassTime]) -> u32 {
    passes.iter().find(|p| p.label == super::grid::PASS).map_or(0, |p| p.runs)
}

impl Simulation {
    /// Steps the next rendered frame records to cover `frame_dt` at the time step of the latest statistics
    /// record ([`steps_covering`]); `substeps` before any has arrived.
    pub fn frame_steps(&self) -> u32 {
        let dt = self.latest_stats().map_or(0.0, |s| s.dt);
        steps_covering(self.params.frame_dt, dt, self.params.substeps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_step_keeps_the_substeps() {
        let frame_dt = 1.0 / 60.0;
        assert_eq!(steps_covering(frame_dt, frame_dt / 4.0, 4), 4);
        assert_eq!(steps_covering(frame_dt, frame_dt / 4.0 * (1.0 - 1e-6), 4), 4, "rounding asks for no extra step");
        assert_eq!(steps_covering(frame_dt, 0.0, 4), 4, "no statistics yet");
        assert_eq!(steps_covering(frame_dt, f32::NAN, 4), 4);
        assert_eq!(steps_covering(frame_dt, frame_dt, 4), 4, "never fewer than the substeps");
    }

    #[test]
    fn a_short_step_covers_the_frame() {
        let frame_dt = 1.0 / 60.0;
        // The box dam break's 0.6 ms CFL step: 28 steps cover 16.8 ms.
        let n = steps_covering(frame_dt, 0.0006, 4);
        assert_eq!(n, 28);
        assert!(n as f32 * 0.0006 >= frame_dt && (n - 1) as f32 * 0.0006 < frame_dt);
        assert_eq!(steps_covering(frame_dt, 1e-7, 4), MAX_FRAME_STEPS, "the step's floor is bounded");
        assert_eq!(steps_covering(frame_dt, 1e-7, 100), 100, "more substeps than the bound keep theirs");
    }
}
