//! A scene's water from particle files (`fluid_files`): each file is read through the bounded reader
//! ([`crate::particle_io::read`]), moved by its offset and checked particle by particle before anything
//! reaches the GPU: positions and velocities finite, positions inside the domain and not inside the terrain
//! or an obstacle, speeds at most [`MAX_SPEED`]. A failed check names the scene, the file (1-based, as in the scene file),
//! how many particles fail it and the first of them, e.g. ``scene s.ron: fluid file 1 (cache.ply): 3 of
//! 1000 particles lie outside the domain (0, 0, 0) .. (1, 1, 1); the first is particle 17 at (1.5, 0.2,
//! 0.3)``.

use super::validate::tuple;
use super::{FluidFile, Scene, SceneError};
use crate::sim::obstacles::Obstacle;
use crate::sim::params::{fmt_f32, MAX_SPEED};
use crate::terrain::Heightfield;
use glam::Vec3;

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
    /// Reads fluid file `k` (0-based) of this scene, moves it by its offset and checks it against the
    /// domain, `terrain` and the placed `obstacles` (see the module docs).
    pub(super) fn load_fluid_file(
        &self,
        k: usize,
        f: &FluidFile,
        terrain: &Heightfield,
        obstacles: &[Obstacle],
    ) -> Result<FileWater, SceneError> {
        let path = self.base_dir.join(&f.path);
        let item = format!("fluid file {} ({})", k + 1, f.path);
        let particles = crate::particle_io::read(&path).map_err(|e| self.invalid(format!("{item}: {e}")))?;
        if particles.is_empty() {
            return Err(self.invalid(format!("{item}: holds no particles")));
        }
        let n = particles.len();
        let offset = Vec3::from(f.offset);
        let positions: Vec<Vec3> = particles.positions.iter().map(|p| Vec3::from(*p) + offset).collect();
        let velocities: Vec<Vec3> = particles.velocities.iter().map(|v| Vec3::from(*v)).collect();
        let d = &self.domain;
        let (lo, hi) = (Vec3::from(d.min), Vec3::from(d.max));
        let fail = |what: String, failures: Failures| {
            let (i, example) = failures.first.unwrap_or_default();
            self.invalid(format!(
                "{item}: {} of {n} particles {what}; the first is particle {i} {example}",
                failures.count
            ))
        };
        let mut not_finite = Failures::new();
        for (i, (p, v)) in particles.positions.iter().zip(&particles.velocities).enumerate() {
            if !(p.iter().chain(v).all(|x| x.is_finite()) && positions[i].is_finite()) {
                not_finite.add(i, || format!("at {} with velocity {}", tuple(p), tuple(v)));
            }
        }
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
        Ok(FileWater { positions, velocities })
    }
}
