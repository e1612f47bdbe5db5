//! The slot function for eight pilots at once, for the pilot searches of
//! both layouts (`build::free_pilot`, `compact::free_pilot`).
//!
//! The search for each bucket's pilot is about a third of a build's CPU
//! time (`perf` of the 10M-pair, 26-byte-record build), and most pilots it
//! tries fail. Trying one costs three 64-bit multiplies per key
//! (two in `mix`, one in `mul_high`), which a core issues one at a time.
//! With AVX-512 (F and DQ: `vpmullq` multiplies eight 64-bit lanes), the
//! slots of eight consecutive pilots are worked out side by side, and their
//! taken bits gathered in one instruction. The answer is the same as the
//! scalar slot function's, lane for lane (tested below against
//! `slot_of_word`), so the bytes built are too; on a CPU without AVX-512
//! there are no lanes and the searches go pilot by pilot.

use super::{PilotWord, MIX_MULTIPLIERS, MIX_SHIFT, PILOT_MULTIPLIER};

/// Pilots [`Lanes::taken`] tries at once.
pub(crate) const LANES: u64 = 8;

/// The eight-lane slot function of one part, on a CPU that has it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lanes {
    /// The part's slot count, below 2^32 (see `new`).
    slots: u64,
}

impl Lanes {
    /// Lanes for a part of `slots` slots, if this CPU has AVX-512 F and DQ
    /// and `slots` fits the 32-bit multiply-high the lanes use. `None`
    /// otherwise, and always where `HASHFILE_NO_LANES` is set (so the tests
    /// and benchmarks can run the scalar search on the same machine).
    pub(crate) fn new(slots: u64) -> Option<Lanes> {
        if slots == 0 || slots > u32::MAX as u64 || !available() {
            return None;
        }
        Some(Lanes { slots })
    }

    /// Bit `j` set if pilot word `word.skip(j)` sends some key of `hashes`
    /// to a taken slot (a set bit of `taken`), for `j` in `0..8`. `taken`
    /// must have a bit for each of the part's slots.
    #[inline]
    pub(crate) fn taken(&self, hashes: &[u64], word: PilotWord, taken: &[u64]) -> u8 {
        // The gather reads `taken` unchecked: every slot is below
        // `self.slots`, so this is what keeps it in bounds.
        if (taken.len() as u64) < self.slots.div_ceil(64) {
            return scalar_taken(hashes, word, taken, self.slots);
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a `Lanes` exists only where `available()` found AVX-512 F
        // and DQ on this CPU; `slots` is in 1..2^32 (`new`) and `taken`
        // holds a word for every slot below it (checked above), which is
        // all `avx512::taken` needs.
        return unsafe { avx512::taken(hashes, word.0, taken, self.slots) };
        #[cfg(not(target_arch = "x86_64"))]
        scalar_taken(hashes, word, taken, self.slots)
    }
}

/// Whether this CPU has the lanes and `HASHFILE_NO_LANES` is not set
/// (looked at once per process).
fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::env::var_os("HASHFILE_NO_LANES").is_none()
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512dq")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// `Lanes::taken` one pilot at a time, with the slot function itself.
fn scalar_taken(hashes: &[u64], word: PilotWord, taken: &[u64], slots: u64) -> u8 {
    let mut hit = 0u8;
    for j in 0..LANES {
        let word = word.skip(j);
        let any = hashes.iter().any(|&h| {
            let s = super::slot_of_word(h, word, slots);
            taken[(s / 64) as usize] >> (s % 64) & 1 != 0
        });
        hit |= (any as u8) << j;
    }
    hit
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::*;
    use std::arch::x86_64::*;

    /// `Lanes::taken` in AVX-512: lane `j` holds pilot word `word + j ×
    /// PILOT_MULTIPLIER` and works out `mul_high(mix(hash ^ word), slots)`
    /// as `slot_of_word` does.
    ///
    /// # Safety
    /// The CPU has AVX-512 F and DQ; `slots` is in `1..2^32`; `taken` has
    /// at least `ceil(slots / 64)` words.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn taken(hashes: &[u64], word: u64, taken: &[u64], slots: u64) -> u8 {
        let lane = |j: u64| word.wrapping_add(j.wrapping_mul(PILOT_MULTIPLIER)) as i64;
        let words = _mm512_set_epi64(
            lane(7),
            lane(6),
            lane(5),
            lane(4),
            lane(3),
            lane(2),
            lane(1),
            lane(0),
        );
        let multipliers = MIX_MULTIPLIERS.map(|c| _mm512_set1_epi64(c as i64));
        let slots = _mm512_set1_epi64(slots as i64);
        let low_six = _mm512_set1_epi64(63);
        let one = _mm512_set1_epi64(1);
        let xor_shift = |x: __m512i| _mm512_xor_si512(x, _mm512_srli_epi64::<{ MIX_SHIFT }>(x));
        let mut hit = 0u8;
        for &hash in hashes {
            let mut x = _mm512_xor_si512(_mm512_set1_epi64(hash as i64), words);
            x = xor_shift(x);
            x = _mm512_mullo_epi64(x, multipliers[0]);
            x = xor_shift(x);
            x = _mm512_mullo_epi64(x, multipliers[1]);
            x = xor_shift(x);
            // mul_high(x, slots) for slots below 2^32, from two 32 × 32-bit
            // multiplies: with x = hi·2^32 + lo, x·slots / 2^64 rounds down
            // to (hi·slots + (lo·slots >> 32)) >> 32, and the sum cannot
            // overflow (hi·slots ≤ (2^32 − 1)^2, and the carry is below
            // 2^32).
            let high = _mm512_mul_epu32(_mm512_srli_epi64::<32>(x), slots);
            let low = _mm512_mul_epu32(x, slots);
            let slot =
                _mm512_srli_epi64::<32>(_mm512_add_epi64(high, _mm512_srli_epi64::<32>(low)));
            // Every slot is below `slots`, so every word index is below
            // `ceil(slots / 64)`, inside `taken` (the caller's promise).
            let words_taken =
                _mm512_i64gather_epi64::<8>(_mm512_srli_epi64::<6>(slot), taken.as_ptr().cast());
            let bits = _mm512_srlv_epi64(words_taken, _mm512_and_si512(slot, low_six));
            hit |= _mm512_test_epi64_mask(bits, one);
            if hit == u8::MAX {
                break;
            }
        }
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chd::{hash_key, slot_of_word};

    /// Lane for lane, the slots are the slot function's: every taken bit
    /// the lanes report is one the scalar search reports, over slot counts
    /// from 1 to 2^32 − 1, pilot words anywhere (wrapping past 2^64) and
    /// tables from empty to full.
    #[test]
    fn lanes_agree_with_the_slot_function() {
        let Some(_) = Lanes::new(1) else {
            eprintln!("no AVX-512 F and DQ on this CPU: nothing to compare");
            return;
        };
        let hashes: Vec<u64> = (0..40u64).map(|i| hash_key(&i.to_le_bytes(), 3)).collect();
        let mut cases = 0;
        for slots in [1u64, 2, 63, 64, 65, 1_000, 65_536, 1 << 20, u32::MAX as u64] {
            let lanes = Lanes::new(slots).expect("lanes for this slot count");
            let words = slots.div_ceil(64) as usize;
            if words > 1 << 20 {
                continue; // the next test takes the largest count
            }
            for density in [0u64, 1, 3, 7, 64] {
                let mut taken = vec![0u64; words];
                for (i, w) in taken.iter_mut().enumerate() {
                    *w = match density {
                        0 => 0,
                        64 => u64::MAX,
                        d => {
                            hash_key(&(i as u64 * d).to_le_bytes(), d)
                                & hash_key(&[d as u8], i as u64)
                        }
                    };
                }
                for start in [0u64, 1, 255, 1 << 23, u64::MAX / PILOT_MULTIPLIER] {
                    for size in [1usize, 2, 3, 4, 5, 9, 40] {
                        let word = PilotWord::of(start);
                        let expected = scalar_taken(&hashes[..size], word, &taken, slots);
                        assert_eq!(
                            lanes.taken(&hashes[..size], word, &taken),
                            expected,
                            "slots {slots}, density {density}, start {start}, size {size}"
                        );
                        cases += 1;
                    }
                }
            }
        }
        assert!(cases > 1_000, "{cases}");
    }

    /// The lanes' multiply-high, checked on its own at the largest slot
    /// count they take, where a table would not fit a test: the slot of
    /// each lane, read back through a table of one taken slot.
    #[test]
    fn lanes_multiply_high_at_the_largest_slot_count() {
        let slots = u32::MAX as u64;
        let Some(lanes) = Lanes::new(slots) else {
            return;
        };
        let mut taken = vec![0u64; slots.div_ceil(64) as usize];
        for i in 0..200u64 {
            let hash = hash_key(&i.to_le_bytes(), 9);
            let word = PilotWord::of(i * 1_000_003);
            let target = slot_of_word(hash, word.skip(i % 8), slots);
            taken[(target / 64) as usize] |= 1 << (target % 64);
            let hit = lanes.taken(&[hash], word, &taken);
            assert_ne!(hit & (1 << (i % 8)), 0, "lane {} of key {i}", i % 8);
            assert_eq!(hit, scalar_taken(&[hash], word, &taken, slots), "key {i}");
            taken[(target / 64) as usize] = 0;
        }
    }
}
