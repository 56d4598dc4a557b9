//! The wave maker's paddle (`shaders/render/wave_maker.wgsl`): a solid slab drawn at the moving wall of a
//! piston wave maker (the simulation's `WaveMaker`), in a pass of its own ("wave maker") after the terrain, with
//! depth so water and paddle occlude each other. Its position is evaluated in the vertex shader from the
//! simulation's step state on the GPU (simulated time), so it moves exactly with the wall the particles
//! feel, a frame of read-back latency never shows. Nothing is drawn when the simulation has no wave maker.

use super::frame;
use super::pass::{Frame, Pass};
use crate::gpu::{self, GpuContext};

/// Drawn thickness of the paddle as a fraction of the domain's largest extent.
const THICKNESS_FRACTION: f32 = 0.01;

/// The paddle's geometry and motion, bind group 1 binding 0. WGSL twin: `Paddle` in
/// `shaders/render/wave_maker.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PaddleUniform {
    /// The simulation domain's min corner, metres.
    pub domain_min: [f32; 3],
    /// Index of the axis the paddle moves along (0 = x, 2 = z).
    pub axis: u32,
    /// The simulation domain's max corner, metres.
    pub domain_max: [f32; 3],
    /// Rest distance of the wall from the domain's min wall, metres.
    pub rest: f32,
    /// Amplitude of the motion, metres.
    pub amplitude: f32,
    /// Angular frequency 2 pi / period, rad/s.
    pub omega: f32,
    /// Drawn thickness of the slab behind the wall plane, metres.
    pub thickness: f32,
    pub _pad: f32,
}
const _: () = assert!(size_of::<PaddleUniform>() == 48);

impl PaddleUniform {
    /// The paddle of a wave maker in the domain `domain_min..domain_max` (metres) moving along axis `axis`
    /// (0 = x, 2 = z) as `rest + amplitude sin(omega t)` metres from the min wall (`omega` in rad/s).
    pub fn new(domain_min: [f32; 3], domain_max: [f32; 3], axis: u32, rest: f32, amplitude: f32, omega: f32) -> Self {
        let extent = (0..3).map(|a| domain_max[a] - domain_min[a]).fold(0.0f32, f32::max);
        Self { domain_min, axis, domain_max, rest, amplitude, omega, thickness: THICKNESS_FRACTION * extent, _pad: 0.0 }
    }
}

/// Pipeline and bindings of the paddle.
pub struct WaveMakerPass {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    /// What the uniform holds now; `None` = nothing to draw.
    current: Option<PaddleUniform>,
    /// The simulation step-state buffer bound, and the bind group over it and the uniform.
    bound: Option<(wgpu::Buffer, wgpu::BindGroup)>,
}

impl WaveMakerPass {
    /// Builds the pipeline for colour targets of `color_format` (depth: [`frame::DEPTH_FORMAT`]).
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/wave_maker.wgsl");
        let stages = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("wave maker bind group layout"),
            // Binding 1: the simulated clock, the step state's first two floats (`SimClock` in the shader).
            entries: &[gpu::uniform_entry::<PaddleUniform>(0, stages), gpu::storage_entry::<[f32; 2]>(1, true, stages)],
        });
        let pipeline_layout = frame::pass_pipeline_layout(device, "wave maker pipeline layout", &layout);
        let triangles = wgpu::PrimitiveState {
            topology: wgpu::PrimitiveTopology::TriangleList,
            cull_mode: None,
            ..Default::default()
        };
        let pipeline =
            frame::opaque_pipeline(device, "wave maker pipeline", &pipeline_layout, &module, triangles, color_format);
        let zero = PaddleUniform::new([0.0; 3], [1.0; 3], 0, 0.0, 0.0, 0.0);
        let uniform = gpu::uniform_buffer_init(device, "wave maker uniform", bytemuck::bytes_of(&zero));
        Self { pipeline, layout, uniform, current: None, bound: None }
    }
}

impl Pass for WaveMakerPass {
    /// The paddle to draw (its geometry, and the buffer holding the simulated time it moves on), if any.
    type Input<'a> = Option<(PaddleUniform, &'a wgpu::Buffer)>;

    /// Records "wave maker", the paddle (36 vertices) over the frame's targets, when there is one; nothing
    /// otherwise. The uniform is written and the bind group rebuilt only when they change.
    fn encode(&mut self, frame: &mut Frame<'_>, paddle: Self::Input<'_>) {
        let Some((uniform, clock)) = paddle else {
            self.current = None;
            return;
        };
        if self.current != Some(uniform) {
            frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&uniform));
            self.current = Some(uniform);
        }
        if self.bound.as_ref().is_none_or(|(bound, _)| bound != clock) {
            let group = gpu::bind_buffers(frame.device, "wave maker bind group", &self.layout, &[&self.uniform, clock]);
            self.bound = Some((clock.clone(), group));
        }
        let Some((_, group)) = &self.bound else { return };
        let mut pass = frame.target_pass("wave maker", false);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(1, group, &[]);
        pass.draw(0..36, 0..1);
    }
}
