//! Screen-space fluid composite (`shaders/render/composite.wgsl`), the last stage of van der Laan, Green &
//! Sainz, "Screen space fluid rendering with curvature flow" (I3D 2009), with Green's GDC 2010 shading:
//! normals from the smoothed depth, Schlick Fresnel, Beer-Lambert absorption of the refracted background,
//! the sky cubemap reflected, a sun highlight, and the smoothed depth written (reversed-Z) so water and
//! terrain occlude each other. First the frame's colour is copied as the refraction background, then one
//! full-screen triangle ("fluid composite") is drawn over the frame's colour and depth; the debug views
//! draw an intermediate target over the whole screen instead. The bind groups over the targets and the
//! sky's cubemap are made on resize (and when another sky is loaded), never per frame.

use super::frame::{self, DEPTH_COMPARE};
use super::pass::{Frame, Pass, Targets};
use super::targets::FluidTargets;
use crate::gpu::{self, GpuContext};

/// Shading parameters, bind group 1 binding 0. WGSL twin: `Composite` in `shaders/render/composite.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CompositeUniform {
    /// Beer-Lambert absorption per channel, 1/m.
    pub absorption: [f32; 3],
    /// Index of refraction of the water (1 = the background seen straight through).
    pub ior: f32,
    /// Fresnel reflectance at normal incidence.
    pub f0: f32,
    /// 0 final, else the debug view's code (see `FluidView`).
    pub view: u32,
    /// Tiles across (tile-mask view).
    pub tiles_x: u32,
    /// Radiance multiplier of the sky cubemap.
    pub sky_exposure: f32,
    /// Linear depths (m) drawn white and dark in the depth views (the renderer uses 0.75 and 1.25 times
    /// the orbit distance).
    pub depth_vis: [f32; 2],
    /// Thickness (m) drawn at 63% brightness in the thickness view.
    pub thickness_vis: f32,
    /// Multiplier of the thickness target's values (1).
    pub thickness_scale: f32,
    /// Scattering coefficient per channel, 1/m: with `absorption`, the single-scattering albedo that
    /// colours the light the water scatters toward the eye.
    pub scattering: [f32; 3],
    /// Thickness (m) at and below which water is shaded as a droplet (a lone particle or two: normals of
    /// the splat's own round shape, the background seen through it as through a lens, the sky reflected,
    /// a sharp sun glint), fading to the water's shading at twice it; 0 = off.
    pub droplet_thickness: f32,
    /// Depth behind the water's drawn surface (m) that still counts as at the surface: foam nearer than
    /// this is foam on the water, farther it is bubbles inside it, tinted by the water in front.
    pub surface_allowance: f32,
    pub _pad: [u32; 3],
}
const _: () = assert!(size_of::<CompositeUniform>() == 80);

/// The bind groups of the two smoothed-depth results over one set of targets, the sky they bind, and
/// the refraction background the frame's colour is copied into.
struct Bound {
    /// `[k]`: the smoothed depth in `smooth[k]`, the refraction background copied into `background`.
    groups: [wgpu::BindGroup; 2],
    /// The same over a background cache's colour texture (sampled instead of a copy, see
    /// [`CompositeInput::background`]), and that texture.
    cached: Option<(wgpu::Texture, [wgpu::BindGroup; 2])>,
    /// Version of the sky cubemap bound ([`super::SkyPass::version`]).
    sky_version: u64,
    background: wgpu::Texture,
    /// What the groups were made over, to remake them for another sky.
    targets: FluidTargetViews,
    sky: wgpu::TextureView,
}

/// The views of the targets the composite samples (kept to rebind another sky).
struct FluidTargetViews {
    smooth: [wgpu::TextureView; 2],
    raw_depth: wgpu::TextureView,
    thickness: wgpu::TextureView,
    background: wgpu::TextureView,
    tile_mask: wgpu::Buffer,
    foam: wgpu::TextureView,
}

/// The composite pass: final and debug pipelines, uniform and sampler (screen-independent) and the bind
/// groups over the current targets.
pub struct CompositePass {
    layout: wgpu::BindGroupLayout,
    final_pipeline: wgpu::RenderPipeline,
    debug_pipeline: wgpu::RenderPipeline,
    uniform: wgpu::Buffer,
    sampler: wgpu::Sampler,
    /// Targets from the last resize (their groups are made on the first encode with a sky).
    targets: Option<FluidTargetViews>,
    background: Option<wgpu::Texture>,
    bound: Option<Bound>,
}

/// What the composite reads per frame.
#[derive(Clone, Copy)]
pub struct CompositeInput<'a> {
    pub params: CompositeUniform,
    /// Which of `FluidTargets::smooth` holds the filtered depth (the depth filter's `result_index`).
    pub smoothed: usize,
    /// The sky cubemap reflected by the water, and its version (rebinds when it changes).
    pub sky: (&'a wgpu::TextureView, u64),
    /// A texture that already holds the frame's colour as it is before the water (the background cache,
    /// when the background came from it and nothing was drawn over it): the water refracts it directly
    /// instead of a copy of the frame's colour (a copy costs 0.16 ms at 1080p on an H200).
    pub background: Option<&'a wgpu::Texture>,
}

impl CompositePass {
    /// Builds the pipelines for colour targets of `color_format` (depth: `Depth32Float`).
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/composite.wgsl");
        let fs = wgpu::ShaderStages::FRAGMENT;
        let d2 = wgpu::TextureViewDimension::D2;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("composite bind group layout"),
            entries: &[
                gpu::uniform_entry::<CompositeUniform>(0, fs),
                frame::texture_entry(1, fs, false, d2),
                frame::texture_entry(2, fs, false, d2),
                frame::texture_entry(3, fs, true, d2),
                frame::texture_entry(4, fs, true, d2),
                frame::texture_entry(5, fs, true, wgpu::TextureViewDimension::Cube),
                frame::sampler_entry(6, fs),
                gpu::storage_entry::<u32>(7, true, fs),
                frame::texture_entry(8, fs, true, d2),
            ],
        });
        let pipeline_layout = frame::pass_pipeline_layout(device, "composite pipeline layout", &layout);
        let constants = frame::output_constants(color_format);
        let pipeline = |label: &str, entry: &str, compare: wgpu::CompareFunction, write: bool| {
            let depth = Some(frame::depth_state(compare, write));
            let primitive = wgpu::PrimitiveState::default();
            frame::render_pipeline(
                device,
                label,
                &pipeline_layout,
                &module,
                ("vs_main", entry),
                primitive,
                color_format.into(),
                depth,
                &constants,
            )
        };
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("composite sampler"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            address_mode_u: wgpu::AddressMode::ClampToEdge,
            address_mode_v: wgpu::AddressMode::ClampToEdge,
            ..Default::default()
        });
        Self {
            final_pipeline: pipeline("composite pipeline", "fs_final", DEPTH_COMPARE, true),
            debug_pipeline: pipeline("composite debug pipeline", "fs_debug", wgpu::CompareFunction::Always, false),
            uniform: gpu::uniform_buffer_init(
                device,
                "composite uniform",
                bytemuck::bytes_of(&CompositeUniform::zeroed()),
            ),
            layout,
            sampler,
            targets: None,
            background: None,
            bound: None,
        }
    }

    /// The bind groups over the targets and `sky`, made when the targets or the sky changed.
    fn bind(&mut self, device: &wgpu::Device, (sky, version): (&wgpu::TextureView, u64)) -> Option<&mut Bound> {
        if self.bound.as_ref().is_some_and(|b| b.sky_version == version) {
            return self.bound.as_mut();
        }
        let targets = self.targets.take().or_else(|| self.bound.take().map(|b| b.targets))?;
        let background = self.background.clone()?;
        let groups = self.groups(device, &targets, sky, &targets.background);
        self.bound = Some(Bound { groups, cached: None, sky_version: version, background, targets, sky: sky.clone() });
        self.bound.as_mut()
    }

    /// The bind groups of both smoothed results over `targets`, `sky` and the refraction `background`.
    fn groups(
        &self,
        device: &wgpu::Device,
        targets: &FluidTargetViews,
        sky: &wgpu::TextureView,
        background: &wgpu::TextureView,
    ) -> [wgpu::BindGroup; 2] {
        let tex = wgpu::BindingResource::TextureView;
        let entry = |binding, resource| wgpu::BindGroupEntry { binding, resource };
        let group = |k: usize| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("composite bind group"),
                layout: &self.layout,
                entries: &[
                    entry(0, self.uniform.as_entire_binding()),
                    entry(1, tex(&targets.smooth[k])),
                    entry(2, tex(&targets.raw_depth)),
                    entry(3, tex(&targets.thickness)),
                    entry(4, tex(background)),
                    entry(5, tex(sky)),
                    entry(6, wgpu::BindingResource::Sampler(&self.sampler)),
                    entry(7, targets.tile_mask.as_entire_binding()),
                    entry(8, tex(&targets.foam)),
                ],
            })
        };
        [group(0), group(1)]
    }
}

impl Pass for CompositePass {
    type Input<'a> = CompositeInput<'a>;

    fn resize(&mut self, _device: &wgpu::Device, targets: Option<Targets<'_>>) {
        self.bound = None;
        self.background = targets.map(|t| t.fluid.background.clone());
        self.targets = targets.map(|t| views(t.fluid));
    }

    /// Records "fluid composite" over the frame's colour and depth (loaded, not cleared): the shaded water
    /// (`params.view == 0`) or a debug view. The water refracts `input.background` when given, else a copy
    /// of the frame's colour made here first (when the frame's texture allows copies and has the targets'
    /// size; otherwise the water refracts the last copy).
    fn encode(&mut self, frame: &mut Frame<'_>, input: CompositeInput<'_>) {
        frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&input.params));
        let layout_ok = self.bind(frame.device, input.sky).is_some();
        let Some(bound) = self.bound.as_ref().filter(|_| layout_ok) else {
            log::error!("composite: encode before resize");
            return;
        };
        let cached =
            input.background.filter(|t| t.size() == bound.background.size() && t.format() == bound.background.format());
        let groups = match cached {
            Some(texture) => {
                if bound.cached.as_ref().is_none_or(|(t, _)| t != texture) {
                    let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
                    let groups = self.groups(frame.device, &bound.targets, &bound.sky, &view);
                    if let Some(b) = self.bound.as_mut() {
                        b.cached = Some((texture.clone(), groups));
                    }
                }
                self.bound.as_ref().and_then(|b| b.cached.as_ref()).map(|(_, g)| g)
            }
            None => {
                let color = &frame.target.color;
                if color.size() == bound.background.size() && color.usage().contains(wgpu::TextureUsages::COPY_SRC) {
                    frame.encoder.copy_texture_to_texture(
                        color.as_image_copy(),
                        bound.background.as_image_copy(),
                        color.size(),
                    );
                }
                Some(&bound.groups)
            }
        };
        let Some(group) = groups.map(|g| g[input.smoothed.min(1)].clone()) else { return };
        let pipeline = if input.params.view == 0 { &self.final_pipeline } else { &self.debug_pipeline };
        let mut pass = frame.target_pass("fluid composite", false);
        pass.set_pipeline(pipeline);
        pass.set_bind_group(1, &group, &[]);
        pass.draw(0..3, 0..1);
    }
}

/// The views of `targets` the composite binds.
fn views(targets: &FluidTargets) -> FluidTargetViews {
    FluidTargetViews {
        smooth: targets.smooth_views.clone(),
        raw_depth: targets.raw_depth_view.clone(),
        thickness: targets.thickness_view.clone(),
        background: targets.background_view.clone(),
        tile_mask: targets.tile_mask.clone(),
        foam: targets.foam_view.clone(),
    }
}

use bytemuck::Zeroable as _;
