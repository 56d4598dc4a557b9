//! How many steps the window records a frame. A frame asks for the steps that cover the scene's frame
//! time ([`crate::sim::Simulation::frame_steps`]: real time where the GPU keeps up), but at most as many as
//! fit [`FRAME_BUDGET`] at the pace of the last frame that stepped (its interval to the next frame over
//! its steps, rendering included, so the estimate errs long), and at least one: a scene slower than the
//! budget still shows every step and the window keeps answering. Nothing here waits on the GPU.

use std::time::Duration;

/// The frame time the window's steps aim to stay within (20 frames per second).
pub const FRAME_BUDGET: Duration = Duration::from_millis(50);

/// Seconds per step of the frames that stepped, and the steps of the last frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepPace {
    per_step_s: Option<f64>,
    last_steps: u32,
}

impl StepPace {
    /// A frame starts `interval` after the last one: that frame's steps took about `interval` (with its
    /// rendering and any wait for the GPU).
    pub fn observe(&mut self, interval: Duration) {
        if self.last_steps > 0 {
            self.per_step_s = Some(interval.as_secs_f64() / f64::from(self.last_steps));
        }
    }

    /// Steps to record this frame out of `wanted` (remembered for the next [`StepPace::observe`]); 0 for
    /// a frame that does not step.
    pub fn steps(&mut self, wanted: u32) -> u32 {
        let n = match self.per_step_s {
            _ if wanted == 0 => 0,
            Some(s) if s > 0.0 => wanted.min(((FRAME_BUDGET.as_secs_f64() / s).floor() as u32).max(1)),
            // No pace yet (the first frame that steps): one step, which measures it.
            _ => 1,
        };
        self.last_steps = n;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fast_scene_gets_the_steps_it_wants() {
        let mut pace = StepPace::default();
        assert_eq!(pace.steps(4), 1, "the first frame measures the pace");
        pace.observe(Duration::from_millis(2));
        assert_eq!(pace.steps(28), 25, "2 ms a step: 25 fit 50 ms");
        pace.observe(Duration::from_millis(17));
        assert_eq!(pace.steps(4), 4);
    }

    #[test]
    fn a_slow_scene_settles_within_the_budget() {
        // A step costs 4 ms and the frame's rendering 5 ms.
        let mut pace = StepPace::default();
        let mut n = pace.steps(28);
        for _ in 0..10 {
            pace.observe(Duration::from_secs_f64(1e-3 * (4.0 * f64::from(n) + 5.0)));
            n = pace.steps(28);
        }
        assert!((9..=12).contains(&n), "{n} steps a frame");
        assert!(4.0 * f64::from(n) + 5.0 <= 1.1 * 50.0, "{n} steps a frame");
        // A step slower than the budget: still one a frame.
        pace.observe(Duration::from_millis(400));
        assert_eq!(pace.steps(28), 1);
    }

    #[test]
    fn a_paused_frame_keeps_the_pace() {
        let mut pace = StepPace::default();
        pace.steps(4);
        pace.observe(Duration::from_millis(4));
        assert_eq!(pace.steps(0), 0);
        // Paused frames (no steps) say nothing about a step's cost.
        pace.observe(Duration::from_millis(500));
        assert_eq!(pace.steps(4), 4);
    }
}
