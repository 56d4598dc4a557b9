//! The obstacles' sun shadow ("obstacle shadow", `shaders/render/obstacle_shadow.wgsl`): a classic
//! shadow map (Williams 1978) of the obstacles alone, seen from the sun. Their triangles are drawn
//! depth-only into a [`MAP_SIZE`]² map, orthographic over the obstacles' bounding sphere, whenever the
//! obstacles or the sun change (nothing per frame otherwise). The terrain, a box scene's ground and the
//! obstacles themselves read it (`shaders/common/obstacle_shadow.wgsl`; the uniform, the map and its
//! comparison sampler are bindings 1-3 of every pass's bind group 0, [`super::frame::frame_bind_group`])
//! with a normal-offset bias and a 3 x 3 percentage-closer filter, and take that fraction of the sun. The map
//! covers only what can cast (the obstacles): a receiver outside it is lit. The terrain's own shadows
//! come from its height samples ([`super::terrain`]); the water's from its light-space splat
//! ([`super::water_shadow`]).

use super::pass::Frame;
use crate::gpu::{self, GpuContext};
use glam::{Mat4, Vec3};

/// Edge of the shadow map, texels (16 MiB of `Depth32Float`).
pub const MAP_SIZE: u32 = 2048;

/// Depth format of the map.
const MAP_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// The sun's view of the obstacles, binding 1 of the frame's bind group 0 and binding 0 of the draw's. WGSL twin: `ObstacleShadow` in shaders/common/obstacle_shadow.wgsl and
/// shaders/render/obstacle_shadow.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ObstacleShadowUniform {
    /// World to the light's clip space: x, y in -1 ..= 1 over the map, depth 0 (sunward) ..= 1.
    pub light_from_world: [[f32; 4]; 4],
    /// One map texel, metres.
    pub texel: f32,
    /// 1 when the obstacles cast shadows, 0 when nothing does (no obstacle, or the sun below the horizon).
    pub enabled: f32,
    /// Subtracted from a receiver's depth before the comparison, depth units (half a texel's worth).
    pub depth_bias: f32,
    pub _pad: f32,
}

const _: () = assert!(size_of::<ObstacleShadowUniform>() == super::frame::OBSTACLE_SHADOW_BYTES);

impl ObstacleShadowUniform {
    /// Nothing casts a shadow.
    pub const NONE: Self =
        Self { light_from_world: [[0.0; 4]; 4], texel: 0.0, enabled: 0.0, depth_bias: 0.0, _pad: 0.0 };

    /// The sun's orthographic view of the box `lo ..= hi` (the obstacles' bounds, metres) for the unit
    /// direction `sun` toward the sun: the map spans the box's bounding sphere across, its depth range
    /// runs from the sphere's sunward side to four radii beyond it. `NONE` for an empty box or a sun at
    /// or below the horizon (its light is gone: nothing to shadow).
    pub fn new(lo: Vec3, hi: Vec3, sun: Vec3) -> Self {
        let sun = sun.normalize_or_zero();
        if !(lo.cmple(hi).all() && sun.y > 0.0 && lo.is_finite() && hi.is_finite()) {
            return Self::NONE;
        }
        let centre = 0.5 * (lo + hi);
        let radius = (0.5 * (hi - lo).length()).max(1e-3);
        // A right-handed view along -sun from a sphere's width sunward of the centre, orthographic:
        // x and y over the sphere's width, depth 0 at `near`, 1 at `far` along the light.
        let eye = centre + 2.0 * radius * sun;
        let forward = -sun;
        let up = if sun.y.abs() > 0.99 { Vec3::Z } else { Vec3::Y };
        let side = forward.cross(up).normalize();
        let up = side.cross(forward);
        let (near, far) = (radius, 7.0 * radius);
        let row = |axis: Vec3, scale: f32, offset: f32| (axis * scale).extend((offset - axis.dot(eye)) * scale);
        let light_from_world = Mat4::from_cols(
            row(side, 1.0 / radius, 0.0),
            row(up, 1.0 / radius, 0.0),
            row(forward, 1.0 / (far - near), -near),
            glam::Vec4::W,
        )
        .transpose();
        let texel = 2.0 * radius / MAP_SIZE as f32;
        Self {
            light_from_world: light_from_world.to_cols_array_2d(),
            texel,
            enabled: 1.0,
            depth_bias: 0.5 * texel / (far - near),
            _pad: 0.0,
        }
    }
}

/// The obstacle pass's corners as the shadow map's draw binds them: the buffer, the bind group over it,
/// the corner count and their bounds (world, metres).
struct ShadowDraw {
    buffer: wgpu::Buffer,
    group: wgpu::BindGroup,
    count: u32,
    bounds: (Vec3, Vec3),
}

/// The shadow map, its uniform and sampler (bound in every frame's group 0) and its draw.
pub struct ObstacleShadowPass {
    draw_layout: wgpu::BindGroupLayout,
    pipeline: wgpu::RenderPipeline,
    uniform: wgpu::Buffer,
    map: wgpu::TextureView,
    sampler: wgpu::Sampler,
    /// The corners drawn (none: no obstacle).
    draw: Option<ShadowDraw>,
    /// The sun direction the map was drawn for (`None`: draw it at the next frame).
    drawn_for: Option<Vec3>,
}

impl ObstacleShadowPass {
    /// Builds the map (cleared to nothing), its uniform and sampler, and the draw's pipeline.
    pub fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        let uniform = gpu::uniform_buffer_init(
            device,
            "obstacle shadow uniform",
            bytemuck::bytes_of(&ObstacleShadowUniform::NONE),
        );
        let map = device
            .create_texture(&wgpu::TextureDescriptor {
                label: Some("obstacle shadow map"),
                size: wgpu::Extent3d { width: MAP_SIZE, height: MAP_SIZE, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: MAP_FORMAT,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
                view_formats: &[],
            })
            .create_view(&wgpu::TextureViewDescriptor::default());
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("obstacle shadow sampler"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            compare: Some(wgpu::CompareFunction::LessEqual),
            ..Default::default()
        });
        let vs = wgpu::ShaderStages::VERTEX;
        let draw_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("obstacle shadow draw layout"),
            entries: &[
                gpu::uniform_entry::<ObstacleShadowUniform>(0, vs),
                gpu::storage_entry::<super::obstacles::ObstacleCorner>(1, true, vs),
            ],
        });
        let module = gpu::shader::module(device, "render/obstacle_shadow.wgsl");
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("obstacle shadow pipeline layout"),
            bind_group_layouts: &[Some(&draw_layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("obstacle shadow pipeline"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_depth"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: MAP_FORMAT,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Less),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: None,
            multiview_mask: None,
            cache: None,
        });
        Self { draw_layout, pipeline, uniform, map, sampler, draw: None, drawn_for: None }
    }

    /// (uniform, map, comparison sampler): bindings 1, 2 and 3 of the frame's bind group 0.
    pub fn frame_resources(&self) -> (&wgpu::Buffer, &wgpu::TextureView, &wgpu::Sampler) {
        (&self.uniform, &self.map, &self.sampler)
    }

    /// The obstacles that cast shadows from now on: `corners` is the obstacle pass's buffer with its
    /// corner count and bounds ([`super::ObstaclesPass::corners`]; none: nothing casts). The map is drawn
    /// again at the next frame; the bind group is made again only when the buffer is another.
    pub fn set_corners(&mut self, ctx: &GpuContext, corners: Option<(&wgpu::Buffer, u32, (Vec3, Vec3))>) {
        self.drawn_for = None;
        let Some((buffer, count, bounds)) = corners else {
            self.draw = None;
            ctx.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&ObstacleShadowUniform::NONE));
            return;
        };
        match self.draw.as_mut() {
            Some(d) if d.buffer == *buffer => (d.count, d.bounds) = (count, bounds),
            _ => {
                let group = gpu::bind_at(
                    &ctx.device,
                    "obstacle shadow draw",
                    &self.draw_layout,
                    vec![(0, &self.uniform), (1, buffer)],
                );
                self.draw = Some(ShadowDraw { buffer: buffer.clone(), group, count, bounds });
            }
        }
    }

    /// Records "obstacle shadow" when the obstacles or the sun (unit vector toward it) changed since the
    /// map was last drawn; nothing otherwise, and nothing without obstacles.
    pub fn encode(&mut self, frame: &mut Frame<'_>, sun: Vec3) {
        let Some(ShadowDraw { group, count, bounds: (lo, hi), .. }) = &self.draw else { return };
        if self.drawn_for == Some(sun) {
            return;
        }
        self.drawn_for = Some(sun);
        let light = ObstacleShadowUniform::new(*lo, *hi, sun);
        frame.queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&light));
        let mut pass = frame.profiler.render_pass(
            frame.encoder,
            "obstacle shadow",
            wgpu::RenderPassDescriptor {
                label: Some("obstacle shadow"),
                color_attachments: &[],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &self.map,
                    depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(1.0), store: wgpu::StoreOp::Store }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            },
        );
        if light.enabled > 0.5 {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, group, &[]);
            pass.draw(0..*count, 0..1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(u: &ObstacleShadowUniform, p: Vec3) -> Vec3 {
        Mat4::from_cols_array_2d(&u.light_from_world).project_point3(p)
    }

    /// The box's corners land inside the map and its depth range; along the sun's ray a point nearer
    /// the sun is shallower; a point beside the box's shadow falls outside the map.
    #[test]
    fn the_light_view_covers_the_obstacles() {
        let (lo, hi) = (Vec3::new(1.0, 0.0, 2.0), Vec3::new(2.0, 3.0, 2.5));
        let sun = Vec3::new(0.3, 0.8, -0.2).normalize();
        let u = ObstacleShadowUniform::new(lo, hi, sun);
        assert_eq!(u.enabled, 1.0);
        for i in 0..8 {
            let c = Vec3::new([lo.x, hi.x][i & 1], [lo.y, hi.y][(i >> 1) & 1], [lo.z, hi.z][i >> 2]);
            let q = project(&u, c);
            assert!(q.x.abs() < 1.0 && q.y.abs() < 1.0 && q.z > 0.0 && q.z < 1.0, "corner {c} at {q}");
        }
        let top = Vec3::new(1.5, 3.0, 2.25);
        let (a, b) = (project(&u, top), project(&u, top - 2.0 * sun));
        assert!((a.truncate() - b.truncate()).length() < 1e-5, "one ray, one texel: {a} {b}");
        assert!(a.z < b.z, "the point nearer the sun is shallower: {a} {b}");
        let beside = project(&u, top + 10.0 * Vec3::X.cross(sun).normalize());
        assert!(beside.x.abs() > 1.0 || beside.y.abs() > 1.0, "far beside the box: {beside}");
        let radius = 0.5 * (hi - lo).length();
        assert!((u.texel - 2.0 * radius / MAP_SIZE as f32).abs() < 1e-7);
    }

    /// No shadow without a box or with the sun at or under the horizon.
    #[test]
    fn no_shadow_without_obstacles_or_sun() {
        assert_eq!(ObstacleShadowUniform::new(Vec3::ONE, Vec3::ZERO, Vec3::Y), ObstacleShadowUniform::NONE);
        assert_eq!(ObstacleShadowUniform::new(Vec3::ZERO, Vec3::ONE, Vec3::new(1.0, -0.1, 0.0)).enabled, 0.0);
        assert_eq!(ObstacleShadowUniform::new(Vec3::ZERO, Vec3::ONE, Vec3::Y).enabled, 1.0);
    }
}
