//! The engine: the one way every front end (the window, `waterview run`, `bench`, `validate`, `capture`
//! and the tests) loads a scene, builds its simulation with everything the scene asks for (the inflow
//! pool, emitters, sinks, a wave maker, surface tension), changes it (live, or by a rebuild where
//! [`SimParams::needs_rebuild`] says so), resets it, hands its particles to the renderer as buffers and
//! plain data ([`Engine::particles`]) and reads it back. It knows no command line and no window.
//!
//! Stepping is the simulation's own ([`Engine::sim_mut`]: `encode_frame`, `encode_stats`, `poll_stats`);
//! the headless loops on top (frames with asynchronous statistics, one step with a blocking read-back,
//! rendering an image) are in [`batch`].
//!
//! Emitters need parked particles to draw from: the engine sizes that pool from the scene's emitters when
//! it builds ([`sources::pool_size`]) and grows it, carrying the running water over, when emitters are
//! added or speeded up later ([`Engine::set_sources`]).
//!
//! Checkpoints ([`checkpoint`]): [`Engine::checkpoint_blocking`] (or [`Engine::encode_checkpoint`], which
//! never waits) saves the whole simulation state, [`Engine::resume`] builds an engine that goes on from it.
//!
//! Nothing reaches the GPU unchecked: a scene is validated at the spacing it is built at
//! ([`Scene::validate`]) and its particle estimate checked against the GPU's limit ([`limits`]) before
//! its particles are laid out; sources edited live go through the same checks as the scene file's.

pub mod batch;
pub mod checkpoint;
pub mod limits;
pub mod progress;
pub mod walls;

pub use checkpoint::{Checkpoint, CheckpointError, PendingCheckpoint, RanksState};
pub use limits::{
    bytes_per_particle, check_fits, check_memory, particle_limit, particle_limit_for, particle_limit_with, render_limit,
};
pub use progress::{BuildPhase, BuildProgress};

use crate::gpu::GpuContext;
use crate::render::{DiffuseSource, PaddleUniform, ParticleSource, Tank};
use crate::scene::{Emitter, ObstacleDesc, Scene, SceneError, SceneSetup, Sink};
use crate::sim::live_obstacles::Placement;
use crate::sim::{sources, ParticleLimit, SimError, SimOptions, SimParams, Simulation};
use crate::terrain::Heightfield;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why the engine could not build or change a simulation (the running one, if any, is left as it was).
#[derive(Debug, Error)]
pub enum EngineError {
    /// The scene file or its heightmap cannot be used.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// The simulation refused the scene or the change (parameters, sources, sizes past the GPU's limits).
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A checkpoint could not be written, read or resumed into the scene ([`checkpoint`]).
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The scene's lattice estimate plus the emitters' pool is past the GPU's particle limit (checked
    /// before any particle is built, [`limits::check_fits`]).
    #[error(
        "scene {}: the fluid blocks hold up to {estimate} particles at dx = {dx} m{}, more than this GPU can \
         simulate: {} at most ({}); {}",
        file.display(),
        if *pool > 0 { format!(" plus a pool of {pool} for the emitters") } else { String::new() },
        limit.max,
        limit.why,
        match fit { Some(d) => format!("dx = {d} m would fit"), None => "no dx up to 100 m fits".to_string() }
    )]
    TooManyParticles {
        /// The scene file (or the scene's name).
        file: PathBuf,
        /// The blocks' lattice points at `dx` (an upper bound on the particles built).
        estimate: u64,
        /// Parked particles for the emitters.
        pool: u64,
        /// The spacing asked for, metres.
        dx: f32,
        /// The GPU's limit and what sets it.
        limit: ParticleLimit,
        /// A spacing that fits, metres.
        fit: Option<f32>,
    },
    /// The scene's fluid files declare more particles than the GPU can simulate with its blocks' lattice
    /// estimate and the emitters' pool (`blocks`), checked from the files' headers before any of them is
    /// decoded ([`limits::check_fits`]).
    #[error(
        "scene {}: its fluid files hold {files} particles{}, more than this GPU can simulate: {} at most ({})",
        file.display(),
        if *blocks > 0 { format!(" besides up to {blocks} of its fluid blocks and emitters") } else { String::new() },
        limit.max,
        limit.why
    )]
    TooManyFileParticles {
        /// The scene file (or the scene's name).
        file: PathBuf,
        /// Particles the fluid files declare.
        files: u64,
        /// The blocks' lattice estimate plus the emitters' pool.
        blocks: u64,
        /// The GPU's limit and what sets it.
        limit: ParticleLimit,
    },
    /// A live move ([`Engine::move_obstacles`]) was given another list of obstacles than the scene's (one
    /// added, removed or given another mesh): that needs a rebuild.
    #[error(
        "the obstacles can be moved, turned and scaled live, but adding, removing or replacing one needs a \
         rebuild of the scene"
    )]
    ObstaclesChanged,
    /// The build was cancelled ([`BuildProgress::cancel`]); nothing was built.
    #[error("the build was cancelled")]
    Cancelled,
    /// The scene's particles need more GPU memory than the device has ([`check_memory`]: the lattice
    /// estimate times [`bytes_per_particle`], against [`SimOptions::memory`]).
    #[error(
        "scene {}: {count} particles need about {} of GPU memory ({} bytes per particle), more than the {} \
         this GPU has; about {fit} particles fit: increase dx or shrink the fluid blocks",
        file.display(),
        limits::describe(*bytes),
        bytes / (*count).max(1),
        limits::describe(*memory)
    )]
    GpuMemory { file: PathBuf, count: u64, bytes: u64, memory: u64, fit: u64 },
    /// The host has too little memory available for the chunks a build generates ([`check_memory`]).
    #[error(
        "scene {}: building {count} particles needs about {} of memory for its chunks, but only {} is available \
         (MemAvailable in /proc/meminfo); close other programs or increase dx",
        file.display(),
        limits::describe(*bytes),
        limits::describe(*available)
    )]
    HostMemory { file: PathBuf, count: u64, bytes: u64, available: u64 },
}

/// How a scene is built: its spacing, the dispatch options and whether its sources run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BuildOptions {
    /// Particle spacing dx, metres, instead of the scene's (`None`: the scene's, times its `cpu_dx_scale`
    /// on a CPU adapter).
    pub dx: Option<f32>,
    /// Dispatch options (workgroup size, grid folding, subgroups). The engine sets the pool and the
    /// renderer's particle limit itself.
    pub sim: SimOptions,
    /// Build the scene's emitters and sinks (`waterview bench` leaves them out so the count stays fixed).
    pub sources: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self { dx: None, sim: SimOptions::default(), sources: true }
    }
}

/// What a parameter change did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The running simulation took the change (uniforms only).
    Live,
    /// dx, h/dx or rho0 changed: the scene was built again and restarted from its initial water.
    Rebuilt,
}

/// Loads the scene file at `path`, or the built-in valley when `None`.
pub fn load_scene(path: Option<&Path>) -> Result<Scene, SceneError> {
    match path {
        Some(p) => Scene::load(p),
        None => Scene::builtin("valley").ok_or_else(|| SceneError::Invalid {
            path: "valley".into(),
            message: "the built-in scene is missing from this build".into(),
        }),
    }
}

/// A scene and its running simulation.
pub struct Engine {
    /// The scene as the user sees it: its own dx (unless rebuilt at another), the solver parameters and
    /// sources as last applied. Saving it writes the current state.
    scene: Scene,
    sim: Simulation,
    options: BuildOptions,
}

impl Engine {
    /// Builds `scene` on `ctx` with `options`: its particles at the spacing in use, its terrain, and a
    /// simulation with its solver parameters, emitters (and a pool for them), sinks and wave maker.
    /// Before any particle is made, the scene is validated at that spacing and its estimate checked
    /// against the GPU's limit ([`check_fits`]).
    /// Errors: a value out of range, too many particles for the GPU, a heightmap that cannot be read, or
    /// the GPU refuses the simulation.
    pub fn new(ctx: &GpuContext, scene: Scene, options: BuildOptions) -> Result<Self, EngineError> {
        let dx = spacing(ctx, &scene, &options);
        let setup = checked_build(ctx, &scene.at_dx(dx), &options)?;
        Self::with_setup(ctx, scene, &setup, options)
    }

    /// As [`Engine::new`] from particles built (or filtered) by the caller at spacing `options.dx`
    /// (validation keeps a part of a scene's water; the benchmark searches a spacing for a count). The
    /// engine keeps no particle: they live in the simulation's buffers (and its initial copy on the GPU).
    pub fn with_setup(
        ctx: &GpuContext,
        scene: Scene,
        setup: &SceneSetup,
        options: BuildOptions,
    ) -> Result<Self, EngineError> {
        let sim = simulate(ctx, &scene, setup, spacing(ctx, &scene, &options), &scene.solver, &options)?;
        Ok(Self { scene, sim, options })
    }

    /// The scene with the parameters and sources as last applied (for display and for saving).
    pub fn scene(&self) -> &Scene {
        &self.scene
    }

    pub fn sim(&self) -> &Simulation {
        &self.sim
    }

    /// The simulation, to step it (`encode_frame`, `encode_stats`, `after_submit`, `poll_stats`).
    pub fn sim_mut(&mut self) -> &mut Simulation {
        &mut self.sim
    }

    /// The solver parameters in use (dx is the spacing in use).
    pub fn params(&self) -> &SimParams {
        self.sim.params()
    }

    /// The terrain the water meets and the renderer draws (clamped into the domain).
    pub fn terrain(&self) -> &Heightfield {
        self.sim.terrain()
    }

    /// The static obstacles' meshes in world space, then the bodies' at their current frames, for the
    /// renderer ([`crate::render::Renderer::set_obstacles`]; a scene with bodies sets them again every
    /// frame, [`Engine::has_bodies`]).
    pub fn obstacle_meshes(&self) -> Vec<crate::render::ObstacleMesh> {
        let mut meshes = obstacle_meshes(self.sim.obstacles());
        if let Some(b) = self.sim.bodies() {
            meshes.extend(obstacle_meshes(&b.placed()));
        }
        meshes
    }

    /// The walls that hold a terrain scene's water, for the renderer ([`crate::render::Renderer::set_walls`];
    /// [`walls`]): up to the initial water's top; none in a box scene (the renderer draws its glass tank).
    pub fn wall_meshes(&self) -> Vec<crate::render::ObstacleMesh> {
        let dx = self.sim.params().dx;
        let water_top = self.sim.initial_bounds().1[1] + 0.5 * dx;
        walls::scene_walls(&self.scene, self.sim.terrain(), water_top, dx)
    }

    /// True when the scene has floating or sinking bodies, whose meshes move.
    pub fn has_bodies(&self) -> bool {
        self.sim.bodies().is_some()
    }

    /// The scene's initial particles at the spacing in use (the pool not included).
    pub fn scene_particles(&self) -> u32 {
        self.sim.scene_particles()
    }

    /// Particles that are water now: from the newest statistics (a frame or more late), else the scene's.
    pub fn live_particles(&self) -> u32 {
        self.sim.live_particles()
    }

    /// Applies `params`: live when only fields that need no new buffers changed, else ([`SimParams::needs_rebuild`])
    /// by building the scene again at the new dx, h/dx and rho0, with the same sources; the water restarts.
    /// On error nothing changes.
    pub fn set_params(&mut self, ctx: &GpuContext, params: &SimParams) -> Result<Applied, EngineError> {
        if !self.sim.params().needs_rebuild(params) {
            self.sim.set_params(ctx, params)?;
            self.scene.solver = SimParams { dx: self.scene.solver.dx, ..params.clone() };
            return Ok(Applied::Live);
        }
        let mut scene = self.scene.at_dx(params.dx);
        scene.solver = params.clone();
        let options = BuildOptions { dx: Some(params.dx), ..self.options };
        let setup = checked_build(ctx, &scene, &options)?;
        let sim = simulate(ctx, &scene, &setup, params.dx, params, &options)?;
        drop(setup);
        *self = Self { scene, sim, options };
        Ok(Applied::Rebuilt)
    }

    /// Replaces the emitters and sinks, live (the Scene panel's edits). They are checked as a scene
    /// file's are ([`Scene::check_sources`] at the spacing in use; the error names the scene file, the
    /// emitter or sink and the field). When the emitters need a larger pool than the simulation has (new
    /// emitters, a higher rate), the simulation is rebuilt with one and the running water carried over
    /// ([`Simulation::with_pool`]). On error nothing changes: the running sources stay.
    pub fn set_sources(&mut self, ctx: &GpuContext, emitters: &[Emitter], sinks: &[Sink]) -> Result<(), EngineError> {
        let dx = self.sim.params().dx;
        self.scene.check_sources(emitters, sinks, dx)?;
        let pool = sources::pool_size(emitters, dx);
        if pool > self.sim.pool() {
            self.sim = self.sim.with_pool(ctx, pool)?;
            // The copy has the obstacles where they are now: send them on to where they were going.
            let targets: Vec<Placement> = self.scene.obstacles.iter().map(placement).collect();
            if let Err(e) = self.sim.move_obstacles(&targets) {
                log::warn!("the obstacles stay where they are: {e}");
            }
        }
        self.sim.set_sources(ctx, emitters, sinks)?;
        self.scene.emitters = emitters.to_vec();
        self.scene.sinks = sinks.to_vec();
        Ok(())
    }

    /// Moves, turns and scales the static obstacles to `obstacles` live, without a rebuild: the same
    /// obstacles (one per scene obstacle, the same mesh files) placed anew. Each is checked as a scene
    /// file's is at the spacing in use (finite, at least [`crate::scene::MIN_SIZE_DX`] dx thin, inside the
    /// domain; the error names the obstacle and the field); then the simulation sends them there, at most
    /// [`crate::sim::live_obstacles::MAX_MOVE_DX`] dx a frame, pushing the water aside
    /// ([`crate::sim::live_obstacles`]), and the scene keeps the new placements (saving, a rebuild or a
    /// checkpoint has them). [`Engine::obstacles_version`] tells the renderer to draw them anew.
    /// Errors: another list of obstacles ([`EngineError::ObstaclesChanged`]: that needs a rebuild) or a
    /// bad placement; nothing changes then.
    pub fn move_obstacles(&mut self, obstacles: &[ObstacleDesc]) -> Result<(), EngineError> {
        let same = obstacles.len() == self.scene.obstacles.len()
            && obstacles.iter().zip(&self.scene.obstacles).all(|(a, b)| a.mesh == b.mesh);
        if !same || obstacles.len() != self.sim.obstacles().len() {
            return Err(EngineError::ObstaclesChanged);
        }
        let mut scene = self.scene.clone();
        scene.obstacles = obstacles.to_vec();
        scene.validate()?;
        let dx = self.sim.params().dx;
        for (k, (o, placed)) in obstacles.iter().zip(self.sim.obstacles()).enumerate() {
            let unit = crate::mesh::TriangleMesh {
                vertices: placed.mesh.vertices.iter().map(|&v| v / placed.scale).collect(),
                triangles: placed.mesh.triangles.clone(),
            };
            scene.scaled_mesh(&format!("obstacle {} ({})", k + 1, o.mesh), o, &unit, dx)?;
        }
        let targets: Vec<Placement> = obstacles.iter().map(placement).collect();
        self.sim.move_obstacles(&targets)?;
        self.scene.obstacles = scene.obstacles;
        Ok(())
    }

    /// A number that changes whenever the static obstacles moved on the GPU (a live move's frame):
    /// redraw them ([`Engine::obstacle_meshes`]) when it does.
    pub fn obstacles_version(&self) -> u64 {
        self.sim.obstacles_version()
    }

    /// True once the static obstacles were moved live since the build: the scene's initial water was laid
    /// out around them where they were, so a reset should rebuild the scene instead.
    pub fn obstacles_moved(&self) -> bool {
        self.sim.obstacles_version() > 0 || self.sim.obstacles_moving()
    }

    /// Records that the scene now lives in the file `file` (saved there): relative paths resolve
    /// against its folder, errors name it, and `saved`'s terrain and fluid files (the same files, their
    /// paths rewritten, e.g. made absolute) replace the scene's. Nothing is rebuilt.
    pub fn moved_to(&mut self, file: &Path, saved: &Scene) {
        self.scene.base_dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        self.scene.file = file.to_path_buf();
        self.scene.terrain = saved.terrain.clone();
        self.scene.fluid_files = saved.fluid_files.clone();
    }

    /// Puts the water back where the scene starts it and the clock to zero; parameters and sources stay.
    pub fn reset(&mut self, ctx: &GpuContext) {
        self.sim.reset(ctx);
    }

    /// The particles for the renderer, as buffers and plain data: the positions and velocities, the
    /// count, the version that tells a paused simulation, the wave maker's paddle on the simulated
    /// clock when there is one, the diffuse particles (spray, foam, bubbles) while they are on, and the
    /// glass tank of a box scene ([`Scene::draws_tank`]).
    pub fn particles(&self) -> ParticleSource<'_> {
        let sim = &self.sim;
        let paddle = paddle(sim);
        let d = sim.domain();
        let tank = self.scene.draws_tank().then(|| Tank {
            min: d.min.into(),
            max: d.max.into(),
            floor: self.scene.terrain.is_none(),
        });
        ParticleSource {
            positions: sim.positions(),
            velocities: sim.velocities(),
            count: sim.capacity(),
            version: Some(sim.particles_version()),
            paddle,
            diffuse: sim.diffuse().map(|d| DiffuseSource {
                particles: d.particles,
                draw_args: d.draw_args,
                draw_offset: d.draw_offset,
                time_offset: d.time_offset,
                capacity: d.capacity,
            }),
            tank,
            clock: Some(sim.step_state()),
        }
    }
}

/// The wave maker's paddle of `sim` for the renderer (its geometry and motion, and the step state whose
/// clock moves it), when its parameters have one. A rank of a decomposed simulation draws it as one GPU
/// does: every rank runs the same clock.
pub fn paddle(sim: &Simulation) -> Option<(PaddleUniform, &wgpu::Buffer)> {
    sim.params().wave_maker.map(|w| {
        let d = sim.domain();
        (PaddleUniform::new(d.min, d.max, w.axis.index() as u32, w.rest, w.amplitude, w.omega()), sim.step_state())
    })
}

/// The particles of `scene` (at its own `solver.dx`, on the full-resolution lattice), after checking its
/// values at that spacing and its estimate and its fluid files' declared counts against the GPU's limits
/// ([`check_fits`]: the bindings;
/// [`check_memory`]: the GPU's memory when known, the host's for the build's chunks): nothing is counted
/// or generated for a scene the GPU would refuse. The particles themselves are never laid out: the
/// simulation receives them in chunks ([`SceneSetup::for_each_chunk`]).
fn checked_build(ctx: &GpuContext, scene: &Scene, options: &BuildOptions) -> Result<SceneSetup, EngineError> {
    scene.validate()?;
    let files = scene.declared_file_particles()?;
    check_fits(ctx, scene, options.sources, files, &options.sim)?;
    let dx = scene.solver.dx;
    let pool = if options.sources { sources::pool_size(&scene.emitters, dx) as u64 } else { 0 };
    let count = scene.estimate_particle_count_at(dx).saturating_add(pool).saturating_add(files);
    check_memory(&scene.origin(), count, &options.sim)?;
    match scene.build(false) {
        Ok(setup) => Ok(setup),
        Err(SceneError::Cancelled) => Err(EngineError::Cancelled),
        Err(e) => Err(e.into()),
    }
}

/// The spacing `options` build `scene` at on `ctx`.
fn spacing(ctx: &GpuContext, scene: &Scene, options: &BuildOptions) -> f32 {
    options.dx.unwrap_or_else(|| scene.effective_dx(ctx.is_cpu()))
}

/// A simulation of `scene`'s particles `setup` (built at `dx`) with `params` (their dx replaced by `dx`),
/// the scene's sources when `options.sources` (and a pool sized for its emitters), limited to what the
/// renderer can draw and to the GPU memory the engine's buffers need ([`check_memory`], on the exact count).
fn simulate(
    ctx: &GpuContext,
    scene: &Scene,
    setup: &SceneSetup,
    dx: f32,
    params: &SimParams,
    options: &BuildOptions,
) -> Result<Simulation, EngineError> {
    let params = SimParams { dx, ..params.clone() };
    let (emitters, sinks): (&[Emitter], &[Sink]) =
        if options.sources { (&scene.emitters, &scene.sinks) } else { (&[], &[]) };
    let sim_options =
        SimOptions { pool: sources::pool_size(emitters, dx), limit: Some(render_limit(ctx)), ..options.sim };
    check_memory(&scene.origin(), setup.len() + sim_options.pool as u64, &sim_options)?;
    let mut sim = Simulation::new_with(ctx, &scene.domain, setup, &params, sim_options)?;
    sim.set_sources(ctx, emitters, sinks)?;
    Ok(sim)
}

/// Where `o` puts its mesh, as the simulation's live moves take it.
fn placement(o: &ObstacleDesc) -> Placement {
    Placement { rotation: o.rotation(), position: glam::Vec3::from(o.position), scale: o.scale }
}

/// `obstacles`' meshes in world space, as the renderer takes them.
pub fn obstacle_meshes(obstacles: &[crate::sim::obstacles::Obstacle]) -> Vec<crate::render::ObstacleMesh> {
    obstacles
        .iter()
        .map(|o| crate::render::ObstacleMesh { vertices: o.world_vertices(), triangles: o.mesh.triangles.clone() })
        .collect()
}
