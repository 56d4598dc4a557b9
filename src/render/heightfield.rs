//! The terrain's heightfield as the render passes read it (`shaders/render/heightfield.wgsl`): the grid
//! uniform ([`TerrainUniform`], bind group 1 binding 0 beside the f32 heights) that the terrain, its bakes
//! (sky visibility, wetness) and the obstacles standing on it share, and the layout of the sky cubemap
//! their distance fog fades toward. It imports no pass, only the bind-group helpers of [`super::frame`].

use super::frame;
use crate::terrain::Heightfield;

/// Steps of the shadow ray march toward the sun per height sample.
const SHADOW_STEPS: u32 = 40;

/// Grid description and shading constants of the terrain, bind group 1 binding 0.
/// WGSL twin: `Terrain` in `shaders/render/heightfield.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TerrainUniform {
    /// World (x, z) of sample (0, 0), metres.
    pub origin: [f32; 2],
    /// Sample spacing along (x, z), metres.
    pub spacing: [f32; 2],
    /// Samples along x and z.
    pub nx: u32,
    pub nz: u32,
    /// Lowest and highest height, metres.
    pub h_min: f32,
    pub h_max: f32,
    /// Fog extinction, 1/m.
    pub fog_density: f32,
    /// Shadow ray-march steps.
    pub shadow_steps: u32,
    /// Radiance multiplier of the sky cubemap the fog fades toward ([`super::SkyPass::exposure`]).
    pub sky_exposure: f32,
    /// 1: the ground is lit by the light bounced off the terrain around ([`super::terrain_bounce`]); 0: a
    /// constant fifth of its sky light where the sky is hidden.
    pub bounce: u32,
    /// Unit vector toward the sun the shadows are computed for.
    pub sun_dir: [f32; 3],
    /// Height samples per texel of the bounce light's grid along each axis
    /// ([`bounce_stride`]), at least 1.
    pub bounce_stride: u32,
}
const _: () = assert!(size_of::<TerrainUniform>() == 64);

impl TerrainUniform {
    /// Grid and shading constants for `hf`; fog thins with the terrain's size (about 6% at one
    /// terrain extent away).
    pub fn from_heightfield(hf: &Heightfield) -> Self {
        let spacing = hf.spacing();
        let (h_min, h_max) = hf.range();
        let size = hf.extent.x.max(hf.extent.y).max(h_max - h_min).max(1e-3);
        Self {
            origin: hf.origin.to_array(),
            spacing: spacing.to_array(),
            nx: hf.nx,
            nz: hf.nz,
            h_min,
            h_max,
            fog_density: 0.06 / size,
            shadow_steps: SHADOW_STEPS,
            sky_exposure: 1.0,
            bounce: 0,
            sun_dir: [0.0, 1.0, 0.0],
            bounce_stride: bounce_stride(hf.nx, hf.nz, MAX_BOUNCE_SIDE),
        }
    }
}

/// Most texels a side of the bounce-light bake's grid ([`super::terrain_bounce`]): a larger heightfield is
/// baked on every `stride`-th sample (the bounced light varies slowly), so a sun change costs at most what
/// a 512 x 512 bake does. Measured on an
/// H200: 42.6 ms for 1024 x 1024 samples, so about 11 ms at 512 x 512 and, per sample, about 0.7 s for a
/// 4096 x 4096 heightmap, a dispatch long enough to risk a desktop driver's timeout on a smaller GPU.
pub const MAX_BOUNCE_SIDE: u32 = 512;

/// Height samples per texel of the bake's grid along each axis for an `nx` x `nz`-sample heightfield with
/// at most `max_side` texels a side (at least 2): 1 up to `max_side` samples a side.
pub fn bounce_stride(nx: u32, nz: u32, max_side: u32) -> u32 {
    (nx.max(nz).max(2) - 1).div_ceil(max_side.max(2) - 1).max(1)
}

/// Texels of the bake's grid along x and z: every `stride`-th sample and the last (`bounce_dims` in
/// shaders/render/heightfield.wgsl).
pub fn bounce_dims(nx: u32, nz: u32, stride: u32) -> (u32, u32) {
    let s = stride.max(1);
    ((nx.max(1) - 1).div_ceil(s) + 1, (nz.max(1) - 1).div_ceil(s) + 1)
}

/// A heightfield's buffers as the things standing on it read them (bind group 1 bindings 0 and 1, as
/// `shaders/render/heightfield.wgsl` declares them): the grid uniform ([`TerrainUniform`]) and the heights
/// (f32, metres).
pub type HeightfieldBuffers<'a> = (&'a wgpu::Buffer, &'a wgpu::Buffer);

/// What the things standing on the terrain read of it: its [`HeightfieldBuffers`] and the radiosity of its
/// bounce-light grid ([`super::terrain_bounce::BounceData::radiosity`]: the light the ground sends up).
pub type GroundBuffers<'a> = (HeightfieldBuffers<'a>, &'a wgpu::Buffer);

/// Layout of bind group 3 of the terrain's pipelines (and the obstacles'): the sky cubemap the distance
/// fog fades toward and its filtering sampler (`shaders/render/surface_light.wgsl`).
pub fn sky_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    let fs = wgpu::ShaderStages::FRAGMENT;
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("terrain sky bind group layout"),
        entries: &[frame::texture_entry(0, fs, true, wgpu::TextureViewDimension::Cube), frame::sampler_entry(1, fs)],
    })
}
