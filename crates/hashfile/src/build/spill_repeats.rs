//! Repeated keys in a build whose records are in its temporary file (a
//! spilled build, and any streaming build, whose records never come into
//! memory): what `on_duplicate` first, last or merge leaves of them
//! (`resolve_repeats`), the error under `on_duplicate: error`
//! (`duplicate_error`), and the checks around them. What a repeated key
//! leaves is `repeats`'s, one definition for this and an in-memory build;
//! the scatter into groups by hash and the reading of the records are
//! `spill`'s.

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::options::{BuildOptions, OnDuplicate};
use super::records::{key_at, Offsets};
use super::repeats;
use super::spill::{
    changed, each_key, each_record, scatter, Plan, RecordsFile, SpillStats, SCAN_BUFFER,
    SPILL_ENTRY,
};
use super::temp::{self, TempFile};
use crate::cancel::CancelFlag;
use crate::chd;
use crate::error::{Error, Result};
use crate::format::record;
use crate::parallel::*;

/// False if no two of a build's `entries` keys can be the same: their
/// `hashes` (one per entry, as a streaming build keeps them) are all
/// different. True if two are equal, or the hashes were not kept.
pub(super) fn may_repeat(hashes: &[u64], entries: usize) -> bool {
    if hashes.len() != entries {
        return true;
    }
    let mut sorted = hashes.to_vec();
    sorted.par_sort_unstable();
    sorted.windows(2).any(|w| w[0] == w[1])
}

/// Each record's offset and its key's hash with `seed`, in order: what a
/// streaming build keeps as entries come, read back after a resolve
/// rewrote its records.
pub(super) fn offsets_and_hashes(
    records: &RecordsFile<'_>,
    seed: u64,
    cancel: &CancelFlag,
) -> Result<(Offsets, Vec<u64>)> {
    let mut offsets = Offsets::Narrow(Vec::with_capacity(records.entries as usize));
    let mut hashes = Vec::with_capacity(records.entries as usize);
    each_key(records, cancel, |offset, key| {
        offsets.push(offset);
        hashes.push(chd::hash_key(key, seed));
        Ok(())
    })?;
    if hashes.len() as u64 != records.entries {
        return Err(changed(records));
    }
    Ok((offsets, hashes))
}

/// Calls `f` with the offsets, ascending, of every key that occurs more
/// than once in the group `file`. A key's occurrences share a hash, so a
/// group holds them all.
fn each_repeated_key(
    records: &RecordsFile<'_>,
    file: &File,
    f: impl FnMut(&[u64]) -> Result<()>,
) -> Result<()> {
    let key = |offset: u64| key_at(records.mapped, offset as usize);
    let len = file.metadata().map_err(|e| records.io(e))?.len();
    let mut bytes = vec![0u8; len as usize];
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| records.io(e))?;
    let mut entries: Vec<(u64, u64)> = bytes
        .chunks_exact(SPILL_ENTRY)
        .map(|e| {
            (
                u64::from_le_bytes(e[..8].try_into().expect("8 bytes")),
                u64::from_le_bytes(e[8..].try_into().expect("8 bytes")),
            )
        })
        .collect();
    drop(bytes);
    entries.sort_unstable();
    repeats::each_repeated_key(&entries, |e| e.0, |e| e.1, key, f)
}

/// The duplicate key error of a spilled build, as an unlimited build
/// gives it (`Builder::duplicate_error`): the key whose second occurrence
/// comes first in input order, and how many other keys repeat. `files`
/// are the groups not yet placed, where every repeat lies.
pub(super) fn duplicate_error(
    records: &RecordsFile<'_>,
    files: &[Option<File>],
    cancel: &CancelFlag,
) -> Result<Error> {
    let mut repeats = repeats::FirstRepeat::new();
    for file in files.iter().flatten() {
        cancel.check()?;
        each_repeated_key(records, file, |occurrences| {
            repeats.add(occurrences);
            Ok(())
        })?;
    }
    let first = repeats.first().ok_or_else(|| changed(records))?;
    Ok(repeats.error(key_at(records.mapped, first as usize)))
}

/// The records left once repeated keys are resolved (`resolve_repeats`).
pub(super) struct Kept {
    /// Entries kept.
    pub(super) entries: u64,
    /// Their bytes.
    pub(super) len: u64,
    /// XXH3 of them.
    pub(super) checksum: xxhash_rust::xxh3::Xxh3,
    /// The new temporary file of the store, with the same room before the
    /// records, if they could not close up in place (a merge left a
    /// record in place of a shorter one).
    pub(super) moved: Option<TempFile>,
}

/// What becomes of one occurrence of a repeated key, at `offset`: it is
/// dropped, or its record is replaced by `len` bytes at `at` in the
/// replacements file.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Change {
    offset: u64,
    at: u64,
    len: u64,
}

impl Change {
    /// `at` of a dropped occurrence.
    const DROP: u64 = u64::MAX;
    /// Bytes of a change in a group's file: offset, at, len.
    const BYTES: usize = 24;

    fn drop(offset: u64) -> Change {
        Change {
            offset,
            at: Change::DROP,
            len: 0,
        }
    }
}

/// `on_duplicate: first`, `last` or `merge` for a spilled build, leaving
/// the records an unlimited build's resolve leaves
/// (`Builder::resolve_duplicates`): every occurrence of a repeated key but
/// one is dropped, and a merge's record takes the place of the first. The
/// groups are scattered once to find the repeats; each group's changes go
/// to a file of its own, sorted by offset, and a merge's records to a
/// replacements file. Then one pass copies the records kept, in order:
/// down over those dropped, in place, or to a new temporary file when a
/// replacement is there (it may be longer than what it replaces). The file
/// is then as if only the kept entries had been added. `None` if no key
/// repeats.
pub(super) fn resolve_repeats(
    records: &RecordsFile<'_>,
    policy: OnDuplicate,
    options: &BuildOptions,
    memory: u64,
    cancel: &CancelFlag,
    stats: &mut SpillStats,
) -> Result<Option<Kept>> {
    let io = |e| records.io(e);
    let plan = Plan::new(records.entries, options, memory)?;
    let mut groups = scatter(records, &plan, options.hash_seed, cancel)?;
    let record_at = |offset: u64| {
        record::read(&records.mapped[offset as usize..])
            .expect("a builder's own records are well formed")
    };
    let mut replacements: Option<(File, u64)> = None;
    let mut change_files = Vec::new();
    let mut any = false;
    for file in groups.files.iter_mut() {
        cancel.check()?;
        let file = file.take().expect("each group once");
        let mut changes = Vec::new();
        let mut merged_bytes = Vec::new();
        each_repeated_key(records, &file, |occurrences| {
            let resolved = repeats::resolve(policy, occurrences, record_at)?;
            changes.extend(
                occurrences
                    .iter()
                    .filter(|&&o| o != resolved.at)
                    .map(|&o| Change::drop(o)),
            );
            if resolved.keeps_its_record() {
                return Ok(());
            }
            merged_bytes.clear();
            match resolved.holds {
                repeats::Holds::Record(o) => {
                    let len = record::parse(&records.mapped[o as usize..])
                        .ok()
                        .flatten()
                        .expect("a builder's own records are well formed")
                        .len;
                    merged_bytes.extend_from_slice(&records.mapped[o as usize..o as usize + len]);
                }
                repeats::Holds::Merged { key_of, value } => {
                    repeats::write_merged(record_at(key_of), &value, &mut merged_bytes)?
                }
            }
            let (temp, end) = match &mut replacements {
                Some(r) => r,
                None => {
                    replacements.insert((temp::unnamed_beside(records.destination).map_err(io)?, 0))
                }
            };
            temp.write_all_at(&merged_bytes, *end).map_err(io)?;
            changes.push(Change {
                offset: resolved.at,
                at: *end,
                len: merged_bytes.len() as u64,
            });
            *end += merged_bytes.len() as u64;
            Ok(())
        })?;
        drop(file);
        changes.sort_unstable();
        any |= !changes.is_empty();
        let out = temp::unnamed_beside(records.destination).map_err(io)?;
        let bytes: Vec<u8> = changes
            .iter()
            .flat_map(|c| [c.offset, c.at, c.len])
            .flat_map(u64::to_le_bytes)
            .collect();
        out.write_all_at(&bytes, 0).map_err(io)?;
        change_files.push((out, changes.len() as u64));
    }
    // The groups' files are all there until the first group is read; the
    // changes, the replacements and a moved copy of the records at the
    // end.
    let changes_bytes: u64 = change_files
        .iter()
        .map(|(_, count)| count * Change::BYTES as u64)
        .sum();
    let replaced_bytes = replacements.as_ref().map_or(0, |(_, end)| *end);
    stats.temporary_bytes = stats
        .temporary_bytes
        .max(records.entries * SPILL_ENTRY as u64 + changes_bytes);
    if !any {
        return Ok(None);
    }
    // The changes of every group, merged in order as the records are
    // copied.
    let mut readers: Vec<ChangeReader> = change_files
        .iter()
        .map(|(file, count)| ChangeReader {
            file,
            count: *count,
            read: 0,
            buffer: Vec::new(),
            at: 0,
        })
        .collect();
    let mut next = std::collections::BinaryHeap::new();
    for (g, reader) in readers.iter_mut().enumerate() {
        if let Some(change) = reader.next().map_err(io)? {
            next.push(std::cmp::Reverse((change, g)));
        }
    }
    // Records close up in place unless a replacement may run ahead of
    // the records not yet read.
    let moved = match replacements {
        Some(_) => {
            let temp = TempFile::create_beside(records.destination).map_err(io)?;
            temp.file.set_len(records.start).map_err(io)?;
            Some(temp)
        }
        None => None,
    };
    let out_file = moved.as_ref().map_or(records.file, |t| &t.file);
    let mut kept = Kept {
        entries: 0,
        len: 0,
        checksum: xxhash_rust::xxh3::Xxh3::new(),
        moved: None,
    };
    let mut out = Vec::with_capacity(SCAN_BUFFER);
    let mut replacement = Vec::new();
    each_record(records, cancel, |offset, record| {
        let mut record = record;
        if let Some(&std::cmp::Reverse((change, g))) = next.peek() {
            if change.offset == offset {
                next.pop();
                if let Some(following) = readers[g].next().map_err(io)? {
                    next.push(std::cmp::Reverse((following, g)));
                }
                if change.at == Change::DROP {
                    return Ok(());
                }
                let (temp, _) = replacements
                    .as_ref()
                    .expect("a replacement is written first");
                replacement.resize(change.len as usize, 0);
                temp.read_exact_at(&mut replacement, change.at)
                    .map_err(io)?;
                record = &replacement;
            }
        }
        kept.entries += 1;
        kept.checksum.update(record);
        out.extend_from_slice(record);
        if out.len() >= SCAN_BUFFER {
            // In place, at or before where the records read were: never
            // over one not yet read (each_record reads ahead of this).
            out_file
                .write_all_at(&out, records.start + kept.len)
                .map_err(io)?;
            kept.len += out.len() as u64;
            out.clear();
        }
        Ok(())
    })?;
    out_file
        .write_all_at(&out, records.start + kept.len)
        .map_err(io)?;
    kept.len += out.len() as u64;
    out_file.set_len(records.start + kept.len).map_err(io)?;
    if moved.is_some() {
        stats.temporary_bytes = stats
            .temporary_bytes
            .max(changes_bytes + replaced_bytes + records.start + kept.len);
    }
    kept.moved = moved;
    Ok(Some(kept))
}

/// A group's changes, read back in order a buffer at a time.
struct ChangeReader<'a> {
    file: &'a std::fs::File,
    count: u64,
    read: u64,
    buffer: Vec<Change>,
    at: usize,
}

impl ChangeReader<'_> {
    fn next(&mut self) -> std::io::Result<Option<Change>> {
        if self.at == self.buffer.len() {
            let take = (self.count - self.read).min(1 << 16);
            if take == 0 {
                return Ok(None);
            }
            let mut bytes = vec![0u8; take as usize * Change::BYTES];
            self.file
                .read_exact_at(&mut bytes, self.read * Change::BYTES as u64)?;
            let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
            self.buffer = bytes
                .chunks_exact(Change::BYTES)
                .map(|b| Change {
                    offset: word(&b[..8]),
                    at: word(&b[8..16]),
                    len: word(&b[16..]),
                })
                .collect();
            self.read += take;
            self.at = 0;
        }
        self.at += 1;
        Ok(Some(self.buffer[self.at - 1]))
    }
}
