// The receiving side of the water's light (render/water_light.wgsl): bind group 2 holds the light's
// uniform, the light-space map and a filtering sampler; `water_transmittance` is what a lit surface
// multiplies the sun's light by.
#import "render/water_light.wgsl"

// r: the sun ray's summed path through the water (m); a: the water's sunward surface, light-space depth (m).
@group(2) @binding(1) var water_light_map: texture_2d<f32>;
@group(2) @binding(2) var water_light_sampler: sampler;

// Transmittance (per channel, 1 = no water) of the sunlight reaching world point p.
fn water_transmittance(p: vec3<f32>) -> vec3<f32> {
    return water_transmittance_behind(p, 0.0);
}

// As `water_transmittance`, for a receiver that is wholly under the water `behind` metres (along the sun's
// ray) past the water's sunward surface, and not at all `margin` metres before that. The ground takes 0:
// the ground under shallow water lies close to the splats' surface, or just in front of it. An obstacle
// takes the margin: the map's texel also holds water behind the obstacle (where the sun's ray leaves it),
// which must not shade a wall above the water in front of it.
fn water_transmittance_behind(p: vec3<f32>, behind: f32) -> vec3<f32> {
    if water_light.enabled == 0u {
        return vec3<f32>(1.0);
    }
    let uv = water_light_uv(p);
    if any(uv <= vec2<f32>(0.0)) || any(uv >= vec2<f32>(1.0)) {
        return vec3<f32>(1.0);
    }
    let m = textureSampleLevel(water_light_map, water_light_sampler, uv, 0.0);
    // In front of the water's sunward surface: the sun reaches p before any water.
    let under = smoothstep(behind - water_light.margin, behind, water_light_depth(p) - m.a);
    return exp(-water_light.absorption * max(m.r, 0.0) * under);
}
