//! What travels between ranks, as bytes (the [`super::Transport`] moves byte buffers only): particles
//! with all their state and id (migrants and ghosts), laid out as a `u32` count, then `count`
//! positions and `count` velocities (`[f32; 4]` each, little-endian) and `count` ids (`u32`).

use crate::sim::RankParticles;
use thiserror::Error;

/// A message that does not decode (a peer of another build, or a bug).
#[derive(Debug, Error)]
#[error("a particle message of {len} bytes does not hold the {count} particles its header claims")]
pub struct ExchangeError {
    pub len: usize,
    pub count: u64,
}

/// Bytes per particle: position, velocity, id.
const PARTICLE_BYTES: usize = 16 + 16 + 4;

/// `particles` as one message (see the module docs).
pub fn encode(particles: &RankParticles) -> Vec<u8> {
    let n = particles.len();
    let mut out = Vec::with_capacity(4 + n * PARTICLE_BYTES);
    out.extend_from_slice(&(n as u32).to_le_bytes());
    for v in particles.pos.iter().chain(&particles.vel) {
        for c in v {
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    for id in &particles.ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
    out
}

/// The particles of a message made by [`encode`]. Errors: the length does not match the header.
pub fn decode(bytes: &[u8]) -> Result<RankParticles, ExchangeError> {
    let count = bytes.get(..4).map_or(u64::MAX, |h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as u64);
    let fail = ExchangeError { len: bytes.len(), count };
    let n = usize::try_from(count).map_err(|_| ExchangeError { ..fail })?;
    if n.checked_mul(PARTICLE_BYTES).and_then(|b| b.checked_add(4)) != Some(bytes.len()) {
        return Err(fail);
    }
    let f = |k: usize| f32::from_le_bytes([bytes[k], bytes[k + 1], bytes[k + 2], bytes[k + 3]]);
    let vec4 = |base: usize, i: usize| std::array::from_fn(|c| f(base + 16 * i + 4 * c));
    let ids_at = 4 + 32 * n;
    Ok(RankParticles {
        pos: (0..n).map(|i| vec4(4, i)).collect(),
        vel: (0..n).map(|i| vec4(4 + 16 * n, i)).collect(),
        ids: (0..n)
            .map(|i| {
                let k = ids_at + 4 * i;
                u32::from_le_bytes([bytes[k], bytes[k + 1], bytes[k + 2], bytes[k + 3]])
            })
            .collect(),
    })
}

/// `values` as bytes (little-endian).
pub fn encode_f32(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The values of [`encode_f32`]. Errors: a length that is not whole `f32`s.
pub fn decode_f32(bytes: &[u8]) -> Result<Vec<f32>, ExchangeError> {
    let chunks = bytes.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return Err(ExchangeError { len: bytes.len(), count: (bytes.len() / 4) as u64 });
    }
    Ok(chunks.map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn particles_round_trip_bit_for_bit() {
        let p = RankParticles {
            pos: vec![[1.0, -2.5, f32::MIN_POSITIVE, 1000.0], [0.1, 0.2, 0.3, -1.0]],
            vel: vec![[f32::NAN, 0.0, -0.0, 7.0], [1e-30, 2.0, 3.0, 4.0]],
            ids: vec![7, u32::MAX],
        };
        let back = decode(&encode(&p)).unwrap();
        assert_eq!(back.ids, p.ids);
        let bits = |v: &Vec<[f32; 4]>| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!((bits(&back.pos), bits(&back.vel)), (bits(&p.pos), bits(&p.vel)));
        assert!(decode(&encode(&RankParticles::default())).unwrap().is_empty());
        let v = vec![1.5, -0.0, f32::INFINITY, 3.0, 0.25];
        assert_eq!(decode_f32(&encode_f32(&v)).unwrap(), v);
        assert!(decode_f32(&[0; 15]).is_err());
    }

    #[test]
    fn short_or_long_messages_are_errors() {
        let bytes = encode(&RankParticles { pos: vec![[0.0; 4]], vel: vec![[0.0; 4]], ids: vec![1] });
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode(&[bytes.clone(), vec![0]].concat()).is_err());
        assert!(decode(&[]).is_err());
        assert!(decode(&[255, 255, 255, 255]).is_err());
    }
}
