//! Delta generations (docs/FORMAT.md, "Delta generations"): a patch of
//! upserts and deletes published as a new generation that reuses every
//! base shard file and adds, for each shard it touches, one small overlay
//! store (key fingerprints, tombstones for deletes); and compaction, which
//! folds a shard's overlays into a new base.
//!
//! A patch holds its changes in memory (it is small by nature: a few keys
//! of a large table), resolved per shard as a build resolves repeats. What
//! a change did (a key added, changed, deleted) is found by reading the
//! current generation, so the manifest's live counts stay exact and a
//! patch costs in proportion to its changes, not the dataset.

use std::collections::HashSet;
use std::path::Path;

use hashfile::format::ValueKind;
use hashfile::{BuildOptions, Builder, Compression, OnDuplicate, Record};

use super::history::PublishOptions;
use super::layers::Shard;
use super::manifest::{
    dataset_error, format_checksum, next_sequence, routing_name, Manifest, OverlayEntry,
    ShardEntry, DELTA_MANIFEST_VERSION, MANIFEST_NAME, MANIFEST_VERSION, MAX_OVERLAYS,
};
use super::retire::Replaced;
use super::write::{new_generation, remove_generations, shard_file_name};
use super::{header_checksum, Dataset};
use crate::source::{open_store, LocalOpen};

/// What a delete of a key the dataset does not hold does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnMissing {
    /// The patch fails, naming the key: a delete that deletes nothing is
    /// usually a key spelled wrong.
    #[default]
    Error,
    /// The delete is dropped (a patch applied twice, a sync that deletes
    /// what may be gone).
    Ignore,
}

impl OnMissing {
    /// The option's value by name: "error" or "ignore".
    pub fn from_name(name: &str) -> Option<OnMissing> {
        match name {
            "error" => Some(OnMissing::Error),
            "ignore" => Some(OnMissing::Ignore),
            _ => None,
        }
    }
}

/// How a patch is applied.
#[derive(Clone, Debug)]
pub struct PatchOptions {
    /// A key changed twice in one patch: an error (the default), the first
    /// or last change kept, or the values merged as a build merges them
    /// (a delete among them: the last change wins).
    pub on_duplicate: OnDuplicate,
    /// A delete of a key the dataset does not hold.
    pub on_missing: OnMissing,
    /// A shard whose overlays would pass this many is compacted instead:
    /// 1 to [`MAX_OVERLAYS`]. Default [`DEFAULT_COMPACT_OVERLAYS`].
    pub compact_overlays: usize,
    /// A shard whose overlays would hold more records than this fraction
    /// of its base's entries is compacted instead. Default
    /// [`DEFAULT_COMPACT_FRACTION`].
    pub compact_fraction: f64,
    /// The history's options and the publish gates.
    pub publish: PublishOptions,
}

/// Overlays a shard may have before a patch compacts it: each costs a
/// lookup of a key it does not hold one fingerprint read.
pub const DEFAULT_COMPACT_OVERLAYS: usize = 8;

/// The share of a shard's base its overlays may hold before a patch
/// compacts it: past a quarter, a lookup is as likely to find its key in
/// an overlay as to read on to the base, and the overlays' space is worth
/// a rebuild.
pub const DEFAULT_COMPACT_FRACTION: f64 = 0.25;

impl Default for PatchOptions {
    fn default() -> Self {
        PatchOptions {
            on_duplicate: OnDuplicate::Error,
            on_missing: OnMissing::Error,
            compact_overlays: DEFAULT_COMPACT_OVERLAYS,
            compact_fraction: DEFAULT_COMPACT_FRACTION,
            publish: PublishOptions::default(),
        }
    }
}

impl PatchOptions {
    /// What is wrong with these options, if anything.
    pub fn check(&self) -> hashfile::Result<()> {
        self.publish.check()?;
        if !(1..=MAX_OVERLAYS).contains(&self.compact_overlays) {
            return Err(hashfile::Error::InvalidOption {
                name: "compact_overlays",
                reason: format!(
                    "{}; a shard has 1 to {MAX_OVERLAYS} overlays before a patch compacts it",
                    self.compact_overlays
                ),
            });
        }
        if !(self.compact_fraction.is_finite() && self.compact_fraction > 0.0) {
            return Err(hashfile::Error::InvalidOption {
                name: "compact_fraction",
                reason: format!(
                    "must be a fraction above 0 (0.25 is 25%), not {}",
                    self.compact_fraction
                ),
            });
        }
        Ok(())
    }
}

/// One change: a record to put, or a key to delete.
#[derive(Clone, Debug)]
struct Change {
    key: Vec<u8>,
    key_utf8: bool,
    /// The value and its kind; `None` for a delete.
    value: Option<(Vec<u8>, ValueKind)>,
    /// Where it was given (a changes file's line), for errors.
    at: Option<hashfile::Location>,
}

/// What a patch or a compaction published.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchSummary {
    /// The manifest published.
    pub manifest: Option<Manifest>,
    /// Keys the patch added (not in the dataset before).
    pub added: u64,
    /// Keys whose value it replaced.
    pub changed: u64,
    /// Keys it put with the value they had already: left as they are.
    pub unchanged: u64,
    /// Keys it deleted.
    pub deleted: u64,
    /// Deletes of keys the dataset did not hold, dropped (`on_missing`
    /// ignore).
    pub ignored: u64,
    /// Shards that got an overlay.
    pub overlays_written: u64,
    /// Shards compacted into a new base.
    pub shards_compacted: u64,
    /// Bytes of the files this publish wrote.
    pub bytes_written: u64,
    /// Whether a generation was published: not when nothing changed (no
    /// changes, or only deletes of keys not held, ignored); `manifest`
    /// is then the current one.
    pub published: bool,
}

/// A patch being put together: changes in the order given.
#[derive(Debug, Default)]
pub struct Patch {
    changes: Vec<Change>,
}

impl Patch {
    /// An empty patch.
    pub fn new() -> Patch {
        Patch::default()
    }

    /// Puts `record` (its key, value and kind).
    pub fn upsert(&mut self, record: Record<'_>) -> hashfile::Result<()> {
        if record.kind == ValueKind::Tombstone {
            return Err(hashfile::Error::InvalidArgument {
                message: "a patch deletes a key with delete, not a tombstone record".into(),
            });
        }
        self.changes.push(Change {
            key: record.key.to_vec(),
            key_utf8: record.key_utf8,
            value: Some((record.value.to_vec(), record.kind)),
            at: None,
        });
        Ok(())
    }

    /// Puts `value` under `key`, stored as a build stores it
    /// (`Value::stored`).
    pub fn upsert_value(
        &mut self,
        key: &[u8],
        key_utf8: bool,
        value: &hashfile::value::Value,
    ) -> hashfile::Result<()> {
        let mut stored = Vec::new();
        let kind = value.stored(&mut stored)?;
        self.changes.push(Change {
            key: key.to_vec(),
            key_utf8,
            value: Some((stored, kind)),
            at: None,
        });
        Ok(())
    }

    /// Deletes `key`.
    pub fn delete(&mut self, key: &[u8], key_utf8: bool) {
        self.changes.push(Change {
            key: key.to_vec(),
            key_utf8,
            value: None,
            at: None,
        });
    }

    /// Says where the change given last came from (a changes file's
    /// line), for the error a repeat of its key gives.
    pub fn given_at(&mut self, at: hashfile::Location) {
        if let Some(last) = self.changes.last_mut() {
            last.at = Some(at);
        }
    }

    /// Changes given.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Publishes the patch over the dataset in `dir` as a new generation:
    /// an overlay for each shard it touches (or, past `compact_overlays`
    /// or `compact_fraction`, the shard compacted with the changes in),
    /// every other file reused. A patch that fails, or a gate that refuses
    /// it, leaves the dataset as it was and removes what it wrote.
    pub fn apply(self, dir: &Path, options: &PatchOptions) -> hashfile::Result<PatchSummary> {
        options.check()?;
        publish_delta(dir, options, "patch", |dataset| {
            let n = dataset.shard_count();
            let mut by_shard: Vec<Vec<Change>> = (0..n).map(|_| Vec::new()).collect();
            for change in self.changes {
                by_shard[dataset.shard_of(&change.key)].push(change);
            }
            let mut resolved = Vec::with_capacity(n);
            for changes in by_shard {
                resolved.push(resolve(changes, options.on_duplicate)?);
            }
            Ok(resolved)
        })
    }
}

/// Compacts every shard of the dataset in `dir` that has overlays (or,
/// given `shards`, those) into a new base, and publishes a generation
/// that reads the same. Shards are compacted one at a time, each in a
/// streaming build (bounded memory); readers keep reading the generation
/// they have until the manifest goes in.
pub fn compact(
    dir: &Path,
    shards: Option<&[usize]>,
    options: &PatchOptions,
) -> hashfile::Result<PatchSummary> {
    options.check()?;
    let chosen: Option<HashSet<usize>> = shards.map(|s| s.iter().copied().collect());
    publish_delta(dir, options, "compaction", |dataset| {
        if let Some(chosen) = &chosen {
            if let Some(&past) = chosen.iter().find(|&&i| i >= dataset.shard_count()) {
                return Err(hashfile::Error::InvalidArgument {
                    message: format!(
                        "shard {past} of a dataset of {} shards",
                        dataset.shard_count()
                    ),
                });
            }
        }
        Ok((0..dataset.shard_count())
            .map(|i| {
                let wanted = match &chosen {
                    Some(chosen) => chosen.contains(&i),
                    None => !dataset.manifest().shards[i].overlays.is_empty(),
                };
                Resolved {
                    changes: Vec::new(),
                    compact: wanted,
                }
            })
            .collect())
    })
}

/// A shard's changes, each key once, sorted by key; and whether the shard
/// is to be compacted whatever its overlays.
struct Resolved {
    changes: Vec<Change>,
    compact: bool,
}

/// Each key of `changes` once, by `on_duplicate`.
fn resolve(mut changes: Vec<Change>, on_duplicate: OnDuplicate) -> hashfile::Result<Resolved> {
    // Stable: equal keys stay in the order given.
    changes.sort_by(|a, b| a.key.cmp(&b.key));
    let mut out: Vec<Change> = Vec::with_capacity(changes.len());
    let mut repeated = 0u64;
    let mut first_repeat: Option<hashfile::Error> = None;
    for change in changes {
        match out.last_mut() {
            Some(last) if last.key == change.key => {
                if first_repeat.is_none() {
                    first_repeat = Some(hashfile::Error::DuplicateKey {
                        key: change.key.clone(),
                        first: last.at.clone().map(Box::new),
                        second: change.at.clone().map(Box::new),
                        others: 0,
                    });
                }
                repeated += 1;
                match on_duplicate {
                    OnDuplicate::Error => {}
                    OnDuplicate::First => {}
                    OnDuplicate::Last => *last = change,
                    OnDuplicate::Merge => merge_into(last, change)?,
                }
            }
            _ => out.push(change),
        }
    }
    if on_duplicate == OnDuplicate::Error {
        if let Some(mut error) = first_repeat {
            if let hashfile::Error::DuplicateKey { others, .. } = &mut error {
                *others = repeated.saturating_sub(1);
            }
            return Err(error);
        }
    }
    Ok(Resolved {
        changes: out,
        compact: false,
    })
}

/// `later` merged into `earlier` as a build merges repeats: maps deep,
/// anything else the later replaces; a delete on either side: the later
/// change wins.
fn merge_into(earlier: &mut Change, later: Change) -> hashfile::Result<()> {
    match (&mut earlier.value, later.value) {
        (Some((before, kind)), Some((after, after_kind))) => {
            let decode = |value: &[u8], kind: ValueKind| {
                hashfile::value::Value::of_record(&Record {
                    key: &later.key,
                    key_utf8: later.key_utf8,
                    value,
                    kind,
                })
            };
            let mut merged = decode(before, *kind)?;
            let next = decode(&after, after_kind)?;
            if !matches!(next, hashfile::value::Value::Nil) {
                hashfile::value::deep_merge(&mut merged, next)?;
            }
            before.clear();
            *kind = merged.stored(before)?;
        }
        (_, value) => earlier.value = value,
    }
    Ok(())
}

/// Opens the dataset in `dir`, asks `plan` for each shard's changes,
/// writes an overlay (or a compacted base) for each shard that has any,
/// and publishes the manifest that lists them with every other file as
/// it was: records, gates, manifest, history, as a build publishes.
fn publish_delta(
    dir: &Path,
    options: &PatchOptions,
    what: &str,
    plan: impl FnOnce(&Dataset) -> hashfile::Result<Vec<Resolved>>,
) -> hashfile::Result<PatchSummary> {
    hashfile::build::refuse_url(dir)?;
    let manifest_path = dir.join(MANIFEST_NAME);
    let location = manifest_path.display().to_string();
    if dir.is_file() {
        return Err(dataset_error(
            &dir.display().to_string(),
            "a store, not a dataset: a patch changes a dataset's shards (build one with shards:); a store is rebuilt".into(),
        ));
    }
    if !manifest_path.is_file() {
        return Err(dataset_error(
            &location,
            format!(
                "no dataset here: {} has no {MANIFEST_NAME} (build the dataset first)",
                dir.display()
            ),
        ));
    }
    let dataset = Dataset::open(&location, &Default::default())?;
    let plans = plan(&dataset)?;
    clean_up_after_killed_patches(dir);
    let generation = new_generation();
    // Held until the patch is published or has failed: if this process is
    // killed meanwhile, the next patch removes what it wrote.
    let _claim = hashfile::build::Claim::take(dir, &format!("{CLAIM_PREFIX}{generation}"))
        .map_err(|source| hashfile::Error::Io {
            path: Some(dir.to_path_buf()),
            source,
        })?;
    let mut publish = options.publish.clone();
    let result = write_delta(dir, &dataset, plans, &generation, options).and_then(
        |(manifest, mut summary)| {
            if manifest.shards == dataset.manifest().shards {
                // Nothing to change (no changes, or only deletes of keys
                // not held, ignored): no generation is published, so none
                // is pushed out of the history.
                summary.manifest = Some(dataset.manifest().clone());
                return Ok(summary);
            }
            // No other publish of the dataset (a build, a patch, a
            // rollback) runs from the check that the generation patched
            // is still current until what left the history is removed.
            let _lock = super::tasks::publish_lock(dir)?;
            let replaced = Replaced::read_local(dir);
            if replaced.current().map(|m| &m.generation) != Some(&dataset.manifest().generation) {
                return Err(dataset_error(
                    &location,
                    format!(
                        "generation {} was published while the {what} was written over generation {}: {} again over the new one",
                        replaced.current().map_or("(none)", |m| &m.generation),
                        dataset.manifest().generation,
                        if what == "patch" { "patch" } else { "compact" },
                    ),
                ));
            }
            let manifest = Manifest {
                sequence: next_sequence(replaced.current()),
                ..manifest
            };
            super::gates::judge(
                &mut publish,
                &location,
                &replaced,
                &manifest,
                &Default::default(),
            )?;
            super::retire::write_record_local(dir, &manifest)?;
            hashfile::build::publish_file(&manifest_path, manifest.to_json().as_bytes())?;
            replaced.retire_local(dir, &manifest, &publish, false);
            summary.manifest = Some(manifest);
            summary.published = true;
            Ok(summary)
        },
    );
    if result.is_err() {
        // What this patch wrote, by the names it gave: its generation's.
        remove_generations(dir, |g| g == generation);
    }
    result
}

/// The name a patch's claim starts with (`hashfile::build::Claim`),
/// followed by the generation it writes.
const CLAIM_PREFIX: &str = "hashfile-delta-";

/// Removes the files of generations that patches killed mid-way were
/// writing (their claims are left, and no process holds them): unless
/// the generation was published, which a patch killed after its manifest
/// went in did.
fn clean_up_after_killed_patches(dir: &Path) {
    let abandoned = hashfile::build::take_abandoned(dir, CLAIM_PREFIX);
    if abandoned.is_empty() {
        return;
    }
    let published = Replaced::read_local(dir);
    for name in abandoned {
        let Some(generation) = name.strip_prefix(CLAIM_PREFIX) else {
            continue;
        };
        if super::write::is_new_generation(generation) && !published.names_generation(generation) {
            remove_generations(dir, |g| g == generation);
        }
    }
}

/// Writes the overlays and compacted bases of `plans` as generation
/// `generation`, and the manifest that lists them (its sequence still to
/// be set).
fn write_delta(
    dir: &Path,
    dataset: &Dataset,
    plans: Vec<Resolved>,
    generation: &str,
    options: &PatchOptions,
) -> hashfile::Result<(Manifest, PatchSummary)> {
    let current = dataset.manifest();
    let n = current.shards.len();
    let mut summary = PatchSummary::default();
    // What each shard gets, found by lookups one shard after another;
    // then the files written, shards side by side.
    let mut jobs = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let entry = &current.shards[i];
        if plan.changes.is_empty() && !plan.compact {
            continue;
        }
        let (upserts, live) = count_changes(
            dataset.shard(i)?,
            &plan.changes,
            options.on_missing,
            &mut summary,
        )?;
        if upserts.is_empty() && !plan.compact {
            continue; // only deletes of keys it does not hold: the shard stays
        }
        let overlay_records: u64 =
            entry.overlays.iter().map(|o| o.entries).sum::<u64>() + upserts.len() as u64;
        let compact = plan.compact
            || entry.overlays.len() + 1 > options.compact_overlays
            || overlay_records as f64 > options.compact_fraction * entry.entries.max(1) as f64;
        jobs.push(Job {
            shard: i,
            upserts,
            live,
            compact,
        });
    }
    let write = |job: &Job<'_>| {
        write_job(
            dir,
            dataset,
            job,
            &shard_file_name(generation, job.shard, n),
        )
    };
    #[cfg(feature = "parallel")]
    let written: Vec<hashfile::Result<(ShardEntry, u64)>> = {
        use rayon::prelude::*;
        jobs.par_iter().map(write).collect()
    };
    #[cfg(not(feature = "parallel"))]
    let written: Vec<hashfile::Result<(ShardEntry, u64)>> = jobs.iter().map(write).collect();
    let mut shards = current.shards.clone();
    for (job, result) in jobs.iter().zip(written) {
        let (entry, bytes) = result?;
        shards[job.shard] = entry;
        summary.bytes_written += bytes;
        if job.compact {
            summary.shards_compacted += 1;
        } else {
            summary.overlays_written += 1;
        }
    }
    let delta = shards.iter().any(|s| !s.overlays.is_empty());
    let manifest = Manifest {
        hashfile_dataset: if delta {
            DELTA_MANIFEST_VERSION
        } else {
            MANIFEST_VERSION
        },
        generation: generation.to_owned(),
        sequence: 0,
        routing: routing_name(),
        entries: shards.iter().map(ShardEntry::live_entries).sum(),
        shards,
    };
    Ok((manifest, summary))
}

/// What one shard gets: an overlay of `upserts`, or (`compact`) a new base
/// of its live records with them applied.
struct Job<'c> {
    shard: usize,
    upserts: Vec<&'c Change>,
    /// The shard's live entries after the changes.
    live: u64,
    compact: bool,
}

/// Writes `job`'s file, `file` beside the manifest, and returns the
/// shard's manifest entry with it and the bytes written.
fn write_job(
    dir: &Path,
    dataset: &Dataset,
    job: &Job<'_>,
    file: &str,
) -> hashfile::Result<(ShardEntry, u64)> {
    let path = dir.join(file);
    let entry = &dataset.manifest().shards[job.shard];
    if job.compact {
        // The shard opened again, for this pass alone: its pages leave
        // with it, so compacting shards holds their pages one at a time,
        // not the dataset's.
        let bytes = compact_shard(&dataset.open_shard(job.shard)?, &job.upserts, &path)?;
        let store = open_local(&path)?;
        if store.len() != job.live {
            return Err(dataset_error(
                &path.display().to_string(),
                format!(
                    "the compacted shard holds {} entries, and its base and overlays {}",
                    store.len(),
                    job.live
                ),
            ));
        }
        return Ok((ShardEntry::of_store(file.to_owned(), bytes, &store)?, bytes));
    }
    let bytes = write_overlay(&job.upserts, &path)?;
    let store = open_local(&path)?;
    let mut next = entry.clone();
    next.overlays.push(OverlayEntry {
        file: file.to_owned(),
        entries: store.len(),
        bytes,
        checksum: format_checksum(header_checksum(&store)?),
    });
    next.live = Some(job.live);
    Ok((next, bytes))
}

/// What an overlay of `shard` holds for `changes` (a tombstone for each
/// delete of a key it holds), and the shard's live entries after them.
fn count_changes<'c>(
    shard: &Shard,
    changes: &'c [Change],
    on_missing: OnMissing,
    summary: &mut PatchSummary,
) -> hashfile::Result<(Vec<&'c Change>, u64)> {
    let mut live = shard.len();
    let mut kept = Vec::with_capacity(changes.len());
    let keys: Vec<&[u8]> = changes.iter().map(|c| c.key.as_slice()).collect();
    let found = shard.get_many(&keys)?;
    for (change, found) in changes.iter().zip(found) {
        if let (Some((value, kind)), Some(now)) = (&change.value, &found) {
            if now.kind() == *kind && now.value() == value.as_slice() {
                // The value it has already: nothing to write.
                summary.unchanged += 1;
                continue;
            }
        }
        match (&change.value, found.is_some()) {
            (Some(_), true) => summary.changed += 1,
            (Some(_), false) => {
                summary.added += 1;
                live += 1;
            }
            (None, true) => {
                summary.deleted += 1;
                live -= 1;
            }
            (None, false) => match on_missing {
                OnMissing::Error => {
                    return Err(hashfile::Error::InvalidArgument {
                        message: format!(
                            "delete of key {}, which the dataset does not hold (on_missing \"ignore\" drops such deletes)",
                            hashfile::DisplayBytes(&change.key)
                        ),
                    })
                }
                OnMissing::Ignore => {
                    summary.ignored += 1;
                    continue;
                }
            },
        }
        kept.push(change);
    }
    Ok((kept, live))
}

/// Writes an overlay of `changes` at `path`: a store with fingerprints,
/// a tombstone for each delete. Returns its length.
fn write_overlay(changes: &[&Change], path: &Path) -> hashfile::Result<u64> {
    let mut builder = Builder::new(BuildOptions {
        fingerprints: true,
        ..BuildOptions::default()
    })?;
    for change in changes {
        match &change.value {
            Some((value, kind)) => builder.insert_record(Record {
                key: &change.key,
                key_utf8: change.key_utf8,
                value,
                kind: *kind,
            }),
            None => builder.insert_tombstone(&change.key, change.key_utf8),
        }
    }
    builder.write_file(path)
}

/// Writes the live records of `shard` with `changes` applied as a new base
/// at `path`, built as the base was (its index layout and compression),
/// streaming: the shard's records in its order, then the keys the changes
/// add. Returns its length.
fn compact_shard(shard: &Shard, changes: &[&Change], path: &Path) -> hashfile::Result<u64> {
    let mut builder = Builder::streaming(options_of(shard.base()), path)?;
    let changed: HashSet<&[u8]> = changes.iter().map(|c| c.key.as_slice()).collect();
    for record in shard.iter() {
        let record = record?;
        if !changed.contains(record.key()) {
            builder.insert_record(record.record());
        }
    }
    for change in changes {
        if let Some((value, kind)) = &change.value {
            builder.insert_record(Record {
                key: &change.key,
                key_utf8: change.key_utf8,
                value,
                kind: *kind,
            });
        }
    }
    builder.write_file(path)
}

/// The options a store was built with, as far as its header tells: its
/// index layout, seed block length, hash parameters, and compression at
/// the level its dictionary section records.
fn options_of(store: &crate::source::Store) -> BuildOptions {
    let header = store.header();
    let mut options = BuildOptions::for_index(header.index_kind());
    if header.index_kind() == hashfile::IndexKind::Classic {
        options.seed_block_len = header.seed_block_len;
    }
    if let Ok(Some(summary)) = store.compression_stats() {
        let stats = summary.stats;
        // A base `auto` built chooses again, whatever it chose.
        options.compression = if stats.auto || stats.level == 0 {
            Compression::Auto
        } else {
            Compression::Zstd {
                level: stats.level,
                long_level: stats.long_level,
            }
        };
    }
    options
}

fn open_local(path: &Path) -> hashfile::Result<crate::source::Store> {
    open_store(
        &path.display().to_string(),
        &Default::default(),
        LocalOpen::Mapped,
    )
}
