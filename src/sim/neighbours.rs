//! The step's neighbour lists (shaders/sim/neighbours.wgsl): DFSPH's first pass (`df_neighbours`) walks
//! the grid's rows once and writes, per sorted particle, its neighbours within the support radius as
//! 16-bit offsets from a base per plane of the row loop; df_factor, the solves' sources and updates and the
//! diffuse particles read the list instead of the rows (about 57 neighbours instead of about 145
//! candidates in 25 row ranges per particle).
//! A particle whose neighbours do not fit walks the grid as before, and so does every particle when the
//! list is off or would not fit one storage binding.

/// Words (`u32`) per particle: a header, a base per plane (5 with the default cells of h) and
/// [`LIST_ENTRIES`] 16-bit offsets (`LIST_WORDS` in shaders/sim/neighbours.wgsl).
pub const LIST_WORDS: u64 = 40;

/// Neighbours a list holds at most (about 57 on the rest lattice with h = 1.2 dx;
/// `LIST_ENTRIES` in the shaders).
pub const LIST_ENTRIES: u64 = 68;

/// Bytes of GPU memory the lists take per particle of capacity.
pub const LIST_BYTES_PER_PARTICLE: u64 = 4 * LIST_WORDS;

/// Bytes of the list buffer for `capacity` particles on a device with `limits`: `None` when the list
/// would not fit one storage binding (past 13.4 M particles on wgpu's Vulkan, whose bindings hold
/// 2^31 - 1 bytes), or when `memory` (bytes the simulation may still allocate) is known and too small.
/// The simulation then walks the grid in every loop (the same results, slower).
pub fn list_bytes(capacity: u64, limits: &wgpu::Limits, memory: Option<u64>) -> Option<u64> {
    let bytes = capacity.checked_mul(LIST_BYTES_PER_PARTICLE)?;
    let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    (bytes <= binding && memory.is_none_or(|m| bytes <= m)).then_some(bytes)
}

/// The stand-in bound when there is no list: four words, less than one particle's list, so the shaders
/// see no list whatever the capacity.
pub const STAND_IN_BYTES: u64 = 16;

/// Header of a particle whose neighbours do not fit its list (`LIST_NONE` in the shaders).
const LIST_NONE: u32 = u32::MAX;

/// Whether a list buffer of `bytes` holds lists for `capacity` particles (else it is the stand-in).
pub fn holds_lists(bytes: u64, capacity: u64) -> bool {
    capacity.checked_mul(LIST_BYTES_PER_PARTICLE).is_some_and(|needed| bytes >= needed)
}

/// The share of `heads` (the first row of the list buffer, one header per sorted active particle) whose
/// particle read a list rather than the grid, 0 ..= 1; `None` when empty.
pub fn listed_share(heads: &[u32]) -> Option<f64> {
    let listed = heads.iter().filter(|&&h| h != LIST_NONE).count();
    (!heads.is_empty()).then(|| listed as f64 / heads.len() as f64)
}

/// First word of the offsets (`LIST_FIRST` in the shaders): the header, then a base per plane of at most 5.
const LIST_FIRST: u64 = 6;

/// The lists of the first `particles` sorted particles, decoded from the list buffer's `words` (a buffer
/// for `capacity` particles, [`LIST_WORDS`] rows of `capacity` words) as the shaders read them, for a row
/// loop over `planes` planes (2 x the cells per support radius + 1) and `active` active particles (the
/// offsets count modulo them): per particle its neighbours' sorted indices, or `None` where the particle
/// walks the grid. Empty when `words` holds no list for them.
pub fn decode(words: &[u32], capacity: usize, particles: usize, planes: u32, active: u32) -> Vec<Option<Vec<u32>>> {
    if capacity < particles || !holds_lists(4 * words.len() as u64, capacity as u64) {
        return Vec::new();
    }
    let word = |i: usize, s: usize| words[s * capacity + i];
    let bits = 32 / planes;
    (0..particles)
        .map(|i| {
            let head = word(i, 0);
            if head == LIST_NONE {
                return None;
            }
            let mut list = Vec::new();
            let mut entry = 0;
            for p in 0..planes {
                let base = word(i, 1 + p as usize);
                for _ in 0..(head >> (p * bits)) & ((1 << bits) - 1) {
                    let w = word(i, LIST_FIRST as usize + entry / 2);
                    let j = base.wrapping_add((w >> (16 * (entry % 2))) & 0xffff);
                    list.push(if j >= active { j - active } else { j });
                    entry += 1;
                }
            }
            Some(list)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wgsl_constants_match() {
        let src = include_str!("../../shaders/sim/neighbours.wgsl");
        let constant = |name: &str| -> u64 {
            let line = src.lines().find(|l| l.starts_with(&format!("const {name}: u32 = "))).expect(name);
            line.split('=').nth(1).unwrap().trim().trim_end_matches(';').trim_end_matches('u').parse().unwrap()
        };
        assert_eq!(constant("LIST_WORDS"), LIST_WORDS);
        assert_eq!(constant("LIST_ENTRIES"), LIST_ENTRIES);
        // Header, five plane bases, then two offsets per word.
        assert_eq!(constant("LIST_FIRST") + LIST_ENTRIES / 2, LIST_WORDS);
    }

    #[test]
    fn a_list_past_one_binding_or_the_memory_is_left_out() {
        let limits = wgpu::Limits { max_storage_buffer_binding_size: 1 << 20, ..wgpu::Limits::default() };
        assert_eq!(list_bytes(1000, &limits, None), Some(160_000));
        assert_eq!(list_bytes(10_000, &limits, None), None);
        assert_eq!(list_bytes(1000, &limits, Some(100_000)), None);
        assert_eq!(list_bytes(u64::MAX / 2, &limits, None), None);
    }
}
