//! Narrow-range filter of the fluid depth (`shaders/render/narrow_range.wgsl`), after Truong & Yuksel, "A
//! narrow-range filter for screen-space fluid rendering" (Proc. ACM Comput. Graph. Interact. Tech. 1(1),
//! 2018): the alternative to [`super::curvature_flow`] (`FluidSettings::depth_filter`).
//!
//! A bilateral-like Gaussian of the depth that averages only depths within a narrow range of the surface
//! through the centre: neighbours are taken in mirrored pairs; a pair whose mean lies within the range of
//! the centre's depth is averaged as it is (so sloped surfaces are filtered at any slope); otherwise its
//! outlier is either in front (another layer: the pair is ignored, which keeps the filter symmetric) or
//! behind or without fluid (across a silhouette: clamped to just behind the centre, so silhouettes stay
//! put). The radius is a world length projected to pixels at each pixel's depth and clamped. Separable:
//! each iteration is a horizontal then a vertical 1-D pass; the shader's header has the formulas and what
//! differs from the paper.
//!
//! Per frame, after "tiles" ([`super::fluid_tiles`]) listed the screen tiles holding fluid: "narrow range"
//! runs 2 N passes, each `dispatch_workgroups_indirect` over the listed tiles only, the first reading the raw
//! depth and the others alternating between the two ping-pong textures, so the result is always in
//! `smooth[0]` ([`NarrowRangePass::result_index`]). `full_screen` runs every pass over every pixel instead
//! (same per-pixel arithmetic, so the results agree to the bit).
//!
//! Pipelines are screen-independent; the bind groups over the [`FluidTargets`] are rebuilt by
//! [`Pass::resize`].

use super::fluid_tiles::{self, PingPong};
use super::frame;
use super::pass::{Frame, Pass, Targets};
use super::targets::FluidTargets;
use crate::gpu::{self, GpuContext};

/// Filter parameters, bind group 1 binding 0. WGSL twin: `NarrowRange` in `shaders/render/narrow_range.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NarrowRangeUniform {
    /// Screen size, pixels.
    pub size: [u32; 2],
    /// Tiles across.
    pub tiles_x: u32,
    /// Largest filter radius, pixels.
    pub max_radius: u32,
    /// Filter radius in pixels at 1 m depth (pixel-metres): the world radius times `Fy Vy / 2`, so the
    /// radius at depth z is `radius_scale / z` pixels.
    pub radius_scale: f32,
    /// Largest distance of a pair's mean from the centre's depth that is averaged as it is, metres.
    pub range: f32,
    /// How far behind the centre a pair with an outlier behind (or without fluid) counts, metres: the
    /// outlier counts as the mirror of its partner through the centre, this much behind it.
    pub clamp_offset: f32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<NarrowRangeUniform>() == 32);

/// How one frame's filter runs (derived from `FluidSettings` by `RenderSettings::narrow_range`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NarrowRangeSettings {
    /// Iterations, each a horizontal and a vertical pass (0 = the raw depth).
    pub iterations: u32,
    /// Filter radius, metres in the world (projected at each pixel's depth).
    pub radius: f32,
    /// Largest filter radius, pixels (at least 1).
    pub max_radius: u32,
    /// Largest distance of a pair's mean from the centre's depth that is averaged as it is, metres.
    pub range: f32,
    /// How far behind its mirror position an outlier behind the range counts, metres (at most `range`).
    pub clamp_offset: f32,
    /// `clip_from_view[1][1]`, the projection's vertical focal term.
    pub focal_y: f32,
    /// Every pixel every pass (no tile skipping).
    pub full_screen: bool,
}

/// Most pixels the filter radius may be set to: one pass then reads 2 x 64 + 1 depths per pixel.
pub const MAX_RADIUS_PX: u32 = 64;

impl NarrowRangeSettings {
    /// The uniform for a screen of `size` pixels, `tiles_x` tiles across. Parameters out of range are
    /// clamped: a radius of at least 0 m and 1 ..= [`MAX_RADIUS_PX`] pixels, a range of at least 1 µm, a
    /// clamp offset within 0 ..= range; non-finite values count as 0.
    pub fn uniform(&self, size: (u32, u32), tiles_x: u32) -> NarrowRangeUniform {
        let finite = |v: f32| if v.is_finite() { v } else { 0.0 };
        let range = finite(self.range).max(1e-6);
        NarrowRangeUniform {
            size: [size.0, size.1],
            tiles_x,
            max_radius: self.max_radius.clamp(1, MAX_RADIUS_PX),
            radius_scale: finite(self.radius.max(0.0) * self.focal_y.abs() * size.1 as f32 * 0.5),
            range,
            clamp_offset: finite(self.clamp_offset).clamp(0.0, range),
            _pad: 0,
        }
    }
}

/// What the filter uses of one set of targets: its bind groups and the textures and buffers it copies
/// and dispatches from.
struct Bound {
    /// Pass k reads [`PingPong::step`]`(k)`.
    groups: PingPong,
    raw_depth: wgpu::Texture,
    smooth: [wgpu::Texture; 2],
    tile_args: wgpu::Buffer,
    /// Pixels, and tiles across.
    size: (u32, u32),
    tiles_x: u32,
    /// One workgroup per tile, the full-screen passes' dispatch (`None`, and the filter skipped, where
    /// the device cannot dispatch that many: never for a texture it can make).
    tile_groups: Option<gpu::Workgroups>,
}

/// The narrow-range pass: pipelines (horizontal and vertical, tile-skipped and full-screen), uniform, and
/// bind groups over the current targets.
pub struct NarrowRangePass {
    layout: wgpu::BindGroupLayout,
    /// `[horizontal, vertical]`.
    tiled: [wgpu::ComputePipeline; 2],
    full: [wgpu::ComputePipeline; 2],
    uniform: wgpu::Buffer,
    bound: Option<Bound>,
}

impl NarrowRangePass {
    /// Builds the pipelines; [`Pass::resize`] binds the targets before the first encode.
    pub fn new(ctx: &GpuContext, _color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let [a, b, c, d] = fluid_tiles::filter_layout_entries();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("narrow range bind group layout"),
            entries: &[gpu::uniform_entry::<NarrowRangeUniform>(0, wgpu::ShaderStages::COMPUTE), a, b, c, d],
        });
        let module = gpu::shader::module(device, "render/narrow_range.wgsl");
        let pl = frame::pass_pipeline_layout(device, "narrow range pipeline layout", &layout);
        let pipeline = |entry| gpu::compute_pipeline(device, &module, &pl, entry);
        Self {
            tiled: [pipeline("filter_h_tiles"), pipeline("filter_v_tiles")],
            full: [pipeline("filter_h_full"), pipeline("filter_v_full")],
            uniform: gpu::uniform_buffer_init(
                device,
                "narrow range uniform",
                bytemuck::bytes_of(&NarrowRangeUniform::zeroed()),
            ),
            layout,
            bound: None,
        }
    }

    /// Index into `FluidTargets::smooth` holding the result: always 0 (an even number of passes, and with
    /// no iterations the raw depth is copied there).
    pub fn result_index(_iterations: u32) -> usize {
        0
    }
}

impl Pass for NarrowRangePass {
    type Input<'a> = NarrowRangeSettings;

    fn resize(&mut self, device: &wgpu::Device, targets: Option<Targets<'_>>) {
        self.bound = targets.map(|t| bind(device, self, t.fluid));
    }

    /// Records "narrow range" (see the module doc; "tiles" must have run this frame), or with no
    /// iterations a copy of the raw depth. The filtered depth ends in `targets.smooth[0]`.
    fn encode(&mut self, frame: &mut Frame<'_>, settings: NarrowRangeSettings) {
        let Some(bound) = self.bound.as_ref() else {
            log::error!("narrow range: encode before resize");
            return;
        };
        let uniform = settings.uniform(bound.size, bound.tiles_x);
        frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&uniform));
        if settings.iterations == 0 {
            let extent = wgpu::Extent3d { width: bound.size.0, height: bound.size.1, depth_or_array_layers: 1 };
            let result = &bound.smooth[Self::result_index(0)];
            frame.encoder.copy_texture_to_texture(bound.raw_depth.as_image_copy(), result.as_image_copy(), extent);
        }
        let Some(tile_groups) = bound.tile_groups.filter(|_| settings.iterations > 0) else { return };
        let mut pass = frame.compute_pass("narrow range");
        for k in 0..2 * settings.iterations {
            let direction = (k % 2) as usize;
            pass.set_bind_group(1, bound.groups.step(k), &[]);
            if settings.full_screen {
                pass.set_pipeline(&self.full[direction]);
                gpu::dispatch(&mut pass, tile_groups);
            } else {
                pass.set_pipeline(&self.tiled[direction]);
                pass.dispatch_workgroups_indirect(&bound.tile_args, 0);
            }
        }
    }
}

/// The filter's bind groups over `targets`, and the handles it records copies and dispatches with.
fn bind(device: &wgpu::Device, pass: &NarrowRangePass, targets: &FluidTargets) -> Bound {
    Bound {
        groups: PingPong::new(device, "narrow range bind group", &pass.layout, &pass.uniform, targets),
        raw_depth: targets.raw_depth.clone(),
        smooth: targets.smooth.clone(),
        tile_args: targets.tile_args.clone(),
        size: targets.size,
        tiles_x: targets.tiles.0,
        tile_groups: gpu::workgroups_grid(
            "narrow range",
            [targets.tiles.0, targets.tiles.1, 1],
            [1; 3],
            &device.limits(),
        )
        .map_err(|e| log::error!("{e}: the depth is not smoothed"))
        .ok(),
    }
}

use bytemuck::Zeroable as _;
