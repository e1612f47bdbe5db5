//! `verify`: every byte of a store checked, read through its source in
//! chunks, so a store larger than memory or behind a network verifies too.

use super::{Reader, Source};
use crate::chd;
use crate::compress::Stats;
use crate::error::{DisplayBytes, Error, Result};
use crate::format::{
    PartEntry, ValueKind, PART_ENTRY_LEN, REQUIRED_TOMBSTONES, REQUIRED_TYPED_VALUES,
};

/// Bytes verify reads at a time.
pub const VERIFY_CHUNK: usize = 1 << 20;

impl<S: Source> Reader<S> {
    /// Checks every byte: the checksum of each section (XXH3 streamed over
    /// chunks), that the bytes between sections are zero, the seed index,
    /// that the records section holds exactly `len()` well-formed records,
    /// and that every key's lookup lands on its own record. O(n).
    pub fn verify(&self) -> Result<()> {
        self.verify_padding()?;
        for id in self.header.present_sections() {
            let section = self.header.section(id);
            let mut hasher = xxhash_rust::xxh3::Xxh3::new();
            self.for_each_chunk(section.offset, section.length, |chunk| {
                hasher.update(chunk);
                Ok(())
            })?;
            let actual = hasher.digest();
            if actual != section.checksum {
                return Err(Error::Checksum {
                    path: None,
                    section: id.name(),
                    expected: section.checksum,
                    actual,
                });
            }
        }
        if self.compact {
            self.verify_parts()?;
        } else {
            self.verify_seed_index()?;
        }
        self.verify_records()
    }

    /// Calls `f` with the bytes of `offset..offset + length`, in chunks.
    fn for_each_chunk(
        &self,
        offset: u64,
        length: u64,
        mut f: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut at = 0;
        while at < length {
            let len = (length - at).min(VERIFY_CHUNK as u64) as usize;
            // This chunk and the next, read ahead (the map's advice is
            // random access).
            self.source
                .will_read(offset + at, (length - at).min(2 * VERIFY_CHUNK as u64));
            let chunk = self
                .source
                .read_exact_at(offset + at, len)
                .map_err(super::io_error)?;
            f(&chunk)?;
            at += len as u64;
        }
        Ok(())
    }

    /// Bytes outside the header and the sections (alignment padding) are
    /// covered by no checksum; they must be zero.
    fn verify_padding(&self) -> Result<()> {
        let mut spans: Vec<(u64, u64)> = self
            .header
            .present_sections()
            .into_iter()
            .map(|id| self.header.section(id))
            .map(|s| (s.offset, s.end()))
            .collect();
        spans.sort_unstable();
        let mut at = self.header.header_len as u64;
        for (start, end) in spans
            .into_iter()
            .chain([(self.header.file_len, self.header.file_len)])
        {
            if start < at {
                return Err(Error::corrupt(
                    "header",
                    format!("sections overlap at byte {start}"),
                ));
            }
            let mut gap_at = at;
            self.for_each_chunk(at, start - at, |chunk| {
                match chunk.iter().position(|&b| b != 0) {
                    Some(i) => Err(Error::corrupt(
                        "header",
                        format!("padding byte {} is not zero", gap_at + i as u64),
                    )),
                    None => {
                        gap_at += chunk.len() as u64;
                        Ok(())
                    }
                }
            })?;
            at = end;
        }
        Ok(())
    }

    /// Entry 0 is zero, entries never decrease, and no block is wider than
    /// 32 bits.
    fn verify_seed_index(&self) -> Result<()> {
        let mut previous = 0u32;
        let mut k = 0u64;
        self.for_each_chunk(self.seed_index.offset, self.seed_index.length, |chunk| {
            for entry in chunk.chunks_exact(4) {
                let v = u32::from_le_bytes(entry.try_into().expect("4 bytes"));
                if (k == 0 && v != 0) || v < previous || v - previous > 32 {
                    return Err(Error::corrupt(
                        "seed_index",
                        format!("seed index entry {k} is inconsistent"),
                    ));
                }
                previous = v;
                k += 1;
            }
            Ok(())
        })
    }

    /// The compact index's parts table: parts follow one another (first
    /// keys and remap bits add up, and the remaps end where the remap
    /// section's bits do), each has at least as many slots as keys and at
    /// most the 2n + 1 a store may have, the slots add up to the header's,
    /// the keys to `len()`, and the reserved bytes are zero.
    fn verify_parts(&self) -> Result<()> {
        let (mut keys, mut slots, mut remap_bit) = (0u64, 0u64, 0u64);
        let mut k = 0u64;
        let bad = |k: u64, what: &str| Error::corrupt("parts", format!("part {k}: {what}"));
        self.for_each_chunk(self.parts.offset, self.parts.length, |chunk| {
            for bytes in chunk.chunks_exact(PART_ENTRY_LEN) {
                let entry = PartEntry::decode(bytes);
                if bytes[24..].iter().any(|&b| b != 0) {
                    return Err(bad(k, "reserved bytes are not zero"));
                }
                if entry.first_key != keys {
                    return Err(bad(k, "its first key does not follow the parts before it"));
                }
                if entry.remap_bit != remap_bit {
                    return Err(bad(k, "its remap does not follow the remaps before it"));
                }
                if entry.slots < entry.keys || entry.slots as u64 > 2 * entry.keys as u64 + 1 {
                    return Err(bad(
                        k,
                        "its slots are fewer than its keys, or more than 2n + 1",
                    ));
                }
                keys += entry.keys as u64;
                slots += entry.slots as u64;
                remap_bit += (entry.slots - entry.keys) as u64 * entry.remap_bits() as u64;
                k += 1;
            }
            Ok(())
        })?;
        let g = &self.header.geometry;
        if keys != g.entry_count || slots != g.slot_count {
            return Err(Error::corrupt(
                "parts",
                format!(
                    "the parts hold {keys} keys in {slots} slots, the header says {} in {}",
                    g.entry_count, g.slot_count
                ),
            ));
        }
        let expected = remap_bit.div_ceil(8) + crate::bits::PACKED_PADDING as u64;
        if self.remap.length != expected {
            return Err(Error::corrupt(
                "remap",
                format!(
                    "section is {} bytes, the parts' remaps take {expected}",
                    self.remap.length
                ),
            ));
        }
        Ok(())
    }

    /// Exactly `len()` well-formed records, each found by its own lookup,
    /// and, in a store built with compression, the dictionary section's
    /// stats those records'.
    fn verify_records(&self) -> Result<()> {
        let mut count = 0u64;
        let mut offset = 0u64;
        let typed_allowed = self.header.required_flags & REQUIRED_TYPED_VALUES != 0;
        let tombstones_allowed = self.header.required_flags & REQUIRED_TOMBSTONES != 0;
        let stats = self.compression_stats()?.map(|summary| summary.stats);
        let mut seen = Stats::default();
        while let Some((found, next)) = self.record_at(offset)? {
            self.read_ahead_past(offset, next);
            let record = found.record();
            let key = || DisplayBytes(record.key);
            if stats.is_some() {
                // The record as stored: record_at has already checked it.
                let at = self.records.offset + offset;
                let stored = self
                    .source
                    .read_exact_at(at, (next - offset) as usize)
                    .map_err(super::io_error)?;
                if let Ok(Some(layout)) = crate::format::record::parse(&stored) {
                    if layout.compressed || layout.items {
                        seen.values += 1;
                        seen.decoded_bytes += record.value.len() as u64;
                        seen.stored_bytes += (layout.len - layout.value_start) as u64;
                    }
                }
            }
            if record.kind == ValueKind::Typed {
                if !typed_allowed {
                    return Err(Error::corrupt("records", format!("record {count} (key {}) holds a typed value, but the header does not require typed values", key())));
                }
                crate::value::check(record.value).map_err(|e| match e {
                    Error::Corrupt { what, .. } => {
                        Error::corrupt("records", format!("record {count} (key {}): {what}", key()))
                    }
                    other => other,
                })?;
            }
            if record.kind == ValueKind::Tombstone && !tombstones_allowed {
                return Err(Error::corrupt("records", format!("record {count} (key {}) is a tombstone, but the header does not require tombstones", key())));
            }
            let hash = chd::hash_key(record.key, self.hash_seed);
            let slot = self.slot_of(hash)?;
            if self.has_fingerprints() && !self.fingerprint_matches(slot, hash)? {
                return Err(Error::corrupt(
                    "fingerprints",
                    format!(
                        "record {count} (key {}) has another fingerprint in its slot",
                        key()
                    ),
                ));
            }
            if self.slot_offset(slot)? != offset {
                return Err(Error::corrupt(
                    "records",
                    format!(
                        "record {count} (key {}) is not found by its own lookup",
                        key()
                    ),
                ));
            }
            count += 1;
            offset = next;
        }
        if let Some(stats) = stats {
            stats
                .check()
                .map_err(|what| Error::corrupt("dictionary", what))?;
            let said = (stats.values, stats.decoded_bytes, stats.stored_bytes);
            let held = (seen.values, seen.decoded_bytes, seen.stored_bytes);
            if said != held {
                return Err(Error::corrupt(
                    "dictionary",
                    format!(
                        "stats say {} compressed values of {} bytes in {}, the records hold {} of {} in {}",
                        said.0, said.1, said.2, held.0, held.1, held.2
                    ),
                ));
            }
        }
        if count != self.len() {
            return Err(Error::corrupt(
                "records",
                format!(
                    "section holds {count} records, the header says {}",
                    self.len()
                ),
            ));
        }
        Ok(())
    }
}
