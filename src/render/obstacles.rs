//! The static obstacles (`shaders/render/obstacles.wgsl`): every triangle of their meshes, in world space,
//! flat-shaded with its face normal and lit like the terrain (Lambert sun, hemispheric sky ambient,
//! distance fog). The corners go to one storage buffer when the scene's obstacles are set
//! ([`ObstaclesPass::set_meshes`]); the vertex shader reads them by index (no vertex buffers). Drawn
//! with the background, after the terrain and before the background cache stores it ("obstacles"), opaque
//! and depth written, so the particles and the water are depth tested against them and the water
//! refracts them.

use super::frame;
use super::pass::{Frame, Pass};
use crate::gpu::{self, GpuContext};
use glam::Vec3;

/// One obstacle's mesh as plain data (the engine makes it from the simulation's obstacles): world
/// positions, metres, and triangles as indices into them, counter-clockwise seen from outside.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObstacleMesh {
    /// World positions, metres.
    pub vertices: Vec<Vec3>,
    /// Triangles, three indices into `vertices` each.
    pub triangles: Vec<[u32; 3]>,
}

/// One corner of a drawn triangle. WGSL twin: ObstacleCorner in shaders/render/obstacles.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ObstacleCorner {
    /// World position, metres; w = 1.
    pub position: [f32; 4],
    /// The triangle's unit normal; w = 0.
    pub normal: [f32; 4],
}

/// The obstacles' look, bind group 1 binding 0. WGSL twin: ObstacleStyle in shaders/render/obstacles.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ObstacleStyle {
    /// Diffuse albedo (linear RGB): pale concrete.
    pub albedo: [f32; 3],
    /// Extinction of the distance fog, 1/m (the terrain's for a scene of the obstacles' extent).
    pub fog_density: f32,
}

/// The corners of `meshes`' triangles, three per triangle, each with its face's normal (triangles of no
/// area get +y).
pub fn corners(meshes: &[ObstacleMesh]) -> Vec<ObstacleCorner> {
    let mut out = Vec::with_capacity(meshes.iter().map(|m| 3 * m.triangles.len()).sum());
    for m in meshes {
        for t in &m.triangles {
            let [a, b, c] = t.map(|i| m.vertices.get(i as usize).copied().unwrap_or(Vec3::ZERO));
            let n = (b - a).cross(c - a).try_normalize().unwrap_or(Vec3::Y);
            for p in [a, b, c] {
                out.push(ObstacleCorner { position: [p.x, p.y, p.z, 1.0], normal: [n.x, n.y, n.z, 0.0] });
            }
        }
    }
    out
}

/// The obstacles' pipeline and the corners of the current scene's obstacles.
pub struct ObstaclesPass {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    style: wgpu::Buffer,
    /// The corners' buffer (written in place while its size holds: a scene with bodies sets them every
    /// frame), the bind group over it, the corner count and their bounds (none: nothing to draw).
    bound: Option<Corners>,
}

/// The obstacles' corners on the GPU, as [`ObstaclesPass`] holds them.
struct Corners {
    buffer: wgpu::Buffer,
    group: wgpu::BindGroup,
    count: u32,
    bounds: (Vec3, Vec3),
}

impl ObstaclesPass {
    /// Builds the pipeline for colour targets of `color_format` (depth: [`frame::DEPTH_FORMAT`]); no
    /// obstacle until [`ObstaclesPass::set_meshes`].
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/obstacles.wgsl");
        let vis = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("obstacles bind group layout"),
            entries: &[
                gpu::uniform_entry::<ObstacleStyle>(0, vis),
                gpu::storage_entry::<ObstacleCorner>(1, true, wgpu::ShaderStages::VERTEX),
            ],
        });
        let pipeline_layout = frame::pass_pipeline_layout(device, "obstacles pipeline layout", &layout);
        let pipeline = frame::render_pipeline(
            device,
            "obstacles pipeline",
            &pipeline_layout,
            &module,
            ("vs_main", "fs_main"),
            wgpu::PrimitiveState { cull_mode: Some(wgpu::Face::Back), ..Default::default() },
            color_format.into(),
            Some(frame::depth_state(frame::DEPTH_COMPARE, true)),
            &frame::output_constants(color_format),
        );
        let style = ObstacleStyle { albedo: [0.42, 0.40, 0.37], fog_density: 0.0 };
        let style = gpu::uniform_buffer_init(device, "obstacles style", bytemuck::bytes_of(&style));
        Self { pipeline, layout, style, bound: None }
    }

    /// The obstacles drawn from now on (none: nothing is drawn); `fog_density` (1/m) as the terrain's.
    pub fn set_meshes(&mut self, ctx: &GpuContext, meshes: &[ObstacleMesh], fog_density: f32) {
        let corners = corners(meshes);
        if corners.is_empty() {
            self.bound = None;
            return;
        }
        let style = ObstacleStyle { albedo: [0.42, 0.40, 0.37], fog_density };
        ctx.queue.write_buffer(&self.style, 0, bytemuck::bytes_of(&style));
        let bytes: &[u8] = bytemuck::cast_slice(&corners);
        let bounds = corners.iter().fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), c| {
            let p = Vec3::new(c.position[0], c.position[1], c.position[2]);
            (lo.min(p), hi.max(p))
        });
        let count = corners.len() as u32;
        match self.bound.as_mut() {
            Some(b) if b.buffer.size() == bytes.len() as u64 => {
                ctx.queue.write_buffer(&b.buffer, 0, bytes);
                b.bounds = bounds;
            }
            _ => {
                let buffer = gpu::storage_buffer_init(&ctx.device, "obstacle corners", bytes);
                let group = gpu::bind_at(
                    &ctx.device,
                    "obstacles bind group",
                    &self.layout,
                    vec![(0, &self.style), (1, &buffer)],
                );
                self.bound = Some(Corners { buffer, group, count, bounds });
            }
        }
    }

    /// The corners' buffer (`ObstacleCorner`s, three per triangle), their count and their bounds (world,
    /// metres), which the obstacles' shadow map draws; none without obstacles.
    pub fn corners(&self) -> Option<(&wgpu::Buffer, u32, (Vec3, Vec3))> {
        self.bound.as_ref().map(|b| (&b.buffer, b.count, b.bounds))
    }
}

impl Pass for ObstaclesPass {
    type Input<'a> = ();

    /// Records "obstacles" over the frame's targets (after the terrain); nothing without obstacles.
    fn encode(&mut self, frame: &mut Frame<'_>, _: ()) {
        let Some(Corners { group, count, .. }) = &self.bound else { return };
        let mut pass = frame.target_pass("obstacles", false);
        pass.set_bind_group(1, group, &[]);
        pass.set_pipeline(&self.pipeline);
        pass.draw(0..*count, 0..1);
    }
}
