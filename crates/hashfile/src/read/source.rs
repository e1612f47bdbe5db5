//! Where a reader gets its bytes: a [`Source`] hands out a [`Piece`] by
//! offset and length. Every `AsRef<[u8]>` (a memory map, a `Vec`, a slice)
//! is a source at no cost: a read is a bounds check and a slice. Other
//! sources (a file read with `pread`, a block cache over HTTP range
//! requests, a decompressing layer) hand out bytes they own or share.

use std::io;
use std::marker::PhantomData;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// Bytes a [`Source`] handed out: borrowed from it, owned, or a range of a
/// shared block (a cache's, say), so that no source has to copy what it
/// already holds.
///
/// Reading a piece's bytes never branches on where they are: the piece
/// keeps them as one pointer and length, and its holder (none for borrowed
/// bytes, else a `Vec` or a shared block) only keeps them alive.
pub struct Piece<'a> {
    ptr: *const u8,
    len: usize,
    held: Option<Held>,
    borrowed: PhantomData<&'a [u8]>,
}

/// What keeps the bytes of a piece that is not borrowed alive. The bytes
/// live in its heap buffer, which moving the holder does not move.
pub(crate) enum Held {
    Owned(#[allow(dead_code)] Vec<u8>),
    Shared(#[allow(dead_code)] Arc<[u8]>),
}

// SAFETY: a piece is a `&[u8]` plus a holder that is `Send` and `Sync`
// (`Vec<u8>`, `Arc<[u8]>`); the raw pointer is only ever read through, as
// the shared slice it was made from.
unsafe impl Send for Piece<'_> {}
// SAFETY: as for `Send`: every access is a shared read.
unsafe impl Sync for Piece<'_> {}

impl<'a> Piece<'a> {
    /// Bytes borrowed from the source.
    #[inline]
    pub fn borrowed(bytes: &'a [u8]) -> Piece<'a> {
        Piece {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
            held: None,
            borrowed: PhantomData,
        }
    }

    /// Bytes read or made for this piece alone.
    pub fn owned(bytes: Vec<u8>) -> Piece<'a> {
        Piece {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
            held: Some(Held::Owned(bytes)),
            borrowed: PhantomData,
        }
    }

    /// `range` of a shared block. Panics if `range` is outside `block`.
    pub fn shared(block: Arc<[u8]>, range: Range<usize>) -> Piece<'a> {
        let bytes = &block[range];
        Piece {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
            held: Some(Held::Shared(block)),
            borrowed: PhantomData,
        }
    }

    /// The first `len` bytes of the piece (all of it if shorter), without
    /// copying.
    #[inline]
    pub fn truncated(self, len: usize) -> Piece<'a> {
        Piece {
            len: self.len.min(len),
            ..self
        }
    }

    /// The bytes and what holds them, for a holder of its own
    /// (`RecordBuf`).
    ///
    /// # Safety
    /// The slice may point into the returned holder's buffer: the caller
    /// must keep the holder alive, and not hand the slice out for longer
    /// than it keeps the holder, whatever `'a` says.
    #[inline]
    pub(crate) unsafe fn into_parts(self) -> (&'a [u8], Option<Held>) {
        // SAFETY: `ptr` and `len` describe the piece's bytes (see `deref`);
        // the caller keeps the holder alive for as long as it uses them.
        (
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) },
            self.held,
        )
    }
}

impl Deref for Piece<'_> {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` and `len` describe a slice that lives at least as
        // long as the piece: borrowed for `'a`, or inside the heap buffer of
        // the `Vec` or `Arc` the piece holds, which moving the piece does not
        // move, and which nothing mutates or frees while the piece exists.
        // `truncated` only shortens `len`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Clone for Piece<'_> {
    fn clone(&self) -> Self {
        match &self.held {
            None => Piece {
                ptr: self.ptr,
                len: self.len,
                held: None,
                borrowed: PhantomData,
            },
            Some(Held::Owned(_)) => Piece::owned(self.to_vec()),
            Some(Held::Shared(block)) => Piece {
                ptr: self.ptr,
                len: self.len,
                held: Some(Held::Shared(Arc::clone(block))),
                borrowed: PhantomData,
            },
        }
    }
}

impl std::fmt::Debug for Piece<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = match self.held {
            None => "borrowed",
            Some(Held::Owned(_)) => "owned",
            Some(Held::Shared(_)) => "shared",
        };
        f.debug_struct("Piece")
            .field("held", &held)
            .field("len", &self.len)
            .finish()
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

    /// A hint that `offset..offset + len` will be read soon, in order (an
    /// iteration, a checksum pass): a memory map or a file asks the kernel
    /// to read it ahead, since a store is mapped with random-access advice
    /// (`read::map_open_file`). The default does nothing.
    fn will_read(&self, _offset: u64, _len: u64) {}

    /// Every byte of `offset..offset + len`. The default reads pieces until
    /// it has them all, copying only if there is more than one; a source
    /// that can fetch a range in one go (one HTTP request) should do so.
    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        let first = self.read_at(offset, len)?;
        if first.len() >= len {
            return Ok(first.truncated(len));
        }
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(len)
            .map_err(|_| crate::error::io_out_of_memory(len as u64, "a read"))?;
        bytes.extend_from_slice(&first);
        while bytes.len() < len {
            let piece = self.read_at(offset + bytes.len() as u64, len - bytes.len())?;
            if piece.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the source returned no bytes",
                ));
            }
            let take = piece.len().min(len - bytes.len());
            bytes.extend_from_slice(&piece[..take]);
        }
        Ok(Piece::owned(bytes))
    }

    /// Whether rereading a few bytes costs a system call at most (a local
    /// file read with positioned reads): a compressed lookup then rereads
    /// the header's checksum, to find a store rewritten in place before
    /// its frames are decoded with the dictionary of the store it
    /// replaced. A map is checked through `as_slice`; a remote store by
    /// its ETag. The default is false.
    fn rereads_cheaply(&self) -> bool {
        false
    }

    /// The whole store as one slice, for a source that holds every byte in
    /// memory (a map, a `Vec`). A reader reads such a source in place: each
    /// lookup step is a bounds check and a slice, with no piece handed out,
    /// and it keeps nothing of its own. Over any other source it reads the
    /// seed index once, at open, and each step asks for its piece.
    fn as_slice(&self) -> Option<&[u8]> {
        None
    }

    /// A hint that the bytes of every range will be read soon, in any
    /// order. A source that fetches over a network fetches them all now, in
    /// one round trip, so that the reads that follow are served from
    /// memory; others do nothing. Ranges may reach past the end (they are
    /// cut there). A batch of lookups calls it once per level.
    fn prefetch(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        let _ = ranges;
        Ok(())
    }

    /// Like [`prefetch`](Source::prefetch), and the bytes stay in memory for
    /// the source's life: the index, for a reader asked to hold it.
    fn pin(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        let _ = ranges;
        Ok(())
    }

    /// The unit a caching source reads in, for a caller deciding how much
    /// to prefetch for a record whose length it does not know yet.
    fn block_len_hint(&self) -> Option<usize> {
        None
    }

    /// Bytes a caching source keeps of what it fetched (pinned bytes
    /// aside): a batch whose blocks would not fit is read in pieces that
    /// do, so that nothing it prefetched is evicted before it is read.
    fn capacity_hint(&self) -> Option<usize> {
        None
    }
}

#[cold]
fn past_end(offset: u64, len: usize, total: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("read of {len} bytes at {offset} is past the end of {total} bytes"),
    )
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
        let range = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(len)?));
        match range.and_then(|range| bytes.get(range)) {
            Some(piece) => Ok(Piece::borrowed(piece)),
            None => Err(past_end(offset, len, bytes.len() as u64)),
        }
    }

    #[inline]
    fn as_slice(&self) -> Option<&[u8]> {
        Some(self.as_ref())
    }

    /// `MADV_WILLNEED` on the pages of the range, a piece at a time
    /// (`WILL_READ_PIECE`): for a memory map, the kernel reads them ahead;
    /// for bytes on the heap it does nothing.
    fn will_read(&self, offset: u64, len: u64) {
        let bytes = self.as_ref();
        let (Ok(start), Ok(len)) = (usize::try_from(offset), usize::try_from(len)) else {
            return;
        };
        let Some(range) = bytes.get(start..start.saturating_add(len).min(bytes.len())) else {
            return;
        };
        if range.is_empty() {
            return;
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
        let address = range.as_ptr() as usize;
        let aligned = address - address % page;
        let end = address + range.len();
        let mut from = aligned;
        while from < end {
            let to = end.min(from + WILL_READ_PIECE);
            // SAFETY: MADV_WILLNEED only asks the kernel to read pages in;
            // it changes no memory, so it cannot break any Rust reference.
            // `from..to` lies within the range, rounded down to a page
            // (which a map's own start always is): pages of this process's
            // memory. A failure (a range not all mapped) is only a lost
            // hint.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_WILLNEED);
            }
            from = to;
        }
    }
}

/// Bytes a `will_read` asks the kernel for at once. Linux reads at most a
/// readahead window per `MADV_WILLNEED` or `POSIX_FADV_WILLNEED` call
/// (`force_page_cache_ra`: the larger of the device's `read_ahead_kb` and
/// its largest request), silently dropping the rest; 128 KiB is the
/// smallest default window, so each piece is read whole.
const WILL_READ_PIECE: usize = 128 << 10;

/// A file read with positioned reads (`pread`), for when a memory map will
/// not do: a file that may change under the reader, or a platform or
/// filesystem without maps. Each read takes at most `block_len` bytes when
/// the caller can use fewer.
#[derive(Debug)]
pub struct FileSource {
    file: std::fs::File,
    len: u64,
    block_len: usize,
    /// Set when a read inside `len` found the file shorter: it shrank
    /// since it was opened (`shrank`).
    shrank: std::sync::atomic::AtomicBool,
}

impl FileSource {
    /// Bytes a read returns when the caller takes a prefix.
    pub const DEFAULT_BLOCK_LEN: usize = 4096;

    /// Reads `file`, whose length is taken now.
    pub fn new(file: std::fs::File) -> io::Result<FileSource> {
        let len = file.metadata()?.len();
        Ok(FileSource::with_len(file, len))
    }

    /// Reads `file`, whose length the caller took (from the open file).
    pub fn with_len(file: std::fs::File, len: u64) -> FileSource {
        FileSource {
            file,
            len,
            block_len: Self::DEFAULT_BLOCK_LEN,
            shrank: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether a read found the file shorter than it was at open (it was
    /// truncated or rewritten in place under the reader): what a guarded
    /// map counts as a fault. Nothing read since can be trusted.
    pub fn shrank(&self) -> bool {
        self.shrank.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The file read.
    pub fn file(&self) -> &std::fs::File {
        &self.file
    }

    /// The same source, returning up to `block_len` bytes (at least 1) for
    /// reads that take a prefix.
    pub fn with_block_len(self, block_len: usize) -> FileSource {
        FileSource {
            block_len: block_len.max(1),
            ..self
        }
    }
}

impl Source for FileSource {
    fn size(&self) -> u64 {
        self.len
    }

    /// `POSIX_FADV_WILLNEED`, a piece at a time (`WILL_READ_PIECE`): the
    /// kernel reads the range into its cache.
    fn will_read(&self, offset: u64, len: u64) {
        use std::os::fd::AsRawFd;
        let end = offset.saturating_add(len).min(self.len);
        let mut from = offset;
        while from < end {
            let to = end.min(from + WILL_READ_PIECE as u64);
            let (Ok(at), Ok(piece)) = (
                libc::off_t::try_from(from),
                libc::off_t::try_from(to - from),
            ) else {
                return;
            };
            // SAFETY: posix_fadvise reads no memory of ours; the descriptor
            // is the open file this source owns. A failure is only a lost
            // hint.
            unsafe {
                libc::posix_fadvise(self.file.as_raw_fd(), at, piece, libc::POSIX_FADV_WILLNEED);
            }
            from = to;
        }
    }

    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        self.read_exact_at(offset, len.min(self.block_len))
    }

    fn rereads_cheaply(&self) -> bool {
        true
    }

    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.len)
        {
            return Err(past_end(offset, len, self.len));
        }
        // What a header claims (a record of 2^40 bytes in a sparse file)
        // is refused by the allocator here, not by an abort.
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(len)
            .map_err(|_| crate::error::io_out_of_memory(len as u64, "a read of the store file"))?;
        bytes.resize(len, 0);
        if let Err(e) = std::os::unix::fs::FileExt::read_exact_at(&self.file, &mut bytes, offset) {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                self.shrank
                    .store(true, std::sync::atomic::Ordering::Release);
            }
            return Err(e);
        }
        Ok(Piece::owned(bytes))
    }
}
