//! Datasets: one table split over several stores (shards). This module
//! fixes how a key is routed to its shard, for every language and every
//! version (docs/FORMAT.md, "Datasets"): the routing is part of the format,
//! so a dataset built by one release, or by Spark, is read by any other.
//!
//! A key goes to shard `⌊h × n / 2⁶⁴⌋` of `n`, where `h` is the key's
//! XXH3-64 with [`ROUTING_SEED`]: the high bits of the hash, by one
//! multiply. The seed differs from every store's hash seed, so routing is
//! independent of how each shard's index splits its keys into parts (with
//! one seed for both, a shard's keys would share their high bits and crowd
//! into a few parts). Checked-in vectors (`tests/vectors/routing.tsv`) pin
//! it; the Ruby suite reads the same file.

use std::num::NonZeroU32;

/// The seed of the routing hash: the bytes of "hashfile" read as a
/// big-endian u64. Fixed by the format; never a build option.
pub const ROUTING_SEED: u64 = u64::from_be_bytes(*b"hashfile");

/// The most shards a dataset may have.
pub const MAX_SHARDS: u32 = 1 << 20;

/// The shard of `key` among `shards`: `0..shards`.
#[inline]
pub fn shard_of(key: &[u8], shards: NonZeroU32) -> u32 {
    let hash = xxhash_rust::xxh3::xxh3_64_with_seed(key, ROUTING_SEED);
    ((hash as u128 * shards.get() as u128) >> 64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_is_the_word_hashfile() {
        assert_eq!(ROUTING_SEED, 0x6861_7368_6669_6c65);
    }

    #[test]
    fn every_key_lands_in_range_and_one_shard_takes_all() {
        let one = NonZeroU32::new(1).unwrap();
        let many = NonZeroU32::new(MAX_SHARDS).unwrap();
        for i in 0..10_000u32 {
            let key = i.to_le_bytes();
            assert_eq!(shard_of(&key, one), 0);
            assert!(shard_of(&key, many) < MAX_SHARDS);
        }
    }

    #[test]
    fn shards_are_even() {
        // 100,000 keys over 16 shards: each within 5% of 6,250.
        let n = NonZeroU32::new(16).unwrap();
        let mut counts = [0u32; 16];
        for i in 0..100_000u32 {
            counts[shard_of(format!("key-{i}").as_bytes(), n) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (5_937..=6_563).contains(&c)),
            "{counts:?}"
        );
    }
}
