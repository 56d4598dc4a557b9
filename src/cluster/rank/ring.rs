//! The loopback rank's ring (issue 30): one rank over a [`LoopbackTransport`](crate::cluster::transport::LoopbackTransport)
//! is its own left and right neighbour. Its slab is the domain along the axis, so its halos are its
//! particles within the halo of either end wall; what it sends to the right comes back as the ghosts of
//! its left neighbour, placed as the left neighbour's would be (below the slab) but one halo further
//! away, past the wall, and the reverse on the other side. So every ghost is a real halo copy that went
//! through the transport, held, sorted, stepped and exchanged every iteration as a real ghost, while no
//! owned particle has one within its support: the owned particles step as on one GPU, and the rank's time
//! against one GPU's is the cost of the decomposition alone, the upper bound of its efficiency on several
//! GPUs (`waterview bench --loopback`).

use crate::cluster::transport::Side;
use crate::scene::Aabb;
use crate::sim::RankParticles;

/// Where the loopback rank's slab lies and where its ghosts go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Ring {
    /// The decomposition axis (0 = x).
    axis: usize,
    /// The slab `lo <= c < hi`: the domain along the axis, m.
    pub(super) lo: f32,
    pub(super) hi: f32,
    /// How far a returned halo moves, m: the slab's length and one halo more (toward smaller coordinates
    /// for what arrives from the left).
    shift: f32,
    /// The box the neighbour grid may cover: the domain grown along the axis by whole support radii past
    /// the farthest ghost, so the ghosts get cells of their own instead of being clamped into the walls'.
    pub(super) grid: Aabb,
}

impl Ring {
    /// The ring of a rank over `domain` along `axis`, with a halo `halo` m deep and a neighbour grid of
    /// cells that divide `support` (m).
    pub(super) fn new(domain: &Aabb, axis: usize, halo: f32, support: f32) -> Self {
        let (lo, hi) = (domain.min[axis], domain.max[axis]);
        // A returned halo lies between one and two halos past the wall: grow the grid's box by that and
        // a support radius, in whole support radii (on the domain's cell lattice).
        let reach = ((2.0 * halo + support) / support).ceil() * support;
        let mut grid = *domain;
        grid.min[axis] -= reach;
        grid.max[axis] += reach;
        Self { axis, lo, hi, shift: hi - lo + halo, grid }
    }

    /// Moves the halo copies that arrived from `side` to where that side's ghosts sit: the copies of the
    /// slab's upper end arrive from the left and go below the slab, those of its lower end above it.
    pub(super) fn place(&self, side: Side, ghosts: &mut RankParticles) {
        let by = match side {
            Side::Left => -self.shift,
            Side::Right => self.shift,
        };
        for p in &mut ghosts.pos {
            p[self.axis] += by;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returned_halos_land_a_halo_past_the_walls_inside_the_grid() {
        let domain = Aabb { min: [0.0, 0.0, -1.0], max: [1.0, 0.6, 2.0] };
        let (halo, support) = (0.1, 0.05);
        let ring = Ring::new(&domain, 2, halo, support);
        assert_eq!((ring.lo, ring.hi), (-1.0, 2.0));
        // The upper end's halo [1.9, 2.0) arrives from the left; the lower end's [-1.0, -0.9) from the right.
        let mut from_left = RankParticles {
            pos: vec![[0.5, 0.1, 1.9, 1.0], [0.5, 0.1, 1.999, 1.0]],
            vel: vec![[0.0; 4]; 2],
            ids: vec![1, 2],
        };
        let mut from_right = RankParticles { pos: vec![[0.5, 0.1, -1.0, 1.0]], vel: vec![[0.0; 4]], ids: vec![3] };
        ring.place(Side::Left, &mut from_left);
        ring.place(Side::Right, &mut from_right);
        for p in &from_left.pos {
            assert!(p[2] <= ring.lo - halo + 1e-5 && p[2] >= ring.lo - 2.0 * halo - 1e-5, "{p:?}");
            assert!(p[2] >= ring.grid.min[2] + support, "{p:?} within the grid");
        }
        let q = from_right.pos[0][2];
        assert!(q >= ring.hi + halo - 1e-5 && q <= ring.grid.max[2] - support, "{q}");
        // Only the axis moves.
        assert_eq!(from_left.pos[0][..2], [0.5, 0.1]);
    }
}
