//! The glass tank of a box scene and the ground it stands on (`shaders/render/tank.wgsl`), so the water
//! stands in something rather than in the air.
//!
//! Two parts, drawn at two points of the frame:
//! - [`TankPart::Behind`], with the static background (after the sky, before the cache stores it, so the
//!   water refracts it): the ground, an infinite plane at the domain's floor ray-cast per pixel in a
//!   full-screen triangle (its depth written from the hit, so it meets the horizon with no far edge),
//!   pale tiles under the tank and a faint metre grid outside it, fading into the horizon haze with
//!   distance fog; then the walls whose inside faces the eye (the far walls), faint tinted glass with a
//!   Schlick Fresnel reflection of the sky and a dark frame with a bright glass edge along every edge,
//!   blended, depth written (the water in front of them hides them).
//! - [`TankPart::Front`], after the water: the walls whose outside faces the eye (the near walls), very
//!   faint glass and the frame, blended over the water, depth tested and not written, so the near
//!   walls never hide the water behind them.
//!
//! A face is near or far by the side of its plane the eye is on, decided per face in the vertex shader
//! (the other part's faces collapse to nothing), so the split needs no face culling convention. The top
//! is open. Where the scene has no terrain, the ground also covers the tank's footprint and the terrain
//! pass leaves its flat floor undrawn (`Tank::floor`).

use super::frame;
use super::pass::{Frame, Pass};
use crate::gpu::{self, GpuContext};
use glam::Vec3;

/// A glass tank around the box `min..max` (metres) standing on a ground plane at `min.y`, as plain data
/// (the engine makes it from the scene, `Scene::draws_tank`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tank {
    /// Lower corner of the tank (the simulation domain's), metres.
    pub min: Vec3,
    /// Upper corner, metres; the top is open.
    pub max: Vec3,
    /// The ground also covers the tank's footprint (a scene without terrain): the terrain pass then
    /// draws nothing. Otherwise the ground stops at the footprint and the terrain fills it.
    pub floor: bool,
}

/// Which walls [`TankPass`] draws this time (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TankPart {
    /// The ground and the far walls, with the background.
    Behind,
    /// The near walls, over the water.
    Front,
}

/// What the tank pass draws this time: the tank (`None`: nothing), the part, and the sky the ground's haze
/// and the glass's reflections come from.
#[derive(Clone, Copy)]
pub struct TankInput<'a> {
    pub tank: Option<Tank>,
    pub part: TankPart,
    /// The sky cubemap and its version ([`super::SkyPass::version`]: rebinds when it changes).
    pub sky: (&'a wgpu::TextureView, u64),
    /// Radiance multiplier of the cubemap ([`super::SkyPass::exposure`]).
    pub sky_exposure: f32,
}

/// The tank's geometry and look, bind group 1 binding 0.
/// WGSL twin: `Tank` in `shaders/render/tank.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TankUniform {
    /// Lower corner of the tank, metres (the ground's height is `min[1]`).
    pub min: [f32; 3],
    /// Width of the frame along every edge, metres.
    pub frame_width: f32,
    /// Upper corner, metres.
    pub max: [f32; 3],
    /// Spacing of the ground's grid lines outside the tank, metres (tiles inside: a quarter of it).
    pub grid: f32,
    /// Extinction of the ground's distance fog, 1/m.
    pub fog_density: f32,
    /// 1: the ground covers the footprint too ([`Tank::floor`]).
    pub floor: u32,
    /// Radiance multiplier of the sky cubemap.
    pub sky_exposure: f32,
    pub _pad: f32,
}
const _: () = assert!(size_of::<TankUniform>() == 48);

impl TankUniform {
    /// The uniform of `tank`: a frame 2% of the tank's smallest side wide; grid lines the power of ten
    /// nearest half the tank's longest side apart (1 m for tanks of 0.7 to 6 m); fog reaching 1 - 1/e at
    /// 40 of those sides; the sky cubemap scaled by `sky_exposure`.
    pub fn new(tank: &Tank, sky_exposure: f32) -> Self {
        let size = (tank.max - tank.min).max(Vec3::splat(1e-3));
        let longest = size.max_element();
        let grid = 10f32.powf((longest * 0.5).log10().round());
        Self {
            min: tank.min.to_array(),
            frame_width: 0.02 * size.min_element(),
            max: tank.max.to_array(),
            grid,
            fog_density: 1.0 / (40.0 * longest),
            floor: tank.floor as u32,
            sky_exposure,
            _pad: 0.0,
        }
    }
}

/// Pipelines of the tank: the ground and the far walls (with the background), the near walls (over
/// the water).
pub struct TankPass {
    ground: wgpu::RenderPipeline,
    /// "tank ground water shadow" (bind group 2: [`super::water_shadow::receiver_layout`]).
    ground_water: wgpu::RenderPipeline,
    back: wgpu::RenderPipeline,
    front: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    sampler: wgpu::Sampler,
    /// The bind group over the uniform and the sky cubemap of this version.
    bound: Option<(u64, wgpu::BindGroup)>,
    /// What the uniform holds.
    current: Option<TankUniform>,
}

/// Vertices of the four walls, two triangles each.
const WALL_VERTICES: u32 = 24;

impl TankPass {
    /// Builds the pipelines for colour targets of `color_format` (depth: [`frame::DEPTH_FORMAT`]).
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/tank.wgsl");
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("tank bind group layout"),
            entries: &[
                gpu::uniform_entry::<TankUniform>(0, wgpu::ShaderStages::VERTEX_FRAGMENT),
                frame::texture_entry(1, wgpu::ShaderStages::FRAGMENT, true, wgpu::TextureViewDimension::Cube),
                frame::sampler_entry(2, wgpu::ShaderStages::FRAGMENT),
            ],
        });
        let pipeline_layout = frame::pass_pipeline_layout(device, "tank pipeline layout", &layout);
        let triangles = wgpu::PrimitiveState::default();
        let constants = frame::output_constants(color_format);
        let ground = frame::render_pipeline(
            device,
            "tank ground pipeline",
            &pipeline_layout,
            &module,
            ("vs_ground", "fs_ground"),
            triangles,
            color_format.into(),
            Some(frame::depth_state(frame::DEPTH_COMPARE, true)),
            &constants,
        );
        let ground_water = super::water_shadow::receiver_pipeline(
            device,
            "tank ground water shadow pipeline",
            &module,
            ("vs_ground", "fs_ground_water_shadow"),
            triangles,
            color_format,
            (&layout, None),
            frame::DEPTH_COMPARE,
        );
        // Premultiplied alpha: the glass adds its reflection and takes away what it absorbs.
        let glass = wgpu::ColorTargetState {
            format: color_format,
            blend: Some(wgpu::BlendState::PREMULTIPLIED_ALPHA_BLENDING),
            write_mask: wgpu::ColorWrites::ALL,
        };
        let walls = |label: &str, front: bool| {
            let entries = if front { ("vs_near_walls", "fs_near_walls") } else { ("vs_far_walls", "fs_far_walls") };
            frame::render_pipeline(
                device,
                label,
                &pipeline_layout,
                &module,
                entries,
                triangles,
                glass.clone(),
                // The far walls write depth (the water in front hides them); the near ones only test.
                Some(frame::depth_state(frame::DEPTH_COMPARE, !front)),
                &constants,
            )
        };
        let back = walls("tank far walls pipeline", false);
        let front = walls("tank near walls pipeline", true);
        let zero = TankUniform::new(&Tank { min: Vec3::ZERO, max: Vec3::ONE, floor: true }, 1.0);
        let uniform = gpu::uniform_buffer_init(device, "tank uniform", bytemuck::bytes_of(&zero));
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("tank sky sampler"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            ..Default::default()
        });
        Self { ground, ground_water, back, front, layout, uniform, sampler, bound: None, current: Some(zero) }
    }
}

impl TankPass {
    /// Records "tank ground water shadow" over the ground in the frame's targets (drawn or restored):
    /// the sun's light under the water attenuated by the light of `receiver` (bind group 2 of
    /// [`super::water_shadow::receiver_layout`], [`super::WaterShadowPass::receiver`]). Nothing before
    /// the tank was first drawn.
    pub fn encode_water_shadow(&mut self, frame: &mut Frame<'_>, receiver: &wgpu::BindGroup) {
        let Some((_, bind_group)) = &self.bound else { return };
        let mut pass = frame.target_pass("tank ground water shadow", false);
        pass.set_pipeline(&self.ground_water);
        pass.set_bind_group(1, bind_group, &[]);
        pass.set_bind_group(2, receiver, &[]);
        pass.draw(0..3, 0..1);
    }
}

impl Pass for TankPass {
    type Input<'a> = TankInput<'a>;

    /// Records "tank" (the ground, then the far walls: `WALL_VERTICES` vertices of which the near faces
    /// collapse) or "tank glass" (the near walls) over the frame's targets; nothing without a tank. The
    /// uniform is written only when the tank changes, the bind group made only for another sky.
    fn encode(&mut self, frame: &mut Frame<'_>, input: TankInput<'_>) {
        let Some(tank) = input.tank else { return };
        let uniform = TankUniform::new(&tank, input.sky_exposure);
        if self.current != Some(uniform) {
            frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&uniform));
            self.current = Some(uniform);
        }
        let (sky, version) = input.sky;
        if self.bound.as_ref().is_none_or(|(v, _)| *v != version) {
            let group = frame.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("tank bind group"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: self.uniform.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(sky) },
                    wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::Sampler(&self.sampler) },
                ],
            });
            self.bound = Some((version, group));
        }
        let Some((_, bind_group)) = &self.bound else { return };
        match input.part {
            TankPart::Behind => {
                let mut pass = frame.target_pass("tank", false);
                pass.set_bind_group(1, bind_group, &[]);
                pass.set_pipeline(&self.ground);
                pass.draw(0..3, 0..1);
                pass.set_pipeline(&self.back);
                pass.draw(0..WALL_VERTICES, 0..1);
            }
            TankPart::Front => {
                let mut pass = frame.target_pass("tank glass", false);
                pass.set_bind_group(1, bind_group, &[]);
                pass.set_pipeline(&self.front);
                pass.draw(0..WALL_VERTICES, 0..1);
            }
        }
    }
}
