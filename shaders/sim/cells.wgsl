// The neighbour grid's cell table and the sorted positions as every kernel after the grid build reads
// them: read-only (grid.wgsl, which builds both, declares them writable, the table atomic). Entry c holds
// the END of cell c after the build (see row_range and active_end in common.wgsl).
@group(0) @binding(6) var<storage, read> cell_start: array<u32>;
#split_array 0 4 read spos vec4<f32>

fn cell_start_at(i: u32) -> u32 {
    return cell_start[i];
}
