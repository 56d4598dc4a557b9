// Emission of the inflows (Rust: src/sim/sources.rs), after integrate: `emit_plan` (one thread) decides
// per emitter whether a layer of particles is owed (carry += rate dt; a layer of `layer_points`
// particles holds layer_points * V of water) and assigns it indices in the free pool, which after this
// step's sort starts at active_end() (particles sunk this step are reclaimed at the next sort). `emit` places layer point t on the disc
// with Vogel's sunflower spiral (uniform density, spacing about dx). The emitters and sinks live in
// `sources` (common.wgsl, binding 16); sinks park particles in integrate.wgsl. On the ranks of a
// decomposed simulation (src/sim/sources.rs RankEmission) every rank plans every layer alike, `emit`
// places only the points within the rank's slab (its other slots stay parked) and, in the IDS variant,
// gives them their ids.
#import "sim/common.wgsl"
#import "sim/cells.wgsl"

@compute @workgroup_size(1)
fn emit_plan() {
    var next = active_end();
    let volume = params.mass / params.rho0;
    for (var e = 0u; e < sources.num_emitters; e++) {
        let em = sources.emitters[e];
        var st = sources.state[e];
        st.carry = st.carry + em.rate * step.dt;
        st.count = 0u;
        let layer = f32(em.layer_points) * volume;
        if (st.carry >= layer && step.dt > 0.0) {
            if (next + em.layer_points <= params.num_particles) {
                st.base = next;
                st.count = em.layer_points;
                st.emitted = st.emitted + em.layer_points;
                next = next + em.layer_points;
                st.carry = st.carry - layer;
            } else {
                st.carry = layer; // pool exhausted: wait for the sinks
            }
        }
        sources.state[e] = st;
    }
}

const GOLDEN_ANGLE: f32 = 2.39996323;

#ifdef IDS
// Particle ids of a rank (src/sim/ids.rs): after a step's sort the ids of `pos` are the second
// num_particles entries. The IDS variant runs on the grid build's layout, where they are writable.
@group(0) @binding(7) var<storage, read_write> ids: array<u32>;
#endif

// Dispatched as rows of workgroups over the largest layer's points (x, y; flat_index in
// common/dispatch.wgsl), one z layer per emitter (src/sim/sources.rs EmitStage::workgroups).
@compute @workgroup_size(64)
fn emit(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.z;
    let t = flat_index(gid, nwg, 64u);
    if (e >= sources.num_emitters) {
        return;
    }
    let st = sources.state[e];
    if (t >= st.count) {
        return;
    }
    let em = sources.emitters[e];
    let r = em.radius * sqrt((f32(t) + 0.5) / f32(em.layer_points));
    let a = f32(t) * GOLDEN_ANGLE;
    let x = project_out(em.center + r * (cos(a) * em.axis_u + sin(a) * em.axis_v));
    let c = x[sources.slab_axis];
    if (c < sources.slab_lo || c >= sources.slab_hi) {
        return; // another rank's point: the slot stays parked
    }
    pos_store(st.base + t, vec4<f32>(x, params.rho0));
    vel_store(st.base + t, vec4<f32>(em.velocity, 0.0));
#ifdef IDS
    // The same on any number of ranks (src/sim/sources.rs RankEmission).
    let serial = st.emitted - st.count + t;
    let span = 0x80000000u - sources.first_id;
    ids[params.num_particles + st.base + t] = sources.first_id + (serial * MAX_SOURCES + e) % span;
#endif
}
