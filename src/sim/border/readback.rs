//! The border lists' buffers and their read-back (src/sim/border.rs): the four lists share one records
//! binding and one ids-and-slots binding; what comes back is packed into one staging buffer ([`packed`]).

use super::*;

/// The lists' buffers and their staging copy, for `capacity` entries per list.
pub(super) struct Lists {
    pub(super) capacity: u32,
    records: wgpu::Buffer,
    tags: wgpu::Buffer,
    pub(super) staging: wgpu::Buffer,
    pub(super) bind: wgpu::BindGroup,
}

/// The most entries per list the device's buffers hold: the four lists' records (32 bytes each) share
/// one storage binding, and their read-back copy takes 40 bytes per entry (records, id, slot).
pub(super) fn max_list_capacity(device: &wgpu::Device) -> u32 {
    let l = device.limits();
    let bytes = l.max_storage_buffer_binding_size.min(l.max_buffer_size);
    (bytes / (4 * (ENTRY_BYTES + 4))).min(u32::MAX as u64) as u32
}

impl Lists {
    /// The lists of `capacity` entries each, bound with `uniform` and the header `counts` by `layout`.
    pub(super) fn new(
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        uniform: &wgpu::Buffer,
        counts: &wgpu::Buffer,
        capacity: u32,
    ) -> Self {
        let entries = 4 * capacity as u64;
        let records = gpu::storage_buffer(device, "border records", entries * 32);
        let tags = gpu::storage_buffer(device, "border ids and slots", entries * 8);
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("border lists read-back"),
            size: entries * (ENTRY_BYTES + 4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind = gpu::bind_buffers(device, "border lists", layout, &[uniform, counts, &records, &tags]);
        Self { capacity, records, tags, staging, bind }
    }
}

/// Maps `size` bytes of `staging` (copied into by a submitted command buffer), waits and returns them.
pub(super) fn map_blocking(ctx: &GpuContext, staging: &wgpu::Buffer, size: u64) -> Vec<u8> {
    if size == 0 {
        return Vec::new();
    }
    let slice = staging.slice(..size);
    slice.map_async(wgpu::MapMode::Read, |_| {});
    let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
    let data = slice.get_mapped_range().map(|v| v.to_vec()).unwrap_or_default();
    staging.unmap();
    data
}

/// Maps `a.1` bytes of `a.0` and `b.1` bytes of `b.0` (both copied into by a submitted command buffer),
/// waits once and returns them.
pub(super) fn map_two_blocking(
    ctx: &GpuContext,
    a: (&wgpu::Buffer, u64),
    b: (&wgpu::Buffer, u64),
) -> (Vec<u8>, Vec<u8>) {
    for (buffer, size) in [a, b] {
        if size > 0 {
            buffer.slice(..size).map_async(wgpu::MapMode::Read, |_| {});
        }
    }
    let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
    let read = |(buffer, size): (&wgpu::Buffer, u64)| {
        if size == 0 {
            return Vec::new();
        }
        let data = buffer.slice(..size).get_mapped_range().map(|v| v.to_vec()).unwrap_or_default();
        buffer.unmap();
        data
    };
    (read(a), read(b))
}

/// Byte offsets in the read-back copy of `take` entries per list: (records of list l, ids of list l,
/// slots of halo list l (2, 3; 0 otherwise)), and the copy's size. Packed: every list's records (32 B an
/// entry), then every list's ids, then the halo lists' slots.
fn packed(take: [u32; 4]) -> ([u64; 4], [u64; 4], [u64; 4], u64) {
    let t = take.map(|n| n as u64);
    let total: u64 = t.iter().sum();
    let before = |l: usize| t[..l].iter().sum::<u64>();
    let records = std::array::from_fn(|l| 32 * before(l));
    let ids = std::array::from_fn(|l| 32 * total + 4 * before(l));
    let slots = std::array::from_fn(|l| if l < 2 { 0 } else { 36 * total + 4 * (before(l) - before(2)) });
    (records, ids, slots, 36 * total + 4 * (t[2] + t[3]))
}

/// The lists (migrants left, right, halo left, right; `counts` entries each) and the halo lists' slots
/// from a read-back copy of `take` entries per list ([`packed`]; `counts` at most `take`).
pub(super) fn decode_lists(bytes: &[u8], take: [u32; 4], counts: [u32; 4]) -> ([RankParticles; 4], [Vec<u32>; 2]) {
    let (records, ids, slots, _) = packed(take);
    let mut lists: [RankParticles; 4] = Default::default();
    let mut halo_slots: [Vec<u32>; 2] = Default::default();
    for l in 0..4 {
        let (at, n) = (records[l] as usize, counts[l] as usize);
        let values: Vec<[f32; 4]> = bytemuck::pod_collect_to_vec(&bytes[at..at + 32 * n]);
        (lists[l].pos, lists[l].vel) = values.chunks_exact(2).map(|e| (e[0], e[1])).unzip();
        lists[l].ids = bytemuck::pod_collect_to_vec(&bytes[ids[l] as usize..ids[l] as usize + 4 * n]);
        if l >= 2 {
            halo_slots[l - 2] = bytemuck::pod_collect_to_vec(&bytes[slots[l] as usize..slots[l] as usize + 4 * n]);
        }
    }
    (lists, halo_slots)
}

impl Lists {
    /// Records copies of the first `take` entries of each list (at most the capacity) into the staging
    /// buffer, packed ([`packed`]); returns the bytes copied.
    pub(super) fn encode_copies(&self, encoder: &mut wgpu::CommandEncoder, take: [u32; 4]) -> u64 {
        let (records, ids, slots, size) = packed(take);
        let cap = self.capacity as u64;
        for (l, &n) in take.iter().enumerate() {
            let n = n as u64;
            if n == 0 {
                continue;
            }
            encoder.copy_buffer_to_buffer(&self.records, l as u64 * cap * 32, &self.staging, records[l], n * 32);
            encoder.copy_buffer_to_buffer(&self.tags, l as u64 * cap * 4, &self.staging, ids[l], n * 4);
            if l >= 2 {
                encoder.copy_buffer_to_buffer(&self.tags, (4 + l as u64) * cap * 4, &self.staging, slots[l], n * 4);
            }
        }
        size
    }
}
