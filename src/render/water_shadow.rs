//! The water's shadow and tinted light (`shaders/render/water_shadow.wgsl`, `water_light.wgsl`,
//! `water_receiver.wgsl`): light under water is dimmed and coloured by the water it came through.
//!
//! "water shadow" splats the anisotropy pass's ellipsoids into a light-space map seen from the sun, the sun's
//! counterpart of the camera's thickness splat ([`super::splat`]): an orthographic projection over the scene's bounds
//! ([`WaterLightUniform::new`]), square, of `Rgba16Float` texels about two particle spacings wide ([`map_size`]:
//! 256² to 2048²); r sums the sun ray's path through the water (m), a keeps the light-space depth of the water's
//! sunward surface (m, the smallest). Nothing is read back. As the camera's splats, two ways to visit the texels
//! ([`SplatMethod`], the render settings' choice for both):
//! - compute (the default): the camera's compute splat in the light's projection (its pixel boxes shared out over
//!   a workgroup, `shaders/render/splat_boxes.wgsl`; Schuetz, Kerbl & Wimmer 2021): per texel, the path summed in
//!   fixed point ([`FIXED_PER_TEXEL`]) by `atomicAdd` into two words (a carry into the high one when the low one
//!   wraps: no depth of water overflows it) and the depth kept by `atomicMax` of an order-preserving key's
//!   complement, the words cleared by `clear_buffer`; then "water shadow resolve", a full-screen pass, writes
//!   the map;
//! - raster: one instanced quad per ellipsoid on the sunward tangent plane of its bounding sphere, One + One
//!   blending of the path, Min blending of the depth.
//!
//! The surfaces the sun lights read it through bind group 2 ([`receiver_layout`], [`WaterShadowPass::receiver`]): a
//! point behind the water's sunward surface (from the sun) gets the sun's light times the Beer-Lambert transmittance
//! `exp(-absorption * path)` with the composite's absorption colour (per channel, 1/m), so the ground under water is
//! darker and tinted blue-green, and a shadow falls beside a pool when the sun is low; a point in front of it (a
//! slope the sun reaches before the water beyond it) keeps its light. The terrain and a box scene's ground apply it
//! as their own overlays over the drawn or cached background ("terrain water shadow",
//! [`super::TerrainPass::encode_water_shadow`]; "tank ground water shadow",
//! [`super::TankPass::encode_water_shadow`]), so the background cache stays valid while the water moves.
//!
//! The map covers the scene's bounds with texels about two particle spacings wide (a shadow has no
//! detail finer than the particles; a splat's radius, about 2h, still covers several texel centres, so a
//! connected sheet of water leaves no hole), so its cost follows the particles' size on it, not the
//! scene's. The raster path cost 6-11 ms per frame at 1 M particles on the H200 (the blending of deep
//! water's overlapping quads, one after the other; docs/rendering.md), which the compute splat's atomics
//! avoid. A sun below the horizon draws nothing.

use super::anisotropy::EllipsoidBuffers;
use super::frame;
use super::pass::{render_pass, Frame};
use super::splat::{SplatMethod, SPLAT_WG};
use crate::gpu::{self, split, GpuContext};
use bytemuck::Zeroable;
use glam::{Mat4, Vec3, Vec4};

/// Fewest and most texels along each side of the light-space map ([`map_size`]).
pub const MAP_SIZES: (u32, u32) = (256, 2048);
/// Texels along each side of the light-space map for `light`, whose texels should be about `texel`
/// metres wide: the light's width over `texel` rounded up to a multiple of 64, within [`MAP_SIZES`] (a
/// power of two could quadruple the texels, and the pass's cost follows them).
pub fn map_size(light: &WaterLightUniform, texel: f32) -> u32 {
    let m = light.light_from_world;
    // Rows 0 and 1 of the matrix are the light's axes scaled by 2 / width and 2 / height.
    let scale = Vec3::new(m[0][0], m[1][0], m[2][0]).length().min(Vec3::new(m[0][1], m[1][1], m[2][1]).length());
    let width = 2.0 / scale.max(1e-9);
    let texels = (width / texel.max(1e-6)).clamp(1.0, MAP_SIZES.1 as f32) as u32;
    texels.next_multiple_of(64).clamp(MAP_SIZES.0, MAP_SIZES.1)
}

/// Format of the light-space map: r = path through the water (m), a = the water's sunward surface (m).
pub const MAP_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
/// The map's depth (a) where no water is, metres (the largest half float is 65504); also the most path
/// (r) the compute path writes. The same as `NO_WATER_DEPTH` in `shaders/render/water_shadow.wgsl`.
pub const NO_WATER_DEPTH: f32 = 60_000.0;

/// The light's projection and the water's absorption, bind group 2 binding 0 of the light-space splat
/// and of every surface that receives the light.
/// WGSL twin: `WaterLight` in `shaders/render/water_light.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WaterLightUniform {
    /// World -> light clip space (column-major): x, y in -1..1 over the bounds.
    pub light_from_world: [[f32; 4]; 4],
    /// Unit vector toward the sun.
    pub sun_dir: [f32; 3],
    /// Light-space depth 0: the bounds' largest `dot(p, sun_dir)`, metres.
    pub top: f32,
    /// Beer-Lambert absorption per channel (r, g, b), 1/m.
    pub absorption: [f32; 3],
    /// A receiver at most this far (m) in front of the water's sunward surface still counts as under it.
    pub margin: f32,
    /// Unit light-space x axis in the world.
    pub right: [f32; 3],
    /// 0: no water light (transmittance 1 everywhere); 1: on.
    pub enabled: u32,
    /// Unit light-space y axis in the world.
    pub up: [f32; 3],
    pub _pad: f32,
}
const _: () = assert!(size_of::<WaterLightUniform>() == 128);

impl WaterLightUniform {
    /// The orthographic light toward `sun` (unit vector toward the sun) that sees the whole box
    /// `bounds` (min, max corners, m), for water of `absorption` (per channel, 1/m) whose surfaces lie
    /// within `margin` (m) of its ellipsoids. Disabled (`enabled` 0) for a sun at or below the horizon.
    pub fn new(sun: Vec3, bounds: (Vec3, Vec3), absorption: [f32; 3], margin: f32) -> Self {
        let sun = sun.try_normalize().unwrap_or(Vec3::Y);
        let reference = if sun.y.abs() < 0.99 { Vec3::Y } else { Vec3::Z };
        let right = reference.cross(sun).normalize();
        let up = sun.cross(right);
        let (lo, hi) = (bounds.0.min(bounds.1), bounds.0.max(bounds.1));
        let corners =
            (0..8).map(|k| Vec3::new(pick(k & 1, lo.x, hi.x), pick(k & 2, lo.y, hi.y), pick(k & 4, lo.z, hi.z)));
        let (mut x, mut y, mut top) = ((f32::MAX, f32::MIN), (f32::MAX, f32::MIN), f32::MIN);
        for c in corners {
            let (cx, cy) = (c.dot(right), c.dot(up));
            x = (x.0.min(cx), x.1.max(cx));
            y = (y.0.min(cy), y.1.max(cy));
            top = top.max(c.dot(sun));
        }
        let (w, h) = ((x.1 - x.0).max(1e-3), (y.1 - y.0).max(1e-3));
        let rows = [
            (right * (2.0 / w)).extend(-(x.0 + x.1) / w),
            (up * (2.0 / h)).extend(-(y.0 + y.1) / h),
            Vec4::ZERO,
            Vec4::W,
        ];
        let light_from_world = Mat4::from_cols(rows[0], rows[1], rows[2], rows[3]).transpose();
        Self {
            light_from_world: light_from_world.to_cols_array_2d(),
            sun_dir: sun.to_array(),
            top,
            absorption: absorption.map(|a| a.max(0.0)),
            margin: margin.max(0.0),
            right: right.to_array(),
            enabled: (sun.y > 0.0) as u32,
            up: up.to_array(),
            _pad: 0.0,
        }
    }

    /// World point `p` in the map: texture coordinates (0..1 on the map) and light-space depth (m).
    pub fn map_point(&self, p: Vec3) -> (glam::Vec2, f32) {
        let c = Mat4::from_cols_array_2d(&self.light_from_world) * p.extend(1.0);
        (glam::Vec2::new(0.5 + 0.5 * c.x, 0.5 - 0.5 * c.y), self.top - p.dot(Vec3::from(self.sun_dir)))
    }
}

fn pick(bit: usize, lo: f32, hi: f32) -> f32 {
    if bit == 0 {
        lo
    } else {
        hi
    }
}

/// The blending of the receivers' overlays: the frame's colour times the shader's, alpha kept.
pub const MULTIPLY: wgpu::BlendState = wgpu::BlendState {
    color: wgpu::BlendComponent {
        src_factor: wgpu::BlendFactor::Zero,
        dst_factor: wgpu::BlendFactor::Src,
        operation: wgpu::BlendOperation::Add,
    },
    alpha: wgpu::BlendComponent {
        src_factor: wgpu::BlendFactor::Zero,
        dst_factor: wgpu::BlendFactor::One,
        operation: wgpu::BlendOperation::Add,
    },
};

/// The layout of bind group 2 of the surfaces that receive the water's light: the [`WaterLightUniform`]
/// (binding 0), the light-space map (1) and a filtering sampler (2), visible to vertex and fragment
/// stages. Layouts made by this function are interchangeable.
pub fn receiver_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    let vf = wgpu::ShaderStages::VERTEX_FRAGMENT;
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("water light receiver bind group layout"),
        entries: &[
            gpu::uniform_entry::<WaterLightUniform>(0, vf),
            frame::texture_entry(1, wgpu::ShaderStages::FRAGMENT, true, wgpu::TextureViewDimension::D2),
            frame::sampler_entry(2, wgpu::ShaderStages::FRAGMENT),
        ],
    })
}

/// The pipeline of a receiver's overlay ("terrain water shadow" and the like), drawn over the surface
/// already in the frame: bind groups 0 the frame, 1 `pass` (the receiver's own), 2 [`receiver_layout`]
/// and 3 `sky` when given; `module`'s entry points `vs` and `fs` (which returns the factor); the frame's
/// colour multiplied by it ([`MULTIPLY`]) where the depth test `compare` passes (depth not written).
#[allow(clippy::too_many_arguments)]
pub fn receiver_pipeline(
    device: &wgpu::Device,
    label: &str,
    module: &wgpu::ShaderModule,
    (vs, fs): (&str, &str),
    primitive: wgpu::PrimitiveState,
    color_format: wgpu::TextureFormat,
    (pass, sky): (&wgpu::BindGroupLayout, Option<&wgpu::BindGroupLayout>),
    compare: wgpu::CompareFunction,
) -> wgpu::RenderPipeline {
    let frame_layout = frame::frame_bind_group_layout(device);
    let receiver = receiver_layout(device);
    let groups = [Some(&frame_layout), Some(pass), Some(&receiver), sky];
    let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(&format!("{label} layout")),
        bind_group_layouts: if sky.is_some() { &groups } else { &groups[..3] },
        immediate_size: 0,
    });
    frame::render_pipeline(
        device,
        label,
        &layout,
        module,
        (vs, fs),
        primitive,
        wgpu::ColorTargetState { format: color_format, blend: Some(MULTIPLY), write_mask: wgpu::ColorWrites::ALL },
        Some(frame::depth_state(compare, false)),
        &frame::output_constants(color_format),
    )
}

/// What the water-shadow pass splats this frame.
#[derive(Clone, Copy)]
pub struct WaterShadowInput<'a> {
    /// The anisotropy pass's ellipsoids (at least `count`), or `None`: no water light this frame.
    pub ellipsoids: Option<&'a EllipsoidBuffers>,
    pub count: u32,
    /// The light and the water's absorption ([`WaterLightUniform::new`]).
    pub light: WaterLightUniform,
    /// The map's texel size to aim for, metres ([`map_size`]): two particle spacings.
    pub texel: f32,
    /// Rasteriser or compute, as the camera's splats ([`super::FluidSettings::splats`]).
    pub method: SplatMethod,
}

/// The compute splat's constants, bind group 1 binding 0 (the raster path reads none).
/// WGSL twin: `WaterShadow` in `shaders/render/water_shadow.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WaterShadowUniform {
    /// Texels along each side of the map ([`map_size`]).
    pub size: u32,
    /// The path's fixed point, units per metre: [`FIXED_PER_TEXEL`] over the texel width aimed at
    /// ([`WaterShadowInput::texel`]).
    pub fixed_scale: f32,
    /// Ellipsoids splatted.
    pub count: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<WaterShadowUniform>() == 16);

/// Fixed-point units of the compute splat's path per texel width (2^17: with texels of two spacings, the
/// camera's 1/65 536 of a spacing). The path is summed into two words per texel (a carry into the high
/// word when the low one wraps), so no depth of water overflows it.
pub const FIXED_PER_TEXEL: f32 = 131_072.0;

/// `u32` words per map texel of the compute path: the path's low and high words and the entry depth's key.
const WORDS_PER_TEXEL: u64 = 3;

/// The splat's pipelines (raster, compute and the compute path's resolve) for ellipsoid arrays of
/// `chunks` bindings of `per_binding` elements, and its layout of bind group 1.
struct Pipelines {
    chunks: usize,
    per_binding: u32,
    layout: wgpu::BindGroupLayout,
    raster: wgpu::RenderPipeline,
    compute: wgpu::ComputePipeline,
    resolve: wgpu::RenderPipeline,
}

impl Pipelines {
    fn new(device: &wgpu::Device, light_layout: &wgpu::BindGroupLayout, chunks: usize, per_binding: u32) -> Self {
        let module = gpu::shader::module_split(device, "render/water_shadow.wgsl", &[], chunks);
        let fc = wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::COMPUTE;
        let vfc = wgpu::ShaderStages::VERTEX_FRAGMENT | wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("water shadow bind group layout"),
            entries: &[
                [gpu::uniform_entry::<WaterShadowUniform>(0, fc), gpu::storage_entry::<u32>(3, false, fc)].as_slice(),
                &split::layout_entries::<[f32; 4]>(1, true, vfc, chunks),
                &split::layout_entries::<[u32; 4]>(4, true, fc, chunks),
            ]
            .concat(),
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("water shadow pipeline layout"),
            bind_group_layouts: &[None, Some(&layout), Some(light_layout)],
            immediate_size: 0,
        });
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let min = wgpu::BlendComponent { operation: wgpu::BlendOperation::Min, ..add };
        let constants = [(split::CONSTANT, per_binding as f64)];
        let pipeline = |label: &str, entries: (&str, &str), blend: Option<wgpu::BlendState>| {
            frame::render_pipeline_with(
                device,
                label,
                &pipeline_layout,
                &module,
                entries,
                wgpu::PrimitiveState::default(),
                wgpu::ColorTargetState { format: MAP_FORMAT, blend, write_mask: wgpu::ColorWrites::ALL },
                None,
                (&constants, &constants),
            )
        };
        let raster = pipeline(
            "water shadow pipeline",
            ("vs_main", "fs_main"),
            Some(wgpu::BlendState { color: add, alpha: min }),
        );
        let resolve = pipeline("water shadow resolve pipeline", ("vs_fullscreen", "fs_resolve"), None);
        let compute = gpu::compute_pipeline_with(device, &module, &pipeline_layout, "cs_shadow", &constants);
        Self { chunks, per_binding, layout, raster, compute, resolve }
    }
}

/// The light-space map and what is made with it: its view, the compute path's words, the receivers'
/// bind group.
struct Map {
    texture: wgpu::Texture,
    view: wgpu::TextureView,
    /// [`WORDS_PER_TEXEL`] `u32`s per texel (see `shaders/render/water_shadow.wgsl`).
    words: wgpu::Buffer,
    /// The receivers' group 2: the uniform, the map and its sampler.
    receiver: wgpu::BindGroup,
}

/// The water-shadow pass: the light-space map, its splat pipelines, the light's and the splat's uniforms
/// and the bind groups of the splat and of the receivers.
pub struct WaterShadowPass {
    pipelines: Pipelines,
    /// The splat's layout of bind group 2 (the light's uniform alone).
    light_layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    light: WaterLightUniform,
    /// The splat's group 2: the light's uniform alone.
    splat_light_group: wgpu::BindGroup,
    splat_uniform: wgpu::Buffer,
    splat_values: WaterShadowUniform,
    map: Map,
    /// The ellipsoid arrays' first chunks and the words the splat's group 1 was made over, and the group.
    bound: Option<([wgpu::Buffer; 3], wgpu::BindGroup)>,
}

impl WaterShadowPass {
    /// Builds the pipelines (for one-binding ellipsoid arrays; made again for others) and the map.
    pub fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        let light_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("water shadow light bind group layout"),
            entries: &[gpu::uniform_entry::<WaterLightUniform>(
                0,
                wgpu::ShaderStages::VERTEX_FRAGMENT | wgpu::ShaderStages::COMPUTE,
            )],
        });
        let pipelines = Pipelines::new(device, &light_layout, 1, split::per_binding(&device.limits()));
        let light = WaterLightUniform { enabled: 0, ..bytemuck::Zeroable::zeroed() };
        let uniform = gpu::uniform_buffer_init(device, "water light uniform", bytemuck::bytes_of(&light));
        let splat_light_group = gpu::bind_buffers(device, "water shadow light bind group", &light_layout, &[&uniform]);
        let splat_values = WaterShadowUniform::zeroed();
        let splat_uniform = gpu::uniform_buffer_init(device, "water shadow uniform", bytemuck::bytes_of(&splat_values));
        let map = make_map(device, &uniform, MAP_SIZES.0);
        Self {
            pipelines,
            light_layout,
            uniform,
            light,
            splat_light_group,
            splat_uniform,
            splat_values,
            map,
            bound: None,
        }
    }

    /// Bind group 2 of the receivers ([`receiver_layout`]): the light of the last [`WaterShadowPass::encode`].
    pub fn receiver(&self) -> &wgpu::BindGroup {
        &self.map.receiver
    }

    /// The light-space map ([`MAP_FORMAT`], square, [`map_size`]) of the last frame, for tests.
    pub fn map(&self) -> &wgpu::Texture {
        &self.map.texture
    }

    /// The light of the last [`WaterShadowPass::encode`].
    pub fn light(&self) -> &WaterLightUniform {
        &self.light
    }

    /// Records "water shadow": splats the ellipsoids into the map, by the rasteriser (the map cleared
    /// first) or by compute (its words cleared, then "water shadow resolve" writes the map). Returns
    /// whether there is water light to apply (ellipsoids given, at least one, and the sun above the
    /// horizon); when not, records nothing.
    pub fn encode(&mut self, frame: &mut Frame<'_>, input: WaterShadowInput<'_>) -> bool {
        let Some(ellipsoids) = input.ellipsoids.filter(|_| input.count > 0 && input.light.enabled == 1) else {
            return false;
        };
        if input.light != self.light {
            frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&input.light));
            self.light = input.light;
        }
        let device = frame.device;
        let size = map_size(&input.light, input.texel);
        if self.map.texture.width() != size {
            self.map = make_map(device, &self.uniform, size);
        }
        let values = WaterShadowUniform {
            size,
            fixed_scale: FIXED_PER_TEXEL / input.texel.max(1e-9),
            count: input.count,
            _pad: 0,
        };
        if values != self.splat_values {
            frame.queue.write_buffer(&self.splat_uniform, 0, bytemuck::bytes_of(&values));
            self.splat_values = values;
        }
        let key = (ellipsoids.chunks(), ellipsoids.per_binding());
        if (self.pipelines.chunks, self.pipelines.per_binding) != key {
            self.pipelines = Pipelines::new(device, &self.light_layout, key.0, key.1);
            self.bound = None;
        }
        let first =
            [ellipsoids.centres.chunks()[0].clone(), ellipsoids.g_packed.chunks()[0].clone(), self.map.words.clone()];
        if self.bound.as_ref().is_none_or(|(b, _)| *b != first) {
            let chunks = self.pipelines.chunks;
            let entries = [(0, &self.splat_uniform), (3, &self.map.words)]
                .into_iter()
                .chain(ellipsoids.centres.bindings(1, chunks))
                .chain(ellipsoids.g_packed.bindings(4, chunks));
            let group = gpu::bind_at(device, "water shadow bind group", &self.pipelines.layout, entries);
            self.bound = Some((first, group));
        }
        let Some((_, group)) = &self.bound else { return false };
        let clear = wgpu::LoadOp::Clear(wgpu::Color { r: 0.0, g: 0.0, b: 0.0, a: NO_WATER_DEPTH as f64 });
        match input.method {
            SplatMethod::Raster => {
                let mut pass = render_pass(frame.profiler, frame.encoder, "water shadow", &self.map.view, clear, None);
                pass.set_pipeline(&self.pipelines.raster);
                pass.set_bind_group(1, group, &[]);
                pass.set_bind_group(2, &self.splat_light_group, &[]);
                pass.draw(0..6, 0..input.count);
            }
            SplatMethod::Compute => {
                // Rows of workgroups, as the camera's splats: a count the engine admits needs at most 129.
                let groups = match gpu::workgroups("water shadow", input.count as u64, SPLAT_WG, 1, &device.limits()) {
                    Ok(groups) => groups,
                    Err(e) => {
                        log::error!("{e}: the water's shadow is skipped");
                        return false;
                    }
                };
                frame.encoder.clear_buffer(&self.map.words, 0, None);
                {
                    let mut pass = frame.profiler.compute_pass(frame.encoder, "water shadow");
                    pass.set_pipeline(&self.pipelines.compute);
                    pass.set_bind_group(1, group, &[]);
                    pass.set_bind_group(2, &self.splat_light_group, &[]);
                    gpu::dispatch(&mut pass, groups);
                }
                let mut pass =
                    render_pass(frame.profiler, frame.encoder, "water shadow resolve", &self.map.view, clear, None);
                pass.set_pipeline(&self.pipelines.resolve);
                pass.set_bind_group(1, group, &[]);
                pass.set_bind_group(2, &self.splat_light_group, &[]);
                pass.draw(0..3, 0..1);
            }
        }
        true
    }
}

/// The light-space map of `size`² texels, its view, the compute path's words and the receivers' bind group
/// over the map and `uniform`.
fn make_map(device: &wgpu::Device, uniform: &wgpu::Buffer, size: u32) -> Map {
    let texture = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("water light map"),
        size: wgpu::Extent3d { width: size, height: size, depth_or_array_layers: 1 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: MAP_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT
            | wgpu::TextureUsages::TEXTURE_BINDING
            | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let view = texture.create_view(&Default::default());
    // At most 2048² texels of three words: 48 MiB.
    let words = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("water shadow words"),
        size: WORDS_PER_TEXEL * 4 * size as u64 * size as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
        label: Some("water light sampler"),
        mag_filter: wgpu::FilterMode::Linear,
        min_filter: wgpu::FilterMode::Linear,
        ..Default::default()
    });
    let receiver = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("water light receiver bind group"),
        layout: &receiver_layout(device),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&view) },
            wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::Sampler(&sampler) },
        ],
    });
    Map { texture, view, words, receiver }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The light's projection puts the bounds on the map and the points of one sun ray on one texel, at
    /// depths growing away from the sun by the distance along the ray.
    #[test]
    fn the_light_sees_the_bounds_along_the_sun() {
        let bounds = (Vec3::new(-2.0, 0.0, 1.0), Vec3::new(6.0, 3.0, 5.0));
        for sun in [Vec3::new(0.3, 0.8, -0.5).normalize(), Vec3::Y, Vec3::new(-0.9, 0.1, 0.2).normalize()] {
            let light = WaterLightUniform::new(sun, bounds, [0.9, 0.4, 0.15], 0.1);
            assert_eq!(light.enabled, 1, "sun {sun}");
            for k in 0..8 {
                let c = Vec3::new(pick(k & 1, -2.0, 6.0), pick(k & 2, 0.0, 3.0), pick(k & 4, 1.0, 5.0));
                let (uv, depth) = light.map_point(c);
                let inside = uv.cmpge(glam::Vec2::splat(-1e-4)).all() && uv.cmple(glam::Vec2::splat(1.0001)).all();
                assert!(inside && depth >= -1e-4, "corner {c} for sun {sun}: uv {uv}, depth {depth}");
            }
            let p = Vec3::new(1.0, 1.0, 3.0);
            let (uv, depth) = light.map_point(p);
            let (uv2, depth2) = light.map_point(p - 2.5 * sun);
            assert!((uv - uv2).length() < 1e-5, "sun {sun}: {uv} and {uv2} on one ray");
            assert!((depth2 - depth - 2.5).abs() < 1e-4, "sun {sun}: depths {depth} and {depth2}");
        }
        let light = WaterLightUniform::new(Vec3::Y, bounds, [0.9, 0.4, 0.15], 0.1);
        assert_eq!(map_size(&light, 0.02), 448, "8 m wide (x), 4 m deep (z) in 2 cm texels: 400, rounded up");
        assert_eq!(map_size(&light, 1.0), MAP_SIZES.0, "at least the smallest");
        assert_eq!(map_size(&light, 1e-4), MAP_SIZES.1, "at most the largest");
        let night = WaterLightUniform::new(Vec3::new(0.0, -0.2, 1.0).normalize(), bounds, [0.9, 0.4, 0.15], 0.1);
        assert_eq!(night.enabled, 0, "a sun below the horizon casts no water shadow");
    }
}
