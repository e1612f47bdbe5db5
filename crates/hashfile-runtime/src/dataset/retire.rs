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

use super::manifest::{Manifest, MANIFEST_NAME};
use super::write::shard_file_name;

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
        Replaced::of(read(MANIFEST_NAME), read(PREVIOUS_NAME))
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
        Replaced::of(read(manifest_at), read(&beside(manifest_at, PREVIOUS_NAME)))
    }

    fn of(current: Read, previous: Read) -> Replaced {
        let (current, unreadable) = match current {
            Ok(found) => (found, None),
            Err(why) => (None, Some(why)),
        };
        Replaced {
            current,
            unreadable,
            // A record that cannot be read removes nothing.
            previous: previous.ok().flatten().map(|(manifest, _)| manifest),
        }
    }

    /// Why the manifest is there and could not be read, if so.
    pub(super) fn unreadable(&self) -> Option<&str> {
        self.unreadable.as_deref()
    }

    /// Whether the manifest or the previous generation's record is of
    /// `generation`.
    pub(super) fn names_generation(&self, generation: &str) -> bool {
        self.current()
            .is_some_and(|m| m.generation.eq_ignore_ascii_case(generation))
            || self
                .previous
                .as_ref()
                .is_some_and(|m| m.generation.eq_ignore_ascii_case(generation))
    }

    /// The manifest being replaced, if it could be read.
    pub(super) fn current(&self) -> Option<&Manifest> {
        self.current.as_ref().map(|(manifest, _)| manifest)
    }

    /// The file names to remove once `published` is the manifest: those
    /// the previous generation's manifest listed under the names of its
    /// shards, and neither `published` nor the replaced one lists. None if
    /// the replaced manifest could not be read, or is of `published`'s own
    /// generation (a publish repeated).
    pub(super) fn doomed(&self, published: &Manifest) -> Vec<String> {
        let (Some((current, _)), Some(previous)) = (&self.current, &self.previous) else {
            return Vec::new();
        };
        // Compared without case: on a file system that folds case, a record
        // of a generation spelled otherwise would name the kept files.
        let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
        if same(&current.generation, &published.generation)
            || same(&previous.generation, &current.generation)
            || same(&previous.generation, &published.generation)
        {
            return Vec::new();
        }
        let kept = |file: &str| {
            current.shards.iter().any(|s| same(&s.file, file))
                || published.shards.iter().any(|s| same(&s.file, file))
        };
        let n = previous.shards.len();
        previous
            .shards
            .iter()
            .enumerate()
            .filter(|(i, shard)| {
                shard.file == shard_file_name(&previous.generation, *i, n) && !kept(&shard.file)
            })
            .map(|(_, shard)| shard.file.clone())
            .collect()
    }

    /// The bytes to record as the previous generation once `published` is
    /// the manifest: the replaced manifest's, unless it could not be read
    /// or is of the same generation (then the record stays as it is).
    pub(super) fn record(&self, published: &Manifest) -> Option<&[u8]> {
        match &self.current {
            Some((current, bytes)) if current.generation != published.generation => Some(bytes),
            _ => None,
        }
    }

    /// After `published` went in at `dir`: records the replaced generation,
    /// then removes the files of the one before it. A file that cannot be
    /// removed is left: it costs space, never correctness.
    pub(super) fn retire_local(&self, dir: &Path, published: &Manifest) {
        let doomed = self.doomed(published);
        if let Some(bytes) = self.record(published) {
            if hashfile::build::publish_file(&dir.join(PREVIOUS_NAME), bytes).is_err() {
                return; // without the record, the next publish removes nothing
            }
        }
        for file in doomed {
            let _ = std::fs::remove_file(dir.join(file));
        }
    }

    /// The same at an `s3://` prefix.
    pub(super) fn retire_remote(
        &self,
        manifest_at: &str,
        published: &Manifest,
        remote: &RemoteOptions,
    ) {
        let doomed = self.doomed(published);
        if let Some(bytes) = self.record(published) {
            let at = beside(manifest_at, PREVIOUS_NAME);
            if hashfile_remote::put_bytes(&at, bytes.to_vec(), remote).is_err() {
                return;
            }
        }
        if !doomed.is_empty() {
            let _ = hashfile_remote::delete_beside(
                manifest_at,
                |name| doomed.iter().any(|d| d == name),
                remote,
            );
        }
    }
}

/// The location of `name` in the directory of `location`.
fn beside(location: &str, name: &str) -> String {
    match location.rfind('/') {
        Some(slash) => format!("{}{name}", &location[..=slash]),
        None => name.to_owned(),
    }
}
