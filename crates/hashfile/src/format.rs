//! The byte layout of a store file, version 1. docs/FORMAT.md is the
//! specification; this module is its one implementation.

use crate::bits::{self, BlockLayout};
use crate::chd::Geometry;
use crate::error::{Error, Result};

/// First eight bytes of every store. The high byte and the CR LF catch files
/// mangled by 7-bit or newline-translating transfers, as PNG's magic does.
pub const MAGIC: [u8; 8] = *b"\x89HASHF\r\n";
/// Major version this library writes and reads. A reader rejects any other.
pub const VERSION_MAJOR: u16 = 1;
/// Minor version this library writes. Minor versions only add optional data.
pub const VERSION_MINOR: u16 = 0;
/// Size of the fixed part of the header, before the section table.
pub const FIXED_HEADER_LEN: usize = 128;
/// Size of one section-table entry.
pub const SECTION_ENTRY_LEN: usize = 32;
/// Required-feature bit 0: some records hold typed values (value kind 3,
/// encoded as `value.rs` and docs/FORMAT.md describe). A store of strings
/// only leaves it clear, so readers without typed values still open it.
pub const REQUIRED_TYPED_VALUES: u64 = 1;
/// Required-feature bit 1: keys are split into parts (`part_count` at byte
/// 120 of the header is 2 or more). A store of one part leaves it clear and
/// byte 120 zero, and reads as before.
pub const REQUIRED_PARTS: u64 = 2;
/// Required-feature bits this reader understands.
pub const KNOWN_REQUIRED_FLAGS: u64 = REQUIRED_TYPED_VALUES | REQUIRED_PARTS;

/// The sections of a version-1 file, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum SectionId {
    /// Cumulative bit widths of the seed blocks (`u32` each).
    SeedIndex = 1,
    /// Bucket pilots, bit-packed in blocks by the `bitpacking` crate.
    Seeds = 2,
    /// Final slot for each table slot at or past `n` (packed integers).
    Remap = 3,
    /// Record offset for each slot (packed integers).
    Slots = 4,
    /// Key-value records in input order.
    Records = 5,
}

impl SectionId {
    /// Every section a version-1 file has, in file order.
    pub const ALL: [SectionId; 5] = [SectionId::SeedIndex, SectionId::Seeds, SectionId::Remap, SectionId::Slots, SectionId::Records];

    /// The section's name in messages and in `info`.
    pub fn name(self) -> &'static str {
        match self {
            SectionId::SeedIndex => "seed_index",
            SectionId::Seeds => "seeds",
            SectionId::Remap => "remap",
            SectionId::Slots => "slots",
            SectionId::Records => "records",
        }
    }

    fn from_u32(id: u32) -> Option<SectionId> {
        SectionId::ALL.into_iter().find(|s| *s as u32 == id)
    }
}

/// Where a section lies and its checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    /// Byte offset from the start of the file.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// XXH3-64 (seed 0) of the section's bytes.
    pub checksum: u64,
}

/// The parameters a build was run with, kept for `info` and for rebuilding
/// the same file. Lookups do not need them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BuildParameters {
    /// Average keys per bucket (lambda).
    pub keys_per_bucket: f64,
    /// `n / slot_count` before remapping (alpha).
    pub load_factor: f64,
    /// Fraction of keys hashed to the dense buckets.
    pub dense_key_fraction: f64,
    /// Fraction of buckets that are dense.
    pub dense_bucket_fraction: f64,
}

/// The decoded header of a store.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// Major format version.
    pub major: u16,
    /// Minor format version.
    pub minor: u16,
    /// Total header length: fixed part, section table and checksum.
    pub header_len: u32,
    /// Feature bits a reader must understand to read the file.
    pub required_flags: u64,
    /// Length of the whole file.
    pub file_len: u64,
    /// The hash seed the keys were hashed with.
    pub hash_seed: u64,
    /// What a lookup needs to find a slot.
    pub geometry: Geometry,
    /// Values per seed block: 32, 128 or 256.
    pub seed_block_len: u32,
    /// Build parameters, informational.
    pub parameters: BuildParameters,
    /// The five sections, in `SectionId::ALL` order.
    pub sections: [Section; 5],
}

struct Cursor<'a>(&'a [u8], usize);

impl Cursor<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let out = self.0[self.1..self.1 + N].try_into().unwrap();
        self.1 += N;
        out
    }
    fn u16(&mut self) -> u16 { u16::from_le_bytes(self.take()) }
    fn u32(&mut self) -> u32 { u32::from_le_bytes(self.take()) }
    fn u64(&mut self) -> u64 { u64::from_le_bytes(self.take()) }
    fn f64(&mut self) -> f64 { f64::from_le_bytes(self.take()) }
}

impl Header {
    /// The section with this id.
    pub fn section(&self, id: SectionId) -> Section {
        self.sections[SectionId::ALL.iter().position(|s| *s == id).unwrap()]
    }

    /// Number of seed blocks.
    pub fn seed_block_count(&self) -> u64 {
        self.geometry.bucket_count.div_ceil(self.seed_block_len as u64)
    }

    /// Width in bits of a record offset in the slots section.
    pub fn offset_bits(&self) -> u32 {
        bits::bits_for(self.section(SectionId::Records).length.saturating_sub(1))
    }

    /// Width in bits of a remap entry.
    pub fn remap_bits(&self) -> u32 {
        bits::bits_for(self.geometry.entry_count.saturating_sub(1))
    }

    /// Length of the header this would encode to.
    pub fn encoded_len() -> usize {
        FIXED_HEADER_LEN + SectionId::ALL.len() * SECTION_ENTRY_LEN + 8
    }

    /// Encodes the header, with its checksum, as docs/FORMAT.md lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::encoded_len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.major.to_le_bytes());
        out.extend_from_slice(&self.minor.to_le_bytes());
        out.extend_from_slice(&self.header_len.to_le_bytes());
        let g = &self.geometry;
        for v in [self.required_flags, self.file_len, g.entry_count, self.hash_seed, g.bucket_count, g.dense_bucket_count, g.dense_hash_threshold, g.slot_count] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.seed_block_len.to_le_bytes());
        out.extend_from_slice(&(self.sections.len() as u32).to_le_bytes());
        let p = &self.parameters;
        for v in [p.keys_per_bucket, p.load_factor, p.dense_key_fraction, p.dense_bucket_fraction] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let parts = if self.required_flags & REQUIRED_PARTS != 0 { g.part_count } else { 0 };
        out.extend_from_slice(&parts.to_le_bytes());
        debug_assert_eq!(out.len(), FIXED_HEADER_LEN);
        for (id, s) in SectionId::ALL.iter().zip(&self.sections) {
            out.extend_from_slice(&(*id as u32).to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            for v in [s.offset, s.length, s.checksum] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        let checksum = xxhash_rust::xxh3::xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    /// Decodes and checks a header against the actual file length. Every
    /// check is O(1): nothing here grows with the number of keys.
    pub fn decode(bytes: &[u8], actual_len: u64) -> Result<Header> {
        if bytes.len() < 16 {
            return Err(Error::format(format!("file is {} bytes, too short for a header", bytes.len())));
        }
        if bytes[..8] != MAGIC {
            return Err(Error::format("bad magic: not a hashfile store"));
        }
        let mut c = Cursor(bytes, 8);
        let major = c.u16();
        let minor = c.u16();
        if major != VERSION_MAJOR {
            return Err(Error::format(format!("unsupported version {major} (this library reads version {VERSION_MAJOR})")));
        }
        let header_len = c.u32();
        if (header_len as usize) < FIXED_HEADER_LEN + 8 || header_len as usize > bytes.len() || (header_len as usize - FIXED_HEADER_LEN - 8) % SECTION_ENTRY_LEN != 0 {
            return Err(Error::format(format!("header length {header_len} is invalid for a file of {} bytes", bytes.len())));
        }
        let body = &bytes[..header_len as usize - 8];
        let stored = u64::from_le_bytes(bytes[header_len as usize - 8..header_len as usize].try_into().unwrap());
        let actual = xxhash_rust::xxh3::xxh3_64(body);
        if stored != actual {
            return Err(Error::Checksum { path: None, section: "header", expected: stored, actual });
        }
        let required_flags = c.u64();
        if required_flags & !KNOWN_REQUIRED_FLAGS != 0 {
            return Err(Error::format(format!("unsupported required features {:#x} (version {major}.{minor})", required_flags & !KNOWN_REQUIRED_FLAGS)));
        }
        let file_len = c.u64();
        let entry_count = c.u64();
        let hash_seed = c.u64();
        let mut geometry = Geometry { entry_count, bucket_count: c.u64(), dense_bucket_count: c.u64(), dense_hash_threshold: c.u64(), slot_count: c.u64(), part_count: 1 };
        let seed_block_len = c.u32();
        let section_count = c.u32();
        let parameters = BuildParameters { keys_per_bucket: c.f64(), load_factor: c.f64(), dense_key_fraction: c.f64(), dense_bucket_fraction: c.f64() };
        let parts = c.u64();
        if required_flags & REQUIRED_PARTS == 0 {
            if parts != 0 {
                return Err(Error::format(format!("part count {parts} is set but the partitioned-store flag is not")));
            }
        } else {
            geometry.part_count = parts;
        }

        if file_len != actual_len {
            return Err(Error::format(format!("file is {actual_len} bytes but its header says {file_len}: truncated or appended to")));
        }
        if section_count as usize != (header_len as usize - FIXED_HEADER_LEN - 8) / SECTION_ENTRY_LEN {
            return Err(Error::format(format!("section count {section_count} does not match header length {header_len}")));
        }
        let mut found: [Option<Section>; 5] = [None; 5];
        let mut c = Cursor(bytes, FIXED_HEADER_LEN);
        for _ in 0..section_count {
            let id = c.u32();
            let _flags = c.u32();
            let section = Section { offset: c.u64(), length: c.u64(), checksum: c.u64() };
            // Unknown ids are sections added by a later minor version: skip them.
            let Some(known) = SectionId::from_u32(id) else { continue };
            let name = known.name();
            let end = section.offset.checked_add(section.length);
            if section.offset < header_len as u64 || end.is_none_or(|end| end > file_len) {
                return Err(Error::format(format!("section {name} (offset {}, length {}) extends past end of file ({file_len} bytes)", section.offset, section.length)));
            }
            let slot = &mut found[SectionId::ALL.iter().position(|s| *s == known).unwrap()];
            if slot.is_some() {
                return Err(Error::format(format!("section {name} appears twice")));
            }
            *slot = Some(section);
        }
        let mut sections = [Section { offset: 0, length: 0, checksum: 0 }; 5];
        for (i, s) in found.iter().enumerate() {
            sections[i] = s.ok_or_else(|| Error::format(format!("section {} is missing", SectionId::ALL[i].name())))?;
        }
        let header = Header { major, minor, header_len, required_flags, file_len, hash_seed, geometry, seed_block_len, parameters, sections };
        header.check_geometry()?;
        Ok(header)
    }

    /// Checks that the counts agree with one another and with the section
    /// lengths, so that no lookup can index past a section.
    fn check_geometry(&self) -> Result<()> {
        let g = &self.geometry;
        let bad = |what: String| Err(Error::format(what));
        if BlockLayout::from_block_len(self.seed_block_len).is_none() {
            return bad(format!("seed block length {} is not 32, 128 or 256", self.seed_block_len));
        }
        let parts = g.part_count;
        if self.required_flags & REQUIRED_PARTS != 0 && (parts < 2 || parts > g.entry_count) {
            return bad(format!("part count {parts} is invalid for {} entries", g.entry_count));
        }
        if g.entry_count == 0 {
            if g.bucket_count != 0 || g.slot_count != 0 {
                return bad("an empty store must have no buckets and no slots".into());
            }
        } else {
            if g.bucket_count == 0 || g.bucket_count > g.entry_count || g.bucket_count % parts != 0 {
                return bad(format!("bucket count {} is invalid for {} entries in {parts} parts", g.bucket_count, g.entry_count));
            }
            if g.slot_count < g.entry_count || g.slot_count / 2 > g.entry_count || g.slot_count % parts != 0 {
                return bad(format!("slot count {} is invalid for {} entries in {parts} parts", g.slot_count, g.entry_count));
            }
            let per_part = g.buckets_per_part();
            if g.dense_bucket_count > per_part || (g.dense_bucket_count == 0) != (g.dense_hash_threshold == 0) || (g.dense_bucket_count == per_part && g.dense_hash_threshold != u64::MAX) {
                return bad(format!("dense bucket count {} and threshold {:#x} are inconsistent", g.dense_bucket_count, g.dense_hash_threshold));
            }
        }
        let records = self.section(SectionId::Records).length;
        // Each record is at least 3 bytes, so this also bounds entry_count.
        if records < g.entry_count.saturating_mul(3) {
            return bad(format!("section records is {records} bytes, too short for {} entries", g.entry_count));
        }
        if self.offset_bits() > bits::MAX_PACKED_BITS {
            return bad(format!("section records is {records} bytes, more than this format addresses"));
        }
        let expect = |id: SectionId, len: Option<u64>| -> Result<()> {
            let actual = self.section(id).length;
            match len {
                Some(len) if len == actual => Ok(()),
                _ => Err(Error::format(format!("section {} is {actual} bytes, expected {}", id.name(), len.map_or("an impossible size".into(), |l| l.to_string())))),
            }
        };
        expect(SectionId::SeedIndex, self.seed_block_count().checked_add(1).and_then(|b| b.checked_mul(4)))?;
        expect(SectionId::Remap, bits::packed_len(g.slot_count - g.entry_count, self.remap_bits()))?;
        expect(SectionId::Slots, bits::packed_len(g.entry_count, self.offset_bits()))?;
        // The seeds section's length is checked against the seed index's
        // last entry at open, which needs the file's bytes.
        Ok(())
    }
}

/// Appends `value` as an unsigned LEB128 varint.
pub fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads an unsigned LEB128 varint at `*pos`, advancing it. `None` if the
/// bytes end early or the varint is longer than 10 bytes or overflows.
#[inline]
pub fn read_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*pos)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        value |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

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
}

impl ValueKind {
    /// The kind for a tag, if this version knows it.
    pub fn from_tag(tag: u8) -> Option<ValueKind> {
        match tag {
            0 => Some(ValueKind::Binary),
            1 => Some(ValueKind::Utf8),
            2 => Some(ValueKind::Ascii),
            3 => Some(ValueKind::Typed),
            _ => None,
        }
    }
}

/// Bit 6 of a record's first byte: the key is UTF-8 text (else binary).
pub const RECORD_KEY_UTF8: u8 = 0x40;
/// Bit 7 of a record's first byte: reserved, must be 0 in version 1.
pub const RECORD_RESERVED: u8 = 0x80;
/// Mask of the value-kind tag in a record's first byte.
pub const RECORD_KIND_MASK: u8 = 0x3f;
