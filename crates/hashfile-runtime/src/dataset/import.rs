//! Building a dataset from input files: the core's pipeline reads them
//! (`hashfile::pipeline::import_into`, with its progress reports,
//! cancellation and parallel JSON Lines parsing) into a streaming
//! [`DatasetBuilder`], which routes each entry to its shard.

use std::path::Path;

use hashfile::pipeline::{self, Input, Phase, Progress, Sink, Summary};
use hashfile::{Batch, BuildOptions, CancelFlag, Record};

use super::DatasetBuilder;

impl Sink for DatasetBuilder {
    fn new_batch(&self) -> Batch {
        // Not a shard builder's batch: the keys are hashed as they reach
        // their shard.
        Batch::new()
    }

    fn append(&mut self, batch: &Batch) {
        for record in batch.records() {
            self.insert_record(record);
        }
    }

    #[inline]
    fn insert_record(&mut self, record: Record<'_>) {
        DatasetBuilder::insert_record(self, record)
    }
}

/// Imports every input and publishes a dataset of `shards` shards in
/// `dir`, as `hashfile::pipeline::build_from` builds one store: the same
/// progress reports (the `Publishing` one comes when every shard is
/// written, before the manifest's rename), the same cancellation, and a
/// duplicate key named with where it occurs. The records go straight into
/// each shard's temporary file; the shards are built in parallel. The
/// summary's `file_bytes` counts the shards.
pub fn build_from(
    inputs: &[Input],
    dir: &Path,
    shards: u32,
    options: BuildOptions,
    publish: &super::PublishOptions,
    cancel: &CancelFlag,
    progress: &mut dyn FnMut(&Progress) -> hashfile::Result<()>,
) -> hashfile::Result<Summary> {
    let mut dataset = DatasetBuilder::streaming(shards, options, dir)?;
    dataset.set_publish(publish.clone())?;
    dataset.set_cancel(cancel.clone());
    let mut report = pipeline::import_into(inputs, &mut dataset, cancel, progress)?;
    report.phase = Phase::Building;
    progress(&report)?;
    let mut publishing = || {
        progress(&Progress {
            phase: Phase::Publishing,
            ..report
        })
    };
    let manifest = dataset
        .write_checked(dir, &mut publishing)
        .map_err(|e| pipeline::locate_duplicate(inputs, e))?;
    Ok(Summary {
        entries: manifest.entries,
        file_bytes: manifest.shards.iter().map(|s| s.bytes).sum(),
        spilled: dataset.spill_stats(),
    })
}
