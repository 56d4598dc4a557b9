//! Sky (`shaders/render/sky.wgsl`): a cubemap used as the background and for the water's reflections.
//!
//! By default the cubemap is generated on the GPU ("sky" compute pass) from the sun direction with a
//! scattering atmosphere ([`SkyModel::Atmosphere`]: Rayleigh and Mie scattering with ozone absorption in a
//! spherical atmosphere, single scattering after Nishita et al. 1993 with Bruneton's 2017 Earth parameters, and the
//! higher orders from a small table first filled by the "sky multiple scattering" pass after Hillaire 2020), or
//! with the Preetham, Shirley & Smits daylight model (SIGGRAPH 1999, [`SkyModel::Preetham`]), and regenerated only
//! when the model, the sun, its intensity or the turbidity change. On lavapipe (two shared cores) the atmosphere's
//! table and 128² x 6 texels (32 view samples, 8 toward the sun each) take 250 to 630 ms, Preetham's 10 ms. A
//! user's sky replaces it: an equirectangular image or six face images, decoded on the CPU into a [`SkyCube`]
//! ([`super::sky_image`]; the window does that on a worker thread) and uploaded by [`SkyPass::set_cube`];
//! [`SkyPass::load`] does both at once for headless use. A file that cannot be used gives a [`SkyError`] naming the
//! file and the problem, and the current sky stays. The "sky" render pass is one full-screen triangle at the far
//! plane, tested against the terrain's depth and writing none.

use super::frame;
use super::pass::{Frame, Pass};
use super::sky_image::{load_sky, SkyCube, SkyError};
use crate::gpu::{self, GpuContext};
use glam::Vec3;
use std::path::{Path, PathBuf};

/// Cube face edge of the generated sky, texels.
const GENERATED_FACE: u32 = 128;
/// Edge of the atmosphere's multiple-scattering table (sun zenith cosines x heights); `MS_SIZE` in
/// `shaders/render/sky.wgsl`.
pub const MS_TABLE_SIZE: u32 = 32;
/// Workgroup size of the table's pass (`multiscatter` in `shaders/render/sky.wgsl`), one entry per invocation.
pub const MS_WG: u32 = 64;
const CUBE_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;

/// Sky parameters, bind group 1 binding 0 of both the generator and the background pass.
/// WGSL twin: `SkyGen` in `shaders/render/sky.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SkyGenUniform {
    /// Unit vector toward the sun.
    pub sun_dir: [f32; 3],
    /// Sun radiance scale (1 = nominal daylight).
    pub sun_intensity: f32,
    /// Atmospheric turbidity (2 = very clear, 10 = hazy).
    pub turbidity: f32,
    /// Cube face edge, texels.
    pub face_size: u32,
    /// Multiplier of the cubemap's radiance when drawn and reflected.
    pub exposure: f32,
    /// 1: draw the analytic sun disc (generated skies).
    pub sun_disc: f32,
    /// [`SkyModel::code`] of the generated sky.
    pub model: u32,
    pub _pad: [u32; 3],
}
const _: () = assert!(size_of::<SkyGenUniform>() == 48);

/// The model the generated sky comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SkyModel {
    /// Single and multiple scattering in a spherical atmosphere (Rayleigh, Mie, ozone;
    /// `shaders/render/sky.wgsl`): a blue zenith, a pale horizon haze and orange-red light near a low sun.
    #[default]
    Atmosphere,
    /// The Preetham, Shirley & Smits daylight model (SIGGRAPH 1999), the earlier default.
    Preetham,
}

impl SkyModel {
    /// Every model, in UI order.
    pub const ALL: [SkyModel; 2] = [SkyModel::Atmosphere, SkyModel::Preetham];

    /// Name for menus.
    pub fn name(self) -> &'static str {
        match self {
            SkyModel::Atmosphere => "atmosphere",
            SkyModel::Preetham => "Preetham",
        }
    }

    /// The shader's code (`SkyGen.model` in `shaders/render/sky.wgsl`).
    pub fn code(self) -> u32 {
        match self {
            SkyModel::Atmosphere => 0,
            SkyModel::Preetham => 1,
        }
    }
}

/// Where the cubemap came from.
#[derive(Clone, Debug, PartialEq)]
pub enum SkySource {
    /// Generated for (sun direction, intensity, turbidity, model); `None` until first generated.
    Generated(Option<([f32; 3], f32, f32, SkyModel)>),
    /// Loaded from these files.
    Loaded(Vec<PathBuf>),
}

/// The sky: cubemap, its generator and the background pipeline.
pub struct SkyPass {
    pipeline: wgpu::RenderPipeline,
    generator: wgpu::ComputePipeline,
    multiscatter: wgpu::ComputePipeline,
    /// The multiple-scattering table: `MS_TABLE_SIZE`² `vec4<f32>`.
    ms_table: wgpu::Buffer,
    layout: wgpu::BindGroupLayout,
    gen_layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    sampler: wgpu::Sampler,
    cube: wgpu::Texture,
    cube_view: wgpu::TextureView,
    bind_group: wgpu::BindGroup,
    gen_group: wgpu::BindGroup,
    source: SkySource,
    params: SkyGenUniform,
    /// Counts the cubemaps made (a new texture on every load), so passes that bind it know when to rebind.
    version: u64,
}

/// What the sky pass needs per frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SkyInput {
    /// Unit vector toward the sun.
    pub sun: Vec3,
    /// Sun radiance scale (1 = nominal daylight).
    pub intensity: f32,
    /// Atmospheric turbidity of the generated sky (2 clear .. 10 hazy).
    pub turbidity: f32,
    /// Radiance multiplier of a loaded sky.
    pub exposure: f32,
    /// The generated sky's model.
    pub model: SkyModel,
    /// Draw the sky into the frame where nothing else was drawn (false: only keep the cubemap current,
    /// e.g. while the background comes from its cache).
    pub draw: bool,
}

impl SkyPass {
    /// Builds the pipelines for colour targets of `color_format`; the cubemap is generated on the first
    /// [`Pass::encode`].
    pub fn new(ctx: &GpuContext, color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let module = gpu::shader::module(device, "render/sky.wgsl");
        let vf = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("sky bind group layout"),
            entries: &[
                gpu::uniform_entry::<SkyGenUniform>(0, vf),
                frame::texture_entry(1, wgpu::ShaderStages::FRAGMENT, true, wgpu::TextureViewDimension::Cube),
                frame::sampler_entry(2, wgpu::ShaderStages::FRAGMENT),
            ],
        });
        let gen_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("sky generator bind group layout"),
            entries: &[
                gpu::uniform_entry::<SkyGenUniform>(0, wgpu::ShaderStages::COMPUTE),
                wgpu::BindGroupLayoutEntry {
                    binding: 3,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::StorageTexture {
                        access: wgpu::StorageTextureAccess::WriteOnly,
                        format: CUBE_FORMAT,
                        view_dimension: wgpu::TextureViewDimension::D2Array,
                    },
                    count: None,
                },
                gpu::storage_entry::<[f32; 4]>(4, false, wgpu::ShaderStages::COMPUTE),
            ],
        });
        let draw_layout = frame::pass_pipeline_layout(device, "sky pipeline layout", &layout);
        let gen_pl = frame::pass_pipeline_layout(device, "sky generator pipeline layout", &gen_layout);
        // Drawn after the opaque geometry at the far plane (depth DEPTH_CLEAR = 0, reversed Z): only pixels
        // nothing covered pass, so the early depth test skips the sky's shading under the terrain.
        let depth = frame::depth_state(wgpu::CompareFunction::GreaterEqual, false);
        let constants = frame::output_constants(color_format);
        let pipeline = frame::render_pipeline(
            device,
            "sky pipeline",
            &draw_layout,
            &module,
            ("vs_main", "fs_main"),
            wgpu::PrimitiveState::default(),
            color_format.into(),
            Some(depth),
            &constants,
        );
        let generator = gpu::compute_pipeline(device, &module, &gen_pl, "generate");
        let multiscatter = gpu::compute_pipeline(device, &module, &gen_pl, "multiscatter");
        let ms_table = gpu::storage_buffer(device, "sky multiple scattering table", 16 * (MS_TABLE_SIZE as u64).pow(2));
        let params = SkyGenUniform {
            sun_dir: [0.0, 1.0, 0.0],
            sun_intensity: 1.0,
            turbidity: 3.0,
            face_size: GENERATED_FACE,
            exposure: 1.0,
            sun_disc: 1.0,
            model: SkyModel::default().code(),
            _pad: [0; 3],
        };
        let uniform = gpu::uniform_buffer_init(device, "sky uniform", bytemuck::bytes_of(&params));
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("sky sampler"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            ..Default::default()
        });
        let (cube, cube_view, bind_group, gen_group) =
            make_cube(device, &layout, &gen_layout, &uniform, &sampler, &ms_table, GENERATED_FACE);
        Self {
            pipeline,
            generator,
            multiscatter,
            ms_table,
            layout,
            gen_layout,
            uniform,
            sampler,
            cube,
            cube_view,
            bind_group,
            gen_group,
            source: SkySource::Generated(None),
            params,
            version: 0,
        }
    }

    /// The cubemap (`Rgba16Float`, linear radiance before [`SkyPass::exposure`]), as a cube view.
    pub fn cube_view(&self) -> &wgpu::TextureView {
        &self.cube_view
    }

    /// A linear, filtering sampler for the cubemap.
    pub fn sampler(&self) -> &wgpu::Sampler {
        &self.sampler
    }

    /// Radiance multiplier of the cubemap.
    pub fn exposure(&self) -> f32 {
        self.params.exposure
    }

    /// Changes whenever the cubemap texture is replaced (a sky loaded, or back to the generated one):
    /// bind groups over [`SkyPass::cube_view`] are rebuilt when it moves.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Where the current cubemap came from.
    pub fn source(&self) -> &SkySource {
        &self.source
    }

    /// Goes back to the generated sky (made on the next update).
    pub fn use_generated(&mut self, ctx: &GpuContext) {
        if !matches!(self.source, SkySource::Generated(_)) {
            self.replace_cube(ctx, GENERATED_FACE);
            self.source = SkySource::Generated(None);
        }
    }

    /// Uploads a sky decoded on the CPU ([`super::sky_image`]) as the cubemap; its files become the
    /// [`SkySource`].
    pub fn set_cube(&mut self, ctx: &GpuContext, cube: &SkyCube) {
        self.upload(ctx, cube.face, &cube.texels);
        self.source = SkySource::Loaded(cube.sources.clone());
    }

    /// Reads and decodes the sky at `path` ([`load_sky`]: an equirectangular image or a folder of six
    /// faces) and uploads it. **Blocking** (the decoding can take seconds): for headless runs and tests;
    /// the window decodes on a worker thread and calls [`SkyPass::set_cube`]. On error the current sky
    /// stays.
    pub fn load(&mut self, ctx: &GpuContext, path: &Path) -> Result<(), SkyError> {
        let cube = load_sky(path)?;
        self.set_cube(ctx, &cube);
        Ok(())
    }

    /// Reads the cubemap's six faces back (+x, -x, +y, -y, +z, -z; linear radiance before
    /// [`SkyPass::exposure`]). **Blocking**: for tests and tools.
    pub fn read_faces_blocking(&self, ctx: &GpuContext) -> SkyFaces {
        let n = self.cube.width();
        let row = n * 8;
        let padded = row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sky cubemap read-back"),
            size: padded as u64 * n as u64 * 6,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        encoder.copy_texture_to_buffer(
            self.cube.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &buffer,
                layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(padded), rows_per_image: Some(n) },
            },
            wgpu::Extent3d { width: n, height: n, depth_or_array_layers: 6 },
        );
        ctx.queue.submit([encoder.finish()]);
        buffer.map_async(wgpu::MapMode::Read, .., |r| {
            if let Err(e) = r {
                log::error!("sky read-back failed to map: {e}");
            }
        });
        if let Err(e) = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }) {
            log::error!("sky read-back: device poll failed: {e}");
        }
        let mut bytes = Vec::with_capacity((row * n * 6) as usize);
        match buffer.get_mapped_range(..) {
            Ok(data) => data.chunks_exact(padded as usize).for_each(|r| bytes.extend_from_slice(&r[..row as usize])),
            Err(e) => {
                log::error!("sky read-back: buffer not mapped: {e}");
                bytes.resize((row * n * 6) as usize, 0);
            }
        }
        let mut texels = Vec::with_capacity(bytes.len() / 2);
        super::targets::texels_to_f32(&bytes, CUBE_FORMAT, &mut texels);
        SkyFaces { face: n, texels }
    }

    fn replace_cube(&mut self, ctx: &GpuContext, n: u32) {
        (self.cube, self.cube_view, self.bind_group, self.gen_group) =
            make_cube(&ctx.device, &self.layout, &self.gen_layout, &self.uniform, &self.sampler, &self.ms_table, n);
        self.version += 1;
        self.params.face_size = 0; // force a uniform write on the next update
    }

    fn upload(&mut self, ctx: &GpuContext, n: u32, texels: &[u16]) {
        self.replace_cube(ctx, n);
        ctx.queue.write_texture(
            self.cube.as_image_copy(),
            bytemuck::cast_slice(texels),
            wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(n * 8), rows_per_image: Some(n) },
            wgpu::Extent3d { width: n, height: n, depth_or_array_layers: 6 },
        );
    }
}

impl Pass for SkyPass {
    type Input<'a> = SkyInput;

    /// Writes this frame's sky parameters; for a generated sky whose sun, intensity or turbidity changed,
    /// records the "sky" compute pass that regenerates the cubemap (`exposure` scales a loaded sky); when
    /// `draw`, records "sky": the background triangle at the far plane over the frame's targets.
    fn encode(&mut self, frame: &mut Frame<'_>, input: SkyInput) {
        let key = (input.sun.to_array(), input.intensity, input.turbidity, input.model);
        let generated = matches!(self.source, SkySource::Generated(_));
        let params = SkyGenUniform {
            sun_dir: key.0,
            sun_intensity: input.intensity,
            turbidity: input.turbidity.clamp(1.7, 12.0),
            face_size: self.cube.width(),
            exposure: if generated { 1.0 } else { input.exposure.max(0.0) },
            sun_disc: if generated { 1.0 } else { 0.0 },
            model: input.model.code(),
            _pad: [0; 3],
        };
        if params != self.params {
            frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&params));
            self.params = params;
        }
        if generated && self.source != SkySource::Generated(Some(key)) {
            let n = self.cube.width();
            // A cube face is a texture the device made, so it never needs too many workgroups.
            if input.model == SkyModel::Atmosphere {
                // Its own pass before the cubemap's, which reads the table.
                let mut pass = frame.compute_pass("sky multiple scattering");
                pass.set_pipeline(&self.multiscatter);
                pass.set_bind_group(1, &self.gen_group, &[]);
                pass.dispatch_workgroups((MS_TABLE_SIZE * MS_TABLE_SIZE).div_ceil(MS_WG), 1, 1);
            }
            match gpu::workgroups_grid("sky", [n, n, 6], [8, 8, 1], &frame.device.limits()) {
                Ok(groups) => {
                    let mut pass = frame.compute_pass("sky");
                    pass.set_pipeline(&self.generator);
                    pass.set_bind_group(1, &self.gen_group, &[]);
                    gpu::dispatch(&mut pass, groups);
                }
                Err(e) => log::error!("{e}: the sky is not generated"),
            }
            self.source = SkySource::Generated(Some(key));
        }
        if input.draw {
            let mut pass = frame.target_pass("sky", false);
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(1, &self.bind_group, &[]);
            pass.draw(0..3, 0..1);
        }
    }
}

/// The six faces of a cubemap read back ([`SkyPass::read_faces_blocking`]): `face` x `face` texels each
/// in the order +x, -x, +y, -y, +z, -z (wgpu's), RGBA `f32` per texel, rows top to bottom.
pub struct SkyFaces {
    /// Texels along a face's edge.
    pub face: u32,
    /// `6 * face * face * 4` values.
    pub texels: Vec<f32>,
}

impl SkyFaces {
    /// The texel seen along the direction `dir` (any length but zero), RGB.
    pub fn along(&self, dir: Vec3) -> Vec3 {
        let a = dir.abs();
        let (face, u, v) = if a.x >= a.y && a.x >= a.z {
            if dir.x > 0.0 {
                (0, -dir.z / a.x, -dir.y / a.x)
            } else {
                (1, dir.z / a.x, -dir.y / a.x)
            }
        } else if a.y >= a.z {
            if dir.y > 0.0 {
                (2, dir.x / a.y, dir.z / a.y)
            } else {
                (3, dir.x / a.y, -dir.z / a.y)
            }
        } else if dir.z > 0.0 {
            (4, dir.x / a.z, -dir.y / a.z)
        } else {
            (5, -dir.x / a.z, -dir.y / a.z)
        };
        let n = self.face as usize;
        let texel = |c: f32| (((c + 1.0) * 0.5 * n as f32) as usize).min(n - 1);
        let i = 4 * ((face * n + texel(v)) * n + texel(u));
        Vec3::new(self.texels[i], self.texels[i + 1], self.texels[i + 2])
    }
}

fn make_cube(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    gen_layout: &wgpu::BindGroupLayout,
    uniform: &wgpu::Buffer,
    sampler: &wgpu::Sampler,
    ms_table: &wgpu::Buffer,
    n: u32,
) -> (wgpu::Texture, wgpu::TextureView, wgpu::BindGroup, wgpu::BindGroup) {
    let cube = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("sky cubemap"),
        size: wgpu::Extent3d { width: n, height: n, depth_or_array_layers: 6 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: CUBE_FORMAT,
        usage: wgpu::TextureUsages::TEXTURE_BINDING
            | wgpu::TextureUsages::STORAGE_BINDING
            | wgpu::TextureUsages::COPY_DST
            | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let view = |dim| {
        cube.create_view(&wgpu::TextureViewDescriptor {
            label: Some("sky cubemap"),
            dimension: Some(dim),
            ..Default::default()
        })
    };
    let cube_view = view(wgpu::TextureViewDimension::Cube);
    let array_view = view(wgpu::TextureViewDimension::D2Array);
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("sky bind group"),
        layout,
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&cube_view) },
            wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::Sampler(sampler) },
        ],
    });
    let gen_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("sky generator bind group"),
        layout: gen_layout,
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 3, resource: wgpu::BindingResource::TextureView(&array_view) },
            wgpu::BindGroupEntry { binding: 4, resource: ms_table.as_entire_binding() },
        ],
    });
    (cube, cube_view, bind_group, gen_group)
}
