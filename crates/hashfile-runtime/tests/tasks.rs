//! Datasets written by many processes (`dataset::ShardWriter`,
//! `publish_shards`): what a Spark job's tasks and driver do, here in one
//! process.

use std::num::NonZeroU32;

use hashfile::dataset::shard_of;
use hashfile::import::{ImportOptions, InputFormat};
use hashfile::{BuildOptions, Record};
use hashfile_remote::RemoteOptions;
use hashfile_runtime::dataset::{
    discard_generation, new_generation, publish_shards, Dataset, DatasetBuilder, PublishOptions,
    ShardWriter,
};

const SHARDS: u32 = 4;

/// Each shard's keys, sorted, as a task receives them.
fn routed(keys: &[String]) -> Vec<Vec<&str>> {
    let mut shards = vec![Vec::new(); SHARDS as usize];
    for key in keys {
        shards[shard_of(key.as_bytes(), NonZeroU32::new(SHARDS).unwrap()) as usize]
            .push(key.as_str());
    }
    for shard in &mut shards {
        shard.sort();
    }
    shards
}

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("key-{i:06}")).collect()
}

/// A writer of shard `shard` with the default options.
fn shard_writer(dir: &str, generation: &str, shard: u32) -> ShardWriter {
    ShardWriter::create(
        dir,
        generation,
        shard,
        SHARDS,
        BuildOptions::default(),
        &RemoteOptions::default(),
    )
    .unwrap()
}

fn write_shard(
    dir: &str,
    generation: &str,
    shard: u32,
    keys: &[&str],
) -> hashfile_runtime::dataset::manifest::ShardEntry {
    let mut writer = shard_writer(dir, generation, shard);
    for key in keys {
        writer
            .insert_record(Record::text(key, &format!("v:{key}")))
            .unwrap();
    }
    writer.finish().unwrap()
}

/// A job of a new generation that writes `shards` at `at` and publishes
/// them; its generation id.
fn publish_job(at: &str, shards: &[Vec<&str>]) -> String {
    let generation = new_generation();
    let reports = (0..SHARDS)
        .map(|i| write_shard(at, &generation, i, &shards[i as usize]))
        .collect();
    publish_shards(
        at,
        &generation,
        SHARDS,
        reports,
        &RemoteOptions::default(),
        &PublishOptions::default(),
    )
    .unwrap();
    generation
}

#[test]
fn shards_written_apart_publish_as_one_dataset_byte_identical_to_a_single_build() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("ds").display().to_string();
    let keys = keys(5000);
    let shards = routed(&keys);
    let generation = new_generation();
    // Reports arrive in any order.
    let reports: Vec<_> = (0..SHARDS)
        .rev()
        .map(|i| write_shard(&at, &generation, i, &shards[i as usize]))
        .collect();
    let manifest = publish_shards(
        &at,
        &generation,
        SHARDS,
        reports,
        &RemoteOptions::default(),
        &PublishOptions::default(),
    )
    .unwrap();
    assert_eq!(manifest.entries, 5000);
    let dataset = Dataset::open(&at, &RemoteOptions::default()).unwrap();
    for key in &keys {
        let record = dataset.get(key.as_bytes()).unwrap().expect(key);
        assert_eq!(record.value(), format!("v:{key}").as_bytes());
    }
    // One process building the same sorted entries writes the same bytes.
    let single = dir.path().join("single");
    let mut builder = DatasetBuilder::streaming(SHARDS, BuildOptions::default(), &single).unwrap();
    let mut sorted = keys.clone();
    sorted.sort();
    for key in &sorted {
        builder.insert_record(Record::text(key, &format!("v:{key}")));
    }
    let other = builder.write(&single).unwrap();
    for (a, b) in manifest.shards.iter().zip(&other.shards) {
        let left = std::fs::read(format!("{at}/{}", a.file)).unwrap();
        let right = std::fs::read(single.join(&b.file)).unwrap();
        assert!(left == right, "{} and {} differ", a.file, b.file);
        assert_eq!(a.checksum, b.checksum);
    }
}

#[test]
fn a_shard_a_failed_attempt_left_is_caught_before_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().display().to_string();
    let keys = keys(2000);
    let shards = routed(&keys);
    let first = publish_job(&at, &shards);

    // The second job: shard 2's report is of a whole shard, but the file
    // under its name is what an attempt that saw half the rows wrote after.
    let second = new_generation();
    let mut reports: Vec<_> = (0..SHARDS)
        .map(|i| write_shard(&at, &second, i, &shards[i as usize]))
        .collect();
    let half = &shards[2][..shards[2].len() / 2];
    write_shard(&at, &second, 2, half);
    let error = publish_shards(
        &at,
        &second,
        SHARDS,
        reports.clone(),
        &RemoteOptions::default(),
        &PublishOptions::default(),
    )
    .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, hashfile::Error::Dataset { .. }),
        "{error:?}"
    );
    assert!(
        message.contains("shard 2 of 4: its task reported")
            && message.contains(&format!("{} entries", half.len())),
        "{message}"
    );
    // Readers still read the first generation, whole.
    let dataset = Dataset::open(&at, &RemoteOptions::default()).unwrap();
    assert_eq!(dataset.manifest().generation, first);
    assert_eq!(dataset.len(), 2000);

    // A shard missing from the reports, or reported twice.
    let missing = publish_shards(
        &at,
        &second,
        SHARDS,
        reports[..3].to_vec(),
        &RemoteOptions::default(),
        &PublishOptions::default(),
    )
    .unwrap_err();
    assert!(
        missing.to_string().contains("shard 3") && missing.to_string().contains("was not reported"),
        "{missing}"
    );
    reports[3] = reports[1].clone();
    let twice = publish_shards(
        &at,
        &second,
        SHARDS,
        reports,
        &RemoteOptions::default(),
        &PublishOptions::default(),
    )
    .unwrap_err();
    assert!(twice.to_string().contains("reported twice"), "{twice}");

    // The failed job's files go; the published dataset stays.
    discard_generation(&at, &second, &RemoteOptions::default()).unwrap();
    let left: Vec<String> = std::fs::read_dir(&at)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(left.iter().all(|name| !name.contains(&second)), "{left:?}");
    assert_eq!(
        Dataset::open(&at, &RemoteOptions::default()).unwrap().len(),
        2000
    );
}

#[test]
fn a_shard_writer_refuses_what_would_make_attempts_differ() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().display().to_string();
    let generation = new_generation();
    let keys = keys(500);
    let shards = routed(&keys);

    let mut writer = shard_writer(&at, &generation, 0);
    let misrouted = writer
        .insert_record(Record::text(shards[1][0], "x"))
        .unwrap_err();
    assert!(
        misrouted
            .to_string()
            .contains("routes to shard 1, not to this one"),
        "{misrouted}"
    );
    writer
        .insert_record(Record::text(shards[0][1], "x"))
        .unwrap();
    let unsorted = writer
        .insert_record(Record::text(shards[0][0], "x"))
        .unwrap_err();
    assert!(
        unsorted.to_string().contains("must come sorted by key"),
        "{unsorted}"
    );

    let options = BuildOptions {
        on_duplicate: hashfile::OnDuplicate::Last,
        ..BuildOptions::default()
    };
    let Err(error) = ShardWriter::create(
        &at,
        &generation,
        0,
        SHARDS,
        options,
        &RemoteOptions::default(),
    ) else {
        panic!("on_duplicate: last accepted")
    };
    assert!(
        matches!(
            error,
            hashfile::Error::InvalidOption {
                name: "on_duplicate",
                ..
            }
        ),
        "{error:?}"
    );

    // Only an id new_generation made: a job's files are found by it.
    for made_up in ["mine", "20261124T143910Z-1F0C93AB", "../x"] {
        let Err(error) = ShardWriter::create(
            &at,
            made_up,
            0,
            SHARDS,
            BuildOptions::default(),
            &RemoteOptions::default(),
        ) else {
            panic!("generation {made_up} accepted")
        };
        assert!(
            error.to_string().contains("is not one new_generation made"),
            "{error}"
        );
        let error = publish_shards(
            &at,
            made_up,
            SHARDS,
            Vec::new(),
            &RemoteOptions::default(),
            &PublishOptions::default(),
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("is not one new_generation made"),
            "{error}"
        );
    }

    // JSON Lines: typed values, and a duplicate named by the build.
    let mut writer = shard_writer(&at, &generation, 0);
    let mut import = ImportOptions::new(InputFormat::JsonLines);
    import.key_field = "k".into();
    import.value_field = "v".into();
    let key = shards[0][0];
    let lines = format!(
        "{{\"k\":\"{key}\",\"v\":{{\"n\":1,\"a\":[true,null]}}}}\n{{\"k\":\"{key}\",\"v\":2}}\n"
    );
    assert_eq!(
        writer
            .add_json_lines(lines.as_bytes(), "rows", &import)
            .unwrap(),
        2
    );
    let duplicate = writer.finish().unwrap_err();
    assert!(
        matches!(duplicate, hashfile::Error::DuplicateKey { .. }),
        "{duplicate:?}"
    );
    assert!(duplicate.to_string().contains(key), "{duplicate}");
}

/// Compressed values through a Spark-like job: each task's shard is
/// compressed in its own file (a streaming build rewritten in place), the
/// driver's checks pass, every value reads back, and the shards are the
/// bytes one process building the same entries writes.
#[test]
fn shards_with_compressed_values_publish_and_match_a_single_build() {
    let options = BuildOptions {
        compression: hashfile::Compression::zstd(3),
        ..BuildOptions::default()
    };
    let value = |key: &str| {
        format!("{{\"sku\":\"{key}\",\"text\":\"a steel kettle for every kitchen, sku {key}\"}}")
    };
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("ds").display().to_string();
    let keys = keys(3000);
    let shards = routed(&keys);
    let generation = new_generation();
    let reports: Vec<_> = (0..SHARDS)
        .map(|i| {
            let mut writer = ShardWriter::create(
                &at,
                &generation,
                i,
                SHARDS,
                options.clone(),
                &RemoteOptions::default(),
            )
            .unwrap();
            for key in &shards[i as usize] {
                writer
                    .insert_record(Record::text(key, &value(key)))
                    .unwrap();
            }
            writer.finish().unwrap()
        })
        .collect();
    let manifest = publish_shards(
        &at,
        &generation,
        SHARDS,
        reports,
        &RemoteOptions::default(),
        &PublishOptions::default(),
    )
    .unwrap();
    let dataset = Dataset::open(&at, &RemoteOptions::default()).unwrap();
    dataset.verify().unwrap();
    for key in &keys {
        let record = dataset.get(key.as_bytes()).unwrap().expect(key);
        assert_eq!(record.value(), value(key).as_bytes());
    }
    let single = dir.path().join("single");
    let mut builder = DatasetBuilder::streaming(SHARDS, options, &single).unwrap();
    let mut sorted = keys.clone();
    sorted.sort();
    for key in &sorted {
        builder.insert_record(Record::text(key, &value(key)));
    }
    let other = builder.write(&single).unwrap();
    for (a, b) in manifest.shards.iter().zip(&other.shards) {
        let left = std::fs::read(format!("{at}/{}", a.file)).unwrap();
        let store = hashfile::Reader::new(left.clone()).unwrap();
        assert!(store.header().has_compressed_values(), "{}", a.file);
        assert!(
            left == std::fs::read(single.join(&b.file)).unwrap(),
            "{} differs",
            a.file
        );
    }
}

#[path = "../../hashfile-remote/tests/support/mod.rs"]
mod support;

/// Publishing to S3 removes what the previous generation's record lists,
/// and nothing else: an object of the user's named like a shard stays.
#[test]
fn publishing_to_s3_removes_only_what_an_earlier_manifest_listed() {
    let Some(minio) = support::Minio::start_or_skip() else {
        return;
    };
    minio.make_bucket("data");
    let remote = minio.options();
    let at = "s3://data/ds";
    let mine = "ds/customers-00000-of-00001.hf";
    minio.put("data", mine, b"mine".to_vec());
    let keys = keys(200);
    let shards = routed(&keys);
    let publish = || {
        let generation = new_generation();
        let reports = (0..SHARDS)
            .map(|i| {
                let mut writer = ShardWriter::create(
                    at,
                    &generation,
                    i,
                    SHARDS,
                    BuildOptions::default(),
                    &remote,
                )
                .unwrap();
                for key in &shards[i as usize] {
                    writer.insert_record(Record::text(key, "v")).unwrap();
                }
                writer.finish().unwrap()
            })
            .collect();
        publish_shards(
            at,
            &generation,
            SHARDS,
            reports,
            &remote,
            &PublishOptions {
                keep: 2,
                retain: std::time::Duration::ZERO,
                ..PublishOptions::default()
            },
        )
        .unwrap();
        generation
    };
    let of = |generation: &str| {
        minio
            .keys("data", "ds")
            .iter()
            .filter(|k| k.starts_with(&format!("ds/{generation}")))
            .count()
    };
    let one = publish();
    let two = publish();
    assert_eq!((of(&one), of(&two)), (4, 4));
    let three = publish();
    assert_eq!((of(&one), of(&two), of(&three)), (0, 4, 4));
    let listed = minio.keys("data", "ds");
    assert!(listed.contains(&mine.to_owned()), "{listed:?}");
    assert!(
        listed.contains(&"ds/hashfile-dataset.previous.json".to_owned()),
        "{listed:?}"
    );
    assert!(
        !listed.contains(&format!("ds/hashfile-dataset.{one}.json")),
        "the first generation's record goes with it: {listed:?}"
    );
    let dataset = Dataset::open(&format!("{at}/hashfile-dataset.json"), &remote).unwrap();
    assert_eq!(dataset.manifest().generation, three);

    // The history, and a rollback, on S3 as on a disk.
    let history = hashfile_runtime::dataset::history(at, &remote).unwrap();
    assert_eq!(history.generations(), [three.as_str(), two.as_str()]);
    let back =
        hashfile_runtime::dataset::rollback(at, None, &PublishOptions::default(), &remote).unwrap();
    assert_eq!(back.generation, two);
    let dataset = Dataset::open(&format!("{at}/hashfile-dataset.json"), &remote).unwrap();
    assert_eq!(dataset.manifest().generation, two);
    assert_eq!(dataset.len(), 200);
    let pinned = hashfile_runtime::open(
        &format!("{at}/hashfile-dataset.json"),
        hashfile_runtime::OpenOptions {
            remote: remote.clone(),
            generation: Some(three.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(pinned.current().unwrap().len(), 200);
}

#[test]
fn publish_refuses_a_generation_id_that_is_not_a_name_and_leaves_the_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("ds").display().to_string();
    let keys = keys(100);
    let shards = routed(&keys);
    let first = new_generation();
    let reports: Vec<_> = (0..SHARDS)
        .map(|i| write_shard(&at, &first, i, &shards[i as usize]))
        .collect();
    publish_shards(
        &at,
        &first,
        SHARDS,
        reports.clone(),
        &RemoteOptions::default(),
        &PublishOptions::default(),
    )
    .unwrap();
    // A report list whose names follow a generation id that climbs out of
    // the directory: refused for the id, before any file is looked at.
    let hostile = format!("../other/{first}");
    let lying: Vec<_> = reports
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.file = format!("../other/{}", r.file);
            r
        })
        .collect();
    let error = publish_shards(
        &at,
        &hostile,
        SHARDS,
        lying,
        &RemoteOptions::default(),
        &PublishOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(error, hashfile::Error::Dataset { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("generation"), "{error}");
    assert_eq!(
        Dataset::open(&at, &RemoteOptions::default()).unwrap().len(),
        100
    );
}

#[test]
fn a_location_ending_as_the_manifests_name_is_not_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("mine-hashfile-dataset.json");
    let generation = new_generation();
    let writer = shard_writer(&at.display().to_string(), &generation, 0);
    let report = writer.finish().unwrap();
    // The shard went into the directory named, not into "mine-".
    assert!(at.join(&report.file).exists(), "{report:?}");
    assert!(!dir.path().join("mine-").exists());
}

/// A gate that refuses a job's publish removes the job's shards; the
/// dataset published stays as it was.
#[test]
fn a_gate_that_refuses_a_jobs_publish_removes_its_shards() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("ds").display().to_string();
    let all = keys(2000);
    let shards = routed(&all);
    let first = publish_job(&at, &shards);
    let before: Vec<_> = std::fs::read_dir(&at)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();

    let second = new_generation();
    let empty: Vec<Vec<&str>> = vec![Vec::new(); SHARDS as usize];
    let reports = (0..SHARDS)
        .map(|i| write_shard(&at, &second, i, &empty[i as usize]))
        .collect();
    let gated = PublishOptions {
        gates: hashfile_runtime::dataset::gates::Gates {
            refuse_empty: true,
            ..Default::default()
        },
        ..PublishOptions::default()
    };
    let refused = publish_shards(
        &at,
        &second,
        SHARDS,
        reports,
        &RemoteOptions::default(),
        &gated,
    )
    .unwrap_err();
    assert!(
        matches!(
            refused,
            hashfile::Error::PublishRefused {
                gate: "refuse_empty",
                ..
            }
        ),
        "{refused:?}"
    );
    let mut after: Vec<_> = std::fs::read_dir(&at)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let mut before = before;
    before.sort();
    after.sort();
    assert_eq!(before, after, "the refused job's shards are gone");
    let dataset = Dataset::open(&at, &RemoteOptions::default()).unwrap();
    assert_eq!(
        (dataset.manifest().generation.as_str(), dataset.len()),
        (first.as_str(), 2000)
    );
}
