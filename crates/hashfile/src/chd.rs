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

use crate::error::{Error, Result};

/// Multiplier that spreads a pilot over 64 bits before it is mixed with the
/// key's hash (from PtrHash; any odd constant with good bit spread works).
const PILOT_MULTIPLIER: u64 = 0x517c_c1b7_2722_0a95;

/// Largest pilot tried for one bucket before the build moves to the next hash
/// seed. Pilots are stored in at most 32 bits.
const MAX_PILOT: u64 = 1 << 24;

/// How many hash seeds a build tries before it gives up.
pub(crate) const MAX_SEED_ATTEMPTS: u32 = 16;

/// Hash of a key: XXH3-64 with the store's seed. Stable across platforms and
/// `xxhash-rust` versions, since XXH3 output is fixed by its specification.
#[inline]
pub fn hash_key(key: &[u8], seed: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(key, seed)
}

#[inline]
fn mul_high(a: u64, b: u64) -> u64 {
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

/// The numbers a lookup needs, as stored in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Number of keys, `n`.
    pub entry_count: u64,
    /// Number of buckets, `r`.
    pub bucket_count: u64,
    /// Buckets `0..dense_bucket_count` take hashes below `dense_hash_threshold`.
    pub dense_bucket_count: u64,
    /// See `dense_bucket_count`.
    pub dense_hash_threshold: u64,
    /// Table size before remapping, `m >= n`.
    pub slot_count: u64,
}

impl Geometry {
    /// Derives the geometry from the build parameters.
    pub fn new(entries: u64, params: &crate::BuildOptions) -> Geometry {
        if entries == 0 {
            return Geometry { entry_count: 0, bucket_count: 0, dense_bucket_count: 0, dense_hash_threshold: 0, slot_count: 0 };
        }
        let n = entries as f64;
        let bucket_count = ((n / params.keys_per_bucket).ceil() as u64).max(1);
        let dense_bucket_count = ((bucket_count as f64 * params.dense_bucket_fraction) as u64).min(bucket_count);
        let dense_hash_threshold = if dense_bucket_count == 0 {
            0
        } else {
            (params.dense_key_fraction * 2f64.powi(64)).min(u64::MAX as f64) as u64
        };
        let slot_count = ((n / params.load_factor).ceil() as u64).max(entries);
        Geometry { entry_count: entries, bucket_count, dense_bucket_count, dense_hash_threshold, slot_count }
    }

    /// The multipliers that turn a hash into a bucket, precomputed at open.
    pub fn bucket_map(&self) -> BucketMap {
        let dense = self.dense_bucket_count;
        let sparse = self.bucket_count - dense;
        let threshold = self.dense_hash_threshold;
        let dense_multiplier = if threshold == 0 { 0 } else { ((dense as u128) << 64).div_ceil(threshold as u128).min(u64::MAX as u128) as u64 };
        let sparse_range = (u64::MAX - threshold) as u128 + 1;
        let sparse_multiplier = ((sparse as u128) << 64).div_ceil(sparse_range).min(u64::MAX as u128) as u64;
        BucketMap { dense, sparse, threshold, dense_multiplier, sparse_multiplier }
    }
}

/// Maps a hash to its bucket. The map is monotone in the hash, so sorting
/// hashes also groups keys by bucket.
#[derive(Clone, Copy, Debug)]
pub struct BucketMap {
    dense: u64,
    sparse: u64,
    threshold: u64,
    dense_multiplier: u64,
    sparse_multiplier: u64,
}

impl BucketMap {
    /// The bucket of a key hash.
    #[inline]
    pub fn bucket(&self, hash: u64) -> u64 {
        if hash < self.threshold {
            mul_high(hash, self.dense_multiplier).min(self.dense - 1)
        } else {
            self.dense + mul_high(hash - self.threshold, self.sparse_multiplier).min(self.sparse.saturating_sub(1))
        }
    }
}

/// The slot, in `0..slot_count`, that `pilot` sends a key hash to.
#[inline]
pub fn slot(hash: u64, pilot: u64, slot_count: u64) -> u64 {
    mul_high(mix(hash ^ pilot.wrapping_mul(PILOT_MULTIPLIER)), slot_count)
}

/// A built perfect hash: one pilot per bucket, the remap of the slots past
/// `n`, and the final slot of every key.
pub(crate) struct Built {
    pub seed: u64,
    pub geometry: Geometry,
    pub pilots: Vec<u32>,
    /// `remap[s - n]` is the final slot for table slot `s >= n`; 0 where unused.
    pub remap: Vec<u64>,
    /// Every key's final slot (in `0..n`, held in the `hash` field) and
    /// index. It reuses the sorted hashes' memory: a build's peak holds one
    /// such array.
    pub slots: Vec<Hashed>,
}

/// A key's hash and index, 12 bytes, so that the largest array of a build
/// costs 12 bytes per key. Ordered by hash, then index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(C, packed(4))]
pub(crate) struct Hashed {
    pub hash: u64,
    pub index: u32,
}

/// Most keys one build takes (indices are 32-bit). The format has no such
/// limit; larger data is for sharded stores.
pub const MAX_BUILD_ENTRIES: usize = u32::MAX as usize;

/// `(hash, index)` of every key, sorted. Hashing and sorting run on the
/// rayon pool; the order is total, so the result does not depend on the
/// number of threads. The bucket map is monotone, so this also groups keys
/// by bucket.
pub(crate) fn sorted_hashes<'a, K>(keys: &K, n: usize, seed: u64) -> Vec<Hashed>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    use rayon::prelude::*;
    assert!(n <= MAX_BUILD_ENTRIES, "checked by Builder");
    let mut hashed: Vec<Hashed> = (0..n).into_par_iter().map(|i| Hashed { hash: hash_key(keys(i), seed), index: i as u32 }).collect();
    hashed.par_sort_unstable();
    hashed
}

/// Builds the perfect hash of `keys`. Tries seeds `options.hash_seed`,
/// `+1`, ... until one works: a seed fails if two distinct keys share a
/// 64-bit hash or a bucket finds no pilot below `MAX_PILOT`.
pub(crate) fn build<'a, K>(n: usize, keys: K, options: &crate::BuildOptions) -> Result<Built>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    let geometry = Geometry::new(n as u64, options);
    for attempt in 0..MAX_SEED_ATTEMPTS {
        let seed = options.hash_seed.wrapping_add(attempt as u64);
        if let Some(built) = try_seed(&keys, n, seed, geometry)? {
            return Ok(built);
        }
    }
    Err(Error::BuildFailed { entries: n as u64, attempts: MAX_SEED_ATTEMPTS })
}

fn try_seed<'a, K>(keys: &K, n: usize, seed: u64, geometry: Geometry) -> Result<Option<Built>>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    let hashed = sorted_hashes(keys, n, seed);
    for pair in hashed.windows(2) {
        if pair[0].hash == pair[1].hash {
            let (a, b) = (keys(pair[0].index as usize), keys(pair[1].index as usize));
            if a == b {
                return Err(Error::DuplicateKey { key: a.to_vec(), positions: Vec::new() });
            }
            return Ok(None); // a true 64-bit collision: next seed
        }
    }
    if n == 0 {
        return Ok(Some(Built { seed, geometry, pilots: Vec::new(), remap: Vec::new(), slots: Vec::new() }));
    }

    let map = geometry.bucket_map();
    let r = geometry.bucket_count as usize;
    // starts[b]..starts[b + 1] is bucket b's range in `hashed`.
    let mut starts = vec![0usize; r + 1];
    for e in &hashed {
        starts[map.bucket(e.hash) as usize + 1] += 1;
    }
    for b in 0..r {
        starts[b + 1] += starts[b];
    }

    // Largest buckets first; ties in bucket order (counting sort, stable).
    let max_size = (0..r).map(|b| starts[b + 1] - starts[b]).max().unwrap_or(0);
    let mut by_size: Vec<Vec<u32>> = vec![Vec::new(); max_size + 1];
    for b in 0..r {
        by_size[starts[b + 1] - starts[b]].push(b as u32);
    }

    let m = geometry.slot_count;
    let mut taken = vec![0u64; (m as usize).div_ceil(64)];
    let is_taken = |taken: &[u64], s: u64| taken[(s / 64) as usize] >> (s % 64) & 1 == 1;
    let mut pilots = vec![0u32; r];
    let mut bucket_slots: Vec<u64> = Vec::with_capacity(max_size);
    for size in (1..=max_size).rev() {
        for &b in &by_size[size] {
            let members = &hashed[starts[b as usize]..starts[b as usize + 1]];
            let mut pilot = 0u64;
            'search: loop {
                if pilot >= MAX_PILOT {
                    return Ok(None);
                }
                bucket_slots.clear();
                for e in members {
                    let s = slot(e.hash, pilot, m);
                    if is_taken(&taken, s) || bucket_slots.contains(&s) {
                        pilot += 1;
                        continue 'search;
                    }
                    bucket_slots.push(s);
                }
                break;
            }
            for &s in &bucket_slots {
                taken[(s / 64) as usize] |= 1 << (s % 64);
            }
            pilots[b as usize] = pilot as u32;
        }
    }

    // Pair the used slots at or past n with the free slots below n, both in
    // ascending order. There are exactly as many of each.
    let n64 = n as u64;
    let mut remap = vec![0u64; (m - n64) as usize];
    let mut free = (0..n64).filter(|&s| !is_taken(&taken, s));
    for s in n64..m {
        if is_taken(&taken, s) {
            remap[(s - n64) as usize] = free.next().expect("as many free slots below n as used slots past it");
        }
    }

    let mut slots = hashed;
    for (b, window) in starts.windows(2).enumerate() {
        for entry in &mut slots[window[0]..window[1]] {
            let s = slot(entry.hash, pilots[b] as u64, m);
            entry.hash = if s < n64 { s } else { remap[(s - n64) as usize] };
        }
    }
    Ok(Some(Built { seed, geometry, pilots, remap, slots }))
}
