//! Screen-space curvature flow of the fluid depth (`shaders/render/curvature_flow.wgsl`): van der Laan,
//! Green & Sainz, "Screen space fluid rendering with curvature flow" (I3D 2009), with empty-space skipping.
//!
//! Per frame: both ping-pong textures get a copy of the raw depth (so pixels that no iteration touches
//! hold the same value in both); "tiles" classifies 16x16 screen tiles holding fluid (dilated by the 3x3
//! stencil), compacts them into a list through an atomic counter and writes indirect dispatch arguments;
//! "curvature flow" runs N explicit Euler iterations, each `dispatch_workgroups_indirect` over the listed
//! tiles only, alternating between the two textures. `full_screen` runs every iteration over every pixel
//! instead (same per-pixel arithmetic, so the results agree to the bit).
//!
//! Pipelines are screen-independent; the bind groups over [`FluidTargets`] are rebuilt by
//! [`SmoothPass::resize`].

use super::targets::FluidTargets;
use crate::gpu::{self, GpuContext, Profiler};

/// Flow parameters, binding 0. WGSL twin: `Flow` in `shaders/render/curvature_flow.wgsl`.
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

/// Bind groups over one set of targets.
struct Bound {
    tiles: wgpu::BindGroup,
    /// [0]: reads smooth[0], writes smooth[1]; [1]: the reverse.
    flow: [wgpu::BindGroup; 2],
}

/// The curvature-flow pass: pipelines, uniform, and bind groups over the current targets.
pub struct SmoothPass {
    flow_layout: wgpu::BindGroupLayout,
    tiles_layout: wgpu::BindGroupLayout,
    classify: wgpu::ComputePipeline,
    write_args: wgpu::ComputePipeline,
    flow_tiles: wgpu::ComputePipeline,
    flow_full: wgpu::ComputePipeline,
    uniform: wgpu::Buffer,
    bound: Option<Bound>,
}

fn texture_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Float { filterable: false },
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        count: None,
    }
}

impl SmoothPass {
    /// Builds the pipelines; call [`SmoothPass::resize`] before the first encode.
    pub fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        let vis = wgpu::ShaderStages::COMPUTE;
        let flow_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("curvature flow bind group layout"),
            entries: &[
                gpu::uniform_entry(0, vis),
                texture_entry(1),
                wgpu::BindGroupLayoutEntry {
                    binding: 2,
                    visibility: vis,
                    ty: wgpu::BindingType::StorageTexture {
                        access: wgpu::StorageTextureAccess::WriteOnly,
                        format: wgpu::TextureFormat::R32Float,
                        view_dimension: wgpu::TextureViewDimension::D2,
                    },
                    count: None,
                },
                gpu::storage_entry(3, true, vis),
                gpu::storage_entry(8, true, vis),
            ],
        });
        let tiles_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("fluid tiles bind group layout"),
            entries: &[
                gpu::uniform_entry(0, vis),
                texture_entry(1),
                gpu::storage_entry(4, false, vis),
                gpu::storage_entry(5, false, vis),
                gpu::storage_entry(6, false, vis),
                gpu::storage_entry(7, false, vis),
            ],
        });
        let module = gpu::shader::module(device, "render/curvature_flow.wgsl");
        let layout = |label: &str, bgl: &wgpu::BindGroupLayout| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(bgl)],
                immediate_size: 0,
            })
        };
        let flow_pl = layout("curvature flow pipeline layout", &flow_layout);
        let tiles_pl = layout("fluid tiles pipeline layout", &tiles_layout);
        Self {
            classify: gpu::compute_pipeline(device, &module, &tiles_pl, "classify"),
            write_args: gpu::compute_pipeline_with(device, &module, &tiles_pl, "write_args", &[("MAX_GROUPS_X", gpu::max_groups_x() as f64)]),
            flow_tiles: gpu::compute_pipeline(device, &module, &flow_pl, "flow_tiles"),
            flow_full: gpu::compute_pipeline(device, &module, &flow_pl, "flow_full"),
            uniform: gpu::uniform_buffer_init(device, "curvature flow uniform", bytemuck::bytes_of(&FlowUniform::zeroed())),
            flow_layout,
            tiles_layout,
            bound: None,
        }
    }

    /// Rebuilds the bind groups over new `targets` (after a resize).
    pub fn resize(&mut self, ctx: &GpuContext, targets: &FluidTargets) {
        let device = &ctx.device;
        let tex = |v| wgpu::BindingResource::TextureView(v);
        let entry = |binding, resource| wgpu::BindGroupEntry { binding, resource };
        let tiles = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("fluid tiles bind group"),
            layout: &self.tiles_layout,
            entries: &[
                entry(0, self.uniform.as_entire_binding()),
                entry(1, tex(&targets.raw_depth_view)),
                entry(4, targets.tile_list.as_entire_binding()),
                entry(5, targets.tile_counter.as_entire_binding()),
                entry(6, targets.tile_args.as_entire_binding()),
                entry(7, targets.tile_mask.as_entire_binding()),
            ],
        });
        let flow = |from: usize| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("curvature flow bind group"),
                layout: &self.flow_layout,
                entries: &[
                    entry(0, self.uniform.as_entire_binding()),
                    entry(1, tex(&targets.smooth_views[from])),
                    entry(2, tex(&targets.smooth_views[1 - from])),
                    entry(3, targets.tile_list.as_entire_binding()),
                    entry(8, targets.tile_args.as_entire_binding()),
                ],
            })
        };
        self.bound = Some(Bound { tiles, flow: [flow(0), flow(1)] });
    }

    /// Drops the bind groups of the last [`SmoothPass::resize`] (so the targets they hold can be freed);
    /// the next `resize` makes new ones.
    pub fn release(&mut self) {
        self.bound = None;
    }

    /// Index into `targets.smooth` holding the result after `iterations` iterations.
    pub fn result_index(iterations: u32) -> usize {
        (iterations % 2) as usize
    }

    /// Records the copies, "tiles" and "curvature flow" (see the module doc). The smoothed depth ends in
    /// `targets.smooth[Self::result_index(settings.iterations)]`.
    pub fn encode(&self, ctx: &GpuContext, encoder: &mut wgpu::CommandEncoder, profiler: &Profiler, targets: &FluidTargets, settings: &FlowSettings) {
        let Some(bound) = self.bound.as_ref() else {
            log::error!("curvature flow: encode before resize");
            return;
        };
        let (fx, fy) = settings.focal;
        let uniform = FlowUniform {
            size: [targets.size.0, targets.size.1],
            tiles_x: targets.tiles.0,
            step: settings.step.clamp(0.0, 1.0),
            cx: 2.0 / (targets.size.0 as f32 * fx),
            cy: 2.0 / (targets.size.1 as f32 * fy),
            threshold: settings.threshold.max(1e-6),
            _pad: 0,
        };
        ctx.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&uniform));
        let extent = wgpu::Extent3d { width: targets.size.0, height: targets.size.1, depth_or_array_layers: 1 };
        for t in &targets.smooth {
            encoder.copy_texture_to_texture(targets.raw_depth.as_image_copy(), t.as_image_copy(), extent);
        }
        encoder.clear_buffer(&targets.tile_counter, 0, None);
        {
            let mut pass = profiler.compute_pass(encoder, "tiles");
            pass.set_bind_group(0, &bound.tiles, &[]);
            pass.set_pipeline(&self.classify);
            pass.dispatch_workgroups(targets.tiles.0, targets.tiles.1, 1);
            pass.set_pipeline(&self.write_args);
            pass.dispatch_workgroups(1, 1, 1);
        }
        if settings.iterations == 0 {
            return;
        }
        let mut pass = profiler.compute_pass(encoder, "curvature flow");
        let pipeline = if settings.full_screen { &self.flow_full } else { &self.flow_tiles };
        pass.set_pipeline(pipeline);
        for k in 0..settings.iterations {
            pass.set_bind_group(0, &bound.flow[(k % 2) as usize], &[]);
            if settings.full_screen {
                pass.dispatch_workgroups(targets.tiles.0, targets.tiles.1, 1);
            } else {
                pass.dispatch_workgroups_indirect(&targets.tile_args, 0);
            }
        }
    }
}

use bytemuck::Zeroable as _;
