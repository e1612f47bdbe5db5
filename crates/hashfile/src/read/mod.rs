//! Reading a store over any byte source: open, look up, iterate, verify.
//!
//! Every lookup step asks the [`Source`] for its piece: a seed block, a
//! slot, a record (and rarely a remap entry); the seed index is read in
//! place over a memory source and once, at open, over any other. Nothing
//! here assumes the whole file is one slice, and nothing handed out borrows
//! more than the piece a source gave.

pub mod cache;
#[cfg(feature = "mmap")]
pub mod fault;
mod iter;
mod source;
mod verify;

use crate::bits::{self, BlockLayout};
use crate::chd::{self, BucketMap};
use crate::error::{Error, Result};
use crate::format::record::{self, Layout};
use crate::format::{
    Header, IndexKind, PartEntry, Record, Section, SectionId, ValueKind, HEADER_PREFIX_LEN,
    PART_ENTRY_LEN,
};
use std::ops::Range;

pub use cache::{BlockCache, CacheOptions, CacheStats, RangeFetch};
pub use iter::Iter;
pub use source::{FileSource, Piece, Source};
pub use verify::VERIFY_CHUNK;

/// Stores of at least this many bytes are mapped with random-access
/// advice (`map_open_file`).
pub const RANDOM_ADVICE_FROM: u64 = 64 << 20;

/// Bytes of records a pass in order asks to have read ahead at a time
/// (`Reader::read_ahead_past`): the device's usual readahead window.
const READ_AHEAD: u64 = 8 << 20;

/// The read-ahead window that records offset `at` is in, as its start and
/// length: 0..64 KiB, then windows that double (64..128 KiB, 128..256 KiB,
/// and so on) up to `READ_AHEAD / 2`, then windows of that length.
fn read_ahead_window(at: u64) -> (u64, u64) {
    const FIRST: u64 = 64 << 10;
    const LAST: u64 = READ_AHEAD / 2;
    if at < FIRST {
        (0, FIRST)
    } else if at < LAST {
        let start = 1 << (63 - at.leading_zeros());
        (start, start)
    } else {
        (at - at % LAST, LAST)
    }
}

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

/// Bytes of a key an error about its record quotes (`DisplayBytes` shows
/// 200): a key longer than this is read only this far for the message.
const MESSAGE_KEY_LEN: usize = 200;

/// A record a lookup or an iteration found, holding the piece of the store
/// it was read from (borrowed from a memory source, owned or shared
/// otherwise).
pub struct RecordBuf<'a> {
    // Borrowed from a memory source for 'a, or from the buffer `_held`
    // keeps alive: never handed out for longer than `&self` (see `new`).
    key: &'a [u8],
    value: &'a [u8],
    key_utf8: bool,
    kind: ValueKind,
    _held: Option<source::Held>,
}

impl<'a> RecordBuf<'a> {
    /// The record that starts `piece`, which holds all `layout.len` bytes
    /// of it (checked by the caller).
    #[inline]
    fn new(piece: Piece<'a>, layout: Layout) -> RecordBuf<'a> {
        // SAFETY: the slices are kept in `key` and `value` beside the holder
        // they may point into, and every accessor hands them out borrowed
        // from `&self`, so none outlives the holder.
        let (bytes, held) = unsafe { piece.into_parts() };
        let (key, value) = layout
            .split(bytes)
            .expect("the caller checked the record's length");
        RecordBuf {
            key,
            value,
            key_utf8: layout.key_utf8,
            kind: layout.kind,
            _held: held,
        }
    }

    /// The record holding only its own bytes: one read from a shared
    /// block (a cache's) copies its key and value out, so that keeping it
    /// does not keep the block (`get_many`'s results).
    fn detached(self) -> RecordBuf<'a> {
        if !matches!(self._held, Some(source::Held::Shared(_))) {
            return self;
        }
        self.into_owned()
    }

    /// The record holding a copy of its bytes, to be kept apart from the
    /// store it was read from (a remote read that may be done again on a
    /// newer store, say).
    ///
    /// A record that already holds its own buffer (read from a file or a
    /// server, or decoded) keeps it: no copy, so a long value read remotely
    /// is held once, not twice, and nothing is allocated here.
    pub fn into_owned(self) -> RecordBuf<'static> {
        if matches!(self._held, Some(source::Held::Owned(_))) {
            // SAFETY: `key` and `value` point into the heap buffer of the
            // `Vec` that `_held` owns (`new` and `owning` make them so for
            // an owned piece), which moves with the record and lives as
            // long as it: they borrow nothing for `'a`, and only the
            // lifetime parameter changes.
            return unsafe { std::mem::transmute::<RecordBuf<'a>, RecordBuf<'static>>(self) };
        }
        let mut bytes = Vec::with_capacity(self.key.len() + self.value.len());
        bytes.extend_from_slice(self.key);
        bytes.extend_from_slice(self.value);
        let (key, value) = (0..self.key.len(), self.key.len()..bytes.len());
        RecordBuf::owning(bytes, key, value, self.key_utf8, self.kind)
    }

    /// A record whose value was decoded (`Reader::decoded`): `bytes` is the
    /// value followed by the key's last `key_len` bytes.
    fn from_decoded(bytes: Vec<u8>, key_len: usize, layout: Layout) -> RecordBuf<'a> {
        let split = bytes.len() - key_len;
        let (key, value) = (split..bytes.len(), 0..split);
        RecordBuf::owning(bytes, key, value, layout.key_utf8, layout.kind)
    }

    /// A record whose key and value are the ranges `key` and `value` of
    /// `bytes`, which it holds.
    fn owning(
        bytes: Vec<u8>,
        key: Range<usize>,
        value: Range<usize>,
        key_utf8: bool,
        kind: ValueKind,
    ) -> RecordBuf<'a> {
        // SAFETY: as in `new`: the slices point into the Vec kept beside
        // them in `_held`, whose buffer neither moves nor goes while the
        // record lives, and are handed out only borrowed from `&self`.
        let (all, held) = unsafe { Piece::<'a>::owned(bytes).into_parts() };
        RecordBuf {
            key: &all[key],
            value: &all[value],
            key_utf8,
            kind,
            _held: held,
        }
    }

    /// A record borrowed for `'a` from a source in memory.
    #[inline(always)]
    fn borrowed(key: &'a [u8], value: &'a [u8], layout: Layout) -> RecordBuf<'a> {
        RecordBuf {
            key,
            value,
            key_utf8: layout.key_utf8,
            kind: layout.kind,
            _held: None,
        }
    }

    /// The record, borrowed from this holder.
    #[inline]
    pub fn record(&self) -> Record<'_> {
        Record {
            key: self.key,
            key_utf8: self.key_utf8,
            value: self.value,
            kind: self.kind,
        }
    }

    /// The key's bytes.
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.key
    }

    /// The value's bytes: a string's bytes, or one encoded typed value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.value
    }

    /// True if the key was added as UTF-8 text.
    #[inline]
    pub fn key_utf8(&self) -> bool {
        self.key_utf8
    }

    /// The value's kind (string encoding, or typed).
    #[inline]
    pub fn kind(&self) -> ValueKind {
        self.kind
    }

    /// The value as an owned tree (`Value::of_record`).
    pub fn decode(&self) -> Result<crate::value::Value> {
        crate::value::Value::of_record(&self.record())
    }
}

impl std::fmt::Debug for RecordBuf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RecordBuf").field(&self.record()).finish()
    }
}

/// Records are equal when their keys, values and kinds are, wherever their
/// bytes are held.
impl PartialEq for RecordBuf<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.record() == other.record()
    }
}

impl Eq for RecordBuf<'_> {}

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
}

#[cfg(feature = "mmap")]
impl Reader<memmap2::Mmap> {
    /// Memory-maps the file at `path` and checks its header.
    ///
    /// The file must not be modified in place while it is mapped; stores
    /// are replaced by renaming a new file over them (`Builder::write_file`
    /// does that), which leaves open readers on the old file.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Reader<memmap2::Mmap>> {
        let path = path.as_ref();
        Reader::new(map_file(path)?).map_err(|e| e.with_path(path))
    }
}

#[cfg(feature = "mmap")]
impl Reader<fault::GuardedMap> {
    /// `open`, with the mapping registered with the SIGBUS handler of
    /// [`fault::install`] (call that first): a page that faults because the
    /// file shrank under the map reads as zeros and counts in
    /// `source().faults()`, which the caller checks after each operation
    /// (see [`Reader::check_faults`]).
    pub fn open_guarded(path: impl AsRef<std::path::Path>) -> Result<Reader<fault::GuardedMap>> {
        let path = path.as_ref();
        Reader::new(fault::GuardedMap::open(path)?).map_err(|e| e.with_path(path))
    }

    /// Whether `path` now names another file than the one this reader
    /// mapped, or none: a new store was published there (by rename, which
    /// gives the path a new file), or the store was deleted. False if the
    /// path still names the mapped file, or if that is not known.
    pub fn is_stale(&self, path: impl AsRef<std::path::Path>) -> bool {
        self.source.is_stale(path.as_ref())
    }

    /// An error if a page of the mapping has faulted since it was opened:
    /// the file was truncated or rewritten in place, so nothing read from
    /// it can be trusted. Cheap (one atomic load): call it after every
    /// operation whose result is about to be used.
    #[inline]
    pub fn check_faults(&self) -> Result<()> {
        match self.source.faults() {
            0 => Ok(()),
            _ => Err(Error::Changed { path: None }),
        }
    }
}

/// Maps the store file at `path`.
#[cfg(feature = "mmap")]
fn map_file(path: &std::path::Path) -> Result<memmap2::Mmap> {
    map_file_with_id(path).map(|(map, _)| map)
}

/// Which file a path names: its device and inode. Publishing a store
/// renames a new file over the path, which gives the path a new inode, so
/// a reader compares the file it mapped with the one the path names now
/// (`Reader::is_stale`).
#[cfg(feature = "mmap")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    device: u64,
    inode: u64,
}

#[cfg(feature = "mmap")]
impl FileId {
    /// The file `path` names now (following symbolic links, as opening
    /// does).
    pub fn of_path(path: &std::path::Path) -> std::io::Result<FileId> {
        std::fs::metadata(path).map(|m| FileId::of_metadata(&m))
    }

    /// The file `file` is.
    pub fn of_file(file: &std::fs::File) -> std::io::Result<FileId> {
        file.metadata().map(|m| FileId::of_metadata(&m))
    }

    fn of_metadata(metadata: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId {
            device: metadata.dev(),
            inode: metadata.ino(),
        }
    }
}

/// Opens the store file at `path` for reading, with the identity of the
/// file opened (taken from the open file, so a rename between the open and
/// the check cannot mislabel it) and its length.
///
/// Only a regular file is opened. A FIFO would block the open until a
/// writer came, which may be never, so the type is looked at first (a
/// device or socket is never opened at all), and the open itself does not
/// wait (`O_NONBLOCK`), in case a FIFO took the file's place in between;
/// the open file's type is checked again.
#[cfg(feature = "mmap")]
pub fn open_regular_file(path: &std::path::Path) -> Result<(std::fs::File, FileId, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |e| Error::io(Some(path), e);
    check_regular_file(path, &std::fs::metadata(path).map_err(io)?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    check_regular_file(path, &metadata)?;
    Ok((file, FileId::of_metadata(&metadata), metadata.len()))
}

/// Maps the file at `path` (a regular file, opened as `open_regular_file`
/// opens it), with the identity of the file opened.
#[cfg(feature = "mmap")]
pub(crate) fn map_file_with_id(path: &std::path::Path) -> Result<(memmap2::Mmap, FileId)> {
    let (file, id, _) = open_regular_file(path)?;
    Ok((
        map_open_file(&file).map_err(|e| Error::io(Some(path), e))?,
        id,
    ))
}

/// Maps an open store file, read-only.
#[cfg(feature = "mmap")]
pub(crate) fn map_open_file(file: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the map is read-only and private to this reader. Stores are
    // immutable by contract: they are published by rename and never
    // written in place, so the mapped bytes do not change under us. A
    // file truncated by another process raises SIGBUS, the same caveat
    // as every mmap-based reader (fst, LMDB, sparkey), unless the map
    // is guarded (`open_guarded`, `fault`).
    let map = unsafe { memmap2::Mmap::map(file) }?;
    // A lookup reads a few scattered pages (seeds, slots, one record):
    // without this advice each fault reads ahead up to the device's
    // read_ahead_kb (8 MiB on this project's VMs), and a store larger than
    // memory reads 2,000 times what its lookups use (1.9 ms a cold lookup
    // in a 33 GB store against 0.22 ms with it, measured; RocksDB opens
    // its files with the same advice, `advise_random_on_open`). Passes in
    // order ask for their pages ahead (`Source::will_read`). A small
    // store keeps the default: a few faults read all of it, and its open
    // saves the call. Advice only: a failure loses nothing but speed.
    if map.len() as u64 >= RANDOM_ADVICE_FROM {
        let _ = map.advise(memmap2::Advice::Random);
    }
    Ok(map)
}

/// An error unless `metadata` is a regular file's: a directory is
/// `EISDIR`, as `File.open` says; a FIFO, socket or device is not a store
/// and is named as what it is.
#[cfg(feature = "mmap")]
fn check_regular_file(path: &std::path::Path, metadata: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        return Err(Error::io(
            Some(path),
            std::io::Error::from_raw_os_error(EISDIR),
        ));
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Err(Error::NotAStore {
        path: Some(path.to_path_buf()),
        reason: format!("{what}, not a regular file; a store is read from a regular file"),
    })
}

/// The errno of "Is a directory" (the same on Linux, macOS and the BSDs).
#[cfg(feature = "mmap")]
const EISDIR: i32 = 21;

/// The bytes of `section` in a store held in memory. Open checked that it
/// lies inside the file; `None` only if the source's slice changed since.
#[inline(always)]
fn section_slice<'b>(bytes: &'b [u8], section: &Section) -> Option<&'b [u8]> {
    bytes.get(usize::try_from(section.offset).ok()?..usize::try_from(section.end()).ok()?)
}

/// Keys a batch over a source in memory looks up side by side: enough for
/// the misses of a group to overlap (a core keeps about 10 to 20 misses in
/// flight), few enough that its lines stay in the cache between levels.
const BATCH_GROUP: usize = 16;

/// Asks the CPU to bring the cache line holding `bytes[at]` in, and goes
/// on without waiting. A hint only: nothing where it is not x86-64, and
/// nothing for an offset outside `bytes`.
#[inline(always)]
fn prefetch(bytes: &[u8], at: u64) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = usize::try_from(at).ok().and_then(|at| bytes.get(at)) {
        // SAFETY: a prefetch reads nothing the program sees and never
        // faults (not even on a page of a map whose file was truncated);
        // the address is inside `bytes` all the same. SSE is part of every
        // x86-64 CPU.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (byte as *const u8).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
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
            compact,
            offset_bits: header.offset_bits(),
            remap_bits: header.remap_bits(),
            layout,
            header,
            source,
            decoder: std::sync::OnceLock::new(),
            max_value_size: DEFAULT_MAX_VALUE_SIZE,
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

    /// Entry `k` of the seed index.
    fn seed_index_entry(&self, k: u64) -> Result<u32> {
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
    fn seed_block_bounds(&self, block: u64) -> Result<(u32, u32)> {
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
    fn pilot(&self, bucket: u64) -> Result<u64> {
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
    fn packed(
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
    fn part_entry(&self, part: u64) -> Result<PartEntry> {
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
    fn compact_local_slot(&self, hash: u64) -> Result<Option<(PartEntry, u64)>> {
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
    fn compact_remap_bit(entry: &PartEntry, local: u64) -> Option<(u64, u32)> {
        let width = entry.remap_bits();
        let bit = (local - entry.keys as u64)
            .checked_mul(width as u64)?
            .checked_add(entry.remap_bit)?;
        Some((bit, width))
    }

    /// The final slot of a part's slot `local`: its remap entry if it is
    /// at or past the part's key count, plus the part's first key.
    #[inline(always)]
    fn compact_final(&self, entry: &PartEntry, local: u64) -> Result<u64> {
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
    fn compact_slot_of(&self, hash: u64) -> Result<u64> {
        match self.compact_local_slot(hash)? {
            Some((entry, local)) => self.compact_final(&entry, local),
            None => Ok(0),
        }
    }

    /// The slot of a key hash, in `0..len()`.
    #[inline(always)]
    fn slot_of(&self, hash: u64) -> Result<u64> {
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
    fn remapped(&self, slot: u64) -> Result<u64> {
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
    fn slot_before_remap(&self, hash: u64) -> Result<u64> {
        let (bucket, first_slot) = self.buckets.locate(hash);
        let pilot = self.pilot(bucket)?;
        Ok(first_slot + chd::slot(hash, pilot, self.buckets.slots_per_part()))
    }

    /// Where in the source the seed block holding `bucket`'s pilot is
    /// (`None` if the index says nothing sensible: the read reports it).
    fn seed_block_range(&self, bucket: u64) -> Option<Range<u64>> {
        let (start, end) = self
            .seed_block_bounds(bucket / self.layout.block_len() as u64)
            .ok()?;
        let unit = self.layout.unit_bytes() as u64;
        let at = self.seeds.offset + start as u64 * unit;
        Some(at..at + end.checked_sub(start)? as u64 * unit)
    }

    /// Where in the source element `index` of a packed section is read.
    fn packed_range(section: &Section, width: u32, index: u64) -> Option<Range<u64>> {
        let (byte, _) = bits::packed_position(index, width)?;
        Some(section.offset + byte..section.offset + byte + 8)
    }

    /// Looks many keys up, reading level by level: the seed blocks of all
    /// of them, then all their slots, then all their records, each level
    /// handed to the source as one [`Source::prefetch`]. A network source
    /// fetches a level in one round trip, so a batch costs about as many
    /// round trips as one key. Over a source in memory (a map) the keys go
    /// in groups whose cache misses overlap (see `get_many_in_memory`).
    /// The results are in the order of `keys`.
    ///
    /// Each level visits the keys in the order of where its bytes lie, and
    /// a level whose blocks would not fit the source's cache
    /// ([`Source::capacity_hint`]) is read in pieces of consecutive blocks
    /// that do: every block a batch needs is fetched about once per level,
    /// so requests grow with the distinct blocks needed (and the cache's
    /// size bounds memory), never with keys times evictions. Each record
    /// found holds its own bytes, not the block it was read from.
    ///
    /// ```
    /// let mut builder = hashfile::Builder::new(Default::default())?;
    /// builder.insert(b"a", b"1");
    /// builder.insert(b"b", b"2");
    /// let store = hashfile::Reader::new(builder.to_bytes()?)?;
    /// let found = store.get_many(&["b", "c", "a"])?;
    /// let values: Vec<Option<&[u8]>> = found.iter().map(|r| r.as_ref().map(|r| r.value())).collect();
    /// assert_eq!(values, [Some(&b"2"[..]), None, Some(&b"1"[..])]);
    /// # Ok::<(), hashfile::Error>(())
    /// ```
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<RecordBuf<'_>>>> {
        if self.is_empty() {
            return keys.iter().map(|key| self.get(key.as_ref())).collect();
        }
        if let Some(bytes) = self.source.as_slice() {
            return self.get_many_in_memory(bytes, keys);
        }
        let hashes: Vec<u64> = keys
            .iter()
            .map(|key| chd::hash_key(key.as_ref(), self.hash_seed))
            .collect();
        let mut order: Vec<usize> = (0..keys.len()).collect();
        let slots = if self.compact {
            self.compact_slots_batched(&hashes, &mut order)?
        } else {
            self.classic_slots_batched(&hashes, &mut order)?
        };
        order.sort_unstable_by_key(|&i| slots[i]);
        let mut offsets = vec![0u64; keys.len()];
        self.in_pieces(
            &order,
            |i| Self::packed_range(&self.slots, self.offset_bits, slots[i]),
            |i| {
                offsets[i] = self.slot_offset(slots[i])?;
                Ok(())
            },
        )?;
        // Records, in file order. A record's length is in its first bytes:
        // a block's worth from its start is prefetched (a longer record
        // reads on, one round trip more).
        order.sort_unstable_by_key(|&i| offsets[i]);
        let guess = self.source.block_len_hint().unwrap_or(OPEN_READ_LEN) as u64;
        let records_end = self.records.offset + self.records.length;
        let mut found: Vec<Option<RecordBuf<'_>>> = (0..keys.len()).map(|_| None).collect();
        self.in_pieces(
            &order,
            |i| {
                let at = self.records.offset.saturating_add(offsets[i]);
                Some(at.min(records_end)..at.saturating_add(guess).min(records_end))
            },
            |i| {
                if let Some((record, _)) = self.record_at(offsets[i])? {
                    if record.key() == keys[i].as_ref() {
                        found[i] = Some(record.detached());
                    }
                }
                Ok(())
            },
        )?;
        Ok(found)
    }

    /// The first levels of a batch with the classic index: each key's
    /// final slot, through its seed block (and seed index entry, when the
    /// index was too large to load), then the rare remap entries. The
    /// caller sorts `order` by the final slots.
    fn classic_slots_batched(&self, hashes: &[u64], order: &mut [usize]) -> Result<Vec<u64>> {
        let bucket = |i: usize| self.buckets.locate(hashes[i]).0;
        // Seed blocks, in the order of the seed blocks (and of their index
        // entries, a level of their own when the index was too large to
        // load at open).
        order.sort_unstable_by_key(|&i| bucket(i));
        let mut seed_blocks: Vec<Option<Range<u64>>> = vec![None; hashes.len()];
        if self.loaded_seed_index.is_some() {
            for &i in order.iter() {
                seed_blocks[i] = self.seed_block_range(bucket(i));
            }
        } else {
            let entry =
                |i: usize| self.seed_index.offset + bucket(i) / self.layout.block_len() as u64 * 4;
            self.in_pieces(
                order,
                |i| Some(entry(i)..entry(i) + 8),
                |i| {
                    seed_blocks[i] = self.seed_block_range(bucket(i));
                    Ok(())
                },
            )?;
        }
        let mut slots = vec![0u64; hashes.len()];
        self.in_pieces(
            order,
            |i| seed_blocks[i].clone(),
            |i| {
                slots[i] = self.slot_before_remap(hashes[i])?;
                Ok(())
            },
        )?;
        // The rare remapped slots, then every slot, in slot order.
        order.sort_unstable_by_key(|&i| slots[i]);
        let remapped: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| slots[i] >= self.entry_count)
            .collect();
        let mut moved = Vec::with_capacity(remapped.len());
        self.in_pieces(
            &remapped,
            |i| Self::packed_range(&self.remap, self.remap_bits, slots[i] - self.entry_count),
            |i| {
                moved.push((i, self.remapped(slots[i])?));
                Ok(())
            },
        )?;
        for (i, slot) in moved {
            slots[i] = slot;
        }
        Ok(slots)
    }

    /// The first levels of a batch with the compact index: each key's
    /// parts-table entry, its pilot, then the rare remap entries, each
    /// level prefetched together. The caller sorts `order` by the final
    /// slots.
    fn compact_slots_batched(&self, hashes: &[u64], order: &mut [usize]) -> Result<Vec<u64>> {
        // The part and the bucket grow with the hash.
        order.sort_unstable_by_key(|&i| hashes[i]);
        let part = |i: usize| self.buckets.split(hashes[i]).0;
        let entry_at = |i: usize| self.parts.offset + part(i) * PART_ENTRY_LEN as u64;
        self.in_pieces(
            order,
            |i| Some(entry_at(i)..entry_at(i) + PART_ENTRY_LEN as u64),
            |_| Ok(()),
        )?;
        let pilot_at = |i: usize| {
            let (part, within) = self.buckets.split(hashes[i]);
            self.pilots.offset
                + part * self.buckets.buckets_per_part()
                + self.buckets.bucket_in_part(within)
        };
        let mut local = vec![None; hashes.len()];
        self.in_pieces(
            order,
            |i| Some(pilot_at(i)..pilot_at(i) + 1),
            |i| {
                local[i] = self.compact_local_slot(hashes[i])?;
                Ok(())
            },
        )?;
        let remap_bit = |i: usize| match local[i] {
            Some((entry, slot)) if slot >= entry.keys as u64 => {
                Self::compact_remap_bit(&entry, slot)
            }
            _ => None,
        };
        let mut remapped: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| remap_bit(i).is_some())
            .collect();
        remapped.sort_unstable_by_key(|&i| remap_bit(i));
        self.in_pieces(
            &remapped,
            |i| {
                let (bit, _) = remap_bit(i)?;
                let at = self.remap.offset + bit / 8;
                Some(at..at + 8)
            },
            |_| Ok(()),
        )?;
        order
            .iter()
            .map(|&i| match &local[i] {
                Some((entry, slot)) => self.compact_final(entry, *slot).map(|s| (i, s)),
                None => Ok((i, 0)),
            })
            .try_fold(vec![0u64; hashes.len()], |mut slots, found| {
                let (i, slot) = found?;
                slots[i] = slot;
                Ok(slots)
            })
    }

    /// One level of a batch: `order` (sorted by where the level's bytes
    /// are) cut into runs whose blocks fit half the source's cache; each
    /// run's ranges (`range_of` each key, `None` for one with nothing to
    /// read) prefetched together, then `read` called for each of its keys.
    fn in_pieces(
        &self,
        order: &[usize],
        range_of: impl Fn(usize) -> Option<Range<u64>>,
        mut read: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        let block_len = self.source.block_len_hint().unwrap_or(OPEN_READ_LEN).max(1) as u64;
        // Half the cache: a piece's blocks, prefetched together, stay
        // resident until read. A block cache marks prefetched blocks
        // referenced, so CLOCK's hand must pass one twice to evict it: a
        // ring and a half of moves at least, more than half a ring of
        // inserts can make (each insert moves the hand once, plus once per
        // bit it clears: at most the ring's bits and the new blocks').
        let budget = self
            .source
            .capacity_hint()
            .map_or(u64::MAX, |bytes| (bytes as u64 / block_len / 2).max(1));
        let mut start = 0;
        while start < order.len() {
            let (mut blocks, mut end, mut ranges) = (0u64, start, Vec::new());
            // Ranges come in ascending order of position, so of the blocks
            // counted only the last can be counted again.
            let mut last_block = None::<u64>;
            while end < order.len() {
                let range = range_of(order[end]);
                let span = range
                    .as_ref()
                    .map(|r| (r.start / block_len, r.end.saturating_sub(1) / block_len));
                let new = span.map_or(0, |(first, last)| {
                    let from = last_block.map_or(first, |seen| first.max(seen + 1));
                    last.saturating_sub(from) + u64::from(last >= from)
                });
                if end > start && blocks + new > budget {
                    break;
                }
                blocks += new;
                if let Some((_, last)) = span {
                    last_block = Some(last_block.map_or(last, |seen| seen.max(last)));
                }
                ranges.extend(range);
                end += 1;
            }
            self.source.prefetch(&ranges).map_err(io_error)?;
            for &i in &order[start..end] {
                read(i)?;
            }
            start = end;
        }
        Ok(())
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
            .iter()
            .map(|s| s.offset..s.offset + s.length)
            .filter(|r| !r.is_empty())
            .collect();
        self.source.pin(&ranges).map_err(io_error)
    }

    /// The record offset in slot `slot`.
    #[inline(always)]
    fn slot_offset(&self, slot: u64) -> Result<u64> {
        self.packed(
            &self.slots,
            SectionId::Slots,
            self.offset_bits,
            slot,
            "slot past end of slots",
        )
    }

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

    /// For a pass over the records in order, after the record at records
    /// offset `offset`, which ends at `next`: at the first record, and each
    /// time the pass enters a new window, asks the source to read that
    /// window and the next. Windows double from 64 KiB to `READ_AHEAD / 2`
    /// (`read_ahead_window`), so that a pass that stops after a few records
    /// asked for little: a remote source fetches what it is asked for.
    /// Without state between records, so that a pass by cursor
    /// (`next_record`, which the bindings' iterations call chunk by chunk)
    /// reads ahead as `iter` and `verify` do. A lookup's pages are read one
    /// at a time (random-access advice); a pass would otherwise fault in a
    /// page at a time too.
    #[inline]
    pub(crate) fn read_ahead_past(&self, offset: u64, next: u64) {
        let (from, window) = read_ahead_window(next);
        if offset != 0 && read_ahead_window(offset).0 == from {
            return;
        }
        let len = (2 * window).min(self.records.length.saturating_sub(from));
        if len > 0 {
            self.source.will_read(self.records.offset + from, len);
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
                self.found(key, value, layout)?,
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
            return Ok(Some((self.decoded(key, value, layout)?, next)));
        }
        self.check_stored_len(key, value.len())?;
        Ok(Some((RecordBuf::new(piece, layout), next)))
    }

    /// The record at byte `offset` of the records as stored (a compressed
    /// value not decoded), read from the source, and its layout: `None`
    /// at the end of the records.
    fn stored_record_at(&self, offset: u64) -> Result<Option<(Piece<'_>, Layout)>> {
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
                match record::parse(&piece) {
                    Ok(Some(layout)) => layout,
                    Ok(None) => {
                        return Err(corrupt(
                            SectionId::Records,
                            "record header runs past end of records",
                        ))
                    }
                    Err(damage) => return Err(corrupt(SectionId::Records, &damage.to_string())),
                }
            }
            Ok(None) => {
                return Err(corrupt(
                    SectionId::Records,
                    "record header runs past end of records",
                ))
            }
            Err(damage) => return Err(corrupt(SectionId::Records, &damage.to_string())),
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

    /// The record found in memory: borrowed as it is, or decoded if its
    /// value is compressed.
    #[inline(always)]
    fn found<'b>(
        &'b self,
        key: &'b [u8],
        value: &'b [u8],
        layout: Layout,
    ) -> Result<RecordBuf<'b>> {
        if layout.compressed || layout.items {
            return self.decoded(key, value, layout);
        }
        self.check_stored_len(key, value.len())?;
        Ok(RecordBuf::borrowed(key, value, layout))
    }

    /// The record of a compressed value, or of a typed value holding
    /// compressed items, decoded into a buffer of its own. Damage is an
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
    fn decoded<'b>(&'b self, key: &[u8], value: &[u8], layout: Layout) -> Result<RecordBuf<'b>> {
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
            decoder
                .decode(value, key, max)
                .map_err(|e| self.decode_error(key, e))?
        };
        Ok(RecordBuf::from_decoded(bytes, key.len(), layout))
    }

    /// A decoder's error for the value of `key` as the reader's.
    #[cold]
    fn decode_error(&self, key: &[u8], error: crate::compress::DecodeError) -> Error {
        use crate::compress::DecodeError;
        match error {
            DecodeError::Damaged(what) => corrupt(SectionId::Records, &what),
            DecodeError::TooLarge(size) => self.too_large(key, format!("decodes to {size} bytes")),
            DecodeError::OutOfMemory(size) => crate::error::out_of_memory(size, "a decoded value"),
        }
    }

    /// The decoder of a record compressed as `layout` says, once the
    /// header is found to allow it.
    fn decoder_for(&self, layout: Layout) -> Result<&crate::compress::Decoder> {
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
            let found = self.found(found, value, layout)?;
            return walk(&found.record(), path, symbolize_names, answer).map(Some);
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

    /// The decoder of the store's compressed values, made from the
    /// dictionary section (its length was checked at open) by the first
    /// lookup that needs it. A failure is not kept: a remote read that
    /// failed is tried again by the next lookup.
    fn decoder(&self) -> Result<&crate::compress::Decoder> {
        use crate::compress::{Decoder, STATS_LEN};
        if let Some(decoder) = self.decoder.get() {
            return Ok(decoder);
        }
        let section = self.header.section(SectionId::Dictionary);
        let bytes = self
            .source
            .read_exact_at(
                section.offset + STATS_LEN as u64,
                (section.length - STATS_LEN as u64) as usize,
            )
            .map_err(io_error)?;
        let decoder = Decoder::new(&bytes).map_err(|what| corrupt(SectionId::Dictionary, &what))?;
        // Two threads may both make one; the first kept is the one used.
        Ok(self.decoder.get_or_init(|| decoder))
    }

    /// What the cache of decoded items holds and has done
    /// (`compress::Decoder::decode_item`): `None` for a store without
    /// compressed items, zeros before the first dig into one.
    pub fn item_cache_stats(&self) -> Option<crate::compress::ItemCacheStats> {
        if !self.header.has_compressed_items() {
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
    fn record_in_place<'b>(
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
        let layout = match record::parse(rest) {
            Ok(Some(layout)) => layout,
            Ok(None) => {
                return Err(corrupt(
                    SectionId::Records,
                    "record header runs past end of records",
                ))
            }
            Err(damage) => return Err(corrupt(SectionId::Records, &damage.to_string())),
        };
        match layout.split(rest) {
            Some((key, value)) => Ok((layout, key, value)),
            None => Err(corrupt(
                SectionId::Records,
                "record extends past end of records",
            )),
        }
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
        if let Some(bytes) = self.source.as_slice() {
            // The key is compared on the map, and the record built once,
            // where it is returned.
            let (layout, found, value) = self.record_in_place(bytes, offset)?;
            if found != key {
                return Ok(None);
            }
            return self.found(found, value, layout).map(Some);
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
        let slot = self.slot_of(chd::hash_key(key, self.hash_seed))?;
        self.slot_offset(slot).map(Some)
    }

    /// `get_many` over a source in memory. A lookup is three dependent
    /// reads at places no cache holds in a large store (a seed block, a
    /// slot word, a record): one after another, each waits its miss out.
    /// Here a group of keys goes level by level, asking the CPU for each
    /// key's line of the next level before reading any, so the group's
    /// misses overlap. Each level calls what `get` calls, so the results
    /// are `get`'s; a group that meets damage is looked up again key by
    /// key with `get`, so the error is the one `get` gives for the first
    /// damaged key in order.
    fn get_many_in_memory<'r, K: AsRef<[u8]>>(
        &'r self,
        bytes: &'r [u8],
        keys: &[K],
    ) -> Result<Vec<Option<RecordBuf<'r>>>> {
        let mut found = Vec::with_capacity(keys.len());
        for group in keys.chunks(BATCH_GROUP) {
            let before = found.len();
            if self.group_in_memory(bytes, group, &mut found).is_err() {
                found.truncate(before);
                for key in group {
                    found.push(self.get(key.as_ref())?);
                }
            }
        }
        Ok(found)
    }

    /// One group of `get_many_in_memory`: at most [`BATCH_GROUP`] keys.
    #[inline(always)]
    fn group_in_memory<'r, K: AsRef<[u8]>>(
        &'r self,
        bytes: &'r [u8],
        group: &[K],
        found: &mut Vec<Option<RecordBuf<'r>>>,
    ) -> Result<()> {
        let mut hashes = [0u64; BATCH_GROUP];
        let mut slots = [0u64; BATCH_GROUP];
        for (hash, key) in hashes.iter_mut().zip(group) {
            *hash = chd::hash_key(key.as_ref(), self.hash_seed);
            if self.compact {
                let (part, within) = self.buckets.split(*hash);
                let bucket =
                    part * self.buckets.buckets_per_part() + self.buckets.bucket_in_part(within);
                prefetch(bytes, self.pilots.offset.saturating_add(bucket));
            } else if let Some(block) = self.seed_block_range(self.buckets.locate(*hash).0) {
                prefetch(bytes, block.start);
            }
        }
        for (slot, &hash) in slots.iter_mut().zip(&hashes[..group.len()]) {
            *slot = self.slot_of(hash)?;
            if let Some(word) = Self::packed_range(&self.slots, self.offset_bits, *slot) {
                prefetch(bytes, word.start);
            }
        }
        // The offsets replace the slots they were read from.
        for slot in &mut slots[..group.len()] {
            *slot = self.slot_offset(*slot)?;
            prefetch(bytes, self.records.offset.saturating_add(*slot));
        }
        for (key, &offset) in group.iter().zip(&slots) {
            let (layout, stored, value) = self.record_in_place(bytes, offset)?;
            found.push(if stored == key.as_ref() {
                Some(self.found(stored, value, layout)?)
            } else {
                None
            });
        }
        Ok(())
    }

    /// Iterates over the records in the order they were added.
    pub fn iter(&self) -> Iter<'_, S> {
        Iter::new(self)
    }

    /// Sizes and parameters, for `hashfile info`.
    pub fn info(&self) -> Info {
        let h = &self.header;
        let sizes: Vec<(&'static str, u64)> = h
            .present_sections()
            .iter()
            .map(|&id| (id.name(), h.section(id).length))
            .collect();
        // The function: everything a lookup reads but the slots and records.
        let (function, seeds): (&[SectionId], &[SectionId]) = if self.compact {
            (
                &[SectionId::Pilots, SectionId::Parts, SectionId::Remap],
                &[SectionId::Pilots],
            )
        } else {
            (
                &[SectionId::SeedIndex, SectionId::Seeds, SectionId::Remap],
                &[SectionId::SeedIndex, SectionId::Seeds],
            )
        };
        let bytes_of = |ids: &[SectionId]| ids.iter().map(|&id| h.section(id).length).sum::<u64>();
        let mphf_bytes = bytes_of(function);
        let per_key = |bytes: u64| {
            if h.geometry.entry_count == 0 {
                0.0
            } else {
                bytes as f64 * 8.0 / h.geometry.entry_count as f64
            }
        };
        Info {
            entries: h.geometry.entry_count,
            index: h.index_kind(),
            file_bytes: h.file_len,
            section_bytes: sizes,
            mphf_bits_per_key: per_key(mphf_bytes),
            seed_bits_per_key: per_key(bytes_of(seeds)),
        }
    }
}

/// Sizes of a store, from its header.
#[derive(Clone, Debug, PartialEq)]
pub struct Info {
    /// Number of entries.
    pub entries: u64,
    /// The index layout.
    pub index: IndexKind,
    /// Length of the file.
    pub file_bytes: u64,
    /// Length of each section, in section-table order.
    pub section_bytes: Vec<(&'static str, u64)>,
    /// The perfect-hash function in bits per key: seed index, seeds and
    /// remap, or with the compact index pilots, parts and remap.
    pub mphf_bits_per_key: f64,
    /// The displacement seeds and their block index alone (the compact
    /// index's pilots), in bits per key.
    pub seed_bits_per_key: f64,
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

/// `Reader::dig_with` on a record read whole: its value walked in place.
fn walk<R>(
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
