//! Checkpoints: the whole state of a running simulation in one file, and a run resumed from it that goes
//! on as the original would (`waterview run --resume FILE`, the Simulation panel's "Save checkpoint" and
//! "Resume").
//!
//! What is saved ([`SimState`]): every particle's position, density, velocity and pressure, the parked
//! pool included (DFSPH warm-starts its density solve from the pressures, so they are state), the step
//! state (time, dt, the largest speed that sets the next CFL step, the step counter), the emitters' owed
//! volume, the neighbour grid's box and the solver iteration bounds; the wave maker's phase is the time;
//! the floating and sinking bodies' motion (rapier's frames and velocities, the water's last forces on
//! them: [`crate::sim::bodies::BodiesSnapshot`], in the header). Rapier's contact caches are not kept,
//! and the water's impulses still in flight to the CPU when the state is saved are lost to the bodies, so
//! a resumed run with bodies goes on close to, not exactly as, the original.
//! With it, a header: the scene as last applied (RON, as a scene file: its solver parameters, emitters and
//! sinks as edited live), the spacing in use, the particle counts and a checksum of the terrain, so a
//! resume into another scene is refused with the difference named.
//!
//! The file (little-endian): the magic `WVCHECKP`, a `u32` version ([`VERSION`]), a `u32` header length
//! (at most [`MAX_HEADER`] bytes), the header (RON text), a CRC-32 of everything before it (magic,
//! version, length and header), then the state: the 32-byte step state, eight `f32` owed volumes,
//! `capacity` positions and `capacity` velocities (`[f32; 4]` each), and a CRC-32 of the state. Reading is
//! bounded ([`crate::files`], kind [`FileKind::Checkpoint`]) and checks, in order: the magic, version and
//! header length, the header's checksum (a changed digit in the header changed the physics silently, and
//! a flipped bit blamed the scene file it names), the header's values (`check_header`: its scene parsed
//! and validated at its spacing as a scene file's is, and every other field against its range), the
//! particle count against the GPU's limit, the file's size against the counts (exact) before anything of
//! that size is allocated, the state's checksum, and the state's values (`check_state`: finite, inside
//! the domain, speeds, densities, the step state, the emitters' owed volumes, and no pile of coincident
//! live particles, [`crate::scene::coincident`]). A resume ([`Engine::resume`]) then refuses a
//! scene that differs from the checkpoint's in its domain, terrain, initial water, obstacles or bodies,
//! naming the field. Version 1 files (no header checksum) are refused by their version.

use super::{BuildOptions, Engine, EngineError};
use crate::files::{self, FileKind, ReadError};
use crate::gpu::GpuContext;
use crate::scene::{Aabb, Scene, SceneError};
use crate::sim::gpu_data::StepState;
use crate::sim::{SimState, StateLayout};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

mod checks;
mod ranks;

use checks::{check_header, check_state, placements_differ, separate_coincident};
pub use ranks::RanksState;

/// The first bytes of a checkpoint file.
pub const MAGIC: &[u8; 8] = b"WVCHECKP";
/// The format version written (and the only one read): 2, with a checksum of the header (version 1 had
/// none).
pub const VERSION: u32 = 2;
/// Most bytes of a checkpoint's header (the scene's RON and a few numbers: a few KiB).
pub const MAX_HEADER: u32 = 1 << 20;

/// Bytes of the state before the particles: the step state and the owed volumes.
const STATE_FIXED: u64 = size_of::<StepState>() as u64 + 4 * crate::sim::sources::MAX_SOURCES as u64;

/// Latest simulated time a checkpoint may hold, s: an f32 clock there no longer advances by the
/// millisecond steps of a simulation (its spacing is 1 s at 1e7 s).
pub const MAX_TIME: f32 = 1e7;

/// Fastest particle or body a checkpoint may hold, m/s: ten times what a scene may start with
/// ([`crate::sim::params::MAX_SPEED`]); a block at 1 000 m/s blows up within a frame.
pub const MAX_SAVED_SPEED: f32 = 10.0 * crate::sim::params::MAX_SPEED;

/// Largest density a live particle may have in a checkpoint, in units of the scene's rest density.
pub const MAX_DENSITY_RHO0: f32 = 100.0;

/// Why a checkpoint could not be written, read or resumed. Messages name the file.
#[derive(Debug, Error)]
pub enum CheckpointError {
    /// The bounded reader refused the file (missing, not a regular file, past 2 GiB).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Not a checkpoint of this version, or damaged: `message` says how.
    #[error("checkpoint {}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    /// The checkpoint does not fit the scene (or the GPU) it is resumed into: `message` names the difference.
    #[error("checkpoint {}: {message}", path.display())]
    Mismatch { path: PathBuf, message: String },
    #[error("cannot write checkpoint {}: {cause}", path.display())]
    Write { path: PathBuf, cause: std::io::Error },
}

/// What a checkpoint says besides the state (RON in the file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Header {
    /// The scene as last applied, as RON (the scene file's format).
    scene: String,
    /// The file the scene came from, absolute where known (its folder resolves the scene's relative
    /// paths), or the scene's name when made in code.
    scene_file: String,
    /// Particle spacing in use, metres.
    dx: f32,
    /// Whether the scene's emitters and sinks run.
    sources: bool,
    domain: Aabb,
    /// CRC-32 of the terrain heights the simulation uses (clamped into the domain), and its samples.
    terrain_crc: u32,
    terrain_samples: [u32; 2],
    /// The scene's initial particles and all particles (with the pool).
    scene_particles: u32,
    capacity: u32,
    grid_origin: [f32; 3],
    grid_dims: [u32; 3],
    iterations: Option<(u32, u32)>,
    /// The floating and sinking bodies' motion (none in a scene without bodies, and in files written
    /// before bodies were saved).
    #[serde(default)]
    bodies: Option<crate::sim::bodies::BodiesSnapshot>,
}

/// A simulation's saved state with what it belongs to. Made by [`Engine::checkpoint_blocking`] (or,
/// without waiting, [`Engine::encode_checkpoint`] and [`PendingCheckpoint::finish`]), written by
/// [`Checkpoint::write`], read by [`Checkpoint::read`] and resumed by [`Engine::resume`].
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    header: Header,
    state: SimState,
    /// The file it was read from (named by errors), or empty.
    path: PathBuf,
}

/// A checkpoint whose state is on its way back from the GPU ([`Engine::encode_checkpoint`]).
#[derive(Clone, Debug)]
pub struct PendingCheckpoint {
    header: Header,
    layout: StateLayout,
}

impl PendingCheckpoint {
    /// Bytes of the copy the GPU writes.
    pub fn bytes(&self) -> u64 {
        self.layout.bytes()
    }

    /// The checkpoint from the copy's bytes (any thread). `None` when they are too short.
    pub fn finish(&self, bytes: &[u8]) -> Option<Checkpoint> {
        let view = self.layout.split(bytes)?;
        let sources_at = StateLayout::SOURCES as usize;
        let sources: crate::sim::sources::SourcesGpu =
            bytemuck::pod_read_unaligned(bytes.get(sources_at..StateLayout::POSITIONS as usize)?);
        let h = &self.header;
        Some(Checkpoint {
            header: h.clone(),
            state: SimState {
                step: view.step,
                emit_carry: sources.state.map(|s| s.carry),
                positions: view.positions.to_vec(),
                velocities: view.velocities.to_vec(),
                grid_origin: h.grid_origin,
                grid_dims: h.grid_dims,
                iterations: h.iterations,
            },
            path: PathBuf::new(),
        })
    }
}

/// CRC-32 of a terrain's heights (as the simulation clamps them) and sample counts.
fn terrain_crc(t: &crate::terrain::Heightfield) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&t.nx.to_le_bytes());
    h.update(&t.nz.to_le_bytes());
    h.update(bytemuck::cast_slice(&[t.origin.x, t.origin.y, t.extent.x, t.extent.y]));
    h.update(bytemuck::cast_slice(&t.heights));
    h.finalize()
}

/// The scene as RON (a scene file's text) and the absolute path of the file it came from (empty for a
/// scene made in code), for a checkpoint's header. Errors: the scene cannot be written as RON.
fn scene_text(scene: &Scene) -> Result<(String, String), SceneError> {
    let config = ron::ser::PrettyConfig::new().compact_arrays(true);
    let text = ron::ser::to_string_pretty(scene, config)
        .map_err(|e| SceneError::Invalid { path: scene.origin(), message: format!("cannot be written as RON: {e}") })?;
    let file = &scene.file;
    let scene_file = if file.as_os_str().is_empty() {
        String::new()
    } else {
        std::path::absolute(file).unwrap_or_else(|_| file.clone()).display().to_string()
    };
    Ok((text, scene_file))
}

impl Checkpoint {
    /// The spacing the state was saved at, metres.
    pub fn dx(&self) -> f32 {
        self.header.dx
    }

    /// Particles the scene started with (the rest of [`Checkpoint::capacity`] is the emitters' pool).
    pub fn scene_particles(&self) -> u32 {
        self.header.scene_particles
    }

    /// The file it was read from, or empty.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `terrain` (as a simulation of scene `name` clamps it) is the one the state was saved over.
    /// Errors: [`CheckpointError::Mismatch`] naming the sample counts (a heightmap or crop changed).
    pub fn check_terrain(&self, terrain: &crate::terrain::Heightfield, name: &str) -> Result<(), CheckpointError> {
        let h = &self.header;
        if terrain_crc(terrain) == h.terrain_crc {
            return Ok(());
        }
        Err(CheckpointError::Mismatch {
            path: self.path.clone(),
            message: format!(
                "scene `{name}` has another terrain ({}x{} samples, checkpoint {}x{}; its heightmap or crop changed?)",
                terrain.nx, terrain.nz, h.terrain_samples[0], h.terrain_samples[1]
            ),
        })
    }
}

impl Engine {
    /// The header of a checkpoint of this engine as it is now (the CPU side of the state).
    fn checkpoint_header(&self) -> Result<Header, EngineError> {
        let sim = &self.sim;
        let (scene, scene_file) = scene_text(&self.scene)?;
        let grid = sim.grid_shape();
        let t = sim.terrain();
        Ok(Header {
            scene,
            scene_file,
            dx: sim.params().dx,
            sources: self.options.sources,
            domain: *sim.domain(),
            terrain_crc: terrain_crc(t),
            terrain_samples: [t.nx, t.nz],
            scene_particles: self.sim.scene_particles(),
            capacity: sim.capacity(),
            grid_origin: grid.origin,
            grid_dims: grid.dims,
            iterations: sim.solver_iterations(),
            bodies: sim.bodies().map(|b| b.snapshot()),
        })
    }

    /// A checkpoint of the simulation now. **Blocks** on the GPU (batch tools, tests; the window uses
    /// [`Engine::encode_checkpoint`]). Errors: the state cannot be read back (device lost).
    pub fn checkpoint_blocking(&self, ctx: &GpuContext) -> Result<Checkpoint, EngineError> {
        let header = self.checkpoint_header()?;
        let state = self.sim.read_state_blocking(ctx)?;
        Ok(Checkpoint { header, state, path: PathBuf::new() })
    }

    /// Records a copy of the state into `dst` (at offset 0; `COPY_DST` and [`Engine::checkpoint_bytes`]
    /// long) in the frame's encoder and returns what turns the copy into a checkpoint once it is mapped.
    /// Nothing waits.
    pub fn encode_checkpoint(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        dst: &wgpu::Buffer,
    ) -> Result<PendingCheckpoint, EngineError> {
        let header = self.checkpoint_header()?;
        self.sim.encode_state_copy(encoder, dst, 0);
        Ok(PendingCheckpoint { header, layout: self.sim.state_layout() })
    }

    /// Bytes of the copy [`Engine::encode_checkpoint`] records.
    pub fn checkpoint_bytes(&self) -> u64 {
        self.sim.state_layout().bytes()
    }

    /// The engine of `checkpoint` on `ctx`, going on from its state: its scene (or `scene`, which must
    /// have the same domain, terrain and initial water; the checkpoint's solver parameters, emitters and
    /// sinks replace its own) built at the checkpoint's spacing, with a pool of the checkpoint's size, and
    /// the state put back ([`crate::sim::Simulation::restore`]). `options.sim` gives the dispatch options;
    /// the spacing and sources are the checkpoint's.
    /// Errors: more particles than this GPU holds (checked before anything is built), a scene that does
    /// not match (the message names what differs), a scene or heightmap that cannot be used.
    pub fn resume(
        ctx: &GpuContext,
        scene: Option<Scene>,
        checkpoint: &Checkpoint,
        options: BuildOptions,
    ) -> Result<Engine, EngineError> {
        let h = &checkpoint.header;
        let mismatch = |message: String| CheckpointError::Mismatch { path: checkpoint.path.clone(), message };
        let limit = super::particle_limit(ctx);
        if h.capacity as u64 > limit.max {
            return Err(mismatch(format!(
                "it holds {} particles, more than this GPU can simulate: {} at most ({})",
                h.capacity, limit.max, limit.why
            ))
            .into());
        }
        let saved = checkpoint.scene()?;
        let scene = match scene {
            Some(mut s) => {
                // The water was saved around the checkpoint's obstacles and bodies: another placement
                // would start particles inside them.
                if let Some(difference) = placements_differ(&saved, &s) {
                    let name = crate::text::printable(&s.name).into_owned();
                    return Err(mismatch(format!("{difference} (scene `{name}`)")).into());
                }
                s.solver = saved.solver.clone();
                s.emitters = saved.emitters.clone();
                s.sinks = saved.sinks.clone();
                s
            }
            None => saved,
        };
        let name = crate::text::printable(&scene.name).into_owned();
        if scene.domain != h.domain {
            let t = |a: &Aabb| format!("{} .. {}", crate::scene::tuple(&a.min), crate::scene::tuple(&a.max));
            return Err(mismatch(format!(
                "it was saved in the domain {}; scene `{name}` has {}",
                t(&h.domain),
                t(&scene.domain)
            ))
            .into());
        }
        let options = BuildOptions { dx: Some(h.dx), sources: h.sources, ..options };
        let mut engine = Engine::new(ctx, scene, options)?;
        let built = engine.sim.scene_particles();
        if built != h.scene_particles {
            return Err(mismatch(format!(
                "its scene started with {} particles at dx = {} m; scene `{name}` builds {built} there",
                h.scene_particles, h.dx
            ))
            .into());
        }
        checkpoint.check_terrain(engine.sim.terrain(), &name)?;
        let pool = h.capacity - h.scene_particles;
        if engine.sim.pool() < pool {
            engine.sim = engine.sim.with_pool(ctx, pool)?;
        }
        if engine.sim.capacity() != h.capacity {
            return Err(mismatch(format!(
                "it holds {} particles with its emitters' pool; scene `{name}` holds {} with its emitters",
                h.capacity,
                engine.sim.capacity()
            ))
            .into());
        }
        engine.sim.restore(ctx, &checkpoint.state)?;
        let bodies = (scene_bodies(&engine), h.bodies.as_ref().map_or(0, |b| b.bodies.len()));
        match &h.bodies {
            _ if bodies.0 != bodies.1 => {
                return Err(mismatch(format!(
                    "it holds {} floating or sinking bodies; scene `{name}` has {}",
                    bodies.1, bodies.0
                ))
                .into())
            }
            Some(b) if bodies.0 > 0 => engine.sim.restore_bodies(b).map_err(mismatch)?,
            _ => {}
        }
        Ok(engine)
    }
}

impl Checkpoint {
    /// The simulated time of the state, seconds.
    pub fn time(&self) -> f32 {
        self.state.step.time
    }

    /// Steps simulated to reach it.
    pub fn steps(&self) -> u32 {
        self.state.step.steps
    }

    /// Particles saved (the emitters' parked pool included).
    pub fn capacity(&self) -> u32 {
        self.header.capacity
    }

    /// The saved state.
    pub fn state(&self) -> &SimState {
        &self.state
    }

    /// The scene it was saved from (with the solver parameters, emitters and sinks as applied), its
    /// relative paths resolving against the folder of the scene file it came from.
    /// Errors: the saved scene is malformed (a damaged header).
    pub fn scene(&self) -> Result<Scene, EngineError> {
        let file = if self.header.scene_file.is_empty() {
            PathBuf::from("checkpoint")
        } else {
            PathBuf::from(&self.header.scene_file)
        };
        let mut scene = Scene::from_str(&self.header.scene, &file)?;
        if self.header.scene_file.is_empty() {
            scene.file = PathBuf::new();
            scene.base_dir = PathBuf::new();
        }
        Ok(scene)
    }

    /// Writes the checkpoint to `path` (the format of the module docs): first to `PATH.part`, then
    /// renamed, so `path` only ever holds a whole checkpoint. Errors name the file; nothing is left
    /// behind.
    pub fn write(&self, path: &Path) -> Result<(), CheckpointError> {
        let header = ron::ser::to_string(&self.header).map_err(|e| CheckpointError::Write {
            path: path.to_path_buf(),
            cause: std::io::Error::other(format!("the header cannot be written as RON: {e}")),
        })?;
        let s = &self.state;
        let mut state = Vec::with_capacity(STATE_FIXED as usize + s.positions.len() * 32);
        state.extend_from_slice(bytemuck::bytes_of(&s.step));
        state.extend_from_slice(bytemuck::cast_slice(&s.emit_carry));
        state.extend_from_slice(bytemuck::cast_slice(&s.positions));
        state.extend_from_slice(bytemuck::cast_slice(&s.velocities));
        let crc = crc32fast::hash(&state);
        let mut part = path.as_os_str().to_owned();
        part.push(".part");
        let part = PathBuf::from(part);
        let result = files::create(&part)
            .and_then(|file| {
                let mut w = std::io::BufWriter::new(file);
                let mut prefix = MAGIC.to_vec();
                prefix.extend_from_slice(&VERSION.to_le_bytes());
                prefix.extend_from_slice(&(header.len() as u32).to_le_bytes());
                prefix.extend_from_slice(header.as_bytes());
                w.write_all(&prefix)?;
                w.write_all(&crc32fast::hash(&prefix).to_le_bytes())?;
                w.write_all(&state)?;
                w.write_all(&crc.to_le_bytes())?;
                w.into_inner().map_err(|e| e.into_error())?.sync_all()
            })
            .and_then(|()| files::replace(&part, path));
        result.map_err(|cause| {
            let _ = std::fs::remove_file(&part);
            CheckpointError::Write { path: path.to_path_buf(), cause }
        })
    }

    /// Reads the checkpoint at `path` (see the module docs for the checks, in order) for resuming on
    /// `ctx`: a checkpoint of more particles than this GPU simulates ([`super::particle_limit`]) is
    /// refused from its header, before its particles are read. [`Engine::resume`] checks it against the
    /// scene.
    /// Errors: as [`Checkpoint::read`], and [`CheckpointError::Mismatch`] for too many particles.
    pub fn read_for(ctx: &GpuContext, path: &Path) -> Result<Checkpoint, CheckpointError> {
        Self::read_limited(path, Some(super::particle_limit(ctx)))
    }

    /// Reads the checkpoint at `path` (see the module docs for the checks, in order), checked against
    /// no GPU or scene.
    /// Errors: the file cannot be read, is not a checkpoint of this version, is truncated or damaged
    /// (size, checksum), or holds values that are not finite.
    pub fn read(path: &Path) -> Result<Checkpoint, CheckpointError> {
        Self::read_limited(path, None)
    }

    fn read_limited(path: &Path, limit: Option<crate::sim::ParticleLimit>) -> Result<Checkpoint, CheckpointError> {
        let file = files::open(path, FileKind::Checkpoint)?;
        let size = file.get_ref().metadata().map(|m| m.len()).unwrap_or(0);
        Self::guarded(path, || Self::from_reader(std::io::BufReader::new(file), size, path, limit))
    }

    /// `read` run under [`files::guarded`]: a panic while reading is an error naming the checkpoint.
    fn guarded(
        path: &Path,
        read: impl FnOnce() -> Result<Checkpoint, CheckpointError>,
    ) -> Result<Checkpoint, CheckpointError> {
        files::guarded(read)
            .unwrap_or_else(|message| Err(CheckpointError::Invalid { path: path.to_path_buf(), message }))
    }

    /// A checkpoint from the `bytes` of a checkpoint file (`path` names it in errors), with
    /// [`Checkpoint::read`]'s checks: what the file path runs once the file is open (the fuzz target's
    /// entry point).
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Checkpoint, CheckpointError> {
        Self::guarded(path, || Self::from_reader(bytes, bytes.len() as u64, path, None))
    }

    /// A checkpoint from `reader`, a file of `size` bytes (see the module docs for the checks, in order),
    /// with at most `limit`'s particles when given.
    fn from_reader(
        mut reader: impl Read,
        size: u64,
        path: &Path,
        limit: Option<crate::sim::ParticleLimit>,
    ) -> Result<Checkpoint, CheckpointError> {
        let invalid = |message: String| CheckpointError::Invalid { path: path.to_path_buf(), message };
        let io = |cause: std::io::Error| invalid(format!("cannot be read: {cause}"));
        let mut fixed = [0u8; 16];
        if size < fixed.len() as u64 {
            return Err(invalid(format!("is {size} bytes, too short for a checkpoint")));
        }
        reader.read_exact(&mut fixed).map_err(io)?;
        if &fixed[..8] != MAGIC {
            return Err(invalid("is not a waterview checkpoint (it does not start with `WVCHECKP`)".into()));
        }
        let version = u32::from_le_bytes([fixed[8], fixed[9], fixed[10], fixed[11]]);
        if version != VERSION {
            let why = if version == 1 { " (written before headers had a checksum)" } else { "" };
            return Err(invalid(format!("is format version {version}{why}; this waterview reads version {VERSION}")));
        }
        let header_len = u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]);
        if header_len > MAX_HEADER || 16 + header_len as u64 + 4 > size {
            return Err(invalid(format!("declares a header of {header_len} bytes; the file is {size} bytes")));
        }
        let mut text = vec![0u8; header_len as usize + 4];
        reader.read_exact(&mut text).map_err(io)?;
        let crc = text.split_off(header_len as usize);
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&fixed);
        hasher.update(&text);
        if hasher.finalize().to_le_bytes() != crc[..] {
            return Err(invalid("its header does not match its checksum (the file is damaged)".into()));
        }
        let text = String::from_utf8(text).map_err(|_| invalid("its header is not UTF-8 text".into()))?;
        let header: Header = ron::from_str(&text).map_err(|e| invalid(format!("its header is malformed: {e}")))?;
        let scene = check_header(&header).map_err(invalid)?;
        let n = header.capacity as u64;
        if let Some(l) = limit.filter(|l| n > l.max) {
            return Err(CheckpointError::Mismatch {
                path: path.to_path_buf(),
                message: format!(
                    "it holds {n} particles, more than this GPU can simulate: {} at most ({})",
                    l.max, l.why
                ),
            });
        }
        let expected = 16 + header_len as u64 + 4 + STATE_FIXED + n * 32 + 4;
        if size != expected {
            return Err(invalid(format!(
                "is {size} bytes; a checkpoint of {n} particles with this header is {expected} bytes (truncated or damaged)"
            )));
        }
        let mut fixed_state = [0u8; STATE_FIXED as usize];
        reader.read_exact(&mut fixed_state).map_err(io)?;
        let mut positions = vec![[0f32; 4]; n as usize];
        let mut velocities = vec![[0f32; 4]; n as usize];
        reader.read_exact(bytemuck::cast_slice_mut(&mut positions)).map_err(io)?;
        reader.read_exact(bytemuck::cast_slice_mut(&mut velocities)).map_err(io)?;
        let mut crc = [0u8; 4];
        reader.read_exact(&mut crc).map_err(io)?;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&fixed_state);
        hasher.update(bytemuck::cast_slice(&positions));
        hasher.update(bytemuck::cast_slice(&velocities));
        if hasher.finalize() != u32::from_le_bytes(crc) {
            return Err(invalid("its particle state does not match its checksum (the file is damaged)".into()));
        }
        let step: StepState = bytemuck::pod_read_unaligned(&fixed_state[..size_of::<StepState>()]);
        let emit_carry: [f32; crate::sim::sources::MAX_SOURCES] =
            bytemuck::pod_read_unaligned(&fixed_state[size_of::<StepState>()..]);
        let mut state = SimState {
            step,
            emit_carry,
            positions,
            velocities,
            grid_origin: header.grid_origin,
            grid_dims: header.grid_dims,
            iterations: header.iterations,
        };
        if check_state(&state, &header, &scene).map_err(invalid)? {
            let moved = separate_coincident(&mut state, &header);
            log::info!("{}: moved {moved} coincident particles dx/4 apart", path.display());
        }
        Ok(Checkpoint { header, state, path: path.to_path_buf() })
    }
}

/// Bodies in `engine`'s simulation.
fn scene_bodies(engine: &Engine) -> usize {
    engine.sim.bodies().map_or(0, |b| b.len())
}
