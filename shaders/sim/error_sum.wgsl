// The DFSPH solves' error sum (step.err_sum, fixed point): each source kernel's workgroup of 128 adds its
// threads' errors e by a tree in workgroup memory (7 barriers), then one atomic add. Called by every
// thread of the workgroup, outside divergent branches. With subgroup operations dfsph.wgsl imports
// error_sum_subgroup.wgsl instead (its `SUBGROUPS` define, set by src/sim/dfsph.rs).
var<workgroup> err_red: array<f32, 128>;

fn add_error(lid: u32, e: f32) {
    err_red[lid] = e;
    for (var off = 64u; off > 0u; off = off >> 1u) {
        workgroupBarrier();
        if (lid < off) {
            err_red[lid] = err_red[lid] + err_red[lid + off];
        }
    }
    if (lid == 0u) {
        atomicAdd(&step.err_sum, u32(min(err_red[0] * params.err_scale + 0.5, 4.0e8)));
    }
}
