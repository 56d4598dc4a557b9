// Per-frame diagnostics, reduced on the GPU and read back asynchronously (never inside a step):
// compressive density error max(rho - rho0, 0)/rho0 (mean and max), max speed, kinetic energy sum m|v|^2/2,
// the fluid's bounding box, and counts of particles outside the domain, below the terrain or non-finite.
// Two passes: `stats_partial` reduces each workgroup's particles in workgroup memory into one record,
// `stats_final` (one workgroup) reduces the records. A record is 5 vec4:
//   [0] sums (density error, kinetic energy, outside count, below count)
//   [1] (max density error, max speed, non-finite count (sum), active particle count (sum))
//   [2] bbox max (xyz), [3] -bbox min (xyz)
//   [4] the fastest particle: position (xyz), speed (w)
// The final output is [0..4) of the record, then [4] = (time, dt, DFSPH density iterations, DFSPH
// divergence iterations), [5] = the record's [4].
#import "sim/common.wgsl"
#import "sim/cells.wgsl"

@group(0) @binding(14) var<storage, read_write> partials: array<vec4<f32>>;
@group(0) @binding(15) var<storage, read_write> stats_out: array<vec4<f32>>;

const STATS_WG: u32 = 128u;
const BIG: f32 = 3.0e38;
// vec4 per partial record (Rust twin: RECORD_BYTES / 16 in src/sim/stats.rs).
const RECORD: u32 = 5u;

var<workgroup> s_sum: array<vec4<f32>, 128>;
var<workgroup> s_max: array<vec4<f32>, 128>;
var<workgroup> s_hi: array<vec4<f32>, 128>;
var<workgroup> s_lo: array<vec4<f32>, 128>;
var<workgroup> s_fast: array<vec4<f32>, 128>;

fn is_finite3(v: vec3<f32>) -> bool {
    return all(abs(v) < vec3<f32>(BIG));
}

fn reduce_tree(t: u32) {
    for (var off = STATS_WG / 2u; off > 0u; off = off >> 1u) {
        workgroupBarrier();
        if (t < off) {
            let a = s_max[t];
            let b = s_max[t + off];
            s_sum[t] = s_sum[t] + s_sum[t + off];
            s_max[t] = vec4<f32>(max(a.x, b.x), max(a.y, b.y), a.z + b.z, a.w + b.w);
            s_hi[t] = max(s_hi[t], s_hi[t + off]);
            s_lo[t] = max(s_lo[t], s_lo[t + off]);
            s_fast[t] = select(s_fast[t], s_fast[t + off], s_fast[t + off].w > s_fast[t].w);
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(128)
fn stats_partial(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
                 @builtin(workgroup_id) wid: vec3<u32>) {
    let i = flat_index(gid, nwg, 128u);
    let t = lid.x;
    var sum = vec4<f32>(0.0);
    var mx = vec4<f32>(0.0);
    var hi = vec4<f32>(-BIG);
    var lo = vec4<f32>(-BIG);
    var fast = vec4<f32>(0.0);
    if (i < params.num_particles) {
        let p = pos_load(i);
        let v = vel_load(i).xyz;
        if (p.w < 0.0) {
            // parked in the emitters' pool: not part of the fluid
        } else if (is_finite3(p.xyz) && is_finite3(v) && abs(p.w) < BIG) {
            let err = max(p.w - params.rho0, 0.0) / params.rho0;
            let speed = length(v);
            var outside = 0.0;
            if (any(p.xyz < params.domain_min) || any(p.xyz > params.domain_max)) {
                outside = 1.0;
            }
            var below = 0.0;
            if (terrain_plane(p.xyz).d < -1e-4) {
                below = 1.0;
            }
            sum = vec4<f32>(err, 0.5 * params.mass * speed * speed, outside, below);
            mx = vec4<f32>(err, speed, 0.0, 1.0);
            hi = vec4<f32>(p.xyz, 0.0);
            lo = vec4<f32>(-p.xyz, 0.0);
            fast = vec4<f32>(p.xyz, speed);
        } else {
            mx = vec4<f32>(0.0, 0.0, 1.0, 1.0);
        }
    }
    s_sum[t] = sum;
    s_max[t] = mx;
    s_hi[t] = hi;
    s_lo[t] = lo;
    s_fast[t] = fast;
    reduce_tree(t);
    // Workgroups past the last partial (rows of the 2-D dispatch) write nothing.
    let w = wid.x + wid.y * nwg.x;
    if (t == 0u && w * STATS_WG < params.num_particles) {
        let base = RECORD * w;
        partials[base] = s_sum[0];
        partials[base + 1u] = s_max[0];
        partials[base + 2u] = s_hi[0];
        partials[base + 3u] = s_lo[0];
        partials[base + 4u] = s_fast[0];
    }
}

@compute @workgroup_size(128)
fn stats_final(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    let groups = (params.num_particles + STATS_WG - 1u) / STATS_WG;
    var sum = vec4<f32>(0.0);
    var mx = vec4<f32>(0.0);
    var hi = vec4<f32>(-BIG);
    var lo = vec4<f32>(-BIG);
    var fast = vec4<f32>(0.0);
    for (var g = t; g < groups; g += STATS_WG) {
        let b = RECORD * g;
        sum += partials[b];
        let m = partials[b + 1u];
        mx = vec4<f32>(max(mx.x, m.x), max(mx.y, m.y), mx.z + m.z, mx.w + m.w);
        hi = max(hi, partials[b + 2u]);
        lo = max(lo, partials[b + 3u]);
        let f = partials[b + 4u];
        fast = select(fast, f, f.w > fast.w);
    }
    s_sum[t] = sum;
    s_max[t] = mx;
    s_hi[t] = hi;
    s_lo[t] = lo;
    s_fast[t] = fast;
    reduce_tree(t);
    if (t == 0u) {
        stats_out[0] = s_sum[0];
        stats_out[1] = s_max[0];
        stats_out[2] = s_hi[0];
        stats_out[3] = s_lo[0];
        var iters = vec2<f32>(0.0);
        if (params.method == METHOD_DFSPH) {
            iters = vec2<f32>(f32(step.density_iterations), f32(step.divergence_iterations));
        }
        stats_out[4] = vec4<f32>(step.time, step.dt, iters);
        stats_out[5] = s_fast[0];
    }
}
