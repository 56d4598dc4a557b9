// Screen-space curvature flow of the fluid's depth: van der Laan, Green & Sainz, "Screen space fluid
// rendering with curvature flow", I3D 2009. The depth z(x, y) (linear view depth, metres; 0 = no fluid)
// moves along its mean curvature H, computed from screen-space derivatives with Cx = 2 / (Vx Fx),
// Cy = 2 / (Vy Fy):
//   D  = Cy^2 zx^2 + Cx^2 zy^2 + Cx^2 Cy^2 z^2
//   Ex = 0.5 zx dD/dx - zxx D,  Ey = 0.5 zy dD/dy - zyy D
//   2H = (Cy Ex + Cx Ey) / D^(3/2)
// explicit Euler z <- z - dt H (z here is the positive distance, so this sign flattens bumps). The step is
// `step` times the explicit scheme's stability limit for small slopes, dt = step z / (1/Cx + 1/Cy), so the
// same setting is stable at any depth and resolution. Derivatives across depth discontinuities (a
// neighbour with no fluid, or more than `threshold` metres away) are zeroed, or one-sided when the other
// side is continuous, so silhouettes stay put.
// Empty-space skipping (src/render/fluid_tiles.rs): `flow_tiles` runs one workgroup per listed tile of
// the fluid tiles pass, dispatched indirectly; `flow_full` runs the same per-pixel update over the whole
// screen (for comparison and tests). The first iteration reads the raw depth; the tiles pass wrote 0 into
// both ping-pong textures over every tile it did not list, so they hold this frame's depth everywhere
// without a copy of the raw depth.

#import "common/tiles.wgsl"

// Rust twin: FlowUniform in src/render/curvature_flow.rs (32 bytes).
struct Flow {
    size: vec2<u32>,
    tiles_x: u32,
    step: f32,
    cx: f32,
    cy: f32,
    threshold: f32,
    _pad: u32,
}

@group(1) @binding(0) var<uniform> flow: Flow;
@group(1) @binding(1) var src: texture_2d<f32>;
@group(1) @binding(2) var dst: texture_storage_2d<r32float, write>;
// Bindings 3 and 4: the tile list (common/tiles.wgsl).

fn z_at(p: vec2<i32>) -> f32 {
    let q = clamp(p, vec2<i32>(0), vec2<i32>(flow.size) - 1);
    return textureLoad(src, q, 0).x;
}

// Whether neighbour depth n continues the surface at depth z.
fn continuous(n: f32, z: f32) -> bool {
    return n > 0.0 && abs(n - z) < flow.threshold;
}

// First derivative from the two neighbours: central, one-sided, or 0.
fn first(lo: f32, z: f32, hi: f32, vlo: bool, vhi: bool) -> f32 {
    if vlo && vhi {
        return 0.5 * (hi - lo);
    }
    if vhi {
        return hi - z;
    }
    if vlo {
        return z - lo;
    }
    return 0.0;
}

fn flow_pixel(p: vec2<i32>) {
    if any(p >= vec2<i32>(flow.size)) {
        return;
    }
    let z = z_at(p);
    if z <= 0.0 {
        textureStore(dst, p, vec4<f32>(z, 0.0, 0.0, 0.0));
        return;
    }
    let zl = z_at(p + vec2<i32>(-1, 0));
    let zr = z_at(p + vec2<i32>(1, 0));
    let zd = z_at(p + vec2<i32>(0, -1));
    let zu = z_at(p + vec2<i32>(0, 1));
    let vl = continuous(zl, z) && p.x > 0;
    let vr = continuous(zr, z) && p.x + 1 < i32(flow.size.x);
    let vd = continuous(zd, z) && p.y > 0;
    let vu = continuous(zu, z) && p.y + 1 < i32(flow.size.y);
    let zx = first(zl, z, zr, vl, vr);
    let zy = first(zd, z, zu, vd, vu);
    let zxx = select(0.0, zr - 2.0 * z + zl, vl && vr);
    let zyy = select(0.0, zu - 2.0 * z + zd, vd && vu);
    var zxy = 0.0;
    if vl && vr && vd && vu {
        let a = z_at(p + vec2<i32>(1, 1));
        let b = z_at(p + vec2<i32>(1, -1));
        let c = z_at(p + vec2<i32>(-1, 1));
        let d = z_at(p + vec2<i32>(-1, -1));
        if continuous(a, z) && continuous(b, z) && continuous(c, z) && continuous(d, z) {
            zxy = 0.25 * (a - b - c + d);
        }
    }
    let cx = flow.cx;
    let cy = flow.cy;
    let cx2 = cx * cx;
    let cy2 = cy * cy;
    let dd = cy2 * zx * zx + cx2 * zy * zy + cx2 * cy2 * z * z;
    let ddx = 2.0 * (cy2 * zx * zxx + cx2 * zy * zxy + cx2 * cy2 * z * zx);
    let ddy = 2.0 * (cy2 * zx * zxy + cx2 * zy * zyy + cx2 * cy2 * z * zy);
    let ex = 0.5 * zx * ddx - zxx * dd;
    let ey = 0.5 * zy * ddy - zyy * dd;
    let h = 0.5 * (cy * ex + cx * ey) / pow(dd, 1.5);
    let dt = flow.step * z / (1.0 / cx + 1.0 / cy);
    textureStore(dst, p, vec4<f32>(max(z - dt * h, 1e-6), 0.0, 0.0, 0.0));
}

@compute @workgroup_size(16, 16)
fn flow_tiles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let p = listed_pixel(wid, nwg, lid, flow.tiles_x);
    if p.x >= 0 {
        flow_pixel(p);
    }
}

@compute @workgroup_size(16, 16)
fn flow_full(@builtin(global_invocation_id) gid: vec3<u32>) {
    flow_pixel(vec2<i32>(gid.xy));
}
