//! Render targets that are not the window's surface: an off-screen colour + depth pair (headless runs,
//! tests, captures), the screen-space fluid renderer's intermediate targets ([`FluidTargets`]), and
//! blocking texture read-backs for headless use (8-bit RGBA, and float RGBA for HDR targets). Screen-sized targets are rebuilt by `resize`; nothing
//! here depends on the scene.

use super::frame::{DEPTH_FORMAT, FOAM_FORMAT, OFFSCREEN_FORMAT, RAW_DEPTH_FORMAT, THICKNESS_FORMAT};
use crate::gpu::GpuContext;

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
            wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::COPY_DST
                | wgpu::TextureUsages::TEXTURE_BINDING,
        );
        let (depth, depth_view) = texture(
            ctx,
            "offscreen depth",
            size,
            DEPTH_FORMAT,
            // Copies: the background cache (render/background.rs).
            wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::COPY_DST,
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

/// Edge of the square screen tiles of the curvature flow's empty-space skipping, pixels.
pub const TILE_SIZE: u32 = 16;

/// The screen-sized targets of the fluid renderer (all owned by [`super::Renderer`], rebuilt on resize):
/// the scene colour copied before the water (refraction background), the splats' private depth
/// attachment, raw depth, thickness, the two ping-pong depth textures of the curvature flow and the
/// tile buffers of its empty-space skipping, and the foam target of the diffuse particles.
pub struct FluidTargets {
    /// Full resolution, pixels.
    pub size: (u32, u32),
    /// Resolution of the thickness target, pixels (full or half).
    pub thickness_size: (u32, u32),
    /// Format of `background`: the scene colour target's own (8-bit or float), since the copy into it
    /// needs matching formats; the composite samples it with filtering.
    pub color_format: wgpu::TextureFormat,
    pub background: wgpu::Texture,
    pub background_view: wgpu::TextureView,
    /// `Depth32Float`, nearest splat wins (reversed-Z).
    pub splat_depth_view: wgpu::TextureView,
    /// `R32Float` linear view depth of the nearest splat, metres; 0 = no fluid.
    pub raw_depth: wgpu::Texture,
    pub raw_depth_view: wgpu::TextureView,
    /// `R16Float` summed path length through the splats, metres (at `thickness_size`).
    pub thickness: wgpu::Texture,
    pub thickness_view: wgpu::TextureView,
    /// The compute splats' per-pixel `u32`s (`array<atomic<u32>>`, row-major): nearest depth (complement
    /// of the float's bits, 0 = none) at full resolution, and thickness (fixed point) at its resolution.
    pub splat_depth_bits: wgpu::Buffer,
    pub splat_thickness_bits: wgpu::Buffer,
    /// Curvature-flow ping-pong targets (`R32Float`, storage + sampled), same meaning as `raw_depth`.
    pub smooth: [wgpu::Texture; 2],
    pub smooth_views: [wgpu::TextureView; 2],
    /// Tiles across and down.
    pub tiles: (u32, u32),
    /// Indices of the tiles holding fluid (dilated by the flow's stencil), `array<u32>`.
    pub tile_list: wgpu::Buffer,
    /// Number of entries in `tile_list` (one u32, then padding).
    pub tile_counter: wgpu::Buffer,
    /// Indirect dispatch arguments of the flow iterations and the tile count, `[x, y, 1, count]`: the
    /// listed tiles in rows of at most `gpu::max_groups_x()` workgroups.
    pub tile_args: wgpu::Buffer,
    /// 1 per tile holding fluid, else 0, `array<u32>` (for the tile-mask view).
    pub tile_mask: wgpu::Buffer,
    /// [`FOAM_FORMAT`] at the thickness target's resolution (half by default): the diffuse particles'
    /// splats ([`super::foam`]).
    pub foam: wgpu::Texture,
    pub foam_view: wgpu::TextureView,
}

impl FluidTargets {
    /// All targets for a `size`-pixel frame whose colour target has `color_format`; thickness at half
    /// resolution when `half_thickness`.
    pub fn new(ctx: &GpuContext, size: (u32, u32), color_format: wgpu::TextureFormat, half_thickness: bool) -> Self {
        use wgpu::TextureUsages as U;
        let size = (size.0.max(1), size.1.max(1));
        let thickness_size = if half_thickness { (size.0.div_ceil(2), size.1.div_ceil(2)) } else { size };
        let (background, background_view) =
            texture(ctx, "fluid background", size, color_format, U::COPY_DST | U::TEXTURE_BINDING);
        let (_, splat_depth_view) = texture(ctx, "splat depth attachment", size, DEPTH_FORMAT, U::RENDER_ATTACHMENT);
        let readable = U::RENDER_ATTACHMENT | U::TEXTURE_BINDING | U::COPY_SRC;
        let (raw_depth, raw_depth_view) =
            texture(ctx, "fluid raw depth", size, RAW_DEPTH_FORMAT, readable | U::COPY_DST);
        // Copies: sort-last compositing reads it back on a rank and writes it on the display (sort_last.rs).
        let (thickness, thickness_view) =
            texture(ctx, "fluid thickness", thickness_size, THICKNESS_FORMAT, readable | U::COPY_DST);
        let smooth_usage = U::STORAGE_BINDING | U::TEXTURE_BINDING | U::COPY_DST | U::COPY_SRC;
        let (s0, v0) = texture(ctx, "fluid smoothed depth 0", size, RAW_DEPTH_FORMAT, smooth_usage);
        let (s1, v1) = texture(ctx, "fluid smoothed depth 1", size, RAW_DEPTH_FORMAT, smooth_usage);
        let (foam, foam_view) = texture(ctx, "fluid foam", thickness_size, FOAM_FORMAT, readable);
        let tiles = (size.0.div_ceil(TILE_SIZE), size.1.div_ceil(TILE_SIZE));
        let n_tiles = (tiles.0 * tiles.1) as u64;
        let device = &ctx.device;
        let tile_args = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("fluid tile dispatch args"),
            size: 16,
            usage: wgpu::BufferUsages::INDIRECT | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Self {
            size,
            thickness_size,
            color_format,
            background,
            background_view,
            splat_depth_view,
            raw_depth,
            raw_depth_view,
            thickness,
            thickness_view,
            splat_depth_bits: crate::gpu::storage_buffer(device, "splat depth bits", size.0 as u64 * size.1 as u64 * 4),
            splat_thickness_bits: crate::gpu::storage_buffer(
                device,
                "splat thickness bits",
                thickness_size.0 as u64 * thickness_size.1 as u64 * 4,
            ),
            smooth: [s0, s1],
            smooth_views: [v0, v1],
            tiles,
            tile_list: crate::gpu::storage_buffer(device, "fluid tile list", n_tiles * 4),
            tile_counter: crate::gpu::storage_buffer(device, "fluid tile counter", 16),
            tile_args,
            tile_mask: crate::gpu::storage_buffer(device, "fluid tile mask", n_tiles * 4),
            foam,
            foam_view,
        }
    }

    /// Whether these targets fit a frame of `size` pixels, colour format and thickness resolution.
    pub fn matches(&self, size: (u32, u32), color_format: wgpu::TextureFormat, half_thickness: bool) -> bool {
        let size = (size.0.max(1), size.1.max(1));
        let thickness = if half_thickness { (size.0.div_ceil(2), size.1.div_ceil(2)) } else { size };
        self.size == size && self.color_format == color_format && self.thickness_size == thickness
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
    let mut pixels = read_texture_bytes_blocking(ctx, texture, 4);
    if bgra {
        for px in pixels.chunks_exact_mut(4) {
            px.swap(0, 2);
        }
    }
    image::RgbaImage::from_raw(texture.width(), texture.height(), pixels)
        .expect("buffer holds width * height * 4 bytes")
}

/// Copies a 2-D float colour texture ([`crate::render::frame::HDR_FORMAT`] `Rgba16Float` or `Rgba32Float`, usage `COPY_SRC`)
/// into an RGBA `f32` image, values as stored (linear for the renderer's output).
///
/// **Blocking**: submits the copy and waits for the GPU. For headless runs and tests only; the
/// interactive app reads back through [`crate::capture::Capture`] instead.
///
/// Panics on any other texture format (a programming error, not user input).
pub fn read_texture_rgba_f32(ctx: &GpuContext, texture: &wgpu::Texture) -> image::Rgba32FImage {
    let format = texture.format();
    let texel = match format {
        wgpu::TextureFormat::Rgba16Float => 8,
        wgpu::TextureFormat::Rgba32Float => 16,
        other => panic!("read_texture_rgba_f32: unsupported texture format {other:?}"),
    };
    let bytes = read_texture_bytes_blocking(ctx, texture, texel);
    let mut values = Vec::with_capacity(bytes.len() / texel as usize * 4);
    texels_to_f32(&bytes, format, &mut values);
    let (width, height) = (texture.width(), texture.height());
    image::Rgba32FImage::from_raw(width, height, values).expect("buffer holds width * height * 4 floats")
}

/// Copies a 2-D texture of `texel` bytes per texel (e.g. 4 for the `R32Float` fluid depth, 2 for the
/// `R16Float` thickness; usage `COPY_SRC`) into tightly packed rows (the copy's row padding removed). **Blocking**: submits the copy and waits for the GPU. On a mapping failure it logs and
/// returns zeros of the right length.
fn read_texture_bytes_blocking(ctx: &GpuContext, texture: &wgpu::Texture, texel: u32) -> Vec<u8> {
    let (width, height) = (texture.width(), texture.height());
    let row_bytes = width * texel;
    let padded = row_bytes.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("texture read-back"),
        size: padded as u64 * height as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder =
        ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texture read-back") });
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded),
                rows_per_image: Some(height),
            },
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
    let mut bytes = Vec::with_capacity((row_bytes * height) as usize);
    match buffer.get_mapped_range(..) {
        Ok(data) => {
            for row in data.chunks_exact(padded as usize) {
                bytes.extend_from_slice(&row[..row_bytes as usize]);
            }
        }
        Err(e) => {
            log::error!("texture read-back: buffer not mapped: {e}");
            bytes.resize((row_bytes * height) as usize, 0);
        }
    }
    buffer.unmap();
    bytes
}

/// Appends the channels of the texels in `bytes` (little-endian `Rgba16Float` or `Rgba32Float`, no row
/// padding) to `out` as `f32`.
pub(crate) fn texels_to_f32(bytes: &[u8], format: wgpu::TextureFormat, out: &mut Vec<f32>) {
    match format {
        wgpu::TextureFormat::Rgba32Float => {
            out.extend(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        }
        _ => out.extend(bytes.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())),
    }
}
