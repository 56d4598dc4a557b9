//! One rank's fluid layers on their way to the display device for sort-last compositing
//! ([`super::sort_last`]): the splats' linear depth (`R32Float`, view depth in metres, 0 = no fluid) and
//! thickness (`R16Float`, summed path length in metres) of a frame, as bytes ([`FluidLayers`]). A rank
//! other than the display copies both targets into a staging buffer in the frame's encoder
//! ([`LayerReadback::encode_copy`]), maps it asynchronously after the submission and waits for that map
//! only when the display needs the frame ([`LayerReadback::read_blocking`]); the bytes travel between the
//! ranks' devices through host memory (wgpu has no peer-to-peer copies), rows padded as the copy lays them
//! out, and the display writes them into its layer textures with `Queue::write_texture`.

use super::frame::{RAW_DEPTH_FORMAT, THICKNESS_FORMAT};
use super::targets::FluidTargets;
use crate::gpu::GpuContext;
use thiserror::Error;

/// Why a rank's layers could not be read back or decoded. Causes are part of the message (no `source()`).
#[derive(Debug, Error, PartialEq)]
pub enum LayerError {
    /// The bytes are not a whole [`FluidLayers`] message (a bug or a damaged transport).
    #[error("fluid layers of {len} bytes are malformed: {why}")]
    Malformed { len: usize, why: &'static str },
    /// The staging buffer could not be mapped (device lost).
    #[error("fluid layers could not be read back from the GPU: {0}")]
    Map(String),
}

/// Bytes per row of a copy of `width` texels of `texel` bytes: padded to wgpu's copy alignment (256).
pub fn padded_row(width: u32, texel: u32) -> u32 {
    (width * texel).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT
}

/// Bytes per texel of the depth layer ([`RAW_DEPTH_FORMAT`]) and of the thickness layer
/// ([`THICKNESS_FORMAT`]).
pub const DEPTH_TEXEL: u32 = 4;
pub const THICKNESS_TEXEL: u32 = 2;
const _: () = assert!(matches!(RAW_DEPTH_FORMAT, wgpu::TextureFormat::R32Float));
const _: () = assert!(matches!(THICKNESS_FORMAT, wgpu::TextureFormat::R16Float));

/// One rank's fluid layers of a frame, as bytes in rows of [`padded_row`] bytes: `depth` (`size`, f32 per
/// texel, linear view depth in metres, 0 = none) and `thickness` (`thickness_size`, IEEE binary16 per
/// texel, metres). An empty value (size 0) stands for a rank that drew no fluid targets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FluidLayers {
    /// Depth layer size, pixels (the frame's).
    pub size: (u32, u32),
    /// Thickness layer size, pixels (full or half resolution).
    pub thickness_size: (u32, u32),
    pub depth: Vec<u8>,
    pub thickness: Vec<u8>,
}

/// Header of [`FluidLayers::to_bytes`]: four u32 sizes.
const HEADER: usize = 16;

impl FluidLayers {
    /// Whether these layers hold nothing (a rank with no fluid targets).
    pub fn is_empty(&self) -> bool {
        self.size.0 == 0 || self.size.1 == 0
    }

    /// The layers as one message: the four sizes (u32 LE), then depth and thickness bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.depth.len() + self.thickness.len());
        for v in [self.size.0, self.size.1, self.thickness_size.0, self.thickness_size.1] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.depth);
        out.extend_from_slice(&self.thickness);
        out
    }

    /// Decodes [`FluidLayers::to_bytes`]. Errors: a short header, or lengths that do not match the sizes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LayerError> {
        let bad = |why| LayerError::Malformed { len: bytes.len(), why };
        let head = bytes.get(..HEADER).ok_or(bad("shorter than its header"))?;
        let word = |k: usize| u32::from_le_bytes([head[4 * k], head[4 * k + 1], head[4 * k + 2], head[4 * k + 3]]);
        let (size, thickness_size) = ((word(0), word(1)), (word(2), word(3)));
        // In u64: the sizes come from the message (any u32), and a wrong one must be refused, not wrap.
        let layer_len = |(w, h): (u32, u32), texel: u32| {
            let align = wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64;
            (w as u64 * texel as u64).div_ceil(align) * align * h as u64
        };
        let depth_len = layer_len(size, DEPTH_TEXEL);
        let thickness_len = layer_len(thickness_size, THICKNESS_TEXEL);
        if (bytes.len() - HEADER) as u64 != depth_len + thickness_len {
            return Err(bad("its length does not match the sizes in its header"));
        }
        let depth = bytes[HEADER..HEADER + depth_len as usize].to_vec();
        let thickness = bytes[HEADER + depth_len as usize..].to_vec();
        Ok(Self { size, thickness_size, depth, thickness })
    }
}

/// Where a map's result lands (set by wgpu's callback, taken by [`LayerReadback::read_blocking`]).
type MapSlot = std::sync::Arc<std::sync::Mutex<Option<Result<(), wgpu::BufferAsyncError>>>>;

/// A staging buffer and the (depth, thickness) sizes it was made for, pixels.
struct Staging {
    buffer: wgpu::Buffer,
    size: (u32, u32),
    thickness_size: (u32, u32),
}

/// The staging buffer a rank reads its layers back through (`MAP_READ | COPY_DST`), made for one target
/// size and remade when it changes.
#[derive(Default)]
pub struct LayerReadback {
    staging: Option<Staging>,
    /// The map of the last copy was asked for and not yet consumed.
    mapping: Option<MapSlot>,
}

impl LayerReadback {
    /// Records the copy of `targets`' raw depth and thickness into the staging buffer (made or remade to
    /// fit). Submit the encoder, then call [`LayerReadback::map`].
    pub fn encode_copy(&mut self, device: &wgpu::Device, encoder: &mut wgpu::CommandEncoder, targets: &FluidTargets) {
        let (size, tsize) = (targets.size, targets.thickness_size);
        let depth_len = padded_row(size.0, DEPTH_TEXEL) as u64 * size.1 as u64;
        let thickness_len = padded_row(tsize.0, THICKNESS_TEXEL) as u64 * tsize.1 as u64;
        if self.staging.as_ref().is_none_or(|s| s.size != size || s.thickness_size != tsize) {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("fluid layers staging"),
                size: depth_len + thickness_len,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            self.staging = Some(Staging { buffer, size, thickness_size: tsize });
        }
        let Some(Staging { buffer, .. }) = self.staging.as_ref() else { return };
        let copies =
            [(&targets.raw_depth, size, DEPTH_TEXEL, 0), (&targets.thickness, tsize, THICKNESS_TEXEL, depth_len)];
        for (texture, (w, h), texel, offset) in copies {
            encoder.copy_texture_to_buffer(
                texture.as_image_copy(),
                wgpu::TexelCopyBufferInfo {
                    buffer,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset,
                        bytes_per_row: Some(padded_row(w, texel)),
                        rows_per_image: Some(h),
                    },
                },
                wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
            );
        }
    }

    /// Asks for the staging buffer's map (after the submission holding [`LayerReadback::encode_copy`]);
    /// returns at once.
    pub fn map(&mut self) {
        let Some(Staging { buffer, .. }) = self.staging.as_ref() else { return };
        let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
        let done = slot.clone();
        buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            if let Ok(mut d) = done.lock() {
                *d = Some(r);
            }
        });
        self.mapping = Some(slot);
    }

    /// Waits for the map asked by [`LayerReadback::map`] and returns the layers (empty when nothing was
    /// copied). **Blocking** on this rank's device, for the frame that needs the layers now.
    /// Errors: the map failed (device lost).
    pub fn read_blocking(&mut self, ctx: &GpuContext) -> Result<FluidLayers, LayerError> {
        let (Some(Staging { buffer, size, thickness_size: tsize }), Some(slot)) =
            (self.staging.as_ref(), self.mapping.take())
        else {
            return Ok(FluidLayers::default());
        };
        let result = loop {
            if let Some(r) = slot.lock().ok().and_then(|mut s| s.take()) {
                break r;
            }
            let wait = wgpu::PollType::Wait { submission_index: None, timeout: None };
            if let Err(e) = ctx.device.poll(wait) {
                return Err(LayerError::Map(e.to_string()));
            }
        };
        result.map_err(|e| LayerError::Map(e.to_string()))?;
        let depth_len = padded_row(size.0, DEPTH_TEXEL) as usize * size.1 as usize;
        let layers = match buffer.get_mapped_range(..) {
            Ok(data) => FluidLayers {
                size: *size,
                thickness_size: *tsize,
                depth: data[..depth_len].to_vec(),
                thickness: data[depth_len..].to_vec(),
            },
            Err(e) => return Err(LayerError::Map(e.to_string())),
        };
        buffer.unmap();
        Ok(layers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_round_trip_and_malformed_messages_are_errors() {
        let layers = FluidLayers {
            size: (3, 2),
            thickness_size: (2, 1),
            depth: (0..2 * 256).map(|i| i as u8).collect(),
            thickness: vec![7; 256],
        };
        let bytes = layers.to_bytes();
        assert_eq!(FluidLayers::from_bytes(&bytes), Ok(layers));
        assert!(matches!(FluidLayers::from_bytes(&bytes[..10]), Err(LayerError::Malformed { .. })));
        assert!(matches!(FluidLayers::from_bytes(&bytes[..bytes.len() - 1]), Err(LayerError::Malformed { .. })));
        assert!(FluidLayers::from_bytes(&FluidLayers::default().to_bytes()).is_ok_and(|l| l.is_empty()));
        // Sizes past any texture in the header: refused, no overflow (a width of 2^30 + 1 texels of 4 bytes
        // wraps to 4 bytes a row in u32 arithmetic, which would match this message's length).
        for width in [u32::MAX, (1 << 30) + 1] {
            let mut huge = bytes.clone();
            huge[..4].copy_from_slice(&width.to_le_bytes());
            assert!(matches!(FluidLayers::from_bytes(&huge), Err(LayerError::Malformed { .. })), "{width}");
        }
    }
}
