//! The time step (`shaders/sim/time_step.wgsl`): one thread at the start of every step picks dt from the
//! CFL condition (Monaghan 1992), the viscous limit and, for PCISPH, a pressure limit, from the largest
//! speed of the previous step, all on the GPU; nothing is read back. An offline capture's `frame_end`
//! ([`super::Simulation::set_frame_end`]) lands the steps exactly on it.

use super::stage::{Stage, StageLayouts, StepContext};

/// The "time step" pass.
pub(super) struct TimeStepStage {
    time_step: wgpu::ComputePipeline,
}

impl TimeStepStage {
    pub fn new(layouts: &StageLayouts) -> Self {
        let module = layouts.module("sim/time_step.wgsl", &[]);
        Self { time_step: layouts.fixed(&module, "time_step") }
    }
}

impl Stage for TimeStepStage {
    type Input<'a> = ();

    fn encode(&self, step: &mut StepContext<'_>, (): ()) {
        let mut pass = step.pass("time step");
        pass.set_pipeline(&self.time_step);
        crate::gpu::dispatch(&mut pass, crate::gpu::Workgroups::ONE);
    }
}
