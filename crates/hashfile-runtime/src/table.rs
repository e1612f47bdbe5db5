//! What an open location reads: one store, or a dataset of shards. Both
//! answer the same calls, so a binding has one reader type whatever it
//! opened.

use std::path::Path;

use hashfile::read::fault;
use hashfile::read::FileId;
use hashfile::RecordBuf;
use hashfile_remote::RemoteOptions;

use crate::dataset::layers::base_record;
use crate::dataset::Dataset;
use crate::source::{map_store, open_store, LocalOpen, Store};
use hashfile::format::REQUIRED_TOMBSTONES;

/// An open store or dataset.
// The store stays unboxed: it is the hot path, and a box would put one
// more pointer chase in front of every lookup. A table is made once per
// open, so its size costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Table {
    /// One store file or object.
    Store(Store),
    /// Shards under a manifest, and which manifest file was read (for a
    /// local one, to tell when a newer generation was published).
    Dataset(Dataset, Option<FileId>),
}

/// The errno of "Is a directory" (the same on Linux, macOS and the BSDs).
const EISDIR: i32 = 21;

/// Where an iteration is: shard, byte offset in its records section, and
/// the entry number in that shard. One store is shard 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// The shard.
    pub shard: usize,
    /// The byte offset of the next record in the shard's records section.
    pub offset: u64,
    /// The entry number of the next record in the shard.
    pub index: u64,
}

/// A chunk of records read in order, and where the next chunk starts
/// (`None` at the end).
pub type Chunk<'t> = (Vec<RecordBuf<'t>>, Option<Cursor>);

impl Table {
    /// Opens `location`: a dataset (a directory, or a path or URL ending
    /// in the manifest's name), else a store.
    /// A local store opens mapped; [`open_deferred`](Table::open_deferred)
    /// opens it for positioned reads.
    pub fn open(location: &str, remote: &RemoteOptions) -> hashfile::Result<Table> {
        Self::open_with(location, remote, LocalOpen::Mapped)
    }

    /// [`open`](Table::open), a local store for positioned reads until
    /// [`mapped`](Table::mapped) maps it (`LocalOpen::Deferred`).
    pub fn open_deferred(location: &str, remote: &RemoteOptions) -> hashfile::Result<Table> {
        Self::open_with(location, remote, LocalOpen::Deferred)
    }

    fn open_with(
        location: &str,
        remote: &RemoteOptions,
        local: LocalOpen,
    ) -> hashfile::Result<Table> {
        let open_dataset = || Dataset::open(location, remote).map(Table::of_dataset);
        if crate::dataset::is_manifest_location(location) {
            return open_dataset();
        }
        // A store is the common case: a directory is found by the store's
        // own open (which refuses it as EISDIR), not by a stat of its own
        // before every open.
        match open_store(location, remote, local) {
            Err(hashfile::Error::Io { source, .. }) if source.raw_os_error() == Some(EISDIR) => {
                open_dataset()
            }
            Ok(store) if store.header().required_flags & REQUIRED_TOMBSTONES != 0 => {
                Err(hashfile::Error::Dataset {
                    path: Some(location.into()),
                    what: "an overlay of a dataset (it holds tombstones, deleted keys): open the dataset, which reads it over its base".into(),
                })
            }
            Ok(_) if !remote.allow_origins.is_empty() => Err(hashfile::Error::InvalidOption {
                name: "allow_origins",
                reason: format!(
                    "is for datasets, whose manifest lists shards elsewhere, and {location} is a store"
                ),
            }),
            other => other.map(Table::Store),
        }
    }

    /// The table of a dataset open.
    pub fn of_dataset(dataset: Dataset) -> Table {
        let identity = FileId::of_path(Path::new(dataset.location())).ok();
        Table::Dataset(dataset, identity)
    }

    /// The table with `max_value_size` set on every store it reads
    /// (`hashfile::Reader::set_max_value_size`), or as it is for `None`.
    pub fn with_max_value_size(mut self, bytes: Option<u64>) -> hashfile::Result<Table> {
        if let Some(bytes) = bytes {
            match &mut self {
                Table::Store(store) => store.set_max_value_size(bytes)?,
                Table::Dataset(dataset, _) => dataset.set_max_value_size(bytes)?,
            }
        }
        Ok(self)
    }

    /// The largest value read (`hashfile::Reader::max_value_size`).
    pub fn max_value_size(&self) -> u64 {
        match self {
            Table::Store(store) => store.max_value_size(),
            Table::Dataset(dataset, _) => dataset.max_value_size(),
        }
    }

    /// The record of `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> hashfile::Result<Option<RecordBuf<'_>>> {
        match self {
            Table::Store(store) => base_record(store.get(key)?),
            Table::Dataset(dataset, _) => dataset.get(key),
        }
    }

    /// `Reader::dig_with`: walks `path` into the value of `key`, decoding
    /// only what the path needs.
    pub fn dig_with<R>(
        &self,
        key: &[u8],
        path: &[hashfile::value::Probe<'_>],
        symbolize_names: bool,
        answer: impl FnOnce(&hashfile::Record<'_>, Option<hashfile::value::Dig<'_>>) -> R,
    ) -> hashfile::Result<Option<R>> {
        match self {
            Table::Store(store) => store.dig_with(key, path, symbolize_names, answer),
            Table::Dataset(dataset, _) => dataset.dig_with(key, path, symbolize_names, answer),
        }
    }

    /// The records of `keys`, in order: one batch per store.
    pub fn get_many<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
    ) -> hashfile::Result<Vec<Option<RecordBuf<'_>>>> {
        match self {
            Table::Store(store) => store.get_many(keys)?.into_iter().map(base_record).collect(),
            Table::Dataset(dataset, _) => dataset.get_many(keys),
        }
    }

    /// Entries.
    pub fn len(&self) -> u64 {
        match self {
            Table::Store(store) => store.len(),
            Table::Dataset(dataset, _) => dataset.len(),
        }
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every checksum and the index of every store (and, for a dataset,
    /// every shard against its manifest and every key in its shard).
    pub fn verify(&self) -> hashfile::Result<()> {
        match self {
            Table::Store(store) => store.verify(),
            Table::Dataset(dataset, _) => dataset.verify(),
        }
    }

    /// How many values of each type the table holds
    /// (`hashfile::value::type_name`: "string", "map", ...), reading every
    /// record once without decoding any; `each_chunk` is called between
    /// chunks (a binding checks for interrupts there and may stop the
    /// pass with its error).
    pub fn value_types<E>(
        &self,
        mut each_chunk: impl FnMut() -> Result<(), E>,
    ) -> Result<hashfile::Result<std::collections::BTreeMap<&'static str, u64>>, E> {
        let mut counts = std::collections::BTreeMap::new();
        let mut cursor = Some(Cursor::default());
        while let Some(at) = cursor {
            let (records, next) = match self.chunk(at, 1024) {
                Ok(chunk) => chunk,
                Err(e) => return Ok(Err(e)),
            };
            for record in &records {
                *counts
                    .entry(hashfile::value::type_name(record.kind(), record.value()))
                    .or_default() += 1;
            }
            cursor = next;
            each_chunk()?;
        }
        Ok(Ok(counts))
    }

    /// Up to `max` records from `from`, in order: a dataset's shards one
    /// after another.
    pub fn chunk(&self, from: Cursor, max: usize) -> hashfile::Result<Chunk<'_>> {
        self.chunk_of(from, max, false)
    }

    /// As [`chunk`](Self::chunk), within the shard `from` is in: no
    /// next cursor at its end. What one task of a distributed job reads.
    /// A shard past the last is an error naming the shards there are.
    pub fn shard_chunk(&self, from: Cursor, max: usize) -> hashfile::Result<Chunk<'_>> {
        let shards = self.shard_count();
        if from.shard >= shards {
            return Err(hashfile::Error::InvalidArgument {
                message: format!(
                    "shard {} of a table of {shards} shard{} (0 to {})",
                    from.shard,
                    if shards == 1 { "" } else { "s" },
                    shards - 1
                ),
            });
        }
        self.chunk_of(from, max, true)
    }

    /// How many shards the table has: a dataset's, or 1 for a store.
    pub fn shard_count(&self) -> usize {
        match self {
            Table::Store(_) => 1,
            Table::Dataset(dataset, _) => dataset.shard_count(),
        }
    }

    fn chunk_of(&self, from: Cursor, max: usize, one_shard: bool) -> hashfile::Result<Chunk<'_>> {
        let mut records = Vec::with_capacity(max.min(1024));
        let mut at = from;
        let shards = self.shard_count();
        while records.len() < max && at.shard < shards {
            let next = match self {
                Table::Store(store) => match store.next_record(at.offset, at.index)? {
                    Some((record, next)) => Some((
                        base_record(Some(record))?.expect("given"),
                        next,
                        at.index + 1,
                    )),
                    None => None,
                },
                Table::Dataset(dataset, _) => {
                    dataset.shard(at.shard)?.next_record(at.offset, at.index)?
                }
            };
            match next {
                Some((record, next, index)) => {
                    records.push(record);
                    at.offset = next;
                    at.index = index;
                }
                None if one_shard => return Ok((records, None)),
                None => {
                    at = Cursor {
                        shard: at.shard + 1,
                        ..Cursor::default()
                    }
                }
            }
        }
        Ok((records, (at.shard < shards).then_some(at)))
    }

    /// Whether reads may wait on the network (a remote store, or a dataset
    /// with a remote manifest or shard): a binding runs them where waiting
    /// blocks nothing else.
    #[inline]
    pub fn is_remote(&self) -> bool {
        match self {
            Table::Store(store) => store.source().is_remote(),
            Table::Dataset(dataset, _) => dataset.is_remote(),
        }
    }

    /// An error if a page of a local map read faulted (a file truncated
    /// under it): nothing read can be trusted. One load in the common
    /// case.
    #[inline]
    pub fn check_faults(&self) -> hashfile::Result<()> {
        match self {
            Table::Store(store) => store.source().check_faults(),
            Table::Dataset(dataset, _) => {
                if fault::all_faults() == 0 {
                    return Ok(());
                }
                for i in 0..dataset.shard_count() {
                    if let Some(shard) = dataset.opened_shard(i) {
                        for store in shard.stores() {
                            store
                                .source()
                                .check_faults()
                                .map_err(|e| e.with_path(Path::new(&dataset.shard_location(i))))?;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// Whether `location` now names another store or manifest than the
    /// one read (a newer one was published there by rename), or none.
    /// Never for a remote store; for a remote dataset, whether its manifest
    /// (fetched now) is of another generation, or cannot be fetched.
    pub fn is_stale(&self, location: &str) -> bool {
        match self {
            Table::Store(store) => store.source().is_stale(location),
            Table::Dataset(dataset, Some(read)) => {
                FileId::of_path(Path::new(dataset.location())).ok() != Some(*read)
            }
            Table::Dataset(dataset, None) => dataset.manifest_replaced().unwrap_or(true),
        }
    }

    /// What a refresh swaps in: the table `location` names now, if it is
    /// another than this one (`is_stale`), or the error opening it. A
    /// remote dataset's manifest is fetched once, to compare and to open.
    pub fn refreshed(
        &self,
        location: &str,
        remote: &RemoteOptions,
    ) -> Option<hashfile::Result<Table>> {
        // The newer table reads values within the same limit.
        let limit = Some(self.max_value_size());
        match self {
            Table::Dataset(dataset, None) => match dataset.newer() {
                Ok(None) => None,
                Ok(Some(newer)) => Some(Table::Dataset(newer, None).with_max_value_size(limit)),
                Err(e) => Some(Err(e)),
            },
            // A local dataset whose manifest was replaced: the new
            // generation shares the stores of the files both list (a delta
            // generation's bases), so only what is new is opened.
            Table::Dataset(dataset, Some(_)) if self.is_stale(location) => match dataset.newer() {
                Ok(Some(newer)) => Some(Table::of_dataset(newer).with_max_value_size(limit)),
                Ok(None) => Some(Table::open(location, remote).and_then(|table| {
                    self.check_follows(&table)?;
                    table.with_max_value_size(limit)
                })),
                Err(e) => Some(Err(e)),
            },
            _ if self.is_stale(location) => Some(Table::open(location, remote).and_then(|table| {
                self.check_follows(&table)?;
                table.with_max_value_size(limit)
            })),
            _ => None,
        }
    }

    /// An error if this table and `newer`, opened at its location since,
    /// are datasets and `newer` is not of a later publish
    /// (`Dataset::check_follows`): what a refresh or a reopen on change
    /// checks before it swaps a table in.
    pub fn check_follows(&self, newer: &Table) -> hashfile::Result<()> {
        match (self, newer) {
            (Table::Dataset(open, _), Table::Dataset(newer, _)) => {
                open.check_follows(newer.manifest())
            }
            _ => Ok(()),
        }
    }

    /// This table mapped, if it is a store read with positioned reads
    /// that a map can replace (`map_store`); `None` otherwise.
    pub fn mapped(&self) -> Option<hashfile::Result<Table>> {
        match self {
            Table::Store(store) => map_store(store).map(|r| r.map(Table::Store)),
            Table::Dataset(..) => None,
        }
    }

    /// The store, if this is one.
    pub fn as_store(&self) -> Option<&Store> {
        match self {
            Table::Store(store) => Some(store),
            Table::Dataset(..) => None,
        }
    }

    /// The dataset, if this is one.
    pub fn as_dataset(&self) -> Option<&Dataset> {
        match self {
            Table::Store(_) => None,
            Table::Dataset(dataset, _) => Some(dataset),
        }
    }
}
