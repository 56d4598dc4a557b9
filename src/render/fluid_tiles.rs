//! Empty-space skipping of the depth filters (`shaders/render/fluid_tiles.wgsl`), after van der Laan,
//! Green & Sainz, "Screen space fluid rendering with curvature flow" (I3D 2009): smooth only where there is
//! fluid.
//!
//! Per frame, before the depth filter ([`super::curvature_flow`] or [`super::narrow_range`]), "tiles"
//! classifies the [`TILE_SIZE`]² screen tiles holding fluid (dilated by one pixel, the curvature flow's
//! stencil), compacts them into `FluidTargets::tile_list` through an atomic counter and writes the
//! indirect dispatch arguments `FluidTargets::tile_args` (`[x, y, 1, count]`: one workgroup per listed
//! tile, in rows of at most `gpu::max_groups_x()` workgroups) and the per-tile mask of the tile-mask view.
//! It also writes 0 into both ping-pong textures `FluidTargets::smooth` over every tile it does not list
//! (the raw depth is 0 there), so a filter that writes every pixel of every listed tile leaves this frame's
//! depth in them everywhere without copying the raw depth (two copies cost 0.31 ms per frame at 1080p on an
//! H200, two render-pass clears as much).
//!
//! The pipelines are screen-independent; the bind group over the [`FluidTargets`] is rebuilt by
//! [`Pass::resize`].

use super::frame::{self, RAW_DEPTH_FORMAT};
use super::pass::{Frame, Pass, Targets};
use super::targets::{FluidTargets, TILE_SIZE};
use crate::gpu::{self, GpuContext};

/// Screen and tile counts, bind group 1 binding 0. WGSL twin: `Tiles` in `shaders/render/fluid_tiles.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TilesUniform {
    /// Screen size, pixels.
    pub size: [u32; 2],
    /// Tiles across.
    pub tiles_x: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<TilesUniform>() == 16);

/// The bind group over one set of targets and what is dispatched over them.
struct Bound {
    group: wgpu::BindGroup,
    /// The uniform's contents for these targets (written every frame: the queue is not at hand on resize).
    params: TilesUniform,
    tile_counter: wgpu::Buffer,
    /// One workgroup per tile (`None`, and the classification skipped, where the device cannot dispatch
    /// that many: never for a texture it can make).
    tile_groups: Option<gpu::Workgroups>,
}

/// The tile classification: pipelines, uniform, and the bind group over the current targets.
pub struct FluidTilesPass {
    layout: wgpu::BindGroupLayout,
    classify: wgpu::ComputePipeline,
    write_args: wgpu::ComputePipeline,
    uniform: wgpu::Buffer,
    bound: Option<Bound>,
}

impl FluidTilesPass {
    /// Builds the pipelines; [`Pass::resize`] binds the targets before the first encode.
    pub fn new(ctx: &GpuContext, _color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let vis = wgpu::ShaderStages::COMPUTE;
        let d2 = wgpu::TextureViewDimension::D2;
        let depth_out = |binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: vis,
            ty: wgpu::BindingType::StorageTexture {
                access: wgpu::StorageTextureAccess::WriteOnly,
                format: RAW_DEPTH_FORMAT,
                view_dimension: d2,
            },
            count: None,
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("fluid tiles bind group layout"),
            entries: &[
                gpu::uniform_entry::<TilesUniform>(0, vis),
                frame::texture_entry(1, vis, false, d2),
                gpu::storage_entry::<u32>(2, false, vis),
                gpu::storage_entry::<u32>(3, false, vis),
                gpu::storage_entry::<[u32; 4]>(4, false, vis),
                gpu::storage_entry::<u32>(5, false, vis),
                depth_out(6),
                depth_out(7),
            ],
        });
        let module = gpu::shader::module(device, "render/fluid_tiles.wgsl");
        let pipeline_layout = frame::pass_pipeline_layout(device, "fluid tiles pipeline layout", &layout);
        let max_groups = [("MAX_GROUPS_X", gpu::row_length(&device.limits()) as f64)];
        Self {
            classify: gpu::compute_pipeline(device, &module, &pipeline_layout, "classify"),
            write_args: gpu::compute_pipeline_with(device, &module, &pipeline_layout, "write_args", &max_groups),
            uniform: gpu::uniform_buffer_init(
                device,
                "fluid tiles uniform",
                bytemuck::bytes_of(&TilesUniform::zeroed()),
            ),
            layout,
            bound: None,
        }
    }
}

impl Pass for FluidTilesPass {
    type Input<'a> = ();

    fn resize(&mut self, device: &wgpu::Device, targets: Option<Targets<'_>>) {
        self.bound = targets.map(|t| bind(device, self, t.fluid));
    }

    /// Clears the tile counter and records "tiles" (see the module doc).
    fn encode(&mut self, frame: &mut Frame<'_>, _input: ()) {
        let Some(bound) = self.bound.as_ref() else {
            log::error!("fluid tiles: encode before resize");
            return;
        };
        frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&bound.params));
        frame.encoder.clear_buffer(&bound.tile_counter, 0, None);
        let Some(tile_groups) = bound.tile_groups else { return };
        let mut pass = frame.compute_pass("tiles");
        pass.set_bind_group(1, &bound.group, &[]);
        pass.set_pipeline(&self.classify);
        gpu::dispatch(&mut pass, tile_groups);
        pass.set_pipeline(&self.write_args);
        gpu::dispatch(&mut pass, gpu::Workgroups::ONE);
    }
}

/// The bind group over `targets`, the uniform for their size, and what is dispatched.
fn bind(device: &wgpu::Device, pass: &FluidTilesPass, targets: &FluidTargets) -> Bound {
    let tex = |v| wgpu::BindingResource::TextureView(v);
    let entry = |binding, resource| wgpu::BindGroupEntry { binding, resource };
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("fluid tiles bind group"),
        layout: &pass.layout,
        entries: &[
            entry(0, pass.uniform.as_entire_binding()),
            entry(1, tex(&targets.raw_depth_view)),
            entry(2, targets.tile_list.as_entire_binding()),
            entry(3, targets.tile_counter.as_entire_binding()),
            entry(4, targets.tile_args.as_entire_binding()),
            entry(5, targets.tile_mask.as_entire_binding()),
            entry(6, tex(&targets.smooth_views[0])),
            entry(7, tex(&targets.smooth_views[1])),
        ],
    });
    Bound {
        group,
        params: uniform(targets.size, targets.tiles),
        tile_counter: targets.tile_counter.clone(),
        tile_groups: gpu::workgroups_grid(
            "fluid tiles",
            [targets.tiles.0, targets.tiles.1, 1],
            [1; 3],
            &device.limits(),
        )
        .map_err(|e| log::error!("{e}: the depth is not smoothed"))
        .ok(),
    }
}

/// The uniform of targets of `size` pixels, `tiles` tiles across and down.
fn uniform(size: (u32, u32), tiles: (u32, u32)) -> TilesUniform {
    debug_assert_eq!(tiles, (size.0.div_ceil(TILE_SIZE), size.1.div_ceil(TILE_SIZE)));
    TilesUniform { size: [size.0, size.1], tiles_x: tiles.0, _pad: 0 }
}

use bytemuck::Zeroable as _;

/// Layout entries of bind group 1 that every tile-skipped depth filter shares (the filter adds its uniform
/// at binding 0): 1 = the depth read (`R32Float`, sampled), 2 = the depth written (`R32Float`, write-only
/// storage), 3 = `FluidTargets::tile_list` and 4 = `FluidTargets::tile_args`, read-only
/// (`shaders/common/tiles.wgsl`).
pub fn filter_layout_entries() -> [wgpu::BindGroupLayoutEntry; 4] {
    let vis = wgpu::ShaderStages::COMPUTE;
    let d2 = wgpu::TextureViewDimension::D2;
    [
        frame::texture_entry(1, vis, false, d2),
        wgpu::BindGroupLayoutEntry {
            binding: 2,
            visibility: vis,
            ty: wgpu::BindingType::StorageTexture {
                access: wgpu::StorageTextureAccess::WriteOnly,
                format: RAW_DEPTH_FORMAT,
                view_dimension: d2,
            },
            count: None,
        },
        gpu::storage_entry::<u32>(3, true, vis),
        gpu::storage_entry::<[u32; 4]>(4, true, vis),
    ]
}

/// The bind groups of a depth filter that ping-pongs between `FluidTargets::smooth[0]` and `[1]`, over
/// the layout [`filter_layout_entries`] plus the filter's `uniform` at binding 0.
pub struct PingPong {
    /// The first step: reads the raw depth, writes `smooth[1]`.
    pub first: wgpu::BindGroup,
    /// `[0]`: reads `smooth[0]`, writes `smooth[1]`; `[1]`: the reverse. Step k > 0 uses `[k % 2]`, so
    /// step k writes `smooth[(k + 1) % 2]`.
    pub next: [wgpu::BindGroup; 2],
}

impl PingPong {
    /// The groups over `targets` for a filter's `layout` (labelled `label`) and `uniform`.
    pub fn new(
        device: &wgpu::Device,
        label: &str,
        layout: &wgpu::BindGroupLayout,
        uniform: &wgpu::Buffer,
        targets: &FluidTargets,
    ) -> Self {
        let group = |src: &wgpu::TextureView, dst: &wgpu::TextureView| {
            let tex = wgpu::BindingResource::TextureView;
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(label),
                layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: tex(src) },
                    wgpu::BindGroupEntry { binding: 2, resource: tex(dst) },
                    wgpu::BindGroupEntry { binding: 3, resource: targets.tile_list.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 4, resource: targets.tile_args.as_entire_binding() },
                ],
            })
        };
        let [s0, s1] = &targets.smooth_views;
        Self { first: group(&targets.raw_depth_view, s1), next: [group(s0, s1), group(s1, s0)] }
    }

    /// The group of step `k` (0 = the first).
    pub fn step(&self, k: u32) -> &wgpu::BindGroup {
        if k == 0 {
            &self.first
        } else {
            &self.next[(k % 2) as usize]
        }
    }
}
