//! The GPU side of the window: the device and every object built on it ([`GpuParts`], made at startup and
//! again after a device loss), the surface configuration, and the recovery paths: a lost surface is
//! recreated, a lost device is replaced with the scene rebuilt from its description.

use super::{new_egui_state, world::World, Blit, Running, CAPTURE_DIR};
use crate::capture::Capture;
use crate::gpu::{GpuContext, Profiler};
use crate::render::{targets::Offscreen, Renderer};
use crate::terrain::Heightfield;
use anyhow::anyhow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use winit::dpi::PhysicalSize;

/// The device, surface configuration and every GPU object built on them (remade after a device loss).
pub(super) struct GpuParts {
    pub(super) ctx: GpuContext,
    pub(super) config: wgpu::SurfaceConfiguration,
    pub(super) draw_format: wgpu::TextureFormat,
    pub(super) profiler: Profiler,
    pub(super) offscreen: Offscreen,
    pub(super) renderer: Renderer,
    pub(super) blit: Blit,
    pub(super) egui_renderer: egui_wgpu::Renderer,
    pub(super) capture: Capture,
    pub(super) gpu_errors: Arc<Mutex<Vec<String>>>,
    pub(super) device_lost: Arc<AtomicBool>,
}

impl GpuParts {
    pub(super) fn new(
        instance: wgpu::Instance,
        surface: &wgpu::Surface<'static>,
        size: PhysicalSize<u32>,
        terrain: &Heightfield,
        closing: &Arc<AtomicBool>,
    ) -> anyhow::Result<Self> {
        let ctx = GpuContext::new(instance, Some(surface))?;
        let gpu_errors = Arc::new(Mutex::new(Vec::new()));
        let sink = gpu_errors.clone();
        ctx.device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            log::error!("wgpu: {e}");
            if let Ok(mut v) = sink.lock() {
                if v.len() < 16 {
                    v.push(format!("GPU: {e}"));
                }
            }
        }));
        let device_lost = Arc::new(AtomicBool::new(false));
        let (flag, closing) = (device_lost.clone(), closing.clone());
        ctx.device.set_device_lost_callback(move |reason, message| {
            if closing.load(Ordering::Acquire) {
                return;
            }
            log::error!("GPU device lost ({reason:?}): {message}");
            flag.store(true, Ordering::Release);
        });
        let config = surface_config(surface, &ctx, size)?;
        let draw_format = config.view_formats.first().copied().unwrap_or(config.format);
        if size.width > 0 && size.height > 0 {
            surface.configure(&ctx.device, &config);
        }
        log::info!("surface: {:?}, {}x{}, {:?}", config.format, config.width, config.height, config.present_mode);
        let profiler = Profiler::new(&ctx.device);
        let offscreen = Offscreen::new(&ctx, (config.width.max(1), config.height.max(1)));
        let renderer = Renderer::new(&ctx, offscreen.color.format(), terrain);
        let blit = Blit::new(&ctx, draw_format, &offscreen.color_view);
        let egui_renderer = egui_wgpu::Renderer::new(&ctx.device, draw_format, egui_wgpu::RendererOptions::default());
        let capture = Capture::new(&ctx.device, CAPTURE_DIR);
        Ok(Self {
            ctx,
            config,
            draw_format,
            profiler,
            offscreen,
            renderer,
            blit,
            egui_renderer,
            capture,
            gpu_errors,
            device_lost,
        })
    }
}

impl Running {
    /// Recreates the surface after `Lost`.
    pub(super) fn recreate_surface(&mut self) {
        match self.ctx.instance.create_surface(self.window.clone()) {
            Ok(s) => {
                self.surface = s;
                self.surface.configure(&self.ctx.device, &self.config);
            }
            Err(e) => self.ui.push_error(format!("the window surface was lost and could not be recreated: {e}")),
        }
    }

    /// After a device loss: a new device on the same instance and surface, every GPU object remade, the
    /// scene rebuilt from its description (the simulation restarts from the scene's initial water), the
    /// camera and the panels kept. A recording in progress is lost. Best effort: a failure is shown and
    /// retried on a later frame.
    pub(super) fn recover_device(&mut self) {
        log::warn!("recreating the GPU device after a loss");
        // A build under way uses the lost device; frames of the lost device never complete.
        self.cancel_build();
        self.completed.store(self.submitted, std::sync::atomic::Ordering::Release);
        self.recording = None;
        self.finishing = None;
        let size = PhysicalSize::new(self.config.width, self.config.height);
        let parts =
            match GpuParts::new(self.ctx.instance.clone(), &self.surface, size, self.world.terrain(), &self.closing) {
                Ok(p) => p,
                Err(e) => {
                    self.ui.push_error(format!("the GPU device was lost and could not be recreated: {e:#}"));
                    return;
                }
            };
        self.ctx = parts.ctx;
        self.config = parts.config;
        self.draw_format = parts.draw_format;
        self.profiler = parts.profiler;
        self.offscreen = parts.offscreen;
        self.renderer = parts.renderer;
        self.renderer.set_sky(&self.ctx, self.sky.as_ref());
        self.hdr_renderer = None;
        self.blit = parts.blit;
        self.egui_renderer = parts.egui_renderer;
        self.capture = parts.capture;
        self.gpu_errors = parts.gpu_errors;
        self.device_lost = parts.device_lost;
        self.ui_target = None;
        // A fresh egui context re-sends its font atlas to the new renderer.
        self.egui_ctx = egui::Context::default();
        self.egui_state = new_egui_state(&self.egui_ctx, &self.window, &self.ctx);
        let scene = self.world.scene().clone();
        let camera = self.camera.clone();
        if !self.replace_world(scene.clone(), "scene restored after a GPU device loss", false) {
            // The old simulation belongs to the lost device.
            let terrain = self.world.terrain().clone();
            self.show(World::Unbuilt { scene, terrain }, false);
        }
        self.camera = camera;
        self.ui.push_error("the GPU device was lost; it was recreated and the scene restarted");
    }
}

/// Surface configuration: an sRGB format if offered, Fifo (vsync), the window's size; when the adapter
/// allows it, the format without the sRGB suffix as the one extra view format (see `draw_format`).
pub(super) fn surface_config(
    surface: &wgpu::Surface<'_>,
    ctx: &GpuContext,
    size: PhysicalSize<u32>,
) -> anyhow::Result<wgpu::SurfaceConfiguration> {
    let caps = surface.get_capabilities(&ctx.adapter);
    let format = caps
        .formats
        .iter()
        .copied()
        .find(|f| f.is_srgb())
        .or(caps.formats.first().copied())
        .ok_or_else(|| anyhow!("the GPU adapter `{}` cannot present to this window", ctx.adapter_summary()))?;
    let linear = format.remove_srgb_suffix();
    let view_formats = if linear != format
        && ctx.adapter.get_downlevel_capabilities().flags.contains(wgpu::DownlevelFlags::SURFACE_VIEW_FORMATS)
    {
        vec![linear]
    } else {
        vec![]
    };
    Ok(wgpu::SurfaceConfiguration {
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        format,
        color_space: wgpu::SurfaceColorSpace::Auto,
        width: size.width.max(1),
        height: size.height.max(1),
        present_mode: wgpu::PresentMode::AutoVsync,
        desired_maximum_frame_latency: 2,
        alpha_mode: caps.alpha_modes.first().copied().unwrap_or(wgpu::CompositeAlphaMode::Auto),
        view_formats,
    })
}
