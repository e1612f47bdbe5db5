//! The CHD (compress, hash, displace) minimal perfect hash.
//!
//! Keys hash with XXH3-64 and a stored seed. The high bits of the hash pick a
//! bucket, with a skew that sends a `dense_key_fraction` of keys into a
//! `dense_bucket_fraction` of buckets (the refinement from FCH and PtrHash:
//! big buckets are placed first, while the table is empty). Each bucket gets
//! the smallest *pilot* (displacement seed) that sends all of its keys to free
//! slots of a table of `slot_count = ceil(n / load_factor)` slots. Slots at or
//! past `n` are then remapped onto the free slots below `n`, which makes the
//! function minimal: the `n` keys land on exactly `0..n`.
//!
//! Lookup cost: one XXH3, one multiply-high for the bucket, one pilot read,
//! one mix and multiply-high for the slot, and rarely (1 - load_factor of
//! the keys) one remap read. docs/FORMAT.md gives the exact arithmetic.
//!
//! This module holds the arithmetic lookups and builds share (hashing, the
//! bucket map, the slot function, written once); `search` is the search
//! for a perfect hash that every build runs (seeds, parts in parallel,
//! judging), and `classic` and `compact` the two index layouts' placing of
//! a part's keys.

pub(crate) mod classic;
pub mod compact;
pub(crate) mod search;

use crate::format::Geometry;

pub use search::MAX_BUILD_ENTRIES;

/// Multiplier that spreads a pilot over 64 bits before it is mixed with the
/// key's hash (from PtrHash; any odd constant with good bit spread works).
const PILOT_MULTIPLIER: u64 = 0x517c_c1b7_2722_0a95;

/// Hash of a key: XXH3-64 with the store's seed. Stable across platforms and
/// `xxhash-rust` versions, since XXH3 output is fixed by its specification.
#[inline]
pub fn hash_key(key: &[u8], seed: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(key, seed)
}

/// The 16-bit fingerprint of a key hash that a store with a fingerprints
/// section keeps in each slot (docs/FORMAT.md, "Fingerprints"): the high
/// bits of the hash times an odd constant, so that every bit of the hash
/// counts, not only those that chose the key's bucket and slot. A key the
/// store does not hold matches its slot's fingerprint once in 65,536.
#[inline]
pub fn fingerprint(hash: u64) -> u16 {
    (hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as u16
}

#[inline]
pub(crate) fn mul_high(a: u64, b: u64) -> u64 {
    ((a as u128 * b as u128) >> 64) as u64
}

/// murmur3's 64-bit finalizer: a cheap bijective mix.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A pilot as the slot function mixes it in: `pilot × PILOT_MULTIPLIER`.
/// The pilot search walks these words with `PilotWord::next` rather than
/// multiplying for every pilot it tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PilotWord(u64);

impl PilotWord {
    /// The word of `pilot`.
    #[inline]
    pub fn of(pilot: u64) -> PilotWord {
        PilotWord(pilot.wrapping_mul(PILOT_MULTIPLIER))
    }

    /// The word of the next pilot: `of(p).next() == of(p + 1)`.
    #[inline]
    pub fn next(self) -> PilotWord {
        PilotWord(self.0.wrapping_add(PILOT_MULTIPLIER))
    }
}

/// The slot function, the one formula builds place keys with and lookups
/// find them by: the slot, in `0..slot_count`, that a pilot sends a key hash
/// to. With parts, `slot_count` is the slots per part and the result is
/// relative to the first slot of the key's part.
#[inline(always)]
pub fn slot_of_word(hash: u64, pilot: PilotWord, slot_count: u64) -> u64 {
    mul_high(mix(hash ^ pilot.0), slot_count)
}

/// `slot_of_word` for a pilot.
#[inline]
pub fn slot(hash: u64, pilot: u64, slot_count: u64) -> u64 {
    slot_of_word(hash, PilotWord::of(pilot), slot_count)
}

/// The build options the perfect hash depends on (`BuildOptions` maps onto
/// these; its docs give the ranges and defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Average keys per bucket (lambda).
    pub keys_per_bucket: f64,
    /// Table fill before remapping (alpha).
    pub load_factor: f64,
    /// Fraction of keys hashed into the dense buckets.
    pub dense_key_fraction: f64,
    /// Fraction of buckets that are dense.
    pub dense_bucket_fraction: f64,
    /// First hash seed tried.
    pub hash_seed: u64,
    /// Most keys per part, on average.
    pub keys_per_part: u64,
}

/// Number of parts for `n` keys: enough that none averages more than
/// `keys_per_part`.
pub fn part_count(n: u64, keys_per_part: u64) -> u64 {
    n.div_ceil(keys_per_part.max(1)).max(1)
}

/// The geometry for `entries` keys split into `part_count` parts of which
/// the largest holds `max_part_entries`: every part gets the slots the
/// largest needs at `load_factor`, but never so many that the table would
/// pass `2n + 1` slots in all, the most a reader accepts (docs/FORMAT.md):
/// with a low load factor and uneven parts the table is fuller than asked.
/// An error, naming `keys_per_part`, if even the largest part does not fit.
pub fn geometry(
    entries: u64,
    part_count: u64,
    max_part_entries: u64,
    params: &Params,
) -> Result<Geometry, crate::error::Error> {
    if entries == 0 {
        return Ok(Geometry {
            entry_count: 0,
            bucket_count: 0,
            dense_bucket_count: 0,
            dense_hash_threshold: 0,
            slot_count: 0,
            part_count: 1,
        });
    }
    let per_part = entries as f64 / part_count as f64;
    let buckets_per_part = ((per_part / params.keys_per_bucket).ceil() as u64).max(1);
    let dense_bucket_count =
        ((buckets_per_part as f64 * params.dense_bucket_fraction) as u64).min(buckets_per_part);
    let dense_hash_threshold = if dense_bucket_count == 0 {
        0
    } else {
        (params.dense_key_fraction * 2f64.powi(64)).min(u64::MAX as f64) as u64
    };
    let most_per_part = (2 * entries + 1) / part_count;
    if max_part_entries > most_per_part {
        return Err(crate::error::Error::InvalidOption {
            name: "keys_per_part",
            reason: format!("{} is too small for {entries} keys: they fall into {part_count} parts of up to {max_part_entries} keys, and a store has room for {most_per_part} per part; use a larger keys_per_part", params.keys_per_part),
        });
    }
    let slots_per_part = ((max_part_entries as f64 / params.load_factor).ceil() as u64)
        .clamp(max_part_entries, most_per_part);
    Ok(Geometry {
        entry_count: entries,
        bucket_count: buckets_per_part * part_count,
        dense_bucket_count,
        dense_hash_threshold,
        slot_count: slots_per_part * part_count,
        part_count,
    })
}

/// Maps a hash to its part, bucket and slots. The map is monotone in the
/// hash, so sorting hashes also groups keys by part and by bucket.
#[derive(Clone, Copy, Debug)]
pub struct BucketMap {
    dense: u64,
    sparse: u64,
    threshold: u64,
    dense_multiplier: u64,
    sparse_multiplier: u64,
    part_count: u64,
    buckets_per_part: u64,
    slots_per_part: u64,
}

impl BucketMap {
    /// The multipliers that turn a hash into a bucket, precomputed at open.
    pub fn new(geometry: &Geometry) -> BucketMap {
        let per_part = geometry.buckets_per_part();
        let dense = geometry.dense_bucket_count;
        let sparse = per_part - dense;
        let threshold = geometry.dense_hash_threshold;
        let dense_multiplier = if threshold == 0 {
            0
        } else {
            ((dense as u128) << 64)
                .div_ceil(threshold as u128)
                .min(u64::MAX as u128) as u64
        };
        let sparse_range = (u64::MAX - threshold) as u128 + 1;
        let sparse_multiplier = ((sparse as u128) << 64)
            .div_ceil(sparse_range)
            .min(u64::MAX as u128) as u64;
        BucketMap {
            dense,
            sparse,
            threshold,
            dense_multiplier,
            sparse_multiplier,
            part_count: geometry.part_count.max(1),
            buckets_per_part: per_part,
            slots_per_part: geometry.slots_per_part(),
        }
    }

    /// The part of a key hash, and the hash's position within the part
    /// (uniform over `u64` like the hash itself): the high and low words of
    /// `hash * part_count`. With one part, `(0, hash)`.
    #[inline]
    pub fn split(&self, hash: u64) -> (u64, u64) {
        let wide = hash as u128 * self.part_count as u128;
        ((wide >> 64) as u64, wide as u64)
    }

    /// The bucket, within its part, of a position from `split`.
    #[inline]
    pub fn bucket_in_part(&self, within: u64) -> u64 {
        if within < self.threshold {
            mul_high(within, self.dense_multiplier).min(self.dense - 1)
        } else {
            self.dense
                + mul_high(within - self.threshold, self.sparse_multiplier)
                    .min(self.sparse.saturating_sub(1))
        }
    }

    /// The bucket of a key hash, and the first slot of its part.
    #[inline]
    pub fn locate(&self, hash: u64) -> (u64, u64) {
        let (part, within) = self.split(hash);
        (
            part * self.buckets_per_part + self.bucket_in_part(within),
            part * self.slots_per_part,
        )
    }

    /// Buckets in each part.
    #[inline]
    pub fn buckets_per_part(&self) -> u64 {
        self.buckets_per_part
    }

    /// Slots in each part: the `slot_count` to give `slot`.
    #[inline]
    pub fn slots_per_part(&self) -> u64 {
        self.slots_per_part
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pilot_words_step_as_they_multiply() {
        for pilot in [0u64, 1, 2, 1_000, (1 << 24) - 2, u64::MAX - 1] {
            assert_eq!(
                PilotWord::of(pilot).next(),
                PilotWord::of(pilot.wrapping_add(1)),
                "pilot {pilot}"
            );
        }
    }
}

#[cfg(test)]
mod geometry_tests {
    use super::*;

    fn params(load_factor: f64, keys_per_part: u64) -> Params {
        Params {
            keys_per_bucket: 3.5,
            load_factor,
            dense_key_fraction: 0.5,
            dense_bucket_fraction: 0.2,
            hash_seed: 0,
            keys_per_part,
        }
    }

    /// A low load factor with uneven parts is held to the 2n + 1 slots a
    /// reader accepts; parts too uneven for any table are refused by name.
    #[test]
    fn tables_stay_within_what_readers_accept() {
        let g = geometry(140_000, 2, 70_400, &params(0.5, 70_000)).unwrap();
        assert!(g.slot_count <= 2 * 140_000 + 1, "{g:?}");
        assert!(g.slots_per_part() >= 70_400);
        // At the usual load factor nothing is capped.
        let g = geometry(140_000, 2, 70_400, &params(0.99, 70_000)).unwrap();
        assert_eq!(g.slots_per_part(), (70_400f64 / 0.99).ceil() as u64);
        match geometry(1_000, 250, 12, &params(0.99, 4)) {
            Err(crate::error::Error::InvalidOption {
                name: "keys_per_part",
                reason,
            }) => assert!(
                reason.starts_with("4 is too small for 1000 keys"),
                "{reason}"
            ),
            other => panic!("expected keys_per_part to be refused, got {other:?}"),
        }
    }
}
