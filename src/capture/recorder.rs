//! Video recording from a texture, never blocking the frame: each recorded frame is a
//! `copy_texture_to_buffer` into a free buffer of a [`ReadbackRing`] in the frame's own encoder;
//! [`VideoRecorder::after_submit`] starts mapping it; a later [`VideoRecorder::poll`] takes mapped frames in
//! order and hands them to the [`VideoWriter`]'s worker thread (H.264/MP4 or PNG). When every staging buffer
//! is in flight or the worker's queue is full, [`VideoRecorder::can_record`] is false: live recording then
//! drops that frame (counted), offline capture waits a frame before rendering the next one.

use super::video::{VideoFormat, VideoFrame, VideoSummary, VideoWriter};
use super::{padded_bytes_per_row, CaptureError};
use crate::gpu::readback::ReadbackRing;
use std::collections::{HashMap, VecDeque};
use std::path::Path;

/// Staging buffers in the ring.
const SLOTS: usize = 4;
/// Frames read back and waiting for room in the worker's queue.
const MAX_WAITING: usize = 2;

/// A recording in progress. See the module docs.
pub struct VideoRecorder {
    ring: ReadbackRing,
    writer: VideoWriter,
    size: (u32, u32),
    padded: u32,
    bgra: bool,
    /// Presentation time of each frame in the ring, by tag.
    times: HashMap<u64, f64>,
    next_tag: u64,
    /// Copies recorded and not yet taken from the ring.
    in_ring: usize,
    waiting: VecDeque<VideoFrame>,
    /// Frames recorded into the ring so far.
    pub recorded: u64,
    /// Frames live recording had to skip because the ring or the queue was full.
    pub dropped: u64,
}

impl VideoRecorder {
    /// Starts a recording of `size` pixels (the texture's size) from textures of `format` (RGBA8/BGRA8,
    /// sRGB or not) into `path`. Errors: unsupported format, or an output that cannot be created.
    pub fn start(
        device: &wgpu::Device,
        path: &Path,
        video: VideoFormat,
        fps: f32,
        size: (u32, u32),
        format: wgpu::TextureFormat,
    ) -> Result<Self, CaptureError> {
        let bgra = match format {
            wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Rgba8UnormSrgb => false,
            wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb => true,
            other => return Err(CaptureError::RecordFormat(other)),
        };
        if size.0 == 0 || size.1 == 0 {
            return Err(CaptureError::EmptyRecording);
        }
        let writer = VideoWriter::start(path, video, fps)?;
        let padded = padded_bytes_per_row(size.0);
        let ring = ReadbackRing::new(device, "video frame", padded as u64 * size.1 as u64, SLOTS);
        Ok(Self {
            ring,
            writer,
            size,
            padded,
            bgra,
            times: HashMap::new(),
            next_tag: 0,
            in_ring: 0,
            waiting: VecDeque::new(),
            recorded: 0,
            dropped: 0,
        })
    }

    /// Size of the recorded frames, pixels.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// The final path of the output.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// Whether a frame recorded now has room all the way to the worker.
    pub fn can_record(&self) -> bool {
        self.in_ring < SLOTS && self.waiting.len() < MAX_WAITING
    }

    /// Records a copy of `texture` (mip 0, exactly [`VideoRecorder::size`], `COPY_SRC`) shown at `time_s`
    /// seconds of the video. Returns false (and counts a drop) when there is no room.
    pub fn record(&mut self, encoder: &mut wgpu::CommandEncoder, texture: &wgpu::Texture, time_s: f64) -> bool {
        if !self.can_record() || (texture.width(), texture.height()) != self.size {
            self.dropped += 1;
            return false;
        }
        let tag = self.next_tag;
        let (w, h) = self.size;
        let Some(buffer) = self.ring.reserve(tag) else {
            self.dropped += 1;
            return false;
        };
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
                    bytes_per_row: Some(self.padded),
                    rows_per_image: Some(h),
                },
            },
            wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
        );
        self.times.insert(tag, time_s);
        self.next_tag += 1;
        self.in_ring += 1;
        self.recorded += 1;
        true
    }

    /// Call after the submission holding the recorded copies: starts mapping them. Never blocks.
    pub fn after_submit(&mut self) {
        self.ring.submitted();
    }

    /// Moves mapped frames to the worker. Call once per frame after `device.poll(Poll)`. Never blocks.
    /// Returns the worker's error if it stopped (the recording is then over; drop or cancel it).
    pub fn poll(&mut self) -> Option<CaptureError> {
        while let Some((tag, data)) = self.ring.try_take() {
            self.in_ring = self.in_ring.saturating_sub(1);
            let time_s = self.times.remove(&tag).unwrap_or(0.0);
            let (width, height) = self.size;
            self.waiting.push_back(VideoFrame { width, height, stride: self.padded, bgra: self.bgra, data, time_s });
        }
        // A failed map comes back as nothing: resynchronise with the ring.
        if !self.ring.in_flight() {
            self.in_ring = 0;
            self.times.clear();
        }
        while let Some(frame) = self.waiting.pop_front() {
            if let Err(frame) = self.writer.try_push(frame) {
                self.waiting.push_front(frame);
                break;
            }
        }
        self.writer.failed()
    }

    /// Frames recorded and not yet written by the worker (in the ring, waiting, or queued).
    pub fn pending(&self) -> u64 {
        self.in_ring as u64 + self.waiting.len() as u64 + self.writer.queued()
    }

    /// Frames the worker has written.
    pub fn written(&self) -> u64 {
        self.writer.written()
    }

    /// True when no frame is left on the GPU side or waiting (all are with the worker or written).
    pub fn flushed(&self) -> bool {
        self.in_ring == 0 && self.waiting.is_empty()
    }

    /// True when all recorded frames are written (call [`Self::into_finishing`] then).
    pub fn drained(&self) -> bool {
        self.in_ring == 0 && self.waiting.is_empty() && self.writer.queued() == 0
    }

    /// Hands the writer over to finish the file, once [`VideoRecorder::drained`] (frames still in flight
    /// are dropped). Non-blocking: poll the returned writer's `is_done`, then call its `finish`.
    pub fn into_finishing(mut self) -> VideoWriter {
        for frame in self.waiting.drain(..) {
            let _ = self.writer.try_push(frame);
        }
        self.writer.request_finish();
        self.writer
    }

    /// Completes the file, waiting for the GPU and the worker (headless use).
    pub fn finish_blocking(mut self, device: &wgpu::Device) -> Result<VideoSummary, CaptureError> {
        while self.in_ring > 0 || !self.waiting.is_empty() {
            let _ = device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
            while let Some((tag, data)) = self.ring.try_take() {
                self.in_ring = self.in_ring.saturating_sub(1);
                let time_s = self.times.remove(&tag).unwrap_or(0.0);
                let (width, height) = self.size;
                self.waiting.push_back(VideoFrame {
                    width,
                    height,
                    stride: self.padded,
                    bgra: self.bgra,
                    data,
                    time_s,
                });
            }
            if !self.ring.in_flight() {
                self.in_ring = 0;
            }
            while let Some(frame) = self.waiting.pop_front() {
                if self.writer.push_blocking(frame).is_err() {
                    self.waiting.clear();
                    break;
                }
            }
        }
        self.writer.finish()
    }

    /// Stops and deletes the temporary output.
    pub fn cancel(self) {
        self.writer.cancel();
    }
}
