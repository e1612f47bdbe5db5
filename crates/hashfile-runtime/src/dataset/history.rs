//! A dataset's history: the publishes it keeps, newest first, and which
//! generations a publish may remove (docs/DATASETS.md, "History and
//! rollback").
//!
//! Every publish writes, before its manifest, a record of the manifest it
//! publishes (`hashfile-dataset.GENERATION.json`, the manifest's bytes), and
//! after it, the history (`hashfile-dataset.history.json`): one line per
//! publish kept, with when, by what tool, with what note, how many entries
//! and bytes. A generation's record is what a reader pinned to it opens
//! and what a rollback publishes again, so rolling back rebuilds nothing.
//!
//! A generation's files go only when both hold: it is not among the last
//! `keep` publishes, and the publish that replaced it is at least `retain`
//! old. Readers cannot be counted (a remote one leaves no trace on the
//! server), so the age is what protects a reader that opened a generation
//! a moment before it was replaced: it has `retain` to finish, or to
//! reload, before the files it reads can go.
//!
//! The manifest stays as it was (version 2): a reader of an older release
//! reads a dataset this one publishes, and skips the records and history,
//! which it does not know.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::manifest::Manifest;

/// The history's file name, beside the manifest.
pub const HISTORY_NAME: &str = "hashfile-dataset.history.json";

/// The history version this release writes and reads.
pub const HISTORY_VERSION: u32 = 1;

/// Publishes kept unless told otherwise: the current one and two to roll
/// back to.
pub const DEFAULT_KEEP: u32 = 3;

/// The most publishes a dataset keeps.
pub const MAX_KEEP: u32 = 100;

/// How long a replaced generation's files stay at least, unless told
/// otherwise, past the last `keep` publishes: time for a reader that
/// opened it a moment before it was replaced to finish, or to reload.
pub const DEFAULT_RETAIN: Duration = Duration::from_secs(15 * 60);

/// The most publishes a history holds (kept ones, and younger ones waiting
/// out `retain`); older ones are dropped from it first. Bounds what a
/// history read from a server can make this process hold.
pub const MAX_PUBLISHES: usize = 1000;

/// The largest history read: [`MAX_PUBLISHES`] lines of at most about
/// 2 KiB (a note is at most [`MAX_NOTE_LEN`] bytes).
pub const MAX_HISTORY_LEN: u64 = 2048 * MAX_PUBLISHES as u64;

/// The longest note.
pub const MAX_NOTE_LEN: usize = 1000;

/// The file name of `generation`'s record: the manifest it was published
/// with.
pub fn record_name(generation: &str) -> String {
    format!("hashfile-dataset.{generation}.json")
}

/// Checks a generation id whose record is read or written: a name as a
/// manifest's generation is, and not one whose record would be another
/// file of the dataset's (the history, the previous generation's record).
pub fn check_generation(generation: &str) -> Result<(), String> {
    super::manifest::check_name("generation", generation)?;
    let record = record_name(generation);
    if record.eq_ignore_ascii_case(HISTORY_NAME)
        || record.eq_ignore_ascii_case(super::PREVIOUS_NAME)
    {
        return Err(format!(
            "generation {generation:?} names a file of the dataset's own, not a generation"
        ));
    }
    Ok(())
}

/// How a publish is recorded and what it keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct PublishOptions {
    /// Publishes kept: 1 to [`MAX_KEEP`].
    pub keep: u32,
    /// How long a replaced generation stays at least.
    pub retain: Duration,
    /// Free text saying why or from what (a job's name, a commit).
    pub note: Option<String>,
    /// What published it: the binding or tool, and the release.
    pub tool: String,
    /// The checks the new generation must pass first.
    pub gates: super::gates::Gates,
    /// Publish even if a gate refuses; the history records what it
    /// overrode.
    pub force: bool,
    /// The refusal `force` overrode, for the history (set by the publish).
    pub forced: Option<String>,
}

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            keep: DEFAULT_KEEP,
            retain: DEFAULT_RETAIN,
            note: None,
            tool: format!("hashfile-runtime {}", env!("CARGO_PKG_VERSION")),
            gates: super::gates::Gates::default(),
            force: false,
            forced: None,
        }
    }
}

impl PublishOptions {
    /// The defaults, published by `tool` (`"hashfile-python 0.3.0"`).
    pub fn by(tool: impl Into<String>) -> PublishOptions {
        PublishOptions {
            tool: tool.into(),
            ..PublishOptions::default()
        }
    }

    /// What is wrong with these options, if anything.
    pub fn check(&self) -> hashfile::Result<()> {
        self.gates.check()?;
        if self.keep == 0 || self.keep > MAX_KEEP {
            return Err(hashfile::Error::InvalidOption {
                name: "keep",
                reason: format!(
                    "{}; a dataset keeps 1 to {MAX_KEEP} publishes (1: no rollback)",
                    self.keep
                ),
            });
        }
        if let Some(note) = &self.note {
            if note.len() > MAX_NOTE_LEN {
                return Err(hashfile::Error::InvalidOption {
                    name: "note",
                    reason: format!("is {} bytes; a note is at most {MAX_NOTE_LEN}", note.len()),
                });
            }
        }
        Ok(())
    }
}

/// The history file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History {
    /// [`HISTORY_VERSION`].
    pub hashfile_history: u32,
    /// The publishes kept, newest (the current one) first.
    pub publishes: Vec<Publish>,
}

/// One publish as the history records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Publish {
    /// The generation the manifest named: its shards' and its record's.
    pub generation: String,
    /// The manifest's sequence (microseconds since the epoch, at publish).
    pub sequence: u64,
    /// When, as UTC text (`2026-11-29T10:14:03Z`), from the sequence;
    /// `null` for a generation an older release published.
    pub published_at: Option<String>,
    /// Entries of all shards.
    pub entries: u64,
    /// Bytes of all shards.
    pub bytes: u64,
    /// Shards.
    pub shards: u32,
    /// What published it, with its release (`null` if not known).
    pub tool: Option<String>,
    /// The publisher's note.
    pub note: Option<String>,
    /// Whether this publish made an earlier generation current again.
    #[serde(default)]
    pub rollback: bool,
    /// Publishes kept by the publish that wrote this history.
    pub keep: u32,
    /// Seconds a replaced generation stays, by the same publish.
    pub retain_seconds: u64,
    /// The refusal of a publish gate this publish overrode (`force`).
    #[serde(default)]
    pub forced: Option<String>,
    /// The other generations whose files this one's manifest lists: a
    /// delta generation's bases and earlier overlays. Their files stay
    /// while this publish is kept, even once their own publishes leave.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uses: Vec<String>,
}

impl Publish {
    /// The record of publishing `manifest` with `options`.
    pub fn of(manifest: &Manifest, options: &PublishOptions, rollback: bool) -> Publish {
        Publish {
            generation: manifest.generation.clone(),
            sequence: manifest.sequence,
            published_at: (manifest.sequence > 0).then(|| utc_text(manifest.sequence)),
            entries: manifest.entries,
            bytes: manifest
                .shards
                .iter()
                .map(|s| s.bytes + s.overlays.iter().map(|o| o.bytes).sum::<u64>())
                .sum(),
            shards: manifest.shards.len() as u32,
            tool: Some(options.tool.clone()),
            note: options.note.clone(),
            rollback,
            keep: options.keep,
            retain_seconds: options.retain.as_secs(),
            forced: options.forced.clone(),
            uses: uses(manifest),
        }
    }

    /// A publish found without a history line: a manifest an older release
    /// wrote, or one whose history write was cut short.
    fn found(manifest: &Manifest) -> Publish {
        Publish {
            tool: None,
            note: None,
            keep: DEFAULT_KEEP,
            retain_seconds: DEFAULT_RETAIN.as_secs(),
            published_at: (manifest.sequence > 0).then(|| utc_text(manifest.sequence)),
            ..Publish::of(manifest, &PublishOptions::default(), false)
        }
    }
}

impl History {
    /// Reads and checks a history; `at` is named in every error.
    pub fn parse(bytes: &[u8], at: &str) -> Result<History, String> {
        let history: History = serde_json::from_slice(bytes)
            .map_err(|e| format!("{at}: not a valid dataset history: {e}"))?;
        if history.hashfile_history != HISTORY_VERSION {
            return Err(format!(
                "{at}: history version {} (this release reads {HISTORY_VERSION})",
                history.hashfile_history
            ));
        }
        if history.publishes.len() > MAX_PUBLISHES {
            return Err(format!(
                "{at}: {} publishes, past the {MAX_PUBLISHES} a history holds",
                history.publishes.len()
            ));
        }
        for publish in &history.publishes {
            check_generation(&publish.generation).map_err(|e| format!("{at}: {e}"))?;
            if publish.shards == 0 || publish.shards > hashfile::dataset::MAX_SHARDS {
                return Err(format!(
                    "{at}: generation {} of {} shards; a dataset has 1 to {}",
                    publish.generation,
                    publish.shards,
                    hashfile::dataset::MAX_SHARDS
                ));
            }
        }
        Ok(history)
    }

    /// The history as written: one publish per line.
    pub fn to_json(&self) -> String {
        let mut out = format!(
            "{{\n  \"hashfile_history\": {},\n  \"publishes\": [",
            self.hashfile_history
        );
        for (i, publish) in self.publishes.iter().enumerate() {
            out.push_str(if i == 0 { "\n    " } else { ",\n    " });
            out.push_str(&serde_json::to_string(publish).expect("a publish serializes"));
        }
        out.push_str(if self.publishes.is_empty() {
            "]\n}\n"
        } else {
            "\n  ]\n}\n"
        });
        out
    }

    /// The history after `published` went in, over `replaced` (the
    /// manifest it replaced, if one could be read) and `previous` (the
    /// generation before that, from an older release's record).
    pub fn after(
        self,
        published: Publish,
        replaced: Option<&Manifest>,
        previous: Option<&Manifest>,
    ) -> History {
        let mut history = match replaced {
            Some(replaced) => self.with_found(replaced, previous),
            None => self.with_previous(previous),
        };
        history.publishes.insert(0, published);
        history
    }

    /// This history with what it lacks of `current` (the manifest there
    /// now) and `previous` added, as publishes found, in sequence order:
    /// a dataset an older release published, or a publish whose history
    /// write was cut short.
    pub fn with_found(self, current: &Manifest, previous: Option<&Manifest>) -> History {
        let mut history = self.with_previous(previous);
        history.add_found(current);
        history
    }

    fn with_previous(mut self, previous: Option<&Manifest>) -> History {
        self.hashfile_history = HISTORY_VERSION;
        if let Some(previous) = previous {
            self.add_found(previous);
        }
        self
    }

    fn add_found(&mut self, manifest: &Manifest) {
        let known = self
            .publishes
            .iter()
            .any(|p| p.sequence == manifest.sequence && p.generation == manifest.generation);
        if !known {
            let at = self
                .publishes
                .iter()
                .position(|p| p.sequence < manifest.sequence)
                .unwrap_or(self.publishes.len());
            self.publishes.insert(at, Publish::found(manifest));
        }
    }

    /// Splits the publishes into those kept and the generations whose
    /// files go, at `now_micros`: a publish goes once it is not among the
    /// first `keep` and the publish after it (which replaced it) is at
    /// least `retain` old; its generation's files go if no kept publish
    /// names the same generation (a rollback to it keeps it).
    pub fn retire(&mut self, keep: u32, retain: Duration, now_micros: u64) -> Vec<String> {
        let retain_micros = retain.as_micros() as u64;
        let mut kept = Vec::new();
        let mut gone = Vec::new();
        let mut replaced_at = u64::MAX; // the newest publish replaced nothing yet
        for (i, publish) in std::mem::take(&mut self.publishes).into_iter().enumerate() {
            let young = now_micros.saturating_sub(replaced_at) < retain_micros;
            replaced_at = publish.sequence;
            if (i < keep as usize || young) && kept.len() < MAX_PUBLISHES {
                kept.push(publish);
            } else {
                gone.push(publish);
            }
        }
        self.publishes = kept;
        // A generation's files go when no kept publish is of it or lists
        // them (a delta generation reads its bases' files); those a
        // leaving publish listed are looked at again, so that a base
        // outlived by its deltas goes with the last of them.
        let mut generations: Vec<String> = gone
            .into_iter()
            .flat_map(|p| std::iter::once(p.generation).chain(p.uses))
            .filter(|g| {
                !self.publishes.iter().any(|p| {
                    p.generation.eq_ignore_ascii_case(g)
                        || p.uses.iter().any(|u| u.eq_ignore_ascii_case(g))
                })
            })
            .collect();
        generations.sort();
        generations.dedup();
        generations
    }

    /// Whether a kept publish is of `generation`.
    pub fn keeps(&self, generation: &str) -> bool {
        self.publishes
            .iter()
            .any(|p| p.generation.eq_ignore_ascii_case(generation))
    }

    /// Whether a kept publish is of `generation`, or lists its files.
    pub fn uses(&self, generation: &str) -> bool {
        self.publishes.iter().any(|p| {
            p.generation.eq_ignore_ascii_case(generation)
                || p.uses.iter().any(|u| u.eq_ignore_ascii_case(generation))
        })
    }

    /// The generation published last before `generation` was first
    /// published (a rollback publishes one again; its first publish is
    /// what orders it), among those kept: what a rollback without a target
    /// goes to. Without a first publish of `generation` in the history (an
    /// older release's dataset), the newest kept one of another name.
    pub fn before(&self, generation: &str) -> Option<&str> {
        let first_published = |g: &str| {
            self.publishes
                .iter()
                .filter(|p| p.generation.eq_ignore_ascii_case(g) && !p.rollback)
                .map(|p| p.sequence)
                .min()
        };
        let other = |p: &&Publish| !p.generation.eq_ignore_ascii_case(generation);
        match first_published(generation) {
            Some(at) => self
                .publishes
                .iter()
                .filter(other)
                .filter(|p| !p.rollback && p.sequence < at)
                .max_by_key(|p| p.sequence)
                .map(|p| p.generation.as_str()),
            None => self
                .publishes
                .iter()
                .find(other)
                .map(|p| p.generation.as_str()),
        }
    }

    /// The generations kept, newest first, each once.
    pub fn generations(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for publish in &self.publishes {
            if !out.contains(&publish.generation.as_str()) {
                out.push(&publish.generation);
            }
        }
        out
    }
}

/// `micros` since the epoch as UTC text to the second.
pub fn utc_text(micros: u64) -> String {
    let seconds = micros / 1_000_000;
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = super::write::civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// The generations other than `manifest`'s whose files it lists, sorted.
fn uses(manifest: &Manifest) -> Vec<String> {
    let mut uses: Vec<String> = manifest
        .shards
        .iter()
        .flat_map(|s| s.files())
        .filter_map(super::write::generation_of)
        .filter(|g| !g.eq_ignore_ascii_case(&manifest.generation))
        .map(str::to_owned)
        .collect();
    uses.sort();
    uses.dedup();
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publish(generation: &str, sequence: u64) -> Publish {
        Publish {
            generation: generation.into(),
            sequence,
            published_at: None,
            entries: 1,
            bytes: 1,
            shards: 1,
            tool: None,
            note: None,
            rollback: false,
            keep: 3,
            retain_seconds: 0,
            forced: None,
            uses: Vec::new(),
        }
    }

    const MINUTE: u64 = 60_000_000;

    #[test]
    fn a_publish_goes_once_out_of_the_last_keep_and_replaced_long_enough_ago() {
        let mut history = History {
            hashfile_history: 1,
            publishes: vec![
                publish("e", 100 * MINUTE),
                publish("d", 99 * MINUTE), // replaced 1 minute ago
                publish("c", 80 * MINUTE),
                publish("b", 50 * MINUTE), // replaced 30 minutes ago
                publish("a", 10 * MINUTE),
            ],
        };
        let gone = history.retire(2, Duration::from_secs(5 * 60), 101 * MINUTE);
        // c: out of the last 2, but the publish that replaced it (d) is 2
        // minutes old: kept. b and a: replaced long ago.
        assert_eq!(gone, ["a", "b"]);
        assert_eq!(history.generations(), ["e", "d", "c"]);
    }

    #[test]
    fn a_generation_rolled_back_to_is_kept_by_the_rollback() {
        let mut history = History {
            hashfile_history: 1,
            publishes: vec![
                publish("a", 40 * MINUTE), // the rollback, to a
                publish("c", 30 * MINUTE),
                publish("b", 20 * MINUTE),
                publish("a", 10 * MINUTE),
            ],
        };
        let gone = history.retire(2, Duration::ZERO, 100 * MINUTE);
        assert_eq!(
            gone,
            ["b"],
            "a is current again; its first publish goes from the list only"
        );
        assert_eq!(history.generations(), ["a", "c"]);
    }

    #[test]
    fn a_rollback_goes_to_the_generation_published_before_the_current_one() {
        let mut rolled = publish("b", 40);
        rolled.rollback = true;
        let history = History {
            hashfile_history: 1,
            publishes: vec![rolled, publish("c", 30), publish("b", 20), publish("a", 10)],
        };
        assert_eq!(history.before("b"), Some("a"), "further back, not to c");
        assert_eq!(history.before("c"), Some("b"));
        assert_eq!(history.before("a"), None);
        assert_eq!(
            history.before("x"),
            Some("b"),
            "a generation the history does not hold"
        );
    }

    #[test]
    fn what_a_history_lacks_is_added_in_sequence_order() {
        let manifest = |generation: &str, sequence| Manifest {
            hashfile_dataset: 2,
            generation: generation.into(),
            sequence,
            routing: super::super::manifest::routing_name(),
            entries: 0,
            shards: vec![super::super::manifest::ShardEntry {
                file: format!("{generation}-00000-of-00001.hf"),
                entries: 0,
                bytes: 1,
                checksum: "0".repeat(16),
                overlays: Vec::new(),
                live: None,
            }],
        };
        let history = History::default().after(
            publish("new", 30),
            Some(&manifest("cur", 20)),
            Some(&manifest("old", 10)),
        );
        assert_eq!(history.generations(), ["new", "cur", "old"]);
        assert_eq!(history.publishes[1].tool, None);
        let text = history.to_json();
        assert_eq!(History::parse(text.as_bytes(), "h").unwrap(), history);
    }

    #[test]
    fn utc_text_is_the_calendar_time() {
        assert_eq!(utc_text(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_text(1_795_954_443_000_000), "2026-11-29T12:14:03Z");
    }
}
