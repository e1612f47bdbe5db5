//! A dataset written by many processes: each task of a distributed job (a
//! Spark task) writes the shards it is given under the final names of one
//! generation and reports what it wrote ([`ShardEntry`]); one process, the
//! job's driver, then checks every report against the file and publishes
//! the manifest ([`publish_shards`]), or removes the generation if the job
//! failed ([`discard_generation`]).
//!
//! Why this is safe when tasks fail, retry or run twice (speculation): a
//! shard's records must arrive sorted by key, so every attempt at a shard
//! writes the same bytes; a local shard is published by rename and an S3
//! one by a PUT, both atomic, so a file under a final name is always whole;
//! and no reader looks at a generation until its manifest names it, which
//! happens only after every shard was checked.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use hashfile::dataset::shard_of;
use hashfile::read::Source;
use hashfile::{BuildOptions, Builder, OnDuplicate, Record};
use hashfile_remote::{Location, RemoteOptions};

use super::header_checksum;
use super::history::PublishOptions;
use super::manifest::{
    dataset_error, format_checksum, next_sequence, routing_name, Manifest, ShardEntry,
    MANIFEST_NAME, MANIFEST_VERSION,
};
use super::retire::{write_record_local, write_record_remote, Replaced};
use super::write::{check_shards, generation_of, remove_generations, shard_file_name};
use crate::source::{open_store, LocalOpen};

/// Where a dataset is written: a local directory, or an `s3://` prefix.
#[derive(Clone, Debug)]
pub(super) struct Destination {
    /// The directory or prefix, ending in `/` (empty for the current
    /// directory).
    base: String,
    pub(super) remote: bool,
}

impl Destination {
    /// `location` is the dataset's directory or prefix, or its manifest's
    /// path or URL.
    pub(super) fn of(location: &str) -> hashfile::Result<Destination> {
        let remote = Location::is_remote(location);
        if remote && !location.starts_with("s3://") {
            return Err(dataset_error(
                location,
                "a dataset is written to a local directory or an s3:// prefix; HTTP has no standard way to write".into(),
            ));
        }
        // The manifest's own path names its directory; a name that merely
        // ends as the manifest's (`mine-hashfile-dataset.json`) is not it.
        let trimmed = match location.strip_suffix(MANIFEST_NAME) {
            Some(dir) if dir.is_empty() || dir.ends_with('/') => dir,
            _ => location,
        }
        .trim_end_matches('/');
        let base = if trimmed.is_empty() && location.starts_with('/') {
            "/".to_owned()
        } else if trimmed.is_empty() {
            String::new()
        } else {
            format!("{trimmed}/")
        };
        if !remote && !base.is_empty() {
            std::fs::create_dir_all(&base).map_err(|e| hashfile::Error::Io {
                path: Some(PathBuf::from(&base)),
                source: e,
            })?;
        }
        Ok(Destination { base, remote })
    }

    pub(super) fn at(&self, file: &str) -> String {
        format!("{}{file}", self.base)
    }

    /// The lock that orders publishes of a local dataset (`DirLock`),
    /// waited for; none at an `s3://` prefix, which has no locks.
    pub(super) fn lock(&self) -> hashfile::Result<Option<hashfile::build::DirLock>> {
        if self.remote {
            return Ok(None);
        }
        publish_lock(self.dir()).map(Some)
    }

    pub(super) fn dir(&self) -> &Path {
        Path::new(if self.base.is_empty() {
            "."
        } else {
            &self.base
        })
    }
}

/// Writes one shard of a dataset in a task of a distributed job.
pub struct ShardWriter {
    shard: u32,
    shard_count: NonZeroU32,
    builder: Builder,
    /// The shard's final name, `GENERATION-IIIII-of-NNNNN.hf`.
    file: String,
    destination: Destination,
    /// Where the builder publishes: the final path, or for S3 a file in
    /// the temporary directory that is uploaded, then removed.
    local: PathBuf,
    remote: RemoteOptions,
    /// The last key added, to check the order.
    last_key: Vec<u8>,
}

impl ShardWriter {
    /// A writer of shard `shard` of `shard_count` of generation
    /// `generation` (from [`new_generation`], the same in every task) of
    /// the dataset at `location` (a directory or an `s3://` prefix). The
    /// records stream into a temporary file, so memory stays small
    /// whatever the shard's size. `options.on_duplicate` must be `Error`:
    /// which of two rows came first is not defined in a distributed job.
    pub fn create(
        location: &str,
        generation: &str,
        shard: u32,
        shard_count: u32,
        options: BuildOptions,
        remote: &RemoteOptions,
    ) -> hashfile::Result<ShardWriter> {
        let count = check_shards(shard_count)?;
        if shard >= shard_count {
            return Err(hashfile::Error::InvalidOption {
                name: "shard",
                reason: format!(
                    "{shard}; a dataset of {shard_count} shards has shards 0 to {}",
                    shard_count - 1
                ),
            });
        }
        if options.on_duplicate != OnDuplicate::Error {
            return Err(hashfile::Error::InvalidOption {
                name: "on_duplicate",
                reason: format!(
                    "{}: rows of a distributed job have no order, so which of two is first or last is not defined; remove duplicates before writing (Spark: df.dropDuplicates([key]))",
                    options.on_duplicate.name()
                ),
            });
        }
        check_job_generation(location, generation)?;
        let destination = Destination::of(location)?;
        let file = shard_file_name(generation, shard as usize, shard_count as usize);
        let local = if destination.remote {
            std::env::temp_dir().join(format!("hashfile-upload-{}-{file}", std::process::id()))
        } else {
            PathBuf::from(destination.at(&file))
        };
        let builder = Builder::streaming(options, &local)?;
        Ok(ShardWriter {
            shard,
            shard_count: count,
            builder,
            file,
            destination,
            local,
            remote: remote.clone(),
            last_key: Vec::new(),
        })
    }

    /// Adds a record. Keys must come in ascending byte order (a repeated
    /// key is the build's duplicate key error), and must route to this
    /// shard.
    pub fn insert_record(&mut self, record: Record<'_>) -> hashfile::Result<()> {
        let routed = shard_of(record.key, self.shard_count);
        if routed != self.shard {
            return Err(self.wrong(format!(
                "key {:?} routes to shard {routed}, not to this one",
                String::from_utf8_lossy(record.key)
            )));
        }
        if !self.builder.is_empty() && record.key < self.last_key.as_slice() {
            return Err(self.wrong(format!(
                "key {:?} comes after {:?}: a shard's records must come sorted by key, so that every attempt writes the same bytes",
                String::from_utf8_lossy(record.key),
                String::from_utf8_lossy(&self.last_key)
            )));
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(record.key);
        self.builder.insert_record(record);
        Ok(())
    }

    /// Adds the entries of `lines`, JSON Lines read with `import` (its
    /// format must be JSON Lines); `source` names them in errors. Returns
    /// how many.
    #[cfg(feature = "import")]
    pub fn add_json_lines(
        &mut self,
        lines: &[u8],
        source: &str,
        import: &hashfile::import::ImportOptions,
    ) -> hashfile::Result<u64> {
        if import.format != hashfile::import::InputFormat::JsonLines {
            return Err(hashfile::Error::InvalidOption {
                name: "format",
                reason: format!("{}; a shard writer reads JSON Lines", import.format.name()),
            });
        }
        let mut added = 0u64;
        hashfile::import::import(lines, source, import, &mut |record, _| {
            added += 1;
            self.insert_record(record)
        })?;
        Ok(added)
    }

    /// Entries added.
    pub fn len(&self) -> usize {
        self.builder.len()
    }

    /// True if nothing was added.
    pub fn is_empty(&self) -> bool {
        self.builder.is_empty()
    }

    /// Builds the shard and publishes it under its final name (an S3 one
    /// by upload), and says what it wrote: the report to hand to
    /// [`publish_shards`].
    pub fn finish(mut self) -> hashfile::Result<ShardEntry> {
        let result = self.write();
        if self.destination.remote {
            let _ = std::fs::remove_file(&self.local);
        }
        result
    }

    fn write(&mut self) -> hashfile::Result<ShardEntry> {
        let bytes = self.builder.write_file(&self.local)?;
        let store = open_store(
            &self.local.display().to_string(),
            &RemoteOptions::default(),
            LocalOpen::Mapped,
        )?;
        let entry = ShardEntry {
            file: self.file.clone(),
            entries: store.len(),
            bytes,
            checksum: format_checksum(header_checksum(&store)?),
            overlays: Vec::new(),
            live: None,
        };
        drop(store);
        if self.destination.remote {
            hashfile_remote::put_file(&self.destination.at(&self.file), &self.local, &self.remote)?;
        }
        Ok(entry)
    }

    fn wrong(&self, what: String) -> hashfile::Error {
        dataset_error(
            &self.destination.at(&self.file),
            format!("shard {} of {}: {what}", self.shard, self.shard_count),
        )
    }
}

/// A new generation id, for every task of one job to write under.
pub fn new_generation() -> String {
    super::write::new_generation()
}

/// Refuses a generation id [`new_generation`] did not make: a job's
/// shards are found by the id they were written under (to publish them,
/// or to discard them if it fails), so every step takes only such an id,
/// which no file of anyone else's begins with.
fn check_job_generation(location: &str, generation: &str) -> hashfile::Result<()> {
    if super::write::is_new_generation(generation) {
        return Ok(());
    }
    Err(dataset_error(
        location,
        format!("generation {generation:?} is not one new_generation made (like 20261124T143910Z-1f0c93ab): a job's shards are found by the id it wrote them under"),
    ))
}

/// Publishes generation `generation` of the dataset at `location` from its
/// tasks' reports, one per shard in any order: checks that every shard of
/// `0..shard_count` was reported once, under its name, and that each file
/// holds what its report says (entry count, length, header checksum: a
/// file a failed or second attempt left is caught here), then writes the
/// manifest (by rename, or one PUT). The shards of the generation before
/// the one replaced are removed, as its manifest listed them
/// ([`DatasetBuilder`](super::DatasetBuilder) does the same), and what
/// failed attempts of this one left.
pub fn publish_shards(
    location: &str,
    generation: &str,
    shard_count: u32,
    mut reports: Vec<ShardEntry>,
    remote: &RemoteOptions,
    publish: &PublishOptions,
) -> hashfile::Result<Manifest> {
    publish.check()?;
    let n = check_shards(shard_count)?.get() as usize;
    check_job_generation(location, generation)?;
    let destination = Destination::of(location)?;
    let manifest_at = destination.at(MANIFEST_NAME);
    let wrong = |what: String| dataset_error(&manifest_at, what);
    reports.sort_by(|a, b| a.file.cmp(&b.file));
    for i in 0..n {
        let name = shard_file_name(generation, i, n);
        let reported = reports.get(i).map(|r| r.file.as_str());
        if reported != Some(name.as_str()) {
            return Err(wrong(if reports.iter().any(|r| r.file == name) {
                format!("shard {i} ({name}) was reported twice")
            } else {
                format!(
                    "shard {i} ({name}) was not reported: {} reports for {n} shards",
                    reports.len()
                )
            }));
        }
    }
    if reports.len() != n {
        return Err(wrong(format!(
            "{} reports for {n} shards; the extra ones name {:?}",
            reports.len(),
            reports[n].file
        )));
    }
    for (i, report) in reports.iter().enumerate() {
        let at = destination.at(&report.file);
        let store = open_store(&at, remote, LocalOpen::Mapped)?;
        let found = ShardEntry {
            file: report.file.clone(),
            entries: store.len(),
            bytes: store.source().size(),
            checksum: format_checksum(header_checksum(&store)?),
            overlays: Vec::new(),
            live: None,
        };
        if &found != report {
            return Err(dataset_error(
                &at,
                format!(
                    "shard {i} of {n}: its task reported {} entries, {} bytes, checksum {}, and the file holds {} entries, {} bytes, checksum {}",
                    report.entries, report.bytes, report.checksum, found.entries, found.bytes, found.checksum
                ),
            ));
        }
    }
    // From what is replaced to what leaves the history, no other publish
    // of the dataset runs.
    let _lock = destination.lock()?;
    let replaced = Replaced::read(&destination, remote);
    let manifest = Manifest {
        hashfile_dataset: MANIFEST_VERSION,
        generation: generation.to_owned(),
        sequence: next_sequence(replaced.current()),
        routing: routing_name(),
        entries: reports.iter().map(|s| s.entries).sum(),
        shards: reports,
    };
    let mut publish = publish.clone();
    if let Err(refused) =
        super::gates::judge(&mut publish, &manifest_at, &replaced, &manifest, remote)
    {
        // Nothing of the refused generation is left: its shards go.
        if destination.remote {
            let _ = hashfile_remote::delete_beside(
                &manifest_at,
                |name| generation_of(name) == Some(generation),
                remote,
            );
        } else {
            remove_generations(destination.dir(), |g| g == generation);
            remove_leftovers(destination.dir(), generation);
        }
        return Err(refused);
    }
    publish_manifest(&destination, &manifest, &replaced, remote, &publish, false)?;
    if !destination.remote {
        remove_leftovers(destination.dir(), generation);
    }
    Ok(manifest)
}

/// The lock that orders the publishes of the local dataset in `dir`
/// (builds, patches, rollbacks: `hashfile::build::DirLock`), waited for.
pub(super) fn publish_lock(dir: &Path) -> hashfile::Result<hashfile::build::DirLock> {
    hashfile::build::DirLock::exclusive(dir).map_err(|source| hashfile::Error::Io {
        path: Some(dir.to_path_buf()),
        source,
    })
}

/// Publishes `manifest` at `destination` over what `replaced` found
/// there: its record first, then the manifest (by rename, or one PUT),
/// then the history, and the files of generations that left it.
pub(super) fn publish_manifest(
    destination: &Destination,
    manifest: &Manifest,
    replaced: &Replaced,
    remote: &RemoteOptions,
    publish: &PublishOptions,
    rollback: bool,
) -> hashfile::Result<()> {
    let manifest_at = destination.at(MANIFEST_NAME);
    let text = manifest.to_json();
    if destination.remote {
        write_record_remote(&manifest_at, manifest, remote)?;
        hashfile_remote::put_bytes(&manifest_at, text.into_bytes(), remote)?;
        replaced.retire_remote(&manifest_at, manifest, remote, publish, rollback);
    } else {
        write_record_local(destination.dir(), manifest)?;
        hashfile::build::publish_file(Path::new(&manifest_at), text.as_bytes())?;
        replaced.retire_local(destination.dir(), manifest, publish, rollback);
    }
    Ok(())
}

/// Removes what a failed job wrote of generation `generation` at
/// `location`: its shards, and temporary files attempts left. The
/// dataset's manifest, and so what readers read, is not touched.
///
/// The job's shards are found by their names, so this takes only a
/// generation id [`new_generation`] made (the time and 8 random hex
/// digits, which no file of anyone else's begins with), and refuses one
/// that the dataset's manifest or its previous generation's record names:
/// what a failed job never published.
pub fn discard_generation(
    location: &str,
    generation: &str,
    remote: &RemoteOptions,
) -> hashfile::Result<()> {
    let destination = Destination::of(location)?;
    let manifest_at = destination.at(MANIFEST_NAME);
    check_job_generation(&manifest_at, generation)?;
    let replaced = Replaced::read(&destination, remote);
    if let Some(why) = replaced.unreadable() {
        return Err(dataset_error(
            &manifest_at,
            format!("the manifest cannot be read ({why}), so which generation is published cannot be told: nothing is discarded"),
        ));
    }
    if replaced.names_generation(generation) {
        return Err(dataset_error(
            &manifest_at,
            format!("generation {generation} is published (the manifest or the previous generation's record lists it): only an unpublished one is discarded"),
        ));
    }
    if destination.remote {
        hashfile_remote::delete_beside(
            &destination.at(MANIFEST_NAME),
            |name| generation_of(name) == Some(generation),
            remote,
        )?;
    } else {
        remove_generations(destination.dir(), |g| g == generation);
        remove_leftovers(destination.dir(), generation);
    }
    Ok(())
}

/// Removes the temporary files of generation `generation`'s shards that
/// attempts killed mid-write left (`.NAME.hashfile-PID-START-N.tmp`, the
/// atomic publish's names).
fn remove_leftovers(dir: &Path, generation: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{generation}-");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with(&prefix) && name.ends_with(".tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
