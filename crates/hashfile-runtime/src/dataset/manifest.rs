//! The manifest of a dataset: which stores are its shards, in order, and
//! what each one is (docs/FORMAT.md, "Dataset manifest"). The one place a
//! manifest is written and read.

use std::collections::HashSet;
use std::path::Path;

use hashfile::dataset::{MAX_SHARDS, ROUTING_SEED};
use serde::{Deserialize, Serialize};

/// The manifest's file name in a dataset directory.
pub const MANIFEST_NAME: &str = "hashfile-dataset.json";

/// The manifest version this release writes for a dataset without
/// overlays. It reads this one, version 1, which had no `sequence`, and
/// version 3.
pub const MANIFEST_VERSION: u32 = 2;

/// The manifest version of a delta generation: some shard has overlays
/// (docs/FORMAT.md, "Delta generations"). A release that reads only
/// version 2 refuses it, rather than read the bases without their changes.
pub const DELTA_MANIFEST_VERSION: u32 = 3;

/// The most overlays one shard may have: past a few, a patch compacts the
/// shard (`compact_overlays`); this bounds what a manifest can make a
/// lookup read.
pub const MAX_OVERLAYS: usize = 64;

/// The oldest manifest version this release reads.
pub const OLDEST_MANIFEST_VERSION: u32 = 1;

/// The largest manifest read: about 100 bytes per shard for the most
/// shards, with room for long names. A manifest is read whole and parsed:
/// while it is, the process holds its bytes and the parsed shards; then
/// the shards alone (about 180 bytes each with 40-character names), and
/// each shard's store state only once a lookup first reads it
/// (docs/REMOTE.md, "Where a dataset's shards may be").
pub const MAX_MANIFEST_LEN: u64 = 512 * MAX_SHARDS as u64;

/// The longest shard file name and generation id.
const MAX_NAME_LEN: usize = 255;

/// The longest shard URL.
const MAX_URL_LEN: usize = 2048;

/// The routing function's name: the high bits of XXH3-64 with the seed
/// `hashfile::dataset::ROUTING_SEED` (`hashfile::dataset::shard_of`).
pub fn routing_name() -> String {
    format!("xxh3-64-high:{ROUTING_SEED:016x}")
}

/// A dataset's manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The manifest version: [`MANIFEST_VERSION`] (or 1, read).
    pub hashfile_dataset: u32,
    /// Which publish of the dataset this is: the same in the shards' file
    /// names. Letters, digits, `.`, `_` and `-`.
    pub generation: String,
    /// Grows with every publish of the dataset ([`next_sequence`]), so that
    /// a reader that follows new generations never goes back to an older
    /// one: a manifest put back by a server or a careless copy is not
    /// followed. Version 2 on; 0 for a version 1 manifest, which has none.
    #[serde(default)]
    pub sequence: u64,
    /// How keys are routed to shards: [`routing_name`].
    pub routing: String,
    /// Entries of all shards together.
    pub entries: u64,
    /// The shards, in routing order: shard `i` holds the keys that
    /// `shard_of(key, n)` sends to `i`.
    pub shards: Vec<ShardEntry>,
}

/// One shard as the manifest lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardEntry {
    /// The shard's file name beside the manifest, or its URL.
    pub file: String,
    /// Its entry count.
    pub entries: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Its header checksum (the last 8 bytes of its header, which cover
    /// every section's checksum), as 16 hex digits: the shard's identity,
    /// checked at open in O(1); `verify` checks every byte under it.
    pub checksum: String,
    /// The shard's overlays, oldest first (version 3): small stores of the
    /// keys patches changed since `file` was built, read newest first,
    /// tombstones for keys deleted. `file` is then the shard's base, and
    /// `entries` its entry count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlays: Vec<OverlayEntry>,
    /// The shard's live entries with its overlays read over its base
    /// (version 3, with overlays; `entries` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<u64>,
}

/// One overlay of a shard as the manifest lists it: a store with key
/// fingerprints, whose tombstones mark deleted keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverlayEntry {
    /// Its file name beside the manifest, or its URL.
    pub file: String,
    /// Its records: keys upserted and keys deleted.
    pub entries: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Its header checksum, as for a shard.
    pub checksum: String,
}

impl ShardEntry {
    /// The entries a reader finds in the shard: its base's, or with
    /// overlays, the live count the patch recorded.
    pub fn live_entries(&self) -> u64 {
        self.live.unwrap_or(self.entries)
    }

    /// Every file the shard is read from: its base, then its overlays,
    /// oldest first.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.file.as_str()).chain(self.overlays.iter().map(|o| o.file.as_str()))
    }
}

impl Manifest {
    /// Reads and checks a manifest; `at` (its path or URL) is named in
    /// every error.
    pub fn parse(bytes: &[u8], at: &str) -> hashfile::Result<Manifest> {
        let error = |what: String| dataset_error(at, what);
        let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| {
            // Look at the version first: a newer manifest fails on fields
            // this release does not know, and should say why. Only the
            // version is kept of that second parse (the rest is skipped,
            // not built as a tree a large manifest would make huge).
            #[derive(Deserialize)]
            struct Version {
                hashfile_dataset: Option<u64>,
            }
            match serde_json::from_slice::<Version>(bytes)
                .ok()
                .and_then(|v| v.hashfile_dataset)
            {
                Some(version) if !readable(version) => error(version_error(version)),
                _ => error(format!("not a valid dataset manifest: {e}")),
            }
        })?;
        manifest.check().map_err(error)?;
        Ok(manifest)
    }

    /// What is wrong with the manifest, if anything.
    fn check(&self) -> Result<(), String> {
        if !readable(self.hashfile_dataset.into()) {
            return Err(version_error(self.hashfile_dataset.into()));
        }
        match (self.hashfile_dataset, self.sequence) {
            (1, 0) => {}
            (1, _) => {
                return Err("a version 1 manifest has no sequence (it came with version 2)".into())
            }
            (_, 0) => return Err("no sequence: a version 2 manifest has one above 0".into()),
            _ => {}
        }
        if self.routing != routing_name() {
            return Err(format!(
                "routing {:?} is not one this release knows (it routes by {:?})",
                self.routing,
                routing_name()
            ));
        }
        check_name("generation", &self.generation)?;
        let n = self.shards.len();
        if n == 0 || n > MAX_SHARDS as usize {
            return Err(format!(
                "{n} shards; a dataset has 1 to {MAX_SHARDS} shards"
            ));
        }
        let mut seen = HashSet::with_capacity(n);
        let mut total = 0u64;
        for (i, shard) in self.shards.iter().enumerate() {
            let which = || format!("shard {i} of {n} ({:?})", shard.file);
            check_file("shard file", &shard.file, &shard.checksum, &mut seen)
                .map_err(|e| format!("{}: {e}", which()))?;
            if !shard.overlays.is_empty() && self.hashfile_dataset < DELTA_MANIFEST_VERSION {
                return Err(format!(
                    "{}: overlays came with manifest version {DELTA_MANIFEST_VERSION}, and this is version {}",
                    which(),
                    self.hashfile_dataset
                ));
            }
            if shard.overlays.len() > MAX_OVERLAYS {
                return Err(format!(
                    "{}: {} overlays; a shard has at most {MAX_OVERLAYS}",
                    which(),
                    shard.overlays.len()
                ));
            }
            if shard.overlays.is_empty() != shard.live.is_none() {
                return Err(format!(
                    "{}: a live entry count is given exactly for a shard with overlays",
                    which()
                ));
            }
            let mut most = shard.entries;
            for (k, overlay) in shard.overlays.iter().enumerate() {
                check_file("overlay file", &overlay.file, &overlay.checksum, &mut seen)
                    .map_err(|e| format!("{}, overlay {k} ({:?}): {e}", which(), overlay.file))?;
                most = most.saturating_add(overlay.entries);
            }
            if shard.live_entries() > most {
                return Err(format!(
                    "{}: {} live entries, more than its base and overlays hold ({most})",
                    which(),
                    shard.live_entries()
                ));
            }
            total = total
                .checked_add(shard.live_entries())
                .ok_or_else(|| format!("{}: the entry counts overflow", which()))?;
        }
        if total != self.entries {
            return Err(format!(
                "the shards hold {total} entries together, and the manifest says {}",
                self.entries
            ));
        }
        Ok(())
    }

    /// Whether a reader that has `open` may move on to this manifest: a
    /// later publish (a greater sequence). Between two version 1
    /// manifests, which carry no sequence, any other generation is taken,
    /// as that release did.
    ///
    /// A sequence more than [`SEQUENCE_LEAD`] ahead of this machine's clock
    /// orders nothing: a manifest forged (or restored from a broken clock)
    /// with a sequence near `u64::MAX` is not followed, and a reader that
    /// opened one follows any other generation, so that one such manifest
    /// cannot stop every later publish from being read.
    pub fn follows(&self, open: &Manifest) -> bool {
        if !self.sequence_trusted() {
            return false;
        }
        if (self.sequence == 0 && open.sequence == 0) || !open.sequence_trusted() {
            return self.generation != open.generation;
        }
        self.sequence > open.sequence
    }

    /// Whether the sequence is at most [`SEQUENCE_LEAD`] ahead of now.
    pub fn sequence_trusted(&self) -> bool {
        self.sequence <= now_micros().saturating_add(SEQUENCE_LEAD)
    }

    /// The manifest as written: JSON, one shard per line.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        out.push_str("{\n");
        out.push_str(&format!(
            "  \"hashfile_dataset\": {},\n",
            self.hashfile_dataset
        ));
        out.push_str(&format!(
            "  \"generation\": {},\n",
            json_string(&self.generation)
        ));
        if self.hashfile_dataset >= 2 {
            out.push_str(&format!("  \"sequence\": {},\n", self.sequence));
        }
        out.push_str(&format!("  \"routing\": {},\n", json_string(&self.routing)));
        out.push_str(&format!("  \"entries\": {},\n", self.entries));
        out.push_str("  \"shards\": [\n");
        for (i, shard) in self.shards.iter().enumerate() {
            let mut overlays = String::new();
            if let Some(live) = shard.live {
                overlays.push_str(&format!(", \"live\": {live}, \"overlays\": ["));
                for (k, overlay) in shard.overlays.iter().enumerate() {
                    overlays.push_str(&format!(
                        "{}{{\"file\": {}, \"entries\": {}, \"bytes\": {}, \"checksum\": {}}}",
                        if k > 0 { ", " } else { "" },
                        json_string(&overlay.file),
                        overlay.entries,
                        overlay.bytes,
                        json_string(&overlay.checksum),
                    ));
                }
                overlays.push(']');
            }
            out.push_str(&format!(
                "    {{\"file\": {}, \"entries\": {}, \"bytes\": {}, \"checksum\": {}{overlays}}}{}\n",
                json_string(&shard.file),
                shard.entries,
                shard.bytes,
                json_string(&shard.checksum),
                if i + 1 < self.shards.len() { "," } else { "" }
            ));
        }
        out.push_str("  ]\n}\n");
        out
    }
}

/// The sequence of a manifest published now over `replaced` (the manifest
/// it replaces, if it could be read): the time in microseconds since the
/// Unix epoch, or one more than `replaced`'s if that is larger (a clock
/// set back, or two publishes in one microsecond). Without `replaced`, the
/// time alone keeps it above any sequence published earlier by a machine
/// with a sane clock.
/// (A replaced manifest whose sequence is not trusted, more than
/// [`SEQUENCE_LEAD`] ahead, is passed over: the time alone counts.)
pub fn next_sequence(replaced: Option<&Manifest>) -> u64 {
    let after = replaced
        .filter(|m| m.sequence_trusted())
        .map_or(0, |m| m.sequence + 1);
    now_micros().max(after).max(1)
}

/// How far ahead of this machine's clock a sequence may be and still order
/// publishes: a day, far more than clocks of machines that publish and
/// read one dataset differ by.
pub const SEQUENCE_LEAD: u64 = 86_400_000_000;

/// Microseconds since the Unix epoch.
fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn readable(version: u64) -> bool {
    (OLDEST_MANIFEST_VERSION as u64..=DELTA_MANIFEST_VERSION as u64).contains(&version)
}

fn version_error(version: u64) -> String {
    format!(
        "dataset manifest version {version}, and this release reads versions {OLDEST_MANIFEST_VERSION} to {DELTA_MANIFEST_VERSION}"
    )
}

/// Checks a file a manifest lists (a shard's base or an overlay): its name
/// or URL, that no other entry lists it, and its checksum's form.
fn check_file<'m>(
    what: &str,
    file: &'m str,
    checksum: &str,
    seen: &mut HashSet<&'m str>,
) -> Result<(), String> {
    match hashfile_remote::Location::parse(file) {
        None => check_name(what, file)?,
        Some(_) if file.len() > MAX_URL_LEN => {
            return Err(format!(
                "a URL of {} bytes, more than {MAX_URL_LEN}",
                file.len()
            ))
        }
        Some(Err(e)) => return Err(e.to_string()),
        Some(Ok(_)) => {}
    }
    if !seen.insert(file) {
        return Err("the file is listed twice".into());
    }
    if parse_checksum(checksum).is_none() {
        return Err(format!("checksum {checksum:?} is not 16 hex digits"));
    }
    Ok(())
}

/// A JSON string literal of `text`.
fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// Checks a generation id or a shard file name: 1 to 255 letters, digits,
/// `.`, `_` or `-`, not starting with `.`. So a name never leaves the
/// manifest's directory, and never needs quoting in a URL or a shell.
pub(super) fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} {name:?} is not 1 to {MAX_NAME_LEN} letters, digits, '.', '_' or '-' (not starting with '.')"
        ))
    }
}

/// The 16 hex digits of a checksum as a number.
pub fn parse_checksum(text: &str) -> Option<u64> {
    (text.len() == 16 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(text, 16).ok())
        .flatten()
}

/// A checksum as the manifest writes it.
pub fn format_checksum(checksum: u64) -> String {
    format!("{checksum:016x}")
}

pub(crate) fn dataset_error(at: &str, what: String) -> hashfile::Error {
    hashfile::Error::Dataset {
        path: Some(Path::new(at).to_path_buf()),
        what,
    }
}
