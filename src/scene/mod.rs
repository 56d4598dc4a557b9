//! Scene files (RON through serde): the domain box, fluid blocks filled at spacing dx, the terrain
//! (a 16-bit heightmap PNG with its units), the camera and the solver parameters.
//! `Scene::load` parses and validates a file; `Scene::build` turns it into initial particles and a
//! heightfield. Every error names the file and the problem; nothing here panics on user input.
//! The format is documented in README.md ("Scene files").

use crate::files::FileKind;
use crate::sim::params::SimParams;
use crate::terrain::Heightfield;
use glam::{Vec2, Vec3};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use thiserror::Error;

mod bodies;
pub mod coincident;
mod crowded;
mod dropped;
mod faces;
mod fluid_files;
mod heightmap;
mod invalid;
pub mod lattice;
mod obstacles;
mod validate;

pub use bodies::{check_bodies, BodyDesc};
pub use dropped::{classify_dropped_file, DropError, DroppedFile};
pub use heightmap::{heightfield_from_bytes, load_heightfield, MAX_HEIGHTMAP_DECODE_BYTES, MAX_HEIGHTMAP_DECODE_SIZE};
pub use obstacles::{check_obstacles, ObstacleDesc, MIN_SIZE_DX};
pub use validate::{check_domain, check_emitter, check_sink, check_sources, tuple, InvalidValue, MAX_DOMAIN_REACH_DX};

/// Axis-aligned box, metres.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Aabb {
    pub min: [f32; 3],
    pub max: [f32; 3],
}

/// A box of water filled with particles on a cubic lattice of spacing dx.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluidBlock {
    pub min: [f32; 3],
    pub max: [f32; 3],
    /// Initial velocity, m/s.
    #[serde(default)]
    pub velocity: [f32; 3],
}

/// Water read from a particle file (binary or ASCII PLY, or VTU; see [`crate::particle_io`]): every
/// particle in it, moved by `offset`, with the file's velocities (zero where it has none). The particles
/// should lie about dx apart, as the blocks' lattice does (each gets the mass of a lattice particle).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluidFile {
    /// Path of the `.ply` or `.vtu` file, relative to the scene file.
    pub path: String,
    /// Added to every position in the file, metres.
    #[serde(default)]
    pub offset: [f32; 3],
}

/// An inflow: water enters through a disc at `center`, facing along `velocity`, at `rate` cubic metres per
/// second (a river's source, a fountain). Particles are drawn from a fixed pool sized when the scene is built.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Emitter {
    /// Centre of the inflow disc, metres.
    pub center: [f32; 3],
    /// Radius of the inflow disc, metres.
    pub radius: f32,
    /// Velocity of the entering water, m/s; its direction is the disc's normal.
    pub velocity: [f32; 3],
    /// Volume flow, m^3/s.
    pub rate: f32,
}

/// An outflow: particles entering this box are removed (and return to the emitters' pool).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sink {
    pub min: [f32; 3],
    pub max: [f32; 3],
}

/// Terrain from a 16-bit grayscale heightmap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerrainDesc {
    /// PNG path, relative to the scene file. A JSON beside it with the same stem gives units
    /// (`min_elevation_m`, `max_elevation_m`, `cell_size_x_m`, `cell_size_y_m`).
    pub heightmap: String,
    /// Optional crop in pixels: (x, y, width, height), row 0 = north edge.
    #[serde(default)]
    pub crop: Option<[u32; 4]>,
    /// Horizontal size the crop is scaled to, metres along (x, z). The terrain's origin is the domain's min corner.
    pub extent: [f32; 2],
    /// Vertical exaggeration over true scale (1 = same scale as horizontally).
    #[serde(default = "one")]
    pub vertical_scale: f32,
    /// World height of the crop's lowest point, metres.
    #[serde(default)]
    pub base: f32,
}

fn one() -> f32 {
    1.0
}

/// Whether the simulation box is drawn as a glass tank standing on a ground plane (the water in a box
/// scene then stands in something, not in the air). Only what is drawn; the walls the water feels are the
/// domain's either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TankStyle {
    /// A glass tank for scenes without terrain, none for scenes with terrain.
    #[default]
    Auto,
    /// Glass walls around the domain with a frame at their edges, on a ground plane.
    Glass,
    /// No tank and no ground: the terrain (or the flat floor) alone.
    None,
}

impl TankStyle {
    fn is_auto(&self) -> bool {
        *self == TankStyle::Auto
    }
}

/// Orbit camera placement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraDesc {
    /// Point the camera orbits, metres.
    pub target: [f32; 3],
    /// Distance from the target, metres.
    pub distance: f32,
    /// Rotation about +y, degrees.
    pub yaw_deg: f32,
    /// Elevation above the horizontal, degrees (positive looks down).
    pub pitch_deg: f32,
    /// Vertical field of view, degrees.
    #[serde(default = "default_fov")]
    pub fov_y_deg: f32,
}

fn default_fov() -> f32 {
    50.0
}

/// A whole scene as written in a `.ron` file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene {
    pub name: String,
    /// The simulation box; no particle leaves it.
    pub domain: Aabb,
    /// Terrain heightfield; `None` gives a flat floor at the domain's bottom.
    #[serde(default)]
    pub terrain: Option<TerrainDesc>,
    /// The glass tank drawn around the domain: `Auto` (the default) is `Glass` without terrain, `None`
    /// with terrain ([`Scene::draws_tank`]).
    #[serde(default, skip_serializing_if = "TankStyle::is_auto")]
    pub tank: TankStyle,
    /// Boxes of water; may be empty when `fluid_files` bring the water.
    #[serde(default)]
    pub fluid_blocks: Vec<FluidBlock>,
    /// Water from particle files (PLY or VTU); empty by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fluid_files: Vec<FluidFile>,
    /// Inflows (rivers, fountains); empty by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emitters: Vec<Emitter>,
    /// Outflow regions; empty by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sinks: Vec<Sink>,
    /// Static obstacles from mesh files; empty by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub obstacles: Vec<ObstacleDesc>,
    /// Floating and sinking rigid bodies from mesh files, two-way coupled with the water; empty by
    /// default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bodies: Vec<BodyDesc>,
    pub camera: CameraDesc,
    #[serde(default)]
    pub solver: SimParams,
    /// On a CPU adapter (lavapipe) dx is multiplied by this factor (>= 1) so the app stays interactive.
    #[serde(default = "default_cpu_dx_scale")]
    pub cpu_dx_scale: f32,
    /// Directory of the scene file (for resolving relative paths); not part of the file format.
    #[serde(skip)]
    pub base_dir: PathBuf,
    /// The scene file this was read from (empty when made in code), named by errors found later, e.g. by
    /// the engine at another spacing ([`Scene::origin`]); not part of the file format.
    #[serde(skip)]
    pub file: PathBuf,
}

fn default_cpu_dx_scale() -> f32 {
    2.0
}

/// Why a scene could not be loaded or built. Each message carries its cause as text (no `source()`), so
/// printing the error with its chain (`{:#}`) shows the cause once.
#[derive(Debug, Error)]
pub enum SceneError {
    #[error("cannot read scene file {path}: {cause}")]
    Io { path: PathBuf, cause: std::io::Error },
    #[error("scene file {path} is malformed: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("scene {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("heightmap {path}: {message}")]
    Heightmap { path: PathBuf, message: String },
    /// A scene, heightmap or units file that could not be read (missing, not a regular file, past its
    /// size limit; the message names the file).
    #[error(transparent)]
    File(#[from] crate::files::ReadError),
    /// The build was cancelled while it read a fluid file or a mesh ([`crate::cancel`]).
    #[error("the build was cancelled")]
    Cancelled,
}

/// What a scene builds into: its initial particles in world space and the terrain. The fluid blocks'
/// lattice is not laid out in memory: it is counted when built ([`SceneSetup::len`]) and handed out in
/// chunks ([`SceneSetup::for_each_chunk`], in order: the blocks' particles, then the listed ones, e.g. the
/// fluid files'); [`SceneSetup::to_vecs`] lays everything out for tests and small scenes.
#[derive(Clone, Debug)]
pub struct SceneSetup {
    lattice: lattice::Lattice,
    /// Particles given as a list, after the lattice's: positions, metres.
    positions: Vec<Vec3>,
    /// Their velocities, m/s.
    velocities: Vec<Vec3>,
    /// Particles in all: the lattice's kept points and the listed ones.
    count: u64,
    pub terrain: Heightfield,
    /// The static obstacles, placed, with their distance fields; no particle starts inside one.
    pub obstacles: Vec<crate::sim::obstacles::Obstacle>,
    /// The rigid bodies at their starting frames; no particle starts inside one.
    pub bodies: Vec<crate::sim::bodies::Body>,
}

impl SceneSetup {
    /// Particles given one by one (positions in metres, velocities in m/s, the same length; a caller that
    /// filters a scene's particles, a test), over `terrain`. Velocities beyond the positions are dropped,
    /// missing ones are zero.
    pub fn from_particles(positions: Vec<Vec3>, mut velocities: Vec<Vec3>, terrain: Heightfield) -> Self {
        velocities.resize(positions.len(), Vec3::ZERO);
        let count = positions.len() as u64;
        Self {
            lattice: lattice::Lattice::default(),
            positions,
            velocities,
            count,
            terrain,
            obstacles: Vec::new(),
            bodies: Vec::new(),
        }
    }

    /// This setup with `obstacles`, the particles closer than `dx / 2` to one or inside it removed: the
    /// lattice is laid out as a list (the particle limit was checked before the build), so a scene with
    /// obstacles keeps 24 bytes per particle on the CPU while it is built.
    /// The same for the `bodies`.
    fn around(
        self,
        obstacles: Vec<crate::sim::obstacles::Obstacle>,
        bodies: Vec<crate::sim::bodies::Body>,
        dx: f32,
    ) -> Self {
        if obstacles.is_empty() && bodies.is_empty() {
            return self;
        }
        let (positions, velocities) = self.to_vecs();
        let all = obstacles.iter().chain(bodies.iter().map(|b| &b.obstacle));
        let keep = |p: &Vec3| all.clone().all(|o| o.distance(*p) >= 0.5 * dx * (1.0 - 1e-4));
        let (positions, velocities): (Vec<Vec3>, Vec<Vec3>) =
            positions.into_iter().zip(velocities).filter(|(p, _)| keep(p)).unzip();
        Self { obstacles, bodies, ..Self::from_particles(positions, velocities, self.terrain) }
    }

    /// The fastest initial speed of any particle, m/s (the blocks' velocities and the listed particles').
    pub fn max_speed(&self) -> f32 {
        let blocks = self.lattice.blocks.iter().map(|b| b.velocity.length());
        blocks.chain(self.velocities.iter().map(|v| v.length())).fold(0.0, f32::max)
    }

    /// This setup without the points that would start denser than rest beside an obstacle or a body
    /// ([`crowded::MOST`] of rho0, `crowded::start_density`), in the box `domain` at spacing `dx` and
    /// smoothing length `h`; with the count left out. A setup without obstacles or bodies is unchanged.
    fn uncrowded(self, domain: &Aabb, dx: f32, h: f32) -> (Self, usize) {
        if self.obstacles.is_empty() && self.bodies.is_empty() {
            return (self, 0);
        }
        let all: Vec<&crate::sim::obstacles::Obstacle> =
            self.obstacles.iter().chain(self.bodies.iter().map(|b| &b.obstacle)).collect();
        let (min, max) = (Vec3::from(domain.min), Vec3::from(domain.max));
        let density = crowded::start_density(&self.positions, &all, &self.terrain, (min, max), dx, h);
        let keep: Vec<bool> = density.iter().map(|d| d.is_none_or(|d| d <= crowded::MOST)).collect();
        let dropped = keep.iter().filter(|k| !**k).count();
        if dropped == 0 {
            return (self, 0);
        }
        let (positions, velocities): (Vec<Vec3>, Vec<Vec3>) = self
            .positions
            .iter()
            .zip(&self.velocities)
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|((p, v), _)| (*p, *v))
            .unzip();
        let (obstacles, bodies) = (self.obstacles, self.bodies);
        (Self { obstacles, bodies, ..Self::from_particles(positions, velocities, self.terrain) }, dropped)
    }

    /// Particles in all (the blocks' kept lattice points and the listed ones).
    pub fn len(&self) -> u64 {
        self.count
    }

    /// True when no particle is built.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bounds (min, max) of every particle, metres, or `None` without particles: from the lattice's
    /// columns (a few binary searches per column) and the listed particles; nothing is laid out.
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        let listed = self
            .positions
            .iter()
            .fold(None, |b: Option<(Vec3, Vec3)>, &p| Some(b.map_or((p, p), |(lo, hi)| (lo.min(p), hi.max(p)))));
        match (self.lattice.bounds(&self.terrain), listed) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (a, b) => a.or(b),
        }
    }
}

/// Names of the scenes embedded in the binary (see [`Scene::builtin`]).
pub const BUILTIN_SCENES: &[&str] =
    &["valley", "valley_river", "valley_town", "dam_break", "dam_break_box", "dam_break_crates", "tank", "wave_tank"];

/// (name, RON text) of every built-in scene.
const BUILTIN_SCENE_TEXT: &[(&str, &str)] = &[
    ("valley", include_str!("../../assets/scenes/valley.ron")),
    ("valley_river", include_str!("../../assets/scenes/valley_river.ron")),
    ("valley_town", include_str!("../../assets/scenes/valley_town.ron")),
    ("dam_break", include_str!("../../assets/scenes/dam_break.ron")),
    ("dam_break_box", include_str!("../../assets/scenes/dam_break_box.ron")),
    ("dam_break_crates", include_str!("../../assets/scenes/dam_break_crates.ron")),
    ("tank", include_str!("../../assets/scenes/tank.ron")),
    ("wave_tank", include_str!("../../assets/scenes/wave_tank.ron")),
];

/// Directory the built-in scenes resolve relative paths against (relative to the working directory).
/// Files missing there fall back to the copies embedded in the binary (`heightmap::EMBEDDED_TERRAIN`).
const BUILTIN_SCENE_DIR: &str = "assets/scenes";

/// Largest heightfield accepted after the crop, samples per axis.
pub const MAX_HEIGHTMAP_SIZE: u32 = 4096;

/// Most particles a scene may build (`u32` indices on the GPU), counted first as its fluid blocks'
/// lattice points before the terrain removes any; beyond it `build` fails before anything is laid out.
/// The engine checks the GPU's own, lower, limits before it builds (`engine::check_fits`: the storage
/// binding, the GPU memory; 4 194 304 particles on lavapipe). Nothing in a build grows with the particle
/// count but the fluid files' particles: the blocks' lattice is counted and handed out in chunks.
pub const MAX_PARTICLES: u64 = u32::MAX as u64;

impl Scene {
    /// Parses RON `text` (a leading UTF-8 byte-order mark, as some editors write, is skipped) and
    /// validates it; `path` names the file in errors and its parent becomes `base_dir`. Parse errors
    /// give [`SceneError::Parse`] with `line:column` and what was expected.
    pub fn from_str(text: &str, path: &Path) -> Result<Scene, SceneError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut scene: Scene = ron::from_str(text).map_err(|e| SceneError::Parse {
            path: path.to_path_buf(),
            message: format!("at line:column {}: {}", e.span.start, e.code),
        })?;
        scene.base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        scene.file = path.to_path_buf();
        scene.validate().map_err(|e| match e {
            SceneError::Invalid { message, .. } => SceneError::Invalid { path: path.to_path_buf(), message },
            other => other,
        })?;
        Ok(scene)
    }

    /// Parses and validates the bytes of a scene file: UTF-8 text (else [`SceneError::Parse`] naming the
    /// first byte that is not), then [`Scene::from_str`]. What [`Scene::load`] does once the file is read.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Scene, SceneError> {
        let text = std::str::from_utf8(bytes).map_err(|e| SceneError::Parse {
            path: path.to_path_buf(),
            message: format!("not UTF-8 text (invalid byte at offset {})", e.valid_up_to()),
        })?;
        Scene::from_str(text, path)
    }

    /// Reads, parses and validates the scene file at `path`. It is read through [`crate::files`]: a
    /// folder, FIFO or device, or a file over [`FileKind::Scene`]'s limit (16 MiB), is refused at once
    /// ([`SceneError::File`]); the bytes go to [`Scene::from_bytes`].
    pub fn load(path: &Path) -> Result<Scene, SceneError> {
        let bytes = crate::files::read(path, FileKind::Scene)?;
        Scene::from_bytes(&bytes, path)
    }

    /// Writes the scene as pretty RON: first to a temporary file beside `path`, then renamed over it,
    /// so a crash never leaves a half-written scene. `base_dir` is not written.
    pub fn save(&self, path: &Path) -> Result<(), SceneError> {
        let config = ron::ser::PrettyConfig::new().compact_arrays(true);
        let text = ron::ser::to_string_pretty(self, config)
            .map_err(|e| SceneError::Invalid { path: path.to_path_buf(), message: format!("cannot write RON: {e}") })?;
        let Some(file_name) = path.file_name() else {
            let cause = std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file");
            return Err(SceneError::Io { path: path.to_path_buf(), cause });
        };
        let mut tmp_name = file_name.to_os_string();
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        std::fs::write(&tmp, text + "\n").map_err(|cause| SceneError::Io { path: tmp.clone(), cause })?;
        crate::files::replace(&tmp, path).map_err(|cause| SceneError::Io { path: path.to_path_buf(), cause })
    }

    /// The built-in scene `name` (one of [`BUILTIN_SCENES`]), parsed from the text embedded in the
    /// binary. Its `base_dir` is `assets/scenes` under the working directory; heightmaps missing there
    /// come from the embedded copies, so built-in scenes work from any folder.
    pub fn builtin(name: &str) -> Option<Scene> {
        let (_, text) = BUILTIN_SCENE_TEXT.iter().find(|(n, _)| *n == name)?;
        let path = Path::new(BUILTIN_SCENE_DIR).join(format!("{name}.ron"));
        match Scene::from_str(text, &path) {
            Ok(scene) => Some(scene),
            Err(e) => {
                log::error!("built-in scene {name} is broken: {e}");
                None
            }
        }
    }

    /// A copy whose particle spacing is `dx` metres on any adapter: `solver.dx = dx`, with `cpu_dx_scale`
    /// folded in (set to 1), so [`Scene::build`] gives the same particles on a CPU adapter too.
    pub fn at_dx(&self, dx: f32) -> Scene {
        let mut s = self.clone();
        s.solver.dx = dx;
        s.cpu_dx_scale = 1.0;
        s
    }

    /// Whether the domain is drawn as a glass tank on a ground plane: [`TankStyle::Glass`], or
    /// [`TankStyle::Auto`] in a scene without terrain.
    pub fn draws_tank(&self) -> bool {
        match self.tank {
            TankStyle::Auto => self.terrain.is_none(),
            TankStyle::Glass => true,
            TankStyle::None => false,
        }
    }

    /// Particle spacing actually used, metres: `solver.dx`, times `cpu_dx_scale` on a CPU adapter.
    pub fn effective_dx(&self, on_cpu_adapter: bool) -> f32 {
        self.solver.dx * if on_cpu_adapter { self.cpu_dx_scale } else { 1.0 }
    }

    /// Upper bound on the particle count `build` yields: the lattice points of every block, before
    /// those under the terrain or at the walls are skipped. Cheap (no heightmap is read).
    pub fn estimate_particle_count(&self, on_cpu_adapter: bool) -> u64 {
        self.estimate_particle_count_at(self.effective_dx(on_cpu_adapter))
    }

    /// [`Scene::estimate_particle_count`] at spacing `dx` metres.
    pub fn estimate_particle_count_at(&self, dx: f32) -> u64 {
        self.fluid_blocks
            .iter()
            .map(|b| (0..3).fold(1u64, |n, a| n.saturating_mul(lattice_count(b.max[a] - b.min[a], dx))))
            .fold(0u64, u64::saturating_add)
    }

    /// Builds the initial particles and the terrain. Each block is filled on a cubic lattice of spacing
    /// [`Scene::effective_dx`] (points at `min + (i + 0.5) dx`), its side faces closer to a side wall than
    /// the kernel's support 2h moved onto the wall (`lattice::Block::snapped_to_walls`: such a gap
    /// cannot be resolved), skipping points closer than dx/2 to the
    /// terrain, to a domain wall or to a wave maker's paddle at its rest position (and those behind it);
    /// then every particle of each fluid file follows, moved by its offset (read through the bounded
    /// reader; see `fluid_files.rs` for the checks); the obstacles are read and placed
    /// (`obstacles.rs`) and every particle closer than dx/2 to one is dropped. Fails on an invalid scene,
    /// a bad heightmap, blocks whose lattices overlap, a particle file that cannot be read or holds
    /// particles outside the domain, inside the terrain or an obstacle, or not finite, more than
    /// [`MAX_PARTICLES`] or no particle at all.
    pub fn build(&self, on_cpu_adapter: bool) -> Result<SceneSetup, SceneError> {
        self.validate()?;
        let dx = self.effective_dx(on_cpu_adapter);
        let estimate = self.estimate_particle_count(on_cpu_adapter);
        if estimate > MAX_PARTICLES {
            return Err(self.invalid(format!(
                "the fluid blocks would hold up to {estimate} particles at dx = {dx} m (limit {MAX_PARTICLES}); \
                 raise solver.dx{}",
                if on_cpu_adapter { " or cpu_dx_scale" } else { "" }
            )));
        }
        let d = &self.domain;
        let terrain = match &self.terrain {
            Some(desc) => load_heightfield(desc, &self.base_dir, d)?,
            None => Heightfield::flat(
                Vec2::new(d.min[0], d.min[2]),
                Vec2::new(d.max[0] - d.min[0], d.max[2] - d.min[2]),
                d.min[1],
            ),
        };
        if terrain.range().1 >= d.max[1] {
            log::warn!("scene {}: the terrain reaches above the domain's top ({} m)", self.name, d.max[1]);
        }
        // Tolerance so that points exactly dx/2 from a wall or a flat floor are kept despite rounding.
        let eps = 1e-4 * dx;
        let mut lo = Vec3::from(d.min) + (0.5 * dx - eps);
        if let Some(w) = &self.solver.wave_maker {
            // The wave maker's paddle starts at its rest position and replaces that min wall.
            lo[w.axis.index()] += w.rest;
        }
        let hi = Vec3::from(d.max) - (0.5 * dx - eps);
        let support = self.solver.h_over_dx * dx * 2.0;
        let paddle = self.solver.wave_maker.map(|w| w.axis.index());
        let blocks: Vec<lattice::Block> = self
            .fluid_blocks
            .iter()
            .map(|b| lattice::Block {
                min: Vec3::from(b.min),
                n: [0, 1, 2].map(|a| lattice_count(b.max[a] - b.min[a], dx)),
                velocity: Vec3::from(b.velocity),
            })
            .filter(|b| !b.n.contains(&0))
            .map(|b| b.snapped_to_walls(Vec3::from(d.min), Vec3::from(d.max), dx, support, paddle))
            .collect();
        if let Some((k, l, lo, hi)) = lattice::overlapping_blocks(&blocks, dx) {
            return Err(self.invalid(format!(
                "fluid blocks {} and {} overlap in ({:.4}, {:.4}, {:.4}) .. ({:.4}, {:.4}, {:.4}) at dx = {dx} m: \
                 the water there would be counted twice (particles of both closer than dx); let the blocks touch \
                 instead of overlapping",
                k + 1,
                l + 1,
                lo.x,
                lo.y,
                lo.z,
                hi.x,
                hi.y,
                hi.z
            )));
        }
        let lattice = lattice::Lattice { blocks, dx, lo, hi, eps };
        let mut count = lattice.count(&terrain);
        let obstacles = self.place_obstacles(dx, support)?;
        let bodies = self.place_bodies(dx, support)?;
        let placed: Vec<_> = obstacles.iter().chain(bodies.iter().map(|b| &b.obstacle)).cloned().collect();
        self.check_samples(&placed, dx)?;
        let (mut positions, mut velocities) = (Vec::new(), Vec::new());
        for (k, f) in self.fluid_files.iter().enumerate() {
            let water = self.load_fluid_file(k, f, &terrain, &placed)?;
            count += water.positions.len() as u64;
            if count > MAX_PARTICLES {
                return Err(
                    self.invalid(format!("fluid file {}: its particles make more than {MAX_PARTICLES} in all", k + 1))
                );
            }
            positions.extend(water.positions);
            velocities.extend(water.velocities);
        }
        let setup =
            SceneSetup { lattice, positions, velocities, count, terrain, obstacles: Vec::new(), bodies: Vec::new() };
        let setup = setup.around(obstacles, bodies, dx);
        let (setup, crowded) = setup.uncrowded(d, dx, self.solver.h_over_dx * dx);
        if crowded > 0 {
            log::info!(
                "scene {}: {crowded} particles beside obstacles left out: they would start over {} rho0",
                self.name,
                crowded::MOST
            );
        }
        if setup.is_empty() {
            return Err(self.invalid(format!(
                "scene \"{}\" builds no particles at dx = {dx} m: every lattice point of its fluid blocks is \
                 under the terrain, inside an obstacle or a body or within dx/2 of a wall",
                self.name
            )));
        }
        Ok(setup)
    }
}

/// Lattice points of spacing `dx` that fit in `len` metres (0 for a non-finite or negative ratio).
fn lattice_count(len: f32, dx: f32) -> u64 {
    let n = (len as f64 / dx as f64 + 1e-4).floor();
    if n.is_finite() && n > 0.0 {
        n.min(u32::MAX as f64) as u64
    } else {
        0
    }
}
