//! The byte layout of a store file, version 1. docs/FORMAT.md is the
//! specification; this folder is its one implementation: the header and
//! section table (`header`), the records (`record`), varints (`varint`).
//! Packed integers and seed blocks are in `crate::bits`, the hash function
//! and slot arithmetic in `crate::chd`.

mod header;
pub mod record;
pub mod varint;

pub use header::{BuildParameters, Geometry, Header, IndexKind, PartEntry, Section, SectionId};
pub use record::Record;

/// First eight bytes of every store. The high byte and the CR LF catch files
/// mangled by 7-bit or newline-translating transfers, as PNG's magic does.
pub const MAGIC: [u8; 8] = *b"\x89HASHF\r\n";
/// Major version this library writes and reads. A reader rejects any other.
pub const VERSION_MAJOR: u16 = 1;
/// Minor version this library writes. Minor versions only add optional data.
pub const VERSION_MINOR: u16 = 0;
/// Minor version of a store with a fingerprints section (1.1): a 1.0
/// reader skips the section and reads the store as before.
pub const VERSION_MINOR_FINGERPRINTS: u16 = 1;
/// Size of the fixed part of the header, before the section table.
pub const FIXED_HEADER_LEN: usize = 128;
/// Size of one section-table entry.
pub const SECTION_ENTRY_LEN: usize = 32;
/// Bytes at the start of a store that give its header's length: magic,
/// versions and `header_len`.
pub const HEADER_PREFIX_LEN: usize = 16;
/// Required-feature bit 0: some records hold typed values (value kind 3,
/// encoded as `crate::value` and docs/FORMAT.md describe). A store of
/// strings only leaves it clear, so readers without typed values still
/// open it.
pub const REQUIRED_TYPED_VALUES: u64 = 1;
/// Required-feature bit 1: keys are split into parts (`part_count` at byte
/// 120 of the header is 2 or more). A store of one part leaves it clear and
/// byte 120 zero, and reads as before.
pub const REQUIRED_PARTS: u64 = 2;
/// Required-feature bit 2: the compact index (docs/FORMAT.md, "The
/// compact index"): one byte per bucket in a pilots section, a parts table
/// and per-part remaps, in place of the seed index and the seed blocks.
pub const REQUIRED_COMPACT_INDEX: u64 = 4;
/// Required-feature bit 3: some records hold compressed values (record
/// flag bit 7; docs/FORMAT.md, "Compressed values"), decoded with the
/// dictionary section's dictionary. Set exactly when a record is
/// compressed, so a build asked to compress values none of which got
/// smaller stays readable by readers without compression.
pub const REQUIRED_COMPRESSED_VALUES: u64 = 8;
/// Required-feature bit 4: some typed values hold compressed items (record
/// flag bit 5; docs/FORMAT.md, "Compressed items"), decoded with the
/// dictionary section's dictionary. Set exactly when a record does, and
/// always with bit 3.
pub const REQUIRED_COMPRESSED_ITEMS: u64 = 16;
/// Required-feature bit 5: some records are tombstones (value kind 4):
/// a dataset's overlay marks a deleted key with one (docs/FORMAT.md,
/// "Delta generations"). Set exactly when a record is one, so that a
/// reader that would take a tombstone for an empty value refuses the store.
pub const REQUIRED_TOMBSTONES: u64 = 32;
/// Required-feature bits this reader understands.
pub const KNOWN_REQUIRED_FLAGS: u64 = REQUIRED_TYPED_VALUES
    | REQUIRED_PARTS
    | REQUIRED_COMPACT_INDEX
    | REQUIRED_COMPRESSED_VALUES
    | REQUIRED_COMPRESSED_ITEMS
    | REQUIRED_TOMBSTONES;
/// Bytes of one entry of the compact index's parts table.
pub const PART_ENTRY_LEN: usize = 32;

/// The type tag of a stored value (low 6 bits of a record's first byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[non_exhaustive]
pub enum ValueKind {
    /// A byte string with no encoding (Ruby's ASCII-8BIT).
    Binary = 0,
    /// A UTF-8 string.
    Utf8 = 1,
    /// A US-ASCII string.
    Ascii = 2,
    /// A typed value in the value codec (`crate::value`): anything that is
    /// not a string in one of the three encodings above.
    Typed = 3,
    /// A deleted key, in a dataset's overlay: the value is empty, and a
    /// reader of the dataset answers "absent" for the key (requires
    /// `REQUIRED_TOMBSTONES`).
    Tombstone = 4,
}

impl ValueKind {
    /// The kind for a tag, if this version knows it.
    #[inline]
    pub fn from_tag(tag: u8) -> Option<ValueKind> {
        match tag {
            0 => Some(ValueKind::Binary),
            1 => Some(ValueKind::Utf8),
            2 => Some(ValueKind::Ascii),
            3 => Some(ValueKind::Typed),
            4 => Some(ValueKind::Tombstone),
            _ => None,
        }
    }
}
