//! User-facing solver parameters (serde, units in the field docs) and their conversion into the GPU
//! uniform block `SimUniforms` (WGSL twin: `Params` in `shaders/sim/common.wgsl`).
//! Besides the solver they hold two optional physics features, both off by default: surface tension
//! after Akinci, Akinci & Teschner 2013 ([`SimParams::surface_tension`]) and a piston wave maker, a
//! moving wall replacing one side wall of the domain ([`WaveMaker`]).

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The pressure solver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    /// Divergence-free SPH (Bender & Koschier 2015/2017): a divergence solve and a constant-density solve
    /// with convergence tests kept on the GPU.
    #[default]
    Dfsph,
    /// Predictive-corrective incompressible SPH (Solenthaler & Pajarola 2009), fixed iteration count.
    Pcisph,
    /// Weakly compressible SPH with the Tait equation (Becker & Teschner 2007): stiff, needs small steps.
    Wcsph,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::Dfsph, Method::Pcisph, Method::Wcsph];

    pub fn name(self) -> &'static str {
        match self {
            Method::Dfsph => "DFSPH",
            Method::Pcisph => "PCISPH",
            Method::Wcsph => "WCSPH",
        }
    }

    /// The solver's code in `params.method` (`METHOD_DFSPH` etc. in shaders/sim/common.wgsl).
    pub fn code(self) -> u32 {
        match self {
            Method::Dfsph => 0,
            Method::Pcisph => 1,
            Method::Wcsph => 2,
        }
    }
}

/// Solver parameters. All SI units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimParams {
    /// The pressure solver; switching is live.
    pub method: Method,
    /// Initial particle spacing dx, metres. Particle mass is rho0 * dx^3.
    pub dx: f32,
    /// Smoothing length over spacing, h / dx. The Wendland kernel's support radius is 2h.
    pub h_over_dx: f32,
    /// Rest density rho0, kg/m^3.
    pub rho0: f32,
    /// Gravity, m/s^2.
    pub gravity: [f32; 3],
    /// Kinematic artificial viscosity nu, m^2/s (Monaghan-style, acts on approaching pairs only). The
    /// default 0.0005 (500 x water's) keeps the dam break of `waterview validate` within 3.3 % of Lobovsky
    /// et al. (2014); 0.002, the earlier default, slowed its surge to 7.4 % behind (docs/validation.md).
    pub viscosity: f32,
    /// XSPH velocity smoothing coefficient, dimensionless (0 = off, 0.5 = strong).
    pub xsph: f32,
    /// PCISPH: pressure iterations per step (fixed; nothing is read back to decide when to stop).
    pub solver_iterations: u32,
    /// DFSPH: most iterations of the constant-density solve per step (it stops earlier, on the GPU,
    /// once the mean density error is below the target).
    pub density_iterations: u32,
    /// DFSPH: target mean density error of the constant-density solve (0.0005 = 0.05 %: the measured
    /// mean error of the resting tank is then 0.07 %, see `DFSPH_BOUNDARY_FACTOR` and docs/validation.md).
    pub target_density_error: f32,
    /// DFSPH: target mean of dt * divergence for the divergence-free solve (0.001 = 0.1 % per step).
    pub target_divergence_error: f32,
    /// DFSPH: most iterations of the divergence-free solve.
    pub divergence_iterations: u32,
    /// WCSPH: numerical sound speed c, m/s (0 = automatic, 10 x the free-fall speed over the domain's height).
    pub sound_speed: f32,
    /// Fewest simulation steps per rendered frame: the longest step is `frame_dt / substeps`; a frame
    /// takes more where the CFL condition shortens the step ([`super::Simulation::frame_steps`]).
    pub substeps: u32,
    /// CFL number lambda: dt <= lambda * h / v_max.
    pub cfl: f32,
    /// Simulated time per rendered frame, seconds: `substeps` steps or more, as many as cover it (at most
    /// `frame_steps::MAX_FRAME_STEPS`, and in the window as many as fit its frame budget).
    pub frame_dt: f32,
    /// Wall friction: the skin-friction coefficient C_f (dimensionless, 0..1) of the terrain, walls and
    /// obstacles. A particle in contact is slowed by the wall shear stress tau = rho0 (C_f / 2) |v_t|^2 over
    /// its footprint dx^2 (integrate.wgsl, `apply_contact`), so the momentum a wall takes per unit of area
    /// does not depend on dx. 0.01 is a turbulent boundary layer on a smooth bed; rough terrain is 0.01-0.05.
    pub friction: f32,
    /// Surface tension coefficient gamma of Akinci, Akinci & Teschner 2013, "Versatile surface tension
    /// and adhesion for SPH fluids" (ACM TOG 32(6)), eq. 1-3: particle i accelerates by
    /// `-gamma sum_j K_ij (m_j C(r_ij) x_ij / r_ij + (n_i - n_j))`, the cohesion spline C (1/m^3) and the
    /// curvature term from the surface normals `n_i = R sum_j m_j / rho_j grad W_ij` (dimensionless, R
    /// = the support radius 2h), symmetrised by `K_ij = 2 rho0 / (rho_i + rho_j)`. Units as in the paper:
    /// m^4 / (kg s^2) for the cohesion term (the curvature term takes the same number with dimensionless
    /// normals, so it reads as m/s^2). 0 = off (the shaders skip the work); 0.05 .. 1 pulls a blob of
    /// water round within a fraction of a second, independently of dx.
    pub surface_tension: f32,
    /// A piston wave maker: a moving wall replacing the domain's min wall along x or z; `None` = off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wave_maker: Option<WaveMaker>,
    /// Diffuse particles (spray, foam, bubbles; Ihmsen et al. 2012): on by default, live.
    pub diffuse: super::DiffuseParams,
}

/// Axis a [`WaveMaker`]'s paddle moves along (its wall is normal to it and replaces the domain's min wall
/// on that axis).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WaveAxis {
    /// The paddle is the plane x = const, replacing the wall x = domain.min.x.
    #[default]
    X,
    /// The paddle is the plane z = const, replacing the wall z = domain.min.z.
    Z,
}

impl WaveAxis {
    /// Both axes, for the UI.
    pub const ALL: [WaveAxis; 2] = [WaveAxis::X, WaveAxis::Z];

    /// Index of the axis in a position vector (x = 0, z = 2).
    pub fn index(self) -> usize {
        match self {
            WaveAxis::X => 0,
            WaveAxis::Z => 2,
        }
    }

    /// "x" or "z".
    pub fn name(self) -> &'static str {
        match self {
            WaveAxis::X => "x",
            WaveAxis::Z => "z",
        }
    }
}

/// A piston-type wave maker (the paddle of a wave flume, as in the thesis this project follows, Werner
/// 2015; piston wave-maker theory: Dean & Dalrymple 1991, ch. 6): a plane wall normal to `axis` at
/// `rest + amplitude * sin(2 pi t / period_s)` metres from the domain's min wall, t the simulated time in
/// seconds. It replaces that side wall while active: it contributes boundary density and pressure like a
/// fixed wall (the half-space integral of `shaders/sim/common.wgsl`) and is a hard constraint (particles
/// behind it are put in front with at least its velocity). Particles of the scene's fluid blocks behind its
/// rest position are not created.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaveMaker {
    /// Axis the paddle moves along.
    pub axis: WaveAxis,
    /// Mean distance of the paddle from the domain's min wall along `axis`, metres (>= `amplitude`).
    pub rest: f32,
    /// Amplitude of the paddle's motion, metres (half the stroke); 0 makes a fixed wall at `rest`.
    pub amplitude: f32,
    /// Period of the motion, seconds.
    pub period_s: f32,
}

impl Default for WaveMaker {
    fn default() -> Self {
        Self { axis: WaveAxis::X, rest: 0.1, amplitude: 0.05, period_s: 1.5 }
    }
}

impl WaveMaker {
    /// Angular frequency 2 pi / period, rad/s.
    pub fn omega(&self) -> f32 {
        std::f32::consts::TAU / self.period_s
    }

    /// Distance of the paddle from the domain's min wall at simulated time `t` (seconds), metres.
    pub fn offset_at(&self, t: f32) -> f32 {
        self.rest + self.amplitude * (self.omega() * t).sin()
    }

    /// Peak speed of the paddle, m/s: `2 pi amplitude / period_s`.
    pub fn peak_speed(&self) -> f32 {
        self.amplitude * self.omega()
    }

    /// Checks the ranges that need no domain (see [`WaveMaker::validate_in`] for the rest): `rest` in
    /// 0 ..= 1e4 m, `amplitude` in 0 ..= `rest`, `period_s` in 0.05 ..= 1000 s and the paddle's peak speed
    /// at most [`MAX_SPEED`].
    pub fn validate(&self) -> Result<(), ParamError> {
        let w = self;
        check_f32("wave_maker.rest", w.rest, (0.0..=1e4).contains(&w.rest), "0 ..= 1e4 m from the domain's min wall")?;
        check_f32(
            "wave_maker.amplitude",
            w.amplitude,
            w.amplitude >= 0.0 && w.amplitude <= w.rest,
            "0 ..= rest m (the paddle never passes the domain's min wall)",
        )?;
        check_f32("wave_maker.period_s", w.period_s, (0.05..=1000.0).contains(&w.period_s), "0.05 ..= 1000 s")?;
        check_f32(
            "wave_maker peak speed 2 pi amplitude / period_s",
            w.peak_speed(),
            w.peak_speed() <= MAX_SPEED,
            MAX_SPEED_RANGE,
        )
    }

    /// [`WaveMaker::validate`], and the paddle's farthest position must leave at least a quarter of the
    /// domain's length along its axis in front of it.
    pub fn validate_in(&self, domain_min: [f32; 3], domain_max: [f32; 3]) -> Result<(), ParamError> {
        self.validate()?;
        let a = self.axis.index();
        let len = domain_max[a] - domain_min[a];
        let reach = self.rest + self.amplitude;
        check_f32(
            "wave_maker.rest + amplitude",
            reach,
            reach <= 0.75 * len,
            "rest + amplitude <= 3/4 of the domain's length along the paddle's axis",
        )
    }
}

impl Default for SimParams {
    fn default() -> Self {
        Self {
            method: Method::default(),
            target_density_error: 0.0005,
            target_divergence_error: 0.001,
            divergence_iterations: 20,
            sound_speed: 0.0,
            dx: 0.1,
            h_over_dx: 1.2,
            rho0: 1000.0,
            gravity: [0.0, -9.81, 0.0],
            viscosity: 0.0005,
            xsph: 0.05,
            solver_iterations: 4,
            density_iterations: 50,
            substeps: 4,
            cfl: 0.4,
            frame_dt: 1.0 / 60.0,
            friction: 0.01,
            surface_tension: 0.0,
            wave_maker: None,
            diffuse: super::DiffuseParams::default(),
        }
    }
}

/// A parameter outside its valid range; the message names the field, its value (as written: an `f32`
/// in its shortest round-trip form, "-0.025") and the range.
#[derive(Debug, Error, PartialEq)]
#[error("solver parameter `{field}` = {value} is out of range: {range}")]
pub struct ParamError {
    pub field: &'static str,
    pub value: String,
    pub range: &'static str,
}

/// Fastest speed accepted for initial and inflow water and for moving walls, m/s (block and emitter
/// velocities, the wave maker's paddle). Water at 100 m/s is a Mach 0.07 jet (sound runs at 1 480 m/s in
/// water), near the edge of what a weakly compressible or incompressible SPH model describes; faster
/// blocks blow up at the first wall they meet (a 0.5 m block at 400 m/s in a 2 m box reached 52 000 m/s
/// within 40 steps at dx = 0.05 m on lavapipe, at 1 000 m/s every particle was non-finite after one frame;
/// at 100 m/s it ran on, finite).
pub const MAX_SPEED: f32 = 100.0;

/// [`MAX_SPEED`] as a range for messages.
pub const MAX_SPEED_RANGE: &str = "at most 100 m/s";

/// Largest gravity accepted, m/s^2 (magnitude; about 100 g).
pub const MAX_GRAVITY: f32 = 1000.0;

/// Lightest and heaviest rest density accepted, kg/m^3 (air is 1.2, water 1 000, mercury 13 600). Much
/// lighter fluids make the particle mass and the pressure terms p / rho^2 leave f32's range: at rho0 =
/// 1e-30 every particle was non-finite after one frame.
pub const RHO0_RANGE: (f32, f32) = (1.0, 1e5);

/// Why [`SimParams::set_field`] refused a field or its value; the message names the field.
#[derive(Debug, Error, PartialEq)]
pub enum FieldError {
    #[error("`{name}` = `{value}` is not a number of the field's type")]
    NotANumber { name: String, value: String },
    #[error("`method` = `{0}`: expected dfsph, pcisph or wcsph")]
    Method(String),
    #[error("unknown solver field `{name}`: expected one of {}", SimParams::SCALAR_FIELDS.join(", "))]
    Unknown { name: String },
}

/// `value` for a message, in its shortest round-trip form: `{}` ("-0.025", "1000", "NaN", "inf"), or
/// `{:e}` below 1e-4 or from 1e7 on ("1e-30", "1e12"), where `{}` would write dozens of zeros.
pub fn fmt_f32(value: f32) -> String {
    let a = value.abs();
    if a.is_finite() && a != 0.0 && !(1e-4..1e7).contains(&a) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

/// `Ok` when `ok` holds and `value` is finite; else the error naming `field`, `value` and `range`.
fn check_f32(field: &'static str, value: f32, ok: bool, range: &'static str) -> Result<(), ParamError> {
    if ok && value.is_finite() {
        Ok(())
    } else {
        Err(ParamError { field, value: fmt_f32(value), range })
    }
}

/// `Ok` when `ok` holds; else the error naming `field`, `value` and `range`.
fn check_u32(field: &'static str, value: u32, ok: bool, range: &'static str) -> Result<(), ParamError> {
    if ok {
        Ok(())
    } else {
        Err(ParamError { field, value: value.to_string(), range })
    }
}

impl SimParams {
    /// True when going from `self` to `other` needs a new simulation (new buffers and particles): dx,
    /// h_over_dx or rho0 differ. Every other field applies live ([`super::Simulation::set_params`]).
    /// The one place this rule lives.
    pub fn needs_rebuild(&self, other: &SimParams) -> bool {
        self.dx != other.dx || self.h_over_dx != other.h_over_dx || self.rho0 != other.rho0
    }

    /// Smoothing length h, metres.
    pub fn h(&self) -> f32 {
        self.h_over_dx * self.dx
    }

    /// Kernel support radius 2h, metres (also the neighbour grid's cell size).
    pub fn support(&self) -> f32 {
        2.0 * self.h()
    }

    /// Particle mass m = rho0 dx^3, kg.
    pub fn mass(&self) -> f32 {
        self.rho0 * self.dx.powi(3)
    }

    /// Longest substep, seconds: frame_dt / substeps (the CFL condition may shorten it on the GPU).
    pub fn max_dt(&self) -> f32 {
        self.frame_dt / self.substeps as f32
    }

    /// Sets one scalar field by its scene-file name from text (`viscosity` = `0.0005`, `method` =
    /// `dfsph`), for command-line overrides such as `waterview validate --set`. The value is range-checked
    /// with the rest by [`SimParams::validate`], not here.
    /// Errors: an unknown or non-scalar field (the message lists the scalar ones), or a value that does not
    /// parse as the field's type.
    pub fn set_field(&mut self, name: &str, value: &str) -> Result<(), FieldError> {
        fn parse<T: std::str::FromStr>(name: &str, value: &str, slot: &mut T) -> Result<(), FieldError> {
            *slot = value
                .trim()
                .parse()
                .map_err(|_| FieldError::NotANumber { name: name.to_string(), value: value.to_string() })?;
            Ok(())
        }
        match name.trim() {
            "method" => {
                let v = value.trim().to_ascii_lowercase();
                self.method = *Method::ALL
                    .iter()
                    .find(|m| m.name().to_ascii_lowercase() == v)
                    .ok_or_else(|| FieldError::Method(value.to_string()))?;
                Ok(())
            }
            "dx" => parse(name, value, &mut self.dx),
            "h_over_dx" => parse(name, value, &mut self.h_over_dx),
            "rho0" => parse(name, value, &mut self.rho0),
            "viscosity" => parse(name, value, &mut self.viscosity),
            "xsph" => parse(name, value, &mut self.xsph),
            "solver_iterations" => parse(name, value, &mut self.solver_iterations),
            "density_iterations" => parse(name, value, &mut self.density_iterations),
            "target_density_error" => parse(name, value, &mut self.target_density_error),
            "target_divergence_error" => parse(name, value, &mut self.target_divergence_error),
            "divergence_iterations" => parse(name, value, &mut self.divergence_iterations),
            "sound_speed" => parse(name, value, &mut self.sound_speed),
            "substeps" => parse(name, value, &mut self.substeps),
            "cfl" => parse(name, value, &mut self.cfl),
            "frame_dt" => parse(name, value, &mut self.frame_dt),
            "friction" => parse(name, value, &mut self.friction),
            "surface_tension" => parse(name, value, &mut self.surface_tension),
            other => Err(FieldError::Unknown { name: other.to_string() }),
        }
    }

    /// The fields [`SimParams::set_field`] accepts.
    pub const SCALAR_FIELDS: [&'static str; 17] = [
        "method",
        "dx",
        "h_over_dx",
        "rho0",
        "viscosity",
        "xsph",
        "solver_iterations",
        "density_iterations",
        "target_density_error",
        "target_divergence_error",
        "divergence_iterations",
        "sound_speed",
        "substeps",
        "cfl",
        "frame_dt",
        "friction",
        "surface_tension",
    ];

    /// Checks every field against its range (the ranges of README.md, "Scene files"); the error names
    /// the first field out of range.
    pub fn validate(&self) -> Result<(), ParamError> {
        let p = self;
        check_f32("dx", p.dx, p.dx > 1e-4 && p.dx <= 100.0, "1e-4 < dx <= 100 m")?;
        check_f32("h_over_dx", p.h_over_dx, (0.8..=3.0).contains(&p.h_over_dx), "0.8 ..= 3.0")?;
        let (lo, hi) = RHO0_RANGE;
        check_f32("rho0", p.rho0, (lo..=hi).contains(&p.rho0), "1 ..= 1e5 kg/m^3")?;
        for g in p.gravity {
            check_f32("gravity", g, g.is_finite(), "finite components, m/s^2")?;
        }
        let g = glam::Vec3::from(p.gravity).length();
        check_f32("gravity (magnitude)", g, g <= MAX_GRAVITY, "at most 1000 m/s^2")?;
        check_f32("viscosity", p.viscosity, (0.0..=10.0).contains(&p.viscosity), "0 ..= 10 m^2/s")?;
        check_f32("xsph", p.xsph, (0.0..=1.0).contains(&p.xsph), "0 ..= 1")?;
        check_u32("solver_iterations", p.solver_iterations, (1..=100).contains(&p.solver_iterations), "1 ..= 100")?;
        let e = p.target_density_error;
        check_f32("target_density_error", e, e > 0.0 && e <= 0.1, "0 < error <= 0.1")?;
        let e = p.target_divergence_error;
        check_f32("target_divergence_error", e, e > 0.0 && e <= 0.1, "0 < error <= 0.1")?;
        check_u32("density_iterations", p.density_iterations, (1..=200).contains(&p.density_iterations), "1 ..= 200")?;
        let n = p.divergence_iterations;
        check_u32("divergence_iterations", n, (1..=200).contains(&n), "1 ..= 200")?;
        let c = p.sound_speed;
        check_f32("sound_speed", c, (0.0..=10_000.0).contains(&c), "0 (auto) ..= 10000 m/s")?;
        check_u32("substeps", p.substeps, (1..=64).contains(&p.substeps), "1 ..= 64")?;
        check_f32("cfl", p.cfl, p.cfl > 0.0 && p.cfl <= 1.0, "0 < cfl <= 1")?;
        check_f32("frame_dt", p.frame_dt, p.frame_dt > 0.0 && p.frame_dt <= 0.5, "0 < frame_dt <= 0.5 s")?;
        check_f32("friction", p.friction, (0.0..=1.0).contains(&p.friction), "0 ..= 1")?;
        let st = p.surface_tension;
        check_f32("surface_tension", st, (0.0..=10.0).contains(&st), "0 (off) ..= 10 (Akinci et al. 2013's gamma)")?;
        if let Some(w) = &p.wave_maker {
            w.validate()?;
        }
        p.diffuse.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_field_parses_by_scene_name_and_rejects_the_rest() {
        let mut p = SimParams::default();
        p.set_field("viscosity", "0.0005").unwrap();
        p.set_field(" density_iterations ", " 80 ").unwrap();
        p.set_field("method", "WCSPH").unwrap();
        assert_eq!((p.viscosity, p.density_iterations, p.method), (0.0005, 80, Method::Wcsph));
        assert!(p.set_field("viscosity", "thick").unwrap_err().to_string().contains("`viscosity`"));
        assert!(p.set_field("density_iterations", "2.5").is_err());
        let unknown = p.set_field("visocsity", "1").unwrap_err().to_string();
        assert!(unknown.contains("visocsity") && unknown.contains("xsph"), "{unknown}");
        // Every listed field is settable.
        for f in SimParams::SCALAR_FIELDS {
            let v = if f == "method" { "dfsph" } else { "1" };
            SimParams::default().set_field(f, v).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
    }

    /// The error of `params.validate()`, which must fail.
    fn refused(params: SimParams) -> ParamError {
        params.validate().expect_err("out of range")
    }

    #[test]
    fn values_print_as_written_not_widened_to_f64() {
        let e = refused(SimParams { dx: -0.025, ..SimParams::default() });
        assert_eq!(e.to_string(), "solver parameter `dx` = -0.025 is out of range: 1e-4 < dx <= 100 m");
        let e = refused(SimParams { viscosity: 10.1, ..SimParams::default() });
        assert!(e.to_string().contains("`viscosity` = 10.1 "), "{e}");
        let e = refused(SimParams { substeps: 0, ..SimParams::default() });
        assert!(e.to_string().contains("`substeps` = 0 "), "{e}");
        let e = refused(SimParams { rho0: 1e-30, ..SimParams::default() });
        assert!(e.to_string().contains("`rho0` = 1e-30 "), "{e}");
        assert_eq!(
            [1e12, -2.5e-7, 0.0, 1e-4, f32::NAN, f32::INFINITY].map(fmt_f32),
            ["1e12", "-2.5e-7", "0", "0.0001", "NaN", "inf"]
        );
    }

    #[test]
    fn rho0_has_a_lower_bound() {
        for rho0 in [1e-30, 0.5, f32::NAN, 2e5] {
            assert_eq!(refused(SimParams { rho0, ..SimParams::default() }).field, "rho0", "rho0 = {rho0}");
        }
        for rho0 in [1.0, 1000.0, 13_600.0, 1e5] {
            SimParams { rho0, ..SimParams::default() }.validate().unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn gravity_is_bounded_by_its_magnitude() {
        // Each component under 1000 m/s^2, the vector over it.
        let e = refused(SimParams { gravity: [800.0, -800.0, 0.0], ..SimParams::default() });
        assert_eq!(e.field, "gravity (magnitude)");
        assert!(e.to_string().contains("1131.3"), "{e}");
        let e = refused(SimParams { gravity: [0.0, f32::INFINITY, 0.0], ..SimParams::default() });
        assert_eq!(e.field, "gravity");
        SimParams { gravity: [0.0, -1000.0, 0.0], ..SimParams::default() }.validate().expect("1000 m/s^2 is allowed");
    }

    #[test]
    fn the_wave_makers_paddle_speed_is_bounded() {
        // 2 pi 2 m / 0.1 s = 126 m/s.
        let fast = WaveMaker { axis: WaveAxis::X, rest: 2.0, amplitude: 2.0, period_s: 0.1 };
        let e = fast.validate().expect_err("too fast");
        assert!(e.field.contains("peak speed") && e.to_string().contains("100 m/s"), "{e}");
        let slow = WaveMaker { period_s: 0.2, ..fast };
        slow.validate().expect("63 m/s is allowed");
        assert!((slow.peak_speed() - 62.83).abs() < 0.01);
    }
}
