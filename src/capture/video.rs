//! Video files from RGBA frames, written on a worker thread so the frame loop never waits on the encoder
//! or the disk.
//!
//! Two outputs ([`VideoFormat`]):
//! - **MP4 (H.264)**, in-process with no ffmpeg: OpenH264 (Cisco's encoder, built from the source the
//!   `openh264` crate bundles) turns each frame, converted RGBA -> I420 (BT.601), into an Annex-B bitstream;
//!   the NAL units are re-framed with 4-byte lengths (AVCC), SPS/PPS go into the `avcC` box and the
//!   samples into an ISO-BMFF file by the `mp4` crate (timescale 90 kHz; each sample lasts until the next
//!   frame's time stamp, so live recordings with uneven frame times play at the right speed). Odd sizes are
//!   cropped by one pixel (4:2:0 needs even sizes).
//! - **PNG sequence**: `frame_00000.png`, `frame_00001.png`, ... in a folder.
//!
//! Nothing ever carries the final name half-written: the MP4 is written to `NAME.mp4.part` (the PNGs into
//! `NAME.part/`) and renamed when complete; a failure or a cancel removes the temporary file. The output
//! file is created in [`VideoWriter::start`], so an unwritable path is an error at once, before any frame.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use super::CaptureError;

/// MP4 track timescale: ticks per second.
const TIMESCALE: u32 = 90_000;
/// Frames that may wait in the channel for the worker.
pub const QUEUE: usize = 3;

/// Output kind of a recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum VideoFormat {
    /// H.264 in an MP4 file.
    Mp4,
    /// Numbered PNG files in a folder.
    PngSequence,
}

impl VideoFormat {
    /// File extension of the output (empty for a folder).
    pub fn extension(self) -> &'static str {
        match self {
            VideoFormat::Mp4 => "mp4",
            VideoFormat::PngSequence => "",
        }
    }
}

/// One frame as it comes back from the GPU: rows of `stride` bytes (>= 4 * width), RGBA8 or BGRA8,
/// sRGB-encoded bytes (as stored by an `*UnormSrgb` texture).
#[derive(Clone, Debug)]
pub struct VideoFrame {
    pub width: u32,
    pub height: u32,
    pub stride: u32,
    /// The bytes are B, G, R, A.
    pub bgra: bool,
    pub data: Vec<u8>,
    /// Presentation time, seconds from the start of the video.
    pub time_s: f64,
}

impl VideoFrame {
    /// A tightly packed RGBA frame.
    pub fn from_rgba(width: u32, height: u32, data: Vec<u8>, time_s: f64) -> Self {
        Self { width, height, stride: width * 4, bgra: false, data, time_s }
    }

    /// Tightly packed RGBA of the top-left `w` x `h` pixels.
    fn packed_rgba(&self, w: u32, h: u32, out: &mut Vec<u8>) -> Result<(), CaptureError> {
        let (w, h, stride) = (w as usize, h as usize, self.stride as usize);
        if self.data.len() < stride * (h.max(1) - 1) + w * 4 {
            return Err(CaptureError::FrameShort { width: self.width, height: self.height, len: self.data.len() });
        }
        out.clear();
        out.reserve(w * h * 4);
        for row in 0..h {
            out.extend_from_slice(&self.data[row * stride..row * stride + w * 4]);
        }
        if self.bgra {
            for px in out.chunks_exact_mut(4) {
                px.swap(0, 2);
            }
        }
        Ok(())
    }
}

/// What a finished recording wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoSummary {
    /// The final file (MP4) or folder (PNG sequence).
    pub path: PathBuf,
    pub frames: u64,
    /// Duration of the video, seconds.
    pub duration_s: f64,
    /// Bytes written.
    pub bytes: u64,
}

/// `path` with `.part` appended to its file name.
pub fn part_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".part");
    PathBuf::from(s)
}

/// A synchronous frame sink: the encoder or PNG writer itself. [`VideoWriter`] runs one on a worker thread;
/// headless tools may use it directly.
pub enum VideoSink {
    Mp4(Box<Mp4Sink>),
    Png(PngSink),
}

impl VideoSink {
    /// Creates the temporary output (`path.part`) for `format`; `fps` sets the nominal frame rate (the
    /// duration of the last frame, and the encoder's rate control).
    /// Errors: the folder cannot be created or the file cannot be opened (message names the path).
    pub fn create(path: &Path, format: VideoFormat, fps: f32) -> Result<Self, CaptureError> {
        if !(fps.is_finite() && fps > 0.0 && fps <= 1000.0) {
            return Err(CaptureError::FrameRate(fps));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| CaptureError::create_folder(dir, e))?;
        }
        match format {
            VideoFormat::Mp4 => Ok(VideoSink::Mp4(Box::new(Mp4Sink::create(path, fps)?))),
            VideoFormat::PngSequence => Ok(VideoSink::Png(PngSink::create(path, fps)?)),
        }
    }

    /// Encodes and writes one frame. Frames must come in time order.
    pub fn push(&mut self, frame: &VideoFrame) -> Result<(), CaptureError> {
        match self {
            VideoSink::Mp4(s) => s.push(frame),
            VideoSink::Png(s) => s.push(frame),
        }
    }

    /// Completes the file and renames it to its final name.
    pub fn finish(self) -> Result<VideoSummary, CaptureError> {
        match self {
            VideoSink::Mp4(s) => s.finish(),
            VideoSink::Png(s) => s.finish(),
        }
    }

    /// Removes the temporary output.
    pub fn abort(self) {
        match self {
            VideoSink::Mp4(s) => s.abort(),
            VideoSink::Png(s) => s.abort(),
        }
    }
}

/// H.264 + MP4 writer (see the module docs).
pub struct Mp4Sink {
    path: PathBuf,
    part: PathBuf,
    fps: f32,
    writer: Option<mp4::Mp4Writer<BufWriter<File>>>,
    encoder: Option<openh264::encoder::Encoder>,
    yuv: Option<openh264::formats::YUVBuffer>,
    /// (width, height) of the first frame, cropped to even; every frame is cropped to it.
    size: Option<(u32, u32)>,
    rgba: Vec<u8>,
    /// Encoded sample waiting for the next frame's time stamp (its duration): (start ticks, AVCC bytes, sync).
    pending: Option<(u64, Vec<u8>, bool)>,
    track_added: bool,
    frames: u64,
    end_ticks: u64,
}

impl Mp4Sink {
    fn create(path: &Path, fps: f32) -> Result<Self, CaptureError> {
        let part = part_path(path);
        let file = crate::files::create(&part).map_err(|e| CaptureError::write(path, e))?;
        let config = mp4::Mp4Config {
            major_brand: mp4::FourCC { value: *b"isom" },
            minor_version: 512,
            compatible_brands: [b"isom", b"iso2", b"avc1", b"mp41"]
                .iter()
                .map(|b| mp4::FourCC { value: **b })
                .collect(),
            timescale: 1000,
        };
        let writer = mp4::Mp4Writer::write_start(BufWriter::new(file), &config).map_err(|e| {
            let _ = std::fs::remove_file(&part);
            CaptureError::write(path, e)
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            part,
            fps,
            writer: Some(writer),
            encoder: None,
            yuv: None,
            size: None,
            rgba: Vec::new(),
            pending: None,
            track_added: false,
            frames: 0,
            end_ticks: 0,
        })
    }

    fn push(&mut self, frame: &VideoFrame) -> Result<(), CaptureError> {
        use openh264::encoder::{BitRate, EncoderConfig, FrameRate, IntraFramePeriod};
        let (w, h) = match self.size {
            Some(s) => s,
            None => {
                let s = (frame.width & !1, frame.height & !1);
                if s.0 < 16 || s.1 < 16 {
                    return Err(CaptureError::FrameTooSmall { width: frame.width, height: frame.height });
                }
                self.size = Some(s);
                s
            }
        };
        if frame.width < w || frame.height < h {
            return Err(CaptureError::FrameSizeChanged {
                width: frame.width,
                height: frame.height,
                first_width: w,
                first_height: h,
            });
        }
        if self.encoder.is_none() {
            // About 0.1 bit per pixel per frame: ~6 Mbit/s at 1080p30.
            let bps = (w as f64 * h as f64 * self.fps as f64 * 0.1).clamp(200_000.0, 50_000_000.0) as u32;
            let config = EncoderConfig::new()
                .bitrate(BitRate::from_bps(bps))
                .max_frame_rate(FrameRate::from_hz(self.fps))
                .skip_frames(false)
                .intra_frame_period(IntraFramePeriod::from_num_frames((self.fps * 2.0).round().max(1.0) as u32));
            let encoder = openh264::encoder::Encoder::with_api_config(openh264::OpenH264API::from_source(), config)
                .map_err(CaptureError::EncoderStart)?;
            self.encoder = Some(encoder);
            self.yuv = Some(openh264::formats::YUVBuffer::new(w as usize, h as usize));
        }
        frame.packed_rgba(w, h, &mut self.rgba)?;
        let (Some(encoder), Some(yuv)) = (self.encoder.as_mut(), self.yuv.as_mut()) else {
            unreachable!("created above")
        };
        yuv.read_rgba8(openh264::formats::RgbaSliceU8::new(&self.rgba, (w as usize, h as usize)));
        let bitstream = encoder.encode(yuv).map_err(CaptureError::Encoding)?;

        let mut sample = Vec::new();
        let mut sps = None;
        let mut pps = None;
        let mut sync = false;
        for l in 0..bitstream.num_layers() {
            let Some(layer) = bitstream.layer(l) else { continue };
            for n in 0..layer.nal_count() {
                let Some(nal) = layer.nal_unit(n) else { continue };
                let nal = strip_start_code(nal);
                let Some(&head) = nal.first() else { continue };
                match head & 0x1f {
                    7 => sps = Some(nal.to_vec()),
                    8 => pps = Some(nal.to_vec()),
                    t => {
                        sync |= t == 5;
                        sample.extend_from_slice(&(nal.len() as u32).to_be_bytes());
                        sample.extend_from_slice(nal);
                    }
                }
            }
        }
        let writer = self.writer.as_mut().ok_or(CaptureError::Mp4Closed)?;
        if !self.track_added {
            let (Some(sps), Some(pps)) = (sps, pps) else {
                return Err(CaptureError::NoParameterSets);
            };
            let track = mp4::TrackConfig {
                track_type: mp4::TrackType::Video,
                timescale: TIMESCALE,
                language: "und".into(),
                media_conf: mp4::MediaConfig::AvcConfig(mp4::AvcConfig {
                    width: w as u16,
                    height: h as u16,
                    seq_param_set: sps,
                    pic_param_set: pps,
                }),
            };
            writer.add_track(&track).map_err(|e| CaptureError::write(&self.path, e))?;
            self.track_added = true;
        }
        if sample.is_empty() {
            // A skipped frame: the previous sample lasts longer.
            return Ok(());
        }
        let ticks = (frame.time_s.max(0.0) * TIMESCALE as f64).round() as u64;
        self.flush_pending(ticks)?;
        self.pending = Some((ticks, sample, sync));
        Ok(())
    }

    /// Writes the pending sample with a duration lasting until `next_ticks`.
    fn flush_pending(&mut self, next_ticks: u64) -> Result<(), CaptureError> {
        let Some((start, bytes, is_sync)) = self.pending.take() else { return Ok(()) };
        let duration = next_ticks.saturating_sub(start).max(1) as u32;
        let sample = mp4::Mp4Sample {
            start_time: start,
            duration,
            rendering_offset: 0,
            is_sync,
            bytes: mp4::Bytes::from(bytes),
        };
        let writer = self.writer.as_mut().ok_or(CaptureError::Mp4Closed)?;
        writer.write_sample(1, &sample).map_err(|e| CaptureError::write(&self.path, e))?;
        self.frames += 1;
        self.end_ticks = start + duration as u64;
        Ok(())
    }

    fn finish(mut self) -> Result<VideoSummary, CaptureError> {
        let result = self.finish_inner();
        if result.is_err() {
            let _ = std::fs::remove_file(&self.part);
        }
        result
    }

    fn finish_inner(&mut self) -> Result<VideoSummary, CaptureError> {
        if let Some((start, _, _)) = &self.pending {
            let last = start + (TIMESCALE as f64 / self.fps as f64).round() as u64;
            self.flush_pending(last)?;
        }
        if self.frames == 0 {
            return Err(CaptureError::NoFrames { path: self.path.clone() });
        }
        let mut writer = self.writer.take().ok_or(CaptureError::Mp4Closed)?;
        let path = self.path.as_path();
        writer.write_end().map_err(|e| CaptureError::write(path, e))?;
        let file = writer.into_writer().into_inner().map_err(|e| CaptureError::write(path, e.into_error()))?;
        file.sync_all().map_err(|e| CaptureError::write(path, e))?;
        drop(file);
        let bytes = std::fs::metadata(&self.part).map(|m| m.len()).unwrap_or(0);
        crate::files::replace(&self.part, path).map_err(|e| CaptureError::write(path, e))?;
        Ok(VideoSummary {
            path: self.path.clone(),
            frames: self.frames,
            duration_s: self.end_ticks as f64 / TIMESCALE as f64,
            bytes,
        })
    }

    fn abort(mut self) {
        self.writer = None;
        let _ = std::fs::remove_file(&self.part);
    }
}

/// Strips a leading Annex-B start code (00 00 01 or 00 00 00 01).
fn strip_start_code(nal: &[u8]) -> &[u8] {
    if nal.starts_with(&[0, 0, 0, 1]) {
        &nal[4..]
    } else if nal.starts_with(&[0, 0, 1]) {
        &nal[3..]
    } else {
        nal
    }
}

/// PNG-sequence writer: `frame_NNNNN.png` into `path.part/`, renamed to `path/` when complete.
pub struct PngSink {
    path: PathBuf,
    part: PathBuf,
    fps: f32,
    frames: u64,
    bytes: u64,
    last_time: f64,
    rgba: Vec<u8>,
}

impl PngSink {
    fn create(path: &Path, fps: f32) -> Result<Self, CaptureError> {
        if path.exists() {
            return Err(CaptureError::Exists { path: path.to_path_buf() });
        }
        let part = part_path(path);
        std::fs::create_dir_all(&part).map_err(|e| CaptureError::create_folder(path, e))?;
        Ok(Self { path: path.to_path_buf(), part, fps, frames: 0, bytes: 0, last_time: 0.0, rgba: Vec::new() })
    }

    fn push(&mut self, frame: &VideoFrame) -> Result<(), CaptureError> {
        frame.packed_rgba(frame.width, frame.height, &mut self.rgba)?;
        let img = image::RgbaImage::from_raw(frame.width, frame.height, std::mem::take(&mut self.rgba))
            .ok_or(CaptureError::FrameBytes)?;
        let file = self.part.join(format!("frame_{:05}.png", self.frames));
        let result = super::save_png_blocking(&img, &file);
        self.rgba = img.into_raw();
        result?;
        self.bytes += std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        self.frames += 1;
        self.last_time = frame.time_s;
        Ok(())
    }

    fn finish(self) -> Result<VideoSummary, CaptureError> {
        if self.frames == 0 {
            let _ = std::fs::remove_dir_all(&self.part);
            return Err(CaptureError::NoFrames { path: self.path });
        }
        std::fs::rename(&self.part, &self.path).map_err(|e| CaptureError::rename(&self.part, &self.path, e))?;
        Ok(VideoSummary {
            path: self.path,
            frames: self.frames,
            duration_s: self.last_time + 1.0 / self.fps as f64,
            bytes: self.bytes,
        })
    }

    fn abort(self) {
        let _ = std::fs::remove_dir_all(&self.part);
    }
}

enum Msg {
    Frame(VideoFrame),
    Finish,
    Cancel,
}

/// The video worker thread has stopped: no more frames can be handed to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the video worker stopped")]
pub struct WorkerStopped;

/// A [`VideoSink`] on a worker thread behind a bounded channel. See the module docs.
pub struct VideoWriter {
    tx: Option<mpsc::SyncSender<Msg>>,
    handle: Option<JoinHandle<Result<VideoSummary, CaptureError>>>,
    sent: u64,
    written: Arc<AtomicU64>,
    path: PathBuf,
}

impl VideoWriter {
    /// Creates the output (errors at once when it cannot be written) and starts the worker.
    pub fn start(path: &Path, format: VideoFormat, fps: f32) -> Result<Self, CaptureError> {
        let mut sink = VideoSink::create(path, format, fps)?;
        let (tx, rx) = mpsc::sync_channel::<Msg>(QUEUE);
        let written = Arc::new(AtomicU64::new(0));
        let counter = written.clone();
        let handle = std::thread::Builder::new()
            .name("video encoder".into())
            .spawn(move || {
                loop {
                    match rx.recv() {
                        Ok(Msg::Frame(f)) => {
                            if let Err(e) = sink.push(&f) {
                                sink.abort();
                                return Err(e);
                            }
                            counter.fetch_add(1, Ordering::Release);
                        }
                        Ok(Msg::Finish) => return sink.finish(),
                        // A dropped writer is a cancel: never leave a half-written file.
                        Ok(Msg::Cancel) | Err(_) => {
                            sink.abort();
                            return Err(CaptureError::Cancelled);
                        }
                    }
                }
            })
            .map_err(|e| CaptureError::Thread { name: "video encoder", cause: e })?;
        Ok(Self { tx: Some(tx), handle: Some(handle), sent: 0, written, path: path.to_path_buf() })
    }

    /// The final path of the output.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hands a frame to the worker without waiting. `Err(frame)` when the queue is full or the worker
    /// stopped (see [`VideoWriter::failed`]).
    pub fn try_push(&mut self, frame: VideoFrame) -> Result<(), VideoFrame> {
        let Some(tx) = self.tx.as_ref() else { return Err(frame) };
        match tx.try_send(Msg::Frame(frame)) {
            Ok(()) => {
                self.sent += 1;
                Ok(())
            }
            Err(mpsc::TrySendError::Full(Msg::Frame(f)) | mpsc::TrySendError::Disconnected(Msg::Frame(f))) => Err(f),
            Err(_) => unreachable!("only frames are sent here"),
        }
    }

    /// Hands a frame to the worker, waiting while the queue is full (headless use).
    /// Errors: the worker stopped (its own error comes from [`VideoWriter::finish`]).
    pub fn push_blocking(&mut self, frame: VideoFrame) -> Result<(), WorkerStopped> {
        let tx = self.tx.as_ref().ok_or(WorkerStopped)?;
        tx.send(Msg::Frame(frame)).map_err(|_| WorkerStopped)?;
        self.sent += 1;
        Ok(())
    }

    /// Frames the worker has written.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Frames handed over and not yet written.
    pub fn queued(&self) -> u64 {
        self.sent.saturating_sub(self.written())
    }

    /// True when the worker has stopped (it failed, or finished after [`VideoWriter::request_finish`]).
    pub fn is_done(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }

    /// When the worker has stopped on an error while recording: takes that error. Never blocks.
    pub fn failed(&mut self) -> Option<CaptureError> {
        if self.tx.is_some() && self.is_done() {
            self.tx = None;
            return Some(self.join().err().unwrap_or(CaptureError::EncoderStopped));
        }
        None
    }

    /// Asks the worker to complete the file after the frames already queued (does not wait). Poll
    /// [`VideoWriter::is_done`], then [`VideoWriter::finish`].
    pub fn request_finish(&mut self) {
        if let Some(tx) = self.tx.take() {
            // Blocks only while the bounded queue is full; the worker is draining it.
            let _ = tx.send(Msg::Finish);
        }
    }

    /// Completes the file (waits for the worker) and returns what was written, or why it failed.
    pub fn finish(mut self) -> Result<VideoSummary, CaptureError> {
        self.request_finish();
        self.join()
    }

    /// Stops and deletes the temporary output (waits for the worker's current frame).
    pub fn cancel(mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Msg::Cancel);
        }
        let _ = self.join();
    }

    fn join(&mut self) -> Result<VideoSummary, CaptureError> {
        match self.handle.take() {
            Some(h) => h.join().unwrap_or(Err(CaptureError::EncoderPanicked)),
            None => Err(CaptureError::EncoderGone),
        }
    }
}

impl Drop for VideoWriter {
    /// A writer dropped while recording cancels (the worker sees the closed channel and removes the file).
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_codes_are_stripped() {
        assert_eq!(strip_start_code(&[0, 0, 0, 1, 0x67, 1]), &[0x67, 1]);
        assert_eq!(strip_start_code(&[0, 0, 1, 0x68]), &[0x68]);
        assert_eq!(strip_start_code(&[0x65]), &[0x65]);
    }

    #[test]
    fn frames_unpad_and_swap() {
        let f = VideoFrame {
            width: 1,
            height: 2,
            stride: 8,
            bgra: true,
            data: vec![1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 7, 8],
            time_s: 0.0,
        };
        let mut out = Vec::new();
        f.packed_rgba(1, 2, &mut out).unwrap();
        assert_eq!(out, vec![3, 2, 1, 4, 7, 6, 5, 8]);
    }
}
