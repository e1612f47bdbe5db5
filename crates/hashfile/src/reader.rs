//! Reading a store: open, look up, iterate, verify.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::bits::{self, BlockLayout};
use crate::chd::{self, BucketMap};
use crate::error::{Error, Result};
use crate::format::{self, Header, SectionId, ValueKind, RECORD_KEY_UTF8, RECORD_KIND_MASK, RECORD_RESERVED};

/// One key-value record, borrowed from the store's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The key's bytes.
    pub key: &'a [u8],
    /// True if the key was added as UTF-8 text.
    pub key_utf8: bool,
    /// The value's bytes.
    pub value: &'a [u8],
    /// The value's kind (encoding).
    pub kind: ValueKind,
}

impl Record<'_> {
    /// The value as an owned tree: strings of the three plain kinds become
    /// `Value::Str`, typed values are decoded and checked.
    pub fn decode(&self) -> Result<crate::value::Value> {
        use crate::value::Value;
        Ok(match self.kind {
            ValueKind::Utf8 => Value::Str(self.value.to_vec(), None),
            ValueKind::Binary => Value::Str(self.value.to_vec(), Some("ASCII-8BIT".into())),
            ValueKind::Ascii => Value::Str(self.value.to_vec(), Some("US-ASCII".into())),
            ValueKind::Typed => Value::decode(self.value)?,
        })
    }
}

/// A read-only view of a store over any bytes: a `Vec<u8>`, a slice, or a
/// memory map (`Reader::open`).
///
/// Creating a reader checks the header and the section bounds in O(1).
/// Lookups check every offset they follow, so a damaged file gives an error
/// or `None`, never a panic and never another key's value. `verify` checks
/// every byte.
#[derive(Debug)]
#[repr(C)] // keep declaration order: the lookup fields share cache lines
pub struct Reader<B> {
    // Everything a lookup reads comes first, so it spans two or three cache
    // lines instead of being spread through the header (bench/compare.rb).
    buckets: BucketMap,
    hash_seed: u64,
    entry_count: u64,
    // Byte ranges of the sections, checked against the file at open.
    seed_index: (usize, usize),
    seeds: (usize, usize),
    remap: (usize, usize),
    slots: (usize, usize),
    records: (usize, usize),
    offset_bits: u32,
    remap_bits: u32,
    layout: BlockLayout,
    bytes: B,
    header: Header,
}

impl Reader<Mmap> {
    /// Memory-maps the file at `path` and checks its header.
    ///
    /// The file must not be modified in place while it is mapped; stores
    /// are replaced by renaming a new file over them (`Builder::write_file`
    /// does that), which leaves open readers on the old file.
    pub fn open(path: impl AsRef<Path>) -> Result<Reader<Mmap>> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::io(Some(path), e))?;
        // SAFETY: the map is read-only and private to this reader. Stores are
        // immutable by contract: they are published by rename and never
        // written in place, so the mapped bytes do not change under us. A
        // file truncated by another process would raise SIGBUS, the same
        // caveat as every mmap-based reader (fst, LMDB, sparkey).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(Some(path), e))?;
        Reader::new(map).map_err(|e| e.with_path(path))
    }
}

fn range(header: &Header, id: SectionId) -> (usize, usize) {
    let s = header.section(id);
    // Fits in usize: Header::decode checked the section lies inside bytes
    // that are in memory.
    (s.offset as usize, (s.offset + s.length) as usize)
}

#[cold]
fn corrupt(what: &str) -> Error {
    Error::format(format!("corrupt store: {what}; run verify for details"))
}

impl<B: AsRef<[u8]>> Reader<B> {
    /// Wraps bytes holding a store and checks its header (O(1)).
    pub fn new(bytes: B) -> Result<Reader<B>> {
        let data = bytes.as_ref();
        let header = Header::decode(data, data.len() as u64)?;
        let layout = BlockLayout::from_block_len(header.seed_block_len).expect("checked by decode");
        let seed_index = range(&header, SectionId::SeedIndex);
        // The seed index's last entry gives the seeds section's length.
        let last = u32::from_le_bytes(data[seed_index.1 - 4..seed_index.1].try_into().unwrap()) as u64;
        let seeds_len = header.section(SectionId::Seeds).length;
        if last * layout.unit_bytes() as u64 != seeds_len {
            return Err(Error::format(format!("section seeds is {seeds_len} bytes, but the seed index says {}", last * layout.unit_bytes() as u64)));
        }
        Ok(Reader {
            buckets: header.geometry.bucket_map(),
            hash_seed: header.hash_seed,
            entry_count: header.geometry.entry_count,
            layout,
            offset_bits: header.offset_bits(),
            remap_bits: header.remap_bits(),
            seed_index,
            seeds: range(&header, SectionId::Seeds),
            remap: range(&header, SectionId::Remap),
            slots: range(&header, SectionId::Slots),
            records: range(&header, SectionId::Records),
            header,
            bytes,
        })
    }

    /// The decoded header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.entry_count
    }

    /// True if the store has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The underlying bytes.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    #[inline]
    fn section(&self, (start, end): (usize, usize)) -> &[u8] {
        &self.bytes.as_ref()[start..end]
    }

    /// The pilot of bucket `b`, read straight out of its bit-packed block.
    #[inline]
    fn pilot(&self, bucket: u64) -> Result<u64> {
        let block_len = self.layout.block_len() as u64;
        let block = (bucket / block_len) as usize;
        let index = self.section(self.seed_index);
        let cumulative = |k: usize| -> Option<u32> { Some(u32::from_le_bytes(index.get(k * 4..k * 4 + 4)?.try_into().ok()?)) };
        let (Some(start), Some(end)) = (cumulative(block), cumulative(block + 1)) else { return Err(corrupt("seed block out of range")) };
        let width = end.wrapping_sub(start);
        if width > 32 || end < start {
            return Err(corrupt("seed block width over 32 bits"));
        }
        let unit = self.layout.unit_bytes();
        let from = start as usize * unit;
        let bytes = self.section(self.seeds).get(from..from + width as usize * unit).ok_or_else(|| corrupt("seed block past end of seeds"))?;
        self.layout.get(bytes, width, (bucket % block_len) as usize).map(u64::from).ok_or_else(|| corrupt("seed block too short"))
    }

    /// The slot of a key hash, in `0..len()`.
    #[inline]
    fn slot_of(&self, hash: u64) -> Result<u64> {
        let (bucket, first_slot) = self.buckets.locate(hash);
        let pilot = self.pilot(bucket)?;
        let slot = first_slot + chd::slot(hash, pilot, self.buckets.slots_per_part());
        if slot < self.entry_count {
            return Ok(slot);
        }
        match bits::unpack_one(self.section(self.remap), self.remap_bits, slot - self.entry_count) {
            Some(s) if s < self.entry_count => Ok(s),
            _ => Err(corrupt("remap entry out of range")),
        }
    }

    /// The record at byte `offset` of the records section and the offset of
    /// the next one, or `None` at the end of the section.
    pub fn record_at(&self, offset: u64) -> Result<Option<(Record<'_>, u64)>> {
        let records = self.section(self.records);
        let Ok(mut pos) = usize::try_from(offset) else { return Err(corrupt("record offset out of range")) };
        if pos == records.len() {
            return Ok(None);
        }
        let flags = *records.get(pos).ok_or_else(|| corrupt("record offset past end of records"))?;
        pos += 1;
        if flags & RECORD_RESERVED != 0 {
            return Err(corrupt("record has a reserved flag set"));
        }
        let kind = ValueKind::from_tag(flags & RECORD_KIND_MASK).ok_or_else(|| corrupt(&format!("unknown value type {}", flags & RECORD_KIND_MASK)))?;
        let (Some(key_len), Some(value_len)) = (format::read_varint(records, &mut pos), format::read_varint(records, &mut pos)) else {
            return Err(corrupt("bad record length"));
        };
        let key_end = usize::try_from(key_len).ok().and_then(|l| pos.checked_add(l));
        let value_end = key_end.and_then(|k| usize::try_from(value_len).ok().and_then(|l| k.checked_add(l)));
        let (Some(key_end), Some(value_end)) = (key_end, value_end) else { return Err(corrupt("record length overflows")) };
        if value_end > records.len() {
            return Err(corrupt("record extends past end of records"));
        }
        let record = Record { key: &records[pos..key_end], key_utf8: flags & RECORD_KEY_UTF8 != 0, value: &records[key_end..value_end], kind };
        Ok(Some((record, value_end as u64)))
    }

    /// Looks a key up. `Ok(None)` if it is absent. The stored key is compared
    /// byte for byte, so a lookup never returns another key's value.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Result<Option<Record<'_>>> {
        if self.is_empty() {
            return Ok(None);
        }
        let slot = self.slot_of(chd::hash_key(key, self.hash_seed))?;
        let offset = bits::unpack_one(self.section(self.slots), self.offset_bits, slot).ok_or_else(|| corrupt("slot past end of slots"))?;
        match self.record_at(offset)? {
            Some((record, _)) if record.key == key => Ok(Some(record)),
            _ => Ok(None),
        }
    }

    /// Iterates over the records in the order they were added.
    pub fn iter(&self) -> Iter<'_, B> {
        Iter { reader: self, offset: 0, failed: false }
    }

    /// Checks every byte: the checksum of each section, the seed index, that
    /// the records section holds exactly `len()` well-formed records, and
    /// that every key's lookup lands on its own record. O(n).
    pub fn verify(&self) -> Result<()> {
        // Bytes outside the header and the sections (alignment padding) are
        // covered by no checksum; they must be zero.
        let mut spans: Vec<(u64, u64)> = self.header.sections.iter().map(|s| (s.offset, s.offset + s.length)).collect();
        spans.sort_unstable();
        let mut at = self.header.header_len as u64;
        for (start, end) in spans.into_iter().chain([(self.header.file_len, self.header.file_len)]) {
            if start < at {
                return Err(Error::format(format!("sections overlap at byte {start}")));
            }
            if let Some(i) = self.bytes.as_ref()[at as usize..start as usize].iter().position(|&b| b != 0) {
                return Err(Error::format(format!("padding byte {} is not zero", at + i as u64)));
            }
            at = end;
        }
        for (id, section) in SectionId::ALL.iter().zip(&self.header.sections) {
            let bytes = &self.bytes.as_ref()[section.offset as usize..(section.offset + section.length) as usize];
            let actual = xxhash_rust::xxh3::xxh3_64(bytes);
            if actual != section.checksum {
                return Err(Error::Checksum { path: None, section: id.name(), expected: section.checksum, actual });
            }
        }
        let index = self.section(self.seed_index);
        let mut previous = 0u32;
        for (k, entry) in index.chunks_exact(4).enumerate() {
            let v = u32::from_le_bytes(entry.try_into().unwrap());
            if (k == 0 && v != 0) || v < previous || v - previous > 32 {
                return Err(Error::format(format!("seed index entry {k} is inconsistent")));
            }
            previous = v;
        }
        let mut count = 0u64;
        let mut offset = 0u64;
        let typed_allowed = self.header.required_flags & format::REQUIRED_TYPED_VALUES != 0;
        while let Some((record, next)) = self.record_at(offset)? {
            if record.kind == ValueKind::Typed {
                if !typed_allowed {
                    return Err(Error::format(format!("record {count} (key {}) holds a typed value, but the header does not require typed values", crate::DisplayBytes(record.key))));
                }
                crate::value::check(record.value).map_err(|e| Error::format(format!("record {count} (key {}): {e}", crate::DisplayBytes(record.key))))?;
            }
            let slot = self.slot_of(chd::hash_key(record.key, self.hash_seed))?;
            if bits::unpack_one(self.section(self.slots), self.offset_bits, slot) != Some(offset) {
                return Err(Error::format(format!("record {count} (key {}) is not found by its own lookup", crate::DisplayBytes(record.key))));
            }
            count += 1;
            offset = next;
        }
        if count != self.len() {
            return Err(Error::format(format!("section records holds {count} records, the header says {}", self.len())));
        }
        Ok(())
    }

    /// Sizes and parameters, for `hashfile info`.
    pub fn info(&self) -> Info {
        let h = &self.header;
        let sizes: Vec<(&'static str, u64)> = SectionId::ALL.iter().zip(&h.sections).map(|(id, s)| (id.name(), s.length)).collect();
        let mphf_bytes = [SectionId::SeedIndex, SectionId::Seeds, SectionId::Remap].iter().map(|&id| h.section(id).length).sum::<u64>();
        let per_key = |bytes: u64| if h.geometry.entry_count == 0 { 0.0 } else { bytes as f64 * 8.0 / h.geometry.entry_count as f64 };
        Info {
            entries: h.geometry.entry_count,
            file_bytes: h.file_len,
            section_bytes: sizes,
            mphf_bits_per_key: per_key(mphf_bytes),
            seed_bits_per_key: per_key(h.section(SectionId::SeedIndex).length + h.section(SectionId::Seeds).length),
        }
    }
}

/// Sizes of a store, from its header.
#[derive(Clone, Debug, PartialEq)]
pub struct Info {
    /// Number of entries.
    pub entries: u64,
    /// Length of the file.
    pub file_bytes: u64,
    /// Length of each section, in file order.
    pub section_bytes: Vec<(&'static str, u64)>,
    /// The perfect-hash function (seed index, seeds and remap) in bits per key.
    pub mphf_bits_per_key: f64,
    /// The displacement seeds and their block index alone, in bits per key.
    pub seed_bits_per_key: f64,
}

/// Iterator over a store's records, in the order they were added.
pub struct Iter<'a, B> {
    reader: &'a Reader<B>,
    offset: u64,
    failed: bool,
}

impl<'a, B: AsRef<[u8]>> Iterator for Iter<'a, B> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.reader.record_at(self.offset) {
            Ok(Some((record, next))) => {
                self.offset = next;
                Some(Ok(record))
            }
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
