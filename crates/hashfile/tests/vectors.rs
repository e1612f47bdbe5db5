//! The checked-in test vector: tests/vectors/small.hf, described in
//! docs/FORMAT.md. Rebuilding it from the same entries must give the same
//! bytes on every platform and in every later version that writes v1.0.
use hashfile::{BuildOptions, Builder, Reader, ValueKind};

pub fn small_vector() -> Builder {
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    b.insert_tagged(b"apple", true, b"red", ValueKind::Utf8);
    b.insert_tagged(b"banana", true, b"yellow", ValueKind::Utf8);
    b.insert_tagged("caf\u{e9}".as_bytes(), true, "cr\u{e8}me".as_bytes(), ValueKind::Utf8);
    b.insert_tagged(b"bytes\x00\xff", false, b"\x00\x01\x02\xff", ValueKind::Binary);
    b.insert_tagged(b"empty", true, b"", ValueKind::Ascii);
    b
}

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/small.hf");

#[test]
fn rebuilds_the_test_vector_byte_for_byte() {
    let built = small_vector().to_bytes().unwrap();
    if std::env::var_os("HASHFILE_WRITE_VECTORS").is_some() {
        std::fs::write(PATH, &built).unwrap();
    }
    let checked_in = std::fs::read(PATH).expect("tests/vectors/small.hf (regenerate with HASHFILE_WRITE_VECTORS=1)");
    assert_eq!(built, checked_in, "the builder's output changed: that is a format change");
}

#[test]
fn reads_the_test_vector() {
    let store = Reader::open(PATH).unwrap();
    store.verify().unwrap();
    assert_eq!(store.len(), 5);
    assert_eq!(store.get(b"banana").unwrap().unwrap().value, b"yellow");
    assert_eq!(store.get("caf\u{e9}".as_bytes()).unwrap().unwrap().value, "cr\u{e8}me".as_bytes());
    assert_eq!(store.get(b"bytes\x00\xff").unwrap().unwrap().kind, ValueKind::Binary);
    assert_eq!(store.get(b"cherry").unwrap(), None);
    assert_eq!(store.header().hash_seed, 0);
}
