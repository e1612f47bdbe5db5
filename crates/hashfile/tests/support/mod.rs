//! Byte sources for the reader tests: every reader test runs over each of
//! them, so the reader is shown to work wherever its bytes come from.
#![allow(dead_code)]

pub mod environment;
pub mod hostile;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hashfile::read::{BlockCache, CacheOptions, FileSource, Piece, RangeFetch, Source};
use hashfile::Reader;

/// Serves a store from memory in aligned blocks, as a block cache would:
/// a read returns shared bytes up to the end of the block it starts in, so
/// every read longer than what is left of a block comes back short. Counts
/// the reads it serves.
pub struct PieceSource {
    blocks: Vec<Arc<[u8]>>,
    block_len: usize,
    size: u64,
    reads: AtomicU64,
}

impl PieceSource {
    pub fn new(bytes: &[u8], block_len: usize) -> PieceSource {
        let blocks = bytes.chunks(block_len).map(Arc::from).collect();
        PieceSource {
            blocks,
            block_len,
            size: bytes.len() as u64,
            reads: AtomicU64::new(0),
        }
    }

    /// Reads served so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

impl Source for PieceSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.size)
        {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "past the end"));
        }
        if len == 0 {
            return Ok(Piece::owned(Vec::new()));
        }
        let block = (offset / self.block_len as u64) as usize;
        let start = (offset % self.block_len as u64) as usize;
        let shared = &self.blocks[block];
        let end = shared.len().min(start + len);
        Ok(Piece::shared(Arc::clone(shared), start..end))
    }
}

/// Bytes in memory fetched by range, as a network object would be;
/// counts the ranges asked for.
pub struct MemoryFetch {
    pub bytes: Vec<u8>,
    pub ranges: AtomicU64,
}

impl MemoryFetch {
    pub fn new(bytes: &[u8]) -> MemoryFetch {
        MemoryFetch {
            bytes: bytes.to_vec(),
            ranges: AtomicU64::new(0),
        }
    }
}

impl RangeFetch for MemoryFetch {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn fetch(&self, ranges: &[std::ops::Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
        self.ranges
            .fetch_add(ranges.len() as u64, Ordering::Relaxed);
        Ok(ranges
            .iter()
            .map(|r| self.bytes[r.start as usize..r.end as usize].to_vec())
            .collect())
    }
}

/// Every kind of source the reader tests run over.
pub enum TestSource {
    /// A `Vec<u8>`: resident, read in place.
    Memory(Vec<u8>),
    /// Shared blocks of a few bytes to a few KiB: short reads everywhere.
    Pieces(PieceSource),
    /// A file read with `pread`, 64 bytes at a time when a prefix will do.
    File(FileSource, tempfile::TempPath),
    /// A block cache of 8 blocks of 256 bytes: evicting all the time.
    Cached(BlockCache<MemoryFetch>),
}

/// The sources every reader test is run over, by name.
pub const KINDS: [&str; 6] = [
    "memory",
    "pieces of 1 byte",
    "pieces of 7 bytes",
    "pieces of 4 KiB",
    "file",
    "block cache",
];

impl TestSource {
    pub fn new(bytes: &[u8], kind: &str) -> TestSource {
        match kind {
            "memory" => TestSource::Memory(bytes.to_vec()),
            "pieces of 1 byte" => TestSource::Pieces(PieceSource::new(bytes, 1)),
            "pieces of 7 bytes" => TestSource::Pieces(PieceSource::new(bytes, 7)),
            "pieces of 4 KiB" => TestSource::Pieces(PieceSource::new(bytes, 4096)),
            "file" => {
                let mut file = tempfile::NamedTempFile::new().unwrap();
                std::io::Write::write_all(&mut file, bytes).unwrap();
                let (file, path) = file.into_parts();
                TestSource::File(FileSource::new(file).unwrap().with_block_len(64), path)
            }
            "block cache" => TestSource::Cached(BlockCache::new(
                MemoryFetch::new(bytes),
                CacheOptions {
                    block_len: 256,
                    capacity: 8 * 256,
                },
            )),
            other => panic!("unknown source {other}"),
        }
    }
}

impl Source for TestSource {
    fn size(&self) -> u64 {
        match self {
            TestSource::Memory(v) => v.size(),
            TestSource::Pieces(p) => p.size(),
            TestSource::File(f, _) => f.size(),
            TestSource::Cached(c) => c.size(),
        }
    }

    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        match self {
            TestSource::Memory(v) => v.read_at(offset, len),
            TestSource::Pieces(p) => p.read_at(offset, len),
            TestSource::File(f, _) => f.read_at(offset, len),
            TestSource::Cached(c) => c.read_at(offset, len),
        }
    }

    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        match self {
            TestSource::Memory(v) => v.read_exact_at(offset, len),
            TestSource::Pieces(p) => p.read_exact_at(offset, len),
            TestSource::File(f, _) => f.read_exact_at(offset, len),
            TestSource::Cached(c) => c.read_exact_at(offset, len),
        }
    }

    fn as_slice(&self) -> Option<&[u8]> {
        match self {
            TestSource::Memory(v) => Some(v),
            _ => None,
        }
    }

    fn prefetch(&self, ranges: &[std::ops::Range<u64>]) -> io::Result<()> {
        match self {
            TestSource::Cached(c) => c.prefetch(ranges),
            _ => Ok(()),
        }
    }

    fn pin(&self, ranges: &[std::ops::Range<u64>]) -> io::Result<()> {
        match self {
            TestSource::Cached(c) => c.pin(ranges),
            _ => Ok(()),
        }
    }

    fn block_len_hint(&self) -> Option<usize> {
        match self {
            TestSource::Cached(c) => c.block_len_hint(),
            _ => None,
        }
    }
}

/// A reader over the store `bytes`, through the source named `kind`.
pub fn open(bytes: &[u8], kind: &str) -> hashfile::Result<Reader<TestSource>> {
    Reader::new(TestSource::new(bytes, kind))
}

/// A reader over `bytes` through every source, with its name.
pub fn every_source(bytes: &[u8]) -> impl Iterator<Item = (&'static str, Reader<TestSource>)> + '_ {
    KINDS.into_iter().map(move |kind| {
        (
            kind,
            open(bytes, kind).unwrap_or_else(|e| panic!("{kind}: {e}")),
        )
    })
}
