//! Per-component random streams derived from the scenario seed.
//!
//! Each component (a link's loss model, a flow's start jitter, ...) asks for a
//! stream by a stable name. The stream's key is a hash of (seed, name), so
//! adding or removing a component never changes another component's draws.
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub type Rng = ChaCha8Rng;

#[derive(Clone, Debug)]
pub struct RngStreams {
    seed: u64,
}

impl RngStreams {
    pub fn new(seed: u64) -> Self {
        Self { seed }
    }

    /// An independent stream for the component called `name`.
    pub fn stream(&self, name: &str) -> Rng {
        let mut key = [0u8; 32];
        let a = fnv1a64(name.as_bytes(), 0xcbf2_9ce4_8422_2325 ^ self.seed);
        let b = fnv1a64(name.as_bytes(), splitmix64(self.seed));
        let c = splitmix64(a ^ b.rotate_left(17));
        let d = splitmix64(c ^ self.seed);
        key[0..8].copy_from_slice(&a.to_le_bytes());
        key[8..16].copy_from_slice(&b.to_le_bytes());
        key[16..24].copy_from_slice(&c.to_le_bytes());
        key[24..32].copy_from_slice(&d.to_le_bytes());
        ChaCha8Rng::from_seed(key)
    }
}

impl RngStreams {
    /// A 64-bit seed for components that take a plain seed (e.g. BBR's initial cycle phase).
    pub fn seed_for(&self, name: &str) -> u64 {
        use rand::RngCore;
        self.stream(name).next_u64()
    }
}

fn fnv1a64(bytes: &[u8], basis: u64) -> u64 {
    let mut h = basis;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    splitmix64(h)
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

    #[test]
    fn streams_are_independent_of_each_other_and_reproducible() {
        let s = RngStreams::new(7);
        let a1: u64 = s.stream("link/a/loss").gen();
        let a2: u64 = s.stream("link/a/loss").gen();
        let b: u64 = s.stream("link/b/loss").gen();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        let other_seed: u64 = RngStreams::new(8).stream("link/a/loss").gen();
        assert_ne!(a1, other_seed);
    }
}
