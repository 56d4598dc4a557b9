//! Slab decomposition along one axis (Werner 2015, docs/background.md section 6): rank `r` owns the
//! particles whose coordinate along [`Slabs::axis`] lies in `[border(r - 1), border(r))` (the first and
//! last slab reach to infinity, so every position has exactly one owner). Borders sit on the layers of a
//! lattice of `cell` (the support radius) from the domain's minimum, start at quantiles of the particles
//! (equal counts) and move toward equal step times ([`Slabs::rebalance`]): each decision by the share of
//! the slowest slab's layers that halves its excess over its faster neighbour.

/// Axis along which `lo..hi` is longest (0 = x, 1 = y, 2 = z; ties: the first).
pub fn longest_axis(lo: [f32; 3], hi: [f32; 3]) -> usize {
    let ext = |a: usize| hi[a] - lo[a];
    (0..3).fold(0, |best, a| if ext(a) > ext(best) { a } else { best })
}

/// The slabs of `ranks` ranks along one axis. Plain data: every rank holds the same copy and changes
/// it the same way (from all-reduced step times), so the ranks always agree on the borders.
#[derive(Clone, Debug, PartialEq)]
pub struct Slabs {
    /// 0 = x, 1 = y, 2 = z.
    pub axis: usize,
    /// The domain's minimum along the axis, m (layer 0).
    pub origin: f32,
    /// Layer thickness, m (the support radius).
    pub cell: f32,
    /// Layers across the domain along the axis.
    pub layers: u32,
    /// Thinnest a slab may become, layers (at least the halo's depth, so ghosts come from the direct
    /// neighbours only).
    pub min_layers: u32,
    /// The `ranks - 1` interior borders, layer indices, strictly increasing.
    borders: Vec<u32>,
}

/// The share of the equalising move [`Slabs::rebalance`] makes at once: a half, so that a slab whose
/// layers are not equally loaded (the equalising move assumes they are) closes in without overshooting.
pub const BALANCE_GAIN: f64 = 0.5;

/// A border moved by [`Slabs::rebalance`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BorderMove {
    /// Border `k` lies between ranks `k` and `k + 1`.
    pub border: usize,
    /// Layers: positive toward larger coordinates (rank `k + 1` loses them), negative toward smaller.
    pub by: i32,
}

impl Slabs {
    /// Slabs of `ranks` ranks over `origin .. origin + extent` (m) along `axis`, in layers of `cell` m,
    /// with borders at the quantiles of `coords` (the particles' coordinates along the axis) so each
    /// rank starts with about the same count, then pushed apart to keep every slab `min_layers` thick.
    /// `None` when the domain has fewer than `ranks * min_layers` layers (too thin to split that often).
    pub fn balanced(
        axis: usize,
        origin: f32,
        extent: f32,
        cell: f32,
        min_layers: u32,
        ranks: usize,
        coords: &[f32],
    ) -> Option<Slabs> {
        let layers = (extent / cell).ceil().max(1.0) as u32;
        let min_layers = min_layers.max(1);
        if ranks == 0 || (layers as u64) < ranks as u64 * min_layers as u64 {
            return None;
        }
        let mut sorted: Vec<f32> = coords.iter().copied().filter(|c| c.is_finite()).collect();
        sorted.sort_by(f32::total_cmp);
        let mut borders: Vec<u32> = (1..ranks)
            .map(|k| {
                let q = match sorted.len() {
                    0 => origin + extent * k as f32 / ranks as f32,
                    n => sorted[(n * k / ranks).min(n - 1)],
                };
                ((q - origin) / cell).round().clamp(0.0, layers as f32) as u32
            })
            .collect();
        // Forward then backward pass: each slab at least min_layers thick.
        for k in 0..borders.len() {
            let floor = if k == 0 { 0 } else { borders[k - 1] } + min_layers;
            borders[k] = borders[k].max(floor);
        }
        for k in (0..borders.len()).rev() {
            let ceiling = if k + 1 == borders.len() { layers } else { borders[k + 1] } - min_layers;
            borders[k] = borders[k].min(ceiling);
        }
        Some(Slabs { axis, origin, cell, layers, min_layers, borders })
    }

    /// Ranks.
    pub fn ranks(&self) -> usize {
        self.borders.len() + 1
    }

    /// The interior borders, layer indices (border `k` between ranks `k` and `k + 1`).
    pub fn borders(&self) -> &[u32] {
        &self.borders
    }

    /// Coordinate of border `k`, m.
    pub fn border(&self, k: usize) -> f32 {
        self.origin + self.borders[k] as f32 * self.cell
    }

    /// (lower, upper) bound of rank `r`'s slab, m; infinite at the outer ends.
    pub fn range(&self, r: usize) -> (f32, f32) {
        let lo = if r == 0 { f32::NEG_INFINITY } else { self.border(r - 1) };
        let hi = if r + 1 >= self.ranks() { f32::INFINITY } else { self.border(r) };
        (lo, hi)
    }

    /// The rank owning coordinate `c` (m along the axis). Non-finite coordinates go to the last rank.
    pub fn owner(&self, c: f32) -> usize {
        if !c.is_finite() {
            return self.ranks() - 1;
        }
        (0..self.borders.len()).find(|&k| c < self.border(k)).unwrap_or(self.borders.len())
    }

    /// Layers of rank `r`'s slab.
    fn thickness(&self, r: usize) -> u32 {
        let lo = if r == 0 { 0 } else { self.borders[r - 1] };
        let hi = if r + 1 >= self.ranks() { self.layers } else { self.borders[r] };
        hi - lo
    }

    /// Load balance: moves the border of the slowest rank (largest of `step_times`, one per rank, any
    /// unit) toward its faster neighbour, when that neighbour is faster by more than `tolerance` (0.05 =
    /// 5 %), by [`BALANCE_GAIN`] of the layers that would equalise the two if the slow slab's time were
    /// spread evenly over its layers: L_s (t_s - t_f) / (2 t_s), at least one, at most what keeps the slow
    /// slab `min_layers` thick. Returns the move made. Every rank calls it with the same (all-reduced)
    /// times, so all agree on the borders. (One layer a decision, as before 2026-12-07, took the two-H200
    /// run more than 20 steps to move a border at all.)
    pub fn rebalance(&mut self, step_times: &[f64], tolerance: f64) -> Option<BorderMove> {
        if step_times.len() != self.ranks() || self.ranks() < 2 || step_times.iter().any(|t| !t.is_finite()) {
            return None;
        }
        let slow = (0..step_times.len()).fold(0, |s, r| if step_times[r] > step_times[s] { r } else { s });
        let neighbours = [slow.checked_sub(1), Some(slow + 1).filter(|&r| r < self.ranks())];
        let fast = neighbours.into_iter().flatten().min_by(|&a, &b| step_times[a].total_cmp(&step_times[b]))?;
        let (ts, tf, thick) = (step_times[slow], step_times[fast], self.thickness(slow));
        if ts <= tf * (1.0 + tolerance) || thick <= self.min_layers {
            return None;
        }
        let share = BALANCE_GAIN * f64::from(thick) * (ts - tf) / (2.0 * ts);
        let k = (share.floor() as u32).clamp(1, thick - self.min_layers);
        let m = if fast < slow {
            // The slow rank's lower border moves up: the left neighbour takes its layers.
            self.borders[slow - 1] += k;
            BorderMove { border: slow - 1, by: k as i32 }
        } else {
            self.borders[slow] -= k;
            BorderMove { border: slow, by: -(k as i32) }
        };
        Some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_axis_picks_the_extent() {
        assert_eq!(longest_axis([0.0; 3], [1.0, 2.0, 0.5]), 1);
        assert_eq!(longest_axis([0.0, 0.0, -3.0], [1.0, 1.0, 0.0]), 2);
        assert_eq!(longest_axis([0.0; 3], [1.0; 3]), 0);
    }

    #[test]
    fn quantile_borders_split_counts_evenly_and_every_point_has_one_owner() {
        // 1000 points crowded toward the low end of a 1 m domain, 0.01 m layers.
        let coords: Vec<f32> = (0..1000).map(|i| (i as f32 / 1000.0).powi(2)).collect();
        let s = Slabs::balanced(0, 0.0, 1.0, 0.01, 2, 4, &coords).unwrap();
        assert_eq!(s.ranks(), 4);
        let mut counts = [0usize; 4];
        for &c in &coords {
            counts[s.owner(c)] += 1;
        }
        for n in counts {
            assert!((230..=270).contains(&n), "counts {counts:?}");
        }
        // Ranges tile the line; outer ends are infinite; owner agrees with range.
        assert_eq!(s.range(0).0, f32::NEG_INFINITY);
        assert_eq!(s.range(3).1, f32::INFINITY);
        for r in 0..3 {
            assert_eq!(s.range(r).1, s.range(r + 1).0);
        }
        for c in [-5.0, 0.0, 0.3, 0.999, 7.0, f32::NAN] {
            let r = s.owner(c);
            let (lo, hi) = s.range(r);
            assert!(!c.is_finite() || (lo <= c && c < hi), "{c} -> {r} {lo}..{hi}");
        }
    }

    #[test]
    fn slabs_keep_their_minimum_thickness() {
        // All points at one coordinate: the quantiles coincide, the borders are pushed apart.
        let s = Slabs::balanced(2, -1.0, 1.0, 0.1, 3, 3, &[-0.5; 100]).unwrap();
        assert_eq!(s.borders().len(), 2);
        assert!(s.borders()[0] >= 3 && s.borders()[1] - s.borders()[0] >= 3 && 10 - s.borders()[1] >= 3);
        assert!(Slabs::balanced(0, 0.0, 1.0, 0.1, 4, 3, &[0.5]).is_none(), "10 layers cannot hold 3 x 4");
    }

    #[test]
    fn rebalance_moves_the_slowest_border_toward_the_faster_neighbour() {
        let coords: Vec<f32> = (0..300).map(|i| i as f32 / 300.0).collect();
        let mut s = Slabs::balanced(0, 0.0, 1.0, 0.05, 2, 3, &coords).unwrap();
        let before = s.borders().to_vec();
        let thick = before[1] - before[0];
        // Rank 1 slowest, rank 0 faster than rank 2: rank 1's lower border moves up, by half of the
        // layers that would equalise them: 0.5 x L (2 - 1) / (2 x 2) = L / 8.
        let k = (thick / 8).max(1);
        assert_eq!(s.rebalance(&[1.0, 2.0, 1.5], 0.05), Some(BorderMove { border: 0, by: k as i32 }));
        assert_eq!(s.borders(), &[before[0] + k, before[1]]);
        // Rank 1 slowest, rank 2 faster: its upper border moves down; a small excess moves one layer.
        assert_eq!(s.rebalance(&[1.95, 2.0, 1.9], 0.02), Some(BorderMove { border: 1, by: -1 }));
        assert_eq!(s.borders(), &[before[0] + k, before[1] - 1]);
        // Within tolerance, wrong length or non-finite: nothing moves.
        assert_eq!(s.rebalance(&[1.0, 1.02, 1.0], 0.05), None);
        assert_eq!(s.rebalance(&[1.0, 2.0], 0.05), None);
        assert_eq!(s.rebalance(&[1.0, f64::NAN, 1.0], 0.05), None);
        // The slowest slab shrinks to min_layers and no further.
        let mut moves = 0;
        while s.rebalance(&[1.0, 9.0, 9.5], 0.05).is_some() {
            moves += 1;
            assert!(moves < 100);
        }
        assert_eq!(s.layers - s.borders()[1], 2, "rank 2 keeps min_layers");
    }

    /// Rebalances `s` on the loads `load` gives its two ranks until it stops moving (at most `most`
    /// decisions); returns the two loads and the decisions taken.
    fn balance_until_still(s: &mut Slabs, load: impl Fn(&Slabs, usize) -> f64, most: u32) -> (f64, f64, u32) {
        let mut decisions = 0;
        while s.rebalance(&[load(s, 0), load(s, 1)], 0.05).is_some() {
            decisions += 1;
            assert!(decisions <= most, "still moving after {decisions} decisions: {:?}", s.borders());
        }
        (load(s, 0), load(s, 1), decisions)
    }

    #[test]
    fn repeated_balancing_converges_toward_equal_loads() {
        // Step time proportional to particle count; particles uniform; start skewed.
        let coords: Vec<f32> = (0..1000).map(|i| i as f32 / 1000.0).collect();
        let mut s = Slabs::balanced(0, 0.0, 1.0, 0.01, 2, 2, &coords[..200]).unwrap();
        let count = |s: &Slabs, r: usize| coords.iter().filter(|&&c| s.owner(c) == r).count() as f64;
        let (a, b, decisions) = balance_until_still(&mut s, count, 8);
        assert!((a - b).abs() / (a + b) < 0.05, "{a} vs {b} after {decisions} decisions");
        // Unevenly loaded layers (the cost grows as the square of the coordinate): within 10 % in a few.
        let cost =
            |s: &Slabs, r: usize| coords.iter().filter(|&&c| s.owner(c) == r).map(|&c| f64::from(c * c)).sum::<f64>();
        let mut s = Slabs::balanced(0, 0.0, 1.0, 0.01, 2, 2, &coords).unwrap();
        let (a, b, decisions) = balance_until_still(&mut s, cost, 10);
        assert!((a - b).abs() / (a + b) < 0.1, "{a} vs {b} after {decisions} decisions");
    }
}
