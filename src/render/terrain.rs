//! Terrain mesh (`shaders/render/terrain.wgsl`) drawn from the same f32 heights the simulation collides
//! with: the heights go to a storage buffer once per scene, and the vertex shader builds one triangle strip
//! per grid row from `vertex_index` (column) and `instance_index` (row), normals by central differences.
//! No vertex or index buffers. Lit by the sun (Lambert with heightfield soft shadows) and the sky, with
//! distance fog; writes reversed-Z depth so particles and terrain occlude each other. The soft shadows are
//! ray-marched once per height sample by a compute pass ("terrain shadow",
//! `shaders/render/terrain_shadow.wgsl`) whenever the sun or the terrain changes, and interpolated per
//! pixel: on an H100 at 1920x1080 the per-pixel march cost 3.1 of the pass's 5.6 ms every frame. The sky
//! light is scaled by the terrain's sky visibility, baked once per terrain ([`super::terrain_ao`]) and
//! interpolated the same way. Where water has passed, "terrain wet" darkens the ground and gives it a
//! wet sheen every frame, over the (possibly cached) background: the mesh drawn again with a depth test
//! for equality (its clip position `@invariant`), reading the wetness of [`super::wetness`].
//! Where the water's light is dimmed ([`super::water_shadow`]), "terrain water shadow" draws the mesh
//! once more the same way and multiplies the ground's colour by the ratio of its colour with the sun's
//! light through the water to its colour without.
//! The "terrain" pass clears the frame's colour and depth and draws the mesh into them.

use super::frame;
use super::heightfield::{sky_layout, GroundBuffers, HeightfieldBuffers, TerrainUniform};
use super::pass::{Frame, Pass};
use super::terrain_ao::{AoData, AoMethod, TerrainAo};
use super::terrain_bounce::{BounceData, TerrainBounce, BOUNCES};
use super::wetness::{WetInput, WetnessUpdate, DRY_SECONDS};
use crate::gpu::{self, GpuContext};
use crate::terrain::Heightfield;

/// The terrain pass: pipelines, and the heights, grid uniform and shadow factors of the current heightfield.
pub struct TerrainPass {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    shadow_pipeline: wgpu::ComputePipeline,
    shadow_layout: wgpu::BindGroupLayout,
    ao: TerrainAo,
    bounce: TerrainBounce,
    wet_pipeline: wgpu::RenderPipeline,
    /// "terrain water shadow" (bind group 2: [`super::water_shadow::receiver_layout`]).
    water_pipeline: wgpu::RenderPipeline,
    /// Bind group 3 of every terrain pipeline: the sky cubemap and its sampler.
    sky_layout: wgpu::BindGroupLayout,
    /// The group over the sky cubemap of this version ([`super::SkyPass::version`]), from [`TerrainPass::set_sky`].
    sky_group: Option<(u64, wgpu::BindGroup)>,
    wet_update: WetnessUpdate,
    /// Seconds since particles last soaked the ground (`None`: dry since the terrain was loaded).
    wet_seconds: Option<f32>,
    data: TerrainData,
    /// The grid uniform as uploaded (its `sun_dir` is what `shadow` holds when `shadow_valid`).
    uniform_data: TerrainUniform,
    shadow_valid: bool,
    /// Whether `data.ao` holds the bake of the current heightfield.
    ao_valid: bool,
    /// The sun (unit vector toward it) and its intensity that `data.bounce` was baked for, with the
    /// current heightfield; `None` when it must be baked again.
    bounce_baked: Option<([f32; 3], f32)>,
}

/// The GPU copies of one heightfield.
struct TerrainData {
    uniform: wgpu::Buffer,
    heights: wgpu::Buffer,
    /// Sun shadow factor per height sample (f32, 1 = lit); held here, used through the bind groups.
    _shadow: wgpu::Buffer,
    /// Sky visibility per height sample (f32, 1 = the whole sky) and its bake.
    ao: AoData,
    /// Light bounced off the terrain around, per height sample ([`super::terrain_bounce`]).
    bounce: BounceData,
    /// Wetness per height sample (f32, 0 dry .. 1 soaked).
    wetness: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    shadow_bind_group: wgpu::BindGroup,
}

/// What the terrain pass needs per frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TerrainInput {
    /// Unit vector toward the sun (the shadows are recomputed when it changes).
    pub sun: glam::Vec3,
    /// Draw the mesh (false: the pass only clears the targets).
    pub draw: bool,
    /// The sun's intensity (the bounced light is baked again when it changes).
    pub sun_intensity: f32,
    /// Light the ground with the light bounced off the slopes around ([`super::terrain_bounce`]); off: a
    /// constant fifth of the sky light where the sky is hidden, as before the bake.
    pub bounce: bool,
}

impl TerrainPass {
    /// Builds the pipelines for colour targets of `color_format` (depth: `Depth32Float`), with a flat
    /// 2x2 heightfield until [`TerrainPass::set_heightfield`].
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/terrain.wgsl");
        let stages = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("terrain bind group layout"),
            entries: &[
                gpu::uniform_entry::<TerrainUniform>(0, stages),
                gpu::storage_entry::<f32>(1, true, stages),
                gpu::storage_entry::<f32>(2, true, wgpu::ShaderStages::FRAGMENT),
                gpu::storage_entry::<f32>(3, true, wgpu::ShaderStages::FRAGMENT),
                gpu::storage_entry::<f32>(4, true, wgpu::ShaderStages::FRAGMENT),
                gpu::storage_entry::<[f32; 4]>(5, true, wgpu::ShaderStages::FRAGMENT),
            ],
        });
        let cs = wgpu::ShaderStages::COMPUTE;
        let shadow_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("terrain shadow bind group layout"),
            entries: &[
                gpu::uniform_entry::<TerrainUniform>(0, cs),
                gpu::storage_entry::<f32>(1, true, cs),
                gpu::storage_entry::<f32>(2, false, cs),
            ],
        });
        let shadow_pipeline_layout =
            frame::pass_pipeline_layout(device, "terrain shadow pipeline layout", &shadow_layout);
        let shadow_module = gpu::shader::module(device, "render/terrain_shadow.wgsl");
        let shadow_pipeline = gpu::compute_pipeline(device, &shadow_module, &shadow_pipeline_layout, "shadow_grid");
        let sky_layout = sky_layout(device);
        let frame_layout = frame::frame_bind_group_layout(device);
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("terrain pipeline layout"),
            bind_group_layouts: &[Some(&frame_layout), Some(&layout), None, Some(&sky_layout)],
            immediate_size: 0,
        });
        let strips = wgpu::PrimitiveState {
            topology: wgpu::PrimitiveTopology::TriangleStrip,
            cull_mode: None,
            ..Default::default()
        };
        let pipeline =
            frame::opaque_pipeline(device, "terrain pipeline", &pipeline_layout, &module, strips, color_format);
        // Over the terrain already drawn: the same fragments (equal depth), premultiplied alpha.
        let wet_target = wgpu::ColorTargetState {
            format: color_format,
            blend: Some(wgpu::BlendState::PREMULTIPLIED_ALPHA_BLENDING),
            write_mask: wgpu::ColorWrites::ALL,
        };
        let wet_pipeline = frame::render_pipeline(
            device,
            "terrain wet pipeline",
            &pipeline_layout,
            &module,
            ("vs_main", "fs_wet"),
            strips,
            wet_target,
            Some(frame::depth_state(wgpu::CompareFunction::Equal, false)),
            &frame::output_constants(color_format),
        );
        let water_pipeline = super::water_shadow::receiver_pipeline(
            device,
            "terrain water shadow pipeline",
            &module,
            ("vs_main", "fs_water_shadow"),
            strips,
            color_format,
            (&layout, Some(&sky_layout)),
            wgpu::CompareFunction::Equal,
        );
        let flat = Heightfield::flat(glam::Vec2::ZERO, glam::Vec2::ONE, 0.0);
        let uniform_data = TerrainUniform::from_heightfield(&flat);
        let ao = TerrainAo::new(device);
        let bounce = TerrainBounce::new(device);
        let data = upload(ctx, (&layout, &shadow_layout), (&ao, &bounce), &flat, &uniform_data);
        Self {
            pipeline,
            layout,
            shadow_pipeline,
            shadow_layout,
            ao,
            bounce,
            wet_pipeline,
            water_pipeline,
            sky_layout,
            sky_group: None,
            wet_update: WetnessUpdate::new(ctx),
            wet_seconds: None,
            data,
            uniform_data,
            shadow_valid: false,
            ao_valid: false,
            bounce_baked: None,
        }
    }

    /// Uploads a new heightfield (e.g. on a scene change); buffers are recreated when its grid changes (the
    /// bakes' pyramid and bounce grid follow its samples along x and z, not only their count).
    pub fn set_heightfield(&mut self, ctx: &GpuContext, hf: &Heightfield) {
        let bytes: &[u8] = bytemuck::cast_slice(&hf.heights);
        let same_grid = (self.uniform_data.nx, self.uniform_data.nz) == (hf.nx, hf.nz);
        self.uniform_data = TerrainUniform::from_heightfield(hf);
        if same_grid && !bytes.is_empty() && bytes.len() as u64 == self.data.heights.size() {
            ctx.queue.write_buffer(&self.data.heights, 0, bytes);
            ctx.queue.write_buffer(&self.data.uniform, 0, bytemuck::bytes_of(&self.uniform_data));
            ctx.queue.write_buffer(&self.data.wetness, 0, &vec![0u8; bytes.len()]);
        } else {
            let layouts = (&self.layout, &self.shadow_layout);
            self.data = upload(ctx, layouts, (&self.ao, &self.bounce), hf, &self.uniform_data);
        }
        self.shadow_valid = false;
        self.ao_valid = false;
        self.bounce_baked = None;
        self.wet_seconds = None;
    }

    /// The sky the distance fog fades toward: the cubemap `cube` of version `version`
    /// ([`super::SkyPass::version`]; its bind group is remade only when that changes), sampled by `sampler`,
    /// times `exposure`. To be called every frame before the terrain's passes, after the cubemap is current.
    pub fn set_sky(
        &mut self,
        ctx: &GpuContext,
        (cube, version): (&wgpu::TextureView, u64),
        sampler: &wgpu::Sampler,
        exposure: f32,
    ) {
        if self.sky_group.as_ref().is_none_or(|(v, _)| *v != version) {
            let group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("terrain sky bind group"),
                layout: &self.sky_layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::TextureView(cube) },
                    wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::Sampler(sampler) },
                ],
            });
            self.sky_group = Some((version, group));
        }
        if self.uniform_data.sky_exposure != exposure {
            self.uniform_data.sky_exposure = exposure;
            ctx.queue.write_buffer(&self.data.uniform, 0, bytemuck::bytes_of(&self.uniform_data));
        }
    }

    /// The heightfield as the obstacles read it: the grid uniform ([`TerrainUniform`]) and the heights
    /// (f32). New buffers after [`TerrainPass::set_heightfield`] when the sample count changed.
    pub fn heightfield(&self) -> HeightfieldBuffers<'_> {
        (&self.data.uniform, &self.data.heights)
    }

    /// The heightfield and the light its ground sends up, as the obstacles read them (new buffers after
    /// [`TerrainPass::set_heightfield`] when the grid changed).
    pub fn ground(&self) -> GroundBuffers<'_> {
        (self.heightfield(), &self.data.bounce.radiosity)
    }

    /// Extinction of the terrain's distance fog, 1/m.
    pub fn fog_density(&self) -> f32 {
        self.uniform_data.fog_density
    }

    /// Bind group 3 of the terrain's pipelines and of the things lit as it is (the obstacles): the sky
    /// cubemap the fog fades toward, of [`sky_layout`]; none before [`TerrainPass::set_sky`].
    pub fn sky_group(&self) -> Option<&wgpu::BindGroup> {
        self.sky_group.as_ref().map(|(_, group)| group)
    }

    /// The wetness per height sample (f32, 0 dry .. 1 soaked, index `iz * nx + ix`).
    pub fn wetness(&self) -> &wgpu::Buffer {
        &self.data.wetness
    }

    /// Rank 0 of a decomposed simulation, before its display frame: its wetness becomes the largest of its
    /// own and the other ranks' `maps` per sample ([`WetnessUpdate::encode_merge`]).
    pub fn merge_wetness(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &gpu::Profiler,
        maps: &[Vec<u8>],
    ) {
        let gpu = (&ctx.device, &ctx.queue);
        if let Err(e) = self.wet_update.encode_merge(encoder, profiler, gpu, &self.data.wetness, maps) {
            log::error!("{e}: the other GPUs' wet ground is left out");
        }
    }

    /// Every frame after the background: records "terrain wetness" (the ground dries by `input.dt` and
    /// the particles soak it) and, while any of it may still be wet, "terrain wet" over the terrain in
    /// the frame's targets. Nothing without `input` (no particles, or the terrain not drawn). Returns
    /// whether it drew over the terrain.
    pub fn encode_wet(&mut self, frame: &mut Frame<'_>, input: Option<WetInput<'_>>) -> bool {
        let (nx, nz) = (self.uniform_data.nx, self.uniform_data.nz);
        let Some(input) = input.filter(|_| nx >= 2 && nz >= 2) else { return false };
        let buffers = (&self.data.uniform, &self.data.heights, &self.data.wetness);
        let (device, queue) = (frame.device, frame.queue);
        if let Err(e) = self.wet_update.encode(frame.encoder, frame.profiler, device, queue, buffers, (nx, nz), input) {
            log::error!("{e}: the ground does not get wet");
            return false;
        }
        self.wet_seconds = match (input.count, self.wet_seconds) {
            (1.., _) => Some(0.0),
            (0, seconds) => seconds.map(|s| s + input.dt.max(0.0)),
        };
        // After five drying times the wettest sample is under 1% wet: nothing to draw.
        if !self.wet_seconds.is_some_and(|s| s < 5.0 * DRY_SECONDS) {
            return false;
        }
        let Some((_, sky)) = &self.sky_group else { return false };
        let mut pass = frame.target_pass("terrain wet", false);
        pass.set_pipeline(&self.wet_pipeline);
        pass.set_bind_group(1, &self.data.bind_group, &[]);
        pass.set_bind_group(3, sky, &[]);
        pass.draw(0..2 * nx, 0..nz - 1);
        true
    }

    /// The heightfield's box: lower and upper corners, metres (x and z over its samples, y over its
    /// heights).
    pub fn bounds(&self) -> (glam::Vec3, glam::Vec3) {
        let u = &self.uniform_data;
        let last = glam::Vec2::new(u.nx.max(1) as f32 - 1.0, u.nz.max(1) as f32 - 1.0);
        let far = glam::Vec2::from(u.origin) + last * glam::Vec2::from(u.spacing);
        (glam::Vec3::new(u.origin[0], u.h_min, u.origin[1]), glam::Vec3::new(far.x, u.h_max, far.y))
    }

    /// Records "terrain water shadow" over the terrain in the frame's targets (drawn or restored): the
    /// sun's light under the water attenuated by the light of `receiver` (bind group 2 of
    /// [`super::water_shadow::receiver_layout`], [`super::WaterShadowPass::receiver`]).
    pub fn encode_water_shadow(&mut self, frame: &mut Frame<'_>, receiver: &wgpu::BindGroup) {
        let (nx, nz) = (self.uniform_data.nx, self.uniform_data.nz);
        let Some((_, sky)) = self.sky_group.as_ref().filter(|_| nx >= 2 && nz >= 2) else { return };
        let mut pass = frame.target_pass("terrain water shadow", false);
        pass.set_pipeline(&self.water_pipeline);
        pass.set_bind_group(1, &self.data.bind_group, &[]);
        pass.set_bind_group(2, receiver, &[]);
        pass.set_bind_group(3, sky, &[]);
        pass.draw(0..2 * nx, 0..nz - 1);
    }

    /// Records the sky-visibility bake ("terrain ao pyramid", "terrain ao") when the terrain changed since
    /// the last one; nothing otherwise.
    fn update_ao(&mut self, frame: &mut Frame<'_>) {
        if self.ao_valid {
            return;
        }
        let limits = frame.device.limits();
        if let Err(e) = self.ao.encode(frame.encoder, frame.profiler, &limits, &self.data.ao) {
            log::error!("{e}: the terrain's sky light is not occluded");
        }
        self.ao_valid = true;
    }

    /// Records "terrain shadow" when the sun (unit vector toward it) or the terrain changed since the last
    /// time; nothing otherwise.
    fn update_shadow(&mut self, frame: &mut Frame<'_>, sun: glam::Vec3) {
        let sun = sun.to_array();
        let (nx, nz) = (self.uniform_data.nx, self.uniform_data.nz);
        if (self.shadow_valid && self.uniform_data.sun_dir == sun) || nx == 0 || nz == 0 {
            return;
        }
        self.uniform_data.sun_dir = sun;
        frame.queue.write_buffer(&self.data.uniform, 0, bytemuck::bytes_of(&self.uniform_data));
        // At most 4096 x 4096 samples (scene::MAX_HEIGHTMAP_SIZE): 512 x 512 workgroups, never refused.
        match gpu::workgroups_grid("terrain shadow", [nx, nz, 1], [8, 8, 1], &frame.device.limits()) {
            Ok(groups) => {
                let mut pass = frame.compute_pass("terrain shadow");
                pass.set_pipeline(&self.shadow_pipeline);
                pass.set_bind_group(1, &self.data.shadow_bind_group, &[]);
                gpu::dispatch(&mut pass, groups);
            }
            Err(e) => log::error!("{e}: the terrain casts no shadow"),
        }
        self.shadow_valid = true;
    }

    /// Records the bounce-light bake ("terrain bounce emit", "terrain bounce gather", [`BOUNCES`] times)
    /// when `input.bounce` and the sun, its intensity or the terrain changed since the last one, after
    /// the sky visibility and the sun's shadow are current; sets the terrain uniform's switch to `bounce`.
    fn update_bounce(&mut self, frame: &mut Frame<'_>, input: TerrainInput) {
        let on = input.bounce as u32;
        if self.uniform_data.bounce != on {
            self.uniform_data.bounce = on;
            frame.queue.write_buffer(&self.data.uniform, 0, bytemuck::bytes_of(&self.uniform_data));
        }
        let key = (input.sun.to_array(), input.sun_intensity);
        if !input.bounce || self.bounce_baked == Some(key) {
            return;
        }
        if let Err(e) = self.bounce.encode(frame, &self.data.bounce, BOUNCES) {
            log::error!("{e}: no light bounces off the terrain");
        }
        self.bounce_baked = Some(key);
    }
}

impl Pass for TerrainPass {
    type Input<'a> = TerrainInput;

    /// "terrain shadow" when due, then "terrain": clears the frame's colour and depth and draws `nz - 1`
    /// strips of `2 nx` vertices (when `draw`).
    fn encode(&mut self, frame: &mut Frame<'_>, input: TerrainInput) {
        let (nx, nz) = (self.uniform_data.nx, self.uniform_data.nz);
        let draw = input.draw && nx >= 2 && nz >= 2 && self.sky_group.is_some();
        if draw {
            self.update_shadow(frame, input.sun);
            self.update_ao(frame);
            self.update_bounce(frame, input);
        }
        let mut pass = frame.target_pass("terrain", true);
        if let Some((_, sky)) = self.sky_group.as_ref().filter(|_| draw) {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(1, &self.data.bind_group, &[]);
            pass.set_bind_group(3, sky, &[]);
            pass.draw(0..2 * nx, 0..nz - 1);
        }
    }
}

fn upload(
    ctx: &GpuContext,
    (layout, shadow_layout): (&wgpu::BindGroupLayout, &wgpu::BindGroupLayout),
    (ao, bounce): (&TerrainAo, &TerrainBounce),
    hf: &Heightfield,
    uniform_data: &TerrainUniform,
) -> TerrainData {
    debug_assert_eq!(hf.heights.len(), (hf.nx * hf.nz) as usize, "heightfield holds nx * nz heights");
    let device = &ctx.device;
    let uniform = crate::gpu::uniform_buffer_init(device, "terrain uniform", bytemuck::bytes_of(uniform_data));
    let heights = crate::gpu::storage_buffer_init(device, "terrain heights", bytemuck::cast_slice(&hf.heights));
    let shadow = crate::gpu::storage_buffer(device, "terrain shadow", (hf.heights.len().max(1) * 4) as u64);
    let ao = ao.data(device, hf, &uniform, &heights, AoMethod::Pyramid);
    let dims = (hf.nx, hf.nz, uniform_data.bounce_stride);
    let bounce = bounce.data(device, dims, (&uniform, &heights), &ao, &shadow);
    let wetness = crate::gpu::storage_buffer(device, "terrain wetness", (hf.heights.len().max(1) * 4) as u64);
    let bind_group = crate::gpu::bind_buffers(
        device,
        "terrain bind group",
        layout,
        &[&uniform, &heights, &shadow, &ao.ao, &wetness, &bounce.bounce],
    );
    let shadow_bind_group =
        crate::gpu::bind_buffers(device, "terrain shadow bind group", shadow_layout, &[&uniform, &heights, &shadow]);
    TerrainData { uniform, heights, _shadow: shadow, ao, bounce, wetness, bind_group, shadow_bind_group }
}
