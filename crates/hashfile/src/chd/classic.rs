//! The classic layout's placing of keys (`search::Layout`): each bucket
//! the smallest pilot below 2^24 that sends its keys to free slots of a
//! part as large as the largest part needs, then the slots at or past `n`
//! remapped over the whole table onto the free slots below it. The search
//! itself (seeds, parts in parallel, judging) is `search`'s. Same keys and
//! parameters, same result, whatever the number of threads.

use super::search::{self, Buckets, Hashed, Layout, Placement, Stop};
use super::{slot_of_word, BucketMap, Params, PilotWord};
use crate::cancel::CancelFlag;
use crate::error::{Error, Result};
use crate::format::Geometry;
use crate::parallel::*;

/// Largest pilot tried for one bucket before the build moves to the next hash
/// seed. Pilots are stored in at most 32 bits.
const MAX_PILOT: u64 = 1 << 24;

/// Most work placing a part may take per key before the build stops as
/// hopeless, counted as pilots tried times the groups of four keys a try
/// tests at most (`free_pilot`). The defaults take about 26 per key (13
/// pilots), options toward the edges of their ranges a few hundred; options
/// that make huge buckets or leave no free slot (dense_key_fraction 0.99 with
/// dense_bucket_fraction 0.01, or keys_per_bucket 10 at load_factor 1.0) take
/// millions and ran for hours before failing (measured on 3,000 to 1,000,000
/// keys with a counter in the search).
const MAX_WORK_PER_KEY: u64 = 4_000;

/// Work a part may always take, however few its keys.
const MIN_WORK_PER_PART: u64 = 1 << 22;

/// Pilots tried between two looks at the cancel flag.
const TRIALS_PER_CHECK: u64 = 1 << 16;

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

/// Builds the classic perfect hash of `keys` (`search::search`: seeds
/// `params.hash_seed`, `+1`, ... until one works; key `i` is
/// `keys(ids[i])`, and `hashes`, if given, their hashes with the first
/// seed).
///
/// `cancel` stops the build with `Error::Cancelled`; a build whose parts
/// need more than `MAX_WORK_PER_KEY` stops with `Error::InvalidOption`
/// naming the option to change.
pub(crate) fn build<'a, K>(
    n: usize,
    keys: K,
    ids: Option<&[u32]>,
    hashes: Option<&[u64]>,
    params: &Params,
    cancel: &CancelFlag,
) -> Result<Built>
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
        |mut hashed, part_starts, geometry, seed| {
            if n == 0 {
                return Ok(Some(Built {
                    seed,
                    geometry,
                    pilots: Vec::new(),
                    remap: Vec::new(),
                    slots: Vec::new(),
                }));
            }
            let map = BucketMap::new(&geometry);
            let mut pilots = vec![0u32; geometry.bucket_count as usize];
            let layout = Classic::new(params, &map);
            let parts = layout.parts(0, geometry.part_count);
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
                return Ok(None); // a 64-bit collision or no pilot: next seed
            }

            // Pair the used slots at or past n with the free slots below n,
            // both in ascending order. There are exactly as many of each.
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
                    remap[(s - n64) as usize] = free
                        .next()
                        .expect("as many free slots below n as used slots past it");
                }
            }
            drop(taken);
            hashed.par_iter_mut().for_each(|e| {
                if e.hash >= n64 {
                    e.hash = remap[(e.hash - n64) as usize];
                }
            });
            Ok(Some(Built {
                seed,
                geometry,
                pilots,
                remap,
                slots: hashed,
            }))
        },
    )
}

/// The classic layout's part placing: a part's keys go to slots of the
/// whole table (a part's slots follow the parts before it, all of one
/// size), and the remap over the whole table is left to the caller: to
/// `build` in memory, to `build::spill` group by group.
pub(crate) struct Classic<'p> {
    params: &'p Params,
    slots_per_part: u64,
}

impl<'p> Classic<'p> {
    /// The layout of a store of `map`'s geometry, built with `params`.
    pub(crate) fn new(params: &'p Params, map: &BucketMap) -> Classic<'p> {
        Classic {
            params,
            slots_per_part: map.slots_per_part(),
        }
    }

    /// What placing `count` parts from part `first_part` on takes: each
    /// part's first slot.
    pub(crate) fn parts(&self, first_part: u64, count: u64) -> Vec<u64> {
        (first_part..first_part + count)
            .map(|p| p * self.slots_per_part)
            .collect()
    }
}

impl Layout for Classic<'_> {
    type Pilot = u32;
    /// The part's first slot.
    type Part<'r> = u64;
    const FAILURE_STOPS_OTHERS: bool = false;

    /// Finds each bucket the smallest pilot that sends all of its keys to
    /// free slots of the part, largest buckets first, and writes the
    /// pilots. As each bucket is placed, its keys' hashes give way to their
    /// slots, `first_slot` plus the slot in the part.
    fn place_part(
        &self,
        first_slot: u64,
        members: &mut [Hashed],
        buckets: &Buckets,
        pilots: &mut [u32],
        stop: &Stop<'_>,
    ) -> Placement {
        let mut budget = (members.len() as u64)
            .saturating_mul(MAX_WORK_PER_KEY)
            .max(MIN_WORK_PER_PART);
        // A part small enough to get the floor's budget runs out of it by
        // the chance of its hash seed more than by its options (31 random
        // keys at the defaults did): it asks for the next seed, and only
        // `MAX_SEED_ATTEMPTS` of them failing fails the build.
        let out_of_budget =
            if (members.len() as u64).saturating_mul(MAX_WORK_PER_KEY) < MIN_WORK_PER_PART {
                Placement::Retry
            } else {
                Placement::TooHard
            };
        let m = self.slots_per_part;
        let max_size = buckets.max_size;
        let mut taken = vec![0u64; (m as usize).div_ceil(64)];
        let mut bucket_slots: Vec<u64> = Vec::with_capacity(max_size);
        let mut hashes: Vec<u64> = Vec::with_capacity(max_size + 3);
        for (placed, &b) in buckets.order.iter().enumerate() {
            if placed % 64 == 0 && stop.now() {
                return Placement::Stopped;
            }
            let b = b as usize;
            let bucket = &members[buckets.range(b)];
            if bucket.is_empty() {
                break; // the rest are empty too
            }
            hashes.clear();
            hashes.extend(bucket.iter().map(|e| e.hash));
            let mut from = 0u64;
            let pilot = loop {
                // A try tests at most one group of four keys per group.
                let groups = hashes.len().div_ceil(4) as u64;
                let until = from.saturating_add(budget / groups).min(MAX_PILOT);
                let pilot = match free_pilot(&mut hashes, from, until, &taken, m, stop) {
                    Search::Found(pilot) => pilot,
                    Search::Stopped => return Placement::Stopped,
                    Search::Exhausted if until == MAX_PILOT => return Placement::Retry,
                    Search::Exhausted => return out_of_budget,
                };
                budget -= (pilot - from + 1) * groups;
                // Its keys are on free slots; are they on different ones?
                // Take them one by one, and give them back if two meet.
                bucket_slots.clear();
                let mut apart = true;
                for e in bucket {
                    let s = super::slot(e.hash, pilot, m);
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
            for (e, &s) in members[buckets.range(b)].iter_mut().zip(&bucket_slots) {
                e.hash = first_slot + s;
            }
        }
        Placement::Placed
    }

    fn too_hard(&self) -> Error {
        too_hard(self.params)
    }
}

/// The error for a build that tried too many pilots, naming the option
/// most to blame: buckets too big, or a table with no room left.
fn too_hard(params: &Params) -> Error {
    let dense = params.keys_per_bucket
        * if params.dense_bucket_fraction > 0.0 {
            params.dense_key_fraction / params.dense_bucket_fraction
        } else {
            1.0
        };
    let sparse = params.keys_per_bucket
        * if params.dense_bucket_fraction < 1.0 {
            (1.0 - params.dense_key_fraction) / (1.0 - params.dense_bucket_fraction)
        } else {
            1.0
        };
    let biggest = dense.max(sparse);
    let tried =
        "placing the keys took over 150 times the work the default options take, and was stopped";
    if biggest > 12.0 {
        let name = if dense > 2.0 * params.keys_per_bucket || sparse > 2.0 * params.keys_per_bucket
        {
            "dense_key_fraction"
        } else {
            "keys_per_bucket"
        };
        Error::InvalidOption {
            name,
            reason: format!("{tried}: buckets hold {biggest:.0} keys on average (keys_per_bucket {}, dense_key_fraction {} into dense_bucket_fraction {}); lower keys_per_bucket, or bring the two fractions closer", params.keys_per_bucket, params.dense_key_fraction, params.dense_bucket_fraction),
        }
    } else {
        Error::InvalidOption { name: "load_factor", reason: format!("{tried}: load_factor {} leaves the last buckets too few free slots; lower it (the default is 0.99) or lower keys_per_bucket ({})", params.load_factor, params.keys_per_bucket) }
    }
}

/// How a pilot search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Search {
    /// This pilot sends every key to a free slot.
    Found(u64),
    /// No pilot below the limit does.
    Exhausted,
    /// The build was cancelled, or another part gave up.
    Stopped,
}

/// The smallest pilot from `from` on, below `until`, that sends each of a
/// bucket's key `hashes` to a free slot (not necessarily different ones).
/// Most pilots fail, at an unpredictable key, so the search tests keys four
/// at a time with one branch per four, which costs less than the slots a
/// branch per key would skip; big buckets, placed early at low load, still
/// stop after their first four. Buckets of up to four keys get a loop of
/// their own size. Pads `hashes` to a multiple of four by repeating a key,
/// which changes no answer. Slots come from `slot_of_word`, the formula
/// lookups use; pilots are walked as words. Looks at `stop` every
/// `TRIALS_PER_CHECK` pilots.
fn free_pilot(
    hashes: &mut Vec<u64>,
    from: u64,
    until: u64,
    taken: &[u64],
    m: u64,
    stop: &Stop<'_>,
) -> Search {
    #[inline(always)]
    fn hit<const K: usize>(hashes: &[u64; K], word: PilotWord, taken: &[u64], m: u64) -> u64 {
        let mut hit = 0;
        for &h in hashes {
            let s = slot_of_word(h, word, m);
            hit |= taken[(s / 64) as usize] >> (s % 64);
        }
        hit & 1
    }
    /// The first pilot from `from` below `until` for whose word `hits` is
    /// false.
    #[inline(always)]
    fn search(from: u64, until: u64, stop: &Stop<'_>, hits: impl Fn(PilotWord) -> bool) -> Search {
        let mut word = PilotWord::of(from);
        let mut pilot = from;
        while pilot < until {
            let end = pilot.saturating_add(TRIALS_PER_CHECK).min(until);
            while pilot < end {
                if !hits(word) {
                    return Search::Found(pilot);
                }
                word = word.next();
                pilot += 1;
            }
            if stop.now() {
                return Search::Stopped;
            }
        }
        Search::Exhausted
    }
    match *hashes.as_slice() {
        [] if from < until => Search::Found(from),
        [] => Search::Exhausted,
        [a] => search(from, until, stop, |w| hit(&[a], w, taken, m) != 0),
        [a, b] => search(from, until, stop, |w| hit(&[a, b], w, taken, m) != 0),
        [a, b, c] => search(from, until, stop, |w| hit(&[a, b, c], w, taken, m) != 0),
        [a, b, c, d] => search(from, until, stop, |w| hit(&[a, b, c, d], w, taken, m) != 0),
        [.., last] => {
            hashes.resize(hashes.len().next_multiple_of(4), last);
            let groups = hashes.chunks_exact(4).map(|g| [g[0], g[1], g[2], g[3]]);
            search(from, until, stop, |w| {
                groups.clone().any(|g| hit(&g, w, taken, m) != 0)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::hash_key;
    use super::*;
    use std::sync::atomic::AtomicBool;

    fn params() -> Params {
        Params {
            keys_per_bucket: 3.5,
            load_factor: 0.99,
            dense_key_fraction: 0.5,
            dense_bucket_fraction: 0.2,
            hash_seed: 0,
            keys_per_part: 1 << 17,
        }
    }

    /// The search's stepped words and four-at-a-time tests find the pilot
    /// a plain search with the lookup's slot function finds.
    #[test]
    fn free_pilot_agrees_with_the_slot_function() {
        let m = 1_000u64;
        let mut taken = vec![0u64; (m as usize).div_ceil(64)];
        // Every third slot taken.
        for s in (0..m).step_by(3) {
            taken[(s / 64) as usize] |= 1 << (s % 64);
        }
        let is_free = |s: u64| taken[(s / 64) as usize] >> (s % 64) & 1 == 0;
        for size in 1..=9 {
            for seed in 0..20u64 {
                let hashes: Vec<u64> = (0..size)
                    .map(|k| hash_key(&[seed as u8, k as u8], 7))
                    .collect();
                let from = seed * 3;
                let expected = (from..MAX_PILOT)
                    .find(|&p| hashes.iter().all(|&h| is_free(super::super::slot(h, p, m))))
                    .map_or(Search::Exhausted, Search::Found);
                let never = CancelFlag::new();
                let gave_up = AtomicBool::new(false);
                let stop = Stop::new(&never, &gave_up);
                assert_eq!(
                    free_pilot(&mut hashes.clone(), from, MAX_PILOT, &taken, m, &stop),
                    expected,
                    "size {size}, seed {seed}"
                );
            }
        }
    }

    /// Keys known by ids (a builder's record offsets) and by index give the
    /// same perfect hash, with the ids handed back in place of the indices,
    /// and the same first key of a duplicate pair.
    #[test]
    fn ids_stand_in_for_indices() {
        let keys: Vec<Vec<u8>> = (0..5_000)
            .map(|i| format!("key-{i}").into_bytes())
            .collect();
        let ids: Vec<u32> = (0..keys.len() as u32).map(|i| 7 + 3 * i).collect();
        let params = Params {
            keys_per_part: 1_000,
            ..params()
        };
        let never = CancelFlag::new();
        let by_index = build(
            keys.len(),
            |i| keys[i].as_slice(),
            None,
            None,
            &params,
            &never,
        )
        .unwrap();
        let by_id = build(
            keys.len(),
            |id| keys[(id - 7) / 3].as_slice(),
            Some(&ids),
            None,
            &params,
            &never,
        )
        .unwrap();
        assert_eq!(by_index.geometry.part_count, 5);
        assert_eq!(
            (by_index.pilots, by_index.remap),
            (by_id.pilots, by_id.remap)
        );
        let slots = |built: &[Hashed], to_index: &dyn Fn(u32) -> u32| {
            let mut slots: Vec<(u64, u32)> =
                built.iter().map(|e| (e.hash, to_index(e.index))).collect();
            slots.sort_unstable();
            slots
        };
        assert_eq!(
            slots(&by_index.slots, &|i| i),
            slots(&by_id.slots, &|id| (id - 7) / 3)
        );

        let mut repeated = keys.clone();
        repeated[4_000] = repeated[1_234].clone();
        let duplicate = |result: Result<Built>| match result {
            Err(Error::DuplicateKey { key, .. }) => key,
            other => panic!(
                "expected a duplicate key error, got {:?}",
                other.map(|_| ())
            ),
        };
        assert_eq!(
            duplicate(build(
                keys.len(),
                |i| repeated[i].as_slice(),
                None,
                None,
                &params,
                &never
            )),
            b"key-1234"
        );
        assert_eq!(
            duplicate(build(
                keys.len(),
                |id| repeated[(id - 7) / 3].as_slice(),
                Some(&ids),
                None,
                &params,
                &never
            )),
            b"key-1234"
        );
    }
}
