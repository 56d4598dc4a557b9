// The wave maker's paddle (a piston wave maker, see WaveMaker in src/sim/params.rs): a solid slab just
// behind the moving wall, spanning the domain across the paddle's axis and from floor to ceiling. Its
// position rest + amplitude sin(omega t) is evaluated here on the simulation's own clock (the time in its
// step state, read on the GPU), so the drawn paddle never lags the particles it pushes. 36 vertices from
// vertex_index (6 faces x 2 triangles), no vertex buffers; lit by the sun and the sky like the terrain.
#import "common/camera.wgsl"

// Rust twin: PaddleUniform in src/render/wave_maker.rs (48 bytes).
struct Paddle {
    domain_min: vec3<f32>,
    axis: u32,          // 0 = x, 2 = z
    domain_max: vec3<f32>,
    rest: f32,          // m from the domain's min wall
    amplitude: f32,     // m
    omega: f32,         // rad/s
    thickness: f32,     // m, drawn behind the wall plane
    _pad: f32,
}

// The first two fields of StepState (shaders/sim/common.wgsl): dt and the simulated time, seconds.
struct SimClock {
    dt: f32,
    time: f32,
}

@group(1) @binding(0) var<uniform> paddle: Paddle;
@group(1) @binding(1) var<storage, read> clock: SimClock;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32) -> VsOut {
    let a = paddle.axis;
    let s = clamp(paddle.domain_min[a] + paddle.rest + paddle.amplitude * sin(paddle.omega * clock.time),
                  paddle.domain_min[a], paddle.domain_max[a]);
    var lo = paddle.domain_min;
    var hi = paddle.domain_max;
    lo[a] = s - paddle.thickness;
    hi[a] = s;
    // Face f: normal along axis k = f / 2, on its min (f even) or max side; corner c of the face's quad.
    let face = vi / 6u;
    var quad = array<u32, 6>(0u, 1u, 2u, 2u, 1u, 3u);
    let corner = quad[vi % 6u];
    let k = face / 2u;
    let side = f32(face % 2u);
    var t = vec3<f32>(0.0);
    t[k] = side;
    t[(k + 1u) % 3u] = f32(corner & 1u);
    t[(k + 2u) % 3u] = f32(corner >> 1u);
    var n = vec3<f32>(0.0);
    n[k] = 2.0 * side - 1.0;
    let world = mix(lo, hi, t);
    var out: VsOut;
    out.clip = camera.clip_from_world * vec4<f32>(world, 1.0);
    out.world = world;
    out.normal = n;
    return out;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    // Two-sided: light the face turned toward the eye.
    var n = normalize(in.normal);
    if (dot(n, camera.eye - in.world) < 0.0) {
        n = -n;
    }
    let base = vec3<f32>(0.55, 0.33, 0.06); // painted steel, orange
    let lit = sun_radiance() * max(dot(n, camera.sun_dir), 0.0) + sky_ambient(n);
    return output_color(base * lit);
}
