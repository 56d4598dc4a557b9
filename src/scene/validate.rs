//! Checking a scene before anything is built, in one place: every field of the domain, the fluid
//! blocks, the emitters and sinks, the terrain, the camera and the solver against its range
//! ([`Scene::validate`]), and the emitters and sinks alone against a domain and a spacing
//! ([`check_sources`]: the engine's and the simulation's `set_sources` use it for sources edited live).
//! The ranges are those of README.md ("Scene files"). Some depend on the spacing dx: an emitter's layer
//! and flow (the emitters' pool holds at most [`sources::MAX_POOL`] particles), and how far from the
//! origin the domain may lie (f32 positions). An error names the item ("emitter 2", 1-based as in the
//! Scene panel), the field and its value as written (f32 in its shortest round-trip form).

pub use super::invalid::{tuple, InvalidValue};
use super::{Aabb, Emitter, Scene, SceneError, Sink};
use crate::sim::params::{fmt_f32, MAX_SPEED, MAX_SPEED_RANGE};
use crate::sim::sources::{self, MAX_LAYER_POINTS, MAX_POOL, MAX_SOURCES};
use glam::Vec3;

/// How far from the origin a domain may reach, in particle spacings: f32 positions there still resolve
/// dx / 128 (2^16 dx: an f32 of magnitude below 2^16 dx has a spacing of at most 2^-7 dx).
pub const MAX_DOMAIN_REACH_DX: f32 = 65_536.0;

/// `Err` naming `item` and `field` when a component of `v` is not finite.
fn finite(item: &str, field: &'static str, v: &[f32]) -> Result<(), InvalidValue> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(InvalidValue::new(item, field, tuple(v), "must be finite"))
    }
}

/// A box's `min` and `max`: finite, and `min < max` on every axis.
fn check_box(item: &str, min: &[f32; 3], max: &[f32; 3]) -> Result<(), InvalidValue> {
    finite(item, "min", min)?;
    finite(item, "max", max)?;
    match (0..3).find(|&a| min[a] >= max[a]) {
        Some(a) => Err(InvalidValue::new(
            item,
            "max",
            tuple(max),
            format!("must be above min {} on every axis (fails along {})", tuple(min), ["x", "y", "z"][a]),
        )),
        None => Ok(()),
    }
}

/// A velocity: finite and at most [`MAX_SPEED`].
fn check_speed(item: &str, velocity: &[f32; 3]) -> Result<(), InvalidValue> {
    finite(item, "velocity", velocity)?;
    // In f64: (1e30, 0, 0) is finite, its f32 length squared is not.
    let speed = velocity.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt() as f32;
    if speed > MAX_SPEED {
        return Err(InvalidValue::new(
            item,
            "velocity",
            tuple(velocity),
            format!("is too fast: {} m/s, {MAX_SPEED_RANGE}", fmt_f32(speed)),
        ));
    }
    Ok(())
}

/// The domain: a finite box, `min < max`, within [`MAX_DOMAIN_REACH_DX`] spacings `dx` of the origin.
pub fn check_domain(d: &Aabb, dx: f32) -> Result<(), InvalidValue> {
    check_box("domain", &d.min, &d.max)?;
    let reach = d.min.iter().chain(&d.max).fold(0.0f32, |m, v| m.max(v.abs()));
    let limit = MAX_DOMAIN_REACH_DX * dx;
    if reach > limit {
        let field = if d.min.iter().any(|v| v.abs() == reach) { "min" } else { "max" };
        let value = if field == "min" { tuple(&d.min) } else { tuple(&d.max) };
        return Err(InvalidValue::new(
            "domain",
            field,
            value,
            format!(
                "reaches {reach} m from the origin, more than 65536 dx = {limit} m at dx = {dx} m (f32 positions \
                 there are coarser than dx / 128); move the domain toward the origin or raise dx"
            ),
        ));
    }
    Ok(())
}

/// Emitter `k` (0-based; named `k + 1`) in `domain` at spacing `dx`: its centre finite and inside the
/// domain, its radius > 0 and at most half the domain's longest side with at most [`MAX_LAYER_POINTS`]
/// particles per layer, its velocity non-zero and at most [`MAX_SPEED`], its rate in 0 ..=
/// [`sources::max_rate`].
pub fn check_emitter(k: usize, e: &Emitter, domain: &Aabb, dx: f32) -> Result<(), InvalidValue> {
    let item = format!("emitter {}", k + 1);
    let item = item.as_str();
    finite(item, "center", &e.center)?;
    if (0..3).any(|a| e.center[a] < domain.min[a] || e.center[a] > domain.max[a]) {
        return Err(InvalidValue::new(
            item,
            "center",
            tuple(&e.center),
            format!("is outside the domain {} .. {}", tuple(&domain.min), tuple(&domain.max)),
        ));
    }
    let r = e.radius;
    if !(r.is_finite() && r > 0.0) {
        return Err(InvalidValue::new(item, "radius", fmt_f32(r), "must be > 0 m and finite"));
    }
    let longest = (0..3).map(|a| domain.max[a] - domain.min[a]).fold(0.0f32, f32::max);
    if r > 0.5 * longest {
        return Err(InvalidValue::new(
            item,
            "radius",
            fmt_f32(r),
            format!("is more than half the domain's longest side ({longest} m): the disc does not fit the domain"),
        ));
    }
    let layer = sources::layer_points(r, dx);
    if layer > MAX_LAYER_POINTS {
        // Three significant digits, rounded down (28.8865 -> 28.8).
        let most = (MAX_LAYER_POINTS as f64 / std::f64::consts::PI).sqrt() * dx as f64;
        let unit = 10f64.powf(most.log10().floor() - 2.0);
        let most = ((most / unit).floor() * unit) as f32;
        return Err(InvalidValue::new(
            item,
            "radius",
            fmt_f32(r),
            format!(
                "makes layers of {layer} particles at dx = {dx} m, more than {MAX_LAYER_POINTS}; at this dx the \
                 radius is at most {most} m"
            ),
        ));
    }
    check_speed(item, &e.velocity)?;
    if Vec3::from(e.velocity).length() < 1e-6 {
        return Err(InvalidValue::new(
            item,
            "velocity",
            tuple(&e.velocity),
            "must not be zero: its direction is the disc's normal",
        ));
    }
    check_rate(item, "rate", e.rate, dx)?;
    // The water must leave the disc at least as fast as the rate needs: emitted faster than it moves
    // away, it packs denser than rest (rate 1 m^3/s through a 0.15 m disc at 2.06 m/s: 51 % density error
    // in the first frame, 868 m/s in the second). A smaller rate makes a thinner stream.
    let speed = Vec3::from(e.velocity).length();
    let carried = sources::carried_rate(r, speed, dx);
    if e.rate > 1.05 * carried {
        let needed = e.rate / carried * speed;
        return Err(InvalidValue::new(
            item,
            "rate",
            fmt_f32(e.rate),
            format!(
                "m^3/s is more than the disc carries at its speed: {} m^3/s (radius {} m, |velocity| {} m/s, at \
                 dx = {dx} m); the water would pack denser than rest. Lower the rate, or raise the speed to {} m/s \
                 or the radius",
                three_digits(carried, false),
                fmt_f32(r),
                fmt_f32(speed),
                three_digits(needed, true)
            ),
        ));
    }
    Ok(())
}

/// `v` (> 0) to three significant digits for a message, rounded up when `up` (a value that must then
/// suffice when typed back) or to the nearest: "0.146", "14.2".
fn three_digits(v: f32, up: bool) -> String {
    if !(v.is_finite() && v > 0.0) {
        return fmt_f32(v);
    }
    let decimals = (2 - v.log10().floor() as i32).clamp(0, 12);
    let scale = 10f64.powi(decimals);
    let x = v as f64 * scale;
    format!("{:.*}", decimals as usize, if up { x.ceil() } else { x.round() } / scale)
}

/// A volume flow, m^3/s: finite, >= 0 and at most [`sources::max_rate`] at `dx`.
fn check_rate(item: &str, field: &'static str, rate: f32, dx: f32) -> Result<(), InvalidValue> {
    let max = sources::max_rate(dx);
    if !(rate.is_finite() && (0.0..=max).contains(&rate)) {
        return Err(InvalidValue::new(
            item,
            field,
            fmt_f32(rate),
            format!(
                "is out of range: 0 ..= {max} m^3/s at dx = {dx} m (the emitters' pool of at most {MAX_POOL} \
                 particles must hold one second of flow)"
            ),
        ));
    }
    Ok(())
}

/// Sink `k` (0-based; named `k + 1`): a finite box, `min < max`, overlapping `domain`.
pub fn check_sink(k: usize, s: &Sink, domain: &Aabb) -> Result<(), InvalidValue> {
    let item = format!("sink {}", k + 1);
    check_box(&item, &s.min, &s.max)?;
    if (0..3).any(|a| s.max[a] <= domain.min[a] || s.min[a] >= domain.max[a]) {
        return Err(InvalidValue::new(
            item,
            "min",
            tuple(&s.min),
            format!(
                "and max {} do not overlap the domain {} .. {}: the sink removes nothing",
                tuple(&s.max),
                tuple(&domain.min),
                tuple(&domain.max)
            ),
        ));
    }
    Ok(())
}

/// Emitters and sinks for `domain` at spacing `dx`: at most [`MAX_SOURCES`] of each, every one in range
/// ([`check_emitter`], [`check_sink`]), and their total rate within [`sources::max_rate`]. The one check
/// of sources: scene files ([`Scene::validate`]), sources edited live (`Engine::set_sources`) and
/// `Simulation::set_sources` all use it.
pub fn check_sources(emitters: &[Emitter], sinks: &[Sink], domain: &Aabb, dx: f32) -> Result<(), InvalidValue> {
    for (what, n) in [("emitters", emitters.len()), ("sinks", sinks.len())] {
        if n > MAX_SOURCES {
            return Err(InvalidValue::new(what, "count", n, format!("is more than {MAX_SOURCES}")));
        }
    }
    for (k, e) in emitters.iter().enumerate() {
        check_emitter(k, e, domain, dx)?;
    }
    for (k, s) in sinks.iter().enumerate() {
        check_sink(k, s, domain)?;
    }
    check_rate("emitters", "total rate", emitters.iter().map(|e| e.rate).sum(), dx)
}

impl Scene {
    /// The file this scene was read from, or its name when it was made in code: what errors name.
    pub fn origin(&self) -> std::path::PathBuf {
        if self.file.as_os_str().is_empty() {
            std::path::PathBuf::from(&self.name)
        } else {
            self.file.clone()
        }
    }

    /// [`SceneError::Invalid`] naming this scene's file ([`Scene::origin`]).
    pub(super) fn invalid(&self, message: String) -> SceneError {
        SceneError::Invalid { path: self.origin(), message }
    }

    /// Checks every field against its range without touching the disk (the heightmap crop is checked
    /// against the image when it is loaded), at the spacing `solver.dx` (the engine checks the copy at the
    /// spacing it builds, [`Scene::at_dx`]). Errors are [`SceneError::Invalid`] naming the file, the item,
    /// the field and the value.
    pub fn validate(&self) -> Result<(), SceneError> {
        self.solver.validate().map_err(|e| self.invalid(e.to_string()))?;
        self.check_values().map_err(|e| self.invalid(e.to_string()))
    }

    /// [`check_sources`] in this scene's domain, naming its file: for emitters and sinks edited live.
    pub fn check_sources(&self, emitters: &[Emitter], sinks: &[Sink], dx: f32) -> Result<(), SceneError> {
        check_sources(emitters, sinks, &self.domain, dx).map_err(|e| self.invalid(e.to_string()))
    }

    /// Every item but the solver's parameters.
    fn check_values(&self) -> Result<(), InvalidValue> {
        let d = &self.domain;
        let dx = self.solver.dx;
        check_domain(d, dx)?;
        if let Some(w) = &self.solver.wave_maker {
            w.validate_in(d.min, d.max)
                .map_err(|e| InvalidValue::new("solver", e.field, e.value, format!("is out of range: {}", e.range)))?;
        }
        if self.fluid_blocks.is_empty() && self.fluid_files.is_empty() {
            return Err(InvalidValue::new(
                "scene",
                "fluid_blocks",
                "[]",
                "is empty and so is fluid_files: the scene has no water",
            ));
        }
        for (k, f) in self.fluid_files.iter().enumerate() {
            let item = format!("fluid file {}", k + 1);
            if f.path.trim().is_empty() {
                return Err(InvalidValue::new(item, "path", "\"\"", "is empty"));
            }
            finite(&item, "offset", &f.offset)?;
        }
        for (k, b) in self.fluid_blocks.iter().enumerate() {
            let item = format!("fluid block {}", k + 1);
            check_box(&item, &b.min, &b.max)?;
            if (0..3).any(|a| b.min[a] < d.min[a] || b.max[a] > d.max[a]) {
                return Err(InvalidValue::new(
                    item,
                    "min",
                    tuple(&b.min),
                    format!(
                        "and max {} are not inside the domain {} .. {}",
                        tuple(&b.max),
                        tuple(&d.min),
                        tuple(&d.max)
                    ),
                ));
            }
            check_speed(&item, &b.velocity)?;
        }
        check_sources(&self.emitters, &self.sinks, d, dx)?;
        super::obstacles::check_obstacles(&self.obstacles)?;
        super::bodies::check_bodies(&self.bodies, self.obstacles.len())?;
        if let Some(t) = &self.terrain {
            if t.heightmap.trim().is_empty() {
                return Err(InvalidValue::new("terrain", "heightmap", "\"\"", "is empty"));
            }
            if !t.extent.iter().all(|e| e.is_finite() && *e > 0.0) {
                return Err(InvalidValue::new("terrain", "extent", tuple(&t.extent), "must be > 0 m on both axes"));
            }
            if !(t.vertical_scale.is_finite() && t.vertical_scale > 0.0) {
                return Err(InvalidValue::new("terrain", "vertical_scale", fmt_f32(t.vertical_scale), "must be > 0"));
            }
            if !t.base.is_finite() {
                return Err(InvalidValue::new("terrain", "base", fmt_f32(t.base), "must be finite"));
            }
            if let Some([_, _, w, h]) = t.crop {
                if w < 2 || h < 2 {
                    return Err(InvalidValue::new(
                        "terrain",
                        "crop",
                        format!("{w}x{h}"),
                        "must be at least 2x2 pixels",
                    ));
                }
            }
        }
        let c = &self.camera;
        finite("camera", "target", &c.target)?;
        if !c.yaw_deg.is_finite() {
            return Err(InvalidValue::new("camera", "yaw_deg", fmt_f32(c.yaw_deg), "must be finite"));
        }
        if !(c.distance.is_finite() && c.distance > 0.0) {
            return Err(InvalidValue::new("camera", "distance", fmt_f32(c.distance), "must be > 0 m"));
        }
        if !(-90.0..=90.0).contains(&c.pitch_deg) {
            return Err(InvalidValue::new("camera", "pitch_deg", fmt_f32(c.pitch_deg), "must be in -90 ..= 90"));
        }
        if !(c.fov_y_deg > 1.0 && c.fov_y_deg < 170.0) {
            return Err(InvalidValue::new("camera", "fov_y_deg", fmt_f32(c.fov_y_deg), "must be in (1, 170) degrees"));
        }
        if !(1.0..=8.0).contains(&self.cpu_dx_scale) {
            return Err(InvalidValue::new("scene", "cpu_dx_scale", fmt_f32(self.cpu_dx_scale), "must be in 1 ..= 8"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A 2 x 1 x 1 m box with one block of water at dx = 0.05 m (`extra` inserted), as RON.
    fn text(extra: &str) -> String {
        format!(
            "(name: \"case\", domain: (min: (0.0, 0.0, 0.0), max: (2.0, 1.0, 1.0)),
              fluid_blocks: [(min: (0.0, 0.0, 0.0), max: (0.5, 0.5, 1.0))],
              camera: (target: (1.0, 0.3, 0.5), distance: 3.0, yaw_deg: 0.0, pitch_deg: 25.0),
              solver: (dx: 0.05), {extra})"
        )
    }

    /// [`text`] read as if from `case.ron`.
    fn scene(extra: &str) -> Scene {
        Scene::from_str(&text(extra), Path::new("case.ron")).expect("the base scene is valid")
    }

    fn fountain() -> Emitter {
        Emitter { center: [1.0, 0.8, 0.5], radius: 0.1, velocity: [0.0, -4.0, 0.0], rate: 0.1 }
    }

    /// The error of `check_values`, which must fail.
    fn refused(s: &Scene) -> InvalidValue {
        s.check_values().expect_err("out of range")
    }

    #[test]
    fn errors_name_the_file_item_field_and_value() {
        let mut s = scene("");
        s.emitters = vec![fountain(), Emitter { rate: f32::INFINITY, ..fountain() }];
        let e = s.validate().expect_err("rate inf").to_string();
        assert!(e.starts_with("scene case.ron: emitter 2: `rate` = inf is out of range: 0 ..= 524.288 m^3/s"), "{e}");
        s.file = Default::default();
        assert!(s.validate().unwrap_err().to_string().starts_with("scene case: emitter 2"), "the name without a file");
        // The solver's parameters, f32 as written.
        let e = Scene::from_str(&text("").replace("dx: 0.05", "dx: -0.025"), Path::new("dx.ron"));
        let e = e.expect_err("dx < 0").to_string();
        assert!(e.contains("dx.ron") && e.contains("`dx` = -0.025 is out of range"), "{e}");
    }

    #[test]
    fn the_domain_is_a_finite_box_near_the_origin() {
        let mut s = scene("");
        s.domain.max[1] = f32::NAN;
        assert_eq!((refused(&s).item.as_str(), refused(&s).field), ("domain", "max"));
        s.domain.max = [2.0, -1.0, 1.0];
        assert!(refused(&s).problem.contains("along y"), "{}", refused(&s));
        // 1e6 m at dx = 0.05 m: 2e7 spacings from the origin, past 65 536.
        s.domain.max = [1e6, 1.0, 1.0];
        let e = refused(&s);
        assert!(e.to_string().contains("`max` = (1000000, 1, 1) reaches 1000000 m from the origin"), "{e}");
        s.domain.max = [3000.0, 1.0, 1.0];
        s.check_values().expect("3000 m at dx = 0.05 m is 60 000 spacings");
        let far = Aabb { min: [-4000.0, 0.0, 0.0], max: [1.0, 1.0, 1.0] };
        assert_eq!(check_domain(&far, 0.05).unwrap_err().field, "min");
    }

    #[test]
    fn fluid_blocks_are_finite_boxes_inside_the_domain_with_bounded_speed() {
        let mut s = scene("");
        s.fluid_blocks[0].min[2] = f32::NAN;
        assert_eq!(refused(&s).to_string(), "fluid block 1: `min` = (0, 0, NaN) must be finite");
        s.fluid_blocks[0].min = [0.0, 0.6, 0.0];
        assert!(refused(&s).problem.contains("along y"));
        s.fluid_blocks[0].min = [-0.1, 0.0, 0.0];
        assert!(refused(&s).problem.contains("not inside the domain"));
        s.fluid_blocks[0].min = [0.0; 3];
        for (v, bad) in [(1e30, true), (f32::NAN, true), (101.0, true), (100.0, false), (-60.0, false)] {
            s.fluid_blocks[0].velocity = [v, 0.0, 80.0f32.min(100.0 - v.abs()).max(0.0)];
            assert_eq!(s.check_values().is_err(), bad, "velocity {:?}", s.fluid_blocks[0].velocity);
        }
        s.fluid_blocks[0].velocity = [1e30, 0.0, 0.0];
        assert!(refused(&s).to_string().contains("is too fast: 1e30 m/s, at most 100 m/s"), "{}", refused(&s));
        s.fluid_blocks.clear();
        assert_eq!(refused(&s).field, "fluid_blocks");
    }

    #[test]
    fn every_emitter_field_is_checked() {
        let domain = scene("").domain;
        let check = |e: Emitter| check_emitter(0, &e, &domain, 0.05).map_err(|e| (e.field, e.to_string()));
        check(fountain()).expect("the fountain is valid");
        let cases = [
            (Emitter { center: [f32::NAN, 0.5, 0.5], ..fountain() }, "center", "must be finite"),
            (Emitter { center: [5.0, 0.5, 0.5], ..fountain() }, "center", "outside the domain (0, 0, 0) .. (2, 1, 1)"),
            (Emitter { radius: 0.0, ..fountain() }, "radius", "must be > 0 m"),
            (Emitter { radius: f32::NAN, ..fountain() }, "radius", "must be > 0 m"),
            (Emitter { radius: 1.1, ..fountain() }, "radius", "half the domain's longest side (2 m)"),
            (Emitter { radius: 1e6, ..fountain() }, "radius", "`radius` = 1000000 is more than half the domain's"),
            (Emitter { velocity: [0.0; 3], ..fountain() }, "velocity", "must not be zero"),
            (Emitter { velocity: [f32::INFINITY, 0.0, 0.0], ..fountain() }, "velocity", "must be finite"),
            (Emitter { velocity: [0.0, -150.0, 0.0], ..fountain() }, "velocity", "at most 100 m/s"),
            (Emitter { rate: -0.1, ..fountain() }, "rate", "out of range"),
            (Emitter { rate: f32::INFINITY, ..fountain() }, "rate", "`rate` = inf"),
            (Emitter { rate: 1e12, ..fountain() }, "rate", "`rate` = 1e12 is out of range: 0 ..= 524.288 m^3/s"),
            // 1 m^3/s through a 0.15 m disc at 2.06 m/s: layers of 28 particles carry 0.144 m^3/s.
            (
                Emitter { radius: 0.15, velocity: [0.0, -2.06, 0.0], rate: 1.0, ..fountain() },
                "rate",
                "`rate` = 1 m^3/s is more than the disc carries at its speed: 0.144",
            ),
        ];
        for (e, field, says) in cases {
            let (f, message) = check(e.clone()).expect_err(says);
            assert!(f == field && message.starts_with("emitter 1: ") && message.contains(says), "{e:?}: {message}");
        }
        // A disc of 100 m in a domain that holds it: 12.6 M particles per layer at dx = 0.05 m.
        let wide = Aabb { min: [0.0; 3], max: [300.0, 10.0, 300.0] };
        let big = Emitter { center: [150.0, 5.0, 150.0], radius: 100.0, ..fountain() };
        let e = check_emitter(1, &big, &wide, 0.05).unwrap_err().to_string();
        assert!(e.starts_with("emitter 2: `radius` = 100 makes layers of 12566370 particles"), "{e}");
        assert!(e.contains("at most 28.8 m"), "{e}");
        check_emitter(1, &Emitter { radius: 28.8, ..big }, &wide, 0.05).expect("28.8 m fits a layer");
        check_emitter(1, &big, &wide, 0.2).expect("at dx = 0.2 m a 100 m disc is 785 398 particles");
        // The message gives the speed that would carry the rate; at that speed the emitter is taken.
        let packed = Emitter { radius: 0.15, velocity: [0.0, -2.06, 0.0], rate: 1.0, ..fountain() };
        let e = check_emitter(0, &packed, &domain, 0.05).unwrap_err().to_string();
        assert!(e.contains("raise the speed to 14.3 m/s"), "{e}");
        check_emitter(0, &Emitter { velocity: [0.0, -14.3, 0.0], ..packed }, &domain, 0.05).expect("fast enough");
    }

    #[test]
    fn sinks_are_finite_boxes_that_overlap_the_domain() {
        let domain = scene("").domain;
        let sink = |min: [f32; 3], max: [f32; 3]| check_sink(2, &Sink { min, max }, &domain);
        sink([1.5, 0.0, 0.0], [3.0, 1.0, 1.0]).expect("a sink reaching past the wall is fine");
        let e = sink([1.5, 0.0, f32::NAN], [3.0, 1.0, 1.0]).unwrap_err().to_string();
        assert_eq!(e, "sink 3: `min` = (1.5, 0, NaN) must be finite");
        assert!(sink([1.5, 0.0, 0.0], [1.5, 1.0, 1.0]).unwrap_err().problem.contains("along x"));
        assert!(sink([2.0, 0.0, 0.0], [3.0, 1.0, 1.0]).unwrap_err().problem.contains("do not overlap the domain"));
    }

    #[test]
    fn sources_are_counted_and_their_flows_summed() {
        let domain = scene("").domain;
        let nine = vec![fountain(); 9];
        assert_eq!(
            check_sources(&nine, &[], &domain, 0.05).unwrap_err().to_string(),
            "emitters: `count` = 9 is more than 8"
        );
        let two = vec![Emitter { radius: 1.0, velocity: [0.0, -100.0, 0.0], rate: 300.0, ..fountain() }; 2];
        let e = check_sources(&two, &[], &domain, 0.05).unwrap_err();
        assert_eq!((e.item.as_str(), e.field, e.value.as_str()), ("emitters", "total rate", "600"));
        check_sources(&two[..1], &[], &domain, 0.05).expect("one of them is within the pool");
    }

    #[test]
    fn terrain_and_camera_fields_are_checked() {
        let mut s = scene("terrain: Some((heightmap: \"h.png\", extent: (2.0, 1.0))),");
        s.terrain.as_mut().unwrap().base = f32::NAN;
        assert_eq!((refused(&s).item.as_str(), refused(&s).field), ("terrain", "base"));
        let mut s = scene("");
        s.camera.distance = -1.0;
        assert_eq!(refused(&s).to_string(), "camera: `distance` = -1 must be > 0 m");
        s.camera.distance = 3.0;
        s.camera.target[0] = f32::INFINITY;
        assert_eq!(refused(&s).field, "target");
    }
}
