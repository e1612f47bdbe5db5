//! What every binding's `patch` and `compact` do, once: the options judged
//! by the table's `Patch` and `Compact` calls, the changes read (from a
//! binding's keys and values, or a JSON Lines file of changes), the delta
//! generation published, and its summary as the tree `info` uses.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use hashfile::Position;
use hashfile::Record;
use hashfile_remote::Location;
use serde::Deserialize;

use crate::dataset::manifest::MANIFEST_NAME;
use crate::dataset::{Patch, PatchSummary};
use crate::info::{Info, InfoValue};
use crate::options::{patch_request, Call, Given, Language};

/// `patch(dataset, changes, **options)`: publishes `changes` over the
/// dataset at `location` as a delta generation, and answers what it did
/// (`summary_info`).
pub fn patch(
    location: &str,
    changes: Patch,
    given: &Given,
    language: Language,
) -> hashfile::Result<InfoValue> {
    let options = patch_request(Call::Patch, given, language)?;
    let dir = local_dataset(location, "patch")?;
    changes.apply(&dir, &options).map(|s| summary_info(&s))
}

/// `patch` of the changes in the JSON Lines file at `path`
/// ([`read_changes`]).
pub fn patch_file(
    location: &str,
    path: &str,
    given: &Given,
    language: Language,
) -> hashfile::Result<InfoValue> {
    let options = patch_request(Call::Patch, given, language)?;
    let dir = local_dataset(location, "patch")?;
    read_changes(Path::new(path))?
        .apply(&dir, &options)
        .map(|s| summary_info(&s))
}

/// `compact(dataset, **options)`: every shard with overlays folded into a
/// new base, published as a generation that reads the same.
pub fn compact(location: &str, given: &Given, language: Language) -> hashfile::Result<InfoValue> {
    let options = patch_request(Call::Compact, given, language)?;
    let dir = local_dataset(location, "compact")?;
    crate::dataset::compact(&dir, None, &options).map(|s| summary_info(&s))
}

/// The directory of the local dataset at `location` (its directory or its
/// manifest's path).
fn local_dataset(location: &str, what: &str) -> hashfile::Result<PathBuf> {
    if Location::is_remote(location) {
        return Err(hashfile::Error::InvalidArgument {
            message: format!(
                "{what} writes a local dataset's directory, and {location} is a URL (patch a local copy, or rebuild the remote dataset)"
            ),
        });
    }
    let path = Path::new(location);
    Ok(match path.file_name() {
        Some(name) if name == MANIFEST_NAME => {
            path.parent().unwrap_or(Path::new(".")).to_path_buf()
        }
        _ => path.to_path_buf(),
    })
}

/// One line of a changes file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    key: String,
    // Present (even `null`, a value like any other) or absent.
    #[serde(borrow, default, deserialize_with = "present")]
    value: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    delete: Option<bool>,
}

/// A field that is there, whatever it holds: serde reads a `null` for an
/// `Option` as `None`, and a `null` value is a value to put.
fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<&'de serde_json::value::RawValue>, D::Error> {
    <&serde_json::value::RawValue as Deserialize>::deserialize(d).map(Some)
}

/// The changes in a JSON Lines file: each line an object with `"key"` (a
/// string) and either `"value"` (any JSON: the value put) or
/// `"delete": true`. Blank lines are skipped. An error names the file and
/// the line.
pub fn read_changes(path: &Path) -> hashfile::Result<Patch> {
    let input = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| hashfile::Error::Io {
        path: Some(path.to_path_buf()),
        source,
    })?;
    let mut reader = std::io::BufReader::new(file);
    let mut patch = Patch::new();
    let mut text = String::new();
    let mut number = 0u64;
    loop {
        text.clear();
        number += 1;
        let at = |column: Option<u64>| Position::Line {
            line: number,
            column,
        };
        let read = (&mut reader)
            .take(hashfile::import::MAX_LINE as u64 + 1)
            .read_line(&mut text)
            .map_err(|e| hashfile::Error::parse(&input, at(None), e.to_string()))?;
        if read == 0 {
            break;
        }
        if text.len() > hashfile::import::MAX_LINE {
            return Err(hashfile::Error::parse(
                &input,
                at(None),
                format!("a line of more than {} bytes", hashfile::import::MAX_LINE),
            ));
        }
        if number == 1 && text.starts_with('\u{feff}') {
            // A byte order mark, which some editors write first.
            text.drain(..'\u{feff}'.len_utf8());
        }
        if text.trim().is_empty() {
            continue;
        }
        if !text.trim_start().starts_with('{') {
            return Err(hashfile::Error::parse(
                &input,
                at(None),
                "a change is an object: {\"key\": K, \"value\": V} or {\"key\": K, \"delete\": true}".to_string(),
            ));
        }
        let line: Line<'_> = serde_json::from_str(&text).map_err(|e| {
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            hashfile::Error::parse(
                &input,
                at(Some(e.column() as u64)),
                format!("{message} (a change is {{\"key\": K, \"value\": V}} or {{\"key\": K, \"delete\": true}})"),
            )
        })?;
        if line.delete == Some(false) {
            return Err(hashfile::Error::parse(
                &input,
                at(None),
                format!("key {:?} has \"delete\": false: a change that deletes says true, one that puts gives a value", line.key),
            ));
        }
        match (line.value, line.delete == Some(true)) {
            (Some(_), true) => {
                return Err(hashfile::Error::parse(
                    &input,
                    at(None),
                    format!(
                        "key {:?} has both a value and \"delete\": true: give one",
                        line.key
                    ),
                ))
            }
            (None, false) => {
                return Err(hashfile::Error::parse(
                    &input,
                    at(None),
                    format!(
                        "key {:?} has neither a value nor \"delete\": true",
                        line.key
                    ),
                ))
            }
            (None, true) => patch.delete(line.key.as_bytes(), true),
            (Some(raw), false) => {
                let (kind, value) = hashfile::import::json_value(&line.key, raw.get())
                    .map_err(|e| hashfile::Error::parse(&input, at(None), e.to_string()))?;
                patch.upsert(Record {
                    key: line.key.as_bytes(),
                    key_utf8: true,
                    value: &value,
                    kind,
                })?;
            }
        }
        patch.given_at(hashfile::Location {
            input: input.clone(),
            position: at(None),
        });
    }
    Ok(patch)
}

/// What a patch or a compaction published: generation, entries, shards,
/// sequence, added, changed, unchanged, deleted, ignored,
/// overlays_written, shards_compacted, bytes_written, published.
pub fn summary_info(summary: &PatchSummary) -> InfoValue {
    let mut info = match summary.manifest.as_ref() {
        Some(manifest) => match crate::history_calls::published_info(manifest) {
            InfoValue::Map(info) => info,
            _ => Info(Vec::new()),
        },
        None => Info(Vec::new()),
    };
    for (name, value) in [
        ("added", summary.added),
        ("changed", summary.changed),
        ("unchanged", summary.unchanged),
        ("deleted", summary.deleted),
        ("ignored", summary.ignored),
        ("overlays_written", summary.overlays_written),
        ("shards_compacted", summary.shards_compacted),
        ("bytes_written", summary.bytes_written),
    ] {
        info.0.push((name, InfoValue::Int(value)));
    }
    info.0
        .push(("published", InfoValue::Bool(summary.published)));
    InfoValue::Map(info)
}
