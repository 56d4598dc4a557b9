//! Scene files (RON through serde): the domain box, fluid blocks filled at spacing dx, the terrain
//! (a 16-bit heightmap PNG with its units), the camera and the solver parameters.
//! `Scene::load` parses and validates a file; `Scene::build` turns it into initial particles and a
//! heightfield. Every error names the file and the problem; nothing here panics on user input.
//! The format is documented in README.md ("Scene files").

use crate::sim::params::SimParams;
use crate::terrain::Heightfield;
use glam::{Vec2, Vec3};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use thiserror::Error;

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
    pub fluid_blocks: Vec<FluidBlock>,
    /// Inflows (rivers, fountains); empty by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emitters: Vec<Emitter>,
    /// Outflow regions; empty by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sinks: Vec<Sink>,
    pub camera: CameraDesc,
    #[serde(default)]
    pub solver: SimParams,
    /// On a CPU adapter (lavapipe) dx is multiplied by this factor (>= 1) so the app stays interactive.
    #[serde(default = "default_cpu_dx_scale")]
    pub cpu_dx_scale: f32,
    /// Directory of the scene file (for resolving relative paths); not part of the file format.
    #[serde(skip)]
    pub base_dir: PathBuf,
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
}

/// What a scene builds into: particles in world space and the terrain.
#[derive(Clone, Debug)]
pub struct SceneSetup {
    /// Initial positions, metres.
    pub positions: Vec<Vec3>,
    /// Initial velocities, m/s.
    pub velocities: Vec<Vec3>,
    pub terrain: Heightfield,
}

/// Names of the scenes embedded in the binary (see [`Scene::builtin`]).
pub const BUILTIN_SCENES: &[&str] = &["valley", "dam_break", "tank", "wave_tank"];

/// (name, RON text) of every built-in scene.
const BUILTIN_SCENE_TEXT: &[(&str, &str)] = &[
    ("valley", include_str!("../assets/scenes/valley.ron")),
    ("dam_break", include_str!("../assets/scenes/dam_break.ron")),
    ("tank", include_str!("../assets/scenes/tank.ron")),
    ("wave_tank", include_str!("../assets/scenes/wave_tank.ron")),
];

/// Directory the built-in scenes resolve relative paths against (relative to the working directory).
/// Files missing there fall back to [`EMBEDDED_TERRAIN`].
const BUILTIN_SCENE_DIR: &str = "assets/scenes";

/// (file name, bytes) of the heightmaps and unit files embedded in the binary.
const EMBEDDED_TERRAIN: &[(&str, &[u8])] = &[
    ("jacksboro_dem.png", include_bytes!("../assets/terrain/jacksboro_dem.png")),
    ("jacksboro_dem.json", include_bytes!("../assets/terrain/jacksboro_dem.json")),
];

/// Largest heightfield accepted after the crop, samples per axis.
pub const MAX_HEIGHTMAP_SIZE: u32 = 4096;

/// Largest image decoded before the crop, pixels per axis.
const MAX_DECODE_SIZE: u32 = 16384;

/// Most particles a scene may build, counted as its fluid blocks' lattice points before the terrain
/// removes any (2^27, up to ~3.2 GB of CPU memory while building); beyond it `build` fails instead of
/// exhausting memory. The GPU's limit (its largest storage buffer) may refuse fewer, with a message.
pub const MAX_PARTICLES: u64 = 1 << 27;

/// Units of a heightmap, read from the JSON file beside the PNG (extra fields are ignored).
#[derive(Debug, Deserialize)]
struct HeightmapUnits {
    /// Elevation of pixel value 0, metres.
    min_elevation_m: f32,
    /// Elevation of the largest pixel value (65535, or 255 for 8-bit images), metres.
    max_elevation_m: f32,
    /// Ground distance between neighbouring pixels along x (east), metres.
    cell_size_x_m: f32,
    /// Ground distance between neighbouring pixels along image rows (south), metres.
    cell_size_y_m: f32,
}

impl Scene {
    /// Parses RON `text` and validates it; `path` names the file in errors and its parent becomes
    /// `base_dir`. Parse errors give [`SceneError::Parse`] with `line:column` and what was expected.
    pub fn from_str(text: &str, path: &Path) -> Result<Scene, SceneError> {
        let mut scene: Scene = ron::from_str(text).map_err(|e| SceneError::Parse {
            path: path.to_path_buf(),
            message: format!("at line:column {}: {}", e.span.start, e.code),
        })?;
        scene.base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        scene.validate().map_err(|e| match e {
            SceneError::Invalid { message, .. } => SceneError::Invalid { path: path.to_path_buf(), message },
            other => other,
        })?;
        Ok(scene)
    }

    /// Reads, parses and validates the scene file at `path`.
    pub fn load(path: &Path) -> Result<Scene, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|cause| SceneError::Io { path: path.to_path_buf(), cause })?;
        Scene::from_str(&text, path)
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
        std::fs::rename(&tmp, path).map_err(|cause| {
            let _ = std::fs::remove_file(&tmp);
            SceneError::Io { path: path.to_path_buf(), cause }
        })
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

    fn invalid(&self, message: String) -> SceneError {
        SceneError::Invalid { path: PathBuf::from(&self.name), message }
    }

    /// Checks every field against its range without touching the disk (the heightmap crop is checked
    /// against the image when it is loaded). Errors are [`SceneError::Invalid`] naming the field.
    pub fn validate(&self) -> Result<(), SceneError> {
        let d = &self.domain;
        if let Some(axis) = bad_box(&d.min, &d.max) {
            return Err(self.invalid(format!(
                "domain min {:?} must be below max {:?} and finite (fails along {axis})",
                d.min, d.max
            )));
        }
        if self.fluid_blocks.is_empty() {
            return Err(self.invalid("fluid_blocks is empty: the scene has no water".into()));
        }
        for (i, b) in self.fluid_blocks.iter().enumerate() {
            if let Some(axis) = bad_box(&b.min, &b.max) {
                return Err(self.invalid(format!(
                    "fluid block {i}: min {:?} must be below max {:?} and finite (fails along {axis})",
                    b.min, b.max
                )));
            }
            if (0..3).any(|a| b.min[a] < d.min[a] || b.max[a] > d.max[a]) {
                return Err(self.invalid(format!(
                    "fluid block {i} ({:?} .. {:?}) is not inside the domain ({:?} .. {:?})",
                    b.min, b.max, d.min, d.max
                )));
            }
            if !b.velocity.iter().all(|v| v.is_finite()) {
                return Err(self.invalid(format!("fluid block {i}: velocity {:?} is not finite", b.velocity)));
            }
        }
        self.solver.validate().map_err(|e| self.invalid(e.to_string()))?;
        if let Some(w) = &self.solver.wave_maker {
            w.validate_in(d.min, d.max).map_err(|e| self.invalid(e.to_string()))?;
        }
        if let Some(t) = &self.terrain {
            if t.heightmap.trim().is_empty() {
                return Err(self.invalid("terrain.heightmap is empty".into()));
            }
            if !t.extent.iter().all(|e| e.is_finite() && *e > 0.0) {
                return Err(self.invalid(format!("terrain.extent {:?} must be > 0 m on both axes", t.extent)));
            }
            if !(t.vertical_scale.is_finite() && t.vertical_scale > 0.0) {
                return Err(self.invalid(format!("terrain.vertical_scale = {} must be > 0", t.vertical_scale)));
            }
            if !t.base.is_finite() {
                return Err(self.invalid(format!("terrain.base = {} is not finite", t.base)));
            }
            if let Some([_, _, w, h]) = t.crop {
                if w < 2 || h < 2 {
                    return Err(self.invalid(format!("terrain.crop is {w}x{h} pixels; it must be at least 2x2")));
                }
            }
        }
        let c = &self.camera;
        if !c.target.iter().all(|v| v.is_finite()) || !c.yaw_deg.is_finite() {
            return Err(self.invalid(format!("camera target {:?} / yaw_deg {} must be finite", c.target, c.yaw_deg)));
        }
        if !(c.distance.is_finite() && c.distance > 0.0) {
            return Err(self.invalid(format!("camera.distance = {} must be > 0 m", c.distance)));
        }
        if !(-90.0..=90.0).contains(&c.pitch_deg) {
            return Err(self.invalid(format!("camera.pitch_deg = {} must be in -90 ..= 90", c.pitch_deg)));
        }
        if !(c.fov_y_deg > 1.0 && c.fov_y_deg < 170.0) {
            return Err(self.invalid(format!("camera.fov_y_deg = {} must be in (1, 170) degrees", c.fov_y_deg)));
        }
        if !(1.0..=8.0).contains(&self.cpu_dx_scale) {
            return Err(self.invalid(format!("cpu_dx_scale = {} must be in 1 ..= 8", self.cpu_dx_scale)));
        }
        Ok(())
    }

    /// A copy whose particle spacing is `dx` metres on any adapter: `solver.dx = dx`, with `cpu_dx_scale`
    /// folded in (set to 1), so [`Scene::build`] gives the same particles on a CPU adapter too.
    pub fn at_dx(&self, dx: f32) -> Scene {
        let mut s = self.clone();
        s.solver.dx = dx;
        s.cpu_dx_scale = 1.0;
        s
    }

    /// Particle spacing actually used, metres: `solver.dx`, times `cpu_dx_scale` on a CPU adapter.
    pub fn effective_dx(&self, on_cpu_adapter: bool) -> f32 {
        self.solver.dx * if on_cpu_adapter { self.cpu_dx_scale } else { 1.0 }
    }

    /// Upper bound on the particle count `build` yields: the lattice points of every block, before
    /// those under the terrain or at the walls are skipped. Cheap (no heightmap is read).
    pub fn estimate_particle_count(&self, on_cpu_adapter: bool) -> u64 {
        let dx = self.effective_dx(on_cpu_adapter);
        self.fluid_blocks
            .iter()
            .map(|b| (0..3).fold(1u64, |n, a| n.saturating_mul(lattice_count(b.max[a] - b.min[a], dx))))
            .fold(0u64, u64::saturating_add)
    }

    /// Builds the initial particles and the terrain. Each block is filled on a cubic lattice of spacing
    /// [`Scene::effective_dx`] (points at `min + (i + 0.5) dx`), skipping points closer than dx/2 to the
    /// terrain, to a domain wall or to a wave maker's paddle at its rest position (and those behind it). Fails on an invalid scene, a bad heightmap, more than
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
        let mut positions = Vec::with_capacity(estimate.min(1 << 20) as usize);
        let mut velocities = Vec::with_capacity(positions.capacity());
        for b in &self.fluid_blocks {
            let n = [0, 1, 2].map(|a| lattice_count(b.max[a] - b.min[a], dx));
            if n.contains(&0) {
                continue;
            }
            let min = Vec3::from(b.min);
            for iz in 0..n[2] {
                for iy in 0..n[1] {
                    for ix in 0..n[0] {
                        let p = min + (Vec3::new(ix as f32, iy as f32, iz as f32) + 0.5) * dx;
                        let inside = p.cmpge(lo).all() && p.cmple(hi).all();
                        if inside && p.y >= terrain.height_at(p.x, p.z) + 0.5 * dx - eps {
                            positions.push(p);
                            velocities.push(Vec3::from(b.velocity));
                        }
                    }
                }
            }
        }
        if positions.is_empty() {
            return Err(self.invalid(format!(
                "scene \"{}\" builds no particles at dx = {dx} m: every lattice point of its fluid blocks is \
                 under the terrain or within dx/2 of a wall",
                self.name
            )));
        }
        Ok(SceneSetup { positions, velocities, terrain })
    }
}

/// The first axis ("x", "y" or "z") along which `min < max` fails or a bound is not finite.
fn bad_box(min: &[f32; 3], max: &[f32; 3]) -> Option<&'static str> {
    (0..3).find(|&a| !(min[a].is_finite() && max[a].is_finite() && min[a] < max[a])).map(|a| ["x", "y", "z"][a])
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

/// The bytes of `path`, or of the embedded asset with the same file name when the file does not exist.
/// The flag says whether the embedded copy was used.
fn read_asset(path: &Path) -> std::io::Result<(std::borrow::Cow<'static, [u8]>, bool)> {
    match std::fs::read(path) {
        Ok(bytes) => Ok((bytes.into(), false)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let name = path.file_name().and_then(|n| n.to_str());
            match EMBEDDED_TERRAIN.iter().find(|(n, _)| Some(*n) == name) {
                Some((_, bytes)) => Ok((std::borrow::Cow::Borrowed(*bytes), true)),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Reads the units JSON beside a heightmap; `None` when it does not exist. The JSON comes from the same
/// place as the PNG (disk, or the embedded copies when `embedded`).
fn read_units(json_path: &Path, embedded: bool) -> Result<Option<HeightmapUnits>, SceneError> {
    let err = |message: String| SceneError::Heightmap { path: json_path.to_path_buf(), message };
    let bytes = if embedded {
        let name = json_path.file_name().and_then(|n| n.to_str());
        match EMBEDDED_TERRAIN.iter().find(|(n, _)| Some(*n) == name) {
            Some((_, bytes)) => bytes.to_vec(),
            None => return Ok(None),
        }
    } else {
        match std::fs::read(json_path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(err(format!("cannot read the units file: {e}"))),
        }
    };
    let u: HeightmapUnits = serde_json::from_slice(&bytes).map_err(|e| err(format!("malformed units file: {e}")))?;
    let finite = [u.min_elevation_m, u.max_elevation_m, u.cell_size_x_m, u.cell_size_y_m].iter().all(|v| v.is_finite());
    if !finite || u.max_elevation_m < u.min_elevation_m || u.cell_size_x_m <= 0.0 || u.cell_size_y_m <= 0.0 {
        return Err(err(format!("units out of range: {u:?} (need max >= min elevation, cell sizes > 0)")));
    }
    Ok(Some(u))
}

/// Loads the heightmap of `desc` (path relative to `base_dir`) into a heightfield whose sample (0, 0)
/// sits at the domain's (min x, min z) and which spans `desc.extent`.
///
/// Pixel column i maps to +x, image row j (row 0 = north edge) to +z, one sample per pixel of the crop.
/// With a units JSON beside the PNG (same stem), the crop's true size is `width * cell_size_x_m` by
/// `height * cell_size_y_m`, `scale = extent[0] / true width`, and a pixel of elevation `e` gets
/// `y = base + (e - lowest e in the crop) * scale * vertical_scale`. Without a JSON the full 16-bit range
/// is taken to span `0.25 * extent[0]` metres (before `vertical_scale`).
///
/// Errors ([`SceneError::Heightmap`]): a missing or unreadable file, an image that is not 16- or 8-bit
/// grayscale PNG (8-bit is accepted with a warning), a crop outside the image or smaller than 2x2, more
/// than [`MAX_HEIGHTMAP_SIZE`] samples per axis after the crop, a malformed units file.
pub fn load_heightfield(desc: &TerrainDesc, base_dir: &Path, domain: &Aabb) -> Result<Heightfield, SceneError> {
    let png_path = base_dir.join(&desc.heightmap);
    let err = |message: String| SceneError::Heightmap { path: png_path.clone(), message };
    let extent_ok = desc.extent.iter().all(|e| e.is_finite() && *e > 0.0);
    if !(extent_ok && desc.vertical_scale.is_finite() && desc.vertical_scale > 0.0) {
        return Err(err(format!("extent {:?} and vertical_scale {} must be > 0", desc.extent, desc.vertical_scale)));
    }
    let (png, embedded) = read_asset(&png_path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => err(format!("file not found ({e})")),
        _ => err(format!("cannot read: {e}")),
    })?;
    let units = read_units(&png_path.with_extension("json"), embedded)?;

    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(&png[..]), image::ImageFormat::Png);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_DECODE_SIZE);
    limits.max_image_height = Some(MAX_DECODE_SIZE);
    reader.limits(limits);
    let image = reader.decode().map_err(|e| err(format!("cannot decode as PNG: {e}")))?;
    let (width, height) = (image.width(), image.height());
    let (pixels, full_scale): (Vec<u16>, f32) = match image {
        image::DynamicImage::ImageLuma16(img) => (img.into_raw(), 65535.0),
        image::DynamicImage::ImageLuma8(img) => {
            log::warn!("heightmap {}: 8-bit grayscale, heights have only 256 levels", png_path.display());
            (img.into_raw().into_iter().map(u16::from).collect(), 255.0)
        }
        other => {
            return Err(err(format!("expected a 16-bit grayscale image, found {:?}", other.color())));
        }
    };

    let [cx, cy, cw, ch] = desc.crop.unwrap_or([0, 0, width, height]);
    if cw < 2 || ch < 2 {
        return Err(err(format!("crop {cw}x{ch} is smaller than 2x2 pixels")));
    }
    if cx as u64 + cw as u64 > width as u64 || cy as u64 + ch as u64 > height as u64 {
        return Err(err(format!(
            "crop (x {cx}, y {cy}, width {cw}, height {ch}) lies outside the {width}x{height} image"
        )));
    }
    if cw > MAX_HEIGHTMAP_SIZE || ch > MAX_HEIGHTMAP_SIZE {
        return Err(err(format!("{cw}x{ch} samples is more than {MAX_HEIGHTMAP_SIZE} per axis; crop it")));
    }
    let mut levels = Vec::with_capacity(cw as usize * ch as usize);
    for row in cy..cy + ch {
        let start = row as usize * width as usize + cx as usize;
        levels.extend(pixels[start..start + cw as usize].iter().map(|&v| v as f32 / full_scale));
    }
    let lowest = levels.iter().copied().fold(f32::MAX, f32::min);

    // World metres per unit of `level` (0..1).
    let metres_per_level = match &units {
        Some(u) => {
            let scale = desc.extent[0] / (cw as f32 * u.cell_size_x_m);
            let scale_z = desc.extent[1] / (ch as f32 * u.cell_size_y_m);
            if (scale_z / scale - 1.0).abs() > 0.05 {
                log::warn!(
                    "heightmap {}: extent {:?} stretches the crop's true shape ({:.0} m x {:.0} m) by {:.2} along z",
                    png_path.display(),
                    desc.extent,
                    cw as f32 * u.cell_size_x_m,
                    ch as f32 * u.cell_size_y_m,
                    scale_z / scale
                );
            }
            (u.max_elevation_m - u.min_elevation_m) * scale
        }
        None => 0.25 * desc.extent[0],
    };
    let heights = levels.iter().map(|&l| desc.base + (l - lowest) * metres_per_level * desc.vertical_scale).collect();
    Ok(Heightfield {
        nx: cw,
        nz: ch,
        origin: Vec2::new(domain.min[0], domain.min[2]),
        extent: Vec2::from(desc.extent),
        heights,
    })
}

/// What a file dropped on the window (or chosen in the open dialog) is taken to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DroppedFile {
    /// A scene file (`.ron`).
    Scene,
    /// A 16-bit grayscale PNG: replaces the terrain's heightmap.
    Heightmap,
    /// A sky: an equirectangular image (`.hdr`, `.exr`, `.jpg`, or a PNG that is not 16-bit grayscale) or a
    /// folder of six cube faces.
    Sky,
}

/// Why a dropped file cannot be used. Every message names the file; the cause is part of it (no
/// `source()`).
#[derive(Debug, Error)]
pub enum DropError {
    #[error("cannot open {}: no such file", path.display())]
    Missing { path: PathBuf },
    #[error("cannot open {}: {cause}", path.display())]
    Open { path: PathBuf, cause: std::io::Error },
    #[error("cannot read {} as a PNG: {cause}", path.display())]
    Png { path: PathBuf, cause: image::ImageError },
    #[error("cannot open {}: {}", path.display(), DROPPABLE)]
    Unusable { path: PathBuf },
}

/// What [`DropError::Unusable`] says can be dropped.
const DROPPABLE: &str = "drop a scene (.ron), a 16-bit grayscale heightmap (.png) or a sky (.hdr, .exr, .png, .jpg, or a folder of six faces)";

/// Classifies a dropped path by its extension and, for PNGs, by its pixel format (read from the header
/// only). Errors: a missing path, an unreadable PNG, or a kind of file the app cannot use (the message
/// says what can be dropped).
pub fn classify_dropped_file(path: &Path) -> Result<DroppedFile, DropError> {
    if path.is_dir() {
        return Ok(DroppedFile::Sky);
    }
    if !path.is_file() {
        return Err(DropError::Missing { path: path.to_path_buf() });
    }
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("ron") => Ok(DroppedFile::Scene),
        Some("hdr" | "exr" | "jpg" | "jpeg") => Ok(DroppedFile::Sky),
        Some("png") => {
            use image::ImageDecoder;
            let file =
                std::fs::File::open(path).map_err(|cause| DropError::Open { path: path.to_path_buf(), cause })?;
            let decoder = image::codecs::png::PngDecoder::new(std::io::BufReader::new(file))
                .map_err(|cause| DropError::Png { path: path.to_path_buf(), cause })?;
            Ok(match decoder.color_type() {
                image::ColorType::L16 | image::ColorType::La16 => DroppedFile::Heightmap,
                _ => DroppedFile::Sky,
            })
        }
        _ => Err(DropError::Unusable { path: path.to_path_buf() }),
    }
}
