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
// Empty-space skipping: `classify` marks the 16x16 tiles with fluid within one pixel (the 3x3 stencil's
// radius), appends them to a list with an atomic counter and `write_args` turns the count into indirect
// dispatch arguments; `flow_tiles` then runs one workgroup per listed tile, in rows of at most
// MAX_GROUPS_X workgroups (over 65 535 tiles of 16x16 from about 5400x3000 pixels on). `flow_full` runs
// the same per-pixel update over the whole screen (for comparison and tests). The first iteration reads
// the raw depth; `classify` writes 0 into both ping-pong textures over every tile it does not list (the
// raw depth is 0 there), so they hold this frame's depth everywhere without a copy of the raw depth.

#import "common/dispatch.wgsl"

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

const TILE: u32 = 16u;

@group(1) @binding(0) var<uniform> flow: Flow;
@group(1) @binding(1) var src: texture_2d<f32>;
@group(1) @binding(2) var dst: texture_storage_2d<r32float, write>;
@group(1) @binding(3) var<storage, read> tiles: array<u32>;

// Tile classification (its own bind group: binding 1 = the raw depth).
@group(1) @binding(4) var<storage, read_write> tile_list: array<u32>;
@group(1) @binding(5) var<storage, read_write> tile_counter: atomic<u32>;
@group(1) @binding(6) var<storage, read_write> tile_args: array<u32>;
@group(1) @binding(7) var<storage, read_write> tile_mask: array<u32>;
// The flow's view of `tile_args` (x, y, 1, tile count), read-only beside its use as indirect arguments.
@group(1) @binding(8) var<storage, read> listed: array<u32>;
// The two ping-pong textures, zeroed by classify over the tiles it does not list.
@group(1) @binding(9) var zero_a: texture_storage_2d<r32float, write>;
@group(1) @binding(10) var zero_b: texture_storage_2d<r32float, write>;

fn z_at(p: vec2<i32>) -> f32 {
    let q = clamp(p, vec2<i32>(0), vec2<i32>(flow.size) - 1);
    return textureLoad(src, q, 0).x;
}

var<workgroup> tile_has_fluid: atomic<u32>;

@compute @workgroup_size(16, 16)
fn classify(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    if all(lid.xy == vec2<u32>(0u)) {
        atomicStore(&tile_has_fluid, 0u);
    }
    workgroupBarrier();
    let p = vec2<i32>(wid.xy * TILE + lid.xy);
    if all(p < vec2<i32>(flow.size)) {
        var any_fluid = false;
        for (var dy = -1; dy <= 1; dy++) {
            for (var dx = -1; dx <= 1; dx++) {
                any_fluid = any_fluid || z_at(p + vec2<i32>(dx, dy)) > 0.0;
            }
        }
        if any_fluid {
            atomicOr(&tile_has_fluid, 1u);
        }
    }
    workgroupBarrier();
    let flag = atomicLoad(&tile_has_fluid);
    if flag == 0u && all(p < vec2<i32>(flow.size)) {
        textureStore(zero_a, p, vec4<f32>(0.0));
        textureStore(zero_b, p, vec4<f32>(0.0));
    }
    if all(lid.xy == vec2<u32>(0u)) {
        let tile = wid.y * flow.tiles_x + wid.x;
        tile_mask[tile] = flag;
        if flag != 0u {
            tile_list[atomicAdd(&tile_counter, 1u)] = tile;
        }
    }
}

@compute @workgroup_size(1)
fn write_args() {
    let n = atomicLoad(&tile_counter);
    let args = dispatch_args(n);
    tile_args[0] = args.x;
    tile_args[1] = args.y;
    tile_args[2] = args.z;
    tile_args[3] = n;
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
    let k = flat_index(wid, nwg, 1u);
    if (k >= listed[3]) {
        return;
    }
    let tile = tiles[k];
    let origin = vec2<u32>(tile % flow.tiles_x, tile / flow.tiles_x) * TILE;
    flow_pixel(vec2<i32>(origin + lid.xy));
}

@compute @workgroup_size(16, 16)
fn flow_full(@builtin(global_invocation_id) gid: vec3<u32>) {
    flow_pixel(vec2<i32>(gid.xy));
}
