//! Screen-space curvature flow of the fluid depth (`shaders/render/curvature_flow.wgsl`): van der Laan,
//! Green & Sainz, "Screen space fluid rendering with curvature flow" (I3D 2009), with empty-space skipping.
//!
//! Per frame, after "tiles" ([`super::fluid_tiles`]) listed the screen tiles holding fluid: "curvature flow"
//! runs N explicit Euler iterations, each `dispatch_workgroups_indirect` over the listed tiles only: the
//! first reads the raw depth, the others alternate between two ping-pong textures. Every pixel of a listed
//! tile is written by every iteration, the raw depth is 0 (no fluid) everywhere outside the listed tiles,
//! and "tiles" wrote 0 into both ping-pong textures over the tiles it did not list, so they hold this
//! frame's depth everywhere without copies of the raw depth.
//! `full_screen` runs every iteration over every pixel instead (same per-pixel arithmetic, so the results
//! agree to the bit).
//!
//! Pipelines are screen-independent; the bind groups over the [`FluidTargets`] are rebuilt by
//! [`Pass::resize`].

use super::fluid_tiles::{self, PingPong};
use super::frame;
use super::pass::{Frame, Pass, Targets};
use super::targets::FluidTargets;
use crate::gpu::{self, GpuContext};

/// Flow parameters, bind group 1 binding 0. WGSL twin: `Flow` in `shaders/render/curvature_flow.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FlowUniform {
    /// Screen size, pixels.
    pub size: [u32; 2],
    /// Tiles across.
    pub tiles_x: u32,
    /// Euler step as a fraction of the small-slope stability limit (0..1].
    pub step: f32,
    /// 2 / (Vx Fx) and 2 / (Vy Fy): V viewport pixels, F the projection's focal terms.
    pub cx: f32,
    pub cy: f32,
    /// Depth jump (m) above which neighbours count as across a silhouette.
    pub threshold: f32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<FlowUniform>() == 32);

/// How one frame's flow runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSettings {
    pub iterations: u32,
    /// Fraction of the stability limit, (0, 1].
    pub step: f32,
    /// Silhouette threshold, metres.
    pub threshold: f32,
    /// Focal terms of the projection: `clip_from_view[0][0]`, `clip_from_view[1][1]`.
    pub focal: (f32, f32),
    /// Every pixel every iteration (no tile skipping).
    pub full_screen: bool,
}

/// What the flow uses of one set of targets: its bind groups and the textures and buffers it copies and
/// dispatches from.
struct Bound {
    /// Iteration k reads [`PingPong::step`]`(k)`.
    groups: PingPong,
    raw_depth: wgpu::Texture,
    smooth: [wgpu::Texture; 2],
    tile_args: wgpu::Buffer,
    /// Pixels, and tiles across and down.
    size: (u32, u32),
    tiles_xy: (u32, u32),
    /// One workgroup per tile, the full-screen flow's dispatch (checked when bound; `None`, and the flow
    /// skipped, where the device cannot dispatch that many: never for a texture it can make).
    tile_groups: Option<gpu::Workgroups>,
}

/// The curvature-flow pass: pipelines, uniform, and bind groups over the current targets.
pub struct CurvatureFlowPass {
    flow_layout: wgpu::BindGroupLayout,
    flow_tiles: wgpu::ComputePipeline,
    flow_full: wgpu::ComputePipeline,
    uniform: wgpu::Buffer,
    bound: Option<Bound>,
}

impl CurvatureFlowPass {
    /// Builds the pipelines; [`Pass::resize`] binds the targets before the first encode.
    pub fn new(ctx: &GpuContext, _color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let vis = wgpu::ShaderStages::COMPUTE;
        let [a, b, c, d] = fluid_tiles::filter_layout_entries();
        let flow_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("curvature flow bind group layout"),
            entries: &[gpu::uniform_entry::<FlowUniform>(0, vis), a, b, c, d],
        });
        let module = gpu::shader::module(device, "render/curvature_flow.wgsl");
        let flow_pl = frame::pass_pipeline_layout(device, "curvature flow pipeline layout", &flow_layout);
        Self {
            flow_tiles: gpu::compute_pipeline(device, &module, &flow_pl, "flow_tiles"),
            flow_full: gpu::compute_pipeline(device, &module, &flow_pl, "flow_full"),
            uniform: gpu::uniform_buffer_init(
                device,
                "curvature flow uniform",
                bytemuck::bytes_of(&FlowUniform::zeroed()),
            ),
            flow_layout,
            bound: None,
        }
    }

    /// Index into `FluidTargets::smooth` holding the result after `iterations` iterations (iteration k
    /// writes `smooth[(k + 1) % 2]`; with none, the raw depth is copied into `smooth[0]`).
    pub fn result_index(iterations: u32) -> usize {
        (iterations % 2) as usize
    }
}

impl Pass for CurvatureFlowPass {
    type Input<'a> = FlowSettings;

    fn resize(&mut self, device: &wgpu::Device, targets: Option<Targets<'_>>) {
        self.bound = targets.map(|t| bind(device, self, t.fluid));
    }

    /// Records "curvature flow" (see the module doc; "tiles" must have run this frame), or with no
    /// iterations a copy of the raw depth. The smoothed depth ends in
    /// `targets.smooth[Self::result_index(settings.iterations)]`.
    fn encode(&mut self, frame: &mut Frame<'_>, settings: FlowSettings) {
        let Some(bound) = self.bound.as_ref() else {
            log::error!("curvature flow: encode before resize");
            return;
        };
        let (fx, fy) = settings.focal;
        let uniform = FlowUniform {
            size: [bound.size.0, bound.size.1],
            tiles_x: bound.tiles_xy.0,
            step: settings.step.clamp(0.0, 1.0),
            cx: 2.0 / (bound.size.0 as f32 * fx),
            cy: 2.0 / (bound.size.1 as f32 * fy),
            threshold: settings.threshold.max(1e-6),
            _pad: 0,
        };
        frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&uniform));
        if settings.iterations == 0 {
            let extent = wgpu::Extent3d { width: bound.size.0, height: bound.size.1, depth_or_array_layers: 1 };
            let result = &bound.smooth[Self::result_index(0)];
            frame.encoder.copy_texture_to_texture(bound.raw_depth.as_image_copy(), result.as_image_copy(), extent);
        }
        let Some(tile_groups) = bound.tile_groups.filter(|_| settings.iterations > 0) else { return };
        let mut pass = frame.compute_pass("curvature flow");
        let pipeline = if settings.full_screen { &self.flow_full } else { &self.flow_tiles };
        pass.set_pipeline(pipeline);
        for k in 0..settings.iterations {
            pass.set_bind_group(1, bound.groups.step(k), &[]);
            if settings.full_screen {
                gpu::dispatch(&mut pass, tile_groups);
            } else {
                pass.dispatch_workgroups_indirect(&bound.tile_args, 0);
            }
        }
    }
}

/// The flow's bind groups over `targets`, and the handles it records copies and dispatches with.
fn bind(device: &wgpu::Device, pass: &CurvatureFlowPass, targets: &FluidTargets) -> Bound {
    Bound {
        groups: PingPong::new(device, "curvature flow bind group", &pass.flow_layout, &pass.uniform, targets),
        raw_depth: targets.raw_depth.clone(),
        smooth: targets.smooth.clone(),
        tile_args: targets.tile_args.clone(),
        size: targets.size,
        tiles_xy: targets.tiles,
        tile_groups: gpu::workgroups_grid(
            "curvature flow",
            [targets.tiles.0, targets.tiles.1, 1],
            [1; 3],
            &device.limits(),
        )
        .map_err(|e| log::error!("{e}: the depth is not smoothed"))
        .ok(),
    }
}

use bytemuck::Zeroable as _;
