//! Datasets: one table split over several stores, its shards, listed by a
//! manifest (docs/FORMAT.md, "Datasets"). A key is in the shard
//! `hashfile::dataset::shard_of` routes it to; a lookup reads that shard
//! alone.
//!
//! A dataset is opened from its directory, its manifest's path, or its
//! manifest's URL. Every shard is checked against the manifest (entry
//! count, length, header checksum) before anything is read from it: local
//! shards at open (each is only mapped and its header read: microseconds
//! a shard), remote ones when first used, so that opening a remote
//! dataset is one request for the manifest and nothing per shard.

pub mod arrow;
pub mod gates;
mod generations;
pub mod history;
#[cfg(feature = "import")]
mod import;
pub mod layers;
pub mod manifest;
mod origin;
pub mod patch;
mod retire;
mod tasks;
mod write;

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::OnceLock;

use hashfile::read::Source;
use hashfile::RecordBuf;
use hashfile_remote::{Location, RemoteOptions};

use crate::source::{open_store, LocalOpen, Store};
pub use layers::Shard;
use manifest::{dataset_error, parse_checksum, Manifest, MANIFEST_NAME, MAX_MANIFEST_LEN};
pub use patch::{compact, OnMissing, Patch, PatchOptions, PatchSummary};

pub use generations::{
    generation_location, history, is_manifest_location, open_generation, rollback,
};
pub use history::PublishOptions;
#[cfg(feature = "import")]
pub use import::build_from;
pub use retire::PREVIOUS_NAME;
pub use tasks::{discard_generation, new_generation, publish_shards, ShardWriter};
pub use write::DatasetBuilder;

/// An open dataset.
pub struct Dataset {
    /// Where the manifest was read.
    location: String,
    manifest: Manifest,
    shard_count: NonZeroU32,
    /// Where shard file names are resolved: the manifest's directory, or
    /// its URL without the last segment.
    base: String,
    remote: RemoteOptions,
    /// Where shards may be: the manifest's own place, and the caller's
    /// `allow_origins`.
    places: origin::Places,
    /// The shards, opened and checked on first use. Boxed, so that a shard
    /// never used costs a pointer and not a store's state: a manifest may
    /// list a million shards, and a lookup reads one.
    shards: Vec<OnceLock<Box<Shard>>>,
    /// Whether the manifest or any shard is remote, found once at open:
    /// a binding asks before every lookup.
    remote_parts: bool,
    /// Every shard's `max_value_size`.
    max_value_size: u64,
}

impl std::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dataset")
            .field("location", &self.location)
            .field("generation", &self.manifest.generation)
            .field("shards", &self.shards.len())
            .finish()
    }
}

impl Dataset {
    /// Opens the dataset at `location`: a directory holding
    /// `hashfile-dataset.json`, the manifest's path, or its URL (shards
    /// named in it are then fetched beside it). Local shards are opened
    /// and checked now.
    pub fn open(location: &str, remote: &RemoteOptions) -> hashfile::Result<Dataset> {
        let manifest_at = if !Location::is_remote(location) && Path::new(location).is_dir() {
            Path::new(location)
                .join(MANIFEST_NAME)
                .display()
                .to_string()
        } else {
            location.to_owned()
        };
        let bytes = read_manifest(&manifest_at, remote)?;
        Dataset::of_manifest(manifest_at, &bytes, remote)
    }

    /// The dataset whose manifest, read at `manifest_at`, is `bytes`.
    fn of_manifest(
        manifest_at: String,
        bytes: &[u8],
        remote: &RemoteOptions,
    ) -> hashfile::Result<Dataset> {
        Self::of_manifest_over(manifest_at, bytes, remote, None)
    }

    /// `of_manifest`, reusing the stores `before` (the generation open
    /// before, at the same location) has open for the files both list.
    fn of_manifest_over(
        manifest_at: String,
        bytes: &[u8],
        remote: &RemoteOptions,
        before: Option<&Dataset>,
    ) -> hashfile::Result<Dataset> {
        let manifest = Manifest::parse(bytes, &manifest_at)?;
        let places =
            origin::Places::new(&manifest_at, &remote.allow_origins).map_err(|reason| {
                hashfile::Error::InvalidOption {
                    name: "allow_origins",
                    reason,
                }
            })?;
        let base = match manifest_at.rfind('/') {
            Some(slash) => manifest_at[..=slash].to_owned(),
            None => String::new(),
        };
        let shard_count =
            NonZeroU32::new(manifest.shards.len() as u32).expect("checked: 1 or more");
        let remote_parts = Location::is_remote(&manifest_at)
            || manifest.shards.iter().any(|s| Location::is_remote(&s.file));
        let dataset = Dataset {
            location: manifest_at,
            shards: (0..manifest.shards.len())
                .map(|_| OnceLock::new())
                .collect(),
            manifest,
            shard_count,
            base,
            remote: remote.clone(),
            places,
            remote_parts,
            max_value_size: hashfile::read::DEFAULT_MAX_VALUE_SIZE,
        };
        // Every shard's place is checked now, so that a manifest that names
        // one it may not is refused whole before anything is read.
        for i in 0..dataset.shards.len() {
            dataset.reach(i)?;
        }
        if let Some(before) = before
            .filter(|b| b.shards.len() == dataset.shards.len() && b.location == dataset.location)
        {
            for i in 0..dataset.shards.len() {
                if let Some(shard) = before.opened_shard(i) {
                    let shard =
                        dataset.open_shard_over(i, Some((&before.manifest.shards[i], shard)))?;
                    let _ = dataset.shards[i].set(Box::new(shard));
                }
            }
        }
        for i in 0..dataset.shards.len() {
            let entry = &dataset.manifest.shards[i];
            if !entry
                .files()
                .any(|file| Location::is_remote(&dataset.file_location(file)))
            {
                dataset.shard(i)?;
            }
        }
        Ok(dataset)
    }

    /// Whether the manifest at the location, read now (for a URL, one
    /// request), is of another generation than the one open: a newer
    /// dataset was published there.
    pub fn manifest_replaced(&self) -> hashfile::Result<bool> {
        let bytes = read_manifest(&self.location, &self.remote)?;
        let now = Manifest::parse(&bytes, &self.location)?;
        Ok(now.generation != self.manifest.generation)
    }

    /// The dataset at the location now, if its manifest (read now: for a
    /// URL, one request) is of another generation than this one's; the
    /// manifest read to compare is the one opened, never fetched twice. A
    /// manifest of an older publish than this one's (a server or a copy
    /// that put back an earlier one) is an error, and never followed
    /// ([`check_follows`](Dataset::check_follows)).
    pub fn newer(&self) -> hashfile::Result<Option<Dataset>> {
        let bytes = read_manifest(&self.location, &self.remote)?;
        let now = Manifest::parse(&bytes, &self.location)?;
        if now.generation == self.manifest.generation {
            return Ok(None);
        }
        self.check_follows(&now)?;
        Dataset::of_manifest_over(self.location.clone(), &bytes, &self.remote, Some(self)).map(Some)
    }

    /// An error unless `newer`, a manifest read at this dataset's location
    /// now, is of a later publish than this one's: a reader that follows
    /// new generations moves only forward; going back takes an explicit
    /// reopen.
    pub fn check_follows(&self, newer: &Manifest) -> hashfile::Result<()> {
        if newer.generation == self.manifest.generation || newer.follows(&self.manifest) {
            return Ok(());
        }
        if !newer.sequence_trusted() {
            return Err(dataset_error(
                &self.location,
                format!(
                    "the manifest now names generation {} with sequence {}, more than a day ahead of this machine's clock: a sequence that far ahead orders nothing and is not followed (reopen to read it on purpose)",
                    newer.generation, newer.sequence
                ),
            ));
        }
        Err(dataset_error(
            &self.location,
            format!(
                "the manifest now names generation {} (sequence {}), not later than generation {} (sequence {}) that this reader has open: an older manifest put back is not followed (reopen to read it on purpose)",
                newer.generation, newer.sequence, self.manifest.generation, self.manifest.sequence
            ),
        ))
    }

    /// The manifest's path or URL.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Whether the manifest or any shard is read over the network: reads
    /// may wait.
    #[inline]
    pub fn is_remote(&self) -> bool {
        self.remote_parts
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Live entries of all shards (with their overlays).
    pub fn len(&self) -> u64 {
        self.manifest.entries
    }

    /// True if no shard holds an entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The shard `key` is routed to.
    #[inline]
    pub fn shard_of(&self, key: &[u8]) -> usize {
        hashfile::dataset::shard_of(key, self.shard_count) as usize
    }

    /// Where shard `i` is: its URL, or its file beside the manifest.
    pub fn shard_location(&self, i: usize) -> String {
        self.file_location(&self.manifest.shards[i].file)
    }

    /// Where a file the manifest lists is: its URL, or beside the manifest.
    pub fn file_location(&self, file: &str) -> String {
        if Location::is_remote(file) {
            file.to_owned()
        } else {
            format!("{}{file}", self.base)
        }
    }

    /// Shard `i`, opened and checked against the manifest on first use.
    // On every lookup: the open shard inline, the first use out of line.
    #[inline]
    pub fn shard(&self, i: usize) -> hashfile::Result<&Shard> {
        match self.shards[i].get() {
            Some(shard) => Ok(shard),
            None => self.first_use(i),
        }
    }

    #[cold]
    #[inline(never)]
    fn first_use(&self, i: usize) -> hashfile::Result<&Shard> {
        let shard = self.open_shard(i)?;
        // Two threads may open it at once; one is kept.
        let _ = self.shards[i].set(Box::new(shard));
        Ok(self.shards[i].get().expect("set above"))
    }

    /// Sets `max_value_size` for every shard, open or opened later.
    pub fn set_max_value_size(&mut self, bytes: u64) -> hashfile::Result<()> {
        self.max_value_size = hashfile::read::check_max_value_size(bytes)?;
        for shard in &mut self.shards {
            if let Some(shard) = shard.get_mut() {
                shard.set_max_value_size(bytes)?;
            }
        }
        Ok(())
    }

    /// The largest value read from a shard.
    pub fn max_value_size(&self) -> u64 {
        self.max_value_size
    }

    /// Shard `i` if it is open already.
    pub fn opened_shard(&self, i: usize) -> Option<&Shard> {
        self.shards[i].get().map(|shard| &**shard)
    }

    /// An error naming shard `i` and the dataset.
    fn shard_error(&self, i: usize, what: String) -> hashfile::Error {
        dataset_error(
            &self.shard_location(i),
            format!(
                "shard {i} of {} ({}) of dataset {}: {what}",
                self.shards.len(),
                self.manifest.shards[i].file,
                self.location
            ),
        )
    }

    /// How shard `i`'s files may be read, or the error that refuses the
    /// manifest ([`origin::reach`]).
    fn reach(&self, i: usize) -> hashfile::Result<origin::Reach> {
        let entry = &self.manifest.shards[i];
        for overlay in &entry.overlays {
            self.places
                .reach(&overlay.file)
                .map_err(|what| self.shard_error(i, format!("overlay {}: {what}", overlay.file)))?;
        }
        self.places
            .reach(&entry.file)
            .map_err(|what| self.shard_error(i, what))
    }

    /// Shard `i` opened anew and checked against the manifest, not kept by
    /// the dataset: for work that reads shards one after another and lets
    /// each go when done (a diff), so that their maps do not add up.
    pub fn open_shard(&self, i: usize) -> hashfile::Result<Shard> {
        self.open_shard_over(i, None)
    }

    /// Shard `i`, reusing the stores of `before` (the same shard of the
    /// generation open before this one, and its manifest entry) for the
    /// files both list: a reader that follows a delta generation keeps
    /// its base's maps and cached blocks, and opens only the new overlays.
    fn open_shard_over(
        &self,
        i: usize,
        before: Option<(&manifest::ShardEntry, &Shard)>,
    ) -> hashfile::Result<Shard> {
        let entry = &self.manifest.shards[i];
        let same = |a: (&str, &str), b: (&str, &str)| a == b;
        let base = match before {
            Some((old, shard))
                if same((&old.file, &old.checksum), (&entry.file, &entry.checksum)) =>
            {
                std::sync::Arc::clone(shard.shared_base())
            }
            _ => std::sync::Arc::new(self.open_file(
                i,
                &entry.file,
                entry.entries,
                entry.bytes,
                &entry.checksum,
            )?),
        };
        let reused = before
            .filter(|(old, _)| same((&old.file, &old.checksum), (&entry.file, &entry.checksum)));
        let mut shard =
            Shard::of_base(base).map_err(|e| e.with_path(Path::new(&self.shard_location(i))))?;
        for (k, overlay) in entry.overlays.iter().enumerate() {
            let kept = reused.and_then(|(old, shard)| {
                let listed = old.overlays.get(k)?;
                let store = shard.shared_overlays().get(k)?;
                (listed.file == overlay.file && listed.checksum == overlay.checksum)
                    .then(|| std::sync::Arc::clone(store))
            });
            let store = match kept {
                Some(store) => store,
                None => std::sync::Arc::new(self.open_file(
                    i,
                    &overlay.file,
                    overlay.entries,
                    overlay.bytes,
                    &overlay.checksum,
                )?),
            };
            shard = shard
                .with_overlay(store, entry.live_entries())
                .map_err(|e| e.with_path(Path::new(&self.file_location(&overlay.file))))?;
        }
        Ok(shard)
    }

    /// One file of shard `i` (its base or an overlay), opened and checked
    /// against what the manifest says of it.
    fn open_file(
        &self,
        i: usize,
        file: &str,
        entries: u64,
        bytes: u64,
        checksum: &str,
    ) -> hashfile::Result<Store> {
        let at = self.file_location(file);
        let is_base = file == self.manifest.shards[i].file;
        let wrong = |what: String| {
            self.shard_error(
                i,
                if is_base {
                    what
                } else {
                    format!("overlay {file}: {what}")
                },
            )
        };
        let options = self
            .places
            .reach(file)
            .map_err(|what| self.shard_error(i, what))?
            .options(&self.remote);
        let mut store = open_store(&at, &options, LocalOpen::Mapped).map_err(|e| match e {
            hashfile::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                wrong(if Location::is_remote(&at) {
                    // Opened on first use: a publish since the open may
                    // have removed this generation.
                    "missing (if the dataset was published again since it was opened, its older generations go: reopen it, or open it with reload: or on_change: :reopen to follow new ones)".to_owned()
                } else {
                    "missing".to_owned()
                })
            }
            other => other,
        })?;
        store.set_max_value_size(self.max_value_size)?;
        if store.source().size() != bytes {
            return Err(wrong(format!(
                "{} bytes, and the manifest says {bytes}",
                store.source().size(),
            )));
        }
        if store.len() != entries {
            return Err(wrong(format!(
                "{} entries, and the manifest says {entries}",
                store.len(),
            )));
        }
        let found = header_checksum(&store).map_err(|e| e.with_path(Path::new(&at)))?;
        if Some(found) != parse_checksum(checksum) {
            return Err(wrong(format!(
                "header checksum {found:016x}, and the manifest says {checksum} (a shard of another generation, or rebuilt since)",
            )));
        }
        Ok(store)
    }

    /// The record of `key`, read from its shard alone.
    #[inline]
    pub fn get(&self, key: &[u8]) -> hashfile::Result<Option<RecordBuf<'_>>> {
        self.shard(self.shard_of(key))?.get(key)
    }

    /// `Reader::dig_with` on the shard of `key`.
    pub fn dig_with<R>(
        &self,
        key: &[u8],
        path: &[hashfile::value::Probe<'_>],
        symbolize_names: bool,
        answer: impl FnOnce(&hashfile::Record<'_>, Option<hashfile::value::Dig<'_>>) -> R,
    ) -> hashfile::Result<Option<R>> {
        self.shard(self.shard_of(key))?
            .dig_with(key, path, symbolize_names, answer)
    }

    /// The records of `keys`, in order: grouped by shard, each shard's
    /// keys read as one batch (remotely, level by level, each level's
    /// requests together).
    pub fn get_many<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
    ) -> hashfile::Result<Vec<Option<RecordBuf<'_>>>> {
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); self.shards.len()];
        for (at, key) in keys.iter().enumerate() {
            by_shard[self.shard_of(key.as_ref())].push(at);
        }
        let mut found: Vec<Option<RecordBuf<'_>>> = (0..keys.len()).map(|_| None).collect();
        for (shard, positions) in by_shard.iter().enumerate() {
            if positions.is_empty() {
                continue;
            }
            let asked: Vec<&[u8]> = positions.iter().map(|&at| keys[at].as_ref()).collect();
            let records = self.shard(shard)?.get_many(&asked)?;
            for (&at, record) in positions.iter().zip(records) {
                found[at] = record;
            }
        }
        Ok(found)
    }

    /// Checks every shard against the manifest and every byte of it, and
    /// that every key is in the shard it routes to (a dataset put together
    /// by hand may have one elsewhere, where no lookup finds it).
    pub fn verify(&self) -> hashfile::Result<()> {
        for i in 0..self.shards.len() {
            let shard = self.shard(i)?;
            shard
                .verify()
                .map_err(|e| e.with_path(Path::new(&self.shard_location(i))))?;
            for record in shard.stores().flat_map(|store| store.iter()) {
                let record = record?;
                let routed = self.shard_of(record.key());
                if routed != i {
                    return Err(dataset_error(
                        &self.shard_location(i),
                        format!(
                            "key {} is in shard {i} of {}, and routes to shard {routed}: the dataset was not built by routing (hashfile::dataset::shard_of)",
                            hashfile::DisplayBytes(record.key()),
                            self.shards.len()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every record, shard by shard in order, each shard in the order its
    /// entries were added.
    pub fn iter(&self) -> impl Iterator<Item = hashfile::Result<RecordBuf<'_>>> + '_ {
        (0..self.shards.len()).flat_map(move |i| {
            let records: Box<dyn Iterator<Item = hashfile::Result<RecordBuf<'_>>>> =
                match self.shard(i) {
                    Ok(shard) => Box::new(shard.iter()),
                    Err(e) => Box::new(std::iter::once(Err(e))),
                };
            records
        })
    }
}

impl manifest::ShardEntry {
    /// The entry of a shard of one store, `file`, of `bytes`, opened as
    /// `store` once written.
    pub fn of_store(file: String, bytes: u64, store: &Store) -> hashfile::Result<Self> {
        Ok(manifest::ShardEntry {
            file,
            entries: store.len(),
            bytes,
            checksum: manifest::format_checksum(header_checksum(store)?),
            overlays: Vec::new(),
            live: None,
        })
    }
}

/// The last 8 bytes of a store's header: its checksum, which covers every
/// section's checksum.
pub fn header_checksum(store: &Store) -> hashfile::Result<u64> {
    let end = store.header().header_len as u64;
    let bytes = store
        .source()
        .read_exact_at(end - 8, 8)
        .map_err(|source| hashfile::Error::Io { path: None, source })?;
    Ok(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
}

/// The manifest's bytes, at most `MAX_MANIFEST_LEN`.
fn read_manifest(at: &str, remote: &RemoteOptions) -> hashfile::Result<Vec<u8>> {
    if Location::is_remote(at) {
        return hashfile_remote::fetch_whole(at, remote.clone(), MAX_MANIFEST_LEN);
    }
    use std::io::Read;
    let path = Path::new(at);
    let io = |e| hashfile::Error::Io {
        path: Some(path.to_path_buf()),
        source: e,
    };
    let metadata = std::fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            let dir = path.parent().filter(|d| d.is_dir());
            match dir {
                Some(dir) if path.file_name() == Some(MANIFEST_NAME.as_ref()) => dataset_error(
                    at,
                    format!(
                        "no dataset manifest: {} has no {MANIFEST_NAME}",
                        dir.display()
                    ),
                ),
                _ => io(e),
            }
        } else {
            io(e)
        }
    })?;
    if !metadata.is_file() {
        return Err(dataset_error(
            at,
            "a dataset manifest is a regular file".into(),
        ));
    }
    if metadata.len() > MAX_MANIFEST_LEN {
        return Err(dataset_error(
            at,
            format!(
                "{} bytes, more than a manifest of {} shards ({MAX_MANIFEST_LEN})",
                metadata.len(),
                hashfile::dataset::MAX_SHARDS
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_MANIFEST_LEN + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    Ok(bytes)
}
