//! Past 4 GiB: a store larger than 4 GiB, and a dataset whose shards
//! together pass 4 GiB, written, read back key by key, iterated and
//! verified; the store is also dumped by the `hashfile` CLI (Ruby, through
//! the extension `rake compile` builds, which `rake cargo_test` runs
//! first). Offsets past 2³² must survive every step (slots, records,
//! section table, checksums over long sections).
//!
//! About a minute and a half in release builds (`rake cargo_test`, CI);
//! skipped in debug builds, where the byte loops take several minutes
//! (failed there when `HASHFILE_REQUIRE_RELEASE=1`).

#[path = "../../hashfile-remote/tests/support/mod.rs"]
mod support;

use std::path::PathBuf;

use hashfile::{BuildOptions, Builder};
use hashfile_runtime::dataset::{Dataset, DatasetBuilder};

/// 5 values of 900 MiB: 4.4 GiB of values.
const VALUES: u8 = 5;
const VALUE_LEN: usize = 900 << 20;

/// What the readers here take: the values are past the default
/// `max_value_size`.
const MAX_VALUE_SIZE: u64 = 1 << 30;

/// The value of key `i`: `VALUE_LEN` bytes of `b'a' + i`, with `i` again in
/// its last byte (a value read from another record, or cut short, fails).
fn value(i: u8) -> Vec<u8> {
    let mut v = vec![b'a' + i; VALUE_LEN];
    *v.last_mut().unwrap() = i;
    v
}

fn is_value(i: u8, bytes: &[u8]) -> bool {
    bytes.len() == VALUE_LEN
        && bytes[..VALUE_LEN - 1].iter().all(|&b| b == b'a' + i)
        && bytes[VALUE_LEN - 1] == i
}

/// Under cargo's target directory, not /tmp, which may be in memory.
fn work_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))).unwrap()
}

#[test]
fn a_store_past_4_gib_reads_iterates_and_verifies() {
    require_env!(
        "HASHFILE_REQUIRE_RELEASE",
        !cfg!(debug_assertions),
        "too slow in a debug build: run cargo test --profile test-release"
    );
    let dir = work_dir();
    let path = dir.path().join("big.hf");
    // Records go straight to disk: the builder holds one value at a time.
    let mut builder = Builder::streaming(BuildOptions::default(), &path).unwrap();
    builder.insert(b"first", b"small before");
    for i in 0..VALUES {
        builder.insert(format!("big-{i}").as_bytes(), &value(i));
    }
    builder.insert(b"last", b"small after 4 GiB");
    let len = builder.write_file(&path).unwrap();
    assert!(len > 4 << 30, "{len} bytes");

    // Values of 900 MiB: past the default max_value_size (256 MiB).
    let store = hashfile_runtime::open_store(
        path.to_str().unwrap(),
        &Default::default(),
        hashfile_runtime::LocalOpen::Mapped,
    )
    .unwrap()
    .with_max_value_size(MAX_VALUE_SIZE)
    .unwrap();
    assert_eq!(store.len(), VALUES as u64 + 2);
    assert_eq!(
        store.get(b"first").unwrap().unwrap().value(),
        b"small before"
    );
    assert_eq!(
        store.get(b"last").unwrap().unwrap().value(),
        b"small after 4 GiB"
    );
    for i in 0..VALUES {
        let record = store.get(format!("big-{i}").as_bytes()).unwrap().unwrap();
        assert!(is_value(i, record.value()), "big-{i}");
    }
    assert!(store.get(b"big-9").unwrap().is_none());
    // Iteration (what `hashfile dump` does), in the order added.
    let keys: Vec<Vec<u8>> = store.iter().map(|r| r.unwrap().key().to_vec()).collect();
    let mut expected = vec![b"first".to_vec()];
    expected.extend((0..VALUES).map(|i| format!("big-{i}").into_bytes()));
    expected.push(b"last".to_vec());
    assert_eq!(keys, expected);
    store.verify().unwrap();
    dump_with_the_cli(&path);
}

/// `hashfile dump` of the big store: every entry, in order, as one JSON
/// Lines `[key, value]` row, the 900 MiB values whole.
fn dump_with_the_cli(path: &std::path::Path) {
    use std::io::{BufRead, BufReader};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    assert!(
        root.join("lib/hashfile/hashfile_ruby.so").exists(),
        "the Ruby extension is not built: run rake compile (rake cargo_test does)"
    );
    let mut child = std::process::Command::new("ruby")
        .arg("-I")
        .arg(root.join("lib"))
        .arg(root.join("exe/hashfile"))
        .arg("dump")
        .arg("--max-value-size")
        .arg(MAX_VALUE_SIZE.to_string())
        .arg(path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("ruby runs");
    let mut rows = Vec::new();
    for line in BufReader::with_capacity(1 << 20, child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let row = match line.strip_prefix("[\"big-") {
            Some(rest) => {
                let i = rest.as_bytes()[0] - b'0';
                let expected = format!(
                    "{i}\",\"{}\\u000{i}\"]",
                    std::str::from_utf8(&value(i)[..VALUE_LEN - 1]).unwrap()
                );
                assert!(rest == expected, "big-{i} dumps as its value");
                format!("big-{i}")
            }
            None => line,
        };
        rows.push(row);
    }
    assert!(child.wait().unwrap().success(), "hashfile dump succeeds");
    let mut expected = vec![r#"["first","small before"]"#.to_string()];
    expected.extend((0..VALUES).map(|i| format!("big-{i}")));
    expected.push(r#"["last","small after 4 GiB"]"#.to_string());
    assert_eq!(rows, expected);
}

#[test]
fn a_dataset_past_4_gib_reads_iterates_and_verifies() {
    require_env!(
        "HASHFILE_REQUIRE_RELEASE",
        !cfg!(debug_assertions),
        "too slow in a debug build: run cargo test --profile test-release"
    );
    let dir = work_dir();
    let mut builder = DatasetBuilder::new(2, BuildOptions::default()).unwrap();
    for i in 0..VALUES {
        builder.insert(format!("big-{i}").as_bytes(), &value(i));
    }
    for i in 0..1000 {
        builder.insert(format!("small-{i}").as_bytes(), format!("v{i}").as_bytes());
    }
    let manifest = builder.write(dir.path()).unwrap();
    drop(builder);
    let total: u64 = manifest.shards.iter().map(|s| s.bytes).sum();
    assert!(total > 4 << 30, "{total} bytes");

    let mut dataset = Dataset::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
    dataset.set_max_value_size(MAX_VALUE_SIZE).unwrap();
    assert_eq!(dataset.len(), VALUES as u64 + 1000);
    for i in 0..VALUES {
        let record = dataset.get(format!("big-{i}").as_bytes()).unwrap().unwrap();
        assert!(is_value(i, record.value()), "big-{i}");
    }
    for i in (0..1000).step_by(37) {
        let record = dataset
            .get(format!("small-{i}").as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(record.value(), format!("v{i}").as_bytes());
    }
    assert_eq!(dataset.iter().count() as u64, dataset.len());
    dataset.verify().unwrap();
}
