// Shared declarations of the SPH compute passes: the parameter block, the step state kept on the GPU,
// the particle buffers (bind group 0, one layout for every simulation kernel), the uniform neighbour
// grid (Green 2010; cell size = support radius 2h, cells numbered x fastest so a row of three cells
// along x is one contiguous range of sorted particles), the terrain heightfield, the static obstacles'
// signed distance fields, and the boundary density of walls, terrain and obstacles as half-space
// integrals of the kernel (after Koschier & Bender 2017's density maps, for boundaries locally planar
// over the support radius: each obstacle's plane is the tangent plane its distance field gives).
#import "common/kernels.wgsl"
#import "common/dispatch.wgsl"

// Threads per workgroup of the per-particle kernels (a pipeline constant, swept by `waterview bench`).
override WG: u32 = 128u;

// Rust twin: SimUniforms in src/sim/gpu_data.rs.
struct Params {
    domain_min: vec3<f32>,
    h: f32,
    domain_max: vec3<f32>,
    mass: f32,
    grid_origin: vec3<f32>,
    cell_size: f32,
    grid_dims: vec3<u32>,
    num_particles: u32,
    gravity: vec3<f32>,
    rho0: f32,
    terrain_origin: vec2<f32>,
    terrain_spacing: vec2<f32>,
    terrain_dims: vec2<u32>,
    table_n: u32,
    num_cells: u32,
    viscosity: f32,
    xsph: f32,
    cfl: f32,
    max_dt: f32,
    delta_unit: f32,
    friction: f32,
    r_collide: f32,
    warm_start: f32,
    boundary_factor: f32,
    grad_correction: f32,
    method: u32,            // 0 = DFSPH, 1 = PCISPH, 2 = WCSPH
    sound_speed: f32,       // WCSPH c, m/s
    tait_b: f32,            // WCSPH B = c^2 rho0 / 7, Pa
    err_scale: f32,         // DFSPH: fixed-point scale of the summed per-particle errors
    target_density: f32,    // DFSPH: mean relative density error to reach
    target_divergence: f32, // DFSPH: mean relative dt * divergence to reach
    density_max_iter: u32,
    divergence_max_iter: u32,
    frame_end: f32,         // offline capture: simulated time (s) the steps stop at exactly; <= 0 = free running
    surface_tension: f32,   // Akinci et al. 2013's gamma; 0 = off
    wave_axis: u32,         // wave maker: 0 = off, 1 = paddle normal to x, 3 = normal to z (axis + 1)
    wave_rest: f32,         // wave maker: rest distance from the domain's min wall, m
    wave_amplitude: f32,    // wave maker: amplitude, m
    wave_omega: f32,        // wave maker: 2 pi / period, rad/s
}

const METHOD_DFSPH: u32 = 0u;
const METHOD_PCISPH: u32 = 1u;
const METHOD_WCSPH: u32 = 2u;

// Rust twin: StepState in src/sim/gpu_data.rs. Written only by the time-step and integrate kernels.
struct StepState {
    dt: f32,
    time: f32,
    max_speed_bits: atomic<u32>,
    steps: u32,
    err_sum: atomic<u32>,        // DFSPH: fixed-point sum of this iteration's errors
    density_iterations: u32,     // DFSPH: iterations the last density solve used
    divergence_iterations: u32,  // DFSPH: iterations the last divergence solve used
    fluid_top_bits: atomic<u32>, // the highest particle of the last step above the domain's floor, m (f32 bits)
}

// A read-only storage buffer, not a uniform buffer: Mesa 22.3's lavapipe inlines uniform-buffer values that
// decide an `if` or a loop bound (params.method, params.surface_tension, params.wave_axis ...) into a new
// compile of the shader at every bind of its pipeline and keeps every copy, so a run grew by ~10 MB per
// second of wall time there (tests/memory.rs). It never inlines storage loads; other drivers read either.
@group(0) @binding(0) var<storage, read> params: Params;
@group(0) @binding(1) var<storage, read_write> step: StepState;
// Unsorted state from the previous step (xyz, w = density) and (xyz velocity, w = pressure).
#split_array 0 2 read_write pos vec4<f32>
#split_array 0 3 read_write vel vec4<f32>
// The same, reordered so every grid cell is contiguous.
// binding 4: spos, the sorted positions, declared per file: written only by the grid build (grid.wgsl),
// read-only everywhere else (cells.wgsl), which lets the driver use its read-only cache path.
#split_array 0 5 read_write svel vec4<f32>
// binding 6: cell_start (cells + 1 entries), declared per file (atomic while counting).
// binding 7: particle ids of a decomposed simulation's ranks (src/sim/ids.rs; a 2-entry stand-in otherwise),
// declared by the files that read them (grid.wgsl, dfsph.wgsl: their IDS and GHOSTS variants).
// Velocity after non-pressure forces (v*), per sorted particle.
#split_array 0 8 read_write vstar vec4<f32>
// Per-step scratch, valid only between the grid's scatter and `integrate`: the same buffers as `pos` and
// `vel` (their accessors: bindings 9 and 10 are unused), whose unsorted contents are dead in that window
// (src/sim/buffers.rs).
// pred: PCISPH predicted position (xyz); DFSPH (alpha, kappa, kappa_v, warm start kappa left). Never read `pos` there.
#split_alias pred pos vec4<f32>
// accel: pressure acceleration (xyz) of PCISPH/WCSPH; surface normals before that. Never read `vel` there.
#split_alias accel vel vec4<f32>
// density (x) and pressure (y) per sorted particle.
#split_array 0 11 read_write rho_p vec2<f32>
@group(0) @binding(12) var<storage, read> heights: array<f32>;
// (Phi(d), I(|d|)) for d in [-2h, 2h]: boundary volume fraction and its derivative (see src/sim/kernel.rs).
@group(0) @binding(13) var<storage, read> boundary_table: array<vec2<f32>>;

// Inflows and outflows. Rust twin: SourcesGpu in src/sim/sources.rs.
const MAX_SOURCES: u32 = 8u;

struct EmitterGpu {
    center: vec3<f32>,
    radius: f32,
    velocity: vec3<f32>,
    rate: f32,          // m^3/s
    axis_u: vec3<f32>,  // disc basis, unit, perpendicular to velocity
    layer_points: u32,  // particles per emitted layer
    axis_v: vec3<f32>,
    _pad: f32,
}

struct EmitState {
    carry: f32,   // volume owed, m^3
    base: u32,    // first particle index of this step's layer
    count: u32,   // particles emitted this step
    emitted: u32, // particles emitted so far (wrapping): the serial numbers of a rank's emitted ids
}

struct SinkGpu {
    min: vec3<f32>,
    _pad0: f32,
    max: vec3<f32>,
    _pad1: f32,
}

struct Sources {
    num_emitters: u32,
    num_sinks: u32,
    first_id: u32,   // ranks: the first id of an emitted particle (the scene's count); ids below 2^31
    slab_axis: u32,  // ranks: an emitted point is placed only within the slab slab_lo <= c < slab_hi
    slab_lo: f32,    // along this axis (one GPU: -f32::MAX ..< f32::MAX, everywhere), m
    slab_hi: f32,
    _pad0: u32,
    _pad1: u32,
    emitters: array<EmitterGpu, MAX_SOURCES>,
    state: array<EmitState, MAX_SOURCES>,
    sinks: array<SinkGpu, MAX_SOURCES>,
}

@group(0) @binding(16) var<storage, read_write> sources: Sources;

// Static obstacles (src/sim/obstacles.rs): each a signed distance field (negative inside, metres) on a
// grid in the obstacle's own frame, world p -> local q = R^T (p - position).
const MAX_OBSTACLES: u32 = 16u;

// Rust twin: ObstacleGpu in src/sim/obstacles.rs.
struct ObstacleGpu {
    axis_x: vec4<f32>,     // R's columns (the local axes in world space), w unused
    axis_y: vec4<f32>,
    axis_z: vec4<f32>,
    position: vec4<f32>,   // world position of the local origin, w unused
    grid_min: vec3<f32>,   // local position of sample (0, 0, 0)
    spacing: f32,          // between samples, m
    dims: vec3<u32>,       // samples per axis
    offset: u32,           // index of sample (0, 0, 0) in `sdf`
    velocity: vec4<f32>,   // a body's velocity at its centre of mass, m/s (0: static); w: impulse sums' fixed-point scale
    angular: vec4<f32>,    // a body's angular velocity, rad/s; w: angular impulse sums' fixed-point scale
    centre: vec4<f32>,     // a body's centre of mass, world, m; w: the simulated time of this frame, s
}

// Rust twin: ObstacleList in src/sim/obstacles.rs.
struct ObstacleList {
    count: u32,
    first_body: u32,   // static obstacles first, then the bodies (src/sim/bodies.rs) from this index on
    _pad1: u32,
    _pad2: u32,
    list: array<ObstacleGpu, MAX_OBSTACLES>,
}

struct Obstacles {
    head: ObstacleList,
    sdf: array<f32>,   // every obstacle's samples, x fastest, then y, then z
}

@group(0) @binding(17) var<storage, read> obstacles: Obstacles;

// Inactive particles (the emitters' pool) carry w < 0 in `pos`; the grid parks them in an extra cell
// after the last real one. After the grid build, cell_start[c] holds the END of cell c (the scatter
// advances each start past its cell, see grid.wgsl): cell c is [cell_start[c - 1], cell_start[c]) with
// cell_start[-1] = 0, and the active particles are exactly [0, cell_start[num_cells - 1]).

fn cell_coord(p: vec3<f32>) -> vec3<i32> {
    let c = vec3<i32>(floor((p - params.grid_origin) / params.cell_size));
    return clamp(c, vec3<i32>(0), vec3<i32>(params.grid_dims) - 1);
}

// Index in the folded cell table: rows (y, z) are folded modulo rows = num_cells / dims.x, x fastest
// (see GridShape in src/sim/gpu_data.rs); a row's cells stay contiguous.
fn cell_index(c: vec3<i32>) -> u32 {
    return row_start(c.y, c.z) + u32(c.x);
}

// Index of cell x = 0 of row (y, z) in the folded table.
fn row_start(y: i32, z: i32) -> u32 {
    let d = params.grid_dims;
    return ((u32(z) * d.y + u32(y)) % (params.num_cells / d.x)) * d.x;
}

// ---- terrain heightfield (bilinear, same data and formula as src/terrain.rs) ----

fn height_sample(ix: i32, iz: i32) -> f32 {
    let d = vec2<i32>(params.terrain_dims);
    let x = clamp(ix, 0, d.x - 1);
    let z = clamp(iz, 0, d.y - 1);
    return heights[u32(z * d.x + x)];
}

// Height (x) and its gradient dH/dx, dH/dz (y, z) at world (x, z).
fn terrain_height_grad(xz: vec2<f32>) -> vec3<f32> {
    let dmax = vec2<f32>(params.terrain_dims) - 1.0;
    let g = clamp((xz - params.terrain_origin) / params.terrain_spacing, vec2<f32>(0.0), dmax);
    let i = min(floor(g), dmax - 1.0);
    let f = g - i;
    let ix = i32(i.x);
    let iz = i32(i.y);
    let h00 = height_sample(ix, iz);
    let h10 = height_sample(ix + 1, iz);
    let h01 = height_sample(ix, iz + 1);
    let h11 = height_sample(ix + 1, iz + 1);
    let a = mix(h00, h10, f.x);
    let b = mix(h01, h11, f.x);
    let hx = mix(h10 - h00, h11 - h01, f.y) / params.terrain_spacing.x;
    let hz = (b - a) / params.terrain_spacing.y;
    return vec3<f32>(mix(a, b, f.y), hx, hz);
}

struct Plane {
    n: vec3<f32>, // unit normal into the fluid
    d: f32,       // signed distance of the point from the plane along n
}

fn terrain_plane(p: vec3<f32>) -> Plane {
    let hg = terrain_height_grad(p.xz);
    let n = normalize(vec3<f32>(-hg.y, 1.0, -hg.z));
    return Plane(n, (p.y - hg.x) * n.y);
}

// Boundary table lookup: (Phi(d), I(|d|)), linear interpolation over d in [-2h, 2h].
fn boundary_lookup(d: f32) -> vec2<f32> {
    let r = 2.0 * params.h;
    if (d >= r) {
        return vec2<f32>(0.0);
    }
    let n = f32(params.table_n - 1u);
    let u = clamp((d + r) / (2.0 * r), 0.0, 1.0) * n;
    let i = min(u32(floor(u)), params.table_n - 2u);
    let f = u - f32(i);
    return mix(boundary_table[i], boundary_table[i + 1u], f);
}

// Density contribution of the terrain and side walls at p (kg/m^3), and the gradient of that density
// (kg/m^4). Several planes combine as the complement of the fluid side's product,
// Phi = 1 - prod_k (1 - Phi_k), exact for the quarter space at a corner's apex and free of the double
// count a plain sum would make there. The domain floor is not counted: the terrain (never below it) is the floor.
struct BoundaryDensity {
    rho: f32,
    grad: vec3<f32>,
    // The terrain's (floor's) share of `grad` (kg/m^4): DFSPH's density solve weights the floor's and the
    // walls' shares differently (boundary_push in dfsph.wgsl).
    floor_grad: vec3<f32>,
    // The moving bodies' share of the boundary's own density rate, sum_k v_k(p) . grad rho_b,k (kg/m^3/s):
    // a particle's rate against the boundary is v_i . grad - moving (zero without bodies).
    moving: f32,
}

struct PlaneSum {
    q: f32,          // prod_k (1 - Phi_k)
    g: vec3<f32>,    // sum_k grad Phi_k / (1 - Phi_k)
}

fn add_plane(acc: PlaneSum, d: f32, n: vec3<f32>) -> PlaneSum {
    if (d >= 2.0 * params.h) {
        return acc;
    }
    let v = boundary_lookup(d);
    let free = max(1.0 - v.x, 1e-3);
    return PlaneSum(acc.q * free, acc.g - v.y * n / free);
}

// ---- wave maker: a piston paddle replacing the min wall along x or z (WaveMaker in src/sim/params.rs) ----

// Min corner of the side walls at the simulated time step.time: domain_min, except on the paddle's axis
// while the wave maker is on: domain_min + rest + amplitude sin(omega t), kept inside the domain.
fn wall_min() -> vec3<f32> {
    var m = params.domain_min;
    if (params.wave_axis != 0u) {
        let a = params.wave_axis - 1u;
        let s = params.wave_rest + params.wave_amplitude * sin(params.wave_omega * step.time);
        m[a] = clamp(params.domain_min[a] + s, params.domain_min[a], params.domain_max[a]);
    }
    return m;
}

// Velocity of the min walls at step.time, m/s: the paddle's along its axis, zero elsewhere.
fn wall_min_velocity() -> vec3<f32> {
    var u = vec3<f32>(0.0);
    if (params.wave_axis != 0u) {
        u[params.wave_axis - 1u] = params.wave_amplitude * params.wave_omega * cos(params.wave_omega * step.time);
    }
    return u;
}

// ---- static obstacles ----

fn obstacle_value(o: ObstacleGpu, c: vec3<u32>) -> f32 {
    return obstacles.sdf[o.offset + (c.z * o.dims.y + c.y) * o.dims.x + c.x];
}

// Obstacle k at the step's time: a static obstacle as listed; a body's listed frame (at its time,
// centre.w: where rapier expects it when the water's next frame starts, src/sim/bodies.rs `predict`)
// carried to step.time with its velocity and angular velocity (to first order; at most 0.2 s either
// way), so the water sees the body where it is now, moving smoothly between the frames the CPU writes.
fn obstacle_at(k: u32) -> ObstacleGpu {
    var o = obstacles.head.list[k];
    if (k >= obstacles.head.first_body) {
        let dt = clamp(step.time - o.centre.w, -0.2, 0.2);
        let shift = o.velocity.xyz * dt;
        let turn = o.angular.xyz * dt;
        o.position = vec4<f32>(o.position.xyz + shift + cross(turn, o.position.xyz - o.centre.xyz), 0.0);
        o.axis_x = vec4<f32>(o.axis_x.xyz + cross(turn, o.axis_x.xyz), 0.0);
        o.axis_y = vec4<f32>(o.axis_y.xyz + cross(turn, o.axis_y.xyz), 0.0);
        o.axis_z = vec4<f32>(o.axis_z.xyz + cross(turn, o.axis_z.xyz), 0.0);
        o.centre = vec4<f32>(o.centre.xyz + shift, o.centre.w);
    }
    return o;
}

// Obstacle k's signed distance at world p (x, metres, negative inside) and the unit normal of its level
// set in world space (yzw, pointing out of the obstacle, into the fluid): the trilinear field and its
// gradient over the grid cell around p (as DistanceField::sample in src/mesh/sdf.rs). Outside the grid
// (farther from the surface than the support radius) x is 1e30.
fn obstacle_sample(k: u32, p: vec3<f32>) -> vec4<f32> {
    let o = obstacle_at(k);
    let r = p - o.position.xyz;
    let q = vec3<f32>(dot(r, o.axis_x.xyz), dot(r, o.axis_y.xyz), dot(r, o.axis_z.xyz));
    let g = (q - o.grid_min) / o.spacing;
    let top = vec3<f32>(o.dims - 1u);
    if (any(g < vec3<f32>(0.0)) || any(g > top)) {
        return vec4<f32>(1e30, 0.0, 0.0, 0.0);
    }
    let b = min(floor(g), top - 1.0);
    let f = g - b;
    let c = vec3<u32>(b);
    let c000 = obstacle_value(o, c);
    let c100 = obstacle_value(o, c + vec3<u32>(1u, 0u, 0u));
    let c010 = obstacle_value(o, c + vec3<u32>(0u, 1u, 0u));
    let c110 = obstacle_value(o, c + vec3<u32>(1u, 1u, 0u));
    let c001 = obstacle_value(o, c + vec3<u32>(0u, 0u, 1u));
    let c101 = obstacle_value(o, c + vec3<u32>(1u, 0u, 1u));
    let c011 = obstacle_value(o, c + vec3<u32>(0u, 1u, 1u));
    let c111 = obstacle_value(o, c + vec3<u32>(1u, 1u, 1u));
    let x00 = mix(c000, c100, f.x);
    let x10 = mix(c010, c110, f.x);
    let x01 = mix(c001, c101, f.x);
    let x11 = mix(c011, c111, f.x);
    let y0 = mix(x00, x10, f.y);
    let y1 = mix(x01, x11, f.y);
    let gx = mix(mix(c100 - c000, c110 - c010, f.y), mix(c101 - c001, c111 - c011, f.y), f.z);
    let gl = vec3<f32>(gx, mix(x10 - x00, x11 - x01, f.z), y1 - y0);
    var n = gl.x * o.axis_x.xyz + gl.y * o.axis_y.xyz + gl.z * o.axis_z.xyz;
    let len = length(n);
    // A flat spot of the field (the medial axis, deep inside): push along local +y, up out of it.
    n = select(o.axis_y.xyz, n / len, len > 1e-12);
    return vec4<f32>(mix(y0, y1, f.z), n);
}

// Velocity of obstacle k's surface at world p, m/s: v + w x (p - c) of a body, zero for a static obstacle.
fn body_velocity(k: u32, p: vec3<f32>) -> vec3<f32> {
    let o = obstacle_at(k);
    return o.velocity.xyz + cross(o.angular.xyz, p - o.centre.xyz);
}

fn boundary_density(p: vec3<f32>) -> BoundaryDensity {
    var acc = PlaneSum(1.0, vec3<f32>(0.0));
    let t = terrain_plane(p);
    acc = add_plane(acc, t.d, t.n);
    let g_floor = acc.g;
    // Side walls and ceiling: planes x = min/max, z = min/max, y = max; a wave maker's paddle moves its
    // min wall (wall_min).
    let lo = p - wall_min();
    let hi = params.domain_max - p;
    acc = add_plane(acc, lo.x, vec3<f32>(1.0, 0.0, 0.0));
    acc = add_plane(acc, hi.x, vec3<f32>(-1.0, 0.0, 0.0));
    acc = add_plane(acc, lo.z, vec3<f32>(0.0, 0.0, 1.0));
    acc = add_plane(acc, hi.z, vec3<f32>(0.0, 0.0, -1.0));
    acc = add_plane(acc, hi.y, vec3<f32>(0.0, -1.0, 0.0));
    // Obstacles: a half-space each, bounded by the tangent plane of the distance field at p (weighted
    // like the walls in DFSPH's density solve). None in most scenes: the loop runs no iteration.
    // A body's plane moves with the body: its share of the gradient dotted with its velocity at p.
    var moving = 0.0;
    for (var k = 0u; k < obstacles.head.count; k++) {
        let o = obstacle_sample(k, p);
        let before = acc.g;
        acc = add_plane(acc, o.x, o.yzw);
        if (k >= obstacles.head.first_body) {
            moving += dot(body_velocity(k, p), acc.g - before);
        }
    }
    let s = params.rho0 * acc.q;
    return BoundaryDensity(params.rho0 * (1.0 - acc.q), s * acc.g, s * g_floor, s * moving);
}

// Cells per support radius 2h along an axis (1 when a cell is one support radius, 2 for half, ...): the
// neighbour loops visit rows dy, dz in [-reach, reach].
fn reach() -> i32 {
    return i32(round(2.0 * params.h / params.cell_size));
}

// [start, end) of the sorted particles in cells x0..=x1 of row (y, z) (contiguous in the folded table;
// the row's fold, an integer modulo, is computed once for both ends).
fn cells_range(x0: i32, x1: i32, y: i32, z: i32) -> vec2<u32> {
    let row = row_start(y, z);
    let first = row + u32(x0);
    var start = 0u;
    if (first > 0u) {
        start = cell_start_at(first - 1u);
    }
    return vec2<u32>(start, cell_start_at(row + u32(x1)));
}

// Distance (m) along one axis from coordinate x to slab k of n cells starting at `origin`; the border
// slabs reach to infinity, since particles outside the grid's box are clamped into them.
fn slab_distance(x: f32, k: i32, n: i32, origin: f32) -> f32 {
    let lo = origin + f32(k) * params.cell_size;
    let hi = lo + params.cell_size;
    var d = 0.0;
    if (k > 0 && x < lo) {
        d = lo - x;
    }
    if (k < n - 1 && x > hi) {
        d = x - hi;
    }
    return d;
}

// Range [start, end) of the sorted particles in row (c.y + dy, c.z + dz) that may lie within 2h of xi
// (whose cell is c): the row is skipped when its cells are 2h or more away in y and z, and otherwise
// trimmed to the cells overlapping [xi.x - r, xi.x + r], r = sqrt(4h^2 - d_yz^2). On the particle
// lattice this visits 84 h^3 of cells per particle instead of the whole block's 125 h^3 (cells of h).
fn row_range(xi: vec3<f32>, c: vec3<i32>, dy: i32, dz: i32) -> vec2<u32> {
    let d = vec3<i32>(params.grid_dims);
    let y = c.y + dy;
    let z = c.z + dz;
    if (y < 0 || y >= d.y || z < 0 || z >= d.z) {
        return vec2<u32>(0u, 0u);
    }
    let sy = slab_distance(xi.y, y, d.y, params.grid_origin.y);
    let sz = slab_distance(xi.z, z, d.z, params.grid_origin.z);
    // A thousandth of a cell of slack against rounding at the support's rim (where W vanishes).
    let slack = 1e-3 * params.cell_size;
    let r2 = 4.0 * params.h * params.h - sy * sy - sz * sz;
    if (r2 <= -slack * slack) {
        return vec2<u32>(0u, 0u);
    }
    let r = sqrt(max(r2, 0.0)) + slack;
    // One division; the slack covers the rounding of the multiplications.
    let inv = 1.0 / params.cell_size;
    let x0 = clamp(i32(floor((xi.x - r - params.grid_origin.x) * inv)), 0, d.x - 1);
    let x1 = clamp(i32(floor((xi.x + r - params.grid_origin.x) * inv)), 0, d.x - 1);
    return cells_range(x0, x1, y, z);
}

// Range [start, end) of the sorted particles in the row of cells (cx-reach .. cx+reach, cy+dy, cz+dz),
// clamped to the grid: the whole block, for loops whose positions are not the grid's (PCISPH's
// predicted positions).
fn row_block(c: vec3<i32>, dy: i32, dz: i32) -> vec2<u32> {
    let d = vec3<i32>(params.grid_dims);
    let y = c.y + dy;
    let z = c.z + dz;
    if (y < 0 || y >= d.y || z < 0 || z >= d.z) {
        return vec2<u32>(0u, 0u);
    }
    let r = reach();
    return cells_range(max(c.x - r, 0), min(c.x + r, d.x - 1), y, z);
}

// Number of active (non-parked) particles after this step's grid build.
fn active_end() -> u32 {
    return cell_start_at(params.num_cells - 1u);
}

// Moves a position that is closer than r_collide to the terrain, an obstacle or a wall back onto that distance
// (the hard constraint that integrate enforces; also applied to PCISPH's predicted positions so the
// predicted density never sees a particle inside a boundary).
fn project_out(p: vec3<f32>) -> vec3<f32> {
    let rc = params.r_collide;
    var x = p;
    let t = terrain_plane(x);
    if (t.d < rc) {
        x += (rc - t.d) * t.n;
    }
    // Out of each obstacle along its field's normal (one step: the field's gradient has unit length
    // away from the medial axis, so the step lands on d = rc up to the trilinear error).
    for (var k = 0u; k < obstacles.head.count; k++) {
        let o = obstacle_sample(k, x);
        if (o.x < rc) {
            x += (rc - o.x) * o.yzw;
        }
    }
    return clamp(x, wall_min() + rc, params.domain_max - rc);
}

// A per-step damping fraction (XSPH) given for a step of max_dt, scaled to this step's dt so
// that a solver taking many small steps (WCSPH) is not damped more per second: 1 - (1 - c)^(dt / max_dt).
fn per_step(c: f32) -> f32 {
    return 1.0 - pow(max(1.0 - c, 0.0), step.dt / params.max_dt);
}
