//! Coincident particles: two particles closer than a fraction of the spacing are one particle of twice
//! the mass to the kernel, and a simulation started from them explodes (2 000 particles of a fluid file at
//! one point reached a density error of 40 000 % and 177 000 m/s). A lattice never puts two particles
//! closer than dx, and the simulation's pressure keeps them well apart, so particles that share a cell of
//! edge dx / 8 ([`COINCIDENT_CELL_DX`]) are refused where particles come from outside: fluid files and
//! checkpoints.
//!
//! The test is a sort: each position's cell (21 bits an axis from the domain's min corner, which a domain
//! within 65 536 dx of the origin never exceeds) packed into a `u64` key, the keys sorted, equal
//! neighbours counted: O(N log N) time and 8 bytes per particle, exact duplicates always caught (two
//! particles closer than dx / 8 across a cell boundary are not: the test is for piles, not pairs).

use glam::Vec3;

/// The cell edge, in units of the spacing dx, within which two particles are coincident.
pub const COINCIDENT_CELL_DX: f32 = 0.125;

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

/// Particles that share a cell with another: how many, and the first of them (its index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coincident {
    /// Particles in a cell that holds another particle (all of them, the first of each cell included).
    pub count: usize,
    /// The lowest index among them.
    pub first: usize,
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

    /// The particles among `positions` that share a cell with another of them, `None` when none do.
    /// `keys` are their [`Cells::sorted_keys`].
    pub fn within(&self, positions: &[Vec3], keys: &[u64]) -> Option<Coincident> {
        let mut count = 0;
        let mut first_key = None;
        for run in keys.chunk_by(|a, b| a == b).filter(|run| run.len() > 1) {
            count += run.len();
            first_key.get_or_insert(run[0]);
        }
        first_key.map(|_| Coincident { count, first: self.first_in(positions, |k| shared(keys, k)) })
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
        (count > 0).then(|| Coincident { count, first: self.first_in(positions, |k| others.binary_search(&k).is_ok()) })
    }

    /// The first index of `positions` whose key passes `pick`.
    fn first_in(&self, positions: &[Vec3], pick: impl Fn(u64) -> bool) -> usize {
        positions.iter().position(|&p| pick(self.key(p))).unwrap_or(0)
    }
}

/// Whether `key` occurs more than once in the sorted `keys`.
fn shared(keys: &[u64], key: u64) -> bool {
    let start = keys.partition_point(|&k| k < key);
    keys.get(start + 1) == Some(&key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piles_are_counted_and_lattices_pass() {
        let cells = Cells::new(Vec3::ZERO, 0.1);
        // A 10 x 10 x 10 lattice of spacing dx: no two particles share a cell.
        let lattice: Vec<Vec3> = (0..1000)
            .map(|i| Vec3::new((i % 10) as f32, (i / 10 % 10) as f32, (i / 100) as f32) * 0.1 + 0.05)
            .collect();
        let keys = cells.sorted_keys(lattice.iter().copied());
        assert_eq!(cells.within(&lattice, &keys), None);
        // Three particles on one point, two within 1e-4 m in one cell, among the lattice.
        let mut piled = lattice.clone();
        piled.extend([Vec3::splat(0.5), Vec3::splat(0.5), Vec3::splat(0.5)]);
        piled[17] = Vec3::new(0.3, 0.3, 0.3001);
        piled.push(Vec3::new(0.3001, 0.3, 0.3));
        let keys = cells.sorted_keys(piled.iter().copied());
        assert_eq!(cells.within(&piled, &keys), Some(Coincident { count: 5, first: 17 }));
        // Against another set's keys: the pile's three and the lattice point 0.05 away are not counted.
        let others = cells.sorted_keys([Vec3::splat(0.5)].into_iter());
        assert_eq!(cells.among(&piled, &keys, &others), Some(Coincident { count: 3, first: 1000 }));
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
