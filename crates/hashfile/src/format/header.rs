//! The header: fixed fields, the section table and the header checksum
//! (docs/FORMAT.md, "Header").

use super::{
    FIXED_HEADER_LEN, HEADER_PREFIX_LEN, KNOWN_REQUIRED_FLAGS, MAGIC, PART_ENTRY_LEN,
    REQUIRED_COMPACT_INDEX, REQUIRED_COMPRESSED_ITEMS, REQUIRED_COMPRESSED_VALUES, REQUIRED_PARTS,
    SECTION_ENTRY_LEN, VERSION_MAJOR,
};
use crate::bits::{self, BlockLayout};
use crate::error::{Error, Result};

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
    /// The compact index's pilots: one byte per bucket.
    Pilots = 6,
    /// The compact index's parts table: `PART_ENTRY_LEN` bytes per part.
    Parts = 7,
    /// The compressed values' stats and zstd dictionary
    /// (`crate::compress`): in a store built with compression.
    Dictionary = 8,
    /// A 16-bit fingerprint of the key in each slot (`chd::fingerprint`),
    /// so that a key the store does not hold is answered from the index
    /// alone: in a dataset's overlays (docs/FORMAT.md, "Fingerprints").
    Fingerprints = 9,
}

impl SectionId {
    /// Every section id this version knows (the order of
    /// `Header::sections`).
    pub const ALL: [SectionId; 9] = [
        SectionId::SeedIndex,
        SectionId::Seeds,
        SectionId::Remap,
        SectionId::Slots,
        SectionId::Records,
        SectionId::Pilots,
        SectionId::Parts,
        SectionId::Dictionary,
        SectionId::Fingerprints,
    ];

    /// The sections of a store with the classic index, in section-table
    /// order.
    pub const CLASSIC: [SectionId; 5] = [
        SectionId::SeedIndex,
        SectionId::Seeds,
        SectionId::Remap,
        SectionId::Slots,
        SectionId::Records,
    ];

    /// The sections of a store with the compact index, in section-table
    /// order.
    pub const COMPACT: [SectionId; 5] = [
        SectionId::Pilots,
        SectionId::Parts,
        SectionId::Remap,
        SectionId::Slots,
        SectionId::Records,
    ];

    /// `CLASSIC` and the dictionary: a store built with compression.
    pub const CLASSIC_COMPRESSED: [SectionId; 6] = [
        SectionId::SeedIndex,
        SectionId::Seeds,
        SectionId::Remap,
        SectionId::Slots,
        SectionId::Records,
        SectionId::Dictionary,
    ];

    /// `COMPACT` and the dictionary.
    pub const COMPACT_COMPRESSED: [SectionId; 6] = [
        SectionId::Pilots,
        SectionId::Parts,
        SectionId::Remap,
        SectionId::Slots,
        SectionId::Records,
        SectionId::Dictionary,
    ];

    /// The sections of a store, in section-table order, by its index
    /// layout and whether it has a dictionary section (the fingerprints
    /// section, when there is one, comes last: `Header::present_sections`).
    pub fn of_store(compact: bool, dictionary: bool) -> &'static [SectionId] {
        match (compact, dictionary) {
            (false, false) => &SectionId::CLASSIC,
            (true, false) => &SectionId::COMPACT,
            (false, true) => &SectionId::CLASSIC_COMPRESSED,
            (true, true) => &SectionId::COMPACT_COMPRESSED,
        }
    }

    /// The section's name in messages and in `info`.
    pub fn name(self) -> &'static str {
        match self {
            SectionId::SeedIndex => "seed_index",
            SectionId::Seeds => "seeds",
            SectionId::Remap => "remap",
            SectionId::Slots => "slots",
            SectionId::Records => "records",
            SectionId::Pilots => "pilots",
            SectionId::Parts => "parts",
            SectionId::Dictionary => "dictionary",
            SectionId::Fingerprints => "fingerprints",
        }
    }

    /// The section's place in `SectionId::ALL` and `Header::sections`.
    #[inline]
    pub fn index(self) -> usize {
        self as usize - 1
    }

    fn from_u32(id: u32) -> Option<SectionId> {
        SectionId::ALL.into_iter().find(|s| *s as u32 == id)
    }
}

/// Where a section lies and its checksum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    /// Byte offset from the start of the file.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// XXH3-64 (seed 0) of the section's bytes.
    pub checksum: u64,
}

impl Section {
    /// The offset just past the section.
    pub fn end(&self) -> u64 {
        self.offset + self.length
    }
}

/// One part of the compact index, as its parts table stores it (32 bytes,
/// little-endian, in this order; docs/FORMAT.md, "The compact index").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartEntry {
    /// Keys in the parts before this one: its keys' final slots start here.
    pub first_key: u64,
    /// Bit offset in the remap section where this part's remap starts.
    pub remap_bit: u64,
    /// Keys in this part.
    pub keys: u32,
    /// Slots of this part (at least `keys`).
    pub slots: u32,
}

impl PartEntry {
    /// The entry in its 32 bytes (the last 8 are zero).
    pub fn encode(&self) -> [u8; PART_ENTRY_LEN] {
        let mut out = [0u8; PART_ENTRY_LEN];
        out[..8].copy_from_slice(&self.first_key.to_le_bytes());
        out[8..16].copy_from_slice(&self.remap_bit.to_le_bytes());
        out[16..20].copy_from_slice(&self.keys.to_le_bytes());
        out[20..24].copy_from_slice(&self.slots.to_le_bytes());
        out
    }

    /// The entry in `bytes` (at least 24 of them; the reserved 8 are
    /// checked by `verify`, not here).
    #[inline(always)]
    pub fn decode(bytes: &[u8]) -> PartEntry {
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        PartEntry {
            first_key: u64_at(0),
            remap_bit: u64_at(8),
            keys: u32_at(16),
            slots: u32_at(20),
        }
    }

    /// Width of this part's remap entries.
    #[inline(always)]
    pub fn remap_bits(&self) -> u32 {
        crate::bits::bits_for((self.keys as u64).saturating_sub(1))
    }
}

/// The numbers a lookup needs to find a slot, as the header stores them.
/// `crate::chd` derives them for a build and turns them into a bucket map.
///
/// Keys split by hash into `part_count` parts of equal geometry: each part
/// has `bucket_count / part_count` buckets and `slot_count / part_count`
/// slots, and its buckets place keys only in its own slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Number of keys, `n`.
    pub entry_count: u64,
    /// Number of buckets, `r`, over all parts.
    pub bucket_count: u64,
    /// In each part, buckets `0..dense_bucket_count` take the hashes below
    /// `dense_hash_threshold`.
    pub dense_bucket_count: u64,
    /// See `dense_bucket_count`.
    pub dense_hash_threshold: u64,
    /// Table size before remapping, `m >= n`, over all parts.
    pub slot_count: u64,
    /// Number of parts, at least 1.
    pub part_count: u64,
}

impl Geometry {
    /// Buckets in each part.
    pub fn buckets_per_part(&self) -> u64 {
        self.bucket_count / self.part_count.max(1)
    }

    /// Slots in each part.
    pub fn slots_per_part(&self) -> u64 {
        self.slot_count / self.part_count.max(1)
    }
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
    /// Values per seed block: 32, 128 or 256; 0 with the compact index.
    pub seed_block_len: u32,
    /// Build parameters, informational.
    pub parameters: BuildParameters,
    /// Every section, in `SectionId::ALL` order; those of the other index
    /// layout, and the dictionary of a store built without compression,
    /// are absent (all zero).
    pub sections: [Section; 9],
}

/// Reads little-endian fields in file order from bytes known to be long
/// enough.
struct Fields<'a>(&'a [u8], usize);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let out = self.0[self.1..self.1 + N]
            .try_into()
            .expect("the caller checked the length");
        self.1 += N;
        out
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
}

fn corrupt(what: String) -> Error {
    Error::corrupt("header", what)
}

impl Header {
    /// The section with this id.
    #[inline]
    pub fn section(&self, id: SectionId) -> Section {
        self.sections[id.index()]
    }

    /// Whether the store has the compact index.
    #[inline]
    pub fn is_compact(&self) -> bool {
        self.required_flags & REQUIRED_COMPACT_INDEX != 0
    }

    /// The store's index layout.
    #[inline]
    pub fn index_kind(&self) -> IndexKind {
        if self.is_compact() {
            IndexKind::Compact
        } else {
            IndexKind::Classic
        }
    }

    /// Whether the store has a dictionary section (it was built with
    /// compression; its records may still all be raw).
    #[inline]
    pub fn has_dictionary(&self) -> bool {
        // No section starts at 0: the header is there.
        self.section(SectionId::Dictionary).offset != 0
    }

    /// Whether some records hold compressed values.
    #[inline]
    pub fn has_compressed_values(&self) -> bool {
        self.required_flags & REQUIRED_COMPRESSED_VALUES != 0
    }

    /// Whether some typed values hold compressed items.
    #[inline]
    pub fn has_compressed_items(&self) -> bool {
        self.required_flags & REQUIRED_COMPRESSED_ITEMS != 0
    }

    /// Whether the store has a fingerprints section.
    #[inline]
    pub fn has_fingerprints(&self) -> bool {
        self.section(SectionId::Fingerprints).offset != 0
    }

    /// The sections the store has, in section-table order.
    pub fn present_sections(&self) -> Vec<SectionId> {
        let mut ids = SectionId::of_store(self.is_compact(), self.has_dictionary()).to_vec();
        if self.has_fingerprints() {
            ids.push(SectionId::Fingerprints);
        }
        ids
    }

    /// Number of seed blocks (none with the compact index).
    pub fn seed_block_count(&self) -> u64 {
        if self.seed_block_len == 0 {
            return 0;
        }
        self.geometry
            .bucket_count
            .div_ceil(self.seed_block_len as u64)
    }

    /// Width in bits of a record offset in the slots section.
    pub fn offset_bits(&self) -> u32 {
        bits::bits_for(self.section(SectionId::Records).length.saturating_sub(1))
    }

    /// Width in bits of a remap entry (the widest, with the compact index,
    /// whose parts' entries are as wide as their own key counts need).
    pub fn remap_bits(&self) -> u32 {
        bits::bits_for(self.geometry.entry_count.saturating_sub(1))
    }

    /// Length of the header this library writes: five sections, a sixth,
    /// the dictionary, for a build with compression, and one more for
    /// fingerprints.
    pub fn encoded_len(with_dictionary: bool, with_fingerprints: bool) -> usize {
        FIXED_HEADER_LEN
            + (SectionId::of_store(false, with_dictionary).len() + usize::from(with_fingerprints))
                * SECTION_ENTRY_LEN
            + 8
    }

    /// Encodes the header, with its checksum, as docs/FORMAT.md lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::encoded_len(
            self.has_dictionary(),
            self.has_fingerprints(),
        ));
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.major.to_le_bytes());
        out.extend_from_slice(&self.minor.to_le_bytes());
        out.extend_from_slice(&self.header_len.to_le_bytes());
        let g = &self.geometry;
        for v in [
            self.required_flags,
            self.file_len,
            g.entry_count,
            self.hash_seed,
            g.bucket_count,
            g.dense_bucket_count,
            g.dense_hash_threshold,
            g.slot_count,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.seed_block_len.to_le_bytes());
        out.extend_from_slice(&(self.present_sections().len() as u32).to_le_bytes());
        let p = &self.parameters;
        for v in [
            p.keys_per_bucket,
            p.load_factor,
            p.dense_key_fraction,
            p.dense_bucket_fraction,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let parts = if self.required_flags & REQUIRED_PARTS != 0 {
            g.part_count
        } else {
            0
        };
        out.extend_from_slice(&parts.to_le_bytes());
        debug_assert_eq!(out.len(), FIXED_HEADER_LEN);
        for id in self.present_sections() {
            let s = self.section(id);
            out.extend_from_slice(&(id as u32).to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            for v in [s.offset, s.length, s.checksum] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        let checksum = xxhash_rust::xxh3::xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    /// Checks the first bytes of a store of `file_len` bytes (magic, major
    /// version, header length) and returns the header's length, so that a
    /// reader knows how much to read for `decode`. `prefix` holds at least
    /// `HEADER_PREFIX_LEN` bytes, or the whole file if it is shorter.
    pub fn len_from_prefix(prefix: &[u8], file_len: u64) -> Result<usize> {
        if prefix.len() < HEADER_PREFIX_LEN {
            return Err(Error::NotAStore {
                path: None,
                reason: format!("file is {file_len} bytes, too short for a header"),
            });
        }
        if prefix[..8] != MAGIC {
            return Err(Error::NotAStore {
                path: None,
                reason: "bad magic: not a hashfile store".into(),
            });
        }
        let mut fields = Fields(prefix, 8);
        let major = fields.u16();
        let _minor = fields.u16();
        if major != VERSION_MAJOR {
            return Err(Error::Version {
                path: None,
                expected: VERSION_MAJOR,
                got: major,
            });
        }
        let header_len = fields.u32() as usize;
        if header_len < FIXED_HEADER_LEN + 8
            || header_len as u64 > file_len
            || (header_len - FIXED_HEADER_LEN - 8) % SECTION_ENTRY_LEN != 0
        {
            return Err(corrupt(format!(
                "header length {header_len} is invalid for a file of {file_len} bytes"
            )));
        }
        Ok(header_len)
    }

    /// Decodes and checks a header against the length of its file. `bytes`
    /// hold at least the header (`len_from_prefix` says how much that is).
    /// Every check is O(1): nothing here grows with the number of keys.
    pub fn decode(bytes: &[u8], file_len: u64) -> Result<Header> {
        let header_len = Self::len_from_prefix(bytes, file_len)?;
        if bytes.len() < header_len {
            return Err(corrupt(format!(
                "header length {header_len} is past the {} bytes given",
                bytes.len()
            )));
        }
        let mut fields = Fields(bytes, 8);
        let major = fields.u16();
        let minor = fields.u16();
        let _ = fields.u32();
        let body = &bytes[..header_len - 8];
        let stored = u64::from_le_bytes(
            bytes[header_len - 8..header_len]
                .try_into()
                .expect("8 bytes"),
        );
        let actual = xxhash_rust::xxh3::xxh3_64(body);
        if stored != actual {
            return Err(Error::Checksum {
                path: None,
                section: "header",
                expected: stored,
                actual,
            });
        }
        let required_flags = fields.u64();
        if required_flags & !KNOWN_REQUIRED_FLAGS != 0 {
            return Err(Error::UnsupportedFeatures {
                path: None,
                bits: required_flags & !KNOWN_REQUIRED_FLAGS,
            });
        }
        if required_flags & REQUIRED_COMPRESSED_ITEMS != 0
            && required_flags & REQUIRED_COMPRESSED_VALUES == 0
        {
            return Err(Error::corrupt(
                "header",
                "the compressed-items flag is set without the compressed-values flag",
            ));
        }
        let stated_len = fields.u64();
        let entry_count = fields.u64();
        let hash_seed = fields.u64();
        let mut geometry = Geometry {
            entry_count,
            bucket_count: fields.u64(),
            dense_bucket_count: fields.u64(),
            dense_hash_threshold: fields.u64(),
            slot_count: fields.u64(),
            part_count: 1,
        };
        let seed_block_len = fields.u32();
        let section_count = fields.u32();
        let parameters = BuildParameters {
            keys_per_bucket: fields.f64(),
            load_factor: fields.f64(),
            dense_key_fraction: fields.f64(),
            dense_bucket_fraction: fields.f64(),
        };
        let parts = fields.u64();
        if required_flags & REQUIRED_PARTS == 0 {
            if parts != 0 {
                return Err(corrupt(format!(
                    "part count {parts} is set but the partitioned-store flag is not"
                )));
            }
        } else {
            geometry.part_count = parts;
        }

        if stated_len != file_len {
            return Err(Error::Truncated {
                path: None,
                expected_len: stated_len,
                actual_len: file_len,
            });
        }
        if section_count as usize != (header_len - FIXED_HEADER_LEN - 8) / SECTION_ENTRY_LEN {
            return Err(corrupt(format!(
                "section count {section_count} does not match header length {header_len}"
            )));
        }
        let mut found: [Option<Section>; 9] = [None; 9];
        let mut fields = Fields(bytes, FIXED_HEADER_LEN);
        for _ in 0..section_count {
            let id = fields.u32();
            let _flags = fields.u32();
            let section = Section {
                offset: fields.u64(),
                length: fields.u64(),
                checksum: fields.u64(),
            };
            // Unknown ids are sections added by a later minor version: skip them.
            let Some(known) = SectionId::from_u32(id) else {
                continue;
            };
            let end = section.offset.checked_add(section.length);
            if section.offset < header_len as u64 || end.is_none_or(|end| end > file_len) {
                return Err(Error::corrupt(known.name(), format!("section (offset {}, length {}) extends past end of file ({file_len} bytes)", section.offset, section.length)));
            }
            let slot = &mut found[known.index()];
            if slot.is_some() {
                return Err(Error::corrupt(
                    known.name(),
                    "section appears twice in the section table",
                ));
            }
            *slot = Some(section);
        }
        // The sections of the store's index layout must be there; those of
        // the other are ignored, as unknown ids are. The dictionary must
        // be there when a record may be compressed; a store built with
        // compression whose values all stayed raw may have it too.
        let compressed = required_flags & REQUIRED_COMPRESSED_VALUES != 0;
        let present = SectionId::of_store(
            required_flags & REQUIRED_COMPACT_INDEX != 0,
            compressed || found[SectionId::Dictionary.index()].is_some(),
        );
        let mut sections = [Section::default(); 9];
        for &id in present {
            sections[id.index()] = found[id.index()].ok_or_else(|| {
                Error::corrupt(id.name(), "section is missing from the section table")
            })?;
        }
        // Fingerprints are optional: 2 bytes per entry where present.
        if let Some(fingerprints) = found[SectionId::Fingerprints.index()] {
            if Some(fingerprints.length) != entry_count.checked_mul(2) {
                return Err(Error::corrupt(
                    "fingerprints",
                    format!(
                        "section is {} bytes, and {entry_count} entries take 2 each",
                        fingerprints.length
                    ),
                ));
            }
            sections[SectionId::Fingerprints.index()] = fingerprints;
        }
        let header = Header {
            major,
            minor,
            header_len: header_len as u32,
            required_flags,
            file_len,
            hash_seed,
            geometry,
            seed_block_len,
            parameters,
            sections,
        };
        header.check_geometry()?;
        Ok(header)
    }

    /// Checks that the counts agree with one another and with the section
    /// lengths, so that no lookup can index past a section.
    fn check_geometry(&self) -> Result<()> {
        let g = &self.geometry;
        let compact = self.is_compact();
        if compact {
            if self.seed_block_len != 0 {
                return Err(corrupt(format!(
                    "seed block length {} is set, but the compact index has no seed blocks",
                    self.seed_block_len
                )));
            }
        } else if BlockLayout::from_block_len(self.seed_block_len).is_none() {
            return Err(corrupt(format!(
                "seed block length {} is not 32, 128 or 256",
                self.seed_block_len
            )));
        }
        let parts = g.part_count;
        if self.required_flags & REQUIRED_PARTS != 0 && (parts < 2 || parts > g.entry_count) {
            return Err(corrupt(format!(
                "part count {parts} is invalid for {} entries",
                g.entry_count
            )));
        }
        if g.entry_count == 0 {
            if g.bucket_count != 0 || g.slot_count != 0 {
                return Err(corrupt(
                    "an empty store must have no buckets and no slots".into(),
                ));
            }
        } else {
            if g.bucket_count == 0 || g.bucket_count > g.entry_count || g.bucket_count % parts != 0
            {
                return Err(corrupt(format!(
                    "bucket count {} is invalid for {} entries in {parts} parts",
                    g.bucket_count, g.entry_count
                )));
            }
            // Classic parts are of equal size; compact ones of their own.
            if g.slot_count < g.entry_count
                || g.slot_count / 2 > g.entry_count
                || (!compact && g.slot_count % parts != 0)
            {
                return Err(corrupt(format!(
                    "slot count {} is invalid for {} entries in {parts} parts",
                    g.slot_count, g.entry_count
                )));
            }
            let per_part = g.buckets_per_part();
            if g.dense_bucket_count > per_part
                || (g.dense_bucket_count == 0) != (g.dense_hash_threshold == 0)
                || (g.dense_bucket_count == per_part && g.dense_hash_threshold != u64::MAX)
            {
                return Err(corrupt(format!(
                    "dense bucket count {} and threshold {:#x} are inconsistent",
                    g.dense_bucket_count, g.dense_hash_threshold
                )));
            }
        }
        let records = self.section(SectionId::Records).length;
        // Every record takes at least MIN_RECORD_LEN bytes, so this also
        // bounds entry_count.
        if records < g.entry_count.saturating_mul(super::record::MIN_RECORD_LEN) {
            return Err(Error::corrupt(
                "records",
                format!(
                    "section is {records} bytes, too short for {} entries",
                    g.entry_count
                ),
            ));
        }
        if self.offset_bits() > bits::MAX_PACKED_BITS {
            return Err(Error::corrupt(
                "records",
                format!("section is {records} bytes, more than this format addresses"),
            ));
        }
        let expect = |id: SectionId, len: Option<u64>| -> Result<()> {
            let actual = self.section(id).length;
            match len {
                Some(len) if len == actual => Ok(()),
                _ => Err(Error::corrupt(
                    id.name(),
                    format!(
                        "section is {actual} bytes, expected {}",
                        len.map_or("an impossible size".into(), |l| l.to_string())
                    ),
                )),
            }
        };
        if compact {
            expect(SectionId::Pilots, Some(g.bucket_count))?;
            expect(SectionId::Parts, parts.checked_mul(PART_ENTRY_LEN as u64))?;
            // Each part's remap entries are as wide as its own key count
            // needs: at most `remap_bits`, and at least 1 bit.
            let remap = self.section(SectionId::Remap).length;
            let most = bits::packed_len(g.slot_count - g.entry_count, self.remap_bits());
            let least = bits::packed_len(g.slot_count - g.entry_count, 1);
            if most.is_none_or(|most| remap > most) || least.is_none_or(|least| remap < least) {
                return Err(Error::corrupt(
                    "remap",
                    format!(
                        "section is {remap} bytes, impossible for {} remapped slots",
                        g.slot_count - g.entry_count
                    ),
                ));
            }
        } else {
            expect(
                SectionId::SeedIndex,
                self.seed_block_count()
                    .checked_add(1)
                    .and_then(|b| b.checked_mul(4)),
            )?;
            expect(
                SectionId::Remap,
                bits::packed_len(g.slot_count - g.entry_count, self.remap_bits()),
            )?;
        }
        expect(
            SectionId::Slots,
            bits::packed_len(g.entry_count, self.offset_bits()),
        )?;
        if self.has_dictionary() {
            let len = self.section(SectionId::Dictionary).length;
            let (least, most) = (
                crate::compress::STATS_LEN as u64,
                (crate::compress::STATS_LEN + crate::compress::MAX_DICTIONARY_LEN) as u64,
            );
            if !(least..=most).contains(&len) {
                return Err(Error::corrupt(
                    "dictionary",
                    format!("section is {len} bytes, not {least} to {most}"),
                ));
            }
        }
        // The seeds section's length is checked against the seed index's
        // last entry at open, which needs the section's bytes.
        Ok(())
    }
}

/// The index layout of a store: what a build writes (`BuildOptions::index`)
/// and a header says (`Header::index_kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexKind {
    /// The smallest pilot below 2^24 for each bucket, in bit-packed blocks.
    #[default]
    Classic,
    /// A pilot of one byte for each bucket, found by evict-and-retry, and
    /// parts of their own size: about 2.17 bits per key.
    Compact,
}

impl IndexKind {
    /// The names options give the layouts.
    pub const NAMES: [(&'static str, IndexKind); 2] = [
        ("classic", IndexKind::Classic),
        ("compact", IndexKind::Compact),
    ];

    /// The layout named `name`.
    pub fn from_name(name: &str) -> Option<IndexKind> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
    }

    /// The layout's name.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("classic", |(n, _)| n)
    }

    /// The layout named `name`, or an error listing the names: for a
    /// binding's `index` option.
    pub fn parse(name: &str) -> Result<IndexKind> {
        Self::from_name(name).ok_or_else(|| Error::InvalidOption {
            name: "index",
            reason: format!(
                "{name:?} is not an index layout; one of {}",
                Self::NAMES.map(|(n, _)| n).join(", ")
            ),
        })
    }
}
