//! Coincident particles: particles closer than a fraction of the spacing are one particle of their summed
//! mass to the kernel (whose gradient vanishes at zero distance, so nothing pushes them apart), and a
//! simulation started from a pile of them explodes (2 000 particles of a fluid file at one point reached a
//! density error of 40 000 % and 177 000 m/s). Where particles come from outside (fluid files,
//! checkpoints), those that share a cell of edge dx / 8 ([`COINCIDENT_CELL_DX`]) are found and a pile is
//! refused ([`Coincident::is_pile`]): three or more in one cell, two at exactly the same position, or more
//! than [`MAX_SHARED_PERCENT`] % of the particles in shared cells (a file holding its water twice). Pairs
//! alone are not refused: the simulation itself brings a few pairs that close and pushes them apart again
//! (measured over 60 states of five built-in scenes on lavapipe, 0.25-3 s: 0-10 particles in shared cells,
//! at most 0.2 % of them, the closest 0.03 dx apart, never three in a cell), so its exported frames are
//! not refused. A long run does bring small clusters: `valley_town` at 1 M particles after 30 s (H200) had
//! 124 of 1 024 924 particles in shared cells, three in one and a pair at one position (water held against
//! a wall and a house). So a checkpoint, the app's own state, is refused only when more than
//! [`MAX_SHARED_PERCENT`] % of its particles share cells; its piles among fewer (three in a cell, a pair at
//! one position) are moved apart ([`Cells::separate`]), its close pairs kept, so an ordinary checkpoint
//! resumes bit for bit.
//!
//! The test is a sort: each position's cell (21 bits an axis from the domain's min corner, which a domain
//! within 65 536 dx of the origin never exceeds) packed into a `u64` key, sorted with the particle's
//! index (16 bytes a particle), equal neighbours counted: O(N log N) time, exact duplicates always caught
//! (two particles closer than dx / 8 across a cell boundary are not: the test is for piles).

use glam::Vec3;

/// The cell edge, in units of the spacing dx, within which two particles are coincident.
pub const COINCIDENT_CELL_DX: f32 = 0.125;

/// Percentage of a set's particles that may share cells (in pairs) before the set is refused.
pub const MAX_SHARED_PERCENT: usize = 1;

/// Bits of a cell index per axis in a key.
const BITS: u32 = 21;

/// Cells of edge `dx / 8` from a corner, as sortable keys.
#[derive(Clone, Copy, Debug)]
pub struct Cells {
    origin: Vec3,
    /// 1 / the cell edge, 1/m.
    inverse: f32,
    /// The cell edge, metres.
    pub edge: f32,
}

/// Particles that share a cell with another: how many, the first of them (its index), the most in one
/// cell and whether two sit at exactly the same position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coincident {
    /// Particles in a cell that holds another particle (all of them, the first of each cell included).
    pub count: usize,
    /// The lowest index among them.
    pub first: usize,
    /// The most particles in one cell.
    pub most: usize,
    /// Two of them have the same position.
    pub exact: bool,
}

impl Coincident {
    /// Whether a set of `n` particles with these coincident ones is refused (see the module docs): three
    /// or more in a cell, two at one position, or more than [`MAX_SHARED_PERCENT`] % of `n`.
    pub fn is_pile(&self, n: usize) -> bool {
        self.most >= 3 || self.exact || self.count * 100 > MAX_SHARED_PERCENT * n
    }

    /// Words for a message: "3 in one cell at most, two at the same position".
    pub fn describe(&self) -> String {
        let exact = if self.exact { ", two at the same position" } else { "" };
        format!("{} in one cell at most{exact}", self.most)
    }
}

impl Cells {
    /// Cells of edge `dx * COINCIDENT_CELL_DX` metres from `origin` (the domain's min corner).
    pub fn new(origin: Vec3, dx: f32) -> Self {
        let edge = dx * COINCIDENT_CELL_DX;
        Self { origin, inverse: 1.0 / edge, edge }
    }

    /// The key of the cell holding `p` (coordinates below the origin or past 2^21 cells are clamped;
    /// positions are checked inside the domain first).
    pub fn key(&self, p: Vec3) -> u64 {
        let max = ((1u64 << BITS) - 1) as f64;
        let cell = |a: usize| {
            let c = ((p[a] - self.origin[a]) as f64 * self.inverse as f64).floor();
            if c.is_nan() {
                0
            } else {
                c.clamp(0.0, max) as u64
            }
        };
        (cell(0) << (2 * BITS)) | (cell(1) << BITS) | cell(2)
    }

    /// The sorted keys of `positions` (8 bytes each).
    pub fn sorted_keys(&self, positions: impl Iterator<Item = Vec3>) -> Vec<u64> {
        let mut keys: Vec<u64> = positions.map(|p| self.key(p)).collect();
        keys.sort_unstable();
        keys
    }

    /// The particles among `positions` that share a cell with another of them (`None` when none do),
    /// and the sorted keys of all of them (for [`Cells::among`]).
    pub fn within(&self, positions: &[Vec3]) -> (Option<Coincident>, Vec<u64>) {
        let mut keyed: Vec<(u64, u32)> = positions.iter().enumerate().map(|(i, &p)| (self.key(p), i as u32)).collect();
        keyed.sort_unstable();
        let mut found: Option<Coincident> = None;
        for run in keyed.chunk_by(|a, b| a.0 == b.0).filter(|run| run.len() > 1) {
            // Runs of three or more are refused anyway: only pairs need their positions compared.
            let exact = exact_pair(run, positions);
            let first = run[0].1 as usize;
            let c = found.get_or_insert(Coincident { count: 0, first, most: 0, exact: false });
            c.count += run.len();
            c.first = c.first.min(first);
            c.most = c.most.max(run.len());
            c.exact |= exact;
        }
        (found, keyed.into_iter().map(|(k, _)| k).collect())
    }

    /// Moves apart the particles of `positions` that make a pile ([`Coincident::is_pile`]'s cells: three or
    /// more in one cell, or a pair at one position; a pair merely close is left, as the simulation leaves
    /// it): in each such cell the first (by index) stays and the k-th other moves two cell edges (dx / 4,
    /// the collision distance) along the k-th of eight horizontal directions, so the kernel, whose gradient
    /// vanishes at zero distance, can push them apart from there. Returns how many moved.
    pub fn separate(&self, positions: &mut [Vec3]) -> usize {
        let mut keyed: Vec<(u64, u32)> = positions.iter().enumerate().map(|(i, &p)| (self.key(p), i as u32)).collect();
        keyed.sort_unstable();
        let mut moved = 0;
        let piled = |run: &&[(u64, u32)]| run.len() > 2 || exact_pair(run, positions);
        let piles: Vec<Vec<u32>> =
            keyed.chunk_by(|a, b| a.0 == b.0).filter(piled).map(|run| run.iter().map(|&(_, i)| i).collect()).collect();
        for run in piles {
            for (k, &i) in run.iter().enumerate().skip(1) {
                let angle = std::f32::consts::FRAC_PI_4 * ((k - 1) % 8) as f32;
                positions[i as usize] += 2.0 * self.edge * Vec3::new(angle.cos(), 0.0, angle.sin());
                moved += 1;
            }
        }
        moved
    }

    /// The particles among `positions` (sorted keys `keys`) whose cell holds one of `others` (sorted keys),
    /// `None` when none does.
    pub fn among(&self, positions: &[Vec3], keys: &[u64], others: &[u64]) -> Option<Coincident> {
        let (mut count, mut j) = (0, 0);
        for &k in keys {
            while j < others.len() && others[j] < k {
                j += 1;
            }
            if j < others.len() && others[j] == k {
                count += 1;
            }
        }
        let first = positions.iter().position(|&p| others.binary_search(&self.key(p)).is_ok()).unwrap_or(0);
        (count > 0).then_some(Coincident { count, first, most: 2, exact: false })
    }
}

/// Whether `run` (keys and indices of particles in one cell) is two particles at the same position.
fn exact_pair(run: &[(u64, u32)], positions: &[Vec3]) -> bool {
    run.len() == 2 && positions[run[0].1 as usize] == positions[run[1].1 as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separated_clusters_share_no_cell() {
        let cells = Cells::new(Vec3::ZERO, 0.1);
        let mut positions: Vec<Vec3> = (0..20).map(|i| Vec3::new(0.05 + 0.1 * i as f32, 0.5, 0.5)).collect();
        let p = Vec3::new(0.52, 0.31, 0.77);
        positions.extend([p, p, p + Vec3::splat(1e-4)]);
        positions.extend([Vec3::splat(0.9); 2]);
        let close = [Vec3::new(0.15, 0.85, 0.15), Vec3::new(0.151, 0.85, 0.15)];
        positions.extend(close);
        let (found, _) = cells.within(&positions);
        assert_eq!(found.map(|c| (c.count, c.most, c.exact)), Some((7, 3, true)));
        assert_eq!(cells.separate(&mut positions), 3, "the second and third of the three, the second of the pair");
        let after = cells.within(&positions).0;
        assert_eq!(after.map(|c| (c.count, c.most, c.exact)), Some((2, 2, false)), "only the close pair is left");
        assert_eq!(&positions[25..], &close, "a pair merely close is not moved");
        let moved = (positions[21] - p).length();
        assert!((moved - 0.025).abs() < 1e-6, "moved dx / 4: {moved}");
    }

    #[test]
    fn piles_are_refused_and_pairs_and_lattices_pass() {
        let cells = Cells::new(Vec3::ZERO, 0.1);
        // A 10 x 10 x 10 lattice of spacing dx: no two particles share a cell.
        let lattice: Vec<Vec3> = (0..1000)
            .map(|i| Vec3::new((i % 10) as f32, (i / 10 % 10) as f32, (i / 100) as f32) * 0.1 + 0.05)
            .collect();
        let (found, keys) = cells.within(&lattice);
        assert_eq!(found, None);
        assert_eq!(keys, cells.sorted_keys(lattice.iter().copied()));
        // Two particles 1e-4 m apart in one cell among the lattice: a pair, as a simulation has a few.
        let mut paired = lattice.clone();
        paired[17] = Vec3::new(0.3, 0.3, 0.3001);
        paired.push(Vec3::new(0.3001, 0.3, 0.3));
        let pair = cells.within(&paired).0.expect("a pair");
        assert_eq!(pair, Coincident { count: 2, first: 17, most: 2, exact: false });
        assert!(!pair.is_pile(paired.len()), "one pair in 1001 particles is not a pile");
        assert!(pair.is_pile(150), "a pair in 150 particles is more than 1 %");
        // Three on one point: a pile.
        let mut piled = paired.clone();
        piled.extend([Vec3::splat(0.5), Vec3::splat(0.5), Vec3::splat(0.5)]);
        let (pile, keys) = cells.within(&piled);
        assert_eq!(pile, Some(Coincident { count: 5, first: 17, most: 3, exact: false }));
        assert!(pile.is_some_and(|c| c.is_pile(piled.len())));
        // Two at exactly one point are refused however many others there are.
        let mut twins = lattice.clone();
        twins.push(lattice[3]);
        let c = cells.within(&twins).0.expect("twins");
        assert!(c.exact && c.first == 3 && c.is_pile(twins.len()), "{c:?}");
        // Against another set's keys: the pile's three are counted, the lattice point 0.05 away is not.
        let others = cells.sorted_keys([Vec3::splat(0.5)].into_iter());
        assert_eq!(cells.among(&piled, &keys, &others).map(|c| (c.count, c.first)), Some((3, 1001)));
        assert_eq!(cells.among(&lattice, &cells.sorted_keys(lattice.iter().copied()), &others), None);
    }

    #[test]
    fn keys_stay_in_their_bits() {
        let cells = Cells::new(Vec3::ZERO, 1.0);
        let far = cells.key(Vec3::splat(1e30));
        assert_eq!(far, ((1 << 63) - 1), "clamped per axis, never into another axis's bits");
        assert_eq!(cells.key(Vec3::splat(-5.0)), 0);
        assert_eq!(cells.key(Vec3::splat(f32::NAN)), 0);
        assert_eq!(cells.key(Vec3::new(0.125, 0.0, 0.0)), 1 << 42, "x is the highest");
    }
}
