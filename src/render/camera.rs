//! Orbit camera, and the frame uniform it makes ([`CameraUniform`], bind group 0 of every render pass).
//!
//! The camera orbits `target` at `distance`; `yaw` turns about +y (yaw = 0 puts the eye on the +z side of
//! the target, looking toward -z) and `pitch` raises the eye (positive pitch looks down). World space is
//! right-handed, y up, metres. Its projection is reversed-Z (see [`super::frame`]).

use super::frame::CameraUniform;
use glam::{Mat4, Vec2, Vec3, Vec4};

/// Closest the eye may come to the target, metres.
pub const MIN_DISTANCE: f32 = 0.05;
/// Farthest the eye may go from the target, metres.
pub const MAX_DISTANCE: f32 = 100_000.0;
/// Largest |pitch|, radians (89 degrees): the view never aligns with the up axis.
pub const MAX_PITCH: f32 = 89.0 * std::f32::consts::PI / 180.0;

/// Radians of orbit per pixel dragged.
const ROTATE_PER_PIXEL: f32 = 0.005;
/// Distance factor per wheel step (positive steps move closer).
const ZOOM_PER_STEP: f32 = 0.9;

/// A camera orbiting a target point; all angles in radians, lengths in metres.
#[derive(Clone, Debug, PartialEq)]
pub struct OrbitCamera {
    /// Point the camera looks at and orbits, metres.
    pub target: Vec3,
    /// Eye-to-target distance, metres, in `MIN_DISTANCE..=MAX_DISTANCE`.
    pub distance: f32,
    /// Rotation about +y, radians.
    pub yaw: f32,
    /// Elevation of the eye above the target's horizontal plane, radians (positive looks down),
    /// in `-MAX_PITCH..=MAX_PITCH`.
    pub pitch: f32,
    /// Vertical field of view, radians.
    pub fov_y: f32,
    /// Horizontal lens shift in normalised device coordinates (-1 = left edge, 1 = right edge): where on
    /// the screen the view axis (and so the target) lands. 0 centres it; the window sets it to the
    /// middle of the area its side panel leaves free ([`lens_shift_for_panel`]). Not part of a scene file.
    pub lens_shift: f32,
}

impl Default for OrbitCamera {
    fn default() -> Self {
        Self { target: Vec3::ZERO, distance: 10.0, yaw: 0.0, pitch: 0.4, fov_y: 50f32.to_radians(), lens_shift: 0.0 }
    }
}

impl OrbitCamera {
    /// The camera a scene file describes (degrees there, radians here), clamped to the valid ranges.
    pub fn from_desc(desc: &crate::scene::CameraDesc) -> Self {
        let mut cam = Self {
            target: Vec3::from(desc.target),
            distance: desc.distance,
            yaw: desc.yaw_deg.to_radians(),
            pitch: desc.pitch_deg.to_radians(),
            fov_y: desc.fov_y_deg.to_radians(),
            lens_shift: 0.0,
        };
        cam.clamp();
        cam
    }

    /// The scene-file form of this camera (degrees).
    pub fn to_desc(&self) -> crate::scene::CameraDesc {
        crate::scene::CameraDesc {
            target: self.target.to_array(),
            distance: self.distance,
            yaw_deg: self.yaw.to_degrees(),
            pitch_deg: self.pitch.to_degrees(),
            fov_y_deg: self.fov_y.to_degrees(),
        }
    }

    fn clamp(&mut self) {
        let d = if self.distance.is_finite() { self.distance } else { 10.0 };
        self.distance = d.clamp(MIN_DISTANCE, MAX_DISTANCE);
        self.pitch = self.pitch.clamp(-MAX_PITCH, MAX_PITCH);
        self.fov_y = self.fov_y.clamp(1f32.to_radians(), 170f32.to_radians());
        self.lens_shift = if self.lens_shift.is_finite() { self.lens_shift.clamp(-1.0, 1.0) } else { 0.0 };
    }

    /// Unit vector from the target toward the eye.
    fn back(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        Vec3::new(cp * sy, sp, cp * cy)
    }

    /// Eye position in world space, metres.
    pub fn eye(&self) -> Vec3 {
        self.target + self.distance * self.back()
    }

    /// Near clip distance, metres: 1% of the orbit distance.
    pub fn near(&self) -> f32 {
        (self.distance * 0.01).max(1e-3)
    }

    /// Far clip distance, metres: 2000 times the orbit distance (cheap under reversed-Z).
    pub fn far(&self) -> f32 {
        self.distance * 2000.0
    }

    /// Right-handed look-at matrix: view space has x right, y up, and the camera looks along -z.
    pub fn view_from_world(&self) -> Mat4 {
        let eye = self.eye();
        let f = -self.back();
        let s = f.cross(Vec3::Y).normalize();
        let u = s.cross(f);
        Mat4::from_cols(
            Vec4::new(s.x, u.x, -f.x, 0.0),
            Vec4::new(s.y, u.y, -f.y, 0.0),
            Vec4::new(s.z, u.z, -f.z, 0.0),
            Vec4::new(-s.dot(eye), -u.dot(eye), f.dot(eye), 1.0),
        )
    }

    /// Reversed-Z perspective for `aspect` = width / height: view z = -near maps to depth 1,
    /// view z = -far to depth 0; the view axis lands at ndc x = [`Self::lens_shift`].
    pub fn clip_from_view(&self, aspect: f32) -> Mat4 {
        let (n, f) = (self.near(), self.far());
        let g = 1.0 / (0.5 * self.fov_y).tan();
        // depth = (z n / (f - n) + n f / (f - n)) / -z: 1 at z = -n, 0 at z = -f.
        // ndc x = (g / aspect x - shift z) / -z: a point on the axis (x = 0) lands at +shift.
        Mat4::from_cols(
            Vec4::new(g / aspect.max(1e-6), 0.0, 0.0, 0.0),
            Vec4::new(0.0, g, 0.0, 0.0),
            Vec4::new(-self.lens_shift, 0.0, n / (f - n), -1.0),
            Vec4::new(0.0, 0.0, n * f / (f - n), 0.0),
        )
    }

    /// `clip_from_view(aspect) * view_from_world()`.
    pub fn clip_from_world(&self, aspect: f32) -> Mat4 {
        self.clip_from_view(aspect) * self.view_from_world()
    }

    /// Orbits by a mouse drag of (dx, dy) pixels: right turns the view left around the target,
    /// down raises the eye.
    pub fn rotate(&mut self, dx_pixels: f32, dy_pixels: f32) {
        self.yaw -= dx_pixels * ROTATE_PER_PIXEL;
        self.yaw = self.yaw.rem_euclid(std::f32::consts::TAU);
        self.pitch += dy_pixels * ROTATE_PER_PIXEL;
        self.clamp();
    }

    /// Moves toward (positive steps) or away from the target; each step scales the distance by 0.9.
    pub fn zoom(&mut self, wheel_steps: f32) {
        self.distance *= ZOOM_PER_STEP.powf(wheel_steps);
        self.clamp();
    }

    /// Moves the target in the view plane so that the point under the cursor at the target's depth
    /// follows a drag of (dx, dy) pixels in a viewport `viewport_height` pixels tall.
    pub fn pan(&mut self, dx_pixels: f32, dy_pixels: f32, viewport_height: f32) {
        let metres_per_pixel = 2.0 * self.distance * (0.5 * self.fov_y).tan() / viewport_height.max(1.0);
        let forward = -self.back();
        let right = forward.cross(Vec3::Y).normalize_or_zero();
        let up = right.cross(forward);
        self.target += (-dx_pixels * right + dy_pixels * up) * metres_per_pixel;
    }

    /// The uniform block for a viewport of `size` pixels, with the sun's unit direction (toward the sun),
    /// its intensity (linear radiance scale, 1 = nominal daylight) and the time in seconds.
    pub fn uniform(&self, size: (u32, u32), sun_dir: Vec3, sun_intensity: f32, time: f32) -> CameraUniform {
        let viewport = Vec2::new(size.0.max(1) as f32, size.1.max(1) as f32);
        let clip_from_view = self.clip_from_view(viewport.x / viewport.y);
        let view_from_world = self.view_from_world();
        let clip_from_world = clip_from_view * view_from_world;
        CameraUniform {
            clip_from_world: clip_from_world.to_cols_array_2d(),
            view_from_world: view_from_world.to_cols_array_2d(),
            clip_from_view: clip_from_view.to_cols_array_2d(),
            world_from_clip: clip_from_world.inverse().to_cols_array_2d(),
            eye: self.eye().to_array(),
            time,
            sun_dir: sun_dir.normalize_or(Vec3::Y).to_array(),
            sun_intensity,
            viewport: viewport.to_array(),
            near: self.near(),
            far: self.far(),
        }
    }
}

/// The [`OrbitCamera::lens_shift`] that centres the view on the part of a window `window_width` pixels
/// wide that a side panel `panel_width` pixels wide on its left leaves free: the free area's middle,
/// `panel_width / window_width` in normalised device coordinates. 0 without a panel (or for a degenerate
/// window); a panel wider than the window counts as the whole window.
pub fn lens_shift_for_panel(panel_width: f32, window_width: f32) -> f32 {
    if !(panel_width > 0.0 && window_width > 0.0) {
        return 0.0;
    }
    (panel_width / window_width).min(1.0)
}

/// View-space position (metres) of the point at normalised device coordinates `ndc` and linear view depth
/// `depth` (metres in front of the eye) under the projection `clip_from_view` (off-centre allowed: its
/// `[2][0]`, `[2][1]` are minus the lens shift). The inverse of projecting with `clip_from_view`; twin of
/// `view_pos` in `shaders/render/composite.wgsl`.
pub fn pos_in_view_from_ndc(clip_from_view: &Mat4, ndc: Vec2, depth: f32) -> Vec3 {
    let m = clip_from_view.to_cols_array_2d();
    Vec3::new((ndc.x + m[2][0]) / m[0][0] * depth, (ndc.y + m[2][1]) / m[1][1] * depth, -depth)
}

/// Unit vector toward the sun from an azimuth (degrees about +y, 0 = +z, 90 = +x) and an elevation
/// above the horizon (degrees).
pub fn sun_direction(azimuth_deg: f32, elevation_deg: f32) -> Vec3 {
    let (sa, ca) = azimuth_deg.to_radians().sin_cos();
    let (se, ce) = elevation_deg.to_radians().sin_cos();
    Vec3::new(ce * sa, se, ce * ca)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reversed_z_maps_near_to_one_and_far_to_zero() {
        let cam = OrbitCamera::default();
        let p = cam.clip_from_view(1.5);
        let near = p * Vec4::new(0.0, 0.0, -cam.near(), 1.0);
        let far = p * Vec4::new(0.0, 0.0, -cam.far(), 1.0);
        assert!((near.z / near.w - 1.0).abs() < 1e-5);
        assert!((far.z / far.w).abs() < 1e-5);
    }

    #[test]
    fn target_projects_to_centre_and_desc_round_trips() {
        let cam = OrbitCamera {
            target: Vec3::new(1.0, 2.0, 3.0),
            distance: 7.0,
            yaw: 0.3,
            pitch: 0.5,
            fov_y: 0.8,
            lens_shift: 0.0,
        };
        let c = cam.clip_from_world(1.0).project_point3(cam.target);
        assert!(c.x.abs() < 1e-5 && c.y.abs() < 1e-5);
        let back = OrbitCamera::from_desc(&cam.to_desc());
        assert!((back.eye() - cam.eye()).length() < 1e-4);
    }

    #[test]
    fn the_target_lands_in_the_middle_of_the_area_beside_the_panel() {
        // 1280x720 with a 320 px panel on the left: the free area is x in 320..1280, its middle x = 800.
        let (w, h, panel) = (1280.0, 720.0, 320.0);
        let cam = OrbitCamera {
            target: Vec3::new(1.0, 2.0, 3.0),
            lens_shift: lens_shift_for_panel(panel, w),
            ..OrbitCamera::default()
        };
        let c = cam.clip_from_world(w / h).project_point3(cam.target);
        let px = (0.5 + 0.5 * c.x) * w;
        assert!((px - 800.0).abs() < 1e-2, "target at x = {px} px");
        assert!(c.y.abs() < 1e-5, "{c:?}");
        // The uniform carries the same projection, and its inverse.
        let u = cam.uniform((w as u32, h as u32), Vec3::Y, 1.0, 0.0);
        let c2 = Mat4::from_cols_array_2d(&u.clip_from_world).project_point3(cam.target);
        assert!((c2 - c).length() < 1e-5);
        // No panel (and the headless captures): centred.
        assert_eq!(lens_shift_for_panel(0.0, w), 0.0);
        assert_eq!(lens_shift_for_panel(panel, 0.0), 0.0);
        assert_eq!(lens_shift_for_panel(2.0 * w, w), 1.0);
    }

    #[test]
    fn reconstruction_inverts_the_shifted_projection() {
        let cam = OrbitCamera { lens_shift: 0.3, ..OrbitCamera::default() };
        let p = cam.clip_from_view(16.0 / 9.0);
        let inverse = p.inverse();
        for q in [Vec3::new(0.7, -0.4, -3.0), Vec3::new(-2.0, 1.5, -12.0), Vec3::new(0.0, 0.0, -0.5)] {
            let ndc = p.project_point3(q);
            let back = pos_in_view_from_ndc(&p, Vec2::new(ndc.x, ndc.y), -q.z);
            assert!((back - q).length() < 1e-4 * q.length(), "{q} came back as {back}");
            // The ray through the pixel from the inverse (the sky's and the splat's way) agrees.
            let far = inverse.project_point3(Vec3::new(ndc.x, ndc.y, 0.5));
            assert!(far.normalize().dot(q.normalize()) > 1.0 - 1e-6, "{q}: ray {far}");
        }
        // Without the shift term the reconstruction misses: the test can fail.
        let unshifted = OrbitCamera { lens_shift: 0.0, ..cam.clone() }.clip_from_view(16.0 / 9.0);
        let q = Vec3::new(0.7, -0.4, -3.0);
        let ndc = p.project_point3(q);
        assert!((pos_in_view_from_ndc(&unshifted, Vec2::new(ndc.x, ndc.y), 3.0) - q).length() > 0.1);
    }

    #[test]
    fn pan_keeps_the_point_under_the_cursor() {
        let mut cam = OrbitCamera::default();
        let h = 600.0;
        let before = cam.clip_from_world(1.0).project_point3(cam.target);
        let probe = cam.target;
        cam.pan(30.0, -20.0, h);
        let after = cam.clip_from_world(1.0).project_point3(probe);
        // 30 px right and 20 px up in a 600 px viewport: NDC moves by 2 * px / h.
        assert!((after.x - before.x - 0.1).abs() < 1e-4, "{after:?}");
        assert!((after.y - before.y - 2.0 * 20.0 / h).abs() < 1e-4, "{after:?}");
    }
}
