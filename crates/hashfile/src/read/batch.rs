//! `get_many`: many keys looked up level by level, written once for both
//! layouts and both kinds of source. Each level computes, for every key,
//! where its bytes of that level lie; a `Fetch` brings them near (the CPU's
//! prefetch over a source in memory, one `Source::prefetch` per piece over
//! any other), then each key's bytes are read with what `get` calls.

use super::{io_error, Reader, RecordBuf, Source, OPEN_READ_LEN};
use crate::chd;
use crate::error::Result;
use crate::format::{PartEntry, PART_ENTRY_LEN};
use std::cell::Cell;
use std::ops::Range;

/// Keys a batch over a source in memory looks up side by side: enough for
/// the misses of a group to overlap (a core keeps about 10 to 20 misses in
/// flight), few enough that its lines stay in the cache between levels.
const BATCH_GROUP: usize = 16;

/// Asks the CPU to bring the cache line holding `bytes[at]` in, and goes
/// on without waiting. A hint only: nothing where it is not x86-64, and
/// nothing for an offset outside `bytes`.
#[inline(always)]
fn prefetch(bytes: &[u8], at: u64) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = usize::try_from(at).ok().and_then(|at| bytes.get(at)) {
        // SAFETY: a prefetch reads nothing the program sees and never
        // faults (not even on a page of a map whose file was truncated);
        // the address is inside `bytes` all the same. SSE is part of every
        // x86-64 CPU.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (byte as *const u8).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// How a level of a batch brings its keys' bytes near before reading them.
trait Fetch {
    /// Whether the levels visit the keys in the order of where their bytes
    /// lie (a source's blocks are then fetched once each per level;
    /// `sort_for`), or in the order given (a group in memory, too small to
    /// gain by sorting).
    const SORTED: bool;

    /// Brings near the bytes of the keys in `order` (`range_of` each key,
    /// `None` for one with nothing to read at this level), then calls
    /// `read` for each key in `order`.
    fn level<S: Source>(
        &self,
        reader: &Reader<S>,
        order: &[usize],
        range_of: impl Fn(usize) -> Option<Range<u64>>,
        read: impl FnMut(usize) -> Result<()>,
    ) -> Result<()>;
}

/// A batch over a source in memory: a group of at most [`BATCH_GROUP`]
/// keys, each level asking the CPU for every key's line before reading
/// any, so that the group's cache misses overlap.
struct InMemory<'b>(&'b [u8]);

impl Fetch for InMemory<'_> {
    const SORTED: bool = false;

    #[inline(always)]
    fn level<S: Source>(
        &self,
        _: &Reader<S>,
        order: &[usize],
        range_of: impl Fn(usize) -> Option<Range<u64>>,
        mut read: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        for &i in order {
            if let Some(range) = range_of(i) {
                prefetch(self.0, range.start);
            }
        }
        for &i in order {
            read(i)?;
        }
        Ok(())
    }
}

/// A batch through the source's reads: each level handed to the source in
/// pieces its cache holds (`Reader::in_pieces`).
struct ThroughSource;

impl Fetch for ThroughSource {
    const SORTED: bool = true;

    fn level<S: Source>(
        &self,
        reader: &Reader<S>,
        order: &[usize],
        range_of: impl Fn(usize) -> Option<Range<u64>>,
        read: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        reader.in_pieces(order, range_of, read)
    }
}

/// `order` sorted by `key` where `F` visits keys in the order of where
/// their bytes lie; left as it is otherwise.
#[inline(always)]
fn sort_for<F: Fetch, K: Ord>(order: &mut [usize], key: impl FnMut(&usize) -> K) {
    if F::SORTED {
        order.sort_unstable_by_key(key);
    }
}

/// Each key's state through the levels of a batch, indexed as the keys
/// are (cells, so that a level can compute where a key's bytes are while
/// another key's read updates its own entry).
struct Keys<'s> {
    hash: &'s [Cell<u64>],
    /// The key's slot, then the offset of its record.
    at: &'s [Cell<u64>],
    /// The classic index: where the key's seed block is.
    seed_block: &'s [Cell<Option<(u64, u64)>>],
    /// The compact index: the key's part and its slot in the part.
    local: &'s [Cell<Option<(PartEntry, u64)>>],
    /// The order the levels visit the keys in.
    order: &'s mut [usize],
}

impl<S: Source> Reader<S> {
    /// Looks many keys up, reading level by level: the seed blocks of all
    /// of them, then all their slots, then all their records, each level
    /// handed to the source as one [`Source::prefetch`]. A network source
    /// fetches a level in one round trip, so a batch costs about as many
    /// round trips as one key. Over a source in memory (a map) the keys go
    /// in groups whose cache misses overlap (see `get_many_in_memory`);
    /// both go through the same levels (`batch_levels`).
    /// The results are in the order of `keys`.
    ///
    /// Each level visits the keys in the order of where its bytes lie, and
    /// a level whose blocks would not fit the source's cache
    /// ([`Source::capacity_hint`]) is read in pieces of consecutive blocks
    /// that do: every block a batch needs is fetched about once per level,
    /// so requests grow with the distinct blocks needed (and the cache's
    /// size bounds memory), never with keys times evictions. Each record
    /// found holds its own bytes, not the block it was read from.
    ///
    /// ```
    /// let mut builder = hashfile::Builder::new(Default::default())?;
    /// builder.insert(b"a", b"1");
    /// builder.insert(b"b", b"2");
    /// let store = hashfile::Reader::new(builder.to_bytes()?)?;
    /// let found = store.get_many(&["b", "c", "a"])?;
    /// let values: Vec<Option<&[u8]>> = found.iter().map(|r| r.as_ref().map(|r| r.value())).collect();
    /// assert_eq!(values, [Some(&b"2"[..]), None, Some(&b"1"[..])]);
    /// # Ok::<(), hashfile::Error>(())
    /// ```
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<RecordBuf<'_>>>> {
        if self.is_empty() {
            return keys.iter().map(|key| self.get(key.as_ref())).collect();
        }
        if let Some(bytes) = self.source.as_slice() {
            return self.get_many_in_memory(bytes, keys);
        }
        let n = keys.len();
        let (mut hash, mut at) = (vec![0u64; n], vec![0u64; n]);
        let mut seed_block = vec![None; n];
        let mut local = vec![None; n];
        let mut order: Vec<usize> = (0..n).collect();
        let mut found: Vec<Option<RecordBuf<'_>>> = (0..n).map(|_| None).collect();
        let mut state = Keys {
            hash: Cell::from_mut(&mut hash[..]).as_slice_of_cells(),
            at: Cell::from_mut(&mut at[..]).as_slice_of_cells(),
            seed_block: Cell::from_mut(&mut seed_block[..]).as_slice_of_cells(),
            local: Cell::from_mut(&mut local[..]).as_slice_of_cells(),
            order: &mut order,
        };
        self.batch_levels(&ThroughSource, keys, &mut state, &mut found)?;
        Ok(found)
    }

    /// `get_many` over a source in memory. A lookup is three dependent
    /// reads at places no cache holds in a large store (a seed block, a
    /// slot word, a record): one after another, each waits its miss out.
    /// Here a group of keys goes level by level, asking the CPU for each
    /// key's line of the next level before reading any, so the group's
    /// misses overlap. Each level calls what `get` calls, so the results
    /// are `get`'s; a group that meets damage is looked up again key by
    /// key with `get`, so the error is the one `get` gives for the first
    /// damaged key in order.
    fn get_many_in_memory<'r, K: AsRef<[u8]>>(
        &'r self,
        bytes: &'r [u8],
        keys: &[K],
    ) -> Result<Vec<Option<RecordBuf<'r>>>> {
        let (mut hash, mut at) = ([0u64; BATCH_GROUP], [0u64; BATCH_GROUP]);
        let mut seed_block = [None; BATCH_GROUP];
        let mut local = [None; BATCH_GROUP];
        // Never sorted: a group is visited in the order of its keys.
        let mut order: [usize; BATCH_GROUP] = std::array::from_fn(|i| i);
        let (hash, at) = (
            Cell::from_mut(&mut hash[..]).as_slice_of_cells(),
            Cell::from_mut(&mut at[..]).as_slice_of_cells(),
        );
        let seed_block = Cell::from_mut(&mut seed_block[..]).as_slice_of_cells();
        let local = Cell::from_mut(&mut local[..]).as_slice_of_cells();
        let mut found = Vec::with_capacity(keys.len());
        for group in keys.chunks(BATCH_GROUP) {
            let (before, n) = (found.len(), group.len());
            found.extend((0..n).map(|_| None));
            let mut state = Keys {
                hash: &hash[..n],
                at: &at[..n],
                seed_block: &seed_block[..n],
                local: &local[..n],
                order: &mut order[..n],
            };
            let walked =
                self.batch_levels(&InMemory(bytes), group, &mut state, &mut found[before..]);
            if walked.is_err() {
                found.truncate(before);
                for key in group {
                    found.push(self.get(key.as_ref())?);
                }
            }
        }
        Ok(found)
    }

    /// The levels of a batch, for either layout and either kind of source:
    /// each key's hash, its slot (`classic_levels` or `compact_levels`),
    /// the record offset in the slot, then the record, kept in `found`
    /// where its key is the one asked for (holding its own bytes, not a
    /// shared block's). Where `F` sorts, each level visits the keys in the
    /// order of where its bytes lie, and reads them in that order: an error
    /// is the first one met in it.
    #[inline(always)]
    fn batch_levels<'r, F: Fetch, K: AsRef<[u8]>>(
        &'r self,
        fetch: &F,
        keys: &[K],
        state: &mut Keys<'_>,
        found: &mut [Option<RecordBuf<'r>>],
    ) -> Result<()> {
        for (hash, key) in state.hash.iter().zip(keys) {
            hash.set(chd::hash_key(key.as_ref(), self.hash_seed));
        }
        if self.compact {
            self.compact_levels(fetch, state)?;
        } else {
            self.classic_levels(fetch, state)?;
        }
        let at = state.at;
        // With fingerprints, a key whose slot's fingerprint differs is
        // absent: it leaves the batch before its slot and record are read.
        let mut order: &mut [usize] = state.order;
        let mut matched_order: Vec<usize>;
        if self.fingerprints.offset != 0 {
            sort_for::<F, _>(order, |&i| at[i].get());
            let matched: Vec<Cell<bool>> = (0..keys.len()).map(|_| Cell::new(false)).collect();
            let hash = state.hash;
            fetch.level(
                self,
                order,
                |i| {
                    let start = self.fingerprints.offset + at[i].get().checked_mul(2)?;
                    Some(start..start + 2)
                },
                |i| {
                    matched[i].set(self.fingerprint_matches(at[i].get(), hash[i].get())?);
                    Ok(())
                },
            )?;
            // A new order, not the given one rearranged: a batch in memory
            // reuses its order from group to group as it is.
            matched_order = order
                .iter()
                .copied()
                .filter(|&i| matched[i].get())
                .collect();
            order = &mut matched_order;
        }
        sort_for::<F, _>(order, |&i| at[i].get());
        fetch.level(
            self,
            order,
            |i| Self::packed_range(&self.slots, self.offset_bits, at[i].get()),
            |i| {
                at[i].set(self.slot_offset(at[i].get())?);
                Ok(())
            },
        )?;
        // Records, in file order. A record's length is in its first bytes:
        // a block's worth from its start is fetched (a longer record reads
        // on, one round trip more).
        sort_for::<F, _>(order, |&i| at[i].get());
        let guess = self.source.block_len_hint().unwrap_or(OPEN_READ_LEN) as u64;
        let records_end = self.records.offset + self.records.length;
        fetch.level(
            self,
            order,
            |i| {
                let start = self.records.offset.saturating_add(at[i].get());
                Some(start.min(records_end)..start.saturating_add(guess).min(records_end))
            },
            |i| {
                found[i] = self
                    .record_of(at[i].get(), keys[i].as_ref())?
                    .map(RecordBuf::detached);
                Ok(())
            },
        )
    }

    /// The first levels of a batch with the classic index: each key's
    /// final slot, through its seed block (and seed index entry, when the
    /// index is read through the source entry by entry), then the rare
    /// remap entries.
    #[inline(always)]
    fn classic_levels<F: Fetch>(&self, fetch: &F, state: &mut Keys<'_>) -> Result<()> {
        let Keys {
            hash,
            at,
            seed_block,
            ..
        } = *state;
        let bucket = |i: usize| self.buckets.locate(hash[i].get()).0;
        let seed_block_of = |i: usize| {
            self.seed_block_range(bucket(i))
                .map(|range| (range.start, range.end))
        };
        // Seed blocks, in the order of the seed blocks (and of their index
        // entries, a level of their own when the index was too large to
        // load at open).
        sort_for::<F, _>(state.order, |&i| bucket(i));
        if self.source.as_slice().is_none() && self.loaded_seed_index.is_none() {
            let entry =
                |i: usize| self.seed_index.offset + bucket(i) / self.layout.block_len() as u64 * 4;
            fetch.level(
                self,
                state.order,
                |i| Some(entry(i)..entry(i) + 8),
                |i| {
                    seed_block[i].set(seed_block_of(i));
                    Ok(())
                },
            )?;
        } else {
            for &i in state.order.iter() {
                seed_block[i].set(seed_block_of(i));
            }
        }
        fetch.level(
            self,
            state.order,
            |i| seed_block[i].get().map(|(start, end)| start..end),
            |i| {
                at[i].set(self.slot_before_remap(hash[i].get())?);
                Ok(())
            },
        )?;
        // The rare remapped slots (the others have nothing to read), in
        // slot order.
        sort_for::<F, _>(state.order, |&i| at[i].get());
        fetch.level(
            self,
            state.order,
            |i| {
                let entry = at[i].get().checked_sub(self.entry_count)?;
                Self::packed_range(&self.remap, self.remap_bits, entry)
            },
            |i| {
                let slot = at[i].get();
                if slot >= self.entry_count {
                    at[i].set(self.remapped(slot)?);
                }
                Ok(())
            },
        )
    }

    /// The first levels of a batch with the compact index: each key's
    /// parts-table entry, its pilot, then the rare remap entries, each
    /// level fetched together; then each key's final slot.
    #[inline(always)]
    fn compact_levels<F: Fetch>(&self, fetch: &F, state: &mut Keys<'_>) -> Result<()> {
        let Keys {
            hash, at, local, ..
        } = *state;
        // The part and the bucket grow with the hash.
        sort_for::<F, _>(state.order, |&i| hash[i].get());
        let entry_at = |i: usize| {
            let (part, _) = self.buckets.split(hash[i].get());
            self.parts.offset + part * PART_ENTRY_LEN as u64
        };
        fetch.level(
            self,
            state.order,
            |i| Some(entry_at(i)..entry_at(i) + PART_ENTRY_LEN as u64),
            |_| Ok(()),
        )?;
        let pilot_at = |i: usize| {
            let (part, within) = self.buckets.split(hash[i].get());
            self.pilots.offset
                + part * self.buckets.buckets_per_part()
                + self.buckets.bucket_in_part(within)
        };
        fetch.level(
            self,
            state.order,
            |i| Some(pilot_at(i)..pilot_at(i) + 1),
            |i| {
                local[i].set(self.compact_local_slot(hash[i].get())?);
                Ok(())
            },
        )?;
        let remap_bit = |i: usize| match local[i].get() {
            Some((entry, slot)) if slot >= entry.keys as u64 => {
                Self::compact_remap_bit(&entry, slot)
            }
            _ => None,
        };
        // The remap entries are only fetched here: the final slots are
        // read below, in the order above. A source's level visits the
        // remapped keys alone, in the order of their entries.
        let remap_at = |i: usize| {
            let (bit, _) = remap_bit(i)?;
            let at = self.remap.offset + bit / 8;
            Some(at..at + 8)
        };
        if F::SORTED {
            let mut remapped: Vec<usize> = state
                .order
                .iter()
                .copied()
                .filter(|&i| remap_bit(i).is_some())
                .collect();
            remapped.sort_unstable_by_key(|&i| remap_bit(i));
            fetch.level(self, &remapped, remap_at, |_| Ok(()))?;
        } else {
            fetch.level(self, state.order, remap_at, |_| Ok(()))?;
        }
        for &i in state.order.iter() {
            // A key in an empty part is no key of the store: any slot
            // does, since the key is compared (as `compact_slot_of`).
            at[i].set(match local[i].get() {
                Some((entry, slot)) => self.compact_final(&entry, slot)?,
                None => 0,
            });
        }
        Ok(())
    }

    /// One level of a batch: `order` (sorted by where the level's bytes
    /// are) cut into runs whose blocks fit half the source's cache; each
    /// run's ranges (`range_of` each key, `None` for one with nothing to
    /// read) prefetched together, then `read` called for each of its keys.
    pub(super) fn in_pieces(
        &self,
        order: &[usize],
        range_of: impl Fn(usize) -> Option<Range<u64>>,
        mut read: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        let block_len = self.source.block_len_hint().unwrap_or(OPEN_READ_LEN).max(1) as u64;
        // Half the cache: a piece's blocks, prefetched together, stay
        // resident until read. A block cache marks prefetched blocks
        // referenced, so CLOCK's hand must pass one twice to evict it: a
        // ring and a half of moves at least, more than half a ring of
        // inserts can make (each insert moves the hand once, plus once per
        // bit it clears: at most the ring's bits and the new blocks').
        let budget = self
            .source
            .capacity_hint()
            .map_or(u64::MAX, |bytes| (bytes as u64 / block_len / 2).max(1));
        let mut start = 0;
        while start < order.len() {
            let (mut blocks, mut end, mut ranges) = (0u64, start, Vec::new());
            // Ranges come in ascending order of position, so of the blocks
            // counted only the last can be counted again.
            let mut last_block = None::<u64>;
            while end < order.len() {
                let range = range_of(order[end]);
                let span = range
                    .as_ref()
                    .map(|r| (r.start / block_len, r.end.saturating_sub(1) / block_len));
                let new = span.map_or(0, |(first, last)| {
                    let from = last_block.map_or(first, |seen| first.max(seen + 1));
                    last.saturating_sub(from) + u64::from(last >= from)
                });
                if end > start && blocks + new > budget {
                    break;
                }
                blocks += new;
                if let Some((_, last)) = span {
                    last_block = Some(last_block.map_or(last, |seen| seen.max(last)));
                }
                ranges.extend(range);
                end += 1;
            }
            self.source.prefetch(&ranges).map_err(io_error)?;
            for &i in &order[start..end] {
                read(i)?;
            }
            start = end;
        }
        Ok(())
    }
}
