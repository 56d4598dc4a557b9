//! The window: a winit 0.30 [`ApplicationHandler`] that owns the GPU context, the simulation, the renderer,
//! the egui panels, the screenshot ring and the video recorder, and draws one frame per `RedrawRequested`:
//!
//! 1. `device.poll(Poll)` (non-blocking) so read-back callbacks run; take finished statistics, screenshots
//!    and video frames (handed to the encoder thread); finish a recording whose frames are all out.
//! 2. Acquire the surface texture (a frame that cannot get one is skipped before egui runs, so no egui
//!    texture update is lost); run the egui pass; apply the actions it returned.
//! 3. A screenshot at k times the window size renders the scene into a k-times target in a submission of
//!    its own (the camera uniform is written per submission).
//! 4. One encoder: simulation frame (or single step) and its statistics reduction; the scene rendered into
//!    an offscreen target of the window's size (offline capture: into the capture's target instead, then
//!    one simulation frame); the video frame's copy; a blit of that target onto the surface with egui drawn
//!    on top; the screenshot copy if one was asked for; profiler resolve. Submit, present, request the next
//!    frame.
//!
//! Nothing in the frame waits on the GPU: statistics, timings, screenshots and video frames all arrive
//! through rings a frame or more later, and video is encoded on a worker thread ([`crate::capture`]).
//! Screenshots without the UI copy the offscreen target; "include UI" draws the blit and egui a second
//! time, that frame, into a texture of the surface's format and copies that (so it works whether or not
//! the surface allows `COPY_SRC`). The surface is configured with an sRGB format where one is offered; when
//! the adapter allows a second view format, the blit and egui draw through the format without the sRGB
//! suffix (egui blends in gamma space, as it expects; the blit encodes sRGB itself).
//!
//! Live recording copies the window's scene target (no UI) at most `fps` times per second, time-stamped
//! by the wall clock; offline capture sets the simulation's `frame_dt` to 1/fps and renders every frame at
//! the chosen size, waiting (without blocking: it just renders no new frame) while the ring or the
//! encoder is busy; the window then shows the capture's frames scaled into the central area.
//!
//! Failures of user actions (loading a scene, rebuilding at another dx, bad parameters, a file that cannot
//! be written) and wgpu validation errors go to the red banner and the log; the running scene stays. A
//! lost GPU device is recreated with the scene rebuilt from its file (best effort). Only the absence of a
//! window or GPU ends the app, with the error returned from [`run`]. Window size, the last scene and the
//! panels are remembered between runs ([`crate::settings`]).

use crate::capture::{offline::format_for, Capture, VideoFormat, VideoRecorder, VideoWriter};
use crate::gpu::{self, GpuContext, Profiler};
use crate::render::{targets::Offscreen, OrbitCamera, ParticleSource, Renderer};
use crate::scene::{Scene, SceneSetup, TerrainDesc};
use crate::settings::AppSettings;
use crate::sim::Simulation;
use crate::terrain::Heightfield;
use crate::ui::capture_panel::{CaptureMode, CaptureStatus};
use crate::ui::{self, sim_panel::scene_at_dx, FrameInfo, UiAction, UiState};
use anyhow::{anyhow, Context as _};
use glam::Vec3;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use winit::application::ApplicationHandler;
use winit::dpi::{LogicalSize, PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{Key, KeyCode, NamedKey, PhysicalKey};
use winit::window::{Window, WindowId};

/// Where screenshots and videos are written, relative to the working directory.
pub const CAPTURE_DIR: &str = "captures";

/// The window icon (also installed with the desktop entry).
const ICON_PNG: &[u8] = include_bytes!("../assets/icon.png");

/// Opens the window and runs until it is closed (or Esc). `scene_path`: a scene file; `None` opens the last
/// scene file of the previous run if it still exists, else the built-in "valley". A scene that fails to
/// load shows its error and falls back to the valley.
/// Errors: no display, no usable GPU adapter, or a surface the adapter cannot present to.
pub fn run(scene_path: Option<PathBuf>) -> anyhow::Result<()> {
    let event_loop = EventLoop::new().context("cannot open a window (is a display available? set DISPLAY or WAYLAND_DISPLAY)")?;
    let settings_path = crate::settings::default_path();
    let settings = settings_path.as_deref().map(AppSettings::load).unwrap_or_default();
    let scene_path = scene_path.or_else(|| settings.last_scene.clone().filter(|p| p.is_file()));
    let mut app = App { scene_path, settings, settings_path, running: None, fatal: None };
    event_loop.run_app(&mut app).context("window event loop failed")?;
    match app.fatal {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

struct App {
    scene_path: Option<PathBuf>,
    settings: AppSettings,
    settings_path: Option<PathBuf>,
    running: Option<Running>,
    /// Set when startup fails; returned by [`run`] after the loop exits.
    fatal: Option<anyhow::Error>,
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.running.is_some() {
            return;
        }
        match Running::new(event_loop, self.scene_path.as_deref(), &self.settings) {
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
        if let Some(r) = self.running.as_mut() {
            r.shutdown();
            r.store_settings(&mut self.settings);
        }
        if let Some(path) = &self.settings_path {
            match self.settings.save(path) {
                Ok(()) => log::info!("settings saved to {}", path.display()),
                Err(e) => log::warn!("settings not saved: {e}"),
            }
        }
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

/// Camera drag state and held keys.
#[derive(Default)]
struct Mouse {
    pos: Option<PhysicalPosition<f64>>,
    /// Drags that started outside egui.
    left: bool,
    right: bool,
    shift: bool,
    ctrl: bool,
    /// Keys held down (for fly mode), by position on the keyboard.
    keys: HashSet<KeyCode>,
}

/// A recording in progress.
struct Recording {
    rec: VideoRecorder,
    /// `None`: live; else the offline capture's own state.
    offline: Option<Offline>,
    started: Instant,
    /// Live: when the last frame was recorded.
    last: Option<Instant>,
    fps: f32,
    /// No more frames are recorded; the file is completed once the frames in flight are out.
    stopping: bool,
    /// Message to show when the file is complete (e.g. why it stopped).
    note: Option<String>,
}

/// Offline capture: fixed step, its own target, the window shows its frames.
struct Offline {
    target: Offscreen,
    /// The target registered as an egui texture (the preview).
    texture: egui::TextureId,
    frame: u64,
    total: u64,
    /// Parameters and play state to restore afterwards.
    saved_frame_dt: f32,
    was_playing: bool,
}

/// A native file dialog running on its own thread.
struct Dialog {
    save: bool,
    rx: mpsc::Receiver<Option<PathBuf>>,
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
    recording: Option<Recording>,
    /// A finished recording whose worker is completing the file.
    finishing: Option<(VideoWriter, Option<String>)>,
    capture_status: CaptureStatus,
    egui_ctx: egui::Context,
    egui_state: egui_winit::State,
    egui_renderer: egui_wgpu::Renderer,
    world: World,
    /// The scene file shown (None for built-ins), remembered between runs.
    scene_file: Option<PathBuf>,
    camera: OrbitCamera,
    /// Fly mode: WASD moves the camera, dragging looks around.
    fly: bool,
    /// Fly speed, m/s (mouse wheel changes it in fly mode).
    fly_speed: f32,
    ui: UiState,
    stats: Option<crate::sim::SimStats>,
    mouse: Mouse,
    step_requested: bool,
    screenshot_requested: Option<bool>,
    dialog: Option<Dialog>,
    last_frame: Instant,
    /// Frames and start of the current frame-rate log period.
    fps_log: (u32, Instant),
    /// The window has zero area (minimised): no rendering until it is resized.
    minimized: bool,
    /// wgpu validation errors reported by the device's error handler, shown in the banner.
    gpu_errors: Arc<Mutex<Vec<String>>>,
    /// Set by the device-lost callback; the next frame recreates the device.
    device_lost: Arc<AtomicBool>,
    /// Set before the app drops its device on purpose, so that is not taken for a loss.
    closing: Arc<AtomicBool>,
    /// `WATERVIEW_TEST_DEVICE_LOSS=N`: destroy the device after N frames (exercises the recovery path).
    test_device_loss: Option<u64>,
    frames: u64,
}

/// The device, surface configuration and every GPU object built on them (remade after a device loss).
struct GpuParts {
    ctx: GpuContext,
    config: wgpu::SurfaceConfiguration,
    draw_format: wgpu::TextureFormat,
    profiler: Profiler,
    offscreen: Offscreen,
    renderer: Renderer,
    blit: Blit,
    egui_renderer: egui_wgpu::Renderer,
    capture: Capture,
    gpu_errors: Arc<Mutex<Vec<String>>>,
    device_lost: Arc<AtomicBool>,
}

impl GpuParts {
    fn new(
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
        Ok(Self { ctx, config, draw_format, profiler, offscreen, renderer, blit, egui_renderer, capture, gpu_errors, device_lost })
    }
}

impl Running {
    fn new(event_loop: &ActiveEventLoop, scene_path: Option<&Path>, settings: &AppSettings) -> anyhow::Result<Self> {
        let mut attrs = Window::default_attributes().with_title("waterview").with_window_icon(window_icon());
        attrs = match settings.window_size {
            Some([w, h]) if w >= 64 && h >= 64 && w <= 16384 && h <= 16384 => attrs.with_inner_size(PhysicalSize::new(w, h)),
            _ => attrs.with_inner_size(LogicalSize::new(1280.0, 800.0)),
        };
        let window = Arc::new(event_loop.create_window(attrs).context("cannot create the window")?);
        let instance = GpuContext::create_instance(Some(Box::new(event_loop.owned_display_handle())));
        let surface = instance.create_surface(window.clone()).context("cannot create a drawing surface for the window")?;
        let size = window.inner_size();
        let closing = Arc::new(AtomicBool::new(false));
        // The terrain is uploaded again once the world is built (the context is needed to build it).
        let flat = Heightfield::flat(glam::Vec2::ZERO, glam::Vec2::ONE, 0.0);
        let parts = GpuParts::new(instance, &surface, size, &flat, &closing)?;

        let mut errors = Vec::new();
        let world = startup_world(&parts.ctx, scene_path, &mut errors)?;
        let scene_file = scene_path.filter(|_| errors.is_empty()).map(Path::to_path_buf);
        let mut renderer = parts.renderer;
        renderer.set_terrain(&parts.ctx, &world.setup.terrain);
        let on_cpu = parts.ctx.is_cpu();
        let mut ui = UiState::new(&world.scene, world.sim.as_ref(), on_cpu);
        for e in errors {
            ui.push_error(e);
        }
        ui.show_panels = settings.show_panels;
        ui.panel_width = settings.panel_width.clamp(150.0, 1000.0);
        ui.capture = settings.capture.clone();
        ui.render.capture_with_ui = settings.capture_with_ui;
        let camera = OrbitCamera::from_desc(&world.scene.camera);
        let fly_speed = domain_size(&world.scene) * 0.1;

        let egui_ctx = egui::Context::default();
        let egui_state = new_egui_state(&egui_ctx, &window, &parts.ctx);
        let test_device_loss = std::env::var("WATERVIEW_TEST_DEVICE_LOSS").ok().and_then(|v| v.parse().ok());

        Ok(Self {
            window,
            surface,
            config: parts.config,
            draw_format: parts.draw_format,
            ctx: parts.ctx,
            profiler: parts.profiler,
            renderer,
            offscreen: parts.offscreen,
            blit: parts.blit,
            ui_target: None,
            capture: parts.capture,
            recording: None,
            finishing: None,
            capture_status: CaptureStatus::default(),
            egui_ctx,
            egui_state,
            egui_renderer: parts.egui_renderer,
            world,
            scene_file,
            camera,
            fly: false,
            fly_speed,
            ui,
            stats: None,
            mouse: Mouse::default(),
            step_requested: false,
            screenshot_requested: None,
            dialog: None,
            last_frame: Instant::now(),
            fps_log: (0, Instant::now()),
            minimized: size.width == 0 || size.height == 0,
            gpu_errors: parts.gpu_errors,
            device_lost: parts.device_lost,
            closing,
            test_device_loss,
            frames: 0,
        })
    }

    /// Writes what is remembered between runs into `s`.
    fn store_settings(&self, s: &mut AppSettings) {
        if !self.minimized {
            s.window_size = Some([self.config.width, self.config.height]);
        }
        s.last_scene = self.scene_file.clone();
        s.show_panels = self.ui.show_panels;
        s.panel_width = self.ui.panel_width;
        s.capture = self.ui.capture.clone();
        s.capture.status = None;
        s.capture_with_ui = self.ui.render.capture_with_ui;
    }

    /// Before the window closes: a recording in progress is completed (waiting for the encoder), so
    /// quitting never loses a video; the device is then dropped without counting as lost.
    fn shutdown(&mut self) {
        if let Some(r) = self.recording.take() {
            let _ = self.ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: Some(Duration::from_secs(5)) });
            let result = if r.offline.is_some() {
                r.rec.cancel();
                Err("offline capture cancelled by quitting".to_string())
            } else {
                r.rec.finish_blocking(&self.ctx.device).map(|s| s.path.display().to_string())
            };
            log::info!("recording at exit: {result:?}");
        }
        if let Some((w, _)) = self.finishing.take() {
            log::info!("recording at exit: {:?}", w.finish().map(|s| s.path));
        }
        self.closing.store(true, Ordering::Release);
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
            WindowEvent::Focused(false) => self.mouse.keys.clear(),
            WindowEvent::DroppedFile(path) => self.dropped_file(path),
            WindowEvent::ModifiersChanged(m) => {
                self.mouse.shift = m.state().shift_key();
                self.mouse.ctrl = m.state().control_key();
            }
            WindowEvent::KeyboardInput { event, .. } => {
                if let PhysicalKey::Code(code) = event.physical_key {
                    if event.state == ElementState::Released {
                        self.mouse.keys.remove(&code);
                    } else if !response.consumed && !self.egui_ctx.egui_wants_keyboard_input() {
                        self.mouse.keys.insert(code);
                    }
                }
                if event.state == ElementState::Pressed && !event.repeat && !response.consumed && !self.egui_ctx.egui_wants_keyboard_input() {
                    self.key(event_loop, &event.logical_key);
                }
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
                    } else if self.mouse.left && self.fly {
                        fly_look(&mut self.camera, dx, dy);
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
                if self.fly {
                    self.fly_speed = (self.fly_speed * 1.2f32.powf(steps)).clamp(1e-3, 1e5);
                } else {
                    self.camera.zoom(steps);
                }
            }
            _ => {}
        }
    }

    /// Keyboard shortcuts (by the character typed, so they follow the keyboard layout); see `ui/help.rs`.
    fn key(&mut self, event_loop: &ActiveEventLoop, key: &Key) {
        match key {
            Key::Named(NamedKey::Escape) if self.ui.show_help => self.ui.show_help = false,
            Key::Named(NamedKey::Escape) => event_loop.exit(),
            Key::Named(NamedKey::Space) => self.ui.sim.playing = !self.ui.sim.playing,
            Key::Named(NamedKey::F12) => self.screenshot_requested = Some(self.ui.render.capture_with_ui),
            Key::Named(NamedKey::F9) => self.apply(UiAction::ToggleRecording),
            Key::Named(NamedKey::F1) => self.ui.show_help = !self.ui.show_help,
            Key::Named(NamedKey::F2) => self.ui.show_panels = !self.ui.show_panels,
            Key::Character(c) if c.as_str() == "?" => self.ui.show_help = !self.ui.show_help,
            Key::Character(c) if self.mouse.ctrl && c.eq_ignore_ascii_case("o") => self.apply(UiAction::OpenSceneDialog),
            Key::Character(c) if self.mouse.ctrl && c.eq_ignore_ascii_case("s") => self.apply(UiAction::SaveSceneDialog),
            Key::Character(_) if self.mouse.ctrl => {}
            Key::Character(c) if c.eq_ignore_ascii_case("v") => {
                self.fly = !self.fly;
                log::info!("fly mode {}", if self.fly { "on" } else { "off" });
            }
            Key::Character(c) if c.eq_ignore_ascii_case("f") => self.fit_camera(),
            Key::Character(c) if c.eq_ignore_ascii_case("s") && !self.ui.sim.playing && !self.fly => self.step_requested = true,
            Key::Character(c) if c.eq_ignore_ascii_case("r") => self.apply(UiAction::Reset),
            _ => {}
        }
    }

    /// F: the camera looks at the fluid's bounding box (latest statistics) from its current direction,
    /// at the distance where the box's bounding sphere fills the view.
    fn fit_camera(&mut self) {
        let Some(s) = self.stats.as_ref() else {
            self.ui.push_error("cannot frame the fluid yet: no statistics have come back from the GPU");
            return;
        };
        let (min, max) = (Vec3::from(s.bbox_min), Vec3::from(s.bbox_max));
        if !(min.is_finite() && max.is_finite()) || min.cmpgt(max).any() {
            self.ui.push_error("cannot frame the fluid: its bounding box is empty");
            return;
        }
        let radius = (0.5 * (max - min).length()).max(1e-2);
        let aspect = self.config.width.max(1) as f32 / self.config.height.max(1) as f32;
        let half_fov = 0.5 * self.camera.fov_y.min(2.0 * ((0.5 * self.camera.fov_y).tan() * aspect).atan());
        // The view direction (yaw, pitch) is kept.
        self.camera.target = 0.5 * (min + max);
        self.camera.distance = radius / half_fov.sin() * 1.05;
        self.camera.zoom(0.0);
    }

    /// Fly mode: moves the camera by the held keys for `dt` seconds.
    fn fly_move(&mut self, dt: f32) {
        if !self.fly || self.mouse.keys.is_empty() {
            return;
        }
        let k = &self.mouse.keys;
        let axis = |pos: KeyCode, neg: KeyCode| (k.contains(&pos) as i32 - k.contains(&neg) as i32) as f32;
        let forward = (self.camera.target - self.camera.eye()).normalize_or(Vec3::NEG_Z);
        let right = forward.cross(Vec3::Y).normalize_or(Vec3::X);
        let dir = forward * axis(KeyCode::KeyW, KeyCode::KeyS) + right * axis(KeyCode::KeyD, KeyCode::KeyA) + Vec3::Y * axis(KeyCode::KeyE, KeyCode::KeyQ);
        let fast = if self.mouse.shift { 4.0 } else { 1.0 };
        self.camera.target += dir.normalize_or_zero() * self.fly_speed * fast * dt.min(0.25);
    }

    fn resize(&mut self, size: PhysicalSize<u32>) {
        if size.width == 0 || size.height == 0 {
            self.minimized = true;
            return;
        }
        let was_minimized = self.minimized;
        self.minimized = false;
        if (size.width, size.height) != self.offscreen.size {
            if let Some(r) = self.recording.as_mut().filter(|r| r.offline.is_none() && !r.stopping) {
                r.stopping = true;
                r.note = Some("recording stopped: the window was resized".into());
            }
        }
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

    /// After a device loss: a new device on the same instance and surface, every GPU object remade, the
    /// scene rebuilt from its description (the simulation restarts from the scene's initial water), the
    /// camera and the panels kept. A recording in progress is lost. Best effort: a failure is shown and
    /// retried on a later frame.
    fn recover_device(&mut self) {
        log::warn!("recreating the GPU device after a loss");
        self.recording = None;
        self.finishing = None;
        let size = PhysicalSize::new(self.config.width, self.config.height);
        let parts = match GpuParts::new(self.ctx.instance.clone(), &self.surface, size, &self.world.setup.terrain, &self.closing) {
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
        self.blit = parts.blit;
        self.egui_renderer = parts.egui_renderer;
        self.capture = parts.capture;
        self.gpu_errors = parts.gpu_errors;
        self.device_lost = parts.device_lost;
        self.ui_target = None;
        // A fresh egui context re-sends its font atlas to the new renderer.
        self.egui_ctx = egui::Context::default();
        self.egui_state = new_egui_state(&self.egui_ctx, &self.window, &self.ctx);
        let scene = self.world.scene.clone();
        let camera = self.camera.clone();
        if !self.replace_world(scene, "scene restored after a GPU device loss", false) {
            // The old simulation belongs to the lost device.
            self.world.sim = None;
        }
        self.camera = camera;
        self.ui.push_error("the GPU device was lost; it was recreated and the scene restarted");
    }

    /// A file dropped on the window: a `.ron` scene opens, a `.png` becomes the terrain.
    fn dropped_file(&mut self, path: PathBuf) {
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("ron") => self.apply(UiAction::LoadScene(path)),
            Some("png") => self.apply(UiAction::ReplaceHeightmap(path)),
            _ => self.ui.push_error(format!("cannot open {}: drop a scene (.ron) or a 16-bit heightmap (.png)", path.display())),
        }
    }

    /// Takes finished recordings, screenshots and dialogs. Never blocks.
    fn poll_background(&mut self) {
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
        if let Some(r) = self.recording.as_mut() {
            if let Some(e) = r.rec.poll() {
                self.ui.push_error(format!("recording failed: {e}"));
                self.ui.capture.status = Some(Err(e));
                if let Some(r) = self.recording.take() {
                    self.end_offline(r.offline);
                }
            }
        }
        let flushed = self.recording.as_ref().is_some_and(|r| r.stopping && r.rec.drained());
        if flushed {
            if let Some(r) = self.recording.take() {
                let note = r.note.clone();
                self.end_offline(r.offline);
                self.finishing = Some((r.rec.into_finishing(), note));
            }
        }
        if self.finishing.as_ref().is_some_and(|(w, _)| w.is_done()) {
            if let Some((w, note)) = self.finishing.take() {
                let status = match w.finish() {
                    Ok(s) => {
                        log::info!("video saved: {} ({} frames, {:.2} s)", s.path.display(), s.frames, s.duration_s);
                        Ok(format!(
                            "{}Saved {} ({} frames, {:.1} s, {:.1} MB)",
                            note.map(|n| n + ". ").unwrap_or_default(),
                            s.path.display(),
                            s.frames,
                            s.duration_s,
                            s.bytes as f64 / 1e6
                        ))
                    }
                    Err(e) => {
                        self.ui.push_error(format!("recording failed: {e}"));
                        Err(e)
                    }
                };
                self.ui.capture.status = Some(status);
            }
        }
        if let Some(d) = self.dialog.as_ref() {
            match d.rx.try_recv() {
                Ok(Some(path)) => {
                    let save = d.save;
                    self.dialog = None;
                    self.ui.scene.dialog_open = false;
                    if save {
                        self.apply(UiAction::SaveScene(path));
                    } else {
                        self.dropped_file(path);
                    }
                }
                Ok(None) | Err(mpsc::TryRecvError::Disconnected) => {
                    self.dialog = None;
                    self.ui.scene.dialog_open = false;
                    self.ui.push_error(
                        "no file chosen (if no dialog appeared, this desktop offers none: type the path in the Scene panel or drop the file on the window)",
                    );
                }
                Err(mpsc::TryRecvError::Empty) => {}
            }
        }
    }

    /// Restores what an offline capture changed (frame_dt, play state, the preview texture).
    fn end_offline(&mut self, offline: Option<Offline>) {
        let Some(o) = offline else { return };
        self.egui_renderer.free_texture(&o.texture);
        self.ui.sim.params.frame_dt = o.saved_frame_dt;
        self.ui.sim.playing = o.was_playing;
        self.apply(UiAction::ApplyParams);
    }

    /// The status the capture panel shows.
    fn update_capture_status(&mut self) {
        let mut s = CaptureStatus { finishing: self.finishing.is_some(), ..Default::default() };
        if let Some(r) = &self.recording {
            s.recording = !r.stopping;
            s.finishing |= r.stopping;
            s.offline = r.offline.is_some();
            s.path = r.rec.path().display().to_string();
            s.written = r.rec.written();
            s.recorded = r.rec.recorded;
            s.dropped = r.rec.dropped;
            s.video_s = match &r.offline {
                Some(o) => o.frame as f64 / r.fps as f64,
                None => r.started.elapsed().as_secs_f64(),
            };
            if let Some(o) = &r.offline {
                s.total = o.total;
                let done = s.written.max(1) as f64;
                if s.written > 0 {
                    s.eta_s = Some(r.started.elapsed().as_secs_f64() / done * (o.total.saturating_sub(s.written)) as f64);
                }
            }
        }
        self.capture_status = s;
    }

    /// One frame; see the module docs for the order. Never waits on the GPU.
    fn frame(&mut self) {
        let now = Instant::now();
        let dt = now - self.last_frame;
        self.ui.stats.push(dt);
        self.last_frame = now;
        if self.minimized {
            return;
        }
        self.frames += 1;
        if self.test_device_loss == Some(self.frames) {
            log::warn!("WATERVIEW_TEST_DEVICE_LOSS: destroying the device");
            self.ctx.device.destroy();
        }
        if self.device_lost.swap(false, Ordering::AcqRel) {
            self.recover_device();
            return;
        }
        self.fps_log.0 += 1;
        let since = self.fps_log.1.elapsed().as_secs_f64();
        if since >= 5.0 {
            log::info!(
                "frame rate: {:.1} fps at {}x{}{}",
                self.fps_log.0 as f64 / since,
                self.config.width,
                self.config.height,
                if self.recording.is_some() { " (recording)" } else { "" }
            );
            self.fps_log = (0, Instant::now());
        }
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        if let Some(sim) = self.world.sim.as_mut() {
            if let Some(s) = sim.poll_stats() {
                self.stats = Some(s.clone());
            }
        }
        self.ui.history.push_frame(dt, self.profiler.latest(), self.stats.as_ref());
        self.poll_background();
        self.fly_move(dt.as_secs_f32());
        let gpu_errors: Vec<String> = self.gpu_errors.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
        // Errors of a device that is being lost are symptoms of the loss, reported once by the recovery.
        let gpu_errors = if self.device_lost.load(Ordering::Acquire) { Vec::new() } else { gpu_errors };
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
        self.update_capture_status();
        let raw_input = self.egui_state.take_egui_input(&self.window);
        let mut actions = Vec::new();
        let preview = self.recording.as_ref().and_then(|r| r.offline.as_ref()).map(|o| (o.texture, o.target.size));
        let output = {
            let info = FrameInfo {
                ctx: &self.ctx,
                scene: &self.world.scene,
                sim: self.world.sim.as_ref(),
                stats: self.stats.as_ref(),
                gpu_times: self.profiler.latest(),
                capture: &self.capture_status,
                fly: self.fly,
            };
            let ui_state = &mut self.ui;
            self.egui_ctx.run_ui(raw_input, |ui| {
                actions = ui::draw_ui(ui, ui_state, &info);
                if let Some((texture, (w, h))) = preview {
                    preview_ui(ui, texture, (w as f32, h as f32));
                }
            })
        };
        self.egui_state.handle_platform_output(&self.window, output.platform_output);
        let paint_jobs = self.egui_ctx.tessellate(output.shapes, output.pixels_per_point);
        for action in actions {
            self.apply(action);
        }

        // A screenshot at k x the window size: the scene in a submission of its own (camera uniform).
        let screenshot = self.screenshot_requested.take();
        let scale = self.ui.capture.screenshot_scale.clamp(1, 8);
        let max_dim = self.ctx.device.limits().max_texture_dimension_2d;
        let hires = match screenshot {
            Some(_) if scale > 1 && size.0 * scale <= max_dim && size.1 * scale <= max_dim => {
                let big = (size.0 * scale, size.1 * scale);
                let target = Offscreen::new(&self.ctx, big);
                let mut enc = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hi-res screenshot") });
                self.encode_scene(&mut enc, &target);
                self.ctx.queue.submit([enc.finish()]);
                Some(target)
            }
            Some(_) if scale > 1 => {
                self.ui.push_error(format!("a screenshot at {scale}x the window is past this GPU's texture limit of {max_dim} pixels; taking it at 1x"));
                None
            }
            _ => None,
        };

        let device = &self.ctx.device;
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("frame") });
        let offline = self.recording.as_ref().is_some_and(|r| r.offline.is_some());
        if offline {
            self.encode_offline_frame(&mut enc);
        } else {
            if let Some(sim) = self.world.sim.as_mut() {
                if self.ui.sim.playing {
                    sim.encode_frame(&mut enc, &self.profiler);
                } else if self.step_requested {
                    sim.encode_step(&mut enc, &self.profiler);
                }
            }
            // The window's scene (the state after this frame's step, as before).
            encode_scene_with(&mut self.renderer, &self.ctx, &self.profiler, &mut enc, &self.offscreen, &self.camera, self.world.sim.as_ref(), &self.ui);
            self.record_live_frame(&mut enc);
        }
        if let Some(sim) = self.world.sim.as_mut() {
            sim.encode_stats(&mut enc, &self.profiler);
        }
        self.step_requested = false;

        let device = &self.ctx.device;
        let screen = egui_wgpu::ScreenDescriptor { size_in_pixels: [size.0, size.1], pixels_per_point: output.pixels_per_point };
        for (id, delta) in &output.textures_delta.set {
            for d in delta {
                self.egui_renderer.update_texture(device, &self.ctx.queue, *id, d);
            }
        }
        let callback_buffers = self.egui_renderer.update_buffers(device, &self.ctx.queue, &mut enc, &paint_jobs, &screen);

        if let Some(with_ui) = screenshot {
            let result = match (&hires, with_ui) {
                (Some(big), true) => {
                    let k = big.size.0 / size.0.max(1);
                    let screen_k = egui_wgpu::ScreenDescriptor {
                        size_in_pixels: [big.size.0, big.size.1],
                        pixels_per_point: output.pixels_per_point * k as f32,
                    };
                    let source = self.blit.bind_source(&self.ctx, &big.color_view);
                    let (texture, view) = ui_target(&mut self.ui_target, &self.ctx, self.config.format, self.draw_format, big.size);
                    composite(&mut enc, &self.profiler, view, &self.blit, &source, &self.egui_renderer, &paint_jobs, &screen_k, "composite (capture)");
                    self.capture.request(&mut enc, texture, big.size)
                }
                (Some(big), false) => self.capture.request(&mut enc, &big.color, big.size),
                (None, true) => {
                    let (texture, view) = ui_target(&mut self.ui_target, &self.ctx, self.config.format, self.draw_format, size);
                    composite(&mut enc, &self.profiler, view, &self.blit, &self.blit.bind_group, &self.egui_renderer, &paint_jobs, &screen, "composite (capture)");
                    self.capture.request(&mut enc, texture, size)
                }
                (None, false) => self.capture.request(&mut enc, &self.offscreen.color, size),
            };
            self.ui.render.capture_status = Some(match result {
                Ok(()) => Ok("Saving screenshot…".into()),
                Err(e) => Err(e),
            });
        }

        let surface_view =
            frame.texture.create_view(&wgpu::TextureViewDescriptor { format: Some(self.draw_format), ..Default::default() });
        composite(&mut enc, &self.profiler, &surface_view, &self.blit, &self.blit.bind_group, &self.egui_renderer, &paint_jobs, &screen, "composite");

        self.profiler.resolve(&mut enc);
        self.ctx.queue.submit(callback_buffers.into_iter().chain(std::iter::once(enc.finish())));
        if let Some(sim) = self.world.sim.as_mut() {
            sim.after_submit();
        }
        self.capture.after_submit();
        if let Some(r) = self.recording.as_mut() {
            r.rec.after_submit();
        }
        if hires.is_some() && screenshot == Some(true) {
            // Do not keep a k x surface-sized texture around.
            self.ui_target = None;
        }
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

    /// Renders the scene (current camera and settings) into `target`.
    fn encode_scene(&mut self, enc: &mut wgpu::CommandEncoder, target: &Offscreen) {
        encode_scene_with(&mut self.renderer, &self.ctx, &self.profiler, enc, target, &self.camera, self.world.sim.as_ref(), &self.ui);
    }

    /// Live recording: copies the window's scene target when a frame is due (at most `fps` a second).
    fn record_live_frame(&mut self, enc: &mut wgpu::CommandEncoder) {
        let Some(r) = self.recording.as_mut().filter(|r| r.offline.is_none() && !r.stopping) else { return };
        let now = Instant::now();
        let interval = Duration::from_secs_f64(0.98 / r.fps as f64);
        if r.last.is_some_and(|t| now - t < interval) {
            return;
        }
        let time = r.started.elapsed().as_secs_f64();
        if r.rec.record(enc, &self.offscreen.color, time) {
            r.last = Some(now);
        }
    }

    /// Offline capture: when the ring has room, renders the current state into the capture target, copies
    /// it for the video (time k / fps), then advances the simulation by one frame of 1/fps.
    fn encode_offline_frame(&mut self, enc: &mut wgpu::CommandEncoder) {
        let Some(mut r) = self.recording.take() else { return };
        if let Some(o) = r.offline.as_mut() {
            if !r.stopping && o.frame < o.total && r.rec.can_record() {
                encode_scene_with(&mut self.renderer, &self.ctx, &self.profiler, enc, &o.target, &self.camera, self.world.sim.as_ref(), &self.ui);
                r.rec.record(enc, &o.target.color, o.frame as f64 / r.fps as f64);
                if let Some(sim) = self.world.sim.as_mut() {
                    sim.encode_frame(enc, &self.profiler);
                }
                o.frame += 1;
            }
            if o.frame >= o.total {
                r.stopping = true;
            }
        }
        self.recording = Some(r);
    }

    /// Output path for a new video: `captures/waterview-<UTC time>.mp4` (or a folder for PNGs).
    fn video_path(format: VideoFormat) -> PathBuf {
        let stem = format!("waterview-{}", crate::capture::utc_timestamp(std::time::SystemTime::now()));
        let name = match format {
            VideoFormat::Mp4 => format!("{stem}.mp4"),
            VideoFormat::PngSequence => stem,
        };
        Path::new(CAPTURE_DIR).join(name)
    }

    fn start_live(&mut self) {
        let c = self.ui.capture.clone();
        let path = Self::video_path(c.format);
        match VideoRecorder::start(&self.ctx.device, &path, format_for_setting(c.format, &path), c.fps, self.offscreen.size, self.offscreen.format()) {
            Ok(rec) => {
                log::info!("recording {} at {}x{}", path.display(), self.offscreen.size.0, self.offscreen.size.1);
                self.ui.capture.status = None;
                self.recording = Some(Recording { rec, offline: None, started: Instant::now(), last: None, fps: c.fps, stopping: false, note: None });
            }
            Err(e) => {
                self.ui.push_error(format!("cannot start recording: {e}"));
                self.ui.capture.status = Some(Err(e));
            }
        }
    }

    fn start_offline(&mut self) {
        let c = self.ui.capture.clone();
        if self.world.sim.is_none() {
            self.ui.push_error("cannot capture: the scene has no simulation");
            return;
        }
        let max_dim = self.ctx.device.limits().max_texture_dimension_2d;
        let size = (c.offline_size[0].clamp(16, max_dim), c.offline_size[1].clamp(16, max_dim));
        let fps = c.fps.clamp(2.0, 240.0);
        let path = Self::video_path(c.format);
        let target = Offscreen::new(&self.ctx, size);
        let rec = match VideoRecorder::start(&self.ctx.device, &path, format_for_setting(c.format, &path), fps, size, target.format()) {
            Ok(r) => r,
            Err(e) => {
                self.ui.push_error(format!("cannot start the capture: {e}"));
                self.ui.capture.status = Some(Err(e));
                return;
            }
        };
        let saved_frame_dt = self.ui.sim.params.frame_dt;
        self.ui.sim.params.frame_dt = 1.0 / fps;
        self.apply(UiAction::ApplyParams);
        if let Some(e) = self.ui.sim.param_error.clone() {
            self.ui.sim.params.frame_dt = saved_frame_dt;
            rec.cancel();
            self.ui.push_error(format!("cannot start the capture: {e}"));
            return;
        }
        let texture = self.egui_renderer.register_native_texture(&self.ctx.device, &target.color_view, wgpu::FilterMode::Linear);
        let total = crate::capture::offline::frame_count(c.offline_seconds, fps);
        log::info!("offline capture {}: {total} frames at {}x{}, {fps} fps", path.display(), size.0, size.1);
        let was_playing = self.ui.sim.playing;
        self.ui.sim.playing = true;
        self.ui.capture.status = None;
        self.recording = Some(Recording {
            rec,
            offline: Some(Offline { target, texture, frame: 0, total, saved_frame_dt, was_playing }),
            started: Instant::now(),
            last: None,
            fps,
            stopping: false,
            note: None,
        });
    }

    /// Opens the native file dialog on a thread of its own (never blocks the frame). Where no dialog can
    /// be shown (no portal or desktop), it returns no file and the log says so.
    fn open_dialog(&mut self, save: bool) {
        if self.dialog.is_some() {
            return;
        }
        let (tx, rx) = mpsc::channel();
        let start_dir = self.scene_file.as_ref().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_else(|| PathBuf::from("."));
        let name = format!("{}.ron", self.world.scene.name.to_lowercase().replace(char::is_whitespace, "_"));
        let spawned = std::thread::Builder::new().name("file dialog".into()).spawn(move || {
            let result = std::panic::catch_unwind(move || {
                let d = rfd::FileDialog::new().set_directory(start_dir);
                if save {
                    d.add_filter("scene", &["ron"]).set_file_name(name).save_file()
                } else {
                    d.add_filter("scene or heightmap", &["ron", "png"]).pick_file()
                }
            });
            let _ = tx.send(result.ok().flatten());
        });
        match spawned {
            Ok(_) => {
                self.dialog = Some(Dialog { save, rx });
                self.ui.scene.dialog_open = true;
            }
            Err(e) => self.ui.push_error(format!("cannot open a file dialog: {e}")),
        }
    }

    /// Saves the scene with the current solver parameters, sources and camera; relative heightmap paths
    /// are made absolute when they resolve to a file, so the saved scene works from its new folder.
    fn save_scene(&mut self, path: &Path) {
        let mut scene = self.world.scene.clone();
        let mut solver = self.ui.sim.params.clone();
        solver.dx = scene.solver.dx;
        if let Some(sim) = self.world.sim.as_ref() {
            solver.h_over_dx = sim.params().h_over_dx;
            solver.rho0 = sim.params().rho0;
        }
        if let Some(o) = self.recording.as_ref().and_then(|r| r.offline.as_ref()) {
            solver.frame_dt = o.saved_frame_dt;
        }
        scene.solver = solver;
        scene.camera = self.camera.to_desc();
        scene.emitters = self.ui.scene.emitters.clone();
        scene.sinks = self.ui.scene.sinks.clone();
        if let Some(t) = scene.terrain.as_mut() {
            let p = scene.base_dir.join(&t.heightmap);
            if Path::new(&t.heightmap).is_relative() && p.is_file() {
                if let Ok(abs) = p.canonicalize() {
                    t.heightmap = abs.display().to_string();
                }
            }
        }
        match scene.save(path) {
            Ok(()) => {
                log::info!("scene saved: {}", path.display());
                self.ui.capture.status = Some(Ok(format!("Scene saved to {}", path.display())));
                self.scene_file = Some(path.to_path_buf());
                self.world.scene.base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                if let (Some(a), Some(b)) = (self.world.scene.terrain.as_mut(), scene.terrain.as_ref()) {
                    a.heightmap = b.heightmap.clone();
                }
            }
            Err(e) => self.ui.push_error(format!("cannot save the scene: {e}")),
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
                    Ok(mut sim) => {
                        if let Err(e) = sim.set_sources(&self.ctx, &self.ui.scene.emitters, &self.ui.scene.sinks) {
                            self.ui.push_error(format!("emitters and sinks: {e}"));
                        }
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
                scene.emitters = self.ui.scene.emitters.clone();
                scene.sinks = self.ui.scene.sinks.clone();
                self.replace_world(scene, &format!("rebuild at dx = {dx} m"), false);
            }
            UiAction::LoadBuiltin(name) => match Scene::builtin(&name) {
                Some(scene) => {
                    if self.replace_world(scene, &format!("built-in scene `{name}`"), true) {
                        self.scene_file = None;
                    }
                }
                None => self.ui.push_error(format!("there is no built-in scene `{name}`")),
            },
            UiAction::LoadScene(path) => match Scene::load(&path) {
                Ok(scene) => {
                    if self.replace_world(scene, &path.display().to_string(), true) {
                        self.scene_file = Some(path);
                    }
                }
                Err(e) => self.ui.push_error(e.to_string()),
            },
            UiAction::OpenSceneDialog => self.open_dialog(false),
            UiAction::SaveSceneDialog => self.open_dialog(true),
            UiAction::SaveScene(path) => self.save_scene(&path),
            UiAction::ReplaceHeightmap(path) => {
                let mut scene = self.world.scene.clone();
                let d = scene.domain;
                let old = scene.terrain.take();
                let abs = path.canonicalize().unwrap_or(path.clone());
                scene.terrain = Some(TerrainDesc {
                    heightmap: abs.display().to_string(),
                    crop: None,
                    extent: [d.max[0] - d.min[0], d.max[2] - d.min[2]],
                    vertical_scale: old.as_ref().map_or(1.0, |t| t.vertical_scale),
                    base: old.as_ref().map_or(d.min[1], |t| t.base),
                });
                self.replace_world(scene, &format!("heightmap {}", path.display()), false);
            }
            UiAction::SetSources => {
                self.world.scene.emitters = self.ui.scene.emitters.clone();
                self.world.scene.sinks = self.ui.scene.sinks.clone();
                if let Some(sim) = self.world.sim.as_mut() {
                    if let Err(e) = sim.set_sources(&self.ctx, &self.ui.scene.emitters, &self.ui.scene.sinks) {
                        self.ui.push_error(format!("emitters and sinks: {e}"));
                    }
                }
            }
            UiAction::ToggleRecording => match self.recording.as_mut() {
                Some(r) if r.offline.is_none() => r.stopping = true,
                Some(_) => {}
                None if self.finishing.is_some() => self.ui.push_error("the previous video is still being completed; try again in a moment"),
                None => match self.ui.capture.mode {
                    CaptureMode::Live => self.start_live(),
                    CaptureMode::Offline => self.start_offline(),
                },
            },
            UiAction::StartOffline => {
                if self.recording.is_none() && self.finishing.is_none() {
                    self.start_offline();
                }
            }
            UiAction::CancelOffline => {
                if let Some(r) = self.recording.take() {
                    r.rec.cancel();
                    self.end_offline(r.offline);
                    self.ui.capture.status = Some(Ok("Capture cancelled; nothing was written".into()));
                }
            }
        }
    }

    /// Builds `scene` and its simulation; on success it replaces the current world (and, when
    /// `new_scene`, the camera and the edited parameters) and returns true; on failure the banner shows
    /// why and the current world stays.
    fn replace_world(&mut self, scene: Scene, what: &str, new_scene: bool) -> bool {
        let mut world = match build_world(&self.ctx, scene) {
            Ok(w) => w,
            Err(e) => {
                self.ui.push_error(format!("{what}: {e}"));
                return false;
            }
        };
        log::info!("{what}: {} particles", world.sim.as_ref().map_or(0, |s| s.particle_count()));
        if let Some(sim) = world.sim.as_mut() {
            if !world.scene.emitters.is_empty() || !world.scene.sinks.is_empty() {
                if let Err(e) = sim.set_sources(&self.ctx, &world.scene.emitters, &world.scene.sinks) {
                    self.ui.push_error(format!("{what}: emitters and sinks: {e}"));
                }
            }
        }
        self.renderer.set_terrain(&self.ctx, &world.setup.terrain);
        if new_scene {
            self.camera = OrbitCamera::from_desc(&world.scene.camera);
            self.ui.sim.dx_anchor = world.scene.effective_dx(self.ctx.is_cpu());
            self.fly_speed = domain_size(&world.scene) * 0.1;
        }
        self.ui.scene.sync_from(&world.scene);
        if let Some(sim) = world.sim.as_ref() {
            self.ui.sim.sync_from(sim);
        }
        self.world = world;
        self.stats = None;
        true
    }
}

/// Largest side of the scene's domain, metres.
fn domain_size(scene: &Scene) -> f32 {
    (0..3).map(|i| scene.domain.max[i] - scene.domain.min[i]).fold(1e-3f32, f32::max)
}

/// Mouse look in fly mode: turns the view about the eye (the eye stays where it is).
fn fly_look(camera: &mut OrbitCamera, dx: f32, dy: f32) {
    let eye = camera.eye();
    camera.rotate(-dx, -dy);
    let offset = camera.eye() - camera.target;
    camera.target = eye - offset;
}

/// The offline capture's frames, scaled to fit the central area (aspect kept).
fn preview_ui(ui: &mut egui::Ui, texture: egui::TextureId, size: (f32, f32)) {
    egui::CentralPanel::default().frame(egui::Frame::NONE.fill(egui::Color32::from_gray(20))).show(ui, |ui| {
        let avail = ui.available_size();
        let k = (avail.x / size.0).min(avail.y / size.1).max(0.01);
        ui.centered_and_justified(|ui| {
            ui.add(egui::Image::new(egui::load::SizedTexture::new(texture, egui::vec2(size.0 * k, size.1 * k))));
        });
    });
}

/// The format the recorder writes for a panel setting (a PNG sequence for a folder path).
fn format_for_setting(format: VideoFormat, path: &Path) -> VideoFormat {
    match format {
        VideoFormat::Mp4 => format_for(path),
        VideoFormat::PngSequence => VideoFormat::PngSequence,
    }
}

/// Renders the scene (camera, render settings, the simulation's particles) into `target`.
#[allow(clippy::too_many_arguments)]
fn encode_scene_with(
    renderer: &mut Renderer,
    ctx: &GpuContext,
    profiler: &Profiler,
    enc: &mut wgpu::CommandEncoder,
    target: &Offscreen,
    camera: &OrbitCamera,
    sim: Option<&Simulation>,
    ui: &UiState,
) {
    let particles = sim.map(|s| ParticleSource { positions: s.positions(), velocities: s.velocities(), count: s.particle_count() });
    renderer.encode(
        ctx,
        enc,
        profiler,
        &target.color_view,
        &target.depth_view,
        target.size,
        camera,
        particles,
        &ui.render.settings_for(sim.map_or(0.05, |s| s.particle_radius())),
    );
}

fn new_egui_state(egui_ctx: &egui::Context, window: &Window, ctx: &GpuContext) -> egui_winit::State {
    let max_tex = ctx.device.limits().max_texture_dimension_2d as usize;
    egui_winit::State::new(egui_ctx.clone(), egui::ViewportId::ROOT, window, Some(window.scale_factor() as f32), window.theme(), Some(max_tex))
}

/// The window icon from `assets/icon.png`; `None` (and a log line) if it cannot be decoded.
fn window_icon() -> Option<winit::window::Icon> {
    let img = image::load_from_memory(ICON_PNG).map_err(|e| log::warn!("window icon: {e}")).ok()?.to_rgba8();
    let (w, h) = img.dimensions();
    winit::window::Icon::from_rgba(img.into_raw(), w, h).map_err(|e| log::warn!("window icon: {e}")).ok()
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

/// One render pass into `target`: the scene (`source`, a blit bind group) blitted, egui drawn over it.
#[allow(clippy::too_many_arguments)]
fn composite(
    enc: &mut wgpu::CommandEncoder,
    profiler: &Profiler,
    target: &wgpu::TextureView,
    blit: &Blit,
    source: &wgpu::BindGroup,
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
    blit.draw(&mut pass, source);
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

    /// A bind group for another source of the same size as the target (e.g. a k x screenshot).
    fn bind_source(&self, ctx: &GpuContext, source: &wgpu::TextureView) -> wgpu::BindGroup {
        Self::bind(ctx, &self.layout, source)
    }

    /// Draws `source` (this blit's own bind group or one from [`Blit::bind_source`]).
    fn draw(&self, pass: &mut wgpu::RenderPass<'_>, source: &wgpu::BindGroup) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, source, &[]);
        pass.draw(0..3, 0..1);
    }
}
