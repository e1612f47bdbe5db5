//! Where a key's slot is, in either layout: the classic index (seed index,
//! bit-packed seed blocks, remap) and the compact one (parts table, pilots,
//! remap); and the record offset a slot holds.

use super::{corrupt, Reader, Source};
use crate::bits;
use crate::chd;
use crate::error::Result;
use crate::format::{PartEntry, Section, SectionId, PART_ENTRY_LEN};
use std::ops::Range;

impl<S: Source> Reader<S> {
    /// Entry `k` of the seed index.
    pub(super) fn seed_index_entry(&self, k: u64) -> Result<u32> {
        match &self.loaded_seed_index {
            Some(index) => index
                .get(k as usize)
                .copied()
                .ok_or_else(|| corrupt(SectionId::SeedIndex, "seed block out of range")),
            None => self.with_bytes(
                &self.seed_index,
                SectionId::SeedIndex,
                k * 4,
                4,
                "seed block out of range",
                |b| u32::from_le_bytes(b[..4].try_into().expect("4 bytes")),
            ),
        }
    }

    /// Where seed block `block` starts and ends in the seeds section, in
    /// units of `layout.unit_bytes()`: entries `block` and `block + 1` of
    /// the seed index, read in place from a source in memory (the branch
    /// folds away for one), else from the copy read at open, else (an
    /// index too large to load) through the source.
    #[inline(always)]
    pub(super) fn seed_block_bounds(&self, block: u64) -> Result<(u32, u32)> {
        let in_source = || {
            self.with_bytes(
                &self.seed_index,
                SectionId::SeedIndex,
                block.saturating_mul(4),
                8,
                "seed block out of range",
                |b| {
                    let word = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
                    (word as u32, (word >> 32) as u32)
                },
            )
        };
        if self.source.as_slice().is_some() {
            return in_source();
        }
        let Some(index) = self.loaded_seed_index.as_deref() else {
            return in_source();
        };
        match usize::try_from(block)
            .ok()
            .and_then(|block| index.get(block..block.checked_add(2)?))
        {
            Some(&[start, end]) => Ok((start, end)),
            _ => Err(corrupt(SectionId::SeedIndex, "seed block out of range")),
        }
    }

    /// The pilot of bucket `bucket`, read straight out of its bit-packed
    /// block: one read of the block's bytes, no unpacking of the rest.
    #[inline(always)]
    pub(super) fn pilot(&self, bucket: u64) -> Result<u64> {
        let block_len = self.layout.block_len() as u64;
        let (start, end) = self.seed_block_bounds(bucket / block_len)?;
        let width = end.wrapping_sub(start);
        if width > 32 || end < start {
            return Err(corrupt(
                SectionId::SeedIndex,
                "seed block width over 32 bits",
            ));
        }
        let unit = self.layout.unit_bytes();
        let index = (bucket % block_len) as usize;
        let pilot = self.with_bytes(
            &self.seeds,
            SectionId::Seeds,
            start as u64 * unit as u64,
            width as usize * unit,
            "seed block past end of seeds",
            |block| self.layout.get(block, width, index),
        )?;
        pilot
            .map(u64::from)
            .ok_or_else(|| corrupt(SectionId::Seeds, "seed block too short"))
    }

    /// Element `index` of a packed-integer section.
    #[inline(always)]
    pub(super) fn packed(
        &self,
        section: &Section,
        id: SectionId,
        width: u32,
        index: u64,
        what: &str,
    ) -> Result<u64> {
        let (byte, shift) = bits::packed_position(index, width).ok_or_else(|| corrupt(id, what))?;
        self.with_bytes(section, id, byte, 8, what, |word| {
            bits::packed_element(word[..8].try_into().expect("8 bytes"), shift, width)
        })
    }

    /// Entry `part` of the compact index's parts table.
    #[inline(always)]
    pub(super) fn part_entry(&self, part: u64) -> Result<PartEntry> {
        self.with_bytes(
            &self.parts,
            SectionId::Parts,
            part.saturating_mul(PART_ENTRY_LEN as u64),
            PART_ENTRY_LEN,
            "part past end of parts",
            PartEntry::decode,
        )
    }

    /// The compact index's part, bucket and pilot of a key hash: the
    /// part's entry and the slot in the part the pilot sends the key to.
    /// `None` for an empty part (no key of the store hashes there).
    #[inline(always)]
    pub(super) fn compact_local_slot(&self, hash: u64) -> Result<Option<(PartEntry, u64)>> {
        let (part, within) = self.buckets.split(hash);
        let entry = self.part_entry(part)?;
        if entry.keys == 0 {
            return Ok(None);
        }
        let bucket = part * self.buckets.buckets_per_part() + self.buckets.bucket_in_part(within);
        let pilot = self.with_bytes(
            &self.pilots,
            SectionId::Pilots,
            bucket,
            1,
            "bucket past end of pilots",
            |b| b[0],
        )?;
        Ok(Some((
            entry,
            chd::slot(hash, pilot as u64, entry.slots as u64),
        )))
    }

    /// Where the remap entry of a slot at or past its part's key count is:
    /// its bit in the remap section, and its width.
    #[inline(always)]
    pub(super) fn compact_remap_bit(entry: &PartEntry, local: u64) -> Option<(u64, u32)> {
        let width = entry.remap_bits();
        let bit = (local - entry.keys as u64)
            .checked_mul(width as u64)?
            .checked_add(entry.remap_bit)?;
        Some((bit, width))
    }

    /// The final slot of a part's slot `local`: its remap entry if it is
    /// at or past the part's key count, plus the part's first key.
    #[inline(always)]
    pub(super) fn compact_final(&self, entry: &PartEntry, local: u64) -> Result<u64> {
        let keys = entry.keys as u64;
        let within = if local < keys {
            local
        } else {
            let (bit, width) = Self::compact_remap_bit(entry, local)
                .ok_or_else(|| corrupt(SectionId::Parts, "remap position overflows"))?;
            let value = self.with_bytes(
                &self.remap,
                SectionId::Remap,
                bit / 8,
                8,
                "remap entry past end of remap",
                |w| {
                    bits::packed_element(
                        w[..8].try_into().expect("8 bytes"),
                        (bit % 8) as u32,
                        width,
                    )
                },
            )?;
            if value >= keys {
                return Err(corrupt(SectionId::Remap, "remap entry out of range"));
            }
            value
        };
        entry
            .first_key
            .checked_add(within)
            .filter(|&slot| slot < self.entry_count)
            .ok_or_else(|| corrupt(SectionId::Parts, "part's keys past the entry count"))
    }

    /// The slot of a key hash with the compact index. A key that falls in
    /// an empty part is no key of the store: any slot does, since the key
    /// is compared (0).
    #[inline(always)]
    pub(super) fn compact_slot_of(&self, hash: u64) -> Result<u64> {
        match self.compact_local_slot(hash)? {
            Some((entry, local)) => self.compact_final(&entry, local),
            None => Ok(0),
        }
    }

    /// The slot of a key hash, in `0..len()`.
    #[inline(always)]
    pub(super) fn slot_of(&self, hash: u64) -> Result<u64> {
        if self.compact {
            return self.compact_slot_of(hash);
        }
        let slot = self.slot_before_remap(hash)?;
        if slot < self.entry_count {
            return Ok(slot);
        }
        self.remapped(slot)
    }

    /// The final slot of a table slot at or past `len()`, from the remap
    /// section.
    pub(super) fn remapped(&self, slot: u64) -> Result<u64> {
        match self.packed(
            &self.remap,
            SectionId::Remap,
            self.remap_bits,
            slot - self.entry_count,
            "remap entry past end of remap",
        )? {
            s if s < self.entry_count => Ok(s),
            _ => Err(corrupt(SectionId::Remap, "remap entry out of range")),
        }
    }

    /// The slot the pilot gives a key hash: in `0..len()`, or past it for
    /// a key the remap section moves.
    #[inline(always)]
    pub(super) fn slot_before_remap(&self, hash: u64) -> Result<u64> {
        let (bucket, first_slot) = self.buckets.locate(hash);
        let pilot = self.pilot(bucket)?;
        Ok(first_slot + chd::slot(hash, pilot, self.buckets.slots_per_part()))
    }

    /// Where in the source the seed block holding `bucket`'s pilot is
    /// (`None` if the index says nothing sensible: the read reports it).
    pub(super) fn seed_block_range(&self, bucket: u64) -> Option<Range<u64>> {
        let (start, end) = self
            .seed_block_bounds(bucket / self.layout.block_len() as u64)
            .ok()?;
        let unit = self.layout.unit_bytes() as u64;
        let at = self.seeds.offset + start as u64 * unit;
        Some(at..at + end.checked_sub(start)? as u64 * unit)
    }

    /// Where in the source element `index` of a packed section is read.
    pub(super) fn packed_range(section: &Section, width: u32, index: u64) -> Option<Range<u64>> {
        let (byte, _) = bits::packed_position(index, width)?;
        Some(section.offset + byte..section.offset + byte + 8)
    }

    /// The record offset in slot `slot`.
    #[inline(always)]
    pub(super) fn slot_offset(&self, slot: u64) -> Result<u64> {
        self.packed(
            &self.slots,
            SectionId::Slots,
            self.offset_bits,
            slot,
            "slot past end of slots",
        )
    }
}
