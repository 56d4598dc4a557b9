//! The user-facing render settings (serde, edited live in the render panel): what the frame shows
//! ([`FluidView`]), the screen-space fluid's parameters ([`FluidSettings`], with the depth filter's choice
//! [`DepthFilter`] and [`NarrowRangeParams`]) and the scene's light, sky and visibility
//! ([`RenderSettings`]). Each pass's per-frame input is derived from them here, in one place
//! (`RenderSettings::anisotropy_uniform`, `splat`, `flow`, `narrow_range`, `composite`, `sky`).

use super::foam::{DiffuseSource, FoamInput, FoamSettings, FoamUniform};
use super::frame::CameraUniform;
use super::narrow_range::NarrowRangeSettings;
use super::sky::SkyModel;
use super::water_shadow::{WaterLightUniform, WaterShadowInput};
use super::wetness::WetInput;
use super::{
    AnisotropyUniform, CompositeUniform, FlowSettings, ParticleStyle, SkyInput, SplatInput, SplatMethod, Tank,
};
use serde::{Deserialize, Serialize};

/// What the frame shows: the shaded water, one intermediate target of the fluid renderer, or the old
/// sphere impostors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FluidView {
    /// Shaded water over terrain and sky.
    #[default]
    Final,
    /// Nearest splat's linear depth (grey, nearer = brighter).
    RawDepth,
    /// Depth after the depth filter (curvature flow or narrow range).
    SmoothedDepth,
    /// Summed path length through the splats.
    Thickness,
    /// World-space normals of the smoothed depth (rgb = n / 2 + 1/2).
    Normals,
    /// The depth filter's active tiles (red) over the scene, fluid pixels in blue.
    TileMask,
    /// The foam target: foam and bubbles white, spray orange, water pixels dark blue.
    Foam,
    /// One shaded sphere per particle (the `particle` style), no screen-space fluid.
    Spheres,
}

impl FluidView {
    /// Every view, in UI order.
    pub const ALL: [FluidView; 8] = [
        FluidView::Final,
        FluidView::RawDepth,
        FluidView::SmoothedDepth,
        FluidView::Thickness,
        FluidView::Normals,
        FluidView::TileMask,
        FluidView::Foam,
        FluidView::Spheres,
    ];

    /// Name for menus.
    pub fn name(self) -> &'static str {
        match self {
            FluidView::Final => "final image",
            FluidView::RawDepth => "raw depth",
            FluidView::SmoothedDepth => "smoothed depth",
            FluidView::Thickness => "thickness",
            FluidView::Normals => "normals",
            FluidView::TileMask => "tile mask",
            FluidView::Foam => "foam",
            FluidView::Spheres => "sphere impostors",
        }
    }

    /// The view's name on the command line (`waterview run --view NAME`): one lower-case word.
    pub fn key(self) -> &'static str {
        match self {
            FluidView::Final => "final",
            FluidView::RawDepth => "depth",
            FluidView::SmoothedDepth => "smoothed",
            FluidView::Thickness => "thickness",
            FluidView::Normals => "normals",
            FluidView::TileMask => "tiles",
            FluidView::Foam => "foam",
            FluidView::Spheres => "spheres",
        }
    }

    /// The view whose [`FluidView::key`] is `key` (ASCII case ignored), or `None`.
    pub fn from_key(key: &str) -> Option<FluidView> {
        FluidView::ALL.into_iter().find(|v| v.key().eq_ignore_ascii_case(key.trim()))
    }

    /// The composite shader's `view` code (0 = the shaded water).
    pub fn code(self) -> u32 {
        match self {
            FluidView::Final | FluidView::Spheres => 0,
            FluidView::RawDepth => 1,
            FluidView::SmoothedDepth => 2,
            FluidView::Thickness => 3,
            FluidView::Normals => 4,
            FluidView::TileMask => 5,
            FluidView::Foam => 6,
        }
    }

    /// Whether the view shows the shaded scene (the water or the spheres), not an intermediate target.
    pub fn shaded(self) -> bool {
        matches!(self, FluidView::Final | FluidView::Spheres)
    }
}

/// Which filter smooths the fluid's depth before it is shaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DepthFilter {
    /// Curvature flow (van der Laan, Green & Sainz 2009; `src/render/curvature_flow.rs`).
    CurvatureFlow,
    /// Narrow-range filter (Truong & Yuksel 2018; `src/render/narrow_range.rs`), the default: a calm
    /// surface comes out about ten times flatter than with curvature flow while splash edges are kept as
    /// well (docs/rendering.md).
    #[default]
    NarrowRange,
}

impl DepthFilter {
    /// Every filter, in UI order.
    pub const ALL: [DepthFilter; 2] = [DepthFilter::CurvatureFlow, DepthFilter::NarrowRange];

    /// Name for menus.
    pub fn name(self) -> &'static str {
        match self {
            DepthFilter::CurvatureFlow => "curvature flow",
            DepthFilter::NarrowRange => "narrow range",
        }
    }

    /// The filter's name on the command line (`--depth-filter NAME`).
    pub fn key(self) -> &'static str {
        match self {
            DepthFilter::CurvatureFlow => "curvature-flow",
            DepthFilter::NarrowRange => "narrow-range",
        }
    }

    /// The filter whose [`DepthFilter::key`] is `key` (ASCII case ignored), or `None`.
    pub fn from_key(key: &str) -> Option<DepthFilter> {
        DepthFilter::ALL.into_iter().find(|d| d.key().eq_ignore_ascii_case(key.trim()))
    }
}

/// Parameters of the narrow-range depth filter (serde; lengths "x dx" scale with the particle spacing).
/// See `src/render/narrow_range.rs` and `docs/rendering.md`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NarrowRangeParams {
    /// Iterations per frame, each a horizontal and a vertical pass (0 = the raw depth).
    pub iterations: u32,
    /// Filter radius in the world, x dx (projected to pixels at each pixel's depth).
    pub radius: f32,
    /// Largest filter radius on screen, pixels (1 ..= 64): bounds the cost of near water.
    pub max_radius_px: u32,
    /// Depth range averaged as it is, x dx: the largest distance of a pair of neighbours' mean (mirrored
    /// about the pixel) from the pixel's depth, i.e. of the surface from the plane through the pixel.
    pub range: f32,
    /// How far behind a neighbour across a silhouette (behind the range, or without fluid) counts, x dx
    /// (at most `range`): how much silhouettes round off.
    pub clamp_offset: f32,
}

impl Default for NarrowRangeParams {
    fn default() -> Self {
        Self { iterations: 2, radius: 2.0, max_radius_px: 24, range: 1.0, clamp_offset: 0.1 }
    }
}

/// Parameters of the screen-space fluid renderer (serde). Lengths given "x dx" scale with the particle
/// spacing, so one setting looks the same for coarse and fine simulations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FluidSettings {
    /// Particle spacing dx, metres; 0 = twice `ParticleStyle::radius`.
    pub dx: f32,
    /// Splat (sphere) radius, x dx.
    pub splat_radius: f32,
    /// Anisotropic ellipsoids (off: spheres).
    pub anisotropy: bool,
    /// Neighbour radius r = 2h of the anisotropy PCA, x dx.
    pub neighbour_radius: f32,
    /// Largest ellipsoid axis ratio (Yu & Turk's kr).
    pub kr: f32,
    /// Scale of the ellipsoid axes (1 = the sphere's volume).
    pub anisotropy_scale: f32,
    /// Fewer neighbours than this (the particle included): a sphere (Yu & Turk's N_eps).
    pub neighbour_threshold: u32,
    /// Radius of a lone particle's sphere, x `splat_radius` (Yu & Turk's k_n, 0.5 in the paper); with
    /// more neighbours (up to `neighbour_threshold`) the sphere grows linearly to the whole radius, so
    /// spray and lone particles read as small droplets.
    pub isolated_radius: f32,
    /// Centre smoothing lambda, 0..1.
    pub centre_smoothing: f32,
    /// Thickness target at half resolution.
    pub half_res_thickness: bool,
    /// How the splats reach the pixels (rasteriser or compute): the camera's and the water shadow's.
    pub splats: SplatMethod,
    /// The filter that smooths the depth.
    pub depth_filter: DepthFilter,
    /// Curvature-flow iterations per frame.
    pub flow_iterations: u32,
    /// Curvature-flow Euler step, as a fraction of its stability limit (0..1].
    pub flow_step: f32,
    /// Depth jump that counts as a silhouette (not smoothed across), x dx.
    pub depth_threshold: f32,
    /// The depth filter (either) over every pixel instead of the fluid tiles only (for comparison).
    pub full_screen_flow: bool,
    /// The narrow-range filter's parameters.
    pub narrow_range: NarrowRangeParams,
    /// Beer-Lambert absorption per channel (r, g, b), 1/m. Default: pure water's ([`PURE_WATER_ABSORPTION`])
    /// times [`WATER_COEFFICIENT_SCALE`].
    pub absorption: [f32; 3],
    /// Scattering per channel (r, g, b), 1/m: with the absorption, the colour of the light the water scatters
    /// toward the eye (its single-scattering albedo). Default: pure water's ([`PURE_WATER_SCATTERING`]) times
    /// [`WATER_COEFFICIENT_SCALE`].
    pub scattering: [f32; 3],
    /// Index of refraction of the water (pure water 1.333 at 20 C; 1 = no refraction): the background
    /// is seen where the refracted view ray leaves the water (Snell's law, then the pixel's thickness).
    pub ior: f32,
    /// Fresnel reflectance at normal incidence (water: 0.02).
    pub fresnel_f0: f32,
    /// Thickness at and below which water is shaded as a droplet (fading to water at twice it), x dx;
    /// 0 = off. A lone particle's splat is at most 2 x `isolated_radius` x `splat_radius` thick.
    pub droplet_thickness: f32,
}

/// Absorption coefficients of pure water, 1/m, for the red, green and blue channels: Pope & Fry (1997),
/// "Absorption spectrum (380-700 nm) of pure water. II. Integrating cavity measurements", Applied Optics
/// 36(33), 8710-8723, averaged over the bands the sRGB primaries mostly pass (red 590-680 nm, green
/// 500-570 nm, blue 440-490 nm). Red is absorbed 30 times more than blue: deep clear water is blue-green.
pub const PURE_WATER_ABSORPTION: [f32; 3] = [0.33, 0.055, 0.011];

/// Scattering coefficients of pure water, 1/m, for the same bands: Morel (1974) as tabulated by Smith &
/// Baker (1981), 0.0058 at 400 nm falling as the wavelength to the -4.32.
pub const PURE_WATER_SCATTERING: [f32; 3] = [0.0009, 0.0019, 0.0043];

/// The default water's coefficients against pure water's. Pure water absorbs so little over a tank's metre
/// (the blue loses 1 %) that clear water would show only where it refracts and reflects; lab and pool water
/// (dissolved matter, fine particles) absorbs and scatters a few times more, which this artistic factor
/// stands for. The settings' per-channel values change it per scene.
pub const WATER_COEFFICIENT_SCALE: f32 = 6.0;

impl Default for FluidSettings {
    fn default() -> Self {
        Self {
            dx: 0.0,
            splat_radius: 0.75,
            anisotropy: true,
            neighbour_radius: 2.4,
            kr: 4.0,
            anisotropy_scale: 1.0,
            neighbour_threshold: 16,
            isolated_radius: 0.5,
            centre_smoothing: 0.9,
            half_res_thickness: true,
            splats: SplatMethod::default(),
            depth_filter: DepthFilter::default(),
            flow_iterations: 40,
            flow_step: 0.8,
            depth_threshold: 3.0,
            full_screen_flow: false,
            narrow_range: NarrowRangeParams::default(),
            absorption: PURE_WATER_ABSORPTION.map(|a| a * WATER_COEFFICIENT_SCALE),
            scattering: PURE_WATER_SCATTERING.map(|b| b * WATER_COEFFICIENT_SCALE),
            ior: 1.333,
            fresnel_f0: 0.02,
            droplet_thickness: 2.0,
        }
    }
}

/// User-facing render settings (serde; angles in degrees).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RenderSettings {
    /// How particles are drawn in the `Spheres` view.
    pub particle: ParticleStyle,
    /// Sun direction about +y, degrees (0 = toward +z, 90 = toward +x).
    pub sun_azimuth_deg: f32,
    /// Sun height above the horizon, degrees.
    pub sun_elevation_deg: f32,
    /// Sun brightness, linear scale (1 = nominal; the default is tuned for the tone map).
    pub sun_intensity: f32,
    /// Draw the terrain mesh.
    pub show_terrain: bool,
    /// Light the terrain with the light bounced off its slopes ([`crate::render::terrain_bounce`]; baked
    /// when the sun or the terrain changes). Off: a constant fifth of the sky light where the sky is hidden.
    pub terrain_bounce: bool,
    /// Draw the water (in the chosen view).
    pub show_particles: bool,
    /// Draw the domain's walls: a box scene's glass tank and the ground it stands on (off: the flat floor
    /// alone), a terrain scene's concrete walls where they hold the water ([`crate::engine::walls`]).
    pub show_tank: bool,
    /// Darken the terrain where the water has passed, drying over about a minute.
    pub wet_ground: bool,
    /// Dim and tint the sun's light on the terrain under the water (Beer-Lambert through the water
    /// between the sun and the ground, with the water's absorption colour): the water's shadow. On by
    /// default (the window on a CPU adapter starts without it: `ui::render_panel`).
    pub water_shadow: bool,
    /// What the frame shows.
    pub view: FluidView,
    /// Screen-space fluid parameters.
    pub fluid: FluidSettings,
    /// The generated sky's model.
    pub sky_model: SkyModel,
    /// Atmospheric turbidity of the generated sky (2 clear .. 10 hazy).
    pub sky_turbidity: f32,
    /// Radiance multiplier of a loaded sky.
    pub sky_exposure: f32,
    /// Reuse the terrain and sky drawn for the last frame while the camera, the sun, the sky and the
    /// terrain are unchanged (see [`crate::render::background`]); off draws them every frame (`waterview bench
    /// --redraw-background` measures that, the cost of a moving camera).
    pub cache_background: bool,
    /// How the diffuse particles (foam, spray, bubbles) are drawn.
    pub foam: FoamSettings,
}

impl Default for RenderSettings {
    fn default() -> Self {
        Self {
            particle: ParticleStyle::default(),
            sun_azimuth_deg: 140.0,
            sun_elevation_deg: 38.0,
            sun_intensity: 2.6,
            show_terrain: true,
            terrain_bounce: true,
            show_particles: true,
            show_tank: true,
            wet_ground: true,
            water_shadow: true,
            view: FluidView::Final,
            fluid: FluidSettings::default(),
            sky_model: SkyModel::default(),
            sky_turbidity: 2.5,
            sky_exposure: 1.0,
            cache_background: true,
            foam: FoamSettings::default(),
        }
    }
}

impl RenderSettings {
    /// Particle spacing in metres: `fluid.dx`, or twice the sphere radius when that is 0.
    pub fn dx(&self) -> f32 {
        if self.fluid.dx > 0.0 {
            self.fluid.dx
        } else {
            2.0 * self.particle.radius.max(1e-6)
        }
    }

    /// The anisotropy pass's parameters (count and table size are filled in by the pass).
    pub fn anisotropy_uniform(&self) -> AnisotropyUniform {
        let f = &self.fluid;
        let dx = self.dx();
        AnisotropyUniform {
            count: 0,
            table_size: 0,
            radius: f.neighbour_radius.max(0.5) * dx,
            splat_radius: f.splat_radius.max(0.01) * dx,
            kr: f.kr.max(1.0),
            scale: f.anisotropy_scale.max(0.01),
            n_eps: f.neighbour_threshold,
            lambda: f.centre_smoothing.clamp(0.0, 1.0),
            enabled: f.anisotropy as u32,
            k_n: if f.isolated_radius.is_finite() { f.isolated_radius.clamp(0.1, 1.0) } else { 1.0 },
            _pad: [0; 2],
        }
    }

    /// Unit vector toward the sun.
    pub fn sun(&self) -> glam::Vec3 {
        super::sun_direction(self.sun_azimuth_deg, self.sun_elevation_deg)
    }

    /// The sky pass's input: the sun, the sky's parameters, and whether to draw it into the frame.
    pub fn sky(&self, draw: bool) -> SkyInput {
        SkyInput {
            sun: self.sun(),
            intensity: self.sun_intensity.max(0.0),
            turbidity: self.sky_turbidity,
            exposure: self.sky_exposure,
            model: self.sky_model,
            draw,
        }
    }

    /// The scene's tank when the settings draw it.
    pub fn tank(&self, tank: Option<Tank>) -> Option<Tank> {
        tank.filter(|_| self.show_tank)
    }

    /// What wets the terrain this frame: `particles` (when any, and the setting is on), drying on their
    /// simulation's clock or else `dt` wall-clock seconds after the last frame, soaking the ground within
    /// 1.5 particle spacings of it.
    pub fn wet<'a>(&self, particles: Option<super::ParticleSource<'a>>, dt: f32) -> Option<WetInput<'a>> {
        let p = particles.filter(|_| self.wet_ground)?;
        Some(WetInput { positions: p.positions, count: p.count, clock: p.clock, dt, contact: 1.5 * self.dx() })
    }

    /// The water-shadow pass's input: `count` ellipsoids in `ellipsoids` (dropped when the setting is
    /// off) lit by this sun over the scene's box `bounds` (min, max corners, m), with the water's
    /// absorption colour, splatted as the camera's splats are (`fluid.splats`).
    pub fn water_shadow<'a>(
        &self,
        ellipsoids: Option<&'a super::EllipsoidBuffers>,
        count: u32,
        bounds: (glam::Vec3, glam::Vec3),
    ) -> WaterShadowInput<'a> {
        let light = WaterLightUniform::new(self.sun(), bounds, self.fluid.absorption, 2.0 * self.dx());
        WaterShadowInput {
            ellipsoids: ellipsoids.filter(|_| self.water_shadow),
            count,
            light,
            texel: 2.0 * self.dx(),
            method: self.fluid.splats,
        }
    }

    /// The splat passes' input for `count` ellipsoids in `ellipsoids`.
    pub fn splat<'a>(&self, ellipsoids: &'a super::EllipsoidBuffers, count: u32) -> SplatInput<'a> {
        SplatInput { ellipsoids, count, method: self.fluid.splats, dx: self.dx() }
    }

    /// The curvature flow's settings for a frame seen through `camera`.
    pub fn flow(&self, camera: &CameraUniform) -> FlowSettings {
        let f = &self.fluid;
        FlowSettings {
            iterations: f.flow_iterations,
            step: f.flow_step,
            threshold: f.depth_threshold * self.dx(),
            focal: (camera.clip_from_view[0][0], camera.clip_from_view[1][1]),
            full_screen: f.full_screen_flow,
        }
    }

    /// The foam pass's input: the diffuse particles `source` (dropped when foam is off) and the splats'
    /// sizes at this spacing.
    pub fn foam<'a>(&self, source: Option<DiffuseSource<'a>>) -> FoamInput<'a> {
        FoamInput {
            source: source.filter(|_| self.foam.enabled),
            params: FoamUniform::new(&self.foam, self.dx(), self.fluid.splat_radius),
        }
    }

    /// The narrow-range filter's settings for a frame seen through `camera`.
    pub fn narrow_range(&self, camera: &CameraUniform) -> NarrowRangeSettings {
        let (p, dx) = (&self.fluid.narrow_range, self.dx());
        NarrowRangeSettings {
            iterations: p.iterations,
            radius: p.radius * dx,
            max_radius: p.max_radius_px,
            range: p.range * dx,
            clamp_offset: p.clamp_offset * dx,
            focal_y: camera.clip_from_view[1][1],
            full_screen: self.fluid.full_screen_flow,
        }
    }

    /// The composite's shading parameters: `tiles_x` tiles across the screen, a loaded sky's exposure
    /// `sky_exposure`, the orbit distance `distance` (m) centring the depth views' grey ramp.
    pub fn composite(&self, tiles_x: u32, sky_exposure: f32, distance: f32) -> CompositeUniform {
        let f = &self.fluid;
        CompositeUniform {
            absorption: f.absorption,
            ior: f.ior.clamp(1.0, 3.0),
            f0: f.fresnel_f0.clamp(0.0, 1.0),
            view: self.view.code(),
            tiles_x,
            sky_exposure,
            depth_vis: [distance * 0.75, distance * 1.25],
            thickness_vis: 4.0 * self.dx(),
            thickness_scale: 1.0,
            scattering: f.scattering.map(|b| b.max(0.0)),
            droplet_thickness: f.droplet_thickness.max(0.0) * self.dx(),
            surface_allowance: f.splat_radius.max(0.0) * self.dx(),
            _pad: [0; 3],
        }
    }
}
