//! Capture panel: video recording (live: what the window shows, without the UI; offline: from the current
//! state, video frame k shows exactly k/fps simulated seconds later, rendered at a chosen size however
//! long it takes while the window stays responsive, with a progress bar, the time left and cancel), the output kind (H.264 MP4 or a PNG sequence), and screenshots
//! at a multiple of the window's resolution, as PNG or as OpenEXR of the linear image
//! ([`ScreenshotFormat`]); offline renders can also write every frame's particles (PLY or VTU). The recording itself lives in the app; this panel edits settings and shows the
//! status the app hands it in [`CaptureStatus`].

use super::UiAction;
use crate::capture::VideoFormat;
use crate::particle_io::ParticleFormat;
use crate::surface::{MeshFormat, SurfaceSettings};
use serde::{Deserialize, Serialize};

/// How a recording gets its frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CaptureMode {
    /// What the window shows, at the window's size, in real time (frames the machine cannot keep up with
    /// are dropped).
    Live,
    /// Exact frames: frame k shows the simulation k/fps simulated seconds after the start (checked on the
    /// GPU's clock, see [`crate::capture::exact`]), offscreen at `offline_size`, as slowly as needed.
    Offline,
}

/// File format of screenshots (F12 and the screenshot buttons).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScreenshotFormat {
    /// 8-bit sRGB PNG, with or without the UI.
    #[default]
    Png,
    /// OpenEXR of the linear image: 32-bit float RGBA, the tone-mapped colours before sRGB encoding
    /// (rendered into a 16-bit float target); always without the UI.
    Exr,
}

/// Settings of the panel (saved between runs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CapturePanelState {
    pub format: VideoFormat,
    pub mode: CaptureMode,
    /// Video frames per second (live: the most recorded per wall-clock second).
    pub fps: f32,
    /// Offline video size, pixels.
    pub offline_size: [u32; 2],
    /// Offline length, simulated seconds.
    pub offline_seconds: f32,
    /// Screenshots render the scene at this multiple of the window size (1 ..= 4).
    pub screenshot_scale: u32,
    /// PNG or EXR (linear HDR) screenshots.
    pub screenshot_format: ScreenshotFormat,
    /// Offline: also write every frame's particles (a folder beside the video).
    pub particles: bool,
    /// Format of those particle files.
    pub particle_format: ParticleFormat,
    /// Offline: also write every frame's water surface as a mesh (a folder beside the video).
    pub surface: bool,
    /// Format of those meshes.
    pub surface_format: MeshFormat,
    /// How the meshes are made (lengths in particle spacings dx).
    pub surface_settings: SurfaceSettings,
    /// Last recording's result, for the status line.
    #[serde(skip)]
    pub status: Option<Result<String, String>>,
}

impl Default for CapturePanelState {
    fn default() -> Self {
        Self {
            format: VideoFormat::Mp4,
            mode: CaptureMode::Live,
            fps: 30.0,
            offline_size: [1920, 1080],
            offline_seconds: 10.0,
            screenshot_scale: 1,
            screenshot_format: ScreenshotFormat::Png,
            particles: false,
            particle_format: ParticleFormat::Ply,
            surface: false,
            surface_format: MeshFormat::Ply,
            surface_settings: SurfaceSettings::default(),
            status: None,
        }
    }
}

/// The offline capture's surface rows: whether to write meshes, their format and how they are made.
fn surface_rows(ui: &mut egui::Ui, state: &mut CapturePanelState) {
    ui.label("Surface").on_hover_text(
        "Also write the water's surface of every video frame as a triangle mesh into a folder beside the \
         video, captures/waterview-…-surface/: marching cubes over the particles' SPH density \
         (splashsurf_lib) on the CPU while the frames render; binary PLY with vertex normals (Blender, \
         Houdini, ParaView) or OBJ. A million particles take seconds per frame",
    );
    ui.horizontal(|ui| {
        ui.checkbox(&mut state.surface, "write");
        ui.add_enabled_ui(state.surface, |ui| {
            ui.radio_value(&mut state.surface_format, MeshFormat::Ply, "PLY");
            ui.radio_value(&mut state.surface_format, MeshFormat::Obj, "OBJ");
        });
    });
    ui.end_row();
    let s = &mut state.surface_settings;
    ui.label("Surface detail").on_hover_text(
        "In particle spacings dx. Cube: the marching cubes' edge (smaller is finer, slower and takes more \
         memory). Radius: each particle's (its volume is the cube of its diameter: 0.5 holds dx^3). \
         Support: the kernel's reach (smoother with more). Iso: the surface's level as a fraction of the \
         rest density. Smoothing: iterations of the weighted Laplacian smoothing that removes the bumps \
         of single particles (spray and thin sheets are smoothed less)",
    );
    ui.add_enabled_ui(state.surface, |ui| {
        ui.horizontal_wrapped(|ui| {
            ui.add(egui::DragValue::new(&mut s.cube_size).range(0.0625..=4.0).speed(0.01).prefix("cube "));
            ui.add(egui::DragValue::new(&mut s.particle_radius).range(0.25..=2.0).speed(0.01).prefix("radius "));
            let least_support = 2.0 * s.particle_radius;
            ui.add(egui::DragValue::new(&mut s.support).range(least_support..=6.0).speed(0.01).prefix("support "));
            ui.add(egui::DragValue::new(&mut s.iso).range(0.05..=1.5).speed(0.01).prefix("iso "));
            let most = crate::surface::MAX_SMOOTHING;
            ui.add(egui::DragValue::new(&mut s.smoothing).range(0..=most).speed(0.2).prefix("smoothing "));
        });
    });
    ui.end_row();
}

/// What the app reports about the recording in progress.
#[derive(Clone, Debug, Default)]
pub struct CaptureStatus {
    /// A recording is running (live or offline).
    pub recording: bool,
    pub offline: bool,
    /// Output path being written.
    pub path: String,
    /// Seconds of video recorded so far.
    pub video_s: f64,
    /// Frames written by the encoder and recorded in total.
    pub written: u64,
    pub recorded: u64,
    /// Live: frames skipped because the encoder could not keep up.
    pub dropped: u64,
    /// Offline: frames in the whole video; estimated wall-clock seconds left.
    pub total: u64,
    pub eta_s: Option<f64>,
    /// The recording finished and the file is being completed.
    pub finishing: bool,
}

/// Draws the panel; returns recording and screenshot actions.
pub fn capture_panel_ui(
    ui: &mut egui::Ui,
    state: &mut CapturePanelState,
    status: &CaptureStatus,
    with_ui: bool,
) -> Vec<UiAction> {
    let mut actions = Vec::new();
    egui::CollapsingHeader::new("Capture").default_open(true).show(ui, |ui| {
        let busy = status.recording || status.finishing;
        ui.add_enabled_ui(!busy, |ui| {
            egui::Grid::new("capture_grid").num_columns(2).show(ui, |ui| {
                ui.label("Output").on_hover_text(
                    "H.264 in an MP4 file (encoded in-process, no ffmpeg needed), or numbered PNG files in a folder",
                );
                ui.horizontal(|ui| {
                    ui.radio_value(&mut state.format, VideoFormat::Mp4, "MP4");
                    ui.radio_value(&mut state.format, VideoFormat::PngSequence, "PNG sequence");
                });
                ui.end_row();
                ui.label("Mode").on_hover_text(
                    "Live: what the window shows (without the UI), time-stamped by the wall clock; \
                     frames the machine cannot encode in time are dropped.\n\
                     Offline: from the current state, video frame k shows the simulation exactly k/fps simulated \
                     seconds later, rendered at the size below however slowly. The window stays responsive \
                     meanwhile; resetting the simulation or loading a scene ends the video early.",
                );
                ui.horizontal(|ui| {
                    ui.radio_value(&mut state.mode, CaptureMode::Live, "Live");
                    ui.radio_value(&mut state.mode, CaptureMode::Offline, "Offline");
                });
                ui.end_row();
                ui.label("Frame rate").on_hover_text("Video frames per second");
                ui.add(egui::Slider::new(&mut state.fps, 5.0..=60.0).suffix(" fps").step_by(1.0));
                ui.end_row();
                if state.mode == CaptureMode::Offline {
                    ui.label("Size").on_hover_text("Video size in pixels (may exceed the window)");
                    ui.horizontal(|ui| {
                        ui.add(egui::DragValue::new(&mut state.offline_size[0]).range(16..=8192).suffix(" px"));
                        ui.label("×");
                        ui.add(egui::DragValue::new(&mut state.offline_size[1]).range(16..=8192).suffix(" px"));
                        egui::ComboBox::from_id_salt("size_presets").selected_text("preset").width(60.0).show_ui(
                            ui,
                            |ui| {
                                for (name, w, h) in [
                                    ("720p", 1280, 720),
                                    ("1080p", 1920, 1080),
                                    ("1440p", 2560, 1440),
                                    ("4K", 3840, 2160),
                                ] {
                                    if ui.selectable_label(false, name).clicked() {
                                        state.offline_size = [w, h];
                                    }
                                }
                            },
                        );
                    });
                    ui.end_row();
                    ui.label("Length")
                        .on_hover_text("Simulated seconds to record: length × frame rate frames (rounded)");
                    ui.add(
                        egui::DragValue::new(&mut state.offline_seconds).range(0.1..=3600.0).speed(0.1).suffix(" s"),
                    );
                    ui.end_row();
                    ui.label("Particles").on_hover_text(
                        "Also write the particles of every video frame (exactly 1/fps simulated seconds apart, the \
                         time in each file) into a folder beside the video, captures/waterview-…-particles/: \
                         binary PLY (x y z vx vy vz density; Houdini, Blender, ParaView) or VTU with a .pvd \
                         collection (ParaView)",
                    );
                    ui.horizontal(|ui| {
                        ui.checkbox(&mut state.particles, "write");
                        ui.add_enabled_ui(state.particles, |ui| {
                            ui.radio_value(&mut state.particle_format, ParticleFormat::Ply, "PLY");
                            ui.radio_value(&mut state.particle_format, ParticleFormat::Vtu, "VTU");
                        });
                    });
                    ui.end_row();
                    surface_rows(ui, state);
                }
            });
        });
        ui.horizontal(|ui| {
            if status.recording {
                let label = if status.offline { "Cancel capture" } else { "Stop recording (F9)" };
                if ui.button(egui::RichText::new(label).color(egui::Color32::LIGHT_RED)).clicked() {
                    actions.push(if status.offline { UiAction::CancelOffline } else { UiAction::ToggleRecording });
                }
            } else if status.finishing {
                ui.add(egui::Spinner::new());
                ui.label("completing the file…");
            } else {
                let (label, hover) = match state.mode {
                    CaptureMode::Live => ("Record (F9)", "Record what the window shows, without the UI"),
                    CaptureMode::Offline => (
                        "Render video",
                        "Render length × frame rate frames from the current state, each exactly 1/fps simulated \
                         seconds after the previous; the window previews them and shows the progress",
                    ),
                };
                if ui
                    .button(egui::RichText::new(label).color(egui::Color32::from_rgb(255, 90, 90)))
                    .on_hover_text(hover)
                    .clicked()
                {
                    actions.push(match state.mode {
                        CaptureMode::Live => UiAction::ToggleRecording,
                        CaptureMode::Offline => UiAction::StartOffline,
                    });
                }
            }
        });
        if status.recording {
            ui.label(format!("{}: {:.1} s, {} frames written", status.path, status.video_s, status.written));
            if status.offline && status.total > 0 {
                let f = status.written as f32 / status.total as f32;
                let eta = status.eta_s.map_or_else(|| "estimating…".into(), format_eta);
                ui.add(
                    egui::ProgressBar::new(f).text(format!("{} / {} frames, {eta} left", status.written, status.total)),
                );
            } else if status.dropped > 0 {
                ui.colored_label(egui::Color32::YELLOW, format!("{} frames dropped (encoder behind)", status.dropped))
                    .on_hover_text(
                        "The machine cannot encode every frame in real time; use Offline mode for a smooth video",
                    );
            }
        }
        match &state.status {
            Some(Ok(m)) => {
                ui.label(m);
            }
            Some(Err(e)) => {
                ui.colored_label(egui::Color32::LIGHT_RED, e);
            }
            None => {}
        }
        ui.separator();
        ui.horizontal(|ui| {
            ui.label("Screenshot")
                .on_hover_text("PNG or EXR into captures/ (F12); \"include UI\" is in the Rendering panel");
            ui.add(egui::Slider::new(&mut state.screenshot_scale, 1..=4).prefix("× ").text("window size"));
        });
        ui.horizontal(|ui| {
            ui.label("Format").on_hover_text("File format of screenshots; the size multiple above applies to both");
            ui.radio_value(&mut state.screenshot_format, ScreenshotFormat::Png, "PNG")
                .on_hover_text("8-bit sRGB PNG, as shown on screen; with the UI when \"include UI\" is ticked");
            ui.radio_value(&mut state.screenshot_format, ScreenshotFormat::Exr, "EXR (linear HDR)").on_hover_text(
                "OpenEXR, 32-bit float RGBA: the rendered scene's linear colours (after the tone map, before \
                 sRGB encoding), for compositing and grading tools. Always without the UI.",
            );
        });
        if state.screenshot_format == ScreenshotFormat::Exr && with_ui {
            ui.weak("EXR screenshots never include the UI");
        }
        if ui.button("Take screenshot (F12)").clicked() {
            actions.push(UiAction::Screenshot { with_ui });
        }
    });
    actions
}

/// "1 h 02 min", "3 min 05 s", "12 s".
pub fn format_eta(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{} h {:02} min", s / 3600, (s / 60) % 60)
    } else if s >= 60 {
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn eta_formats() {
        assert_eq!(super::format_eta(5.2), "5 s");
        assert_eq!(super::format_eta(185.0), "3 min 05 s");
        assert_eq!(super::format_eta(3720.0), "1 h 02 min");
    }
}
