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
//!    an offscreen target of the window's size (offline capture instead: once a video frame's simulated
//!    time is confirmed, that state rendered into the capture's target, then the steps toward the next
//!    video frame and a copy of the step state that checks them); the video frame's copy; a blit of that
//!    target onto the surface with egui drawn on top; the screenshot copy if one was asked for; profiler
//!    resolve. Submit, present, request the next frame.
//!
//! Nothing in the frame waits on the GPU: statistics, timings, screenshots, video frames and the offline
//! capture's step states all arrive through rings a frame or more later, and video is encoded on a worker
//! thread ([`crate::capture`]).
//! Screenshots without the UI copy the offscreen target; "include UI" draws the blit and egui a second
//! time, that frame, into a texture of the surface's format and copies that (so it works whether or not
//! the surface allows `COPY_SRC`). EXR screenshots (the Capture panel's format choice) render the scene,
//! never the UI, at k times the window size into a float target with a second renderer made for that
//! format, in a submission of their own, and go through the same ring. The surface is configured with an
//! sRGB format where one is offered; when the adapter allows a second view format, the blit and egui draw
//! through the format without the sRGB suffix (egui blends in gamma space, as it expects; the blit encodes
//! sRGB itself).
//!
//! Live recording copies the window's scene target (no UI) at most `fps` times per second, time-stamped
//! by the wall clock. Offline capture ("Render video") makes frame k show exactly t0 + k / fps simulated
//! seconds (t0: the time it started), as `waterview capture` does, without blocking
//! ([`crate::capture::exact`]): the simulation's `frame_end` is set to the next frame's time, a generous
//! number of steps is recorded (the ones past the end are exact no-ops), and the 32-byte step state is
//! copied and mapped asynchronously; when it comes back showing that time the state is rendered at the
//! chosen size, else more steps are recorded toward the same end. Meanwhile, and while the recorder's ring
//! or the encoder is busy, no simulation work is recorded, but the window goes on drawing and answering;
//! it shows the capture's frames scaled into the central area. Resetting or replacing the simulation
//! ends the capture with the frames made so far.
//!
//! Failures of user actions (loading a scene or a sky, rebuilding at another dx, bad parameters, a file
//! that cannot be read or written) and wgpu validation errors go to the red banner and the log; the
//! running scene stays. Sky files are decoded on a worker thread (`sky`); the frame polls for the result. A
//! lost GPU device is recreated with the scene rebuilt from its file (best effort). Only the absence of a
//! window or GPU ends the app, with the error returned from [`run`]. Window size, the last scene and the
//! panels are remembered between runs ([`crate::settings`]).
//!
//! From the command line ([`crate::cli::WindowArgs`]) the window can be given its size and a live recording that
//! starts with the first frame drawn, stops after a number of seconds of wall time and, once its file is
//! complete, quits the app (exit status 0, or the error from [`run`] when the file could not be written).
//!
//! The code is split along those seams: `input` (window events, keys, the camera), `frame` (the
//! frame above), `recording` (screenshots and videos), `sky` (sky files decoded off the UI thread), `world` (scenes: loading, building, saving, file
//! dialogs and dropped files), `actions` (what the panels ask for), `device` (the surface, and
//! recovering from a lost device), `blit` (the copy of the scene onto the surface) and `ranks` (the scene
//! decomposed over several GPUs, `--gpus N`: the ranks step and draw sort-last on their own threads, the
//! frame copies their newest picture into the scene target).

mod actions;
mod blit;
mod build;
mod checkpoint;
mod device;
mod frame;
mod input;
mod pace;
mod ranks;
mod recording;
mod sky;
mod world;

use crate::capture::{Capture, VideoWriter};
use crate::gpu::{GpuContext, Profiler};
use crate::render::{targets::Offscreen, OrbitCamera, Renderer, SkyCube};
use crate::settings::AppSettings;
use crate::terrain::Heightfield;
use crate::ui::capture_panel::CaptureStatus;
use crate::ui::UiState;
use anyhow::Context as _;
use blit::Blit;
use device::GpuParts;
use input::Mouse;
use recording::{CliRecording, Recording};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use winit::application::ApplicationHandler;
use winit::dpi::{LogicalSize, PhysicalSize};
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::window::{Window, WindowId};
use world::{domain_size, startup_world, Dialog, World};

/// Where screenshots and videos are written, relative to the working directory.
pub const CAPTURE_DIR: &str = "captures";

/// The window icon (also installed with the desktop entry).
const ICON_PNG: &[u8] = include_bytes!("../../assets/icon.png");

/// Options of the window from the command line: its size and a live recording started with the first
/// frame drawn (see `waterview --help`).
#[derive(Clone, Debug, Default)]
pub struct WindowOptions {
    /// Inner size, physical pixels (default: the last run's).
    pub window_size: Option<(u32, u32)>,
    /// Record the window (without the UI) from the first frame: `.mp4` writes H.264 MP4, any other path
    /// a folder of numbered PNGs.
    pub record: Option<PathBuf>,
    /// Stop that recording after this many seconds of wall time.
    pub record_seconds: Option<f64>,
    /// Most frames per second the recording keeps (default: the Capture panel's).
    pub record_fps: Option<f32>,
    /// Quit once the recording's file is complete (exit status 0, or 1 with the reason).
    pub quit_after_record: bool,
    /// GPUs to decompose the simulation over (`--gpus`; 0 or 1: one GPU, the window's). With more, the
    /// scene starts on one GPU and moves to the ranks once they are built (see `ranks`).
    pub gpus: usize,
}

/// Opens the window and runs until it is closed (or Esc). `scene_path`: a scene file; `None` opens the last
/// scene file of the previous run if it still exists, else the built-in "valley". A scene that fails to
/// load shows its error and falls back to the valley. `options`: the window's size and a recording started
/// with the first frame ([`WindowOptions`]; `Default` for none).
/// Errors: no display, no usable GPU adapter, or a surface the adapter cannot present to; with
/// `--quit-after-record`, a recording that could not be written.
pub fn run(scene_path: Option<PathBuf>, options: &WindowOptions) -> anyhow::Result<()> {
    let event_loop =
        EventLoop::new().context("cannot open a window (is a display available? set DISPLAY or WAYLAND_DISPLAY)")?;
    let settings_path = crate::settings::default_path();
    let settings = settings_path.as_deref().map(AppSettings::load).unwrap_or_default();
    let scene_path = scene_path.or_else(|| settings.last_scene.clone().filter(|p| p.is_file()));
    let mut app = App { scene_path, settings, settings_path, options: options.clone(), running: None, fatal: None };
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
    options: WindowOptions,
    running: Option<Running>,
    /// Set when startup fails (or a `--quit-after-record` recording fails); returned by [`run`] after the
    /// loop exits.
    fatal: Option<anyhow::Error>,
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.running.is_some() {
            return;
        }
        match Running::new(event_loop, self.scene_path.as_deref(), &self.settings, &self.options) {
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
            if let Some(result) = r.exit_with.take() {
                self.fatal = result.err();
                event_loop.exit();
            }
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
    /// A second renderer made for [`crate::render::HDR_FORMAT`], for EXR screenshots; built on the first
    /// one, dropped with the device.
    hdr_renderer: Option<Renderer>,
    /// The loaded sky on screen (`None`: the generated one), kept for renderers made later (EXR
    /// screenshots, a recreated device).
    sky: Option<SkyCube>,
    /// Decodes sky files on a worker thread.
    sky_loader: sky::SkyLoader,
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
    /// A scene being built on a worker thread, which replaces `world` when it is done.
    building: Option<build::Building>,
    /// Frames submitted, and (set from the queue's callback) the last whose GPU work is done: the frame
    /// draws nothing while the GPU is two frames behind.
    submitted: u64,
    completed: Arc<std::sync::atomic::AtomicU64>,
    /// The scene file shown (None for built-ins), remembered between runs.
    scene_file: Option<PathBuf>,
    camera: OrbitCamera,
    /// Fly mode: WASD moves the camera, dragging looks around.
    fly: bool,
    /// Fly speed, m/s (mouse wheel changes it in fly mode).
    fly_speed: f32,
    ui: UiState,
    mouse: Mouse,
    step_requested: bool,
    /// `WATERVIEW_TEST_MOVE_OBSTACLE=DX` (tests/window.rs): the Scene panel's first obstacle moved DX m
    /// along x at frame 5, and the frame it was (`None` before).
    test_move_obstacle: Option<(f32, Option<u64>)>,
    /// The engine's [`crate::engine::Engine::obstacles_version`] the renderer's obstacles were last set at
    /// (a static obstacle moved live since: drawn anew).
    obstacles_drawn: u64,
    screenshot_requested: Option<bool>,
    dialog: Option<Dialog>,
    /// A checkpoint being saved (read back, then written on a worker thread).
    checkpoint_save: Option<checkpoint::CheckpointSave>,
    last_frame: Instant,
    /// Steps per frame within the frame budget ([`pace`]).
    pace: pace::StepPace,
    /// Frames and start of the current frame-rate log period.
    fps_log: (u32, Instant),
    /// Seconds between two frame-rate log lines (5; `WATERVIEW_TEST_LOG_EVERY_S` for tests).
    fps_log_every: f64,
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
    /// `WATERVIEW_TEST_POISON_FRAME=N`: make one particle's velocity NaN at frame N (exercises the blow-up
    /// banner and pause, which no valid scene is known to reach).
    test_poison_frame: Option<u64>,
    /// `WATERVIEW_TEST_RENDER_VIDEO=1`: start the Capture panel's offline render with the first frame and
    /// quit once its file is complete (tests/window.rs); `Some(true)` once started.
    test_render_video: Option<bool>,
    /// `WATERVIEW_TEST_LOAD_SCENE=PATH`: PATH loaded in the background at frame 5, then quit (`build`).
    test_load_scene: Option<(PathBuf, build::TestLoad)>,
    frames: u64,
    /// `--record`: the recording asked for on the command line (started with the first frame).
    cli_record: Option<CliRecording>,
    /// Set when the app should quit on its own (`--quit-after-record`): `Ok` or the error [`run`] returns.
    exit_with: Option<anyhow::Result<()>>,
    /// The blow-up last reported in the banner (each is reported once, and pauses the simulation).
    reported_blow_up: Option<crate::sim::BlowUp>,
    /// GPUs the scene is built on (1: the window's alone; more: `ranks`).
    gpus: usize,
    /// The ranks' frame shown last (handed back to them when a newer one comes).
    ranks_shown: Option<Offscreen>,
    /// `WATERVIEW_TEST_SET_GPUS=N`: the GPUs field set to N at frame 5 (tests/window.rs); `true` once done.
    test_set_gpus: Option<(usize, bool)>,
    /// The frame at which that build ended.
    test_set_gpus_ended: Option<u64>,
    /// `WATERVIEW_TEST_RANK_PARAMS=1` with it: the simulation panel's parameters applied once the ranks
    /// have stepped (viscosity doubled); the ranks' time then, once done.
    test_rank_params: Option<Option<f32>>,
}

impl Running {
    fn new(
        event_loop: &ActiveEventLoop,
        scene_path: Option<&Path>,
        settings: &AppSettings,
        options: &WindowOptions,
    ) -> anyhow::Result<Self> {
        let mut attrs = Window::default_attributes().with_title("waterview").with_window_icon(window_icon());
        let monitor = event_loop.primary_monitor().or_else(|| event_loop.available_monitors().next());
        let fit = |wanted: PhysicalSize<u32>| fit_to_monitor(wanted, monitor.as_ref().map(|m| m.size()));
        let scale = monitor.as_ref().map_or(1.0, |m| m.scale_factor());
        attrs = match (options.window_size, settings.window_size) {
            // Asked for on the command line: as given.
            (Some((w, h)), _) => attrs.with_inner_size(PhysicalSize::new(w, h)),
            // The last run's size, perhaps on a larger monitor.
            (None, Some([w, h])) if w >= 64 && h >= 64 && w <= 16384 && h <= 16384 => {
                attrs.with_inner_size(fit(PhysicalSize::new(w, h)))
            }
            _ => attrs.with_inner_size(fit(LogicalSize::new(1280.0, 800.0).to_physical(scale))),
        };
        let window = Arc::new(event_loop.create_window(attrs).context("cannot create the window")?);
        let instance = GpuContext::create_instance(Some(Box::new(event_loop.owned_display_handle())));
        let surface =
            instance.create_surface(window.clone()).context("cannot create a drawing surface for the window")?;
        let size = window.inner_size();
        let closing = Arc::new(AtomicBool::new(false));
        // The terrain is uploaded again once the world is built (the context is needed to build it).
        let flat = Heightfield::flat(glam::Vec2::ZERO, glam::Vec2::ONE, 0.0);
        let parts = GpuParts::new(instance, &surface, size, &flat, &closing)?;

        let mut errors = Vec::new();
        let world = startup_world(&parts.ctx, scene_path, &mut errors)?;
        let scene_file = scene_path.filter(|_| errors.is_empty()).map(Path::to_path_buf);
        let mut renderer = parts.renderer;
        renderer.set_terrain(&parts.ctx, world.terrain());
        renderer.set_obstacles(&parts.ctx, &world.obstacle_meshes());
        renderer.set_walls(&parts.ctx, &world.wall_meshes());
        let on_cpu = parts.ctx.is_cpu();
        let mut ui = UiState::new(world.scene(), world.sim(), on_cpu);
        for e in errors {
            ui.push_error(e);
        }
        ui.show_panels = settings.show_panels;
        ui.panel_width = settings.panel_width.clamp(150.0, 1000.0);
        ui.capture = settings.capture.clone();
        ui.render.capture_with_ui = settings.capture_with_ui;
        let camera = OrbitCamera::from_desc(&world.scene().camera);
        let fly_speed = domain_size(world.scene()) * 0.1;

        let egui_ctx = egui::Context::default();
        let egui_state = new_egui_state(&egui_ctx, &window, &parts.ctx);
        let test_device_loss = std::env::var("WATERVIEW_TEST_DEVICE_LOSS").ok().and_then(|v| v.parse().ok());
        let test_poison_frame = std::env::var("WATERVIEW_TEST_POISON_FRAME").ok().and_then(|v| v.parse().ok());

        let gpus = options.gpus.max(1);
        let mut running = Self {
            window,
            surface,
            config: parts.config,
            draw_format: parts.draw_format,
            ctx: parts.ctx,
            profiler: parts.profiler,
            renderer,
            hdr_renderer: None,
            sky: None,
            sky_loader: sky::SkyLoader::default(),
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
            building: None,
            submitted: 0,
            completed: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            scene_file,
            camera,
            fly: false,
            fly_speed,
            ui,
            mouse: Mouse::default(),
            step_requested: false,
            obstacles_drawn: 0,
            test_move_obstacle: std::env::var("WATERVIEW_TEST_MOVE_OBSTACLE")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(|dx| (dx, None)),
            screenshot_requested: None,
            dialog: None,
            checkpoint_save: None,
            last_frame: Instant::now(),
            pace: pace::StepPace::default(),
            fps_log: (0, Instant::now()),
            fps_log_every: std::env::var("WATERVIEW_TEST_LOG_EVERY_S")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|v: &f64| *v > 0.0)
                .unwrap_or(5.0),
            minimized: size.width == 0 || size.height == 0,
            gpu_errors: parts.gpu_errors,
            device_lost: parts.device_lost,
            closing,
            test_device_loss,
            test_poison_frame,
            test_render_video: std::env::var_os("WATERVIEW_TEST_RENDER_VIDEO").filter(|v| v == "1").map(|_| false),
            test_load_scene: std::env::var_os("WATERVIEW_TEST_LOAD_SCENE")
                .map(|p| (PathBuf::from(p), build::TestLoad::Waiting)),
            frames: 0,
            cli_record: options.record.clone().map(|path| CliRecording {
                path,
                fps: options.record_fps,
                seconds: options.record_seconds,
                quit_after: options.quit_after_record,
                started: false,
            }),
            exit_with: None,
            reported_blow_up: None,
            gpus,
            ranks_shown: None,
            test_set_gpus_ended: None,
            test_rank_params: std::env::var("WATERVIEW_TEST_RANK_PARAMS").is_ok_and(|v| v == "1").then_some(None),
            test_set_gpus: std::env::var("WATERVIEW_TEST_SET_GPUS")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(|n| (n, false)),
        };
        running.ui.gpus = crate::ui::gpus_panel::GpusField(gpus);
        if std::env::var_os("WATERVIEW_TEST_PAUSED").is_some_and(|v| v == "1") {
            // tests/window.rs: the first frames at t = 0, to compare one GPU's picture with several GPUs'.
            running.ui.sim.playing = false;
        }
        if gpus > 1 {
            // The scene runs on the window's GPU until the ranks are built.
            let scene = running.world.scene().clone();
            running.build_world(scene, "scene".into(), false, None);
        }
        Ok(running)
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
            let _ = self
                .ctx
                .device
                .poll(wgpu::PollType::Wait { submission_index: None, timeout: Some(Duration::from_secs(5)) });
            let result = if r.offline.is_some() {
                r.rec.cancel();
                Err("offline capture cancelled by quitting".to_string())
            } else {
                r.rec.finish_blocking(&self.ctx.device).map(|s| s.path.display().to_string()).map_err(|e| e.to_string())
            };
            log::info!("recording at exit: {result:?}");
        }
        if let Some((w, _)) = self.finishing.take() {
            log::info!("recording at exit: {:?}", w.finish().map(|s| s.path).map_err(|e| e.to_string()));
        }
        self.closing.store(true, Ordering::Release);
    }
}

fn new_egui_state(egui_ctx: &egui::Context, window: &Window, ctx: &GpuContext) -> egui_winit::State {
    let max_tex = ctx.device.limits().max_texture_dimension_2d as usize;
    egui_winit::State::new(
        egui_ctx.clone(),
        egui::ViewportId::ROOT,
        window,
        Some(window.scale_factor() as f32),
        window.theme(),
        Some(max_tex),
    )
}

/// The window icon from `assets/icon.png`; `None` (and a log line) if it cannot be decoded.
fn window_icon() -> Option<winit::window::Icon> {
    let img = image::load_from_memory(ICON_PNG).map_err(|e| log::warn!("window icon: {e}")).ok()?.to_rgba8();
    let (w, h) = img.dimensions();
    winit::window::Icon::from_rgba(img.into_raw(), w, h).map_err(|e| log::warn!("window icon: {e}")).ok()
}

/// `wanted` shrunk (aspect kept) to fit within 90 % of the monitor's width and 85 % of its height, which
/// leaves room for the title bar, the task bar and the panel; as wanted when no monitor is known. Never
/// below 320x200 physical pixels.
fn fit_to_monitor(wanted: PhysicalSize<u32>, monitor: Option<PhysicalSize<u32>>) -> PhysicalSize<u32> {
    let Some(m) = monitor.filter(|m| m.width > 0 && m.height > 0) else { return wanted };
    let room = (0.9 * m.width as f64, 0.85 * m.height as f64);
    let k = (room.0 / wanted.width.max(1) as f64).min(room.1 / wanted.height.max(1) as f64).min(1.0);
    PhysicalSize::new(((wanted.width as f64 * k) as u32).max(320), ((wanted.height as f64 * k) as u32).max(200))
}

#[cfg(test)]
mod tests {
    use super::fit_to_monitor;
    use winit::dpi::PhysicalSize;

    #[test]
    fn the_first_window_fits_the_monitor() {
        let default = PhysicalSize::new(1280, 800);
        // A 720-line screen: the window's bottom must not be off-screen.
        let fitted = fit_to_monitor(default, Some(PhysicalSize::new(1280, 720)));
        assert!(fitted.height <= 612 && fitted.width <= 1152, "{fitted:?}");
        assert!((fitted.width as f64 / fitted.height as f64 - 1.6).abs() < 0.01, "aspect kept: {fitted:?}");
        // Room to spare, or no monitor known: as wanted.
        assert_eq!(fit_to_monitor(default, Some(PhysicalSize::new(3840, 2160))), default);
        assert_eq!(fit_to_monitor(default, None), default);
    }
}
