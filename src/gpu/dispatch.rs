//! Dispatch sizes, checked against the device's limits where they are made. Every direct compute
//! dispatch of the crate records a [`Workgroups`], and the only ways to get one are [`workgroups`] (a
//! count of items laid out in rows), [`workgroups_grid`] (work that is a 2-D or 3-D grid) and
//! [`Workgroups::ONE`]: each checks every dimension against `max_compute_workgroups_per_dimension` and
//! returns a [`DispatchError`] instead of letting wgpu's validation panic at record time. Sizes are made
//! when a simulation or pass is built (or its sources set, or its targets resized) wherever the count is
//! known then, so recording a frame never fails.
//!
//! The row layout: a kernel over `count` items takes index `gid.x + gid.y * num_workgroups.x * size`
//! (`flat_index` in shaders/common/dispatch.wgsl) and skips the indices past its count; rows hold at most
//! [`max_groups_x`] workgroups. One row below 65 536 workgroups.

use std::sync::atomic::{AtomicU32, Ordering};
use thiserror::Error;

/// A dispatch's workgroup counts (x, y, z), checked against the device when made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workgroups([u32; 3]);

impl Workgroups {
    /// One workgroup (planners, reductions' last stage).
    pub const ONE: Workgroups = Workgroups([1, 1, 1]);

    /// The counts (x, y, z).
    pub fn get(self) -> [u32; 3] {
        self.0
    }
}

/// A dispatch larger than the device runs: `groups` workgroups per dimension against its `max`.
#[derive(Clone, Debug, Error, PartialEq)]
#[error(
    "{what} needs {} x {} x {} workgroups, more than this GPU dispatches ({max} per dimension)",
    groups[0], groups[1], groups[2]
)]
pub struct DispatchError {
    /// What was to be dispatched ("emit", "sky", ...).
    pub what: &'static str,
    /// Workgroups per dimension it would need.
    pub groups: [u64; 3],
    /// The device's `max_compute_workgroups_per_dimension`.
    pub max: u32,
}

/// Most workgroups along x of a row: WebGPU's guaranteed 65 535 per dimension. Tests lower it
/// ([`set_max_groups_x`]) to run the two-dimensional layout at small counts.
static MAX_GROUPS_X: AtomicU32 = AtomicU32::new(65_535);

/// The current workgroups per row of [`workgroups`] (read when sizes and pipelines are made).
pub fn max_groups_x() -> u32 {
    MAX_GROUPS_X.load(Ordering::Relaxed)
}

/// Lowers (or restores) the workgroups per row of [`workgroups`], clamped to 1..=65 535, for the whole
/// process. For tests: simulations made afterwards lay out their dispatches in rows of `x`.
pub fn set_max_groups_x(x: u32) {
    MAX_GROUPS_X.store(x.clamp(1, 65_535), Ordering::Relaxed);
}

/// Workgroups per row on a device with `limits`: [`max_groups_x`], at most its workgroups per dimension.
/// Kernels that write indirect arguments in the same layout get it as their `MAX_GROUPS_X` constant.
pub fn row_length(limits: &wgpu::Limits) -> u32 {
    max_groups_x().min(limits.max_compute_workgroups_per_dimension).max(1)
}

/// Checks `groups` (per dimension) against `limits`.
fn checked(what: &'static str, groups: [u64; 3], limits: &wgpu::Limits) -> Result<Workgroups, DispatchError> {
    let max = limits.max_compute_workgroups_per_dimension;
    if groups.iter().all(|&g| g <= max as u64) {
        Ok(Workgroups(groups.map(|g| g as u32)))
    } else {
        Err(DispatchError { what, groups, max })
    }
}

/// Workgroups of `size` threads covering `count` items in rows of at most [`max_groups_x`] workgroups
/// along x (continued along y), and `layers` times along z (one per emitter, say; 1 for most work). At
/// least one workgroup. Errors when the rows or the layers exceed the device's workgroups per dimension.
pub fn workgroups(
    what: &'static str,
    count: u64,
    size: u32,
    layers: u32,
    limits: &wgpu::Limits,
) -> Result<Workgroups, DispatchError> {
    let groups = count.div_ceil(size.max(1) as u64).max(1);
    let x = groups.min(row_length(limits) as u64);
    checked(what, [x, groups.div_ceil(x), layers.max(1) as u64], limits)
}

/// Workgroups of `size` threads per dimension covering a grid of `count` items per dimension (a cube
/// face, a heightfield, the screen's tiles), at least one per dimension. Errors when a dimension exceeds
/// the device's workgroups per dimension.
pub fn workgroups_grid(
    what: &'static str,
    count: [u32; 3],
    size: [u32; 3],
    limits: &wgpu::Limits,
) -> Result<Workgroups, DispatchError> {
    checked(what, std::array::from_fn(|a| (count[a].div_ceil(size[a].max(1)) as u64).max(1)), limits)
}

/// Records a dispatch of `groups`.
pub fn dispatch(pass: &mut wgpu::ComputePass<'_>, groups: Workgroups) {
    let [x, y, z] = groups.0;
    pass.dispatch_workgroups(x, y, z);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: u32) -> wgpu::Limits {
        wgpu::Limits { max_compute_workgroups_per_dimension: max, ..wgpu::Limits::default() }
    }

    #[test]
    fn counts_are_laid_out_in_rows_and_refused_past_the_limit() {
        let l = limits(65_535);
        assert_eq!(workgroups("t", 0, 64, 1, &l).unwrap().get(), [1, 1, 1]);
        assert_eq!(workgroups("t", 65_535 * 64, 64, 1, &l).unwrap().get(), [65_535, 1, 1]);
        assert_eq!(workgroups("t", 65_535 * 64 + 1, 64, 8, &l).unwrap().get(), [65_535, 2, 8]);
        // The emitter of radius 100 m at dx = 0.05 m: 12 566 371 points, 196 350 workgroups of 64.
        assert_eq!(workgroups("emit", 12_566_371, 64, 1, &l).unwrap().get(), [65_535, 3, 1]);
        // More than 65 535 rows of 65 535 workgroups.
        let e = workgroups("emit", 65_536 * 65_535 * 64, 64, 1, &l).unwrap_err();
        assert_eq!(e.groups, [65_535, 65_536, 1]);
        assert!(e.to_string().contains("emit needs 65535 x 65536 x 1 workgroups"), "{e}");
        // A device with fewer workgroups per dimension gets shorter rows.
        assert_eq!(workgroups("t", 1000 * 64, 64, 1, &limits(256)).unwrap().get(), [256, 4, 1]);
        assert!(workgroups("t", 1000 * 64, 64, 257, &limits(256)).is_err(), "too many layers");
    }

    #[test]
    fn grids_are_checked_per_dimension() {
        let l = limits(65_535);
        assert_eq!(workgroups_grid("sky", [512, 512, 6], [8, 8, 1], &l).unwrap().get(), [64, 64, 6]);
        assert_eq!(workgroups_grid("t", [0, 0, 0], [8, 8, 1], &l).unwrap().get(), [1, 1, 1]);
        let e = workgroups_grid("sky", [u32::MAX, 8, 1], [8, 8, 1], &l).unwrap_err();
        assert!(e.to_string().starts_with("sky needs 536870912 x 1 x 1"), "{e}");
    }
}
