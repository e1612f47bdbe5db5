//! A compact index: one byte per bucket, found by PtrHash's evict-and-retry
//! search, and parts of their own size so that the remap stays small.
//!
//! The classic layout (`classic`) gives each bucket the smallest pilot below
//! 2^24 that places its keys and packs pilots in blocks as wide as their
//! largest pilot: about 9.5 bits a bucket. Here every pilot is below 256,
//! stored as one byte a lookup reads without a block index. A bucket that
//! no pilot places on free slots takes the pilot whose collisions cost
//! least (the squared sizes of the buckets it would displace; never one of
//! the last 16 placed, which would cycle) and the buckets displaced go back
//! on the queue, largest first (Groot Koerkamp, "PtrHash", SEA 2025).
//! Where PtrHash starts that scan at a random pilot, this one starts at a
//! pilot drawn from the part's seed and its count of displacements, so that
//! the same keys always give the same bytes.
//!
//! Each part gets `ceil(n_p / load_factor)` slots for its own `n_p` keys,
//! not as many as the largest part needs, and its slots at or past `n_p`
//! remap onto its own free slots below `n_p`: remap entries are
//! `bits_for(n_p - 1)` bits and about `1 - load_factor` of the keys.
//!
//! This module holds the layout's placing of a part (`search::Layout`:
//! the search itself, seeds and parts in parallel, is `search`'s), builds
//! the function in memory (`CompactHash`) and answers queries on it; `build::index` writes it as the compact layout of
//! docs/FORMAT.md, and the reader looks keys up in that.

use std::collections::BinaryHeap;

use super::search::{self, Buckets, Hashed, Layout, Placement, Stop};
use super::{hash_key, mix, slot_of_word, BucketMap, Params, PilotWord};
use crate::cancel::CancelFlag;
use crate::error::{Error, Result};
use crate::format::Geometry;

/// Pilots a bucket may take: one byte.
pub const PILOTS: u64 = 256;

/// Buckets placed last that an eviction may not displace: a bucket that
/// just displaced another would otherwise often take its place back. (A
/// quarter of a part's buckets, if that is fewer.)
const RECENT: usize = 16;

/// Most displacements placing a part may take per key before the build
/// stops with an error naming keys_per_bucket. The defaults take about
/// 0.04 per key (keys_per_bucket 4, load factor 0.99); a skew that needed
/// 1 per key built, slowly. Options that cannot work fail after this many:
/// at 64 a key, such a build of 2,000,000 keys spun for 340 s of CPU before
/// it said so.
const MAX_EVICTIONS_PER_KEY: u64 = 8;

/// Marks a slot no bucket holds.
const FREE: u32 = u32::MAX;

/// Where one part lies: its keys are final indices `first_key ..
/// first_key + keys`, placed in `slots` slots, and its remap entries (for
/// its slots `keys .. slots`) start at `remap_first`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Part {
    /// Keys in the parts before this one.
    pub first_key: u64,
    /// Index of this part's first entry in the remap.
    pub remap_first: u64,
    /// Keys in this part, `n_p`.
    pub keys: u32,
    /// Slots of this part, `ceil(n_p / load_factor)`.
    pub slots: u32,
}

/// A minimal perfect hash of one byte per bucket: `index(key)` is in
/// `0..n` and differs for every key it was built from.
#[derive(Clone, Debug)]
pub struct CompactHash {
    seed: u64,
    geometry: Geometry,
    map: BucketMap,
    pilots: Vec<u8>,
    parts: Vec<Part>,
    /// Each part's remap, in part order: the final slot (within the part)
    /// of each of its slots at or past its key count; 0 where unused.
    remap: Vec<u32>,
}

impl CompactHash {
    /// The function of the parts `search::place` placed, with the hash seed
    /// and geometry they were placed with.
    pub(crate) fn from_parts(
        seed: u64,
        geometry: Geometry,
        pilots: Vec<u8>,
        parts: Vec<Part>,
        remap: Vec<u32>,
    ) -> CompactHash {
        CompactHash {
            seed,
            map: BucketMap::new(&geometry),
            geometry,
            pilots,
            parts,
            remap,
        }
    }

    /// Builds the function of `keys` (distinct) with `params`; the
    /// `keys_per_part`, `keys_per_bucket`, `load_factor` and skew apply as
    /// in the classic layout.
    pub fn new(keys: &[&[u8]], params: &Params) -> Result<CompactHash> {
        let (hash, _) = build(
            keys.len(),
            |i| keys[i],
            None,
            None,
            params,
            &CancelFlag::new(),
        )?;
        Ok(hash)
    }

    /// The key's index, in `0..n` for a key the function was built from;
    /// any number below `n` for another.
    #[inline]
    pub fn index(&self, key: &[u8]) -> u64 {
        self.index_of_hash(hash_key(key, self.seed))
    }

    /// `index` of a key hash with the function's seed.
    #[inline]
    pub fn index_of_hash(&self, hash: u64) -> u64 {
        let (part, within) = self.map.split(hash);
        let p = &self.parts[part as usize];
        if p.keys == 0 {
            return 0; // no key of the set hashes here
        }
        let bucket = part * self.geometry.buckets_per_part() + self.map.bucket_in_part(within);
        let pilot = self.pilots[bucket as usize];
        let slot = slot_of_word(hash, PilotWord::of(pilot as u64), p.slots as u64);
        let local = if slot < p.keys as u64 {
            slot
        } else {
            self.remap[(p.remap_first + slot - p.keys as u64) as usize] as u64
        };
        p.first_key + local
    }

    /// The hash seed the keys were hashed with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Buckets, slots and parts.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// One pilot per bucket.
    pub fn pilots(&self) -> &[u8] {
        &self.pilots
    }

    /// The parts.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The remap of `part`: the final slot, within the part, of each of
    /// its slots from its key count on (0 where unused).
    pub fn part_remap(&self, part: &Part) -> &[u32] {
        let start = part.remap_first as usize;
        &self.remap[start..start + (part.slots - part.keys) as usize]
    }

    /// Bits a lookup's data takes, per key: a byte per pilot, the remap at
    /// `bits_for(n_p - 1)` bits an entry in each part, and 32 bytes a
    /// part (what a stored part table takes).
    pub fn bits_per_key(&self) -> f64 {
        let n = self.geometry.entry_count.max(1) as f64;
        let remap: u64 = self
            .parts
            .iter()
            .map(|p| (p.slots - p.keys) as u64 * remap_bits(p.keys) as u64)
            .sum();
        let part_bits = if self.parts.len() > 1 {
            self.parts.len() as u64 * 256
        } else {
            0
        };
        (self.pilots.len() as u64 * 8 + remap + part_bits) as f64 / n
    }
}

/// Width of a part's remap entries: the bits of its largest key index,
/// at least 1 (`bits::bits_for(keys - 1)`, which this layer does not use).
pub fn remap_bits(keys: u32) -> u32 {
    (32 - keys.saturating_sub(1).leading_zeros()).max(1)
}

/// Builds the compact function of `n` keys (`search::search`: seeds
/// `hash_seed`, `+1`, ... until one works; key `i` is `keys(ids[i])`, and
/// `hashes`, if given, their hashes with the first seed). Returns it with
/// every key's final index (in the `hash` field) and id.
pub(crate) fn build<'a, K>(
    n: usize,
    keys: K,
    ids: Option<&[u32]>,
    hashes: Option<&[u64]>,
    params: &Params,
    cancel: &CancelFlag,
) -> Result<(CompactHash, Vec<Hashed>)>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    let n64 = n as u64;
    search::search(
        n,
        &keys,
        ids,
        hashes,
        params,
        |mut hashed, part_starts, mut geometry, seed| {
            let map = BucketMap::new(&geometry);
            let counts: Vec<u64> = part_starts
                .windows(2)
                .map(|w| (w[1] - w[0]) as u64)
                .collect();
            let (table, remap_len) = part_table(&counts, params.load_factor);
            geometry.slot_count = n64 + remap_len;

            let mut pilots = vec![0u8; geometry.bucket_count as usize];
            let mut remap = vec![0u32; remap_len as usize];
            let layout = Compact::new(params, n64, geometry.part_count);
            let parts = Compact::parts(&table, 0, &mut remap, seed);
            if !search::place(
                &layout,
                &mut hashed,
                &part_starts,
                parts,
                &mut pilots,
                &map,
                &keys,
                cancel,
            )? {
                return Ok(None);
            }
            let hash = CompactHash::from_parts(seed, geometry, pilots, table, remap);
            Ok(Some((hash, hashed)))
        },
    )
}

/// The parts table of parts holding `counts` keys each, in order: each
/// gets `ceil(n_p / load_factor)` slots (at least `n_p`) and its remap
/// entries follow the previous part's. Also the remap's length in all.
pub(crate) fn part_table(counts: &[u64], load_factor: f64) -> (Vec<Part>, u64) {
    let mut table = Vec::with_capacity(counts.len());
    let (mut first_key, mut remap_first) = (0u64, 0u64);
    for &keys in counts {
        let slots = ((keys as f64 / load_factor).ceil() as u64).max(keys) as u32;
        table.push(Part {
            first_key,
            remap_first,
            keys: keys as u32,
            slots,
        });
        first_key += keys;
        remap_first += slots as u64 - keys;
    }
    (table, remap_first)
}

/// The compact layout's part placing: each part has slots of its own
/// number (`Part`) and its own remap, and its keys' slots are their final
/// indices.
pub(crate) struct Compact<'p> {
    params: &'p Params,
    /// Keys per part on average, for the error of parts too hard to place.
    keys_per_part: u64,
}

/// What placing one part of the compact layout takes: its table entry, its
/// share of the remap, which it fills, and the seed its evictions draw
/// from.
pub(crate) struct PartToPlace<'r> {
    part: &'r Part,
    remap: &'r mut [u32],
    seed: u64,
}

impl<'p> Compact<'p> {
    /// The layout of `entries` keys in `part_count` parts, built with
    /// `params`.
    pub(crate) fn new(params: &'p Params, entries: u64, part_count: u64) -> Compact<'p> {
        Compact {
            params,
            keys_per_part: entries.div_ceil(part_count),
        }
    }

    /// What placing the parts `table` describes takes, the first of which
    /// is part `first_part` of the store, with hash seed `seed`: `remap`
    /// holds their remap entries (from `table[0].remap_first` on). A whole
    /// build places every part at once; a spilled one (`build::spill`) a
    /// group of parts at a time, into the same bytes.
    pub(crate) fn parts<'r>(
        table: &'r [Part],
        first_part: u64,
        remap: &'r mut [u32],
        seed: u64,
    ) -> Vec<PartToPlace<'r>> {
        let mut parts = Vec::with_capacity(table.len());
        let mut rest = remap;
        for (i, part) in table.iter().enumerate() {
            let (head, tail) = rest.split_at_mut((part.slots - part.keys) as usize);
            rest = tail;
            let p = first_part + i as u64;
            parts.push(PartToPlace {
                part,
                remap: head,
                seed: mix(seed ^ p.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            });
        }
        parts
    }
}

/// Pilots whose first key's slot `free_pilot` works out together.
const PILOT_BATCH: u64 = 8;

/// The smallest pilot that sends every key of `bucket` (not empty) to a
/// free slot of its own, if one below `PILOTS` does. The first key's slot
/// is worked out for `PILOT_BATCH` pilots at a time, independent
/// multiplies the core overlaps; most pilots fail there, and only those
/// that pass look at the other keys. (The same answer as trying each pilot
/// in turn, which took twice the time.) Kept out of `place_part`: inlined
/// there, the search took 8-11% longer (single-threaded compact builds of
/// 100,000 and 1,000,000 keys, `benches/lookup.rs`).
#[inline(never)]
fn free_pilot(bucket: &[Hashed], taken: &[u64], m: u64, slots_now: &mut Vec<usize>) -> Option<u64> {
    let is_free = |s: usize| taken[s / 64] >> (s % 64) & 1 == 0;
    let (first, rest) = (bucket[0].hash, &bucket[1..]);
    let mut word = PilotWord::of(0);
    for base in (0..PILOTS).step_by(PILOT_BATCH as usize) {
        let mut passed = 0u32;
        for j in 0..PILOT_BATCH {
            let s = slot_of_word(first, word, m) as usize;
            passed |= (is_free(s) as u32) << j;
            word = word.next();
        }
        while passed != 0 {
            let pilot = base + passed.trailing_zeros() as u64;
            passed &= passed - 1;
            let slot = |h: u64| slot_of_word(h, PilotWord::of(pilot), m) as usize;
            slots_now.clear();
            slots_now.push(slot(first));
            let fits = rest.iter().all(|e| {
                let s = slot(e.hash);
                let fits = is_free(s) && !slots_now.contains(&s);
                slots_now.push(s);
                fits
            });
            if fits {
                return Some(pilot);
            }
        }
    }
    None
}

impl Layout for Compact<'_> {
    type Pilot = u8;
    type Part<'r> = PartToPlace<'r>;
    const FAILURE_STOPS_OTHERS: bool = true;

    /// Places one part's keys (`members`, its keys' hashes and ids): writes
    /// its pilots and its remap, and leaves each key's final index (the
    /// part's `first_key` plus its slot, remapped) in place of its hash.
    fn place_part(
        &self,
        to_place: PartToPlace<'_>,
        members: &mut [Hashed],
        buckets: &Buckets,
        pilots: &mut [u8],
        stop: &Stop<'_>,
    ) -> Placement {
        let PartToPlace {
            part,
            remap,
            seed: part_seed,
        } = to_place;
        let r = pilots.len();
        let m = part.slots as u64;
        let size = |b: usize| buckets.size(b);
        let hashes_of = |b: usize| &members[buckets.range(b)];
        let slot = |h: u64, pilot: u64| slot_of_word(h, PilotWord::of(pilot), m) as usize;
        let (order, max_size) = (&buckets.order, buckets.max_size);

        // The bucket holding each slot (and, for the search that most buckets
        // end in, one bit per slot: 8 KiB a part of 65,536 slots, where the
        // owners take 256), and the buckets waiting, largest first.
        let mut owner = vec![FREE; m as usize];
        let mut taken = vec![0u64; (m as usize).div_ceil(64)];
        let mut queue: BinaryHeap<(usize, std::cmp::Reverse<u32>)> = BinaryHeap::new();
        // A part of few buckets keeps fewer: with every bucket recent, none
        // could be displaced.
        let recent_len = (r / 4).clamp(1, RECENT) as u64;
        // When each bucket was last placed, counting placements: the last
        // `recent_len` placed since the current chain of displacements began
        // are the recent ones. (One load per owner where a ring of the last
        // 16 took 16 compares.)
        let mut placed_at = vec![0u64; r];
        let mut placements = 0u64;
        let mut slots_now: Vec<usize> = Vec::with_capacity(max_size);
        let mut evictions = 0u64;
        let budget = (members.len() as u64).saturating_mul(MAX_EVICTIONS_PER_KEY);
        for (placed, &first) in order.iter().enumerate() {
            if size(first as usize) == 0 {
                break; // the rest are empty too
            }
            if placed % 256 == 0 && stop.now() {
                return Placement::Stopped;
            }
            queue.push((size(first as usize), std::cmp::Reverse(first)));
            let chain_start = placements;
            while let Some((_, std::cmp::Reverse(b))) = queue.pop() {
                let bucket = hashes_of(b as usize);
                // A pilot whose slots are free and distinct, the smallest.
                let free = free_pilot(bucket, &taken, m, &mut slots_now);
                let pilot = match free {
                    Some(p) => p,
                    None => {
                        evictions += 1;
                        if evictions > budget {
                            return Placement::TooHard;
                        }
                        if evictions % 4096 == 0 && stop.now() {
                            return Placement::Stopped;
                        }
                        // The pilot whose displaced buckets weigh least,
                        // scanned from a pilot drawn from the part and count.
                        // Buckets placed last are spared if some pilot can
                        // spare them (in a part of few slots and big buckets,
                        // none may).
                        let start = mix(part_seed ^ evictions) % PILOTS;
                        let mut best: Option<(usize, u64)> = None;
                        let recent_from = chain_start.max(placements.saturating_sub(recent_len));
                        for spare_recent in [true, false] {
                            'pilots: for step in 0..PILOTS {
                                let p = (start + step) % PILOTS;
                                let mut cost = 0usize;
                                slots_now.clear();
                                for e in bucket {
                                    let s = slot(e.hash, p);
                                    if slots_now.contains(&s) {
                                        continue 'pilots;
                                    }
                                    slots_now.push(s);
                                    let o = owner[s];
                                    if o == FREE {
                                        continue;
                                    }
                                    if spare_recent && placed_at[o as usize] >= recent_from {
                                        continue 'pilots;
                                    }
                                    cost += size(o as usize) * size(o as usize);
                                    if best.is_some_and(|(c, _)| cost >= c) {
                                        continue 'pilots;
                                    }
                                }
                                best = Some((cost, p));
                            }
                            if best.is_some() {
                                break;
                            }
                        }
                        let Some((_, p)) = best else {
                            return Placement::Retry;
                        };
                        for e in bucket {
                            let o = owner[slot(e.hash, p)];
                            if o != FREE {
                                let pilot = pilots[o as usize] as u64;
                                for e2 in hashes_of(o as usize) {
                                    let s2 = slot(e2.hash, pilot);
                                    owner[s2] = FREE;
                                    taken[s2 / 64] &= !(1 << (s2 % 64));
                                }
                                queue.push((size(o as usize), std::cmp::Reverse(o)));
                            }
                        }
                        p
                    }
                };
                pilots[b as usize] = pilot as u8;
                for e in bucket {
                    let s = slot(e.hash, pilot);
                    owner[s] = b;
                    taken[s / 64] |= 1 << (s % 64);
                }
                placed_at[b as usize] = placements;
                placements += 1;
            }
        }

        // Slots at or past n_p pair, in ascending order, with the free slots
        // below it.
        let keys_here = part.keys as usize;
        let mut free = (0..keys_here).filter(|&s| owner[s] == FREE);
        for s in keys_here..m as usize {
            if owner[s] != FREE {
                remap[s - keys_here] = free
                    .next()
                    .expect("as many free slots below n_p as used slots past it")
                    as u32;
            }
        }
        let final_of = |s: usize| -> u64 {
            if s < keys_here {
                s as u64
            } else {
                remap[s - keys_here] as u64
            }
        };
        for b in 0..r {
            let pilot = pilots[b] as u64;
            for e in &mut members[buckets.range(b)] {
                let s = slot(e.hash, pilot);
                e.hash = part.first_key + final_of(s);
            }
        }
        Placement::Placed
    }

    fn too_hard(&self) -> Error {
        Error::InvalidOption {
            name: "keys_per_bucket",
            reason: format!(
                "the compact index could not place buckets of {} keys on average in parts of about {} keys after {MAX_EVICTIONS_PER_KEY} displacements per key; lower keys_per_bucket (the compact default is 4.0), raise keys_per_part, or lower load_factor",
                self.params.keys_per_bucket, self.keys_per_part,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::part_count;
    use super::*;

    fn params(keys_per_part: u64) -> Params {
        Params {
            keys_per_bucket: 4.0,
            load_factor: 0.99,
            dense_key_fraction: 0.5,
            dense_bucket_fraction: 0.2,
            hash_seed: 0,
            keys_per_part,
        }
    }

    fn keys(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| format!("key-{i}-{}", i * 7919 % 1013).into_bytes())
            .collect()
    }

    /// Every key gets its own index below n, the one `index` answers and
    /// the one the build handed back, in one part and in many.
    #[test]
    fn minimal_and_perfect() {
        for (n, per_part) in [
            (1, 1 << 17),
            (2, 1 << 17),
            (1_000, 1 << 17),
            (100_000, 1 << 17),
            (100_000, 10_000),
        ] {
            let keys = keys(n);
            let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
            let (hash, slots) = build(
                n,
                |i| refs[i],
                None,
                None,
                &params(per_part),
                &CancelFlag::new(),
            )
            .unwrap();
            let mut seen = vec![false; n];
            for e in &slots {
                let index = hash.index(refs[e.index as usize]);
                let built = e.hash;
                assert_eq!(index, built, "n {n}");
                assert!(
                    !std::mem::replace(&mut seen[index as usize], true),
                    "n {n}: {index} twice"
                );
            }
            assert!(seen.iter().all(|&s| s), "n {n}");
            assert_eq!(hash.parts().len() as u64, part_count(n as u64, per_part));
        }
    }

    /// The same keys and options give the same function, whatever the
    /// number of threads (parts are placed in parallel).
    #[test]
    fn deterministic() {
        let keys = keys(50_000);
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let one = CompactHash::new(&refs, &params(5_000)).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let two = pool.install(|| CompactHash::new(&refs, &params(5_000)).unwrap());
        assert_eq!(one.pilots(), two.pilots());
        assert_eq!(one.parts(), two.parts());
        assert_eq!(one.remap, two.remap);
    }

    /// Pilots fit a byte at the compact options, and the function takes
    /// under 2.2 bits a key.
    #[test]
    fn small() {
        let keys = keys(200_000);
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let hash = CompactHash::new(&refs, &params(1 << 17)).unwrap();
        let bits = hash.bits_per_key();
        assert!(bits < 2.2, "{bits} bits/key");
    }

    /// A key given twice is a duplicate, named.
    #[test]
    fn duplicates_are_named() {
        let mut keys = keys(10_000);
        keys[7_000] = keys[1_234].clone();
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        match CompactHash::new(&refs, &params(1 << 17)) {
            Err(Error::DuplicateKey { key, .. }) => assert_eq!(key, keys[1_234]),
            other => panic!("expected a duplicate key, got {:?}", other.map(|_| ())),
        }
    }
}
