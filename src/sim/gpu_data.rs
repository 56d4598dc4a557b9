//! GPU twins of the simulation's WGSL structs (`shaders/sim/common.wgsl`): `#[repr(C)]`, Pod, explicit
//! padding and a compile-time size check each. Converted from [`SimParams`] in one place, [`SimUniforms::new`].

use super::kernel;
use super::params::SimParams;
use crate::scene::Aabb;
use crate::terrain::Heightfield;
use bytemuck::{Pod, Zeroable};

/// Samples in the boundary table (over d in [-2h, 2h]).
pub const BOUNDARY_TABLE_N: u32 = 256;

/// Fraction of the previous step's pressure a PCISPH step starts from. Measured on the resting tank
/// (lavapipe, 12 500 particles, 1 s): 0 leaves 0.5 % mean density error, 1 keeps the bottom layer
/// bouncing (kinetic energy 5-25 J), 0.5 settles to 0.15 J with 0.3 % error.
pub const PRESSURE_WARM_START: f32 = 0.5;

/// Weight k of the boundary pressure term -k p_i/rho_i^2 grad rho_boundary, every solver: 1, the form of
/// Akinci et al. 2012 (2012, "Versatile rigid-fluid coupling for incompressible SPH", ACM TOG 31(4)).
/// k = 2 (the particle's pressure mirrored into the boundary) was measured on the full-resolution tank
/// (H100, `waterview validate --case hydrostatic`, 13 s): for DFSPH it lowers the mean density error from
/// 0.198 % to 0.100 % and keeps every layer within 0.1 % of rho0, but the water never comes to rest
/// (kinetic energy 12 J instead of 0.15 J, particles at 0.9 m/s instead of 0.09 m/s; the same with the
/// DFSPH factor alpha made consistent with k, see `df_factor`) and the floor pressure is 1.02-1.03
/// rho0 g depth instead of 1.006-1.009; for PCISPH it overdrives the particles at the walls and floor
/// (40-60 J that never settles). k = 1 settles. DFSPH uses [`DFSPH_BOUNDARY_FACTOR`].
pub const BOUNDARY_PRESSURE_FACTOR: f32 = 1.0;

/// k of DFSPH's constant-density solve for the floor (the terrain): 1.25; the side walls and the ceiling
/// take [`DFSPH_WALL_FACTOR`], the divergence-free solve k = 1 everywhere. With k = 1 the boundary pushes
/// back with half the force that the fluid presses the first layer against it with (a boundary sample
/// with p_b = p_i, pressure mirroring as in Band et al. 2018 or the density maps of Koschier & Bender
/// 2017, would give k = 2), so the first layer rests on the collision distance dx/4 and the layers above
/// are compressed: 0.195 % mean density error on the full-resolution tank. Measured there (H100,
/// `waterview validate --case hydrostatic --solver dfsph`; mean density error, floor pressure / rho0 g
/// depth, largest particle speed at rest):
/// - k = 1 everywhere, density target 0.1 %: 0.195 %, 1.007-1.009, 0.08 m/s;
/// - k = 1.25 everywhere, target 0.07 %: 0.074-0.091 %, 0.99-1.02, 0.18 m/s (particles jitter along the
///   floor-wall edges); k = 1.5 and 2 everywhere never settle (0.6-1.5 J, floor pressure 3-19 % high);
/// - floor only (walls k = 1), k = 1.25 to 2: 0.127-0.134 %, calm;
/// - floor 1.5, walls 1.125, target 0.07 %: 0.087 %; target 0.05 % (the default): 0.069 %, 1.009,
///   0.054 m/s (calmer than k = 1) and 7.6 ms per step at 1 M particles (9.1 with k = 1: the wall
///   layers no longer hold the solve at its iteration limit). But the full-resolution dam break
///   (`waterview validate --case dam_break --set viscosity=0.0005`) blew up within 0.05 s: the column's
///   bottom layers compressed by 15-20 % (particles on the collision distance at 50 kPa) and shot off.
///   Floor/walls 1/1, 1/1.125, 1.25/1.125, 1.25/1 all ran it (4.2-5.4 %); on the tank they gave 0.164,
///   0.119, 0.072 and 0.116 %, and the sloshing tank's energy stayed below E(0) with each.
/// - floor 1.25, walls 1.125 (the default): 0.072 %, 1.005, 0.043 m/s.
///
/// Alpha is computed for these k, which only under-relaxes the divergence-free solve. The DFSPH shader's
/// `FLOOR_FACTOR` pipeline constant.
pub const DFSPH_BOUNDARY_FACTOR: f32 = 1.25;

/// k of DFSPH's constant-density solve for the side walls and the ceiling (see [`DFSPH_BOUNDARY_FACTOR`]);
/// the DFSPH shader's `WALL_FACTOR` pipeline constant.
pub const DFSPH_WALL_FACTOR: f32 = 1.125;

/// Fewest iterations of DFSPH's divergence-free solve per step (the constant-density solve always runs
/// at least 2): 1, as in Bender's SPlisHSPlasH, where the divergence solve stops once its error is below
/// the target after at least one iteration. Measured on the H100 (`waterview bench --particles 1M`,
/// valley; `waterview validate --solver dfsph`) against 2: divergence solve 1.74 -> 0.65 ms per step,
/// the density solve takes up part of the work (2.49 -> 3.30 ms), 5.99 -> 5.72 ms per step; the resting
/// tank's mean density error 0.069 % either way, floor pressure 1.014 -> 1.008 rho0 g depth, dam break
/// 6.28 % either way. The DFSPH shader's `MIN_DIVERGENCE_ITERATIONS` pipeline constant.
pub const DFSPH_MIN_DIVERGENCE_ITERATIONS: u32 = 1;

/// WGSL twin: `Params` in shaders/sim/common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct SimUniforms {
    pub domain_min: [f32; 3],
    pub h: f32,
    pub domain_max: [f32; 3],
    pub mass: f32,
    pub grid_origin: [f32; 3],
    pub cell_size: f32,
    pub grid_dims: [u32; 3],
    pub num_particles: u32,
    pub gravity: [f32; 3],
    pub rho0: f32,
    pub terrain_origin: [f32; 2],
    pub terrain_spacing: [f32; 2],
    pub terrain_dims: [u32; 2],
    pub table_n: u32,
    pub num_cells: u32,
    pub viscosity: f32,
    pub xsph: f32,
    pub cfl: f32,
    pub max_dt: f32,
    pub delta_unit: f32,
    pub friction: f32,
    pub r_collide: f32,
    pub warm_start: f32,
    pub boundary_factor: f32,
    pub grad_correction: f32,
    pub method: u32,
    pub sound_speed: f32,
    pub tait_b: f32,
    pub err_scale: f32,
    pub target_density: f32,
    pub target_divergence: f32,
    pub density_max_iter: u32,
    pub divergence_max_iter: u32,
    /// Offline capture: absolute simulated time, seconds, at which the steps stop (the last one lands on
    /// it exactly, later ones are no-ops with dt = 0); <= 0 = free running (the window). Set by
    /// [`super::Simulation::advance_to`].
    pub frame_end: f32,
    /// Akinci et al. 2013's surface tension gamma (0 = off), see [`SimParams::surface_tension`].
    pub surface_tension: f32,
    /// Wave maker: 0 = off, 1 = paddle normal to x, 3 = normal to z (axis index + 1), see
    /// [`super::params::WaveMaker`].
    pub wave_axis: u32,
    /// Wave maker: rest distance of the paddle from the domain's min wall, metres.
    pub wave_rest: f32,
    /// Wave maker: amplitude, metres.
    pub wave_amplitude: f32,
    /// Wave maker: angular frequency 2 pi / period, rad/s.
    pub wave_omega: f32,
}
const _: () = assert!(std::mem::size_of::<SimUniforms>() == 208);

/// WCSPH's numerical sound speed, m/s: the parameter, or 10 x the free-fall speed over the domain's height.
pub fn wcsph_sound_speed(params: &SimParams, domain: &Aabb) -> f32 {
    if params.sound_speed > 0.0 {
        return params.sound_speed;
    }
    let g = glam::Vec3::from(params.gravity).length().max(1e-3);
    10.0 * (2.0 * g * (domain.max[1] - domain.min[1])).sqrt()
}

/// WGSL twin: `StepState` in shaders/sim/common.wgsl (dt, simulated time and the solvers' convergence
/// state live on the GPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct StepState {
    pub dt: f32,
    pub time: f32,
    pub max_speed_bits: u32,
    pub steps: u32,
    pub err_sum: u32,
    pub density_iterations: u32,
    pub divergence_iterations: u32,
    /// The highest particle of the last step above the domain's floor, m, as f32 bits (0: not known yet,
    /// or a rank's: the domain's height is used).
    pub fluid_top_bits: u32,
}
const _: () = assert!(std::mem::size_of::<StepState>() == 32);

/// The neighbour grid: cells of one support radius (2h, or a fraction of it) over a box of the domain,
/// with its rows of cells (one (y, z) pair, all x) folded modulo `rows()` onto a table of `table_cells`
/// cells, so the table stays near the particle count however large the domain: cell (x, y, z) has
/// index ((z dims.y + y) mod rows) dims.x + x, rows = table_cells / dims.x. A row is never split (x runs
/// within one folded row), so a row of neighbour cells is still one contiguous range after the sort;
/// cells of rows that fold together share a bucket and the distance test sorts them out (a spatial hash
/// that keeps rows whole, cf. Teschner et al. 2003, "Optimized spatial hashing for collision detection
/// of deformable objects"). The box (`origin`, `dims`) may follow the fluid while the table stays: a
/// particle outside the box is clamped into its border cells, which keeps every neighbour pair within
/// one cell per axis (clamping is monotone), so only speed, never correctness, depends on the box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridShape {
    /// Corner of the box, metres (on the domain's cell lattice).
    pub origin: [f32; 3],
    /// Cell edge, metres.
    pub cell_size: f32,
    /// Cells of the box per axis.
    pub dims: [u32; 3],
    /// Cells in the table (at least dims.x: one row).
    pub table_cells: u64,
}

impl GridShape {
    /// The dense grid over `domain` (no folding).
    pub fn new(domain: &Aabb, cell_size: f32) -> Self {
        let dims: [u32; 3] =
            std::array::from_fn(|a| (((domain.max[a] - domain.min[a]) / cell_size).ceil() as u32).max(1));
        Self { origin: domain.min, cell_size, dims, table_cells: dims.iter().map(|&d| d as u64).product() }
    }

    /// The grid over `domain` folded onto about `cells_per_particle * particles` cells (never more than
    /// the dense grid), with at least [`GridShape::min_rows`] rows for neighbour loops that visit rows
    /// `reach` cells away in y and z (`reach` = support radius / cell size, 1 to 3).
    pub fn folded(domain: &Aabb, cell_size: f32, reach: u32, particles: u64, cells_per_particle: f64) -> Self {
        let mut g = Self::new(domain, cell_size);
        let dense_rows = g.dims[1] as u64 * g.dims[2] as u64;
        let want = (cells_per_particle * particles as f64 / g.dims[0] as f64).ceil().max(1.0) as u64;
        let rows = want.max(Self::min_rows(g.dims[1], reach)).min(dense_rows);
        g.table_cells = rows * g.dims[0] as u64;
        g
    }

    /// Fewest folded rows that keep the rows of one neighbour loop apart, for a box at most `dims_y` cells
    /// high: a loop visits rows (y + dy, z + dz), |dy|, |dz| <= `reach`, whose indices z dims.y + y differ
    /// by at most 2 reach (dims.y + 1); more rows than that never fold two of them onto one table row,
    /// which the loop would visit twice, counting its particles twice (a 4 x 4 x 4 block of 64 particles
    /// folded onto 8 rows had twice its density and blew up in its first step). A box that follows the
    /// fluid ([`GridShape::boxed`]) is never higher and never has fewer rows (its dims.x is never wider).
    pub fn min_rows(dims_y: u32, reach: u32) -> u64 {
        2 * reach as u64 * (dims_y as u64 + 1) + 1
    }

    /// This grid's box moved onto `lo..hi` (metres, padded by `pad` cells, clamped to `domain`), on the
    /// same cell lattice, with the same table. dims.x never exceeds the table's cells.
    pub fn boxed(&self, domain: &Aabb, lo: [f32; 3], hi: [f32; 3], pad: u32) -> Self {
        let full = Self::new(domain, self.cell_size);
        let mut g = *self;
        for a in 0..3 {
            let first = ((lo[a] - domain.min[a]) / self.cell_size).floor() as i64 - pad as i64;
            let last = ((hi[a] - domain.min[a]) / self.cell_size).floor() as i64 + pad as i64;
            let first = first.clamp(0, full.dims[a] as i64 - 1);
            let last = last.clamp(first, full.dims[a] as i64 - 1);
            g.origin[a] = domain.min[a] + first as f32 * self.cell_size;
            g.dims[a] = (last - first + 1) as u32;
        }
        g.dims[0] = g.dims[0].min(self.table_cells as u32);
        g
    }

    /// Folded rows: table cells / dims.x.
    pub fn rows(&self) -> u32 {
        (self.table_cells / self.dims[0] as u64) as u32
    }

    /// Cells in the table.
    pub fn num_cells(&self) -> u64 {
        self.table_cells
    }

    /// Cells of the unfolded box.
    pub fn dense_cells(&self) -> u64 {
        self.dims.iter().map(|&d| d as u64).product()
    }
}

/// Derived per-scene constants: particle mass from the lattice-normalised volume, PCISPH delta.
#[derive(Clone, Copy, Debug)]
pub struct Derived {
    pub mass: f32,
    /// PCISPH delta for dt = 1 s, for the gradient-corrected pressure force.
    pub delta_unit: f32,
    /// 1 / C, C = the lattice's kernel gradient normalisation (see `kernel::gradient_normalization`).
    pub grad_correction: f32,
}

impl Derived {
    pub fn new(params: &SimParams) -> Self {
        let (dx, h) = (params.dx as f64, params.h() as f64);
        let c = kernel::gradient_normalization(dx, h);
        Self {
            mass: (params.rho0 as f64 * kernel::particle_volume(dx, h)) as f32,
            delta_unit: (kernel::pcisph_delta_unit(dx, h) * c) as f32,
            grad_correction: (1.0 / c) as f32,
        }
    }
}

impl SimUniforms {
    /// Converts user parameters, the domain, the grid and the terrain into the GPU block.
    pub fn new(
        params: &SimParams,
        derived: &Derived,
        domain: &Aabb,
        grid: &GridShape,
        terrain: &Heightfield,
        n: u32,
    ) -> Self {
        let c = wcsph_sound_speed(params, domain);
        Self {
            domain_min: domain.min,
            h: params.h(),
            domain_max: domain.max,
            mass: derived.mass,
            grid_origin: grid.origin,
            cell_size: grid.cell_size,
            grid_dims: grid.dims,
            num_particles: n,
            gravity: params.gravity,
            rho0: params.rho0,
            terrain_origin: terrain.origin.to_array(),
            terrain_spacing: terrain.spacing().to_array(),
            terrain_dims: [terrain.nx, terrain.nz],
            table_n: BOUNDARY_TABLE_N,
            num_cells: grid.num_cells() as u32,
            viscosity: params.viscosity,
            xsph: params.xsph,
            cfl: params.cfl,
            max_dt: params.max_dt(),
            delta_unit: derived.delta_unit,
            friction: params.friction,
            r_collide: 0.25 * params.dx,
            boundary_factor: BOUNDARY_PRESSURE_FACTOR,
            grad_correction: derived.grad_correction,
            method: params.method.code(),
            sound_speed: c,
            tait_b: c * c * params.rho0 / 7.0,
            err_scale: (1e5f64.min(1e11 / n.max(1) as f64)) as f32,
            target_density: params.target_density_error,
            target_divergence: params.target_divergence_error,
            density_max_iter: params.density_iterations,
            divergence_max_iter: params.divergence_iterations,
            frame_end: 0.0,
            surface_tension: params.surface_tension,
            wave_axis: params.wave_maker.map_or(0, |w| w.axis.index() as u32 + 1),
            wave_rest: params.wave_maker.map_or(0.0, |w| w.rest),
            wave_amplitude: params.wave_maker.map_or(0.0, |w| w.amplitude),
            wave_omega: params.wave_maker.map_or(0.0, |w| w.omega()),
            warm_start: PRESSURE_WARM_START,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows one neighbour loop visits fold onto distinct table rows, for any particle count, cell
    /// split and box the grid may take.
    #[test]
    fn a_neighbour_loop_never_visits_a_folded_row_twice() {
        let domain = Aabb { min: [0.0, 0.0, 0.0], max: [1.0, 0.6, 0.5] };
        for reach in 1..=3u32 {
            let cell = 0.12 / reach as f32;
            for particles in [1u64, 8, 64, 1000, 100_000] {
                let table = GridShape::folded(&domain, cell, reach, particles, 2.0);
                for (lo, hi) in
                    [([0.4, 0.0, 0.15], [0.6, 0.2, 0.35]), ([0.0; 3], [1.0, 0.6, 0.5]), ([0.9; 3], [0.9; 3])]
                {
                    let g = table.boxed(&domain, lo, hi, 3);
                    let r = reach as i64;
                    for (y, z) in [(0, 0), (g.dims[1] as i64 / 2, g.dims[2] as i64 / 2), (r, r)] {
                        let mut rows: Vec<u64> = Vec::new();
                        for dz in -r..=r {
                            for dy in -r..=r {
                                let (yy, zz) = (y + dy, z + dz);
                                if (0..g.dims[1] as i64).contains(&yy) && (0..g.dims[2] as i64).contains(&zz) {
                                    rows.push((zz as u64 * g.dims[1] as u64 + yy as u64) % g.rows() as u64);
                                }
                            }
                        }
                        let n = rows.len();
                        rows.sort_unstable();
                        rows.dedup();
                        assert_eq!(rows.len(), n, "{particles} particles, reach {reach}, grid {g:?}");
                    }
                }
            }
        }
    }
}
