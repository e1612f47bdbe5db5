//! The checked-in test vector: tests/vectors/small.hf, described in
//! docs/FORMAT.md. Rebuilding it from the same entries must give the same
//! bytes on every platform and in every later version that writes v1.0.
use hashfile::value::Value;
use hashfile::{BuildOptions, Builder, Reader, ValueKind};

mod support;

/// The options the vectors are built with: the defaults of 0.1 (keys per
/// bucket 4.0, dense fractions 0.6 and 0.3), written out, so that a change
/// of defaults does not change the vectors.
pub fn vector_options() -> BuildOptions {
    BuildOptions {
        keys_per_bucket: 4.0,
        load_factor: 0.99,
        dense_key_fraction: 0.6,
        dense_bucket_fraction: 0.3,
        hash_seed: 0,
        seed_block_len: 128,
        keys_per_part: 131_072,
        ..Default::default()
    }
}

pub fn small_vector() -> Builder {
    let mut b = Builder::new(vector_options()).unwrap();
    b.insert_record(hashfile::Record {
        key: b"apple",
        key_utf8: true,
        value: b"red",
        kind: ValueKind::Utf8,
    });
    b.insert_record(hashfile::Record {
        key: b"banana",
        key_utf8: true,
        value: b"yellow",
        kind: ValueKind::Utf8,
    });
    b.insert_record(hashfile::Record {
        key: "caf\u{e9}".as_bytes(),
        key_utf8: true,
        value: "cr\u{e8}me".as_bytes(),
        kind: ValueKind::Utf8,
    });
    b.insert_record(hashfile::Record {
        key: b"bytes\x00\xff",
        key_utf8: false,
        value: b"\x00\x01\x02\xff",
        kind: ValueKind::Binary,
    });
    b.insert_record(hashfile::Record {
        key: b"empty",
        key_utf8: true,
        value: b"",
        kind: ValueKind::Ascii,
    });
    b
}

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/small.hf");

/// Compares a fresh build with the checked-in file (or writes it, with
/// HASHFILE_WRITE_VECTORS set), and opens and verifies the file.
fn check_vector(mut builder: Builder, path: &str) -> Reader<memmap2::Mmap> {
    let built = builder.to_bytes().unwrap();
    if std::env::var_os("HASHFILE_WRITE_VECTORS").is_some() {
        std::fs::write(path, &built).unwrap();
    }
    let checked_in = std::fs::read(path)
        .unwrap_or_else(|_| panic!("{path} (regenerate with HASHFILE_WRITE_VECTORS=1)"));
    assert_eq!(
        built, checked_in,
        "the builder's output changed: that is a format change"
    );
    let store = Reader::open(path).unwrap();
    store.verify().unwrap();
    // Every source reads the same records, and finds each by its key.
    for (source, other) in support::every_source(&checked_in) {
        other.verify().unwrap_or_else(|e| panic!("{source}: {e}"));
        let listed: Vec<_> = other
            .iter()
            .map(|r| r.unwrap().record().value.to_vec())
            .collect();
        let expected: Vec<_> = store.iter().map(|r| r.unwrap().value().to_vec()).collect();
        assert_eq!(listed, expected, "{source}");
        for record in store.iter() {
            let record = record.unwrap();
            assert_eq!(
                other.get(record.key()).unwrap().as_ref(),
                Some(&record),
                "{source}"
            );
        }
    }
    store
}

#[test]
fn rebuilds_the_test_vector_byte_for_byte() {
    check_vector(small_vector(), PATH);
}

#[test]
fn reads_the_test_vector() {
    let store = Reader::open(PATH).unwrap();
    store.verify().unwrap();
    assert_eq!(store.len(), 5);
    assert_eq!(store.get(b"banana").unwrap().unwrap().value(), b"yellow");
    assert_eq!(
        store.get("caf\u{e9}".as_bytes()).unwrap().unwrap().value(),
        "cr\u{e8}me".as_bytes()
    );
    assert_eq!(
        store.get(b"bytes\x00\xff").unwrap().unwrap().kind(),
        ValueKind::Binary
    );
    assert_eq!(store.get(b"cherry").unwrap(), None);
    assert_eq!(store.header().hash_seed, 0);
}

/// The same store as small.hf in the layout builders before 0.2 wrote,
/// with the index sections before the records: readers find sections by
/// the section table, so it reads and verifies the same.
#[test]
fn reads_the_index_first_layout() {
    let store = Reader::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/small-index-first.hf"
    ))
    .unwrap();
    store.verify().unwrap();
    let header = store.header();
    assert!(
        header
            .section(hashfile::format::SectionId::SeedIndex)
            .offset
            < header.section(hashfile::format::SectionId::Records).offset
    );
    let current = Reader::open(PATH).unwrap();
    assert!(
        current
            .header()
            .section(hashfile::format::SectionId::Records)
            .offset
            < current
                .header()
                .section(hashfile::format::SectionId::SeedIndex)
                .offset
    );
    for record in current.iter() {
        let record = record.unwrap();
        let old = store.get(record.key()).unwrap().unwrap();
        assert_eq!(old.record(), record.record());
    }
    assert_eq!(store.len(), 5);
}

/// The typed-values vector: one value of every tag family.
pub fn typed_vector() -> Builder {
    let mut b = Builder::new(vector_options()).unwrap();
    let values = typed_values();
    for (k, v) in &values {
        b.insert_value(k.as_bytes(), true, v).unwrap();
    }
    b
}

fn typed_values() -> Vec<(&'static str, Value)> {
    vec![
        (
            "ints",
            Value::Array(vec![
                Value::Int(0),
                Value::Int(127),
                Value::Int(200),
                Value::Int(-1),
                Value::Int(-33),
                Value::Int(1 << 40),
                Value::BigInt {
                    negative: true,
                    magnitude: vec![0, 0, 0, 0, 0, 0, 0, 0, 1],
                },
            ]),
        ),
        (
            "floats",
            Value::Array(vec![
                Value::Float(0.75),
                Value::Float(-0.0),
                Value::Float(f64::INFINITY),
            ]),
        ),
        (
            "scalars",
            Value::Array(vec![
                Value::Nil,
                Value::Bool(true),
                Value::Bool(false),
                Value::Symbol(b"sym".to_vec(), None),
                Value::Custom(b"\x04\x08".to_vec()),
            ]),
        ),
        (
            "strings",
            Value::Array(vec![
                Value::str("short"),
                Value::str(&"long ".repeat(8)),
                Value::Str(b"\xff".to_vec(), Some("ASCII-8BIT".into())),
                Value::Str(b"ascii".to_vec(), Some("US-ASCII".into())),
                Value::Str(b"\x93\xfa".to_vec(), Some("Shift_JIS".into())),
            ]),
        ),
        (
            "limits",
            Value::Map(vec![
                (
                    Value::str("api"),
                    Value::Map(vec![(Value::str("burst"), Value::Int(100))]),
                ),
                (
                    Value::Int(1),
                    Value::Array((0..16).map(Value::Int).collect()),
                ),
            ]),
        ),
        ("text", Value::str("plain string record")),
    ]
}

const TYPED_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/typed.hf");

#[test]
fn rebuilds_the_typed_vector_byte_for_byte() {
    let store = check_vector(typed_vector(), TYPED_PATH);
    assert_eq!(
        store.header().required_flags,
        hashfile::format::REQUIRED_TYPED_VALUES
    );
    for (k, v) in typed_values() {
        assert_eq!(
            store.get(k.as_bytes()).unwrap().unwrap().decode().unwrap(),
            v,
            "{k}"
        );
    }
    assert_eq!(store.get(b"text").unwrap().unwrap().kind(), ValueKind::Utf8);
}

/// The partitioned-store vector: 40 keys in three parts.
pub fn parts_vector() -> Builder {
    let mut b = Builder::new(BuildOptions {
        keys_per_part: 16,
        ..vector_options()
    })
    .unwrap();
    for i in 0..40 {
        b.insert_record(hashfile::Record {
            key: format!("key-{i}").as_bytes(),
            key_utf8: true,
            value: format!("value-{i}").as_bytes(),
            kind: ValueKind::Utf8,
        });
    }
    b
}

const PARTS_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/parts.hf");

#[test]
fn rebuilds_the_partitioned_vector_byte_for_byte() {
    let store = check_vector(parts_vector(), PARTS_PATH);
    assert_eq!(
        store.header().required_flags,
        hashfile::format::REQUIRED_PARTS
    );
    assert_eq!(store.header().geometry.part_count, 3);
    assert_holds_key_i_to_value_i(&store, 40);
}

/// `store` maps `key-I` to `value-I` for every I below `n`, and holds no
/// `key-N`.
fn assert_holds_key_i_to_value_i(store: &Reader<memmap2::Mmap>, n: u64) {
    for i in 0..n {
        assert_eq!(
            store
                .get(format!("key-{i}").as_bytes())
                .unwrap()
                .unwrap()
                .value(),
            format!("value-{i}").as_bytes()
        );
    }
    assert_eq!(store.get(format!("key-{n}").as_bytes()).unwrap(), None);
}

/// The options the compact vectors are built with: `BuildOptions::compact`
/// as it is in this version, written out.
pub fn compact_vector_options() -> BuildOptions {
    BuildOptions {
        keys_per_bucket: 4.0,
        load_factor: 0.99,
        dense_key_fraction: 0.5,
        dense_bucket_fraction: 0.2,
        hash_seed: 0,
        seed_block_len: 128,
        keys_per_part: 131_072,
        index: hashfile::IndexKind::Compact,
        ..Default::default()
    }
}

const COMPACT_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/compact.hf");
const COMPACT_PARTS_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/compact-parts.hf"
);

/// small.hf's five entries with the compact index (docs/FORMAT.md, "The
/// compact index").
#[test]
fn rebuilds_the_compact_vector_byte_for_byte() {
    let mut builder = Builder::new(compact_vector_options()).unwrap();
    let mut small = small_vector();
    let mut bytes = Vec::new();
    small.write_to(&mut bytes).unwrap();
    for record in Reader::new(bytes).unwrap().iter() {
        builder.insert_record(record.unwrap().record());
    }
    let store = check_vector(builder, COMPACT_PATH);
    assert_eq!(
        store.header().required_flags,
        hashfile::format::REQUIRED_COMPACT_INDEX
    );
    assert_eq!(store.get(b"banana").unwrap().unwrap().value(), b"yellow");
    assert_eq!(store.get(b"cherry").unwrap(), None);
}

/// 1,000 keys in four parts with the compact index.
#[test]
fn rebuilds_the_partitioned_compact_vector_byte_for_byte() {
    let mut builder = Builder::new(BuildOptions {
        keys_per_part: 256,
        ..compact_vector_options()
    })
    .unwrap();
    for i in 0..1_000 {
        builder.insert(
            format!("key-{i}").as_bytes(),
            format!("value-{i}").as_bytes(),
        );
    }
    let store = check_vector(builder, COMPACT_PARTS_PATH);
    assert_eq!(
        store.header().required_flags,
        hashfile::format::REQUIRED_COMPACT_INDEX | hashfile::format::REQUIRED_PARTS
    );
    assert_eq!(store.header().geometry.part_count, 4);
    assert_holds_key_i_to_value_i(&store, 1_000);
}

const COMPRESSED_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/compressed.hf");

/// The value of entry `i` of the compressed vector (docs/FORMAT.md, "Test
/// vector"): every tenth a short one that stays raw, the others text from
/// a small vocabulary, as catalogue descriptions are.
pub fn compressed_vector_value(i: u64) -> String {
    const WORDS: [&str; 8] = [
        "lamp", "garden", "steel", "blue", "kettle", "oak", "travel", "set",
    ];
    if i % 10 == 0 {
        return format!("v{i}");
    }
    let w = |k: u64| WORDS[((i * 3 + k * 5) % 8) as usize];
    format!(
        "item {i}: a {} {} for every {} and {}, sku {i:05}.",
        w(1),
        w(2),
        w(3),
        w(4)
    )
}

/// `item-0` .. `item-299` with zstd-compressed values at level 3.
#[test]
fn rebuilds_the_compressed_vector_byte_for_byte() {
    let mut builder = Builder::new(BuildOptions {
        compression: hashfile::Compression::zstd(3),
        ..vector_options()
    })
    .unwrap();
    for i in 0..300 {
        builder.insert_record(hashfile::Record::text(
            &format!("item-{i}"),
            &compressed_vector_value(i),
        ));
    }
    let store = check_vector(builder, COMPRESSED_PATH);
    assert_eq!(
        store.header().required_flags,
        hashfile::format::REQUIRED_COMPRESSED_VALUES
    );
    let summary = store.compression_stats().unwrap().unwrap();
    assert_eq!(summary.stats.values, 270, "every value but the short ones");
    assert!(summary.dictionary_bytes > 0);
    for i in 0..300 {
        let found = store.get(format!("item-{i}").as_bytes()).unwrap().unwrap();
        assert_eq!(found.value(), compressed_vector_value(i).as_bytes());
        assert_eq!(found.kind(), ValueKind::Utf8);
    }
}

const COMPRESSED_LEVELS_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/compressed-levels.hf"
);

/// `item-0` .. `item-99` as in the compressed vector, and `long-0` ..
/// `long-19` (each twelve vector values joined by spaces, over 512 bytes), with `zstd`'s
/// default levels: 3, and 9 for the long values (docs/FORMAT.md, "Test
/// vector").
#[test]
fn rebuilds_the_two_level_vector_byte_for_byte() {
    let mut builder = Builder::new(BuildOptions {
        compression: hashfile::Compression::parse("zstd").unwrap(),
        ..vector_options()
    })
    .unwrap();
    let long = |i: u64| {
        (0..12)
            .map(|k| compressed_vector_value(i * 12 + k))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for i in 0..100 {
        builder.insert_record(hashfile::Record::text(
            &format!("item-{i}"),
            &compressed_vector_value(i),
        ));
    }
    for i in 0..20 {
        builder.insert_record(hashfile::Record::text(&format!("long-{i}"), &long(i)));
    }
    let store = check_vector(builder, COMPRESSED_LEVELS_PATH);
    let stats = store.compression_stats().unwrap().unwrap().stats;
    assert_eq!((stats.level, stats.long_level, stats.auto), (3, 9, false));
    assert_eq!(stats.values, 110, "every value but the short ones");
    for i in 0..20 {
        let found = store.get(format!("long-{i}").as_bytes()).unwrap().unwrap();
        assert!(found.value().len() >= hashfile::compress::LONG_VALUE_LEN);
        assert_eq!(found.value(), long(i).as_bytes());
    }
}

const COMPRESSED_ITEMS_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/compressed-items.hf"
);

/// The tree of the compressed-items vector (docs/FORMAT.md, "Test
/// vector"): 24 sections of 40 entries `{"text" => vector value, "n" => i}`,
/// about 72 KB encoded, and an array of 600 short names.
pub fn compressed_items_tree() -> Value {
    let s = |text: String| Value::Str(text.into_bytes(), None);
    let sections = (0..24u64).map(|i| {
        let entries = (0..40u64).map(|j| {
            let n = i * 40 + j;
            (
                s(format!("e{j}")),
                Value::Map(vec![
                    (s("text".into()), s(compressed_vector_value(n))),
                    (s("n".into()), Value::Int(n as i64)),
                ]),
            )
        });
        (s(format!("s{i}")), Value::Map(entries.collect()))
    });
    let names = Value::Array((0..600).map(|i| s(format!("name {}", i % 37))).collect());
    Value::Map(sections.chain([(s("names".into()), names)]).collect())
}

/// `tree` (a typed value over 64 KiB, stored item by item) and `small`
/// (compressed whole) with zstd at level 3.
#[test]
fn rebuilds_the_compressed_items_vector_byte_for_byte() {
    let mut builder = Builder::new(BuildOptions {
        compression: hashfile::Compression::zstd(3),
        ..vector_options()
    })
    .unwrap();
    let tree = compressed_items_tree();
    builder.insert_value(b"tree", true, &tree).unwrap();
    builder
        .insert_value(
            b"small",
            true,
            &Value::Str(compressed_vector_value(1).repeat(3).into_bytes(), None),
        )
        .unwrap();
    let store = check_vector(builder, COMPRESSED_ITEMS_PATH);
    assert_eq!(
        store.header().required_flags,
        hashfile::format::REQUIRED_TYPED_VALUES
            | hashfile::format::REQUIRED_COMPRESSED_VALUES
            | hashfile::format::REQUIRED_COMPRESSED_ITEMS
    );
    assert_eq!(store.get(b"tree").unwrap().unwrap().decode().unwrap(), tree);
    assert_eq!(store.compression_stats().unwrap().unwrap().stats.values, 2);
}
