//! Surface tension after Akinci, Akinci & Teschner 2013, "Versatile surface tension and adhesion for SPH
//! fluids" (`shaders/sim/surface_tension.wgsl`): this stage computes the surface normals
//! `n_i = R sum_j m_j / rho_j grad W_ij` into `accel`; the force itself is added by the solvers'
//! non-pressure kernels (PCISPH `density_forces`, DFSPH `df_nonpressure`), which import the shader's
//! functions. Recorded only while the coefficient is positive.

use super::stage::{Stage, StageLayouts, StepContext};
use crate::gpu;

/// The "surface normals" pass.
pub(super) struct SurfaceTensionStage {
    surface_normals: wgpu::ComputePipeline,
}

impl SurfaceTensionStage {
    pub fn new(layouts: &StageLayouts) -> Self {
        let module = layouts.module("sim/surface_tension.wgsl", &[]);
        Self { surface_normals: layouts.per_particle(&module, "surface_normals") }
    }
}

impl Stage for SurfaceTensionStage {
    type Input<'a> = ();

    fn encode(&self, step: &mut StepContext<'_>, (): ()) {
        let groups = step.dispatch.particles;
        let mut pass = step.pass("surface normals");
        pass.set_pipeline(&self.surface_normals);
        gpu::dispatch(&mut pass, groups);
    }
}
