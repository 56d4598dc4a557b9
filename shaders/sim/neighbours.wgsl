// Neighbour lists built once a step (Verlet-style lists without a skin: positions do not change between
// the grid's sort and `integrate`, so the list of each sorted particle holds exactly its neighbours j != i
// within the support radius 2h). `df_neighbours` (dfsph.wgsl) walks the grid's rows (common.wgsl,
// row_range) once and writes the list; every loop of the step after it (df_factor, the solves' sources and
// updates, the diffuse particles') reads it instead of visiting about 145 candidates in 25 row ranges per
// particle to keep about 57.
//
// Layout (decoded on the CPU by src/sim/neighbours.rs), word s of particle i at neighbours[s * stride + i] (one
// coalesced word per thread), stride = the particle capacity:
//   word 0:               header: the neighbours found in each plane dz = -reach ..= reach of the row loop,
//                         `32 / planes` bits each (6 bits for the default 5 planes), or LIST_NONE
//   words 1 ..= planes:   each plane's base: the sorted index of its first neighbour
//   words LIST_FIRST ..:  the neighbours as 16-bit offsets from their plane's base, two per word, low half
//                         first, in the order the row loop found them. Offsets count modulo the active
//                         particles: a plane's rows are consecutive rows of the grid's folded table, so
//                         they follow each other in the sorted order except where the table wraps from
//                         its last row to its first, where the sorted order wraps from the end to 0.
// A particle whose neighbours do not fit (more than LIST_ENTRIES, more than a plane's header field holds,
// or an offset past 65535) gets LIST_NONE and its loops walk the grid as before.
// Without a list (a stand-in binding shorter than the capacity: `SimOptions::neighbour_list` off, or
// the list past one storage binding) every particle walks the grid.

// Words per particle and neighbours per list (LIST_WORDS and LIST_ENTRIES in src/sim/neighbours.rs).
const LIST_WORDS: u32 = 40u;
const LIST_FIRST: u32 = 6u;
const LIST_ENTRIES: u32 = 68u;
const LIST_NONE: u32 = 0xffffffffu;

@group(0) @binding(9) var<storage, read_write> neighbours: array<u32>;

// True when the binding holds a list for every particle of the capacity (not the stand-in).
fn list_on() -> bool {
    return arrayLength(&neighbours) / LIST_WORDS >= params.num_particles;
}

// Particles per word row of the list: the capacity.
fn list_stride() -> u32 {
    return params.num_particles;
}

fn list_word(i: u32, s: u32) -> u32 {
    return neighbours[s * list_stride() + i];
}

fn list_store(i: u32, s: u32, v: u32) {
    neighbours[s * list_stride() + i] = v;
}

// Planes of the row loop (dz = -reach ..= reach) and the header's bits per plane.
fn list_planes() -> u32 {
    return u32(2 * reach() + 1);
}

fn plane_bits() -> u32 {
    return 32u / list_planes();
}

// Particle i's header, LIST_NONE when it has no list (walk the grid).
fn list_header(i: u32) -> u32 {
    if (!list_on()) {
        return LIST_NONE;
    }
    return list_word(i, 0u);
}

// Neighbours of plane p in a header.
fn plane_count(head: u32, p: u32) -> u32 {
    let bits = plane_bits();
    return (head >> (p * bits)) & ((1u << bits) - 1u);
}

// Reading a list: its neighbours in order across the planes (`list_pop`, as many times as `list_total`
// of its header). A list lives in memory the caches rarely hold when a pass starts (160 bytes a particle),
// and each neighbour's load waits on its word and its plane's base: the reader loads the next word and
// the next plane's base when it takes up the current ones, so those loads are in flight while the
// current neighbours are summed.
struct ListReader {
    head: u32,
    plane: u32,
    // Neighbours left in the current plane.
    left: u32,
    base: u32,
    next_base: u32,
    word: u32,
    next_word: u32,
    // Slot of next_word.
    slot: u32,
    // Which half of `word` comes next.
    half: u32,
}

fn list_reader(i: u32, head: u32) -> ListReader {
    return ListReader(head, 0u, plane_count(head, 0u), list_word(i, 1u), list_word(i, 2u), 0u, list_word(i, LIST_FIRST), LIST_FIRST, 0u);
}

// Neighbours in a list with header `head`.
fn list_total(head: u32) -> u32 {
    var n = 0u;
    for (var p = 0u; p < list_planes(); p++) {
        n += plane_count(head, p);
    }
    return n;
}

// The sorted index of the next neighbour of particle i's list (at most `list_total` calls), `end` = the
// active particles.
fn list_pop(i: u32, r: ptr<function, ListReader>, end: u32) -> u32 {
    let last = list_planes() - 1u;
    loop {
        if ((*r).left != 0u || (*r).plane >= last) {
            break;
        }
        (*r).plane += 1u;
        (*r).base = (*r).next_base;
        (*r).next_base = list_word(i, 1u + min((*r).plane + 1u, last));
        (*r).left = plane_count((*r).head, (*r).plane);
    }
    (*r).left -= 1u;
    if ((*r).half == 0u) {
        (*r).word = (*r).next_word;
        (*r).slot += 1u;
        (*r).next_word = list_word(i, min((*r).slot, LIST_WORDS - 1u));
    }
    let off = ((*r).word >> (16u * (*r).half)) & 0xffffu;
    (*r).half ^= 1u;
    return list_index((*r).base, off, end);
}

// Sorted index of the neighbour at offset `off` from `base`, modulo the `end` active particles.
fn list_index(base: u32, off: u32, end: u32) -> u32 {
    let j = base + off;
    return select(j, j - end, j >= end);
}

// Writing a list during the row loop (`end` = the active particles): `list_add` per neighbour of plane p,
// `list_end_plane` after each plane's rows, `list_finish` once.
struct ListBuilder {
    head: u32,
    base: u32,
    in_plane: u32,
    entries: u32,
    pending: u32,
    full: bool,
}

fn list_builder() -> ListBuilder {
    return ListBuilder(0u, 0u, 0u, 0u, 0u, !list_on());
}

fn list_add(i: u32, b: ptr<function, ListBuilder>, p: u32, j: u32, end: u32) {
    if ((*b).full) {
        return;
    }
    if ((*b).in_plane == 0u) {
        (*b).base = j;
        list_store(i, 1u + p, j);
    }
    let off = select(j - (*b).base, j + end - (*b).base, j < (*b).base);
    let cap = (1u << plane_bits()) - 1u;
    if (off > 0xffffu || (*b).in_plane >= cap || (*b).entries >= LIST_ENTRIES) {
        (*b).full = true;
        return;
    }
    if (((*b).entries & 1u) == 0u) {
        (*b).pending = off;
    } else {
        list_store(i, LIST_FIRST + (*b).entries / 2u, (*b).pending | (off << 16u));
    }
    (*b).entries += 1u;
    (*b).in_plane += 1u;
}

fn list_end_plane(b: ptr<function, ListBuilder>, p: u32) {
    (*b).head |= (*b).in_plane << (p * plane_bits());
    (*b).in_plane = 0u;
}

fn list_finish(i: u32, b: ptr<function, ListBuilder>) {
    if (!list_on()) {
        return;
    }
    if (!(*b).full && ((*b).entries & 1u) == 1u) {
        list_store(i, LIST_FIRST + (*b).entries / 2u, (*b).pending);
    }
    list_store(i, 0u, select((*b).head, LIST_NONE, (*b).full));
}
