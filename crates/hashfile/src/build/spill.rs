//! Building the index of a store whose index data would not fit the
//! memory limit (`BuildOptions::memory`), into the same bytes an unlimited
//! build writes.
//!
//! The format already splits keys into parts by hash, and each part is
//! placed on its own (`chd::search::place`). A spilled build uses that:
//!
//! 1. *Scatter*: one pass over the records in the temporary file (read,
//!    not mapped, so it adds nothing to the resident set) hashes each key
//!    and appends its hash and record offset to the temporary file of its
//!    group of parts, counting keys per part.
//! 2. *Place*: group by group, in part order, the group's keys are read
//!    back (in input order, as an unlimited build sees them), grouped by
//!    part, and placed; the pilots go into the seed blocks (in memory: a
//!    few bits per key), the slots in slot order to a temporary file, and
//!    the group's file is removed. A free slot below `n` is written as 0
//!    and remembered, as is each key placed at a slot past `n`. The
//!    compact index places its parts with the same search (its layout
//!    `chd::compact::Compact`), keeping a byte per bucket and each
//!    part's remap in memory; its keys' slots are their final indices, so
//!    none is left free.
//! 3. *Write*: the index sections go after the records (the seed index,
//!    the seeds and the remap; or the pilots, the parts table and the
//!    remap); the slots are copied after them, each free slot filled with
//!    the offset of the key the remap sends there, and the header goes
//!    first.
//!
//! Memory: about `GROUP_BYTES_PER_KEY` per key of the largest group, plus
//! the seed blocks and the remap's pairs for the whole store. Temporary
//! disk: 16 bytes per key for the groups (removed as they are placed), and
//! the slots section once more while it is copied. These files have no
//! name (`temp::unnamed_beside`): they are read and written by their
//! descriptors only, so their space goes back when the build ends,
//! however it ends, even killed with SIGKILL.
//!
//! A hash seed that fails in any group (two keys with one 64-bit hash, or
//! a bucket without a pilot) starts the build over with the next seed,
//! from the scatter, as an unlimited build moves to the next seed: same
//! seed, same bytes.
//!
//! A hash seed is tried as every build tries seeds
//! (`chd::search::each_seed`), and each group is placed by the search an
//! unlimited build runs (`chd::search::place`), with the layout's
//! `chd::classic::Classic` or `chd::compact::Compact`.
//!
//! Repeated keys (`on_duplicate` first, last or merge) are resolved before
//! all this, by a scatter of their own (`spill_repeats`), in the file the
//! records are in: for a spilled build, and for any streaming build, whose
//! records then never come into memory.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::index::{self, SeedBlocks, Shape};
use super::options::{BuildOptions, IndexKind};
use super::records::{key_at, Spill};
use super::spill_repeats;
use super::temp;
use crate::bits;
use crate::cancel::CancelFlag;
use crate::chd::classic::Classic;
use crate::chd::compact::{self, Compact, CompactHash};
use crate::chd::search::{self, Hashed};
use crate::chd::{self, BucketMap};
use crate::error::{Error, Result};
use crate::format::{record, Header, SectionId};

/// Bytes of index data an unlimited build holds per key at its peak:
/// hashes and offsets as entries come, then the sorted `(hash, id)` array,
/// the packed slots and the pilots. Measured: 28 bytes per key of peak
/// resident set for 10 million keys (`examples/phases`, 284 MB), rounded
/// up. A build of more keys than the limit allows at this rate spills.
pub(super) const INDEX_BYTES_PER_KEY: u64 = 32;

/// Bytes a spilled build holds per key of the group it is placing: the
/// `(hash, id)` array (12), the offsets (8), and the group's slots in slot
/// order (8 per slot, a little over one per key), with room to spare.
const GROUP_BYTES_PER_KEY: u64 = 36;

/// Bytes per key in a group's temporary file: the hash and the record's
/// offset, little-endian.
pub(super) const SPILL_ENTRY: usize = 16;

/// Most groups, each a temporary file open at once while scattering.
pub(super) const MAX_GROUPS: u64 = 256;

/// Bytes of records read at a time by the scatter pass.
pub(super) const SCAN_BUFFER: usize = 8 << 20;

/// Slots written or copied at a time: a multiple of 8, so that a chunk of
/// packed slots starts on a byte whatever their width.
const SLOT_CHUNK: u64 = 1 << 20;

/// Records between two looks at the cancel flag in the scatter pass.
const CHECK_EVERY: u64 = 1 << 16;

/// The records of a build, in its temporary file, for a spilled build.
pub(super) struct RecordsFile<'a> {
    /// The temporary file the store is built in.
    pub(super) file: &'a std::fs::File,
    /// Where the records start in it (after room for the header).
    pub(super) start: u64,
    /// The records, mapped: read only where two keys share a hash.
    pub(super) mapped: &'a [u8],
    pub(super) entries: u64,
    pub(super) checksum: u64,
    pub(super) typed: bool,
    /// The dictionary section, in a build with compression (after the
    /// compression pass, which a spilled build runs on the file first).
    pub(super) dictionary: Option<&'a [u8]>,
    /// The required-feature bits the compressed records need.
    pub(super) record_flags: u64,
    /// The store's path: temporary files go beside it, errors name it.
    pub(super) destination: &'a Path,
}

impl RecordsFile<'_> {
    /// The records of a sealed streaming build, before any compression
    /// pass: they start `start` bytes into its file.
    pub(super) fn sealed(
        spill: &Spill,
        start: usize,
        entries: u64,
        typed: bool,
    ) -> RecordsFile<'_> {
        let sealed = spill.sealed.as_ref().expect("sealed first");
        RecordsFile {
            file: &spill.temp.file,
            start: start as u64,
            mapped: &sealed[start..start + spill.len as usize],
            entries,
            checksum: 0,
            typed,
            dictionary: None,
            record_flags: 0,
            destination: &spill.destination,
        }
    }

    pub(super) fn len(&self) -> u64 {
        self.mapped.len() as u64
    }

    pub(super) fn io(&self, e: std::io::Error) -> Error {
        Error::io(Some(self.destination), e)
    }
}

/// What a spilled build did, for progress reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpillStats {
    /// Groups of parts placed one after another.
    pub groups: u64,
    /// Most bytes of temporary files at once, besides the store's own
    /// temporary file: the groups' files, or the slots while they are
    /// copied.
    pub temporary_bytes: u64,
    /// Hash seeds tried.
    pub attempts: u32,
}

/// True if a build of `entries` keys holds more index data than `memory`
/// bytes, or more keys than an unlimited build takes.
pub(super) fn needed(entries: u64, memory: u64) -> bool {
    entries.saturating_mul(INDEX_BYTES_PER_KEY) > memory || entries > chd::MAX_BUILD_ENTRIES as u64
}

/// How a spilled build splits its parts.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    parts: u64,
    groups: u64,
    /// Bytes each group's temporary file buffers before a write.
    buffer: usize,
}

impl Plan {
    /// The groups for `n` keys in `memory` bytes: as few as fit, at most
    /// one per part and `MAX_GROUPS`; an error naming `memory` if even
    /// that many do not fit.
    pub(super) fn new(n: u64, options: &BuildOptions, memory: u64) -> Result<Plan> {
        let parts = chd::part_count(n, options.keys_per_part);
        // Held for the whole store: the seed blocks (a pilot takes about
        // 8 bits before packing squeezes it, at most a u32 per bucket),
        // the remap's pairs (24 bytes per slot past n), the counts.
        let buckets = (n as f64 / options.keys_per_bucket).ceil() as u64;
        let past_n = ((n as f64 / options.load_factor).ceil() as u64).saturating_sub(n) + parts;
        let whole = buckets + past_n * 24 + parts * 16;
        let too_small = |need: u64| {
            Error::InvalidOption {
            name: "memory",
            reason: format!(
                "{memory} bytes is too little to build {n} keys: a build spills them into at most {MAX_GROUPS} groups of parts, and needs about {} MiB for that; give more memory",
                need.div_ceil(1 << 20)
            ),
        }
        };
        let for_groups = memory.checked_sub(whole).filter(|&b| b >= memory / 4);
        let Some(for_groups) = for_groups else {
            return Err(too_small(
                whole * 4 / 3 + n.div_ceil(MAX_GROUPS) * GROUP_BYTES_PER_KEY,
            ));
        };
        // The scatter's buffers come out of the groups' share: a quarter.
        let per_group = for_groups * 3 / 4;
        // Groups hold whole parts: the largest holds ceil(parts / groups)
        // of them, and a part a little more than its share of keys (an
        // eighth, which the parts of a hash keep well under). As few
        // groups as fit; a group's keys go by 32-bit ids.
        let most = parts.min(MAX_GROUPS);
        let largest = |groups: u64| {
            let per_part = n.div_ceil(parts);
            parts.div_ceil(groups) * (per_part + per_part / 8)
        };
        let fits = |groups: u64| {
            largest(groups).saturating_mul(GROUP_BYTES_PER_KEY) <= per_group
                && largest(groups) < u32::MAX as u64
        };
        let first = (n.saturating_mul(GROUP_BYTES_PER_KEY))
            .div_ceil(per_group)
            .clamp(1, most);
        let Some(groups) = (first..=most).find(|&g| fits(g)) else {
            return Err(too_small(
                whole + largest(most) * GROUP_BYTES_PER_KEY * 4 / 3,
            ));
        };
        let buffer = ((for_groups / 4) / groups).clamp(4 << 10, 1 << 20) as usize;
        Ok(Plan {
            parts,
            groups,
            buffer,
        })
    }

    /// The group of part `part`: parts go to groups in order, about as
    /// many to each.
    fn group_of(&self, part: u64) -> usize {
        (part as u128 * self.groups as u128 / self.parts as u128) as usize
    }

    /// The parts of group `g`: those `group_of` sends there.
    fn parts_of(&self, g: u64) -> std::ops::Range<u64> {
        let first = |g: u64| (g as u128 * self.parts as u128).div_ceil(self.groups as u128) as u64;
        first(g)..first(g + 1)
    }
}

/// Builds the index of `records` group by group, writes it after them and
/// the header at the start of the file, and returns the header.
pub(super) fn build(
    records: &RecordsFile<'_>,
    options: &BuildOptions,
    memory: u64,
    cancel: &CancelFlag,
    stats: &mut SpillStats,
) -> Result<Header> {
    let n = records.entries;
    let plan = Plan::new(n, options, memory)?;
    let offset_bits = bits::bits_for(records.len().saturating_sub(1));
    if offset_bits > bits::MAX_PACKED_BITS {
        return Err(Error::Limit {
            what: "bytes of records",
            max: 1 << bits::MAX_PACKED_BITS,
        });
    }
    stats.groups = plan.groups;
    // The retry policy of every build: same seed, same bytes.
    let (seed, index) = search::each_seed(n, options.hash_seed, |attempt, seed| {
        stats.attempts = attempt + 1;
        cancel.check()?;
        let groups = scatter(records, &plan, seed, cancel)?;
        stats.temporary_bytes = stats.temporary_bytes.max(n * SPILL_ENTRY as u64);
        let placed = match options.index {
            IndexKind::Classic => {
                place(records, &plan, groups, seed, offset_bits, options, cancel)?
            }
            IndexKind::Compact => {
                place_compact(records, &plan, groups, seed, offset_bits, options, cancel)?
            }
        };
        Ok(placed.map(|index| (seed, index)))
    })?;
    stats.temporary_bytes = stats
        .temporary_bytes
        .max(bits::packed_len(n, offset_bits).expect("the slots fit the file"));
    write(records, index, seed, offset_bits, options)
}

/// The groups' temporary files after the scatter, and each part's count.
pub(super) struct Groups {
    pub(super) files: Vec<Option<File>>,
    counts: Vec<u64>,
}

/// A group's temporary file being written.
struct GroupWriter {
    file: File,
    buffer: Vec<u8>,
}

impl GroupWriter {
    fn flush(&mut self) -> std::io::Result<()> {
        (&self.file).write_all(&self.buffer)?;
        self.buffer.clear();
        Ok(())
    }
}

/// The scatter pass: every record's key hashed with `seed`, its hash and
/// offset appended to its group's file, in input order.
pub(super) fn scatter(
    records: &RecordsFile<'_>,
    plan: &Plan,
    seed: u64,
    cancel: &CancelFlag,
) -> Result<Groups> {
    let io = |e| records.io(e);
    let mut writers = (0..plan.groups)
        .map(|_| {
            Ok(GroupWriter {
                file: temp::unnamed_beside(records.destination).map_err(io)?,
                buffer: Vec::with_capacity(plan.buffer),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut counts = vec![0u64; plan.parts as usize];
    let mut seen = 0u64;
    each_key(records, cancel, |offset, key| {
        let hash = chd::hash_key(key, seed);
        let part = chd::mul_high(hash, plan.parts);
        counts[part as usize] += 1;
        let writer = &mut writers[plan.group_of(part)];
        writer.buffer.extend_from_slice(&hash.to_le_bytes());
        writer.buffer.extend_from_slice(&offset.to_le_bytes());
        seen += 1;
        if writer.buffer.len() + SPILL_ENTRY > plan.buffer {
            writer.flush().map_err(io)?;
        }
        Ok(())
    })?;
    if seen != records.entries {
        return Err(changed(records));
    }
    let files = writers
        .into_iter()
        .map(|mut w| {
            w.flush().map_err(io)?;
            Ok(Some(w.file))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Groups { files, counts })
}

/// The error for records that do not read back as the build wrote them.
pub(super) fn changed(records: &RecordsFile<'_>) -> Error {
    records.io(std::io::Error::other(
        "the build's temporary file changed under it: its records no longer read back",
    ))
}

/// Calls `f(offset, record)` for every record, in order, with its whole
/// bytes, reading the file a buffer at a time. `f` may write the file
/// before the record it is given (`resolve_repeats` does): each buffer is
/// read before any call for it.
pub(super) fn each_record(
    records: &RecordsFile<'_>,
    cancel: &CancelFlag,
    mut f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    let len = records.len();
    let mut buffer = vec![0u8; SCAN_BUFFER.min(len as usize).max(1)];
    let (mut at, mut count) = (0u64, 0u64);
    while at < len {
        let want = (buffer.len() as u64).min(len - at) as usize;
        records
            .file
            .read_exact_at(&mut buffer[..want], records.start + at)
            .map_err(|e| records.io(e))?;
        let mut used = 0;
        while used < want {
            let layout = match record::parse(&buffer[used..want]) {
                Ok(Some(layout)) if used + layout.len <= want => layout,
                Ok(_) => break,
                Err(_) => return Err(changed(records)),
            };
            f(at + used as u64, &buffer[used..used + layout.len])?;
            used += layout.len;
            count += 1;
            if count % CHECK_EVERY == 0 {
                cancel.check()?;
            }
        }
        if used == 0 {
            // A record longer than the buffer: read it whole.
            match record::parse(&buffer[..want]) {
                Ok(Some(layout)) if layout.len > buffer.len() => {
                    buffer.resize(layout.len, 0);
                    continue;
                }
                _ => return Err(changed(records)),
            }
        }
        at += used as u64;
        cancel.check()?;
    }
    Ok(())
}

/// Calls `f(offset, key)` for every record, in order.
pub(super) fn each_key(
    records: &RecordsFile<'_>,
    cancel: &CancelFlag,
    mut f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    each_record(records, cancel, |offset, record| {
        let key = record::key_of(record).ok_or_else(|| changed(records))?;
        f(offset, key)
    })
}

/// What placing every group leaves for writing.
struct Placed {
    geometry: crate::format::Geometry,
    index: PlacedIndex,
    /// The slots, in slot order, free ones 0: `packed_len(n, width)` bytes.
    slots: File,
}

/// The index sections besides the slots, by layout.
enum PlacedIndex {
    Classic {
        seeds: SeedBlocks,
        /// The free slots below `n`, ascending.
        free: Vec<u64>,
        /// The used slots past `n`, ascending, and their keys' offsets.
        past_n: Vec<(u64, u64)>,
    },
    /// The compact index's function: its slots are the keys' final
    /// indices, so none below `n` is free.
    Compact(CompactHash),
}

/// The perfect hash's parameters with `seed`, and the geometry the
/// scatter's counts give, as an unlimited build works them out.
fn shape_of(
    n: u64,
    plan: &Plan,
    groups: &Groups,
    seed: u64,
    options: &BuildOptions,
) -> Result<(chd::Params, crate::format::Geometry)> {
    let params = chd::Params {
        hash_seed: seed,
        ..options.chd_params()
    };
    let max_part = groups.counts.iter().copied().max().unwrap_or(0);
    let geometry = chd::geometry(n, plan.parts, max_part, &params)?;
    Ok((params, geometry))
}

/// What placing group `g` (read from `file`) came to, judged: `Ok(true)`
/// if it was placed, `Ok(false)` if the seed failed, and for a repeated
/// key the error an unlimited build gives, found in the groups not yet
/// placed (earlier groups had no repeated key: they were placed).
fn settle(
    judged: Result<bool>,
    records: &RecordsFile<'_>,
    groups: &mut Groups,
    g: usize,
    file: File,
    cancel: &CancelFlag,
) -> Result<bool> {
    match judged {
        Err(Error::DuplicateKey { .. }) => {
            groups.files[g] = Some(file);
            Err(spill_repeats::duplicate_error(
                records,
                &groups.files[g..],
                cancel,
            )?)
        }
        judged => judged,
    }
}

/// Places every group in part order, the one loop of both layouts: each
/// group's keys are read back from its file, grouped by part
/// (`read_group`), and handed to `place_group(parts, hashed, offsets,
/// part_starts)`, which places them with the search
/// (`chd::search::place`), keeps what they leave, and returns the
/// search's judgement. `false` if the seed failed.
fn each_group(
    records: &RecordsFile<'_>,
    plan: &Plan,
    groups: &mut Groups,
    cancel: &CancelFlag,
    mut place_group: impl FnMut(std::ops::Range<u64>, Vec<Hashed>, Vec<u64>, Vec<usize>) -> Result<bool>,
) -> Result<bool> {
    for g in 0..plan.groups {
        cancel.check()?;
        let parts = plan.parts_of(g);
        let counts = &groups.counts[parts.start as usize..parts.end as usize];
        let file = groups.files[g as usize].take().expect("each group once");
        let (hashed, offsets, part_starts) =
            read_group(records, &file, plan.parts, parts.start, counts)?;
        let judged = place_group(parts, hashed, offsets, part_starts);
        if !settle(judged, records, groups, g as usize, file, cancel)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Places every group in part order with the classic layout
/// (`chd::classic::Classic`, as an unlimited build places all its parts at
/// once). `None` if the seed failed.
fn place(
    records: &RecordsFile<'_>,
    plan: &Plan,
    mut groups: Groups,
    seed: u64,
    offset_bits: u32,
    options: &BuildOptions,
    cancel: &CancelFlag,
) -> Result<Option<Placed>> {
    let n = records.entries;
    let io = |e| records.io(e);
    let (params, geometry) = shape_of(n, plan, &groups, seed, options)?;
    let map = BucketMap::new(&geometry);
    let layout = Classic::new(&params, &map);
    let spp = geometry.slots_per_part();
    let per_part = geometry.buckets_per_part() as usize;
    let mut seeds = SeedBlocks::new(options.seed_block_len);
    let mut slots = SlotWriter::new(
        temp::unnamed_beside(records.destination).map_err(io)?,
        offset_bits,
    );
    let (mut free, mut past_n) = (Vec::new(), Vec::new());
    let placed = each_group(
        records,
        plan,
        &mut groups,
        cancel,
        |parts, mut hashed, offsets, part_starts| {
            let keys = |id: usize| key_at(records.mapped, offsets[id] as usize);
            let count = parts.end - parts.start;
            let mut pilots = vec![0u32; count as usize * per_part];
            let to_place = layout.parts(parts.start, count);
            if !search::place(
                &layout,
                &mut hashed,
                &part_starts,
                to_place,
                &mut pilots,
                &map,
                &keys,
                cancel,
            )? {
                return Ok(false);
            }
            seeds.extend(&pilots)?;
            drop(pilots);
            // The group's slots in slot order: each key's offset at its slot.
            let first = parts.start * spp;
            let mut by_slot = vec![u64::MAX; (count * spp) as usize];
            for e in &hashed {
                by_slot[(e.hash - first) as usize] = offsets[e.index as usize];
            }
            drop(hashed);
            drop(offsets);
            for (s, &offset) in (first..).zip(&by_slot) {
                match (s < n, offset == u64::MAX) {
                    (true, true) => {
                        free.push(s);
                        slots.push(0).map_err(io)?;
                    }
                    (true, false) => slots.push(offset).map_err(io)?,
                    (false, false) => past_n.push((s, offset)),
                    (false, true) => {}
                }
            }
            Ok(true)
        },
    )?;
    if !placed {
        return Ok(None);
    }
    assert_eq!(
        free.len(),
        past_n.len(),
        "as many free slots below n as used slots past it"
    );
    Ok(Some(Placed {
        geometry,
        index: PlacedIndex::Classic {
            seeds,
            free,
            past_n,
        },
        slots: slots.finish(n).map_err(io)?,
    }))
}

/// Places every group in part order with the compact layout
/// (`chd::compact::Compact`, as an unlimited build places all its parts at
/// once). `None` if the seed failed.
fn place_compact(
    records: &RecordsFile<'_>,
    plan: &Plan,
    mut groups: Groups,
    seed: u64,
    offset_bits: u32,
    options: &BuildOptions,
    cancel: &CancelFlag,
) -> Result<Option<Placed>> {
    let n = records.entries;
    let io = |e| records.io(e);
    let (params, mut geometry) = shape_of(n, plan, &groups, seed, options)?;
    let map = BucketMap::new(&geometry);
    let layout = Compact::new(&params, n, plan.parts);
    let (table, remap_len) = compact::part_table(&groups.counts, params.load_factor);
    geometry.slot_count = n + remap_len;
    let per_part = geometry.buckets_per_part() as usize;
    let mut pilots = vec![0u8; geometry.bucket_count as usize];
    let mut remap = vec![0u32; remap_len as usize];
    let mut slots = SlotWriter::new(
        temp::unnamed_beside(records.destination).map_err(io)?,
        offset_bits,
    );
    let placed = each_group(
        records,
        plan,
        &mut groups,
        cancel,
        |parts, mut hashed, offsets, part_starts| {
            let keys = |id: usize| key_at(records.mapped, offsets[id] as usize);
            let (first, last) = (parts.start as usize, parts.end as usize);
            let group = &table[first..last];
            let remap_of = |part: &compact::Part| {
                let start = part.remap_first as usize;
                start..start + (part.slots - part.keys) as usize
            };
            let remaps = remap_of(&group[0]).start..remap_of(&group[group.len() - 1]).end;
            let to_place = Compact::parts(group, parts.start, &mut remap[remaps], seed);
            if !search::place(
                &layout,
                &mut hashed,
                &part_starts,
                to_place,
                &mut pilots[first * per_part..last * per_part],
                &map,
                &keys,
                cancel,
            )? {
                return Ok(false);
            }
            // The group's keys take the final indices from its first
            // part's first key on, one each: their offsets in that order.
            let first_key = group[0].first_key;
            let mut by_index = vec![0u64; hashed.len()];
            for e in &hashed {
                by_index[(e.hash - first_key) as usize] = offsets[e.index as usize];
            }
            drop(hashed);
            drop(offsets);
            for &offset in &by_index {
                slots.push(offset).map_err(io)?;
            }
            Ok(true)
        },
    )?;
    if !placed {
        return Ok(None);
    }
    let hash = CompactHash::from_parts(seed, geometry, pilots, table, remap);
    Ok(Some(Placed {
        geometry,
        index: PlacedIndex::Compact(hash),
        slots: slots.finish(n).map_err(io)?,
    }))
}

/// A group's keys read back from its file: `(hash, id)` grouped by part,
/// in input order within a part, ids indexing the offsets; and where each
/// part starts. `counts` are the keys of the group's parts, the first of
/// which is `first_part` of `parts`.
fn read_group(
    records: &RecordsFile<'_>,
    file: &File,
    parts: u64,
    first_part: u64,
    counts: &[u64],
) -> Result<(Vec<Hashed>, Vec<u64>, Vec<usize>)> {
    let total: u64 = counts.iter().sum();
    let mut part_starts = vec![0usize; counts.len() + 1];
    for (p, &c) in counts.iter().enumerate() {
        part_starts[p + 1] = part_starts[p] + c as usize;
    }
    let mut next = part_starts[..counts.len()].to_vec();
    let mut hashed = vec![Hashed { hash: 0, index: 0 }; total as usize];
    let mut offsets = Vec::with_capacity(total as usize);
    let mut buffer = vec![0u8; SPILL_ENTRY << 16];
    let (mut at, len) = (0u64, total * SPILL_ENTRY as u64);
    while at < len {
        let want = (buffer.len() as u64).min(len - at) as usize;
        file.read_exact_at(&mut buffer[..want], at)
            .map_err(|e| records.io(e))?;
        for entry in buffer[..want].chunks_exact(SPILL_ENTRY) {
            let hash = u64::from_le_bytes(entry[..8].try_into().expect("8 bytes"));
            let offset = u64::from_le_bytes(entry[8..].try_into().expect("8 bytes"));
            let part = chd::mul_high(hash, parts).wrapping_sub(first_part) as usize;
            let slot = next.get_mut(part).ok_or_else(|| changed(records))?;
            let at = hashed.get_mut(*slot).ok_or_else(|| changed(records))?;
            *at = Hashed {
                hash,
                index: offsets.len() as u32,
            };
            *slot += 1;
            offsets.push(offset);
        }
        at += want as u64;
    }
    Ok((hashed, offsets, part_starts))
}

/// The slots section, written in slot order to a temporary file a chunk
/// of `SLOT_CHUNK` slots at a time.
struct SlotWriter {
    file: File,
    width: u32,
    /// The chunk being filled, with 8 spare bytes for `or_bits`.
    chunk: Vec<u8>,
    /// Slots in the chunk.
    filled: u64,
    /// Bytes written before the chunk.
    written: u64,
}

impl SlotWriter {
    fn new(file: File, width: u32) -> SlotWriter {
        SlotWriter {
            file,
            width,
            chunk: vec![0u8; chunk_bytes(width) + 8],
            filled: 0,
            written: 0,
        }
    }

    fn push(&mut self, offset: u64) -> std::io::Result<()> {
        bits::or_bits(
            &mut self.chunk,
            (self.filled * self.width as u64) as usize,
            offset,
            self.width,
        );
        self.filled += 1;
        if self.filled == SLOT_CHUNK {
            self.write(chunk_bytes(self.width))?;
        }
        Ok(())
    }

    fn write(&mut self, len: usize) -> std::io::Result<()> {
        self.file.write_all_at(&self.chunk[..len], self.written)?;
        self.written += len as u64;
        self.chunk.fill(0);
        self.filled = 0;
        Ok(())
    }

    /// The file, once the last chunk and the padding are written: `n`
    /// slots, `packed_len(n, width)` bytes.
    fn finish(mut self, n: u64) -> std::io::Result<File> {
        let tail = (self.filled * self.width as u64).div_ceil(8) as usize + bits::PACKED_PADDING;
        self.write(tail)?;
        debug_assert_eq!(Some(self.written), bits::packed_len(n, self.width));
        Ok(self.file)
    }
}

/// Bytes of `SLOT_CHUNK` slots of `width` bits: whole, since the chunk
/// is a multiple of 8 slots.
fn chunk_bytes(width: u32) -> usize {
    (SLOT_CHUNK * width as u64 / 8) as usize
}

/// Writes the index sections after the records and the header at the
/// start, in the layout of an unlimited build (`index::lay_out`).
fn write(
    records: &RecordsFile<'_>,
    placed: Placed,
    seed: u64,
    offset_bits: u32,
    options: &BuildOptions,
) -> Result<Header> {
    let io = |e| records.io(e);
    let n = records.entries;
    let (index, free, past_n) = match placed.index {
        PlacedIndex::Classic {
            seeds,
            free,
            past_n,
        } => {
            let (seed_index, seeds) = seeds.finish()?;
            // remap[s - n] is where the key at slot s >= n goes: the free
            // slots below n, in order.
            let m = placed.geometry.slot_count;
            let mut remap = vec![0u64; (m - n) as usize];
            for (&(s, _), &to) in past_n.iter().zip(&free) {
                remap[(s - n) as usize] = to;
            }
            let remap = bits::pack(&remap, bits::bits_for(n.saturating_sub(1)));
            let index = vec![
                (SectionId::SeedIndex, seed_index),
                (SectionId::Seeds, seeds),
                (SectionId::Remap, remap),
            ];
            (index, free, past_n)
        }
        PlacedIndex::Compact(hash) => (index::compact_sections(&hash), Vec::new(), Vec::new()),
    };
    let slots_len = bits::packed_len(n, offset_bits).expect("the slots fit the file");
    let shape = Shape {
        records_len: records.len(),
        records_checksum: records.checksum,
        typed: records.typed,
        record_flags: records.record_flags,
        with_dictionary: records.dictionary.is_some(),
        seed,
        geometry: placed.geometry,
    };
    let checksum = xxhash_rust::xxh3::xxh3_64;
    // The dictionary goes right after the records, as in `index::prepare`.
    let dictionary = records.dictionary.unwrap_or_default();
    let mut sections: Vec<(SectionId, u64, u64)> = records
        .dictionary
        .map(|d| (SectionId::Dictionary, d.len() as u64, checksum(d)))
        .into_iter()
        .collect();
    sections.extend(
        index
            .iter()
            .map(|(id, bytes)| (*id, bytes.len() as u64, checksum(bytes))),
    );
    sections.push((SectionId::Slots, slots_len, 0));
    // Where each section goes does not depend on the checksums.
    let at = |header: &Header, id| header.section(id).offset;
    let header = index::lay_out(&shape, &sections, options);
    let file = records.file;
    if records.dictionary.is_some() {
        file.write_all_at(dictionary, at(&header, SectionId::Dictionary))
            .map_err(io)?;
    }
    for (id, bytes) in &index {
        file.write_all_at(bytes, at(&header, *id)).map_err(io)?;
    }
    drop(index);
    // The slots, each free one given the offset of the key the remap
    // sends there.
    let mut fill = free
        .iter()
        .zip(past_n.iter().map(|&(_, offset)| offset))
        .peekable();
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut chunk = vec![0u8; chunk_bytes(offset_bits) + 8];
    let (mut copied, mut first_slot) = (0u64, 0u64);
    let to = at(&header, SectionId::Slots);
    while copied < slots_len {
        let len = (chunk_bytes(offset_bits) as u64).min(slots_len - copied) as usize;
        chunk[len..].fill(0);
        placed
            .slots
            .read_exact_at(&mut chunk[..len], copied)
            .map_err(io)?;
        while let Some((&s, offset)) = fill.next_if(|(&s, _)| s < first_slot + SLOT_CHUNK) {
            let bit = ((s - first_slot) * offset_bits as u64) as usize;
            bits::or_bits(&mut chunk, bit, offset, offset_bits);
        }
        hasher.update(&chunk[..len]);
        file.write_all_at(&chunk[..len], to + copied).map_err(io)?;
        copied += len as u64;
        first_slot += SLOT_CHUNK;
    }
    drop(placed.slots);
    sections.last_mut().expect("the slots").2 = hasher.digest();
    let header = index::lay_out(&shape, &sections, options);
    file.set_len(header.file_len).map_err(io)?;
    file.write_all_at(&header.encode(), 0).map_err(io)?;
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part lies in exactly one group, groups in part order; groups
    /// fit the memory given and 32-bit ids; too little memory is an error
    /// naming `memory`.
    #[test]
    fn plans_share_out_the_parts_within_the_limit() {
        let options = BuildOptions::default();
        let plan = Plan::new(1_000_000_000, &options, 3 << 30).unwrap();
        assert!(plan.groups > 1 && plan.groups <= MAX_GROUPS, "{plan:?}");
        let mut next = 0;
        for g in 0..plan.groups {
            let parts = plan.parts_of(g);
            assert_eq!(parts.start, next, "{plan:?}");
            next = parts.end;
            for part in parts {
                assert_eq!(plan.group_of(part), g as usize);
            }
        }
        assert_eq!(next, plan.parts);
        // A group's keys, with a part's worth to spare, fit 3 GiB.
        let keys = 1_000_000_000 / plan.groups + options.keys_per_part;
        assert!(keys * GROUP_BYTES_PER_KEY < 3 << 30, "{plan:?}");

        // Five billion keys, more than 32-bit ids count, in 64 GiB: no
        // group reaches 2^32 keys.
        let plan = Plan::new(5_000_000_000, &options, 64 << 30).unwrap();
        assert!(5_000_000_000 / plan.groups + options.keys_per_part < u32::MAX as u64);

        for (n, memory) in [(1_000_000_000, 16 << 20), (10_000_000_000, 1 << 30)] {
            match Plan::new(n, &options, memory) {
                Err(Error::InvalidOption {
                    name: "memory",
                    reason,
                }) => {
                    assert!(reason.contains("give more memory"), "{reason}")
                }
                other => panic!("{n} keys in {memory} bytes: {other:?}"),
            }
        }
    }
}
