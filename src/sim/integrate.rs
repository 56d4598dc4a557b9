//! Integration (`shaders/sim/integrate.wgsl`): symplectic Euler, then the boundaries (terrain, walls, a
//! wave maker's paddle) as hard constraints with friction, and the sinks, which park the particles that
//! enter them. Writes the step's new state into the unsorted buffers (`pos`, `vel`) in this step's order.

use super::stage::{Stage, StageLayouts, StepContext};
use crate::gpu;

/// The "integrate" pass.
pub(super) struct IntegrateStage {
    integrate: wgpu::ComputePipeline,
}

impl IntegrateStage {
    pub fn new(layouts: &StageLayouts) -> Self {
        let module = layouts.module("sim/integrate.wgsl", &[]);
        Self { integrate: layouts.per_particle(&module, "integrate") }
    }
}

impl Stage for IntegrateStage {
    type Input<'a> = ();

    fn encode(&self, step: &mut StepContext<'_>, (): ()) {
        let groups = step.dispatch.particles;
        let mut pass = step.pass("integrate");
        pass.set_pipeline(&self.integrate);
        gpu::dispatch(&mut pass, groups);
    }
}
