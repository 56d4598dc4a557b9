//! Screen-space foam (`shaders/render/foam.wgsl`): the simulation's diffuse particles (spray, foam and
//! bubbles after Ihmsen, Akinci, Akinci & Teschner 2012) splatted additively into the `Rgba16Float` foam
//! target ([`super::FluidTargets::foam`], at the thickness target's resolution: half by default, which
//! quarters the cost of clearing it): foam and bubbles in r, spray in g (opacity units), the nearest
//! splat's view depth in a (Min blend). The composite lays it over and into the water as lit white: foam
//! behind the water's surface fades with the water in front of it (here, per splat), spray in the air is
//! drawn over the scene as small bright droplets (see shaders/render/composite.wgsl).
//!
//! A foam splat is drawn as a cluster of bubbles ([`FoamSettings::bubbles`], [`FoamSettings::lace`]): its
//! opacity modulated by a cellular pattern (after Worley 1996) in the splat's coordinates, seeded by the
//! particle's time of death (the pool's simulated time, read on the GPU from the state buffer at
//! [`DiffuseSource::time_offset`], plus its lifetime left), so the pattern moves with the particle and
//! holds still from frame to frame though the pool is compacted in a new order every frame.
//!
//! One instanced 6-vertex quad per live diffuse particle, drawn indirectly: the instance count is the
//! simulation's live count, written on the GPU ([`DiffuseSource::draw_args`]); nothing is read back. The
//! target is cleared every frame the fluid is drawn, so with no diffuse particles (or foam off) the
//! composite sees zeros and draws the water exactly as without foam.
//!
//! Cost (expected; to be measured with `waterview bench`): the clear of a 960x540 `Rgba16Float` target
//! (4 MB; clears and copies of screen targets ran at about 50 GB/s on the H200, docs/performance.md, so
//! about 0.08 ms) and up to the pool's quads (250 K at 1 M fluid particles), a few pixels each at the
//! valley's default view, with blending: about 0.1-0.2 ms on an H100.

use super::frame::{self, FOAM_FORMAT};
use super::pass::{render_pass, Frame, Pass, Targets};
use crate::gpu::{self, GpuContext};
use serde::{Deserialize, Serialize};

/// The simulation's diffuse particles as the renderer draws them (plain buffers, the renderer knows no
/// simulation; the engine makes this from one).
#[derive(Clone, Copy)]
pub struct DiffuseSource<'a> {
    /// `array<DiffuseParticle>` (32 bytes each, WGSL `DiffuseParticle` in shaders/common/diffuse.wgsl):
    /// xyz position (m) and lifetime left (s), xyz velocity (m/s) and kind (0 spray, 1 foam, 2 bubble).
    pub particles: &'a wgpu::Buffer,
    /// A buffer (usage `INDIRECT | STORAGE`) holding `draw_indirect` arguments at `draw_offset`: 6
    /// vertices and the live particles as instances (at most `capacity`); and at `time_offset` (bytes, a
    /// multiple of 4) the simulated time (f32, s) from which the lifetimes count down (the bubble
    /// pattern's seed is that time plus the lifetime left: the particle's time of death).
    pub draw_args: &'a wgpu::Buffer,
    pub draw_offset: u64,
    pub time_offset: u64,
    /// Particles the buffer holds.
    pub capacity: u32,
}

/// How the diffuse particles look (serde, in [`super::RenderSettings`]). Radii scale with the particle
/// spacing dx, so one setting fits coarse and fine simulations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FoamSettings {
    /// Draw the diffuse particles (foam, spray, bubbles) over and into the water.
    pub enabled: bool,
    /// Splat radius of a foam particle, x dx.
    pub foam_radius: f32,
    /// Splat radius of a spray droplet, x dx.
    pub spray_radius: f32,
    /// Splat radius of a bubble, x dx.
    pub bubble_radius: f32,
    /// Opacity one foam splat adds at its centre (the composite covers 1 - exp(-sum)), dimensionless.
    pub foam_opacity: f32,
    /// The same for a spray droplet.
    pub spray_opacity: f32,
    /// The same for a bubble.
    pub bubble_opacity: f32,
    /// Fading of foam and bubbles behind the water's surface, per metre of water in front of them (1/m).
    pub absorption: f32,
    /// Motion blur: each splat is stretched along its velocity across the view over this exposure
    /// (a streak of |v| x shutter) and dimmed so it covers as much as the round splat, seconds; 0 draws
    /// round splats. The default, 1/120 s, is a film camera's 180-degree shutter at 60 frames per second.
    pub shutter_s: f32,
    /// Bubble cells per foam splat radius: each foam splat is drawn as a cluster of bubbles, a cellular
    /// pattern (Worley 1996) that moves with it (shaders/render/foam.wgsl); 0 = smooth splats.
    pub bubbles: f32,
    /// How clear the bubbles' insides may be, 0..1 (each cell keeps 1 - lace x a random share of the
    /// splat's opacity, the walls between cells all of it): 0 = no texture, 1 = a lace of holes.
    pub lace: f32,
}

impl Default for FoamSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            foam_radius: 1.5,
            spray_radius: 0.3,
            bubble_radius: 0.35,
            foam_opacity: 0.15,
            spray_opacity: 0.9,
            bubble_opacity: 0.12,
            absorption: 6.0,
            shutter_s: 1.0 / 120.0,
            bubbles: 1.5,
            lace: 0.9,
        }
    }
}

/// Splat parameters, bind group 1 binding 0. WGSL twin: `Foam` in `shaders/render/foam.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FoamUniform {
    /// Splat radius per kind (spray, foam, bubble), metres.
    pub radius: [f32; 3],
    /// 1/m of water in front of a splat.
    pub absorption: f32,
    /// Opacity at the centre per kind (spray, foam, bubble).
    pub opacity: [f32; 3],
    /// Depth behind the water's drawn surface that still counts as at the surface, metres.
    pub allowance: f32,
    /// Frame pixels per foam-target pixel (1 at full resolution, 2 at half); set by the pass.
    pub depth_scale: f32,
    /// Motion blur exposure, seconds (0: round splats).
    pub shutter: f32,
    /// Bubble cells per foam splat radius (0: smooth splats).
    pub bubbles: f32,
    /// 0..1: how clear a bubble cell's inside may be.
    pub lace: f32,
    /// Index (in f32 words) of the pool's simulated time in the draw-arguments buffer; set by the pass.
    pub clock_index: u32,
    pub _pad: [u32; 3],
}
const _: () = assert!(size_of::<FoamUniform>() == 64);

impl FoamUniform {
    /// The uniform for `settings` at particle spacing `dx` (m), the water's splats being `splat_radius` x dx.
    pub fn new(settings: &FoamSettings, dx: f32, splat_radius: f32) -> Self {
        let s = settings;
        Self {
            radius: [s.spray_radius, s.foam_radius, s.bubble_radius].map(|r| r.max(0.01) * dx),
            absorption: s.absorption.max(0.0),
            opacity: [s.spray_opacity, s.foam_opacity, s.bubble_opacity].map(|o| o.max(0.0)),
            allowance: splat_radius.max(0.0) * dx,
            depth_scale: 1.0,
            shutter: if s.shutter_s.is_finite() { s.shutter_s.clamp(0.0, 1.0) } else { 0.0 },
            bubbles: if s.bubbles.is_finite() { s.bubbles.clamp(0.0, 16.0) } else { 0.0 },
            lace: if s.lace.is_finite() { s.lace.clamp(0.0, 1.0) } else { 0.0 },
            clock_index: 0,
            _pad: [0; 3],
        }
    }
}

/// What the foam pass reads per frame.
#[derive(Clone, Copy)]
pub struct FoamInput<'a> {
    /// The diffuse particles; `None` (or foam off) only clears the target.
    pub source: Option<DiffuseSource<'a>>,
    pub params: FoamUniform,
}

/// The foam target and the textures the splats test against (from the last resize).
struct Screen {
    foam: wgpu::TextureView,
    /// Frame pixels per foam pixel.
    depth_scale: f32,
    scene_depth: wgpu::TextureView,
    water_depth: wgpu::TextureView,
}

/// The foam pass: pipeline and uniform (screen-independent), the views of the screen-sized targets, and
/// the bind group over them and the last particle buffer drawn.
pub struct FoamPass {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::RenderPipeline,
    uniform: wgpu::Buffer,
    screen: Option<Screen>,
    /// The particle and clock buffers bound, and their groups: the simulation's pool alternates between
    /// two.
    bound: Vec<(wgpu::Buffer, wgpu::Buffer, wgpu::BindGroup)>,
}

/// The foam target's clear value: nothing, and the farthest depth (the Min blend keeps the nearest).
const CLEAR: wgpu::Color = wgpu::Color { r: 0.0, g: 0.0, b: 0.0, a: 60_000.0 };

impl FoamPass {
    /// Builds the pipeline (the colour format is the frame's; the foam target's is [`FOAM_FORMAT`]).
    pub fn new(ctx: &GpuContext, _color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/foam.wgsl");
        let (vs, fs) = (wgpu::ShaderStages::VERTEX, wgpu::ShaderStages::FRAGMENT);
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("foam bind group layout"),
            entries: &[
                gpu::uniform_entry::<FoamUniform>(0, vs | fs),
                // 32 bytes per particle (two vec4).
                gpu::storage_entry::<[[f32; 4]; 2]>(1, true, vs),
                frame::depth_texture_entry(2, fs),
                frame::texture_entry(3, fs, false, wgpu::TextureViewDimension::D2),
                gpu::storage_entry::<f32>(4, true, vs),
            ],
        });
        let pipeline_layout = frame::pass_pipeline_layout(device, "foam pipeline layout", &layout);
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let nearest = wgpu::BlendComponent { operation: wgpu::BlendOperation::Min, ..add };
        let pipeline = frame::render_pipeline(
            device,
            "foam pipeline",
            &pipeline_layout,
            &module,
            ("vs_main", "fs_main"),
            wgpu::PrimitiveState::default(),
            wgpu::ColorTargetState {
                format: FOAM_FORMAT,
                blend: Some(wgpu::BlendState { color: add, alpha: nearest }),
                write_mask: wgpu::ColorWrites::ALL,
            },
            None,
            &[],
        );
        let uniform = gpu::uniform_buffer_init(
            device,
            "foam uniform",
            bytemuck::bytes_of(&FoamUniform::new(&FoamSettings::default(), 0.1, 0.75)),
        );
        Self { layout, pipeline, uniform, screen: None, bound: Vec::new() }
    }
}

impl Pass for FoamPass {
    type Input<'a> = FoamInput<'a>;

    fn resize(&mut self, _device: &wgpu::Device, targets: Option<Targets<'_>>) {
        self.bound.clear();
        self.screen = targets.map(|t| Screen {
            foam: t.fluid.foam_view.clone(),
            depth_scale: t.fluid.size.0 as f32 / t.fluid.thickness_size.0.max(1) as f32,
            scene_depth: t.scene.depth_view.clone(),
            water_depth: t.fluid.raw_depth_view.clone(),
        });
    }

    /// Records "foam": clears the foam target and, with a source, splats its live particles (indirect
    /// draw), tested against the frame's depth and the raw fluid depth of this frame's splats.
    fn encode(&mut self, frame: &mut Frame<'_>, input: FoamInput<'_>) {
        let Some(screen) = self.screen.as_ref() else {
            log::error!("foam: encode before resize");
            return;
        };
        if let Some(source) = input.source {
            let clock_index = (source.time_offset / 4) as u32;
            let params = FoamUniform { depth_scale: screen.depth_scale, clock_index, ..input.params };
            frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&params));
            if !self.bound.iter().any(|(p, c, _)| p == source.particles && c == source.draw_args) {
                let entry = |binding, resource| wgpu::BindGroupEntry { binding, resource };
                let group = frame.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("foam bind group"),
                    layout: &self.layout,
                    entries: &[
                        entry(0, self.uniform.as_entire_binding()),
                        entry(1, source.particles.as_entire_binding()),
                        entry(2, wgpu::BindingResource::TextureView(&screen.scene_depth)),
                        entry(3, wgpu::BindingResource::TextureView(&screen.water_depth)),
                        entry(4, source.draw_args.as_entire_binding()),
                    ],
                });
                if self.bound.len() >= 2 {
                    self.bound.remove(0);
                }
                self.bound.push((source.particles.clone(), source.draw_args.clone(), group));
            }
        }
        let group = input
            .source
            .and_then(|s| self.bound.iter().find(|(p, c, _)| p == s.particles && c == s.draw_args))
            .map(|(_, _, g)| g);
        let mut pass =
            render_pass(frame.profiler, frame.encoder, "foam", &screen.foam, wgpu::LoadOp::Clear(CLEAR), None);
        if let (Some(source), Some(group)) = (input.source, group) {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, frame.frame_bind_group, &[]);
            pass.set_bind_group(1, group, &[]);
            pass.draw_indirect(source.draw_args, source.draw_offset);
        }
    }
}
