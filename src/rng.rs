//! A portable seeded RNG: ChaCha8 keyed by a 32-byte seed derived explicitly from
//! `(seed, index)` with splitmix64, so a case reproduces on any machine and with
//! any version of `rand` (StdRng/SmallRng/`seed_from_u64` are not portable).

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

pub struct Rng(ChaCha8Rng);

/// One step of splitmix64 (Steele, Lea, Flood 2014).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The RNG for case `index` of the campaign with seed `seed`.
    pub fn new(seed: u64, index: u64) -> Rng {
        let mut state = seed;
        let a = splitmix64(&mut state);
        let mut state2 = index ^ a;
        let mut bytes = [0u8; 32];
        for (i, chunk) in bytes.chunks_exact_mut(8).enumerate() {
            let w = if i % 2 == 0 {
                splitmix64(&mut state)
            } else {
                splitmix64(&mut state2)
            };
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        Rng(ChaCha8Rng::from_seed(bytes))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n`; 0 when `n == 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        // Rejection sampling: unbiased and fully specified (portable).
        let zone = u64::MAX - (u64::MAX % n + 1) % n;
        loop {
            let x = self.next_u64();
            if x <= zone {
                return x % n;
            }
        }
    }

    /// Uniform in `lo..=hi`; `lo` when the range is empty.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = (hi as i128 - lo as i128 + 1) as u128;
        if span > u64::MAX as u128 {
            return self.next_u64() as i64;
        }
        (lo as i128 + self.below(span as u64) as i128) as i64
    }

    /// True with probability `num / den` (false when `den == 0`).
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        den != 0 && self.below(den) < num
    }

    /// A uniformly chosen element. Panics on an empty slice: use it only on
    /// non-empty constant slices, and [`Rng::try_pick`] everywhere else.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let i = self.below(items.len() as u64) as usize;
        &items[i]
    }

    /// A uniformly chosen element, `None` for an empty slice.
    pub fn try_pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            Some(self.pick(items))
        }
    }

    /// Index chosen with the given weights (0 if all weights are 0).
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut x = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        0
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_and_distinct() {
        let a: Vec<u64> = (0..8).map(|_| Rng::new(7, 3).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut r1 = Rng::new(7, 3);
        let mut r2 = Rng::new(7, 4);
        let mut r3 = Rng::new(8, 3);
        let x = r1.next_u64();
        assert_ne!(x, r2.next_u64());
        assert_ne!(x, r3.next_u64());
    }

    #[test]
    fn known_stream_is_stable() {
        // Pins the derivation: if this changes, old seeds no longer reproduce.
        let mut r = Rng::new(0, 0);
        let v: Vec<u64> = (0..3).map(|_| r.below(1000)).collect();
        assert_eq!(v, [497, 706, 989]);
        let mut r = Rng::new(12345, 678);
        assert_eq!(r.next_u64(), 12296412730855306368);
        assert_eq!(r.next_u64(), 550140152017027962);
    }

    #[test]
    fn bounds() {
        let mut r = Rng::new(1, 1);
        for _ in 0..1000 {
            assert!(r.below(7) < 7);
            let x = r.range(-5, 20);
            assert!((-5..=20).contains(&x));
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(r.range(3, 3), 3);
        assert_eq!(r.range(5, 2), 5);
        assert!(!r.chance(1, 0));
        assert!(r.chance(1, 1));
        assert_eq!(r.try_pick::<u8>(&[]), None);
        let mut v: Vec<u32> = (0..20).collect();
        r.shuffle(&mut v);
        let mut s = v.clone();
        s.sort();
        assert_eq!(s, (0..20).collect::<Vec<_>>());
        assert_eq!(r.weighted(&[0, 0, 5]), 2);
    }
}
