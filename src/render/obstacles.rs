//! The static obstacles and floating bodies (`shaders/render/obstacles.wgsl`): every triangle of their
//! meshes, in world space, flat-shaded with its face normal and lit as the terrain is, by the same WGSL
//! (`shaders/render/surface_light.wgsl`): Lambert sun shadowed by the obstacles' shadow map and by the
//! terrain (the heightfield's soft shadow marched toward the sun per pixel; the terrain's own is baked per
//! height sample, which holds the shadow on the ground only), hemispheric sky ambient, and the distance
//! fog of the ground they stand on (the terrain's, or a box scene's tank ground's) toward the sky cubemap,
//! and over a terrain with its bounce light on, the light its ground sends up ([`super::terrain_bounce`]).
//! The corners go to one storage buffer when the scene's obstacles are set ([`ObstaclesPass::set_meshes`]);
//! the vertex shader reads them by index (no vertex buffers).
//! Drawn with the background, after the terrain and before the background cache stores it ("obstacles"),
//! opaque and depth written, so the particles and the water are depth tested against them and the water
//! refracts them. Where the water's light is dimmed ([`super::water_shadow`]), "obstacles water shadow"
//! draws them again over the same depths and multiplies the frame by the ratio of their colour with the
//! sun's light through the water to their colour without, as "terrain water shadow" does for the ground.
//!
//! Bind groups: 0 the frame, 1 the heightfield's uniform and heights ([`super::TerrainPass::ground`],
//! bindings 0 and 1 as the terrain's), the style, the corners and the ground's radiosity, 2 the water's light (the water-shadow
//! draw only), 3 the terrain's sky cubemap ([`super::heightfield::sky_layout`]).

use super::frame;
use super::heightfield::GroundBuffers;
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

/// The obstacles' look, bind group 1 binding 2. WGSL twin: ObstacleStyle in shaders/render/obstacles.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ObstacleStyle {
    /// Diffuse albedo (linear RGB): pale concrete.
    pub albedo: [f32; 3],
    /// Extinction of the distance fog, 1/m: the ground's the obstacles stand on.
    pub fog_density: f32,
    /// 1: the terrain shadows the obstacles; 0: not (the terrain is not drawn, e.g. under a tank's ground).
    pub terrain_shadow: f32,
    pub _pad0: f32,
    pub _pad1: f32,
    pub _pad2: f32,
}
const _: () = assert!(size_of::<ObstacleStyle>() == 32);

/// The obstacles' albedo (linear RGB): pale concrete.
const ALBEDO: [f32; 3] = [0.42, 0.40, 0.37];

/// What the obstacles are drawn with each frame.
#[derive(Clone, Copy)]
pub struct ObstaclesInput<'a> {
    /// Bind group 3: the terrain's sky cubemap the fog fades toward ([`super::TerrainPass::sky_group`]);
    /// none: nothing is drawn.
    pub sky: Option<&'a wgpu::BindGroup>,
    /// Whether the terrain is drawn, and so shadows the obstacles.
    pub terrain_shadow: bool,
    /// Extinction of the distance fog, 1/m: the ground's they stand on (the terrain's, or a box scene's
    /// tank ground's), so they sit in its haze.
    pub fog_density: f32,
    /// Whether the walls ([`ObstaclesPass::set_walls`]) are drawn too (the render setting `show_tank`).
    pub walls: bool,
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

/// The obstacles' pipelines and the corners of the current scene's obstacles.
pub struct ObstaclesPass {
    pipeline: wgpu::RenderPipeline,
    /// "obstacles water shadow" (bind group 2: [`super::water_shadow::receiver_layout`]).
    water_pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    style: wgpu::Buffer,
    /// The style as uploaded.
    style_data: ObstacleStyle,
    /// The heightfield's uniform and heights and the ground's radiosity (clones of the terrain's handles)
    /// the bind group reads.
    heightfield: [wgpu::Buffer; 3],
    /// The corners' buffer (written in place while its size holds: a scene with bodies sets them every
    /// frame), the bind group over it, the corner count and their bounds (none: nothing to draw).
    bound: Option<Corners>,
    /// The obstacles' and bodies' corners as last set, then the walls' ([`ObstaclesPass::set_walls`]):
    /// the buffer holds both, the obstacles' first.
    obstacle_corners: Vec<ObstacleCorner>,
    wall_corners: Vec<ObstacleCorner>,
    /// Whether the last "obstacles" drew the walls (the water-shadow draw follows it).
    walls_drawn: bool,
}

/// The obstacles' corners on the GPU, as [`ObstaclesPass`] holds them.
struct Corners {
    buffer: wgpu::Buffer,
    group: wgpu::BindGroup,
    /// Corners drawn: the obstacles' and the walls'.
    count: u32,
    /// The obstacles' corners (the first ones), which cast the obstacles' shadow map, and their bounds.
    casting: u32,
    bounds: (Vec3, Vec3),
}

impl ObstaclesPass {
    /// Builds the pipelines for colour targets of `color_format` (depth: [`frame::DEPTH_FORMAT`]), over
    /// the terrain's `ground`; no obstacle until [`ObstaclesPass::set_meshes`].
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat, ground: GroundBuffers<'_>) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/obstacles.wgsl");
        let vis = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let fs = wgpu::ShaderStages::FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("obstacles bind group layout"),
            entries: &[
                gpu::uniform_entry::<super::heightfield::TerrainUniform>(0, fs),
                gpu::storage_entry::<f32>(1, true, fs),
                gpu::uniform_entry::<ObstacleStyle>(2, vis),
                gpu::storage_entry::<ObstacleCorner>(3, true, wgpu::ShaderStages::VERTEX),
                gpu::storage_entry::<[f32; 4]>(4, true, fs),
            ],
        });
        let frame_layout = frame::frame_bind_group_layout(device);
        let sky_layout = super::heightfield::sky_layout(device);
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("obstacles pipeline layout"),
            bind_group_layouts: &[Some(&frame_layout), Some(&layout), None, Some(&sky_layout)],
            immediate_size: 0,
        });
        let cull = wgpu::PrimitiveState { cull_mode: Some(wgpu::Face::Back), ..Default::default() };
        let pipeline = frame::render_pipeline(
            device,
            "obstacles pipeline",
            &pipeline_layout,
            &module,
            ("vs_main", "fs_main"),
            cull,
            color_format.into(),
            Some(frame::depth_state(frame::DEPTH_COMPARE, true)),
            &frame::output_constants(color_format),
        );
        // Over the obstacles already drawn: the same fragments (equal depth).
        let water_pipeline = super::water_shadow::receiver_pipeline(
            device,
            "obstacles water shadow pipeline",
            &module,
            ("vs_main", "fs_water_shadow"),
            cull,
            color_format,
            (&layout, Some(&sky_layout)),
            wgpu::CompareFunction::Equal,
        );
        let style_data = ObstacleStyle { albedo: ALBEDO, terrain_shadow: 1.0, ..bytemuck::Zeroable::zeroed() };
        let style = gpu::uniform_buffer_init(device, "obstacles style", bytemuck::bytes_of(&style_data));
        let heightfield = owned(ground);
        Self {
            pipeline,
            water_pipeline,
            layout,
            style,
            style_data,
            heightfield,
            bound: None,
            obstacle_corners: Vec::new(),
            wall_corners: Vec::new(),
            walls_drawn: true,
        }
    }

    /// The terrain's heightfield the obstacles stand on from now on (after the terrain's buffers change).
    pub fn set_heightfield(&mut self, ctx: &GpuContext, ground: GroundBuffers<'_>) {
        self.heightfield = owned(ground);
        if let Some(b) = self.bound.as_mut() {
            b.group = bind(&ctx.device, &self.layout, &self.heightfield, &self.style, &b.buffer);
        }
    }

    /// The obstacles drawn from now on (none: nothing is drawn).
    pub fn set_meshes(&mut self, ctx: &GpuContext, meshes: &[ObstacleMesh]) {
        self.obstacle_corners = corners(meshes);
        self.upload(ctx);
    }

    /// The walls drawn with the obstacles from now on (none: no walls): lit as they are, but casting no
    /// shadow map ([`crate::engine::walls`]).
    pub fn set_walls(&mut self, ctx: &GpuContext, walls: &[ObstacleMesh]) {
        self.wall_corners = corners(walls);
        self.upload(ctx);
    }

    /// Writes the obstacles' and the walls' corners to the buffer (grown when they no longer fit).
    fn upload(&mut self, ctx: &GpuContext) {
        let all: Vec<ObstacleCorner> = self.obstacle_corners.iter().chain(&self.wall_corners).copied().collect();
        if all.is_empty() {
            self.bound = None;
            return;
        }
        let bytes: &[u8] = bytemuck::cast_slice(&all);
        let bounds = self.obstacle_corners.iter().fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), c| {
            let p = Vec3::new(c.position[0], c.position[1], c.position[2]);
            (lo.min(p), hi.max(p))
        });
        let (count, casting) = (all.len() as u32, self.obstacle_corners.len() as u32);
        match self.bound.as_mut() {
            Some(b) if b.buffer.size() == bytes.len() as u64 => {
                ctx.queue.write_buffer(&b.buffer, 0, bytes);
                (b.casting, b.bounds) = (casting, bounds);
            }
            _ => {
                let buffer = gpu::storage_buffer_init(&ctx.device, "obstacle corners", bytes);
                let group = bind(&ctx.device, &self.layout, &self.heightfield, &self.style, &buffer);
                self.bound = Some(Corners { buffer, group, count, casting, bounds });
            }
        }
    }

    /// The corners' buffer (`ObstacleCorner`s, three per triangle), the count of the obstacles' corners at
    /// its start and their bounds (world, metres), which the obstacles' shadow map draws; none without
    /// obstacles (walls alone cast no shadow map).
    pub fn corners(&self) -> Option<(&wgpu::Buffer, u32, (Vec3, Vec3))> {
        self.bound.as_ref().filter(|b| b.casting > 0).map(|b| (&b.buffer, b.casting, b.bounds))
    }

    /// Records "obstacles water shadow" over the obstacles in the frame's targets (drawn or restored):
    /// the sun's light through the water dimmed by the light of `receiver` (bind group 2 of
    /// [`super::water_shadow::receiver_layout`], [`super::WaterShadowPass::receiver`]), the fog toward
    /// `sky` (as [`ObstaclesInput::sky`]). Nothing without obstacles.
    pub fn encode_water_shadow(&self, frame: &mut Frame<'_>, receiver: &wgpu::BindGroup, sky: &wgpu::BindGroup) {
        let Some(Corners { group, count, casting, .. }) = &self.bound else { return };
        let count = if self.walls_drawn { *count } else { *casting };
        if count == 0 {
            return;
        }
        let mut pass = frame.target_pass("obstacles water shadow", false);
        pass.set_pipeline(&self.water_pipeline);
        pass.set_bind_group(1, group, &[]);
        pass.set_bind_group(2, receiver, &[]);
        pass.set_bind_group(3, sky, &[]);
        pass.draw(0..count, 0..1);
    }
}

/// Clones of the ground's buffer handles.
fn owned(((terrain, heights), radiosity): GroundBuffers<'_>) -> [wgpu::Buffer; 3] {
    [terrain.clone(), heights.clone(), radiosity.clone()]
}

/// Bind group 1 over the heightfield's uniform and heights, the style, the corners and the ground's
/// radiosity.
fn bind(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    [terrain, heights, radiosity]: &[wgpu::Buffer; 3],
    style: &wgpu::Buffer,
    corners: &wgpu::Buffer,
) -> wgpu::BindGroup {
    gpu::bind_buffers(device, "obstacles bind group", layout, &[terrain, heights, style, corners, radiosity])
}

impl Pass for ObstaclesPass {
    type Input<'a> = ObstaclesInput<'a>;

    /// Records "obstacles" over the frame's targets (after the terrain); nothing without obstacles or
    /// without the sky's group.
    fn encode(&mut self, frame: &mut Frame<'_>, input: ObstaclesInput<'_>) {
        let (Some(Corners { group, count, casting, .. }), Some(sky)) = (&self.bound, input.sky) else { return };
        self.walls_drawn = input.walls;
        let count = if input.walls { *count } else { *casting };
        if count == 0 {
            return;
        }
        let terrain_shadow = if input.terrain_shadow { 1.0 } else { 0.0 };
        let style = ObstacleStyle { fog_density: input.fog_density, terrain_shadow, ..self.style_data };
        if self.style_data != style {
            self.style_data = style;
            frame.queue.write_buffer(&self.style, 0, bytemuck::bytes_of(&style));
        }
        let mut pass = frame.target_pass("obstacles", false);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(1, group, &[]);
        pass.set_bind_group(3, sky, &[]);
        pass.draw(0..count, 0..1);
    }
}
