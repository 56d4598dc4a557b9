//! The border exchange's GPU side for the ranks of a decomposed simulation (src/cluster; Werner 2015's
//! slabs, docs/background.md section 6), beside shaders/sim/border.wgsl. After a step,
//! [`Simulation::select_border_blocking`] drops the ghosts on the GPU, compacts the particles the rank
//! keeps into slots `0 .. kept` and appends the migrants (owned particles that left the slab) and the halo
//! copies (kept particles within the halo of a border, with their new slot) to four small lists; only a
//! 64-byte header of counts and those lists are read back, never the rank's whole state. One round trip
//! brings the header and the lists up to a guess (the last selection's counts and a margin); a list past
//! its guess is copied in a second. The lists have a bounded capacity: a list that overflowed it grows to
//! fit and the (side-effect free) selection runs again, so nothing is ever lost. The settle pass that
//! moves the kept particles home and parks the rest is submitted only then, and not waited for: it runs
//! while the host exchanges the lists. [`Simulation::append_rank_particles`] writes what the neighbours
//! sent (their migrants and ghosts) after the kept particles with `queue.write_buffer`, which the queue
//! orders after the settle pass.
mod readback;

use super::stage::StageLayouts;
use super::*;
use readback::{decode_lists, map_blocking, map_two_blocking, max_list_capacity, Lists};

/// Header entries: kept, the four lists' counts, max speed, broken, pad, bounds min (4), bounds max (4).
const HEADER_WORDS: usize = 16;
const HEADER_BYTES: u64 = HEADER_WORDS as u64 * 4;
const KEPT: usize = 0;
const LISTS: usize = 1;
const MAX_SPEED: usize = 5;
const BROKEN: usize = 6;
const BOUNDS_MIN: usize = 8;
const BOUNDS_MAX: usize = 12;
/// Bytes per list entry read back: position, velocity (`[f32; 4]` each) and id (a halo copy's kept
/// slot adds 4).
pub const ENTRY_BYTES: u64 = 36;

/// The selection's uniform. WGSL twin: Border in shaders/sim/border.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BorderUniform {
    /// Decomposition axis (0 = x, 1 = y, 2 = z).
    pub axis: u32,
    /// Slots holding the rank's particles (owned and ghosts) before the selection.
    pub live: u32,
    /// Index in the ids buffer where the ids of `pos` start (the sorted half after a step).
    pub ids_from: u32,
    /// Entries of each list.
    pub list_capacity: u32,
    /// The slab `lo <= c < hi` along the axis, m (infinite at the outer ends).
    pub lo: f32,
    pub hi: f32,
    /// `lo + halo` and `hi - halo`, m: a kept particle below the first (at or above the second) is a halo
    /// copy for the left (right) neighbour.
    pub halo_lo: f32,
    pub halo_hi: f32,
    /// A parked slot's position (w < 0).
    pub park: [f32; 4],
}

/// A rank's slab and halo, as the selection classifies against them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BorderRange {
    /// 0 = x, 1 = y, 2 = z.
    pub axis: usize,
    /// The slab `lo <= c < hi`, m along the axis (infinite at the outer ends).
    pub lo: f32,
    pub hi: f32,
    /// Depth of the halo, m.
    pub halo: f32,
}

/// What [`Simulation::select_border_blocking`] read back.
#[derive(Clone, Debug, Default)]
pub struct BorderSelection {
    /// Particles kept, now in slots `0 .. kept` (their ids in the first half of the ids, unsorted).
    pub kept: u32,
    /// Owned particles that left the slab, to the (left, right) neighbour, with all their state and ids.
    pub migrants: [RankParticles; 2],
    /// Kept particles within the halo of the (left, right) border (both for a slab thinner than two
    /// halos), in the order of `halo_slots`.
    pub halo: [RankParticles; 2],
    /// The slot (0 .. kept) of each halo particle.
    pub halo_slots: [Vec<u32>; 2],
    /// Largest speed of the kept particles, m/s.
    pub max_speed: f32,
    /// A kept particle has a non-finite position or velocity.
    pub broken: bool,
    /// Bounds (min, max) of the kept particles' positions, m ((+inf, -inf) when none was kept).
    pub bounds: ([f32; 3], [f32; 3]),
    /// Bytes read back from the device (the header every try, the lists, the halo copies' slots).
    pub bytes_read: u64,
    /// Selections run again because a list overflowed its capacity.
    pub retries: u32,
    /// Blocking read-backs it took (one a try, one more when the lists outgrew their guessed size).
    pub read_backs: u32,
}

/// The inverse of the shader's `ordered_bits` (an order-preserving map of f32 bits onto u32).
fn from_ordered_bits(u: u32) -> f32 {
    f32::from_bits(if u & 0x8000_0000 != 0 { u ^ 0x8000_0000 } else { !u })
}

/// Pipelines and buffers of the border selection (only the ranks' simulations build it).
pub(super) struct BorderStage {
    select: wgpu::ComputePipeline,
    settle: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    counts: wgpu::Buffer,
    counts_staging: wgpu::Buffer,
    lists: Lists,
    /// The list counts of the last selection (the next one's guess of what to read back at once).
    last: [u32; 4],
}

impl BorderStage {
    /// The stage with lists of `first_guess` entries each (at least 1; they grow when a selection
    /// overflows them).
    pub fn new(layouts: &StageLayouts, first_guess: u32) -> Self {
        let device = layouts.device;
        let vis = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("border layout"),
            entries: &[
                gpu::uniform_entry::<BorderUniform>(0, vis),
                gpu::storage_entry::<u32>(1, false, vis),
                gpu::storage_entry::<[f32; 4]>(2, false, vis),
                gpu::storage_entry::<u32>(3, false, vis),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("border pipeline layout"),
            bind_group_layouts: &[Some(layouts.grid_bind_group_layout), Some(&layout)],
            immediate_size: 0,
        });
        let module = layouts.module("sim/border.wgsl", &[]);
        let constants = layouts.per_particle_constants();
        let pipeline = |entry| gpu::compute_pipeline_with(device, &module, &pipeline_layout, entry, &constants);
        let uniform = gpu::uniform_buffer_init(
            device,
            "border uniform",
            bytemuck::bytes_of(&<BorderUniform as bytemuck::Zeroable>::zeroed()),
        );
        let counts = gpu::storage_buffer(device, "border counts", HEADER_BYTES);
        let counts_staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("border counts read-back"),
            size: HEADER_BYTES,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let first = first_guess.clamp(1, max_list_capacity(device).max(1));
        let lists = Lists::new(device, &layout, &uniform, &counts, first);
        Self {
            select: pipeline("select_border"),
            settle: pipeline("settle"),
            layout,
            uniform,
            counts,
            counts_staging,
            lists,
            last: [0; 4],
        }
    }
}

impl Simulation {
    /// Grows the border lists to `entries` per list (never shrinks them; the first guess is a sixteenth of
    /// the capacity, at least 64). Does nothing without ids tracked.
    pub(super) fn reserve_border(&mut self, ctx: &GpuContext, entries: u32) {
        if let Some(b) = &mut self.stages.border {
            let entries = entries.min(max_list_capacity(&ctx.device));
            if entries > b.lists.capacity {
                b.lists = Lists::new(&ctx.device, &b.layout, &b.uniform, &b.counts, entries);
            }
        }
    }

    /// Sets the border lists' capacity to `entries` per list (at least 1, at most what the device's
    /// largest storage binding holds); for tests of the overflow retry. Does nothing without ids tracked.
    pub fn set_border_capacity(&mut self, ctx: &GpuContext, entries: u32) {
        if let Some(b) = &mut self.stages.border {
            let entries = entries.clamp(1, max_list_capacity(&ctx.device).max(1));
            b.lists = Lists::new(&ctx.device, &b.layout, &b.uniform, &b.counts, entries);
        }
    }

    /// Entries per border list now.
    pub fn border_capacity(&self) -> u32 {
        self.stages.border.as_ref().map_or(0, |b| b.lists.capacity)
    }

    /// After a step: the border selection (see the module docs) against `range`, read back. The rank's
    /// arrays then hold the kept particles in slots `0 .. kept` and parked slots after them, until
    /// [`Simulation::append_rank_particles`]. Blocks on the GPU once (the counts and the lists up to a
    /// guess from the last selection's counts), twice when a list outgrew that guess, more after an
    /// overflow of a list's capacity.
    /// Errors: [`SimError::State`] without ids tracked, before any step since the last write (the ids of
    /// `pos` are not the sorted ones), or when a read-back fails (device lost).
    pub fn select_border_blocking(
        &mut self,
        ctx: &GpuContext,
        profiler: &Profiler,
        range: &BorderRange,
    ) -> Result<BorderSelection, SimError> {
        let live = match &self.ids {
            Some(t) if t.stepped => t.live,
            Some(_) => return Err(SimError::State("a border selection needs a step since the particles were written")),
            None => return Err(SimError::State("a border selection needs a simulation built for a rank")),
        };
        let d = &self.domain;
        let park = [0.5 * (d.min[0] + d.max[0]), 0.5 * (d.min[1] + d.max[1]), 0.5 * (d.min[2] + d.max[2]), -1.0];
        let mut out = BorderSelection::default();
        let (header, lists, halo_slots) = loop {
            let Some(b) = &self.stages.border else {
                return Err(SimError::State("a border selection needs a simulation built for a rank"));
            };
            // Emission places particles after the rank's own slots: with emitters every slot is looked at
            // (parked ones are dropped).
            let live = if self.sources.num_emitters > 0 { self.capacity } else { live };
            let u = BorderUniform {
                axis: range.axis as u32,
                live,
                ids_from: self.capacity,
                list_capacity: b.lists.capacity,
                lo: range.lo,
                hi: range.hi,
                halo_lo: range.lo + range.halo,
                halo_hi: range.hi - range.halo,
                park,
            };
            ctx.queue.write_buffer(&b.uniform, 0, bytemuck::bytes_of(&u));
            let mut init = [0u32; HEADER_WORDS];
            init[BOUNDS_MIN..BOUNDS_MIN + 4].fill(u32::MAX);
            ctx.queue.write_buffer(&b.counts, 0, bytemuck::cast_slice(&init));
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("border select") });
            {
                let step = self.step_context(&mut encoder, profiler);
                let mut pass = step.profiler.compute_pass(step.encoder, "border");
                pass.set_bind_group(0, step.grid_bind, &[]);
                pass.set_bind_group(1, &b.lists.bind, &[]);
                pass.set_pipeline(&b.select);
                gpu::dispatch(&mut pass, step.dispatch.particles);
            }
            // The counts, and speculatively the lists up to a little more than the last selection's
            // counts, in one round trip; what did not fit that guess is copied in a second.
            encoder.copy_buffer_to_buffer(&b.counts, 0, &b.counts_staging, 0, HEADER_BYTES);
            let guess: [u32; 4] = std::array::from_fn(|l| {
                let last = b.last[l];
                last.saturating_add(last / 16).saturating_add(32).min(b.lists.capacity)
            });
            let guessed = b.lists.encode_copies(&mut encoder, guess);
            ctx.queue.submit([encoder.finish()]);
            let (bytes, listed) = map_two_blocking(ctx, (&b.counts_staging, HEADER_BYTES), (&b.lists.staging, guessed));
            out.bytes_read += HEADER_BYTES + guessed;
            out.read_backs += 1;
            let header: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
            if header.len() != HEADER_WORDS || listed.len() as u64 != guessed {
                return Err(SimError::State("the border counts could not be read back"));
            }
            let counts: [u32; 4] = std::array::from_fn(|l| header[LISTS + l]);
            let most = counts.iter().copied().max().unwrap_or(0);
            if most <= b.lists.capacity {
                if (0..4).all(|l| counts[l] <= guess[l]) {
                    let (lists, slots) = decode_lists(&listed, guess, counts);
                    break (header, lists, slots);
                }
                let mut encoder =
                    ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("border lists") });
                let size = b.lists.encode_copies(&mut encoder, counts);
                ctx.queue.submit([encoder.finish()]);
                let listed = map_blocking(ctx, &b.lists.staging, size);
                out.bytes_read += size;
                out.read_backs += 1;
                if listed.len() as u64 != size {
                    return Err(SimError::State("the border lists could not be read back"));
                }
                let (lists, slots) = decode_lists(&listed, counts, counts);
                break (header, lists, slots);
            }
            // Overflow: grow to fit (with room to spare) and select again; nothing was moved yet. The counts
            // are the same the second time, so one retry fits (more would be a bug, not a loop).
            if out.retries > 0 {
                return Err(SimError::State("the border lists overflowed after growing to fit"));
            }
            if most > max_list_capacity(&ctx.device) {
                return Err(SimError::State(
                    "more particles cross a slab border or lie in its halo than the device's largest storage \
                     binding holds; use more GPUs or a larger dx",
                ));
            }
            out.retries += 1;
            let grown = most.saturating_add(most / 4).min(self.capacity.max(1));
            self.reserve_border(ctx, grown);
        };
        let Some(b) = &mut self.stages.border else {
            return Err(SimError::State("a border selection needs a simulation built for a rank"));
        };
        b.last = std::array::from_fn(|l| header[LISTS + l]);
        // Settle: submitted, not waited for (the appended particles' writes and the step come after it on
        // the queue), so it runs while the host exchanges the lists.
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("border settle") });
        {
            let step = self.step_context(&mut encoder, profiler);
            let mut pass = step.profiler.compute_pass(step.encoder, "border");
            pass.set_bind_group(0, step.grid_bind, &[]);
            let Some(b) = &self.stages.border else {
                return Err(SimError::State("a border selection needs a simulation built for a rank"));
            };
            pass.set_bind_group(1, &b.lists.bind, &[]);
            pass.set_pipeline(&b.settle);
            gpu::dispatch(&mut pass, step.dispatch.particles);
        }
        ctx.queue.submit([encoder.finish()]);
        out.halo_slots = halo_slots;
        let [ml, mr, hl, hr] = lists;
        out.kept = header[KEPT];
        out.migrants = [ml, mr];
        out.halo = [hl, hr];
        out.max_speed = f32::from_bits(header[MAX_SPEED]);
        out.broken = header[BROKEN] != 0;
        out.bounds = (
            std::array::from_fn(
                |a| if out.kept == 0 { f32::INFINITY } else { from_ordered_bits(header[BOUNDS_MIN + a]) },
            ),
            std::array::from_fn(|a| {
                if out.kept == 0 {
                    f32::NEG_INFINITY
                } else {
                    from_ordered_bits(header[BOUNDS_MAX + a])
                }
            }),
        );
        if let Some(t) = &mut self.ids {
            t.stepped = false;
        }
        self.set_live(out.kept);
        self.particles_version += 1;
        Ok(out)
    }

    /// Writes `particles` into the slots after the first `first` (the kept ones of the last
    /// [`Simulation::select_border_blocking`]); the rank's particles are then the first `first + len`
    /// slots. Writes only those slots: `queue.write_buffer` of their positions, velocities and ids.
    /// Returns the bytes written.
    /// Errors: [`SimError::State`] without ids tracked, when the arrays differ in length or the slots
    /// exceed the capacity.
    pub fn append_rank_particles(
        &mut self,
        ctx: &GpuContext,
        first: u32,
        particles: &RankParticles,
    ) -> Result<u64, SimError> {
        let n = particles.len();
        if particles.vel.len() != n || particles.ids.len() != n {
            return Err(SimError::State("positions, velocities and ids differ in length"));
        }
        if first as u64 + n as u64 > self.capacity as u64 {
            return Err(SimError::State("more particles than the simulation's capacity"));
        }
        let Some(t) = &mut self.ids else {
            return Err(SimError::State("appending particles needs a simulation built for a rank"));
        };
        if n > 0 {
            let q = &ctx.queue;
            self.buffers.pos.write(q, first as u64, bytemuck::cast_slice(&particles.pos));
            self.buffers.vel.write(q, first as u64, bytemuck::cast_slice(&particles.vel));
            q.write_buffer(&self.buffers.ids, first as u64 * 4, bytemuck::cast_slice(&particles.ids));
        }
        t.stepped = false;
        self.set_live(first + n as u32);
        self.particles_version += 1;
        Ok(n as u64 * ENTRY_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_bits_round_trip_in_order() {
        // The shader's map, mirrored: negative floats flip all bits, the others the sign bit.
        let ordered = |x: f32| {
            let b = x.to_bits();
            if b & 0x8000_0000 != 0 {
                !b
            } else {
                b ^ 0x8000_0000
            }
        };
        let xs = [f32::NEG_INFINITY, -3.5, -1e-30, -0.0, 0.0, 1e-30, 2.0, 7.25e10, f32::INFINITY];
        for w in xs.windows(2) {
            assert!(ordered(w[0]) <= ordered(w[1]), "{} {}", w[0], w[1]);
        }
        for x in xs {
            assert_eq!(from_ordered_bits(ordered(x)).to_bits(), x.to_bits());
        }
    }
}
