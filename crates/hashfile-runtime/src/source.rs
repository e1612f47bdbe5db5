//! One source type over every kind of location, so that an open store is
//! one `Reader` type whatever it reads: a local file on a guarded memory
//! map, or a remote store through a block cache.

use std::io;
use std::ops::Range;
use std::path::Path;

use hashfile::read::fault::GuardedMap;
use hashfile::read::{BlockCache, Piece, Source};
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
}

/// Opens the store at `location`: an `http://`, `https://` or `s3://` URL
/// (reached as `remote` says), else a path, mapped.
pub fn open_store(location: &str, remote: &RemoteOptions) -> hashfile::Result<Store> {
    if Location::is_remote(location) {
        return hashfile_remote::open_with(location, remote.clone(), StoreSource::Remote);
    }
    let path = Path::new(location);
    Reader::new(StoreSource::Local(GuardedMap::open(path)?)).map_err(|e| e.with_path(path))
}

impl std::fmt::Debug for StoreSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSource::Local(map) => f.debug_tuple("Local").field(map).finish(),
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
            StoreSource::Local(_) => None,
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
            StoreSource::Remote(cache) => cache.size(),
        }
    }

    #[inline]
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        match self {
            StoreSource::Local(map) => map.read_at(offset, len),
            StoreSource::Remote(cache) => cache.read_at(offset, len),
        }
    }

    #[inline]
    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        match self {
            StoreSource::Local(map) => map.read_exact_at(offset, len),
            StoreSource::Remote(cache) => cache.read_exact_at(offset, len),
        }
    }

    #[inline(always)]
    fn as_slice(&self) -> Option<&[u8]> {
        match self {
            StoreSource::Local(map) => map.as_slice(),
            StoreSource::Remote(_) => None,
        }
    }

    fn prefetch(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        match self {
            StoreSource::Local(map) => map.prefetch(ranges),
            StoreSource::Remote(cache) => cache.prefetch(ranges),
        }
    }

    fn pin(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        match self {
            StoreSource::Local(map) => map.pin(ranges),
            StoreSource::Remote(cache) => cache.pin(ranges),
        }
    }

    fn block_len_hint(&self) -> Option<usize> {
        match self {
            StoreSource::Local(map) => map.block_len_hint(),
            StoreSource::Remote(cache) => cache.block_len_hint(),
        }
    }

    fn capacity_hint(&self) -> Option<usize> {
        match self {
            StoreSource::Local(map) => map.capacity_hint(),
            StoreSource::Remote(cache) => cache.capacity_hint(),
        }
    }
}
