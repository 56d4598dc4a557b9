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
//!
//! The ellipsoids' two arrays are split over storage bindings past 134 M particles ([`EllipsoidBuffers`],
//! src/gpu/split.rs); the shader is resolved with as many bindings per array as they have chunks (one up
//! to 134 M: the one-binding code), its pipelines made again when that changes.

use super::anisotropy::EllipsoidBuffers;
use super::frame::{self, DEPTH_CLEAR, RAW_DEPTH_FORMAT, THICKNESS_FORMAT};
use super::pass::{render_pass, Frame, Pass, Targets};
use crate::gpu::{self, split, GpuContext};
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

/// Per-output constants, bind group 1 binding 0. WGSL twin: `Splat` in `shaders/render/splat.wgsl`.
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

/// One output of the splats (depth or thickness): its raster and compute pipelines and the resolve
/// pipeline of the compute path.
struct Output {
    raster: wgpu::RenderPipeline,
    compute: wgpu::ComputePipeline,
    resolve: wgpu::RenderPipeline,
}

/// The bind group layout and both outputs' pipelines for ellipsoid arrays of `chunks` bindings in chunks
/// of `per_binding` elements (`SPLIT_N`, given to every stage).
struct Pipelines {
    chunks: usize,
    per_binding: u32,
    layout: wgpu::BindGroupLayout,
    outputs: [Output; 2],
}

/// What the splats use of the screen-sized targets (from the last [`Pass::resize`]).
struct Screen {
    /// Per output (depth, thickness): the target view, its per-pixel `u32`s (compute path), its size.
    outputs: [(wgpu::TextureView, wgpu::Buffer, (u32, u32)); 2],
    /// The raster path's private nearest-wins depth attachment.
    splat_depth: wgpu::TextureView,
    /// The frame's depth (sky and terrain drawn), which the splats are tested against.
    scene_depth: wgpu::TextureView,
    /// Full resolution, pixels.
    size: (u32, u32),
}

/// The bind groups of both outputs over the screen targets and the ellipsoid arrays, and the arrays'
/// first chunks (compared by identity: new arrays have new chunks).
struct Bound {
    ellipsoids: [wgpu::Buffer; 2],
    groups: [wgpu::BindGroup; 2],
}

/// The splat passes: pipelines and per-output uniforms (screen-independent), and the bind groups over
/// the screen-sized targets (made on resize, and again only when the ellipsoid buffers are replaced).
pub struct SplatPass {
    /// Made again when the ellipsoids come in more chunks or chunks of another length.
    pipelines: Pipelines,
    /// Per output (depth, thickness).
    uniforms: [wgpu::Buffer; 2],
    screen: Option<Screen>,
    bound: Option<Bound>,
}

/// What the splat passes read per frame.
#[derive(Clone, Copy)]
pub struct SplatInput<'a> {
    /// The anisotropy pass's ellipsoids, at least `count` entries.
    pub ellipsoids: &'a EllipsoidBuffers,
    pub count: u32,
    /// Rasteriser or compute.
    pub method: SplatMethod,
    /// Particle spacing, metres: sets the thickness fixed point (1/65 536 of dx per unit).
    pub dx: f32,
}

impl Pipelines {
    fn new(device: &wgpu::Device, chunks: usize, per_binding: u32) -> Self {
        let module = gpu::shader::module_split(device, "render/splat.wgsl", &[], chunks);
        let fc = wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::COMPUTE;
        let vfc = wgpu::ShaderStages::VERTEX_FRAGMENT | wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("splat bind group layout"),
            entries: &[
                [
                    gpu::uniform_entry::<SplatUniform>(0, vfc),
                    frame::depth_texture_entry(2, fc),
                    gpu::storage_entry::<u32>(3, false, fc),
                ]
                .as_slice(),
                &split::layout_entries::<[f32; 4]>(1, true, vfc, chunks),
                &split::layout_entries::<[u32; 4]>(4, true, fc, chunks),
            ]
            .concat(),
        });
        let pipeline_layout = frame::pass_pipeline_layout(device, "splat pipeline layout", &layout);
        let constants = [(split::CONSTANT, per_binding as f64)];
        let pipeline = |label: &str,
                        entries: (&str, &str),
                        target: wgpu::ColorTargetState,
                        depth: Option<wgpu::DepthStencilState>| {
            frame::render_pipeline_with(
                device,
                label,
                &pipeline_layout,
                &module,
                entries,
                wgpu::PrimitiveState::default(),
                target,
                depth,
                (&constants, &constants),
            )
        };
        let compute = |entry: &str| gpu::compute_pipeline_with(device, &module, &pipeline_layout, entry, &constants);
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let depth = Output {
            raster: pipeline(
                "splat depth pipeline",
                ("vs_main", "fs_depth"),
                RAW_DEPTH_FORMAT.into(),
                Some(frame::depth_state(wgpu::CompareFunction::Greater, true)),
            ),
            compute: compute("cs_depth"),
            resolve: pipeline(
                "splat depth resolve",
                ("vs_fullscreen", "fs_resolve_depth"),
                RAW_DEPTH_FORMAT.into(),
                None,
            ),
        };
        let thickness = Output {
            raster: pipeline(
                "splat thickness pipeline",
                ("vs_main", "fs_thickness"),
                wgpu::ColorTargetState {
                    format: THICKNESS_FORMAT,
                    blend: Some(wgpu::BlendState { color: add, alpha: add }),
                    write_mask: wgpu::ColorWrites::ALL,
                },
                None,
            ),
            compute: compute("cs_thickness"),
            resolve: pipeline(
                "splat thickness resolve",
                ("vs_fullscreen", "fs_resolve_thickness"),
                THICKNESS_FORMAT.into(),
                None,
            ),
        };
        Self { chunks, per_binding, layout, outputs: [depth, thickness] }
    }
}

/// Labels of the two outputs' passes.
const LABELS: [&str; 2] = ["splat depth", "splat thickness"];

impl SplatPass {
    /// Builds the pipelines of both methods for one-binding ellipsoid arrays.
    pub fn new(ctx: &GpuContext, _color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let uniform =
            |label: &str| gpu::uniform_buffer_init(device, label, bytemuck::bytes_of(&SplatUniform::zeroed()));
        let pipelines = Pipelines::new(device, 1, split::per_binding(&device.limits()));
        let uniforms = [uniform("splat depth uniform"), uniform("splat thickness uniform")];
        Self { pipelines, uniforms, screen: None, bound: None }
    }

    /// Chunks (bindings) per ellipsoid array of the pipelines in use.
    pub fn chunks(&self) -> usize {
        self.pipelines.chunks
    }

    /// The pipelines for `ellipsoids`' chunks (made again, and the bind groups dropped, when they differ).
    fn pipelines_for(&mut self, device: &wgpu::Device, ellipsoids: &EllipsoidBuffers) {
        let key = (ellipsoids.chunks(), ellipsoids.per_binding());
        if (self.pipelines.chunks, self.pipelines.per_binding) != key {
            self.pipelines = Pipelines::new(device, key.0, key.1);
            self.bound = None;
        }
    }

    /// The bind groups over the screen targets and `ellipsoids`, made when either changed.
    fn bind(&mut self, device: &wgpu::Device, ellipsoids: &EllipsoidBuffers) -> Option<&Bound> {
        let screen = self.screen.as_ref()?;
        let first = [ellipsoids.centres.chunks()[0].clone(), ellipsoids.g_packed.chunks()[0].clone()];
        if self.bound.as_ref().is_none_or(|b| b.ellipsoids != first) {
            let chunks = self.pipelines.chunks;
            let group = |k: usize| {
                let mut entries: Vec<wgpu::BindGroupEntry<'_>> = [(0, &self.uniforms[k]), (3, &screen.outputs[k].1)]
                    .into_iter()
                    .chain(ellipsoids.centres.bindings(1, chunks))
                    .chain(ellipsoids.g_packed.bindings(4, chunks))
                    .map(|(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() })
                    .collect();
                entries.push(wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::TextureView(&screen.scene_depth),
                });
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("splat bind group"),
                    layout: &self.pipelines.layout,
                    entries: &entries,
                })
            };
            self.bound = Some(Bound { ellipsoids: first, groups: [group(0), group(1)] });
        }
        self.bound.as_ref()
    }
}

impl Pass for SplatPass {
    type Input<'a> = SplatInput<'a>;

    fn resize(&mut self, _device: &wgpu::Device, targets: Option<Targets<'_>>) {
        self.bound = None;
        self.screen = targets.map(|t| {
            let f = t.fluid;
            Screen {
                outputs: [
                    (f.raw_depth_view.clone(), f.splat_depth_bits.clone(), f.size),
                    (f.thickness_view.clone(), f.splat_thickness_bits.clone(), f.thickness_size),
                ],
                splat_depth: f.splat_depth_view.clone(),
                scene_depth: t.scene.depth_view.clone(),
                size: f.size,
            }
        });
    }

    /// Records "splat depth" then "splat thickness" (each followed by "splat resolve" with
    /// [`SplatMethod::Compute`]): `count` ellipsoids, tested against the frame's depth (sky and terrain
    /// drawn), into the raw depth (0 = no fluid) and the thickness (0 = none) targets.
    fn encode(&mut self, frame: &mut Frame<'_>, input: SplatInput<'_>) {
        let Some(size) = self.screen.as_ref().map(|s| s.size) else {
            log::error!("splat: encode before resize");
            return;
        };
        for (k, uniform) in self.uniforms.iter().enumerate() {
            let target = self.screen.as_ref().map_or(size, |s| s.outputs[k].2);
            let values = SplatUniform {
                size: [target.0, target.1],
                depth_scale: size.0 as f32 / target.0 as f32,
                fixed_scale: 65_536.0 / input.dx.max(1e-9),
                count: input.count,
                _pad: [0; 3],
            };
            frame.queue.write_buffer(uniform, 0, bytemuck::bytes_of(&values));
        }
        let device = frame.device;
        self.pipelines_for(device, input.ellipsoids);
        let Some(bound) = self.bind(device, input.ellipsoids) else { return };
        let groups = [bound.groups[0].clone(), bound.groups[1].clone()];
        let Some(screen) = self.screen.as_ref() else { return };
        for (k, (output, group)) in self.pipelines.outputs.iter().zip(&groups).enumerate() {
            let (view, bits, _) = &screen.outputs[k];
            let depth = (k == 0).then_some(&screen.splat_depth);
            record(frame, output, group, (LABELS[k], view, bits, depth), (input.method, input.count));
        }
    }
}

/// Records one output's passes with `method`: the raster pass, or the compute pass and its resolve.
fn record(
    frame: &mut Frame<'_>,
    output: &Output,
    group: &wgpu::BindGroup,
    (label, view, bits, depth): (&str, &wgpu::TextureView, &wgpu::Buffer, Option<&wgpu::TextureView>),
    (method, count): (SplatMethod, u32),
) {
    let clear = wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT);
    match method {
        SplatMethod::Raster => {
            let depth = depth.map(|d| (d, wgpu::LoadOp::Clear(DEPTH_CLEAR), wgpu::StoreOp::Discard));
            let mut pass = render_pass(frame.profiler, frame.encoder, label, view, clear, depth);
            if count > 0 {
                pass.set_pipeline(&output.raster);
                pass.set_bind_group(0, frame.frame_bind_group, &[]);
                pass.set_bind_group(1, group, &[]);
                pass.draw(0..6, 0..count);
            }
        }
        SplatMethod::Compute => {
            frame.encoder.clear_buffer(bits, 0, None);
            // Rows of workgroups (the shader's index is wg.x + wg.y * num_workgroups.x). A count the engine
            // admits (at most its particle limit, 2^29) needs at most 129 rows: the error is never met.
            match gpu::workgroups("splat", count as u64, SPLAT_WG, 1, &frame.device.limits()) {
                Ok(groups) if count > 0 => {
                    let mut pass = frame.compute_pass(label);
                    pass.set_pipeline(&output.compute);
                    pass.set_bind_group(1, group, &[]);
                    gpu::dispatch(&mut pass, groups);
                }
                Ok(_) => {}
                Err(e) => log::error!("{e}: the splats are skipped"),
            }
            let mut pass = render_pass(frame.profiler, frame.encoder, "splat resolve", view, clear, None);
            pass.set_pipeline(&output.resolve);
            pass.set_bind_group(0, frame.frame_bind_group, &[]);
            pass.set_bind_group(1, group, &[]);
            pass.draw(0..3, 0..1);
        }
    }
}
