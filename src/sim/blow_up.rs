//! A blow-up: the first statistics record whose water has left physics, and its likely cause. Water
//! leaves physics long before it is NaN (a deficient neighbourhood kicked particles to 162 000 m/s with
//! every value finite), so a record is a blow-up when
//! - a particle is not finite (the GPU counts them in every record, `shaders/sim/stats.wgsl`);
//! - the fastest particle is faster than the scene allows ([`Bounds::speed`]: ten times the free-fall
//!   speed over the scene's height range, plus the fastest speed its sources give the water);
//! - the CFL step would be below its floor of 1e-3 of `frame_dt / substeps`: the fastest particle (plus the
//!   sound speed under WCSPH) crosses more than `cfl` smoothing lengths per floor step;
//! - the kinetic energy is more than the water can have gained: twice its mass times what a kilogram gains
//!   falling the scene's height range plus the sources' kinetic energy ([`Bounds::energy_per_kg`]).
//!
//! Nothing here reads the particles back: the record carries the fastest particle's position. The likely
//! cause of a non-finite record is read off the record before it, the ways an SPH step fails (Monaghan
//! 1992, "Smoothed particle hydrodynamics", ARA&A 30, section 10; Bender & Koschier 2017,
//! "Divergence-free SPH", section 4.4): particles moving more than a smoothing length per step, a pressure
//! solve that stopped far from its target, or a state that was not finite to begin with.

use super::{Method, SimParams, SimStats};
use std::fmt;

/// Density error (relative) past which an unconverged pressure solve is named as the likely cause.
const UNCONVERGED_DENSITY_ERROR: f32 = 0.1;

/// The time step's floor as a fraction of `frame_dt / substeps` (`time_step.wgsl`).
const DT_FLOOR: f32 = 1e-3;

/// What the water of a scene can physically do: the bounds a blow-up breaks. From the scene's height range
/// and the speeds its sources give the water ([`Bounds::new`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Fastest speed a particle may reach, m/s: 10 sqrt(2 g H) + the sources' fastest speed.
    pub speed: f32,
    /// Most kinetic energy per kilogram of water on average, J/kg: 2 (g H + v_s^2 / 2).
    pub energy_per_kg: f32,
    /// Speed at which the CFL step reaches its floor, m/s (the sound speed taken off under WCSPH).
    pub floor_speed: f32,
    /// Particle mass, kg.
    pub mass: f32,
}

impl Bounds {
    /// The bounds of a scene under `params`: `height` (m) is its height range (the domain's top over its
    /// lowest ground: no water falls farther), `source_speed` (m/s) the fastest speed its water is given
    /// (initial velocities, emitters, a wave maker's paddle), `sound_speed` WCSPH's c (m/s) and `mass` the
    /// particle mass (kg).
    pub fn new(params: &SimParams, height: f32, source_speed: f32, sound_speed: f32, mass: f32) -> Self {
        let g = glam::Vec3::from(params.gravity).length();
        let fall = (2.0 * g * height.max(0.0)).sqrt();
        let wave = params.wave_maker.map_or(0.0, |w| w.peak_speed());
        let vs = source_speed.max(wave);
        let signal = if params.method == Method::Wcsph { sound_speed } else { 0.0 };
        Self {
            speed: 10.0 * fall + vs,
            energy_per_kg: 2.0 * (g * height.max(0.0) + 0.5 * vs * vs),
            floor_speed: params.cfl * params.h() / (DT_FLOOR * params.max_dt()) - signal,
            mass,
        }
    }
}

/// The first frame whose water left physics, and why that is likely.
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
    /// The fastest particle of the record: its position (m) and speed (m/s).
    pub worst: ([f32; 3], f32),
    /// What showed it, and the likely cause.
    pub cause: Cause,
}

/// How the water left physics, or why it likely blew up.
#[derive(Clone, Debug, PartialEq)]
pub enum Cause {
    /// Non-finite in the first record: the initial state or the parameters cannot be stepped.
    AtStart,
    /// Non-finite after a record whose fastest particle moved `h_per_step` smoothing lengths in one step
    /// (more than one breaks the CFL condition the time step is built on). Speeds in m/s, dt in seconds.
    TooFast { max_speed: f32, dt: f32, h_per_step: f32 },
    /// Non-finite after a record whose pressure solve ended far from its target (DFSPH: `iterations` of
    /// `max_iterations`); the density error is relative (0.1 = 10 %).
    Unconverged { max_density_error: f32, iterations: u32, max_iterations: u32 },
    /// Non-finite with none of the above in the previous record (fastest particle in m/s).
    Sudden { max_speed: f32 },
    /// Finite, but the fastest particle moves faster than the scene allows (m/s).
    SpeedBound { max_speed: f32, bound: f32 },
    /// Finite, but the CFL step would be below its floor: the fastest particle at `max_speed` m/s, the
    /// floor reached from `floor_speed` m/s on.
    TimeStepFloor { max_speed: f32, floor_speed: f32 },
    /// Finite, but the kinetic energy (J) is more than the water can have gained (J).
    EnergyBound { kinetic: f32, bound: f32 },
}

impl BlowUp {
    /// The blow-up in `now`, if its water left physics under `bounds`: non-finite particles (the likely
    /// cause read off `previous`, the record of an earlier frame of the same run, `None` for the first,
    /// under `params`), or finite water past a bound.
    pub fn diagnose(
        previous: Option<&SimStats>,
        now: &SimStats,
        params: &SimParams,
        bounds: &Bounds,
    ) -> Option<BlowUp> {
        let cause = if now.non_finite > 0 {
            Self::non_finite_cause(previous, params)
        } else if now.max_speed > bounds.speed {
            Cause::SpeedBound { max_speed: now.max_speed, bound: bounds.speed }
        } else if now.max_speed > bounds.floor_speed {
            Cause::TimeStepFloor { max_speed: now.max_speed, floor_speed: bounds.floor_speed }
        } else {
            let bound = bounds.energy_per_kg * bounds.mass * now.particle_count as f32;
            if now.kinetic_energy > bound && now.particle_count > 0 {
                Cause::EnergyBound { kinetic: now.kinetic_energy, bound }
            } else {
                return None;
            }
        };
        Some(BlowUp {
            frame: now.frame,
            time: now.time,
            non_finite: now.non_finite,
            particles: now.particle_count,
            worst: (now.fastest, now.max_speed),
            cause,
        })
    }

    fn non_finite_cause(previous: Option<&SimStats>, params: &SimParams) -> Cause {
        match previous {
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
        }
    }

    /// True when particles went non-finite (else the water left physics while finite).
    pub fn is_non_finite(&self) -> bool {
        self.non_finite > 0
    }
}

impl fmt::Display for BlowUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the simulation blew up at frame {} (t = {} s): ", self.frame, self.time)?;
        let ([x, y, z], speed) = self.worst;
        let at = format!("the fastest particle at ({x:.3}, {y:.3}, {z:.3}) m");
        match &self.cause {
            Cause::SpeedBound { max_speed, bound } => {
                return write!(
                    f,
                    "{at} moves at {max_speed} m/s, more than the {bound:.1} m/s this scene allows (ten times the \
                     free-fall speed over its height range plus its sources' speed); likely cause: a deficient \
                     neighbourhood (particles packed or coincident) or an unstable time step (lower the CFL \
                     number or Frame dt)"
                );
            }
            Cause::TimeStepFloor { max_speed, floor_speed } => {
                return write!(
                    f,
                    "{at} moves at {max_speed} m/s: the time step is at its floor (from {floor_speed:.0} m/s on) \
                     and the water no longer advances; likely cause: particles packed denser than rest (an \
                     inflow faster than its disc carries, coincident particles)"
                );
            }
            Cause::EnergyBound { kinetic, bound } => {
                return write!(
                    f,
                    "the kinetic energy is {kinetic:.4e} J, more than the {bound:.4e} J the water can have gained \
                     from gravity and its sources ({at} moves at {speed} m/s); likely cause: a deficient \
                     neighbourhood or an unstable time step"
                );
            }
            _ => {}
        }
        write!(f, "{} of {} particles are not finite; ", self.non_finite, self.particles)?;
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
            _ => Ok(()),
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
            fastest: [0.5, 0.25, 0.125],
            ..SimStats::default()
        }
    }

    /// A 1 m high scene at rest, no sources: free fall 4.43 m/s, so 44.3 m/s at most.
    fn bounds(params: &SimParams) -> Bounds {
        Bounds::new(params, 1.0, 0.0, 0.0, params.mass())
    }

    #[test]
    fn finite_records_within_the_bounds_are_no_blow_up() {
        let params = SimParams::default();
        let b = bounds(&params);
        assert!((b.speed - 10.0 * (2.0f32 * 9.81).sqrt()).abs() < 1e-3, "{b:?}");
        assert_eq!(BlowUp::diagnose(None, &record(1, 1.0, 1e-3, 0.01, 0), &params, &b), None);
        assert_eq!(BlowUp::diagnose(None, &record(1, 44.0, 1e-3, 0.01, 0), &params, &b), None);
    }

    #[test]
    fn the_cause_is_read_off_the_record_before() {
        let params = SimParams::default();
        let b = bounds(&params);
        let h = params.dx * params.h_over_dx;
        let bad = record(9, 0.0, 1e-3, 0.0, 600);
        let cause = |prev: Option<&SimStats>| BlowUp::diagnose(prev, &bad, &params, &b).expect("blow-up").cause;
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

    /// Finite water past a bound is a blow-up: a speed past ten times free fall (the sources' speed added),
    /// a speed that puts the CFL step on its floor, or more kinetic energy than the water can have gained.
    #[test]
    fn finite_water_that_leaves_physics_is_a_blow_up() {
        let params = SimParams::default();
        let b = bounds(&params);
        let fast = record(3, 162_025.0, 4e-6, 0.5, 0);
        let blown = BlowUp::diagnose(None, &fast, &params, &b).expect("162 025 m/s is a blow-up");
        assert!(matches!(blown.cause, Cause::SpeedBound { .. }), "{blown:?}");
        assert_eq!(blown.worst, ([0.5, 0.25, 0.125], 162_025.0));
        // With a 2 m/s inflow the bound grows by 2 m/s.
        let with_source = Bounds::new(&params, 1.0, 2.0, 0.0, params.mass());
        assert!((with_source.speed - b.speed - 2.0).abs() < 1e-3);
        // The floor: cfl h / (1e-3 max_dt), 0.4 * 0.12 / 4.17e-6 = 11 520 m/s; with a bound above it.
        let tall = Bounds::new(&params, 1e6, 0.0, 0.0, params.mass());
        let at_floor = record(3, 12_000.0, 4.17e-6, 0.0, 0);
        let cause = BlowUp::diagnose(None, &at_floor, &params, &tall).expect("at the floor").cause;
        assert!(matches!(cause, Cause::TimeStepFloor { .. }), "{cause:?}");
        // Energy: 1000 particles of 1 kg at 1 m: at most 2 * 9.81 J/kg * 1000 kg.
        let unit = Bounds::new(&params, 1.0, 0.0, 0.0, 1.0);
        let hot = SimStats { kinetic_energy: 20_000.0, ..record(3, 5.0, 1e-3, 0.0, 0) };
        let cause = BlowUp::diagnose(None, &hot, &params, &unit).expect("too much energy").cause;
        assert!(matches!(cause, Cause::EnergyBound { .. }), "{cause:?}");
        let warm = SimStats { kinetic_energy: 19_000.0, ..hot.clone() };
        assert_eq!(BlowUp::diagnose(None, &warm, &params, &unit), None);
    }

    #[test]
    fn the_message_names_the_frame_the_count_and_the_cause() {
        let params = SimParams::default();
        let b = bounds(&params);
        let h = params.dx * params.h_over_dx;
        let prev = record(41, 2.5 * h / 1e-3, 1e-3, 0.0, 0);
        let text =
            BlowUp::diagnose(Some(&prev), &record(42, 0.0, 1e-3, 0.0, 17), &params, &b).expect("blow-up").to_string();
        for part in ["frame 42", "17 of 1000 particles", "outran the time step", "2.5 smoothing lengths"] {
            assert!(text.contains(part), "`{part}` missing from: {text}");
        }
        let text = BlowUp::diagnose(None, &record(3, 1000.0, 1e-3, 0.0, 0), &params, &b).expect("fast").to_string();
        for part in ["frame 3", "(0.500, 0.250, 0.125)", "1000 m/s", "44.3 m/s this scene allows"] {
            assert!(text.contains(part), "`{part}` missing from: {text}");
        }
    }
}
