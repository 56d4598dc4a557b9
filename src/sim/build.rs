//! Building a [`Simulation`]: the particles it starts from (the scene's and the parked pool), the checks
//! against the GPU's limits and the caller's [`ParticleLimit`], the neighbour grid's table, the buffers,
//! their bind groups and every stage.

use super::*;

/// The particles a simulation starts from (and a reset returns to): the scene's, then the parked pool,
/// as the GPU holds them (positions with density in w, velocities with pressure in w).
#[derive(Clone)]
pub(super) struct Initial {
    pub(super) pos: Vec<[f32; 4]>,
    pub(super) vel: Vec<[f32; 4]>,
    /// Leading entries that are the scene's particles (the rest is the pool).
    pub(super) scene: usize,
}

impl Simulation {
    /// The most particles (the pool included) a simulation holds on `ctx`: its largest per-particle
    /// buffer, one `vec4<f32>` each, must fit one storage binding (and the count a `u32`).
    pub fn particle_limit(ctx: &GpuContext) -> ParticleLimit {
        ParticleLimit {
            max: (ctx.max_storage_binding() / BYTES_PER_PARTICLE_BUFFER).min(u32::MAX as u64),
            why: "its largest storage buffer holds that many 16-byte particles",
        }
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
        if setup.positions.is_empty() {
            return Err(SimError::NoParticles);
        }
        // Scene particles, then the parked pool (w < 0) at the domain's centre.
        let pressure = initial::hydrostatic_pressure(&setup.positions, params);
        let initial = Initial {
            pos: setup.positions.iter().map(|p| [p.x, p.y, p.z, params.rho0]).collect(),
            vel: setup.velocities.iter().zip(pressure).map(|(v, p)| [v.x, v.y, v.z, p]).collect(),
            scene: setup.positions.len(),
        };
        Self::from_initial(ctx, domain, &setup.terrain, params, options, initial)
    }

    /// Builds a simulation from the scene's initial particles (`initial.pos.len()` may exceed the scene
    /// part: those entries are replaced by the pool of `options.pool` parked particles).
    pub(super) fn from_initial(
        ctx: &GpuContext,
        domain: &Aabb,
        terrain: &Heightfield,
        params: &SimParams,
        options: SimOptions,
        mut initial: Initial,
    ) -> Result<Self, SimError> {
        params.validate()?;
        if let Some(w) = &params.wave_maker {
            w.validate_in(domain.min, domain.max)?;
        }
        let wg = options.workgroup_size;
        if !wg.is_power_of_two() || wg < 32 || wg > ctx.device.limits().max_compute_invocations_per_workgroup {
            return Err(SimError::WorkgroupSize(wg));
        }
        let n = initial.scene as u64 + options.pool as u64;
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
        let table = GridShape::folded(domain, cell_size, n, options.cells_per_particle);
        let cells = table.num_cells();
        let (lo, hi) = bounds(initial.pos[..initial.scene].iter().map(|p| [p[0], p[1], p[2]]));
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
        let pool = options.pool as usize;
        initial.pos.truncate(initial.scene);
        initial.vel.truncate(initial.scene);
        initial.pos.extend(std::iter::repeat_n(park, pool));
        initial.vel.extend(std::iter::repeat_n([0.0; 4], pool));
        let derived = Derived::new(params);
        let device = &ctx.device;
        let n32 = n as u32;
        let dispatch = Dispatches::new(n32, wg, &device.limits())?;
        let uniforms = SimUniforms::new(params, &derived, domain, &grid_shape, &terrain, n32);
        let table = kernel::boundary_table_for_lattice(params.dx as f64, params.h() as f64, BOUNDARY_TABLE_N as usize);
        let vec4s = n * 16;
        let buffers = Buffers {
            uniforms: gpu::uniform_buffer_init(device, "sim params", bytemuck::bytes_of(&uniforms)),
            step: gpu::storage_buffer_init(device, "sim step state", bytemuck::bytes_of(&StepState::default())),
            pos: gpu::storage_buffer_init(device, "sim pos", bytemuck::cast_slice(&initial.pos)),
            vel: gpu::storage_buffer_init(device, "sim vel", bytemuck::cast_slice(&initial.vel)),
            spos: gpu::storage_buffer(device, "sim sorted pos", vec4s),
            svel: gpu::storage_buffer(device, "sim sorted vel", vec4s),
            cell_start: gpu::storage_buffer(device, "sim cell_start", (cells + 2) * 4),
            vstar: gpu::storage_buffer(device, "sim v*", vec4s),
            rho_p: gpu::storage_buffer(device, "sim density+pressure", n * 8),
            heights: gpu::storage_buffer_init(device, "sim terrain heights", bytemuck::cast_slice(&terrain.heights)),
            boundary_table: gpu::storage_buffer_init(device, "sim boundary table", bytemuck::cast_slice(&table)),
            partials: gpu::storage_buffer(device, "sim stats partials", StatsStage::partials_bytes(n)),
            stats_out: gpu::storage_buffer(device, "sim stats", STATS_BYTES),
            sources: gpu::storage_buffer_init(
                device,
                "sim sources",
                bytemuck::bytes_of(&sources::to_gpu(&[], &[], params.dx)?),
            ),
            ids: gpu::storage_buffer(device, "sim ids", if options.track_ids { n * 8 } else { 8 }),
        };
        // Two layouts over the same buffers: the grid build writes the sorted positions (4) and the cell
        // table (6); every later kernel only reads them, and declaring them read-only there lets the
        // driver use its read-only cache path. The terrain (12) and boundary table (13) are read-only.
        let layout = buffers.layout(device, "sim layout", &[4, 6, 7, 12, 13]);
        let grid_layout = buffers.layout(device, "sim grid layout", &[12, 13]);
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
            sim: pipeline_layout("sim pipeline layout", &layout),
            grid: pipeline_layout("sim grid pipeline layout", &grid_layout),
            workgroup_size: wg,
            subgroups: options.subgroups && ctx.has_subgroups(),
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
        };
        Ok(Self {
            params: params.clone(),
            derived,
            domain: *domain,
            grid_shape,
            initial_grid: grid_shape,
            queue: ctx.queue.clone(),
            terrain,
            capacity: n32,
            buffers,
            bind,
            grid_bind,
            stages,
            initial,
            readback: ReadbackRing::new(device, "sim stats", STATS_BYTES, 4),
            frame: 0,
            particles_version: 0,
            latest: None,
            blow_up: None,
            fresh_after: 0,
            restored_iterations: None,
            options,
            sources: sources::to_gpu(&[], &[], params.dx)?,
            dispatch,
            ids: options.track_ids.then_some(ids::IdTrack { stepped: false, live: 0 }),
        })
    }
}
