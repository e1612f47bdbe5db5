//! Where a reader gets its bytes: a [`Source`] hands out a [`Piece`] by
//! offset and length. Every `AsRef<[u8]>` (a memory map, a `Vec`, a slice)
//! is a source at no cost: a read is a bounds check and a slice. Other
//! sources (a file read with `pread`, a block cache over HTTP range
//! requests, a decompressing layer) hand out bytes they own or share.

use std::io;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// Bytes a [`Source`] handed out: borrowed from it, owned, or a range of a
/// shared block (a cache's, say), so that no source has to copy what it
/// already holds.
#[derive(Clone, Debug)]
pub struct Piece<'a>(Repr<'a>);

#[derive(Clone, Debug)]
enum Repr<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
    Shared(Arc<[u8]>, Range<usize>),
}

impl<'a> Piece<'a> {
    /// Bytes borrowed from the source.
    #[inline]
    pub fn borrowed(bytes: &'a [u8]) -> Piece<'a> {
        Piece(Repr::Borrowed(bytes))
    }

    /// Bytes read or made for this piece alone.
    pub fn owned(bytes: Vec<u8>) -> Piece<'a> {
        Piece(Repr::Owned(bytes))
    }

    /// `range` of a shared block. Panics if `range` is outside `block`.
    pub fn shared(block: Arc<[u8]>, range: Range<usize>) -> Piece<'a> {
        assert!(range.start <= range.end && range.end <= block.len(), "piece {range:?} outside a block of {} bytes", block.len());
        Piece(Repr::Shared(block, range))
    }

    /// The first `len` bytes of the piece (all of it if shorter), without
    /// copying.
    #[inline]
    pub fn truncated(self, len: usize) -> Piece<'a> {
        match self.0 {
            Repr::Borrowed(bytes) => Piece(Repr::Borrowed(&bytes[..len.min(bytes.len())])),
            Repr::Owned(mut bytes) => {
                bytes.truncate(len);
                Piece(Repr::Owned(bytes))
            }
            Repr::Shared(block, range) => {
                let end = range.start + len.min(range.len());
                Piece(Repr::Shared(block, range.start..end))
            }
        }
    }
}

impl Deref for Piece<'_> {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Borrowed(bytes) => bytes,
            Repr::Owned(bytes) => bytes,
            Repr::Shared(block, range) => &block[range.clone()],
        }
    }
}

/// Random access to the bytes of a store.
///
/// A reader asks for small pieces: the header once, then for each lookup a
/// seed block, a slot, and a record. Implementations decide how much a read
/// returns: a memory source returns all that is asked; a file or network
/// source may stop at the end of a block it reads whole, and the reader
/// reads on. That is how a record whose length is not known in advance is
/// read: the reader asks for everything up to the end of the records
/// section, takes the prefix the source finds cheap to give, and asks for
/// the rest only if the record runs past it.
///
/// ```
/// use hashfile::{read::Source, Reader};
/// let mut builder = hashfile::Builder::new(Default::default())?;
/// builder.insert(b"k", b"v");
/// let bytes: Vec<u8> = builder.to_bytes()?;
/// assert_eq!(bytes.len() as u64, bytes.size());
/// let store = Reader::new(bytes)?; // any AsRef<[u8]>: Vec, slice, memory map
/// assert_eq!(store.get(b"k")?.unwrap().value(), b"v");
/// # Ok::<(), hashfile::Error>(())
/// ```
pub trait Source {
    /// The length of the store in bytes. (Not `len`: the blanket
    /// implementation for byte containers would shadow their own `len`.)
    fn size(&self) -> u64;

    /// The bytes at `offset..offset + len`, or a non-empty prefix of them
    /// (`len` is as much as the caller can use, not a promise to need it
    /// all). An error if `offset + len` is past the end, or the bytes
    /// cannot be had.
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>>;

    /// Every byte of `offset..offset + len`. The default reads pieces until
    /// it has them all, copying only if there is more than one; a source
    /// that can fetch a range in one go (one HTTP request) should do so.
    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        let first = self.read_at(offset, len)?;
        if first.len() >= len {
            return Ok(first.truncated(len));
        }
        let mut bytes = Vec::with_capacity(len);
        bytes.extend_from_slice(&first);
        while bytes.len() < len {
            let piece = self.read_at(offset + bytes.len() as u64, len - bytes.len())?;
            if piece.is_empty() {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the source returned no bytes"));
            }
            let take = piece.len().min(len - bytes.len());
            bytes.extend_from_slice(&piece[..take]);
        }
        Ok(Piece::owned(bytes))
    }

    /// True if every byte is in memory, so that a read costs no more than a
    /// slice. A reader keeps nothing of its own over such a source; over
    /// any other it reads the seed index once, at open.
    fn is_resident(&self) -> bool {
        false
    }
}

#[cold]
fn past_end(offset: u64, len: usize, total: u64) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, format!("read of {len} bytes at {offset} is past the end of {total} bytes"))
}

/// Bytes in memory: a read is a slice of them.
impl<T: AsRef<[u8]> + ?Sized> Source for T {
    #[inline]
    fn size(&self) -> u64 {
        self.as_ref().len() as u64
    }

    #[inline]
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        self.read_exact_at(offset, len)
    }

    #[inline]
    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        let bytes = self.as_ref();
        let range = usize::try_from(offset).ok().and_then(|start| Some(start..start.checked_add(len)?));
        match range.and_then(|range| bytes.get(range)) {
            Some(piece) => Ok(Piece::borrowed(piece)),
            None => Err(past_end(offset, len, bytes.len() as u64)),
        }
    }

    fn is_resident(&self) -> bool {
        true
    }
}

/// A file read with positioned reads (`pread`), for when a memory map will
/// not do: a file that may change under the reader, or a platform or
/// filesystem without maps. Each read takes at most `block_len` bytes when
/// the caller can use fewer.
#[derive(Debug)]
pub struct FileSource {
    file: std::fs::File,
    len: u64,
    block_len: usize,
}

impl FileSource {
    /// Bytes a read returns when the caller takes a prefix.
    pub const DEFAULT_BLOCK_LEN: usize = 4096;

    /// Reads `file`, whose length is taken now.
    pub fn new(file: std::fs::File) -> io::Result<FileSource> {
        let len = file.metadata()?.len();
        Ok(FileSource { file, len, block_len: Self::DEFAULT_BLOCK_LEN })
    }

    /// The same source, returning up to `block_len` bytes (at least 1) for
    /// reads that take a prefix.
    pub fn with_block_len(self, block_len: usize) -> FileSource {
        FileSource { block_len: block_len.max(1), ..self }
    }
}

impl Source for FileSource {
    fn size(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        self.read_exact_at(offset, len.min(self.block_len))
    }

    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        if offset.checked_add(len as u64).is_none_or(|end| end > self.len) {
            return Err(past_end(offset, len, self.len));
        }
        let mut bytes = vec![0u8; len];
        std::os::unix::fs::FileExt::read_exact_at(&self.file, &mut bytes, offset)?;
        Ok(Piece::owned(bytes))
    }
}
