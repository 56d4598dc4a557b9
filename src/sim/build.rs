//! Building a [`Simulation`]: the particles it starts from (the scene's and the parked pool), the checks
//! against the GPU's limits and the caller's [`ParticleLimit`], the neighbour grid's table, the buffers,
//! their bind groups and every stage.

use super::*;

/// What bounds [`Simulation::particle_limit`], for its error message.
const SPLIT_WHY: &str = "its per-particle arrays hold 16 bytes per particle in the storage bindings a kernel has";

/// Split per-particle arrays bound by the simulation's kernels (pos, vel, spos, svel, vstar, rho_p).
const SPLIT_ARRAYS: u32 = 6;

/// Other storage buffers a simulation kernel binds at most: 11 of bind group 0 (params, step, cell_start,
/// ids, neighbour lists, heights, boundary table, partials, stats, sources, obstacles) and 3 of a stage's
/// group 1 (DFSPH, diffuse). The parameters are a storage buffer for lavapipe's sake
/// (shaders/sim/common.wgsl).
const OTHER_STORAGE: u32 = 14;

/// The particles a simulation starts from (and a reset returns to), kept on the GPU: the scene's, then
/// the parked pool, as the simulation's own buffers hold them (positions with density in w, velocities
/// with pressure in w), 32 bytes per particle, chunked like the live arrays. `reset` and `with_pool`
/// copy from them; the CPU keeps no particle.
pub(super) struct Initial {
    pub(super) pos: SplitBuffer,
    pub(super) vel: SplitBuffer,
    /// Leading entries that are the scene's particles (the rest is the pool).
    pub(super) scene: usize,
    /// Bounds (min, max) of the scene's particles, metres (the neighbour grid's first box).
    pub(super) bounds: ([f32; 3], [f32; 3]),
    /// The fastest of the scene's particles at the start, m/s (a blow-up's speed bound, [`BlowUp`]).
    pub(super) speed: f32,
}

/// Where a new simulation's initial particles come from.
pub(super) enum Source<'a> {
    /// A scene's particles, handed out in chunks ([`SceneSetup::for_each_chunk`]).
    Setup(&'a SceneSetup),
    /// The scene part of another simulation's initial buffers (a larger pool).
    Gpu(&'a Initial),
    /// Given particles as the GPU holds them (a rank of src/cluster, [`Simulation::for_rank`]).
    Particles(&'a super::ids::RankParticles),
}

/// Bytes of GPU memory the simulation allocates per particle of capacity (the parked pool included)
/// with `options`: the state, sorted state and v* (5 x 16), density and pressure (8), the initial state
/// kept for resets (32), the neighbour grid's table (`cells_per_particle` x 4) and the diffuse pool (two
/// buffers of 32-byte particles, `diffuse_pool` per particle); the statistics' partials add 80 bytes
/// per 128 particles. 144.5 bytes with the default options. DFSPH's neighbour lists
/// ([`super::neighbours`], 160 bytes) come on top where they fit one storage binding and the memory left;
/// they are left out, not refused, where they do not, so this is what a simulation needs at least.
pub fn bytes_per_particle(options: &SimOptions) -> f64 {
    let diffuse = 2.0 * options.diffuse_pool * size_of::<diffuse::DiffuseParticle>() as f64;
    5.0 * 16.0 + 8.0 + 32.0 + 4.0 * options.cells_per_particle + diffuse + stats::RECORD_BYTES as f64 / STATS_WG as f64
}

/// Particles written to the initial buffers between two submissions while a simulation is built (so
/// the queue's staging memory stays near 32 bytes times this many).
const UPLOAD_BATCH: u64 = 8 * crate::scene::lattice::CHUNK_POINTS;

impl Simulation {
    /// A simulation of the particles `start` (at least one) with room for `capacity` in all (the rest
    /// parked), ids tracked ([`SimOptions::track_ids`]); no pool for emitters beyond that room, no
    /// sources. `params.dx` must be the spacing the particles were built with; `boundary` is the terrain
    /// and the static obstacles (every rank holds them all).
    /// `options.track_ids` is set here.
    /// Errors: as [`Simulation::new_with`]; [`SimError::NoParticles`] when `start` is empty,
    /// [`SimError::TooManyParticles`] when `capacity` is less than `start` holds.
    pub fn for_rank(
        ctx: &GpuContext,
        domain: &Aabb,
        boundary: (&Heightfield, &[super::obstacles::Obstacle]),
        params: &SimParams,
        options: SimOptions,
        capacity: u32,
        start: &RankParticles,
    ) -> Result<Self, SimError> {
        if start.is_empty() {
            return Err(SimError::NoParticles);
        }
        let n = start.len() as u64;
        if n > capacity as u64 {
            let why = "the rank's capacity";
            return Err(SimError::TooManyParticles { count: n, max: capacity as u64, why });
        }
        let options = SimOptions { pool: capacity - n as u32, diffuse_pool: 0.0, track_ids: true, ..options };
        let mut sim =
            Self::from_initial(ctx, domain, (boundary.0, boundary.1, &[]), params, options, Source::Particles(start))?;
        sim.write_rank_particles(ctx, start)?;
        Ok(sim)
    }

    /// The most particles (the pool included) a simulation holds on `ctx`: its per-particle arrays,
    /// one `vec4<f32>` each at most, are split over up to [`gpu::split::MAX_CHUNKS`] storage bindings of
    /// [`gpu::split::per_binding`] particles each (4 x 134 M = 536 M on NVIDIA's Vulkan), as many as the
    /// device's storage buffers per shader stage allow for 6 arrays besides the other buffers (3 on
    /// lavapipe's 32), and the count is a `u32`.
    pub fn particle_limit(ctx: &GpuContext) -> ParticleLimit {
        Self::split_limit(&ctx.device.limits())
    }

    /// [`Simulation::particle_limit`] on a device with `limits`.
    fn split_limit(limits: &wgpu::Limits) -> ParticleLimit {
        let chunks = gpu::split::chunks_fitting(limits, SPLIT_ARRAYS, OTHER_STORAGE);
        ParticleLimit { max: gpu::split::max_elements(limits, chunks), why: SPLIT_WHY }
    }

    /// The most particles (the pool included) a simulation built with `options` holds on `ctx`: the
    /// smallest of [`Simulation::particle_limit`] (its split arrays) and the two buffers that stay in one
    /// storage binding: the diffuse pool (`options.diffuse_pool` slots of 32 bytes per particle) and the
    /// neighbour grid's table (`options.cells_per_particle` cells of 4 bytes per particle, two more; the
    /// table is rounded up to whole rows of the domain's cells, which the build checks exactly). With the
    /// default options 268 435 452 on wgpu's Vulkan (a binding of 2^31 - 1 bytes: the diffuse pool),
    /// 16 777 215 on lavapipe (128 MiB: the grid's table). Options out of range are left to the build's
    /// own error.
    pub fn particle_limit_with(ctx: &GpuContext, options: &SimOptions) -> ParticleLimit {
        Self::particle_limit_for(&ctx.device.limits(), options)
    }

    /// [`Simulation::particle_limit_with`] on a device with `limits`.
    pub fn particle_limit_for(limits: &wgpu::Limits, options: &SimOptions) -> ParticleLimit {
        let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let mut limit = Self::split_limit(limits);
        if options.diffuse_pool > 0.0 {
            let slots = binding / size_of::<diffuse::DiffuseParticle>() as u64;
            let max = (slots as f64 / options.diffuse_pool).floor() as u64;
            if max < limit.max {
                let why = "the diffuse particles' pool keeps 32 bytes per slot in one storage buffer";
                limit = ParticleLimit { max, why };
            }
        }
        if options.cells_per_particle > 0.0 {
            let cells = (binding / 4).saturating_sub(2).min(MAX_CELLS);
            let max = (cells as f64 / options.cells_per_particle).floor() as u64;
            if max < limit.max {
                let why = "the neighbour grid's table keeps 4 bytes per cell in one storage buffer";
                limit = ParticleLimit { max, why };
            }
        }
        limit
    }

    /// Uploads the scene's particles and terrain and builds all stages. The terrain is clamped into the
    /// domain's height range (the terrain is the floor). `params.dx` must be the spacing the particles
    /// were built with.
    /// Errors: parameters out of range, no particles, too many particles or grid cells for this GPU.
    pub fn new(ctx: &GpuContext, domain: &Aabb, setup: &SceneSetup, params: &SimParams) -> Result<Self, SimError> {
        Self::new_with(ctx, domain, setup, params, SimOptions::default())
    }

    /// [`Simulation::new`] with build options (the inflow pool, dispatch sizes, an outside limit).
    pub fn new_with(
        ctx: &GpuContext,
        domain: &Aabb,
        setup: &SceneSetup,
        params: &SimParams,
        options: SimOptions,
    ) -> Result<Self, SimError> {
        if setup.is_empty() {
            return Err(SimError::NoParticles);
        }
        let boundary = (&setup.terrain, &setup.obstacles[..], &setup.bodies[..]);
        Self::from_initial(ctx, domain, boundary, params, options, Source::Setup(setup))
    }

    /// Builds a simulation from the scene's initial particles (`source`), followed by the pool of
    /// `options.pool` parked particles, against `boundary`: the terrain, the static obstacles and the
    /// bodies (a rapier world of their own, [`bodies::Bodies`], only when there are some). Every buffer is created inside an out-of-memory error scope: a
    /// GPU that cannot hold them gives [`SimError::OutOfMemory`], never a panic.
    pub(super) fn from_initial(
        ctx: &GpuContext,
        domain: &Aabb,
        boundary: (&Heightfield, &[obstacles::Obstacle], &[bodies::Body]),
        params: &SimParams,
        options: SimOptions,
        source: Source<'_>,
    ) -> Result<Self, SimError> {
        let (terrain, obstacle_list, body_list) = boundary;
        params.validate()?;
        if let Some(w) = &params.wave_maker {
            w.validate_in(domain.min, domain.max)?;
        }
        let wg = options.workgroup_size;
        if !wg.is_power_of_two() || wg < 32 || wg > ctx.device.limits().max_compute_invocations_per_workgroup {
            return Err(SimError::WorkgroupSize(wg));
        }
        let scene = match source {
            Source::Setup(setup) => setup.len(),
            Source::Gpu(initial) => initial.scene as u64,
            Source::Particles(p) => p.len() as u64,
        };
        let n = scene + options.pool as u64;
        let limit = ctx.max_storage_binding();
        for l in std::iter::once(Self::particle_limit(ctx)).chain(options.limit) {
            if n > l.max {
                return Err(SimError::TooManyParticles { count: n, max: l.max, why: l.why });
            }
        }
        if !(0.0..=4.0).contains(&options.diffuse_pool) {
            return Err(SimError::DiffusePool(options.diffuse_pool));
        }
        let diffuse_pool = (options.diffuse_pool * n as f64).round() as u64;
        let diffuse_max = limit / size_of::<diffuse::DiffuseParticle>() as u64;
        if diffuse_pool > diffuse_max {
            let why = "the diffuse particles' pool keeps 32 bytes per particle in one storage buffer";
            return Err(SimError::TooManyParticles { count: diffuse_pool, max: diffuse_max, why });
        }
        let positive = options.cells_per_particle.partial_cmp(&0.0) == Some(std::cmp::Ordering::Greater);
        if !(1..=3).contains(&options.cell_split) || !positive {
            return Err(SimError::GridOptions {
                cell_split: options.cell_split,
                cells_per_particle: options.cells_per_particle,
            });
        }
        let cell_size = params.support() / options.cell_split as f32;
        let table = GridShape::folded(domain, cell_size, options.cell_split, n, options.cells_per_particle);
        let cells = table.num_cells();
        let scene_bounds = match source {
            Source::Setup(setup) => setup.bounds().map_or(bounds([]), |(lo, hi)| (lo.to_array(), hi.to_array())),
            Source::Gpu(initial) => initial.bounds,
            Source::Particles(p) => bounds(p.pos.iter().map(|q| [q[0], q[1], q[2]])),
        };
        let speed = match source {
            Source::Setup(setup) => setup.max_speed(),
            Source::Gpu(initial) => initial.speed,
            Source::Particles(p) => {
                p.vel.iter().map(|v| glam::Vec3::new(v[0], v[1], v[2]).length()).fold(0.0, f32::max)
            }
        };
        let (lo, hi) = scene_bounds;
        let grid_shape = table.boxed(domain, lo, hi, GRID_BOX_PAD);
        if cells > MAX_CELLS || (cells + 2) * 4 > limit {
            return Err(SimError::TooManyCells { cells, limit: MAX_CELLS.min(limit / 4 - 1) });
        }
        let mut terrain = terrain.clone();
        for hgt in &mut terrain.heights {
            *hgt = hgt.clamp(domain.min[1], domain.max[1]);
        }
        let park = [
            0.5 * (domain.min[0] + domain.max[0]),
            0.5 * (domain.min[1] + domain.max[1]),
            0.5 * (domain.min[2] + domain.max[2]),
            -1.0,
        ];
        let bytes = (bytes_per_particle(&options) * n as f64) as u64;
        if let Some(memory) = options.memory.filter(|&m| bytes > m) {
            return Err(SimError::OutOfMemory { count: n, bytes, memory: Some(memory) });
        }
        // The neighbour lists only where they fit what is left: without them the loops walk the grid.
        let list_bytes = options
            .neighbour_list
            .then(|| neighbours::list_bytes(n, &ctx.device.limits(), options.memory.map(|m| m - bytes)))
            .flatten()
            .unwrap_or(neighbours::STAND_IN_BYTES);
        // Everything below runs inside two error scopes: an allocation the GPU refuses is an error here,
        // and so is what follows from it (a bind group over a buffer that could not be made fails
        // validation), never the uncaptured-error panic.
        let validation = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = ctx.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let derived = Derived::new(params);
        let device = &ctx.device;
        let n32 = n as u32;
        let dispatch = Dispatches::new(n32, wg, &device.limits())?;
        let uniforms = SimUniforms::new(params, &derived, domain, &grid_shape, &terrain, n32);
        let table = kernel::boundary_table_for_lattice(params.dx as f64, params.h() as f64, BOUNDARY_TABLE_N as usize);
        // The limits were checked above (`particle_limit`): a refusal here is the same error.
        let split = |r: Result<SplitBuffer, gpu::split::SplitError>| {
            r.map_err(|e| SimError::TooManyParticles {
                count: e.len,
                max: Self::particle_limit(ctx).max,
                why: SPLIT_WHY,
            })
        };
        // Static obstacles first, then the bodies, whose entries carry their motion.
        let all_obstacles: Vec<&obstacles::Obstacle> =
            obstacle_list.iter().chain(body_list.iter().map(|b| &b.obstacle)).collect();
        let first_body = obstacle_list.len();
        let mut obstacle_bytes = obstacles::to_gpu(&all_obstacles, first_body);
        let bodies = if body_list.is_empty() {
            None
        } else {
            let head: obstacles::ObstacleList =
                bytemuck::pod_read_unaligned(&obstacle_bytes[..std::mem::size_of::<obstacles::ObstacleList>()]);
            let entries = &head.list[first_body..(first_body + body_list.len()).min(obstacles::MAX_OBSTACLES)];
            let b = bodies::Bodies::new(
                (domain.min.into(), domain.max.into()),
                &terrain,
                obstacle_list,
                body_list,
                params,
                entries,
            )?;
            b.write_into(&mut obstacle_bytes);
            Some(b)
        };
        let stats_bytes = STATS_BYTES + if bodies.is_some() { bodies::BODY_SUMS_BYTES } else { 0 };
        let buffers = Buffers {
            uniforms: gpu::storage_buffer_init(device, "sim params", bytemuck::bytes_of(&uniforms)),
            step: gpu::storage_buffer_init(device, "sim step state", bytemuck::bytes_of(&StepState::default())),
            pos: split(SplitBuffer::new(device, "sim pos", n, 16))?,
            vel: split(SplitBuffer::new(device, "sim vel", n, 16))?,
            spos: split(SplitBuffer::new(device, "sim sorted pos", n, 16))?,
            svel: split(SplitBuffer::new(device, "sim sorted vel", n, 16))?,
            cell_start: gpu::storage_buffer(device, "sim cell_start", (cells + 2) * 4),
            vstar: split(SplitBuffer::new(device, "sim v*", n, 16))?,
            rho_p: split(SplitBuffer::new(device, "sim density+pressure", n, 8))?,
            heights: gpu::storage_buffer_init(device, "sim terrain heights", bytemuck::cast_slice(&terrain.heights)),
            boundary_table: gpu::storage_buffer_init(device, "sim boundary table", bytemuck::cast_slice(&table)),
            partials: gpu::storage_buffer(device, "sim stats partials", StatsStage::partials_bytes(n)),
            // The statistics record, then the bodies' impulse sums (zero when there are none).
            stats_out: gpu::storage_buffer(device, "sim stats", STATS_BYTES + bodies::BODY_SUMS_BYTES),
            sources: gpu::storage_buffer_init(
                device,
                "sim sources",
                bytemuck::bytes_of(&sources::to_gpu(&[], &[], params.dx)?),
            ),
            ids: gpu::storage_buffer(device, "sim ids", if options.track_ids { n * 12 } else { 8 }),
            obstacles: gpu::storage_buffer_init(device, "sim obstacles", &obstacle_bytes),
            neighbours: gpu::storage_buffer(device, "sim neighbour lists", list_bytes),
        };
        // Two layouts over the same buffers: the grid build writes the sorted positions (4) and the cell
        // table (6); every later kernel only reads them, and declaring them read-only there lets the
        // driver use its read-only cache path. The terrain (12) and boundary table (13) are read-only.
        let layout = buffers.layout(device, "sim layout", &[4, 6, 7, 12, 13, 17]);
        let grid_layout = buffers.layout(device, "sim grid layout", &[12, 13, 17]);
        let bind = buffers.bind_group(device, &layout);
        let grid_bind = buffers.bind_group(device, &grid_layout);
        let pipeline_layout = |label: &str, layout: &wgpu::BindGroupLayout| {
            let desc = wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(layout)],
                immediate_size: 0,
            };
            device.create_pipeline_layout(&desc)
        };
        let layouts = StageLayouts {
            device,
            bind_group_layout: &layout,
            grid_bind_group_layout: &grid_layout,
            sim: pipeline_layout("sim pipeline layout", &layout),
            grid: pipeline_layout("sim grid pipeline layout", &grid_layout),
            workgroup_size: wg,
            subgroups: options.subgroups && ctx.has_subgroups(),
            split: (gpu::split::CONSTANT, buffers.pos.per_binding() as f64),
            chunks: buffers.chunks(),
            ghosts: options.track_ids,
        };
        let stages = Stages {
            grid: grid::GridStage::new(&layouts, &buffers.cell_start, cells as u32)?,
            time_step: time_step::TimeStepStage::new(&layouts),
            surface_tension: surface_tension::SurfaceTensionStage::new(&layouts),
            dfsph: dfsph::DfsphStage::new(&layouts),
            pcisph: pcisph::PcisphStage::new(&layouts),
            integrate: integrate::IntegrateStage::new(&layouts),
            emit: sources::EmitStage::new(&layouts),
            stats: StatsStage::new(&layouts),
            diffuse: match diffuse_pool as u32 {
                0 => None,
                pool => Some(diffuse::DiffuseStage::new(&layouts, pool, &params.diffuse, (params.dx, params.h()))?),
            },
            halo: match options.track_ids {
                true => Some(halo::HaloStage::new(&layouts, n32)?),
                false => None,
            },
            border: options.track_ids.then(|| border::BorderStage::new(&layouts, (n32 / 16).max(64))),
        };
        let initial = Initial {
            pos: split(SplitBuffer::new(device, "sim initial pos", n, 16))?,
            vel: split(SplitBuffer::new(device, "sim initial vel", n, 16))?,
            scene: scene as usize,
            bounds: scene_bounds,
            speed,
        };
        fill_initial(ctx, &initial, source, initial::Hydrostatic::new(params), park, n)?;
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sim start") });
        initial.pos.copy_to(&mut encoder, &buffers.pos, n);
        initial.vel.copy_to(&mut encoder, &buffers.vel, n);
        ctx.queue.submit([encoder.finish()]);
        let (oom, validation) = (pollster::block_on(oom.pop()), pollster::block_on(validation.pop()));
        if let Some(e) = oom {
            log::error!("building a simulation of {n} particles: {e}");
            return Err(SimError::OutOfMemory { count: n, bytes, memory: None });
        }
        if let Some(e) = validation {
            log::error!("building a simulation of {n} particles: {e}");
            return Err(SimError::State("the GPU refused the simulation's buffers (the log has its message)"));
        }
        Ok(Self {
            params: params.clone(),
            derived,
            domain: *domain,
            grid_shape,
            initial_grid: grid_shape,
            queue: ctx.queue.clone(),
            terrain,
            obstacles: obstacle_list.to_vec(),
            bodies,
            live: Default::default(),
            capacity: n32,
            buffers,
            bind,
            grid_bind,
            stages,
            initial,
            readback: ReadbackRing::new(device, "sim stats", stats_bytes, 4),
            frame: 0,
            particles_version: 0,
            latest: None,
            arrived: Vec::new(),
            blow_up: None,
            bounds: blow_up::Bounds::new(params, 0.0, 0.0, 0.0, derived.mass),
            fresh_after: 0,
            restored_iterations: None,
            options,
            sources: sources::to_gpu(&[], &[], params.dx)?,
            dispatch,
            ids: options.track_ids.then_some(ids::IdTrack { stepped: false, live: 0 }),
        }
        .with_bounds())
    }
}

/// Writes `initial`'s buffers for `capacity` particles: the scene's from `source` (chunk by chunk, with
/// their first density and pressure, [`initial::Hydrostatic`]; or copied from another simulation's), then the
/// pool, parked at `park` (w < 0) with zero velocity. The queue is submitted every [`UPLOAD_BATCH`]
/// particles so its staging memory stays bounded.
fn fill_initial(
    ctx: &GpuContext,
    initial: &Initial,
    source: Source<'_>,
    first: initial::Hydrostatic,
    park: [f32; 4],
    capacity: u64,
) -> Result<(), SimError> {
    let q = &ctx.queue;
    let mut pending = 0u64;
    let mut write = |offset: u64, pos: &[[f32; 4]], vel: &[[f32; 4]]| -> Result<(), SimError> {
        initial.pos.write(q, offset, bytemuck::cast_slice(pos));
        initial.vel.write(q, offset, bytemuck::cast_slice(vel));
        pending += pos.len() as u64;
        if pending >= UPLOAD_BATCH {
            q.submit([]);
            pending = 0;
        }
        Ok(())
    };
    let scene = initial.scene as u64;
    match source {
        Source::Setup(setup) => setup.for_each_chunk(&first, &mut write)?,
        Source::Particles(p) => write(0, &p.pos, &p.vel)?,
        Source::Gpu(from) => {
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sim initial copy") });
            from.pos.copy_to(&mut encoder, &initial.pos, scene);
            from.vel.copy_to(&mut encoder, &initial.vel, scene);
            q.submit([encoder.finish()]);
        }
    }
    let chunk = crate::scene::lattice::CHUNK_POINTS;
    let mut offset = scene;
    while offset < capacity {
        let k = (capacity - offset).min(chunk) as usize;
        write(offset, &vec![park; k], &vec![[0.0; 4]; k])?;
        offset += k as u64;
    }
    q.submit([]);
    Ok(())
}
