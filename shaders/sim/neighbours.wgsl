// Neighbour lists built once a step (Verlet-style lists without a skin: positions do not change between
// DFSPH's first neighbour loop and `integrate`, so the list of each sorted particle holds exactly its
// neighbours j != i within the support radius 2h). `df_factor` walks the grid's rows (common.wgsl,
// row_range) once and writes the list; every later loop of the step (the solves' sources and updates)
// reads it instead of visiting about 145 candidates in 25 row ranges per particle to keep about 57.
//
// Layout (decoded on the CPU by src/sim/neighbours.rs): quad q (four u32 words) of particle i at
// neighbours[q * stride + i], stride = the particle capacity, so a warp's loads and stores of one quad row
// are coalesced and each moves 16 bytes per thread:
//   quad 0:                 (header, base 0, base 1, base 2); the header holds the neighbours found in each
//                           plane dz = -reach ..= reach of the row loop, `32 / planes` bits each (6 bits
//                           for the default 5 planes), or LIST_NONE
//   quad 1:                 (base 3, base 4, base 5, base 6); a plane's base is the sorted index of its
//                           first neighbour
//   quads 2 .. LIST_QUADS:  the neighbours as 16-bit offsets from their plane's base, eight per quad (two per
//                           word, low half first), in the order the row loop found them. Offsets count
//                           modulo the active particles: a plane's rows are consecutive rows of the grid's
//                           folded table, so they follow each other in the sorted order except where the
//                           table wraps from its last row to its first, and the sorted order from the end to 0.
// A particle whose neighbours do not fit (more than LIST_ENTRIES, more than a plane's header field holds,
// or an offset past 65535) gets LIST_NONE and its loops walk the grid as before.
// Without a list (a stand-in binding shorter than the capacity: `SimOptions::neighbour_list` off, or
// the list past one storage binding) every particle walks the grid.
// Written one word at a time (the first version), a warp's stores came at different turns of its threads'
// loops, a partial 32-byte sector each: the build cost 0.44 ms per step at 1 M on the H100. Staging the
// words in workgroup memory instead cost 2.3 ms (the barrier and 20 KiB per workgroup).

// Quads per particle and neighbours per list (LIST_QUADS and LIST_ENTRIES in src/sim/neighbours.rs).
const LIST_QUADS: u32 = 11u;
const LIST_ENTRIES: u32 = 72u;
const LIST_NONE: u32 = 0xffffffffu;

@group(0) @binding(9) var<storage, read_write> neighbours: array<vec4<u32>>;

// True when the binding holds a list for every particle of the capacity (not the stand-in).
fn list_on() -> bool {
    return arrayLength(&neighbours) / LIST_QUADS >= params.num_particles;
}

fn list_quad(i: u32, q: u32) -> vec4<u32> {
    return neighbours[q * params.num_particles + i];
}

fn list_store(i: u32, q: u32, v: vec4<u32>) {
    neighbours[q * params.num_particles + i] = v;
}

// Planes of the row loop (dz = -reach ..= reach) and the header's bits per plane.
fn list_planes() -> u32 {
    return u32(2 * reach() + 1);
}

fn plane_bits() -> u32 {
    return 32u / list_planes();
}

// Particle i's list head: (header, base 0, base 1, base 2), header LIST_NONE when it has no list (walk
// the grid).
fn list_head(i: u32) -> vec4<u32> {
    if (!list_on()) {
        return vec4<u32>(LIST_NONE);
    }
    return list_quad(i, 0u);
}

// Neighbours of plane p in a header.
fn plane_count(head: u32, p: u32) -> u32 {
    let bits = plane_bits();
    return (head >> (p * bits)) & ((1u << bits) - 1u);
}

// Reading a list: the plane bases and the next entry with the quad that holds it.
struct ListCursor {
    bases: vec4<u32>,
    more: vec4<u32>,
    quad: vec4<u32>,
    k: u32,
}

// A cursor over particle i's list whose head (list_head) is `head`.
fn list_cursor(i: u32, head: vec4<u32>) -> ListCursor {
    var more = vec4<u32>(0u);
    if (list_planes() > 3u) {
        more = list_quad(i, 1u);
    }
    return ListCursor(head, more, vec4<u32>(0u), 0u);
}

// The base of plane p.
fn plane_base(c: ptr<function, ListCursor>, p: u32) -> u32 {
    if (p < 3u) {
        return (*c).bases[p + 1u];
    }
    return (*c).more[p - 3u];
}

// The next neighbour's offset from its plane's base.
fn list_next(i: u32, c: ptr<function, ListCursor>) -> u32 {
    let k = (*c).k;
    if ((k & 7u) == 0u) {
        (*c).quad = list_quad(i, 2u + k / 8u);
    }
    (*c).k = k + 1u;
    return ((*c).quad[(k / 2u) & 3u] >> (16u * (k & 1u))) & 0xffffu;
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
    bases: vec4<u32>,
    more: vec4<u32>,
    quad: vec4<u32>,
    full: bool,
}

fn list_builder() -> ListBuilder {
    let zero = vec4<u32>(0u);
    return ListBuilder(0u, 0u, 0u, 0u, zero, zero, zero, !list_on());
}

fn list_add(i: u32, b: ptr<function, ListBuilder>, p: u32, j: u32, end: u32) {
    if ((*b).full) {
        return;
    }
    if ((*b).in_plane == 0u) {
        (*b).base = j;
        if (p < 3u) {
            (*b).bases[p + 1u] = j;
        } else {
            (*b).more[p - 3u] = j;
        }
    }
    let base = (*b).base;
    let off = select(j - base, j + end - base, j < base);
    let e = (*b).entries;
    if (off > 0xffffu || (*b).in_plane >= (1u << plane_bits()) - 1u || e >= LIST_ENTRIES) {
        (*b).full = true;
        return;
    }
    let w = (e / 2u) & 3u;
    (*b).quad[w] = (*b).quad[w] | (off << (16u * (e & 1u)));
    if ((e & 7u) == 7u) {
        list_store(i, 2u + e / 8u, (*b).quad);
        (*b).quad = vec4<u32>(0u);
    }
    (*b).entries = e + 1u;
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
    let e = (*b).entries;
    if ((*b).full) {
        list_store(i, 0u, vec4<u32>(LIST_NONE));
        return;
    }
    if ((e & 7u) != 0u) {
        list_store(i, 2u + e / 8u, (*b).quad);
    }
    var bases = (*b).bases;
    bases.x = (*b).head;
    list_store(i, 0u, bases);
    if (list_planes() > 3u) {
        list_store(i, 1u, (*b).more);
    }
}
