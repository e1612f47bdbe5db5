//! `Writer`: what a binding's `build` fills with its language's entries,
//! one store or a dataset's shards, and publishes on the build pool.

use std::path::Path;

use hashfile::{Builder, CancelFlag, Record};

use crate::dataset::DatasetBuilder;
use crate::options::BuildRequest;

/// Entries for one store, or routed to a dataset's shards (`shards`).
pub enum Writer {
    /// One store.
    Store(Builder),
    /// A dataset: one builder per shard.
    Dataset(DatasetBuilder),
}

impl Writer {
    /// A writer for what `request` (from `options::build_request`) asks.
    pub fn new(request: &BuildRequest) -> hashfile::Result<Writer> {
        match request.shards {
            None => Builder::new(request.options.clone()).map(Writer::Store),
            Some(n) => {
                let mut builder = DatasetBuilder::new(n, request.options.clone())?;
                builder.set_publish(request.publish.clone())?;
                Ok(Writer::Dataset(builder))
            }
        }
    }

    /// Adds an entry whose value is already encoded.
    pub fn insert_record(&mut self, record: Record<'_>) {
        match self {
            Writer::Store(builder) => builder.insert_record(record),
            Writer::Dataset(builder) => builder.insert_record(record),
        }
    }

    /// Adds a typed value (`Builder::insert_value`).
    pub fn insert_value(
        &mut self,
        key: &[u8],
        key_utf8: bool,
        value: &hashfile::value::Value,
    ) -> hashfile::Result<()> {
        let builder = match self {
            Writer::Store(builder) => builder,
            Writer::Dataset(builder) => builder.builder_for(key),
        };
        builder.insert_value(key, key_utf8, value)
    }

    /// Entries added so far.
    pub fn len(&self) -> usize {
        match self {
            Writer::Store(builder) => builder.len(),
            Writer::Dataset(builder) => builder.len(),
        }
    }

    /// Whether no entry was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Builds and publishes at `path` (a dataset: its shards, then its
    /// manifest) on this process's build pool (`pool::for_build`, never
    /// rayon's global pool, which a forked child lacks); `cancel` stops it,
    /// publishing nothing. Returns the bytes written. Take the pool (call
    /// this) with no thread of the binding able to fork meanwhile: the
    /// caller holds its interpreter lock until `pool` returns.
    pub fn finish(
        mut self,
        path: &Path,
        cancel: &CancelFlag,
        pool: &rayon::ThreadPool,
    ) -> hashfile::Result<u64> {
        match &mut self {
            Writer::Store(builder) => builder.set_cancel(cancel.clone()),
            Writer::Dataset(builder) => builder.set_cancel(cancel.clone()),
        }
        pool.install(|| match &mut self {
            Writer::Store(builder) => builder.write_file(path),
            Writer::Dataset(builder) => builder
                .write(path)
                .map(|manifest| manifest.shards.iter().map(|s| s.bytes).sum()),
        })
    }
}
