//! What the examples and benches share: a fixed-seed generator of random
//! keys, so every run measures the same data. Included with `#[path]` by
//! the benches; not an example itself (cargo builds only `examples/*.rs`
//! and `examples/*/main.rs`).
#![allow(dead_code)]

/// Marsaglia's xorshift64, started from a fixed seed.
pub struct XorShift(u64);

impl Default for XorShift {
    fn default() -> Self {
        XorShift(0x2545_F491_4F6C_DD1D)
    }
}

impl XorShift {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `len` random base-36 characters.
    pub fn word(&mut self, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| b"0123456789abcdefghijklmnopqrstuvwxyz"[(self.next_u64() % 36) as usize])
            .collect()
    }
}
