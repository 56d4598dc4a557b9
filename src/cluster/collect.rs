//! The whole simulation on rank 0 (what it writes at the end of a decomposed run): the ranks' owned
//! particles gathered along the chain of neighbours (the [`Transport`] only talks to neighbours: the last
//! rank sends to its left, every other rank appends what came from its right to its own and passes it
//! on), then put in id order and checked: every id of the scene once.

use super::transport::{Side, Transport};
use super::ClusterError;
use crate::sim::RankParticles;

/// Every rank's `own` particles on rank 0 (`Some`, ranks in order), `None` on the others. Every rank
/// must call it together. Errors: a peer is gone or sent a malformed message.
pub fn gather_to_root<T: Transport>(t: &T, own: &RankParticles) -> Result<Option<RankParticles>, ClusterError> {
    let mut all = own.clone();
    if t.neighbour(Side::Right).is_some() {
        all.extend(&super::exchange::decode(&t.recv(Side::Right)?)?);
    }
    if t.neighbour(Side::Left).is_some() {
        t.send(Side::Left, super::exchange::encode(&all))?;
        return Ok(None);
    }
    Ok(Some(all))
}

/// Every rank's message `own` on rank 0 (`Some`, by rank), `None` on the others; passed along the chain of
/// neighbours as [`gather_to_root`] does, each rank's part prefixed by its length (u64 LE). For what rank 0
/// needs of every rank each frame, e.g. the fluid layers of sort-last rendering
/// ([`crate::render::sort_last`]). Every rank must call it together.
/// Errors: a peer is gone, or a message is not whole length-prefixed parts ([`ClusterError::Parts`]).
pub fn gather_bytes_to_root<T: Transport>(t: &T, own: &[u8]) -> Result<Option<Vec<Vec<u8>>>, ClusterError> {
    let mut all = Vec::with_capacity(8 + own.len());
    all.extend_from_slice(&(own.len() as u64).to_le_bytes());
    all.extend_from_slice(own);
    if t.neighbour(Side::Right).is_some() {
        all.extend_from_slice(&t.recv(Side::Right)?);
    }
    if t.neighbour(Side::Left).is_some() {
        t.send(Side::Left, all)?;
        return Ok(None);
    }
    let mut parts = Vec::with_capacity(t.size());
    let mut rest = all.as_slice();
    while !rest.is_empty() {
        let bad = ClusterError::Parts { len: all.len() };
        let (head, tail) = rest.split_first_chunk::<8>().ok_or(bad)?;
        let n = usize::try_from(u64::from_le_bytes(*head)).ok().filter(|&n| n <= tail.len());
        let n = n.ok_or(ClusterError::Parts { len: all.len() })?;
        parts.push(tail[..n].to_vec());
        rest = &tail[n..];
    }
    Ok(Some(parts))
}

/// `all` in id order; its ids must be 0 ..< `expected`, each once.
/// Errors: [`ClusterError::Ids`] (particles lost or doubled: a bug).
pub fn by_id(all: &RankParticles, expected: usize) -> Result<RankParticles, ClusterError> {
    let mut slot = vec![usize::MAX; expected];
    let mut distinct = 0;
    for (i, &id) in all.ids.iter().enumerate() {
        if let Some(s) = slot.get_mut(id as usize).filter(|s| **s == usize::MAX) {
            *s = i;
            distinct += 1;
        }
    }
    if distinct != expected || all.len() != expected {
        return Err(ClusterError::Ids { got: all.len(), distinct, expected });
    }
    let mut out = RankParticles::default();
    for &i in &slot {
        out.push_from(all, i);
    }
    Ok(out)
}

/// Every particle of `all` in increasing id order, for a scene whose emitters and sinks add and remove
/// particles (so the ids are not `0 .. n`). Errors: an id held twice ([`ClusterError::Ids`]: a bug).
pub fn in_id_order(all: &RankParticles) -> Result<RankParticles, ClusterError> {
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_unstable_by_key(|&i| all.ids[i]);
    let distinct = 1 + order.windows(2).filter(|w| all.ids[w[0]] != all.ids[w[1]]).count();
    if !all.is_empty() && distinct != all.len() {
        return Err(ClusterError::Ids { got: all.len(), distinct, expected: all.len() });
    }
    let mut out = RankParticles::default();
    for i in order {
        out.push_from(all, i);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ThreadTransport;

    fn particles(ids: &[u32]) -> RankParticles {
        RankParticles {
            pos: ids.iter().map(|&i| [i as f32, 0.0, 0.0, 1000.0]).collect(),
            vel: ids.iter().map(|&i| [0.0, i as f32, 0.0, 0.0]).collect(),
            ids: ids.to_vec(),
        }
    }

    #[test]
    fn three_ranks_gather_on_rank_0_in_id_order() {
        let own = [vec![4, 0], vec![2], vec![1, 5, 3]];
        let got: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = ThreadTransport::group(3)
                .into_iter()
                .zip(&own)
                .map(|(t, ids)| s.spawn(move || gather_to_root(&t, &particles(ids)).unwrap()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got[1].is_none() && got[2].is_none());
        let all = got[0].as_ref().unwrap();
        assert_eq!(all.ids, vec![4, 0, 2, 1, 5, 3], "ranks in order");
        let sorted = by_id(all, 6).unwrap();
        assert_eq!(sorted, particles(&[0, 1, 2, 3, 4, 5]));
    }

    #[test]
    fn three_ranks_gather_their_bytes_on_rank_0_by_rank() {
        let own: [&[u8]; 3] = [b"zero", b"", b"two!!"];
        let got: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = ThreadTransport::group(3)
                .into_iter()
                .zip(own)
                .map(|(t, bytes)| s.spawn(move || gather_bytes_to_root(&t, bytes).unwrap()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got[1].is_none() && got[2].is_none());
        assert_eq!(got[0], Some(own.iter().map(|b| b.to_vec()).collect::<Vec<_>>()));
    }

    #[test]
    fn lost_or_doubled_ids_are_errors() {
        for ids in [&[0, 1, 1][..], &[0, 2], &[0, 1, 2, 3], &[0, 1, 7]] {
            assert!(matches!(by_id(&particles(ids), 3), Err(ClusterError::Ids { .. })), "{ids:?}");
        }
    }
}
