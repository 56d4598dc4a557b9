//! "ghost cull" (`shaders/render/ghosts.wgsl`): on a rank of a decomposed simulation (src/cluster), the
//! ellipsoids of the ghost copies of the neighbours' particles are marked as not drawn after the
//! [`super::anisotropy`] pass, so each particle is splatted by its owner only (sort-last compositing,
//! [`super::sort_last`], sums the ranks' thickness: a ghost drawn too would count twice) while the ghosts
//! still shape the owned particles' ellipsoids as neighbours. The renderer knows no simulation: it gets
//! the ids buffer and the bit that marks a ghost as plain data ([`GhostIds`]). A single-GPU frame has no
//! ids and records nothing here.

use super::anisotropy::EllipsoidBuffers;
use super::frame;
use super::pass::{Frame, Pass};
use crate::gpu::{self, GpuContext};

/// Threads per workgroup of the kernel.
const WORKGROUP: u32 = 128;

/// Parameters, bind group 1 binding 0. WGSL twin: `Ghosts` in `shaders/render/ghosts.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GhostUniform {
    /// Ellipsoids (particles) to look at.
    pub count: u32,
    /// Index into the ids of particle 0's id.
    pub offset: u32,
    /// The id bit of a ghost.
    pub ghost_bit: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<GhostUniform>() == 16);

/// Which of the drawn particles are ghosts: the simulation's ids (`array<u32>`, one per particle from
/// entry `offset` on, in the order of the positions the ellipsoids come from; e.g.
/// `Simulation::ids_in_position_order`) and the bit that marks a ghost (`cluster::GHOST`).
#[derive(Clone, Copy)]
pub struct GhostIds<'a> {
    pub ids: &'a wgpu::Buffer,
    pub offset: u32,
    pub ghost_bit: u32,
}

/// What the ghost cull reads per frame: the ellipsoids to cull, how many, and the ids.
#[derive(Clone, Copy)]
pub struct GhostInput<'a> {
    pub ellipsoids: &'a EllipsoidBuffers,
    pub count: u32,
    pub ghosts: GhostIds<'a>,
}

/// The ghost cull: its pipeline, one uniform per chunk of the ellipsoid centres (split over up to
/// [`gpu::split::MAX_CHUNKS`] bindings, [`EllipsoidBuffers`]) and the bind groups of the last buffers.
pub struct GhostPass {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
    uniforms: Vec<wgpu::Buffer>,
    /// Per chunk: (ids, centres chunk) its bind group was made for, compared by identity.
    bound: Vec<(wgpu::Buffer, wgpu::Buffer, wgpu::BindGroup)>,
}

impl GhostPass {
    /// Builds the pipeline.
    pub fn new(ctx: &GpuContext, _color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let vis = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("ghost cull bind group layout"),
            entries: &[
                gpu::uniform_entry::<GhostUniform>(0, vis),
                gpu::storage_entry::<u32>(1, true, vis),
                gpu::storage_entry::<[f32; 4]>(2, false, vis),
            ],
        });
        let pl = frame::pass_pipeline_layout(device, "ghost cull pipeline layout", &layout);
        let module = gpu::shader::module(device, "render/ghosts.wgsl");
        let pipeline = gpu::compute_pipeline(device, &module, &pl, "cull");
        let zero = <GhostUniform as bytemuck::Zeroable>::zeroed();
        let uniforms = (0..gpu::split::MAX_CHUNKS)
            .map(|_| gpu::uniform_buffer_init(device, "ghost cull uniform", bytemuck::bytes_of(&zero)))
            .collect();
        Self { layout, pipeline, uniforms, bound: Vec::new() }
    }
}

impl Pass for GhostPass {
    type Input<'a> = GhostInput<'a>;

    /// Records "ghost cull": the ellipsoid of every ghost among the first `count` gets bounding radius 0,
    /// one dispatch per chunk of the centres (each chunk bound as the kernel's `centres`, its first
    /// ellipsoid's id at `offset` + the chunk's start).
    fn encode(&mut self, frame: &mut Frame<'_>, input: GhostInput<'_>) {
        let GhostInput { ellipsoids, count, ghosts } = input;
        let chunks = ellipsoids.centres.chunks();
        let stale = self.bound.len() != chunks.len()
            || self.bound.iter().zip(chunks).any(|((ids, centres, _), chunk)| ids != ghosts.ids || centres != chunk);
        if stale {
            self.bound = chunks
                .iter()
                .zip(&self.uniforms)
                .map(|(chunk, uniform)| {
                    let group = gpu::bind_buffers(
                        frame.device,
                        "ghost cull bind group",
                        &self.layout,
                        &[uniform, ghosts.ids, chunk],
                    );
                    (ghosts.ids.clone(), chunk.clone(), group)
                })
                .collect();
        }
        let mut start = 0u64;
        for (k, (_, _, group)) in self.bound.iter().enumerate() {
            let len = ellipsoids.centres.chunk_len(k).min((count as u64).saturating_sub(start));
            if len == 0 {
                break;
            }
            let uniform = GhostUniform {
                count: len as u32,
                offset: ghosts.offset + start as u32,
                ghost_bit: ghosts.ghost_bit,
                _pad: 0,
            };
            frame.queue.write_buffer(&self.uniforms[k], 0, bytemuck::bytes_of(&uniform));
            // A chunk holds at most 2^31 / 16 ellipsoids: 1 M workgroups, within any device's rows.
            let groups = match gpu::workgroups("ghost cull", len, WORKGROUP, 1, &frame.device.limits()) {
                Ok(groups) => groups,
                Err(e) => return log::error!("{e}: ghosts are not culled"),
            };
            let mut pass = frame.compute_pass("ghost cull");
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(1, group, &[]);
            gpu::dispatch(&mut pass, groups);
            start += ellipsoids.centres.chunk_len(k);
        }
    }
}
