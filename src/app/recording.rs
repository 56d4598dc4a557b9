//! Capture glue of the window: live recording (F9; what the window shows, time-stamped by the wall clock),
//! offline capture ("Render video": frame k shows exactly t0 + k / fps simulated seconds, rendered at its
//! own size, previewed in the window; [`crate::capture::exact`] checks each frame's time through an
//! asynchronous read-back of the step state, so the window never waits) and the screenshots and videos
//! coming back from their rings and worker threads ([`crate::capture`]).

use super::frame::encode_scene_with;
use super::{Running, CAPTURE_DIR};
use crate::capture::exact::{ExactFrames, FrameOutputs};
use crate::capture::particles::{ExportOutputs, ParticleExporter, ParticleOutput, SurfaceOutput};
use crate::capture::{offline::format_for, VideoFormat, VideoRecorder};
use crate::render::{targets::Offscreen, OrbitCamera, Renderer, HDR_FORMAT};
use crate::sim::SimParams;
use crate::ui::capture_panel::CaptureStatus;
use crate::ui::UiAction;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A recording in progress.
pub(super) struct Recording {
    pub(super) rec: VideoRecorder,
    /// `None`: live; else the offline capture's own state.
    pub(super) offline: Option<Offline>,
    pub(super) started: Instant,
    /// Live: when the last frame was recorded.
    pub(super) last: Option<Instant>,
    pub(super) fps: f32,
    /// No more frames are recorded; the file is completed once the frames in flight are out.
    pub(super) stopping: bool,
    /// Message to show when the file is complete (e.g. why it stopped).
    pub(super) note: Option<String>,
}

/// The recording asked for on the command line (`--record PATH [--record-seconds S] [--record-fps F]
/// [--quit-after-record]`, see [`super::WindowOptions`]).
pub(super) struct CliRecording {
    pub(super) path: PathBuf,
    /// Most frames per second kept (`None`: the Capture panel's setting).
    pub(super) fps: Option<f32>,
    /// Wall-clock seconds after which the recording stops (`None`: F9 or quitting stops it).
    pub(super) seconds: Option<f64>,
    /// Quit once the file is complete.
    pub(super) quit_after: bool,
    /// The recording has been started (or failed to start).
    pub(super) started: bool,
}

/// Offline capture: exact frames of 1/fps, its own target, the window shows its frames.
pub(super) struct Offline {
    pub(super) target: Offscreen,
    /// The target registered as an egui texture (the preview).
    pub(super) texture: egui::TextureId,
    /// Which frame is due, the steps toward it and the check of its simulated time.
    pub(super) frames: ExactFrames,
    /// The particle files of every frame, when the Capture panel asks for them.
    pub(super) particles: Option<ParticleExporter>,
    /// Parameters and play state to restore afterwards.
    pub(super) saved_frame_dt: f32,
    pub(super) was_playing: bool,
}

impl Running {
    /// Renders the scene (current camera and settings, no UI) into a new [`HDR_FORMAT`] target of `size`
    /// pixels, in a submission of its own, with the renderer made for that format (built on the first EXR
    /// screenshot); its fluid targets are freed again right after. The caller records the target's copy
    /// into the screenshot ring, which writes the EXR file on a worker thread. Never waits on the GPU.
    pub(super) fn render_hdr_screenshot(&mut self, size: (u32, u32)) -> Offscreen {
        let renderer = self.hdr_renderer.get_or_insert_with(|| {
            let mut r = Renderer::new(&self.ctx, HDR_FORMAT, self.world.terrain());
            r.set_sky(&self.ctx, self.sky.as_ref());
            r.set_obstacles(&self.ctx, &self.world.obstacle_meshes());
            r.set_walls(&self.ctx, &self.world.wall_meshes());
            r
        });
        let target = Offscreen::with_format(&self.ctx, size, HDR_FORMAT);
        let mut enc =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("HDR screenshot") });
        encode_scene_with(
            renderer,
            &self.ctx,
            &self.profiler,
            &mut enc,
            &target,
            &self.camera,
            self.world.engine(),
            &self.ui,
        );
        self.ctx.queue.submit([enc.finish()]);
        renderer.release_targets();
        target
    }

    /// Takes finished recordings, screenshots and dialogs. Never blocks.
    pub(super) fn poll_background(&mut self) {
        while let Some(result) = self.capture.poll() {
            self.ui.render.capture_status = Some(match result {
                Ok(path) => {
                    log::info!("screenshot saved: {}", path.display());
                    Ok(format!("Saved {}", path.display()))
                }
                Err(e) => {
                    log::error!("screenshot failed: {e}");
                    Err(e.to_string())
                }
            });
        }
        self.poll_offline();
        if let Some(r) = self.recording.as_mut() {
            if let Some(e) = r.rec.poll() {
                self.ui.push_error(format!("recording failed: {e}"));
                self.ui.capture.status = Some(Err(e.to_string()));
                if let Some(r) = self.recording.take() {
                    self.end_offline(r.offline);
                }
            }
        }
        let particles_drained =
            |r: &Recording| r.offline.as_ref().and_then(|o| o.particles.as_ref()).is_none_or(|p| p.drained());
        let flushed = self.recording.as_ref().is_some_and(|r| r.stopping && r.rec.drained() && particles_drained(r));
        if flushed {
            if let Some(r) = self.recording.take() {
                let particles = self.end_offline(r.offline);
                let note = match (r.note.clone(), particles) {
                    (Some(a), Some(b)) => Some(format!("{a}. {b}")),
                    (a, b) => a.or(b),
                };
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
                        Err(e.to_string())
                    }
                };
                self.ui.capture.status = Some(status);
            }
        }
        self.poll_dialog();
        self.poll_checkpoint_save();
    }
    /// Restores what an offline capture changed (frame_dt, the simulation's `frame_end`, play state, the
    /// preview texture) and completes its particle files: returns what they came to (files written, or
    /// why they stopped), for the status line.
    pub(super) fn end_offline(&mut self, offline: Option<Offline>) -> Option<String> {
        let o = offline?;
        self.egui_renderer.free_texture(&o.texture);
        self.ui.sim.playing = o.was_playing;
        let params = self.world.engine().map(|engine| {
            engine.sim().set_frame_end(&self.ctx, 0.0);
            SimParams { frame_dt: o.saved_frame_dt, ..engine.params().clone() }
        });
        if let Some(params) = params {
            self.apply(UiAction::ApplyParams(params));
        }
        let particles = o.particles?;
        if !particles.drained() {
            let written = particles.outputs().describe(particles.written() as usize);
            particles.cancel();
            return Some(format!("stopped after {written}"));
        }
        Some(match particles.finish_blocking(&self.ctx.device) {
            Ok(s) => format!("Saved {}", s.outputs.describe(s.frames.len())),
            Err(e) => {
                self.ui.push_error(format!("particle or surface files: {e}"));
                format!("particle or surface files failed: {e}")
            }
        })
    }

    /// Offline capture: takes the step states that came back (confirming a frame's simulated time or
    /// asking for more steps). A failure stops the capture, keeping the frames made so far. Never blocks.
    fn poll_offline(&mut self) {
        let Some(r) = self.recording.as_mut() else { return };
        let Some(o) = r.offline.as_mut() else { return };
        // The particle copies go on to their worker until the last file is written, also once the last
        // frame is rendered (the capture is stopping then).
        let particles = o.particles.as_mut().and_then(ParticleExporter::poll);
        let frames = if r.stopping { None } else { o.frames.poll().err() };
        let Some(e) = frames.or(particles) else { return };
        let note = format!("capture stopped after {} frames: {e}", o.frames.frame());
        self.ui.push_error(note.clone());
        if !r.stopping {
            r.stopping = true;
            r.note = Some(note);
        }
    }

    /// The scene's simulation was replaced (reset, rebuilt, another scene): an offline capture cannot go
    /// on (the new simulation's clock starts again), so it ends with the frames made so far.
    pub(super) fn offline_sim_replaced(&mut self, why: &str) {
        let Some(r) = self.recording.as_mut().filter(|r| !r.stopping) else { return };
        let Some(o) = r.offline.as_ref() else { return };
        let note = format!("capture stopped after {} frames: {why}", o.frames.frame());
        log::info!("{note}");
        r.stopping = true;
        r.note = Some(note);
    }

    /// The status the capture panel shows.
    pub(super) fn update_capture_status(&mut self) {
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
                Some(o) => o.frames.frame() as f64 / r.fps as f64,
                None => r.started.elapsed().as_secs_f64(),
            };
            if let Some(o) = &r.offline {
                s.total = o.frames.total();
                let done = s.written.max(1) as f64;
                if s.written > 0 {
                    s.eta_s =
                        Some(r.started.elapsed().as_secs_f64() / done * (s.total.saturating_sub(s.written)) as f64);
                }
            }
        }
        self.capture_status = s;
    }

    /// Live recording: copies the window's scene target when a frame is due (at most `fps` a second).
    pub(super) fn record_live_frame(&mut self, enc: &mut wgpu::CommandEncoder) {
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

    /// Offline capture, this frame's share ([`ExactFrames::encode`]): once frame k's simulated time is
    /// confirmed (t0 + k / fps, read back asynchronously) and the recorder has room, renders that state
    /// into the capture target, copies it for the video (time k / fps) and records the steps toward frame
    /// k + 1 with the copy of the step state that checks them; nothing while that copy is on its way back.
    pub(super) fn encode_offline_frame(&mut self, enc: &mut wgpu::CommandEncoder) {
        let Some(mut r) = self.recording.take() else { return };
        let Recording { rec, offline, stopping, note, .. } = &mut r;
        if let Some(Offline { target, frames, particles, .. }) = offline.as_mut() {
            match self.world.engine_mut() {
                Some(engine) if !*stopping => {
                    // The video is centred: no panel covers it.
                    let camera = &OrbitCamera { lens_shift: 0.0, ..self.camera.clone() };
                    let (renderer, ctx, profiler, ui) = (&mut self.renderer, &self.ctx, &self.profiler, &self.ui);
                    let outputs = FrameOutputs { video: Some((rec, &target.color)), particles: particles.as_mut() };
                    let result = frames.encode(ctx, enc, engine, profiler, outputs, |enc, engine| {
                        encode_scene_with(renderer, ctx, profiler, enc, target, camera, Some(engine), ui)
                    });
                    if let Ok(Some(f)) = &result {
                        log::debug!(
                            "offline frame {}: simulated time {} s, video time {} s",
                            f.index,
                            f.sim_time,
                            f.video_time
                        );
                    }
                    if let Err(e) = result {
                        let message = format!("capture stopped after {} frames: {e}", frames.frame());
                        self.ui.push_error(message.clone());
                        *stopping = true;
                        *note = Some(message);
                    }
                }
                Some(_) => {}
                None => *stopping = true,
            }
            if frames.done() {
                *stopping = true;
            }
        }
        self.recording = Some(r);
    }

    /// After the frame's submission: starts mapping the recorder's and the offline capture's copies.
    pub(super) fn recording_after_submit(&mut self) {
        if let Some(r) = self.recording.as_mut() {
            r.rec.after_submit();
            if let Some(o) = r.offline.as_mut() {
                o.frames.after_submit();
                if let Some(p) = o.particles.as_mut() {
                    p.after_submit();
                }
            }
        }
    }

    /// Output path for a new video: `captures/waterview-<UTC time>.mp4` (or a folder for PNGs).
    pub(super) fn video_path(format: VideoFormat) -> PathBuf {
        let stem = format!("waterview-{}", crate::capture::utc_timestamp(std::time::SystemTime::now()));
        let name = match format {
            VideoFormat::Mp4 => format!("{stem}.mp4"),
            VideoFormat::PngSequence => stem,
        };
        Path::new(CAPTURE_DIR).join(name)
    }

    pub(super) fn start_live(&mut self) {
        let c = self.ui.capture.clone();
        let path = Self::video_path(c.format);
        self.start_live_to(&path, format_for_setting(c.format, &path), c.fps);
    }

    /// Starts a live recording of the window's scene target into `path`; false (and the banner) when the
    /// file cannot be started.
    fn start_live_to(&mut self, path: &Path, format: VideoFormat, fps: f32) -> bool {
        match VideoRecorder::start(&self.ctx.device, path, format, fps, self.offscreen.size, self.offscreen.format()) {
            Ok(rec) => {
                log::info!("recording {} at {}x{}", path.display(), self.offscreen.size.0, self.offscreen.size.1);
                self.ui.capture.status = None;
                self.recording = Some(Recording {
                    rec,
                    offline: None,
                    started: Instant::now(),
                    last: None,
                    fps,
                    stopping: false,
                    note: None,
                });
                true
            }
            Err(e) => {
                self.ui.push_error(format!("cannot start recording: {e}"));
                self.ui.capture.status = Some(Err(e.to_string()));
                false
            }
        }
    }

    /// The command line's recording, once per frame before anything is encoded: starts it (so the first
    /// frame drawn is its first frame), stops it after `--record-seconds` of wall time once it holds a
    /// frame, and with `--quit-after-record` asks the app to quit when its file is complete (or failed).
    pub(super) fn drive_cli_recording(&mut self) {
        let Some(c) = self.cli_record.as_mut() else { return };
        if !c.started {
            // A recording that cannot start leaves its error in the status, which the next frame reports.
            c.started = true;
            let (path, fps) = (c.path.clone(), c.fps.unwrap_or(self.ui.capture.fps));
            self.start_live_to(&path, format_for(&path), fps);
            return;
        }
        if let Some(limit) = c.seconds {
            if let Some(r) = self.recording.as_mut().filter(|r| r.offline.is_none() && !r.stopping) {
                if r.started.elapsed().as_secs_f64() >= limit && r.rec.recorded >= 1 {
                    r.stopping = true;
                    r.note = Some(format!("recording stopped after {limit} s (--record-seconds)"));
                    c.seconds = None;
                }
            }
        }
        if c.quit_after && self.recording.is_none() && self.finishing.is_none() && self.exit_with.is_none() {
            self.exit_with = Some(match &self.ui.capture.status {
                Some(Ok(message)) => {
                    log::info!("--quit-after-record: {message}");
                    Ok(())
                }
                Some(Err(e)) => Err(anyhow::anyhow!("recording {} failed: {e}", c.path.display())),
                None => Err(anyhow::anyhow!(
                    "recording {} ended without a file (the GPU device was lost?)",
                    c.path.display()
                )),
            });
            self.cli_record = None;
        }
    }

    /// `WATERVIEW_TEST_RENDER_VIDEO=1` (tests/window.rs): starts the Capture panel's offline render (its
    /// saved settings) with the first frame, before anything is simulated, and asks the app to quit once
    /// the file is complete: `Ok` with a saved file, else the error [`super::run`] returns.
    pub(super) fn drive_test_render(&mut self) {
        let Some(started) = self.test_render_video else { return };
        if !started {
            self.test_render_video = Some(true);
            self.start_offline();
            return;
        }
        if self.recording.is_none() && self.finishing.is_none() && self.exit_with.is_none() {
            self.exit_with = Some(match &self.ui.capture.status {
                Some(Ok(message)) => {
                    log::info!("WATERVIEW_TEST_RENDER_VIDEO: {message}");
                    Ok(())
                }
                Some(Err(e)) => Err(anyhow::anyhow!("the offline render failed: {e}")),
                None => Err(anyhow::anyhow!("the offline render ended without a file (it could not start?)")),
            });
            self.test_render_video = None;
        }
    }

    pub(super) fn start_offline(&mut self) {
        let c = self.ui.capture.clone();
        let Some(params) = self.world.engine().map(|e| e.params().clone()) else {
            self.ui.push_error(match self.world.ranks() {
                Some(_) => {
                    "cannot render a video in the window on several GPUs: set GPUs to 1, or use \
                            `waterview capture --gpus N`"
                }
                None => "cannot capture: the scene has no simulation",
            });
            return;
        };
        if c.surface {
            // The memory a frame's surface will take (the emitters' pool included), before anything starts.
            let particles = self.world.engine().map_or(0, |e| e.sim().capacity() as usize);
            if let Err(e) = c.surface_settings.check(particles) {
                self.ui.push_error(format!("cannot start the capture: {e}"));
                self.ui.capture.status = Some(Err(e.to_string()));
                return;
            }
        }
        let max_dim = self.ctx.device.limits().max_texture_dimension_2d;
        let size = (c.offline_size[0].clamp(16, max_dim), c.offline_size[1].clamp(16, max_dim));
        let fps = c.fps.clamp(2.0, 240.0);
        let path = Self::video_path(c.format);
        let target = Offscreen::new(&self.ctx, size);
        let rec = match VideoRecorder::start(
            &self.ctx.device,
            &path,
            format_for_setting(c.format, &path),
            fps,
            size,
            target.format(),
        ) {
            Ok(r) => r,
            Err(e) => {
                self.ui.push_error(format!("cannot start the capture: {e}"));
                self.ui.capture.status = Some(Err(e.to_string()));
                return;
            }
        };
        // frame_dt = 1/fps: the steps are as long as the headless capture's (`frame_end` lands them exactly).
        let saved_frame_dt = params.frame_dt;
        if let Some(engine) = self.world.engine_mut() {
            let result = engine.set_params(&self.ctx, &SimParams { frame_dt: 1.0 / fps, ..params });
            if let Err(e) = result {
                rec.cancel();
                self.ui.push_error(format!("cannot start the capture: {e}"));
                return;
            }
            self.ui.sim.sync_from(engine.sim());
        }
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let beside = |what: &str| path.with_file_name(format!("{stem}-{what}"));
        let outputs = ExportOutputs {
            particles: c.particles.then(|| ParticleOutput { dir: beside("particles"), format: c.particle_format }),
            surface: c.surface.then(|| SurfaceOutput {
                dir: beside("surface"),
                format: c.surface_format,
                settings: c.surface_settings,
            }),
        };
        let particles = match outputs.any() {
            true => match ParticleExporter::start(outputs) {
                Ok(p) => Some(p),
                Err(e) => {
                    rec.cancel();
                    self.ui.push_error(format!("cannot start the capture's particle or surface files: {e}"));
                    return;
                }
            },
            false => None,
        };
        let texture =
            self.egui_renderer.register_native_texture(&self.ctx.device, &target.color_view, wgpu::FilterMode::Linear);
        let total = crate::capture::offline::frame_count(c.offline_seconds, fps);
        log::info!(
            "offline capture {}: {total} frames at {}x{}, {fps} fps, each exactly 1/{fps} s",
            path.display(),
            size.0,
            size.1
        );
        let was_playing = self.ui.sim.playing;
        self.ui.sim.playing = true;
        self.ui.capture.status = None;
        self.recording = Some(Recording {
            rec,
            offline: Some(Offline {
                target,
                texture,
                frames: ExactFrames::new(&self.ctx.device, fps, total),
                particles,
                saved_frame_dt,
                was_playing,
            }),
            started: Instant::now(),
            last: None,
            fps,
            stopping: false,
            note: None,
        });
    }
}

/// The format the recorder writes for a panel setting (a PNG sequence for a folder path).
pub(super) fn format_for_setting(format: VideoFormat, path: &Path) -> VideoFormat {
    match format {
        VideoFormat::Mp4 => format_for(path),
        VideoFormat::PngSequence => VideoFormat::PngSequence,
    }
}
