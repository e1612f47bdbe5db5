//! The search for a perfect hash, written once for both index layouts and
//! for a spilled build's placement (`build::spill`):
//!
//! - the retry policy: hash seeds `hash_seed`, `+1`, ... tried in turn, at
//!   most `MAX_SEED_ATTEMPTS` (`each_seed`);
//! - a seed's keys hashed and grouped by part, and the geometry their
//!   counts give (`search`, `hash_by_part`);
//! - each part's keys grouped by bucket, where repeated keys and 64-bit
//!   collisions are found, and its buckets ordered largest first
//!   (`group_by_bucket`, `Buckets`);
//! - the parts placed in parallel, a part that gives up stopping the
//!   others, and the outcome judged the same whatever the threads did
//!   (`place`).
//!
//! What differs per layout is how one part's buckets get their pilots and
//! what placing them leaves: a [`Layout`], implemented by `classic` (the
//! smallest pilot below 2^24, slots remapped over the whole table) and by
//! `compact` (one-byte pilots by evict-and-retry, parts of their own size,
//! each with its own remap).

use std::sync::atomic::{AtomicBool, Ordering};

use super::{geometry, hash_key, mul_high, part_count, BucketMap, Params};
use crate::cancel::CancelFlag;
use crate::error::{Error, Result};
use crate::format::Geometry;
use crate::parallel::*;

/// How many hash seeds a build tries before it gives up.
pub(crate) const MAX_SEED_ATTEMPTS: u32 = 16;

/// Most keys one build takes (indices are 32-bit). The format has no such
/// limit; larger data is for sharded stores.
pub const MAX_BUILD_ENTRIES: usize = u32::MAX as usize;

/// A key's hash and index, 12 bytes, so that the largest array of a build
/// costs 12 bytes per key. Ordered by hash, then index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(C, packed(4))]
pub(crate) struct Hashed {
    pub hash: u64,
    pub index: u32,
}

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

/// The retry policy of every build: calls `attempt(attempt, seed)` with
/// seeds `first`, `first + 1`, ... (wrapping) until one gives a result,
/// at most `MAX_SEED_ATTEMPTS` times, and then fails with
/// `Error::BuildFailed` for `entries` keys. An error ends the search.
pub(crate) fn each_seed<B>(
    entries: u64,
    first: u64,
    mut attempt: impl FnMut(u32, u64) -> Result<Option<B>>,
) -> Result<B> {
    for n in 0..MAX_SEED_ATTEMPTS {
        if let Some(built) = attempt(n, first.wrapping_add(n as u64))? {
            return Ok(built);
        }
    }
    Err(Error::BuildFailed {
        entries,
        attempts: MAX_SEED_ATTEMPTS,
    })
}

/// The search over keys in memory. Tries seeds `params.hash_seed`, `+1`,
/// ... (`each_seed`): for each, every key's hash and id grouped by part
/// (`hash_by_part`), where each part starts, and the geometry their counts
/// give are handed to `place_all(hashed, part_starts, geometry, seed)`,
/// the layout's placing of every part: `None` if the seed failed (two
/// distinct keys share a 64-bit hash, or a bucket found no pilot).
///
/// Key `i` goes by an id: `ids[i]`, or `i` without `ids`. Ids ascend with
/// `i`, `keys(id)` is the key, and the build hands ids back (in the
/// `index` field of the hashed keys, and the first of two equal keys in a
/// duplicate key error). A builder passes its records' offsets as ids, so
/// that writing the slots reads no table at random.
///
/// `hashes`, if given, are the keys' hashes with `params.hash_seed`, for
/// the first try: a builder's hashes spare reading every key again (and,
/// in a streaming build, mapping every page of its records).
pub(crate) fn search<'a, K, B>(
    n: usize,
    keys: &K,
    ids: Option<&[u32]>,
    hashes: Option<&[u64]>,
    params: &Params,
    mut place_all: impl FnMut(Vec<Hashed>, Vec<usize>, Geometry, u64) -> Result<Option<B>>,
) -> Result<B>
where
    K: Fn(usize) -> &'a [u8] + Sync,
{
    assert!(ids.is_none_or(|ids| ids.len() == n), "one id per key");
    let id = |i: usize| ids.map_or(i as u32, |ids| ids[i]);
    let n64 = n as u64;
    each_seed(n64, params.hash_seed, |attempt, seed| {
        let hashes = hashes.filter(|h| attempt == 0 && h.len() == n);
        let parts = part_count(n64, params.keys_per_part);
        let (hashed, part_starts) = match hashes {
            Some(hashes) => hash_by_part(&|i| hashes[i], &id, n, parts),
            None => hash_by_part(&|i| hash_key(keys(id(i) as usize), seed), &id, n, parts),
        };
        let max_part = part_starts
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0);
        let geometry = geometry(n64, parts, max_part as u64, params)?;
        place_all(hashed, part_starts, geometry, seed)
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
    /// The part took more work than its layout allows.
    TooHard,
    /// The build was cancelled, or another part gave up.
    Stopped,
}

/// When placing must stop: the build's cancel flag, or another part that
/// gave up.
pub(crate) struct Stop<'a> {
    cancel: &'a CancelFlag,
    gave_up: &'a AtomicBool,
}

impl<'a> Stop<'a> {
    /// A stop for a part placed alone (the tests' searches).
    #[cfg(test)]
    pub(crate) fn new(cancel: &'a CancelFlag, gave_up: &'a AtomicBool) -> Stop<'a> {
        Stop { cancel, gave_up }
    }

    /// Whether the part being placed should stop now.
    #[inline]
    pub(crate) fn now(&self) -> bool {
        self.cancel.is_cancelled() || self.gave_up.load(Ordering::Relaxed)
    }
}

/// A part's keys grouped by bucket, and the order its buckets are placed
/// in: largest first, ties in bucket order.
pub(crate) struct Buckets {
    /// Bucket `b`'s keys are `starts[b]..starts[b + 1]` of the part's
    /// (`buckets + 1` entries).
    starts: Vec<u32>,
    /// Every bucket, largest first; ties in bucket order. Empty buckets
    /// come last.
    pub(crate) order: Vec<u32>,
    /// Keys in the largest bucket.
    pub(crate) max_size: usize,
}

impl Buckets {
    fn largest_first(starts: Vec<u32>) -> Buckets {
        let r = starts.len() - 1;
        let size = |b: usize| (starts[b + 1] - starts[b]) as usize;
        let max_size = (0..r).map(size).max().unwrap_or(0);
        let (order, _) = counting_sort(&(0..r as u32).collect::<Vec<_>>(), max_size + 1, |&b| {
            max_size - size(b as usize)
        });
        Buckets {
            starts,
            order,
            max_size,
        }
    }

    /// Keys in bucket `b`.
    #[inline]
    pub(crate) fn size(&self, b: usize) -> usize {
        (self.starts[b + 1] - self.starts[b]) as usize
    }

    /// Where bucket `b`'s keys are among the part's.
    #[inline]
    pub(crate) fn range(&self, b: usize) -> std::ops::Range<usize> {
        self.starts[b] as usize..self.starts[b + 1] as usize
    }
}

/// What truly differs between the index layouts: how one part's buckets
/// get their pilots, and what placing them leaves. The search (`place`)
/// does the rest: splitting the keys by part, grouping each part's by
/// bucket, finding repeats, running the parts in parallel, judging.
pub(crate) trait Layout: Sync {
    /// A bucket's pilot as the layout stores it.
    type Pilot: Send;
    /// What placing one part takes besides its keys and its pilots, and
    /// what else it fills in (the compact layout's remap).
    type Part<'r>: Send;
    /// Whether a part that fails in any way stops the other parts. A part
    /// that takes too much work always does; with `false`, parts that
    /// find a seed bad still run to their own end, so that whether the
    /// build is too hard for its options does not depend on the threads.
    const FAILURE_STOPS_OTHERS: bool;

    /// Places one part's keys (`members`, not empty, grouped by bucket as
    /// `buckets` says, with no two hashes equal): writes each bucket's
    /// pilot, and leaves in each key's `hash` field its slot (what the
    /// slot means is the layout's). Looks at `stop` now and then.
    fn place_part(
        &self,
        part: Self::Part<'_>,
        members: &mut [Hashed],
        buckets: &Buckets,
        pilots: &mut [Self::Pilot],
        stop: &Stop<'_>,
    ) -> Placement;

    /// The error for a part that took more work than the layout allows,
    /// naming the option to change.
    fn too_hard(&self) -> Error;
}

/// Places a run of whole parts with `layout` and judges the outcome:
/// `hashed` holds their keys grouped by part (the run's part `p` is
/// `part_starts[p]..part_starts[p + 1]`), `parts` what each part needs
/// (`Layout::Part`), and `pilots` their buckets' pilots, which this fills.
/// Each part on its own, on the pool. Parts are independent, so the result
/// depends neither on the number of threads nor on which other parts are
/// placed in the same call (a spilled build places a group of parts at a
/// time).
///
/// `Ok(true)` if every part was placed, `Ok(false)` if the next hash seed
/// must be tried, or the error of the first part that failed, in part
/// order, whatever the threads did: a duplicate (found before any placing)
/// first, then a part that gave up (`Layout::too_hard`), then a cancelled
/// build.
#[allow(clippy::too_many_arguments)]
pub(crate) fn place<'a, 'r, L, K>(
    layout: &L,
    hashed: &mut [Hashed],
    part_starts: &[usize],
    parts: Vec<L::Part<'r>>,
    pilots: &mut [L::Pilot],
    map: &BucketMap,
    keys: &K,
    cancel: &CancelFlag,
) -> Result<bool>
where
    L: Layout,
    K: Fn(usize) -> &'a [u8] + Sync,
{
    let per_part = map.buckets_per_part() as usize;
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
    let outcomes: Vec<Placement> = chunks
        .into_par_iter()
        .zip(parts)
        .zip(pilots.par_chunks_mut(per_part.max(1)))
        .map(|((members, part), pilots)| {
            let placed = place_part(layout, part, members, pilots, map, keys, &stop);
            if placed == Placement::TooHard
                || (L::FAILURE_STOPS_OTHERS && placed != Placement::Placed)
            {
                gave_up.store(true, Ordering::Relaxed);
            }
            placed
        })
        .collect();
    if let Some(duplicate) = first_duplicate(&outcomes, keys) {
        return Err(duplicate);
    }
    if outcomes.contains(&Placement::TooHard) {
        return Err(layout.too_hard());
    }
    cancel.check()?;
    Ok(outcomes.iter().all(|o| *o == Placement::Placed))
}

/// Places one part: groups its keys by bucket, checks each bucket for
/// keys with equal hashes, and hands the rest to the layout.
#[inline]
fn place_part<'a, L, K>(
    layout: &L,
    part: L::Part<'_>,
    members: &mut [Hashed],
    pilots: &mut [L::Pilot],
    map: &BucketMap,
    keys: &K,
    stop: &Stop<'_>,
) -> Placement
where
    L: Layout,
    K: Fn(usize) -> &'a [u8] + Sync,
{
    if members.is_empty() {
        return Placement::Placed;
    }
    let buckets = match group_by_bucket(members, pilots.len(), map, keys) {
        Ok(starts) => Buckets::largest_first(starts),
        Err(Clash::Duplicate(id)) => return Placement::Duplicate(id),
        Err(Clash::Collision) => return Placement::Retry,
    };
    layout.place_part(part, members, &buckets, pilots, stop)
}

/// The duplicate key error of the first part, in part order, that found
/// a key twice.
fn first_duplicate<'a, K>(outcomes: &[Placement], keys: &K) -> Option<Error>
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

/// The output of `hash_by_part`, written from many threads at disjoint
/// places.
struct SharedOut(*mut Hashed);
// SAFETY: the threads write disjoint entries (see `hash_by_part`).
unsafe impl Sync for SharedOut {}

/// Two keys of a part with the same 64-bit hash.
enum Clash {
    /// The same key twice: the smaller id.
    Duplicate(u32),
    /// Two keys whose hashes collide: the next hash seed will part them.
    Collision,
}

/// Groups a part's keys (`members`, hashes and ids) by bucket in place,
/// stable in input order, and returns where each of its `buckets` starts
/// (`buckets + 1` entries: bucket b is `starts[b]..starts[b + 1]`). Equal
/// hashes share a bucket, so this is where they are found.
fn group_by_bucket<'a, K>(
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
fn counting_sort<T: Copy>(
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeds are tried from the first on, wrapping, until one gives a
    /// result; after `MAX_SEED_ATTEMPTS` the build fails, naming its keys.
    #[test]
    fn seeds_are_tried_in_turn_and_then_the_build_fails() {
        let mut tried = Vec::new();
        let failed = each_seed(1_234, u64::MAX - 1, |attempt, seed| {
            tried.push((attempt, seed));
            Ok(None::<()>)
        });
        assert!(
            matches!(
                failed,
                Err(Error::BuildFailed {
                    entries: 1_234,
                    attempts: MAX_SEED_ATTEMPTS
                })
            ),
            "{failed:?}"
        );
        let expected: Vec<(u32, u64)> = (0..MAX_SEED_ATTEMPTS)
            .map(|a| (a, (u64::MAX - 1).wrapping_add(a as u64)))
            .collect();
        assert_eq!(tried, expected);
        assert_eq!(tried[2].1, 0);

        let mut calls = 0;
        let found = each_seed(10, 7, |attempt, seed| {
            calls += 1;
            Ok((attempt == 3).then_some(seed))
        });
        assert_eq!((found.unwrap(), calls), (10, 4));
        // An error ends the search at once.
        let mut calls = 0;
        let stopped = each_seed(10, 7, |_, _| -> Result<Option<()>> {
            calls += 1;
            Err(Error::Cancelled)
        });
        assert!(matches!(stopped, Err(Error::Cancelled)) && calls == 1);
    }

    /// A layout whose parts come to what they are told, to see how the
    /// search judges a seed.
    struct Told;

    impl Layout for Told {
        type Pilot = u8;
        type Part<'r> = Placement;
        const FAILURE_STOPS_OTHERS: bool = false;

        fn place_part(
            &self,
            told: Placement,
            _members: &mut [Hashed],
            _buckets: &Buckets,
            pilots: &mut [u8],
            _stop: &Stop<'_>,
        ) -> Placement {
            pilots.fill(1);
            told
        }

        fn too_hard(&self) -> Error {
            Error::InvalidOption {
                name: "keys_per_bucket",
                reason: "told so".into(),
            }
        }
    }

    /// What a seed comes to, whatever the threads did: a repeated key
    /// first (found before any placing, named by its first occurrence),
    /// then a part that took too much work, then a cancelled build, then
    /// the next seed if any part asked for it.
    #[test]
    fn a_seed_is_judged_in_a_fixed_order() {
        use Placement::*;
        let mut keys: Vec<Vec<u8>> = (0..4_000).map(|i| format!("k{i}").into_bytes()).collect();
        let params = Params {
            keys_per_bucket: 3.5,
            load_factor: 0.99,
            dense_key_fraction: 0.5,
            dense_bucket_fraction: 0.2,
            hash_seed: 0,
            keys_per_part: 1_000,
        };
        let judge = |keys: &[Vec<u8>], told: [Placement; 4], cancelled: bool| {
            let cancel = CancelFlag::new();
            if cancelled {
                cancel.cancel();
            }
            let key = |i: usize| keys[i].as_slice();
            search(
                keys.len(),
                &key,
                None,
                None,
                &params,
                |mut hashed, starts, geometry, _| {
                    assert_eq!(geometry.part_count, 4);
                    let map = BucketMap::new(&geometry);
                    let mut pilots = vec![0u8; geometry.bucket_count as usize];
                    let judged = place(
                        &Told,
                        &mut hashed,
                        &starts,
                        told.to_vec(),
                        &mut pilots,
                        &map,
                        &key,
                        &cancel,
                    );
                    Ok(Some((judged, pilots)))
                },
            )
            .unwrap()
        };
        let (judged, pilots) = judge(&keys, [Placed; 4], false);
        assert!(judged.unwrap());
        assert!(pilots.iter().all(|&p| p == 1), "every part placed");
        assert!(!judge(&keys, [Placed, Retry, Placed, Stopped], false)
            .0
            .unwrap());
        let error = judge(&keys, [Retry, Stopped, TooHard, Placed], true).0;
        assert!(
            matches!(&error, Err(Error::InvalidOption { reason, .. }) if reason == "told so"),
            "{error:?}"
        );
        let error = judge(&keys, [Placed, Retry, Placed, Placed], true).0;
        assert!(matches!(error, Err(Error::Cancelled)), "{error:?}");

        keys[3_999] = keys[17].clone();
        let error = judge(&keys, [TooHard; 4], true).0;
        match error {
            Err(Error::DuplicateKey { key, .. }) => assert_eq!(key, b"k17"),
            other => panic!("expected a duplicate key, got {other:?}"),
        }
    }
}
