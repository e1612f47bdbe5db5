//! Records: the one place their layout is written and parsed
//! (docs/FORMAT.md, "Records").
//!
//! ```text
//! record := flags:u8  key_len:varint  value_len:varint  key:bytes  value:bytes
//! ```

use std::fmt;

use super::varint::{read_varint, varint_len, write_varint, MAX_VARINT_LEN};
use super::ValueKind;

/// Bit 6 of a record's first byte: the key is UTF-8 text (else binary).
pub const KEY_UTF8: u8 = 0x40;
/// Bit 7 of a record's first byte: the value is compressed (a zstd frame,
/// `crate::compress`); only in a store with the compressed-values flag.
pub const COMPRESSED: u8 = 0x80;
/// Bit 5 of a record's first byte: the value is a typed value holding
/// compressed items (`crate::value::frames`), decoded with the store's
/// dictionary; only in a store with the compressed-items flag, and never
/// with bit 7.
pub const COMPRESSED_ITEMS: u8 = 0x20;
/// Mask of the value-kind tag in a record's first byte.
pub const KIND_MASK: u8 = 0x1f;
/// Longest a record's header (flags and the two lengths) can be.
pub const MAX_HEADER_LEN: usize = 1 + 2 * MAX_VARINT_LEN;
/// Shortest a record can be: flags and two one-byte lengths.
pub const MIN_RECORD_LEN: u64 = 3;

/// One key-value record, borrowed from wherever its bytes are: a store, a
/// builder's buffer, an importer's parse. Importers emit it, builders take
/// it, readers hand it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The key's bytes.
    pub key: &'a [u8],
    /// True if the key is UTF-8 text (else binary).
    pub key_utf8: bool,
    /// The value's bytes: the string itself for the string kinds, one
    /// encoded value for [`ValueKind::Typed`].
    pub value: &'a [u8],
    /// The value's kind.
    pub kind: ValueKind,
}

/// A record as `write` stores it, flagged when its value is compressed:
/// its `value` is then the frame (bit 7), or a typed value holding
/// compressed items (bit 5), and `kind` the decoded value's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stored<'a> {
    /// The record, its value as stored.
    pub record: Record<'a>,
    /// True if `record.value` is a compressed frame.
    pub compressed: bool,
    /// True if `record.value` is a typed value holding compressed items.
    pub items: bool,
}

impl Stored<'_> {
    /// Appends the record with its compression flags.
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        let start = out.len();
        self.record.write(out);
        if self.compressed {
            out[start] |= COMPRESSED;
        }
        if self.items {
            out[start] |= COMPRESSED_ITEMS;
        }
    }
}

impl<'a> Record<'a> {
    /// A record with a binary key and a binary value.
    pub fn binary(key: &'a [u8], value: &'a [u8]) -> Record<'a> {
        Record {
            key,
            key_utf8: false,
            value,
            kind: ValueKind::Binary,
        }
    }

    /// A record with a UTF-8 key and a UTF-8 string value.
    pub fn text(key: &'a str, value: &'a str) -> Record<'a> {
        Record {
            key: key.as_bytes(),
            key_utf8: true,
            value: value.as_bytes(),
            kind: ValueKind::Utf8,
        }
    }

    /// Bytes `write` appends.
    pub fn encoded_len(&self) -> usize {
        1 + varint_len(self.key.len() as u64)
            + varint_len(self.value.len() as u64)
            + self.key.len()
            + self.value.len()
    }

    /// Appends the record as docs/FORMAT.md lays it out.
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(self.kind as u8 | if self.key_utf8 { KEY_UTF8 } else { 0 });
        write_varint(out, self.key.len() as u64);
        write_varint(out, self.value.len() as u64);
        out.extend_from_slice(self.key);
        out.extend_from_slice(self.value);
    }
}

/// Where a record's parts lie, relative to its first byte, as its header
/// says: `key_start <= value_start <= len`. Lengths are as stored: a reader
/// checks `len` against the bytes there are before it slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The value's kind.
    pub kind: ValueKind,
    /// True if the key is UTF-8 text.
    pub key_utf8: bool,
    /// True if the value is compressed (flag bit 7): the bytes at
    /// `value_start` are a zstd frame, decoded with the store's dictionary.
    pub compressed: bool,
    /// True if the value is a typed value holding compressed items (flag
    /// bit 5, `crate::value::frames`).
    pub items: bool,
    /// Where the key starts (the header's length).
    pub key_start: usize,
    /// Where the value starts.
    pub value_start: usize,
    /// The record's length.
    pub len: usize,
}

impl Layout {
    /// The record in `bytes`, which must hold at least `len` bytes (else
    /// `None`).
    #[inline]
    pub fn record<'a>(&self, bytes: &'a [u8]) -> Option<Record<'a>> {
        let (key, value) = self.split(bytes)?;
        Some(Record {
            key,
            key_utf8: self.key_utf8,
            value,
            kind: self.kind,
        })
    }

    /// The key and the value in `bytes`, which must hold at least `len`
    /// bytes (else `None`).
    #[inline(always)]
    pub fn split<'a>(&self, bytes: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        let record = bytes.get(..self.len)?;
        Some((
            record.get(self.key_start..self.value_start)?,
            record.get(self.value_start..)?,
        ))
    }
}

/// What makes a record's header unreadable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// The value kind is not one this version knows.
    UnknownKind(u8),
    /// A length is not a valid varint, or the lengths overflow.
    BadLength,
    /// The compressed-items flag on a value compressed whole or not typed.
    BadFlags(u8),
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::UnknownKind(tag) => write!(f, "unknown value type {tag}"),
            Damage::BadLength => f.write_str("bad record length"),
            Damage::BadFlags(flags) => write!(
                f,
                "record flags {flags:#04x}: compressed items in a value that is compressed whole or not typed, or a tombstone compressed or with a value"
            ),
        }
    }
}

/// Parses the header of the record that starts `bytes`. `Ok(None)` if the
/// bytes end before the header does (a reader that holds only a prefix of
/// the record reads on); an error if the header is damaged.
#[inline]
pub fn parse(bytes: &[u8]) -> Result<Option<Layout>, Damage> {
    let Some(&flags) = bytes.first() else {
        return Ok(None);
    };
    // Kinds are 0..=4. Whether the store allows a compressed value or a
    // tombstone is the reader's to check.
    let kind = match flags & KIND_MASK {
        0 => ValueKind::Binary,
        1 => ValueKind::Utf8,
        2 => ValueKind::Ascii,
        3 => ValueKind::Typed,
        4 => ValueKind::Tombstone,
        tag => return Err(Damage::UnknownKind(tag)),
    };
    let items = flags & COMPRESSED_ITEMS != 0;
    if items && (flags & COMPRESSED != 0 || kind != ValueKind::Typed) {
        return Err(Damage::BadFlags(flags));
    }
    if kind == ValueKind::Tombstone && flags & COMPRESSED != 0 {
        return Err(Damage::BadFlags(flags));
    }
    let mut pos = 1;
    let (Some(key_len), Some(value_len)) =
        (read_varint(bytes, &mut pos), read_varint(bytes, &mut pos))
    else {
        // Short bytes may yet hold a good header; a full one does not.
        return if bytes.len() < MAX_HEADER_LEN {
            Ok(None)
        } else {
            Err(Damage::BadLength)
        };
    };
    // Computed in usize, so that the compiler, too, sees the parts in order.
    let value_start = usize::try_from(key_len)
        .ok()
        .and_then(|key_len| pos.checked_add(key_len))
        .ok_or(Damage::BadLength)?;
    let len = usize::try_from(value_len)
        .ok()
        .and_then(|value_len| value_start.checked_add(value_len))
        .ok_or(Damage::BadLength)?;
    if kind == ValueKind::Tombstone && len != value_start {
        return Err(Damage::BadFlags(flags));
    }
    Ok(Some(Layout {
        kind,
        key_utf8: flags & KEY_UTF8 != 0,
        compressed: flags & COMPRESSED != 0,
        items,
        key_start: pos,
        value_start,
        len,
    }))
}

/// The key of the record at the start of `bytes`, a record this library
/// wrote (a builder's own): its flags are not checked. `None` if the bytes
/// end early.
#[inline]
pub fn key_of(bytes: &[u8]) -> Option<&[u8]> {
    let mut pos = 1;
    let key_len = usize::try_from(read_varint(bytes, &mut pos)?).ok()?;
    read_varint(bytes, &mut pos)?;
    bytes.get(pos..pos.checked_add(key_len)?)
}

/// The whole record at the start of `bytes`, which hold all of it (a
/// builder's own records): `None` if they do not.
#[inline]
pub fn read(bytes: &[u8]) -> Option<Record<'_>> {
    parse(bytes).ok().flatten()?.record(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_records_parse_back() {
        let long = vec![7u8; 300];
        for record in [
            Record::text("k", "v"),
            Record::binary(b"", b""),
            Record {
                key: b"\xff",
                key_utf8: false,
                value: &long,
                kind: ValueKind::Typed,
            },
        ] {
            let mut out = Vec::new();
            record.write(&mut out);
            assert_eq!(out.len(), record.encoded_len());
            assert_eq!(read(&out), Some(record));
            assert_eq!(key_of(&out), Some(record.key));
            // Every prefix shorter than the header asks for more; a prefix
            // past the header parses but does not hold the record.
            for cut in 0..out.len() {
                match parse(&out[..cut]) {
                    Ok(None) => {}
                    Ok(Some(layout)) => assert!(layout.record(&out[..cut]).is_none()),
                    Err(e) => panic!("cut {cut}: {e}"),
                }
            }
        }
    }

    #[test]
    fn damaged_headers_are_named() {
        assert!(parse(&[0x80, 0, 0]).unwrap().unwrap().compressed);
        assert!(parse(&[0x23, 0, 0]).unwrap().unwrap().items);
        assert_eq!(parse(&[0x05, 0, 0]), Err(Damage::UnknownKind(5)));
        assert_eq!(parse(&[0x10, 0, 0]), Err(Damage::UnknownKind(0x10)));
        // Compressed items in a string, or in a value compressed whole.
        assert_eq!(parse(&[0x21, 0, 0]), Err(Damage::BadFlags(0x21)));
        assert_eq!(parse(&[0xa3, 0, 0]), Err(Damage::BadFlags(0xa3)));
        assert_eq!(
            parse(
                &[0x01; 1]
                    .iter()
                    .chain(&[0xff; 30])
                    .copied()
                    .collect::<Vec<_>>()
            ),
            Err(Damage::BadLength)
        );
    }
}
