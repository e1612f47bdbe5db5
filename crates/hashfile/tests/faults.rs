//! A store truncated under a guarded memory map: the reads that touch the
//! missing pages finish (on zeros), and `check_faults` reports the change.
#![cfg(feature = "mmap")]

use hashfile::read::fault;
use hashfile::{BuildOptions, Builder, Error, Reader};

#[test]
fn a_store_truncated_under_a_guarded_map_reports_the_change() {
    fault::install().unwrap();
    assert!(fault::installed());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    for i in 0..100_000 {
        builder.insert(
            format!("key{i}").as_bytes(),
            format!("value {i} {}", "x".repeat(20)).as_bytes(),
        );
    }
    builder.write_file(&path).unwrap();

    let store = Reader::open_guarded(&path).unwrap();
    assert!(store.source().is_guarded());
    assert_eq!(
        store.get(b"key7").unwrap().unwrap().value(),
        format!("value 7 {}", "x".repeat(20)).as_bytes()
    );
    store.check_faults().unwrap();

    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(4096)
        .unwrap();
    // Every lookup completes: wrong-looking or absent on zeros, or an
    // error, but never a crash; the fault count then condemns the result.
    for i in (0..100_000).step_by(997) {
        let _ = store.get(format!("key{i}").as_bytes());
    }
    assert!(store.source().faults() > 0);
    assert!(matches!(store.check_faults(), Err(Error::Changed { .. })));
    assert!(store.iter().count() <= 100_001);
    assert!(store.verify().is_err());

    // Other stores are untouched by the fault, and a new map of the
    // shortened file is refused at open, as any truncated store is.
    let other = dir.path().join("other.hf");
    let mut small = Builder::new(BuildOptions::default()).unwrap();
    small.insert(b"a", b"1");
    small.write_file(&other).unwrap();
    let fine = Reader::open_guarded(&other).unwrap();
    assert_eq!(fine.get(b"a").unwrap().unwrap().value(), b"1");
    fine.check_faults().unwrap();
    assert!(matches!(
        Reader::open_guarded(&path),
        Err(Error::Truncated { .. })
    ));
}

/// A reader knows which file it mapped: publishing a new store over the
/// path (a rename) or deleting it makes the reader stale; rewriting the
/// same file does not change which file the path names.
#[test]
fn a_reader_is_stale_once_another_file_is_published_at_its_path() {
    fault::install().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    let build = |value: &[u8]| {
        let mut builder = Builder::new(BuildOptions::default()).unwrap();
        builder.insert(b"k", value);
        builder.write_file(&path).unwrap();
    };
    build(b"1");
    let first = Reader::open_guarded(&path).unwrap();
    assert!(!first.is_stale(&path));
    build(b"2");
    assert!(first.is_stale(&path), "a rename published another file");
    assert_eq!(
        first.get(b"k").unwrap().unwrap().value(),
        b"1",
        "the stale reader still reads its own file"
    );
    let second = Reader::open_guarded(&path).unwrap();
    assert!(!second.is_stale(&path));
    assert_eq!(second.get(b"k").unwrap().unwrap().value(), b"2");
    std::fs::remove_file(&path).unwrap();
    assert!(second.is_stale(&path), "no file at the path");
    // A symbolic link to the store is followed, as opening follows it.
    build(b"3");
    let link = dir.path().join("current.hf");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let linked = Reader::open_guarded(&link).unwrap();
    assert!(!linked.is_stale(&link));
    build(b"4");
    assert!(linked.is_stale(&link));
}
