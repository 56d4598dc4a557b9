//! Rendering: an orbit camera, then one hand-ordered render pass ("render", timed by the profiler) into a
//! colour target and a reversed-Z `Depth32Float` depth target:
//!
//! 1. clear colour and depth (depth to 0 = far, see [`camera`]);
//! 2. [`sky`]: full-screen triangle from each pixel's view ray, no depth test or write;
//! 3. [`terrain`]: the heightfield mesh built in the vertex shader from the simulation's own heights;
//! 4. [`particles`]: ray-cast sphere impostors read straight from the simulation's buffers, writing
//!    their exact depth so they and the terrain occlude each other.
//!
//! All passes share bind group 0, the frame's [`CameraUniform`] (camera, viewport, sun, time), and light
//! with the same analytic daylight model (`shaders/common/camera.wgsl`); they write tone-mapped colour.
//! A screen-space fluid renderer will add its passes beside these.

pub mod camera;
pub mod particles;
pub mod sky;
pub mod targets;
pub mod terrain;

pub use camera::{sun_direction, CameraUniform, OrbitCamera, DEPTH_CLEAR, DEPTH_COMPARE, DEPTH_FORMAT};
pub use particles::{ColorMode, ParticlePass, ParticleStyle};
pub use sky::SkyPass;
pub use targets::{read_texture_rgba, Offscreen, OFFSCREEN_FORMAT};
pub use terrain::TerrainPass;

use crate::gpu::{GpuContext, Profiler};
use crate::terrain::Heightfield;
use serde::{Deserialize, Serialize};

/// User-facing render settings (serde; angles in degrees).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RenderSettings {
    /// How particles are drawn.
    pub particle: ParticleStyle,
    /// Sun direction about +y, degrees (0 = toward +z, 90 = toward +x).
    pub sun_azimuth_deg: f32,
    /// Sun height above the horizon, degrees.
    pub sun_elevation_deg: f32,
    /// Sun brightness, linear scale (1 = nominal; the default is tuned for the tone map).
    pub sun_intensity: f32,
    /// Draw the terrain mesh.
    pub show_terrain: bool,
    /// Draw the particles as spheres.
    pub show_particles: bool,
}

impl Default for RenderSettings {
    fn default() -> Self {
        Self {
            particle: ParticleStyle::default(),
            sun_azimuth_deg: 140.0,
            sun_elevation_deg: 38.0,
            sun_intensity: 2.6,
            show_terrain: true,
            show_particles: true,
        }
    }
}

/// The simulation's particle buffers to draw (see [`crate::sim`] for their layout).
#[derive(Clone, Copy, Debug)]
pub struct ParticleSource<'a> {
    /// `array<vec4<f32>>`: xyz = position (m), w = density (kg/m^3).
    pub positions: &'a wgpu::Buffer,
    /// `array<vec4<f32>>`: xyz = velocity (m/s), w = pressure (Pa).
    pub velocities: &'a wgpu::Buffer,
    /// Particles to draw (at most the buffers' length / 16 bytes).
    pub count: u32,
}

/// Owns the frame uniform and every pass; screen-independent (targets belong to the caller).
pub struct Renderer {
    color_format: wgpu::TextureFormat,
    camera_buffer: wgpu::Buffer,
    camera_bind_group: wgpu::BindGroup,
    sky: SkyPass,
    terrain: TerrainPass,
    particles: ParticlePass,
    start: std::time::Instant,
}

impl Renderer {
    /// Builds all pipelines for colour targets of `color_format` (depth targets: [`DEPTH_FORMAT`]) and
    /// uploads `terrain`.
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
            particles: ParticlePass::new(ctx, color_format),
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

    /// Replaces the terrain (e.g. on a scene change).
    pub fn set_terrain(&mut self, ctx: &GpuContext, terrain: &Heightfield) {
        self.terrain.set_heightfield(ctx, terrain);
    }

    /// Records the frame into `encoder`: writes the camera uniform (through the queue, so call once per
    /// submission), then one timed render pass that clears `color` and `depth` (both `size` pixels) and
    /// draws sky, terrain and particles (the last two as `settings` enable them).
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
        let uniform = camera.uniform(size, sun, settings.sun_intensity.max(0.0), time);
        ctx.queue.write_buffer(&self.camera_buffer, 0, bytemuck::bytes_of(&uniform));

        let mut pass = profiler.render_pass(
            encoder,
            "render",
            wgpu::RenderPassDescriptor {
                label: Some("render"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: color,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations { load: wgpu::LoadOp::Clear(wgpu::Color::BLACK), store: wgpu::StoreOp::Store },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: depth,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(DEPTH_CLEAR),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            },
        );
        self.sky.draw(&mut pass, &self.camera_bind_group);
        if settings.show_terrain {
            self.terrain.draw(&mut pass, &self.camera_bind_group);
        }
        if let (true, Some(p)) = (settings.show_particles, particles) {
            self.particles.draw(ctx, &mut pass, &self.camera_bind_group, p.positions, p.velocities, p.count, &settings.particle);
        }
    }
}

/// Renders one frame off-screen at `size` pixels and reads it back as RGBA (sRGB-encoded bytes).
/// **Blocking** (waits for the GPU): for headless runs and tests only.
pub fn render_to_image(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    camera: &OrbitCamera,
    particles: Option<ParticleSource<'_>>,
    settings: &RenderSettings,
    size: (u32, u32),
) -> image::RgbaImage {
    let target = Offscreen::with_format(ctx, size, renderer.color_format());
    let mut profiler = Profiler::new(&ctx.device);
    let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("render to image") });
    renderer.encode(ctx, &mut encoder, &profiler, &target.color_view, &target.depth_view, target.size, camera, particles, settings);
    profiler.resolve(&mut encoder);
    ctx.queue.submit([encoder.finish()]);
    profiler.end_frame(&ctx.queue);
    read_texture_rgba(ctx, &target.color)
}

/// Pipeline constants for the fragment stage: ask the shader to encode sRGB itself when the target
/// format does not.
pub(crate) fn output_constants(color_format: wgpu::TextureFormat) -> Vec<(&'static str, f64)> {
    if color_format.is_srgb() {
        Vec::new()
    } else {
        vec![("ENCODE_SRGB", 1.0)]
    }
}
