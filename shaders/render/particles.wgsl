// Particles as ray-cast sphere impostors (the method of Gumhold 2003, "Splatting illuminated ellipsoids
// with depth correction", for spheres): one instanced quad per particle, read straight from the
// simulation's storage buffers. The quad faces the eye and lies on the sphere's front tangent plane,
// sized to the tangent cone so it bounds the sphere's exact screen footprint. The fragment shader
// intersects the pixel's view ray with the sphere (the numerically robust form of Haines et al.,
// Ray Tracing Gems ch. 7), discards misses, writes the hit's true depth, and shades it: Lambert +
// Blinn-Phong sun, sky ambient, and a Schlick-Fresnel sky reflection so the particles read as water.
// Colour comes from speed (blue -> cyan -> white), density or pressure (viridis) over [lo, hi].
#import "common/camera.wgsl"

// Rust twin: ParticleUniform in src/render/particles.rs (32 bytes).
struct Style {
    uniform_color: vec3<f32>,
    radius: f32,
    range: vec2<f32>,
    color_mode: u32,
    _pad: u32,
}

@group(1) @binding(0) var<uniform> style: Style;
// xyz = position (m), w = density (kg/m^3).
#split_array 1 1 read positions vec4<f32>
// xyz = velocity (m/s), w = pressure (Pa).
#split_array 1 2 read velocities vec4<f32>

const MODE_SPEED: u32 = 0u;
const MODE_DENSITY: u32 = 1u;
const MODE_PRESSURE: u32 = 2u;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) center: vec3<f32>,
    @location(2) @interpolate(flat) color: vec3<f32>,
}

// Linear-light "ice" map for water: deep blue -> cyan -> near white.
fn ice(t: f32) -> vec3<f32> {
    let a = vec3<f32>(0.012, 0.07, 0.32);
    let b = vec3<f32>(0.05, 0.42, 0.80);
    let c = vec3<f32>(0.85, 0.95, 1.0);
    return select(mix(b, c, (t - 0.5) * 2.0), mix(a, b, t * 2.0), t < 0.5);
}

// Viridis (perceptually uniform), polynomial fit by Matt Zucker (CC0), converted to linear light.
fn viridis(t: f32) -> vec3<f32> {
    let c0 = vec3<f32>(0.2777273272234177, 0.005407344544966578, 0.3340998053353061);
    let c1 = vec3<f32>(0.1050930431085774, 1.404613529898575, 1.384590162594685);
    let c2 = vec3<f32>(-0.3308618287255563, 0.214847559468213, 0.09509516302823659);
    let c3 = vec3<f32>(-4.634230498983486, -5.799100973351585, -19.33244095627987);
    let c4 = vec3<f32>(6.228269936347081, 14.17993336680509, 56.69055260068105);
    let c5 = vec3<f32>(4.776384997670288, -13.74514537774601, -65.35303263337234);
    let c6 = vec3<f32>(-5.435455855934631, 4.645852612178535, 26.3124352495832);
    let s = c0 + t * (c1 + t * (c2 + t * (c3 + t * (c4 + t * (c5 + t * c6)))));
    return pow(clamp(s, vec3<f32>(0.0), vec3<f32>(1.0)), vec3<f32>(2.2));
}

fn particle_color(i: u32) -> vec3<f32> {
    if style.color_mode > MODE_PRESSURE {
        return style.uniform_color;
    }
    var q: f32;
    switch style.color_mode {
        case MODE_SPEED: { q = length(velocities_load(i).xyz); }
        case MODE_DENSITY: { q = positions_load(i).w; }
        default: { q = velocities_load(i).w; }
    }
    let span = style.range.y - style.range.x;
    let t = clamp(select(0.0, (q - style.range.x) / span, abs(span) > 1e-20), 0.0, 1.0);
    return select(viridis(t), ice(t), style.color_mode == MODE_SPEED);
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) i: u32) -> VsOut {
    var out: VsOut;
    let c = positions_load(i).xyz;
    let r = style.radius;
    let to_eye = camera.eye - c;
    let d = length(to_eye);
    // Culled: eye inside the sphere, a non-finite position (NaN fails every comparison), or a particle
    // parked in the emitters' pool (w < 0).
    if !(d > r * 1.001) || !(d < 3.0e38) || positions_load(i).w < 0.0 {
        out.clip = vec4<f32>(0.0, 0.0, -1.0, 1.0);
        return out;
    }
    let world = sphere_billboard_corner(c, r, d, vi);
    out.clip = camera.clip_from_world * vec4<f32>(world, 1.0);
    out.world = world;
    out.center = c;
    out.color = particle_color(i);
    return out;
}

struct FsOut {
    @location(0) color: vec4<f32>,
    @builtin(frag_depth) depth: f32,
}

@fragment
fn fs_main(in: VsOut) -> FsOut {
    let r = style.radius;
    let dir = normalize(in.world - camera.eye);
    let oc = camera.eye - in.center;
    let b = dot(oc, dir);
    let perp = oc - b * dir;                 // centre-to-ray offset, computed without cancellation
    let disc = r * r - dot(perp, perp);
    if disc < 0.0 || b > 0.0 {
        discard;
    }
    let t = -b - sqrt(disc);
    let hit = camera.eye + t * dir;
    let n = (hit - in.center) / r;
    let clip = camera.clip_from_world * vec4<f32>(hit, 1.0);

    let v = -dir;
    let l = camera.sun_dir;
    let ndl = max(dot(n, l), 0.0);
    let h = normalize(l + v);
    let ndv = max(dot(n, v), 0.0);
    let fresnel = 0.02 + 0.98 * pow(1.0 - ndv, 5.0);
    let sun = sun_radiance();
    let diffuse = in.color * (0.85 * sun * ndl + sky_ambient(n));
    let reflected = sky_radiance(reflect(dir, n));
    let spec = sun * pow(max(dot(n, h), 0.0), 96.0) * (0.25 + fresnel) * f32(ndl > 0.0);
    var col = mix(diffuse, reflected, 0.7 * fresnel) + spec;

    var out: FsOut;
    out.color = output_color(col);
    out.depth = clip.z / clip.w;
    return out;
}
