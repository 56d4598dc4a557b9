// Pixel boxes shared out over a workgroup: the compute splats' way of visiting the pixels of many small
// splats (splat.wgsl: the camera's depth and thickness; water_shadow.wgsl: the sun's light-space map).
// Point-cloud rasterisation in compute after Schuetz, Kerbl & Wimmer 2021. A workgroup takes SPLAT_WG
// particles; each thread boxes its own (`share_boxes`), the boxes' pixel counts are prefix-summed in
// workgroup memory, and the threads walk the concatenated boxes together, each taking every SPLAT_WG-th
// pixel (`box_pixel`), so a large splat is shared out instead of kept by one thread. The hits go into
// per-pixel u32s by atomics; a full-screen pass (`vs_fullscreen`) converts them into the targets.
//
//     let total = share_boxes(lid, my_box);
//     for (var k = lid; k < total; k += SPLAT_WG) { let p = box_pixel(k); ... }

// Particles per workgroup (SPLAT_WG in src/render/splat.rs; `box_pixel`'s search is written for 64).
const SPLAT_WG: u32 = 64u;

// Pixel boxes (x0, y0, x1, y1; x1, y1 exclusive) of the workgroup's particles and the exclusive prefix sum
// of their pixel counts (box_start[SPLAT_WG] = total).
var<workgroup> wg_box: array<vec4<i32>, SPLAT_WG>;
var<workgroup> box_start: array<u32, 65>;

// The index of workgroup `wg` of `nwg` dispatched in rows (src/gpu/dispatch.rs `workgroups`).
fn splat_workgroup(wg: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wg.x + wg.y * nwg.x;
}

// Shares thread `lid`'s box `b` (empty: vec4(0)) with the workgroup; returns the pixels of all its boxes.
// Every thread of the workgroup must call it (barriers).
fn share_boxes(lid: u32, b: vec4<i32>) -> u32 {
    wg_box[lid] = b;
    box_start[lid + 1u] = u32(b.z - b.x) * u32(b.w - b.y);
    if lid == 0u {
        box_start[0] = 0u;
    }
    // Inclusive scan of the counts in box_start[1..=64] (Hillis & Steele).
    for (var off = 1u; off < SPLAT_WG; off = off << 1u) {
        workgroupBarrier();
        var v = box_start[lid + 1u];
        if lid >= off {
            v += box_start[lid + 1u - off];
        }
        workgroupBarrier();
        box_start[lid + 1u] = v;
    }
    workgroupBarrier();
    return box_start[SPLAT_WG];
}

// Pixel k (< the total of `share_boxes`) of the workgroup's concatenated boxes: (the particle's index in
// the workgroup, pixel x, pixel y). The particle is the last p with box_start[p] <= k, found by a binary
// search written out in its log2(SPLAT_WG) = 6 steps rather than as a loop: llvmpipe (lavapipe) ends a
// shader's loops after 65 535 iterations of them all together per invocation (gallivm's loop limiter),
// which a loop per pixel reached with splats of a few thousand pixels each and silently dropped the rest.
fn box_pixel(k: u32) -> vec3<i32> {
    var lo = 0u;
    lo += select(0u, 32u, box_start[lo + 32u] <= k);
    lo += select(0u, 16u, box_start[lo + 16u] <= k);
    lo += select(0u, 8u, box_start[lo + 8u] <= k);
    lo += select(0u, 4u, box_start[lo + 4u] <= k);
    lo += select(0u, 2u, box_start[lo + 2u] <= k);
    lo += select(0u, 1u, box_start[lo + 1u] <= k);
    let bp = wg_box[lo];
    let width = u32(bp.z - bp.x);
    let local = k - box_start[lo];
    return vec3<i32>(i32(lo), bp.x + i32(local % width), bp.y + i32(local / width));
}

// Full-screen triangle of the resolve passes.
@vertex
fn vs_fullscreen(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4<f32> {
    let uv = vec2<f32>(f32((vi << 1u) & 2u), f32(vi & 2u));
    return vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
}
