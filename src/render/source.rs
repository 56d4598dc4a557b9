//! What the renderer draws, as buffers and plain data ([`ParticleSource`]): the renderer knows no
//! simulation; the engine (`Engine::particles`) or a rank of a decomposed simulation
//! (src/capture/ranks.rs) makes one.

use super::{DiffuseSource, PaddleUniform, Tank};
use crate::gpu::split::SplitBuffer;

/// The particles to draw, as buffers and plain data (the renderer knows no simulation; the engine makes
/// this from one, `Engine::particles`).
#[derive(Clone, Copy)]
pub struct ParticleSource<'a> {
    /// `array<vec4<f32>>` split over bindings ([`crate::gpu::split`]): xyz = position (m), w = density
    /// (kg/m^3; < 0 = not drawn, e.g. parked). The renderer's own arrays are chunked like it
    /// ([`crate::engine::render_limit`] keeps the count within 4 chunks).
    pub positions: &'a SplitBuffer,
    /// `array<vec4<f32>>` split over bindings: xyz = velocity (m/s), w = pressure (Pa).
    pub velocities: &'a SplitBuffer,
    /// Particles to draw (at most the buffers' length / 16 bytes).
    pub count: u32,
    /// Changes whenever the particles move (`Simulation::particles_version`): while it stays, the
    /// anisotropy's ellipsoids are kept. `None` (particles of unknown provenance) recomputes every frame.
    pub version: Option<u64>,
    /// A wave maker's paddle to draw: its geometry and motion, and the buffer whose bytes 4..8 hold the
    /// simulated time in seconds (the simulation's step state) that it moves on.
    pub paddle: Option<(PaddleUniform, &'a wgpu::Buffer)>,
    /// Diffuse particles (spray, foam, bubbles) to draw as foam ([`super::foam`]); `None`: none.
    pub diffuse: Option<DiffuseSource<'a>>,
    /// The glass tank around the simulation box and its ground, in a box scene (static, drawn with the
    /// background).
    pub tank: Option<Tank>,
    /// The simulation's step state, whose bytes 4..8 hold the simulated time in seconds: wet ground dries
    /// on it (on the renderer's wall clock when `None`).
    pub clock: Option<&'a wgpu::Buffer>,
}

impl<'a> ParticleSource<'a> {
    /// `count` particles in `positions` and `velocities`, of unknown provenance, no paddle.
    pub fn buffers(positions: &'a SplitBuffer, velocities: &'a SplitBuffer, count: u32) -> Self {
        Self { positions, velocities, count, version: None, paddle: None, diffuse: None, tank: None, clock: None }
    }
}
