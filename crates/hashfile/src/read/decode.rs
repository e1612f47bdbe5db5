//! Records read from the source (or in place) and compressed values
//! decoded, within the reader's `max_value_size`.

use super::{corrupt, io_error, section_slice, Piece, Reader, RecordBuf, Source};
use crate::error::{Error, Result};
use crate::format::record::{self, Layout};
use crate::format::SectionId;

/// Bytes of a key an error about its record quotes (`DisplayBytes` shows
/// 200): a key longer than this is read only this far for the message.
const MESSAGE_KEY_LEN: usize = 200;

impl<S: Source> Reader<S> {
    /// The record at `offset` as the `index`-th (0-based) of an iteration
    /// from the start: `record_at`, checking the count against the header,
    /// so that a damaged records section (zeroed, say, which reads as a run
    /// of empty records) is an error rather than extra or missing entries.
    pub fn next_record(&self, offset: u64, index: u64) -> Result<Option<(RecordBuf<'_>, u64)>> {
        match self.record_at(offset)? {
            Some(_) if index >= self.entry_count => Err(corrupt(
                SectionId::Records,
                &format!(
                    "more records than the header's {} entries",
                    self.entry_count
                ),
            )),
            None if index < self.entry_count => Err(corrupt(
                SectionId::Records,
                &format!(
                    "the records end after {index} of the header's {} entries",
                    self.entry_count
                ),
            )),
            found => {
                if let Some((_, next)) = &found {
                    self.read_ahead_past(offset, *next);
                }
                Ok(found)
            }
        }
    }

    /// The record at byte `offset` of the records section and the offset of
    /// the next one, or `None` at the end of the section.
    ///
    /// The record's length is in its first bytes, so it is read as the
    /// source's prefix of everything up to the end of the section, and read
    /// again whole only if it runs past that prefix.
    #[inline]
    pub fn record_at(&self, offset: u64) -> Result<Option<(RecordBuf<'_>, u64)>> {
        if let Some(bytes) = self.source.as_slice() {
            if offset == self.records.length {
                return Ok(None);
            }
            let (layout, key, value) = self.record_in_place(bytes, offset)?;
            return Ok(Some((
                self.found(key, value, layout, offset)?,
                offset + layout.len as u64,
            )));
        }
        let Some((piece, layout)) = self.stored_record_at(offset)? else {
            return Ok(None);
        };
        let next = offset + layout.len as u64;
        let (key, value) = layout
            .split(&piece)
            .expect("the piece holds the record, checked by stored_record_at");
        if layout.compressed || layout.items {
            return Ok(Some((self.decoded(key, value, layout, offset)?, next)));
        }
        self.check_stored_len(key, value.len())?;
        Ok(Some((RecordBuf::new(piece, layout), next)))
    }

    /// The record at byte `offset` of the records as stored (a compressed
    /// value not decoded), read from the source, and its layout: `None`
    /// at the end of the records.
    pub(super) fn stored_record_at(&self, offset: u64) -> Result<Option<(Piece<'_>, Layout)>> {
        let records = &self.records;
        let Some(remaining) = records.length.checked_sub(offset) else {
            return Err(corrupt(
                SectionId::Records,
                "record offset past end of records",
            ));
        };
        if remaining == 0 {
            return Ok(None);
        }
        let at = records.offset + offset;
        let mut piece = self
            .source
            .read_at(at, usize::try_from(remaining).unwrap_or(usize::MAX))
            .map_err(io_error)?;
        let layout = match record::parse(&piece) {
            Ok(Some(layout)) => layout,
            Ok(None) if (piece.len() as u64) < remaining => {
                // The source stopped inside the record's header.
                piece = self
                    .source
                    .read_exact_at(at, remaining.min(record::MAX_HEADER_LEN as u64) as usize)
                    .map_err(io_error)?;
                whole_header(&piece)?
            }
            other => whole_header_of(other)?,
        };
        if layout.len as u64 > remaining {
            return Err(corrupt(
                SectionId::Records,
                "record extends past end of records",
            ));
        }
        if piece.len() < layout.len {
            // The record is read whole only within the limit: a value (or
            // a key) claiming more is refused before its bytes are asked
            // for, naming the key when the piece holds it.
            let value_len = layout.len - layout.value_start;
            let key_len = layout.value_start - layout.key_start;
            if value_len as u64 > self.max_value_size || key_len as u64 > self.max_value_size {
                let what = if key_len as u64 > self.max_value_size {
                    format!("has a key of {key_len} bytes")
                } else {
                    format!("is {value_len} bytes")
                };
                // The key, for the message: read on if the piece stops
                // inside it (up to what a message shows of it).
                let shown = key_len.min(MESSAGE_KEY_LEN);
                if let Some(key) = piece.get(layout.key_start..layout.key_start + shown) {
                    return Err(self.too_large(key, what));
                }
                let key = self
                    .source
                    .read_exact_at(at + layout.key_start as u64, shown)
                    .map_err(io_error)?;
                return Err(self.too_large(&key, what));
            }
            piece = self
                .source
                .read_exact_at(at, layout.len)
                .map_err(io_error)?;
        }
        Ok(Some((piece, layout)))
    }

    /// The record found in memory at records offset `offset`: borrowed as
    /// it is, or decoded if its value is compressed.
    #[inline(always)]
    pub(super) fn found<'b>(
        &'b self,
        key: &'b [u8],
        value: &'b [u8],
        layout: Layout,
        offset: u64,
    ) -> Result<RecordBuf<'b>> {
        if layout.compressed || layout.items {
            return self.decoded(key, value, layout, offset);
        }
        self.check_stored_len(key, value.len())?;
        Ok(RecordBuf::borrowed(key, value, layout))
    }

    /// The record at records offset `offset` of a compressed value, or of
    /// a typed value holding compressed items, decoded into a buffer of
    /// its own or one the store's cache keeps (a value of 1 to 64 KiB,
    /// `compress::Decoder::decode_value`). Damage is an
    /// error: a frame that does not decode, decodes to another length than
    /// it says, claims more than `compress::MAX_EXPANSION` times its
    /// length, or is in a store whose header has no compressed values (or
    /// items); an item that does not hold exactly one item.
    ///
    /// The value decoded is at most `max_value_size` bytes: a frame that
    /// says it holds more, or items that add up to more, are
    /// `Error::ValueTooLarge` naming the key, found before the buffer
    /// grows past the limit (a frame's own claim is not trusted: the
    /// decoder writes no more than it said). Buffers are allocated
    /// fallibly.
    #[cold]
    pub(super) fn decoded<'b>(
        &'b self,
        key: &[u8],
        value: &[u8],
        layout: Layout,
        offset: u64,
    ) -> Result<RecordBuf<'b>> {
        let decoder = self.decoder_for(layout)?;
        let max = self.max_value_size;
        let bytes = if layout.items {
            self.check_stored_len(key, value.len())?;
            let room =
                (value.len().saturating_mul(4)).min(usize::try_from(max).unwrap_or(usize::MAX));
            let mut bytes =
                crate::error::try_buffer(room.saturating_add(key.len()), "a decoded value")?;
            let over = || self.too_large(key, "decodes to more".into());
            let limit = crate::value::frames::Limit {
                max: usize::try_from(max).unwrap_or(usize::MAX),
                over: &over,
            };
            crate::value::frames::expand_within(
                value,
                &|frame| decode_frame(decoder, frame, max).map_err(|e| self.decode_error(key, e)),
                &mut bytes,
                &limit,
            )?;
            bytes
                .try_reserve_exact(key.len())
                .map_err(|_| crate::error::out_of_memory(bytes.len() as u64, "a decoded value"))?;
            bytes.extend_from_slice(key);
            bytes
        } else {
            let value_at = self.records.offset + offset + layout.value_start as u64;
            match decoder
                .decode_value(value_at, value, key, max)
                .map_err(|e| self.decode_error(key, e))?
            {
                crate::compress::DecodedValue::Owned(bytes) => bytes,
                crate::compress::DecodedValue::Kept(kept) => {
                    return Ok(RecordBuf::from_kept(kept, key.len(), layout))
                }
            }
        };
        Ok(RecordBuf::from_decoded(bytes, key.len(), layout))
    }

    /// A decoder's error for the value of `key` as the reader's.
    #[cold]
    pub(super) fn decode_error(&self, key: &[u8], error: crate::compress::DecodeError) -> Error {
        use crate::compress::DecodeError;
        match error {
            DecodeError::Damaged(what) => corrupt(SectionId::Records, &what),
            DecodeError::TooLarge(size) => self.too_large(key, format!("decodes to {size} bytes")),
            DecodeError::OutOfMemory(size) => crate::error::out_of_memory(size, "a decoded value"),
        }
    }

    /// The decoder of a record compressed as `layout` says, once the
    /// header is found to allow it.
    pub(super) fn decoder_for(&self, layout: Layout) -> Result<&crate::compress::Decoder> {
        // A store rewritten in place under a map (not replaced by rename)
        // shows its new frames, which the dictionary parsed from the old
        // one would decode to other values, with no error: such frames
        // are refused as the SIGBUS of a truncated map is. The header
        // ends with its checksum, so 8 bytes tell.
        let end = self.header.header_len as usize;
        let same = if let Some(bytes) = self.source.as_slice() {
            bytes.get(end - 8..end) == Some(&self.header_checksum[..])
        } else if self.source.rereads_cheaply() {
            let now = self
                .source
                .read_exact_at(end as u64 - 8, 8)
                .map_err(io_error)?;
            *now == self.header_checksum[..]
        } else {
            true // a remote store: its ETag tells (`hashfile-remote`)
        };
        if !same {
            return Err(Error::Changed { path: None });
        }
        if !self.header.has_compressed_values() {
            return Err(corrupt(
                SectionId::Records,
                "a record is compressed, but the header does not say the store has compressed values",
            ));
        }
        if layout.items && !self.header.has_compressed_items() {
            return Err(corrupt(
                SectionId::Records,
                "a record holds compressed items, but the header does not say the store has them",
            ));
        }
        self.decoder()
    }

    /// The decoder of the store's compressed values, made from the
    /// dictionary section (its length was checked at open) by the first
    /// lookup that needs it. A failure is not kept: a remote read that
    /// failed is tried again by the next lookup.
    pub(super) fn decoder(&self) -> Result<&crate::compress::Decoder> {
        use crate::compress::{Decoder, STATS_LEN};
        if let Some(decoder) = self.decoder.get() {
            return Ok(decoder);
        }
        // The whole section, checked against its checksum (at most 32
        // bytes and 1 MiB, once an open): frames decoded with a damaged
        // dictionary decode to other bytes with no error from zstd.
        let section = self.header.section(SectionId::Dictionary);
        let bytes = self
            .source
            .read_exact_at(section.offset, section.length as usize)
            .map_err(io_error)?;
        let actual = xxhash_rust::xxh3::xxh3_64(&bytes);
        if actual != section.checksum {
            return Err(Error::Checksum {
                path: None,
                section: SectionId::Dictionary.name(),
                expected: section.checksum,
                actual,
            });
        }
        let decoder = Decoder::new(&bytes[STATS_LEN..])
            .map_err(|what| corrupt(SectionId::Dictionary, &what))?;
        // Two threads may both make one; the first kept is the one used.
        Ok(self.decoder.get_or_init(|| decoder))
    }

    /// What the cache of decoded items and values holds and has done
    /// (`compress::Decoder::decode_item`, `decode_value`): `None` for a
    /// store without compressed values, zeros before the first lookup
    /// of one.
    pub fn item_cache_stats(&self) -> Option<crate::compress::ItemCacheStats> {
        if !self.header.has_compressed_values() {
            return None;
        }
        Some(
            self.decoder
                .get()
                .map(|d| d.item_cache_stats())
                .unwrap_or_default(),
        )
    }

    /// What the dictionary section says of the compressed values, and the
    /// dictionary's length (`None` for a store built without
    /// compression): read from the source.
    pub fn compression_stats(&self) -> Result<Option<crate::compress::Summary>> {
        use crate::compress::{Stats, Summary, STATS_LEN};
        if !self.header.has_dictionary() {
            return Ok(None);
        }
        let section = self.header.section(SectionId::Dictionary);
        let bytes = self
            .source
            .read_exact_at(section.offset, STATS_LEN)
            .map_err(io_error)?;
        Ok(Some(Summary {
            stats: Stats::decode(&bytes),
            dictionary_bytes: section.length - STATS_LEN as u64,
        }))
    }

    /// The layout, key and value of the record at byte `offset` of the
    /// records of a store held in memory.
    #[inline(always)]
    pub(super) fn record_in_place<'b>(
        &self,
        bytes: &'b [u8],
        offset: u64,
    ) -> Result<(Layout, &'b [u8], &'b [u8])> {
        let Some(rest) = section_slice(bytes, &self.records)
            .and_then(|records| records.get(usize::try_from(offset).ok()?..))
        else {
            return Err(corrupt(
                SectionId::Records,
                "record offset past end of records",
            ));
        };
        let layout = whole_header(rest)?;
        match layout.split(rest) {
            Some((key, value)) => Ok((layout, key, value)),
            None => Err(corrupt(
                SectionId::Records,
                "record extends past end of records",
            )),
        }
    }
}

/// One compressed item's frame decoded with the store's decoder, for a
/// whole value's expansion, which keeps none of them (a walk's items are
/// kept: `Decoder::decode_item`).
fn decode_frame(
    decoder: &crate::compress::Decoder,
    frame: &[u8],
    max: u64,
) -> std::result::Result<Vec<u8>, crate::compress::DecodeError> {
    decoder.decode(frame, b"", max)
}

/// The layout of the record whose header `bytes` start with: a header cut
/// short by the records section's end, or damaged, is a corrupt store.
fn whole_header(bytes: &[u8]) -> Result<Layout> {
    whole_header_of(record::parse(bytes))
}

fn whole_header_of(parsed: std::result::Result<Option<Layout>, record::Damage>) -> Result<Layout> {
    match parsed {
        Ok(Some(layout)) => Ok(layout),
        Ok(None) => Err(corrupt(
            SectionId::Records,
            "record header runs past end of records",
        )),
        Err(damage) => Err(corrupt(SectionId::Records, &damage.to_string())),
    }
}
