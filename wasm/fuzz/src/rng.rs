//! A small deterministic generator, seeded per case, so any case can be
//! replayed on its own from its seed and number.

/// xorshift64* (Vigna): fast, and good enough to choose inputs.
#[derive(Clone, Debug)]
pub struct Rng(u64);

/// The independent sequences a case draws from: the module is generated on
/// the host, the run (limits, arguments) happens on the host or in the
/// kernel, and both must agree whichever side replays the case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Choosing and generating the module.
    Module,
    /// Limits and arguments of the run.
    Run,
}

impl Rng {
    /// A generator started from `seed` (any value; 0 is remapped).
    pub fn new(seed: u64) -> Self {
        Rng(splitmix64(seed).max(1))
    }

    /// The generator of `stream` for case `case` of campaign `seed`.
    pub fn for_case(seed: u64, case: u64, stream: Stream) -> Self {
        let salt = match stream {
            Stream::Module => 0x6d6f_6475_6c65,
            Stream::Run => 0x0072_756e,
        };
        Rng::new(seed ^ splitmix64(case ^ salt))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True once in `n` draws.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> alloc::vec::Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// SplitMix64's finalizer: spreads nearby seeds and case numbers apart.
fn splitmix64(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_and_cases_differ_and_replay() {
        let a = Rng::for_case(7, 1, Stream::Run).next_u64();
        assert_eq!(a, Rng::for_case(7, 1, Stream::Run).next_u64());
        assert_ne!(a, Rng::for_case(7, 2, Stream::Run).next_u64());
        assert_ne!(a, Rng::for_case(7, 1, Stream::Module).next_u64());
        assert_ne!(a, Rng::for_case(8, 1, Stream::Run).next_u64());
    }
}
