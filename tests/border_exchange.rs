//! The border exchange of a decomposed simulation (src/sim/border.rs, src/cluster/rank.rs) on lavapipe:
//! only the border particles travel between a rank's device and the host (a regression to whole-state
//! read-backs fails), and border lists far too small for the first selection lose nothing (the selection
//! runs again with room).
mod common;

use waterview::cluster::{initial_particles, run_threads, Rank, RankConfig, RankStats, GHOST};
use waterview::scene::Scene;
use waterview::sim::{Method, RankParticles, SimOptions, SimParams};

/// The dam break at `dx` with `method` on `ranks` ranks for `steps` steps, border lists of `lists`
/// entries first (`None`: the default): every rank's owned particles merged, each step's figures by
/// rank, the scene's particle count.
fn run(
    dx: f32,
    method: Method,
    ranks: usize,
    steps: usize,
    lists: Option<u32>,
) -> (RankParticles, Vec<Vec<RankStats>>, usize) {
    let mut scene = Scene::builtin("dam_break").expect("built-in scene");
    scene.solver.dx = dx;
    let params = SimParams { method, ..scene.solver.clone() };
    let setup = scene.build(false).expect("scene builds");
    let all = initial_particles(&setup, &params);
    let contexts = (0..ranks).map(|_| common::gpu()).collect();
    let config = RankConfig { border_lists: lists, ..RankConfig::for_params(&params) };
    let per_rank = run_threads(contexts, |t, ctx| {
        let mut rank = Rank::new(
            t,
            ctx,
            &scene.domain,
            (&setup.terrain, &setup.obstacles),
            &params,
            SimOptions::default(),
            config,
            &all,
        )?;
        let stats = (0..steps).map(|_| rank.step()).collect::<Result<Vec<_>, _>>()?;
        Ok((rank.owned_blocking()?, stats))
    })
    .unwrap_or_else(|e| panic!("dam break on {ranks} ranks: {e}"));
    let mut particles = RankParticles::default();
    let mut by_step = vec![Vec::new(); steps];
    for (own, stats) in per_rank {
        particles.extend(&own);
        for (k, s) in stats.into_iter().enumerate() {
            by_step[k].push(s);
        }
    }
    (particles, by_step, all.len())
}

/// Every id of 0 ..< n exactly once among the owned particles, none a ghost.
fn every_id_once(p: &RankParticles, n: usize, what: &str) {
    let mut seen = vec![false; n];
    for &id in &p.ids {
        assert_eq!(id & GHOST, 0, "{what}: a ghost among the owned particles");
        assert!((id as usize) < n, "{what}: id {id} out of range");
        assert!(!seen[id as usize], "{what}: id {id} twice");
        seen[id as usize] = true;
    }
    assert!(seen.iter().all(|&s| s), "{what}: {} ids missing", seen.iter().filter(|&&s| !s).count());
}

/// 2 ranks, 90 000 particles: after the first step (whose ghosts `Rank::new` placed) every rank moves
/// less than a quarter of the scene's particles x 36 bytes per step (measured: 18.3 %, the halo copies
/// read back with their slots and a sixteenth more read at once, and the ghosts written); the whole-state read-back and write-back before
/// the border exchange moved 1.6 times the scene's particles x 36 bytes per rank (the rank's particles
/// read, every slot of its capacity written).
#[test]
fn a_step_moves_only_the_border_particles() {
    let steps = 5;
    let (particles, stats, n) = run(0.02, Method::Wcsph, 2, steps, None);
    every_id_once(&particles, n, "dam break");
    let full = n as u64 * 36;
    for (k, s) in stats.iter().enumerate().skip(1) {
        for r in s {
            println!(
                "step {k}, rank {}: {} bytes, {:.1} % of {full}; step {} ms (wall), GPU {:?} ms",
                r.rank,
                r.exchange_bytes,
                100.0 * r.exchange_bytes as f64 / full as f64,
                r.step_ms,
                r.gpu_ms
            );
            assert!(r.exchange_bytes > 0, "step {k}, rank {}: no bytes counted", r.rank);
            assert!(
                4 * r.exchange_bytes < full,
                "step {k}, rank {}: {} bytes, a full read-back is {full}",
                r.rank,
                r.exchange_bytes
            );
            assert!(
                r.exchange_bytes >= 36 * r.ghosts as u64,
                "step {k}, rank {}: the ghosts' bytes are not counted",
                r.rank
            );
        }
    }
}

/// Border lists of one entry: the first selection overflows them on both ranks, runs again with room,
/// and every particle is still owned exactly once every step (DFSPH, so the halo copies' ids also drive
/// the per-iteration exchange).
#[test]
fn overflowing_border_lists_lose_nothing() {
    let (particles, stats, n) = run(0.06, Method::Dfsph, 2, 6, Some(1));
    every_id_once(&particles, n, "dam break, tiny lists");
    assert!(stats[1].iter().all(|r| r.border_retries > 0), "the first selection did not overflow: {:?}", stats[1]);
    for (k, s) in stats.iter().enumerate() {
        assert_eq!(s.iter().map(|r| r.owned as usize).sum::<usize>(), n, "owned count at step {k}");
        assert!(s.iter().all(|r| r.ghosts > 0), "a rank without ghosts at step {k}");
    }
}

/// DFSPH on 2 ranks: a step moves, besides its border exchange, only the halo values of its solves:
/// once per solve of the velocities (svel and v*, 32 bytes per ghost: after the divergence-free solve,
/// and after the forces when surface tension is on) and every iteration kappa / rho alone (4 bytes per
/// ghost), read back for the particles the neighbour holds as ghosts and written into this rank's
/// (nothing else: the GPU finds them by slot, no sorted ids read back). So every rank's iteration bytes
/// are exactly (its ghosts + the neighbour's) x (32 x velocity exchanges + 4 x iterations); the
/// velocities every iteration (the exchange before) would be 8 times the iterations' share.
#[test]
fn iterations_move_only_the_halo_values() {
    let (particles, stats, n) = run(0.06, Method::Dfsph, 2, 4, None);
    every_id_once(&particles, n, "dam break, DFSPH");
    let scene = Scene::builtin("dam_break").expect("built-in scene");
    let velocity_exchanges = 1 + (scene.solver.surface_tension > 0.0) as u64;
    for (k, s) in stats.iter().enumerate() {
        let halo = s[0].ghosts as u64 + s[1].ghosts as u64;
        for r in s {
            let (density, divergence) = r.iterations;
            let expected = halo * (32 * velocity_exchanges + 4 * (density + divergence) as u64);
            println!(
                "step {k}, rank {}: {} iteration bytes, {expected} expected ({halo} halo particles, {density} + \
                 {divergence} iterations)",
                r.rank, r.iteration_bytes
            );
            assert!(density + divergence > 0, "step {k}, rank {}: no iterations", r.rank);
            assert_eq!(r.iteration_bytes, expected, "step {k}, rank {}: not only the halo values", r.rank);
        }
    }
}
