//! The window: a winit 0.30 [`ApplicationHandler`] that owns the GPU context, the simulation, the renderer,
//! the egui panels and the screenshot ring, and draws one frame per `RedrawRequested`:
//!
//! 1. `device.poll(Poll)` (non-blocking) so read-back callbacks run; take finished statistics and screenshots.
//! 2. Acquire the surface texture (a frame that cannot get one is skipped before egui runs, so no egui
//!    texture update is lost); run the egui pass; apply the actions it returned.
//! 3. One encoder: simulation frame (or single step) and its statistics reduction; the scene rendered into
//!    an offscreen target of the window's size; a blit of that target onto the surface with egui drawn on
//!    top; the screenshot copy if one was asked for; profiler resolve. Submit, present, request the next frame.
//!
//! Nothing in the frame waits on the GPU: statistics, timings and screenshots all arrive through rings a
//! frame or more later. Screenshots without the UI copy the offscreen target; "include UI" draws the blit
//! and egui a second time, that frame, into a texture of the surface's format and copies that (so it works
//! whether or not the surface allows `COPY_SRC`). The surface is configured with an sRGB format where one
//! is offered; when the adapter allows a second view format, the blit and egui draw through the format
//! without the sRGB suffix (egui blends in gamma space, as it expects; the blit encodes sRGB itself).
//!
//! Failures of user actions (loading a scene, rebuilding at another dx, bad parameters) and wgpu
//! validation errors go to the red banner and the log; the running scene stays. Only the absence of a
//! window or GPU ends the app, with the error returned from [`run`].

use crate::capture::Capture;
use crate::gpu::{self, GpuContext, Profiler};
use crate::render::{targets::Offscreen, OrbitCamera, ParticleSource, Renderer};
use crate::scene::{Scene, SceneSetup};
use crate::sim::Simulation;
use crate::terrain::Heightfield;
use crate::ui::{self, sim_panel::scene_at_dx, FrameInfo, UiAction, UiState};
use anyhow::{anyhow, Context as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use winit::application::ApplicationHandler;
use winit::dpi::{LogicalSize, PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowId};

/// Where screenshots are written, relative to the working directory.
pub const CAPTURE_DIR: &str = "captures";

/// Opens the window and runs until it is closed (or Esc). `scene_path`: a scene file; `None` opens the
/// built-in "valley". A scene that fails to load shows its error and falls back to the valley.
/// Errors: no display, no usable GPU adapter, or a surface the adapter cannot present to.
pub fn run(scene_path: Option<PathBuf>) -> anyhow::Result<()> {
    let event_loop = EventLoop::new().context("cannot open a window (is a display available? set DISPLAY or WAYLAND_DISPLAY)")?;
    let mut app = App { scene_path, running: None, fatal: None };
    event_loop.run_app(&mut app).context("window event loop failed")?;
    match app.fatal {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

struct App {
    scene_path: Option<PathBuf>,
    running: Option<Running>,
    /// Set when startup fails; returned by [`run`] after the loop exits.
    fatal: Option<anyhow::Error>,
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.running.is_some() {
            return;
        }
        match Running::new(event_loop, self.scene_path.as_deref()) {
            Ok(r) => {
                r.window.request_redraw();
                self.running = Some(r);
            }
            Err(e) => {
                self.fatal = Some(e);
                event_loop.exit();
            }
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        if let Some(r) = self.running.as_mut() {
            r.window_event(event_loop, event);
        }
    }

    fn exiting(&mut self, _event_loop: &ActiveEventLoop) {
        // Drop GPU objects (and the surface) before the window goes.
        self.running = None;
    }
}

/// The scene being shown and its simulation.
struct World {
    scene: Scene,
    /// The built scene (initial particles, terrain), kept for Reset.
    setup: SceneSetup,
    /// `None` when the scene could not be simulated (the banner says why); the terrain is still drawn.
    sim: Option<Simulation>,
}

/// Camera drag state.
#[derive(Default)]
struct Mouse {
    pos: Option<PhysicalPosition<f64>>,
    /// Drags that started outside egui.
    left: bool,
    right: bool,
    shift: bool,
}

/// Everything that exists while the window is open.
struct Running {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    /// Format of the views the blit and egui draw through: the surface's format without its sRGB
    /// suffix when the adapter allows such a view (egui blends best in gamma space; the blit then
    /// encodes sRGB itself), else the surface's own format.
    draw_format: wgpu::TextureFormat,
    ctx: GpuContext,
    profiler: Profiler,
    renderer: Renderer,
    offscreen: Offscreen,
    blit: Blit,
    /// Surface-format target for screenshots that include the UI; made on first use, resized as needed.
    ui_target: Option<(wgpu::Texture, wgpu::TextureView)>,
    capture: Capture,
    egui_ctx: egui::Context,
    egui_state: egui_winit::State,
    egui_renderer: egui_wgpu::Renderer,
    world: World,
    camera: OrbitCamera,
    ui: UiState,
    stats: Option<crate::sim::SimStats>,
    mouse: Mouse,
    step_requested: bool,
    screenshot_requested: Option<bool>,
    last_frame: Instant,
    /// The window has zero area (minimised): no rendering until it is resized.
    minimized: bool,
    /// wgpu validation errors reported by the device's error handler, shown in the banner.
    gpu_errors: Arc<Mutex<Vec<String>>>,
}

impl Running {
    fn new(event_loop: &ActiveEventLoop, scene_path: Option<&Path>) -> anyhow::Result<Self> {
        let attrs = Window::default_attributes().with_title("waterview").with_inner_size(LogicalSize::new(1280.0, 800.0));
        let window = Arc::new(event_loop.create_window(attrs).context("cannot create the window")?);
        let instance = GpuContext::create_instance(Some(Box::new(event_loop.owned_display_handle())));
        let surface = instance.create_surface(window.clone()).context("cannot create a drawing surface for the window")?;
        let ctx = GpuContext::new(instance, Some(&surface))?;

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

        let size = window.inner_size();
        let config = surface_config(&surface, &ctx, size)?;
        let draw_format = config.view_formats.first().copied().unwrap_or(config.format);
        if size.width > 0 && size.height > 0 {
            surface.configure(&ctx.device, &config);
        }
        log::info!("surface: {:?}, {}x{}, {:?}", config.format, config.width, config.height, config.present_mode);

        let mut errors = Vec::new();
        let world = startup_world(&ctx, scene_path, &mut errors)?;
        let on_cpu = ctx.is_cpu();
        let mut ui = UiState::new(&world.scene, world.sim.as_ref(), on_cpu);
        for e in errors {
            ui.push_error(e);
        }

        let profiler = Profiler::new(&ctx.device);
        let fb = (config.width.max(1), config.height.max(1));
        let offscreen = Offscreen::new(&ctx, fb);
        let renderer = Renderer::new(&ctx, offscreen.color.format(), &world.setup.terrain);
        let blit = Blit::new(&ctx, draw_format, &offscreen.color_view);
        let camera = OrbitCamera::from_desc(&world.scene.camera);

        let egui_ctx = egui::Context::default();
        let max_tex = ctx.device.limits().max_texture_dimension_2d as usize;
        let egui_state = egui_winit::State::new(
            egui_ctx.clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(window.scale_factor() as f32),
            window.theme(),
            Some(max_tex),
        );
        let egui_renderer = egui_wgpu::Renderer::new(&ctx.device, draw_format, egui_wgpu::RendererOptions::default());
        let capture = Capture::new(&ctx.device, CAPTURE_DIR);

        Ok(Self {
            window,
            surface,
            config,
            draw_format,
            ctx,
            profiler,
            renderer,
            offscreen,
            blit,
            ui_target: None,
            capture,
            egui_ctx,
            egui_state,
            egui_renderer,
            world,
            camera,
            ui,
            stats: None,
            mouse: Mouse::default(),
            step_requested: false,
            screenshot_requested: None,
            last_frame: Instant::now(),
            minimized: size.width == 0 || size.height == 0,
            gpu_errors,
        })
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, event: WindowEvent) {
        let response = self.egui_state.on_window_event(&self.window, &event);
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => self.resize(size),
            WindowEvent::RedrawRequested => {
                self.frame();
                if !self.minimized {
                    self.window.request_redraw();
                }
            }
            WindowEvent::ModifiersChanged(m) => self.mouse.shift = m.state().shift_key(),
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed && !event.repeat && !response.consumed => {
                self.key(event_loop, &event.logical_key);
            }
            WindowEvent::MouseInput { state, button, .. } => {
                let pressed = state == ElementState::Pressed;
                let start = pressed && !response.consumed && !self.egui_ctx.egui_wants_pointer_input();
                match button {
                    MouseButton::Left => self.mouse.left = start,
                    MouseButton::Right => self.mouse.right = start,
                    _ => {}
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                if let Some(prev) = self.mouse.pos {
                    let (dx, dy) = ((position.x - prev.x) as f32, (position.y - prev.y) as f32);
                    if self.mouse.right || (self.mouse.left && self.mouse.shift) {
                        self.camera.pan(dx, dy, self.config.height.max(1) as f32);
                    } else if self.mouse.left {
                        self.camera.rotate(dx, dy);
                    }
                }
                self.mouse.pos = Some(position);
            }
            WindowEvent::CursorLeft { .. } => self.mouse.pos = None,
            WindowEvent::MouseWheel { delta, .. } if !response.consumed && !self.egui_ctx.egui_wants_pointer_input() => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => (p.y / 40.0) as f32,
                };
                self.camera.zoom(steps);
            }
            _ => {}
        }
    }

    /// Keyboard shortcuts (by the character typed, so they follow the keyboard layout).
    fn key(&mut self, event_loop: &ActiveEventLoop, key: &Key) {
        match key {
            Key::Named(NamedKey::Escape) => event_loop.exit(),
            Key::Named(NamedKey::Space) => self.ui.sim.playing = !self.ui.sim.playing,
            Key::Named(NamedKey::F12) => self.screenshot_requested = Some(self.ui.render.capture_with_ui),
            Key::Named(NamedKey::F1) => self.ui.show_panels = !self.ui.show_panels,
            Key::Character(c) if c.eq_ignore_ascii_case("s") && !self.ui.sim.playing => self.step_requested = true,
            Key::Character(c) if c.eq_ignore_ascii_case("r") => self.apply(UiAction::Reset),
            _ => {}
        }
    }

    fn resize(&mut self, size: PhysicalSize<u32>) {
        if size.width == 0 || size.height == 0 {
            self.minimized = true;
            return;
        }
        let was_minimized = self.minimized;
        self.minimized = false;
        self.config.width = size.width;
        self.config.height = size.height;
        self.surface.configure(&self.ctx.device, &self.config);
        self.offscreen.resize(&self.ctx, (size.width, size.height));
        self.blit.set_source(&self.ctx, &self.offscreen.color_view);
        if was_minimized {
            self.window.request_redraw();
        }
    }

    /// Recreates the surface after `Lost`.
    fn recreate_surface(&mut self) {
        match self.ctx.instance.create_surface(self.window.clone()) {
            Ok(s) => {
                self.surface = s;
                self.surface.configure(&self.ctx.device, &self.config);
            }
            Err(e) => self.ui.push_error(format!("the window surface was lost and could not be recreated: {e}")),
        }
    }

    /// One frame; see the module docs for the order. Never waits on the GPU.
    fn frame(&mut self) {
        let now = Instant::now();
        self.ui.stats.push(now - self.last_frame);
        self.last_frame = now;
        if self.minimized {
            return;
        }
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        if let Some(sim) = self.world.sim.as_mut() {
            if let Some(s) = sim.poll_stats() {
                self.stats = Some(s.clone());
            }
        }
        while let Some(result) = self.capture.poll() {
            self.ui.render.capture_status = Some(match result {
                Ok(path) => {
                    log::info!("screenshot saved: {}", path.display());
                    Ok(format!("Saved {}", path.display()))
                }
                Err(e) => {
                    log::error!("screenshot failed: {e}");
                    Err(e)
                }
            });
        }
        let gpu_errors: Vec<String> = self.gpu_errors.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
        for e in gpu_errors {
            self.ui.push_error(e);
        }

        let (frame, suboptimal) = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t) => (t, false),
            wgpu::CurrentSurfaceTexture::Suboptimal(t) => (t, true),
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => return,
            wgpu::CurrentSurfaceTexture::Outdated => {
                let size = self.window.inner_size();
                self.resize(size);
                return;
            }
            wgpu::CurrentSurfaceTexture::Lost => {
                log::warn!("surface lost; recreating it");
                self.recreate_surface();
                return;
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                log::error!("surface texture acquisition failed validation; frame skipped");
                return;
            }
        };
        let size = (self.config.width, self.config.height);
        if frame.texture.width() != size.0 || frame.texture.height() != size.1 {
            // The surface and our targets disagree (resize in flight): skip and reconfigure.
            drop(frame);
            let size = self.window.inner_size();
            self.resize(size);
            return;
        }

        // egui pass, then apply what it asked for.
        let raw_input = self.egui_state.take_egui_input(&self.window);
        let mut actions = Vec::new();
        let output = {
            let info = FrameInfo {
                ctx: &self.ctx,
                scene: &self.world.scene,
                sim: self.world.sim.as_ref(),
                stats: self.stats.as_ref(),
                gpu_times: self.profiler.latest(),
            };
            let ui_state = &mut self.ui;
            self.egui_ctx.run_ui(raw_input, |ui| actions = ui::draw_ui(ui, ui_state, &info))
        };
        self.egui_state.handle_platform_output(&self.window, output.platform_output);
        let paint_jobs = self.egui_ctx.tessellate(output.shapes, output.pixels_per_point);
        for action in actions {
            self.apply(action);
        }

        let device = &self.ctx.device;
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("frame") });
        if let Some(sim) = self.world.sim.as_mut() {
            if self.ui.sim.playing {
                sim.encode_frame(&mut enc, &self.profiler);
            } else if self.step_requested {
                sim.encode_step(&mut enc, &self.profiler);
            }
            sim.encode_stats(&mut enc, &self.profiler);
        }
        self.step_requested = false;

        let particles = self.world.sim.as_ref().map(|s| ParticleSource {
            positions: s.positions(),
            velocities: s.velocities(),
            count: s.particle_count(),
        });
        self.renderer.encode(
            &self.ctx,
            &mut enc,
            &self.profiler,
            &self.offscreen.color_view,
            &self.offscreen.depth_view,
            size,
            &self.camera,
            particles,
            &self.ui.render.settings_for(self.world.sim.as_ref().map_or(0.05, |s| s.particle_radius())),
        );

        let screen = egui_wgpu::ScreenDescriptor { size_in_pixels: [size.0, size.1], pixels_per_point: output.pixels_per_point };
        for (id, delta) in &output.textures_delta.set {
            for d in delta {
                self.egui_renderer.update_texture(device, &self.ctx.queue, *id, d);
            }
        }
        let callback_buffers = self.egui_renderer.update_buffers(device, &self.ctx.queue, &mut enc, &paint_jobs, &screen);

        if let Some(with_ui) = self.screenshot_requested.take() {
            let result = if with_ui {
                let (texture, view) = ui_target(&mut self.ui_target, &self.ctx, self.config.format, self.draw_format, size);
                composite(&mut enc, &self.profiler, view, &self.blit, &self.egui_renderer, &paint_jobs, &screen, "composite (capture)");
                self.capture.request(&mut enc, texture, size)
            } else {
                self.capture.request(&mut enc, &self.offscreen.color, size)
            };
            self.ui.render.capture_status = Some(match result {
                Ok(()) => Ok("Saving screenshot…".into()),
                Err(e) => Err(e),
            });
        }

        let surface_view =
            frame.texture.create_view(&wgpu::TextureViewDescriptor { format: Some(self.draw_format), ..Default::default() });
        composite(&mut enc, &self.profiler, &surface_view, &self.blit, &self.egui_renderer, &paint_jobs, &screen, "composite");

        self.profiler.resolve(&mut enc);
        self.ctx.queue.submit(callback_buffers.into_iter().chain(std::iter::once(enc.finish())));
        if let Some(sim) = self.world.sim.as_mut() {
            sim.after_submit();
        }
        self.capture.after_submit();
        self.profiler.end_frame(&self.ctx.queue);
        self.window.pre_present_notify();
        self.ctx.queue.present(frame);
        for id in &output.textures_delta.free {
            self.egui_renderer.free_texture(id);
        }
        if suboptimal {
            let size = self.window.inner_size();
            self.resize(size);
        }
    }

    /// Applies one UI action; failures go to the banner and leave the current scene running.
    fn apply(&mut self, action: UiAction) {
        match action {
            UiAction::Step => self.step_requested = true,
            UiAction::Screenshot { with_ui } => self.screenshot_requested = Some(with_ui),
            UiAction::ResetCamera => self.camera = OrbitCamera::from_desc(&self.world.scene.camera),
            UiAction::ApplyParams => {
                let Some(sim) = self.world.sim.as_mut() else { return };
                let mut params = self.ui.sim.params.clone();
                let current = sim.params();
                // Spacing and the quantities tied to the buffers change only through a rebuild.
                params.dx = current.dx;
                params.h_over_dx = current.h_over_dx;
                params.rho0 = current.rho0;
                self.ui.sim.param_error = sim.set_params(&self.ctx, &params).err().map(|e| e.to_string());
            }
            UiAction::Reset => {
                let Some(sim) = self.world.sim.as_ref() else {
                    // Nothing ran: try building the scene again (e.g. after a parameter fix).
                    let scene = self.world.scene.clone();
                    self.replace_world(scene, "reset", false);
                    return;
                };
                let mut params = self.ui.sim.params.clone();
                params.dx = sim.params().dx;
                params.h_over_dx = sim.params().h_over_dx;
                params.rho0 = sim.params().rho0;
                match Simulation::new(&self.ctx, &self.world.scene.domain, &self.world.setup, &params) {
                    Ok(sim) => {
                        self.world.sim = Some(sim);
                        self.stats = None;
                    }
                    Err(e) => self.ui.push_error(format!("reset failed: {e}")),
                }
            }
            UiAction::Rebuild => {
                let dx = self.ui.sim.dx;
                let mut scene = scene_at_dx(&self.world.scene, dx);
                // Keep the solver parameters edited so far.
                let keep = self.ui.sim.params.clone();
                scene.solver = crate::sim::SimParams { dx: scene.solver.dx, ..keep };
                self.replace_world(scene, &format!("rebuild at dx = {dx} m"), false);
            }
            UiAction::LoadBuiltin(name) => match Scene::builtin(&name) {
                Some(scene) => self.replace_world(scene, &format!("built-in scene `{name}`"), true),
                None => self.ui.push_error(format!("there is no built-in scene `{name}`")),
            },
            UiAction::LoadScene(path) => match Scene::load(&path) {
                Ok(scene) => self.replace_world(scene, &path.display().to_string(), true),
                Err(e) => self.ui.push_error(e.to_string()),
            },
        }
    }

    /// Builds `scene` and its simulation; on success it replaces the current world (and, when
    /// `new_scene`, the camera and the edited parameters); on failure the banner shows why and the
    /// current world stays.
    fn replace_world(&mut self, scene: Scene, what: &str, new_scene: bool) {
        let world = match build_world(&self.ctx, scene) {
            Ok(w) => w,
            Err(e) => {
                self.ui.push_error(format!("{what}: {e}"));
                return;
            }
        };
        log::info!("{what}: {} particles", world.sim.as_ref().map_or(0, |s| s.particle_count()));
        self.renderer.set_terrain(&self.ctx, &world.setup.terrain);
        if new_scene {
            self.camera = OrbitCamera::from_desc(&world.scene.camera);
            self.ui.sim.dx_anchor = world.scene.effective_dx(self.ctx.is_cpu());
        }
        if let Some(sim) = world.sim.as_ref() {
            self.ui.sim.sync_from(sim);
        }
        self.world = world;
        self.stats = None;
    }
}

/// The solver parameters a scene runs with on this adapter: its own, at its effective dx.
fn scene_params(scene: &Scene, on_cpu: bool) -> crate::sim::SimParams {
    crate::sim::SimParams { dx: scene.effective_dx(on_cpu), ..scene.solver.clone() }
}

/// Builds a scene and its simulation. Errors as text, ready for the banner.
fn build_world(ctx: &GpuContext, scene: Scene) -> Result<World, String> {
    let on_cpu = ctx.is_cpu();
    let setup = scene.build(on_cpu).map_err(|e| e.to_string())?;
    let params = scene_params(&scene, on_cpu);
    let sim = Simulation::new(ctx, &scene.domain, &setup, &params).map_err(|e| e.to_string())?;
    Ok(World { scene, setup, sim: Some(sim) })
}

/// The first world: the given scene file, else (or if it fails) the built-in valley; if even that cannot be
/// simulated, the valley's terrain without water (or a flat floor), with the reasons in `errors`.
fn startup_world(ctx: &GpuContext, path: Option<&Path>, errors: &mut Vec<String>) -> anyhow::Result<World> {
    if let Some(path) = path {
        match Scene::load(path).map_err(|e| e.to_string()).and_then(|s| build_world(ctx, s)) {
            Ok(w) => return Ok(w),
            Err(e) => errors.push(format!("{e} (showing the built-in valley instead)")),
        }
    }
    let valley = Scene::builtin("valley").ok_or_else(|| anyhow!("the built-in scene `valley` is missing"))?;
    match build_world(ctx, valley.clone()) {
        Ok(w) => Ok(w),
        Err(e) => {
            errors.push(format!("built-in scene `valley`: {e}"));
            let setup = valley.build(ctx.is_cpu()).unwrap_or_else(|_| {
                let d = valley.domain;
                SceneSetup {
                    positions: Vec::new(),
                    velocities: Vec::new(),
                    terrain: Heightfield::flat(
                        glam::Vec2::new(d.min[0], d.min[2]),
                        glam::Vec2::new(d.max[0] - d.min[0], d.max[2] - d.min[2]),
                        d.min[1],
                    ),
                }
            });
            Ok(World { scene: valley, setup, sim: None })
        }
    }
}

/// Surface configuration: an sRGB format if offered, Fifo (vsync), the window's size; when the adapter
/// allows it, the format without the sRGB suffix as the one extra view format (see `draw_format`).
fn surface_config(surface: &wgpu::Surface<'_>, ctx: &GpuContext, size: PhysicalSize<u32>) -> anyhow::Result<wgpu::SurfaceConfiguration> {
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

/// The include-UI capture target (surface format, `RENDER_ATTACHMENT | COPY_SRC`, viewed as
/// `draw_format`), (re)made at `size`.
fn ui_target<'a>(
    slot: &'a mut Option<(wgpu::Texture, wgpu::TextureView)>,
    ctx: &GpuContext,
    format: wgpu::TextureFormat,
    draw_format: wgpu::TextureFormat,
    size: (u32, u32),
) -> &'a (wgpu::Texture, wgpu::TextureView) {
    let stale = slot.as_ref().is_none_or(|(t, _)| (t.width(), t.height()) != size || t.format() != format);
    if stale {
        let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("capture with UI"),
            size: wgpu::Extent3d { width: size.0, height: size.1, depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[draw_format],
        });
        let view = texture.create_view(&wgpu::TextureViewDescriptor { format: Some(draw_format), ..Default::default() });
        return slot.insert((texture, view));
    }
    match slot {
        Some(t) => t,
        None => unreachable!("`stale` is true when the slot is empty"),
    }
}

/// One render pass into `target`: the offscreen scene blitted, egui drawn over it.
#[allow(clippy::too_many_arguments)]
fn composite(
    enc: &mut wgpu::CommandEncoder,
    profiler: &Profiler,
    target: &wgpu::TextureView,
    blit: &Blit,
    egui_renderer: &egui_wgpu::Renderer,
    paint_jobs: &[egui::ClippedPrimitive],
    screen: &egui_wgpu::ScreenDescriptor,
    label: &str,
) {
    let mut pass = profiler.render_pass(
        enc,
        label,
        wgpu::RenderPassDescriptor {
            label: Some(label),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations { load: wgpu::LoadOp::Clear(wgpu::Color::BLACK), store: wgpu::StoreOp::Store },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        },
    );
    blit.draw(&mut pass);
    egui_renderer.render(&mut pass, paint_jobs, screen);
}

/// Full-screen-triangle copy of the offscreen scene onto a target of the surface's format
/// (`shaders/app/blit.wgsl`).
struct Blit {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    bind_group: wgpu::BindGroup,
}

impl Blit {
    fn new(ctx: &GpuContext, target_format: wgpu::TextureFormat, source: &wgpu::TextureView) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "app/blit.wgsl");
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("blit"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Texture {
                    sample_type: wgpu::TextureSampleType::Float { filterable: false },
                    view_dimension: wgpu::TextureViewDimension::D2,
                    multisampled: false,
                },
                count: None,
            }],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("blit"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        // An sRGB target encodes on store; a gamma-space one needs the shader to encode.
        let fs = if target_format.is_srgb() { "fs_main" } else { "fs_main_gamma" };
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("blit"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState { module: &module, entry_point: Some("vs_main"), compilation_options: Default::default(), buffers: &[] },
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some(fs),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState { format: target_format, blend: None, write_mask: wgpu::ColorWrites::ALL })],
            }),
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            multiview_mask: None,
            cache: None,
        });
        let bind_group = Self::bind(ctx, &layout, source);
        Self { pipeline, layout, bind_group }
    }

    fn bind(ctx: &GpuContext, layout: &wgpu::BindGroupLayout, source: &wgpu::TextureView) -> wgpu::BindGroup {
        ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("blit source"),
            layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::TextureView(source) }],
        })
    }

    /// Points the blit at a new source view (after the offscreen target was resized).
    fn set_source(&mut self, ctx: &GpuContext, source: &wgpu::TextureView) {
        self.bind_group = Self::bind(ctx, &self.layout, source);
    }

    fn draw(&self, pass: &mut wgpu::RenderPass<'_>) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.draw(0..3, 0..1);
    }
}
