// The DFSPH solves' error sum with subgroup operations (imported by dfsph.wgsl instead of error_sum.wgsl
// under the `SUBGROUPS` define, which src/sim/dfsph.rs sets when the device has `Features::SUBGROUP`):
// subgroupAdd over each subgroup, one atomic add by its first active invocation; no workgroup barrier, so
// a workgroup's warps finish independently.
fn add_error(lid: u32, e: f32) {
    let s = subgroupAdd(e);
    if (subgroupBroadcastFirst(lid) == lid) {
        atomicAdd(&step.err_sum, u32(min(s * params.err_scale + 0.5, 4.0e8)));
    }
}
