//! GPU twins of the simulation's WGSL structs (`shaders/sim/common.wgsl`): `#[repr(C)]`, Pod, explicit
//! padding and a compile-time size check each. Converted from [`SimParams`] in one place, [`SimUniforms::new`].

use super::kernel;
use super::params::{Method, SimParams};
use crate::scene::Aabb;
use crate::terrain::Heightfield;
use bytemuck::{Pod, Zeroable};

/// Samples in the boundary table (over d in [-2h, 2h]).
pub const BOUNDARY_TABLE_N: u32 = 256;

/// Fraction of the previous step's pressure a PCISPH step starts from. Measured on the resting tank
/// (lavapipe, 12 500 particles, 1 s): 0 leaves 0.5 % mean density error, 1 keeps the bottom layer
/// bouncing (kinetic energy 5-25 J), 0.5 settles to 0.15 J with 0.3 % error.
pub const PRESSURE_WARM_START: f32 = 0.5;

/// Weight of the boundary pressure term -k p_i/rho_i^2 grad rho_boundary. Full mirroring (k = 2) overdrives
/// the particles at the walls and floor (tank: 40-60 J of kinetic energy that never settles); k = 1, the
/// form of Akinci et al. 2012, settles.
pub const BOUNDARY_PRESSURE_FACTOR: f32 = 1.0;

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
    pub _pad3: [f32; 2],
}
const _: () = assert!(std::mem::size_of::<SimUniforms>() == 192);

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
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct StepState {
    pub dt: f32,
    pub time: f32,
    pub max_speed_bits: u32,
    pub steps: u32,
    pub err_sum: u32,
    pub density_iterations: u32,
    pub divergence_iterations: u32,
    pub _pad: u32,
}
const _: () = assert!(std::mem::size_of::<StepState>() == 32);

/// The neighbour grid: cells of one support radius (2h) over the domain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridShape {
    pub origin: [f32; 3],
    pub cell_size: f32,
    pub dims: [u32; 3],
}

impl GridShape {
    pub fn new(domain: &Aabb, cell_size: f32) -> Self {
        let dims = std::array::from_fn(|a| (((domain.max[a] - domain.min[a]) / cell_size).ceil() as u32).max(1));
        Self { origin: domain.min, cell_size, dims }
    }

    pub fn num_cells(&self) -> u64 {
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
    pub fn new(params: &SimParams, derived: &Derived, domain: &Aabb, grid: &GridShape, terrain: &Heightfield, n: u32) -> Self {
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
            method: match params.method {
                Method::Dfsph => 0,
                Method::Pcisph => 1,
                Method::Wcsph => 2,
            },
            sound_speed: c,
            tait_b: c * c * params.rho0 / 7.0,
            err_scale: (1e5f64.min(1e11 / n.max(1) as f64)) as f32,
            target_density: params.target_density_error,
            target_divergence: params.target_divergence_error,
            density_max_iter: params.density_iterations,
            divergence_max_iter: params.divergence_iterations,
            _pad3: [0.0; 2],
            warm_start: PRESSURE_WARM_START,
        }
    }
}
