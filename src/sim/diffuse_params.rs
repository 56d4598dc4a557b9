//! User-facing parameters of the diffuse particles (spray, foam and air bubbles after Ihmsen, Akinci,
//! Akinci & Teschner 2012, "Unified spray, foam and bubbles for particle-based fluids", The Visual
//! Computer 28(6)), serde with units in the field docs, part of [`super::SimParams`] (`diffuse`), and
//! their conversion into the stage's uniform block ([`DiffuseUniform::new`], the one place).
//!
//! The paper's potentials are sums over the neighbours, whose size depends on h / dx; here the trapped-air
//! and wave-crest sums are divided by the same sum over a full particle lattice ([`DiffuseUniform`]'s
//! `weight_sum`), so their thresholds read as a weighted mean (m/s, and a dimensionless curvature), and
//! the kinetic energy is per unit mass (J/kg), so one setting fits every dx.

use super::kernel;
use super::params::{fmt_f32, ParamError};
use bytemuck::{Pod, Zeroable};
use serde::{Deserialize, Serialize};

/// How diffuse particles are made, classified and moved. All SI units.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiffuseParams {
    /// Make and move diffuse particles (on by default). Off: none are made and those alive are dropped.
    pub enabled: bool,
    /// k_ta: new diffuse particles per fluid particle and second where the trapped-air potential and the
    /// kinetic energy are both at their maximum, 1/s.
    pub trapped_air_rate: f32,
    /// k_wc: the same for the wave-crest potential, 1/s.
    pub wave_crest_rate: f32,
    /// [min, max] of the trapped-air potential, m/s: the weighted mean over the neighbours of
    /// |v_ij| (1 - v̂_ij · x̂_ij) (relative speed, most for particles running into each other), weight
    /// 1 - r / 2h. Below min: nothing; above max: full.
    pub trapped_air: [f32; 2],
    /// [min, max] of the wave-crest potential, dimensionless: the weighted mean of 1 - n̂_i · n̂_j over
    /// the neighbours below a surface particle (convex surface), counted only where the particle moves
    /// along its normal (v̂ · n̂ >= 0.6).
    pub wave_crest: [f32; 2],
    /// [min, max] of the kinetic energy per unit mass |v|^2 / 2, J/kg (1 m/s is 0.5 J/kg); it scales both
    /// potentials, so slow water makes nothing.
    pub kinetic_energy: [f32; 2],
    /// Lifetime of a new diffuse particle, seconds: each gets a random 0.5 to 1 times this. Foam ages at
    /// 1 s per second; spray and bubbles at [`SLOW_AGEING`] of that (the paper lets them live until they
    /// turn into foam; the slow ageing bounds a drop that never lands).
    pub lifetime: f32,
    /// Spray: linear air drag, 1/s (dv/dt = g - drag v; 0 = ballistic; terminal speed |g| / drag).
    pub spray_drag: f32,
    /// Bubbles: buoyancy as a multiple of gravity, pointing against it (dimensionless).
    pub bubble_buoyancy: f32,
    /// Bubbles: drag toward the fluid's velocity, 1/s (dv/dt = drag (v_fluid - v) - buoyancy g).
    pub bubble_drag: f32,
    /// A diffuse particle with fewer fluid neighbours (within 2h) than this fraction of a full
    /// neighbourhood is spray.
    pub spray_below: f32,
    /// ... with more than this fraction, a bubble; in between, foam (at the surface).
    pub bubble_above: f32,
    /// Most new diffuse particles per frame, as a fraction of the pool (the per-frame budget). When the
    /// demand is larger, every fluid particle's share is scaled down alike (from the last frame's demand).
    pub budget: f32,
}

/// Rate at which spray and bubbles age, relative to foam (see [`DiffuseParams::lifetime`]); the
/// shader's `SLOW_AGEING`.
pub const SLOW_AGEING: f32 = 0.25;

impl Default for DiffuseParams {
    fn default() -> Self {
        Self {
            enabled: true,
            trapped_air_rate: 40.0,
            wave_crest_rate: 40.0,
            trapped_air: [0.3, 2.0],
            wave_crest: [0.1, 0.5],
            kinetic_energy: [0.5, 5.0],
            lifetime: 2.5,
            spray_drag: 0.5,
            bubble_buoyancy: 0.5,
            bubble_drag: 20.0,
            spray_below: 0.1,
            bubble_above: 0.7,
            budget: 0.02,
        }
    }
}

/// `Ok` when `ok` and `value` is finite, else the error naming `field`.
fn check(field: &'static str, value: f32, ok: bool, range: &'static str) -> Result<(), ParamError> {
    if ok && value.is_finite() {
        Ok(())
    } else {
        Err(ParamError { field, value: fmt_f32(value), range })
    }
}

/// A [min, max] range: both finite, 0 <= min < max <= `hi`.
fn check_range(field: &'static str, r: [f32; 2], hi: f32, range: &'static str) -> Result<(), ParamError> {
    check(field, r[0], r[0] >= 0.0, range)?;
    check(field, r[1], r[1] > r[0] && r[1] <= hi, range)
}

impl DiffuseParams {
    /// Checks every field; the error names the first out of range (`diffuse.lifetime`, ...).
    pub fn validate(&self) -> Result<(), ParamError> {
        let p = self;
        let rate = "0 ..= 10000 per fluid particle and second";
        check("diffuse.trapped_air_rate", p.trapped_air_rate, (0.0..=1e4).contains(&p.trapped_air_rate), rate)?;
        check("diffuse.wave_crest_rate", p.wave_crest_rate, (0.0..=1e4).contains(&p.wave_crest_rate), rate)?;
        check_range("diffuse.trapped_air", p.trapped_air, 1e3, "0 <= min < max <= 1000 m/s")?;
        check_range("diffuse.wave_crest", p.wave_crest, 2.0, "0 <= min < max <= 2")?;
        check_range("diffuse.kinetic_energy", p.kinetic_energy, 1e5, "0 <= min < max <= 1e5 J/kg")?;
        check("diffuse.lifetime", p.lifetime, (0.01..=600.0).contains(&p.lifetime), "0.01 ..= 600 s")?;
        check("diffuse.spray_drag", p.spray_drag, (0.0..=1e3).contains(&p.spray_drag), "0 ..= 1000 1/s")?;
        check("diffuse.bubble_buoyancy", p.bubble_buoyancy, (0.0..=100.0).contains(&p.bubble_buoyancy), "0 ..= 100")?;
        check("diffuse.bubble_drag", p.bubble_drag, (0.0..=1e3).contains(&p.bubble_drag), "0 ..= 1000 1/s")?;
        check("diffuse.spray_below", p.spray_below, (0.0..=1.0).contains(&p.spray_below), "0 ..= 1")?;
        check(
            "diffuse.bubble_above",
            p.bubble_above,
            p.bubble_above >= p.spray_below && p.bubble_above <= 1.0,
            "spray_below ..= 1",
        )?;
        check("diffuse.budget", p.budget, (0.0..=1.0).contains(&p.budget), "0 ..= 1 of the pool per frame")
    }
}

/// The diffuse stage's parameters as the shader reads them, group 1 binding 0.
/// WGSL twin: `Diffuse` in shaders/sim/diffuse.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct DiffuseUniform {
    /// Diffuse particles the pool holds.
    pub capacity: u32,
    /// Most new diffuse particles per frame.
    pub budget: u32,
    /// Fewer fluid neighbours than this (a count): spray.
    pub spray_below: f32,
    /// More fluid neighbours than this (a count): a bubble.
    pub bubble_above: f32,
    /// k_ta, 1/s.
    pub trapped_air_rate: f32,
    /// k_wc, 1/s.
    pub wave_crest_rate: f32,
    /// [min, max], m/s.
    pub trapped_air: [f32; 2],
    /// [min, max], dimensionless.
    pub wave_crest: [f32; 2],
    /// [min, max], J/kg.
    pub kinetic_energy: [f32; 2],
    /// Seconds.
    pub lifetime: f32,
    /// 1/s.
    pub spray_drag: f32,
    /// Multiple of gravity.
    pub bubble_buoyancy: f32,
    /// 1/s.
    pub bubble_drag: f32,
    /// Sum of 1 - r / 2h over a full lattice neighbourhood (the particle itself left out): the trapped-air
    /// and wave-crest sums are divided by it.
    pub weight_sum: f32,
    /// Radius of the disc around a fluid particle's path that new diffuse particles start on, metres.
    pub spawn_radius: f32,
    pub _pad: [u32; 2],
}
const _: () = assert!(size_of::<DiffuseUniform>() == 80);

impl DiffuseUniform {
    /// The uniform for a pool of `capacity` diffuse particles at spacing `dx` and smoothing length `h`
    /// (metres).
    pub fn new(p: &DiffuseParams, capacity: u32, dx: f32, h: f32) -> Self {
        let offsets = kernel::lattice_offsets(h as f64 / dx as f64);
        let full = offsets.len().saturating_sub(1) as f32;
        let weight_sum: f64 = offsets
            .iter()
            .map(|o| (o[0] * o[0] + o[1] * o[1] + o[2] * o[2]).sqrt() * dx as f64)
            .filter(|&r| r > 0.0)
            .map(|r| 1.0 - r / (2.0 * h as f64))
            .sum();
        Self {
            capacity,
            budget: (p.budget as f64 * capacity as f64).round() as u32,
            spray_below: p.spray_below * full,
            bubble_above: p.bubble_above * full,
            trapped_air_rate: p.trapped_air_rate,
            wave_crest_rate: p.wave_crest_rate,
            trapped_air: p.trapped_air,
            wave_crest: p.wave_crest,
            kinetic_energy: p.kinetic_energy,
            lifetime: p.lifetime,
            spray_drag: p.spray_drag,
            bubble_buoyancy: p.bubble_buoyancy,
            bubble_drag: p.bubble_drag,
            weight_sum: weight_sum.max(1e-6) as f32,
            spawn_radius: 0.5 * dx,
            _pad: [0; 2],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_values_are_named() {
        DiffuseParams::default().validate().expect("defaults are valid");
        let e = DiffuseParams { lifetime: 0.0, ..Default::default() }.validate().unwrap_err();
        assert_eq!(e.field, "diffuse.lifetime");
        let e = DiffuseParams { trapped_air: [2.0, 1.0], ..Default::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("diffuse.trapped_air"), "{e}");
        let e = DiffuseParams { budget: f32::NAN, ..Default::default() }.validate().unwrap_err();
        assert_eq!(e.field, "diffuse.budget");
        let e = DiffuseParams { spray_below: 0.8, bubble_above: 0.5, ..Default::default() }.validate().unwrap_err();
        assert_eq!(e.field, "diffuse.bubble_above");
    }

    #[test]
    fn thresholds_count_a_full_neighbourhood() {
        // h = 1.2 dx: the lattice points within 2.4 dx, the particle left out.
        let u = DiffuseUniform::new(&DiffuseParams::default(), 1000, 0.1, 0.12);
        let full = kernel::lattice_offsets(1.2).len() as f32 - 1.0;
        assert!((50.0..70.0).contains(&full), "{full}");
        assert!((u.spray_below - 0.1 * full).abs() < 1e-4 && (u.bubble_above - 0.7 * full).abs() < 1e-4);
        assert!(u.weight_sum > 5.0 && u.weight_sum < full, "{}", u.weight_sum);
        assert_eq!(u.budget, 20);
    }
}
