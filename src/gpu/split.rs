//! Per-particle arrays split over several storage bindings. wgpu clamps a storage binding to
//! 2^31 - 1 bytes on Vulkan (`MAX_I32_BINDING_SIZE` in wgpu-hal), 134 M particles of 16 bytes; a
//! [`SplitBuffer`] holds one array as up to [`MAX_CHUNKS`] buffers ("chunks") of [`SplitBuffer::per_binding`]
//! elements each (the last one shorter). A shader module declares each array in as many bindings as the
//! arrays it serves have chunks (the simulation's and the renderer's anisotropy and splats: their arrays'
//! chunks, made again when that changes; the sphere impostors and the wetness, built before they know
//! the particles: [`MAX_CHUNKS`]; the bindings past an array's last chunk bound to chunk 0, never read):
//! chunk `k` of an array declared at binding `b` sits at binding `b + k * BINDING_STRIDE`. Up to one
//! binding's worth of particles (134 M) the simulation, the anisotropy and the splats are as they were
//! before the split: one binding per array.
//!
//! In WGSL the preprocessor's `#split_array GROUP BINDING ACCESS NAME TYPE` (src/gpu/shader.rs) declares
//! the chunks `NAME_0 ..` and the accessors `NAME_load(i)` and (for `read_write`) `NAME_store(i, v)`;
//! `#split_alias NAME ARRAY TYPE` names another array's accessors (scratch that shares its buffers:
//! no bindings of its own). The chunk length is the pipeline constant `SPLIT_N`
//! (shaders/common/split.wgsl), which every pipeline of such a module gets from [`constant`]. The branch
//! on the chunk is uniform across a workgroup except at a chunk's border (chunks are whole multiples of
//! [`ALIGN`] elements).

use std::sync::atomic::{AtomicU32, Ordering};
use thiserror::Error;

/// Most chunks (bindings) of one array: 4 x 2 GiB hold 536 M particles of 16 bytes.
pub const MAX_CHUNKS: usize = 4;

/// Binding distance between consecutive chunks of one array (bindings of a group stay below it).
pub const BINDING_STRIDE: u32 = 32;

/// Bytes of the largest element a split array holds (`vec4<f32>`); [`per_binding`] fits it.
pub const ELEMENT_BYTES: u64 = 16;

/// Chunks are whole multiples of this many elements (a multiple of every workgroup size used).
pub const ALIGN: u32 = 256;

/// The WGSL pipeline constant holding the chunk length in elements (shaders/common/split.wgsl).
pub const CONSTANT: &str = "SPLIT_N";

/// A lowered chunk length for tests (0: the device's own), see [`set_per_binding`].
static PER_BINDING_OVERRIDE: AtomicU32 = AtomicU32::new(0);

/// Lowers the elements per chunk of every split array made afterwards in this process (0 restores the
/// device's own). For tests: the multi-chunk path runs at a few thousand particles. Rounded down to a
/// multiple of [`ALIGN`] (at least [`ALIGN`]).
pub fn set_per_binding(elements: u32) {
    let v = if elements == 0 { 0 } else { (elements / ALIGN).max(1) * ALIGN };
    PER_BINDING_OVERRIDE.store(v, Ordering::Relaxed);
}

/// Elements per chunk on a device with `limits`: the largest storage binding over [`ELEMENT_BYTES`],
/// rounded down to a multiple of [`ALIGN`] (134 217 472 on wgpu's Vulkan), or the test hook's
/// [`set_per_binding`] when lower.
pub fn per_binding(limits: &wgpu::Limits) -> u32 {
    per_binding_with(limits, PER_BINDING_OVERRIDE.load(Ordering::Relaxed))
}

/// [`per_binding`] with the test hook's value `lowered` (0: none).
fn per_binding_with(limits: &wgpu::Limits, lowered: u32) -> u32 {
    let max = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / ELEMENT_BYTES;
    let device = ((max.min(u32::MAX as u64) as u32) / ALIGN * ALIGN).max(ALIGN);
    match lowered {
        0 => device,
        lowered => lowered.min(device),
    }
}

/// Chunks per array a kernel binding `arrays` split arrays besides `others` storage buffers can have on
/// a device with `limits` (its storage buffers per shader stage), at most [`MAX_CHUNKS`]: 3 on lavapipe
/// (32 per stage) for the simulation (6 arrays, 9 others), [`MAX_CHUNKS`] on NVIDIA's Vulkan.
pub fn chunks_fitting(limits: &wgpu::Limits, arrays: u32, others: u32) -> usize {
    let per_stage = limits.max_storage_buffers_per_shader_stage.saturating_sub(others);
    ((per_stage / arrays.max(1)) as usize).clamp(1, MAX_CHUNKS)
}

/// Most elements a split array of `chunks` chunks holds on a device with `limits` (`chunks` x
/// [`per_binding`], at most `u32::MAX`: indices are `u32` in WGSL).
pub fn max_elements(limits: &wgpu::Limits, chunks: usize) -> u64 {
    (chunks as u64 * per_binding(limits) as u64).min(u32::MAX as u64)
}

/// The pipeline constant `(SPLIT_N, elements per chunk)` for every pipeline of a module with split arrays.
pub fn constant(limits: &wgpu::Limits) -> (&'static str, f64) {
    (CONSTANT, per_binding(limits) as f64)
}

/// A split array longer than [`MAX_CHUNKS`] chunks.
#[derive(Debug, Error, PartialEq)]
#[error("{label}: {len} elements need more than {MAX_CHUNKS} storage bindings of {per_binding}")]
pub struct SplitError {
    /// The buffer's label.
    pub label: String,
    /// Elements asked for.
    pub len: u64,
    /// Elements per chunk.
    pub per_binding: u32,
}

/// One per-particle array of `len` elements of `element` bytes held in up to [`MAX_CHUNKS`] storage
/// buffers (also copy source and destination) of `per_binding` elements each, the last one shorter.
pub struct SplitBuffer {
    chunks: Vec<wgpu::Buffer>,
    per_binding: u32,
    len: u64,
    element: u64,
}

impl SplitBuffer {
    /// Zeroed array of `len` elements of `element` bytes on `device`, chunked by [`per_binding`] of its
    /// limits. Errors when it needs more than [`MAX_CHUNKS`] chunks.
    pub fn new(device: &wgpu::Device, label: &str, len: u64, element: u64) -> Result<Self, SplitError> {
        Self::new_chunked(device, label, len, element, per_binding(&device.limits()))
    }

    /// As [`SplitBuffer::new`], in chunks of `per_binding` elements (at most the device's
    /// [`per_binding`], a multiple of [`ALIGN`]): an array read by the same kernels as another one takes
    /// its chunk length (one `SPLIT_N` per module), e.g. the renderer's arrays the positions'.
    pub fn new_chunked(
        device: &wgpu::Device,
        label: &str,
        len: u64,
        element: u64,
        per_binding: u32,
    ) -> Result<Self, SplitError> {
        let per_binding = per_binding_with(&device.limits(), (per_binding / ALIGN).max(1) * ALIGN);
        let count = len.div_ceil(per_binding as u64).max(1);
        if count > MAX_CHUNKS as u64 {
            return Err(SplitError { label: label.to_string(), len, per_binding });
        }
        let chunks = (0..count)
            .map(|k| {
                let first = k * per_binding as u64;
                let n = (len - first.min(len)).min(per_binding as u64);
                super::storage_buffer(device, &format!("{label} {k}"), n * element)
            })
            .collect();
        Ok(Self { chunks, per_binding, len, element })
    }

    /// As [`SplitBuffer::new`], filled with `data` (`len` = `data.len() / element` elements).
    pub fn new_init(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        label: &str,
        element: u64,
        data: &[u8],
    ) -> Result<Self, SplitError> {
        let b = Self::new(device, label, data.len() as u64 / element, element)?;
        b.write(queue, 0, data);
        Ok(b)
    }

    /// Elements in the array.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements per chunk (the pipelines' `SPLIT_N`).
    pub fn per_binding(&self) -> u32 {
        self.per_binding
    }

    /// The chunks' buffers, in order.
    pub fn chunks(&self) -> &[wgpu::Buffer] {
        &self.chunks
    }

    /// Elements in chunk `k` (0 past the last chunk).
    pub fn chunk_len(&self, k: usize) -> u64 {
        let first = (k as u64 * self.per_binding as u64).min(self.len);
        (self.len - first).min(self.per_binding as u64)
    }

    /// Bytes of all chunks.
    pub fn bytes(&self) -> u64 {
        self.chunks.iter().map(|b| b.size()).sum()
    }

    /// (binding, buffer) for the `count` bindings of an array declared at `binding` in a module resolved
    /// with `count` chunks: chunk `k` at `binding + k * BINDING_STRIDE`, the bindings past the last chunk
    /// bound to chunk 0. `count` below the chunks drops the last ones (a caller's error).
    pub fn bindings(&self, binding: u32, count: usize) -> impl Iterator<Item = (u32, &wgpu::Buffer)> + '_ {
        debug_assert!(count >= self.chunks.len(), "{count} bindings for {} chunks", self.chunks.len());
        (0..count).map(move |k| (binding + k as u32 * BINDING_STRIDE, self.chunks.get(k).unwrap_or(&self.chunks[0])))
    }

    /// The pieces `(chunk, byte offset in it, element offset in the range, elements)` of the element range
    /// `first .. first + count` (clamped to the array).
    fn pieces(&self, first: u64, count: u64) -> impl Iterator<Item = (usize, u64, u64, u64)> + '_ {
        let end = (first + count).min(self.len);
        let pb = self.per_binding as u64;
        let mut i = first.min(end);
        std::iter::from_fn(move || {
            if i >= end {
                return None;
            }
            let k = (i / pb) as usize;
            let n = ((k as u64 + 1) * pb).min(end) - i;
            let piece = (k, (i - k as u64 * pb) * self.element, i - first, n);
            i += n;
            Some(piece)
        })
    }

    /// Writes `data` (whole elements) from element `first` on, across chunk borders; what lies past the
    /// array is dropped.
    pub fn write(&self, queue: &wgpu::Queue, first: u64, data: &[u8]) {
        let count = data.len() as u64 / self.element;
        for (k, offset, at, n) in self.pieces(first, count) {
            let bytes = &data[(at * self.element) as usize..((at + n) * self.element) as usize];
            queue.write_buffer(&self.chunks[k], offset, bytes);
        }
    }

    /// Records a copy of elements `first .. first + count` into `dst` at byte `dst_offset` (contiguous).
    pub fn copy_to_buffer(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        first: u64,
        count: u64,
        dst: &wgpu::Buffer,
        dst_offset: u64,
    ) {
        for (k, offset, at, n) in self.pieces(first, count) {
            encoder.copy_buffer_to_buffer(
                &self.chunks[k],
                offset,
                dst,
                dst_offset + at * self.element,
                n * self.element,
            );
        }
    }

    /// Records a copy of the first `count` elements into `dst` (same element size; both chunked alike, as
    /// arrays made on one device are).
    pub fn copy_to(&self, encoder: &mut wgpu::CommandEncoder, dst: &SplitBuffer, count: u64) {
        debug_assert_eq!((self.element, self.per_binding), (dst.element, dst.per_binding));
        for (k, offset, _, n) in self.pieces(0, count.min(dst.len)) {
            encoder.copy_buffer_to_buffer(&self.chunks[k], offset, &dst.chunks[k], offset, n * self.element);
        }
    }

    /// Blocking read of elements `first .. first + count` (fewer past the end), across chunks. For the
    /// ranks of src/cluster, tests and batch tools: it waits for the GPU.
    /// Empty when nothing comes back (tests; library code uses [`SplitBuffer::try_read_range_blocking`]).
    pub fn read_range_blocking(&self, ctx: &super::GpuContext, first: u64, count: u64) -> Vec<u8> {
        self.try_read_range_blocking(ctx, first, count, "an array").unwrap_or_default()
    }

    /// [`SplitBuffer::read_range_blocking`] that says why nothing came back. Errors:
    /// [`super::GpuError::Readback`] naming `what`.
    pub fn try_read_range_blocking(
        &self,
        ctx: &super::GpuContext,
        first: u64,
        count: u64,
        what: &str,
    ) -> Result<Vec<u8>, super::GpuError> {
        let mut out = Vec::new();
        for (k, offset, _, n) in self.pieces(first, count) {
            let size = n * self.element;
            out.extend(super::readback::try_read_range_blocking(ctx, &self.chunks[k], offset, size, what)?);
        }
        Ok(out)
    }

    /// Blocking read of the whole array (its chunks one after another). For tests (empty when nothing
    /// comes back); batch tools use [`SplitBuffer::try_read_blocking`].
    pub fn read_blocking(&self, ctx: &super::GpuContext) -> Vec<u8> {
        self.try_read_blocking(ctx, "an array").unwrap_or_default()
    }

    /// [`SplitBuffer::read_blocking`] that says why nothing came back. Errors:
    /// [`super::GpuError::Readback`] naming `what`.
    pub fn try_read_blocking(&self, ctx: &super::GpuContext, what: &str) -> Result<Vec<u8>, super::GpuError> {
        self.try_read_range_blocking(ctx, 0, self.len, what)
    }
}

/// Layout entries for the `count` bindings of a split array of `T` declared at `binding` (see
/// [`SplitBuffer::bindings`]).
pub fn layout_entries<T>(
    binding: u32,
    read_only: bool,
    visibility: wgpu::ShaderStages,
    count: usize,
) -> Vec<wgpu::BindGroupLayoutEntry> {
    (0..count as u32).map(|k| super::storage_entry::<T>(binding + k * BINDING_STRIDE, read_only, visibility)).collect()
}

/// The WGSL of `#split_alias NAME ARRAY TYPE`: `NAME_load` and `NAME_store` calling `ARRAY`'s. `None`
/// when the line does not have those three words.
pub fn alias_wgsl(args: &str) -> Option<String> {
    let words: Vec<&str> = args.split_whitespace().collect();
    let [name, array, ty] = words[..] else { return None };
    Some(format!(
        "fn {name}_load(i: u32) -> {ty} {{\n    return {array}_load(i);\n}}\n\
         fn {name}_store(i: u32, v: {ty}) {{\n    {array}_store(i, v);\n}}\n"
    ))
}

/// The WGSL of `#split_array GROUP BINDING ACCESS NAME TYPE` in `chunks` bindings (1 ..= [`MAX_CHUNKS`]):
/// the chunks' declarations and the accessors (`NAME_store` only for `read_write`). `None` when the line
/// does not have those five words.
pub fn wgsl(args: &str, chunks: usize) -> Option<String> {
    let words: Vec<&str> = args.split_whitespace().collect();
    let [group, binding, access, name, ty] = words[..] else { return None };
    let (group, binding): (u32, u32) = (group.parse().ok()?, binding.parse().ok()?);
    if access != "read" && access != "read_write" {
        return None;
    }
    let mut s = String::new();
    let chunks = chunks.clamp(1, MAX_CHUNKS);
    for k in 0..chunks as u32 {
        let b = binding + k * BINDING_STRIDE;
        s += &format!("@group({group}) @binding({b}) var<storage, {access}> {name}_{k}: array<{ty}>;\n");
    }
    let last = chunks - 1;
    s += &format!("fn {name}_load(i: u32) -> {ty} {{\n");
    let at = |k: usize| if k == 0 { "i".to_string() } else { format!("i - {k}u * SPLIT_N") };
    for k in 0..last {
        s += &format!("    if i < {}u * SPLIT_N {{ return {name}_{k}[{}]; }}\n", k + 1, at(k));
    }
    s += &format!("    return {name}_{last}[{}];\n}}\n", at(last));
    if access == "read_write" {
        s += &format!("fn {name}_store(i: u32, v: {ty}) {{\n");
        for k in 0..last {
            s += &format!("    if i < {}u * SPLIT_N {{ {name}_{k}[{}] = v; return; }}\n", k + 1, at(k));
        }
        s += &format!("    {name}_{last}[{}] = v;\n}}\n", at(last));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_binding_follows_the_device_and_the_hook() {
        let vulkan = wgpu::Limits {
            max_storage_buffer_binding_size: (1 << 31) - 1,
            max_buffer_size: 1 << 40,
            ..wgpu::Limits::default()
        };
        // The hook itself is left alone: other tests of this binary run in parallel.
        assert_eq!(per_binding_with(&vulkan, 0), 134_217_472);
        assert_eq!(MAX_CHUNKS as u64 * per_binding_with(&vulkan, 0) as u64, 536_869_888);
        assert_eq!(per_binding_with(&vulkan, 768), 768);
        let small = wgpu::Limits { max_storage_buffer_binding_size: 4096 * 16, ..vulkan };
        assert_eq!(per_binding_with(&small, 0), 4096);
        assert_eq!(per_binding_with(&small, 1 << 20), 4096, "the hook only lowers");
    }

    #[test]
    fn the_macro_declares_every_chunk_and_its_accessors() {
        let s = wgsl("0 2 read_write pos vec4<f32>", 4).unwrap();
        assert!(s.contains("@group(0) @binding(2) var<storage, read_write> pos_0: array<vec4<f32>>;"), "{s}");
        assert!(s.contains("@group(0) @binding(98) var<storage, read_write> pos_3: array<vec4<f32>>;"), "{s}");
        assert!(s.contains("fn pos_store(i: u32, v: vec4<f32>)"), "{s}");
        let r = wgsl("1 4 read spos vec4<f32>", 4).unwrap();
        assert!(r.contains("fn spos_load(i: u32) -> vec4<f32>") && !r.contains("spos_store"), "{r}");
        // One chunk: one binding, the accessor a plain index.
        let one = wgsl("1 4 read spos vec4<f32>", 1).unwrap();
        assert_eq!(one.matches("@binding").count(), 1, "{one}");
        assert!(one.contains("fn spos_load(i: u32) -> vec4<f32> {\n    return spos_0[i];\n}"), "{one}");
        assert_eq!(wgsl("0 2 pos vec4<f32>", 4), None);
        assert_eq!(wgsl("0 2 write pos vec4<f32>", 4), None);
    }
}
