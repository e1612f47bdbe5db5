//! Lengths a store claims bound nothing: a record claiming more than a
//! reader's `max_value_size` (stored, or as its compressed frame or items
//! decode) is `Error::ValueTooLarge` naming its key, from a lookup, an
//! iteration and `verify`, before anything of that size is allocated or
//! decoded, over every source; a sparse file of 1 TiB is refused, not an
//! abort.
use hashfile::read::{FileSource, DEFAULT_MAX_VALUE_SIZE};
use hashfile::value::Value;
use hashfile::{BuildOptions, Builder, Compression, Error, Reader};

mod support;
use support::every_source;
use support::hostile::{huge_record_prefix, KEY};

fn zstd() -> BuildOptions {
    BuildOptions {
        compression: Compression::zstd(3),
        ..BuildOptions::default()
    }
}

/// `error` is `ValueTooLarge` for `key`, its size in words containing
/// `size`.
#[track_caller]
fn assert_too_large(error: Error, key: &str, size: &str) {
    match &error {
        Error::ValueTooLarge {
            key: k, size: s, ..
        } => {
            assert_eq!(k, &format!("{key:?}"), "{error}");
            assert!(s.contains(size), "{error}");
            assert!(error.to_string().contains("max_value_size"), "{error}");
        }
        other => panic!("expected ValueTooLarge for {key}, got {other:?}"),
    }
}

/// A text of `len` bytes that zstd shrinks, but by far less than
/// `compress::MAX_EXPANSION`: words drawn from sixteen, at random.
fn compressible(len: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "steel ",
        "garden ",
        "compact ",
        "blue ",
        "kettle ",
        "cordless ",
        "oak ",
        "travel ",
        "kit ",
        "premium ",
        "lamp ",
        "set ",
        "red ",
        "small ",
        "large ",
        "glass ",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        out.extend_from_slice(WORDS[(state >> 60) as usize].as_bytes());
    }
    out.truncate(len);
    out
}

/// A sparse file of 1 TiB (4 KiB on disk) whose header is valid and whose
/// one record claims a value of 512 GiB: a lookup mapped it and handed
/// 512 GiB on to be copied, or read it with `pread` into a buffer of that
/// size; both aborted. Now each is `ValueTooLarge`, and with the limit
/// lifted a read of that size is `OutOfMemory` or too long, never an
/// abort.
#[test]
fn a_sparse_terabyte_store_claiming_a_512_gib_value_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.hf");
    let file_len = 1u64 << 40;
    let prefix = huge_record_prefix(file_len, 1 << 39);
    {
        use std::io::Write;
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&prefix).unwrap();
        file.set_len(file_len).unwrap();
    }
    // Mapped: the record lies in the map, and is refused before it is
    // handed out.
    let mapped = Reader::open(&path).unwrap();
    assert_eq!(mapped.max_value_size(), DEFAULT_MAX_VALUE_SIZE);
    assert_too_large(mapped.get(KEY).unwrap_err(), "k", "is 549755813888 bytes");
    // Read with pread: refused before the read is allocated.
    let read = Reader::new(FileSource::new(std::fs::File::open(&path).unwrap()).unwrap()).unwrap();
    assert_too_large(read.get(KEY).unwrap_err(), "k", "is 549755813888 bytes");
    assert_too_large(
        read.iter().next().unwrap().unwrap_err(),
        "k",
        "is 549755813888 bytes",
    );
}

/// A value over the limit, raw, compressed whole, or a typed value
/// holding compressed items, is refused naming its key by `get`,
/// `get_many`, iteration and `verify`, over every source; within the
/// limit it reads as ever.
#[test]
fn values_over_max_value_size_are_refused_naming_their_key_everywhere() {
    let text = compressible(1 << 20);
    let tree = Value::Map(
        (0..4_000)
            .map(|i| {
                (
                    Value::Str(format!("key {i}").into_bytes(), None),
                    Value::Str(compressible(200 + i % 50), None),
                )
            })
            .collect(),
    );
    let mut raw_tree = Vec::new();
    tree.encode(&mut raw_tree).unwrap();
    let mut builder = Builder::new(zstd()).unwrap();
    builder.insert(b"small", b"a value of a few bytes");
    builder.insert(b"text", &text);
    builder.insert_value(b"tree", true, &tree).unwrap();
    let bytes = builder.to_bytes().unwrap();
    // Both stored compressed: the text whole, the tree item by item.
    let stats = Reader::new(bytes.clone())
        .unwrap()
        .compression_stats()
        .unwrap()
        .unwrap();
    assert_eq!(stats.stats.values, 2, "{stats:?}");
    let limit = (raw_tree.len() as u64).min(text.len() as u64) - 1;
    for (kind, store) in every_source(&bytes) {
        let store = store.with_max_value_size(limit).unwrap();
        assert_eq!(
            store.get(b"small").unwrap().unwrap().value(),
            b"a value of a few bytes",
            "{kind}"
        );
        assert_too_large(
            store.get(b"text").unwrap_err(),
            "text",
            "decodes to 1048576 bytes",
        );
        assert_too_large(store.get(b"tree").unwrap_err(), "tree", "decodes to more");
        assert!(matches!(
            store.get_many(&[&b"small"[..], b"text"]),
            Err(Error::ValueTooLarge { .. })
        ));
        let e = store.verify().unwrap_err();
        assert!(matches!(e, Error::ValueTooLarge { .. }), "{kind}: {e}");
        assert!(store.iter().any(|r| r.is_err()), "{kind}");
        // dig with an empty path expands the whole tree: refused too.
        let e = store.dig_with(b"tree", &[], false, |_, _| ()).unwrap_err();
        assert_too_large(e, "tree", "decodes to more");
    }
    // Raw values: the limit applies to what is stored.
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    builder.insert(b"raw", &[7u8; 1000]);
    let raw = builder.to_bytes().unwrap();
    for (kind, store) in every_source(&raw) {
        let store = store.with_max_value_size(999).unwrap();
        assert_too_large(store.get(b"raw").unwrap_err(), "raw", "is 1000 bytes");
        let store = store.with_max_value_size(1000).unwrap();
        assert_eq!(
            store.get(b"raw").unwrap().unwrap().value().len(),
            1000,
            "{kind}"
        );
    }
    // The default reads all of them.
    let store = Reader::new(bytes).unwrap();
    assert_eq!(store.get(b"text").unwrap().unwrap().value(), &text[..]);
    assert_eq!(store.get(b"tree").unwrap().unwrap().value(), &raw_tree[..]);
    store.verify().unwrap();
}

#[test]
fn max_value_size_is_at_least_one_byte() {
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    builder.insert(b"k", b"v");
    let store = Reader::new(builder.to_bytes().unwrap()).unwrap();
    let e = store.with_max_value_size(0).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidOption {
                name: "max_value_size",
                ..
            }
        ),
        "{e}"
    );
}

/// A record read into a buffer of its own (from a file, a server, or
/// decoded) keeps that buffer when made owned: the bindings' remote reads
/// made every value owned, a second copy of what the transport had read.
#[test]
fn an_owned_record_is_not_copied_again() {
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    builder.insert(b"long", &vec![9u8; 100_000]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    std::fs::write(&path, builder.to_bytes().unwrap()).unwrap();
    let store = Reader::new(FileSource::new(std::fs::File::open(&path).unwrap()).unwrap()).unwrap();
    let found = store.get(b"long").unwrap().unwrap();
    let at = found.value().as_ptr();
    let owned = found.into_owned();
    assert_eq!(owned.value().as_ptr(), at);
    assert_eq!(owned.value(), &vec![9u8; 100_000][..]);
    assert_eq!(owned.key(), b"long");
}
