//! A streaming build's records written past the page cache (`O_DIRECT`).
//!
//! Why: a gigabyte of records written through the page cache makes the
//! kernel find, zero-fill and copy into 262,144 fresh pages, and on this
//! project's build machines that cost 2 to 4 s of system time for 1 GB
//! (`dd bs=1M count=1024 conv=fsync`), against 0.15 to 0.19 s written
//! directly (`oflag=direct`), and it varied fourfold from run to run. The
//! records go to the disk from one reused, aligned buffer instead; a build
//! no longer pushes other programs' pages out of the cache either. The
//! store is then not in the page cache when it is published: its first
//! readers read it from the disk.
//!
//! Only the sequential writes of the records are direct. When they end
//! (`finish`), the file's descriptor goes back to ordinary writes, the last
//! partial block is written through the page cache, and everything after
//! (the index, the header, the compression pass, fsync) is as before. A
//! file system that refuses `O_DIRECT` gets ordinary writes throughout.

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::FileExt;

/// The alignment direct writes need, of the buffer's address, the file
/// offset and the length: 4 KiB covers the logical block size of every
/// disk Linux supports (512 or 4,096 bytes).
const BLOCK: usize = 4096;

/// Bytes written to the disk at once: large enough that the time of each
/// synchronous write is the disk's throughput, not its latency.
const DIRECT_BUFFER: usize = 1 << 20;

/// One aligned block of the buffer.
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Block([u8; BLOCK]);

/// Records on their way to the file, written a whole buffer at a time with
/// `O_DIRECT` set on the file's descriptor.
pub(super) struct DirectWrites {
    /// The file offset of the buffer's first byte: a multiple of `BLOCK`.
    at: u64,
    /// `DIRECT_BUFFER` bytes, aligned.
    blocks: Vec<Block>,
    /// Bytes of `blocks` that hold data.
    filled: usize,
}

impl std::fmt::Debug for DirectWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectWrites")
            .field("at", &self.at)
            .field("filled", &self.filled)
            .finish_non_exhaustive()
    }
}

impl DirectWrites {
    /// Starts writing `file` directly from its current position, or `None`
    /// where it cannot be (the file system refuses `O_DIRECT`, or this is
    /// not Linux): the caller then writes through the page cache. What the
    /// file holds between the last block boundary and the position is read
    /// into the buffer, to be written again as part of the first block.
    pub(super) fn start(mut file: &File) -> Option<DirectWrites> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        let position = file.stream_position().ok()?;
        let at = position - position % BLOCK as u64;
        let mut direct = DirectWrites {
            at,
            blocks: vec![Block([0; BLOCK]); DIRECT_BUFFER / BLOCK],
            filled: (position - at) as usize,
        };
        let filled = direct.filled;
        file.read_exact_at(&mut direct.bytes_mut()[..filled], at)
            .ok()?;
        set_direct(file, true).ok()?;
        Some(direct)
    }

    /// The buffer as bytes.
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.blocks.len() * BLOCK;
        // SAFETY: `Block` is `repr(C)` around a `[u8; BLOCK]` and its
        // alignment equals its size, so it has no padding: `len` bytes from
        // the first block's address are the blocks' bytes, initialized, and
        // borrowed mutably for as long as `self` is.
        unsafe { std::slice::from_raw_parts_mut(self.blocks.as_mut_ptr().cast::<u8>(), len) }
    }

    /// Adds `bytes` after what the buffer holds, writing the buffer out
    /// each time it is full. If a direct write fails, returns how many
    /// bytes at the end of `bytes` the buffer did not take: the caller
    /// then `finish`es, which writes the buffer through the page cache,
    /// and writes those bytes after it.
    pub(super) fn write(&mut self, file: &File, mut bytes: &[u8]) -> Result<(), usize> {
        while !bytes.is_empty() {
            let filled = self.filled;
            let take = (DIRECT_BUFFER - filled).min(bytes.len());
            self.bytes_mut()[filled..filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled == DIRECT_BUFFER {
                let at = self.at;
                if file.write_all_at(self.bytes_mut(), at).is_err() {
                    return Err(bytes.len());
                }
                self.at += DIRECT_BUFFER as u64;
                self.filled = 0;
            }
        }
        Ok(())
    }

    /// Ends direct writes: the whole blocks the buffer holds are written
    /// directly, the descriptor goes back to ordinary writes, the partial
    /// block after them goes through the page cache, and the file's
    /// position is left at the end of what was written.
    pub(super) fn finish(mut self, mut file: &File) -> std::io::Result<()> {
        let filled = self.filled;
        let whole = filled - filled % BLOCK;
        let at = self.at;
        let direct = file.write_all_at(&self.bytes_mut()[..whole], at);
        set_direct(file, false)?;
        // After a failed direct write (a file system that takes O_DIRECT
        // at open but not for this write, a full disk), all of it goes
        // through the page cache, over whatever part the disk took: a
        // full disk then reports its error here.
        let from = if direct.is_ok() { whole } else { 0 };
        file.write_all_at(&self.bytes_mut()[from..filled], at + from as u64)?;
        file.seek(SeekFrom::Start(at + filled as u64))?;
        Ok(())
    }
}

/// Sets or clears `O_DIRECT` on `file`'s descriptor.
fn set_direct(file: &File, on: bool) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl's F_GETFL and F_SETFL on a descriptor `file` keeps
        // open for the call; they read and set the status flags and touch
        // no memory of ours.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let flags = if on {
            flags | libc::O_DIRECT
        } else {
            flags & !libc::O_DIRECT
        };
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, on);
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn pattern(len: usize, salt: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i * 131 + salt * 7 + i / 251) as u8)
            .collect()
    }

    /// Pieces of every awkward size, from a position inside a block: the
    /// file holds exactly what was written, in order, and its position is
    /// at the end, where an ordinary write then continues.
    #[test]
    fn writes_every_piece_in_order_from_anywhere_in_a_block() {
        let pieces = [
            1,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            3,
            DIRECT_BUFFER - 5,
            DIRECT_BUFFER,
            2 * DIRECT_BUFFER + 17,
            0,
            100,
        ];
        for head in [0, 1, 136, BLOCK - 1, BLOCK, BLOCK + 136] {
            let dir = tempfile::tempdir().unwrap();
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(dir.path().join("f"))
                .unwrap();
            let mut expected = pattern(head, 99);
            file.write_all(&expected).unwrap();
            let Some(mut direct) = DirectWrites::start(&file) else {
                // Not every file system takes O_DIRECT (tmpfs before Linux
                // 6.6); CI's does, and the streaming round trip covers the
                // fallback's ordinary writes.
                eprintln!("O_DIRECT refused in {}: not tested", dir.path().display());
                return;
            };
            for (k, &len) in pieces.iter().enumerate() {
                let piece = pattern(len, k);
                direct.write(&file, &piece).unwrap();
                expected.extend_from_slice(&piece);
            }
            direct.finish(&file).unwrap();
            file.write_all(b"after").unwrap();
            expected.extend_from_slice(b"after");
            let written = std::fs::read(dir.path().join("f")).unwrap();
            assert_eq!(written.len(), expected.len(), "head {head}");
            assert!(written == expected, "head {head}");
        }
    }

    /// A write the disk refuses is an error from `finish`, never bytes
    /// silently missing (here a descriptor open for reading only).
    #[test]
    fn a_refused_write_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"head").unwrap();
        let file = std::fs::File::open(dir.path().join("f")).unwrap();
        let Some(mut direct) = DirectWrites::start(&file) else {
            return;
        };
        // More than a buffer's worth from position 0: the direct write is
        // tried, and fails.
        let left = direct.write(&file, &pattern(DIRECT_BUFFER + 10, 1));
        assert_eq!(left, Err(10), "the bytes past the full buffer are left");
        assert!(direct.finish(&file).is_err());
    }
}
