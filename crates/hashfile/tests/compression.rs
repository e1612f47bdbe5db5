//! Compressed values (docs/FORMAT.md, "Compressed values"): every way of
//! reading gives back the values as they were added, builds are
//! deterministic, and damage is an error.
use hashfile::format::{self, SectionId};
use hashfile::value::Value;
use hashfile::{BuildOptions, Builder, Compression, Error, Reader, Record, ValueKind};

mod support;

fn zstd() -> BuildOptions {
    BuildOptions {
        compression: Compression::zstd(3),
        ..BuildOptions::default()
    }
}

/// A catalogue-like value: JSON text that repeats its field names and
/// draws its words from a small vocabulary, as product records do.
fn product(i: u64) -> String {
    const WORDS: [&str; 12] = [
        "steel", "garden", "compact", "blue", "kettle", "cordless", "oak", "travel", "kit",
        "premium", "lamp", "set",
    ];
    let word = |k: u64| WORDS[((i * 7 + k * 13) % WORDS.len() as u64) as usize];
    format!(
        "{{\"sku\":\"SKU-{i:07}\",\"name\":\"{} {} {}\",\"price\":{}.{:02},\"description\":\"A {} {} for every {} and {}.\"}}",
        word(1), word(2), word(3), i % 500, i % 100, word(4), word(5), word(6), word(7)
    )
}

/// `n` entries: products as UTF-8 strings, every fifth a typed map, every
/// seventh a value too short to compress, and one binary value.
fn entries(n: u64) -> Vec<(Vec<u8>, Value)> {
    (0..n)
        .map(|i| {
            let key = format!("product:{i}").into_bytes();
            let value = if i % 7 == 3 {
                Value::Str(format!("short {i}").into_bytes(), None)
            } else if i % 5 == 0 {
                Value::Map(vec![
                    (Value::Str(b"sku".to_vec(), None), Value::Int(i as i64)),
                    (
                        Value::Str(b"text".to_vec(), None),
                        Value::Str(product(i).into_bytes(), None),
                    ),
                ])
            } else if i == 1 {
                Value::Str(product(i).into_bytes(), Some("ASCII-8BIT".into()))
            } else {
                Value::Str(product(i).into_bytes(), None)
            };
            (key, value)
        })
        .collect()
}

fn build(options: BuildOptions, entries: &[(Vec<u8>, Value)]) -> Vec<u8> {
    let mut builder = Builder::new(options).unwrap();
    for (key, value) in entries {
        builder.insert_value(key, true, value).unwrap();
    }
    builder.to_bytes().unwrap()
}

/// Every entry reads back by `get`, `get_many` and in order by `iter`,
/// over every kind of source.
fn assert_reads_back(bytes: &[u8], entries: &[(Vec<u8>, Value)]) {
    for (source, store) in support::every_source(bytes) {
        store.verify().unwrap_or_else(|e| panic!("{source}: {e}"));
        for (key, value) in entries {
            let found = store.get(key).unwrap().expect("present");
            assert_eq!(&found.decode().unwrap(), value, "{source}");
        }
        let keys: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_slice()).collect();
        let many = store.get_many(&keys).unwrap();
        for ((_, value), found) in entries.iter().zip(many) {
            assert_eq!(&found.unwrap().decode().unwrap(), value, "{source}");
        }
        let listed: Vec<Value> = store.iter().map(|r| r.unwrap().decode().unwrap()).collect();
        let expected: Vec<Value> = entries.iter().map(|(_, v)| v.clone()).collect();
        assert_eq!(listed, expected, "{source}");
        assert!(store.get(b"product:none").unwrap().is_none());
    }
}

#[test]
fn compressed_values_read_back_everywhere_and_take_less_room() {
    let entries = entries(3_000);
    let raw = build(BuildOptions::default(), &entries);
    let compressed = build(zstd(), &entries);
    assert_reads_back(&compressed, &entries);
    let store = Reader::new(compressed.clone()).unwrap();
    let header = store.header();
    assert!(header.has_compressed_values() && header.has_dictionary());
    assert_ne!(
        header.required_flags & format::REQUIRED_COMPRESSED_VALUES,
        0
    );
    let summary = store.compression_stats().unwrap().unwrap();
    let stats = summary.stats;
    assert!(
        summary.dictionary_bytes > 1024 && summary.ratio() > 3.0,
        "{summary:?}"
    );
    // Every value but the short ones (3 in 7) is compressed.
    let short = (0..3_000).filter(|i| i % 7 == 3).count() as u64;
    assert_eq!(stats.values, 3_000 - short);
    assert_eq!(stats.level, 3);
    assert!(stats.stored_bytes * 3 < stats.decoded_bytes, "{stats:?}");
    assert!(
        compressed.len() * 2 < raw.len(),
        "{} against {}",
        compressed.len(),
        raw.len()
    );
    // Kinds come back as they went in.
    assert_eq!(
        store.get(b"product:1").unwrap().unwrap().kind(),
        ValueKind::Binary
    );
    assert_eq!(
        store.get(b"product:2").unwrap().unwrap().kind(),
        ValueKind::Utf8
    );
    assert_eq!(
        store.get(b"product:5").unwrap().unwrap().kind(),
        ValueKind::Typed
    );
}

#[test]
fn a_streaming_build_writes_the_bytes_a_build_in_memory_does() {
    let entries = entries(2_000);
    let in_memory = build(zstd(), &entries);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("streamed.hf");
    let mut streaming = Builder::streaming(zstd(), &path).unwrap();
    for (key, value) in &entries {
        streaming.insert_value(key, true, value).unwrap();
    }
    streaming.write_file(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), in_memory);
    // Nothing is left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // And so does one pool thread against several: the sample, the
    // dictionary and the waves do not depend on threads.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    assert_eq!(one.install(|| build(zstd(), &entries)), in_memory);
    // As do the default levels and `auto`, whichever it chooses.
    let mut x = 7u64;
    let random: Vec<(Vec<u8>, Value)> = (0..500)
        .map(|i| {
            let bytes = (0..64).map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            });
            (
                format!("blob:{i}").into_bytes(),
                Value::Str(bytes.collect(), Some("ASCII-8BIT".into())),
            )
        })
        .collect();
    for (compression, entries) in [
        (Compression::DEFAULT_ZSTD, long_and_short(1_000)),
        (Compression::Auto, long_and_short(1_000)),
        (Compression::Auto, random),
    ] {
        let options = || BuildOptions {
            compression,
            ..BuildOptions::default()
        };
        let path = dir.path().join("streamed.hf");
        let mut streaming = Builder::streaming(options(), &path).unwrap();
        for (key, value) in &entries {
            streaming.insert_value(key, true, value).unwrap();
        }
        streaming.write_file(&path).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            build(options(), &entries),
            "{compression:?}"
        );
    }
}

#[test]
fn repeated_keys_are_resolved_before_values_are_compressed() {
    let mut entries = entries(500);
    let later = Value::Str(product(9_999).into_bytes(), None);
    entries.push((b"product:10".to_vec(), later.clone()));
    let options = BuildOptions {
        on_duplicate: hashfile::OnDuplicate::Last,
        ..zstd()
    };
    let mem = build(options.clone(), &entries);
    Reader::new(mem).unwrap().verify().expect("in memory");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("last.hf");
    let mut streaming = Builder::streaming(options.clone(), &path).unwrap();
    for (key, value) in &entries {
        streaming.insert_value(key, true, value).unwrap();
    }
    streaming.write_file(&path).unwrap();
    let store = Reader::open(&path).unwrap();
    store.verify().unwrap();
    assert_eq!(store.len(), 500);
    assert_eq!(
        store.get(b"product:10").unwrap().unwrap().decode().unwrap(),
        later
    );
    let written = std::fs::read(&path).unwrap();
    assert_eq!(written, build(options, &entries));
    // Written again, the same bytes: the values are compressed once.
    streaming.write_file(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), written);
    assert_eq!(streaming.to_bytes().unwrap(), written);
}

#[test]
fn entries_added_after_a_compressed_write_are_refused() {
    let mut builder = Builder::new(zstd()).unwrap();
    builder.insert(b"one", product(1).as_bytes());
    let first = builder.to_bytes().unwrap();
    assert_eq!(builder.to_bytes().unwrap(), first);
    builder.insert(b"two", product(2).as_bytes());
    let e = builder.to_bytes().unwrap_err();
    assert!(
        matches!(&e, Error::InvalidOption { name: "compression", reason } if reason.contains("added after")),
        "{e}"
    );
}

#[test]
fn values_that_do_not_shrink_leave_the_store_readable_without_compression() {
    let short: Vec<(Vec<u8>, Value)> = (0..100)
        .map(|i| {
            (
                format!("k{i}").into_bytes(),
                Value::Str(format!("v{i}").into_bytes(), None),
            )
        })
        .collect();
    let bytes = build(zstd(), &short);
    let store = Reader::new(bytes.clone()).unwrap();
    // The dictionary section is there (the header was laid out for it),
    // but no record is compressed, so the required flag is not set.
    assert!(store.header().has_dictionary());
    assert!(!store.header().has_compressed_values());
    assert_eq!(store.compression_stats().unwrap().unwrap().stats.values, 0);
    assert_reads_back(&bytes, &short);
    // An empty store with compression asked for builds too.
    let empty = build(zstd(), &[]);
    let store = Reader::new(empty).unwrap();
    store.verify().unwrap();
    assert!(store.is_empty());
}

/// The records section of a store, and where it starts.
fn records_of(bytes: &[u8]) -> (usize, usize) {
    let store = Reader::new(bytes.to_vec()).unwrap();
    let s = store.header().section(SectionId::Records);
    (s.offset as usize, s.end() as usize)
}

#[test]
fn damaged_frames_are_errors_never_panics() {
    let entries = entries(300);
    let good = build(zstd(), &entries);
    let (start, end) = records_of(&good);
    let mut errors = 0;
    // Every byte of the records, flipped in turn (a stride keeps it quick):
    // a lookup gives an error or some value, never a panic or another
    // key's value, and verify always says what is wrong.
    for at in (start..end).step_by(7) {
        let mut bad = good.clone();
        bad[at] ^= 0x5a;
        let store = Reader::new(bad).unwrap();
        for (key, _) in entries.iter().step_by(13) {
            match store.get(key) {
                Ok(Some(found)) => assert_eq!(found.key(), key.as_slice()),
                Ok(None) => {}
                Err(Error::Corrupt { .. }) => errors += 1,
                Err(other) => panic!("byte {at}: {other}"),
            }
        }
        assert!(store.verify().is_err(), "byte {at}");
    }
    assert!(errors > 0);
}

#[test]
fn a_frame_claiming_a_huge_value_is_refused_before_it_is_allocated() {
    // A value of one repeated byte compresses past MAX_EXPANSION and is
    // stored raw; a frame that claims 2^40 bytes is refused.
    let run = vec![b'x'; 1 << 20];
    let mut builder = Builder::new(zstd()).unwrap();
    builder.insert(b"run", &run);
    builder.insert(b"text", product(1).repeat(4).as_bytes());
    let bytes = builder.to_bytes().unwrap();
    let store = Reader::new(bytes.clone()).unwrap();
    assert_eq!(store.get(b"run").unwrap().unwrap().value(), &run[..]);
    assert_eq!(store.compression_stats().unwrap().unwrap().stats.values, 1);
    // The text's record: flags, key length 4, value length, "text", frame.
    let (start, end) = records_of(&bytes);
    let records = &bytes[start..end];
    let at = records
        .windows(4)
        .position(|w| w == b"text")
        .expect("the key is stored raw");
    assert_ne!(records[at - 3] & 0x80, 0, "the record is compressed");
    let frame_at = start + at + 4;
    let mut bad = bytes.clone();
    // Frame header: an 8-byte content size, single segment, of 2^40.
    bad[frame_at] = 0xe0;
    bad[frame_at + 1..frame_at + 9].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let store = Reader::new(bad).unwrap();
    let e = store.get(b"text").unwrap_err().to_string();
    assert!(e.contains("claims 1099511627776 bytes decoded"), "{e}");
}

#[test]
fn a_compressed_record_in_a_store_without_the_flag_is_damage() {
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    builder.insert_record(Record::text("key", &product(3)));
    let mut bytes = builder.to_bytes().unwrap();
    let (start, _) = records_of(&bytes);
    bytes[start] |= 0x80;
    let store = Reader::new(bytes).unwrap();
    let e = store.get(b"key").unwrap_err().to_string();
    assert!(
        e.contains("header does not say the store has compressed values"),
        "{e}"
    );
}

#[test]
fn the_compression_option_is_checked() {
    assert!(matches!(
        Compression::parse("zstd:30"),
        Err(Error::InvalidOption {
            name: "compression",
            ..
        })
    ));
    assert_eq!(
        Compression::parse("zstd:19").unwrap(),
        Compression::zstd(19)
    );
}

/// `store` with its dictionary section's stats changed by `change`, and
/// every checksum made to match, as a faulty writer would leave it.
fn with_stats(store: &[u8], change: impl Fn(&mut [u8])) -> Vec<u8> {
    use hashfile::format::Header;
    let header = Header::decode(store, store.len() as u64).unwrap();
    let dictionary = header.section(SectionId::Dictionary);
    let mut bad = store.to_vec();
    let at = dictionary.offset as usize;
    change(&mut bad[at..at + hashfile::compress::STATS_LEN]);
    let mut header = header;
    header.sections[SectionId::Dictionary.index()].checksum =
        hashfile::chd::hash_key(&bad[at..dictionary.end() as usize], 0);
    let encoded = header.encode();
    bad[..encoded.len()].copy_from_slice(&encoded);
    bad
}

#[test]
fn verify_checks_the_stats_against_the_records() {
    let good = build(zstd(), &entries(400));
    // One compressed value more than there are.
    let bad = with_stats(&good, |stats| {
        let values = u64::from_le_bytes(stats[..8].try_into().unwrap());
        stats[..8].copy_from_slice(&(values + 1).to_le_bytes());
    });
    let e = Reader::new(bad).unwrap().verify().unwrap_err();
    assert!(
        matches!(&e, Error::Corrupt { section: "dictionary", what, .. } if what.contains("stats say")),
        "{e}"
    );
    // Levels out of range, level 0 with compressed values, and bytes no
    // writer writes: each an error naming the section. The values still
    // read: the stats are informational.
    type Change = fn(&mut [u8]);
    let changes: [(&str, Change); 5] = [
        ("outside 1..=22", |s| {
            s[24..28].copy_from_slice(&40i32.to_le_bytes())
        }),
        ("outside 1..=22", |s| s[28] = 23),
        ("level 0", |s| {
            s[24..28].copy_from_slice(&0i32.to_le_bytes())
        }),
        ("no writer writes", |s| s[29] = 2),
        ("no writer writes", |s| s[31] = 1),
    ];
    for (said, change) in changes {
        let bad = with_stats(&good, change);
        let store = Reader::new(bad).unwrap();
        let e = store.verify().unwrap_err();
        assert!(
            matches!(&e, Error::Corrupt { section: "dictionary", what, .. } if what.contains(said)),
            "{said}: {e}"
        );
        assert!(store.get(b"product:2").unwrap().is_some());
    }
    Reader::new(good).unwrap().verify().unwrap();
}

/// Values of a few lines of text, some over `LONG_VALUE_LEN`.
fn long_and_short(n: u64) -> Vec<(Vec<u8>, Value)> {
    (0..n)
        .map(|i| {
            let repeat = if i % 3 == 0 { 6 } else { 1 };
            let text: String = (0..repeat).map(|k| product(i * 11 + k)).collect();
            (
                format!("product:{i}").into_bytes(),
                Value::Str(text.into_bytes(), None),
            )
        })
        .collect()
}

#[test]
fn the_default_compresses_long_values_at_a_stronger_level() {
    let entries = long_and_short(2_000);
    let default = build(
        BuildOptions {
            compression: Compression::parse("zstd").unwrap(),
            ..BuildOptions::default()
        },
        &entries,
    );
    let one_level = build(zstd(), &entries);
    assert_reads_back(&default, &entries);
    let stats = Reader::new(default.clone())
        .unwrap()
        .compression_stats()
        .unwrap()
        .unwrap()
        .stats;
    assert_eq!((stats.level, stats.long_level, stats.auto), (3, 9, false));
    assert!(
        default.len() < one_level.len(),
        "levels 3 and 9: {} bytes, level 3: {}",
        default.len(),
        one_level.len()
    );
    // A store written before the long level was recorded (that byte 0)
    // reads as one level.
    let old = with_stats(&one_level, |s| s[28] = 0);
    let stats = Reader::new(old)
        .unwrap()
        .compression_stats()
        .unwrap()
        .unwrap()
        .stats;
    assert_eq!((stats.level, stats.long_level), (3, 3));
}

#[test]
fn auto_compresses_what_pays_and_leaves_random_bytes_alone() {
    let auto = BuildOptions {
        compression: Compression::Auto,
        ..BuildOptions::default()
    };
    // Text: compressed as the default would, with the choice recorded.
    let text = long_and_short(2_000);
    let chosen = build(auto.clone(), &text);
    assert_reads_back(&chosen, &text);
    let summary = Reader::new(chosen.clone())
        .unwrap()
        .compression_stats()
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            summary.stats.level,
            summary.stats.long_level,
            summary.stats.auto
        ),
        (3, 9, true)
    );
    assert!(
        summary.dictionary_bytes > 0 && summary.ratio() > 3.0,
        "{summary:?}"
    );
    assert_eq!(
        chosen,
        build(auto.clone(), &text),
        "the choice is deterministic"
    );
    // Random bytes: nothing compressed, no flag required, level 0, and
    // the store only the stats' bytes larger than a plain one.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let random: Vec<(Vec<u8>, Value)> = (0..3_000)
        .map(|i| {
            let bytes: Vec<u8> = (0..120)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            (
                format!("blob:{i}").into_bytes(),
                Value::Str(bytes, Some("ASCII-8BIT".into())),
            )
        })
        .collect();
    let left = build(auto, &random);
    assert_reads_back(&left, &random);
    let store = Reader::new(left.clone()).unwrap();
    assert!(!store.header().has_compressed_values());
    let stats = store.compression_stats().unwrap().unwrap().stats;
    assert_eq!((stats.level, stats.values, stats.auto), (0, 0, true));
    let plain = build(BuildOptions::default(), &random);
    assert!(
        left.len() <= plain.len() + 64,
        "{} against {}",
        left.len(),
        plain.len()
    );
}

/// A tree like a merged locale: sections of entries, each entry a map
/// with a name and a few tags, and one long array of short names.
fn locale_like() -> Value {
    let s = |text: String| Value::Str(text.into_bytes(), None);
    let sections = (0..40).map(|i| {
        let section = (0..30).map(|j| {
            let entry = Value::Map(vec![
                (s("name".into()), s(product(i * 30 + j))),
                (
                    s("tags".into()),
                    Value::Array(
                        (0..5)
                            .map(|k| s(format!("tag {}", (i + j + k) % 17)))
                            .collect(),
                    ),
                ),
            ]);
            (s(format!("e{j}")), entry)
        });
        (s(format!("s{i}")), Value::Map(section.collect()))
    });
    let names = Value::Array((0..5_000).map(|i| s(format!("name {}", i % 997))).collect());
    Value::Map(sections.chain([(s("names".into()), names)]).collect())
}

#[test]
fn typed_values_over_64_kib_are_compressed_item_by_item_and_a_dig_walks_only_its_path() {
    use hashfile::value::{dig, Probe};
    let big = Value::Map(
        (0..3_000)
            .map(|i| {
                (
                    Value::Str(format!("key {i}").into_bytes(), None),
                    Value::Str(product(i).into_bytes(), None),
                )
            })
            .collect(),
    );
    let tree = locale_like();
    let long_text = Value::Str(
        (0..1_000).map(product).collect::<String>().into_bytes(),
        None,
    );
    let mut entries = entries(200);
    entries.push((b"big".to_vec(), big.clone()));
    entries.push((b"tree".to_vec(), tree.clone()));
    entries.push((b"long text".to_vec(), long_text.clone()));
    let bytes = build(zstd(), &entries);
    let store = Reader::new(bytes.clone()).unwrap();
    assert_eq!(
        store.header().required_flags & format::REQUIRED_COMPRESSED_ITEMS,
        format::REQUIRED_COMPRESSED_ITEMS
    );
    // Each record's layout as stored, by key.
    let (start, end) = records_of(&bytes);
    let mut stored = std::collections::HashMap::new();
    let mut at = start;
    while at < end {
        let layout = format::record::parse(&bytes[at..end]).unwrap().unwrap();
        let key = bytes[at + layout.key_start..at + layout.value_start].to_vec();
        stored.insert(key, (at, layout));
        at += layout.len;
    }
    let mut raw_tree = Vec::new();
    tree.encode(&mut raw_tree).unwrap();
    let (tree_at, tree_layout) = stored[&b"tree"[..]];
    assert!(tree_layout.items && !tree_layout.compressed);
    assert!(
        stored[&b"big"[..]].1.items,
        "a 200 KB map of strings, string by string"
    );
    assert!(
        stored[&b"long text"[..]].1.compressed,
        "a 130 KB string, whole"
    );
    let stored_len = tree_layout.len - tree_layout.value_start;
    assert!(
        stored_len * 2 < raw_tree.len(),
        "{stored_len} stored of {}",
        raw_tree.len()
    );
    assert_eq!(store.get(b"tree").unwrap().unwrap().value(), &raw_tree[..]);
    assert_reads_back(&bytes, &entries);

    // A dig over every source ends where a dig of the raw value does,
    // item for item (containers expanded): through raw levels into a
    // frame, onto a frame, onto raw levels holding frames, into the long
    // array, past a string, and paths that miss.
    let key = |k: &'static str| Probe::Str {
        bytes: k.as_bytes(),
        binary: false,
    };
    let paths: Vec<Vec<Probe<'static>>> = vec![
        vec![key("s3"), key("e7"), key("name")],
        vec![key("s3"), key("e7"), key("tags"), Probe::Int(-1)],
        vec![key("s3"), key("e7")],
        vec![key("s3")],
        vec![],
        vec![key("names"), Probe::Int(4_999)],
        vec![key("names"), Probe::Int(5_000)],
        vec![key("names"), key("x")],
        vec![key("s3"), key("e7"), key("name"), Probe::Int(0)],
        vec![key("s3"), key("e99")],
        vec![key("missing"), key("e1")],
    ];
    for (source, store) in support::every_source(&bytes) {
        for path in &paths {
            let expected = format!("{:?}", Some(dig(&raw_tree, path, false).unwrap()));
            let walked = store
                .dig_with(b"tree", path, false, |_, walked| format!("{walked:?}"))
                .unwrap();
            assert_eq!(
                walked.as_deref(),
                Some(expected.as_str()),
                "{source}: {path:?}"
            );
        }
        let walked = store.dig_with(b"long text", &[key("x")], false, |record, walked| {
            (record.kind, walked.is_none())
        });
        assert_eq!(walked.unwrap(), Some((ValueKind::Utf8, true)), "{source}");
        assert!(store
            .dig_with(b"absent", &[], false, |_, _| ())
            .unwrap()
            .is_none());
    }

    // The items walks decoded are kept by the reader, up to its limit,
    // whether it maps the store or reads it: the same paths again decode
    // nothing and answer the same.
    for (source, store) in support::every_source(&bytes) {
        assert_eq!(
            store.item_cache_stats(),
            Some(Default::default()),
            "{source}"
        );
        let first = dig_every(&store, &paths);
        let after_first = store.item_cache_stats().unwrap();
        assert!(
            after_first.entries > 0 && after_first.misses > 0,
            "{source}"
        );
        assert!(after_first.bytes <= hashfile::compress::ITEM_CACHE_LEN as u64);
        assert_eq!(dig_every(&store, &paths), first, "{source}");
        let after_second = store.item_cache_stats().unwrap();
        assert_eq!(after_second.misses, after_first.misses, "{source}");
        assert!(after_second.hits > after_first.hits, "{source}");
    }
    // Threads share the cache: a fresh reader dug from four at once
    // answers as one thread does.
    let shared = Reader::new(bytes.clone()).unwrap();
    let first = dig_every(&shared, &paths);
    std::thread::scope(|scope| {
        let digs: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| dig_every(&shared, &paths)))
            .collect();
        for dig in digs {
            assert_eq!(dig.join().unwrap(), first);
        }
    });
    assert!(shared.item_cache_stats().unwrap().hits > 0);
    let uncompressed = Reader::new(
        Builder::new(BuildOptions::default())
            .unwrap()
            .to_bytes()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(uncompressed.item_cache_stats(), None);

    // Damage in the tree's record: an error or some answer, never a
    // panic, and verify says what is wrong.
    let mut errors = 0;
    for at in (tree_at..tree_at + tree_layout.len).step_by(97) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x5a;
        let store = Reader::new(bad).unwrap();
        for path in &paths {
            match store.dig_with(b"tree", path, false, |_, _| ()) {
                Ok(_) => {}
                Err(Error::Corrupt { .. }) => errors += 1,
                Err(other) => panic!("byte {at}: {other}"),
            }
        }
        match store.get(b"tree") {
            Ok(_) | Err(Error::Corrupt { .. }) => {}
            Err(other) => panic!("byte {at}: {other}"),
        }
        assert!(store.verify().is_err(), "byte {at}");
    }
    assert!(errors > 0);
}

#[test]
fn a_long_list_of_short_strings_is_compressed_whole() {
    // A list of names past 64 KiB, as a flattened locale holds: its items
    // are too short to compress one by one, and a lookup reads it whole.
    let names = Value::Array(
        (0..12_000)
            .map(|i: u64| Value::Str(format!("Name{}", (i * 7919) % 100_003).into_bytes(), None))
            .collect(),
    );
    let mut raw = Vec::new();
    names.encode(&mut raw).unwrap();
    assert!(raw.len() > 64 << 10);
    assert!(hashfile::value::frames::compressed_whole(&raw).unwrap());
    let mut entries = entries(50);
    entries.push((b"names".to_vec(), names.clone()));
    let bytes = build(zstd(), &entries);
    let (start, end) = records_of(&bytes);
    let mut at = start;
    let mut found = None;
    while at < end {
        let layout = format::record::parse(&bytes[at..end]).unwrap().unwrap();
        if &bytes[at + layout.key_start..at + layout.value_start] == b"names" {
            found = Some(layout);
        }
        at += layout.len;
    }
    let layout = found.expect("the record");
    assert!(
        layout.compressed && !layout.items,
        "compressed whole: {layout:?}"
    );
    assert!(
        layout.len - layout.value_start < raw.len() / 2,
        "{} bytes stored for {}",
        layout.len - layout.value_start,
        raw.len()
    );
    assert_reads_back(&bytes, &entries);
    let store = Reader::new(bytes).unwrap();
    let found = store.get(b"names").unwrap().unwrap();
    assert_eq!(found.decode().unwrap(), names);
}

#[test]
fn compressed_items_in_a_store_without_their_flag_are_damage() {
    let mut entries = entries(20);
    entries.push((b"tree".to_vec(), locale_like()));
    let mut bytes = build(zstd(), &entries);
    // Clear required flag bit 4 (the header's checksum is rewritten, so
    // only the flag is wrong).
    let mut header = format::Header::decode(&bytes, bytes.len() as u64).unwrap();
    header.required_flags &= !format::REQUIRED_COMPRESSED_ITEMS;
    let encoded = header.encode();
    bytes[..encoded.len()].copy_from_slice(&encoded);
    let store = Reader::new(bytes).unwrap();
    let e = store.get(b"tree").unwrap_err().to_string();
    assert!(e.contains("does not say the store has them"), "{e}");
}

/// Where a dig of each path into the value of "tree" ends, as text.
fn dig_every<S: hashfile::read::Source>(
    store: &Reader<S>,
    paths: &[Vec<hashfile::value::Probe<'_>>],
) -> Vec<String> {
    paths
        .iter()
        .map(|path| {
            store
                .dig_with(b"tree", path, false, |_, walked| format!("{walked:?}"))
                .unwrap()
                .unwrap()
        })
        .collect()
}

#[test]
fn a_value_of_a_kilobyte_or_more_is_decoded_once_and_kept() {
    // Values of 1-4 KiB (kept), and short ones (decoded each time).
    let entries = long_and_short(600)
        .into_iter()
        .map(|(key, value)| match value {
            Value::Str(text, e) if text.len() >= 512 => (key, Value::Str(text.repeat(3), e)),
            other => (key, other),
        })
        .collect::<Vec<_>>();
    let bytes = build(zstd(), &entries);
    for (source, store) in support::every_source(&bytes) {
        let stats = || {
            store
                .item_cache_stats()
                .expect("a store with compressed values")
        };
        assert_eq!(stats().entries, 0, "{source}");
        let long: Vec<&(Vec<u8>, Value)> = entries
            .iter()
            .filter(|(_, v)| matches!(v, Value::Str(t, _) if t.len() >= 1024))
            .collect();
        assert!(long.len() >= 100);
        for round in 0..3 {
            for (key, value) in &entries {
                let found = store.get(key).unwrap().expect("present");
                assert_eq!(&found.decode().unwrap(), value, "{source} round {round}");
                assert_eq!(found.key(), key.as_slice(), "{source}");
            }
            // Each kept value was decoded once: the later rounds hit.
            let s = stats();
            assert_eq!(s.entries, long.len() as u64, "{source}");
            assert_eq!(s.misses, long.len() as u64, "{source}");
            assert_eq!(s.hits, round * long.len() as u64, "{source}");
        }
        // A batch and a walk give the same values from it.
        let keys: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_slice()).collect();
        for ((_, value), found) in entries.iter().zip(store.get_many(&keys).unwrap()) {
            assert_eq!(&found.unwrap().decode().unwrap(), value, "{source}");
        }
    }
    // A max_value_size lowered after a value was kept still refuses it.
    let mut store = Reader::new(bytes).unwrap();
    let (key, _) = entries
        .iter()
        .find(|(_, v)| matches!(v, Value::Str(t, _) if t.len() >= 1024))
        .unwrap();
    assert!(store.get(key).unwrap().is_some());
    assert_eq!(store.item_cache_stats().unwrap().entries, 1);
    store.set_max_value_size(100).unwrap();
    let e = store.get(key).map(|r| r.is_some()).unwrap_err();
    assert!(matches!(e, Error::ValueTooLarge { .. }), "{e}");
}

#[test]
fn auto_on_a_store_sampled_in_part_tries_values_the_dictionary_did_not_learn() {
    // Over 25 MiB of records: one record in two or more is sampled, and
    // `auto` tries others. Random values: nothing compressed; text: zstd.
    let auto = BuildOptions {
        compression: Compression::Auto,
        ..BuildOptions::default()
    };
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut random = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let build_of = |value: &mut dyn FnMut(u64) -> Vec<u8>| {
        let mut builder = Builder::new(auto.clone()).unwrap();
        for i in 0..140_000u64 {
            builder.insert(format!("k{i}").as_bytes(), &value(i));
        }
        Reader::new(builder.to_bytes().unwrap()).unwrap()
    };
    let blobs = build_of(&mut |_| (0..25).flat_map(|_| random().to_le_bytes()).collect());
    let stats = blobs.compression_stats().unwrap().unwrap().stats;
    assert_eq!((stats.level, stats.values, stats.auto), (0, 0, true));
    let text = build_of(&mut |i| {
        let mut t = String::new();
        while t.len() < 200 {
            t.push_str(&product(i * 3 + t.len() as u64));
        }
        t.into_bytes()
    });
    let summary = text.compression_stats().unwrap().unwrap();
    assert_eq!((summary.stats.level, summary.stats.auto), (3, true));
    assert!(summary.ratio() > 2.0, "{summary:?}");
    text.verify().unwrap();
}

#[test]
fn a_damaged_dictionary_is_an_error_naming_it_never_other_values() {
    use hashfile::format::Header;
    let entries = entries(300);
    let good = build(zstd(), &entries);
    let header = Header::decode(&good, good.len() as u64).unwrap();
    let dictionary = header.section(SectionId::Dictionary);
    // Bytes of the dictionary flipped (its checksum left as it was): zstd
    // would decode frames with it to other text, with no error.
    for at in [
        dictionary.offset as usize + hashfile::compress::STATS_LEN,
        dictionary.end() as usize - 40,
    ] {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        for (source, store) in support::every_source(&bad) {
            let e = store.get(b"product:2").map(|r| r.is_some()).unwrap_err();
            assert!(
                matches!(
                    &e,
                    Error::Checksum {
                        section: "dictionary",
                        ..
                    }
                ),
                "{source}: {e}"
            );
        }
    }
}

#[test]
fn a_store_rewritten_in_place_under_a_reader_of_its_file_is_stale() {
    use std::io::Write;
    let old: Vec<(Vec<u8>, Value)> = long_and_short(300);
    let new: Vec<(Vec<u8>, Value)> = old
        .iter()
        .map(|(k, v)| match v {
            Value::Str(t, e) => (k.clone(), Value::Str(t.to_ascii_uppercase(), e.clone())),
            other => (k.clone(), other.clone()),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.hf");
    std::fs::write(&path, build(zstd(), &old)).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let store = Reader::new(hashfile::read::FileSource::new(file).unwrap()).unwrap();
    let (key, value) = &old[3];
    assert_eq!(&store.get(key).unwrap().unwrap().decode().unwrap(), value);
    // Written over in place, as `cp` does without truncating first.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .write_all(&build(zstd(), &new))
        .unwrap();
    // The index still sends keys to the old store's offsets: a lookup
    // finds another key's record there (absent), bytes that are no record
    // (damage), or its own: a compressed one is refused. Never a value
    // that is neither the key's old nor its new one.
    let mut changed = 0;
    for ((key, was), (_, now)) in old.iter().zip(&new) {
        match store.get(key) {
            Ok(Some(found)) => {
                let value = found.decode().unwrap();
                assert!(value == *was || value == *now, "{key:?}");
            }
            Ok(None) => {}
            Err(Error::Changed { .. }) => changed += 1,
            Err(Error::Corrupt { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert!(changed > 0);
}
