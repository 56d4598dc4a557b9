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

// The messages are the GPU's own bytes (little-endian, as every GPU and every host this runs on), copied
// whole: no value is converted one by one (that cost about 43 ns a particle, most of a two-H200 run's
// exchange at 7.65 M particles a rank).
#[cfg(not(target_endian = "little"))]
compile_error!("rank messages carry the GPU's little-endian bytes as they are");

/// `particles` as one message (see the module docs): three bulk copies.
pub fn encode(particles: &RankParticles) -> Vec<u8> {
    let n = particles.len();
    let mut out = Vec::with_capacity(4 + n * PARTICLE_BYTES);
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.extend_from_slice(bytemuck::cast_slice(&particles.pos));
    out.extend_from_slice(bytemuck::cast_slice(&particles.vel));
    out.extend_from_slice(bytemuck::cast_slice(&particles.ids));
    out
}

/// The particles of a message made by [`encode`] (bulk copies into aligned vectors). Errors: the length
/// does not match the header.
pub fn decode(bytes: &[u8]) -> Result<RankParticles, ExchangeError> {
    let count = bytes.get(..4).map_or(u64::MAX, |h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as u64);
    let fail = ExchangeError { len: bytes.len(), count };
    let n = usize::try_from(count).map_err(|_| ExchangeError { ..fail })?;
    if n.checked_mul(PARTICLE_BYTES).and_then(|b| b.checked_add(4)) != Some(bytes.len()) {
        return Err(fail);
    }
    let (vel_at, ids_at) = (4 + 16 * n, 4 + 32 * n);
    Ok(RankParticles {
        pos: bytemuck::pod_collect_to_vec(&bytes[4..vel_at]),
        vel: bytemuck::pod_collect_to_vec(&bytes[vel_at..ids_at]),
        ids: bytemuck::pod_collect_to_vec(&bytes[ids_at..]),
    })
}

/// `values` as bytes (little-endian), one bulk copy.
pub fn encode_f32(values: &[f32]) -> Vec<u8> {
    bytemuck::cast_slice(values).to_vec()
}

/// The values of [`encode_f32`]. Errors: a length that is not whole `f32`s.
pub fn decode_f32(bytes: &[u8]) -> Result<Vec<f32>, ExchangeError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(ExchangeError { len: bytes.len(), count: (bytes.len() / 4) as u64 });
    }
    Ok(bytemuck::pod_collect_to_vec(bytes))
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
        // A message at an odd address (a transport's buffer need not be aligned) decodes the same.
        let shifted = [vec![0u8], encode(&p)].concat();
        assert_eq!(decode(&shifted[1..]).unwrap().ids, p.ids);
        let shifted = [vec![0u8], encode_f32(&v)].concat();
        assert_eq!(decode_f32(&shifted[1..]).unwrap(), v);
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
