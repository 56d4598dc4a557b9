//! Headless loops over an [`Engine`]'s simulation, for `run`, `validate`, `capture` and the tests: frames
//! with their statistics coming back through the asynchronous read-back ring exactly as in the window
//! ([`run_frames`]), one step with a blocking read of the particles (validation only, [`step_and_read`]),
//! and one image of the current state from the scene's camera ([`render_image`], [`render_image_hdr`]).

use super::Engine;
use crate::gpu::{GpuContext, Profiler};
use crate::render::{self, DepthFilter, FluidView, OrbitCamera, RenderSettings, Renderer};
use crate::sim::{SimStats, Simulation};
use std::sync::atomic::{AtomicBool, Ordering};

/// Runs frames until `frames` have been simulated (frames of `substeps` steps each; without `frames`, each
/// covers the scene's `frame_dt`: [`Simulation::frame_steps`]), the simulated time reaches `seconds` (exactly:
/// no step goes past it) or the
/// simulation blows up ([`Simulation::blow_up`]: the caller reports it), calling `on_stats` for each
/// statistics record as it arrives (in order, possibly a few frames late), and returns the last. At most a few frames are in flight: the CPU waits for frame k-3 before recording
/// frame k+1, which keeps memory bounded without stalling the GPU.
pub fn run_frames(
    ctx: &GpuContext,
    sim: &mut Simulation,
    profiler: &mut Profiler,
    frames: Option<u64>,
    seconds: Option<f32>,
    on_stats: impl FnMut(&SimStats),
) -> Option<SimStats> {
    run_frames_until(ctx, sim, profiler, frames, seconds, &AtomicBool::new(false), on_stats)
}

/// [`run_frames`] that also ends at the first frame after `stop` is set (e.g. by Ctrl-C), with the
/// statistics still in flight delivered as usual.
pub fn run_frames_until(
    ctx: &GpuContext,
    sim: &mut Simulation,
    profiler: &mut Profiler,
    frames: Option<u64>,
    seconds: Option<f32>,
    stop: &AtomicBool,
    mut on_stats: impl FnMut(&SimStats),
) -> Option<SimStats> {
    let mut last: Option<SimStats> = None;
    let mut submissions = std::collections::VecDeque::new();
    let mut frame = 0u64;
    if let Some(t) = seconds {
        // The time asked for is reached exactly: the step that gets there lands on it and the steps of the
        // frames still in flight when its statistics arrive are no-ops (time_step.wgsl's frame end).
        sim.set_frame_end(ctx, t);
    }
    let mut deliver = |sim: &mut Simulation, last: &mut Option<SimStats>| {
        let _ = sim.poll_stats();
        for s in sim.arrived_stats() {
            if seconds.is_some_and(|t| last.as_ref().is_some_and(|l| l.time >= t)) {
                // A frame past the time asked for: its steps were no-ops, its record repeats the last.
                break;
            }
            on_stats(s);
            *last = Some(s.clone());
        }
    };
    loop {
        let done_frames = frames.is_some_and(|f| frame >= f);
        let done_time = seconds.is_some_and(|t| last.as_ref().is_some_and(|s| s.time >= t));
        if done_frames || done_time || sim.blow_up().is_some() || stop.load(Ordering::Relaxed) {
            break;
        }
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("headless frame") });
        // A step count asked for runs whole frames of `substeps` steps; otherwise a frame covers its time.
        let steps = if frames.is_some() { sim.params().substeps } else { sim.frame_steps() };
        sim.encode_frame(&mut encoder, profiler, steps);
        sim.encode_stats(&mut encoder, profiler);
        profiler.resolve(&mut encoder);
        submissions.push_back(ctx.queue.submit([encoder.finish()]));
        sim.after_submit();
        profiler.end_frame(&ctx.queue);
        frame += 1;
        if submissions.len() > 3 {
            let idx = submissions.pop_front();
            let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: idx, timeout: None });
        } else {
            let _ = ctx.device.poll(wgpu::PollType::Poll);
        }
        deliver(sim, &mut last);
    }
    // Drain the statistics still in flight.
    while sim.stats_in_flight() {
        let _ = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
        deliver(sim, &mut last);
    }
    if seconds.is_some() {
        sim.set_frame_end(ctx, 0.0);
    }
    last
}

/// Records and submits one simulation step (with its statistics record), waits for it and reads the
/// particles back: (positions with density in w, velocities with pressure in w). For validation and tests
/// only, never the frame loop: it stalls on the GPU. A fit of a DFSPH step's pressure (the sum of its
/// solves' kappa rho) needs consecutive steps: in the coarse 20-layer test tank it alternates by about
/// ±20 % from one step to the next (0.82, 1.15, 1.03, 0.92, 1.12 x rho0 g depth) while its mean over the
/// steps holds to 1-2 %, and a read once per frame (every `substeps`-th step) samples one phase of it.
pub fn step_and_read(
    ctx: &GpuContext,
    sim: &mut Simulation,
    profiler: &mut Profiler,
) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
    let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("one step") });
    sim.encode_step(&mut encoder, profiler);
    sim.encode_stats(&mut encoder, profiler);
    profiler.resolve(&mut encoder);
    ctx.queue.submit([encoder.finish()]);
    sim.after_submit();
    profiler.end_frame(&ctx.queue);
    let particles = sim.read_particles_blocking(ctx);
    let _ = sim.poll_stats();
    particles
}

/// The scene's camera and the default render settings sized to the engine's particles.
pub fn scene_view(engine: &Engine) -> (OrbitCamera, RenderSettings) {
    let mut settings = RenderSettings::default();
    settings.particle.radius = engine.sim().particle_radius();
    (OrbitCamera::from_desc(&engine.scene().camera), settings)
}

/// What a headless image shows where it differs from the default render settings (`waterview run --view
/// --depth-filter --sun-elevation --no-water-shadow`, `capture`): the view (the final image or an
/// intermediate target), the depth filter, the sun's elevation and whether the water casts its shadow.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ImageOptions {
    /// What the image shows.
    pub view: FluidView,
    /// The depth filter (`None`: the default of `FluidSettings`).
    pub depth_filter: Option<DepthFilter>,
    /// The sun's height above the horizon, degrees (`None`: the default of `RenderSettings`).
    pub sun_elevation_deg: Option<f32>,
    /// Leave out the water's shadow on the terrain (`RenderSettings::water_shadow` off).
    pub no_water_shadow: bool,
    /// Leave out the wet ground (`RenderSettings::wet_ground` off).
    pub no_wet_ground: bool,
}

impl ImageOptions {
    /// `settings` with these options applied.
    pub fn apply(&self, mut settings: RenderSettings) -> RenderSettings {
        settings.view = self.view;
        if let Some(filter) = self.depth_filter {
            settings.fluid.depth_filter = filter;
        }
        if let Some(elevation) = self.sun_elevation_deg {
            settings.sun_elevation_deg = elevation;
        }
        settings.water_shadow &= !self.no_water_shadow;
        settings.wet_ground &= !self.no_wet_ground;
        settings
    }
}

/// Renders the engine's current state from the scene's camera at `size` pixels (8-bit sRGB).
/// **Blocking**; headless only.
pub fn render_image(ctx: &GpuContext, engine: &Engine, size: (u32, u32)) -> image::RgbaImage {
    render_image_as(ctx, engine, size, ImageOptions::default())
}

/// As [`render_image`], showing what `options` ask for.
pub fn render_image_as(ctx: &GpuContext, engine: &Engine, size: (u32, u32), options: ImageOptions) -> image::RgbaImage {
    let mut renderer = Renderer::new(ctx, render::OFFSCREEN_FORMAT, engine.terrain());
    renderer.set_obstacles(ctx, &engine.obstacle_meshes());
    renderer.set_walls(ctx, &engine.wall_meshes());
    let (camera, settings) = scene_view(engine);
    let settings = options.apply(settings);
    render::render_to_image(ctx, &mut renderer, &camera, Some(engine.particles()), &settings, size)
}

/// As [`render_image`], into a [`render::HDR_FORMAT`] target: the linear image (tone-mapped, before sRGB
/// encoding) as float RGBA, alpha 1. Encoding its values to sRGB gives [`render_image`]'s bytes (within
/// rounding). **Blocking**; headless only.
pub fn render_image_hdr(ctx: &GpuContext, engine: &Engine, size: (u32, u32)) -> image::Rgba32FImage {
    render_image_hdr_as(ctx, engine, size, ImageOptions::default())
}

/// As [`render_image_hdr`], showing what `options` ask for.
pub fn render_image_hdr_as(
    ctx: &GpuContext,
    engine: &Engine,
    size: (u32, u32),
    options: ImageOptions,
) -> image::Rgba32FImage {
    let mut renderer = Renderer::new(ctx, render::HDR_FORMAT, engine.terrain());
    renderer.set_obstacles(ctx, &engine.obstacle_meshes());
    renderer.set_walls(ctx, &engine.wall_meshes());
    let (camera, settings) = scene_view(engine);
    let settings = options.apply(settings);
    render::render_to_image_hdr(ctx, &mut renderer, &camera, Some(engine.particles()), &settings, size)
}

/// Sets particle `index`'s velocity to `v` (m/s; a queue write, applied before the next submission): for
/// tests of the blow-up path with finite water that leaves physics. `index` past the particles is ignored.
pub fn set_particle_velocity(ctx: &GpuContext, engine: &Engine, index: u32, v: [f32; 3]) {
    let particles = engine.particles();
    if index < particles.count {
        particles.velocities.write(&ctx.queue, index as u64, bytemuck::cast_slice(&[v[0], v[1], v[2], 0.0]));
    }
}

/// Makes particle `index`'s velocity NaN (a queue write, applied before the next submission): for tests of
/// the blow-up path ([`crate::sim::Simulation::blow_up`]), which no scene that passes validation is known
/// to reach. `index` past the particles is ignored.
pub fn poison_particle(ctx: &GpuContext, engine: &Engine, index: u32) {
    let particles = engine.particles();
    if index < particles.count {
        let nan = [f32::NAN; 4];
        particles.velocities.write(&ctx.queue, index as u64, bytemuck::cast_slice(&nan));
    }
}
