//! CPU reference of the GPU kernels, for tests only (vello's `cpu/` twins in spirit): the counting-sort
//! grid build and the density summation, written plainly so a test can compare the GPU with them.

use super::gpu_data::GridShape;
use super::kernel;
use glam::Vec3;

/// Cell coordinate of `p`, clamped into the grid (twin of `cell_coord` in shaders/sim/common.wgsl).
pub fn cell_coord(grid: &GridShape, p: Vec3) -> [u32; 3] {
    std::array::from_fn(|a| {
        let c = ((p[a] - grid.origin[a]) / grid.cell_size).floor() as i64;
        c.clamp(0, grid.dims[a] as i64 - 1) as u32
    })
}

/// Cell index in the folded table, x fastest (twin of `cell_index` in shaders/sim/common.wgsl).
pub fn cell_index(grid: &GridShape, c: [u32; 3]) -> u32 {
    ((c[2] * grid.dims[1] + c[1]) % grid.rows()) * grid.dims[0] + c[0]
}

/// Counting sort on the CPU: (cell_start with cells + 1 entries, permutation: sorted index -> original index).
/// Within a cell the order is by original index (the GPU's order within a cell is arbitrary).
pub fn build_grid(grid: &GridShape, positions: &[Vec3]) -> (Vec<u32>, Vec<u32>) {
    let cells = grid.num_cells() as usize;
    let mut count = vec![0u32; cells + 1];
    let cell_of: Vec<u32> = positions.iter().map(|&p| cell_index(grid, cell_coord(grid, p))).collect();
    for &c in &cell_of {
        count[c as usize] += 1;
    }
    let mut start = vec![0u32; cells + 1];
    for c in 0..cells {
        start[c + 1] = start[c] + count[c];
    }
    let mut fill = start.clone();
    let mut order = vec![0u32; positions.len()];
    for (i, &c) in cell_of.iter().enumerate() {
        order[fill[c as usize] as usize] = i as u32;
        fill[c as usize] += 1;
    }
    (start, order)
}

/// Density by direct summation over all pairs, rho_i = sum_j m W(|x_i - x_j|, h) (no boundary term).
pub fn density_brute_force(positions: &[Vec3], mass: f32, h: f32) -> Vec<f32> {
    positions.iter().map(|&xi| positions.iter().map(|&xj| mass * kernel::w32(xi.distance(xj), h)).sum()).collect()
}
