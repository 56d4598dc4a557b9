//! Window events: keyboard shortcuts (see `ui/help.rs`), the orbit and fly cameras driven by the mouse
//! and WASD, resizing, and dropped files; events egui consumed (typing into a field, dragging a slider)
//! never reach the camera.

use super::Running;
use crate::render::OrbitCamera;
use crate::ui::UiAction;
use glam::Vec3;
use std::collections::HashSet;
use winit::dpi::{PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::ActiveEventLoop;
use winit::keyboard::{Key, KeyCode, NamedKey, PhysicalKey};

/// Camera drag state and held keys.
#[derive(Default)]
pub(super) struct Mouse {
    pub(super) pos: Option<PhysicalPosition<f64>>,
    /// Drags that started outside egui.
    pub(super) left: bool,
    pub(super) right: bool,
    pub(super) shift: bool,
    pub(super) ctrl: bool,
    /// Keys held down (for fly mode), by position on the keyboard.
    pub(super) keys: HashSet<KeyCode>,
}

impl Running {
    pub(super) fn window_event(&mut self, event_loop: &ActiveEventLoop, event: WindowEvent) {
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
                if event.state == ElementState::Pressed
                    && !event.repeat
                    && !response.consumed
                    && !self.egui_ctx.egui_wants_keyboard_input()
                {
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
            WindowEvent::MouseWheel { delta, .. }
                if !response.consumed && !self.egui_ctx.egui_wants_pointer_input() =>
            {
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
    pub(super) fn key(&mut self, event_loop: &ActiveEventLoop, key: &Key) {
        match key {
            Key::Named(NamedKey::Escape) if self.ui.show_help => self.ui.show_help = false,
            Key::Named(NamedKey::Escape) => event_loop.exit(),
            Key::Named(NamedKey::Space) => self.ui.sim.playing = !self.ui.sim.playing,
            Key::Named(NamedKey::F12) => self.screenshot_requested = Some(self.ui.render.capture_with_ui),
            Key::Named(NamedKey::F9) => self.apply(UiAction::ToggleRecording),
            Key::Named(NamedKey::F1) => self.ui.show_help = !self.ui.show_help,
            Key::Named(NamedKey::F2) => self.ui.show_panels = !self.ui.show_panels,
            Key::Character(c) if c.as_str() == "?" => self.ui.show_help = !self.ui.show_help,
            Key::Character(c) if self.mouse.ctrl && c.eq_ignore_ascii_case("o") => {
                self.apply(UiAction::OpenSceneDialog)
            }
            Key::Character(c) if self.mouse.ctrl && c.eq_ignore_ascii_case("s") => {
                self.apply(UiAction::SaveSceneDialog)
            }
            Key::Character(_) if self.mouse.ctrl => {}
            Key::Character(c) if c.eq_ignore_ascii_case("v") => {
                self.fly = !self.fly;
                log::info!("fly mode {}", if self.fly { "on" } else { "off" });
            }
            Key::Character(c) if c.eq_ignore_ascii_case("f") => self.fit_camera(),
            Key::Character(c) if c.eq_ignore_ascii_case("s") && !self.ui.sim.playing && !self.fly => {
                self.step_requested = true
            }
            Key::Character(c) if c.eq_ignore_ascii_case("r") => self.apply(UiAction::Reset),
            _ => {}
        }
    }

    /// F: the camera looks at the fluid's bounding box (latest statistics) from its current direction,
    /// at the distance where the box's bounding sphere fills the part of the view the side panel leaves
    /// free (the lens shift centres the target there).
    pub(super) fn fit_camera(&mut self) {
        let Some(s) = self.world.sim().and_then(|sim| sim.latest_stats()).cloned() else {
            self.ui.push_error("cannot frame the fluid yet: no statistics have come back from the GPU");
            return;
        };
        let (min, max) = (Vec3::from(s.bbox_min), Vec3::from(s.bbox_max));
        if !(min.is_finite() && max.is_finite()) || min.cmpgt(max).any() {
            self.ui.push_error("cannot frame the fluid: its bounding box is empty");
            return;
        }
        let radius = (0.5 * (max - min).length()).max(1e-2);
        // The free area: the window less the panel, whose width is lens_shift x the window's.
        let free = (1.0 - self.camera.lens_shift.clamp(0.0, 0.9)) * self.config.width.max(1) as f32;
        let aspect = free / self.config.height.max(1) as f32;
        let half_fov = 0.5 * self.camera.fov_y.min(2.0 * ((0.5 * self.camera.fov_y).tan() * aspect).atan());
        // The view direction (yaw, pitch) is kept.
        self.camera.target = 0.5 * (min + max);
        self.camera.distance = radius / half_fov.sin() * 1.05;
        self.camera.zoom(0.0);
    }

    /// Fly mode: moves the camera by the held keys for `dt` seconds.
    pub(super) fn fly_move(&mut self, dt: f32) {
        if !self.fly || self.mouse.keys.is_empty() {
            return;
        }
        let k = &self.mouse.keys;
        let axis = |pos: KeyCode, neg: KeyCode| (k.contains(&pos) as i32 - k.contains(&neg) as i32) as f32;
        let forward = (self.camera.target - self.camera.eye()).normalize_or(Vec3::NEG_Z);
        let right = forward.cross(Vec3::Y).normalize_or(Vec3::X);
        let dir = forward * axis(KeyCode::KeyW, KeyCode::KeyS)
            + right * axis(KeyCode::KeyD, KeyCode::KeyA)
            + Vec3::Y * axis(KeyCode::KeyE, KeyCode::KeyQ);
        let fast = if self.mouse.shift { 4.0 } else { 1.0 };
        self.camera.target += dir.normalize_or_zero() * self.fly_speed * fast * dt.min(0.25);
    }

    pub(super) fn resize(&mut self, size: PhysicalSize<u32>) {
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
}

/// Mouse look in fly mode: turns the view about the eye (the eye stays where it is).
pub(super) fn fly_look(camera: &mut OrbitCamera, dx: f32, dy: f32) {
    let eye = camera.eye();
    camera.rotate(-dx, -dy);
    let offset = camera.eye() - camera.target;
    camera.target = eye - offset;
}
