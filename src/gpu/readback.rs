//! Asynchronous GPU-to-CPU read-back through a ring of staging buffers. The frame records a copy into a
//! free slot, submits, and later frames pick up the mapped data; nothing ever waits on the GPU
//! (a lesson measured by the earlier GPU SPH work: a synchronous read-back stalls both CPU and GPU).
//! When every slot is in flight a new request is dropped, so a slow GPU costs samples, not frame time.

use super::GpuError;
use std::sync::{
    atomic::{AtomicU8, Ordering},
    Arc,
};

const IDLE: u8 = 0;
const RECORDED: u8 = 1;
const MAPPING: u8 = 2;
const READY: u8 = 3;
const FAILED: u8 = 4;
/// Handed out by [`ReadbackRing::try_take_mapped`], still mapped.
const TAKEN: u8 = 5;

struct Slot {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
    tag: u64,
    /// Order in which the slot was recorded, so results come back in order.
    seq: u64,
}

/// A ring of `MAP_READ` staging buffers of one size.
pub struct ReadbackRing {
    slots: Vec<Slot>,
    size: u64,
    next_seq: u64,
}

impl ReadbackRing {
    /// `count` staging buffers of `size` bytes each.
    pub fn new(device: &wgpu::Device, label: &str, size: u64, count: usize) -> Self {
        let slots = (0..count.max(1))
            .map(|i| Slot {
                buffer: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("{label} staging {i}")),
                    size: size.max(4),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                state: Arc::new(AtomicU8::new(IDLE)),
                tag: 0,
                seq: 0,
            })
            .collect();
        Self { slots, size, next_seq: 0 }
    }

    /// Size of each staging buffer in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Reserves a free slot for a copy recorded into the current frame's encoder and returns its buffer,
    /// or `None` when all slots are still in flight (the caller skips this sample).
    pub fn reserve(&mut self, tag: u64) -> Option<&wgpu::Buffer> {
        let seq = self.next_seq;
        let slot = self.slots.iter_mut().find(|s| s.state.load(Ordering::Acquire) == IDLE)?;
        slot.state.store(RECORDED, Ordering::Release);
        slot.tag = tag;
        slot.seq = seq;
        self.next_seq += 1;
        Some(&slot.buffer)
    }

    /// Records a copy of `src[offset..offset+size]` into a free slot. Returns false when none is free.
    pub fn copy_buffer(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        offset: u64,
        tag: u64,
    ) -> bool {
        let size = self.size;
        match self.reserve(tag) {
            Some(dst) => {
                encoder.copy_buffer_to_buffer(src, offset, dst, 0, size);
                true
            }
            None => false,
        }
    }

    /// Call after the submission holding the recorded copies: starts mapping them.
    pub fn submitted(&mut self) {
        for slot in &mut self.slots {
            if slot.state.load(Ordering::Acquire) == RECORDED {
                slot.state.store(MAPPING, Ordering::Release);
                let state = slot.state.clone();
                slot.buffer.map_async(wgpu::MapMode::Read, .., move |r| {
                    state.store(if r.is_ok() { READY } else { FAILED }, Ordering::Release);
                });
            }
        }
    }

    /// Takes the oldest finished read-back: its tag and bytes. Call `device.poll(PollType::Poll)` first
    /// (once per frame) so map callbacks run. Never blocks.
    pub fn try_take(&mut self) -> Option<(u64, Vec<u8>)> {
        let slot = self
            .slots
            .iter_mut()
            .filter(|s| matches!(s.state.load(Ordering::Acquire), READY | FAILED))
            .min_by_key(|s| s.seq)?;
        let failed = slot.state.load(Ordering::Acquire) == FAILED;
        let data = if failed {
            None
        } else {
            let bytes = slot.buffer.get_mapped_range(..).ok().map(|v| v.to_vec());
            slot.buffer.unmap();
            bytes
        };
        slot.state.store(IDLE, Ordering::Release);
        data.map(|d| (slot.tag, d))
    }

    /// Takes the oldest finished read-back without copying it: its tag and the mapped slot, which may go to
    /// another thread; the slot is unmapped and free again when the [`Mapped`] is dropped. A failed
    /// mapping gives `None` for the bytes (the slot is freed at once). Never blocks.
    pub fn try_take_mapped(&mut self) -> Option<(u64, Option<Mapped>)> {
        let slot = self
            .slots
            .iter_mut()
            .filter(|s| matches!(s.state.load(Ordering::Acquire), READY | FAILED))
            .min_by_key(|s| s.seq)?;
        if slot.state.load(Ordering::Acquire) == FAILED {
            slot.state.store(IDLE, Ordering::Release);
            return Some((slot.tag, None));
        }
        // Taken: neither READY (taken again) nor IDLE (reused) until the `Mapped` is dropped.
        slot.state.store(TAKEN, Ordering::Release);
        Some((slot.tag, Some(Mapped { buffer: slot.buffer.clone(), state: slot.state.clone() })))
    }

    /// True when some read-back is recorded or mapping (used by headless runs to know when to poll-wait).
    pub fn in_flight(&self) -> bool {
        self.slots.iter().any(|s| !matches!(s.state.load(Ordering::Acquire), IDLE | TAKEN))
    }

    /// True when a slot is free for a new copy.
    pub fn has_free_slot(&self) -> bool {
        self.slots.iter().any(|s| s.state.load(Ordering::Acquire) == IDLE)
    }
}

/// A finished read-back, still mapped ([`ReadbackRing::try_take_mapped`]): read it where it is (on a
/// worker thread, so a large copy never runs on the frame's thread); dropping it unmaps the staging buffer
/// and frees its slot.
pub struct Mapped {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
}

impl Mapped {
    /// Runs `read` on the mapped bytes (the whole staging buffer); `None` if they cannot be viewed.
    pub fn with_bytes<R>(&self, read: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let view = self.buffer.get_mapped_range(..).ok()?;
        Some(read(&view))
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        self.buffer.unmap();
        self.state.store(IDLE, Ordering::Release);
    }
}

/// Largest staging buffer of a blocking read-back, bytes: larger reads go through several (each within the
/// device's `max_buffer_size` too), so a read of a 3.2 GB array (positions at 200 M particles) never asks
/// for one staging buffer of its size.
pub const STAGING_PIECE: u64 = 256 << 20;

/// Copies a whole buffer into a staging buffer and waits for it. For tests only (empty when nothing
/// comes back); library code uses [`try_read_range_blocking`], which says why.
pub fn read_buffer_blocking(ctx: &crate::gpu::GpuContext, src: &wgpu::Buffer) -> Vec<u8> {
    read_range_blocking(ctx, src, 0, src.size())
}

/// [`read_buffer_blocking`] of `size` bytes from byte `offset` (both multiples of 4, within the buffer;
/// empty when `size` is 0 or nothing came back). For tests only, like it.
pub fn read_range_blocking(ctx: &crate::gpu::GpuContext, src: &wgpu::Buffer, offset: u64, size: u64) -> Vec<u8> {
    try_read_range_blocking(ctx, src, offset, size, "a buffer").unwrap_or_default()
}

/// Reads `size` bytes from byte `offset` of `src` (both multiples of 4, within the buffer) through
/// staging buffers of at most [`STAGING_PIECE`] bytes and the device's `max_buffer_size`, waiting for
/// each. For batch tools and tests: it stalls the GPU pipeline, so the frame loop never calls it.
/// Errors ([`GpuError::Readback`] naming `what`): a mapping failed or came back short (the device was
/// lost or refused the staging buffer): the cause is what the device reported
/// ([`crate::gpu::GpuFaults`]), else the mapping's error.
/// A read that went through and meanwhile made the device report an error (a copy past the end of `src`)
/// is an error too: its bytes are not the buffer's.
pub fn try_read_range_blocking(
    ctx: &crate::gpu::GpuContext,
    src: &wgpu::Buffer,
    offset: u64,
    size: u64,
    what: &str,
) -> Result<Vec<u8>, GpuError> {
    read_in_pieces(ctx, src, (offset, size), STAGING_PIECE.min(ctx.device.limits().max_buffer_size), what)
}

/// Longest wait for a mapping's callback after the device finished its work, seconds: long past any
/// thread's hand-over, short enough that a device that never calls back ends in an error, not a hang.
const MAP_CALLBACK_WAIT_S: f64 = 5.0;

/// The result a mapping's callback left in `mapped` once the device has finished (`finished`: the
/// blocking poll returned). wgpu runs the callbacks of finished mappings in whichever thread polls or
/// submits on the device next, so with another thread on the same device (the window's UI thread and
/// rank 0 of `waterview --gpus N`) the callback may still be running there when this thread's poll
/// returns: it is waited for, polling without blocking, for at most [`MAP_CALLBACK_WAIT_S`]. `None` when
/// it never came (or the poll failed).
fn mapped_result(
    ctx: &crate::gpu::GpuContext,
    mapped: &std::sync::Mutex<Option<Result<(), wgpu::BufferAsyncError>>>,
    finished: bool,
) -> Option<Result<(), wgpu::BufferAsyncError>> {
    let take = || mapped.lock().ok().and_then(|mut m| m.take());
    let start = std::time::Instant::now();
    loop {
        if let Some(r) = take() {
            return Some(r);
        }
        if !finished || start.elapsed().as_secs_f64() > MAP_CALLBACK_WAIT_S {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
        let _ = ctx.device.poll(wgpu::PollType::Poll);
    }
}

/// [`try_read_range_blocking`] of `(offset, size)` through staging buffers of at most `piece` bytes.
fn read_in_pieces(
    ctx: &crate::gpu::GpuContext,
    src: &wgpu::Buffer,
    (offset, size): (u64, u64),
    piece: u64,
    what: &str,
) -> Result<Vec<u8>, GpuError> {
    let piece = piece & !(wgpu::COPY_BUFFER_ALIGNMENT - 1);
    let reported_before = ctx.faults.count();
    let fail = |cause: String| GpuError::Readback { what: what.to_string(), cause };
    let mut out = Vec::new();
    let mut at = 0;
    while at < size {
        let n = (size - at).min(piece.max(wgpu::COPY_BUFFER_ALIGNMENT));
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("blocking read-back"),
            size: n,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read-back") });
        encoder.copy_buffer_to_buffer(src, offset + at, &staging, 0, n);
        ctx.queue.submit([encoder.finish()]);
        let mapped = Arc::new(std::sync::Mutex::new(None));
        let sink = mapped.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            if let Ok(mut m) = sink.lock() {
                *m = Some(r);
            }
        });
        let polled = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
        let result = mapped_result(ctx, &mapped, polled.is_ok());
        let reported = || ctx.faults.describe();
        match result {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(fail(reported().unwrap_or_else(|| e.to_string()))),
            None => {
                let why = polled.err().map_or("the mapping never finished".to_string(), |e| e.to_string());
                return Err(fail(reported().unwrap_or(why)));
            }
        }
        let bytes = staging.get_mapped_range(..).map(|v| v.to_vec());
        staging.unmap();
        match bytes {
            Ok(b) if b.len() as u64 == n => out.extend_from_slice(&b),
            _ => return Err(fail(reported().unwrap_or_else(|| "the staging buffer could not be viewed".into()))),
        }
        at += n;
    }
    if ctx.faults.count() != reported_before {
        return Err(fail(ctx.faults.describe().unwrap_or_default()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read through staging buffers smaller than it (as one past `max_buffer_size` is split) returns the
    /// same bytes as one staging buffer, from an offset, with a last piece shorter than the others.
    #[test]
    fn reads_in_pieces_match_one_read() {
        let ctx = crate::gpu::GpuContext::headless().expect("GPU test needs a GPU adapter (Mesa's lavapipe)");
        let data: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let src = crate::gpu::storage_buffer_init(&ctx.device, "test source", bytemuck::cast_slice(&data));
        let whole = read_in_pieces(&ctx, &src, (0, 4000), 4000, "test").expect("one piece");
        assert_eq!(whole, bytemuck::cast_slice::<u32, u8>(&data));
        let pieces = read_in_pieces(&ctx, &src, (40, 3960), 256 + 2, "test").expect("pieces");
        assert_eq!(pieces, whole[40..], "pieces of 256 bytes (258 rounded down to the copy alignment)");
    }
}
