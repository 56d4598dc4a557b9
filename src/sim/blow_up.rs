//! A blow-up: the first statistics record with non-finite particles, and its likely cause read off the
//! record before it. The GPU counts particles whose position or velocity is NaN or infinite in every
//! statistics record (`shaders/sim/stats.wgsl`); nothing here reads the particles back. The causes are the
//! ways an SPH step fails (Monaghan 1992, "Smoothed particle hydrodynamics", ARA&A 30, section 10;
//! Bender & Koschier 2017, "Divergence-free SPH", section 4.4): particles moving more than a smoothing
//! length per step (the CFL condition broken: the step has a floor of 1e-3 of `frame_dt / substeps`),
//! a pressure solve that stopped far from its target, or a state that was not finite to begin with.

use super::{SimParams, SimStats};
use std::fmt;

/// Density error (relative) past which an unconverged pressure solve is named as the likely cause.
const UNCONVERGED_DENSITY_ERROR: f32 = 0.1;

/// The first frame whose statistics counted non-finite particles, and why that is likely.
#[derive(Clone, Debug, PartialEq)]
pub struct BlowUp {
    /// Frame counter of the record (as in [`SimStats::frame`]).
    pub frame: u64,
    /// Simulated time of the record, seconds (non-finite when the clock itself blew up).
    pub time: f32,
    /// Particles with a non-finite position or velocity.
    pub non_finite: u32,
    /// Particles simulated in that frame.
    pub particles: u32,
    /// The likely cause, from the record before.
    pub cause: Cause,
}

/// Why a simulation likely blew up.
#[derive(Clone, Debug, PartialEq)]
pub enum Cause {
    /// Already in the first record: the initial state or the parameters cannot be stepped.
    AtStart,
    /// The previous record's fastest particle moved `h_per_step` smoothing lengths in one step (more than
    /// one breaks the CFL condition the time step is built on). Speeds in m/s, dt in seconds.
    TooFast { max_speed: f32, dt: f32, h_per_step: f32 },
    /// The previous record's pressure solve ended far from its target (DFSPH: `iterations` of
    /// `max_iterations`); the density error is relative (0.1 = 10 %).
    Unconverged { max_density_error: f32, iterations: u32, max_iterations: u32 },
    /// None of the above showed in the previous record (fastest particle in m/s).
    Sudden { max_speed: f32 },
}

impl BlowUp {
    /// The blow-up in `now`, if any of its particles is non-finite, with its likely cause read off
    /// `previous` (the record of an earlier frame of the same run, `None` for the first) under `params`.
    pub fn diagnose(previous: Option<&SimStats>, now: &SimStats, params: &SimParams) -> Option<BlowUp> {
        if now.non_finite == 0 {
            return None;
        }
        let cause = match previous {
            None => Cause::AtStart,
            Some(p) if p.non_finite > 0 => Cause::AtStart,
            Some(p) => {
                let h = params.dx * params.h_over_dx;
                let h_per_step = p.max_speed * p.dt / h;
                let solve_limit = params.density_iterations.max(params.solver_iterations);
                if h_per_step > 1.0 || h_per_step.is_nan() {
                    Cause::TooFast { max_speed: p.max_speed, dt: p.dt, h_per_step }
                } else if p.max_density_error > UNCONVERGED_DENSITY_ERROR || p.max_density_error.is_nan() {
                    Cause::Unconverged {
                        max_density_error: p.max_density_error,
                        iterations: p.density_iterations,
                        max_iterations: solve_limit,
                    }
                } else {
                    Cause::Sudden { max_speed: p.max_speed }
                }
            }
        };
        Some(BlowUp {
            frame: now.frame,
            time: now.time,
            non_finite: now.non_finite,
            particles: now.particle_count,
            cause,
        })
    }
}

impl fmt::Display for BlowUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the simulation blew up at frame {} (t = {} s): {} of {} particles are not finite; ",
            self.frame, self.time, self.non_finite, self.particles
        )?;
        match &self.cause {
            Cause::AtStart => write!(
                f,
                "likely cause: the scene cannot be stepped from its start (check rho0, gravity and the fluid \
                 blocks' and emitters' velocities)"
            ),
            Cause::TooFast { max_speed, dt, h_per_step } => write!(
                f,
                "likely cause: particles outran the time step (max speed {max_speed} m/s with dt = {dt} s moves \
                 {h_per_step:.1} smoothing lengths per step, more than 1); lower Frame dt or the inflow speeds, or \
                 raise the substeps"
            ),
            Cause::Unconverged { max_density_error, iterations, max_iterations } => write!(
                f,
                "likely cause: the pressure solve did not converge (density error {:.1} % after {iterations} of \
                 {max_iterations} iterations); raise the iteration limit or lower the CFL number",
                100.0 * max_density_error
            ),
            Cause::Sudden { max_speed } => write!(
                f,
                "likely cause: a sudden instability (max speed was {max_speed} m/s the frame before); lower the \
                 CFL number or Frame dt"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(frame: u64, max_speed: f32, dt: f32, max_density_error: f32, non_finite: u32) -> SimStats {
        SimStats {
            frame,
            time: frame as f32 * 0.016,
            dt,
            particle_count: 1000,
            max_speed,
            max_density_error,
            non_finite,
            density_iterations: 7,
            ..SimStats::default()
        }
    }

    #[test]
    fn finite_records_are_no_blow_up() {
        let params = SimParams::default();
        assert_eq!(BlowUp::diagnose(None, &record(1, 1.0, 1e-3, 0.01, 0), &params), None);
    }

    #[test]
    fn the_cause_is_read_off_the_record_before() {
        let params = SimParams::default();
        let h = params.dx * params.h_over_dx;
        let bad = record(9, 0.0, 1e-3, 0.0, 600);
        let cause = |prev: Option<&SimStats>| BlowUp::diagnose(prev, &bad, &params).expect("blow-up").cause;
        assert_eq!(cause(None), Cause::AtStart);
        assert_eq!(cause(Some(&record(8, 1.0, 1e-3, 0.0, 3))), Cause::AtStart, "non-finite before: from the start");
        // 3 h per step: too fast.
        match cause(Some(&record(8, 3.0 * h / 1e-3, 1e-3, 0.0, 0))) {
            Cause::TooFast { h_per_step, .. } => assert!((h_per_step - 3.0).abs() < 1e-3, "{h_per_step}"),
            c => panic!("expected TooFast, got {c:?}"),
        }
        // A NaN speed counts as too fast, not as fine.
        assert!(matches!(cause(Some(&record(8, f32::NAN, 1e-3, 0.0, 0))), Cause::TooFast { .. }));
        assert!(matches!(cause(Some(&record(8, 0.1 * h / 1e-3, 1e-3, 0.4, 0))), Cause::Unconverged { .. }));
        assert!(matches!(cause(Some(&record(8, 0.1 * h / 1e-3, 1e-3, 0.01, 0))), Cause::Sudden { .. }));
    }

    #[test]
    fn the_message_names_the_frame_the_count_and_the_cause() {
        let params = SimParams::default();
        let h = params.dx * params.h_over_dx;
        let b =
            BlowUp::diagnose(Some(&record(41, 2.5 * h / 1e-3, 1e-3, 0.0, 0)), &record(42, 0.0, 1e-3, 0.0, 17), &params)
                .expect("blow-up");
        let text = b.to_string();
        for part in ["frame 42", "17 of 1000 particles", "outran the time step", "2.5 smoothing lengths"] {
            assert!(text.contains(part), "`{part}` missing from: {text}");
        }
    }
}
