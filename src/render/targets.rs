//! Render targets that are not the window's surface: an off-screen colour + depth pair (headless runs,
//! tests, captures) and a blocking texture read-back for headless use. Screen-sized targets are rebuilt
//! by `resize`; nothing here depends on the scene.

use super::camera::DEPTH_FORMAT;
use crate::gpu::GpuContext;

/// Colour format of [`Offscreen::new`]: 8-bit sRGB, so shaders write linear values.
pub const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;

/// An off-screen colour texture (`RENDER_ATTACHMENT | COPY_SRC | TEXTURE_BINDING`) and a matching
/// `Depth32Float` depth texture, both `size` pixels.
pub struct Offscreen {
    pub color: wgpu::Texture,
    pub color_view: wgpu::TextureView,
    pub depth: wgpu::Texture,
    pub depth_view: wgpu::TextureView,
    /// (width, height) in pixels.
    pub size: (u32, u32),
    format: wgpu::TextureFormat,
}

impl Offscreen {
    /// An `Rgba8UnormSrgb` colour target and a depth target of `size` pixels (each at least 1).
    pub fn new(ctx: &GpuContext, size: (u32, u32)) -> Self {
        Self::with_format(ctx, size, OFFSCREEN_FORMAT)
    }

    /// As [`Offscreen::new`] with another colour format (e.g. the window surface's, for captures).
    pub fn with_format(ctx: &GpuContext, size: (u32, u32), format: wgpu::TextureFormat) -> Self {
        let size = (size.0.max(1), size.1.max(1));
        let (color, color_view) = texture(
            ctx,
            "offscreen colour",
            size,
            format,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::TEXTURE_BINDING,
        );
        let (depth, depth_view) = texture(
            ctx,
            "offscreen depth",
            size,
            DEPTH_FORMAT,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
        );
        Self { color, color_view, depth, depth_view, size, format }
    }

    /// Colour format of the colour texture.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    /// Recreates both textures at `size` pixels; does nothing when the size is unchanged.
    pub fn resize(&mut self, ctx: &GpuContext, size: (u32, u32)) {
        if (size.0.max(1), size.1.max(1)) != self.size {
            *self = Self::with_format(ctx, size, self.format);
        }
    }
}

fn texture(
    ctx: &GpuContext,
    label: &str,
    size: (u32, u32),
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> (wgpu::Texture, wgpu::TextureView) {
    let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d { width: size.0, height: size.1, depth_or_array_layers: 1 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats: &[],
    });
    let view = texture.create_view(&wgpu::TextureViewDescriptor { label: Some(label), ..Default::default() });
    (texture, view)
}

/// Copies a 2-D colour texture (`Rgba8Unorm[Srgb]` or `Bgra8Unorm[Srgb]`, usage `COPY_SRC`) into an RGBA image,
/// stored bytes as they are (sRGB-encoded for the sRGB formats), BGRA swizzled to RGBA.
///
/// **Blocking**: submits the copy and waits for the GPU. For headless runs and tests only; the
/// interactive app must read back through [`crate::gpu::readback::ReadbackRing`] instead.
///
/// Panics on any other texture format (a programming error, not user input).
pub fn read_texture_rgba(ctx: &GpuContext, texture: &wgpu::Texture) -> image::RgbaImage {
    use wgpu::TextureFormat as F;
    let format = texture.format();
    let bgra = match format {
        F::Rgba8Unorm | F::Rgba8UnormSrgb => false,
        F::Bgra8Unorm | F::Bgra8UnormSrgb => true,
        other => panic!("read_texture_rgba: unsupported texture format {other:?}"),
    };
    let (width, height) = (texture.width(), texture.height());
    let row_bytes = width * 4;
    let padded = row_bytes.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("texture read-back"),
        size: padded as u64 * height as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texture read-back") });
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(padded), rows_per_image: Some(height) },
        },
        wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
    );
    ctx.queue.submit([encoder.finish()]);
    buffer.map_async(wgpu::MapMode::Read, .., |r| {
        if let Err(e) = r {
            log::error!("texture read-back failed to map: {e}");
        }
    });
    if let Err(e) = ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }) {
        log::error!("texture read-back: device poll failed: {e}");
    }
    let mut pixels = Vec::with_capacity((row_bytes * height) as usize);
    match buffer.get_mapped_range(..) {
        Ok(data) => {
            for row in data.chunks_exact(padded as usize) {
                pixels.extend_from_slice(&row[..row_bytes as usize]);
            }
        }
        Err(e) => {
            log::error!("texture read-back: buffer not mapped: {e}");
            pixels.resize((row_bytes * height) as usize, 0);
        }
    }
    buffer.unmap();
    if bgra {
        for px in pixels.chunks_exact_mut(4) {
            px.swap(0, 2);
        }
    }
    image::RgbaImage::from_raw(width, height, pixels).expect("buffer holds width * height * 4 bytes")
}
