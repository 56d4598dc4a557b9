//! "sort-last depth" and "sort-last thickness" (`shaders/render/sort_last.wgsl`): the display device's
//! compositing of a decomposed simulation's fluid (src/cluster), after Molnar, Cox, Ellsworth & Fuchs 1994
//! ("A sorting classification of parallel rendering", sort-last). Every rank computes the anisotropy of its
//! particles with its ghosts as neighbours, culls the ghosts ([`super::ghosts`]) and splats its own
//! particles into its own depth and thickness targets at the frame's size; the other ranks' targets come
//! to the display as bytes ([`super::layers::FluidLayers`]). This pass copies the display's own targets
//! into layer 0 of two texture arrays, writes the received ones into layers 1.. (`Queue::write_texture`),
//! and draws per pixel the nearest depth (minimum positive linear view depth; the raw depth target holds
//! metres, 0 = no fluid, not the reversed-Z depth buffer) and the summed thickness back into the targets
//! the fluid tiles, the depth filter and the composite read; the rest of the frame runs once. With no
//! received layers (one GPU) nothing is recorded and nothing is allocated.

use super::frame::{self, RAW_DEPTH_FORMAT, THICKNESS_FORMAT};
use super::layers::{padded_row, FluidLayers, DEPTH_TEXEL, THICKNESS_TEXEL};
use super::pass::{render_pass, Frame, Pass, Targets};
use crate::gpu::GpuContext;

/// What the pass uses of the fluid targets (from the last [`Pass::resize`]).
struct Screen {
    raw_depth: wgpu::Texture,
    raw_depth_view: wgpu::TextureView,
    thickness: wgpu::Texture,
    thickness_view: wgpu::TextureView,
    size: (u32, u32),
    thickness_size: (u32, u32),
}

/// The layer arrays for `count` ranks at the screen's sizes and the bind group over them.
struct Layers {
    count: u32,
    depth: wgpu::Texture,
    thickness: wgpu::Texture,
    group: wgpu::BindGroup,
}

/// What the sort-last pass reads per frame: the other ranks' layers (one entry per rank > 0; empty
/// entries, ranks that drew no fluid, are left out).
#[derive(Clone, Copy)]
pub struct SortLastInput<'a> {
    pub received: &'a [FluidLayers],
}

/// The sort-last compositing pass: two full-screen pipelines (screen-independent), the fluid targets it
/// writes and the layer arrays (made for the rank count on the first frame that has layers).
pub struct SortLastPass {
    layout: wgpu::BindGroupLayout,
    depth: wgpu::RenderPipeline,
    thickness: wgpu::RenderPipeline,
    screen: Option<Screen>,
    layers: Option<Layers>,
}

impl SortLastPass {
    /// Builds the pipelines.
    pub fn new(ctx: &GpuContext, _color_format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let array = |binding| {
            frame::texture_entry(binding, wgpu::ShaderStages::FRAGMENT, false, wgpu::TextureViewDimension::D2Array)
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("sort-last bind group layout"),
            entries: &[array(0), array(1)],
        });
        let pl = frame::pass_pipeline_layout(device, "sort-last pipeline layout", &layout);
        let module = crate::gpu::shader::module(device, "render/sort_last.wgsl");
        let pipeline = |label: &str, fs: &str, format: wgpu::TextureFormat| {
            frame::render_pipeline(
                device,
                label,
                &pl,
                &module,
                ("vs_fullscreen", fs),
                wgpu::PrimitiveState::default(),
                format.into(),
                None,
                &[],
            )
        };
        Self {
            depth: pipeline("sort-last depth pipeline", "fs_depth", RAW_DEPTH_FORMAT),
            thickness: pipeline("sort-last thickness pipeline", "fs_thickness", THICKNESS_FORMAT),
            layout,
            screen: None,
            layers: None,
        }
    }

    /// The layer arrays for `count` layers, made when the count or the screen changed.
    fn layers(&mut self, device: &wgpu::Device, count: u32) -> Option<&Layers> {
        let screen = self.screen.as_ref()?;
        if self.layers.as_ref().is_none_or(|l| l.count != count) {
            let array = |label: &str, (w, h): (u32, u32), format| {
                device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size: wgpu::Extent3d { width: w, height: h, depth_or_array_layers: count },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                    view_formats: &[],
                })
            };
            let depth = array("sort-last depth layers", screen.size, RAW_DEPTH_FORMAT);
            let thickness = array("sort-last thickness layers", screen.thickness_size, THICKNESS_FORMAT);
            let view = |t: &wgpu::Texture| {
                t.create_view(&wgpu::TextureViewDescriptor {
                    label: Some("sort-last layers"),
                    dimension: Some(wgpu::TextureViewDimension::D2Array),
                    ..Default::default()
                })
            };
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("sort-last bind group"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::TextureView(&view(&depth)) },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::TextureView(&view(&thickness)),
                    },
                ],
            });
            self.layers = Some(Layers { count, depth, thickness, group });
        }
        self.layers.as_ref()
    }
}

/// Copies `texture` (`size`) into `layer` of `array`.
fn copy_into_layer(encoder: &mut wgpu::CommandEncoder, texture: &wgpu::Texture, array: &wgpu::Texture, layer: u32) {
    encoder.copy_texture_to_texture(
        texture.as_image_copy(),
        wgpu::TexelCopyTextureInfo {
            texture: array,
            mip_level: 0,
            origin: wgpu::Origin3d { x: 0, y: 0, z: layer },
            aspect: wgpu::TextureAspect::All,
        },
        texture.size(),
    );
}

/// Writes `bytes` (rows of [`padded_row`]`(size.0, texel)` bytes) into `layer` of `array`.
fn write_layer(queue: &wgpu::Queue, array: &wgpu::Texture, layer: u32, bytes: &[u8], size: (u32, u32), texel: u32) {
    queue.write_texture(
        wgpu::TexelCopyTextureInfo {
            texture: array,
            mip_level: 0,
            origin: wgpu::Origin3d { x: 0, y: 0, z: layer },
            aspect: wgpu::TextureAspect::All,
        },
        bytes,
        wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(padded_row(size.0, texel)), rows_per_image: None },
        wgpu::Extent3d { width: size.0, height: size.1, depth_or_array_layers: 1 },
    );
}

impl Pass for SortLastPass {
    type Input<'a> = SortLastInput<'a>;

    fn resize(&mut self, _device: &wgpu::Device, targets: Option<Targets<'_>>) {
        self.layers = None;
        self.screen = targets.map(|t| Screen {
            raw_depth: t.fluid.raw_depth.clone(),
            raw_depth_view: t.fluid.raw_depth_view.clone(),
            thickness: t.fluid.thickness.clone(),
            thickness_view: t.fluid.thickness_view.clone(),
            size: t.fluid.size,
            thickness_size: t.fluid.thickness_size,
        });
    }

    /// Records "sort-last depth" and "sort-last thickness" over the display's own splats and
    /// `input.received`. Nothing when there is nothing received (one GPU). Received layers of another size
    /// than the frame's targets are left out, with an error in the log (the ranks render one frame size).
    fn encode(&mut self, frame: &mut Frame<'_>, input: SortLastInput<'_>) {
        let Some((size, tsize)) = self.screen.as_ref().map(|s| (s.size, s.thickness_size)) else {
            if !input.received.is_empty() {
                log::error!("sort-last: encode before resize");
            }
            return;
        };
        let fits = |l: &&FluidLayers| {
            let ok = l.size == size
                && l.thickness_size == tsize
                && l.depth.len() == padded_row(size.0, DEPTH_TEXEL) as usize * size.1 as usize
                && l.thickness.len() == padded_row(tsize.0, THICKNESS_TEXEL) as usize * tsize.1 as usize;
            if !ok && !l.is_empty() {
                log::error!("sort-last: a rank's layers are {:?}, the frame {:?}: left out", l.size, size);
            }
            ok
        };
        let received: Vec<&FluidLayers> = input.received.iter().filter(fits).collect();
        if received.is_empty() {
            return;
        }
        let device = frame.device;
        if self.layers(device, 1 + received.len() as u32).is_none() {
            return;
        }
        let (Some(screen), Some(layers)) = (self.screen.as_ref(), self.layers.as_ref()) else { return };
        copy_into_layer(frame.encoder, &screen.raw_depth, &layers.depth, 0);
        copy_into_layer(frame.encoder, &screen.thickness, &layers.thickness, 0);
        for (k, l) in received.iter().enumerate() {
            write_layer(frame.queue, &layers.depth, 1 + k as u32, &l.depth, size, DEPTH_TEXEL);
            write_layer(frame.queue, &layers.thickness, 1 + k as u32, &l.thickness, tsize, THICKNESS_TEXEL);
        }
        let clear = wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT);
        let outputs = [
            ("sort-last depth", &screen.raw_depth_view, &self.depth),
            ("sort-last thickness", &screen.thickness_view, &self.thickness),
        ];
        for (label, view, pipeline) in outputs {
            let mut pass = render_pass(frame.profiler, frame.encoder, label, view, clear, None);
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, frame.frame_bind_group, &[]);
            pass.set_bind_group(1, &layers.group, &[]);
            pass.draw(0..3, 0..1);
        }
    }
}
