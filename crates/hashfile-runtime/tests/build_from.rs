//! Datasets built from input files (`dataset::build_from`, what `hashfile
//! build --shards` runs): the same entries as one store built from the same
//! files, the pipeline's progress phases, and a failed or cancelled build
//! leaving the dataset as it was with none of its own shards behind.

use std::collections::BTreeSet;
use std::path::Path;

use hashfile::pipeline::{self, Input, Phase};
use hashfile::{BuildOptions, CancelFlag, Error, Reader};
use hashfile_runtime::dataset::{self, Dataset, DatasetBuilder};

/// A JSON Lines file (parsed on every core, in batches) and a TSV file
/// (one record at a time): both paths into the shards.
fn inputs(dir: &Path, lines: usize, duplicate: bool) -> Vec<Input> {
    let jsonl = dir.join("a.jsonl");
    let mut text = String::new();
    for i in 0..lines {
        text.push_str(&format!(
            "{{\"key\":\"json-{i}\",\"value\":{{\"n\":{i},\"tags\":[\"x\",null]}}}}\n"
        ));
    }
    std::fs::write(&jsonl, text).unwrap();
    let tsv = dir.join("b.tsv");
    let mut text = String::from("key\tvalue\n");
    for i in 0..lines / 2 {
        text.push_str(&format!("tsv-{i}\tvalue {i}\n"));
    }
    if duplicate {
        text.push_str("json-17\tagain\n");
    }
    std::fs::write(&tsv, text).unwrap();
    [jsonl, tsv]
        .iter()
        .map(|p| {
            Input::new(
                p.to_str().unwrap(),
                None,
                &hashfile::import::ImportOptions::new(hashfile::import::InputFormat::Tsv),
            )
            .unwrap()
        })
        .collect()
}

/// A dataset of `shards` from `inputs` in `dir`, with the default
/// options, nothing to cancel it and no progress wanted.
fn build(inputs: &[Input], dir: &Path, shards: u32) -> hashfile::Result<pipeline::Summary> {
    dataset::build_from(
        inputs,
        dir,
        shards,
        BuildOptions::default(),
        &dataset::PublishOptions::default(),
        &CancelFlag::new(),
        &mut |_| Ok(()),
    )
}

fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[test]
fn a_dataset_from_files_holds_what_one_store_from_them_holds() {
    let work = tempfile::tempdir().unwrap();
    let inputs = inputs(work.path(), 20_000, false);
    let one = work.path().join("one.hf");
    let single = pipeline::build_from(
        &inputs,
        &one,
        BuildOptions::default(),
        &CancelFlag::new(),
        &mut |_| Ok(()),
    )
    .unwrap();

    let dir = work.path().join("dataset");
    let mut phases = Vec::new();
    let summary = dataset::build_from(
        &inputs,
        &dir,
        4,
        BuildOptions::default(),
        &dataset::PublishOptions::default(),
        &CancelFlag::new(),
        &mut |p| {
            if phases.last() != Some(&p.phase) {
                phases.push(p.phase);
            }
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(phases, [Phase::Reading, Phase::Building, Phase::Publishing]);
    assert_eq!(summary.entries, 30_000);
    assert_eq!(summary.entries, single.entries);

    let dataset = Dataset::open(dir.to_str().unwrap(), &Default::default()).unwrap();
    let manifest = dataset.manifest();
    assert_eq!(manifest.shards.len(), 4);
    assert_eq!(
        summary.file_bytes,
        manifest.shards.iter().map(|s| s.bytes).sum::<u64>()
    );
    // Four shards, the manifest, the generation's record and the history:
    // no temporary file left.
    assert_eq!(files(&dir).len(), 7, "{:?}", files(&dir));
    for name in [
        "hashfile-dataset.history.json".to_owned(),
        format!("hashfile-dataset.{}.json", manifest.generation),
    ] {
        assert!(files(&dir).contains(&name), "{name} in {:?}", files(&dir));
    }
    dataset.verify().unwrap();

    // Every entry, with its value kind, is the one store's.
    let store = Reader::open(&one).unwrap();
    let mut seen = 0;
    for record in store.iter() {
        let record = record.unwrap();
        let got = dataset
            .get(record.key())
            .unwrap()
            .expect("every key is in the dataset");
        assert_eq!(
            (got.value(), got.kind(), got.key_utf8()),
            (record.value(), record.kind(), record.key_utf8())
        );
        seen += 1;
    }
    assert_eq!(seen, 30_000);
}

#[test]
fn a_duplicate_key_is_named_where_it_occurs_and_the_old_dataset_stays() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("dataset");
    let good = inputs(work.path(), 1_000, false);
    build(&good, &dir, 3).unwrap();
    let before = files(&dir);
    let generation = generation(&dir);

    let bad = inputs(work.path(), 1_000, true);
    let error = build(&bad, &dir, 3).unwrap_err();
    let Error::DuplicateKey {
        key,
        first: Some(at),
        second: Some(again),
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(key, b"json-17");
    assert!(
        at.to_string().contains("a.jsonl") && at.to_string().contains("line 18"),
        "{at}"
    );
    assert!(again.to_string().contains("b.tsv"), "{again}");
    assert!(
        matches!(error, Error::DuplicateKey { others: 0, .. }),
        "{error:?}"
    );

    // Keys that repeat in every shard are all counted, not only the
    // failing shard's.
    let twice = [bad[0].clone(), bad[0].clone()];
    let error = build(&twice, &dir, 3).unwrap_err();
    assert!(
        matches!(error, Error::DuplicateKey { others: 999, .. }),
        "{error:?}"
    );

    // The dataset is the one built before, and the failed build's shards
    // (and temporary files) are gone.
    assert_eq!(files(&dir), before);
    assert_eq!(self::generation(&dir), generation);
}

fn generation(dir: &Path) -> String {
    Dataset::open(dir.to_str().unwrap(), &Default::default())
        .unwrap()
        .manifest()
        .generation
        .clone()
}

#[test]
fn a_build_cancelled_before_its_manifest_publishes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("dataset");
    let inputs = inputs(work.path(), 1_000, false);
    build(&inputs, &dir, 2).unwrap();
    let before = files(&dir);
    let generation = generation(&dir);

    // Every shard is written by then; the manifest is not.
    let cancel = CancelFlag::new();
    let error = dataset::build_from(
        &inputs,
        &dir,
        2,
        BuildOptions::default(),
        &dataset::PublishOptions::default(),
        &cancel,
        &mut |p| {
            if p.phase == Phase::Publishing {
                cancel.cancel();
            }
            cancel.check()
        },
    )
    .unwrap_err();
    assert!(matches!(error, Error::Cancelled), "{error:?}");
    assert_eq!(files(&dir), before);
    assert_eq!(self::generation(&dir), generation);
}

#[test]
fn a_streaming_builder_written_elsewhere_copies_its_shards_under_a_new_generation() {
    let work = tempfile::tempdir().unwrap();
    let first_dir = work.path().join("first");
    let mut builder = DatasetBuilder::streaming(3, BuildOptions::default(), &first_dir).unwrap();
    for i in 0..500 {
        builder.insert(format!("k{i}").as_bytes(), format!("v{i}").as_bytes());
    }
    let other = work.path().join("other");
    let manifest = builder.write(&other).unwrap();
    assert_eq!(manifest.entries, 500);
    let dataset = Dataset::open(other.to_str().unwrap(), &Default::default()).unwrap();
    assert_eq!(dataset.get(b"k499").unwrap().unwrap().value(), b"v499");
    // Written twice, a builder never reuses a generation: a reader of the
    // first may be reading those shards.
    let again = builder.write(&other).unwrap();
    assert_ne!(again.generation, manifest.generation);
    drop(builder);
    // The temporary files beside the first directory's shards went with
    // the builder.
    assert!(files(&first_dir).is_empty(), "{:?}", files(&first_dir));
}
