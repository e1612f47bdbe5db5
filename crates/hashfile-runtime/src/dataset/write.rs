//! Writing a dataset: entries routed to one builder per shard, the shards
//! published under names that carry a new generation, then the manifest,
//! atomically. A reader opening the directory meanwhile reads the old
//! manifest and the old shards, or the new ones; never a mix.

use std::hash::{BuildHasher, Hasher};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use hashfile::dataset::{shard_of, MAX_SHARDS};
use hashfile::{BuildOptions, Builder, CancelFlag, Record};

use super::history::PublishOptions;
use super::manifest::{
    next_sequence, routing_name, Manifest, ShardEntry, MANIFEST_NAME, MANIFEST_VERSION,
};
use super::retire::{write_record_local, Replaced};
use crate::source::{open_store, LocalOpen};

/// Builds a dataset of `n` shards.
pub struct DatasetBuilder {
    builders: Vec<Builder>,
    shard_count: NonZeroU32,
    /// For a streaming build: the directory and generation its shards'
    /// temporary files were made for, until the first `write`.
    streaming: Option<(PathBuf, String)>,
    cancel: CancelFlag,
    /// How the publish is recorded, and what it keeps.
    publish: PublishOptions,
    /// Whether this builder made the directory it writes into (a
    /// streaming build makes it at the start): a build that fails removes
    /// it again if nothing else is in it.
    made_dir: bool,
}

impl DatasetBuilder {
    /// A builder of `shards` shards (1 to `MAX_SHARDS`), each built with
    /// `options`, holding the entries in memory.
    pub fn new(shards: u32, options: BuildOptions) -> hashfile::Result<DatasetBuilder> {
        let shard_count = check_shards(shards)?;
        let options = per_shard(options, shards)?;
        let builders = (0..shards)
            .map(|_| Builder::new(options.clone()))
            .collect::<hashfile::Result<Vec<_>>>()?;
        Ok(DatasetBuilder {
            builders,
            shard_count,
            streaming: None,
            cancel: CancelFlag::new(),
            publish: PublishOptions::default(),
            made_dir: false,
        })
    }

    /// A builder that writes each shard's records straight into a
    /// temporary file in `dir` (made if missing) as they are added, as
    /// `Builder::streaming` does: the entries are not held in memory, but
    /// each shard keeps a file open and a 1 MiB write buffer. `write(dir)`
    /// then builds every shard's index after its records in place.
    pub fn streaming(
        shards: u32,
        options: BuildOptions,
        dir: &Path,
    ) -> hashfile::Result<DatasetBuilder> {
        let shard_count = check_shards(shards)?;
        let options = per_shard(options, shards)?;
        let made_dir = !dir.exists();
        create_dir(dir)?;
        let generation = new_generation();
        let n = shards as usize;
        let builders = (0..n)
            .map(|i| {
                Builder::streaming(
                    options.clone(),
                    &dir.join(shard_file_name(&generation, i, n)),
                )
            })
            .collect::<hashfile::Result<Vec<_>>>()?;
        Ok(DatasetBuilder {
            builders,
            shard_count,
            streaming: Some((dir.to_path_buf(), generation)),
            cancel: CancelFlag::new(),
            publish: PublishOptions::default(),
            made_dir,
        })
    }

    /// The shard `key` goes to.
    #[inline]
    pub fn shard_of(&self, key: &[u8]) -> usize {
        shard_of(key, self.shard_count) as usize
    }

    /// Adds a string entry to its shard.
    pub fn insert(&mut self, key: &[u8], value: &[u8]) {
        let shard = self.shard_of(key);
        self.builders[shard].insert(key, value);
    }

    /// Adds a record (of any value kind) to its shard.
    #[inline]
    pub fn insert_record(&mut self, record: Record<'_>) {
        let shard = self.shard_of(record.key);
        self.builders[shard].insert_record(record);
    }

    /// The builder of the shard `key` goes to, for what `insert_record`
    /// does not cover.
    pub fn builder_for(&mut self, key: &[u8]) -> &mut Builder {
        let shard = self.shard_of(key);
        &mut self.builders[shard]
    }

    /// Stops the shards' builds when `flag` is raised (from another
    /// thread or a signal handler); nothing is published then.
    pub fn set_cancel(&mut self, flag: CancelFlag) {
        for builder in &mut self.builders {
            builder.set_cancel(flag.clone());
        }
        self.cancel = flag;
    }

    /// How the publish is recorded in the dataset's history, and how many
    /// publishes it keeps (`PublishOptions::default()` unless set).
    pub fn set_publish(&mut self, options: PublishOptions) -> hashfile::Result<()> {
        options.check()?;
        self.publish = options;
        Ok(())
    }

    /// Entries added.
    pub fn len(&self) -> usize {
        self.builders.iter().map(Builder::len).sum()
    }

    /// What the shards that spilled their index did, summed (`None` if
    /// none did): temporary bytes are summed too, an upper bound, since
    /// shards build a few at a time.
    pub fn spill_stats(&self) -> Option<hashfile::SpillStats> {
        self.builders
            .iter()
            .filter_map(Builder::spill_stats)
            .reduce(|a, b| hashfile::SpillStats {
                groups: a.groups + b.groups,
                temporary_bytes: a.temporary_bytes + b.temporary_bytes,
                attempts: a.attempts.max(b.attempts),
            })
    }

    /// True if nothing was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Publishes the dataset in `dir` (made if missing): every shard under
    /// `GENERATION-IIIII-of-NNNNN.hf`, built in parallel (with the
    /// `parallel` feature: on the current rayon pool), then
    /// `hashfile-dataset.json` by rename. The shards of the generation
    /// replaced stay, for readers still opening it; those of the one before
    /// it, as its manifest listed them, are removed (and nothing else:
    /// `retire`). A build that fails leaves the manifest, and so the
    /// dataset, as it was, and removes the shards it wrote.
    pub fn write(&mut self, dir: &Path) -> hashfile::Result<Manifest> {
        self.write_checked(dir, &mut || Ok(()))
    }

    /// `write`, calling `before_publish` once every shard is written, just
    /// before the manifest's rename: an error from it (a cancelled build)
    /// removes the new shards and leaves the dataset as it was.
    pub fn write_checked(
        &mut self,
        dir: &Path,
        before_publish: &mut dyn FnMut() -> hashfile::Result<()>,
    ) -> hashfile::Result<Manifest> {
        let made = !dir.exists()
            || (self.made_dir && self.streaming.as_ref().is_some_and(|(into, _)| into == dir));
        create_dir(dir)?;
        let manifest_path = dir.join(MANIFEST_NAME);
        // A streaming build's first write keeps the generation its
        // temporary files are named for; any other write starts a new one,
        // so that it never renames over a shard a reader may be using.
        let generation = match self.streaming.take() {
            Some((streamed_into, generation)) if streamed_into == dir => generation,
            _ => new_generation(),
        };
        let result = self.write_generation(dir, &generation, &manifest_path, before_publish);
        match &result {
            Ok((manifest, replaced, _lock)) => {
                replaced.retire_local(dir, manifest, &self.publish, false)
            }
            Err(_) => {
                // The shards this build wrote, by the names it gave them,
                // and the directory it made for them, if nothing else is
                // in it now.
                let n = self.builders.len();
                for i in 0..n {
                    let _ = std::fs::remove_file(dir.join(shard_file_name(&generation, i, n)));
                }
                if made {
                    let _ = std::fs::remove_dir(dir);
                }
            }
        }
        result.map(|(manifest, ..)| manifest)
    }

    fn write_generation(
        &mut self,
        dir: &Path,
        generation: &str,
        manifest_path: &Path,
        before_publish: &mut dyn FnMut() -> hashfile::Result<()>,
    ) -> hashfile::Result<(Manifest, Replaced, hashfile::build::DirLock)> {
        let n = self.builders.len();
        let write_shard = |(i, builder): (usize, &mut Builder)| {
            let file = shard_file_name(generation, i, n);
            let path = dir.join(&file);
            let bytes = builder.write_file(&path)?;
            let store = open_store(
                &path.display().to_string(),
                &Default::default(),
                LocalOpen::Mapped,
            )?;
            ShardEntry::of_store(file, bytes, &store)
        };
        // Every shard is built, even after one fails, so that a duplicate
        // key error counts the keys that repeat in all of them.
        #[cfg(feature = "parallel")]
        let results: Vec<hashfile::Result<ShardEntry>> = {
            use rayon::prelude::*;
            self.builders
                .par_iter_mut()
                .enumerate()
                .map(write_shard)
                .collect()
        };
        #[cfg(not(feature = "parallel"))]
        let results: Vec<hashfile::Result<ShardEntry>> = self
            .builders
            .iter_mut()
            .enumerate()
            .map(write_shard)
            .collect();
        let shards = first_error(results)?;
        self.cancel.check()?;
        before_publish()?;
        // What is replaced, read under the lock that orders the dataset's
        // publishes (held until what leaves the history is removed), as
        // late as can be: a publish that ran meanwhile counts, and this
        // one's sequence comes after it.
        let lock = super::tasks::publish_lock(dir)?;
        let replaced = Replaced::read_local(dir);
        let manifest = Manifest {
            hashfile_dataset: MANIFEST_VERSION,
            entries: shards.iter().map(|s| s.entries).sum(),
            generation: generation.to_string(),
            sequence: next_sequence(replaced.current()),
            routing: routing_name(),
            shards,
        };
        super::gates::judge(
            &mut self.publish,
            &manifest_path.display().to_string(),
            &replaced,
            &manifest,
            &Default::default(),
        )?;
        write_record_local(dir, &manifest)?;
        hashfile::build::publish_file(manifest_path, manifest.to_json().as_bytes())?;
        Ok((manifest, replaced, lock))
    }
}

/// The shards, or the error of the build: the first that is not a
/// duplicate key (an I/O error, a cancelled build), else the duplicate key
/// of the lowest shard, counting as `others` the keys that repeat in every
/// shard.
fn first_error(results: Vec<hashfile::Result<ShardEntry>>) -> hashfile::Result<Vec<ShardEntry>> {
    let mut shards = Vec::with_capacity(results.len());
    let mut duplicate: Option<hashfile::Error> = None;
    let mut other: Option<hashfile::Error> = None;
    for result in results {
        match (result, &mut duplicate) {
            (Ok(shard), _) => shards.push(shard),
            (
                Err(hashfile::Error::DuplicateKey { others, .. }),
                Some(hashfile::Error::DuplicateKey { others: total, .. }),
            ) => {
                *total += others + 1;
            }
            (Err(e @ hashfile::Error::DuplicateKey { .. }), None) => duplicate = Some(e),
            (Err(e), _) => {
                other.get_or_insert(e);
            }
        }
    }
    match other.or(duplicate) {
        Some(e) => Err(e),
        None => Ok(shards),
    }
}

pub(super) fn check_shards(shards: u32) -> hashfile::Result<NonZeroU32> {
    NonZeroU32::new(shards)
        .filter(|n| n.get() <= MAX_SHARDS)
        .ok_or_else(|| hashfile::Error::InvalidOption {
            name: "shards",
            reason: format!("{shards}; a dataset has 1 to {MAX_SHARDS} shards"),
        })
}

fn create_dir(dir: &Path) -> hashfile::Result<()> {
    hashfile::build::refuse_url(dir)?;
    std::fs::create_dir_all(dir).map_err(|e| hashfile::Error::Io {
        path: Some(dir.to_path_buf()),
        source: e,
    })
}

/// `GENERATION-IIIII-of-NNNNN.hf`.
pub(super) fn shard_file_name(generation: &str, i: usize, n: usize) -> String {
    format!("{generation}-{i:05}-of-{n:05}.hf")
}

/// The generation of a shard file this library named, if it is one.
pub(super) fn generation_of(file_name: &str) -> Option<&str> {
    let stem = file_name.strip_suffix(".hf")?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (generation, index) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() >= 5 && s.bytes().all(|b| b.is_ascii_digit());
    (digits(count) && digits(index) && !generation.is_empty()).then_some(generation)
}

/// Removes the shard files whose generation `doomed` picks. A file that
/// cannot be removed is left: it costs space, never correctness.
pub(super) fn remove_generations(dir: &Path, doomed: impl Fn(&str) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if generation_of(name).is_some_and(&doomed) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A new generation id: the UTC time to the second and 8 random hex
/// digits, `20261124T143910Z-1f0c93ab`: sorts by time, and two builds in
/// one second differ.
pub(super) fn new_generation() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = now.as_secs();
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(now.as_nanos());
    hasher.write_u32(std::process::id());
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z-{:08x}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        hasher.finish() as u32
    )
}

/// Whether `generation` has the shape of an id [`new_generation`] makes:
/// `YYYYMMDDTHHMMSSZ-` and 8 lowercase hex digits.
pub(super) fn is_new_generation(generation: &str) -> bool {
    let b = generation.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    b.len() == 25
        && digits(0..8)
        && b[8] == b'T'
        && digits(9..15)
        && b[15] == b'Z'
        && b[16] == b'-'
        && b[17..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
pub(super) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Each shard's options: the memory limit shared out, since every shard
/// holds its hashes while entries come, and shards build in parallel. A
/// shard never gets less than `MIN_MEMORY_LIMIT`.
fn per_shard(options: BuildOptions, shards: u32) -> hashfile::Result<BuildOptions> {
    let memory = (options.memory.resolve() / shards.max(1) as u64).max(hashfile::MIN_MEMORY_LIMIT);
    Ok(BuildOptions {
        memory: hashfile::MemoryLimit::bytes(memory)?,
        ..options
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_from_day_counts() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_781), (2026, 11, 24));
    }

    #[test]
    fn generation_ids_are_valid_names_and_shard_names_carry_them() {
        let generation = new_generation();
        assert_eq!(generation.len(), "20261124T143910Z-1f0c93ab".len());
        let name = shard_file_name(&generation, 3, 16);
        assert_eq!(generation_of(&name), Some(generation.as_str()));
        assert_eq!(generation_of("notes.hf"), None);
        assert_eq!(generation_of("x-1-of-2.hf"), None);
        assert!(is_new_generation(&generation));
        for other in [
            "customers",
            "20261124T143910Z-1f0c93aG",
            "20261124T143910Z-1f0c93a",
            "2026112xT143910Z-1f0c93ab",
        ] {
            assert!(!is_new_generation(other), "{other}");
        }
    }
}
