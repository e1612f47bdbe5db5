//! A dataset's generations over time, as its history keeps them: listing
//! them, opening one pinned, and making an earlier one current again
//! (a rollback publishes its manifest anew, rebuilding nothing).

use std::path::Path;

use hashfile_remote::{Location, RemoteOptions};

use super::history::{record_name, History, PublishOptions, HISTORY_NAME, MAX_HISTORY_LEN};
use super::manifest::{dataset_error, next_sequence, Manifest, MANIFEST_NAME, MAX_MANIFEST_LEN};
use super::retire::Replaced;
use super::tasks::{publish_manifest, Destination};
use super::Dataset;

/// The manifest's location for a dataset named by `location`: its
/// directory, its manifest's path, or an `s3://` prefix or manifest URL
/// (an `http(s)://` dataset is named by its manifest's URL).
fn manifest_at(location: &str) -> hashfile::Result<String> {
    if file_name(location) == MANIFEST_NAME {
        return Ok(location.to_owned());
    }
    let remote = Location::is_remote(location);
    if (!remote && Path::new(location).is_dir()) || location.starts_with("s3://") {
        return Ok(format!(
            "{}/{MANIFEST_NAME}",
            location.trim_end_matches('/')
        ));
    }
    Err(dataset_error(
        location,
        format!("not a dataset: name its directory, an s3:// prefix, or its {MANIFEST_NAME}"),
    ))
}

/// The last component of a path or URL.
fn file_name(location: &str) -> &str {
    location.rsplit('/').next().unwrap_or(location)
}

/// The location of `name` beside the manifest at `manifest_at`.
fn beside(manifest_at: &str, name: &str) -> String {
    super::retire::beside(manifest_at, name)
}

/// Whether `location` names a manifest: the dataset's own, or a
/// generation's record (which a pinned reader opens).
pub fn is_manifest_location(location: &str) -> bool {
    let name = file_name(location);
    name == MANIFEST_NAME
        || (name.starts_with("hashfile-dataset.")
            && name.ends_with(".json")
            && name != HISTORY_NAME)
}

/// The location of `generation`'s record in the dataset at `location`:
/// what a reader opened with `generation` opens.
pub fn generation_location(location: &str, generation: &str) -> hashfile::Result<String> {
    super::history::check_generation(generation).map_err(|what| {
        hashfile::Error::InvalidOption {
            name: "generation",
            reason: format!("{what} ({location})"),
        }
    })?;
    let manifest_at = manifest_at(location).map_err(|_| hashfile::Error::InvalidOption {
        name: "generation",
        reason: format!(
            "is for a dataset (its directory, or its {MANIFEST_NAME}), and {location} is not one"
        ),
    })?;
    Ok(beside(&manifest_at, &record_name(generation)))
}

/// Opens generation `generation` of the dataset at `location`, pinned: an
/// error naming the generations kept if its record is not there.
pub fn open_generation(
    location: &str,
    generation: &str,
    remote: &RemoteOptions,
) -> hashfile::Result<Dataset> {
    let at = generation_location(location, generation)?;
    match Dataset::open(&at, remote) {
        // A record copied over another's names its own generation.
        Ok(dataset) if dataset.manifest().generation != generation => Err(dataset_error(
            &at,
            format!(
                "the record of generation {generation} names generation {}",
                dataset.manifest().generation
            ),
        )),
        Err(e) if is_not_found(&e) => {
            let kept = history(location, remote)
                .map(|h| h.generations().join(", "))
                .unwrap_or_else(|why| format!("none known: {why}"));
            Err(dataset_error(
                location,
                format!("generation {generation} is not kept here (kept: {kept})"),
            ))
        }
        other => other,
    }
}

fn is_not_found(error: &hashfile::Error) -> bool {
    match error {
        hashfile::Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        other => hashfile_remote::RemoteError::find_in(other)
            .is_some_and(|r| r.kind == hashfile_remote::RemoteErrorKind::NotFound),
    }
}

/// The bytes of `name` beside `manifest_at`, `None` if it is not there.
fn read_beside(
    manifest_at: &str,
    name: &str,
    limit: u64,
    remote: &RemoteOptions,
) -> hashfile::Result<Option<Vec<u8>>> {
    let at = beside(manifest_at, name);
    let read = if Location::is_remote(&at) {
        hashfile_remote::fetch_whole(&at, remote.clone(), limit)
    } else {
        std::fs::read(&at).map_err(|source| hashfile::Error::Io {
            path: Some(at.clone().into()),
            source,
        })
    };
    match read {
        Ok(bytes) if bytes.len() as u64 > limit => Err(dataset_error(
            &at,
            format!("{} bytes, past the {limit} read", bytes.len()),
        )),
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The history of the dataset at `location` (a directory, a manifest's
/// path or URL, or an `s3://` prefix): its publishes kept, newest first.
/// A dataset an older release published has no history file: its history
/// is then what its manifest (and the record of the generation before)
/// say.
pub fn history(location: &str, remote: &RemoteOptions) -> hashfile::Result<History> {
    let manifest_at = manifest_at(location)?;
    let history = match read_beside(&manifest_at, HISTORY_NAME, MAX_HISTORY_LEN, remote)? {
        Some(bytes) => Some(
            History::parse(&bytes, &beside(&manifest_at, HISTORY_NAME))
                .map_err(|what| dataset_error(&manifest_at, what))?,
        ),
        None => None,
    };
    let manifest = match read_beside(&manifest_at, MANIFEST_NAME, MAX_MANIFEST_LEN, remote)? {
        Some(bytes) => Manifest::parse(&bytes, &manifest_at)?,
        None => {
            return Err(dataset_error(
                &manifest_at,
                format!("no dataset here: {MANIFEST_NAME} is missing"),
            ))
        }
    };
    // The record of the generation before is an older release's history:
    // read only where there is no history file.
    let previous = match history {
        Some(_) => None,
        None => read_beside(&manifest_at, super::PREVIOUS_NAME, MAX_MANIFEST_LEN, remote)
            .ok()
            .flatten()
            .and_then(|bytes| Manifest::parse(&bytes, "previous").ok()),
    };
    Ok(history
        .unwrap_or_default()
        .with_found(&manifest, previous.as_ref()))
}

/// Makes generation `to` of the dataset at `location` (a directory or an
/// `s3://` prefix) current again, or without `to` the one published last
/// before the current one was first published (`History::before`: so a
/// second rollback goes further back, never to the generation the first
/// one left): publishes its manifest anew, with a sequence
/// after the current one's, so that readers that follow new generations
/// move to it; rebuilds nothing. Its shards are checked first (each is
/// there and is what its manifest says). The history records the publish
/// as a rollback, with `publish`'s note and tool.
pub fn rollback(
    location: &str,
    to: Option<&str>,
    publish: &PublishOptions,
    remote: &RemoteOptions,
) -> hashfile::Result<Manifest> {
    publish.check()?;
    // Named as history names a dataset: nothing is made at a path that
    // holds none (Destination::of makes a directory to write into).
    manifest_at(location)?;
    let destination = Destination::of(location)?;
    let manifest_at = destination.at(MANIFEST_NAME);
    // No other publish of the dataset runs until this one's history is
    // written.
    let _lock = destination.lock()?;
    let replaced = Replaced::read(&destination, remote);
    if let Some(why) = replaced.unreadable() {
        return Err(dataset_error(
            &manifest_at,
            format!("the manifest cannot be read ({why}), so what is current cannot be told: nothing is rolled back"),
        ));
    }
    let Some(current) = replaced.current().cloned() else {
        return Err(dataset_error(
            &manifest_at,
            format!("no dataset here: {MANIFEST_NAME} is missing"),
        ));
    };
    let history = history(location, remote)?;
    let target = match to {
        Some(generation) if generation.eq_ignore_ascii_case(&current.generation) => {
            return Err(dataset_error(
                &manifest_at,
                format!("generation {generation} is the current one: nothing to roll back"),
            ))
        }
        Some(generation) if history.keeps(generation) => history
            .generations()
            .into_iter()
            .find(|g| g.eq_ignore_ascii_case(generation))
            .unwrap_or(generation)
            .to_owned(),
        Some(generation) => {
            return Err(dataset_error(
                &manifest_at,
                format!(
                    "generation {generation} is not kept here (kept: {})",
                    history.generations().join(", ")
                ),
            ))
        }
        None => match history.before(&current.generation) {
            Some(generation) => generation.to_owned(),
            None => {
                return Err(dataset_error(
                    &manifest_at,
                    format!(
                    "nothing to roll back to: the history keeps only the current generation ({})",
                    current.generation
                ),
                ))
            }
        },
    };
    // Its manifest: its record, or (published by an older release) the
    // record of the generation before the current one.
    let record = match read_beside(&manifest_at, &record_name(&target), MAX_MANIFEST_LEN, remote)? {
        Some(bytes) => Manifest::parse(&bytes, &beside(&manifest_at, &record_name(&target)))?,
        None => match read_beside(&manifest_at, super::PREVIOUS_NAME, MAX_MANIFEST_LEN, remote)?
            .map(|bytes| Manifest::parse(&bytes, "previous"))
            .transpose()?
        {
            Some(previous) if previous.generation == target => previous,
            _ => {
                return Err(dataset_error(
                    &manifest_at,
                    format!("generation {target} has no record of its manifest here: it cannot be published again"),
                ))
            }
        },
    };
    if record.generation != target {
        return Err(dataset_error(
            &manifest_at,
            format!(
                "the record of generation {target} names generation {}",
                record.generation
            ),
        ));
    }
    // Every shard there, and the one its manifest names, before readers
    // are sent to it.
    let at_record = beside(&manifest_at, &record_name(&target));
    let check = Dataset::of_manifest(at_record, record.to_json().as_bytes(), remote)?;
    for i in 0..check.shard_count() {
        check.shard(i)?;
    }
    let manifest = Manifest {
        sequence: next_sequence(Some(&current)),
        ..record
    };
    publish_manifest(&destination, &manifest, &replaced, remote, publish, true)?;
    Ok(manifest)
}
