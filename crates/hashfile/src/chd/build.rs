//! Placing keys: the pilot search and the remap, run per part on the
//! parallel pool. Same keys and parameters, same result, whatever the
//! number of threads.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{geometry, hash_key, mul_high, part_count, slot_of_word, BucketMap, Params, PilotWord};
use crate::cancel::CancelFlag;
use crate::error::{Error, Result};
use crate::format::Geometry;
use crate::parallel::*;

/// Largest pilot tried for one bucket before the build moves to the next hash
/// seed. Pilots are stored in at most 32 bits.
const MAX_PILOT: u64 = 1 << 24;

/// How many hash seeds a build tries before it gives up.
pub(crate) const MAX_SEED_ATTEMPTS: u32 = 16;

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
    assert!(n <= MAX_BUILD_ENTRIES, "checked by Builder");
    let mut hashed: Vec<Hashed> = (0..n)
        .into_par_iter()
        .map(|i| Hashed {
            hash: hash_key(keys(i), seed),
            index: i as u32,
        })
        .collect();
    hashed.par_sort_unstable();
    hashed
}

/// Builds the perfect hash of `keys`. Tries seeds `params.hash_seed`,
/// `+1`, ... until one works: a seed fails if two distinct keys share a
/// 64-bit hash or a bucket finds no pilot below `MAX_PILOT`.
///
/// Key `i` goes by an id: `ids[i]`, or `i` without `ids`. Ids ascend with
/// `i`, `keys(id)` is the key, and the build hands ids back (in
/// `Built::slots`, and the first of two equal keys in a duplicate key
/// error). A builder passes its records' offsets as ids, so that writing
/// the slots reads no table at random.
///
/// `hashes`, if given, are the keys' hashes with `params.hash_seed`, for
/// the first try.
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
    assert!(ids.is_none_or(|ids| ids.len() == n), "one id per key");
    let id = |i: usize| ids.map_or(i as u32, |ids| ids[i]);
    for attempt in 0..MAX_SEED_ATTEMPTS {
        let seed = params.hash_seed.wrapping_add(attempt as u64);
        let hashes = hashes.filter(|h| attempt == 0 && h.len() == n);
        if let Some(built) = try_seed(&keys, &id, hashes, n, seed, params, cancel)? {
            return Ok(built);
        }
    }
    Err(Error::BuildFailed {
        entries: n as u64,
        attempts: MAX_SEED_ATTEMPTS,
    })
}

fn try_seed<'a, K, I>(
    keys: &K,
    id: &I,
    hashes: Option<&[u64]>,
    n: usize,
    seed: u64,
    params: &Params,
    cancel: &CancelFlag,
) -> Result<Option<Built>>
where
    K: Fn(usize) -> &'a [u8] + Sync,
    I: Fn(usize) -> u32 + Sync,
{
    let n64 = n as u64;
    let parts = part_count(n64, params.keys_per_part);
    let (mut hashed, part_starts) = match hashes {
        Some(hashes) => hash_by_part(&|i| hashes[i], id, n, parts),
        None => hash_by_part(&|i| hash_key(keys(id(i) as usize), seed), id, n, parts),
    };
    let max_part = part_starts
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or(0);
    let geometry = geometry(n64, parts, max_part as u64, params)?;
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
    let outcomes = place_parts(
        &mut hashed,
        &part_starts,
        &mut pilots,
        &map,
        0,
        keys,
        cancel,
    );
    if !judge(&outcomes, keys, params, cancel)? {
        return Ok(None); // a 64-bit collision or no pilot: next seed
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
}

/// Places a run of whole parts, the first of them part `first_part`:
/// `hashed` holds their keys grouped by part (part `first_part + p` is
/// `part_starts[p]..part_starts[p + 1]`), and `pilots` their buckets'
/// pilots, which this fills. Each part on its own, on the pool: its pilots,
/// then its keys' slots in place of their hashes. Parts are independent, so
/// the result depends neither on the number of threads nor on which other
/// parts are placed in the same call (a spilled build places a group of
/// parts at a time, `build::spill`). One outcome per part, in part order.
pub(crate) fn place_parts<'a, K>(
    hashed: &mut [Hashed],
    part_starts: &[usize],
    pilots: &mut [u32],
    map: &BucketMap,
    first_part: u64,
    keys: &K,
    cancel: &CancelFlag,
) -> Vec<Placement>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    let per_part = map.buckets_per_part() as usize;
    let spp = map.slots_per_part();
    let mut chunks: Vec<&mut [Hashed]> = Vec::with_capacity(part_starts.len());
    let mut rest = hashed;
    for w in part_starts.windows(2) {
        let (head, tail) = rest.split_at_mut(w[1] - w[0]);
        chunks.push(head);
        rest = tail;
    }
    // A part that gives up stops the others at their next look.
    let gave_up = AtomicBool::new(false);
    let stop = Stop {
        cancel,
        gave_up: &gave_up,
    };
    chunks
        .into_par_iter()
        .zip(pilots.par_chunks_mut(per_part))
        .enumerate()
        .map(|(part, (members, pilots))| {
            let first_slot = (first_part + part as u64) * spp;
            place_part(members, pilots, map, first_slot, keys, &stop)
        })
        .collect()
}

/// What placing parts came to: `Ok(true)` if every part was placed,
/// `Ok(false)` if the next hash seed must be tried, or the error of the
/// first part that failed, in part order, whatever the threads did: a
/// duplicate (found before any placing) first, then a part that gave up,
/// then a cancelled build.
pub(crate) fn judge<'a, K>(
    outcomes: &[Placement],
    keys: &K,
    params: &Params,
    cancel: &CancelFlag,
) -> Result<bool>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    if let Some(duplicate) = first_duplicate(outcomes, keys) {
        return Err(duplicate);
    }
    if outcomes.contains(&Placement::TooHard) {
        return Err(too_hard(params));
    }
    cancel.check()?;
    Ok(outcomes.iter().all(|o| *o == Placement::Placed))
}

/// `(hash, id)` of every key, grouped by part, in index order within a
/// part, and where each part starts (`parts + 1` entries). A stable
/// counting sort on the rayon pool: each chunk of keys counts its keys per
/// part, then hashes them again (`hash_of`) to write each where its part
/// and chunk say.
/// The result does not depend on the number of threads.
pub(super) fn hash_by_part<H, I>(
    hash_of: &H,
    id: &I,
    n: usize,
    parts: u64,
) -> (Vec<Hashed>, Vec<usize>)
where
    H: Fn(usize) -> u64 + Sync,
    I: Fn(usize) -> u32 + Sync,
{
    assert!(n <= MAX_BUILD_ENTRIES, "checked by Builder");
    let part_of = |i: usize| mul_high(hash_of(i), parts) as usize;
    let chunk = n.div_ceil(threads() * 4).max(1 << 14);
    let ranges: Vec<std::ops::Range<usize>> = (0..n)
        .step_by(chunk)
        .map(|start| start..(start + chunk).min(n))
        .collect();
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

/// Two keys of a part with the same 64-bit hash.
pub(super) enum Clash {
    /// The same key twice: the smaller id.
    Duplicate(u32),
    /// Two keys whose hashes collide: the next hash seed will part them.
    Collision,
}

/// Groups a part's keys (`members`, hashes and ids) by bucket in place,
/// stable in input order, and returns where each of its `buckets` starts
/// (`buckets + 1` entries: bucket b is `starts[b]..starts[b + 1]`). Equal
/// hashes share a bucket, so this is where they are found.
pub(super) fn group_by_bucket<'a, K>(
    members: &mut [Hashed],
    buckets: usize,
    map: &BucketMap,
    keys: &K,
) -> std::result::Result<Vec<u32>, Clash>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    let bucket_of = |hash: u64| map.bucket_in_part(map.split(hash).1) as usize;
    let (grouped, starts) = counting_sort(members, buckets, |e| bucket_of(e.hash));
    members.copy_from_slice(&grouped);
    drop(grouped);
    for window in starts.windows(2) {
        let bucket = &members[window[0] as usize..window[1] as usize];
        for (i, a) in bucket.iter().enumerate() {
            for b in &bucket[i + 1..] {
                if a.hash == b.hash {
                    let (ia, ib) = (a.index, b.index);
                    return Err(if keys(ia as usize) == keys(ib as usize) {
                        Clash::Duplicate(ia.min(ib))
                    } else {
                        Clash::Collision
                    });
                }
            }
        }
    }
    Ok(starts)
}

/// A stable counting sort: `items` ordered by `key(item)`, which is below
/// `keys`, and where each key's run starts (`keys + 1` entries).
pub(super) fn counting_sort<T: Copy>(
    items: &[T],
    keys: usize,
    key: impl Fn(&T) -> usize,
) -> (Vec<T>, Vec<u32>) {
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

/// The duplicate key error of the first part, in part order, that found
/// a key twice.
pub(super) fn first_duplicate<'a, K>(outcomes: &[Placement], keys: &K) -> Option<Error>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    outcomes.iter().find_map(|o| match o {
        Placement::Duplicate(id) => Some(Error::DuplicateKey {
            key: keys(*id as usize).to_vec(),
            first: None,
            second: None,
            others: 0,
        }),
        _ => None,
    })
}

/// How placing a part went (either index layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Every bucket has its pilot.
    Placed,
    /// The key with this id occurs twice.
    Duplicate(u32),
    /// Two keys share a 64-bit hash, or a bucket found no pilot: try the
    /// next hash seed.
    Retry,
    /// The part took more work than its layout allows (`MAX_WORK_PER_KEY`,
    /// `compact::MAX_EVICTIONS_PER_KEY`).
    TooHard,
    /// The build was cancelled, or another part gave up.
    Stopped,
}

/// When placing must stop: the build's cancel flag, or another part that
/// gave up.
struct Stop<'a> {
    cancel: &'a CancelFlag,
    gave_up: &'a AtomicBool,
}

impl Stop<'_> {
    #[inline]
    fn now(&self) -> bool {
        self.cancel.is_cancelled() || self.gave_up.load(Ordering::Relaxed)
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

/// Places one part's keys: groups them by bucket, checks each bucket for
/// keys with equal hashes, then finds each bucket the smallest pilot that
/// sends all of its keys to free slots of the part, largest buckets first,
/// and writes the pilots. As each bucket is placed, its keys' hashes give
/// way to their slots, `first_slot` plus the slot in the part.
fn place_part<'a, K>(
    members: &mut [Hashed],
    pilots: &mut [u32],
    map: &BucketMap,
    first_slot: u64,
    keys: &K,
    stop: &Stop<'_>,
) -> Placement
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    let mut budget = (members.len() as u64)
        .saturating_mul(MAX_WORK_PER_KEY)
        .max(MIN_WORK_PER_PART);
    let r = pilots.len();
    let m = map.slots_per_part();
    let starts = match group_by_bucket(members, r, map, keys) {
        Ok(starts) => starts,
        Err(Clash::Duplicate(id)) => return Placement::Duplicate(id),
        Err(Clash::Collision) => return Placement::Retry,
    };
    let size = |b: usize| (starts[b + 1] - starts[b]) as usize;

    // Largest buckets first; ties in bucket order.
    let max_size = (0..r).map(size).max().unwrap_or(0);
    let (order, _) = counting_sort(&(0..r as u32).collect::<Vec<_>>(), max_size + 1, |&b| {
        max_size - size(b as usize)
    });

    let mut taken = vec![0u64; (m as usize).div_ceil(64)];
    let mut bucket_slots: Vec<u64> = Vec::with_capacity(max_size);
    let mut hashes: Vec<u64> = Vec::with_capacity(max_size + 3);
    for (placed, &b) in order.iter().enumerate() {
        if placed % 64 == 0 && stop.now() {
            return Placement::Stopped;
        }
        let b = b as usize;
        let bucket = &members[starts[b] as usize..starts[b + 1] as usize];
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
                Search::Exhausted => {
                    stop.gave_up.store(true, Ordering::Relaxed);
                    return Placement::TooHard;
                }
            };
            budget -= (pilot - from + 1) * groups;
            // Its keys are on free slots; are they on different ones? Take
            // them one by one, and give them back if two meet.
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
        for (e, &s) in members[starts[b] as usize..starts[b + 1] as usize]
            .iter_mut()
            .zip(&bucket_slots)
        {
            e.hash = first_slot + s;
        }
    }
    Placement::Placed
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
    use super::*;

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
                let stop = Stop {
                    cancel: &never,
                    gave_up: &AtomicBool::new(false),
                };
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
