// Screen-space foam: the diffuse particles of Ihmsen, Akinci, Akinci & Teschner 2012 ("Unified spray, foam
// and bubbles for particle-based fluids") splatted into a foam target, in the spirit of their screen-space
// foam rendering and of NVIDIA's Flex diffuse-particle pass: one camera-facing quad per live particle
// (indirect draw, instance count from the simulation), a smooth kernel (1 - d^2)^2 inside its radius,
// summed additively (One + One) per channel:
//   r = foam and bubbles, g = spray (opacity units: the composite covers 1 - exp(-value)),
//   a = the nearest splat's linear view depth (Min blend), which the composite writes where no water is.
// A splat behind the terrain is discarded (the frame's depth, reversed-Z); one behind the water's surface
// (the raw fluid depth) is dimmed by Beer-Lambert exp(-absorption (z - z_water - allowance)), the
// allowance being the fluid splats' radius (particle centres lie that far behind the drawn surface).
// Splats smaller than MIN_PX pixels are widened and dimmed so their summed opacity stays (no flicker).
// Motion blur: a splat is stretched along its velocity across the view over the shutter time (a streak
// of length |v_view| shutter, as a camera exposing that long records it) and dimmed by its radius over
// the stretched half-length, so a streak covers as much as the round splat did: spray reads as streaks
// and a sparse foam layer as flowing patches rather than as dots.
#import "common/camera.wgsl"
#import "common/diffuse.wgsl"

// Rust twin: FoamUniform in src/render/foam.rs (48 bytes).
struct Foam {
    radius: vec3<f32>,   // splat radius per kind (spray, foam, bubble), m
    absorption: f32,     // 1/m of water in front
    opacity: vec3<f32>,  // per kind, at the splat's centre
    allowance: f32,      // m
    depth_scale: f32,    // frame pixels per foam-target pixel (1 or 2)
    shutter: f32,        // motion blur exposure, s (0: round splats)
    _pad0: f32,
    _pad1: f32,
}

@group(1) @binding(0) var<uniform> foam: Foam;
@group(1) @binding(1) var<storage, read> particles: array<DiffuseParticle>;
@group(1) @binding(2) var scene_depth: texture_depth_2d;
@group(1) @binding(3) var water_depth: texture_2d<f32>;

// Smallest splat radius drawn, foam-target pixels.
const MIN_PX: f32 = 0.75;
// A particle fades in over its last FADE seconds of life.
const FADE: f32 = 0.5;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    // (foam/bubble opacity, spray opacity, linear view depth of the centre, m)
    @location(1) @interpolate(flat) weight: vec3<f32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) i: u32) -> VsOut {
    var out: VsOut;
    let p = particles[i];
    let kind = min(u32(max(p.vel.w, 0.0)), KIND_BUBBLE);
    let pv = camera.view_from_world * vec4<f32>(p.pos.xyz, 1.0);
    let z = -pv.z;
    if !(z > camera.near) || !(z < camera.far) || !(p.pos.w > 0.0) {
        out.clip = vec4<f32>(0.0, 0.0, -1.0, 1.0); // culled
        return out;
    }
    var r = foam.radius[kind];
    var opacity = foam.opacity[kind] * clamp(p.pos.w / FADE, 0.0, 1.0);
    let px = r * camera.clip_from_view[1][1] * 0.5 * camera.viewport.y / (z * foam.depth_scale);
    if px < MIN_PX {
        let grow = MIN_PX / max(px, 1e-6);
        r *= grow;
        opacity /= grow * grow;
    }
    // The streak: along the velocity's part across the view, half-length r + |v| shutter / 2.
    let v = (camera.view_from_world * vec4<f32>(p.vel.xyz, 0.0)).xy;
    let streak = length(v) * foam.shutter;
    let along = select(vec2<f32>(1.0, 0.0), v / max(length(v), 1e-12), streak > 1e-6 * r);
    let across = vec2<f32>(-along.y, along.x);
    let half_length = r + 0.5 * streak;
    opacity *= r / half_length;
    var corners = array<vec2<f32>, 6>(
        vec2<f32>(-1.0, -1.0), vec2<f32>(1.0, -1.0), vec2<f32>(1.0, 1.0),
        vec2<f32>(-1.0, -1.0), vec2<f32>(1.0, 1.0), vec2<f32>(-1.0, 1.0),
    );
    let corner = corners[vi];
    let offset = along * (corner.x * half_length) + across * (corner.y * r);
    out.clip = camera.clip_from_view * vec4<f32>(pv.xyz + vec3<f32>(offset, 0.0), 1.0);
    out.uv = corner;
    let spray = select(0.0, 1.0, kind == KIND_SPRAY);
    out.weight = vec3<f32>(opacity * (1.0 - spray), opacity * spray, z);
    return out;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let d2 = dot(in.uv, in.uv);
    if d2 >= 1.0 {
        discard;
    }
    // The frame's pixel under this foam pixel's centre (the foam target may be at half resolution).
    let size = vec2<i32>(textureDimensions(scene_depth)) - 1;
    let p = min(vec2<i32>(in.clip.xy * foam.depth_scale), size);
    // The terrain (or anything opaque) in front: reversed-Z, larger is nearer.
    if textureLoad(scene_depth, p, 0) > in.clip.z {
        discard;
    }
    let z = in.weight.z;
    let zw = textureLoad(water_depth, p, 0).x;
    var att = 1.0;
    if zw > 0.0 {
        att = exp(-foam.absorption * max(z - zw - foam.allowance, 0.0));
    }
    let s = 1.0 - d2;
    let w = s * s * att;
    return vec4<f32>(in.weight.x * w, in.weight.y * w, 0.0, z);
}
