//! One source type over every kind of location, so that an open store is
//! one `Reader` type whatever it reads: a local file on a guarded memory
//! map, or a remote store through a block cache.

use std::io;
use std::ops::Range;
use std::path::Path;

use hashfile::read::fault::{self, GuardedMap};
use hashfile::read::{open_regular_file, BlockCache, FileId, FileSource, Piece, Source};
use hashfile::Reader;
use hashfile_remote::{Location, RemoteObject, RemoteOptions};

/// An open store, local or remote.
pub type Store = Reader<StoreSource>;

/// What a [`Store`] reads.
// The local variant stays unboxed: it is the hot path, and a box would put
// one more pointer chase in front of every lookup. A source is made once
// per open, so its size costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum StoreSource {
    /// A file on a memory map registered with the SIGBUS guard: a page
    /// that faults because the file shrank reads as zeros, and
    /// [`check_faults`](StoreSource::check_faults) turns that into
    /// `Error::Changed` after the read. Resident: the reader reads it in
    /// place.
    Local(GuardedMap),
    /// A store read over HTTP range requests or from S3.
    Remote(BlockCache<RemoteObject>),
    /// A local file read with positioned reads (`pread`), for when the
    /// SIGBUS guard is installed but every one of its
    /// `fault::MAX_GUARDED_MAPPINGS` slots is taken (a dataset of thousands
    /// of local shards): a map it cannot guard would crash the process if
    /// the file shrank, where a read past the end is an error. Slower (a
    /// copy per read), never unsafe.
    File(FileSource, FileId),
}

/// Bytes a store opened for positioned reads reads when the caller takes
/// a prefix (the header, a record); a seed index of up to four times this
/// is read at open.
const DEFERRED_READ_LEN: usize = 1024;

/// How a local store is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalOpen {
    /// Mapped at once.
    Mapped,
    /// Read with positioned reads until [`map_store`] maps it: opening
    /// then costs an open, a stat and a read of the header, and a lookup a
    /// few reads, where a map costs an `mmap`, a page fault (with the
    /// kernel's fault-around) for each page first touched, and an `munmap`
    /// that undoes them all (docs/RUBY.md, "Opening").
    Deferred,
}

/// Opens the store at `location`: an `http://`, `https://` or `s3://` URL
/// (reached as `remote` says), else a path, opened as `local` says.
pub fn open_store(
    location: &str,
    remote: &RemoteOptions,
    local: LocalOpen,
) -> hashfile::Result<Store> {
    if Location::is_remote(location) {
        return hashfile_remote::open_with(location, remote.clone(), StoreSource::Remote);
    }
    let path = Path::new(location);
    let (file, id, len) = open_regular_file(path)?;
    let source = match local {
        LocalOpen::Deferred => {
            // Reads of 1 KiB: the header, and most records, in one read
            // that copies little.
            let source = StoreSource::File(
                FileSource::with_len(file, len).with_block_len(DEFERRED_READ_LEN),
                id,
            );
            // A seed index of one read is read at open (that read also
            // gives the check of open its last entry, and each lookup one
            // read less); a larger one an entry at a time, as lookups need
            // it: reading it whole would cost what deferring saves.
            return Reader::with_seed_index_limit(source, DEFERRED_READ_LEN as u64 * 4)
                .map_err(|e| e.with_path(path));
        }
        LocalOpen::Mapped => mapped_source(file, id, len).map_err(|e| hashfile::Error::Io {
            path: Some(path.to_path_buf()),
            source: e,
        })?,
    };
    Reader::new(source).map_err(|e| e.with_path(path))
}

/// A mapped source over `file`, an open store file: a guarded map, or
/// positioned reads when the SIGBUS guard is installed but every one of
/// its slots is taken (`StoreSource::File`).
fn mapped_source(file: std::fs::File, id: FileId, len: u64) -> io::Result<StoreSource> {
    let map = GuardedMap::of_file(&file, id)?;
    Ok(if fault::installed() && !map.is_guarded() && len > 0 {
        StoreSource::File(FileSource::with_len(file, len), id)
    } else {
        StoreSource::Local(map)
    })
}

/// The same store, mapped, if `store` reads its file with positioned reads
/// and a map can be had: `None` for a store that is mapped already or
/// remote, and when the SIGBUS guard has no free slot (the store is then
/// better read as it is). The file is the same open file, so the bytes
/// are the same.
pub fn map_store(store: &Store) -> Option<hashfile::Result<Store>> {
    let StoreSource::File(source, id) = store.source() else {
        return None;
    };
    if source.shrank() {
        return None; // it stays changed: no map makes it readable
    }
    let io = |e| hashfile::Error::Io {
        path: None,
        source: e,
    };
    let file = match source.file().try_clone() {
        Ok(file) => file,
        Err(e) => return Some(Err(io(e))),
    };
    match mapped_source(file, *id, source.size()) {
        // The map must show the store that was opened: a file rewritten
        // in place since (not replaced by rename) is the StaleError of a
        // truncated one, never quietly the new store.
        Ok(mapped @ StoreSource::Local(_)) => Some(
            Reader::new(mapped)
                .and_then(|r| r.with_max_value_size(store.max_value_size()))
                .and_then(|r| {
                    if r.header() == store.header() {
                        Ok(r)
                    } else {
                        Err(changed())
                    }
                }),
        ),
        Ok(_) => None,
        Err(e) => Some(Err(io(e))),
    }
}

impl std::fmt::Debug for StoreSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSource::Local(map) => f.debug_tuple("Local").field(map).finish(),
            StoreSource::File(file, _) => f.debug_tuple("File").field(file).finish(),
            StoreSource::Remote(cache) => f
                .debug_struct("Remote")
                .field("size", &cache.size())
                .field("stats", &cache.stats())
                .finish(),
        }
    }
}

impl StoreSource {
    /// Whether `location` now names another file than the one mapped (a
    /// new store was published there by rename), or none. Never for a
    /// remote store: a replaced object is found out by the next read that
    /// reaches the server.
    pub fn is_stale(&self, location: &str) -> bool {
        match self {
            StoreSource::Local(map) => map.is_stale(Path::new(location)),
            StoreSource::File(_, id) => FileId::of_path(Path::new(location)).ok() != Some(*id),
            StoreSource::Remote(_) => false,
        }
    }

    /// An error if a page of a local store's map has faulted since it was
    /// opened, or a positioned read found the file shorter: nothing read
    /// from it can be trusted. One atomic load; call it after every
    /// operation whose result is about to be used.
    #[inline(always)]
    pub fn check_faults(&self) -> hashfile::Result<()> {
        match self {
            StoreSource::Local(map) if map.faults() > 0 => Err(changed()),
            StoreSource::File(file, _) if file.shrank() => Err(changed()),
            _ => Ok(()),
        }
    }

    /// The block cache of a remote store, for its counters and identity.
    pub fn block_cache(&self) -> Option<&BlockCache<RemoteObject>> {
        match self {
            StoreSource::Local(_) | StoreSource::File(..) => None,
            StoreSource::Remote(cache) => Some(cache),
        }
    }

    /// Whether reads may wait on the network: a binding runs them where
    /// waiting blocks nothing else (without Ruby's GVL, say).
    #[inline]
    pub fn is_remote(&self) -> bool {
        matches!(self, StoreSource::Remote(_))
    }
}

#[cold]
fn changed() -> hashfile::Error {
    hashfile::Error::Changed { path: None }
}

impl Source for StoreSource {
    #[inline]
    fn size(&self) -> u64 {
        match self {
            StoreSource::Local(map) => map.size(),
            StoreSource::File(file, _) => file.size(),
            StoreSource::Remote(cache) => cache.size(),
        }
    }

    #[inline]
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        match self {
            StoreSource::Local(map) => map.read_at(offset, len),
            StoreSource::File(file, _) => file.read_at(offset, len),
            StoreSource::Remote(cache) => cache.read_at(offset, len),
        }
    }

    /// Forwarded like every other method: without it a pass in order
    /// (`iter`, `verify`) over a map with random-access advice faulted its
    /// pages in one at a time (a cold `verify` of a 1 GB store took 28 s).
    fn will_read(&self, offset: u64, len: u64) {
        match self {
            StoreSource::Local(map) => map.will_read(offset, len),
            StoreSource::File(file, _) => file.will_read(offset, len),
            StoreSource::Remote(cache) => cache.will_read(offset, len),
        }
    }

    #[inline]
    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        match self {
            StoreSource::Local(map) => map.read_exact_at(offset, len),
            StoreSource::File(file, _) => file.read_exact_at(offset, len),
            StoreSource::Remote(cache) => cache.read_exact_at(offset, len),
        }
    }

    fn rereads_cheaply(&self) -> bool {
        match self {
            StoreSource::Local(map) => map.rereads_cheaply(),
            StoreSource::File(file, _) => file.rereads_cheaply(),
            StoreSource::Remote(cache) => cache.rereads_cheaply(),
        }
    }

    #[inline(always)]
    fn as_slice(&self) -> Option<&[u8]> {
        match self {
            StoreSource::Local(map) => map.as_slice(),
            StoreSource::File(..) | StoreSource::Remote(_) => None,
        }
    }

    fn prefetch(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        match self {
            StoreSource::Local(map) => map.prefetch(ranges),
            StoreSource::File(file, _) => file.prefetch(ranges),
            StoreSource::Remote(cache) => cache.prefetch(ranges),
        }
    }

    fn pin(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        match self {
            StoreSource::Local(map) => map.pin(ranges),
            StoreSource::File(file, _) => file.pin(ranges),
            StoreSource::Remote(cache) => cache.pin(ranges),
        }
    }

    fn block_len_hint(&self) -> Option<usize> {
        match self {
            StoreSource::Local(map) => map.block_len_hint(),
            StoreSource::File(file, _) => file.block_len_hint(),
            StoreSource::Remote(cache) => cache.block_len_hint(),
        }
    }

    fn capacity_hint(&self) -> Option<usize> {
        match self {
            StoreSource::Local(map) => map.capacity_hint(),
            StoreSource::File(file, _) => file.capacity_hint(),
            StoreSource::Remote(cache) => cache.capacity_hint(),
        }
    }
}
