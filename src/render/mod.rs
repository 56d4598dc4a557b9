//! Rendering: an orbit camera, then a fixed, hand-ordered sequence of passes into the frame's colour target
//! and reversed-Z `Depth32Float` depth target:
//!
//! 1. "sky" (only when the sun moved): [`sky`] regenerates its cubemap (Preetham daylight);
//! 2. "anisotropy": [`anisotropy`] turns the particles into ellipsoids (Yu & Turk 2013);
//! 3. "background": clear, the [`terrain`] heightfield, then the sky cubemap where nothing was drawn;
//!    skipped while the view stands still, its colour and depth copied from the [`background`] cache;
//!    "render": a wave maker's paddle ([`wave_maker`], when the drawn [`ParticleSource`] has one) and in the `Spheres` debug view the old [`particles`] sphere impostors;
//! 4. screen-space fluid (van der Laan, Green & Sainz 2009): the scene colour is copied as the refraction
//!    background; [`splat`] draws "splat depth" and "splat thickness"; [`smooth`] runs "tiles" and
//!    "curvature flow" (empty-space skipping, indirect dispatch); [`composite`] ("fluid composite")
//!    shades the water over the scene and writes its depth, or shows an intermediate target.
//!
//! The colour target may be 8-bit (sRGB or not: the shaders encode sRGB themselves for a plain `Unorm`
//! format) or a float format ([`HDR_FORMAT`], for EXR screenshots: the tone-mapped linear values as they
//! are); the refraction background copy is made in the colour target's own format (see [`stores_linear`]).
//!
//! Screen-independent state (pipelines, layouts, uniforms) lives in the passes; the screen-sized targets
//! ([`targets::FluidTargets`]) are owned here and rebuilt when the frame size, colour format or thickness
//! resolution changes. All passes share bind group 0, the frame's [`CameraUniform`], and the daylight
//! model of `shaders/common/camera.wgsl`.

pub mod anisotropy;
pub mod background;
pub mod camera;
pub mod composite;
pub mod particles;
pub mod settings;
pub mod sky;
pub mod smooth;
pub mod splat;
pub mod targets;
pub mod terrain;
pub mod wave_maker;

pub use anisotropy::{AnisotropyPass, AnisotropyUniform, Ellipsoid};
pub use camera::{sun_direction, CameraUniform, OrbitCamera, DEPTH_CLEAR, DEPTH_COMPARE, DEPTH_FORMAT};
pub use composite::{CompositePass, CompositeUniform};
pub use particles::{ColorMode, ParticlePass, ParticleStyle};
pub use settings::{FluidSettings, FluidView, RenderSettings};
pub use sky::{SkyError, SkyPass, SkySource};
pub use smooth::{FlowSettings, SmoothPass};
pub use splat::{SplatMethod, SplatPass};
use background::{BackgroundCache, BackgroundKey};
pub use targets::{read_texture_rgba, read_texture_rgba_f32, FluidTargets, Offscreen, HDR_FORMAT, OFFSCREEN_FORMAT};
pub use terrain::TerrainPass;
pub use wave_maker::{PaddleUniform, WaveMakerPass};

use crate::gpu::{GpuContext, Profiler};
use crate::terrain::Heightfield;
use std::path::PathBuf;

/// The particles to draw, as buffers and plain data (the renderer knows no simulation; the engine makes
/// this from one, `Engine::particles`).
#[derive(Clone, Copy)]
pub struct ParticleSource<'a> {
    /// `array<vec4<f32>>`: xyz = position (m), w = density (kg/m^3; < 0 = not drawn, e.g. parked).
    pub positions: &'a wgpu::Buffer,
    /// `array<vec4<f32>>`: xyz = velocity (m/s), w = pressure (Pa).
    pub velocities: &'a wgpu::Buffer,
    /// Particles to draw (at most the buffers' length / 16 bytes).
    pub count: u32,
    /// Changes whenever the particles move (`Simulation::particles_version`): while it stays, the
    /// anisotropy's ellipsoids are kept. `None` (particles of unknown provenance) recomputes every frame.
    pub version: Option<u64>,
    /// A wave maker's paddle to draw: its geometry and motion, and the buffer whose bytes 4..8 hold the
    /// simulated time in seconds (the simulation's step state) that it moves on.
    pub paddle: Option<(PaddleUniform, &'a wgpu::Buffer)>,
}

impl<'a> ParticleSource<'a> {
    /// `count` particles in `positions` and `velocities`, of unknown provenance, no paddle.
    pub fn buffers(positions: &'a wgpu::Buffer, velocities: &'a wgpu::Buffer, count: u32) -> Self {
        Self { positions, velocities, count, version: None, paddle: None }
    }
}

/// Owns the frame uniform, every pass, and the fluid renderer's screen-sized targets.
pub struct Renderer {
    color_format: wgpu::TextureFormat,
    camera_buffer: wgpu::Buffer,
    camera_bind_group: wgpu::BindGroup,
    sky: SkyPass,
    terrain: TerrainPass,
    wave_maker: WaveMakerPass,
    particles: ParticlePass,
    anisotropy: AnisotropyPass,
    splat: SplatPass,
    smooth: SmoothPass,
    composite: CompositePass,
    targets: Option<FluidTargets>,
    background: BackgroundCache,
    /// Changes to the terrain and the sky source so far (part of the background's cache key).
    background_epoch: u64,
    /// Whether the last frame's background came from the cache.
    background_restored: bool,
    /// The sky file last asked for, and the result of loading it.
    sky_request: Option<PathBuf>,
    sky_status: Option<Result<String, String>>,
    start: std::time::Instant,
}

impl Renderer {
    /// Builds all pipelines for colour targets of `color_format` (depth targets: [`DEPTH_FORMAT`]) and
    /// uploads `terrain`. The shaders write linear values into sRGB and float formats (e.g.
    /// [`HDR_FORMAT`]) and sRGB-encoded ones into 8-bit `Unorm` formats (see [`stores_linear`]). The
    /// format must be filterable, since the water samples a copy of it (the refraction background) with
    /// a filtering sampler: `Rgba32Float` is not (without `FLOAT32_FILTERABLE`), use `Rgba16Float`.
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat, terrain: &Heightfield) -> Self {
        let camera_buffer = crate::gpu::uniform_buffer_init(
            &ctx.device,
            "camera uniform",
            bytemuck::bytes_of(&OrbitCamera::default().uniform((1, 1), glam::Vec3::Y, 1.0, 0.0)),
        );
        let layout = camera::camera_bind_group_layout(&ctx.device);
        let camera_bind_group = crate::gpu::bind_buffers(&ctx.device, "camera bind group", &layout, &[&camera_buffer]);
        Self {
            color_format,
            camera_buffer,
            camera_bind_group,
            sky: SkyPass::new(ctx, color_format),
            terrain: TerrainPass::new(ctx, color_format, terrain),
            wave_maker: WaveMakerPass::new(ctx, color_format),
            particles: ParticlePass::new(ctx, color_format),
            anisotropy: AnisotropyPass::new(ctx),
            splat: SplatPass::new(ctx),
            smooth: SmoothPass::new(ctx),
            composite: CompositePass::new(ctx, color_format),
            targets: None,
            background: BackgroundCache::default(),
            background_epoch: 0,
            background_restored: false,
            sky_request: None,
            sky_status: None,
            start: std::time::Instant::now(),
        }
    }

    /// Colour format the pipelines were built for.
    pub fn color_format(&self) -> wgpu::TextureFormat {
        self.color_format
    }

    /// Bind group 0 (the frame's camera uniform), for passes added beside these.
    pub fn camera_bind_group(&self) -> &wgpu::BindGroup {
        &self.camera_bind_group
    }

    /// Whether the last frame's terrain and sky were restored from the background cache (copied, not
    /// drawn); see [`background`].
    pub fn background_restored(&self) -> bool {
        self.background_restored
    }

    /// Replaces the terrain (e.g. on a scene change).
    pub fn set_terrain(&mut self, ctx: &GpuContext, terrain: &Heightfield) {
        self.terrain.set_heightfield(ctx, terrain);
        self.background_epoch += 1;
    }

    /// Frees the fluid renderer's screen-sized targets (the next frame that draws water makes them again),
    /// e.g. after a one-off render at a large size such as a k x screenshot. Commands already recorded
    /// keep what they use alive until the GPU is done with them.
    pub fn release_targets(&mut self) {
        self.targets = None;
        self.smooth.release();
    }

    /// The fluid renderer's screen-sized targets of the last frame that drew water (for tests and tools).
    pub fn fluid_targets(&self) -> Option<&FluidTargets> {
        self.targets.as_ref()
    }

    /// The sky: its cubemap and where it came from; [`SkyPass::load_equirect`] / [`SkyPass::load_faces`]
    /// replace it directly (a later change of `RenderSettings::sky_file` overrides that).
    pub fn sky_mut(&mut self) -> &mut SkyPass {
        &mut self.sky
    }

    /// Outcome of the last `RenderSettings::sky_file` change: `Ok("loaded ...")` or the error message
    /// (the previous sky stays on error).
    pub fn sky_status(&self) -> Option<&Result<String, String>> {
        self.sky_status.as_ref()
    }

    /// Loads `settings.sky_file` when it changed since the last frame.
    fn sync_sky_file(&mut self, ctx: &GpuContext, file: Option<&PathBuf>) {
        if self.sky_request.as_ref() == file {
            return;
        }
        self.sky_request = file.cloned();
        self.background_epoch += 1;
        let Some(path) = file else {
            self.sky.use_generated(ctx);
            self.sky_status = None;
            return;
        };
        let result = if path.is_dir() {
            match six_faces(path) {
                Ok(faces) => self.sky.load_faces(ctx, &faces),
                Err(msg) => {
                    self.sky_status = Some(Err(msg));
                    return;
                }
            }
        } else {
            self.sky.load_equirect(ctx, path)
        };
        self.sky_status = Some(match result {
            Ok(()) => Ok(format!("loaded {}", path.display())),
            Err(e) => {
                log::error!("{e}");
                Err(e.to_string())
            }
        });
    }

    /// Records the frame into `encoder` (see the module doc for the passes): writes the camera uniform
    /// (through the queue, so call once per submission) and clears `color` and `depth` (both `size`
    /// pixels). `color` must belong to a texture with `COPY_SRC` usage for the water's refraction
    /// (without it the water refracts nothing), `depth` to one with `TEXTURE_BINDING` usage.
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        color: &wgpu::TextureView,
        depth: &wgpu::TextureView,
        size: (u32, u32),
        camera: &OrbitCamera,
        particles: Option<ParticleSource<'_>>,
        settings: &RenderSettings,
    ) {
        let sun = sun_direction(settings.sun_azimuth_deg, settings.sun_elevation_deg);
        let time = self.start.elapsed().as_secs_f32();
        let intensity = settings.sun_intensity.max(0.0);
        let uniform = camera.uniform(size, sun, intensity, time);
        ctx.queue.write_buffer(&self.camera_buffer, 0, bytemuck::bytes_of(&uniform));
        self.sync_sky_file(ctx, settings.sky_file.as_ref());
        self.sky.update(ctx, encoder, profiler, sun, intensity, settings.sky_turbidity, settings.sky_exposure);
        if settings.show_terrain {
            self.terrain.update_shadow(ctx, encoder, profiler, sun);
        }
        self.wave_maker.sync(ctx, particles.and_then(|p| p.paddle));

        let particles = particles.filter(|p| settings.show_particles && p.count > 0);
        let fluid = particles.filter(|_| settings.view != FluidView::Spheres);
        if let Some(p) = fluid {
            self.anisotropy.encode(ctx, encoder, profiler, p.positions, p.count, settings.anisotropy_uniform(), p.version);
        }
        // The terrain and the sky: restored from the cache when nothing they depend on changed, else
        // drawn (and cached). Then the moving opaque things over them.
        let key = BackgroundKey {
            camera: CameraUniform { time: 0.0, ..uniform },
            size,
            format: color.texture().format(),
            show_terrain: settings.show_terrain,
            sky: [settings.sky_turbidity, settings.sky_exposure],
            epoch: self.background_epoch,
        };
        let (color_texture, depth_texture) = (color.texture(), depth.texture());
        self.background_restored = settings.cache_background && self.background.restore(encoder, &key, color_texture, depth_texture);
        if !self.background_restored {
            {
                let mut pass = target_pass(profiler, encoder, "background", color, depth, true);
                if settings.show_terrain {
                    self.terrain.draw(&mut pass, &self.camera_bind_group);
                }
                // Last: it fills only the pixels the terrain left at the far plane.
                self.sky.draw(&mut pass, &self.camera_bind_group);
            }
            if settings.cache_background {
                self.background.store(ctx, encoder, key, color_texture, depth_texture);
            } else {
                self.background.invalidate();
            }
        }
        {
            let mut pass = target_pass(profiler, encoder, "render", color, depth, false);
            self.wave_maker.draw(&mut pass, &self.camera_bind_group);
            if let (FluidView::Spheres, Some(p)) = (settings.view, particles) {
                self.particles.draw(ctx, &mut pass, &self.camera_bind_group, p.positions, p.velocities, p.count, &settings.particle);
            }
        }
        if let (Some(p), Some(ellipsoids)) = (fluid, self.anisotropy.ellipsoids()) {
            let color_texture = color.texture();
            let half = settings.fluid.half_res_thickness;
            if !self.targets.as_ref().is_some_and(|t| t.matches(size, color_texture.format(), half)) {
                let targets = FluidTargets::new(ctx, size, color_texture.format(), half);
                self.smooth.resize(ctx, &targets);
                self.targets = Some(targets);
            }
            let Some(targets) = self.targets.as_ref() else { return };
            let same_size = (color_texture.width(), color_texture.height()) == targets.size;
            if same_size && color_texture.usage().contains(wgpu::TextureUsages::COPY_SRC) {
                encoder.copy_texture_to_texture(color_texture.as_image_copy(), targets.background.as_image_copy(), color_texture.size());
            }
            let f = &settings.fluid;
            let dx = settings.dx();
            let source = (ellipsoids, p.count);
            self.splat.encode(ctx, encoder, profiler, &self.camera_bind_group, source, depth, targets, (f.splats, dx));
            let flow = FlowSettings {
                iterations: f.flow_iterations,
                step: f.flow_step,
                threshold: f.depth_threshold * dx,
                focal: (uniform.clip_from_view[0][0], uniform.clip_from_view[1][1]),
                full_screen: f.full_screen_flow,
            };
            self.smooth.encode(ctx, encoder, profiler, targets, &flow);
            let params = CompositeUniform {
                absorption: f.absorption,
                refraction: f.refraction,
                f0: f.fresnel_f0.clamp(0.0, 1.0),
                view: settings.view.code(),
                tiles_x: targets.tiles.0,
                sky_exposure: self.sky.exposure(),
                depth_vis: [camera.distance * 0.75, camera.distance * 1.25],
                thickness_vis: 4.0 * dx,
                thickness_scale: 1.0,
            };
            let smoothed = SmoothPass::result_index(f.flow_iterations);
            self.composite.encode(
                ctx,
                encoder,
                profiler,
                &self.camera_bind_group,
                color,
                depth,
                targets,
                smoothed,
                self.sky.cube_view(),
                &params,
            );
        }
    }
}

/// A timed pass into the frame's colour and depth targets: cleared (`clear`) or loaded, stored.
fn target_pass<'p>(
    profiler: &'p Profiler,
    encoder: &mut wgpu::CommandEncoder,
    label: &str,
    color: &wgpu::TextureView,
    depth: &wgpu::TextureView,
    clear: bool,
) -> crate::gpu::profiler::TimedRenderPass<'p> {
    let (color_load, depth_load) =
        if clear { (wgpu::LoadOp::Clear(wgpu::Color::BLACK), wgpu::LoadOp::Clear(DEPTH_CLEAR)) } else { (wgpu::LoadOp::Load, wgpu::LoadOp::Load) };
    profiler.render_pass(
        encoder,
        label,
        wgpu::RenderPassDescriptor {
            label: Some(label),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: color,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations { load: color_load, store: wgpu::StoreOp::Store },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: depth,
                depth_ops: Some(wgpu::Operations { load: depth_load, store: wgpu::StoreOp::Store }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        },
    )
}

/// The six face files `px nx py ny pz nz` (`.hdr`, `.png`, `.jpg` or `.jpeg`) in `dir`.
fn six_faces(dir: &std::path::Path) -> Result<[PathBuf; 6], String> {
    let find = |name: &str| {
        ["hdr", "png", "jpg", "jpeg"]
            .iter()
            .map(|ext| dir.join(format!("{name}.{ext}")))
            .find(|p| p.is_file())
            .ok_or_else(|| format!("sky folder {}: no face image {name}.hdr/.png/.jpg", dir.display()))
    };
    Ok([find("px")?, find("nx")?, find("py")?, find("ny")?, find("pz")?, find("nz")?])
}

/// Renders one frame off-screen at `size` pixels and reads it back as RGBA (sRGB-encoded bytes).
/// `renderer` must be made for an 8-bit colour format (see [`render_to_image_hdr`] for [`HDR_FORMAT`]).
/// **Blocking** (waits for the GPU): for headless runs and tests only.
pub fn render_to_image(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    camera: &OrbitCamera,
    particles: Option<ParticleSource<'_>>,
    settings: &RenderSettings,
    size: (u32, u32),
) -> image::RgbaImage {
    let target = render_offscreen(ctx, renderer, camera, particles, settings, size);
    read_texture_rgba(ctx, &target.color)
}

/// Renders one frame off-screen at `size` pixels with a renderer made for [`HDR_FORMAT`] and reads it
/// back as linear RGBA floats: the tone-mapped image before sRGB encoding (what an sRGB target would
/// encode on store), alpha 1. **Blocking** (waits for the GPU): for headless runs and tests only.
///
/// Panics when `renderer` was made for a format [`read_texture_rgba_f32`] cannot read (a programming
/// error).
pub fn render_to_image_hdr(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    camera: &OrbitCamera,
    particles: Option<ParticleSource<'_>>,
    settings: &RenderSettings,
    size: (u32, u32),
) -> image::Rgba32FImage {
    let target = render_offscreen(ctx, renderer, camera, particles, settings, size);
    read_texture_rgba_f32(ctx, &target.color)
}

/// One frame into a new off-screen target of the renderer's colour format, submitted.
fn render_offscreen(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    camera: &OrbitCamera,
    particles: Option<ParticleSource<'_>>,
    settings: &RenderSettings,
    size: (u32, u32),
) -> Offscreen {
    let target = Offscreen::with_format(ctx, size, renderer.color_format());
    let mut profiler = Profiler::new(&ctx.device);
    let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("render to image") });
    renderer.encode(ctx, &mut encoder, &profiler, &target.color_view, &target.depth_view, target.size, camera, particles, settings);
    profiler.resolve(&mut encoder);
    ctx.queue.submit([encoder.finish()]);
    profiler.end_frame(&ctx.queue);
    target
}

/// An opaque scene pipeline (terrain, sphere impostors, the wave maker's paddle): `vs_main` and `fs_main` of
/// `module`, no vertex buffers, depth tested and written (reversed-Z), one colour target of `color_format`
/// with the sRGB-encoding constant when that format needs it.
pub(crate) fn opaque_pipeline(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    primitive: wgpu::PrimitiveState,
    color_format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    let constants = output_constants(color_format);
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout: Some(layout),
        vertex: wgpu::VertexState { module, entry_point: Some("vs_main"), compilation_options: Default::default(), buffers: &[] },
        primitive,
        depth_stencil: Some(wgpu::DepthStencilState {
            format: DEPTH_FORMAT,
            depth_write_enabled: Some(true),
            depth_compare: Some(DEPTH_COMPARE),
            stencil: Default::default(),
            bias: Default::default(),
        }),
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some("fs_main"),
            compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() },
            targets: &[Some(wgpu::ColorTargetState::from(color_format))],
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// Whether a colour target of `format` holds linear values: an sRGB format (the hardware encodes on
/// store) or a float format (stores the shader's values as they are, e.g. [`HDR_FORMAT`] for EXR
/// screenshots). Any other format (8-bit `Unorm`) holds what is shown, so the shaders encode sRGB into it.
pub fn stores_linear(format: wgpu::TextureFormat) -> bool {
    use wgpu::TextureFormat as F;
    format.is_srgb()
        || matches!(
            format,
            F::R16Float | F::Rg16Float | F::Rgba16Float | F::R32Float | F::Rg32Float | F::Rgba32Float | F::Rg11b10Ufloat
        )
}

/// Pipeline constants for the fragment stage: ask the shader to encode sRGB itself when the target
/// format holds display-encoded values (8-bit `Unorm`); sRGB and float targets get linear values
/// (see [`stores_linear`]).
pub(crate) fn output_constants(color_format: wgpu::TextureFormat) -> Vec<(&'static str, f64)> {
    if stores_linear(color_format) {
        Vec::new()
    } else {
        vec![("ENCODE_SRGB", 1.0)]
    }
}
