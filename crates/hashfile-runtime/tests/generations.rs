//! A dataset's generations over time: the history a publish keeps, what it
//! removes, a reader pinned to one generation, and rollback.

use std::path::Path;
use std::time::Duration;

use hashfile::BuildOptions;
use hashfile_remote::RemoteOptions;
use hashfile_runtime::dataset::manifest::{Manifest, MANIFEST_NAME};
use hashfile_runtime::dataset::{self, DatasetBuilder, PublishOptions};
use hashfile_runtime::{open, OpenOptions, Refresh};

/// Publishes `n` keys `key-I` => `{tag}-I` in `shards` shards at `dir`.
fn publish(dir: &Path, shards: u32, tag: &str, publish: PublishOptions) -> Manifest {
    let mut builder = DatasetBuilder::new(shards, BuildOptions::default()).unwrap();
    builder.set_publish(publish).unwrap();
    for i in 0..200 {
        builder.insert(
            format!("key-{i}").as_bytes(),
            format!("{tag}-{i}").as_bytes(),
        );
    }
    builder.write(dir).unwrap()
}

fn keeping(keep: u32, retain: Duration, note: &str) -> PublishOptions {
    PublishOptions {
        keep,
        retain,
        note: Some(note.to_owned()),
        tool: "tests".into(),
        ..PublishOptions::default()
    }
}

fn value(handle: &hashfile_runtime::Handle, key: &str) -> Option<String> {
    handle
        .read(|t| {
            Ok(t.get(key.as_bytes())?
                .map(|r| String::from_utf8(r.value().to_vec()).unwrap()))
        })
        .unwrap()
}

fn shard_files(dir: &Path, generation: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name().into_string().unwrap();
            name.starts_with(generation) && name.ends_with(".hf")
        })
        .count()
}

fn at(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

#[test]
fn a_publish_keeps_the_last_publishes_and_records_each() {
    let dir = tempfile::tempdir().unwrap();
    let published: Vec<Manifest> = ["one", "two", "three", "four"]
        .iter()
        .map(|tag| publish(dir.path(), 2, tag, keeping(3, Duration::ZERO, tag)))
        .collect();
    let history = dataset::history(at(dir.path()), &RemoteOptions::default()).unwrap();
    let generations: Vec<&str> = published[1..]
        .iter()
        .rev()
        .map(|m| m.generation.as_str())
        .collect();
    assert_eq!(history.generations(), generations);
    let newest = &history.publishes[0];
    assert_eq!(
        (
            newest.note.as_deref(),
            newest.tool.as_deref(),
            newest.entries,
            newest.shards,
            newest.rollback
        ),
        (Some("four"), Some("tests"), 200, 2, false)
    );
    assert_eq!(
        newest.bytes,
        published[3].shards.iter().map(|s| s.bytes).sum::<u64>()
    );
    assert!(newest.published_at.as_deref().unwrap().ends_with('Z'));
    // The fourth publish removed the first's shards and record, and no other.
    assert_eq!(shard_files(dir.path(), &published[0].generation), 0);
    assert!(!dir
        .path()
        .join(format!("hashfile-dataset.{}.json", published[0].generation))
        .exists());
    for kept in &published[1..] {
        assert_eq!(shard_files(dir.path(), &kept.generation), 2);
        assert!(dir
            .path()
            .join(format!("hashfile-dataset.{}.json", kept.generation))
            .exists());
    }
}

#[test]
fn a_replaced_generation_stays_until_it_is_old_enough() {
    let dir = tempfile::tempdir().unwrap();
    let one = publish(
        dir.path(),
        1,
        "one",
        keeping(1, Duration::from_secs(3600), "a"),
    );
    let two = publish(
        dir.path(),
        1,
        "two",
        keeping(1, Duration::from_secs(3600), "b"),
    );
    let three = publish(
        dir.path(),
        1,
        "three",
        keeping(1, Duration::from_secs(3600), "c"),
    );
    // keep 1, but each was replaced a moment ago: a reader may be on it.
    for m in [&one, &two, &three] {
        assert_eq!(
            shard_files(dir.path(), &m.generation),
            1,
            "{}",
            m.generation
        );
    }
    // A publish that retains nothing removes every one out of the last.
    let four = publish(dir.path(), 1, "four", keeping(1, Duration::ZERO, "d"));
    for m in [&one, &two, &three] {
        assert_eq!(
            shard_files(dir.path(), &m.generation),
            0,
            "{}",
            m.generation
        );
    }
    let history = dataset::history(at(dir.path()), &RemoteOptions::default()).unwrap();
    assert_eq!(history.generations(), [four.generation.as_str()]);
}

#[test]
fn a_reader_pinned_to_a_generation_reads_it_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let one = publish(dir.path(), 2, "one", keeping(3, Duration::ZERO, ""));
    publish(dir.path(), 3, "two", keeping(3, Duration::ZERO, ""));
    let pinned = open(
        at(dir.path()),
        OpenOptions {
            generation: Some(one.generation.clone()),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert_eq!(value(&pinned, "key-7").as_deref(), Some("one-7"));
    let current = open(at(dir.path()), OpenOptions::default()).unwrap();
    assert_eq!(value(&current, "key-7").as_deref(), Some("two-7"));

    let missing = open(
        at(dir.path()),
        OpenOptions {
            generation: Some("20200101T000000Z-00000000".into()),
            ..OpenOptions::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        missing.contains("generation 20200101T000000Z-00000000 is not kept here")
            && missing.contains(&one.generation),
        "{missing}"
    );
    let climbing = open(
        at(dir.path()),
        OpenOptions {
            generation: Some("../x".into()),
            ..OpenOptions::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            climbing,
            hashfile::Error::InvalidOption {
                name: "generation",
                ..
            }
        ),
        "{climbing:?}"
    );
    let refreshed = open(
        at(dir.path()),
        OpenOptions {
            generation: Some(one.generation.clone()),
            refresh: Refresh::Every(Duration::from_secs(1)),
            ..OpenOptions::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            refreshed,
            hashfile::Error::InvalidOption {
                name: "generation",
                ..
            }
        ),
        "{refreshed:?}"
    );
}

#[test]
fn a_rollback_publishes_an_earlier_generation_again_and_readers_follow() {
    let dir = tempfile::tempdir().unwrap();
    let one = publish(dir.path(), 2, "one", keeping(3, Duration::ZERO, ""));
    let two = publish(dir.path(), 2, "two", keeping(3, Duration::ZERO, ""));
    let following = open(
        at(dir.path()),
        OpenOptions {
            refresh: Refresh::Every(Duration::ZERO),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert_eq!(value(&following, "key-1").as_deref(), Some("two-1"));

    let back = dataset::rollback(
        at(dir.path()),
        None,
        &keeping(3, Duration::ZERO, "bad prices"),
        &RemoteOptions::default(),
    )
    .unwrap();
    assert_eq!(back.generation, one.generation);
    assert!(
        back.sequence > two.sequence,
        "published anew, after the current one"
    );
    assert_eq!(
        value(&following, "key-1").as_deref(),
        Some("one-1"),
        "a reader that follows moves to it"
    );
    let history = dataset::history(at(dir.path()), &RemoteOptions::default()).unwrap();
    assert!(history.publishes[0].rollback);
    assert_eq!(history.publishes[0].note.as_deref(), Some("bad prices"));
    assert_eq!(
        history.generations(),
        [one.generation.as_str(), two.generation.as_str()]
    );

    // And forward again, by name.
    dataset::rollback(
        at(dir.path()),
        Some(&two.generation),
        &PublishOptions::default(),
        &RemoteOptions::default(),
    )
    .unwrap();
    assert_eq!(value(&following, "key-1").as_deref(), Some("two-1"));

    let current = dataset::rollback(
        at(dir.path()),
        Some(&two.generation),
        &PublishOptions::default(),
        &RemoteOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(current.contains("is the current one"), "{current}");
    let unknown = dataset::rollback(
        at(dir.path()),
        Some("20200101T000000Z-00000000"),
        &PublishOptions::default(),
        &RemoteOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(unknown.contains("is not kept here"), "{unknown}");

    // A generation whose shard is gone is refused, and the manifest stays.
    let manifest_before = std::fs::read(dir.path().join(MANIFEST_NAME)).unwrap();
    std::fs::remove_file(dir.path().join(&one.shards[1].file)).unwrap();
    let broken = dataset::rollback(
        at(dir.path()),
        Some(&one.generation),
        &PublishOptions::default(),
        &RemoteOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(broken.contains(&one.shards[1].file), "{broken}");
    assert_eq!(
        std::fs::read(dir.path().join(MANIFEST_NAME)).unwrap(),
        manifest_before
    );
    assert_eq!(value(&following, "key-1").as_deref(), Some("two-1"));
}

#[test]
fn a_dataset_an_older_release_published_rolls_back_to_its_previous_record() {
    // What a release before the history left: a manifest, the previous
    // generation's record, and no history or generation records.
    let dir = tempfile::tempdir().unwrap();
    let one = publish(dir.path(), 1, "one", keeping(2, Duration::ZERO, ""));
    let two = publish(dir.path(), 1, "two", keeping(2, Duration::ZERO, ""));
    for name in [
        "hashfile-dataset.history.json".to_owned(),
        format!("hashfile-dataset.{}.json", one.generation),
        format!("hashfile-dataset.{}.json", two.generation),
    ] {
        std::fs::remove_file(dir.path().join(name)).unwrap();
    }
    let history = dataset::history(at(dir.path()), &RemoteOptions::default()).unwrap();
    assert_eq!(
        history.generations(),
        [two.generation.as_str(), one.generation.as_str()]
    );
    assert_eq!(history.publishes[0].tool, None, "not known");
    let back = dataset::rollback(
        at(dir.path()),
        None,
        &PublishOptions::default(),
        &RemoteOptions::default(),
    )
    .unwrap();
    assert_eq!(back.generation, one.generation);
    let reader = open(at(dir.path()), OpenOptions::default()).unwrap();
    assert_eq!(value(&reader, "key-3").as_deref(), Some("one-3"));
}

#[test]
fn a_gate_refuses_a_publish_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let first = publish(dir.path(), 2, "one", PublishOptions::default());
    let files_before: std::collections::BTreeSet<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let gated = PublishOptions {
        gates: dataset::gates::Gates {
            max_entry_change: Some(0.1),
            ..Default::default()
        },
        ..PublishOptions::default()
    };
    let mut builder = DatasetBuilder::new(2, BuildOptions::default()).unwrap();
    builder.set_publish(gated.clone()).unwrap();
    for i in 0..100 {
        builder.insert(format!("key-{i}").as_bytes(), b"fewer");
    }
    let refused = builder.write(dir.path()).unwrap_err();
    assert!(
        matches!(
            refused,
            hashfile::Error::PublishRefused {
                gate: "max_entry_change",
                ..
            }
        ),
        "{refused:?}"
    );
    assert!(
        refused
            .to_string()
            .contains("100 entries against 200 now (-50.0%), more than 10.0%"),
        "{refused}"
    );
    let files_after: std::collections::BTreeSet<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        files_before, files_after,
        "nothing of the refused generation is left"
    );
    let reader = open(at(dir.path()), OpenOptions::default()).unwrap();
    assert_eq!(value(&reader, "key-1").as_deref(), Some("one-1"));
    let history = dataset::history(at(dir.path()), &RemoteOptions::default()).unwrap();
    assert_eq!(history.generations(), [first.generation.as_str()]);

    // Forced: published, and the history says what was overridden.
    let mut builder = DatasetBuilder::new(2, BuildOptions::default()).unwrap();
    builder
        .set_publish(PublishOptions {
            force: true,
            ..gated
        })
        .unwrap();
    for i in 0..100 {
        builder.insert(format!("key-{i}").as_bytes(), b"fewer");
    }
    builder.write(dir.path()).unwrap();
    let history = dataset::history(at(dir.path()), &RemoteOptions::default()).unwrap();
    assert_eq!(
        history.publishes[0].forced.as_deref(),
        Some("max_entry_change: 100 entries against 200 now (-50.0%), more than 10.0%")
    );
    assert_eq!(history.publishes[1].forced, None);
}

#[test]
fn a_refused_first_publish_leaves_no_directory_and_a_rollback_makes_none() {
    let dir = tempfile::tempdir().unwrap();
    let gated = PublishOptions {
        gates: dataset::gates::Gates {
            refuse_empty: true,
            ..Default::default()
        },
        ..PublishOptions::default()
    };
    let fresh = dir.path().join("fresh");
    let mut builder = DatasetBuilder::new(2, BuildOptions::default()).unwrap();
    builder.set_publish(gated.clone()).unwrap();
    let refused = builder.write(&fresh).unwrap_err();
    assert!(
        refused.to_string().contains("nothing was published"),
        "{refused}"
    );
    assert!(!fresh.exists(), "the directory the build made is gone");

    let streamed = dir.path().join("streamed");
    let mut builder = DatasetBuilder::streaming(2, BuildOptions::default(), &streamed).unwrap();
    builder.set_publish(gated).unwrap();
    assert!(builder.write(&streamed).is_err());
    assert!(!streamed.exists(), "a streaming build's directory too");

    let typo = dir.path().join("typo/deep");
    let error = dataset::rollback(
        at(&typo),
        None,
        &PublishOptions::default(),
        &RemoteOptions::default(),
    )
    .unwrap_err();
    assert!(error.to_string().contains("not a dataset"), "{error}");
    assert!(
        !dir.path().join("typo").exists(),
        "a rollback makes nothing"
    );
    let store = dir.path().join("one.hf");
    let mut one = hashfile::Builder::new(BuildOptions::default()).unwrap();
    one.insert(b"a", b"1");
    one.write_file(&store).unwrap();
    let error = dataset::rollback(
        at(&store),
        None,
        &PublishOptions::default(),
        &RemoteOptions::default(),
    )
    .unwrap_err();
    assert!(error.to_string().contains("not a dataset"), "{error}");
}

#[test]
fn a_history_that_lies_removes_nothing_of_anyone_elses() {
    let dir = tempfile::tempdir().unwrap();
    let one = publish(dir.path(), 1, "one", keeping(3, Duration::ZERO, ""));
    std::fs::write(dir.path().join("myfile-00000-of-00001.hf"), b"mine").unwrap();
    let history_at = dir.path().join("hashfile-dataset.history.json");
    let line = |generation: &str, sequence: u64| {
        format!(
            r#"{{"generation":"{generation}","sequence":{sequence},"published_at":null,"entries":1,"bytes":1,"shards":1,"tool":null,"note":null,"rollback":false,"keep":1,"retain_seconds":0,"forced":null}}"#
        )
    };
    // A user's file named as a shard of a "generation" the history made up.
    let lying = format!(
        "{{\"hashfile_history\":1,\"publishes\":[{},{}]}}",
        line(&one.generation, one.sequence),
        line("myfile", 5)
    );
    std::fs::write(&history_at, lying).unwrap();
    let two = publish(dir.path(), 1, "two", keeping(1, Duration::ZERO, ""));
    assert_eq!(
        std::fs::read(dir.path().join("myfile-00000-of-00001.hf")).unwrap(),
        b"mine"
    );
    // Names of the dataset's own files are no generation.
    let reserved = format!(
        "{{\"hashfile_history\":1,\"publishes\":[{}]}}",
        line("history", 1)
    );
    std::fs::write(&history_at, reserved).unwrap();
    let error = dataset::history(at(dir.path()), &RemoteOptions::default()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("names a file of the dataset's own"),
        "{error}"
    );

    // Lines newer than the manifest they claim to precede make the real
    // publishes look old: they are dropped, and what the real ones keep
    // stays.
    let three = publish(
        dir.path(),
        1,
        "three",
        keeping(3, Duration::from_secs(3600), ""),
    );
    let future = three.sequence + 1_000_000;
    let inflated = format!(
        "{{\"hashfile_history\":1,\"publishes\":[{},{},{},{}]}}",
        line("20991231T000000Z-00000001", future + 2),
        line("20991231T000000Z-00000002", future + 1),
        line("20991231T000000Z-00000003", future),
        line(&three.generation, three.sequence)
    );
    std::fs::write(&history_at, inflated).unwrap();
    publish(
        dir.path(),
        1,
        "four",
        keeping(3, Duration::from_secs(3600), ""),
    );
    assert_eq!(
        shard_files(dir.path(), &three.generation),
        1,
        "replaced a moment ago: it stays"
    );
    let kept = dataset::history(at(dir.path()), &RemoteOptions::default()).unwrap();
    assert!(
        !kept.keeps("20991231T000000Z-00000001"),
        "the lines that lied are gone"
    );
    let _ = two;
}

#[test]
fn a_pinned_reader_opens_the_generation_it_names_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let one = publish(dir.path(), 1, "one", keeping(3, Duration::ZERO, ""));
    let two = publish(dir.path(), 1, "two", keeping(3, Duration::ZERO, ""));
    // One record copied over the other's.
    std::fs::copy(
        dir.path()
            .join(format!("hashfile-dataset.{}.json", two.generation)),
        dir.path()
            .join(format!("hashfile-dataset.{}.json", one.generation)),
    )
    .unwrap();
    let error = open(
        at(dir.path()),
        OpenOptions {
            generation: Some(one.generation.clone()),
            ..OpenOptions::default()
        },
    )
    .unwrap_err();
    assert!(
        error.to_string().contains(&format!(
            "the record of generation {} names generation {}",
            one.generation, two.generation
        )),
        "{error}"
    );
    for reserved in ["previous", "history"] {
        let error = open(
            at(dir.path()),
            OpenOptions {
                generation: Some(reserved.into()),
                ..OpenOptions::default()
            },
        )
        .unwrap_err();
        assert!(
            matches!(
                error,
                hashfile::Error::InvalidOption {
                    name: "generation",
                    ..
                }
            ),
            "{error:?}"
        );
    }
}
