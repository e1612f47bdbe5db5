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
        builder.insert(format!("key{i}").as_bytes(), format!("value {i} {}", "x".repeat(20)).as_bytes());
    }
    builder.write_file(&path).unwrap();

    let store = Reader::open_guarded(&path).unwrap();
    assert!(store.source().is_guarded());
    assert_eq!(store.get(b"key7").unwrap().unwrap().value(), format!("value 7 {}", "x".repeat(20)).as_bytes());
    store.check_faults().unwrap();

    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(4096).unwrap();
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
    assert!(matches!(Reader::open_guarded(&path), Err(Error::Truncated { .. })));
}
