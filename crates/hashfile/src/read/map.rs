//! Mapping store files (regular files only, with random-access advice for
//! large ones) and the read-ahead hint of passes in order.

#[cfg(feature = "mmap")]
use super::fault;
use super::{Reader, Source};
#[cfg(feature = "mmap")]
use crate::error::{Error, Result};

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

impl<S: Source> Reader<S> {
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
}
