// The ground's colour (terrain.wgsl) and its detail finer than a cell, shared with the terrain's bounce-light
// bake (terrain_bounce.wgsl), which needs the same albedo: fractal value noise over the grid, detail
// planes blended triplanar, and the palette of grass, dry grass, rock and pale rock by slope and relative
// height.
#import "render/heightfield.wgsl"
#import "common/noise.wgsl"

// Weight of a noise octave of `freq` cycles per sample at a pixel footprint of `fw` samples:
// octaves finer than about two pixels fade to their mean (0.5) instead of shimmering.
fn octave(p: vec2<f32>, freq: f32, fw: f32) -> f32 {
    return mix(value_noise(p * freq), 0.5, smoothstep(0.25, 0.5, fw * freq));
}

// Four octaves, scaled to the grid: features of about 8, 2, 0.5 and 0.125 samples; `fw` = pixel
// footprint in samples.
fn fbm(q: vec2<f32>, fw: f32) -> f32 {
    return 0.45 * octave(q, 0.125, fw) + 0.27 * octave(q + 17.0, 0.5, fw) + 0.17 * octave(q + 41.0, 2.0, fw)
        + 0.11 * octave(q + 73.0, 8.0, fw);
}

// Value noise and its gradient: (value 0..1, d/dp.x, d/dp.y).
fn value_noise_grad(p: vec2<f32>) -> vec3<f32> {
    let i = floor(p);
    let f = fract(p);
    let u = f * f * (3.0 - 2.0 * f);
    let du = 6.0 * f * (1.0 - f);
    let a = hash2(i);
    let b = hash2(i + vec2<f32>(1.0, 0.0));
    let c = hash2(i + vec2<f32>(0.0, 1.0));
    let d = hash2(i + vec2<f32>(1.0, 1.0));
    let k = a - b - c + d;
    let v = a + (b - a) * u.x + (c - a) * u.y + k * u.x * u.y;
    return vec3<f32>(v, du * vec2<f32>(b - a + k * u.y, c - a + k * u.x));
}

// Detail finer than a cell, from noise over one projection plane (coordinates `c` in cells, pixel
// footprint `fw` in cells; octaves under about two pixels fade to their mean, so a close view gets grain
// and a far one no shimmer).
struct Detail {
    // Brightness variations: 4 and 16 cycles per cell; grass tufts down to 1/96 cell; rock grain.
    fine: f32,
    tufts: f32,
    grain: f32,
    // Thin cracks in rock, 0..1.
    crack: f32,
    // Gradient (per cell, along c) of a fractal relief: four octaves from one cell down to 1/64, each as
    // tall as its wavelength, so every scale tilts the normal alike.
    slope: vec2<f32>,
}

fn detail_plane(c: vec2<f32>, fw: f32) -> Detail {
    var d: Detail;
    d.fine = 0.6 * octave(c + 7.0, 4.0, fw) + 0.4 * octave(c + 3.0, 16.0, fw);
    d.tufts = 0.45 * octave(c + 23.0, 8.0, fw) + 0.35 * octave(c + 29.0, 32.0, fw) + 0.2 * octave(c + 37.0, 96.0, fw);
    d.grain = octave(c + 61.0, 32.0, fw);
    let ridge = abs(value_noise(c * 4.0 + 51.0) - 0.5);
    d.crack = (1.0 - smoothstep(0.0, 0.04, ridge)) * (1.0 - smoothstep(0.05, 0.12, fw * 4.0));
    var slope = vec2<f32>(0.0);
    var freq = 1.0;
    for (var k = 0; k < 4; k++) {
        let keep = 1.0 - smoothstep(0.25, 0.5, fw * freq);
        slope += keep * value_noise_grad(c * freq + 19.0 * f32(k)).yz;
        freq *= 4.0;
    }
    d.slope = slope;
    return d;
}

// Detail blended over the three axis planes by the mesh normal n (weights |n|^4, renormalised over the
// planes kept: those of 2% or more), so steep slopes get the same detail as flat ground instead of the
// top view's smears. `bump` is the world-space tilt of the normal from the relief's slopes.
struct Triplanar {
    d: Detail,
    bump: vec3<f32>,
}

fn add_detail(acc: ptr<function, Triplanar>, d: Detail, w: f32, bump: vec3<f32>) {
    (*acc).d.fine += w * d.fine;
    (*acc).d.tufts += w * d.tufts;
    (*acc).d.grain += w * d.grain;
    (*acc).d.crack += w * d.crack;
    (*acc).bump += w * bump;
}

fn triplanar_detail(c: vec3<f32>, n: vec3<f32>, fw: f32) -> Triplanar {
    var w = pow(abs(n), vec3<f32>(4.0));
    w = select(vec3<f32>(0.0), w, w >= vec3<f32>(0.02 * (w.x + w.y + w.z)));
    w /= w.x + w.y + w.z;
    var acc: Triplanar;
    if w.y > 0.0 {
        let d = detail_plane(c.xz, fw);
        add_detail(&acc, d, w.y, vec3<f32>(-d.slope.x, 0.0, -d.slope.y));
    }
    if w.x > 0.0 {
        let d = detail_plane(c.zy, fw);
        add_detail(&acc, d, w.x, vec3<f32>(0.0, -d.slope.y, -d.slope.x));
    }
    if w.z > 0.0 {
        let d = detail_plane(c.xy + 101.0, fw);
        add_detail(&acc, d, w.z, vec3<f32>(-d.slope.x, -d.slope.y, 0.0));
    }
    return acc;
}

// The ground's colour and how rocky it is (0 grass .. 1 bare rock), from relative height, slope and
// noise (`q`: grid coordinates, `fw` their pixel footprint), broken up by the detail `d`.
struct Surface {
    albedo: vec3<f32>,
    rock: f32,
}

fn surface(p: vec3<f32>, n: vec3<f32>, q: vec2<f32>, fw: f32, d: Detail) -> Surface {
    let noise = smoothstep(0.2, 0.8, fbm(q, fw));
    let rel = clamp((p.y - terrain.h_min) / max(terrain.h_max - terrain.h_min, 1e-3), 0.0, 1.0);
    let slope = 1.0 - n.y;
    var grass = mix(vec3<f32>(0.030, 0.055, 0.016), vec3<f32>(0.070, 0.095, 0.030), noise);
    // Tufts: darker, greener blades and paler, drier tips.
    grass *= mix(vec3<f32>(0.45, 0.6, 0.45), vec3<f32>(1.45, 1.35, 1.1), smoothstep(0.2, 0.8, d.tufts));
    let dry = mix(vec3<f32>(0.11, 0.095, 0.045), vec3<f32>(0.15, 0.125, 0.065), d.fine) * (0.8 + 0.4 * d.tufts);
    var rock = mix(vec3<f32>(0.085, 0.075, 0.062), vec3<f32>(0.16, 0.145, 0.125), 0.6 * noise + 0.4 * d.fine);
    rock *= (1.0 - 0.45 * d.crack) * (0.9 + 0.2 * d.grain);
    let pale = vec3<f32>(0.22, 0.21, 0.19);
    let rockiness = smoothstep(0.2, 0.42, slope + 0.15 * (noise - 0.5));
    var c = mix(grass, dry, smoothstep(0.3, 0.85, rel + 0.3 * (noise - 0.5)) * 0.75);
    c = mix(c, rock, rockiness);
    c = mix(c, pale, smoothstep(0.85, 1.0, rel + 0.1 * (d.fine - 0.5)) * 0.5);
    return Surface(c * (0.85 + 0.3 * d.fine), rockiness);
}

