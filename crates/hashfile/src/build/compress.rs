//! The compression pass of a build with `Compression::Zstd`: once every
//! record is in and repeated keys are resolved, a dictionary is trained on
//! an even sample of the values, and every record is written again with
//! its value compressed where that makes it smaller
//! (`crate::compress`). A record never grows, so a streaming build
//! rewrites its own file in place, a wave at a time: each wave is read
//! whole before any of it is written back, at or before where it was.

use std::borrow::Cow;

use super::records::Offsets;
use crate::cancel::CancelFlag;
use crate::compress::{self, Encoder, Stats};
use crate::error::Result;
use crate::format::record::{self, Stored};
use crate::format::ValueKind;
use crate::parallel::*;

/// Bytes of records read, compressed and written back per wave: what the
/// pass holds in memory (twice: the wave and its output) whatever the
/// store's size.
const WAVE_BYTES: u64 = 16 << 20;
/// Bytes of records one task of a wave compresses.
const TASK_BYTES: u64 = 1 << 20;

/// Where the pass reads the records and writes them back.
pub(super) trait Rewrite {
    /// Bytes `range` of the records as they were before the pass (never
    /// yet overwritten: see the module's comment).
    fn read(&mut self, range: std::ops::Range<u64>) -> Result<Cow<'_, [u8]>>;
    /// Appends rewritten records.
    fn write(&mut self, bytes: &[u8]) -> Result<()>;
}

/// What the pass made.
pub(super) struct Compressed {
    /// The dictionary section: the stats, then the dictionary.
    pub(super) section: Vec<u8>,
    /// Whether any value was compressed (the required flag).
    pub(super) any: bool,
    /// Each entry's offset in the rewritten records.
    pub(super) offsets: Offsets,
    /// The rewritten records' length.
    pub(super) len: u64,
    /// XXH3 of the rewritten records (the section checksum).
    pub(super) checksum: u64,
}

/// The dictionary trained on every `stride`-th record's value, where the
/// stride keeps the sample near `compress::SAMPLE_BYTES`: the same records
/// whatever the thread count, so the same dictionary and bytes.
pub(super) fn train(records: &[u8], offsets: &Offsets) -> Vec<u8> {
    let n = offsets.len();
    let stride = (records.len() as u64)
        .div_ceil(compress::SAMPLE_BYTES as u64)
        .max(1) as usize;
    let samples: Vec<&[u8]> = (0..n)
        .step_by(stride)
        .filter_map(|i| record::read(&records[offsets.get(i) as usize..]))
        .filter(|r| compress::worth_compressing(r.kind == ValueKind::Typed, r.value.len()))
        .map(|r| r.value)
        .collect();
    compress::train(
        &samples,
        compress::dictionary_capacity(records.len() as u64),
    )
}

/// Rewrites the `offsets.len()` records of `records_len` bytes with their
/// values compressed at `level` with `dictionary`.
pub(super) fn rewrite(
    io: &mut dyn Rewrite,
    offsets: &Offsets,
    records_len: u64,
    level: i32,
    dictionary: &[u8],
    cancel: &CancelFlag,
) -> Result<Compressed> {
    let prepared = compress::prepare_dictionary(dictionary, level);
    let n = offsets.len();
    let end_of = |i: usize| {
        if i + 1 < n {
            offsets.get(i + 1)
        } else {
            records_len
        }
    };
    let mut new_offsets = Offsets::Narrow(Vec::with_capacity(n));
    let mut checksum = xxhash_rust::xxh3::Xxh3::new();
    let mut stats = Stats {
        level,
        ..Stats::default()
    };
    let mut written = 0u64;
    let mut first = 0usize;
    while first < n {
        cancel.check()?;
        // A wave: whole records from entry `first`, about WAVE_BYTES, cut
        // into tasks of about TASK_BYTES.
        let start = offsets.get(first);
        let (mut tasks, mut task_first, mut last) = (Vec::new(), first, first);
        while last < n {
            let end = end_of(last);
            last += 1;
            if end - offsets.get(task_first) >= TASK_BYTES {
                tasks.push(task_first..last);
                task_first = last;
            }
            if end - start >= WAVE_BYTES {
                break;
            }
        }
        if task_first < last {
            tasks.push(task_first..last);
        }
        let wave = io.read(start..end_of(last - 1))?;
        let done: Vec<(Vec<u8>, Vec<u64>, Stats)> = tasks
            .par_iter()
            .map(|task| {
                let mut encoder = Encoder::new(level, prepared.as_ref())?;
                let mut out = Vec::new();
                let mut starts = Vec::with_capacity(task.len());
                let mut stats = Stats::default();
                let mut frame = Vec::new();
                for i in task.clone() {
                    let at = (offsets.get(i) - start) as usize;
                    let original =
                        record::read(&wave[at..]).expect("a builder's own records are well formed");
                    starts.push(out.len() as u64);
                    frame.clear();
                    let compressed = compress::worth_compressing(
                        original.kind == ValueKind::Typed,
                        original.value.len(),
                    ) && encoder.compress(original.value, &mut frame)?;
                    if compressed {
                        stats.values += 1;
                        stats.decoded_bytes += original.value.len() as u64;
                        stats.stored_bytes += frame.len() as u64;
                    }
                    Stored {
                        record: record::Record {
                            value: if compressed { &frame } else { original.value },
                            ..original
                        },
                        compressed,
                    }
                    .write(&mut out);
                }
                Ok((out, starts, stats))
            })
            .collect::<Result<_>>()?;
        drop(wave);
        for (out, starts, task_stats) in done {
            for s in starts {
                new_offsets.push(written + s);
            }
            checksum.update(&out);
            io.write(&out)?;
            written += out.len() as u64;
            stats.values += task_stats.values;
            stats.decoded_bytes += task_stats.decoded_bytes;
            stats.stored_bytes += task_stats.stored_bytes;
        }
        first = last;
    }
    let mut section = stats.encode().to_vec();
    section.extend_from_slice(dictionary);
    Ok(Compressed {
        section,
        any: stats.values > 0,
        offsets: new_offsets,
        len: written,
        checksum: checksum.digest(),
    })
}

/// Records in memory, rewritten into a new buffer.
pub(super) struct InMemory<'a> {
    pub(super) records: &'a [u8],
    pub(super) out: Vec<u8>,
}

impl Rewrite for InMemory<'_> {
    fn read(&mut self, range: std::ops::Range<u64>) -> Result<Cow<'_, [u8]>> {
        Ok(Cow::Borrowed(
            &self.records[range.start as usize..range.end as usize],
        ))
    }
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.extend_from_slice(bytes);
        Ok(())
    }
}

/// Records in a streaming build's file from byte `start`, rewritten in
/// place with positioned reads and writes (not through a map of the
/// file, which would change under it).
pub(super) struct InFile<'a> {
    pub(super) file: &'a std::fs::File,
    pub(super) path: &'a std::path::Path,
    pub(super) start: u64,
    pub(super) written: u64,
}

impl Rewrite for InFile<'_> {
    fn read(&mut self, range: std::ops::Range<u64>) -> Result<Cow<'_, [u8]>> {
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0u8; (range.end - range.start) as usize];
        self.file
            .read_exact_at(&mut bytes, self.start + range.start)
            .map_err(|e| crate::error::Error::io(Some(self.path), e))?;
        Ok(Cow::Owned(bytes))
    }
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.file
            .write_all_at(bytes, self.start + self.written)
            .map_err(|e| crate::error::Error::io(Some(self.path), e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}
