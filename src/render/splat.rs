//! Ellipsoid splats (`shaders/render/splat.wgsl`), the first stage of screen-space fluid rendering
//! (van der Laan, Green & Sainz, "Screen space fluid rendering with curvature flow", I3D 2009), with the
//! anisotropic ellipsoids of Yu & Turk 2013 ray-cast per pixel (Sigg et al. 2006).
//!
//! Two outputs, read from the [`super::anisotropy`] ellipsoids:
//! - "splat depth": the nearest hit's linear view depth (m) into the `R32Float` raw-depth target (0 = none);
//! - "splat thickness": the ray's path length through each ellipsoid (m), summed into the `R16Float`
//!   thickness target (full or half resolution), clipped where the terrain cuts the ray.
//!
//! [`SplatMethod`] picks how the pixels are visited: by the rasteriser (one instanced quad per particle,
//! a private `Depth32Float` attachment for nearest-wins, One + One blending), or by compute (pixel boxes
//! shared out over workgroups, `atomicMax` / fixed-point `atomicAdd` into per-pixel `u32` buffers, then a
//! full-screen "splat resolve" pass into the same targets). Both give the same depth; the thickness differs
//! by the blending's half-float rounding. Both test against the scene's depth (sky and terrain, drawn
//! first) by loading it in the shader, so no fluid behind the terrain survives and the thickness target's
//! size is free.

use super::camera::{camera_bind_group_layout, DEPTH_CLEAR, DEPTH_FORMAT};
use super::targets::{FluidTargets, RAW_DEPTH_FORMAT, THICKNESS_FORMAT};
use crate::gpu::{self, GpuContext, Profiler};
use bytemuck::Zeroable;
use serde::{Deserialize, Serialize};

/// How the splat passes visit the pixels (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SplatMethod {
    /// Instanced quads through the rasteriser.
    Raster,
    /// Compute shaders with per-pixel atomics (fastest where measured: docs/performance.md).
    #[default]
    Compute,
}

/// Particles per workgroup of the compute splats (`SPLAT_WG` in the shader).
pub const SPLAT_WG: u32 = 64;
/// Largest workgroup count along one dispatch dimension (WebGPU's minimum limit).
const MAX_GROUPS_X: u32 = 65_535;

/// Per-pass constants, bind group 1 binding 0. WGSL twin: `Splat` in `shaders/render/splat.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SplatUniform {
    /// Target size, pixels.
    pub size: [u32; 2],
    /// Scene-depth pixels per target pixel: 1 at full resolution, 2 at half.
    pub depth_scale: f32,
    /// Thickness fixed point of the compute path, units per metre.
    pub fixed_scale: f32,
    /// Ellipsoids splatted (compute path).
    pub count: u32,
    pub _pad: [u32; 3],
}
const _: () = assert!(size_of::<SplatUniform>() == 32);

fn clear(view: &wgpu::TextureView) -> wgpu::RenderPassColorAttachment<'_> {
    wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations { load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT), store: wgpu::StoreOp::Store },
    }
}

/// One output of the splats (depth or thickness): its raster and compute pipelines, the resolve
/// pipeline of the compute path and its uniform buffer.
struct Output {
    raster: wgpu::RenderPipeline,
    compute: wgpu::ComputePipeline,
    resolve: wgpu::RenderPipeline,
    uniform: wgpu::Buffer,
}

/// The splat passes: pipelines and per-pass uniforms (screen-independent).
pub struct SplatPass {
    layout: wgpu::BindGroupLayout,
    depth: Output,
    thickness: Output,
}

/// What one output's passes read and write.
struct Job<'a> {
    label: &'static str,
    view: &'a wgpu::TextureView,
    bits: &'a wgpu::Buffer,
    uniform: SplatUniform,
    depth_attachment: Option<&'a wgpu::TextureView>,
}

impl SplatPass {
    /// Builds the pipelines of both methods.
    pub fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/splat.wgsl");
        let camera_layout = camera_bind_group_layout(device);
        let all = wgpu::ShaderStages::VERTEX_FRAGMENT | wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("splat bind group layout"),
            entries: &[
                gpu::uniform_entry(0, all),
                gpu::storage_entry(1, true, all),
                wgpu::BindGroupLayoutEntry {
                    binding: 2,
                    visibility: wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Depth,
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                    count: None,
                },
                gpu::storage_entry(
                    3,
                    false,
                    wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::COMPUTE,
                ),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("splat pipeline layout"),
            bind_group_layouts: &[Some(&camera_layout), Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = |label: &str,
                        (vs, fs): (&str, &str),
                        target: wgpu::ColorTargetState,
                        depth: Option<wgpu::DepthStencilState>| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&pipeline_layout),
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some(vs),
                    compilation_options: Default::default(),
                    buffers: &[],
                },
                primitive: wgpu::PrimitiveState::default(),
                depth_stencil: depth,
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &[Some(target)],
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let uniform = |label: &str| {
            gpu::uniform_buffer_init(device, label, bytemuck::bytes_of(&SplatUniform::zeroed()))
        };
        let depth = Output {
            raster: pipeline(
                "splat depth pipeline",
                ("vs_main", "fs_depth"),
                wgpu::ColorTargetState::from(RAW_DEPTH_FORMAT),
                Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    depth_write_enabled: Some(true),
                    depth_compare: Some(wgpu::CompareFunction::Greater),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
            ),
            compute: gpu::compute_pipeline(device, &module, &pipeline_layout, "cs_depth"),
            resolve: pipeline(
                "splat depth resolve",
                ("vs_fullscreen", "fs_resolve_depth"),
                RAW_DEPTH_FORMAT.into(),
                None,
            ),
            uniform: uniform("splat depth uniform"),
        };
        let thickness = Output {
            raster: pipeline(
                "splat thickness pipeline",
                ("vs_main", "fs_thickness"),
                wgpu::ColorTargetState {
                    format: THICKNESS_FORMAT,
                    blend: Some(wgpu::BlendState {
                        color: add,
                        alpha: add,
                    }),
                    write_mask: wgpu::ColorWrites::ALL,
                },
                None,
            ),
            compute: gpu::compute_pipeline(device, &module, &pipeline_layout, "cs_thickness"),
            resolve: pipeline(
                "splat thickness resolve",
                ("vs_fullscreen", "fs_resolve_thickness"),
                THICKNESS_FORMAT.into(),
                None,
            ),
            uniform: uniform("splat thickness uniform"),
        };
        Self {
            layout,
            depth,
            thickness,
        }
    }

    /// Records "splat depth" then "splat thickness" (each followed by "splat resolve" with
    /// [`SplatMethod::Compute`]): `count` ellipsoids from `ellipsoids` (`array<Ellipsoid>`), tested against
    /// `scene_depth` (the frame's `Depth32Float` target, sky and terrain drawn), into `targets.raw_depth`
    /// (0 = no fluid) and `targets.thickness` (0 = none). `dx` (m) sets the thickness fixed point (1/65 536
    /// of dx per unit).
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        camera_bind_group: &wgpu::BindGroup,
        (ellipsoids, count): (&wgpu::Buffer, u32),
        scene_depth: &wgpu::TextureView,
        targets: &FluidTargets,
        (method, dx): (SplatMethod, f32),
    ) {
        let uniform = |size: (u32, u32)| SplatUniform {
            size: [size.0, size.1],
            depth_scale: targets.size.0 as f32 / size.0 as f32,
            fixed_scale: 65_536.0 / dx.max(1e-9),
            count,
            _pad: [0; 3],
        };
        let jobs = [
            (
                &self.depth,
                Job {
                    label: "splat depth",
                    view: &targets.raw_depth_view,
                    bits: &targets.splat_depth_bits,
                    uniform: uniform(targets.size),
                    depth_attachment: Some(&targets.splat_depth_view),
                },
            ),
            (
                &self.thickness,
                Job {
                    label: "splat thickness",
                    view: &targets.thickness_view,
                    bits: &targets.splat_thickness_bits,
                    uniform: uniform(targets.thickness_size),
                    depth_attachment: None,
                },
            ),
        ];
        for (output, job) in jobs {
            ctx.queue
                .write_buffer(&output.uniform, 0, bytemuck::bytes_of(&job.uniform));
            let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("splat bind group"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: output.uniform.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: ellipsoids.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: wgpu::BindingResource::TextureView(scene_depth),
                    },
                    wgpu::BindGroupEntry {
                        binding: 3,
                        resource: job.bits.as_entire_binding(),
                    },
                ],
            });
            record(encoder, profiler, (camera_bind_group, &bind_group), output, &job, (method, count));
        }
    }
}

/// Records one output's passes with `method`: the raster pass, or the compute pass and its resolve.
fn record(
    encoder: &mut wgpu::CommandEncoder,
    profiler: &Profiler,
    (camera, bind_group): (&wgpu::BindGroup, &wgpu::BindGroup),
    output: &Output,
    job: &Job<'_>,
    (method, count): (SplatMethod, u32),
) {
    match method {
        SplatMethod::Raster => {
            let depth = job.depth_attachment.map(|view| wgpu::RenderPassDepthStencilAttachment {
                view,
                depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(DEPTH_CLEAR), store: wgpu::StoreOp::Discard }),
                stencil_ops: None,
            });
            let mut pass = target_pass(encoder, profiler, job.label, job.view, depth);
            if count > 0 {
                pass.set_pipeline(&output.raster);
                pass.set_bind_group(0, camera, &[]);
                pass.set_bind_group(1, bind_group, &[]);
                pass.draw(0..6, 0..count);
            }
        }
        SplatMethod::Compute => {
            encoder.clear_buffer(job.bits, 0, None);
            if count > 0 {
                let mut pass = profiler.compute_pass(encoder, job.label);
                pass.set_pipeline(&output.compute);
                pass.set_bind_group(0, camera, &[]);
                pass.set_bind_group(1, bind_group, &[]);
                let groups = count.div_ceil(SPLAT_WG);
                pass.dispatch_workgroups(groups.min(MAX_GROUPS_X), groups.div_ceil(MAX_GROUPS_X), 1);
            }
            let mut pass = target_pass(encoder, profiler, "splat resolve", job.view, None);
            pass.set_pipeline(&output.resolve);
            pass.set_bind_group(0, camera, &[]);
            pass.set_bind_group(1, bind_group, &[]);
            pass.draw(0..3, 0..1);
        }
    }
}

/// A timed render pass `label` that clears `view` (and `depth`, if any) and draws into it.
fn target_pass<'p>(
    encoder: &mut wgpu::CommandEncoder,
    profiler: &'p Profiler,
    label: &str,
    view: &wgpu::TextureView,
    depth: Option<wgpu::RenderPassDepthStencilAttachment<'_>>,
) -> crate::gpu::profiler::TimedRenderPass<'p> {
    profiler.render_pass(
        encoder,
        label,
        wgpu::RenderPassDescriptor {
            label: Some(label),
            color_attachments: &[Some(clear(view))],
            depth_stencil_attachment: depth,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        },
    )
}
