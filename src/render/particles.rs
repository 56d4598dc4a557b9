//! Particles as ray-cast sphere impostors (`shaders/render/particles.wgsl`): one instanced 6-vertex quad
//! per particle, positions and velocities read straight from the simulation's storage buffers (no vertex
//! buffers, no CPU copy). The fragment shader intersects each pixel's view ray with the exact sphere,
//! writes the hit's depth (so spheres and terrain occlude each other correctly) and shades it as water,
//! coloured by speed, density or pressure through a perceptual colour map.
//!
//! The bind group over the particle buffers is kept and rebuilt only when the buffers change
//! (`wgpu::Buffer` compares by identity).

use super::frame;
use super::pass::{Frame, Pass};
use super::ParticleSource;
use crate::gpu::{self, split, GpuContext};
use serde::{Deserialize, Serialize};

/// Which per-particle quantity picks the colour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ColorMode {
    /// |velocity|, m/s, blue -> cyan -> white.
    #[default]
    Speed,
    /// Density, kg/m^3, viridis.
    Density,
    /// Pressure, Pa, viridis.
    Pressure,
    /// `ParticleStyle::uniform_color` for every particle.
    Uniform,
}

impl ColorMode {
    /// Every mode, in UI order.
    pub const ALL: [ColorMode; 4] = [ColorMode::Speed, ColorMode::Density, ColorMode::Pressure, ColorMode::Uniform];

    /// A useful [lo, hi] for water in this mode's unit (m/s, kg/m^3, Pa).
    pub fn default_range(self) -> [f32; 2] {
        match self {
            ColorMode::Speed => [0.0, 3.0],
            ColorMode::Density => [950.0, 1050.0],
            ColorMode::Pressure => [0.0, 20_000.0],
            ColorMode::Uniform => [0.0, 1.0],
        }
    }

    /// The quantity's unit, for labels.
    pub fn unit(self) -> &'static str {
        match self {
            ColorMode::Speed => "m/s",
            ColorMode::Density => "kg/m^3",
            ColorMode::Pressure => "Pa",
            ColorMode::Uniform => "",
        }
    }

    /// The particle shader's `color_mode` code (`MODE_*` in shaders/render/particles.wgsl).
    pub fn gpu_code(self) -> u32 {
        match self {
            ColorMode::Speed => 0,
            ColorMode::Density => 1,
            ColorMode::Pressure => 2,
            ColorMode::Uniform => 3,
        }
    }
}

/// How particles look (user-facing, serde).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ParticleStyle {
    /// Quantity mapped to colour.
    pub color_mode: ColorMode,
    /// Values mapped to the two ends of the colour map, in the mode's unit (m/s, kg/m^3 or Pa).
    pub range: [f32; 2],
    /// Sphere radius, metres (the simulation's dx / 2 draws touching spheres).
    pub radius: f32,
    /// Linear RGB (0..1) used by `ColorMode::Uniform`.
    pub uniform_color: [f32; 3],
}

impl Default for ParticleStyle {
    fn default() -> Self {
        Self {
            color_mode: ColorMode::Speed,
            range: ColorMode::Speed.default_range(),
            radius: 0.05,
            uniform_color: [0.03, 0.22, 0.55],
        }
    }
}

/// Particle style as the shader reads it, bind group 1 binding 0.
/// WGSL twin: `Style` in `shaders/render/particles.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ParticleUniform {
    /// Linear RGB for the uniform mode.
    pub uniform_color: [f32; 3],
    /// Sphere radius, metres.
    pub radius: f32,
    /// [lo, hi] of the colour map, in the mode's unit.
    pub range: [f32; 2],
    /// 0 speed, 1 density, 2 pressure, 3 uniform.
    pub color_mode: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<ParticleUniform>() == 32);

impl From<&ParticleStyle> for ParticleUniform {
    fn from(s: &ParticleStyle) -> Self {
        Self {
            uniform_color: s.uniform_color,
            radius: s.radius.max(1e-6),
            range: s.range,
            color_mode: s.color_mode.gpu_code(),
            _pad: 0,
        }
    }
}

/// The bind group over one pair of particle arrays, and their first chunks (kept to compare identity: a
/// new array has new chunks).
struct Bound {
    positions: wgpu::Buffer,
    velocities: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
}

/// The particle pass: pipeline, style uniform and the bind group over the last particle buffers drawn.
pub struct ParticlePass {
    /// The pipeline and the chunk length of the split arrays it reads (its `SPLIT_N`): made again when
    /// the particles come in chunks of another length (only where a test lowers it).
    pipeline: (u32, wgpu::RenderPipeline),
    module: wgpu::ShaderModule,
    pipeline_layout: wgpu::PipelineLayout,
    color_format: wgpu::TextureFormat,
    layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    bound: Option<Bound>,
}

impl ParticlePass {
    /// Builds the pipeline for colour targets of `color_format` (depth: `Depth32Float`).
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/particles.wgsl");
        let stages = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("particles bind group layout"),
            entries: &[
                [gpu::uniform_entry::<ParticleUniform>(0, stages)].as_slice(),
                &split::layout_entries::<[f32; 4]>(1, true, wgpu::ShaderStages::VERTEX, split::MAX_CHUNKS),
                &split::layout_entries::<[f32; 4]>(2, true, wgpu::ShaderStages::VERTEX, split::MAX_CHUNKS),
            ]
            .concat(),
        });
        let pipeline_layout = frame::pass_pipeline_layout(device, "particles pipeline layout", &layout);
        let per_binding = split::per_binding(&device.limits());
        let pipeline = (per_binding, Self::pipeline(device, &module, &pipeline_layout, color_format, per_binding));
        let style = ParticleUniform::from(&ParticleStyle::default());
        let uniform = gpu::uniform_buffer_init(device, "particles style uniform", bytemuck::bytes_of(&style));
        Self { pipeline, module, pipeline_layout, color_format, layout, uniform, bound: None }
    }

    /// The pipeline reading split arrays in chunks of `per_binding` particles.
    fn pipeline(
        device: &wgpu::Device,
        module: &wgpu::ShaderModule,
        layout: &wgpu::PipelineLayout,
        color_format: wgpu::TextureFormat,
        per_binding: u32,
    ) -> wgpu::RenderPipeline {
        frame::opaque_pipeline_with(
            device,
            "particles pipeline",
            layout,
            module,
            wgpu::PrimitiveState::default(),
            color_format,
            &[(split::CONSTANT, per_binding as f64)],
        )
    }
}

impl Pass for ParticlePass {
    /// The particles and how they look.
    type Input<'a> = (ParticleSource<'a>, &'a ParticleStyle);

    /// Records "particles": `count` sphere impostors read from the source's positions and velocities
    /// (`array<vec4<f32>>`, each at least `16 * count` bytes) over the frame's targets. The style is
    /// written to the uniform through the queue (it takes effect at the next submission: draw particles
    /// once per submission); the bind group is rebuilt only when the buffers change. Nothing is recorded
    /// when `count` is 0.
    fn encode(&mut self, frame: &mut Frame<'_>, (source, style): Self::Input<'_>) {
        if source.count == 0 {
            return;
        }
        frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&ParticleUniform::from(style)));
        let (positions, velocities) = (source.positions, source.velocities);
        let same = |b: &Bound| b.positions == positions.chunks()[0] && b.velocities == velocities.chunks()[0];
        if self.bound.as_ref().is_none_or(|b| !same(b)) {
            let buffers = [(0, &self.uniform)]
                .into_iter()
                .chain(positions.bindings(1, split::MAX_CHUNKS))
                .chain(velocities.bindings(2, split::MAX_CHUNKS));
            let bind_group = gpu::bind_at(frame.device, "particles bind group", &self.layout, buffers);
            let (positions, velocities) = (positions.chunks()[0].clone(), velocities.chunks()[0].clone());
            self.bound = Some(Bound { positions, velocities, bind_group });
        }
        let per_binding = positions.per_binding();
        if self.pipeline.0 != per_binding {
            let pipeline =
                Self::pipeline(frame.device, &self.module, &self.pipeline_layout, self.color_format, per_binding);
            self.pipeline = (per_binding, pipeline);
        }
        let Some(b) = self.bound.as_ref() else { return };
        let mut pass = frame.target_pass("particles", false);
        pass.set_pipeline(&self.pipeline.1);
        pass.set_bind_group(1, &b.bind_group, &[]);
        pass.draw(0..6, 0..source.count);
    }
}
