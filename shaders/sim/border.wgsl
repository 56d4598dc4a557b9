// Border selection of a decomposed simulation's rank (Rust: src/sim/border.rs; Werner 2015's slabs, see
// src/cluster and docs/background.md section 6): after a step, `select_border` classifies each of the
// rank's particles against its slab along the decomposition axis. Ghosts (id bit 31) and parked slots are
// dropped; an owned particle that left the slab is appended to the migrant list of that side; every other
// owned particle is kept, compacted into the sorted arrays (spos, svel, dead between steps: the next grid
// build rewrites them) and the first half of the ids (each workgroup counts its kept particles, then
// claims a block with one atomic add), and also appended to the halo list of each border it lies within
// the halo of, with its kept slot. The lists (position, velocity, id) are small and the only per-particle
// data read back. The counts header also collects the kept particles' largest speed, whether one is
// non-finite and their bounds (per workgroup first). `settle` then moves the kept particles back into the
// unsorted arrays (slots 0 ..< kept) and parks the rest of the old ones; the host appends what the
// neighbours sent after them. The order within a list follows the atomics (arbitrary, as the counting
// sort's within a cell).
#import "sim/common.wgsl"

#split_array 0 4 read_write spos vec4<f32>
@group(0) @binding(6) var<storage, read_write> cell_start: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> ids: array<u32>;

// Rust twin: BorderUniform in src/sim/border.rs.
struct Border {
    axis: u32,        // 0 = x, 1 = y, 2 = z
    live: u32,        // slots holding the rank's particles (owned and ghosts) before the selection
    ids_from: u32,    // where the ids of `pos` start in `ids` (the sorted half after a step)
    list_capacity: u32, // entries of each list; more are counted, not written (the host retries)
    lo: f32,          // the slab: lo <= c < hi (infinite at the outer ends), m
    hi: f32,
    halo_lo: f32,     // c < halo_lo: within the left border's halo (lo + halo), m
    halo_hi: f32,     // c >= halo_hi: within the right border's halo (hi - halo), m
    park: vec4<f32>,  // what a parked slot holds (w < 0)
}

@group(1) @binding(0) var<uniform> border: Border;
// The header (indices below), then nothing: atomics only.
@group(1) @binding(1) var<storage, read_write> counts: array<atomic<u32>>;
// Two per entry (position, velocity); entry e of list L at L * list_capacity + e.
@group(1) @binding(2) var<storage, read_write> records: array<vec4<f32>>;
// The entries' ids, then (from 4 * list_capacity on) the kept slot of each halo entry.
@group(1) @binding(3) var<storage, read_write> tags: array<u32>;

const GHOST_BIT: u32 = 0x80000000u;
// Header indices (src/sim/border.rs spells the same).
const KEPT: u32 = 0u;
const MIGRANT_LEFT: u32 = 1u;   // lists 0..4 at header 1..5
const MAX_SPEED: u32 = 5u;      // f32 bits of the largest kept speed
const BROKEN: u32 = 6u;         // 1 when a kept particle is non-finite
const BOUNDS_MIN: u32 = 8u;     // order-preserving bits (ordered_bits) of the kept bounds, xyz
const BOUNDS_MAX: u32 = 12u;

fn cell_start_at(i: u32) -> u32 {
    return atomicLoad(&cell_start[i]);
}

fn ordered_bits(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    return select(b ^ 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn finite(v: vec3<f32>) -> bool {
    let e = bitcast<vec3<u32>>(v) & vec3<u32>(0x7f800000u);
    return all(e != vec3<u32>(0x7f800000u));
}

// Appends (p, v, id) to list `list` (0 = migrants left, 1 = right, 2 = halo left, 3 = halo right).
fn push(list: u32, p: vec4<f32>, v: vec4<f32>, id: u32, slot: u32) {
    let k = atomicAdd(&counts[MIGRANT_LEFT + list], 1u);
    if (k >= border.list_capacity) {
        return;
    }
    let e = list * border.list_capacity + k;
    records[2u * e] = p;
    records[2u * e + 1u] = v;
    tags[e] = id;
    tags[4u * border.list_capacity + e] = slot;
}

// The workgroup's share of the header: its kept particles are counted and bounded here first, then one
// thread adds them to the header (one global atomic per workgroup and field, not per particle).
var<workgroup> wg_kept: atomic<u32>;
var<workgroup> wg_base: u32;
var<workgroup> wg_speed: atomic<u32>;
var<workgroup> wg_broken: atomic<u32>;
var<workgroup> wg_min: array<atomic<u32>, 3>;
var<workgroup> wg_max: array<atomic<u32>, 3>;

@compute @workgroup_size(WG)
fn select_border(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if (lid == 0u) {
        atomicStore(&wg_kept, 0u);
        atomicStore(&wg_speed, 0u);
        atomicStore(&wg_broken, 0u);
        for (var a = 0u; a < 3u; a++) {
            atomicStore(&wg_min[a], 0xffffffffu);
            atomicStore(&wg_max[a], 0u);
        }
    }
    workgroupBarrier();
    let i = flat_index(gid, nwg, WG);
    var keep = false;
    var local_k = 0u;
    var p = vec4<f32>(0.0);
    var v = vec4<f32>(0.0);
    var id = 0u;
    var c = 0.0;
    if (i < border.live) {
        p = pos_load(i);
        id = ids[border.ids_from + i];
        if (p.w >= 0.0 && (id & GHOST_BIT) == 0u) {
            v = vel_load(i);
            c = p[border.axis];
            if (c < border.lo) {
                push(0u, p, v, id, 0u);
            } else if (c >= border.hi) {
                push(1u, p, v, id, 0u);
            } else {
                keep = true;
                local_k = atomicAdd(&wg_kept, 1u);
                atomicMax(&wg_speed, bitcast<u32>(length(v.xyz)));
                if (!(finite(p.xyz) && finite(v.xyz))) {
                    atomicOr(&wg_broken, 1u);
                }
                for (var a = 0u; a < 3u; a++) {
                    atomicMin(&wg_min[a], ordered_bits(p[a]));
                    atomicMax(&wg_max[a], ordered_bits(p[a]));
                }
            }
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        let n = atomicLoad(&wg_kept);
        if (n > 0u) {
            wg_base = atomicAdd(&counts[KEPT], n);
            atomicMax(&counts[MAX_SPEED], atomicLoad(&wg_speed));
            atomicOr(&counts[BROKEN], atomicLoad(&wg_broken));
            for (var a = 0u; a < 3u; a++) {
                atomicMin(&counts[BOUNDS_MIN + a], atomicLoad(&wg_min[a]));
                atomicMax(&counts[BOUNDS_MAX + a], atomicLoad(&wg_max[a]));
            }
        }
    }
    workgroupBarrier();
    if (keep) {
        let k = wg_base + local_k;
        spos_store(k, p);
        svel_store(k, v);
        ids[k] = id;
        if (c < border.halo_lo) {
            push(2u, p, v, id, k);
        }
        if (c >= border.halo_hi) {
            push(3u, p, v, id, k);
        }
    }
}

@compute @workgroup_size(WG)
fn settle(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= border.live) {
        return;
    }
    if (i < atomicLoad(&counts[KEPT])) {
        pos_store(i, spos_load(i));
        vel_store(i, svel_load(i));
    } else {
        pos_store(i, border.park);
        vel_store(i, vec4<f32>(0.0));
        ids[i] = 0xffffffffu;
    }
}
