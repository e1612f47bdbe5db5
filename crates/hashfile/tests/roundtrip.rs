//! Builds and reads back, over every kind of byte source (`support`).
use hashfile::{BuildOptions, Builder, Error, Reader, ValueKind};
use proptest::prelude::*;

mod support;
use support::every_source;

fn key(i: u64) -> Vec<u8> {
    format!("key-{i}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value {}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).into_bytes()
}

fn build_bytes(n: u64) -> Vec<u8> {
    build_with(n, BuildOptions::default())
}

fn build(n: u64) -> Reader<Vec<u8>> {
    Reader::new(build_bytes(n)).unwrap()
}

#[test]
fn round_trips_at_several_sizes() {
    for n in [0u64, 1, 2, 1_000, 100_000, 1_000_000] {
        let bytes = build_bytes(n);
        // Every source at the sizes where short reads are cheap; memory
        // (the mapped case) at every size.
        let stores: Vec<_> = if n <= 100_000 {
            every_source(&bytes).collect()
        } else {
            vec![("memory", support::open(&bytes, "memory").unwrap())]
        };
        for (source, store) in stores {
            assert_eq!(store.len(), n);
            assert_finds_its_keys_and_no_other(&store, n, source);
            // Iteration gives the records in insertion order.
            let mut count = 0;
            for (i, record) in store.iter().enumerate() {
                assert_eq!(record.unwrap().key(), key(i as u64), "{source}");
                count += 1;
            }
            assert_eq!(count, n);
            store.verify().unwrap_or_else(|e| panic!("{source}: {e}"));
        }
        let store = Reader::new(bytes).unwrap();
        // Under 3 bits per key for large stores. A small one pays more: a
        // block of 128 pilots is as wide as its largest pilot, and the last
        // buckets placed in a small table need large pilots (at 1,000 keys,
        // about 3.9 bits per key, under 500 bytes in all).
        let limit = match n {
            0..1_000 => continue,
            1_000..100_000 => 4.5,
            _ => 3.0,
        };
        let info = store.info();
        assert!(
            info.mphf_bits_per_key < limit,
            "mphf {} bits/key at n={n}",
            info.mphf_bits_per_key
        );
    }
}

fn build_with(n: u64, options: BuildOptions) -> Vec<u8> {
    let mut b = Builder::new(options).unwrap();
    for i in 0..n {
        b.insert(&key(i), &value(i));
    }
    b.to_bytes().unwrap()
}

/// Every key of `build_with(n, ..)` has its value in `store`, read through
/// `source`, and the 1,000 keys after them are absent.
fn assert_finds_its_keys_and_no_other<S: hashfile::read::Source>(
    store: &Reader<S>,
    n: u64,
    source: &str,
) {
    for i in 0..n {
        assert_eq!(
            store.get(&key(i)).unwrap().unwrap().value(),
            value(i),
            "{source}: n={n} i={i}"
        );
    }
    for i in n..n + 1_000 {
        assert_eq!(
            store.get(&key(i)).unwrap(),
            None,
            "{source}: absent key {i} at n={n}"
        );
    }
}

/// The compact index (docs/FORMAT.md, "The compact index") in one part
/// and in many, over every source: every key found, absent keys absent,
/// `verify` clean, a function under 2.2 bits per key at its defaults, and
/// the same bytes from an in-memory and a streaming build.
#[test]
fn compact_stores_round_trip() {
    use hashfile::format::{REQUIRED_COMPACT_INDEX, REQUIRED_PARTS};
    for (n, keys_per_part, parts) in [
        (1u64, hashfile::DEFAULT_KEYS_PER_PART, 1u64),
        (2, 1, 2),
        (7, 2, 4),
        (5_000, 1_024, 5),
        (50_000, 4_096, 13),
        (300_000, hashfile::DEFAULT_KEYS_PER_PART, 3),
    ] {
        let options = BuildOptions {
            keys_per_part,
            ..BuildOptions::compact()
        };
        let bytes = build_with(n, options.clone());
        for (source, store) in every_source(&bytes) {
            let header = store.header();
            assert_eq!(header.geometry.part_count, parts, "n={n}");
            let flags = REQUIRED_COMPACT_INDEX | if parts > 1 { REQUIRED_PARTS } else { 0 };
            assert_eq!(header.required_flags, flags, "n={n}");
            assert_finds_its_keys_and_no_other(&store, n, source);
            let keys: Vec<Vec<u8>> = (0..n + 100).map(key).collect();
            let found = store.get_many(&keys).unwrap();
            for (i, record) in found.iter().enumerate() {
                assert_eq!(
                    record.as_ref().map(|r| r.value().to_vec()),
                    (i < n as usize).then(|| value(i as u64)),
                    "{source}: get_many, n={n} i={i}"
                );
            }
            store.verify().unwrap_or_else(|e| panic!("{source}: {e}"));
        }
        if keys_per_part == hashfile::DEFAULT_KEYS_PER_PART && n >= 100_000 {
            let info = Reader::new(bytes.clone()).unwrap().info();
            assert!(
                info.mphf_bits_per_key < 2.2,
                "{} bits/key at n={n}",
                info.mphf_bits_per_key
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.hf");
        let mut streaming = Builder::streaming(options, &path).unwrap();
        for i in 0..n {
            streaming.insert(&key(i), &value(i));
        }
        streaming.write_file(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "n={n}");
    }
    // Parts too small for their buckets: the option to change is named.
    let mut b = Builder::new(BuildOptions {
        keys_per_part: 64,
        ..BuildOptions::compact()
    })
    .unwrap();
    for i in 0..1_000 {
        b.insert(&key(i), &value(i));
    }
    match b.to_bytes() {
        Err(hashfile::Error::InvalidOption {
            name: "keys_per_bucket",
            reason,
        }) => {
            assert!(reason.contains("raise keys_per_part"), "{reason}")
        }
        other => panic!(
            "expected keys_per_bucket to be named, got {:?}",
            other.map(|_| ())
        ),
    }
    // The empty store.
    let bytes = build_with(0, BuildOptions::compact());
    let store = Reader::new(bytes).unwrap();
    assert_eq!(store.get(b"k").unwrap(), None);
    store.verify().unwrap();
}

#[test]
fn partitioned_stores_round_trip() {
    use hashfile::format::REQUIRED_PARTS;
    for (n, keys_per_part, parts) in [
        (2u64, 1u64, 2u64),
        (1_000, 64, 16),
        (50_000, 4_096, 13),
        (300_000, hashfile::DEFAULT_KEYS_PER_PART, 3),
    ] {
        let bytes = build_with(
            n,
            BuildOptions {
                keys_per_part,
                ..Default::default()
            },
        );
        for (source, store) in every_source(&bytes) {
            let header = store.header();
            assert_eq!(header.geometry.part_count, parts, "n={n}");
            assert_eq!(header.required_flags, REQUIRED_PARTS, "n={n}");
            assert_finds_its_keys_and_no_other(&store, n, source);
            store.verify().unwrap_or_else(|e| panic!("{source}: {e}"));
        }
        let store = Reader::new(bytes).unwrap();
        // Parts of the default size cost little: the slots every part
        // gets for the largest one add about 0.1 bits/key of remap.
        if keys_per_part == hashfile::DEFAULT_KEYS_PER_PART {
            let info = store.info();
            assert!(
                info.mphf_bits_per_key < 3.0,
                "mphf {} bits/key at n={n}",
                info.mphf_bits_per_key
            );
        }
    }
}

#[test]
fn a_store_of_one_part_keeps_the_unpartitioned_layout() {
    // Up to keys_per_part keys: one part, no flag, and the same bytes as a
    // build that could never partition.
    let one = build_with(
        1_000,
        BuildOptions {
            keys_per_part: 1_000,
            ..Default::default()
        },
    );
    assert_eq!(
        one,
        build_with(
            1_000,
            BuildOptions {
                keys_per_part: u64::MAX,
                ..Default::default()
            }
        )
    );
    let store = Reader::new(one).unwrap();
    assert_eq!(
        (
            store.header().required_flags,
            store.header().geometry.part_count
        ),
        (0, 1)
    );
    assert_eq!(store.source()[120..128], [0; 8]);
    let parted = Reader::new(build_with(
        1_001,
        BuildOptions {
            keys_per_part: 1_000,
            ..Default::default()
        },
    ))
    .unwrap();
    assert_eq!(parted.header().geometry.part_count, 2);
}

#[test]
fn output_does_not_depend_on_the_thread_count() {
    let build_on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            build_with(
                200_000,
                BuildOptions {
                    keys_per_part: 8_192,
                    ..Default::default()
                },
            )
        })
    };
    let one = build_on(1);
    assert_eq!(one, build_on(2));
    assert_eq!(one, build_on(5));
}

#[test]
fn a_streaming_build_writes_what_an_in_memory_build_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    for (n, options) in [
        (0u64, BuildOptions::default()),
        (
            3_000,
            BuildOptions {
                hash_seed: 7,
                ..Default::default()
            },
        ),
        (
            20_000,
            BuildOptions {
                keys_per_part: 4_096,
                ..Default::default()
            },
        ),
    ] {
        let mut memory = Builder::new(options.clone()).unwrap();
        let mut streaming = Builder::streaming(options.clone(), &path).unwrap();
        // Batches that hash their keys as they fill, and plain ones.
        let mut batch = if n == 3_000 {
            hashfile::Batch::new()
        } else {
            streaming.new_batch()
        };
        for i in 0..n {
            memory.insert(&key(i), &value(i));
            // Half one at a time, half in batches.
            if i % 2 == 0 {
                streaming.insert(&key(i), &value(i));
            } else {
                batch.insert_record(hashfile::Record {
                    key: &key(i),
                    key_utf8: false,
                    value: &value(i),
                    kind: ValueKind::Binary,
                });
                streaming.append(&batch);
                batch.clear();
            }
        }
        let len = streaming.write_file(&path).unwrap();
        let written = std::fs::read(&path).unwrap();
        assert_eq!(written.len() as u64, len);
        assert_eq!(written, memory.to_bytes().unwrap(), "n={n}");
        // Writing again publishes a new file, never writes into this one.
        let before = std::fs::metadata(&path).unwrap();
        assert_eq!(streaming.write_file(&path).unwrap(), len);
        assert_eq!(std::fs::read(&path).unwrap(), written);
        use std::os::unix::fs::MetadataExt;
        assert_ne!(
            std::fs::metadata(&path).unwrap().ino(),
            before.ino(),
            "a new file was renamed into place"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "the temporary file was renamed"
        );
    }
    // Dropping duplicates moves the records to memory; the bytes agree.
    let options = BuildOptions {
        on_duplicate: hashfile::OnDuplicate::Last,
        ..Default::default()
    };
    let mut memory = Builder::new(options.clone()).unwrap();
    let mut streaming = Builder::streaming(options, &path).unwrap();
    for i in 0..1_000 {
        memory.insert(&key(i % 700), &value(i));
        streaming.insert(&key(i % 700), &value(i));
    }
    streaming.write_file(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), memory.to_bytes().unwrap());
    // A streaming build dropped before it is written leaves nothing behind.
    let other = dir.path().join("other.hf");
    let mut dropped = Builder::streaming(BuildOptions::default(), &other).unwrap();
    dropped.insert(b"k", b"v");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "the temporary file exists while building"
    );
    drop(dropped);
    assert!(!other.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // A destination in a missing directory fails at once, naming it.
    let err = Builder::streaming(BuildOptions::default(), &dir.path().join("no/such.hf"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no/such.hf"), "{err}");
}

#[test]
fn empty_store_is_valid() {
    for (source, store) in every_source(&build_bytes(0)) {
        assert!(store.is_empty(), "{source}");
        assert_eq!(store.get(b"").unwrap(), None, "{source}");
        assert_eq!(store.iter().count(), 0, "{source}");
        store.verify().unwrap();
    }
}

#[test]
fn same_input_gives_same_bytes() {
    let a = build(5_000);
    let b = build(5_000);
    assert_eq!(a.source(), b.source());
}

#[test]
fn duplicate_key_is_named() {
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    b.insert(b"one", b"1");
    b.insert(b"dup\xff", b"2");
    b.insert(b"dup\xff", b"3");
    match b.to_bytes() {
        Err(Error::DuplicateKey { key, .. }) => assert_eq!(key, b"dup\xff"),
        other => panic!("expected DuplicateKey, got {other:?}"),
    }
    let message = b.to_bytes().unwrap_err().to_string();
    assert_eq!(message, r#"duplicate key "dup\xFF""#);
}

#[test]
fn invalid_options_are_rejected() {
    for (options, name) in [
        (
            BuildOptions {
                keys_per_bucket: 0.5,
                ..Default::default()
            },
            "keys_per_bucket",
        ),
        (
            BuildOptions {
                load_factor: 1.5,
                ..Default::default()
            },
            "load_factor",
        ),
        (
            BuildOptions {
                load_factor: f64::NAN,
                ..Default::default()
            },
            "load_factor",
        ),
        (
            BuildOptions {
                seed_block_len: 64,
                ..Default::default()
            },
            "seed_block_len",
        ),
        (
            BuildOptions {
                keys_per_part: 0,
                ..Default::default()
            },
            "keys_per_part",
        ),
        (
            BuildOptions {
                dense_bucket_fraction: 0.0,
                ..Default::default()
            },
            "dense_bucket_fraction",
        ),
    ] {
        match Builder::new(options) {
            Err(Error::InvalidOption { name: got, .. }) => assert_eq!(got, name),
            other => panic!("expected InvalidOption {name}, got {other:?}"),
        }
    }
}

#[test]
fn every_block_layout_and_option_grid_round_trips() {
    for seed_block_len in [32, 128, 256] {
        for (keys_per_bucket, load_factor, dense) in [
            (1.0, 1.0, 0.0),
            (4.0, 0.99, 0.6),
            (10.0, 0.5, 1.0),
            (3.0, 1.0, 0.6),
        ] {
            let options = BuildOptions {
                keys_per_bucket,
                load_factor,
                dense_key_fraction: dense,
                dense_bucket_fraction: if dense == 0.6 { 0.3 } else { dense },
                seed_block_len,
                ..Default::default()
            };
            let bytes = build_with(3_000, options.clone());
            for (source, store) in every_source(&bytes) {
                for i in 0..3_000 {
                    assert_eq!(
                        store.get(&key(i)).unwrap().unwrap().value(),
                        value(i),
                        "{source}: {options:?}"
                    );
                }
                store.verify().unwrap_or_else(|e| panic!("{source}: {e}"));
            }
        }
    }
}

#[test]
fn value_kinds_and_key_encodings_are_kept() {
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    b.insert_record(hashfile::Record {
        key: "ключ".as_bytes(),
        key_utf8: true,
        value: "значение".as_bytes(),
        kind: ValueKind::Utf8,
    });
    b.insert_record(hashfile::Record {
        key: b"\x00\xff",
        key_utf8: false,
        value: b"\x01\x02",
        kind: ValueKind::Binary,
    });
    b.insert_record(hashfile::Record {
        key: b"ascii",
        key_utf8: false,
        value: b"plain",
        kind: ValueKind::Ascii,
    });
    b.insert_record(hashfile::Record {
        key: b"",
        key_utf8: false,
        value: b"",
        kind: ValueKind::Binary,
    });
    let bytes = b.to_bytes().unwrap();
    for (source, store) in every_source(&bytes) {
        let r = store.get("ключ".as_bytes()).unwrap().unwrap();
        assert_eq!(
            (r.key_utf8(), r.kind(), r.value()),
            (true, ValueKind::Utf8, "значение".as_bytes()),
            "{source}"
        );
        let r = store.get(b"\x00\xff").unwrap().unwrap();
        assert_eq!(
            (r.key_utf8(), r.kind(), r.value()),
            (false, ValueKind::Binary, &b"\x01\x02"[..]),
            "{source}"
        );
        assert_eq!(
            store.get(b"ascii").unwrap().unwrap().kind(),
            ValueKind::Ascii,
            "{source}"
        );
        assert_eq!(store.get(b"").unwrap().unwrap().value(), b"", "{source}");
    }
}

#[test]
fn write_file_publishes_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.hf");
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    b.insert(b"a", b"1");
    let len = b.write_file(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
    let old = Reader::open(&path).unwrap();

    // A failing build leaves the old file and no temporary file.
    let mut dup = Builder::new(BuildOptions::default()).unwrap();
    dup.insert(b"x", b"1");
    dup.insert(b"x", b"2");
    assert!(matches!(
        dup.write_file(&path),
        Err(Error::DuplicateKey { .. })
    ));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("store.hf")]);

    // Replacing it leaves open readers on the old bytes.
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    b.insert(b"a", b"2");
    b.write_file(&path).unwrap();
    assert_eq!(old.get(b"a").unwrap().unwrap().value(), b"1");
    assert_eq!(
        Reader::open(&path)
            .unwrap()
            .get(b"a")
            .unwrap()
            .unwrap()
            .value(),
        b"2"
    );
}

#[test]
fn missing_file_is_an_io_error_naming_the_path() {
    let err = Reader::open("/nonexistent/dir/x.hf").unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    );
    assert!(
        err.to_string().starts_with("/nonexistent/dir/x.hf: "),
        "{err}"
    );
}

/// 31 keys on which the default options ran out of the work a small part
/// may take with the first hash seed (found by `random_maps_round_trip` in
/// CI): a part that small gives up on its seed, not on its options, and
/// the build goes on with the next seed.
#[test]
fn a_small_store_unlucky_with_its_hash_seed_builds_with_the_next() {
    let keys: Vec<Vec<u8>> = [
        "e2f9ee5026e11e666f92792f41480b64464752",
        "802b113e0b54570b22abd45fe7f68c64143b",
        "69e400ffa221f30f611396de51fc2b19c210b68ee2",
        "4a28220b06fe",
        "c7fcf5757120796e915eaab6f3516fc3259ffe17",
        "22cc41eb76ee9d2a00a90f20e68f1b90357352e5df",
        "fef80c2063eca2c0717dabe61b634d54",
        "1a9fb9fca5791701984ab379d1178a7f996b",
        "18a378ce8e6ce02e25dbb7a860bfe5a2ebc73b0e0d",
        "33d790c31495b032ed0f",
        "0917b642165b265f44bfffb8bbd5",
        "44582e",
        "1e",
        "0ee03f74de13e7c4049e6042",
        "759ad53cf90134",
        "1674",
        "32712b7117",
        "f35e",
        "855ee499fd4aa9f74ee3fc3759e124a54ddb442ef0a16d",
        "4b0034673c804fad2f79cf73abed3d8e464e29c37205",
        "6e6e8bb621",
        "9524af5951945f",
        "95b006a10b863ab4586c8234ad1b43cefc",
        "854671aa680d899d0e7fff20b1a340aec032253c6052",
        "9fc537",
        "ffc7f9a819",
        "a5e909df9e359168f7c9e091b838e242a534653cbaf2",
        "dc46c01aaba6d761ad70",
        "dbe40724e03c1ed6c9a31f",
        "92fc5f1d67701c8ce0302b0cc5a7c3",
        "",
    ]
    .iter()
    .map(|h| {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    })
    .collect();
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    for k in &keys {
        b.insert(k, k);
    }
    let store = Reader::new(b.to_bytes().unwrap()).unwrap();
    store.verify().unwrap();
    for k in &keys {
        assert_eq!(store.get(k).unwrap().unwrap().value(), k.as_slice());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_maps_round_trip(entries in prop::collection::hash_map(prop::collection::vec(any::<u8>(), 0..24), prop::collection::vec(any::<u8>(), 0..40), 0..400),
                              probes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..24), 0..50)) {
        let mut b = Builder::new(BuildOptions::default()).unwrap();
        let entries: Vec<_> = entries.into_iter().collect();
        for (k, v) in &entries {
            b.insert(k, v);
        }
        let bytes = b.to_bytes().unwrap();
        for (source, store) in every_source(&bytes) {
            prop_assert_eq!(store.len(), entries.len() as u64);
            for (k, v) in &entries {
                prop_assert_eq!(store.get(k).unwrap().map(|r| r.value().to_vec()), Some(v.clone()), "{}", source);
            }
            let map: std::collections::HashMap<_, _> = entries.iter().cloned().collect();
            for p in &probes {
                prop_assert_eq!(store.get(p).unwrap().map(|r| r.value().to_vec()), map.get(p).cloned(), "{}", source);
            }
            let listed: Vec<_> = store.iter().map(|r| { let r = r.unwrap(); (r.key().to_vec(), r.value().to_vec()) }).collect();
            prop_assert_eq!(&listed, &entries);
            store.verify().unwrap();
        }
    }
}
