//! Batches: entries encoded away from a builder (on another thread, say),
//! added to it in one go by `Builder::append`.

use crate::chd;
use crate::format::{record, Record, ValueKind};

/// Entries encoded as records, ready to append to a builder.
#[derive(Debug, Default)]
pub struct Batch {
    pub(super) records: Vec<u8>,
    pub(super) starts: Vec<usize>,
    pub(super) typed: bool,
    /// With a seed: each key's hash with it, computed where the batch is
    /// filled (`Builder::new_batch`).
    pub(super) seed: Option<u64>,
    pub(super) hashes: Vec<u64>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// An empty batch of the same kind (hashing with the same seed).
    pub fn empty_like(&self) -> Batch {
        Batch {
            seed: self.seed,
            ..Batch::default()
        }
    }

    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.records.clear();
        self.starts.clear();
        self.hashes.clear();
        self.typed = false;
    }

    /// Adds a record, as `Builder::insert_record` does.
    #[inline]
    pub fn insert_record(&mut self, record: Record<'_>) {
        self.typed |= record.kind == ValueKind::Typed;
        self.starts.push(self.records.len());
        record.write(&mut self.records);
        if let Some(seed) = self.seed {
            self.hashes.push(chd::hash_key(record.key, seed));
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// The entries, in the order they were added: for a consumer that
    /// spreads them over several builders (a dataset's shards).
    pub fn records(&self) -> impl ExactSizeIterator<Item = Record<'_>> + '_ {
        self.starts.iter().map(|&start| {
            record::read(&self.records[start..]).expect("a batch's own records are well formed")
        })
    }

    /// True if the batch has no entries.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }
}
