// Wetness of the terrain per height sample (src/render/wetness.rs): `dry` multiplies every sample by the
// frame's keep factor exp(-dt / DRY_SECONDS), dt the simulated time since the last update (0 the first
// time and when the clock went back) or, without a simulation clock, the factor given; `soak` sets to 1
// the sample nearest each live particle (position w >= 0) that is at most `contact` metres above the
// bilinear surface under it (or below it); `stamp` then records the clock's time for the next update.
// On several GPUs (src/capture/ranks.rs) every rank keeps its own map from its own particles and rank 0
// takes the largest of every rank's with `merge` before it draws: drying (a factor) and soaking (a 1)
// commute with the largest, so the merged map is the one a single GPU's particles make.
// Several particles may soak one sample in a frame: they all store 1, so the race is harmless.
#import "common/dispatch.wgsl"
#import "render/heightfield.wgsl"

// Rust twin: WetnessUniform in src/render/wetness.rs (16 bytes).
struct Wet {
    count: u32,
    keep: f32,
    contact: f32,
    use_clock: u32,
    dry_seconds: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// The first two fields of StepState (shaders/sim/common.wgsl): dt and the simulated time, seconds.
struct SimClock {
    dt: f32,
    time: f32,
}

// The simulated time of the last update; valid = 0 before the first on this clock.
struct WetClock {
    last: f32,
    valid: u32,
}

@group(1) @binding(2) var<uniform> wet: Wet;
@group(1) @binding(3) var<storage, read_write> wetness: array<f32>;
#split_array 1 4 read positions vec4<f32>
@group(1) @binding(5) var<storage, read> clock: SimClock;
@group(1) @binding(6) var<storage, read_write> state: WetClock;

@compute @workgroup_size(8, 8)
fn dry(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= terrain.nx || gid.y >= terrain.nz {
        return;
    }
    var keep = wet.keep;
    if wet.use_clock == 1u {
        let dt = select(0.0, max(clock.time - state.last, 0.0), state.valid == 1u);
        keep = exp(-dt / wet.dry_seconds);
    }
    let i = gid.y * terrain.nx + gid.x;
    wetness[i] *= keep;
}

@compute @workgroup_size(64)
fn soak(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, 64u);
    if i >= wet.count {
        return;
    }
    let p = positions_load(i);
    if p.w < 0.0 || p.y - height_at(p.xz) > wet.contact {
        return;
    }
    let g = (p.xz - terrain.origin) / terrain.spacing;
    let last = vec2<f32>(f32(terrain.nx - 1u), f32(terrain.nz - 1u));
    if any(g < vec2<f32>(-0.5)) || any(g > last + 0.5) {
        return; // beyond the terrain's edge
    }
    let c = vec2<u32>(clamp(round(g), vec2<f32>(0.0), last));
    wetness[c.y * terrain.nx + c.x] = 1.0;
}

// `merge`'s own group: rank 0's map and the other ranks' maps one after another.
@group(2) @binding(0) var<storage, read_write> merged: array<f32>;
@group(2) @binding(1) var<storage, read> received: array<f32>;

@compute @workgroup_size(64)
fn merge(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = arrayLength(&merged);
    let i = flat_index(gid, nwg, 64u);
    if i >= n {
        return;
    }
    var w = merged[i];
    for (var k = i; k < arrayLength(&received); k += n) {
        w = max(w, received[k]);
    }
    merged[i] = w;
}

@compute @workgroup_size(1)
fn stamp() {
    state.last = clock.time;
    state.valid = 1u;
}
