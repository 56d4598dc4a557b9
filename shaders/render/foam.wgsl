// Screen-space foam: the diffuse particles of Ihmsen, Akinci, Akinci & Teschner 2012 ("Unified spray, foam
// and bubbles for particle-based fluids") splatted into a foam target, in the spirit of their screen-space
// foam rendering and of NVIDIA's Flex diffuse-particle pass: one camera-facing quad per live particle
// (indirect draw, instance count from the simulation), a smooth kernel (1 - d^2)^2 inside its radius,
// summed additively (One + One) per channel:
//   r = foam and bubbles, g = spray (opacity units: the composite covers 1 - exp(-value)),
//   b = the bubbles' departure from smooth splats, summed (negative in their clear insides, positive on
//       their rims; the composite brightens and darkens the foam by it: dense foam, whose coverage is
//       saturated, keeps its bubbles as shading),
//   a = the nearest splat's linear view depth (Min blend), which the composite writes where no water is.
// A splat behind the terrain is discarded (the frame's depth, reversed-Z); one behind the water's surface
// (the raw fluid depth) is dimmed by Beer-Lambert exp(-absorption (z - z_water - allowance)), the
// allowance being the fluid splats' radius (particle centres lie that far behind the drawn surface).
// Splats smaller than MIN_PX pixels are widened and dimmed so their summed opacity stays (no flicker).
// Motion blur: a splat is stretched along its velocity across the view over the shutter time (a streak
// of length |v_view| shutter, as a camera exposing that long records it) and dimmed by its radius over
// the stretched half-length, so a streak covers as much as the round splat did: spray reads as streaks
// and a sparse foam layer as flowing patches rather than as dots.
// Bubbles: a foam splat (not spray, not an underwater bubble) is a cluster of bubbles, not a smooth disc: its
// opacity is modulated by a cellular pattern (after Worley 1996, "A cellular texture basis function") in
// the splat's own coordinates, so it travels and streaks with the particle. Cells of 1 / bubbles splat
// radii, one round bubble of random size in each: its inside clearer (by up to lace), its rim brighter,
// so thin foam reads as a lace of holes and rings and dense foam (many splats summed) as packed bubbles;
// the mean opacity of a splat is unchanged. Over its last BREAKUP_SECONDS the foam breaks up: the bubbles
// burst and the layer thins to lace. The pattern is seeded by the particle's simulated time of death (the pool's clock + its lifetime left: constant while it is foam,
// which ages 1 s/s, and different from particle to particle), continuously, so it holds still from
// frame to frame although the pool is compacted in a new order every frame.
#import "common/camera.wgsl"
#import "common/diffuse.wgsl"

// Rust twin: FoamUniform in src/render/foam.rs (64 bytes).
struct Foam {
    radius: vec3<f32>,   // splat radius per kind (spray, foam, bubble), m
    absorption: f32,     // 1/m of water in front
    opacity: vec3<f32>,  // per kind, at the splat's centre
    allowance: f32,      // m
    depth_scale: f32,    // frame pixels per foam-target pixel (1 or 2)
    shutter: f32,        // motion blur exposure, s (0: round splats)
    bubbles: f32,        // bubble cells per splat radius (0: smooth splats)
    lace: f32,           // 0..1: how much of a cell's inside may be clear
    clock_index: u32,    // index in `clock` of the pool's simulated time (s, f32)
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(1) @binding(0) var<uniform> foam: Foam;
@group(1) @binding(1) var<storage, read> particles: array<DiffuseParticle>;
@group(1) @binding(2) var scene_depth: texture_depth_2d;
@group(1) @binding(3) var water_depth: texture_2d<f32>;
// The pool's state (src/sim/diffuse.rs DiffuseState, read as floats): its simulated time at
// `foam.clock_index`, from which the lifetimes count down.
@group(1) @binding(4) var<storage, read> clock: array<f32>;

// Smallest splat radius drawn, foam-target pixels.
const MIN_PX: f32 = 0.75;
// A particle fades in over its last FADE seconds of life.
const FADE: f32 = 0.5;
// Radians of the bubble pattern's seed per second of the time of death: particles dying 0.05 s apart
// get unrelated patterns, the f32 drift of clock + lifetime (about 1e-4 s) moves nothing visibly.
const SEED_RATE: f32 = 40.0;
// Brightening of a bubble's rim, of lace: the kernel-weighted means over a splat of the clear insides
// (0.178) and of the rims (0.316), sampled over seeds at 1.5 and 2.5 cells per radius, give a mean
// opacity factor of 1 + lace (0.316 RIM - 0.178) = 1: a splat adds the opacity it did when smooth.
const RIM: f32 = 0.56;
// Foam breaks up over its last BREAKUP_SECONDS of life (lifetimes are 0.5-1 times the diffuse
// particles' lifetime, 2.5 s by default): its bubbles burst one by one (every inside clears, the holes
// grow past the rims and merge), so an old layer thins into a lace of the films between them and then
// into scattered patches before it fades (FADE).
const BREAKUP_SECONDS: f32 = 1.0;
// Bubble cells narrower than this many foam-target pixels fade to smooth (they would only alias); the
// texture is whole from twice it.
const MIN_CELL_PX: f32 = 1.5;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    // (foam/bubble opacity, spray opacity, linear view depth of the centre, m)
    @location(1) @interpolate(flat) weight: vec3<f32>,
    // Bubble pattern: (cells per quad unit along the streak, across it, lace (0: smooth), seed phase rad)
    @location(2) @interpolate(flat) bubble: vec4<f32>,
    // 0..1: how far the foam's bubbles have burst (see BREAKUP_SECONDS)
    @location(3) @interpolate(flat) breakup: f32,
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
    // Foam alone is textured, fading out where the cells get too small on screen.
    let cell_px = px / max(foam.bubbles, 1e-6);
    let fine = smoothstep(MIN_CELL_PX, 2.0 * MIN_CELL_PX, cell_px);
    let textured = kind == KIND_FOAM && foam.bubbles > 0.0 && foam.lace > 0.0;
    let lace = select(0.0, foam.lace * fine, textured);
    out.breakup = select(0.0, (1.0 - clamp(p.pos.w / BREAKUP_SECONDS, 0.0, 1.0)) * fine, textured);
    let death = clock[foam.clock_index] + p.pos.w;
    // In the quad's coordinates: a streaked splat's bubbles are streaked with it (motion-blurred).
    let cells = vec2<f32>(foam.bubbles);
    out.bubble = vec4<f32>(cells, lace, fract(death * (SEED_RATE / 6.2831853)) * 6.2831853);
    return out;
}

// PCG hash (O'Neill 2014; Jarzynski & Olano 2020, "Hash functions for GPU rendering").
fn pcg(v: u32) -> u32 {
    let s = v * 747796405u + 2891336453u;
    let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

// Four uniform numbers 0..1 of cell c.
fn cell_random(c: vec2<i32>) -> vec4<f32> {
    let a = pcg(bitcast<u32>(c.x) ^ pcg(bitcast<u32>(c.y) + 0x9e3779b9u));
    let b = pcg(a);
    return vec4<f32>(vec4<u32>(a & 0xffffu, a >> 16u, b & 0xffffu, b >> 16u)) * (1.0 / 65535.0);
}

// Opacity factor of the bubble pattern at q (cell units) for seed `phase` (rad) and `lace` (see the
// header). Each cell holds one round bubble: its centre circles the cell's middle, its radius is 0.3 to
// 0.6 cells, its clarity swings, each at the cell's own rate in the seed, so every seed gives another
// cluster. Of the bubbles around q (3 x 3 cells) the one q lies deepest in (smallest distance over radius
// t) decides: its inside (t < 0.95) is clear by lace x its clarity, its rim (t about 1) brighter by
// RIM x lace; the mean over a splat stays 1 (see RIM). As the foam breaks up (`breakup` 0 -> 1) every
// bubble clears and its hole widens to t = 1.25, past the rims: the mean falls, the splat thins to lace.
fn bubble_pattern(q: vec2<f32>, phase: f32, lace: f32, breakup: f32) -> f32 {
    let base = vec2<i32>(floor(q));
    var t = 9.0;
    var clear = 0.0;
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            let c = base + vec2<i32>(dx, dy);
            let r = cell_random(c);
            let a = phase * (0.5 + r.zw) + 6.2831853 * r.xy;
            let centre = vec2<f32>(c) + 0.5 + 0.3 * vec2<f32>(cos(a.x), sin(a.y));
            let d = length(q - centre) / (0.3 + 0.3 * r.w);
            if d < t {
                t = d;
                clear = 0.5 + 0.5 * sin(phase * (0.7 + 0.6 * r.z) + 6.2831853 * r.z);
            }
        }
    }
    let burst = mix(clear, 1.0, breakup);
    let hole = burst * (1.0 - smoothstep(0.5 + 0.45 * breakup, 0.95 + 0.3 * breakup, t));
    let rim = exp(-((t - 1.0) * (t - 1.0)) * 25.0);
    let l = mix(lace, 1.0, breakup);
    return max(1.0 + l * (RIM * rim * (1.0 - breakup) - hole), 0.0);
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
    var pattern = 1.0;
    if in.bubble.z > 0.0 {
        // Offset by the seed too, so the cells do not line up from splat to splat.
        let shift = vec2<f32>(sin(3.0 * in.bubble.w), cos(2.0 * in.bubble.w));
        pattern = bubble_pattern(in.uv * in.bubble.xy + shift, in.bubble.w, in.bubble.z, in.breakup);
    }
    // b: the pattern's departure from the smooth splat, which the composite shades by (see the header).
    let foam_w = in.weight.x * w;
    return vec4<f32>(foam_w * pattern, in.weight.y * w, foam_w * (pattern - 1.0), z);
}
