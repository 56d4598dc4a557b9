//! A scene's water from particle files (`fluid_files`): each file is read through the bounded reader
//! ([`crate::particle_io::read`]: its declared count bounded before a particle is decoded, the build's
//! Cancel honoured while decoding), moved by its offset and checked particle by particle before anything
//! reaches the GPU: positions and velocities finite, positions inside the domain and not inside the terrain
//! or an obstacle, speeds at most [`MAX_SPEED`], and no pile of coincident particles ([`super::coincident`]:
//! sharing cells of edge dx / 8, three in one, two at one position or more than 1 % of the file), no
//! particle in a cell of an earlier file's (the files overlap), and none within dx / 8 of a lattice point
//! a fluid block keeps (the file and the block overlap). A failed check names the scene, the file (1-based, as in
//! the scene file), how many particles fail it and the first of them, e.g. ``scene s.ron: fluid file 1
//! (cache.ply): 3 of 1000 particles lie outside the domain (0, 0, 0) .. (1, 1, 1); the first is particle
//! 17 at (1.5, 0.2, 0.3)``.
//!
//! dx is the scene's `solver.dx`, the spacing in use wherever a scene is built to be simulated (the engine
//! and the ranks build [`Scene::at_dx`] copies, or set it); a scene built for a CPU adapter as it is
//! (`build(true)` with a `cpu_dx_scale`) is checked at `solver.dx`, finer than its lattice.
//! `Scene::build` hands the files over one at a time, so each file's sorted cell keys (8 bytes a particle)
//! are kept on the building thread until the last file has been checked against them.

use super::coincident::Cells;
use super::invalid::tuple;
use super::lattice::{self, Lattice};
use super::{FluidFile, Scene, SceneError};
use crate::particle_io::ParticleFileError;
use crate::sim::obstacles::Obstacle;
use crate::sim::params::{fmt_f32, MAX_SPEED};
use crate::terrain::Heightfield;
use glam::Vec3;
use std::cell::RefCell;

thread_local! {
    /// The sorted cell keys of the fluid files checked so far in the build on this thread (file k at
    /// index k): taken at each file, put back only while more files follow.
    static EARLIER: RefCell<Vec<Vec<u64>>> = const { RefCell::new(Vec::new()) };
}

/// The particles of one fluid file, checked and in world space.
pub(super) struct FileWater {
    pub positions: Vec<Vec3>,
    pub velocities: Vec<Vec3>,
}

/// The first particle failing a check and how many do.
struct Failures {
    count: usize,
    first: Option<(usize, String)>,
}

impl Failures {
    fn new() -> Self {
        Self { count: 0, first: None }
    }

    fn add(&mut self, index: usize, example: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some((index, example()));
        }
    }
}

impl Scene {
    /// Particles the scene's fluid files declare, from their headers alone
    /// ([`crate::particle_io::declared_count`]): what the engine checks against the GPU's limit before
    /// a file is decoded. Errors: a file that cannot be read or whose header is malformed, named as
    /// [`Scene::build`] names it.
    pub fn declared_file_particles(&self) -> Result<u64, SceneError> {
        let mut total = 0u64;
        for (k, f) in self.fluid_files.iter().enumerate() {
            let path = self.base_dir.join(&f.path);
            let count = crate::particle_io::declared_count(&path).map_err(|e| self.file_error(k, f, e))?;
            total = total.saturating_add(count);
        }
        Ok(total)
    }

    /// A particle file's error as the scene's: [`SceneError::Cancelled`] for a cancelled read, else
    /// naming the fluid file.
    fn file_error(&self, k: usize, f: &FluidFile, e: ParticleFileError) -> SceneError {
        match e {
            ParticleFileError::Cancelled { .. } => SceneError::Cancelled,
            e => self.invalid(format!("fluid file {} ({}): {e}", k + 1, f.path)),
        }
    }

    /// Reads fluid file `k` (0-based) of this scene, moves it by its offset and checks it against the
    /// domain, `terrain`, the placed `obstacles`, the fluid blocks' lattice and the files before it (see
    /// the module docs).
    pub(super) fn load_fluid_file(
        &self,
        k: usize,
        f: &FluidFile,
        terrain: &Heightfield,
        obstacles: &[Obstacle],
    ) -> Result<FileWater, SceneError> {
        // The earlier files' cells: none before the first file (a build that stopped early leaves some).
        let earlier = EARLIER.with(|e| std::mem::take(&mut *e.borrow_mut()));
        let earlier = if k == 0 { Vec::new() } else { earlier };
        let path = self.base_dir.join(&f.path);
        let item = format!("fluid file {} ({})", k + 1, f.path);
        let particles = crate::particle_io::read(&path).map_err(|e| self.file_error(k, f, e))?;
        if particles.is_empty() {
            return Err(self.invalid(format!("{item}: holds no particles")));
        }
        let n = particles.len();
        let offset = Vec3::from(f.offset);
        let mut not_finite = Failures::new();
        for (i, (p, v)) in particles.positions.iter().zip(&particles.velocities).enumerate() {
            if !(p.iter().chain(v).all(|x| x.is_finite()) && (Vec3::from(*p) + offset).is_finite()) {
                not_finite.add(i, || format!("at {} with velocity {}", tuple(p), tuple(v)));
            }
        }
        // Into world space in place (the arrays' allocations are reused: [f32; 3] and Vec3 share a layout).
        let positions: Vec<Vec3> = particles.positions.into_iter().map(|p| Vec3::from(p) + offset).collect();
        let velocities: Vec<Vec3> = particles.velocities.into_iter().map(Vec3::from).collect();
        drop(particles.densities);
        let d = &self.domain;
        let (lo, hi) = (Vec3::from(d.min), Vec3::from(d.max));
        let fail = |what: String, failures: Failures| {
            let (i, example) = failures.first.unwrap_or_default();
            self.invalid(format!(
                "{item}: {} of {n} particles {what}; the first is particle {i} {example}",
                failures.count
            ))
        };
        if not_finite.count > 0 {
            return Err(fail("have a position or velocity that is not finite (NaN or infinite)".into(), not_finite));
        }
        let mut outside = Failures::new();
        let mut below = Failures::new();
        let mut inside = Failures::new();
        let mut fast = Failures::new();
        for (i, (p, v)) in positions.iter().zip(&velocities).enumerate() {
            if p.cmplt(lo).any() || p.cmpgt(hi).any() {
                outside.add(i, || format!("at {}", tuple(&p.to_array())));
            } else if p.y < terrain.height_at(p.x, p.z) {
                below.add(i, || {
                    format!(
                        "at {}, under the ground at {} m",
                        tuple(&p.to_array()),
                        fmt_f32(terrain.height_at(p.x, p.z))
                    )
                });
            } else if let Some((j, o)) = obstacles.iter().enumerate().find(|(_, o)| o.distance(*p) < 0.0) {
                inside.add(i, || {
                    format!(
                        "at {}, {} m inside obstacle {} ({})",
                        tuple(&p.to_array()),
                        // To the millimetre: the distance field is trilinear between its samples.
                        fmt_f32((-o.distance(*p) * 1000.0).round() / 1000.0),
                        j + 1,
                        o.name
                    )
                });
            }
            // In f64: a finite velocity's f32 length may overflow.
            let speed = v.as_dvec3().length() as f32;
            if speed > MAX_SPEED {
                fast.add(i, || format!("with velocity {} ({} m/s)", tuple(&v.to_array()), fmt_f32(speed)));
            }
        }
        if outside.count > 0 {
            let domain = format!("{} .. {}", tuple(&d.min), tuple(&d.max));
            let moved =
                if offset == Vec3::ZERO { String::new() } else { format!(" (after the offset {})", tuple(&f.offset)) };
            return Err(fail(format!("lie outside the domain {domain}{moved}"), outside));
        }
        if below.count > 0 {
            return Err(fail("lie inside the terrain".into(), below));
        }
        if inside.count > 0 {
            return Err(fail("lie inside an obstacle".into(), inside));
        }
        if fast.count > 0 {
            return Err(fail(format!("are faster than {MAX_SPEED} m/s"), fast));
        }
        let dx = self.solver.dx;
        let cells = Cells::new(lo, dx);
        let at = |i: usize| format!("at {}", tuple(&positions[i].to_array()));
        let cell = format!("dx/8 = {} m", fmt_f32(cells.edge));
        let (within, keys) = cells.within(&positions);
        if let Some(c) = within.filter(|c| c.is_pile(n)) {
            let pile = Failures { count: c.count, first: Some((c.first, at(c.first))) };
            return Err(fail(
                format!(
                    "share a cell of {cell} with another particle of the file ({}): piles of coincident \
                     particles explode, the kernel seeing one particle of their summed mass",
                    c.describe()
                ),
                pile,
            ));
        }
        for (j, other) in earlier.iter().enumerate() {
            if let Some(c) = cells.among(&positions, &keys, other) {
                let pile = Failures { count: c.count, first: Some((c.first, at(c.first))) };
                let name = &self.fluid_files[j].path;
                return Err(fail(
                    format!(
                        "share a cell of {cell} with a particle of fluid file {} ({name}): the files overlap",
                        j + 1
                    ),
                    pile,
                ));
            }
        }
        if let Some((b, pile)) = self.on_lattice(&positions, dx, terrain, obstacles) {
            return Err(fail(
                format!(
                    "lie within {cell} of a lattice point of fluid block {}: the file and the block overlap",
                    b + 1
                ),
                pile,
            ));
        }
        if k + 1 < self.fluid_files.len() {
            let mut earlier = earlier;
            earlier.push(keys);
            EARLIER.with(|e| *e.borrow_mut() = earlier);
        }
        Ok(FileWater { positions, velocities })
    }

    /// The fluid blocks' lattice at spacing `dx` as [`Scene::build`] lays it out: points at `min + (i +
    /// 0.5) dx`, kept inside the domain shrunk by dx/2 (behind a wave maker's paddle) and dx/2 above the
    /// terrain.
    fn lattice_at(&self, dx: f32) -> Lattice {
        let d = &self.domain;
        let eps = 1e-4 * dx;
        let mut lo = Vec3::from(d.min) + (0.5 * dx - eps);
        if let Some(w) = &self.solver.wave_maker {
            lo[w.axis.index()] += w.rest;
        }
        let hi = Vec3::from(d.max) - (0.5 * dx - eps);
        let blocks = self
            .fluid_blocks
            .iter()
            .map(|b| lattice::Block {
                min: Vec3::from(b.min),
                n: [0, 1, 2].map(|a| super::lattice_count(b.max[a] - b.min[a], dx)),
                velocity: Vec3::from(b.velocity),
            })
            .collect();
        Lattice { blocks, dx, lo, hi, eps }
    }

    /// The first fluid block (0-based) with kept lattice points within dx/8 of `positions`, and those
    /// positions (how many, the first), `None` when no block has one. A position the build drops (within
    /// dx/2 of an obstacle, as `SceneSetup::around` does) is not counted, nor a lattice point it drops.
    fn on_lattice(
        &self,
        positions: &[Vec3],
        dx: f32,
        terrain: &Heightfield,
        obstacles: &[Obstacle],
    ) -> Option<(usize, Failures)> {
        let lattice = self.lattice_at(dx);
        let near = dx * super::coincident::COINCIDENT_CELL_DX;
        let kept_by_obstacles = |p: Vec3| obstacles.iter().all(|o| o.distance(p) >= 0.5 * dx * (1.0 - 1e-4));
        for (b, block) in lattice.blocks.iter().enumerate() {
            let mut pile = Failures::new();
            let (bmin, bmax) =
                (block.min, block.min + Vec3::new(block.n[0] as f32, block.n[1] as f32, block.n[2] as f32) * dx);
            for (i, &p) in positions.iter().enumerate() {
                if p.cmplt(bmin - near).any() || p.cmpgt(bmax + near).any() {
                    continue;
                }
                let index = ((p - block.min) / dx - 0.5).round();
                if index.cmplt(Vec3::ZERO).any() || (0..3).any(|a| index[a] as u64 >= block.n[a]) {
                    continue;
                }
                let [ix, iy, iz] = [0, 1, 2].map(|a| index[a] as u64);
                let q = lattice::point(block.min, ix, iy, iz, dx);
                if q.distance(p) >= near || !kept_by_obstacles(p) || !kept_by_obstacles(q) {
                    continue;
                }
                let kept =
                    lattice.column(terrain, block, ix, iz).is_some_and(|(first, last)| (first..=last).contains(&iy));
                if kept {
                    pile.add(i, || {
                        format!(
                            "at {}, {} m from its point {}",
                            tuple(&p.to_array()),
                            fmt_f32(q.distance(p)),
                            tuple(&q.to_array())
                        )
                    });
                }
            }
            if pile.count > 0 {
                return Some((b, pile));
            }
        }
        None
    }
}
