//! Reading a store over any byte source: open, look up, iterate, verify.
//!
//! Every lookup step asks the [`Source`] for its piece: a seed block, a
//! slot, a record (and rarely a remap entry); the seed index is read in
//! place over a memory source and once, at open, over any other. Nothing
//! here assumes the whole file is one slice, and nothing handed out borrows
//! more than the piece a source gave.

mod batch;
pub mod cache;
mod decode;
mod dig;
#[cfg(feature = "mmap")]
pub mod fault;
mod info;
mod iter;
mod map;
mod record;
mod slot;
mod source;
mod verify;

use crate::bits::BlockLayout;
use crate::chd::{self, BucketMap};
use crate::error::{Error, Result};
use crate::format::{Header, Section, SectionId, HEADER_PREFIX_LEN};
use std::ops::Range;

pub use cache::{BlockCache, CacheOptions, CacheStats, RangeFetch};
pub use dig::dig_record;
pub use iter::Iter;
pub use source::{FileSource, Piece, Source};
pub use verify::VERIFY_CHUNK;

pub use info::Info;
pub use map::RANDOM_ADVICE_FROM;
#[cfg(feature = "mmap")]
pub(crate) use map::{map_file_with_id, map_open_file};
#[cfg(feature = "mmap")]
pub use map::{open_regular_file, FileId};
pub use record::RecordBuf;

/// Bytes a reader asks for at open: the fixed header and a section table of
/// up to about 500 sections, in one read. A longer header takes a second.
pub const OPEN_READ_LEN: usize = 16 << 10;

/// The largest seed index a reader over a source that is not in memory
/// reads whole at open (4 bytes per seed block: 8 MiB is the index of
/// about 800 million keys). A larger one is read an entry at a time, by
/// the lookups that need it, so that what a header claims cannot make
/// opening fetch or allocate more than this.
pub const LOAD_SEED_INDEX_UP_TO: u64 = 8 << 20;

/// The largest value a reader reads by default ([`Reader::max_value_size`]):
/// 256 MiB, stored or decoded. A lookup allocates what its value takes,
/// and a damaged or hostile store (or a server lying about one) can claim
/// a value of any length, or a compressed one that decodes to 1,024 times
/// its bytes; this bounds what any one value costs. Real values are far
/// smaller: a typed value is compressed whole up to 64 KiB, Debian's whole
/// locale tree is 1 MB, and a value of hundreds of megabytes is better
/// split into keys. It is also about what an interpreter can take in one
/// String or bytes object without trouble under a container's memory
/// limit. A store whose values really are larger is read with a larger
/// limit (`Reader::set_max_value_size`, the bindings' `max_value_size`).
pub const DEFAULT_MAX_VALUE_SIZE: u64 = 256 << 20;

/// A read-only view of a store over any [`Source`]: a memory map
/// (`Reader::open`), a `Vec<u8>`, a slice, a [`FileSource`], or your own.
///
/// Creating a reader checks the header and the section bounds in O(1).
/// Lookups check every offset they follow, so a damaged file gives an error
/// or `None`, never a panic and never another key's value. `verify` checks
/// every byte.
#[derive(Debug)]
#[repr(C)] // keep declaration order: the lookup fields share cache lines
pub struct Reader<S> {
    // Everything a lookup reads comes first, so it spans two or three cache
    // lines instead of being spread through the header (bench/compare.rb).
    buckets: BucketMap,
    hash_seed: u64,
    entry_count: u64,
    /// The seed index, read at open over a source that is not resident;
    /// `None` over a resident one, which is read in place.
    loaded_seed_index: Option<Box<[u32]>>,
    seed_index: Section,
    seeds: Section,
    remap: Section,
    slots: Section,
    records: Section,
    /// The compact index's sections (absent in a classic store).
    pilots: Section,
    parts: Section,
    /// The key fingerprint of each slot, if the store has them (offset 0
    /// if not): a lookup of a key whose fingerprint differs reads no record.
    fingerprints: Section,
    compact: bool,
    offset_bits: u32,
    remap_bits: u32,
    layout: BlockLayout,
    source: S,
    header: Header,
    /// The compressed values' decoder, made from the dictionary section by
    /// the first lookup that needs it (so opening stays a header check).
    decoder: std::sync::OnceLock<crate::compress::Decoder>,
    /// The largest value read, stored or decoded (`max_value_size`).
    max_value_size: u64,
    /// The header's own checksum as opened: a compressed lookup over a
    /// source in memory checks it is still there (`decoder_for`).
    header_checksum: [u8; 8],
}

/// The bytes of `section` in a store held in memory. Open checked that it
/// lies inside the file; `None` only if the source's slice changed since.
#[inline(always)]
fn section_slice<'b>(bytes: &'b [u8], section: &Section) -> Option<&'b [u8]> {
    bytes.get(usize::try_from(section.offset).ok()?..usize::try_from(section.end()).ok()?)
}

/// The error for damage a lookup ran into.
#[cold]
fn corrupt(section: SectionId, what: &str) -> Error {
    Error::corrupt(section.name(), format!("{what}; run verify for details"))
}

#[cold]
fn io_error(error: std::io::Error) -> Error {
    // A source that could not allocate a read (`error::io_out_of_memory`,
    // or a transport's refused buffer) says so by the error's kind.
    if error.kind() == std::io::ErrorKind::OutOfMemory {
        return Error::OutOfMemory {
            what: error.to_string(),
        };
    }
    Error::io(None, error)
}

/// `bytes` if it is a valid `max_value_size` (at least 1), else
/// `Error::InvalidOption`: the one check every binding's option goes
/// through.
pub fn check_max_value_size(bytes: u64) -> Result<u64> {
    if bytes == 0 {
        return Err(Error::InvalidOption {
            name: "max_value_size",
            reason: "must be at least 1 byte".into(),
        });
    }
    Ok(bytes)
}

impl<S: Source> Reader<S> {
    /// Wraps a source holding a store and checks its header (O(1)). Over a
    /// source that is not resident, also reads the seed index (4 bytes per
    /// seed block, about 1 byte per 100 keys) when it is at most
    /// [`LOAD_SEED_INDEX_UP_TO`] bytes.
    pub fn new(source: S) -> Result<Reader<S>> {
        Self::with_seed_index_limit(source, LOAD_SEED_INDEX_UP_TO)
    }

    /// [`Reader::new`], reading the seed index whole at open only when it
    /// is at most `limit` bytes (0: never; each lookup then reads its two
    /// entries through the source, one piece more per cold lookup).
    pub fn with_seed_index_limit(source: S, limit: u64) -> Result<Reader<S>> {
        let file_len = source.size();
        // A prefix: a source of positioned reads gives its block, which
        // holds the header of five sections many times over.
        let want = file_len.min(OPEN_READ_LEN as u64) as usize;
        let mut head = source.read_at(0, want).map_err(io_error)?;
        if head.len() < want.min(HEADER_PREFIX_LEN) {
            head = source.read_exact_at(0, want).map_err(io_error)?;
        }
        let header_len =
            Header::len_from_prefix(&head[..head.len().min(HEADER_PREFIX_LEN)], file_len)?;
        let head = if head.len() < header_len {
            source.read_exact_at(0, header_len).map_err(io_error)?
        } else {
            head
        };
        let header = Header::decode(&head, file_len)?;
        let header_checksum: [u8; 8] = head[header_len - 8..header_len]
            .try_into()
            .expect("a decoded header ends with its 8-byte checksum");
        drop(head);
        // The compact index has no seed blocks; its layout field is unused.
        let layout = BlockLayout::from_block_len(header.seed_block_len)
            .or(BlockLayout::from_block_len(128))
            .expect("checked by decode");
        let compact = header.is_compact();
        let section = |id| header.section(id);
        let mut reader = Reader {
            buckets: BucketMap::new(&header.geometry),
            hash_seed: header.hash_seed,
            entry_count: header.geometry.entry_count,
            loaded_seed_index: None,
            seed_index: section(SectionId::SeedIndex),
            seeds: section(SectionId::Seeds),
            remap: section(SectionId::Remap),
            slots: section(SectionId::Slots),
            records: section(SectionId::Records),
            pilots: section(SectionId::Pilots),
            parts: section(SectionId::Parts),
            fingerprints: section(SectionId::Fingerprints),
            compact,
            offset_bits: header.offset_bits(),
            remap_bits: header.remap_bits(),
            layout,
            header,
            source,
            decoder: std::sync::OnceLock::new(),
            max_value_size: DEFAULT_MAX_VALUE_SIZE,
            header_checksum,
        };
        if compact {
            return Ok(reader);
        }
        if reader.source.as_slice().is_none() && reader.seed_index.length <= limit {
            let bytes = reader
                .source
                .read_exact_at(reader.seed_index.offset, reader.seed_index.length as usize)
                .map_err(io_error)?;
            reader.loaded_seed_index = Some(
                bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect(),
            );
        }
        // The seed index's last entry gives the seeds section's length.
        let last = reader.seed_index_entry(reader.header.seed_block_count())?;
        let expected = last as u64 * layout.unit_bytes() as u64;
        if expected != reader.seeds.length {
            return Err(Error::corrupt(
                "seeds",
                format!(
                    "section is {} bytes, but the seed index says {expected}",
                    reader.seeds.length
                ),
            ));
        }
        Ok(reader)
    }

    /// The largest value this reader reads, in bytes: a value stored
    /// longer, or compressed (whole or in items) and decoding to more, is
    /// [`Error::ValueTooLarge`] naming its key, from a lookup, an
    /// iteration or `verify`, before it is read or decoded past this.
    /// [`DEFAULT_MAX_VALUE_SIZE`] unless set.
    pub fn max_value_size(&self) -> u64 {
        self.max_value_size
    }

    /// Sets [`max_value_size`](Reader::max_value_size): at least 1 byte
    /// ([`check_max_value_size`]).
    pub fn set_max_value_size(&mut self, bytes: u64) -> Result<()> {
        self.max_value_size = check_max_value_size(bytes)?;
        Ok(())
    }

    /// The reader with [`max_value_size`](Reader::max_value_size) set.
    pub fn with_max_value_size(mut self, bytes: u64) -> Result<Reader<S>> {
        self.set_max_value_size(bytes)?;
        Ok(self)
    }

    /// The error for the value of `key` whose size, in words (`is N
    /// bytes`), is over the limit.
    #[cold]
    fn too_large(&self, key: &[u8], size: String) -> Error {
        Error::ValueTooLarge {
            path: None,
            key: crate::error::DisplayBytes(key).to_string(),
            size,
            max: self.max_value_size,
        }
    }

    /// An error if a stored value of `len` bytes is over the limit.
    #[inline(always)]
    fn check_stored_len(&self, key: &[u8], len: usize) -> Result<()> {
        if len as u64 > self.max_value_size {
            return Err(self.too_large(key, format!("is {len} bytes")));
        }
        Ok(())
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

    /// The source the store is read from.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Calls `f` with the `len` bytes at `at` inside `section`, checked
    /// against its bounds: in place over a source held in memory, else
    /// through the piece the source hands out.
    #[inline(always)]
    fn with_bytes<R>(
        &self,
        section: &Section,
        id: SectionId,
        at: u64,
        len: usize,
        what: &str,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        match self.source.as_slice() {
            // The section's slice does not change from lookup to lookup, so
            // its bounds check leaves the loop of a caller that looks up many.
            Some(bytes) => match section_slice(bytes, section).and_then(|s| {
                s.get(usize::try_from(at).ok()?..)
                    .and_then(|s| s.get(..len))
            }) {
                Some(bytes) => Ok(f(bytes)),
                None => Err(corrupt(id, what)),
            },
            None => {
                if at
                    .checked_add(len as u64)
                    .is_none_or(|end| end > section.length)
                {
                    return Err(corrupt(id, what));
                }
                let piece = self
                    .source
                    .read_exact_at(section.offset + at, len)
                    .map_err(io_error)?;
                Ok(f(&piece))
            }
        }
    }

    /// Reads the index (seeds, remap, slots) into the source's memory for
    /// good, where the source keeps bytes ([`Source::pin`]): every lookup
    /// after this is one read, of its record. The slots take most of it:
    /// each holds a record offset in as many bits as the records section's
    /// length needs (about 3 bytes per key in all for 100,000 keys of 30
    /// bytes). Does nothing over a source in memory.
    pub fn prefetch_index(&self) -> Result<()> {
        if self.source.as_slice().is_some() {
            return Ok(());
        }
        let index = if self.compact {
            [&self.pilots, &self.parts, &self.remap, &self.slots]
        } else {
            [&self.seed_index, &self.seeds, &self.remap, &self.slots]
        };
        let ranges: Vec<Range<u64>> = index
            .into_iter()
            .chain((self.fingerprints.offset != 0).then_some(&self.fingerprints))
            .map(|s| s.offset..s.offset + s.length)
            .filter(|r| !r.is_empty())
            .collect();
        self.source.pin(&ranges).map_err(io_error)
    }

    /// Looks a key up. `Ok(None)` if it is absent. The stored key is compared
    /// byte for byte, so a lookup never returns another key's value.
    ///
    /// ```
    /// let mut builder = hashfile::Builder::new(Default::default())?;
    /// builder.insert(b"red", b"#ff0000");
    /// let store = hashfile::Reader::new(builder.to_bytes()?)?;
    /// let found = store.get(b"red")?.expect("present");
    /// assert_eq!((found.key(), found.value()), (&b"red"[..], &b"#ff0000"[..]));
    /// assert!(store.get(b"blue")?.is_none());
    /// # Ok::<(), hashfile::Error>(())
    /// ```
    #[inline]
    pub fn get(&self, key: &[u8]) -> Result<Option<RecordBuf<'_>>> {
        let Some(offset) = self.offset_of(key)? else {
            return Ok(None);
        };
        self.record_of(offset, key)
    }

    /// The record at records offset `offset` if its key is `key`: what
    /// `get` and `get_many` return for a key the index sends there.
    #[inline(always)]
    fn record_of(&self, offset: u64, key: &[u8]) -> Result<Option<RecordBuf<'_>>> {
        if let Some(bytes) = self.source.as_slice() {
            // The key is compared on the map, and the record built once,
            // where it is returned.
            let (layout, found, value) = self.record_in_place(bytes, offset)?;
            if found != key {
                return Ok(None);
            }
            return self.found(found, value, layout, offset).map(Some);
        }
        match self.record_at(offset)? {
            Some((record, _)) if record.key() == key => Ok(Some(record)),
            _ => Ok(None),
        }
    }

    /// The offset of the record `key` would be in, from the index
    /// (`None` in an empty store): the stored key is still to be compared.
    #[inline(always)]
    fn offset_of(&self, key: &[u8]) -> Result<Option<u64>> {
        if self.is_empty() {
            return Ok(None);
        }
        let hash = chd::hash_key(key, self.hash_seed);
        let slot = self.slot_of(hash)?;
        if self.fingerprints.offset != 0 && !self.fingerprint_matches(slot, hash)? {
            return Ok(None);
        }
        self.slot_offset(slot).map(Some)
    }

    /// Whether the fingerprint in `slot` is that of a key with `hash`: if
    /// not, the store does not hold the key, and no record is read.
    #[inline(always)]
    pub(super) fn fingerprint_matches(&self, slot: u64, hash: u64) -> Result<bool> {
        let at = slot.saturating_mul(2);
        self.with_bytes(
            &self.fingerprints,
            SectionId::Fingerprints,
            at,
            2,
            "slot past end of fingerprints",
            |b| u16::from_le_bytes([b[0], b[1]]) == chd::fingerprint(hash),
        )
    }

    /// Whether the store keeps key fingerprints (an overlay of a dataset):
    /// a key it does not hold costs no record read.
    pub fn has_fingerprints(&self) -> bool {
        self.fingerprints.offset != 0
    }

    /// Iterates over the records in the order they were added.
    pub fn iter(&self) -> Iter<'_, S> {
        Iter::new(self)
    }
}
