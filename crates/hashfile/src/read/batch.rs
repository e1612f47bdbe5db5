//! `get_many`: many keys looked up level by level.

use super::{io_error, Reader, RecordBuf, Source, OPEN_READ_LEN};
use crate::chd;
use crate::error::Result;
use crate::format::PART_ENTRY_LEN;
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

impl<S: Source> Reader<S> {
    /// Looks many keys up, reading level by level: the seed blocks of all
    /// of them, then all their slots, then all their records, each level
    /// handed to the source as one [`Source::prefetch`]. A network source
    /// fetches a level in one round trip, so a batch costs about as many
    /// round trips as one key. Over a source in memory (a map) the keys go
    /// in groups whose cache misses overlap (see `get_many_in_memory`).
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
        let hashes: Vec<u64> = keys
            .iter()
            .map(|key| chd::hash_key(key.as_ref(), self.hash_seed))
            .collect();
        let mut order: Vec<usize> = (0..keys.len()).collect();
        let slots = if self.compact {
            self.compact_slots_batched(&hashes, &mut order)?
        } else {
            self.classic_slots_batched(&hashes, &mut order)?
        };
        order.sort_unstable_by_key(|&i| slots[i]);
        let mut offsets = vec![0u64; keys.len()];
        self.in_pieces(
            &order,
            |i| Self::packed_range(&self.slots, self.offset_bits, slots[i]),
            |i| {
                offsets[i] = self.slot_offset(slots[i])?;
                Ok(())
            },
        )?;
        // Records, in file order. A record's length is in its first bytes:
        // a block's worth from its start is prefetched (a longer record
        // reads on, one round trip more).
        order.sort_unstable_by_key(|&i| offsets[i]);
        let guess = self.source.block_len_hint().unwrap_or(OPEN_READ_LEN) as u64;
        let records_end = self.records.offset + self.records.length;
        let mut found: Vec<Option<RecordBuf<'_>>> = (0..keys.len()).map(|_| None).collect();
        self.in_pieces(
            &order,
            |i| {
                let at = self.records.offset.saturating_add(offsets[i]);
                Some(at.min(records_end)..at.saturating_add(guess).min(records_end))
            },
            |i| {
                if let Some((record, _)) = self.record_at(offsets[i])? {
                    if record.key() == keys[i].as_ref() {
                        found[i] = Some(record.detached());
                    }
                }
                Ok(())
            },
        )?;
        Ok(found)
    }

    /// The first levels of a batch with the classic index: each key's
    /// final slot, through its seed block (and seed index entry, when the
    /// index was too large to load), then the rare remap entries. The
    /// caller sorts `order` by the final slots.
    pub(super) fn classic_slots_batched(
        &self,
        hashes: &[u64],
        order: &mut [usize],
    ) -> Result<Vec<u64>> {
        let bucket = |i: usize| self.buckets.locate(hashes[i]).0;
        // Seed blocks, in the order of the seed blocks (and of their index
        // entries, a level of their own when the index was too large to
        // load at open).
        order.sort_unstable_by_key(|&i| bucket(i));
        let mut seed_blocks: Vec<Option<Range<u64>>> = vec![None; hashes.len()];
        if self.loaded_seed_index.is_some() {
            for &i in order.iter() {
                seed_blocks[i] = self.seed_block_range(bucket(i));
            }
        } else {
            let entry =
                |i: usize| self.seed_index.offset + bucket(i) / self.layout.block_len() as u64 * 4;
            self.in_pieces(
                order,
                |i| Some(entry(i)..entry(i) + 8),
                |i| {
                    seed_blocks[i] = self.seed_block_range(bucket(i));
                    Ok(())
                },
            )?;
        }
        let mut slots = vec![0u64; hashes.len()];
        self.in_pieces(
            order,
            |i| seed_blocks[i].clone(),
            |i| {
                slots[i] = self.slot_before_remap(hashes[i])?;
                Ok(())
            },
        )?;
        // The rare remapped slots, then every slot, in slot order.
        order.sort_unstable_by_key(|&i| slots[i]);
        let remapped: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| slots[i] >= self.entry_count)
            .collect();
        let mut moved = Vec::with_capacity(remapped.len());
        self.in_pieces(
            &remapped,
            |i| Self::packed_range(&self.remap, self.remap_bits, slots[i] - self.entry_count),
            |i| {
                moved.push((i, self.remapped(slots[i])?));
                Ok(())
            },
        )?;
        for (i, slot) in moved {
            slots[i] = slot;
        }
        Ok(slots)
    }

    /// The first levels of a batch with the compact index: each key's
    /// parts-table entry, its pilot, then the rare remap entries, each
    /// level prefetched together. The caller sorts `order` by the final
    /// slots.
    pub(super) fn compact_slots_batched(
        &self,
        hashes: &[u64],
        order: &mut [usize],
    ) -> Result<Vec<u64>> {
        // The part and the bucket grow with the hash.
        order.sort_unstable_by_key(|&i| hashes[i]);
        let part = |i: usize| self.buckets.split(hashes[i]).0;
        let entry_at = |i: usize| self.parts.offset + part(i) * PART_ENTRY_LEN as u64;
        self.in_pieces(
            order,
            |i| Some(entry_at(i)..entry_at(i) + PART_ENTRY_LEN as u64),
            |_| Ok(()),
        )?;
        let pilot_at = |i: usize| {
            let (part, within) = self.buckets.split(hashes[i]);
            self.pilots.offset
                + part * self.buckets.buckets_per_part()
                + self.buckets.bucket_in_part(within)
        };
        let mut local = vec![None; hashes.len()];
        self.in_pieces(
            order,
            |i| Some(pilot_at(i)..pilot_at(i) + 1),
            |i| {
                local[i] = self.compact_local_slot(hashes[i])?;
                Ok(())
            },
        )?;
        let remap_bit = |i: usize| match local[i] {
            Some((entry, slot)) if slot >= entry.keys as u64 => {
                Self::compact_remap_bit(&entry, slot)
            }
            _ => None,
        };
        let mut remapped: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| remap_bit(i).is_some())
            .collect();
        remapped.sort_unstable_by_key(|&i| remap_bit(i));
        self.in_pieces(
            &remapped,
            |i| {
                let (bit, _) = remap_bit(i)?;
                let at = self.remap.offset + bit / 8;
                Some(at..at + 8)
            },
            |_| Ok(()),
        )?;
        order
            .iter()
            .map(|&i| match &local[i] {
                Some((entry, slot)) => self.compact_final(entry, *slot).map(|s| (i, s)),
                None => Ok((i, 0)),
            })
            .try_fold(vec![0u64; hashes.len()], |mut slots, found| {
                let (i, slot) = found?;
                slots[i] = slot;
                Ok(slots)
            })
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

    /// `get_many` over a source in memory. A lookup is three dependent
    /// reads at places no cache holds in a large store (a seed block, a
    /// slot word, a record): one after another, each waits its miss out.
    /// Here a group of keys goes level by level, asking the CPU for each
    /// key's line of the next level before reading any, so the group's
    /// misses overlap. Each level calls what `get` calls, so the results
    /// are `get`'s; a group that meets damage is looked up again key by
    /// key with `get`, so the error is the one `get` gives for the first
    /// damaged key in order.
    pub(super) fn get_many_in_memory<'r, K: AsRef<[u8]>>(
        &'r self,
        bytes: &'r [u8],
        keys: &[K],
    ) -> Result<Vec<Option<RecordBuf<'r>>>> {
        let mut found = Vec::with_capacity(keys.len());
        for group in keys.chunks(BATCH_GROUP) {
            let before = found.len();
            if self.group_in_memory(bytes, group, &mut found).is_err() {
                found.truncate(before);
                for key in group {
                    found.push(self.get(key.as_ref())?);
                }
            }
        }
        Ok(found)
    }

    /// One group of `get_many_in_memory`: at most [`BATCH_GROUP`] keys.
    #[inline(always)]
    pub(super) fn group_in_memory<'r, K: AsRef<[u8]>>(
        &'r self,
        bytes: &'r [u8],
        group: &[K],
        found: &mut Vec<Option<RecordBuf<'r>>>,
    ) -> Result<()> {
        let mut hashes = [0u64; BATCH_GROUP];
        let mut slots = [0u64; BATCH_GROUP];
        for (hash, key) in hashes.iter_mut().zip(group) {
            *hash = chd::hash_key(key.as_ref(), self.hash_seed);
            if self.compact {
                let (part, within) = self.buckets.split(*hash);
                let bucket =
                    part * self.buckets.buckets_per_part() + self.buckets.bucket_in_part(within);
                prefetch(bytes, self.pilots.offset.saturating_add(bucket));
            } else if let Some(block) = self.seed_block_range(self.buckets.locate(*hash).0) {
                prefetch(bytes, block.start);
            }
        }
        for (slot, &hash) in slots.iter_mut().zip(&hashes[..group.len()]) {
            *slot = self.slot_of(hash)?;
            if let Some(word) = Self::packed_range(&self.slots, self.offset_bits, *slot) {
                prefetch(bytes, word.start);
            }
        }
        // The offsets replace the slots they were read from.
        for slot in &mut slots[..group.len()] {
            *slot = self.slot_offset(*slot)?;
            prefetch(bytes, self.records.offset.saturating_add(*slot));
        }
        for (key, &offset) in group.iter().zip(&slots) {
            let (layout, stored, value) = self.record_in_place(bytes, offset)?;
            found.push(if stored == key.as_ref() {
                Some(self.found(stored, value, layout)?)
            } else {
                None
            });
        }
        Ok(())
    }
}
