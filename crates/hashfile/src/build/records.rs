//! Where a builder keeps its records and their offsets: in memory, or in
//! the temporary file the store is built in (a streaming build), with each
//! key's hash computed as it comes.

use std::io::Write;
use std::path::PathBuf;

use super::temp::TempFile;
use crate::format::{record, Record};

/// The records of a build.
#[derive(Debug)]
pub(super) enum Records {
    /// In memory.
    Memory(Vec<u8>),
    /// In the temporary file the store is built in, after room for the
    /// header: the records section comes first in the file.
    File(Box<Spill>),
}

/// The records once sealed: mapped (with the `mmap` feature) or read back.
#[cfg(feature = "mmap")]
pub(super) type Sealed = memmap2::Mmap;
/// The records once sealed: mapped (with the `mmap` feature) or read back.
#[cfg(not(feature = "mmap"))]
pub(super) type Sealed = Vec<u8>;

/// Records being written to the temporary file of a streaming build.
pub(super) struct Spill {
    pub(super) temp: TempFile,
    pub(super) destination: PathBuf,
    /// Records not yet written.
    buffer: Vec<u8>,
    /// XXH3 of the records written, for the section checksum.
    pub(super) checksum: xxhash_rust::xxh3::Xxh3,
    /// Each key's hash with the first seed tried, computed as the entries
    /// come (in the import's workers), so that the build need not read the
    /// keys back.
    pub(super) hashes: Vec<u64>,
    /// Records bytes, written and buffered.
    pub(super) len: u64,
    /// The first write error, reported when the store is written.
    pub(super) error: Option<std::io::Error>,
    /// Bytes written since the kernel was last asked to start writing the
    /// file out (`start_writeback`).
    unflushed: u64,
    /// The records and the room before them, once every entry is in
    /// (`Builder::seal`).
    pub(super) sealed: Option<Sealed>,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("temp", &self.temp.path)
            .field("len", &self.len)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// Bytes of records a streaming build buffers between writes.
const SPILL_BUFFER: usize = 1 << 20;

/// Bytes a streaming build writes between asking the kernel to start
/// writing them out (`sync_file_range`), as RocksDB's `bytes_per_sync`
/// does. Without it, a gigabyte of records sits dirty in the page cache
/// until the fsync before the rename, which then waits for all of it (0.56
/// s for 1 GB here); with it the disk writes while the build parses.
const WRITEBACK_EVERY: u64 = 16 << 20;

impl Spill {
    pub(super) fn new(temp: TempFile, destination: PathBuf) -> Spill {
        Spill {
            temp,
            destination,
            buffer: Vec::with_capacity(SPILL_BUFFER),
            checksum: xxhash_rust::xxh3::Xxh3::new(),
            hashes: Vec::new(),
            len: 0,
            error: None,
            unflushed: 0,
            sealed: None,
        }
    }

    /// True (and the error noted) if the store was published: the file is
    /// the store now, and entries added since must not be written into it.
    fn published(&mut self) -> bool {
        if !self.temp.published {
            return false;
        }
        self.buffer.clear();
        self.error.get_or_insert_with(|| {
            std::io::Error::other(
                "entries were added after this streaming build published its store; \
                 a streaming builder writes one store (start a new one)",
            )
        });
        true
    }

    pub(super) fn flush(&mut self) {
        if self.published() {
            return;
        }
        self.checksum.update(&self.buffer);
        if self.error.is_none() && !self.buffer.is_empty() {
            match self.temp.file.write_all(&self.buffer) {
                Ok(()) => self.wrote(self.buffer.len()),
                Err(e) => self.error = Some(e),
            }
        }
        self.buffer.clear();
    }

    /// Counts `bytes` written, and every `WRITEBACK_EVERY` asks the kernel to
    /// start writing the file's dirty pages out, without waiting for them.
    fn wrote(&mut self, bytes: usize) {
        self.unflushed += bytes as u64;
        if self.unflushed >= WRITEBACK_EVERY {
            self.unflushed = 0;
            start_writeback(&self.temp.file);
        }
    }

    pub(super) fn push_record(&mut self, record: Record<'_>) {
        let before = self.buffer.len();
        record.write(&mut self.buffer);
        self.len += (self.buffer.len() - before) as u64;
        if self.buffer.len() >= SPILL_BUFFER {
            self.flush();
        }
    }

    pub(super) fn write(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.published() {
            return;
        }
        if self.buffer.len() + bytes.len() <= SPILL_BUFFER {
            self.buffer.extend_from_slice(bytes);
            return;
        }
        self.flush();
        self.checksum.update(bytes);
        if self.error.is_none() {
            match self.temp.file.write_all(bytes) {
                Ok(()) => self.wrote(bytes.len()),
                Err(e) => self.error = Some(e),
            }
        }
    }

    /// Whether records wait in the buffer.
    pub(super) fn buffer_is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// Makes the written file readable as bytes.
    pub(super) fn seal(&mut self) -> std::io::Result<()> {
        #[cfg(feature = "mmap")]
        {
            // SAFETY: the file is our own temporary file, created with
            // create_new under a name no other writer uses; nothing writes to
            // the mapped range (the records) after this point, and the index
            // and header are written outside it with positioned writes.
            self.sealed = Some(unsafe { memmap2::Mmap::map(&self.temp.file) }?);
        }
        #[cfg(not(feature = "mmap"))]
        {
            let mut bytes = vec![0u8; self.temp.file.metadata()?.len() as usize];
            std::os::unix::fs::FileExt::read_exact_at(&self.temp.file, &mut bytes, 0)?;
            self.sealed = Some(bytes);
        }
        Ok(())
    }
}

/// Asks the kernel to start writing `file`'s dirty pages out, and returns
/// without waiting for them. Only a head start for the fsync that publishes
/// the store, which still waits for every page: an error here changes
/// nothing, so it is ignored (the fsync reports what matters).
fn start_writeback(file: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain system call on a descriptor `file` keeps open for
        // the call; offset 0 and length 0 mean the whole file.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// The key of the record at `start` of `records`, a record the builder
/// wrote.
#[inline]
pub(super) fn key_at(records: &[u8], start: usize) -> &[u8] {
    record::key_of(&records[start..]).expect("a builder's own records are well formed")
}

/// Record offsets, 4 bytes each while the records stay under 4 GiB.
#[derive(Debug)]
pub(super) enum Offsets {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Offsets {
    pub(super) fn push(&mut self, offset: u64) {
        match self {
            Offsets::Narrow(v) => match u32::try_from(offset) {
                Ok(o) => v.push(o),
                Err(_) => {
                    let mut wide: Vec<u64> = v.iter().map(|&o| o as u64).collect();
                    wide.push(offset);
                    *self = Offsets::Wide(wide);
                }
            },
            Offsets::Wide(v) => v.push(offset),
        }
    }

    #[inline]
    pub(super) fn get(&self, index: usize) -> u64 {
        match self {
            Offsets::Narrow(v) => v[index] as u64,
            Offsets::Wide(v) => v[index],
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Offsets::Narrow(v) => v.len(),
            Offsets::Wide(v) => v.len(),
        }
    }

    /// The ids the perfect-hash build knows keys by (`chd::search`): the
    /// offsets themselves where they fit 32 bits, else the indices.
    pub(super) fn ids(&self) -> Option<&[u32]> {
        match self {
            Offsets::Narrow(v) => Some(v),
            Offsets::Wide(_) => None,
        }
    }

    /// The offset of the key with this id (see `ids`).
    #[inline]
    pub(super) fn of_id(&self, id: u32) -> u64 {
        match self {
            Offsets::Narrow(_) => id as u64,
            Offsets::Wide(v) => v[id as usize],
        }
    }
}
