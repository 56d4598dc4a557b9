//! The terrain heightfield: one grid of heights (metres, world y) over a horizontal rectangle, shared by
//! the simulation's boundary (collision and boundary density) and the terrain mesh that is drawn, so
//! what the water touches is exactly what the user sees. Heights are sampled bilinearly.

use glam::Vec2;

/// A regular grid of heights. Sample (ix, iz) sits at `origin + (ix, iz) * spacing()`; rows run along x.
#[derive(Clone, Debug, PartialEq)]
pub struct Heightfield {
    /// Samples along x (>= 2).
    pub nx: u32,
    /// Samples along z (>= 2).
    pub nz: u32,
    /// World (x, z) of sample (0, 0), metres.
    pub origin: Vec2,
    /// World size along (x, z) covered by the grid, metres.
    pub extent: Vec2,
    /// `nx * nz` heights in metres (world y), index `iz * nx + ix`.
    pub heights: Vec<f32>,
}

impl Heightfield {
    /// A flat floor at height `y` over the rectangle `origin .. origin + extent`.
    pub fn flat(origin: Vec2, extent: Vec2, y: f32) -> Self {
        Self { nx: 2, nz: 2, origin, extent, heights: vec![y; 4] }
    }

    /// Distance between neighbouring samples along (x, z), metres.
    pub fn spacing(&self) -> Vec2 {
        self.extent / Vec2::new((self.nx - 1) as f32, (self.nz - 1) as f32)
    }

    fn at(&self, ix: u32, iz: u32) -> f32 {
        self.heights[(iz.min(self.nz - 1) * self.nx + ix.min(self.nx - 1)) as usize]
    }

    /// Bilinear height at world (x, z); outside the grid the edge value continues.
    pub fn height_at(&self, x: f32, z: f32) -> f32 {
        let (f, [h00, h10, h01, h11]) = self.cell_at(x, z, false);
        let a = h00 + (h10 - h00) * f.x;
        let b = h01 + (h11 - h01) * f.x;
        a + (b - a) * f.y
    }

    /// Height (m) and slope (dH/dx, dH/dz) at world (x, z), of the bilinear cell the point lies in, as the
    /// simulation's terrain plane takes them (`terrain_height_grad` in shaders/sim/common.wgsl; outside the
    /// grid the edge cell continues).
    pub fn height_and_slope_at(&self, x: f32, z: f32) -> (f32, Vec2) {
        let (f, [h00, h10, h01, h11]) = self.cell_at(x, z, true);
        let a = h00 + (h10 - h00) * f.x;
        let b = h01 + (h11 - h01) * f.x;
        let spacing = self.spacing();
        let hx = ((h10 - h00) + ((h11 - h01) - (h10 - h00)) * f.y) / spacing.x;
        (a + (b - a) * f.y, Vec2::new(hx, (b - a) / spacing.y))
    }

    /// The grid cell under world (x, z), clamped to the grid: the point's fraction across it and its corner
    /// heights (h00, h10, h01, h11), metres. On the grid's far edges the cell is the one past the last
    /// sample (fraction 0) unless `last_cell`, which keeps the last cell (fraction 1) for its slope.
    fn cell_at(&self, x: f32, z: f32, last_cell: bool) -> (Vec2, [f32; 4]) {
        let top = Vec2::new((self.nx - 1) as f32, (self.nz - 1) as f32);
        let g = ((Vec2::new(x, z) - self.origin) / self.spacing()).clamp(Vec2::ZERO, top);
        let i = if last_cell { g.floor().min(top - 1.0) } else { g.floor() };
        let f = g - i;
        let (ix, iz) = (i.x as u32, i.y as u32);
        (f, [self.at(ix, iz), self.at(ix + 1, iz), self.at(ix, iz + 1), self.at(ix + 1, iz + 1)])
    }

    /// Lowest and highest sample, metres.
    pub fn range(&self) -> (f32, f32) {
        self.heights.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &h| (lo.min(h), hi.max(h)))
    }
}
