// Exclusive prefix sum of u32 (work-efficient enough for cell counts): each workgroup scans a block of
// 512 values in place (two per thread, Hillis-Steele over the 256 pair sums in workgroup memory) and
// writes the block's total to `sums`; the sums are scanned the same way one level up, and
// `add_offsets` adds each block's scanned total back. Blelloch 1990; Harris et al., GPU Gems 3 ch. 39.

struct ScanParams {
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> scan_params: ScanParams;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;

var<workgroup> partial: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_blocks(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x;
    let block = wid.x + wid.y * nwg.x;
    let base = block * 512u + 2u * t;
    let n = scan_params.n;
    var a = 0u;
    var b = 0u;
    if (base < n) { a = data[base]; }
    if (base + 1u < n) { b = data[base + 1u]; }
    let s = a + b;
    partial[t] = s;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off = off << 1u) {
        var v = 0u;
        if (t >= off) { v = partial[t - off]; }
        workgroupBarrier();
        partial[t] = partial[t] + v;
        workgroupBarrier();
    }
    let excl = partial[t] - s;
    if (base < n) { data[base] = excl; }
    if (base + 1u < n) { data[base + 1u] = excl + a; }
    // (Rows of the 2-D dispatch may hold workgroups past the last block: they write nothing.)
    if (t == 255u && block * 512u < n) {
        sums[block] = partial[255];
    }
}

@compute @workgroup_size(256)
fn add_offsets(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    // One workgroup of 256 threads covers one block of 512 values, two per thread; blocks past the
    // 65 535th continue in rows along y (gpu::dispatch_size).
    let block = wid.x + wid.y * nwg.x;
    let offset = sums[block];
    for (var k = 0u; k < 2u; k++) {
        let i = block * 512u + k * 256u + lid.x;
        if (i < scan_params.n) {
            data[i] = data[i] + offset;
        }
    }
}
