//! Screenshots that never stall the frame. A request records `copy_texture_to_buffer` into a free staging
//! buffer of a small ring (rows padded to 256 bytes, as wgpu requires) in the frame's own encoder;
//! [`Capture::after_submit`] starts mapping it; a later frame's [`Capture::poll`] finds it mapped, copies
//! the bytes out and hands them to a worker thread, which removes the row padding, swaps BGRA to RGBA if
//! needed, and writes a PNG under `captures/` (first to `NAME.png.part`, renamed when complete, so a
//! half-written file never carries the final name). The result (path or [`CaptureError`]) comes back
//! through `poll` on a later frame. Nothing here waits on the GPU or on the disk.
//!
//! The texture's format picks the file: 8-bit RGBA/BGRA gives a PNG; [`crate::render::HDR_FORMAT`]
//! (`Rgba16Float`) gives an OpenEXR file of the linear image (the tone-mapped values before sRGB
//! encoding, as 32-bit float RGBA, written by the `image` crate's EXR encoder), the same way.
//!
//! Which texture is copied is the caller's choice: the app copies its offscreen scene target (no UI) or,
//! for "include UI", a second texture of the surface's format into which it draws the scene and egui
//! once more in that frame (see `src/app/frame.rs`); for an EXR screenshot, a float target into which a
//! second renderer, made for that format, drew the scene (never the UI).
//!
//! Video: [`video`] writes frames as H.264/MP4 or numbered PNGs on a worker thread, [`recorder`] brings
//! them back from the GPU through a ring of staging buffers, [`particles`] does the same with the
//! simulation's particles (PLY or VTU files per frame), [`offline`] runs fixed-step captures
//! without a window (`waterview capture`, blocking on the simulation's step state), [`ranks`] does the
//! same for a simulation decomposed over several GPUs (`capture --gpus N`, or one process per rank under
//! `mpirun`, [`ranks_cli`]; rendered sort-last), and
//! [`exact`] makes
//! the window's offline render exact the same way without ever blocking (the step state comes back
//! through a read-back ring; see `src/app/recording.rs`).

pub mod exact;
pub mod offline;
pub mod output;
pub mod particles;
pub mod ranks;
pub mod ranks_cli;
pub mod record_cost;
pub mod recorder;
pub mod video;

pub use recorder::VideoRecorder;
pub use video::{VideoFormat, VideoFrame, VideoSummary, VideoWriter};

use std::path::{Path, PathBuf};
use std::sync::{
    atomic::{AtomicU8, Ordering},
    mpsc, Arc,
};
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a screenshot, a video or an offline capture failed. A message names what failed (the path, for
/// files) and carries its cause as text: there is no `source()`, so printing the error with its chain
/// (`{:#}`, as the command line does) shows the cause once.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    // Screenshots (`Capture`).
    #[error("screenshot of an empty (zero-size) image skipped")]
    EmptyScreenshot,
    #[error("screenshot of a {0:?} texture is not supported (RGBA8/BGRA8 for PNG, Rgba16Float for EXR)")]
    ScreenshotFormat(wgpu::TextureFormat),
    #[error("screenshot skipped: the previous screenshots are still being written")]
    ScreenshotsBusy,
    #[error("screenshot read-back failed: {0}")]
    ScreenshotReadback(wgpu::MapRangeError),
    #[error("screenshot read-back failed: the staging buffer could not be mapped")]
    ScreenshotMap,
    #[error("screenshot of {width}x{height} got too few bytes from the GPU")]
    ScreenshotShort { width: u32, height: u32 },

    // Files and threads.
    #[error("cannot create folder {}: {cause}", path.display())]
    CreateFolder { path: PathBuf, cause: std::io::Error },
    /// `cause`: the I/O, image or MP4 error.
    #[error("cannot write {}: {cause}", path.display())]
    Write { path: PathBuf, cause: Box<dyn std::error::Error + Send + Sync> },
    #[error("cannot rename {} to {}: {cause}", from.display(), to.display())]
    Rename { from: PathBuf, to: PathBuf, cause: std::io::Error },
    #[error("{} already exists", path.display())]
    Exists { path: PathBuf },
    /// `name`: "screenshot writer" or "video encoder".
    #[error("cannot start the {name} thread: {cause}")]
    Thread { name: &'static str, cause: std::io::Error },

    // Videos (`video`, `recorder`).
    #[error("frame rate {0} is out of range (0, 1000] fps")]
    FrameRate(f32),
    #[error("frame of {width}x{height} has too few bytes ({len})")]
    FrameShort { width: u32, height: u32, len: usize },
    #[error("frame has too few bytes")]
    FrameBytes,
    #[error("video frames of {width}x{height} are too small (at least 16x16)")]
    FrameTooSmall { width: u32, height: u32 },
    #[error("frame size changed during the recording ({width}x{height}, started at {first_width}x{first_height})")]
    FrameSizeChanged { width: u32, height: u32, first_width: u32, first_height: u32 },
    #[error("cannot start the H.264 encoder: {0}")]
    EncoderStart(openh264::Error),
    #[error("H.264 encoding failed: {0}")]
    Encoding(openh264::Error),
    #[error("the H.264 encoder gave no SPS/PPS with its first frame")]
    NoParameterSets,
    #[error("the MP4 file is already closed")]
    Mp4Closed,
    #[error("no frames were recorded; {} not written", path.display())]
    NoFrames { path: PathBuf },
    #[error("recording cancelled")]
    Cancelled,
    #[error("the video encoder stopped")]
    EncoderStopped,
    #[error("the video encoder thread panicked")]
    EncoderPanicked,
    #[error("the video encoder already stopped")]
    EncoderGone,
    #[error("recording a {0:?} texture is not supported (RGBA8/BGRA8 only)")]
    RecordFormat(wgpu::TextureFormat),
    #[error("cannot record an empty (zero-size) image")]
    EmptyRecording,

    // Exact frames (`exact`).
    #[error("the step state read back too short")]
    StepStateShort,
    #[error("the simulation's step state could not be read back (GPU device lost?)")]
    StepStateLost,
    #[error("frame {frame}: the simulated time is not finite ({time})")]
    TimeNotFinite { frame: u64, time: f32 },
    #[error("frame {frame}: the simulation went past the frame's end ({time} s > {end} s)")]
    PastFrameEnd { frame: u64, time: f32, end: f32 },
    #[error("frame {frame}: the simulated time stopped moving at {time} s (frame end {end} s)")]
    TimeStopped { frame: u64, time: f32, end: f32 },
    #[error("frame {frame}: {time} s after {rounds} rounds of steps toward {end} s")]
    TooManyRounds { frame: u64, time: f32, end: f32, rounds: u32 },
    #[error("the video recorder refused frame {frame} ({}x{} target, {}x{} video)", target.0, target.1, video.0, video.1)]
    FrameRefused { frame: u64, target: (u32, u32), video: (u32, u32) },

    // Particle files (`particles`).
    #[error("frame {frame}: the particles could not be read back from the GPU")]
    ParticleReadback { frame: u64 },
    #[error("frame {frame}: the particle export refused the frame (the simulation's particle count changed)")]
    ParticlesRefused { frame: u64 },
    #[error("the particle files did not all come back: {written} of {recorded} written")]
    ParticlesUnfinished { recorded: u64, written: u64 },
    #[error("frame {frame}: {cause}")]
    Surface { frame: u64, cause: crate::surface::SurfaceError },

    // Offline captures (`offline`): options and the simulation.
    #[error("--seconds must be in (0, 86400], got {0}")]
    Seconds(f32),
    #[error("--fps must be in 2 ..= 240, got {0}")]
    Fps(f32),
    #[error("--size must be at least 16x16, got {width}x{height}")]
    Size { width: u32, height: u32 },
    #[error("--frames and the number of rounds must be at least 1")]
    NoRuns,
    #[error(
        "nothing to capture: give --out VIDEO.mp4 (or a folder for PNGs), --particles DIR, --surface DIR, or several"
    )]
    NoOutput,
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Sim(#[from] crate::sim::SimError),
    /// The device reported an error or was lost during the capture (its report is in the message): the
    /// video so far is discarded.
    #[error("{0}; nothing was written")]
    Gpu(crate::gpu::GpuError),
    /// The simulation went non-finite: the video so far is discarded.
    #[error("{0}; nothing was written")]
    BlowUp(crate::sim::BlowUp),
}

impl CaptureError {
    /// [`CaptureError::Write`] of `path`.
    pub fn write(path: &Path, cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        CaptureError::Write { path: path.to_path_buf(), cause: cause.into() }
    }

    /// [`CaptureError::CreateFolder`] of `path`.
    pub fn create_folder(path: &Path, cause: std::io::Error) -> Self {
        CaptureError::CreateFolder { path: path.to_path_buf(), cause }
    }

    /// [`CaptureError::Rename`] of `from` to `to`.
    pub fn rename(from: &Path, to: &Path, cause: std::io::Error) -> Self {
        CaptureError::Rename { from: from.to_path_buf(), to: to.to_path_buf(), cause }
    }
}

/// Staging buffers in the ring: at most this many screenshots in flight between GPU and worker.
const SLOTS: usize = 3;

const IDLE: u8 = 0;
const RECORDED: u8 = 1;
const MAPPING: u8 = 2;
const READY: u8 = 3;
const FAILED: u8 = 4;

/// What one recorded copy holds, and so which file it becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Texels {
    /// 4 bytes per pixel, sRGB-encoded: a PNG. `bgra`: the texture stores B, G, R, A (swap to R, G, B, A
    /// before writing).
    Rgba8 { bgra: bool },
    /// `Rgba16Float`, 8 bytes per pixel, linear: an OpenEXR file.
    Rgba16Float,
}

impl Texels {
    fn bytes(self) -> u32 {
        match self {
            Texels::Rgba8 { .. } => 4,
            Texels::Rgba16Float => 8,
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Texels::Rgba8 { .. } => "png",
            Texels::Rgba16Float => "exr",
        }
    }
}

/// Layout of one recorded copy.
#[derive(Clone, Copy, Debug)]
struct Layout {
    width: u32,
    height: u32,
    /// Bytes per row in the staging buffer (a multiple of 256).
    padded_bytes_per_row: u32,
    texels: Texels,
}

struct Slot {
    buffer: Option<wgpu::Buffer>,
    state: Arc<AtomicU8>,
    layout: Option<Layout>,
}

/// The screenshot ring and its writer threads. See the module docs.
pub struct Capture {
    device: wgpu::Device,
    slots: Vec<Slot>,
    out_dir: PathBuf,
    results_tx: mpsc::Sender<Result<PathBuf, CaptureError>>,
    results_rx: mpsc::Receiver<Result<PathBuf, CaptureError>>,
    /// Screenshots recorded but not yet reported back (GPU copy, map or PNG write still going).
    pending: usize,
    /// PNG/EXR writer threads, joined on drop so that quitting never leaves a half-written `.part` file.
    writers: Vec<std::thread::JoinHandle<()>>,
}

/// Bytes per row of a `width`-pixel RGBA8 image padded to wgpu's 256-byte copy alignment.
pub fn padded_bytes_per_row(width: u32) -> u32 {
    padded_row(width, 4)
}

/// Bytes per row of `width` texels of `texel` bytes, padded to wgpu's 256-byte copy alignment.
fn padded_row(width: u32, texel: u32) -> u32 {
    (width * texel).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT
}

impl Capture {
    /// A ring writing into `out_dir` (created on the first write if missing), e.g. `captures/`.
    pub fn new(device: &wgpu::Device, out_dir: impl Into<PathBuf>) -> Self {
        let (results_tx, results_rx) = mpsc::channel();
        let slots =
            (0..SLOTS).map(|_| Slot { buffer: None, state: Arc::new(AtomicU8::new(IDLE)), layout: None }).collect();
        Self {
            device: device.clone(),
            slots,
            out_dir: out_dir.into(),
            results_tx,
            results_rx,
            pending: 0,
            writers: Vec::new(),
        }
    }

    /// Records a copy of `texture` (mip 0, `size` = (width, height) pixels) into a free staging buffer.
    /// The texture needs `COPY_SRC` and either a 4-byte RGBA8 or BGRA8 format (sRGB or not; the bytes are
    /// stored as they are, which for the sRGB formats is already the PNG's encoding), written as a PNG, or
    /// `Rgba16Float` ([`crate::render::HDR_FORMAT`], linear values), written as an OpenEXR file.
    /// Errors (returned at once, nothing recorded): every slot busy, zero size, or an unsupported format.
    pub fn request(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        texture: &wgpu::Texture,
        size: (u32, u32),
    ) -> Result<(), CaptureError> {
        let (width, height) = size;
        if width == 0 || height == 0 {
            return Err(CaptureError::EmptyScreenshot);
        }
        let texels = match texture.format() {
            wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Rgba8UnormSrgb => Texels::Rgba8 { bgra: false },
            wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb => Texels::Rgba8 { bgra: true },
            wgpu::TextureFormat::Rgba16Float => Texels::Rgba16Float,
            other => return Err(CaptureError::ScreenshotFormat(other)),
        };
        let padded = padded_row(width, texels.bytes());
        let bytes = padded as u64 * height as u64;
        let Some(slot) = self.slots.iter_mut().find(|s| s.state.load(Ordering::Acquire) == IDLE) else {
            return Err(CaptureError::ScreenshotsBusy);
        };
        if slot.buffer.as_ref().is_none_or(|b| b.size() < bytes) {
            slot.buffer = Some(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("screenshot staging"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        let Some(buffer) = slot.buffer.as_ref() else { unreachable!("buffer created above") };
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded),
                    rows_per_image: Some(height),
                },
            },
            wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
        );
        slot.layout = Some(Layout { width, height, padded_bytes_per_row: padded, texels });
        slot.state.store(RECORDED, Ordering::Release);
        self.pending += 1;
        Ok(())
    }

    /// Call after the submission holding the recorded copies: starts mapping them. Never blocks.
    pub fn after_submit(&mut self) {
        for slot in &mut self.slots {
            if slot.state.load(Ordering::Acquire) != RECORDED {
                continue;
            }
            let Some(buffer) = slot.buffer.as_ref() else { continue };
            let Some(layout) = slot.layout else { continue };
            slot.state.store(MAPPING, Ordering::Release);
            let state = slot.state.clone();
            let bytes = layout.padded_bytes_per_row as u64 * layout.height as u64;
            buffer.map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
                state.store(if r.is_ok() { READY } else { FAILED }, Ordering::Release);
            });
        }
    }

    /// Hands mapped copies to writer threads and returns one finished screenshot, if any: the path written
    /// or why it failed. Call once per frame after `device.poll(PollType::Poll)`. Never blocks.
    pub fn poll(&mut self) -> Option<Result<PathBuf, CaptureError>> {
        for slot in &mut self.slots {
            match slot.state.load(Ordering::Acquire) {
                READY => {
                    let (Some(buffer), Some(layout)) = (slot.buffer.as_ref(), slot.layout) else { continue };
                    let bytes = layout.padded_bytes_per_row as u64 * layout.height as u64;
                    let data = buffer.get_mapped_range(0..bytes).map(|v| v.to_vec());
                    buffer.unmap();
                    slot.state.store(IDLE, Ordering::Release);
                    match data {
                        Ok(data) => {
                            let path = unique_capture_path_with(&self.out_dir, layout.texels.extension());
                            let tx = self.results_tx.clone();
                            let spawned =
                                std::thread::Builder::new().name("screenshot writer".into()).spawn(move || {
                                    let result = match layout.texels {
                                        Texels::Rgba8 { .. } => {
                                            encode(&data, layout).and_then(|img| save_png_blocking(&img, &path))
                                        }
                                        Texels::Rgba16Float => {
                                            encode_float(&data, layout).and_then(|img| save_exr_blocking(&img, &path))
                                        }
                                    };
                                    let _ = tx.send(result.map(|()| path));
                                });
                            match spawned {
                                Ok(handle) => self.writers.push(handle),
                                Err(e) => {
                                    let _ = self
                                        .results_tx
                                        .send(Err(CaptureError::Thread { name: "screenshot writer", cause: e }));
                                }
                            }
                        }
                        Err(e) => {
                            let _ = self.results_tx.send(Err(CaptureError::ScreenshotReadback(e)));
                        }
                    }
                }
                FAILED => {
                    slot.state.store(IDLE, Ordering::Release);
                    let _ = self.results_tx.send(Err(CaptureError::ScreenshotMap));
                }
                _ => {}
            }
        }
        self.writers.retain(|h| !h.is_finished());
        let result = self.results_rx.try_recv().ok()?;
        self.pending = self.pending.saturating_sub(1);
        Some(result)
    }

    /// Screenshots recorded and not yet reported by [`Capture::poll`].
    pub fn pending(&self) -> usize {
        self.pending
    }
}

impl Drop for Capture {
    /// Waits for PNG and EXR writes in progress (not for GPU copies that never got mapped).
    fn drop(&mut self) {
        for handle in self.writers.drain(..) {
            let _ = handle.join();
        }
    }
}

/// Removes the row padding and swaps BGRA to RGBA.
fn encode(data: &[u8], layout: Layout) -> Result<image::RgbaImage, CaptureError> {
    let row = layout.width as usize * 4;
    let mut pixels = Vec::with_capacity(row * layout.height as usize);
    for chunk in data.chunks(layout.padded_bytes_per_row as usize).take(layout.height as usize) {
        pixels.extend_from_slice(&chunk[..row]);
    }
    if layout.texels == (Texels::Rgba8 { bgra: true }) {
        for px in pixels.chunks_exact_mut(4) {
            px.swap(0, 2);
        }
    }
    image::RgbaImage::from_raw(layout.width, layout.height, pixels)
        .ok_or(CaptureError::ScreenshotShort { width: layout.width, height: layout.height })
}

/// Removes the row padding of `Rgba16Float` texels and widens them to `f32`.
fn encode_float(data: &[u8], layout: Layout) -> Result<image::Rgba32FImage, CaptureError> {
    let row = layout.width as usize * 8;
    let mut values = Vec::with_capacity(layout.width as usize * 4 * layout.height as usize);
    for chunk in data.chunks(layout.padded_bytes_per_row as usize).take(layout.height as usize) {
        let Some(texels) = chunk.get(..row) else { break };
        crate::render::targets::texels_to_f32(texels, wgpu::TextureFormat::Rgba16Float, &mut values);
    }
    image::Rgba32FImage::from_raw(layout.width, layout.height, values)
        .ok_or(CaptureError::ScreenshotShort { width: layout.width, height: layout.height })
}

/// Writes `img` as a PNG at `path`: first to `path` + `.part`, then renamed, so `path` only ever holds a
/// complete file. Creates the parent folder if missing. The error names the file and the cause.
pub fn save_png_blocking(img: &image::RgbaImage, path: &Path) -> Result<(), CaptureError> {
    save_via_part(path, |part| img.save_with_format(part, image::ImageFormat::Png))
}

/// Whether `path` names an OpenEXR file (a `.exr` extension, any case): the image outputs that take one
/// write the linear values ([`save_exr_blocking`]) instead of a PNG.
pub fn is_exr(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("exr"))
}

/// Writes `img` (linear RGBA, 32-bit float) as an OpenEXR file at `path`, the way
/// [`save_png_blocking`] writes a PNG: first to `path` + `.part`, then renamed; the parent folder is
/// created if missing; on any error nothing is left under either name and the message names the file
/// and the cause.
pub fn save_exr_blocking(img: &image::Rgba32FImage, path: &Path) -> Result<(), CaptureError> {
    save_via_part(path, |part| img.save_with_format(part, image::ImageFormat::OpenExr))
}

/// Creates `path`'s folder if missing, runs `write` on `path` + `.part` and renames that to `path`;
/// removes the `.part` file on failure.
fn save_via_part(path: &Path, write: impl FnOnce(&Path) -> image::ImageResult<()>) -> Result<(), CaptureError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| CaptureError::create_folder(dir, e))?;
    }
    let mut part = path.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    // The encoder opens the temporary file itself (and would wait on a FIFO there).
    crate::files::check_replaceable(path)
        .and_then(|()| crate::files::check_replaceable(&part))
        .map_err(|e| CaptureError::write(path, e))?;
    if let Err(e) = write(&part) {
        let _ = std::fs::remove_file(&part);
        return Err(CaptureError::write(path, e));
    }
    crate::files::replace(&part, path).map_err(|e| CaptureError::rename(&part, path, e))
}

/// `out_dir/waterview-YYYYMMDD-HHMMSS-mmm.EXTENSION` (UTC now, e.g. `exr`), with `-2`, `-3`, .. appended
/// if taken.
pub fn unique_capture_path_with(out_dir: &Path, extension: &str) -> PathBuf {
    let stem = format!("waterview-{}", utc_timestamp(SystemTime::now()));
    let mut path = out_dir.join(format!("{stem}.{extension}"));
    let mut n = 2;
    while path.exists() {
        path = out_dir.join(format!("{stem}-{n}.{extension}"));
        n += 1;
    }
    path
}

/// "YYYYMMDD-HHMMSS-mmm" in UTC.
pub fn utc_timestamp(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}-{:03}", s / 3600, (s / 60) % 60, s % 60, since.subsec_millis())
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(UNIX_EPOCH), "19700101-000000-000");
        // 2024-02-29 13:45:07.089 UTC = 1709214307 s.
        let t = UNIX_EPOCH + Duration::from_millis(1_709_214_307_089);
        assert_eq!(utc_timestamp(t), "20240229-134507-089");
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn rows_pad_to_256_bytes() {
        assert_eq!(padded_bytes_per_row(1), 256);
        assert_eq!(padded_bytes_per_row(64), 256);
        assert_eq!(padded_bytes_per_row(65), 512);
    }

    #[test]
    fn encode_unpads_and_swaps() {
        let layout = Layout { width: 2, height: 2, padded_bytes_per_row: 256, texels: Texels::Rgba8 { bgra: true } };
        let mut data = vec![0u8; 512];
        data[..8].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        data[256..264].copy_from_slice(&[9, 10, 11, 12, 13, 14, 15, 16]);
        let img = encode(&data, layout).unwrap();
        assert_eq!(img.as_raw(), &[3, 2, 1, 4, 7, 6, 5, 8, 11, 10, 9, 12, 15, 14, 13, 16]);
    }

    #[test]
    fn encode_float_unpads_and_widens() {
        let layout = Layout { width: 2, height: 2, padded_bytes_per_row: 256, texels: Texels::Rgba16Float };
        let values = [0.0f32, 0.25, 0.5, 1.0, 2.0, -1.0, 0.125, 1.0];
        let row: Vec<u8> = values.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect();
        let mut data = vec![0u8; 512];
        data[..16].copy_from_slice(&row);
        data[256..272].copy_from_slice(&row);
        let img = encode_float(&data, layout).unwrap();
        assert_eq!(img.dimensions(), (2, 2));
        assert_eq!(&img.as_raw()[..8], &values);
        assert_eq!(&img.as_raw()[8..], &values);
    }

    #[test]
    fn save_exr_round_trips_floats() {
        let dir = std::env::temp_dir().join(format!("waterview-capture-exr-test-{}", std::process::id()));
        let path = dir.join("x.exr");
        let img = image::Rgba32FImage::from_fn(3, 2, |x, y| image::Rgba([x as f32 * 0.25, y as f32 * 0.5, 1.5, 1.0]));
        save_exr_blocking(&img, &path).unwrap();
        assert!(!dir.join("x.exr.part").exists());
        let back = image::open(&path).unwrap();
        assert!(matches!(back, image::DynamicImage::ImageRgba32F(_)), "{:?}", back.color());
        assert_eq!(back.to_rgba32f(), img);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn errors_name_the_path_and_print_their_cause_once() {
        let dir = std::env::temp_dir().join(format!("waterview-capture-error-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let blocker = dir.join("not-a-folder");
        std::fs::write(&blocker, b"x").unwrap();
        let img = image::RgbaImage::from_pixel(2, 2, image::Rgba([1, 2, 3, 255]));
        // A folder that cannot be made, and a file that cannot be written (a folder is in the way).
        for (path, cause) in [(blocker.join("sub").join("x.png"), "os error"), (dir.clone(), "it is a directory")] {
            let e = save_png_blocking(&img, &path).expect_err("must fail");
            let message = e.to_string();
            assert!(message.starts_with("cannot ") && message.contains(cause), "{message}");
            // With its chain, as the command line prints it: the cause still once.
            let chain = format!("{:#}", anyhow::Error::from(e));
            assert_eq!(chain, message);
            assert_eq!(chain.matches(cause).count(), 1, "{chain}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn save_writes_final_name_only() {
        let dir = std::env::temp_dir().join(format!("waterview-capture-test-{}", std::process::id()));
        let path = dir.join("sub").join("x.png");
        let img = image::RgbaImage::from_pixel(3, 2, image::Rgba([10, 20, 30, 255]));
        save_png_blocking(&img, &path).unwrap();
        assert!(path.exists());
        assert!(!dir.join("sub").join("x.png.part").exists());
        let back = image::open(&path).unwrap().to_rgba8();
        assert_eq!(back, img);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
