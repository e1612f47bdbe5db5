//! `Reader::dig_with`: a walk along a path into a key's value, decoding
//! only the compressed items the path needs.

use super::{corrupt, Reader, Source};
use crate::error::Result;
use crate::format::{Record, SectionId, ValueKind};

impl<S: Source> Reader<S> {
    /// `dig(key, *path)`: walks `path` into the value of `key` and calls
    /// `answer` with the record and where the walk ended (`None` for a
    /// value that is not typed: there is no path to walk in a string).
    /// `Ok(None)` if the key is absent. In a value holding compressed items
    /// (`value::frames`) only the frames the path needs are decoded; any
    /// other value is read as `get` reads it, then walked
    /// (`value::dig`). The record `answer` sees is as stored: its value is
    /// not to be decoded without the walk.
    pub fn dig_with<R>(
        &self,
        key: &[u8],
        path: &[crate::value::Probe<'_>],
        symbolize_names: bool,
        answer: impl FnOnce(&Record<'_>, Option<crate::value::Dig<'_>>) -> R,
    ) -> Result<Option<R>> {
        let Some(offset) = self.offset_of(key)? else {
            return Ok(None);
        };
        // The record as stored: in place, or read from the source.
        let piece;
        let (layout, found, value) = match self.source.as_slice() {
            Some(bytes) => self.record_in_place(bytes, offset)?,
            None => {
                let Some((read, layout)) = self.stored_record_at(offset)? else {
                    return Err(corrupt(
                        SectionId::Records,
                        "record offset past end of records",
                    ));
                };
                piece = read;
                let (key, value) = layout
                    .split(&piece)
                    .expect("the piece holds the record, checked by stored_record_at");
                (layout, key, value)
            }
        };
        if found != key {
            return Ok(None);
        }
        if !layout.items {
            let found = self.found(found, value, layout, offset)?;
            return dig_record(&found.record(), path, symbolize_names, answer).map(Some);
        }
        // A value holding compressed items: `value::frames` walks its raw
        // levels in place and decodes only the frames the path needs, each
        // kept in the decoder's cache by its offset in the file.
        let decoder = self.decoder_for(layout)?;
        let value_at = self.records.offset + offset + layout.value_start as u64;
        let mut scratch = None;
        let over = || self.too_large(found, "decodes to more".into());
        let limit = crate::value::frames::Limit {
            max: usize::try_from(self.max_value_size).unwrap_or(usize::MAX),
            over: &over,
        };
        let walked = crate::value::frames::dig_in_within(
            value,
            path,
            symbolize_names,
            &|frame| {
                // Frames lie in `value`, which gives the frame's place in
                // the file. One elsewhere is in an item decoded from a
                // frame: damage, refused before it is decoded or kept.
                let within = (frame.as_ptr() as usize)
                    .checked_sub(value.as_ptr() as usize)
                    .filter(|within| within + frame.len() <= value.len())
                    .ok_or_else(|| {
                        corrupt(SectionId::Records, "a compressed item inside another")
                    })?;
                decoder
                    .decode_item(value_at + within as u64, frame, self.max_value_size)
                    .map_err(|e| self.decode_error(found, e))
            },
            &mut scratch,
            &limit,
        )?;
        let record = Record {
            key: found,
            key_utf8: layout.key_utf8,
            value,
            kind: layout.kind,
        };
        Ok(Some(answer(&record, Some(walked))))
    }
}

/// `Reader::dig_with` on a record read whole (a remote record, say): its
/// value walked in place.
pub fn dig_record<R>(
    record: &Record<'_>,
    path: &[crate::value::Probe<'_>],
    symbolize_names: bool,
    answer: impl FnOnce(&Record<'_>, Option<crate::value::Dig<'_>>) -> R,
) -> Result<R> {
    if record.kind != ValueKind::Typed {
        return Ok(answer(record, None));
    }
    let walked = crate::value::dig(record.value, path, symbolize_names)?;
    Ok(answer(record, Some(walked)))
}
