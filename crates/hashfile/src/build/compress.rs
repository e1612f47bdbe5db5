//! The compression pass of a build with `Compression::Zstd` or `Auto`:
//! once every record is in and repeated keys are resolved, a dictionary is
//! trained on an even sample of the values (and, for `auto`, the sample
//! compressed to choose what pays: `choose`), and every record is written
//! again with its value compressed where that makes it smaller
//! (`crate::compress`). A record never grows, so a streaming build
//! rewrites its own file in place, a wave at a time: each wave is read
//! whole before any of it is written back, at or before where it was.
//! Both passes find the records by parsing them in order, so neither needs
//! the builder's offsets (a spilled build has none).

use std::borrow::Cow;

use super::records::Offsets;
use crate::cancel::CancelFlag;
use crate::compress::{self, Compression, Encoder, Levels, Stats};
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
    /// The required-feature bits the rewritten records need: compressed
    /// values if any value or item was compressed, and compressed items
    /// if any typed value holds them.
    pub(super) required_flags: u64,
    /// Each entry's offset in the rewritten records, if asked for (a
    /// spilled build reads them back from the file instead).
    pub(super) offsets: Option<Offsets>,
    /// The rewritten records' length.
    pub(super) len: u64,
    /// XXH3 of the rewritten records (the section checksum).
    pub(super) checksum: u64,
}

/// Bytes of records the sampling pass reads at a time.
const SCAN_BYTES: u64 = 8 << 20;

/// Where each whole record at the start of `bytes` ends, relative to
/// `bytes`.
fn whole_records(bytes: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut used = 0;
    while let Ok(Some(layout)) = record::parse(&bytes[used..]) {
        if used + layout.len > bytes.len() {
            break;
        }
        used += layout.len;
        ends.push(used);
    }
    ends
}

/// The records from `start`: at least one whole record and about `bytes`
/// of them, and where each ends relative to `start`. The first record's
/// header is read first, so that a record longer than `bytes` is read
/// whole in one go.
fn read_whole<'a>(
    io: &'a mut dyn Rewrite,
    start: u64,
    bytes: u64,
    records_len: u64,
) -> Result<(Cow<'a, [u8]>, Vec<usize>)> {
    let damaged = || {
        crate::error::Error::corrupt(
            "records",
            format!("the build's own records do not read back at {start}"),
        )
    };
    let first_len = {
        let probe_end = (start + record::MAX_HEADER_LEN as u64).min(records_len);
        let probe = io.read(start..probe_end)?;
        match record::parse(&probe) {
            Ok(Some(layout)) => layout.len as u64,
            _ => return Err(damaged()),
        }
    };
    let want = bytes.max(first_len).min(records_len - start);
    let chunk = io.read(start..start + want)?;
    let ends = whole_records(&chunk);
    if ends.is_empty() {
        return Err(damaged());
    }
    Ok((chunk, ends))
}

/// The dictionary trained on every `stride`-th record's value (each cut to
/// `compress::SAMPLE_VALUE_LEN`), where the stride keeps the sample near
/// `compress::SAMPLE_BYTES`: the same records whatever the thread count,
/// so the same dictionary and bytes. One pass over the records in order,
/// through `io`: a spilled build's file is read, not mapped. With
/// `held_out` (`auto`), also the values `choose` tries, from other records
/// than the dictionary learnt (see `Sample::trial`).
fn train(
    io: &mut dyn Rewrite,
    records_len: u64,
    held_out: bool,
    cancel: &CancelFlag,
) -> Result<Sample> {
    let stride = records_len.div_ceil(compress::SAMPLE_BYTES as u64).max(1);
    // The held-out records: one in `trial_stride`, none of them sampled
    // (their index is `stride / 2` past a multiple of the stride), about
    // AUTO_TRIAL_BYTES of them.
    let trial_stride = stride * (compress::SAMPLE_BYTES.div_ceil(AUTO_TRIAL_BYTES) as u64);
    let held_out = held_out && stride >= 2;
    let mut samples: Vec<Vec<u8>> = Vec::new();
    let mut trial: Vec<Vec<u8>> = Vec::new();
    let (mut at, mut index) = (0u64, 0u64);
    while at < records_len {
        cancel.check()?;
        let (chunk, ends) = read_whole(io, at, SCAN_BYTES, records_len)?;
        let mut from = 0;
        for &end in &ends {
            if index % stride == 0 {
                pieces_of(&chunk[from..end], &mut samples);
            } else if held_out && index % trial_stride == stride / 2 {
                pieces_of(&chunk[from..end], &mut trial);
            }
            index += 1;
            from = end;
        }
        at += from as u64;
    }
    let pieces: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    let dictionary = compress::train(&pieces, compress::dictionary_capacity(records_len));
    Ok(Sample {
        pieces: samples,
        stride,
        trial,
        trial_stride,
        dictionary,
    })
}

/// What a build would compress of the whole record `bytes`, as pieces for
/// the dictionary's training: the value (cut to `SAMPLE_VALUE_LEN`) if it
/// is compressed whole, else the first 128 KiB of a long typed value in
/// pieces the size of items (compressed item by item, or, an array of
/// scalars, whole: pieces the size of items either way).
fn pieces_of(bytes: &[u8], out: &mut Vec<Vec<u8>>) {
    let r = record::read(bytes).expect("whole records parse");
    let typed = r.kind == ValueKind::Typed;
    let cut = &r.value[..r.value.len().min(compress::SAMPLE_VALUE_LEN)];
    if compress::worth_compressing(typed, r.value.len()) {
        out.push(cut.to_vec());
    } else if typed && r.value.len() > compress::MAX_TYPED_COMPRESS_LEN {
        out.extend(cut.chunks(compress::ITEM_FRAME_LEN).map(<[u8]>::to_vec));
    }
}

/// What the sampling pass read and trained.
struct Sample {
    /// The sampled values (and pieces of long typed ones).
    pieces: Vec<Vec<u8>>,
    /// One record in this many was sampled.
    stride: u64,
    /// For `auto`, where not every record was sampled: values of records
    /// the dictionary did not learn, one in `trial_stride`. A dictionary
    /// holds pieces of what it was trained on, so those compress better
    /// with it than the store's other values would.
    trial: Vec<Vec<u8>>,
    trial_stride: u64,
    /// The dictionary trained on them (empty: none).
    dictionary: Vec<u8>,
}

/// What the rewrite does to values.
struct Plan {
    /// The levels, or `None` to compress nothing (`auto` chose so).
    levels: Option<Levels>,
    dictionary: Vec<u8>,
    /// Whether `auto` chose this.
    auto: bool,
}

/// `auto` compresses a store only if that makes its values at least this
/// fraction smaller, estimated on the sample (with the dictionary's own
/// bytes counted): below it every lookup would pay a decode for little.
const AUTO_MIN_SAVING: f64 = 0.10;

/// `auto` tries at most this many bytes of the sample: enough to tell
/// whether compression pays, in a small part of a build's time.
const AUTO_TRIAL_BYTES: usize = 4 << 20;

/// `auto`'s choice, from `sample`, for a store: zstd at the default
/// levels with the trained dictionary, or without it where it would not
/// save its own bytes over the store's values, or nothing where neither
/// saves [`AUTO_MIN_SAVING`]. Every estimate is a count of bytes zstd
/// wrote, so the choice, like the build, is the same on every run.
fn choose(sample: Sample) -> Result<Plan> {
    let levels = Levels {
        short: compress::DEFAULT_LEVEL,
        long: compress::DEFAULT_LONG_LEVEL,
    };
    // The values tried, and how many of the store's bytes each of theirs
    // stands for: the held-out values where there are some, else (a store
    // small enough to be sampled whole, whose values the dictionary holds
    // pieces of indeed) every j-th sampled one.
    let bytes = |values: &[&[u8]]| values.iter().map(|v| v.len()).sum::<usize>();
    let (trial, scale): (Vec<&[u8]>, f64) = if sample.trial.is_empty() {
        let sampled: Vec<&[u8]> = sample.pieces.iter().map(Vec::as_slice).collect();
        let every = bytes(&sampled).div_ceil(AUTO_TRIAL_BYTES).max(1);
        let trial: Vec<&[u8]> = sampled.iter().step_by(every).copied().collect();
        let scale = (bytes(&sampled) as f64 * sample.stride as f64) / (bytes(&trial).max(1) as f64);
        (trial, scale)
    } else {
        let trial = sample.trial.iter().map(Vec::as_slice).collect();
        (trial, sample.trial_stride as f64)
    };
    let raw = bytes(&trial);
    let stored = |dictionary: &[u8]| -> Result<usize> {
        let prepared = compress::prepare_dictionary(dictionary, levels);
        let mut encoder = Encoder::new(&prepared)?;
        let mut frame = Vec::new();
        let mut total = 0;
        for value in &trial {
            frame.clear();
            total += if encoder.compress(value, &mut frame)? {
                frame.len()
            } else {
                value.len()
            };
        }
        Ok(total)
    };
    let without = stored(&[])? as f64 * scale;
    let with = if sample.dictionary.is_empty() {
        f64::INFINITY
    } else {
        stored(&sample.dictionary)? as f64 * scale + sample.dictionary.len() as f64
    };
    let raw = raw as f64 * scale;
    let (best, dictionary) = if with < without {
        (with, sample.dictionary)
    } else {
        (without, Vec::new())
    };
    Ok(if raw == 0.0 || best > raw * (1.0 - AUTO_MIN_SAVING) {
        Plan {
            levels: None,
            dictionary: Vec::new(),
            auto: true,
        }
    } else {
        Plan {
            levels: Some(levels),
            dictionary,
            auto: true,
        }
    })
}

/// The whole pass over the records `io` reads and writes with
/// `compression` (`Zstd` or `Auto`): the dictionary (`train`), `auto`'s
/// choice (`choose`), then every record rewritten (`rewrite`).
pub(super) fn pass(
    io: &mut dyn Rewrite,
    records_len: u64,
    compression: Compression,
    keep_offsets: bool,
    cancel: &CancelFlag,
) -> Result<Compressed> {
    let sample = train(io, records_len, compression == Compression::Auto, cancel)?;
    let plan = match compression {
        Compression::Zstd { level, long_level } => Plan {
            levels: Some(Levels {
                short: level,
                long: long_level,
            }),
            dictionary: sample.dictionary,
            auto: false,
        },
        Compression::Auto => choose(sample)?,
        Compression::None => unreachable!("a build without compression has no pass"),
    };
    rewrite(io, records_len, &plan, keep_offsets, cancel)
}

/// Rewrites the records of `records_len` bytes with their values
/// compressed as `plan` says, a wave of whole records at a time, found by
/// parsing them; the new offsets too if `keep_offsets`.
fn rewrite(
    io: &mut dyn Rewrite,
    records_len: u64,
    plan: &Plan,
    keep_offsets: bool,
    cancel: &CancelFlag,
) -> Result<Compressed> {
    let levels = plan.levels.unwrap_or(Levels { short: 0, long: 0 });
    let prepared = compress::prepare_dictionary(&plan.dictionary, levels);
    let mut new_offsets = keep_offsets.then(|| Offsets::Narrow(Vec::new()));
    let mut checksum = xxhash_rust::xxh3::Xxh3::new();
    let mut stats = Stats {
        level: levels.short,
        long_level: levels.long,
        auto: plan.auto,
        ..Stats::default()
    };
    let mut written = 0u64;
    let mut start = 0u64;
    let mut items = false;
    while start < records_len {
        cancel.check()?;
        // A wave: whole records from `start`, about WAVE_BYTES, cut into
        // tasks of about TASK_BYTES.
        let (wave, ends) = read_whole(io, start, WAVE_BYTES, records_len)?;
        let consumed = *ends.last().expect("at least one whole record");
        let mut tasks: Vec<std::ops::Range<usize>> = Vec::new();
        let mut task_start = 0;
        for (k, &end) in ends.iter().enumerate() {
            if end - task_start >= TASK_BYTES as usize || k + 1 == ends.len() {
                tasks.push(task_start..end);
                task_start = end;
            }
        }
        let done: Vec<(Vec<u8>, Vec<u64>, Stats, bool)> = tasks
            .par_iter()
            .map(|task| {
                let mut encoder = plan.levels.map(|_| Encoder::new(&prepared)).transpose()?;
                let mut out = Vec::new();
                let mut starts = Vec::new();
                let mut stats = Stats::default();
                let mut frame = Vec::new();
                let mut items = false;
                let mut at = task.start;
                while at < task.end {
                    let original = record::read(&wave[at..task.end])
                        .expect("a builder's own records are well formed");
                    at += original.encoded_len();
                    starts.push(out.len() as u64);
                    frame.clear();
                    let typed = original.kind == ValueKind::Typed;
                    let big_typed =
                        typed && original.value.len() > compress::MAX_TYPED_COMPRESS_LEN;
                    let (compressed, split) = if let Some(encoder) = &mut encoder {
                        if compress::worth_compressing(typed, original.value.len())
                            || (big_typed
                                && crate::value::frames::compressed_whole(original.value)?)
                        {
                            (encoder.compress(original.value, &mut frame)?, false)
                        } else if big_typed {
                            // A tree too big to decode whole for every
                            // path: its subtrees, each alone.
                            let frames = crate::value::frames::split(
                                original.value,
                                &mut |item, out| encoder.compress(item, out),
                                &mut frame,
                            )?;
                            (false, frames > 0)
                        } else {
                            (false, false)
                        }
                    } else {
                        (false, false)
                    };
                    if compressed || split {
                        stats.values += 1;
                        stats.decoded_bytes += original.value.len() as u64;
                        stats.stored_bytes += frame.len() as u64;
                    }
                    items |= split;
                    Stored {
                        record: record::Record {
                            value: if compressed || split {
                                &frame
                            } else {
                                original.value
                            },
                            ..original
                        },
                        compressed,
                        items: split,
                    }
                    .write(&mut out);
                }
                Ok((out, starts, stats, items))
            })
            .collect::<Result<_>>()?;
        drop(wave);
        for (out, starts, task_stats, task_items) in done {
            items |= task_items;
            if let Some(offsets) = &mut new_offsets {
                for s in starts {
                    offsets.push(written + s);
                }
            }
            checksum.update(&out);
            io.write(&out)?;
            written += out.len() as u64;
            stats.values += task_stats.values;
            stats.decoded_bytes += task_stats.decoded_bytes;
            stats.stored_bytes += task_stats.stored_bytes;
        }
        start += consumed as u64;
    }
    let mut section = stats.encode().to_vec();
    section.extend_from_slice(&plan.dictionary);
    Ok(Compressed {
        section,
        required_flags: if stats.values == 0 {
            0
        } else if items {
            crate::format::REQUIRED_COMPRESSED_VALUES | crate::format::REQUIRED_COMPRESSED_ITEMS
        } else {
            crate::format::REQUIRED_COMPRESSED_VALUES
        },
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
