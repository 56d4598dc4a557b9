//! Rendering: an orbit camera, then a fixed, hand-ordered sequence of passes into the frame's colour target
//! and reversed-Z `Depth32Float` depth target. Every pass has one shape ([`pass`]: `new(ctx,
//! color_format)`, [`Pass::resize`] when the screen-sized targets change, [`Pass::encode`] into a
//! [`Frame`] with its per-frame input) and sits beside its shader by name (`src/render/X.rs` ↔
//! `shaders/render/X.wgsl`); what they share (formats, depth convention, bind group 0, pipeline helpers)
//! is in the leaf module [`frame`]. Per frame, in order:
//!
//! 1. "anisotropy": [`anisotropy`] turns the particles into ellipsoids (Yu & Turk 2013);
//! 2. the background, after "obstacle shadow" ([`obstacle_shadow`]: the obstacles' sun shadow map, drawn
//!    only when they or the sun moved): "terrain" ([`terrain`]: clear, the heightfield with its shadows),
//!    "obstacles" ([`obstacles`]), "sky"
//!    ([`sky`]: the cubemap where nothing was drawn; "sky" also regenerates the cubemap, a
//!    scattering atmosphere or Preetham daylight, when the sun moved) and, in a box scene, "tank"
//!    ([`tank`]: the ground and the far glass walls); while the view stands still they are restored from
//!    the [`background`] cache instead (two texture copies);
//!    Over the terrain, drawn or restored: "terrain wetness" and "terrain wet" ([`wetness`]), then the
//!    water's shadow: "water shadow" ([`water_shadow`]: the ellipsoids splatted into a light-space map
//!    seen from the sun), "terrain water shadow", in a box scene "tank ground water shadow", and
//!    "obstacles water shadow" (the sun's light under the water dimmed and tinted);
//! 3. "wave maker" ([`wave_maker`], when the drawn [`ParticleSource`] has a paddle) and, in the `Spheres`
//!    debug view, "particles" ([`particles`], sphere impostors);
//! 4. screen-space fluid (van der Laan, Green & Sainz 2009): [`splat`] draws "splat depth" and "splat
//!    thickness"; [`fluid_tiles`] lists the screen tiles holding fluid ("tiles") and the chosen depth filter
//!    smooths the depth over them (indirect dispatch): [`curvature_flow`] ("curvature flow") or
//!    [`narrow_range`] ("narrow range"); [`foam`] splats the diffuse particles (spray, foam, bubbles) into
//!    the foam target ("foam"); [`composite`] copies the scene colour as the refraction background and draws
//!    "fluid composite", the shaded water with its foam over the scene with its depth, or an intermediate
//!    target;
//! 5. "tank glass" ([`tank`]): the near glass walls of a box scene's tank over the water.
//!
//! A simulation decomposed over several GPUs (src/cluster) is drawn sort-last ([`sort_last`]): every rank
//! runs the "fluid layers" stage ([`Renderer::encode_layers`]: step 1, the background for the depth the
//! splats are tested against, "ghost cull" ([`ghosts`]: the neighbours' ghost copies shape the ellipsoids
//! but only owners splat) and step 4's splats into its own targets); the other ranks' depth and thickness
//! come to the display device as bytes ([`layers`]), and [`Renderer::encode_display`] draws the whole frame
//! with "sort-last depth" and "sort-last thickness" (nearest depth, summed thickness) between the splats
//! and the fluid tiles, so the tiles, the depth filter and the composite run once. One GPU records neither.
//!
//! The colour target may be 8-bit (sRGB or not: the shaders encode sRGB themselves for a plain `Unorm`
//! format) or a float format ([`HDR_FORMAT`], for EXR screenshots: the tone-mapped linear values as they
//! are); the refraction background copy is made in the colour target's own format
//! (see [`frame::stores_linear`]).
//!
//! Screen-independent state (pipelines, layouts, uniforms) lives in the passes; the screen-sized targets
//! ([`targets::FluidTargets`]) are owned here, rebuilt when the frame size, colour format or thickness
//! resolution changes, and the passes that bind them are resized when the frame's targets change. Each
//! pass's per-frame input is derived from the user's [`RenderSettings`] in one place (`settings.rs`).

pub mod anisotropy;
pub mod background;
pub mod camera;
pub mod composite;
pub mod curvature_flow;
pub mod fluid_tiles;
pub mod foam;
pub mod frame;
pub mod ghosts;
pub mod heightfield;
pub mod layers;
pub mod narrow_range;
pub mod obstacle_shadow;
pub mod obstacles;
pub mod particles;
pub mod pass;
pub mod settings;
pub mod sky;
pub mod sky_image;
pub mod sort_last;
pub mod source;
pub mod splat;
pub mod tank;
pub mod targets;
pub mod terrain;
pub mod terrain_ao;
pub mod terrain_bounce;
pub mod to_image;
pub mod water_shadow;
pub mod wave_maker;
pub mod wetness;

pub use anisotropy::{AnisotropyInput, AnisotropyPass, AnisotropyUniform, Ellipsoid, EllipsoidBuffers};
pub use camera::{lens_shift_for_panel, sun_direction, OrbitCamera};
pub use composite::{CompositeInput, CompositePass, CompositeUniform};
pub use curvature_flow::{CurvatureFlowPass, FlowSettings};
pub use fluid_tiles::FluidTilesPass;
pub use foam::{DiffuseSource, FoamInput, FoamPass, FoamSettings, FoamUniform};
pub use frame::{CameraUniform, DEPTH_CLEAR, DEPTH_COMPARE, DEPTH_FORMAT, HDR_FORMAT, OFFSCREEN_FORMAT};
pub use ghosts::{GhostIds, GhostPass};
pub use layers::{FluidLayers, LayerError, LayerReadback};
pub use narrow_range::{NarrowRangePass, NarrowRangeSettings};
pub use obstacle_shadow::ObstacleShadowPass;
pub use obstacles::{ObstacleMesh, ObstaclesInput, ObstaclesPass};
pub use particles::{ColorMode, ParticlePass, ParticleStyle};
pub use pass::{Frame, Pass, Targets};
pub use settings::{DepthFilter, FluidSettings, FluidView, NarrowRangeParams, RenderSettings};
pub use sky::{SkyFaces, SkyInput, SkyModel, SkyPass, SkySource};
pub use sky_image::{load_sky, SkyCube, SkyError};
pub use sort_last::{SortLastInput, SortLastPass};
pub use source::ParticleSource;
pub use splat::{SplatInput, SplatMethod, SplatPass};
pub use tank::{Tank, TankInput, TankPart, TankPass};
pub use targets::{read_texture_rgba, read_texture_rgba_f32, FluidTargets, Offscreen};
pub use terrain::{TerrainInput, TerrainPass};
pub use to_image::{render_to_image, render_to_image_hdr};
pub use water_shadow::{WaterLightUniform, WaterShadowInput, WaterShadowPass};
pub use wave_maker::{PaddleUniform, WaveMakerPass};

use crate::gpu::{GpuContext, Profiler};
use crate::terrain::Heightfield;
use background::{BackgroundCache, BackgroundKey};

/// Owns the frame uniform, every pass, and the fluid renderer's screen-sized targets.
pub struct Renderer {
    device: wgpu::Device,
    color_format: wgpu::TextureFormat,
    camera_buffer: wgpu::Buffer,
    frame_bind_group: wgpu::BindGroup,
    sky: SkyPass,
    terrain: TerrainPass,
    wave_maker: WaveMakerPass,
    particles: ParticlePass,
    anisotropy: AnisotropyPass,
    splat: SplatPass,
    tiles: FluidTilesPass,
    curvature_flow: CurvatureFlowPass,
    foam: FoamPass,
    narrow_range: NarrowRangePass,
    /// Which of `targets.smooth` holds the last frame's filtered depth.
    smoothed: usize,
    composite: CompositePass,
    tank: TankPass,
    obstacles: ObstaclesPass,
    /// The obstacles' sun shadow map, read by the terrain, the ground and the obstacles.
    obstacle_shadow: ObstacleShadowPass,
    water_shadow: WaterShadowPass,
    ghosts: GhostPass,
    sort_last: SortLastPass,
    /// What the last [`Renderer::encode_layers`] splatted into the targets, for an
    /// [`Renderer::encode_display`] of the same frame to go on from.
    layers_for: Option<LayersKey>,
    targets: Option<FluidTargets>,
    /// The frame targets the passes' bind groups were made for (colour and depth textures, compared by
    /// identity, with the thickness resolution); the passes are resized when another comes.
    bound_to: Option<(wgpu::Texture, wgpu::Texture, bool)>,
    background: BackgroundCache,
    /// Changes to the terrain and the sky source so far (part of the background's cache key).
    background_epoch: u64,
    /// Whether the last frame's background came from the cache.
    background_restored: bool,
    start: std::time::Instant,
    /// The time (seconds since `start`) of the last frame, for the ground's drying.
    last_time: Option<f32>,
}

impl Renderer {
    /// Builds all pipelines for colour targets of `color_format` (depth targets: [`DEPTH_FORMAT`]) and
    /// uploads `terrain`. The shaders write linear values into sRGB and float formats (e.g.
    /// [`HDR_FORMAT`]) and sRGB-encoded ones into 8-bit `Unorm` formats (see [`frame::stores_linear`]).
    /// The format must be filterable, since the water samples a copy of it (the refraction background)
    /// with a filtering sampler: `Rgba32Float` is not (without `FLOAT32_FILTERABLE`), use `Rgba16Float`.
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat, terrain: &Heightfield) -> Self {
        let camera_buffer = crate::gpu::uniform_buffer_init(
            &ctx.device,
            "camera uniform",
            bytemuck::bytes_of(&OrbitCamera::default().uniform((1, 1), glam::Vec3::Y, 1.0, 0.0)),
        );
        let obstacle_shadow = ObstacleShadowPass::new(ctx);
        let frame_bind_group = frame::frame_bind_group(&ctx.device, &camera_buffer, obstacle_shadow.frame_resources());
        let mut terrain_pass = TerrainPass::new(ctx, color_format);
        terrain_pass.set_heightfield(ctx, terrain);
        let obstacles = ObstaclesPass::new(ctx, color_format, terrain_pass.ground());
        Self {
            device: ctx.device.clone(),
            color_format,
            camera_buffer,
            frame_bind_group,
            sky: SkyPass::new(ctx, color_format),
            terrain: terrain_pass,
            wave_maker: WaveMakerPass::new(ctx, color_format),
            particles: ParticlePass::new(ctx, color_format),
            anisotropy: AnisotropyPass::new(ctx, color_format),
            splat: SplatPass::new(ctx, color_format),
            tiles: FluidTilesPass::new(ctx, color_format),
            curvature_flow: CurvatureFlowPass::new(ctx, color_format),
            foam: FoamPass::new(ctx, color_format),
            narrow_range: NarrowRangePass::new(ctx, color_format),
            smoothed: 0,
            composite: CompositePass::new(ctx, color_format),
            tank: TankPass::new(ctx, color_format),
            obstacles,
            obstacle_shadow,
            water_shadow: WaterShadowPass::new(ctx),
            ghosts: GhostPass::new(ctx, color_format),
            sort_last: SortLastPass::new(ctx, color_format),
            layers_for: None,
            targets: None,
            bound_to: None,
            background: BackgroundCache::default(),
            background_epoch: 0,
            background_restored: false,
            start: std::time::Instant::now(),
            last_time: None,
        }
    }

    /// Colour format the pipelines were built for.
    pub fn color_format(&self) -> wgpu::TextureFormat {
        self.color_format
    }

    /// Whether the last frame's terrain and sky were restored from the background cache (copied, not
    /// drawn); see [`background`].
    pub fn background_restored(&self) -> bool {
        self.background_restored
    }

    /// The fluid renderer's screen-sized targets of the last frame that drew water (`None` before one, or
    /// after [`Renderer::release_targets`]): its raw depth, thickness and filtered depth, for tests and
    /// measurements.
    pub fn fluid_targets(&self) -> Option<&FluidTargets> {
        self.targets.as_ref()
    }

    /// The texture of [`Renderer::fluid_targets`] holding the last frame's filtered depth (`R32Float`,
    /// linear view depth in metres, 0 = no fluid).
    pub fn smoothed_depth(&self) -> Option<&wgpu::Texture> {
        self.targets.as_ref().map(|t| &t.smooth[self.smoothed.min(1)])
    }

    /// Replaces the terrain (e.g. on a scene change).
    pub fn set_terrain(&mut self, ctx: &GpuContext, terrain: &Heightfield) {
        self.terrain.set_heightfield(ctx, terrain);
        self.obstacles.set_heightfield(ctx, self.terrain.ground());
        self.background_epoch += 1;
    }

    /// Replaces the static obstacles drawn (world-space meshes; none: nothing drawn), e.g. on a scene
    /// change.
    pub fn set_obstacles(&mut self, ctx: &GpuContext, meshes: &[ObstacleMesh]) {
        self.obstacles.set_meshes(ctx, meshes);
        self.obstacle_shadow.set_corners(ctx, self.obstacles.corners());
        self.background_epoch += 1;
    }

    /// Draws `walls` (the walls that hold a terrain scene's water, [`crate::engine::walls`]) with the
    /// obstacles from now on; they stay when the obstacles are set again. None: no walls.
    pub fn set_walls(&mut self, ctx: &GpuContext, walls: &[ObstacleMesh]) {
        self.obstacles.set_walls(ctx, walls);
        self.obstacle_shadow.set_corners(ctx, self.obstacles.corners());
        self.background_epoch += 1;
    }

    /// Frees the fluid renderer's screen-sized targets (the next frame that draws water makes them again),
    /// e.g. after a one-off render at a large size such as a k x screenshot. Commands already recorded
    /// keep what they use alive until the GPU is done with them.
    pub fn release_targets(&mut self) {
        self.targets = None;
        self.layers_for = None;
        self.bound_to = None;
        self.splat.resize(&self.device, None);
        self.tiles.resize(&self.device, None);
        self.curvature_flow.resize(&self.device, None);
        self.foam.resize(&self.device, None);
        self.narrow_range.resize(&self.device, None);
        self.composite.resize(&self.device, None);
        self.sort_last.resize(&self.device, None);
    }

    /// The water's shadow pass: its light-space map and light of the last frame that drew it.
    pub fn water_shadow(&self) -> &WaterShadowPass {
        &self.water_shadow
    }

    /// The sky: its cubemap and where it came from.
    pub fn sky(&self) -> &SkyPass {
        &self.sky
    }

    /// Shows `cube` as the sky (a sky decoded on the CPU, [`sky_image`]), or the generated sky when `None`.
    pub fn set_sky(&mut self, ctx: &GpuContext, cube: Option<&SkyCube>) {
        match cube {
            Some(cube) => self.sky.set_cube(ctx, cube),
            None => self.sky.use_generated(ctx),
        }
        self.background_epoch += 1;
    }

    /// Reads, decodes and shows the sky at `path` ([`SkyPass::load`]). **Blocking**: for headless runs and
    /// tests (the window decodes skies on a worker thread and calls [`Renderer::set_sky`]). On error the
    /// current sky stays.
    pub fn load_sky(&mut self, ctx: &GpuContext, path: &std::path::Path) -> Result<(), SkyError> {
        self.sky.load(ctx, path)?;
        self.background_epoch += 1;
        Ok(())
    }

    /// The box the sun's view of the water covers ([`water_shadow`]): the terrain's, and the tank's when
    /// there is one, raised by a quarter of its width for water in the air (metres).
    fn light_bounds(&self, tank: Option<Tank>) -> (glam::Vec3, glam::Vec3) {
        let (mut lo, mut hi) = self.terrain.bounds();
        if let Some(t) = tank {
            (lo, hi) = (lo.min(t.min), hi.max(t.max));
        }
        hi.y += 0.25 * (hi.x - lo.x).max(hi.z - lo.z);
        (lo, hi)
    }

    /// Makes the fluid targets for `target` (size, colour format, thickness resolution) when they do not
    /// fit it, and resizes the passes that bind screen-sized targets when the frame's targets changed.
    fn prepare_targets(&mut self, ctx: &GpuContext, target: &Offscreen, half_thickness: bool) {
        let key = (target.color.clone(), target.depth.clone(), half_thickness);
        if self.bound_to.as_ref() == Some(&key) {
            return;
        }
        if !self.targets.as_ref().is_some_and(|t| t.matches(target.size, target.format(), half_thickness)) {
            self.targets = Some(FluidTargets::new(ctx, target.size, target.format(), half_thickness));
        }
        let Some(fluid) = self.targets.as_ref() else { return };
        let targets = Some(Targets { scene: target, fluid });
        self.splat.resize(&ctx.device, targets);
        self.tiles.resize(&ctx.device, targets);
        self.curvature_flow.resize(&ctx.device, targets);
        self.foam.resize(&ctx.device, targets);
        self.narrow_range.resize(&ctx.device, targets);
        self.composite.resize(&ctx.device, targets);
        self.sort_last.resize(&ctx.device, targets);
        self.bound_to = Some(key);
    }

    /// Records the frame into `encoder` (see the module doc for the passes): writes the camera uniform
    /// (through the queue, so call once per submission) and clears `target`'s colour and depth. The
    /// colour texture needs `COPY_SRC` usage for the water's refraction (without it the water refracts
    /// nothing), the depth texture `TEXTURE_BINDING` ([`Offscreen`]'s have both).
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        target: &Offscreen,
        camera: &OrbitCamera,
        particles: Option<ParticleSource<'_>>,
        settings: &RenderSettings,
    ) {
        self.encode_with(ctx, encoder, profiler, target, camera, particles, settings, None);
    }

    /// The "fluid layers" stage of a rank of a decomposed simulation (see the module doc and
    /// [`sort_last`]): as [`Renderer::encode`] up to the splats (the anisotropy over every particle of
    /// `particles`, owned and ghosts; the background, which the splats are tested against; the ghosts'
    /// ellipsoids culled when `ghosts` is given; the splats into this renderer's own depth and thickness
    /// targets at `target`'s size), nothing after them. Read the layers from [`Renderer::fluid_targets`]
    /// (e.g. [`LayerReadback::encode_copy`] in the same encoder); `None` there when no fluid was drawn
    /// (no particles, or the `Spheres` view).
    #[allow(clippy::too_many_arguments)]
    pub fn encode_layers(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        target: &Offscreen,
        camera: &OrbitCamera,
        particles: Option<ParticleSource<'_>>,
        ghosts: Option<GhostIds<'_>>,
        settings: &RenderSettings,
    ) {
        let ranked = Ranked { ghosts, received: None };
        self.encode_with(ctx, encoder, profiler, target, camera, particles, settings, Some(ranked));
    }

    /// The display's frame of a decomposed simulation: [`Renderer::encode_layers`] for its own particles,
    /// then the other ranks' layers `received` (one per rank > 0, at `target`'s size) composited
    /// sort-last ([`sort_last`]: nearest depth, summed thickness) and the rest of the frame once, as
    /// [`Renderer::encode`] draws it. When the last call was [`Renderer::encode_layers`] with the same
    /// target, particles (version and count), camera and settings (in an earlier submission, so the
    /// display's splats run while the other ranks' layers travel), its splats are used and not recorded
    /// again. With nothing received and no `ghosts` it records what [`Renderer::encode`] does.
    #[allow(clippy::too_many_arguments)]
    pub fn encode_display(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        target: &Offscreen,
        camera: &OrbitCamera,
        particles: Option<ParticleSource<'_>>,
        ghosts: Option<GhostIds<'_>>,
        received: &[FluidLayers],
        settings: &RenderSettings,
    ) {
        let ranked = Ranked { ghosts, received: Some(received) };
        self.encode_with(ctx, encoder, profiler, target, camera, particles, settings, Some(ranked));
    }

    /// This rank's wet ground (f32 per terrain height sample, 0 dry .. 1 soaked) as its last frame left
    /// it, for rank 0 of a decomposed simulation to merge ([`Renderer::merge_wetness`]). **Blocking** on
    /// this device. Errors: the read-back failed (device lost).
    pub fn wetness_blocking(&self, ctx: &GpuContext) -> Result<Vec<u8>, crate::gpu::GpuError> {
        let buffer = self.terrain.wetness();
        crate::gpu::readback::try_read_range_blocking(ctx, buffer, 0, buffer.size(), "the wet ground")
    }

    /// Rank 0 of a decomposed simulation, before [`Renderer::encode_display`]: its wet ground becomes
    /// the largest per sample of its own and the other ranks' `maps` ([`Renderer::wetness_blocking`]),
    /// which is the ground one GPU's particles wet (drying and soaking commute with the largest).
    pub fn merge_wetness(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        maps: &[Vec<u8>],
    ) {
        self.terrain.merge_wetness(ctx, encoder, profiler, maps);
    }

    /// [`Renderer::encode`], or a rank's stage of it (`ranked`).
    #[allow(clippy::too_many_arguments)]
    fn encode_with(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &Profiler,
        target: &Offscreen,
        camera: &OrbitCamera,
        particles: Option<ParticleSource<'_>>,
        settings: &RenderSettings,
        ranked: Option<Ranked<'_>>,
    ) {
        let sun = settings.sun();
        let time = self.start.elapsed().as_secs_f32();
        let uniform = camera.uniform(target.size, sun, settings.sun_intensity.max(0.0), time);
        ctx.queue.write_buffer(&self.camera_buffer, 0, bytemuck::bytes_of(&uniform));
        let paddle = particles.and_then(|p| p.paddle);
        let tank = settings.tank(particles.and_then(|p| p.tank));
        // The water wets the ground whether it is drawn or not.
        let wetting = particles;
        let dt = self.last_time.map_or(0.0, |last| (time - last).clamp(0.0, 0.25));
        self.last_time = Some(time);
        let particles = particles.filter(|p| settings.show_particles && p.count > 0);
        let fluid = particles.filter(|_| settings.view != FluidView::Spheres);
        // A rank's layers of this very frame, recorded by the last `encode_layers`, go on from there.
        let layers_key = fluid.and_then(|p| {
            let camera = CameraUniform { time: 0.0, ..uniform };
            let (color, settings) = (target.color.clone(), settings.clone());
            p.version.map(|version| LayersKey { color, version, count: p.count, camera, settings })
        });
        let previous = self.layers_for.take();
        let display = matches!(ranked, Some(Ranked { received: Some(_), .. }));
        let splatted = display && previous.is_some() && previous == layers_key;
        if fluid.is_some() {
            self.prepare_targets(ctx, target, settings.fluid.half_res_thickness);
        }
        let frame_bind_group = &self.frame_bind_group;
        let mut frame = Frame {
            device: &ctx.device,
            queue: &ctx.queue,
            encoder,
            profiler,
            frame_bind_group,
            camera: &uniform,
            target,
        };
        if let Some(p) = fluid.filter(|_| !splatted) {
            let params = settings.anisotropy_uniform();
            self.anisotropy.encode(
                &mut frame,
                AnisotropyInput { positions: p.positions, count: p.count, params, version: p.version },
            );
        }
        // The terrain and the sky: restored from the cache when nothing they depend on changed, else
        // drawn (and cached). The sky's cubemap is kept current either way (the water reflects it).
        let key = BackgroundKey {
            camera: CameraUniform { time: 0.0, ..uniform },
            size: target.size,
            format: target.format(),
            show_terrain: settings.show_terrain,
            terrain_bounce: settings.terrain_bounce,
            tank,
            sky: ([settings.sky_turbidity, settings.sky_exposure], settings.sky_model),
            epoch: self.background_epoch,
        };
        // The obstacles' shadow map (drawn again only when they or the sun moved): the background and the
        // overlays on it read it.
        self.obstacle_shadow.encode(&mut frame, sun);
        let restored =
            settings.cache_background && self.background.restore(frame.encoder, &key, &target.color, &target.depth);
        // A tank's ground covers a box scene's flat floor.
        let terrain_drawn = settings.show_terrain && !tank.is_some_and(|t| t.floor);
        // The cubemap made current first (generated when the sun moved): the terrain's fog fades toward it.
        self.sky.encode(&mut frame, settings.sky(false));
        let sky = (self.sky.cube_view(), self.sky.version());
        self.terrain.set_sky(ctx, sky, self.sky.sampler(), self.sky.exposure());
        if !restored {
            let sun_intensity = settings.sun_intensity.max(0.0);
            let input = TerrainInput { sun, draw: terrain_drawn, sun_intensity, bounce: settings.terrain_bounce };
            self.terrain.encode(&mut frame, input);
            // The obstacles sit in the haze of the ground they stand on.
            let fog_density = match tank.filter(|t| t.floor) {
                Some(t) => tank::TankUniform::new(&t, 1.0).fog_density,
                None => self.terrain.fog_density(),
            };
            let sky = self.terrain.sky_group();
            self.obstacles.encode(
                &mut frame,
                ObstaclesInput { sky, terrain_shadow: terrain_drawn, fog_density, walls: settings.show_tank },
            );
        }
        // After the terrain: the sky fills only the pixels it left at the far plane.
        self.sky.encode(&mut frame, settings.sky(!restored));
        if !restored {
            // The ground overdraws the sky below the horizon; the glass blends over both.
            let sky = (self.sky.cube_view(), self.sky.version());
            let sky_exposure = self.sky.exposure();
            self.tank.encode(&mut frame, TankInput { tank, part: TankPart::Behind, sky, sky_exposure });
            if settings.cache_background {
                self.background.store(ctx, frame.encoder, key, &target.color, &target.depth);
            } else {
                self.background.invalidate();
            }
        }
        self.background_restored = restored;
        // The wet ground over the terrain, drawn or restored.
        let wet = self.terrain.encode_wet(&mut frame, settings.wet(wetting.filter(|_| terrain_drawn), dt));
        // The water's shadow on the terrain and the ground, from the water this renderer drew: none in a
        // rank's layers or a display frame with other ranks' water (it would miss theirs, or count the
        // ghosts twice).
        let alone = match ranked {
            None => true,
            Some(Ranked { ghosts, received }) => ghosts.is_none() && received.is_some_and(|r| r.is_empty()),
        };
        let shadowing = fluid.filter(|_| (terrain_drawn || tank.is_some()) && alone);
        let (ellipsoids, count) = (shadowing.and(self.anisotropy.ellipsoids()), shadowing.map_or(0, |p| p.count));
        let input = settings.water_shadow(ellipsoids, count, self.light_bounds(tank));
        let shadowed = self.water_shadow.encode(&mut frame, input);
        if shadowed && terrain_drawn {
            self.terrain.encode_water_shadow(&mut frame, self.water_shadow.receiver());
        }
        if shadowed && tank.is_some() {
            self.tank.encode_water_shadow(&mut frame, self.water_shadow.receiver());
        }
        if let Some(sky) = self.terrain.sky_group().filter(|_| shadowed) {
            self.obstacles.encode_water_shadow(&mut frame, self.water_shadow.receiver(), sky);
        }
        // The moving opaque things over the background, then the water.
        self.wave_maker.encode(&mut frame, paddle);
        if let (FluidView::Spheres, Some(p)) = (settings.view, particles) {
            self.particles.encode(&mut frame, (p, &settings.particle));
        }
        // The near glass over everything (none over the intermediate targets' views).
        let front = TankInput {
            tank: tank.filter(|_| settings.view.shaded()),
            part: TankPart::Front,
            sky: (self.sky.cube_view(), self.sky.version()),
            sky_exposure: self.sky.exposure(),
        };
        let (Some(p), Some(ellipsoids), Some(targets)) = (fluid, self.anisotropy.ellipsoids(), self.targets.as_ref())
        else {
            self.tank.encode(&mut frame, front);
            return;
        };
        if !splatted {
            if let Some(ghosts) = ranked.and_then(|r| r.ghosts) {
                self.ghosts.encode(&mut frame, ghosts::GhostInput { ellipsoids, count: p.count, ghosts });
            }
            self.splat.encode(&mut frame, settings.splat(ellipsoids, p.count));
        }
        let received = match ranked {
            Some(Ranked { received: None, .. }) => {
                // The fluid layers stage ends with the splats.
                self.layers_for = layers_key;
                return;
            }
            Some(Ranked { received: Some(received), .. }) => received,
            None => &[],
        };
        self.sort_last.encode(&mut frame, SortLastInput { received });
        self.tiles.encode(&mut frame, ());
        let smoothed = match settings.fluid.depth_filter {
            DepthFilter::CurvatureFlow => {
                let flow = settings.flow(&uniform);
                self.curvature_flow.encode(&mut frame, flow);
                CurvatureFlowPass::result_index(flow.iterations)
            }
            DepthFilter::NarrowRange => {
                let filter = settings.narrow_range(&uniform);
                self.narrow_range.encode(&mut frame, filter);
                NarrowRangePass::result_index(filter.iterations)
            }
        };
        self.smoothed = smoothed;
        self.foam.encode(&mut frame, settings.foam(p.diffuse));
        let params = settings.composite(targets.tiles.0, self.sky.exposure(), camera.distance);
        // The background cache holds the frame's colour before the water when nothing was drawn over it.
        let background = self.background.colour_for(&key).filter(|_| paddle.is_none() && !wet && !shadowed);
        let sky = (self.sky.cube_view(), self.sky.version());
        self.composite.encode(&mut frame, CompositeInput { params, smoothed, sky, background });
        self.tank.encode(&mut frame, front);
    }
}

/// What a rank's fluid layers were splatted for: the frame's colour target (by identity), the particles'
/// version and count, the camera (its clock left out) and the settings.
#[derive(PartialEq)]
struct LayersKey {
    color: wgpu::Texture,
    version: u64,
    count: u32,
    camera: CameraUniform,
    settings: RenderSettings,
}

/// A rank's part of a frame of a decomposed simulation: which particles are ghosts, and the other ranks'
/// layers (display) or none (the fluid layers stage only).
#[derive(Clone, Copy)]
struct Ranked<'a> {
    ghosts: Option<GhostIds<'a>>,
    received: Option<&'a [FluidLayers]>,
}
