//! The static background's cache: the terrain and the sky depend on the camera, the sun, the sky and the
//! terrain, never on the water. While none of them changes (a still camera: most frames of a viewer,
//! every frame of `waterview bench`), the colour and depth the "terrain" and "sky" passes drew are restored by
//! two texture copies instead of being drawn again. Measured on an H100 at 1920x1080 (valley, 1 M
//! particles): the background pass costs 2.3 ms per frame, fragment bound (0.69 ms at 960x540); the
//! copies move 16 bytes per pixel.
//!
//! Only targets whose textures allow copies both ways are cached ([`super::Offscreen`]'s do); the
//! others are drawn every frame. The key compares everything the background's pixels depend on, so a
//! restored frame is the drawn one bit for bit (tests/render_headless.rs checks it).

use super::frame::CameraUniform;
use crate::gpu::GpuContext;

/// Everything the background's pixels depend on. `epoch` counts the changes the renderer makes to the
/// terrain and the sky source (a new heightfield, another sky file).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackgroundKey {
    /// The frame's camera uniform with `time` zeroed (nothing in the background moves with it).
    pub camera: CameraUniform,
    pub size: (u32, u32),
    pub format: wgpu::TextureFormat,
    pub show_terrain: bool,
    /// The terrain lit by its bounced light ([`super::RenderSettings::terrain_bounce`]).
    pub terrain_bounce: bool,
    /// A box scene's tank and ground, drawn with the background.
    pub tank: Option<super::Tank>,
    /// The generated sky's turbidity and a loaded sky's exposure (the sun is in `camera`), and the
    /// generated sky's model.
    pub sky: ([f32; 2], super::SkyModel),
    pub epoch: u64,
}

/// The cached colour and depth of the last background drawn, and its key.
#[derive(Default)]
pub struct BackgroundCache {
    textures: Option<(wgpu::Texture, wgpu::Texture)>,
    key: Option<BackgroundKey>,
    /// Key of the background drawn last: a background is stored only when drawn twice in a row for the
    /// same key, so a moving camera costs no copies.
    last_drawn: Option<BackgroundKey>,
}

/// Whether `texture` can be copied from and into.
fn copyable(texture: &wgpu::Texture) -> bool {
    texture.usage().contains(wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::COPY_DST)
}

fn copy_all(encoder: &mut wgpu::CommandEncoder, from: &wgpu::Texture, to: &wgpu::Texture) {
    encoder.copy_texture_to_texture(from.as_image_copy(), to.as_image_copy(), from.size());
}

impl BackgroundCache {
    /// Whether (colour, depth) targets like these can be cached at all.
    pub fn supports(color: &wgpu::Texture, depth: &wgpu::Texture) -> bool {
        copyable(color) && copyable(depth)
    }

    /// Records the copies of the cached background into `color` and `depth` when it was drawn for
    /// `key`; returns whether it did (false: the caller draws the background, then [`Self::store`]s it).
    pub fn restore(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        key: &BackgroundKey,
        color: &wgpu::Texture,
        depth: &wgpu::Texture,
    ) -> bool {
        match (&self.textures, &self.key) {
            (Some((c, d)), Some(k)) if k == key && Self::supports(color, depth) => {
                copy_all(encoder, c, color);
                copy_all(encoder, d, depth);
                true
            }
            _ => false,
        }
    }

    /// Notes that the background for `key` was just drawn into `color` and `depth`; when the frame
    /// before drew the same (the view stands still), records the copies of it into the cache,
    /// (re)allocating the cache's textures when the size or format changed. Does nothing for targets
    /// that cannot be copied.
    pub fn store(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        key: BackgroundKey,
        color: &wgpu::Texture,
        depth: &wgpu::Texture,
    ) {
        let still = self.last_drawn == Some(key);
        self.last_drawn = Some(key);
        if !(still && Self::supports(color, depth)) {
            self.key = None;
            return;
        }
        let fits = |cached: &wgpu::Texture, target: &wgpu::Texture| {
            cached.size() == target.size() && cached.format() == target.format()
        };
        if !self.textures.as_ref().is_some_and(|(c, d)| fits(c, color) && fits(d, depth)) {
            let like = |label: &str, t: &wgpu::Texture| {
                ctx.device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size: t.size(),
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: t.format(),
                    // Sampled too: the water's refraction reads the cached colour ([`Self::colour_for`]).
                    usage: wgpu::TextureUsages::COPY_SRC
                        | wgpu::TextureUsages::COPY_DST
                        | wgpu::TextureUsages::TEXTURE_BINDING,
                    view_formats: &[],
                })
            };
            self.textures = Some((like("background colour cache", color), like("background depth cache", depth)));
        }
        if let Some((c, d)) = &self.textures {
            copy_all(encoder, color, c);
            copy_all(encoder, depth, d);
            self.key = Some(key);
        }
    }

    /// The cached colour when it holds the background of `key` (restored or stored this frame): the same
    /// pixels as the frame's colour target before anything is drawn over the background.
    pub fn colour_for(&self, key: &BackgroundKey) -> Option<&wgpu::Texture> {
        self.textures.as_ref().filter(|_| self.key.as_ref() == Some(key)).map(|(c, _)| c)
    }

    /// Forgets the cached background (the next frame draws it).
    pub fn invalidate(&mut self) {
        self.key = None;
        self.last_drawn = None;
    }
}
