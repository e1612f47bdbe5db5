//! One source type over every kind of location, so that an open store is
//! one `Reader` type whatever it reads: a local file on a guarded memory
//! map, or a remote store through a block cache.

use std::io;
use std::ops::Range;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use hashfile::read::fault::{self, GuardedMap};
use hashfile::read::{BlockCache, FileId, FileSource, Piece, Source};
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

/// Opens the store at `location`: an `http://`, `https://` or `s3://` URL
/// (reached as `remote` says), else a path, mapped.
pub fn open_store(location: &str, remote: &RemoteOptions) -> hashfile::Result<Store> {
    if Location::is_remote(location) {
        return hashfile_remote::open_with(location, remote.clone(), StoreSource::Remote);
    }
    let path = Path::new(location);
    let map = GuardedMap::open(path)?;
    let source = if fault::installed() && !map.is_guarded() && map.size() > 0 {
        // The map's checks passed (a regular file); the file is opened
        // again to be read, and its own identity kept.
        drop(map);
        let io = |e| hashfile::Error::Io {
            path: Some(path.to_path_buf()),
            source: e,
        };
        // Without waiting, and a regular file again: the path may have
        // been swapped for a FIFO in between.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(io)?;
        if !file.metadata().map_err(io)?.is_file() {
            return Err(hashfile::Error::NotAStore {
                path: Some(path.to_path_buf()),
                reason: "not a regular file; a store is read from a regular file".into(),
            });
        }
        let id = FileId::of_file(&file).map_err(io)?;
        StoreSource::File(FileSource::new(file).map_err(io)?, id)
    } else {
        StoreSource::Local(map)
    };
    Reader::new(source).map_err(|e| e.with_path(path))
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
    /// opened: nothing read from it can be trusted. One atomic load; call
    /// it after every operation whose result is about to be used.
    #[inline(always)]
    pub fn check_faults(&self) -> hashfile::Result<()> {
        match self {
            StoreSource::Local(map) if map.faults() > 0 => Err(changed()),
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

    #[inline]
    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        match self {
            StoreSource::Local(map) => map.read_exact_at(offset, len),
            StoreSource::File(file, _) => file.read_exact_at(offset, len),
            StoreSource::Remote(cache) => cache.read_exact_at(offset, len),
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
