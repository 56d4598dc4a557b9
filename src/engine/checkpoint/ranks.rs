//! A checkpoint of a decomposed simulation (`run --gpus N --save-checkpoint`): rank 0 gathers every
//! rank's particles and writes them as one GPU's checkpoint of the same state ([`Checkpoint::of_ranks`]).

use super::{scene_text, terrain_crc, Checkpoint, Header};
use crate::scene::{Scene, SceneError};
use crate::sim::gpu_data::StepState;
use crate::sim::SimState;
use std::path::PathBuf;

/// The state a decomposed simulation's ranks gathered on rank 0 ([`Checkpoint::of_ranks`]): every
/// particle in the order of the scene's initial particles, no pool.
pub struct RanksState<'a> {
    /// The scene every rank simulates (its solver parameters as applied), at spacing `dx`, metres.
    pub scene: &'a Scene,
    pub dx: f32,
    /// The terrain as the simulation clamps it (a rank's [`crate::sim::Simulation::terrain`]).
    pub terrain: &'a crate::terrain::Heightfield,
    /// The joint step state (time, dt, the largest speed, the step counter: the same on every rank).
    pub step: StepState,
    /// The neighbour grid's cell edge, metres (the checkpoint's grid box is the whole domain on it).
    pub cell_size: f32,
    /// The joint (density, divergence) iteration bounds, if any came back.
    pub iterations: Option<(u32, u32)>,
    /// Per particle: xyz position (m), w density (kg/m^3); xyz velocity (m/s), w pressure (Pa).
    pub positions: Vec<[f32; 4]>,
    pub velocities: Vec<[f32; 4]>,
}

impl Checkpoint {
    /// A checkpoint of a decomposed simulation (`run --gpus N --save-checkpoint`), as one GPU's of the
    /// same state: resumable on one GPU ([`crate::engine::Engine::resume`]) or on several. Without emitters or bodies
    /// (several GPUs refuse them), so every particle is one of the scene's. Errors: the scene cannot be
    /// written as RON.
    pub fn of_ranks(ranks: RanksState<'_>) -> Result<Checkpoint, SceneError> {
        let (scene, scene_file) = scene_text(ranks.scene)?;
        let grid = crate::sim::gpu_data::GridShape::new(&ranks.scene.domain, ranks.cell_size);
        let t = ranks.terrain;
        let n = ranks.positions.len() as u32;
        let header = Header {
            scene,
            scene_file,
            dx: ranks.dx,
            sources: false,
            domain: ranks.scene.domain,
            terrain_crc: terrain_crc(t),
            terrain_samples: [t.nx, t.nz],
            scene_particles: n,
            capacity: n,
            grid_origin: grid.origin,
            grid_dims: grid.dims,
            iterations: ranks.iterations,
            bodies: None,
        };
        let state = SimState {
            step: ranks.step,
            emit_carry: [0.0; crate::sim::sources::MAX_SOURCES],
            positions: ranks.positions,
            velocities: ranks.velocities,
            grid_origin: grid.origin,
            grid_dims: grid.dims,
            iterations: ranks.iterations,
        };
        Ok(Checkpoint { header, state, path: PathBuf::new() })
    }
}
