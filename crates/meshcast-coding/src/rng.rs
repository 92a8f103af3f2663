//! The coefficient generator: SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014), written out here because its output is part of the wire
//! format: a receiver expands a repair symbol's 32-bit seed into the same coefficients the
//! sender used ([`expand`]). It must never change.

/// A SplitMix64 stream.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream starting from `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 bits.
    #[allow(clippy::should_implement_trait)] // not an Iterator: it never ends
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fills `out` with bytes, eight per output word, least significant byte first.
    pub fn fill(&mut self, out: &mut [u8]) {
        let mut chunks = out.chunks_exact_mut(8);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let w = self.next().to_le_bytes();
            rest.copy_from_slice(&w[..rest.len()]);
        }
    }
}

/// The coefficient vector of a seeded repair symbol: `out.len()` bytes of the SplitMix64
/// stream started at `seed`.
pub fn expand(seed: u32, out: &mut [u8]) {
    SplitMix64::new(u64::from(seed)).fill(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_values() {
        // The published first outputs for seed 1234567 (the algorithm's reference vector).
        let mut g = SplitMix64::new(1234567);
        assert_eq!(g.next(), 6457827717110365317);
        assert_eq!(g.next(), 3203168211198807973);
        assert_eq!(g.next(), 9817491932198370423);
    }

    #[test]
    fn expansion_is_a_prefix_of_the_stream() {
        let mut a = [0u8; 21];
        let mut b = [0u8; 5];
        expand(7, &mut a);
        expand(7, &mut b);
        assert_eq!(a[..5], b);
    }
}
