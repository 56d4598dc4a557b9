// A diffuse particle (spray, foam or air bubble; Ihmsen et al. 2012), shared by the simulation's diffuse
// stage (sim/diffuse.wgsl), which writes them, and the renderer's foam splats (render/foam.wgsl).

// Rust twin: DiffuseParticle in src/sim/diffuse.rs. pos.w = lifetime left (s), vel.w = kind (KIND_*).
struct DiffuseParticle {
    pos: vec4<f32>,
    vel: vec4<f32>,
}

// Kinds, as DiffuseKind::code in src/sim/diffuse.rs.
const KIND_SPRAY: u32 = 0u;
const KIND_FOAM: u32 = 1u;
const KIND_BUBBLE: u32 = 2u;
