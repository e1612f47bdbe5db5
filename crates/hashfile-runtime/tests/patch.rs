//! Delta generations: patches of upserts and deletes published as
//! overlays over a dataset's shards, and compaction, checked against a
//! `HashMap` given the same changes.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use hashfile::{BuildOptions, OnDuplicate, Record};
use hashfile_runtime::dataset::manifest::{Manifest, MANIFEST_NAME};
use hashfile_runtime::dataset::{
    self, DatasetBuilder, OnMissing, Patch, PatchOptions, PublishOptions,
};
use hashfile_runtime::Table;

/// xorshift64*: the same changes on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

type Model = HashMap<Vec<u8>, Vec<u8>>;

fn build(dir: &Path, shards: u32, n: u64, publish: PublishOptions) -> Model {
    let mut builder = DatasetBuilder::new(shards, BuildOptions::default()).unwrap();
    builder.set_publish(publish).unwrap();
    let mut model = Model::new();
    for i in 0..n {
        let (key, value) = (format!("key-{i}"), format!("base-{i}"));
        builder.insert(key.as_bytes(), value.as_bytes());
        model.insert(key.into_bytes(), value.into_bytes());
    }
    builder.write(dir).unwrap();
    model
}

fn manifest(dir: &Path) -> Manifest {
    let at = dir.join(MANIFEST_NAME);
    Manifest::parse(&std::fs::read(&at).unwrap(), at.to_str().unwrap()).unwrap()
}

fn open(dir: &Path) -> Table {
    Table::open(dir.to_str().unwrap(), &Default::default()).unwrap()
}

/// Every key of the model with its value, keys it lost absent, one
/// iteration giving each live key once, batches as lookups, and verify.
fn check(dir: &Path, model: &Model, gone: &[Vec<u8>], round: usize) {
    let table = open(dir);
    assert_eq!(table.len(), model.len() as u64, "round {round}: len");
    for (key, value) in model {
        let found = table.get(key).unwrap();
        assert_eq!(
            found.as_ref().map(|r| r.value()),
            Some(value.as_slice()),
            "round {round}: key {}",
            String::from_utf8_lossy(key)
        );
    }
    for key in gone {
        if !model.contains_key(key) {
            assert!(
                table.get(key).unwrap().is_none(),
                "round {round}: deleted key found"
            );
        }
    }
    let mut seen = BTreeMap::new();
    let mut cursor = Some(hashfile_runtime::Cursor::default());
    while let Some(at) = cursor {
        let (records, next) = table.chunk(at, 97).unwrap();
        for record in records {
            assert!(
                seen.insert(record.key().to_vec(), record.value().to_vec())
                    .is_none(),
                "round {round}: iteration gave a key twice"
            );
        }
        cursor = next;
    }
    assert_eq!(seen.len(), model.len(), "round {round}: iteration");
    for (key, value) in &seen {
        assert_eq!(model.get(key), Some(value), "round {round}: iterated value");
    }
    let keys: Vec<&Vec<u8>> = model.keys().chain(gone).collect();
    let batch = table.get_many(&keys).unwrap();
    for (key, found) in keys.iter().zip(batch) {
        assert_eq!(
            found.as_ref().map(|r| r.value()),
            model.get(*key).map(Vec::as_slice),
            "round {round}: batch"
        );
    }
    table.verify().unwrap();
}

/// The diff of generation `parent` against the current one (a delta over
/// it: only the overlays' keys are read) says what the model says changed.
fn diff_matches(dir: &Path, parent: &str, before: &Model, after: &Model, round: usize) {
    let at = dir.to_str().unwrap();
    let a = Table::of_dataset(dataset::open_generation(at, parent, &Default::default()).unwrap());
    let b = open(dir);
    let pool = rayon_pool();
    let mut lines = Vec::new();
    let mut sink = |l: &str| {
        lines.push(l.to_owned());
        Ok(())
    };
    let summary =
        hashfile_runtime::diff::diff(&a, &b, Default::default(), &pool, &mut sink).unwrap();
    let added = after.keys().filter(|k| !before.contains_key(*k)).count() as u64;
    let removed = before.keys().filter(|k| !after.contains_key(*k)).count() as u64;
    let changed = before
        .iter()
        .filter(|(k, v)| after.get(*k).is_some_and(|w| w != *v))
        .count() as u64;
    assert_eq!(
        (
            summary.added,
            summary.removed,
            summary.changed,
            summary.unchanged
        ),
        (
            added,
            removed,
            changed,
            before.len() as u64 - removed - changed
        ),
        "round {round}: diff"
    );
    assert_eq!(
        lines.len() as u64,
        added + removed + changed,
        "round {round}: lines"
    );
}

fn rayon_pool() -> std::sync::Arc<rayon::ThreadPool> {
    hashfile_runtime::pool::for_build(Some(2)).unwrap()
}

fn options(compact_overlays: usize) -> PatchOptions {
    PatchOptions {
        compact_overlays,
        publish: PublishOptions {
            keep: 2,
            retain: Duration::ZERO,
            ..PublishOptions::default()
        },
        ..PatchOptions::default()
    }
}

#[test]
fn random_patches_and_compactions_read_as_a_hash_given_the_same_changes() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = build(dir.path(), 4, 3_000, options(1).publish);
    let mut rng = Rng(0x5EED);
    let mut gone = Vec::new();
    let mut next_new = 3_000u64;
    let (mut overlays, mut compacted) = (0, 0);
    for round in 0..40 {
        let before = model.clone();
        let mut patch = Patch::new();
        let mut touched = std::collections::HashSet::new();
        for _ in 0..rng.below(60) + 1 {
            let roll = rng.below(10);
            if roll < 4 && !model.is_empty() {
                // Change a key the dataset holds.
                let key = format!("key-{}", rng.below(next_new)).into_bytes();
                if !model.contains_key(&key) || !touched.insert(key.clone()) {
                    continue;
                }
                let value = format!("round-{round}-{}", rng.next()).into_bytes();
                patch.upsert(Record::binary(&key, &value)).unwrap();
                model.insert(key, value);
            } else if roll < 7 {
                // Delete one.
                let key = format!("key-{}", rng.below(next_new)).into_bytes();
                if !model.contains_key(&key) || !touched.insert(key.clone()) {
                    continue;
                }
                patch.delete(&key, false);
                model.remove(&key);
                gone.push(key);
            } else {
                // Add a new key, or put back a deleted one.
                let key = if roll == 9 && !gone.is_empty() {
                    gone[rng.below(gone.len() as u64) as usize].clone()
                } else {
                    next_new += 1;
                    format!("key-{next_new}").into_bytes()
                };
                if !touched.insert(key.clone()) {
                    continue;
                }
                let value = format!("added-{round}").into_bytes();
                patch.upsert(Record::binary(&key, &value)).unwrap();
                model.insert(key, value);
            }
        }
        let parent = manifest(dir.path()).generation;
        let summary = if round % 9 == 8 {
            patch.apply(dir.path(), &options(3)).unwrap();
            dataset::compact(dir.path(), None, &options(3)).unwrap()
        } else {
            let summary = patch.apply(dir.path(), &options(3)).unwrap();
            diff_matches(dir.path(), &parent, &before, &model, round);
            summary
        };
        overlays += summary.overlays_written;
        compacted += summary.shards_compacted;
        let published = summary.manifest.unwrap();
        assert!(published.shards.iter().all(|s| s.overlays.len() <= 3));
        check(dir.path(), &model, &gone, round);
    }
    assert!(
        overlays > 50 && compacted > 10,
        "{overlays} overlays, {compacted} compactions"
    );
    // Every file the manifest lists is there, and only the generations
    // the history keeps (and the bases they read) are.
    let listed = manifest(dir.path());
    for shard in &listed.shards {
        for file in shard.files() {
            assert!(dir.path().join(file).is_file(), "{file} is gone");
        }
    }
}

#[test]
fn a_patch_writes_one_overlay_per_shard_it_touches_and_reuses_every_base() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), 8, 10_000, PublishOptions::default());
    let before = manifest(dir.path());
    let mut patch = Patch::new();
    patch.upsert(Record::binary(b"key-1", b"changed")).unwrap();
    patch.upsert(Record::binary(b"new-key", b"added")).unwrap();
    patch.delete(b"key-2", false);
    let summary = patch.apply(dir.path(), &PatchOptions::default()).unwrap();
    let after = summary.manifest.clone().unwrap();
    assert_eq!((summary.added, summary.changed, summary.deleted), (1, 1, 1));
    assert_eq!(after.hashfile_dataset, 3);
    assert_eq!(after.entries, 10_000);
    for (old, new) in before.shards.iter().zip(&after.shards) {
        assert_eq!(old.file, new.file, "the base is reused");
        assert_eq!(old.checksum, new.checksum);
    }
    let with_overlay = after
        .shards
        .iter()
        .filter(|s| !s.overlays.is_empty())
        .count();
    assert_eq!(with_overlay as u64, summary.overlays_written);
    assert!(with_overlay <= 3);
    let bases: u64 = before.shards.iter().map(|s| s.bytes).sum();
    assert!(
        summary.bytes_written * 50 < bases,
        "{} bytes written for 3 changes over {bases}",
        summary.bytes_written
    );
    let table = open(dir.path());
    assert_eq!(table.get(b"key-1").unwrap().unwrap().value(), b"changed");
    assert_eq!(table.get(b"new-key").unwrap().unwrap().value(), b"added");
    assert!(table.get(b"key-2").unwrap().is_none());
    assert_eq!(table.get(b"key-3").unwrap().unwrap().value(), b"base-3");
    // An overlay with a tombstone, opened as a store of its own, is
    // refused: it is not the dataset.
    let deleted_in = table.as_dataset().unwrap().shard_of(b"key-2");
    let overlay = &after.shards[deleted_in].overlays[0];
    let error = Table::open(
        dir.path().join(&overlay.file).to_str().unwrap(),
        &Default::default(),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("an overlay of a dataset"),
        "{error}"
    );
}

#[test]
fn a_repeated_key_and_a_delete_of_a_missing_key_follow_their_options() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), 2, 100, PublishOptions::default());
    let files = || {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let before = files();
    let repeated = || {
        let mut patch = Patch::new();
        patch.upsert(Record::binary(b"key-5", b"one")).unwrap();
        patch.upsert(Record::binary(b"key-5", b"two")).unwrap();
        patch
    };
    let error = repeated()
        .apply(dir.path(), &PatchOptions::default())
        .unwrap_err();
    assert!(
        matches!(&error, hashfile::Error::DuplicateKey { key, .. } if key == b"key-5"),
        "{error}"
    );
    assert_eq!(files(), before, "a failed patch leaves nothing");
    let last = PatchOptions {
        on_duplicate: OnDuplicate::Last,
        ..PatchOptions::default()
    };
    repeated().apply(dir.path(), &last).unwrap();
    assert_eq!(
        open(dir.path()).get(b"key-5").unwrap().unwrap().value(),
        b"two"
    );

    let mut missing = Patch::new();
    missing.delete(b"no-such-key", false);
    let error = missing
        .apply(dir.path(), &PatchOptions::default())
        .unwrap_err();
    assert!(error.to_string().contains("no-such-key"), "{error}");
    let mut missing = Patch::new();
    missing.delete(b"no-such-key", false);
    let summary = missing
        .apply(
            dir.path(),
            &PatchOptions {
                on_missing: OnMissing::Ignore,
                ..PatchOptions::default()
            },
        )
        .unwrap();
    assert_eq!(summary.ignored, 1);
    assert_eq!(open(dir.path()).len(), 100);
}

#[test]
fn a_refused_patch_leaves_the_generation_served_and_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), 2, 100, PublishOptions::default());
    let served = manifest(dir.path());
    let listing = || std::fs::read_dir(dir.path()).unwrap().count();
    let files = listing();
    let mut patch = Patch::new();
    for i in 0..60 {
        patch.delete(format!("key-{i}").as_bytes(), false);
    }
    let gated = PatchOptions {
        publish: PublishOptions {
            gates: dataset::gates::Gates {
                max_entry_change: Some(0.1),
                ..Default::default()
            },
            ..PublishOptions::default()
        },
        ..PatchOptions::default()
    };
    let error = patch.apply(dir.path(), &gated).unwrap_err();
    assert!(
        matches!(error, hashfile::Error::PublishRefused { .. }),
        "{error}"
    );
    assert_eq!(manifest(dir.path()), served);
    assert_eq!(listing(), files);
}

#[test]
fn bases_a_delta_generation_reads_outlive_their_own_publish() {
    let dir = tempfile::tempdir().unwrap();
    let keep_one = PublishOptions {
        keep: 1,
        retain: Duration::ZERO,
        ..PublishOptions::default()
    };
    build(dir.path(), 2, 200, keep_one.clone());
    let base = manifest(dir.path()).generation;
    let only = PatchOptions {
        publish: keep_one.clone(),
        ..PatchOptions::default()
    };
    for round in 0..3 {
        let mut patch = Patch::new();
        patch
            .upsert(Record::binary(
                format!("key-{round}").as_bytes(),
                b"patched",
            ))
            .unwrap();
        patch.apply(dir.path(), &only).unwrap();
        // keep 1: each patch retires the publish before it; the base's
        // files stay, since the delta reads them.
        let table = open(dir.path());
        assert_eq!(table.get(b"key-150").unwrap().unwrap().value(), b"base-150");
        assert_eq!(
            table
                .get(format!("key-{round}").as_bytes())
                .unwrap()
                .unwrap()
                .value(),
            b"patched"
        );
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_str()
        .unwrap()
        .starts_with(&base)));
    // Compacted, the dataset reads no file of the base: they go.
    dataset::compact(dir.path(), None, &only).unwrap();
    let mut patch = Patch::new();
    patch.upsert(Record::binary(b"key-9", b"after")).unwrap();
    patch.apply(dir.path(), &only).unwrap();
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(&base))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(open(dir.path()).len(), 200);
}

#[test]
fn patches_at_once_never_lose_one_that_succeeded() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), 4, 100, PublishOptions::default());
    let succeeded = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..4 {
            let (dir, succeeded) = (dir.path(), &succeeded);
            scope.spawn(move || {
                for i in 0..10 {
                    let key = format!("w{worker}-{i}");
                    let mut patch = Patch::new();
                    patch.upsert(Record::binary(key.as_bytes(), b"x")).unwrap();
                    match patch.apply(dir, &options(8)) {
                        Ok(_) => succeeded.lock().unwrap().push(key),
                        Err(e) => assert!(
                            e.to_string()
                                .contains("was published while the patch was written"),
                            "{e}"
                        ),
                    }
                }
            });
        }
    });
    let succeeded = succeeded.into_inner().unwrap();
    assert!(!succeeded.is_empty());
    let table = open(dir.path());
    for key in &succeeded {
        assert!(
            table.get(key.as_bytes()).unwrap().is_some(),
            "{key} was lost"
        );
    }
    assert_eq!(table.len(), 100 + succeeded.len() as u64);
}

#[test]
fn a_patch_and_a_build_at_once_never_leave_a_manifest_of_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let keep_one = PublishOptions {
        keep: 1,
        retain: Duration::ZERO,
        ..PublishOptions::default()
    };
    build(dir.path(), 2, 50, keep_one.clone());
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (path, stop, keep) = (dir.path(), &stop, &keep_one);
        scope.spawn(move || {
            for _ in 0..20 {
                build(path, 2, 50, keep.clone());
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        for worker in 0..2 {
            scope.spawn(move || {
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let mut patch = Patch::new();
                    patch
                        .upsert(Record::binary(format!("w{worker}-{i}").as_bytes(), b"x"))
                        .unwrap();
                    let only = PatchOptions {
                        publish: keep.clone(),
                        ..PatchOptions::default()
                    };
                    if let Err(e) = patch.apply(path, &only) {
                        let text = e.to_string();
                        assert!(
                            text.contains("was published while the patch was written")
                                || text.contains("missing"),
                            "{e}"
                        );
                    }
                    i += 1;
                }
            });
        }
        // Every manifest published lists files that are there: an open
        // may fail while a publish replaces the generation it read (keep
        // 1, retain 0), never twice over one manifest that stays.
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let before = manifest(path).generation;
            match Table::open(path.to_str().unwrap(), &Default::default()) {
                Ok(table) => table.verify().unwrap(),
                Err(first) => {
                    if let Err(again) = Table::open(path.to_str().unwrap(), &Default::default()) {
                        assert_ne!(
                            manifest(path).generation,
                            before,
                            "the current manifest lists files that are gone: {first}; {again}"
                        );
                    }
                }
            }
        }
    });
    let table = open(dir.path());
    table.verify().unwrap();
}
