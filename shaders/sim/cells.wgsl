// The neighbour grid's cell table as every kernel after the grid build reads it (plain u32; grid.wgsl,
// which builds it, declares it atomic instead). Entry c holds the END of cell c after the build (see
// row_range and active_end in common.wgsl).
@group(0) @binding(6) var<storage, read_write> cell_start: array<u32>;

fn cell_start_at(i: u32) -> u32 {
    return cell_start[i];
}
