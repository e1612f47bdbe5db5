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
///
/// Keys split by hash into `part_count` parts of equal geometry: each part
/// has `bucket_count / part_count` buckets and `slot_count / part_count`
/// slots, and its buckets place keys only in its own slots. One part is
/// plain CHD; many parts keep each part's table small enough to stay in
/// cache while it is built, and let the parts be built in parallel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Number of keys, `n`.
    pub entry_count: u64,
    /// Number of buckets, `r`, over all parts.
    pub bucket_count: u64,
    /// In each part, buckets `0..dense_bucket_count` take the hashes below
    /// `dense_hash_threshold`.
    pub dense_bucket_count: u64,
    /// See `dense_bucket_count`.
    pub dense_hash_threshold: u64,
    /// Table size before remapping, `m >= n`, over all parts.
    pub slot_count: u64,
    /// Number of parts, at least 1.
    pub part_count: u64,
}

impl Geometry {
    /// Derives the geometry from the build parameters, for `entries` keys
    /// split into `part_count` parts of which the largest holds
    /// `max_part_entries`: every part gets the slots the largest needs.
    pub fn new(entries: u64, part_count: u64, max_part_entries: u64, params: &crate::BuildOptions) -> Geometry {
        if entries == 0 {
            return Geometry { entry_count: 0, bucket_count: 0, dense_bucket_count: 0, dense_hash_threshold: 0, slot_count: 0, part_count: 1 };
        }
        let per_part = entries as f64 / part_count as f64;
        let buckets_per_part = ((per_part / params.keys_per_bucket).ceil() as u64).max(1);
        let dense_bucket_count = ((buckets_per_part as f64 * params.dense_bucket_fraction) as u64).min(buckets_per_part);
        let dense_hash_threshold = if dense_bucket_count == 0 {
            0
        } else {
            (params.dense_key_fraction * 2f64.powi(64)).min(u64::MAX as f64) as u64
        };
        let slots_per_part = ((max_part_entries as f64 / params.load_factor).ceil() as u64).max(max_part_entries);
        Geometry { entry_count: entries, bucket_count: buckets_per_part * part_count, dense_bucket_count, dense_hash_threshold, slot_count: slots_per_part * part_count, part_count }
    }

    /// Buckets in each part.
    pub fn buckets_per_part(&self) -> u64 {
        self.bucket_count / self.part_count.max(1)
    }

    /// Slots in each part.
    pub fn slots_per_part(&self) -> u64 {
        self.slot_count / self.part_count.max(1)
    }

    /// The multipliers that turn a hash into a bucket, precomputed at open.
    pub fn bucket_map(&self) -> BucketMap {
        let per_part = self.buckets_per_part();
        let dense = self.dense_bucket_count;
        let sparse = per_part - dense;
        let threshold = self.dense_hash_threshold;
        let dense_multiplier = if threshold == 0 { 0 } else { ((dense as u128) << 64).div_ceil(threshold as u128).min(u64::MAX as u128) as u64 };
        let sparse_range = (u64::MAX - threshold) as u128 + 1;
        let sparse_multiplier = ((sparse as u128) << 64).div_ceil(sparse_range).min(u64::MAX as u128) as u64;
        BucketMap { dense, sparse, threshold, dense_multiplier, sparse_multiplier, part_count: self.part_count.max(1), buckets_per_part: per_part, slots_per_part: self.slots_per_part() }
    }
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
            self.dense + mul_high(within - self.threshold, self.sparse_multiplier).min(self.sparse.saturating_sub(1))
        }
    }

    /// The bucket of a key hash, and the first slot of its part.
    #[inline]
    pub fn locate(&self, hash: u64) -> (u64, u64) {
        let (part, within) = self.split(hash);
        (part * self.buckets_per_part + self.bucket_in_part(within), part * self.slots_per_part)
    }

    /// Slots in each part: the `slot_count` to give `slot`.
    #[inline]
    pub fn slots_per_part(&self) -> u64 {
        self.slots_per_part
    }
}

/// The slot, in `0..slot_count`, that `pilot` sends a key hash to. With
/// parts, `slot_count` is the slots per part and the result is relative to
/// the first slot of the key's part.
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
    /// id (in the `index` field). It reuses the sorted hashes' memory: a
    /// build's peak holds one such array.
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

/// Number of parts for `n` keys: enough that none averages more than
/// `keys_per_part`.
pub fn part_count(n: u64, keys_per_part: u64) -> u64 {
    n.div_ceil(keys_per_part.max(1)).max(1)
}

/// Builds the perfect hash of `keys`. Tries seeds `options.hash_seed`,
/// `+1`, ... until one works: a seed fails if two distinct keys share a
/// 64-bit hash or a bucket finds no pilot below `MAX_PILOT`.
///
/// Key `i` goes by an id: `ids[i]`, or `i` without `ids`. Ids ascend with
/// `i`, `keys(id)` is the key, and the build hands ids back (in
/// `Built::slots`, and the first of two equal keys in a duplicate key
/// error). A builder passes its records' offsets as ids, so that writing
/// the slots reads no table at random.
///
/// `hashes`, if given, are the keys' hashes with `options.hash_seed`, for
/// the first try.
pub(crate) fn build<'a, K>(n: usize, keys: K, ids: Option<&[u32]>, hashes: Option<&[u64]>, options: &crate::BuildOptions) -> Result<Built>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    assert!(ids.is_none_or(|ids| ids.len() == n), "one id per key");
    let id = |i: usize| ids.map_or(i as u32, |ids| ids[i]);
    for attempt in 0..MAX_SEED_ATTEMPTS {
        let seed = options.hash_seed.wrapping_add(attempt as u64);
        let hashes = hashes.filter(|h| attempt == 0 && h.len() == n);
        if let Some(built) = try_seed(&keys, &id, hashes, n, seed, options)? {
            return Ok(built);
        }
    }
    Err(Error::BuildFailed { entries: n as u64, attempts: MAX_SEED_ATTEMPTS })
}

fn try_seed<'a, K, I>(keys: &K, id: &I, hashes: Option<&[u64]>, n: usize, seed: u64, options: &crate::BuildOptions) -> Result<Option<Built>>
where
    K: Fn(usize) -> &'a [u8] + Sync,
    I: Fn(usize) -> u32 + Sync,
{
    use rayon::prelude::*;
    let n64 = n as u64;
    let parts = part_count(n64, options.keys_per_part);
    let (mut hashed, part_starts) = match hashes {
        Some(hashes) => hash_by_part(&|i| hashes[i], id, n, parts),
        None => hash_by_part(&|i| hash_key(keys(id(i) as usize), seed), id, n, parts),
    };
    let max_part = part_starts.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let geometry = Geometry::new(n64, parts, max_part as u64, options);
    if n == 0 {
        return Ok(Some(Built { seed, geometry, pilots: Vec::new(), remap: Vec::new(), slots: Vec::new() }));
    }
    let map = geometry.bucket_map();
    let per_part = geometry.buckets_per_part() as usize;
    let spp = geometry.slots_per_part();

    // Each part on its own: its pilots, then its keys' slots in place of
    // their hashes. Parts are independent, so the result does not depend on
    // the number of threads.
    let mut pilots = vec![0u32; geometry.bucket_count as usize];
    let mut chunks: Vec<&mut [Hashed]> = Vec::with_capacity(parts as usize);
    let mut rest = hashed.as_mut_slice();
    for w in part_starts.windows(2) {
        let (head, tail) = rest.split_at_mut(w[1] - w[0]);
        chunks.push(head);
        rest = tail;
    }
    let outcomes: Vec<Placement> = chunks
        .into_par_iter()
        .zip(pilots.par_chunks_mut(per_part))
        .enumerate()
        .map(|(part, (members, pilots))| place_part(members, pilots, &map, part as u64 * spp, keys))
        .collect();
    // The first part that failed, in part order, whatever the threads did.
    match outcomes.into_iter().find(|o| *o != Placement::Placed) {
        None => {}
        Some(Placement::Duplicate(id)) => return Err(Error::DuplicateKey { key: keys(id as usize).to_vec(), positions: Vec::new() }),
        Some(_) => return Ok(None), // a 64-bit collision or no pilot: next seed
    }

    // Pair the used slots at or past n with the free slots below n, both in
    // ascending order. There are exactly as many of each.
    let m = geometry.slot_count;
    let mut taken = vec![0u64; (m as usize).div_ceil(64)];
    for e in &hashed {
        taken[(e.hash / 64) as usize] |= 1 << (e.hash % 64);
    }
    let is_taken = |s: u64| taken[(s / 64) as usize] >> (s % 64) & 1 == 1;
    let mut remap = vec![0u64; (m - n64) as usize];
    let mut free = (0..n64).filter(|&s| !is_taken(s));
    for s in n64..m {
        if is_taken(s) {
            remap[(s - n64) as usize] = free.next().expect("as many free slots below n as used slots past it");
        }
    }
    drop(taken);
    hashed.par_iter_mut().for_each(|e| {
        if e.hash >= n64 {
            e.hash = remap[(e.hash - n64) as usize];
        }
    });
    Ok(Some(Built { seed, geometry, pilots, remap, slots: hashed }))
}

/// `(hash, id)` of every key, grouped by part, in index order within a
/// part, and where each part starts (`parts + 1` entries). A stable
/// counting sort on the rayon pool: each chunk of keys counts its keys per
/// part, then hashes them again (`hash_of`) to write each where its part
/// and chunk say.
/// The result does not depend on the number of threads.
fn hash_by_part<H, I>(hash_of: &H, id: &I, n: usize, parts: u64) -> (Vec<Hashed>, Vec<usize>)
where
    H: Fn(usize) -> u64 + Sync,
    I: Fn(usize) -> u32 + Sync,
{
    use rayon::prelude::*;
    assert!(n <= MAX_BUILD_ENTRIES, "checked by Builder");
    let part_of = |i: usize| mul_high(hash_of(i), parts) as usize;
    let chunk = n.div_ceil(rayon::current_num_threads() * 4).max(1 << 14);
    let ranges: Vec<std::ops::Range<usize>> = (0..n).step_by(chunk).map(|start| start..(start + chunk).min(n)).collect();
    let counts: Vec<Vec<usize>> = ranges
        .par_iter()
        .map(|range| {
            let mut count = vec![0usize; parts as usize];
            for i in range.clone() {
                count[part_of(i)] += 1;
            }
            count
        })
        .collect();
    // Part p's keys from chunk c go at starts[p] + the counts of chunks
    // before c: disjoint runs that together cover 0..n.
    let mut part_starts = vec![0usize; parts as usize + 1];
    for count in &counts {
        for (p, c) in count.iter().enumerate() {
            part_starts[p + 1] += c;
        }
    }
    for p in 0..parts as usize {
        part_starts[p + 1] += part_starts[p];
    }
    let mut next = part_starts[..parts as usize].to_vec();
    let cursors: Vec<Vec<usize>> = counts
        .iter()
        .map(|count| {
            let at = next.clone();
            for (p, c) in count.iter().enumerate() {
                next[p] += c;
            }
            at
        })
        .collect();
    let mut hashed: Vec<Hashed> = Vec::with_capacity(n);
    let out = SharedOut(hashed.as_mut_ptr());
    ranges.par_iter().zip(cursors).for_each(|(range, mut at)| {
        let out = &out;
        for i in range.clone() {
            let hash = hash_of(i);
            let p = mul_high(hash, parts) as usize;
            // SAFETY: `at[p]` walks this chunk's own run of part p, which no
            // other chunk writes, and the runs lie inside the capacity of n
            // (their lengths are the counts, which sum to n).
            unsafe { out.0.add(at[p]).write(Hashed { hash, index: id(i) }) };
            at[p] += 1;
        }
    });
    // SAFETY: the runs cover 0..n exactly, so all n entries were written.
    unsafe { hashed.set_len(n) };
    (hashed, part_starts)
}

/// A stable counting sort: `items` ordered by `key(item)`, which is below
/// `keys`, and where each key's run starts (`keys + 1` entries).
fn counting_sort<T: Copy>(items: &[T], keys: usize, key: impl Fn(&T) -> usize) -> (Vec<T>, Vec<u32>) {
    // Each item's key, worked out once: it may cost a branch that
    // mispredicts half the time (the bucket map's dense or sparse half).
    let item_keys: Vec<u32> = items.iter().map(|item| key(item) as u32).collect();
    let mut starts = vec![0u32; keys + 1];
    for &k in &item_keys {
        starts[k as usize + 1] += 1;
    }
    for k in 0..keys {
        starts[k + 1] += starts[k];
    }
    let mut next = starts.clone();
    let mut sorted = items.to_vec();
    for (item, &k) in items.iter().zip(&item_keys) {
        sorted[next[k as usize] as usize] = *item;
        next[k as usize] += 1;
    }
    (sorted, starts)
}

/// The output of `hash_by_part`, written from many threads at disjoint
/// places.
struct SharedOut(*mut Hashed);
// SAFETY: the threads write disjoint entries (see `hash_by_part`).
unsafe impl Sync for SharedOut {}

/// How placing a part went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// Every bucket has its pilot.
    Placed,
    /// The key with this id occurs twice.
    Duplicate(u32),
    /// Two keys share a 64-bit hash, or a bucket found no pilot: try the
    /// next hash seed.
    Retry,
}

/// Places one part's keys: groups them by bucket, checks each bucket for
/// keys with equal hashes, then finds each bucket the smallest pilot that
/// sends all of its keys to free slots of the part, largest buckets first,
/// and writes the pilots. As each bucket is placed, its keys' hashes give
/// way to their slots, `first_slot` plus the slot in the part.
fn place_part<'a, K>(members: &mut [Hashed], pilots: &mut [u32], map: &BucketMap, first_slot: u64, keys: &K) -> Placement
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    let r = pilots.len();
    let m = map.slots_per_part();
    let bucket_of = |hash: u64| map.bucket_in_part(map.split(hash).1) as usize;
    // starts[b]..starts[b + 1] is bucket b's range in `members`, once they
    // are grouped by bucket.
    let (grouped, starts) = counting_sort(members, r, |e| bucket_of(e.hash));
    members.copy_from_slice(&grouped);
    drop(grouped);
    // Equal hashes share a bucket.
    for window in starts.windows(2) {
        let bucket = &members[window[0] as usize..window[1] as usize];
        for (i, a) in bucket.iter().enumerate() {
            for b in &bucket[i + 1..] {
                if a.hash == b.hash {
                    let (ia, ib) = (a.index, b.index);
                    return if keys(ia as usize) == keys(ib as usize) { Placement::Duplicate(ia.min(ib)) } else { Placement::Retry };
                }
            }
        }
    }
    let size = |b: usize| (starts[b + 1] - starts[b]) as usize;

    // Largest buckets first; ties in bucket order.
    let max_size = (0..r).map(size).max().unwrap_or(0);
    let (order, _) = counting_sort(&(0..r as u32).collect::<Vec<_>>(), max_size + 1, |&b| max_size - size(b as usize));

    let mut taken = vec![0u64; (m as usize).div_ceil(64)];
    let mut bucket_slots: Vec<u64> = Vec::with_capacity(max_size);
    let mut hashes: Vec<u64> = Vec::with_capacity(max_size + 3);
    for &b in &order {
        let b = b as usize;
        let bucket = &members[starts[b] as usize..starts[b + 1] as usize];
        if bucket.is_empty() {
            break; // the rest are empty too
        }
        hashes.clear();
        hashes.extend(bucket.iter().map(|e| e.hash));
        let mut from = 0;
        let pilot = loop {
            let Some(pilot) = free_pilot(&mut hashes, from, &taken, m) else { return Placement::Retry };
            // Its keys are on free slots; are they on different ones? Take
            // them one by one, and give them back if two meet.
            bucket_slots.clear();
            let mut apart = true;
            for e in bucket {
                let s = slot(e.hash, pilot, m);
                let (word, bit) = ((s / 64) as usize, 1u64 << (s % 64));
                if taken[word] & bit != 0 {
                    apart = false;
                    break;
                }
                taken[word] |= bit;
                bucket_slots.push(s);
            }
            if apart {
                break pilot;
            }
            for &s in &bucket_slots {
                taken[(s / 64) as usize] &= !(1u64 << (s % 64));
            }
            from = pilot + 1;
        };
        pilots[b] = pilot as u32;
        // The hashes have served: each key's slot takes its place.
        for (e, &s) in members[starts[b] as usize..starts[b + 1] as usize].iter_mut().zip(&bucket_slots) {
            e.hash = first_slot + s;
        }
    }
    Placement::Placed
}

/// The smallest pilot from `from` on, below `MAX_PILOT`, that sends each
/// of a bucket's key `hashes` to a free slot (not necessarily different
/// ones), or `None`. Most pilots fail, at an unpredictable key, so the
/// search tests keys four at a time with one branch per four, which costs
/// less than the slots a branch per key would skip; big buckets, placed
/// early at low load, still stop after their first four. Buckets of up to
/// four keys get a loop of their own size. Pads `hashes` to a multiple of
/// four by repeating a key, which changes no answer.
fn free_pilot(hashes: &mut Vec<u64>, from: u64, taken: &[u64], m: u64) -> Option<u64> {
    #[inline(always)]
    fn hit<const K: usize>(hashes: &[u64; K], pc: u64, taken: &[u64], m: u64) -> u64 {
        let mut hit = 0;
        for &h in hashes {
            let s = mul_high(mix(h ^ pc), m);
            hit |= taken[(s / 64) as usize] >> (s % 64);
        }
        hit & 1
    }
    /// The first pilot from `from` for whose `pilot * PILOT_MULTIPLIER`
    /// `hits` is false.
    #[inline(always)]
    fn search(from: u64, hits: impl Fn(u64) -> bool) -> Option<u64> {
        let mut pc = from.wrapping_mul(PILOT_MULTIPLIER);
        for pilot in from..MAX_PILOT {
            if !hits(pc) {
                return Some(pilot);
            }
            pc = pc.wrapping_add(PILOT_MULTIPLIER);
        }
        None
    }
    match *hashes.as_slice() {
        [] => Some(from),
        [a] => search(from, |pc| hit(&[a], pc, taken, m) != 0),
        [a, b] => search(from, |pc| hit(&[a, b], pc, taken, m) != 0),
        [a, b, c] => search(from, |pc| hit(&[a, b, c], pc, taken, m) != 0),
        [a, b, c, d] => search(from, |pc| hit(&[a, b, c, d], pc, taken, m) != 0),
        [.., last] => {
            hashes.resize(hashes.len().next_multiple_of(4), last);
            let groups = hashes.chunks_exact(4).map(|g| [g[0], g[1], g[2], g[3]]);
            search(from, |pc| groups.clone().any(|g| hit(&g, pc, taken, m) != 0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys known by ids (a builder's record offsets) and by index give the
    /// same perfect hash, with the ids handed back in place of the indices,
    /// and the same first key of a duplicate pair.
    #[test]
    fn ids_stand_in_for_indices() {
        let keys: Vec<Vec<u8>> = (0..5_000).map(|i| format!("key-{i}").into_bytes()).collect();
        let ids: Vec<u32> = (0..keys.len() as u32).map(|i| 7 + 3 * i).collect();
        let options = crate::BuildOptions { keys_per_part: 1_000, ..Default::default() };
        let by_index = build(keys.len(), |i| keys[i].as_slice(), None, None, &options).unwrap();
        let by_id = build(keys.len(), |id| keys[(id - 7) / 3].as_slice(), Some(&ids), None, &options).unwrap();
        assert_eq!(by_index.geometry.part_count, 5);
        assert_eq!((by_index.pilots, by_index.remap), (by_id.pilots, by_id.remap));
        let slots = |built: &[Hashed], to_index: &dyn Fn(u32) -> u32| {
            let mut slots: Vec<(u64, u32)> = built.iter().map(|e| (e.hash, to_index(e.index))).collect();
            slots.sort_unstable();
            slots
        };
        assert_eq!(slots(&by_index.slots, &|i| i), slots(&by_id.slots, &|id| (id - 7) / 3));

        let mut repeated = keys.clone();
        repeated[4_000] = repeated[1_234].clone();
        let duplicate = |result: Result<Built>| match result {
            Err(Error::DuplicateKey { key, .. }) => key,
            other => panic!("expected a duplicate key error, got {:?}", other.map(|_| ())),
        };
        assert_eq!(duplicate(build(keys.len(), |i| repeated[i].as_slice(), None, None, &options)), b"key-1234");
        assert_eq!(duplicate(build(keys.len(), |id| repeated[(id - 7) / 3].as_slice(), Some(&ids), None, &options)), b"key-1234");
    }
}
