//! Datasets: shards under a manifest, written and read; every way a
//! manifest or a shard can disagree refused with an error naming the file;
//! a manifest served by nginx with its shards opened on first use; and the
//! checked-in test vector (docs/FORMAT.md).

use std::path::{Path, PathBuf};

use hashfile::{BuildOptions, Builder};
use hashfile_runtime::dataset::manifest::{Manifest, MANIFEST_NAME};
use hashfile_runtime::dataset::{Dataset, DatasetBuilder, PublishOptions};

#[path = "../../hashfile-remote/tests/support/mod.rs"]
mod support;

/// Keeping two publishes and retaining nothing past them: each publish
/// removes what the one two back published, which the tests here watch
/// (tests/generations.rs covers keep and retain).
fn build(dir: &Path, n: u64, shards: u32, tag: &str) -> Manifest {
    let mut builder = DatasetBuilder::new(shards, BuildOptions::default()).unwrap();
    builder
        .set_publish(PublishOptions {
            keep: 2,
            retain: std::time::Duration::ZERO,
            ..PublishOptions::default()
        })
        .unwrap();
    for i in 0..n {
        builder.insert(
            format!("key-{i}").as_bytes(),
            format!("{tag}-{i}").as_bytes(),
        );
    }
    builder.write(dir).unwrap()
}

fn open(at: &Path) -> hashfile::Result<Dataset> {
    Dataset::open(at.to_str().unwrap(), &Default::default())
}

fn value(dataset: &Dataset, key: &str) -> Option<String> {
    dataset
        .get(key.as_bytes())
        .unwrap()
        .map(|r| String::from_utf8(r.value().to_vec()).unwrap())
}

/// The error of opening `at`, as text, after checking it is a dataset
/// error naming `names`.
fn refusal(at: &Path, names: &str) -> String {
    let error = open(at).expect_err("refused");
    assert!(
        matches!(error, hashfile::Error::Dataset { .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains(names), "{text} does not name {names}");
    text
}

#[test]
fn every_key_reads_from_its_shard_and_the_whole_reads_like_one_store() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = build(dir.path(), 10_000, 4, "v");
    assert_eq!(manifest.entries, 10_000);
    assert_eq!(manifest.shards.len(), 4);
    // A directory opens as a dataset (Table::open decides, where a store
    // would be opened).
    let table =
        hashfile_runtime::Table::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
    assert!(table.as_dataset().is_some() && table.as_store().is_none());
    for at in [dir.path().to_path_buf(), dir.path().join(MANIFEST_NAME)] {
        let dataset = open(&at).unwrap();
        assert_eq!((dataset.len(), dataset.shard_count()), (10_000, 4));
        for i in (0..10_000).step_by(7) {
            assert_eq!(value(&dataset, &format!("key-{i}")), Some(format!("v-{i}")));
        }
        assert_eq!(value(&dataset, "key-10000"), None);
        let keys = ["key-5", "absent", "key-9999", "key-0", "key-5"];
        let found: Vec<Option<Vec<u8>>> = dataset
            .get_many(&keys)
            .unwrap()
            .into_iter()
            .map(|r| r.map(|r| r.value().to_vec()))
            .collect();
        let expected: Vec<Option<Vec<u8>>> = vec![
            Some(b"v-5".to_vec()),
            None,
            Some(b"v-9999".to_vec()),
            Some(b"v-0".to_vec()),
            Some(b"v-5".to_vec()),
        ];
        assert_eq!(found, expected);
        // Shard by shard, each key once, each in the shard it routes to.
        let mut seen = std::collections::HashSet::new();
        let mut last_shard = 0;
        for record in dataset.iter() {
            let record = record.unwrap();
            let shard = dataset.shard_of(record.key());
            assert!(shard >= last_shard, "shards in order");
            last_shard = shard;
            assert!(seen.insert(record.key().to_vec()));
        }
        assert_eq!(seen.len(), 10_000);
        dataset.verify().unwrap();
    }
    // The shards together are the entries; each holds about a quarter.
    for shard in &manifest.shards {
        assert!((2_300..2_700).contains(&shard.entries), "{shard:?}");
        assert!(shard.file.starts_with(&manifest.generation));
    }
}

#[test]
fn a_new_generation_replaces_all_shards_at_once_and_old_readers_keep_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let first = build(dir.path(), 1_000, 3, "one");
    let reader = open(dir.path()).unwrap();
    let second = build(dir.path(), 1_000, 5, "two");
    assert_ne!(first.generation, second.generation);
    assert_eq!(value(&reader, "key-7").as_deref(), Some("one-7"));
    assert_eq!(
        value(&open(dir.path()).unwrap(), "key-7").as_deref(),
        Some("two-7")
    );
    // The generation replaced stays for readers opening it; older ones go.
    let count = |generation: &str| {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_str()
                    .unwrap()
                    .starts_with(generation)
            })
            .count()
    };
    assert_eq!(
        (count(&first.generation), count(&second.generation)),
        (3, 5)
    );
    let third = build(dir.path(), 10, 1, "three");
    assert_eq!(
        (
            count(&first.generation),
            count(&second.generation),
            count(&third.generation)
        ),
        (0, 5, 1)
    );
}

#[test]
fn a_directory_without_a_manifest_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = refusal(dir.path(), MANIFEST_NAME);
    assert!(text.contains("no dataset manifest"), "{text}");
}

/// A manifest damaged, cut short, edited by hand, or of a kind this
/// release does not read: each refused, naming the manifest and what is
/// wrong.
#[test]
fn bad_manifests_are_refused_saying_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), 100, 2, "v");
    let path = dir.path().join(MANIFEST_NAME);
    let good = std::fs::read_to_string(&path).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "damaged",
            good.replacen("\"entries\"", "\"entr\x00es\"", 1),
            "not a valid dataset manifest",
        ),
        (
            "truncated",
            good[..good.len() / 2].to_owned(),
            "not a valid dataset manifest",
        ),
        (
            "not JSON",
            "PK\x03\x04 a zip file".to_owned(),
            "not a valid dataset manifest",
        ),
        (
            "an unknown field",
            good.replacen("\"entries\"", "\"owner\": \"me\", \"entries\"", 1),
            "unknown field `owner`",
        ),
        (
            "a newer version",
            good.replacen(
                "\"hashfile_dataset\": 2",
                "\"hashfile_dataset\": 4, \"compression\": \"zstd\"",
                1,
            ),
            "dataset manifest version 4, and this release reads versions 1 to 3",
        ),
        (
            "version 2 without a sequence",
            {
                let at = good.find("  \"sequence\"").unwrap();
                let end = at + good[at..].find('\n').unwrap() + 1;
                format!("{}{}", &good[..at], &good[end..])
            },
            "no sequence",
        ),
        (
            "version 1 with a sequence",
            good.replacen("\"hashfile_dataset\": 2", "\"hashfile_dataset\": 1", 1),
            "a version 1 manifest has no sequence",
        ),
        (
            "a shard URL that does not parse",
            good.replacen("\"file\": \"", "\"file\": \"https://[::1/", 1),
            "is not a valid URL",
        ),
        (
            "a shard URL longer than 2048 bytes",
            good.replacen(
                "\"file\": \"",
                &format!("\"file\": \"https://h/{}", "a".repeat(2048)),
                1,
            ),
            "more than 2048",
        ),
        (
            "a local manifest naming a shard on a server",
            good.replacen("\"file\": \"", "\"file\": \"http://127.0.0.1:9/", 1),
            "the manifest is a local file",
        ),
        (
            "a local manifest naming a shard in S3",
            good.replacen("\"file\": \"", "\"file\": \"s3://bucket/", 1),
            "the manifest is a local file",
        ),
        (
            "an unknown routing",
            good.replacen("xxh3-64-high:", "murmur3:", 1),
            "is not one this release knows",
        ),
        (
            "a shard name leaving the directory",
            good.replacen("\"file\": \"", "\"file\": \"../", 1),
            "is not 1 to 255 letters",
        ),
        (
            "a bad checksum",
            replace_field(&good, "checksum", "\"xyz\""),
            "is not 16 hex digits",
        ),
        (
            "entries that do not add up",
            good.replacen("\"entries\": 100", "\"entries\": 101", 1),
            "the shards hold 100 entries together, and the manifest says 101",
        ),
        (
            "no shards",
            format!(
                "{}[]\n}}\n",
                &good[..good.find("\"shards\": [").unwrap() + "\"shards\": ".len()]
            ),
            "0 shards",
        ),
    ];
    for (what, text, says) in cases {
        std::fs::write(&path, text).unwrap();
        let message = refusal(dir.path(), says);
        assert!(message.contains(MANIFEST_NAME), "{what}: {message}");
    }
    // A shard listed twice (the same file for both).
    let manifest = Manifest::parse(good.as_bytes(), "m").unwrap();
    let mut twice = manifest.clone();
    twice.shards[1] = twice.shards[0].clone();
    twice.entries = twice.shards[0].entries * 2;
    std::fs::write(&path, twice.to_json()).unwrap();
    refusal(dir.path(), "the file is listed twice");
}

/// `"NAME": VALUE` with VALUE replaced in the first shard.
fn replace_field(json: &str, name: &str, value: &str) -> String {
    let start = json.find(&format!("\"{name}\": ")).unwrap() + name.len() + 4;
    let end = start + json[start..].find(['}', ',']).unwrap();
    format!("{}{value}{}", &json[..start], &json[end..])
}

/// A shard missing, of another length or checksum, or of another
/// generation: refused at open, naming the shard, before anything is
/// answered.
#[test]
fn shards_that_disagree_with_the_manifest_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = build(dir.path(), 1_000, 3, "v");
    let shard = |i: usize| dir.path().join(&manifest.shards[i].file);
    // Of another generation: the same name, another build of its keys.
    let keep = std::fs::read(shard(1)).unwrap();
    let dataset = open(dir.path()).unwrap();
    let mut other = Builder::new(BuildOptions::default()).unwrap();
    for record in dataset.opened_shard(1).unwrap().iter() {
        let record = record.unwrap();
        let mut value = record.value().to_vec();
        value[0] = b'w';
        other.insert(record.key(), &value);
    }
    drop(dataset);
    other.write_file(&shard(1)).unwrap();
    let text = refusal(dir.path(), &manifest.shards[1].file);
    assert!(text.contains("shard 1 of 3"), "{text}");
    assert!(text.contains("header checksum"), "{text}");
    // Of another length.
    std::fs::write(shard(1), &keep[..keep.len() - 1]).unwrap();
    let error = open(dir.path()).expect_err("a truncated shard");
    assert!(
        error.to_string().contains(&manifest.shards[1].file),
        "{error}"
    );
    std::fs::write(shard(1), &keep).unwrap();
    open(dir.path()).unwrap();
    // Missing.
    std::fs::remove_file(shard(2)).unwrap();
    let text = refusal(dir.path(), &manifest.shards[2].file);
    assert!(
        text.contains("shard 2 of 3") && text.contains("missing"),
        "{text}"
    );
}

/// A dataset put together by hand, with a key in a shard it does not route
/// to: it opens (the manifest is right about every shard), no lookup finds
/// that key, and `verify` says which key and where.
#[test]
fn a_key_in_the_wrong_shard_is_found_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = build(dir.path(), 100, 2, "v");
    let dataset = open(dir.path()).unwrap();
    let stray = (0..)
        .map(|i| format!("stray-{i}"))
        .find(|k| dataset.shard_of(k.as_bytes()) == 1)
        .unwrap();
    let mut shard0 = Builder::new(BuildOptions::default()).unwrap();
    for record in dataset.opened_shard(0).unwrap().iter() {
        let record = record.unwrap();
        shard0.insert(record.key(), record.value());
    }
    shard0.insert(stray.as_bytes(), b"lost");
    drop(dataset);
    let path0 = dir.path().join(&manifest.shards[0].file);
    shard0.write_file(&path0).unwrap();
    // The manifest edited to match the new shard 0.
    let store = hashfile_runtime::open_store(
        path0.to_str().unwrap(),
        &Default::default(),
        hashfile_runtime::LocalOpen::Mapped,
    )
    .unwrap();
    let mut edited = manifest.clone();
    edited.shards[0].entries = store.len();
    edited.shards[0].bytes = std::fs::metadata(&path0).unwrap().len();
    edited.shards[0].checksum = format!(
        "{:016x}",
        hashfile_runtime::dataset::header_checksum(&store).unwrap()
    );
    edited.entries += 1;
    std::fs::write(dir.path().join(MANIFEST_NAME), edited.to_json()).unwrap();
    let dataset = open(dir.path()).unwrap();
    assert_eq!(value(&dataset, &stray), None);
    let error = dataset.verify().expect_err("the stray key");
    let text = error.to_string();
    assert!(
        text.contains(&stray) && text.contains("is in shard 0 of 2, and routes to shard 1"),
        "{text}"
    );
}

#[test]
fn shard_counts_out_of_range_are_refused() {
    for shards in [0, hashfile::dataset::MAX_SHARDS + 1] {
        let error = DatasetBuilder::new(shards, BuildOptions::default())
            .err()
            .expect("refused");
        assert!(matches!(
            error,
            hashfile::Error::InvalidOption { name: "shards", .. }
        ));
    }
}

/// A manifest served by nginx: shards named in it are fetched beside it,
/// each opened and checked when first used.
#[test]
fn a_remote_dataset_opens_shards_on_first_use() {
    let nginx = support::Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let manifest = build(dir.path(), 2_000, 4, "r");
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        nginx.publish(&name, &std::fs::read(entry.path()).unwrap());
    }
    let url = nginx.url(&format!("/files/{MANIFEST_NAME}"));
    let dataset = Dataset::open(&url, &Default::default()).unwrap();
    assert_eq!(dataset.len(), 2_000);
    assert!(
        (0..4).all(|i| dataset.opened_shard(i).is_none()),
        "nothing opened yet"
    );
    let shard = dataset.shard_of(b"key-42");
    assert_eq!(value(&dataset, "key-42").as_deref(), Some("r-42"));
    for i in 0..4 {
        assert_eq!(dataset.opened_shard(i).is_some(), i == shard, "shard {i}");
    }
    assert!(dataset.shard_location(0).starts_with("http://127.0.0.1:"));
    // A shard replaced on the server by one of another build is refused
    // when first used, naming it.
    let other = (0..4).find(|&i| i != shard).unwrap();
    nginx.publish(&manifest.shards[other].file, &support::store(10, 8));
    let key = (0..2_000)
        .map(|i| format!("key-{i}"))
        .find(|k| dataset.shard_of(k.as_bytes()) == other)
        .unwrap();
    let error = dataset.get(key.as_bytes()).expect_err("refused");
    assert!(
        error.to_string().contains(&manifest.shards[other].file),
        "{error}"
    );
}

/// The checked-in dataset of docs/FORMAT.md: 40 keys `key-I` => `value-I`
/// in 3 shards. `UPDATE_DATASET_VECTOR=1` writes it again (a format
/// change).
#[test]
fn the_test_vectors_read_as_documented() {
    // Version 2 is version 1's shards under a manifest with a sequence;
    // both are read, and each is written back as it was.
    for (version, sequence) in [(1, 0), (2, 1_795_531_675_123_456)] {
        let vector = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/vectors/dataset-v{version}"));
        check_vector(&vector);
        let manifest = open(&vector).unwrap().manifest().clone();
        assert_eq!(
            (manifest.hashfile_dataset, manifest.sequence),
            (version, sequence)
        );
    }
}

/// The delta generation of docs/FORMAT.md ("Delta generations"): the
/// version 2 dataset with key-0 changed, key-1 deleted and key-40 added,
/// as overlays over its unchanged shards. `UPDATE_DATASET_VECTOR=1`
/// writes it again.
#[test]
fn the_delta_vector_reads_as_documented() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let vector = root.join("dataset-v3");
    if std::env::var_os("UPDATE_DATASET_VECTOR").is_some() {
        let _ = std::fs::remove_dir_all(&vector);
        std::fs::create_dir(&vector).unwrap();
        for entry in std::fs::read_dir(root.join("dataset-v2")).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), vector.join(entry.file_name())).unwrap();
        }
        let mut patch = hashfile_runtime::dataset::Patch::new();
        patch
            .upsert(hashfile::Record::text("key-0", "patched-0"))
            .unwrap();
        patch
            .upsert(hashfile::Record::text("key-40", "value-40"))
            .unwrap();
        patch.delete(b"key-1", true);
        patch.apply(&vector, &Default::default()).unwrap();
        for entry in std::fs::read_dir(&vector).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name != MANIFEST_NAME && !name.ends_with(".hf") {
                std::fs::remove_file(vector.join(name)).unwrap();
            }
        }
    }
    let dataset = open(&vector).unwrap();
    dataset.verify().unwrap();
    let manifest = dataset.manifest();
    assert_eq!((manifest.hashfile_dataset, dataset.len()), (3, 40));
    let text = std::fs::read_to_string(vector.join(MANIFEST_NAME)).unwrap();
    assert_eq!(text, manifest.to_json(), "written as this release writes");
    let v2 = open(&root.join("dataset-v2")).unwrap();
    for (base, with) in v2.manifest().shards.iter().zip(&manifest.shards) {
        assert_eq!((&base.file, &base.checksum), (&with.file, &with.checksum));
    }
    assert_eq!(value(&dataset, "key-0"), Some("patched-0".into()));
    assert_eq!(value(&dataset, "key-1"), None);
    assert_eq!(value(&dataset, "key-40"), Some("value-40".into()));
    for i in 2..40 {
        assert_eq!(
            value(&dataset, &format!("key-{i}")),
            Some(format!("value-{i}"))
        );
    }
}

fn check_vector(vector: &Path) {
    if std::env::var_os("UPDATE_DATASET_VECTOR").is_some() && vector.ends_with("dataset-v1") {
        let _ = std::fs::remove_dir_all(vector);
        let mut builder = DatasetBuilder::new(3, BuildOptions::default()).unwrap();
        for i in 0..40 {
            builder.insert(
                format!("key-{i}").as_bytes(),
                format!("value-{i}").as_bytes(),
            );
        }
        builder.write(vector).unwrap();
    }
    let dataset = open(vector).unwrap();
    dataset.verify().unwrap();
    assert_eq!((dataset.len(), dataset.shard_count()), (40, 3));
    let manifest = dataset.manifest();
    assert_eq!(manifest.routing, "xxh3-64-high:6861736866696c65");
    for i in 0..40 {
        assert_eq!(
            value(&dataset, &format!("key-{i}")),
            Some(format!("value-{i}"))
        );
    }
    // Every entry of the manifest, as docs/FORMAT.md shows it.
    let text = std::fs::read_to_string(vector.join(MANIFEST_NAME)).unwrap();
    assert_eq!(text, manifest.to_json(), "written as this release writes");
    let counts: Vec<u64> = manifest.shards.iter().map(|s| s.entries).collect();
    let routed: Vec<u64> = (0..3)
        .map(|s| {
            (0..40)
                .filter(|i| dataset.shard_of(format!("key-{i}").as_bytes()) == s)
                .count() as u64
        })
        .collect();
    assert_eq!(counts, routed);
}

/// Waits until no refresh check of `handle` runs on its thread (one is
/// started by the call here if one is due), at most 10 s.
fn settle(handle: &hashfile_runtime::Handle) {
    handle.generation();
    let started = std::time::Instant::now();
    while handle.refreshing() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "a refresh check still runs after 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// A remote dataset over time, served by nginx from the directory a build
/// publishes into: with a refresh interval, a manifest of a new generation
/// is found and all shards are swapped at once; with reopen on change, a
/// reader whose generation a later build removed reopens and reads the new
/// one rather than failing.
#[test]
fn a_remote_dataset_follows_new_generations() {
    use hashfile_runtime::{OpenOptions, Refresh};
    let nginx = support::Nginx::start();
    let dir = nginx.file("ds");
    build(&dir, 500, 4, "one");
    let url = nginx.url(&format!("/files/ds/{MANIFEST_NAME}"));
    let get = |handle: &hashfile_runtime::Handle, key: &str| {
        handle
            .read(|t| {
                Ok(t.get(key.as_bytes())?
                    .map(|r| String::from_utf8(r.value().to_vec()).unwrap()))
            })
            .unwrap()
    };

    let every = OpenOptions {
        refresh: Refresh::Every(std::time::Duration::ZERO),
        ..OpenOptions::default()
    };
    let polled = hashfile_runtime::open(&url, every.clone()).unwrap();
    assert_eq!(get(&polled, "key-1").as_deref(), Some("one-1"));
    assert!(!polled.is_stale());
    settle(&polled);
    let requests = nginx.log().len();
    // A check runs on a thread of its own: the lookup that starts it
    // answers at once, from the dataset open.
    assert_eq!(get(&polled, "key-1").as_deref(), Some("one-1"));
    settle(&polled);
    let manifest_requests_since = |requests: usize| {
        nginx.log()[requests..]
            .iter()
            .filter(|r| r.3.ends_with(MANIFEST_NAME))
            .count()
    };
    assert_eq!(
        manifest_requests_since(requests),
        1,
        "one manifest request per check"
    );

    let reopening = hashfile_runtime::open(
        &url,
        OpenOptions {
            refresh: Refresh::ReopenOnChange,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert_eq!(get(&reopening, "key-2").as_deref(), Some("one-2"));

    build(&dir, 500, 2, "two");
    assert!(polled.is_stale());
    let requests = nginx.log().len();
    assert_eq!(get(&polled, "key-1").as_deref(), Some("one-1"));
    settle(&polled);
    assert_eq!(
        manifest_requests_since(requests),
        1,
        "a check that finds a new generation fetches its manifest once, to compare and to open"
    );
    assert_eq!(get(&polled, "key-1").as_deref(), Some("two-1"));
    assert_eq!(polled.generation_now(), 1);
    assert_eq!(
        polled
            .current()
            .unwrap()
            .as_dataset()
            .unwrap()
            .manifest()
            .shards
            .len(),
        2
    );

    // A third build removes the first generation's shards: the reader still
    // on it finds its shards gone, reopens, and answers from the third.
    settle(&polled);
    build(&dir, 500, 3, "three");
    assert_eq!(get(&reopening, "key-7").as_deref(), Some("three-7"));
    assert_eq!(reopening.generation_now(), 1);

    // A manifest that cannot be fetched leaves the dataset read in use
    // (the second generation's shards are still there) and says why.
    std::fs::remove_file(dir.join(MANIFEST_NAME)).unwrap();
    settle(&polled);
    assert_eq!(get(&polled, "key-1").as_deref(), Some("two-1"));
    settle(&polled);
    polled.generation();
    let why = polled
        .refresh_error()
        .expect("the failed check is remembered");
    assert!(why.contains(MANIFEST_NAME) && why.contains("404"), "{why}");

    // A refresh interval on a remote store (not a dataset) is refused.
    let refused = hashfile_runtime::open(&nginx.url("/files/x.hf"), every).unwrap_err();
    assert!(refused.to_string().contains("remote datasets"), "{refused}");
}

/// The shard files in `dir` of `generation`.
fn files_of(dir: &Path, generation: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_str().unwrap();
            name.starts_with(generation) && name.ends_with(".hf")
        })
        .count()
}

/// A publish removes the shards of the generation two publishes back, as
/// its manifest listed them, and nothing else: files of the user's that
/// are named like shards stay, and a manifest that cannot be read costs
/// its generation's space, never the generation that may be current.
#[test]
fn publishing_removes_only_what_an_earlier_manifest_listed() {
    let dir = tempfile::tempdir().unwrap();
    let mine = [
        "customers-00000-of-00001.hf",
        "notes-2024-00007-of-00012.hf",
        "20200101T000000Z-0badf00d-00000-of-00001.hf",
    ];
    for name in mine {
        std::fs::write(dir.path().join(name), name).unwrap();
    }
    let one = build(dir.path(), 100, 2, "one");
    let two = build(dir.path(), 100, 3, "two");
    assert_eq!(
        (
            files_of(dir.path(), &one.generation),
            files_of(dir.path(), &two.generation)
        ),
        (2, 3)
    );
    let three = build(dir.path(), 100, 1, "three");
    assert_eq!(
        (
            files_of(dir.path(), &one.generation),
            files_of(dir.path(), &two.generation),
            files_of(dir.path(), &three.generation)
        ),
        (0, 3, 1),
        "the generation before the one replaced goes"
    );
    // The record of the generation replaced, beside the manifest.
    let record = std::fs::read(dir.path().join(hashfile_runtime::dataset::PREVIOUS_NAME)).unwrap();
    assert_eq!(Manifest::parse(&record, "r").unwrap(), two);
    assert!(three.sequence > two.sequence && two.sequence > one.sequence);

    // The current manifest damaged: the next publish removes nothing (it
    // cannot know what the damaged one listed), and records nothing.
    std::fs::write(dir.path().join(MANIFEST_NAME), b"{ damaged").unwrap();
    let four = build(dir.path(), 100, 2, "four");
    assert_eq!(
        (
            files_of(dir.path(), &two.generation),
            files_of(dir.path(), &three.generation),
            files_of(dir.path(), &four.generation)
        ),
        (3, 1, 2)
    );
    // The next one, over a manifest it can read, removes what the history
    // holds past the last two publishes: two's and three's (the history
    // recorded three, whose manifest was since damaged).
    let five = build(dir.path(), 100, 1, "five");
    assert_eq!(
        (
            files_of(dir.path(), &two.generation),
            files_of(dir.path(), &three.generation),
            files_of(dir.path(), &four.generation),
            files_of(dir.path(), &five.generation)
        ),
        (0, 0, 2, 1)
    );
    for gone in [&two.generation, &three.generation] {
        assert!(
            !dir.path()
                .join(format!("hashfile-dataset.{gone}.json"))
                .exists(),
            "{gone}'s record goes with it"
        );
    }
    for name in mine {
        assert_eq!(
            std::fs::read(dir.path().join(name)).unwrap(),
            name.as_bytes(),
            "{name} is the user's and stays"
        );
    }
    assert_eq!(
        value(&open(dir.path()).unwrap(), "key-3").as_deref(),
        Some("five-3")
    );
}

/// A failed job's generation is discarded by the id it wrote under; a
/// published generation, or a name that is not such an id, is refused.
#[test]
fn discarding_takes_only_an_unpublished_generation_id() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().to_str().unwrap();
    let one = build(dir.path(), 10, 1, "one");
    std::fs::write(dir.path().join("customers-00000-of-00001.hf"), b"mine").unwrap();
    let none = Default::default();
    for (generation, says) in [
        (one.generation.as_str(), "is published"),
        ("customers", "is not one new_generation made"),
    ] {
        let error = hashfile_runtime::dataset::discard_generation(at, generation, &none)
            .expect_err(generation);
        assert!(error.to_string().contains(says), "{error}");
    }
    assert_eq!(files_of(dir.path(), &one.generation), 1);
    assert!(dir.path().join("customers-00000-of-00001.hf").exists());
    // A manifest that cannot be read (here, of a newer version): which
    // generation is published cannot be told, so nothing is discarded.
    let text = std::fs::read_to_string(dir.path().join(MANIFEST_NAME)).unwrap();
    std::fs::write(
        dir.path().join(MANIFEST_NAME),
        text.replacen("\"hashfile_dataset\": 2", "\"hashfile_dataset\": 4", 1),
    )
    .unwrap();
    let error = hashfile_runtime::dataset::discard_generation(at, &one.generation, &none)
        .expect_err("an unreadable manifest");
    assert!(
        error.to_string().contains("nothing is discarded"),
        "{error}"
    );
    assert_eq!(files_of(dir.path(), &one.generation), 1);
}

/// A reader that follows new generations never goes back: a manifest put
/// back (yesterday's, by a server or a careless copy) is a refresh error,
/// and the reader keeps its generation; an explicit reopen reads it.
#[test]
fn a_replayed_older_manifest_is_not_followed() {
    use hashfile_runtime::{OpenOptions, Refresh};
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), 100, 2, "one");
    let yesterday = std::fs::read(dir.path().join(MANIFEST_NAME)).unwrap();
    build(dir.path(), 100, 2, "two");
    let handle = hashfile_runtime::open(
        dir.path().to_str().unwrap(),
        OpenOptions {
            refresh: Refresh::Every(std::time::Duration::ZERO),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let get = |key: &str| {
        handle
            .read(|t| {
                Ok(t.get(key.as_bytes())?
                    .map(|r| String::from_utf8(r.value().to_vec()).unwrap()))
            })
            .unwrap()
    };
    assert_eq!(get("key-1").as_deref(), Some("two-1"));
    // Put back by rename, as a copy or a restore would.
    let temp = dir.path().join(".restore");
    std::fs::write(&temp, &yesterday).unwrap();
    std::fs::rename(&temp, dir.path().join(MANIFEST_NAME)).unwrap();
    assert_eq!(get("key-1").as_deref(), Some("two-1"));
    assert_eq!(handle.generation_now(), 0);
    let why = handle
        .refresh_error()
        .expect("the older manifest is reported");
    assert!(why.contains("not later than generation"), "{why}");
    // On purpose, it is read.
    handle.reopen().unwrap();
    assert_eq!(get("key-1").as_deref(), Some("one-1"));
}

/// A local dataset whose manifest lists a shard on a server: refused at
/// open, before any request; with that server allowed, its shard is read
/// from it, and an option that only datasets take is refused for a store.
#[test]
fn a_local_dataset_reaches_a_server_only_where_allowed() {
    let nginx = support::Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let manifest = build(dir.path(), 200, 2, "v");
    let moved = &manifest.shards[1].file;
    nginx.publish(moved, &std::fs::read(dir.path().join(moved)).unwrap());
    std::fs::remove_file(dir.path().join(moved)).unwrap();
    let mut edited = manifest.clone();
    edited.shards[1].file = nginx.url(&format!("/files/{moved}"));
    std::fs::write(dir.path().join(MANIFEST_NAME), edited.to_json()).unwrap();

    let text = refusal(dir.path(), "the manifest is a local file");
    assert!(
        text.contains("allow_origins") && text.contains("shard 1 of 2"),
        "{text}"
    );
    assert!(nginx.log().is_empty(), "no request before the refusal");

    let allowed = hashfile_remote::RemoteOptions {
        allow_origins: vec![nginx.url("/files/")],
        ..Default::default()
    };
    let dataset = Dataset::open(dir.path().to_str().unwrap(), &allowed).unwrap();
    assert!(dataset.is_remote());
    let key = (0..200)
        .map(|i| format!("key-{i}"))
        .find(|k| dataset.shard_of(k.as_bytes()) == 1)
        .unwrap();
    assert_eq!(value(&dataset, &key), Some(format!("v-{}", &key[4..])));
    assert!(!nginx.log().is_empty());

    let store = dir.path().join(&manifest.shards[0].file);
    let error = hashfile_runtime::Table::open(store.to_str().unwrap(), &allowed).unwrap_err();
    assert!(error.to_string().contains("is for datasets"), "{error}");
}

/// A manifest served by one server that lists a shard on another: refused
/// when opened, before any request reaches the other; allowed by name, the
/// shard is read without the headers given for the manifest's server.
#[test]
fn a_remote_manifest_sends_the_callers_headers_only_to_its_own_origin() {
    let home = support::Nginx::start();
    let elsewhere = support::Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let manifest = build(dir.path(), 200, 2, "v");
    let mut edited = manifest.clone();
    for shard in &manifest.shards {
        let bytes = std::fs::read(dir.path().join(&shard.file)).unwrap();
        home.publish(&shard.file, &bytes);
        elsewhere.publish(&shard.file, &bytes);
    }
    edited.shards[1].file = elsewhere.url(&format!("/files/{}", manifest.shards[1].file));
    home.publish(MANIFEST_NAME, edited.to_json().as_bytes());
    let url = home.url(&format!("/files/{MANIFEST_NAME}"));
    let with_token = |allow: Vec<String>| hashfile_remote::RemoteOptions {
        headers: vec![("Authorization".into(), "Bearer let-me-in".into())],
        allow_origins: allow,
        ..Default::default()
    };

    let error = Dataset::open(&url, &with_token(vec![])).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("not under the manifest's own place"),
        "{text}"
    );
    assert!(
        elsewhere.log().is_empty(),
        "no request reached the other server"
    );

    let dataset = Dataset::open(&url, &with_token(vec![elsewhere.url("/")])).unwrap();
    for i in 0..200 {
        let key = format!("key-{i}");
        assert_eq!(value(&dataset, &key), Some(format!("v-{i}")));
    }
    let sent = |server: &support::Nginx| {
        server
            .authorizations()
            .into_iter()
            .map(|(_, auth)| auth)
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(sent(&home), ["Bearer let-me-in".to_owned()].into());
    assert_eq!(
        sent(&elsewhere),
        [String::new()].into(),
        "read without the caller's headers"
    );
}

/// What a dataset build killed with SIGKILL leaves, its shards' and its
/// manifest's temporary files (`.NAME.hashfile-PID-START-N.tmp`), the
/// next build into the directory removes; files of other names stay.
#[test]
fn a_dataset_build_removes_what_a_killed_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let pid = dead.id();
    dead.wait().unwrap();
    let left = [
        format!(".20261128T050000Z-0badcafe-00000-of-00002.hf.hashfile-{pid}-1-0.tmp"),
        format!(".20261128T050000Z-0badcafe-00001-of-00002.hf.hashfile-{pid}-1-0.tmp"),
        format!(".{MANIFEST_NAME}.hashfile-{pid}-1-0.tmp"),
    ];
    let others = [".notes.tmp", ".store.hf.123.0.tmp"];
    for name in left.iter().map(String::as_str).chain(others) {
        std::fs::write(dir.path().join(name), b"left").unwrap();
    }
    let manifest = build(dir.path(), 100, 2, "next");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = manifest.shards.iter().map(|s| s.file.clone()).collect();
    expected.extend(others.iter().map(|s| s.to_string()));
    expected.push(MANIFEST_NAME.to_string());
    expected.push(format!("hashfile-dataset.{}.json", manifest.generation));
    expected.push("hashfile-dataset.history.json".to_string());
    expected.sort();
    assert_eq!(names, expected);
}

/// A manifest forged with a sequence far ahead of the clock (u64::MAX)
/// orders nothing: a reader does not move to it, a reader that opened it
/// moves to the next publish, and that publish's sequence is the time, not
/// one past the forged one.
#[test]
fn a_sequence_far_ahead_of_the_clock_orders_nothing() {
    use hashfile_runtime::{OpenOptions, Refresh};
    let dir = tempfile::tempdir().unwrap();
    let two = build(dir.path(), 100, 2, "two");
    let forge = |manifest: &Manifest| {
        let mut forged = manifest.clone();
        forged.sequence = u64::MAX;
        let temp = dir.path().join(".forged");
        std::fs::write(&temp, forged.to_json()).unwrap();
        std::fs::rename(&temp, dir.path().join(MANIFEST_NAME)).unwrap();
    };
    let every = || OpenOptions {
        refresh: Refresh::Every(std::time::Duration::ZERO),
        ..OpenOptions::default()
    };
    let at = dir.path().to_str().unwrap().to_owned();
    let on_two = hashfile_runtime::open(&at, every()).unwrap();
    // The same shards under a forged sequence: the reader on two stays.
    let mut renamed = two.clone();
    renamed.generation = "forged".into();
    forge(&renamed);
    on_two.generation();
    assert_eq!(on_two.generation_now(), 0);
    let why = on_two.refresh_error().expect("reported");
    assert!(why.contains("more than a day ahead"), "{why}");

    let on_forged = hashfile_runtime::open(&at, every()).unwrap();
    let three = build(dir.path(), 100, 2, "three");
    assert!(three.sequence < u64::MAX / 2, "{}", three.sequence);
    for handle in [&on_two, &on_forged] {
        handle.generation();
        let value = handle
            .read(|t| Ok(t.get(b"key-1")?.map(|r| r.value().to_vec())))
            .unwrap();
        assert_eq!(value.as_deref(), Some(&b"three-1"[..]));
    }
}
