//! What a dataset's overlay is made of: a store with key fingerprints,
//! which answers a key it does not hold from its index alone, and
//! tombstones, which mark deleted keys (docs/FORMAT.md, "Fingerprints",
//! "Delta generations").

mod support;

use std::cell::RefCell;
use std::io;
use std::ops::Range;

use hashfile::format::{SectionId, ValueKind, REQUIRED_TOMBSTONES};
use hashfile::read::{Piece, Source};
use hashfile::{BuildOptions, Builder, Error, Reader};
use support::{TestSource, KINDS};

fn overlay(n: usize, deleted_every: usize) -> Vec<u8> {
    let mut builder = Builder::new(BuildOptions {
        fingerprints: true,
        ..BuildOptions::default()
    })
    .unwrap();
    for i in 0..n {
        let key = format!("key-{i}");
        if i % deleted_every == 0 {
            builder.insert_tombstone(key.as_bytes(), true);
        } else {
            builder.insert(key.as_bytes(), format!("value {i}").as_bytes());
        }
    }
    builder.to_bytes().unwrap()
}

/// A source in memory, read through pieces, that remembers every range
/// asked for.
struct Recording {
    bytes: Vec<u8>,
    reads: RefCell<Vec<Range<u64>>>,
}

impl Source for Recording {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        self.reads.borrow_mut().push(offset..offset + len as u64);
        self.bytes.read_at(offset, len)
    }
    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        self.reads.borrow_mut().push(offset..offset + len as u64);
        self.bytes.read_exact_at(offset, len)
    }
}

#[test]
fn a_store_with_fingerprints_and_tombstones_reads_every_key_over_every_source() {
    let bytes = overlay(2_000, 7);
    for kind in KINDS {
        let store = Reader::new(TestSource::new(&bytes, kind)).unwrap();
        assert!(store.has_fingerprints(), "{kind}");
        assert_eq!(store.header().minor, 1, "{kind}: 1.1 has fingerprints");
        assert_ne!(store.header().required_flags & REQUIRED_TOMBSTONES, 0);
        for i in 0..2_000 {
            let key = format!("key-{i}");
            let found = store.get(key.as_bytes()).unwrap().expect("held");
            if i % 7 == 0 {
                assert_eq!(found.kind(), ValueKind::Tombstone, "{kind} {key}");
                assert_eq!(found.value(), b"");
            } else {
                assert_eq!(found.value(), format!("value {i}").as_bytes());
            }
        }
        for i in 2_000..4_000 {
            assert!(store.get(format!("key-{i}").as_bytes()).unwrap().is_none());
        }
        let asked: Vec<String> = (1_900..2_100).map(|i| format!("key-{i}")).collect();
        let found = store.get_many(&asked).unwrap();
        for (i, found) in (1_900..2_100).zip(found) {
            assert_eq!(found.is_some(), i < 2_000, "{kind} key-{i}");
        }
        store.verify().unwrap();
    }
}

#[test]
fn a_key_the_store_does_not_hold_reads_no_record() {
    let bytes = overlay(5_000, 3);
    let store = Reader::new(Recording {
        bytes,
        reads: RefCell::new(Vec::new()),
    })
    .unwrap();
    let records = store.header().section(SectionId::Records);
    let records = records.offset..records.end();
    let touched = |reads: &[Range<u64>]| {
        reads
            .iter()
            .filter(|r| r.start < records.end && records.start < r.end)
            .count()
    };
    store.source().reads.borrow_mut().clear();
    let mut record_reads = 0;
    for i in 0..100_000 {
        let key = format!("absent-{i}");
        assert!(store.get(key.as_bytes()).unwrap().is_none());
        record_reads += touched(&store.source().reads.borrow());
        store.source().reads.borrow_mut().clear();
    }
    // 100,000 misses, each matching its slot's fingerprint once in 65,536.
    assert!(record_reads <= 10, "{record_reads} misses read a record");
    let absent: Vec<String> = (0..20_000).map(|i| format!("absent-{i}")).collect();
    assert!(store.get_many(&absent).unwrap().iter().all(Option::is_none));
    assert!(
        touched(&store.source().reads.borrow()) <= 5,
        "a batch of misses read records"
    );
    // A key it holds reads its record.
    store.source().reads.borrow_mut().clear();
    assert!(store.get(b"key-1").unwrap().is_some());
    assert_eq!(touched(&store.source().reads.borrow()), 1);
}

#[test]
fn verify_finds_a_damaged_fingerprint_and_a_lookup_never_gets_another_key() {
    let bytes = overlay(300, 5);
    let header = Reader::new(&bytes[..]).unwrap().header().clone();
    let prints = header.section(SectionId::Fingerprints);
    assert_eq!(prints.length, 600);
    let mut damaged = bytes.clone();
    damaged[prints.offset as usize] ^= 0x5a;
    let error = Reader::new(&damaged[..]).unwrap().verify().unwrap_err();
    assert!(
        matches!(
            &error,
            Error::Checksum {
                section: "fingerprints",
                ..
            }
        ),
        "{error}"
    );
    // A fingerprint that does not match makes its key absent, never
    // another key's record.
    let store = Reader::new(&damaged[..]).unwrap();
    for i in 0..300 {
        let key = format!("key-{i}");
        if let Some(found) = store.get(key.as_bytes()).unwrap() {
            assert_eq!(found.key(), key.as_bytes());
        }
    }
}

#[test]
fn a_store_without_fingerprints_keeps_version_1_0_and_its_bytes() {
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    builder.insert(b"a", b"1");
    let bytes = builder.to_bytes().unwrap();
    let store = Reader::new(&bytes[..]).unwrap();
    assert_eq!(store.header().minor, 0);
    assert!(!store.has_fingerprints());
    assert_eq!(store.header().required_flags & REQUIRED_TOMBSTONES, 0);
}

#[test]
fn fingerprints_are_for_builds_that_fit_their_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut builder = Builder::new(BuildOptions {
        fingerprints: true,
        memory: hashfile::MemoryLimit::bytes(hashfile::MIN_MEMORY_LIMIT).unwrap(),
        ..BuildOptions::default()
    })
    .unwrap();
    for i in 0..2_000_000u32 {
        builder.insert(&i.to_le_bytes(), b"");
    }
    let error = builder.write_file(&dir.path().join("big.hf")).unwrap_err();
    assert!(
        matches!(
            &error,
            Error::InvalidOption {
                name: "fingerprints",
                ..
            }
        ),
        "{error}"
    );
    assert!(!dir.path().join("big.hf").exists());
}
