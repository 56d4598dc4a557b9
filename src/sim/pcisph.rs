//! PCISPH (Solenthaler & Pajarola 2009) and WCSPH (Tait equation, Becker & Teschner 2007) on the GPU
//! (`shaders/sim/pcisph.wgsl`): `density_forces` sums the density and the non-pressure forces (and for
//! WCSPH the Tait pressure), then PCISPH runs a fixed number of `pressure_force` + `predict_density`
//! iterations (nothing read back to decide when to stop: the lesson of the DX11 project this one grew
//! from) and both end with a `pressure_force`. WCSPH is the same with no iteration.

use super::stage::{Stage, StageLayouts, StepContext};
use crate::gpu;

/// The "density" and "pressure" passes of PCISPH and WCSPH.
pub(super) struct PcisphStage {
    density_forces: wgpu::ComputePipeline,
    pressure_force: wgpu::ComputePipeline,
    predict_density: wgpu::ComputePipeline,
}

impl PcisphStage {
    pub fn new(layouts: &StageLayouts) -> Self {
        let module = gpu::shader::module(layouts.device, "sim/pcisph.wgsl");
        Self {
            density_forces: layouts.per_particle(&module, "density_forces"),
            pressure_force: layouts.per_particle(&module, "pressure_force"),
            predict_density: layouts.per_particle(&module, "predict_density"),
        }
    }
}

impl Stage for PcisphStage {
    /// Pressure iterations: PCISPH's `solver_iterations`, 0 for WCSPH.
    type Input<'a> = u32;

    fn encode(&self, step: &mut StepContext<'_>, iterations: u32) {
        let groups = step.dispatch.particles;
        {
            let mut pass = step.pass("density");
            pass.set_pipeline(&self.density_forces);
            gpu::dispatch(&mut pass, groups);
        }
        let mut pass = step.pass("pressure");
        for _ in 0..iterations {
            pass.set_pipeline(&self.pressure_force);
            gpu::dispatch(&mut pass, groups);
            pass.set_pipeline(&self.predict_density);
            gpu::dispatch(&mut pass, groups);
        }
        pass.set_pipeline(&self.pressure_force);
        gpu::dispatch(&mut pass, groups);
    }
}

/// The passes recorded one at a time, for a rank's host-driven step (src/sim/ranked_step.rs), which
/// exchanges the ghosts' densities and pressures between them.
impl PcisphStage {
    /// `density_forces` (density, non-pressure forces).
    pub(super) fn encode_density(&self, step: &mut StepContext<'_>) {
        let groups = step.dispatch.particles;
        let mut pass = step.pass("density");
        pass.set_pipeline(&self.density_forces);
        gpu::dispatch(&mut pass, groups);
    }

    /// One iteration (`pressure_force`, `predict_density`), or with `last` the closing `pressure_force`.
    pub(super) fn encode_pressure(&self, step: &mut StepContext<'_>, last: bool) {
        let groups = step.dispatch.particles;
        let mut pass = step.pass("pressure");
        pass.set_pipeline(&self.pressure_force);
        gpu::dispatch(&mut pass, groups);
        if !last {
            pass.set_pipeline(&self.predict_density);
            gpu::dispatch(&mut pass, groups);
        }
    }
}
