//! One GPU device per rank: rank `r` takes the `r`-th discrete adapter when the machine has enough,
//! otherwise every rank gets its own device on the one high-performance adapter (two devices on one
//! H200, or several lavapipe devices in CI), which exercises the same exchange.

use super::ClusterError;
use crate::gpu::GpuContext;

/// How many GPUs a run asks for: `--gpus N|all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuCount {
    /// Every discrete adapter (one when there is none).
    All,
    /// This many ranks (1 = the single-GPU path, no exchange).
    N(usize),
}

/// Most ranks of one process.
pub const MAX_RANKS: usize = 64;

impl std::str::FromStr for GpuCount {
    type Err = String;

    /// "all" or a count 1 ..= [`MAX_RANKS`] (clap shows the error text as is).
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(GpuCount::All);
        }
        match s.parse::<usize>() {
            Ok(n) if (1..=MAX_RANKS).contains(&n) => Ok(GpuCount::N(n)),
            _ => Err(format!("`{s}` is not a GPU count: give 1 to {MAX_RANKS} or `all`")),
        }
    }
}

fn discrete(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
    pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY))
        .into_iter()
        .filter(|a| a.get_info().device_type == wgpu::DeviceType::DiscreteGpu)
        .collect()
}

/// The ranks `count` asks for on this machine (`All`: the discrete adapters, at least one).
pub fn resolve(count: GpuCount) -> usize {
    match count {
        GpuCount::N(n) => n,
        GpuCount::All => discrete(&GpuContext::create_instance(None)).len().max(1),
    }
}

/// The high-performance adapter (the one a single-GPU run takes); `rank` names the rank in the
/// error. Errors: there is none.
fn fallback(instance: &wgpu::Instance, rank: usize) -> Result<wgpu::Adapter, ClusterError> {
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    }))
    .map_err(|e| ClusterError::Gpu { rank, cause: crate::gpu::GpuError::NoAdapter(e.to_string()) })
}

/// The headless context of the process-per-rank launch (MPI): the `local_rank`-th discrete adapter of
/// this host (ranks on one host share adapters round-robin when there are more ranks than GPUs), or the
/// high-performance adapter when the host has no discrete GPU (lavapipe in CI). `rank` (the global one)
/// names the rank in errors. Errors: no adapter, or the adapter refused a device.
pub fn local_context(local_rank: usize, rank: usize) -> Result<GpuContext, ClusterError> {
    let instance = GpuContext::create_instance(None);
    let found = discrete(&instance);
    let adapter = match found.len() {
        0 => fallback(&instance, rank)?,
        n => found[local_rank % n].clone(),
    };
    GpuContext::on_adapter(instance, adapter).map_err(|cause| ClusterError::Gpu { rank, cause })
}

/// One headless context per rank (see the module docs).
/// Errors: no adapter, or an adapter refused a device.
pub fn rank_contexts(ranks: usize) -> Result<Vec<GpuContext>, ClusterError> {
    let instance = GpuContext::create_instance(None);
    let found = discrete(&instance);
    let adapters: Vec<wgpu::Adapter> = if found.len() >= ranks {
        found.into_iter().take(ranks).collect()
    } else {
        vec![fallback(&instance, 0)?; ranks]
    };
    adapters
        .into_iter()
        .enumerate()
        .map(|(rank, a)| GpuContext::on_adapter(instance.clone(), a).map_err(|cause| ClusterError::Gpu { rank, cause }))
        .collect()
}

/// One context per rank with `first` (e.g. the window's device) as rank 0: the other ranks take the
/// discrete adapters other than `first`'s when the machine has enough, otherwise each gets its own device
/// on `first`'s adapter (several lavapipe devices in CI, or two devices on one GPU).
/// Errors: an adapter refused a device (the rank is named).
pub fn contexts_beside(first: GpuContext, ranks: usize) -> Result<Vec<GpuContext>, ClusterError> {
    let others: Vec<wgpu::Adapter> =
        discrete(&first.instance).into_iter().filter(|a| a.get_info() != first.info).collect();
    let adapters: Vec<wgpu::Adapter> = if others.len() + 1 >= ranks {
        others.into_iter().take(ranks.saturating_sub(1)).collect()
    } else {
        vec![first.adapter.clone(); ranks.saturating_sub(1)]
    };
    let instance = first.instance.clone();
    let mut out = vec![first];
    for (k, a) in adapters.into_iter().enumerate() {
        out.push(
            GpuContext::on_adapter(instance.clone(), a).map_err(|cause| ClusterError::Gpu { rank: k + 1, cause })?,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_counts_parse() {
        assert_eq!("all".parse::<GpuCount>(), Ok(GpuCount::All));
        assert_eq!("ALL".parse::<GpuCount>(), Ok(GpuCount::All));
        assert_eq!("3".parse::<GpuCount>(), Ok(GpuCount::N(3)));
        for bad in ["0", "65", "-1", "two", ""] {
            assert!(bad.parse::<GpuCount>().is_err(), "{bad}");
        }
    }
}
