//! What a publish removes: the shards of the generation two publishes
//! back, exactly as its own manifest listed them, and nothing else.
//!
//! A publish keeps the generation it replaces (a reader may be opening it)
//! and records that generation's manifest beside the new one, as
//! `hashfile-dataset.previous.json`. The next publish removes the files
//! that record lists, if they are named as this library names the shards of
//! that generation (`GENERATION-IIIII-of-NNNNN.hf`) and neither of the two
//! generations now kept lists them. So a user's own file that happens to
//! look like a shard is never touched, and a manifest that cannot be read
//! costs its generation's space (its files stay) rather than the
//! generation that may still be current.

use std::path::Path;

use hashfile_remote::RemoteOptions;

use super::history::{
    record_name, History, Publish, PublishOptions, HISTORY_NAME, MAX_HISTORY_LEN,
};
use super::manifest::{Manifest, MANIFEST_NAME};

/// The record of the generation a publish replaced, beside the manifest.
pub const PREVIOUS_NAME: &str = "hashfile-dataset.previous.json";

/// What a publish knows, before its manifest goes in, of the generations
/// it replaces.
pub(super) struct Replaced {
    /// The manifest being replaced, and its bytes, if it could be read.
    current: Option<(Manifest, Vec<u8>)>,
    /// Why the manifest could not be read, when it is there (not merely
    /// missing) and was not: a damaged one, a newer version, a failed
    /// request.
    unreadable: Option<String>,
    /// The generation that one replaced, from the record beside it.
    previous: Option<Manifest>,
    /// The history beside the manifest: `Ok(None)` if there is none yet,
    /// `Err` if it could not be read (then nothing is removed, and the
    /// history starts again from what the manifests say).
    history: Result<Option<History>, String>,
}

/// What reading a manifest or record found.
type Read = Result<Option<(Manifest, Vec<u8>)>, String>;

impl Replaced {
    /// Reads the manifest and the record of the dataset in `dir`. Either
    /// may be missing or unreadable: then it removes nothing.
    pub(super) fn read_local(dir: &Path) -> Replaced {
        let read = |name: &str| -> Read {
            let path = dir.join(name);
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(format!("{}: {e}", path.display())),
            };
            let manifest =
                Manifest::parse(&bytes, &path.display().to_string()).map_err(|e| e.to_string())?;
            Ok(Some((manifest, bytes)))
        };
        let history = match std::fs::read(dir.join(HISTORY_NAME)) {
            Ok(bytes) => {
                History::parse(&bytes, &dir.join(HISTORY_NAME).display().to_string()).map(Some)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", dir.join(HISTORY_NAME).display())),
        };
        Replaced::of(read(MANIFEST_NAME), read(PREVIOUS_NAME), history)
    }

    /// What is at `destination` (a directory or an `s3://` prefix).
    pub(super) fn read(
        destination: &super::tasks::Destination,
        remote: &RemoteOptions,
    ) -> Replaced {
        if destination.remote {
            Replaced::read_remote(&destination.at(MANIFEST_NAME), remote)
        } else {
            Replaced::read_local(destination.dir())
        }
    }

    /// The same for a dataset at an `s3://` prefix, whose manifest is at
    /// `manifest_at`.
    pub(super) fn read_remote(manifest_at: &str, remote: &RemoteOptions) -> Replaced {
        let read = |at: &str| -> Read {
            let bytes = match hashfile_remote::fetch_whole(
                at,
                remote.clone(),
                super::manifest::MAX_MANIFEST_LEN,
            ) {
                Ok(bytes) => bytes,
                Err(e)
                    if hashfile_remote::RemoteError::find_in(&e)
                        .is_some_and(|r| r.kind == hashfile_remote::RemoteErrorKind::NotFound) =>
                {
                    return Ok(None)
                }
                Err(e) => return Err(e.to_string()),
            };
            let manifest = Manifest::parse(&bytes, at).map_err(|e| e.to_string())?;
            Ok(Some((manifest, bytes)))
        };
        let history_at = beside(manifest_at, HISTORY_NAME);
        let history =
            match hashfile_remote::fetch_whole(&history_at, remote.clone(), MAX_HISTORY_LEN) {
                Ok(bytes) => History::parse(&bytes, &history_at).map(Some),
                Err(e)
                    if hashfile_remote::RemoteError::find_in(&e)
                        .is_some_and(|r| r.kind == hashfile_remote::RemoteErrorKind::NotFound) =>
                {
                    Ok(None)
                }
                Err(e) => Err(e.to_string()),
            };
        Replaced::of(
            read(manifest_at),
            read(&beside(manifest_at, PREVIOUS_NAME)),
            history,
        )
    }

    fn of(current: Read, previous: Read, history: Result<Option<History>, String>) -> Replaced {
        let (current, unreadable) = match current {
            Ok(found) => (found, None),
            Err(why) => (None, Some(why)),
        };
        Replaced {
            current,
            unreadable,
            // A record that cannot be read removes nothing.
            previous: previous.ok().flatten().map(|(manifest, _)| manifest),
            history,
        }
    }

    /// The history as it was before this publish (empty if none could be
    /// read).
    pub(super) fn history(&self) -> History {
        self.history.clone().ok().flatten().unwrap_or_default()
    }

    /// Why the manifest is there and could not be read, if so.
    pub(super) fn unreadable(&self) -> Option<&str> {
        self.unreadable.as_deref()
    }

    /// Whether the manifest, the previous generation's record or the
    /// history names `generation`: one published, never a failed job's.
    pub(super) fn names_generation(&self, generation: &str) -> bool {
        self.current()
            .is_some_and(|m| m.generation.eq_ignore_ascii_case(generation))
            || self
                .previous
                .as_ref()
                .is_some_and(|m| m.generation.eq_ignore_ascii_case(generation))
            || self.history().uses(generation)
    }

    /// The manifest being replaced, if it could be read.
    pub(super) fn current(&self) -> Option<&Manifest> {
        self.current.as_ref().map(|(manifest, _)| manifest)
    }

    /// The history once `published` went in, and the generations that left
    /// it, whose files go: those `History::retire` lets go, if `new_generation`
    /// made their ids (so no name of anyone else's matches their files),
    /// and never the generation published. The history's own lines are not
    /// trusted past that: a line newer than the manifest replaced (a
    /// history edited, or of another dataset), which would make the
    /// generations really published look older than they are, is dropped. Nothing leaves the history if the manifest replaced or the
    /// history could not be read: what they listed cannot be known.
    pub(super) fn history_after(
        &self,
        published: &Manifest,
        options: &PublishOptions,
        rollback: bool,
    ) -> (History, Vec<String>) {
        // The record of the generation before is an older release's
        // history: read only where there is no history file yet.
        let previous = match &self.history {
            Ok(None) => self.previous.as_ref(),
            _ => None,
        };
        let mut before = self.history();
        if let Some(current) = self.current() {
            before.publishes.retain(|p| p.sequence <= current.sequence);
        }
        let mut history = before.after(
            Publish::of(published, options, rollback),
            self.current(),
            previous,
        );
        if self.unreadable.is_some() || self.history.is_err() {
            return (history, Vec::new());
        }
        let gone = history.retire(options.keep, options.retain, now_micros());
        let gone = gone
            .into_iter()
            .filter(|g| {
                super::write::is_new_generation(g) && !g.eq_ignore_ascii_case(&published.generation)
            })
            .collect();
        (history, gone)
    }

    /// The bytes to record as the previous generation once `published` is
    /// the manifest: the replaced manifest's, unless it could not be read
    /// or is of the same generation (then the record stays as it is). An
    /// older release's publish removes the generation this record names
    /// once it is replaced.
    pub(super) fn record(&self, published: &Manifest) -> Option<&[u8]> {
        match &self.current {
            Some((current, bytes)) if current.generation != published.generation => Some(bytes),
            _ => None,
        }
    }

    /// After `published` went in at `dir`: records the replaced generation
    /// and the history, then removes the files of the generations that
    /// left it. A file that cannot be removed is left: it costs space,
    /// never correctness.
    pub(super) fn retire_local(
        &self,
        dir: &Path,
        published: &Manifest,
        options: &PublishOptions,
        rollback: bool,
    ) {
        if let Some(bytes) = self.record(published) {
            let _ = hashfile::build::publish_file(&dir.join(PREVIOUS_NAME), bytes);
        }
        let (history, gone) = self.history_after(published, options, rollback);
        if hashfile::build::publish_file(&dir.join(HISTORY_NAME), history.to_json().as_bytes())
            .is_err()
        {
            return; // without the history, the next publish removes nothing
        }
        super::write::remove_generations(dir, |g| gone.iter().any(|d| d == g));
        for generation in &gone {
            let _ = std::fs::remove_file(dir.join(record_name(generation)));
        }
    }

    /// The same at an `s3://` prefix.
    pub(super) fn retire_remote(
        &self,
        manifest_at: &str,
        published: &Manifest,
        remote: &RemoteOptions,
        options: &PublishOptions,
        rollback: bool,
    ) {
        if let Some(bytes) = self.record(published) {
            let _ = hashfile_remote::put_bytes(
                &beside(manifest_at, PREVIOUS_NAME),
                bytes.to_vec(),
                remote,
            );
        }
        let (history, gone) = self.history_after(published, options, rollback);
        let at = beside(manifest_at, HISTORY_NAME);
        if hashfile_remote::put_bytes(&at, history.to_json().into_bytes(), remote).is_err() {
            return;
        }
        if !gone.is_empty() {
            let _ = hashfile_remote::delete_beside(
                manifest_at,
                |name| {
                    super::write::generation_of(name).is_some_and(|g| gone.iter().any(|d| d == g))
                        || gone.iter().any(|g| name == record_name(g))
                },
                remote,
            );
        }
    }
}

/// Writes `manifest`'s record beside the manifest in `dir`, before the
/// manifest goes in: what a reader pinned to its generation opens, and
/// what a rollback publishes again.
pub(super) fn write_record_local(dir: &Path, manifest: &Manifest) -> hashfile::Result<()> {
    hashfile::build::publish_file(
        &dir.join(record_name(&manifest.generation)),
        manifest.to_json().as_bytes(),
    )
    .map(|_| ())
}

/// The same at an `s3://` prefix, whose manifest is at `manifest_at`.
pub(super) fn write_record_remote(
    manifest_at: &str,
    manifest: &Manifest,
    remote: &RemoteOptions,
) -> hashfile::Result<()> {
    hashfile_remote::put_bytes(
        &beside(manifest_at, &record_name(&manifest.generation)),
        manifest.to_json().into_bytes(),
        remote,
    )
}

/// Microseconds since the Unix epoch.
fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The location of `name` in the directory of `location`.
pub(super) fn beside(location: &str, name: &str) -> String {
    match location.rfind('/') {
        Some(slash) => format!("{}{name}", &location[..=slash]),
        None => name.to_owned(),
    }
}
