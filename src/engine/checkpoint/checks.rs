//! The checks of a checkpoint read from a file (its header's values and its state's) and of the scene a
//! resume goes on in: each names the field and the value it refuses (see the module docs of
//! [`super`]).

use super::{Header, MAX_DENSITY_RHO0, MAX_SAVED_SPEED, MAX_TIME};
use crate::scene::{Aabb, Scene, SceneError};
use crate::sim::SimState;
use std::path::PathBuf;

/// The header's scene, parsed and validated at the header's spacing as a scene file is, after checking the
/// header's other values against their ranges and the scene; `Err` names the field and the value.
pub(super) fn check_header(h: &Header) -> Result<Scene, String> {
    let file = if h.scene_file.is_empty() { PathBuf::from("checkpoint") } else { PathBuf::from(&h.scene_file) };
    let scene =
        Scene::from_str(&h.scene, &file).map_err(|e| format!("its scene is not valid: {}", scene_message(e)))?;
    scene
        .at_dx(h.dx)
        .validate()
        .map_err(|e| format!("its scene at its spacing `dx` = {} m: {}", h.dx, scene_message(e)))?;
    let t = |a: &Aabb| format!("{} .. {}", crate::scene::tuple(&a.min), crate::scene::tuple(&a.max));
    if h.domain != scene.domain {
        return Err(format!("its `domain` {} is not its scene's, {}", t(&h.domain), t(&scene.domain)));
    }
    if h.capacity == 0 || h.scene_particles > h.capacity {
        return Err(format!(
            "its header says {} scene particles of {} in all (`scene_particles`, `capacity`)",
            h.scene_particles, h.capacity
        ));
    }
    let max = crate::scene::MAX_HEIGHTMAP_SIZE;
    if h.terrain_samples.iter().any(|&n| n < 2 || n > max) {
        return Err(format!("its `terrain_samples` {:?} are not 2 ..= {max} per axis", h.terrain_samples));
    }
    if !h.grid_origin.iter().all(|v| v.is_finite()) || h.grid_dims.contains(&0) {
        return Err(format!(
            "its neighbour grid (`grid_origin` {:?}, `grid_dims` {:?}) is not valid",
            h.grid_origin, h.grid_dims
        ));
    }
    if let Some((density, divergence)) = h.iterations {
        let p = &scene.solver;
        if density > p.density_iterations.max(p.solver_iterations) || divergence > p.divergence_iterations {
            return Err(format!(
                "its `iterations` ({density}, {divergence}) pass its solver's limits ({}, {})",
                p.density_iterations.max(p.solver_iterations),
                p.divergence_iterations
            ));
        }
    }
    let bodies = h.bodies.as_ref().map_or(0, |b| b.bodies.len());
    if bodies != scene.bodies.len() {
        return Err(format!("it holds the motion of {bodies} bodies; its scene has {}", scene.bodies.len()));
    }
    if let Some(b) = &h.bodies {
        check_bodies(b, &scene.domain)?;
    }
    Ok(scene)
}

/// A scene error's message without the scene file it names (a checkpoint's header is what is wrong).
fn scene_message(e: SceneError) -> String {
    match e {
        SceneError::Invalid { message, .. } | SceneError::Parse { message, .. } => message,
        other => other.to_string(),
    }
}

/// The bodies' saved motion: finite, inside `domain` (with a margin of its size), unit rotations, speeds
/// at most [`MAX_SAVED_SPEED`], a wet share in 0 ..= 1, a time in 0 ..= [`MAX_TIME`].
fn check_bodies(b: &crate::sim::bodies::BodiesSnapshot, domain: &Aabb) -> Result<(), String> {
    if !(b.time.is_finite() && (0.0..=MAX_TIME).contains(&b.time)) {
        return Err(format!("its bodies' `time` = {} s is not 0 ..= {MAX_TIME} s", b.time));
    }
    let (lo, hi) = (glam::Vec3::from(domain.min), glam::Vec3::from(domain.max));
    let reach = hi - lo;
    for (k, s) in b.bodies.iter().enumerate() {
        let item = format!("its body {}", k + 1);
        let values = [&s.position[..], &s.rotation, &s.velocity, &s.angular, &s.force, &s.torque];
        let more = [&s.smoothed_force[..], &s.smoothed_torque, &s.water_velocity, &[s.wet]];
        if !values.iter().chain(&more).all(|a| a.iter().all(|x| x.is_finite())) {
            return Err(format!("{item}'s saved motion is not finite"));
        }
        let p = glam::Vec3::from(s.position);
        if p.cmplt(lo - reach).any() || p.cmpgt(hi + reach).any() {
            return Err(format!("{item}'s `position` {} is far outside the domain", crate::scene::tuple(&s.position)));
        }
        let r = glam::Quat::from_array(s.rotation).length();
        if (r - 1.0).abs() > 1e-3 {
            return Err(format!("{item}'s `rotation` {} is not a unit quaternion", crate::scene::tuple(&s.rotation)));
        }
        for (field, v) in [("velocity", s.velocity), ("water_velocity", s.water_velocity)] {
            if glam::Vec3::from(v).length() > MAX_SAVED_SPEED {
                return Err(format!(
                    "{item}'s `{field}` {} is faster than {MAX_SAVED_SPEED} m/s",
                    crate::scene::tuple(&v)
                ));
            }
        }
        if !(0.0..=1.0).contains(&s.wet) {
            return Err(format!("{item}'s `wet` = {} is not 0 ..= 1", s.wet));
        }
    }
    Ok(())
}

/// The state's values against their ranges (see the module docs); `Err` names the value and the particle.
/// `Ok(true)`: the state holds piles of coincident particles few enough to move apart
/// ([`separate_coincident`]).
pub(super) fn check_state(state: &SimState, h: &Header, scene: &Scene) -> Result<bool, String> {
    let step = &state.step;
    if !((0.0..=MAX_TIME).contains(&step.time) && step.dt.is_finite() && step.dt >= 0.0) {
        return Err(format!("its time ({} s) or time step ({} s) is not valid", step.time, step.dt));
    }
    if step.dt > scene.solver.frame_dt {
        return Err(format!(
            "its time step {} s is longer than its scene's `frame_dt` {} s",
            step.dt, scene.solver.frame_dt
        ));
    }
    let speed = f32::from_bits(step.max_speed_bits);
    if !(speed.is_finite() && (0.0..=MAX_SAVED_SPEED).contains(&speed)) {
        return Err(format!("its step's largest speed {speed} m/s is not 0 ..= {MAX_SAVED_SPEED} m/s"));
    }
    let top = f32::from_bits(step.fluid_top_bits);
    if !top.is_finite() {
        return Err(format!("its step's water top {top} m is not finite"));
    }
    if let Some((k, c)) = state.emit_carry.iter().enumerate().find(|(_, c)| !(c.is_finite() && **c >= 0.0)) {
        return Err(format!("emitter {}'s owed volume {c} m^3 is not a finite, non-negative number", k + 1));
    }
    let n = state.positions.len();
    let bad = state.positions.iter().chain(&state.velocities).position(|v| !v.iter().all(|x| x.is_finite()));
    if let Some(i) = bad {
        let (what, k) = if i < n { ("position", i) } else { ("velocity", i - n) };
        return Err(format!("particle {k} has a {what} that is not finite"));
    }
    // Live particles (density >= 0; the emitters' parked pool has w < 0): inside the domain (with a
    // margin of dx), at most MAX_SAVED_SPEED, a density up to MAX_DENSITY_RHO0 rho0.
    let (lo, hi) = (glam::Vec3::from(h.domain.min) - h.dx, glam::Vec3::from(h.domain.max) + h.dx);
    let rho_max = MAX_DENSITY_RHO0 * scene.solver.rho0;
    let live = |i: &usize| state.positions[*i][3] >= 0.0;
    let at = |i: usize| {
        let p = state.positions[i];
        format!("particle {i} at {}", crate::scene::tuple(&p[..3]))
    };
    for i in (0..n).filter(live) {
        let (p, v) = (state.positions[i], state.velocities[i]);
        let q = glam::Vec3::new(p[0], p[1], p[2]);
        if q.cmplt(lo).any() || q.cmpgt(hi).any() {
            return Err(format!("{} lies outside its domain", at(i)));
        }
        let speed = glam::Vec3::new(v[0], v[1], v[2]).as_dvec3().length();
        if speed > MAX_SAVED_SPEED as f64 {
            return Err(format!("{} moves at {speed} m/s, faster than {MAX_SAVED_SPEED} m/s", at(i)));
        }
        if p[3] > rho_max {
            return Err(format!("{} has a density of {} kg/m^3, more than {MAX_DENSITY_RHO0} rho0", at(i), p[3]));
        }
    }
    let cells = crate::scene::coincident::Cells::new(glam::Vec3::from(h.domain.min), h.dx);
    let live_positions: Vec<glam::Vec3> = (0..n)
        .filter(live)
        .map(|i| glam::Vec3::new(state.positions[i][0], state.positions[i][1], state.positions[i][2]))
        .collect();
    // The app's own state may hold a few small clusters (crate::scene::coincident): refused only when more
    // than MAX_SHARED_PERCENT % of the particles share cells, else moved apart after this check.
    let shared_too_many = |c: &crate::scene::coincident::Coincident| {
        c.count * 100 > crate::scene::coincident::MAX_SHARED_PERCENT * live_positions.len()
    };
    let found = cells.within(&live_positions).0;
    if let Some(c) = found.filter(shared_too_many) {
        let p = live_positions[c.first];
        return Err(format!(
            "{} of its {} live particles share a cell of dx/8 = {} m with another ({}): piles of coincident \
             particles explode; the first lies at {}",
            c.count,
            live_positions.len(),
            crate::sim::params::fmt_f32(cells.edge),
            c.describe(),
            crate::scene::tuple(&p.to_array())
        ));
    }
    Ok(found.is_some_and(|c| c.is_pile(live_positions.len())))
}

/// Moves apart the piles among the live particles of `state` (three in a cell of dx / 8, two at one
/// position: [`crate::scene::coincident::Cells::separate`]; at most
/// [`crate::scene::coincident::MAX_SHARED_PERCENT`] % of them after [`check_state`]); returns how many.
pub(super) fn separate_coincident(state: &mut SimState, h: &Header) -> usize {
    let cells = crate::scene::coincident::Cells::new(glam::Vec3::from(h.domain.min), h.dx);
    let live: Vec<usize> = (0..state.positions.len()).filter(|&i| state.positions[i][3] >= 0.0).collect();
    let mut points: Vec<glam::Vec3> = live.iter().map(|&i| glam::Vec3::from_slice(&state.positions[i][..3])).collect();
    let moved = cells.separate(&mut points);
    for (&i, p) in live.iter().zip(&points) {
        state.positions[i][..3].copy_from_slice(&p.to_array());
    }
    moved
}

/// The first difference between the obstacles and bodies `saved` in a checkpoint and those of `scene`,
/// naming the item and the field with both values; `None` when they are the same.
pub(super) fn placements_differ(saved: &Scene, scene: &Scene) -> Option<String> {
    use crate::scene::tuple;
    let (a, b) = (&saved.obstacles, &scene.obstacles);
    if a.len() != b.len() {
        return Some(format!("it was saved with {} obstacles; the scene has {}", a.len(), b.len()));
    }
    let bodies = |s: &Scene| s.bodies.iter().map(|b| (b.placement(), b.density)).collect::<Vec<_>>();
    let (c, d) = (bodies(saved), bodies(scene));
    if c.len() != d.len() {
        return Some(format!("it was saved with {} bodies; the scene has {}", c.len(), d.len()));
    }
    let obstacles = a.iter().zip(b).map(|(x, y)| (x, 1.0, y, 1.0));
    let all =
        obstacles.map(|t| ("obstacle", t)).chain(c.iter().zip(&d).map(|((x, p), (y, q))| ("body", (x, *p, y, *q))));
    let mut index = [0usize; 2];
    for (kind, (x, density_x, y, density_y)) in all {
        let k = &mut index[(kind == "body") as usize];
        *k += 1;
        let field = if x.mesh != y.mesh {
            Some(("mesh", format!("{:?}", x.mesh), format!("{:?}", y.mesh)))
        } else if x.position != y.position {
            Some(("position", tuple(&x.position), tuple(&y.position)))
        } else if x.rotation_deg != y.rotation_deg {
            Some(("rotation_deg", tuple(&x.rotation_deg), tuple(&y.rotation_deg)))
        } else if x.scale != y.scale {
            Some(("scale", x.scale.to_string(), y.scale.to_string()))
        } else if density_x != density_y {
            Some(("density", density_x.to_string(), density_y.to_string()))
        } else {
            None
        };
        if let Some((field, was, is)) = field {
            return Some(format!("its {kind} {k} has `{field}` = {was}; the scene's has {is}"));
        }
    }
    None
}
