//! One frame of the window, in a fixed order (see the module docs of [`crate::app`]): poll what came back,
//! acquire the surface texture, run egui and apply its actions, encode simulation, scene, capture copies
//! and the composite (the scene blitted, egui on top) into one encoder, submit and present. Nothing here
//! waits on the GPU.

use super::{Blit, Running};
use crate::engine::Engine;
use crate::gpu::{GpuContext, Profiler};
use crate::render::{lens_shift_for_panel, targets::Offscreen, OrbitCamera, Renderer};
use crate::ui::{self, capture_panel::ScreenshotFormat, FrameInfo, UiState};
use std::sync::atomic::Ordering;
use std::time::Instant;

impl Running {
    /// One frame; see the module docs for the order. Never waits on the GPU.
    pub(super) fn frame(&mut self) {
        if !self.minimized && !self.device_lost.load(Ordering::Acquire) {
            let _ = self.ctx.device.poll(wgpu::PollType::Poll);
            if self.submitted.saturating_sub(self.completed.load(Ordering::Acquire)) >= 2 {
                // The GPU is two frames behind (a scene slower than the screen): draw nothing this time
                // (the last image stays) rather than wait for a surface texture; window events go on being
                // handled, and the next frame draws their result.
                self.poll_build();
                std::thread::sleep(std::time::Duration::from_millis(1));
                return;
            }
        }
        let now = Instant::now();
        let dt = now - self.last_frame;
        self.ui.stats.push(dt);
        self.last_frame = now;
        self.pace.observe(dt);
        if self.minimized {
            return;
        }
        self.frames += 1;
        if self.test_device_loss == Some(self.frames) {
            log::warn!("WATERVIEW_TEST_DEVICE_LOSS: destroying the device");
            self.ctx.device.destroy();
        }
        if let (true, Some(engine)) = (self.test_poison_frame == Some(self.frames), self.world.engine()) {
            log::warn!("WATERVIEW_TEST_POISON_FRAME: particle 0's velocity made NaN");
            crate::engine::batch::poison_particle(&self.ctx, engine, 0);
        }
        if self.device_lost.swap(false, Ordering::AcqRel) {
            self.recover_device();
            return;
        }
        self.drive_test_set_gpus();
        self.drive_test_move_obstacle();
        self.fps_log.0 += 1;
        let since = self.fps_log.1.elapsed().as_secs_f64();
        if since >= self.fps_log_every {
            log::info!(
                "frame rate: {:.1} fps at {}x{}, {} particles{}",
                self.fps_log.0 as f64 / since,
                self.config.width,
                self.config.height,
                crate::text::thousands(self.world.particles()),
                if self.recording.is_some() { " (recording)" } else { "" }
            );
            self.fps_log = (0, Instant::now());
            if let Some(r) = self.world.ranks() {
                for line in ui::gpus_panel::ranks_log_lines(&r.info()) {
                    log::info!("per-GPU panel: {line}");
                }
            }
        }
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        let stats = self.world.sim_mut().and_then(|sim| sim.poll_stats());
        self.ui.history.push_frame(dt, self.profiler.latest(), stats);
        let moved = self.world.engine().map(|e| (e.has_bodies(), e.obstacles_version()));
        if let Some((bodies, version)) = moved {
            if bodies || version != self.obstacles_drawn {
                // The bodies moved when their statistics landed, or a static obstacle on its way to where
                // the Scene panel put it moved with the last frame's step: draw them where they are now.
                let meshes = self.world.obstacle_meshes();
                self.renderer.set_obstacles(&self.ctx, &meshes);
                if let Some(hdr) = self.hdr_renderer.as_mut() {
                    // The EXR screenshots' renderer (made by the first one) draws them there too.
                    hdr.set_obstacles(&self.ctx, &meshes);
                }
                self.obstacles_drawn = version;
            }
        }
        self.pause_on_blow_up();
        self.poll_build();
        self.drive_test_load();
        self.poll_background();
        self.poll_sky();
        self.drive_cli_recording();
        self.drive_test_render();
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
        let building = self.build_status();
        let gpus = match self.world.ranks() {
            Some(r) => r.info(),
            None => ui::gpus_panel::GpusInfo { gpus: 1, ..Default::default() },
        };
        let output = {
            let info = FrameInfo {
                ctx: &self.ctx,
                scene: self.world.scene(),
                sim: self.world.sim(),
                stats: self.world.sim().and_then(|s| s.latest_stats()),
                gpu_times: self.profiler.latest(),
                capture: &self.capture_status,
                fly: self.fly,
                building,
                gpus: &gpus,
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

        // A screenshot at k x the window size, or an EXR one (float target, its own renderer): the scene in
        // a submission of its own (camera uniform).
        let mut screenshot = self.screenshot_requested.take();
        if screenshot.is_some() {
            // Refused before anything is rendered when the folder cannot take it.
            if let Err(e) = crate::capture::output::check_writable(
                std::path::Path::new(super::CAPTURE_DIR),
                crate::capture::output::Output::Folder,
            ) {
                self.ui.push_error(format!("screenshot not taken: {e}"));
                screenshot = None;
            }
        }
        let exr = screenshot.is_some() && self.ui.capture.screenshot_format == ScreenshotFormat::Exr;
        let scale = self.ui.capture.screenshot_scale.clamp(1, 8);
        let max_dim = self.ctx.device.limits().max_texture_dimension_2d;
        let fits = size.0 * scale <= max_dim && size.1 * scale <= max_dim;
        if screenshot.is_some() && scale > 1 && !fits {
            self.ui.push_error(format!("a screenshot at {scale}x the window is past this GPU's texture limit of {max_dim} pixels; taking it at 1x"));
        }
        let k = if fits { scale } else { 1 };
        // The view centres on the part of the window the side panel leaves free (a lens shift, so the
        // scene still fills the window behind the panel); a screenshot without the UI is centred.
        let panel_shift = match (self.ui.show_panels, preview) {
            (true, None) => lens_shift_for_panel(self.ui.panel_width * output.pixels_per_point, size.0 as f32),
            _ => 0.0,
        };
        let centred = exr || screenshot == Some(false);
        self.camera.lens_shift = if centred { 0.0 } else { panel_shift };
        let hires = match screenshot {
            Some(_) if exr => Some(self.render_hdr_screenshot((size.0 * k, size.1 * k))),
            Some(with_ui) if k > 1 || (!with_ui && panel_shift != 0.0) => {
                let target = Offscreen::new(&self.ctx, (size.0 * k, size.1 * k));
                let mut enc = self
                    .ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hi-res screenshot") });
                self.encode_scene(&mut enc, &target);
                self.ctx.queue.submit([enc.finish()]);
                Some(target)
            }
            _ => None,
        };
        self.camera.lens_shift = panel_shift;

        let device = &self.ctx.device;
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("frame") });
        let offline = self.recording.as_ref().is_some_and(|r| r.offline.is_some());
        if offline {
            self.encode_offline_frame(&mut enc);
        } else if self.world.ranks().is_some() {
            self.ranks_frame(&mut enc);
            self.record_live_frame(&mut enc);
        } else {
            if let Some(sim) = self.world.sim_mut() {
                // Playing: the steps that cover the frame's time, within the frame budget (`pace`).
                let steps = self.pace.steps(if self.ui.sim.playing { sim.frame_steps() } else { 0 });
                if steps > 0 {
                    sim.encode_frame(&mut enc, &self.profiler, steps);
                } else if self.step_requested {
                    sim.encode_step(&mut enc, &self.profiler);
                }
            }
            // The window's scene (the state after this frame's step, as before).
            encode_scene_with(
                &mut self.renderer,
                &self.ctx,
                &self.profiler,
                &mut enc,
                &self.offscreen,
                &self.camera,
                self.world.engine(),
                &self.ui,
            );
            self.record_live_frame(&mut enc);
        }
        if let Some(sim) = self.world.sim_mut() {
            sim.encode_stats(&mut enc, &self.profiler);
        }
        self.step_requested = false;

        let device = &self.ctx.device;
        let screen =
            egui_wgpu::ScreenDescriptor { size_in_pixels: [size.0, size.1], pixels_per_point: output.pixels_per_point };
        for (id, delta) in &output.textures_delta.set {
            for d in delta {
                self.egui_renderer.update_texture(device, &self.ctx.queue, *id, d);
            }
        }
        let callback_buffers =
            self.egui_renderer.update_buffers(device, &self.ctx.queue, &mut enc, &paint_jobs, &screen);

        if let Some(with_ui) = screenshot {
            let result = match (&hires, with_ui) {
                // EXR: the linear scene only, never the UI.
                (Some(hdr), _) if exr => self.capture.request(&mut enc, &hdr.color, hdr.size),
                (Some(big), true) => {
                    let k = big.size.0 / size.0.max(1);
                    let screen_k = egui_wgpu::ScreenDescriptor {
                        size_in_pixels: [big.size.0, big.size.1],
                        pixels_per_point: output.pixels_per_point * k as f32,
                    };
                    let source = self.blit.bind_source(&self.ctx, &big.color_view);
                    let (texture, view) =
                        ui_target(&mut self.ui_target, &self.ctx, self.config.format, self.draw_format, big.size);
                    composite(
                        &mut enc,
                        &self.profiler,
                        view,
                        &self.blit,
                        &source,
                        &self.egui_renderer,
                        &paint_jobs,
                        &screen_k,
                        "composite (capture)",
                    );
                    self.capture.request(&mut enc, texture, big.size)
                }
                (Some(big), false) => self.capture.request(&mut enc, &big.color, big.size),
                (None, true) => {
                    let (texture, view) =
                        ui_target(&mut self.ui_target, &self.ctx, self.config.format, self.draw_format, size);
                    composite(
                        &mut enc,
                        &self.profiler,
                        view,
                        &self.blit,
                        &self.blit.bind_group,
                        &self.egui_renderer,
                        &paint_jobs,
                        &screen,
                        "composite (capture)",
                    );
                    self.capture.request(&mut enc, texture, size)
                }
                (None, false) => self.capture.request(&mut enc, &self.offscreen.color, size),
            };
            self.ui.render.capture_status = Some(match result {
                Ok(()) if exr && with_ui => Ok("Saving EXR screenshot (EXR is always without the UI)…".into()),
                Ok(()) if exr => Ok("Saving EXR screenshot…".into()),
                Ok(()) => Ok("Saving screenshot…".into()),
                Err(e) => Err(e.to_string()),
            });
        }

        let surface_view = frame
            .texture
            .create_view(&wgpu::TextureViewDescriptor { format: Some(self.draw_format), ..Default::default() });
        composite(
            &mut enc,
            &self.profiler,
            &surface_view,
            &self.blit,
            &self.blit.bind_group,
            &self.egui_renderer,
            &paint_jobs,
            &screen,
            "composite",
        );

        self.profiler.resolve(&mut enc);
        self.ctx.queue.submit(callback_buffers.into_iter().chain(std::iter::once(enc.finish())));
        self.submitted += 1;
        let (completed, n) = (self.completed.clone(), self.submitted);
        self.ctx.queue.on_submitted_work_done(move || {
            completed.fetch_max(n, Ordering::AcqRel);
        });
        self.count_build_frame();
        if let Some(sim) = self.world.sim_mut() {
            sim.after_submit();
        }
        self.capture.after_submit();
        self.recording_after_submit();
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

    /// A new blow-up in the statistics (non-finite particles, [`crate::sim::Simulation::blow_up`]) pauses
    /// the simulation and goes to the banner with its frame and likely cause, once.
    fn pause_on_blow_up(&mut self) {
        let Some(blow_up) = self.world.sim().and_then(|s| s.blow_up()) else { return };
        if self.reported_blow_up.as_ref() == Some(blow_up) {
            return;
        }
        let blow_up = blow_up.clone();
        self.ui.sim.playing = false;
        self.ui.push_error(format!("{blow_up}. Paused: Reset restarts the scene"));
        self.reported_blow_up = Some(blow_up);
    }

    /// Renders the scene (current camera and settings) into `target`.
    pub(super) fn encode_scene(&mut self, enc: &mut wgpu::CommandEncoder, target: &Offscreen) {
        encode_scene_with(
            &mut self.renderer,
            &self.ctx,
            &self.profiler,
            enc,
            target,
            &self.camera,
            self.world.engine(),
            &self.ui,
        );
    }
}

/// The offline capture's frames, scaled to fit the central area (aspect kept).
pub(super) fn preview_ui(ui: &mut egui::Ui, texture: egui::TextureId, size: (f32, f32)) {
    egui::CentralPanel::default().frame(egui::Frame::NONE.fill(egui::Color32::from_gray(20))).show(ui, |ui| {
        let avail = ui.available_size();
        let k = (avail.x / size.0).min(avail.y / size.1).max(0.01);
        ui.centered_and_justified(|ui| {
            ui.add(egui::Image::new(egui::load::SizedTexture::new(texture, egui::vec2(size.0 * k, size.1 * k))));
        });
    });
}

/// Renders the scene (camera, render settings, the engine's particles) into `target`.
#[allow(clippy::too_many_arguments)]
pub(super) fn encode_scene_with(
    renderer: &mut Renderer,
    ctx: &GpuContext,
    profiler: &Profiler,
    enc: &mut wgpu::CommandEncoder,
    target: &Offscreen,
    camera: &OrbitCamera,
    engine: Option<&Engine>,
    ui: &UiState,
) {
    let particles = engine.map(Engine::particles);
    let sim = engine.map(Engine::sim);
    renderer.encode(
        ctx,
        enc,
        profiler,
        target,
        camera,
        particles,
        &ui.render.settings_for(sim.map_or(0.05, |s| s.particle_radius())),
    );
}

/// The include-UI capture target (surface format, `RENDER_ATTACHMENT | COPY_SRC`, viewed as
/// `draw_format`), (re)made at `size`.
pub(super) fn ui_target<'a>(
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
        let view =
            texture.create_view(&wgpu::TextureViewDescriptor { format: Some(draw_format), ..Default::default() });
        return slot.insert((texture, view));
    }
    match slot {
        Some(t) => t,
        None => unreachable!("`stale` is true when the slot is empty"),
    }
}

/// One render pass into `target`: the scene (`source`, a blit bind group) blitted, egui drawn over it.
#[allow(clippy::too_many_arguments)]
pub(super) fn composite(
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
