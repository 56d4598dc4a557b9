// SPH smoothing kernel: the 3-D Wendland C2 kernel (Wendland 1995; as used by Dehnen & Aly 2012),
// q = r / h in [0, 2), support radius 2h:
//   W(r, h) = 21 / (16 pi h^3) (1 - q/2)^4 (2q + 1)
//   grad W(x, h) = -(5 * 21 / (16 pi h^3)) / h^2 * (1 - q/2)^3 * x
// The CPU twin is src/sim/kernel.rs (tests compare both against numerical integration).

const PI: f32 = 3.14159265358979;

// Its constants are computed once per particle (`wendland(h)`), not once per neighbour; the neighbour
// loops test r < 2h themselves. With t = 1 - r / (2h) (so 2q + 1 = 5 - 4t), W = w_coef t^4 (5 - 4t) and
// grad W = g_coef t^3 x; loops that sum t^3-weighted terms multiply by g_coef once at the end.
struct Wendland {
    half_inv_h: f32,
    w_coef: f32,
    g_coef: f32,
}

fn wendland(h: f32) -> Wendland {
    let alpha = 21.0 / (16.0 * PI * h * h * h);
    return Wendland(0.5 / h, alpha, -5.0 * alpha / (h * h));
}

// t = 1 - r / (2h).
fn wendland_t(k: Wendland, r: f32) -> f32 {
    return 1.0 - r * k.half_inv_h;
}

// W(r) for r < 2h.
fn wendland_w(k: Wendland, r: f32) -> f32 {
    let t = wendland_t(k, r);
    let t2 = t * t;
    return k.w_coef * t2 * t2 * (5.0 - 4.0 * t);
}

// grad W(x) for |x| = r < 2h.
fn wendland_grad(k: Wendland, x: vec3<f32>, r: f32) -> vec3<f32> {
    let t = wendland_t(k, r);
    return (k.g_coef * t * t * t) * x;
}
