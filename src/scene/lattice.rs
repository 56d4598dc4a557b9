//! A scene's initial particles without a list of them: the fluid blocks' lattice is described by its
//! blocks and counted, bounded and generated from columns, and the particles are handed out in chunks
//! (in the same order, with the same positions and first pressures as a list built point by point).
//!
//! A block's lattice points are `min + (i + 0.5) dx`, walked z, then y, then x (x fastest); a point is
//! kept when it lies inside the domain shrunk by dx / 2 (and behind no wave maker) and at least dx / 2
//! from the terrain (its tangent plane under the point's column). Along one (x, z) column both tests are monotone in y, so the kept points of a
//! column are one run `first ..= last`, found by binary search with the same f32 arithmetic: counting
//! and bounding cost a few searches per column, nothing per particle. The first pressure is hydrostatic
//! ([`Hydrostatic`]): the depth below the highest particle of the particle's dx x dx bin, taken over
//! every block (a bin's columns in another block are found from its index range) and the particles
//! given as a list (fluid files, or all particles of [`SceneSetup::from_particles`]).
//!
//! Chunks are generated on several threads ([`std::thread::scope`]), one piece of at most
//! [`CHUNK_POINTS`] lattice points each, and handed out in order.

use super::faces::{Faces, Profile};
use super::SceneSetup;
use crate::sim::initial::Hydrostatic;
use crate::terrain::Heightfield;
use glam::Vec3;
use std::collections::HashMap;

/// Lattice points in one generated piece (the chunks handed out hold at most this many particles; 32
/// bytes each as positions and velocities, 32 MiB per piece and thread).
pub const CHUNK_POINTS: u64 = 1 << 20;

/// Most threads that generate pieces at once.
const MAX_THREADS: usize = 8;

/// One fluid block's lattice: `n` points per axis from `min` (first point at `min + dx / 2`).
#[derive(Clone, Debug)]
pub(super) struct Block {
    pub(super) min: Vec3,
    pub(super) n: [u64; 3],
    pub(super) velocity: Vec3,
}

/// Every fluid block's lattice at one spacing, and the box a kept point lies in.
#[derive(Clone, Debug, Default)]
pub(super) struct Lattice {
    pub(super) blocks: Vec<Block>,
    /// Spacing, metres.
    pub(super) dx: f32,
    /// Kept points satisfy `lo <= p <= hi` and `p.y >= terrain + dx / 2 - eps`.
    pub(super) lo: Vec3,
    pub(super) hi: Vec3,
    pub(super) eps: f32,
}

impl Block {
    /// This block with each side face (along x and z) that lies closer than `support` to a side wall of the
    /// domain `min..max` moved onto that wall: the layers that fit in the gap are added, on the block's
    /// lattice. A gap narrower than the kernel's support radius 2h cannot be resolved at this spacing: the
    /// wall's boundary density and the block's face meet across it, and at release the face fills it from
    /// the floor up at once, shooting a sheet of water up the wall (a 0.78 m column 1.25 dx from a wall at
    /// dx = 0.02 m: the fastest particle 4.2-5.3 m/s at t = 0.08-0.1 s on all three solvers, the face's own
    /// speed 1.4 m/s; without the gap it reaches 2.4 m/s by then). `paddle` is the axis whose min wall
    /// is a wave maker's paddle (not snapped to).
    pub(super) fn snapped_to_walls(
        mut self,
        min: Vec3,
        max: Vec3,
        dx: f32,
        support: f32,
        paddle: Option<usize>,
    ) -> Self {
        for a in [0, 2] {
            let layers = |gap: f32| if gap > 0.0 && gap < support { (gap / dx + 1e-4).floor() as u64 } else { 0 };
            let high = layers(max[a] - (self.min[a] + self.n[a] as f32 * dx));
            self.n[a] += high;
            if paddle != Some(a) {
                let low = layers(self.min[a] - min[a]);
                self.min[a] -= low as f32 * dx;
                self.n[a] += low;
            }
        }
        self
    }

    /// The box its lattice fills, `min .. min + n dx` (metres).
    pub(super) fn extent(&self, dx: f32) -> (Vec3, Vec3) {
        (self.min, self.min + Vec3::new(self.n[0] as f32, self.n[1] as f32, self.n[2] as f32) * dx)
    }
}

/// The first pair of blocks (k < l) whose lattice boxes overlap by more than 1 % of `dx` along every axis,
/// with the overlap's box: their particles there would lie closer than dx, doubling the water's density.
pub(super) fn overlapping_blocks(blocks: &[Block], dx: f32) -> Option<(usize, usize, Vec3, Vec3)> {
    for (k, a) in blocks.iter().enumerate() {
        for (l, b) in blocks.iter().enumerate().skip(k + 1) {
            let ((a0, a1), (b0, b1)) = (a.extent(dx), b.extent(dx));
            let (lo, hi) = (a0.max(b0), a1.min(b1));
            if (hi - lo).min_element() > 0.01 * dx {
                return Some((k, l, lo, hi));
            }
        }
    }
    None
}

/// A position of lattice point (ix, iy, iz) of a block at `min`, spacing `dx`, metres.
pub(super) fn point(min: Vec3, ix: u64, iy: u64, iz: u64, dx: f32) -> Vec3 {
    min + (Vec3::new(ix as f32, iy as f32, iz as f32) + 0.5) * dx
}

/// The first index in `0..n` where the monotone `pred` (false, then true) holds; `n` when none does.
fn partition(n: u64, pred: impl Fn(u64) -> bool) -> u64 {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

impl Lattice {
    /// The kept run `first ..= last` of column (ix, iz) of block `b` (`None`: no point of it is kept).
    pub(super) fn column(&self, terrain: &Heightfield, b: &Block, ix: u64, iz: u64) -> Option<(u64, u64)> {
        let dx = self.dx;
        let p0 = point(b.min, ix, 0, iz, dx);
        if p0.x < self.lo.x || p0.x > self.hi.x || p0.z < self.lo.z || p0.z > self.hi.z {
            return None;
        }
        // dx / 2 from the terrain's tangent plane (as the simulation measures it), not dx / 2 above it: on
        // a slope of gradient g that is dx / 2 sqrt(1 + |g|^2) higher. A point dx / 2 above a 60-degree
        // slope lies dx / 4 from it, on the collision distance, its density 5 % over rho0 from the
        // boundary alone: the first step pushed it off at 4.7 m/s (the valley at dx = 0.432 m).
        let (height, slope) = terrain.height_and_slope_at(p0.x, p0.z);
        let ground = height + 0.5 * dx * (1.0 + slope.length_squared()).sqrt() - self.eps;
        let y = |iy: u64| point(b.min, ix, iy, iz, dx).y;
        let first = partition(b.n[1], |iy| {
            let y = y(iy);
            y >= self.lo.y && y >= ground
        });
        let end = partition(b.n[1], |iy| y(iy) > self.hi.y);
        (first < end).then(|| (first, end - 1))
    }

    /// Kept points of every block (a counting pass over columns, nothing stored).
    pub(super) fn count(&self, terrain: &Heightfield) -> u64 {
        let mut total = 0;
        for b in &self.blocks {
            for iz in 0..b.n[2] {
                for ix in 0..b.n[0] {
                    if let Some((first, last)) = self.column(terrain, b, ix, iz) {
                        total += last - first + 1;
                    }
                }
            }
        }
        total
    }

    /// Bounds (min, max) of the kept points, or `None` when there are none.
    pub(super) fn bounds(&self, terrain: &Heightfield) -> Option<(Vec3, Vec3)> {
        let mut out: Option<(Vec3, Vec3)> = None;
        for b in &self.blocks {
            for iz in 0..b.n[2] {
                for ix in 0..b.n[0] {
                    if let Some((first, last)) = self.column(terrain, b, ix, iz) {
                        let (p, q) = (point(b.min, ix, first, iz, self.dx), point(b.min, ix, last, iz, self.dx));
                        let (lo, hi) = out.unwrap_or((p, p));
                        out = Some((lo.min(p).min(q), hi.max(p).max(q)));
                    }
                }
            }
        }
        out
    }

    /// The inclusive range of column indices along `axis` (0 = x, 2 = z) of block `b` whose points lie in
    /// bins `bins` of `first` (a bin may hold 0, 1 or 2 columns of a block).
    fn columns_in_bins(&self, b: &Block, axis: usize, bins: (i64, i64), first: &Hydrostatic) -> (u64, u64) {
        let (min, dx, n) = (b.min[axis] as f64, self.dx as f64, b.n[axis]);
        let bdx = first.dx as f64;
        let from = ((bins.0 as f64 * bdx - min) / dx - 0.5).floor() - 2.0;
        let to = (((bins.1 + 1) as f64 * bdx - min) / dx - 0.5).floor() + 2.0;
        let clamp = |v: f64| v.clamp(0.0, n as f64 - 1.0) as u64;
        (clamp(from), clamp(to))
    }

    /// The highest kept point of block `b` in bin `bin` of `first`, metres (`None`: none there).
    fn block_top(&self, terrain: &Heightfield, b: &Block, bin: (i64, i64), first: &Hydrostatic) -> Option<f32> {
        let (x0, x1) = self.columns_in_bins(b, 0, (bin.0, bin.0), first);
        let (z0, z1) = self.columns_in_bins(b, 2, (bin.1, bin.1), first);
        let mut top: Option<f32> = None;
        for iz in z0..=z1 {
            for ix in x0..=x1 {
                let p = point(b.min, ix, 0, iz, self.dx);
                if first.bin(p.x, p.z) != bin {
                    continue;
                }
                if let Some((_, last)) = self.column(terrain, b, ix, iz) {
                    let y = point(b.min, ix, last, iz, self.dx).y;
                    top = Some(top.map_or(y, |t| t.max(y)));
                }
            }
        }
        top
    }

    /// The bins (inclusive ranges along x and z) block `b`'s columns fall in.
    fn bin_range(&self, b: &Block, first: &Hydrostatic) -> ((i64, i64), (i64, i64)) {
        let lo = point(b.min, 0, 0, 0, self.dx);
        let hi = point(b.min, b.n[0] - 1, 0, b.n[2] - 1, self.dx);
        let (a, c) = (first.bin(lo.x, lo.z), first.bin(hi.x, hi.z));
        ((a.0, c.0), (a.1, c.1))
    }
}

/// What finding a bin's top needs: the lattice, the terrain, the particles given as a list (their tops
/// per bin) and every block's bins.
struct Tops<'a> {
    lattice: &'a Lattice,
    terrain: &'a Heightfield,
    first: Hydrostatic,
    listed: HashMap<(i64, i64), f32>,
    ranges: Vec<((i64, i64), (i64, i64))>,
}

impl Tops<'_> {
    /// The highest particle in `bin` over the blocks `blocks` and the listed particles, metres.
    fn top(&self, bin: (i64, i64), blocks: impl Iterator<Item = usize>) -> f32 {
        let mut top = self.listed.get(&bin).copied().unwrap_or(f32::MIN);
        for s in blocks {
            let ((x0, x1), (z0, z1)) = self.ranges[s];
            let near = |b: i64, (lo, hi): (i64, i64)| b >= lo.saturating_sub(1) && b <= hi.saturating_add(1);
            if !near(bin.0, (x0, x1)) || !near(bin.1, (z0, z1)) {
                continue;
            }
            if let Some(t) = self.lattice.block_top(self.terrain, &self.lattice.blocks[s], bin, &self.first) {
                top = top.max(t);
            }
        }
        top
    }
}

/// One piece of a block: rows `iy` of slice `iz`, columns `ix`, walked y then x.
#[derive(Clone, Copy, Debug)]
struct Piece {
    block: usize,
    iz: u64,
    iy: (u64, u64),
    ix: (u64, u64),
}

/// A generated chunk: positions with the density in w, velocities with the first pressure in w.
#[derive(Default)]
struct Chunk {
    pos: Vec<[f32; 4]>,
    vel: Vec<[f32; 4]>,
}

/// One lattice column of a piece: its kept rows (first, last), the top of its first-pressure bin
/// (metres) and its walk to the free faces.
struct Column {
    run: (u64, u64),
    top: f32,
    profile: Profile,
}

impl SceneSetup {
    /// The pieces of at most [`CHUNK_POINTS`] lattice points, in the particles' order.
    fn pieces(&self) -> impl Iterator<Item = Piece> + '_ {
        self.lattice.blocks.iter().enumerate().flat_map(|(block, b)| {
            let [nx, ny, nz] = b.n;
            let rows = (CHUNK_POINTS / nx.max(1)).max(1);
            let cols = nx.min(CHUNK_POINTS);
            (0..nz).flat_map(move |iz| {
                (0..ny.div_ceil(rows)).flat_map(move |r| {
                    let iy = (r * rows, ((r + 1) * rows).min(ny));
                    (0..nx.div_ceil(cols)).map(move |c| Piece {
                        block,
                        iz,
                        iy,
                        ix: (c * cols, ((c + 1) * cols).min(nx)),
                    })
                })
            })
        })
    }

    fn generate(&self, faces: &Faces<'_>, piece: Piece) -> Chunk {
        let l = &self.lattice;
        let b = &l.blocks[piece.block];
        let first = &faces.first;
        // Per column of the piece: the kept run, the top of its bin and its walk to the free faces.
        let mut columns: Vec<Option<Column>> = (piece.ix.0..piece.ix.1)
            .map(|ix| {
                let run = l.column(&self.terrain, b, ix, piece.iz)?;
                let p = point(b.min, ix, 0, piece.iz, l.dx);
                let top = faces.tops.get(&first.bin(p.x, p.z)).copied().unwrap_or(f32::MIN);
                Some(Column { run, top, profile: faces.profile(p.x, p.z) })
            })
            .collect();
        let mut chunk = Chunk::default();
        let v = b.velocity;
        for iy in piece.iy.0..piece.iy.1 {
            for (k, column) in columns.iter_mut().enumerate() {
                if let Some(Column { run: (first_iy, last_iy), top, profile }) = column {
                    if *first_iy <= iy && iy <= *last_iy {
                        let p = point(b.min, piece.ix.0 + k as u64, iy, piece.iz, l.dx);
                        chunk.pos.push([p.x, p.y, p.z, first.rho0]);
                        chunk.vel.push([v.x, v.y, v.z, faces.pressure(profile, *top, p)]);
                    }
                }
            }
        }
        chunk
    }

    /// The highest particle of every (x, z) bin of `first` that holds water (the blocks' kept points and
    /// the listed particles), metres; empty when gravity does not point down (no first pressure).
    fn bin_tops(&self, first: &Hydrostatic) -> HashMap<(i64, i64), f32> {
        let l = &self.lattice;
        let mut listed = HashMap::new();
        if !first.on() {
            return listed;
        }
        for p in &self.positions {
            let t = listed.entry(first.bin(p.x, p.z)).or_insert(f32::MIN);
            *t = t.max(p.y);
        }
        let ranges: Vec<_> = l.blocks.iter().map(|b| l.bin_range(b, first)).collect();
        let tops = Tops { lattice: l, terrain: &self.terrain, first: *first, listed, ranges };
        let ranges = &tops.ranges;
        let mut out = tops.listed.clone();
        for (k, &((x0, x1), (z0, z1))) in ranges.iter().enumerate() {
            // The blocks whose bins meet this one's (the others cannot reach its bins).
            let meet = |a0: i64, a1: i64, b0: i64, b1: i64| a0 <= b1.saturating_add(1) && b0 <= a1.saturating_add(1);
            let near: Vec<usize> = (0..l.blocks.len())
                .filter(|&s| {
                    let ((bx0, bx1), (bz0, bz1)) = ranges[s];
                    meet(x0, x1, bx0, bx1) && meet(z0, z1, bz0, bz1)
                })
                .collect();
            debug_assert!(near.contains(&k));
            for bz in z0..=z1 {
                for bx in x0..=x1 {
                    let t = tops.top((bx, bz), near.iter().copied());
                    if t > f32::MIN {
                        out.insert((bx, bz), t);
                    }
                }
            }
        }
        out
    }

    /// Hands out every particle in order, in chunks of at most [`CHUNK_POINTS`]: `emit(offset, positions,
    /// velocities)` with `offset` the index of the chunk's first particle, positions with density `rho0`
    /// in w (m, kg/m^3) and velocities with the first pressure of `first` in w (m/s, Pa; what
    /// [`crate::sim::initial::hydrostatic_pressure`] gives over the whole list). Chunks are generated on
    /// up to 8 threads, each piece once; at most that many chunks are held at a time. Stops at the first
    /// error `emit` returns.
    pub fn for_each_chunk<E>(
        &self,
        first: &Hydrostatic,
        mut emit: impl FnMut(u64, &[[f32; 4]], &[[f32; 4]]) -> Result<(), E>,
    ) -> Result<(), E> {
        let l = &self.lattice;
        let faces = Faces { tops: self.bin_tops(first), terrain: &self.terrain, first: *first, lo: l.lo, hi: l.hi };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_THREADS);
        let mut offset = 0u64;
        let mut pieces = self.pieces().peekable();
        while pieces.peek().is_some() {
            let round: Vec<Piece> = pieces.by_ref().take(threads).collect();
            let chunks: Vec<Chunk> = if round.len() == 1 {
                vec![self.generate(&faces, round[0])]
            } else {
                std::thread::scope(|s| {
                    let faces = &faces;
                    let handles: Vec<_> = round.iter().map(|&p| s.spawn(move || self.generate(faces, p))).collect();
                    // A generating thread only panics on a bug; carry the panic on.
                    handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
                })
            };
            for c in chunks.into_iter().filter(|c| !c.pos.is_empty()) {
                emit(offset, &c.pos, &c.vel)?;
                offset += c.pos.len() as u64;
            }
        }
        // The listed particles (fluid files), after the blocks'; one walk to the free faces per bin.
        let mut profiles: HashMap<(i64, i64), Profile> = HashMap::new();
        for (k, (pos, vel)) in
            self.positions.chunks(CHUNK_POINTS as usize).zip(self.velocities.chunks(CHUNK_POINTS as usize)).enumerate()
        {
            let mut chunk = Chunk::default();
            for (p, v) in pos.iter().zip(vel) {
                let pressure = if first.on() {
                    let bin = first.bin(p.x, p.z);
                    let top = faces.tops.get(&bin).copied().unwrap_or(f32::MIN);
                    let profile = profiles.entry(bin).or_insert_with(|| faces.profile(p.x, p.z));
                    faces.pressure(profile, top, *p)
                } else {
                    0.0
                };
                chunk.pos.push([p.x, p.y, p.z, first.rho0]);
                chunk.vel.push([v.x, v.y, v.z, pressure]);
            }
            emit(offset + (k as u64) * CHUNK_POINTS, &chunk.pos, &chunk.vel)?;
        }
        Ok(())
    }

    /// Every particle as positions and velocities, in order (metres, m/s). Lays the whole scene out in
    /// memory (24 bytes per particle): for tests, small scenes and callers that filter the particles.
    pub fn to_vecs(&self) -> (Vec<Vec3>, Vec<Vec3>) {
        let mut out = (Vec::new(), Vec::new());
        let first = Hydrostatic { dx: self.lattice.dx.max(f32::MIN_POSITIVE), rho0: 0.0, g: 0.0 };
        let _: Result<(), std::convert::Infallible> = self.for_each_chunk(&first, |_, pos, vel| {
            out.0.extend(pos.iter().map(|p| Vec3::new(p[0], p[1], p[2])));
            out.1.extend(vel.iter().map(|v| Vec3::new(v[0], v[1], v[2])));
            Ok(())
        });
        out
    }
}
