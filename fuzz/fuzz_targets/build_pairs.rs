//! Builds from arbitrary pairs: the store opens, verifies, and finds every
//! key with its last value; a repeated key is a DuplicateKey error under
//! the default policy and the last value under `OnDuplicate::Last`; with
//! or without compressed values. An empty value is a tombstone in every
//! other input (a dataset's overlay: fingerprints, no value), found as
//! one; a key it does not hold is absent.
#![no_main]

use std::collections::HashMap;

use hashfile::{BuildOptions, Builder, Error, OnDuplicate, Reader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    // Pairs split at 0xFF bytes: key, value, key, value, ...
    let parts: Vec<&[u8]> = rest.split(|&b| b == 0xFF).collect();
    let pairs: Vec<(&[u8], &[u8])> = parts
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| (c[0], c[1]))
        .collect();
    let options = BuildOptions {
        on_duplicate: if choice & 1 == 0 {
            OnDuplicate::Error
        } else {
            OnDuplicate::Last
        },
        keys_per_part: u64::from((choice >> 1) & 0x3f).max(1) * 4,
        // The top bit: values compressed (and decoded by every lookup):
        // at one level, at two (long values at the second), or as `auto`
        // chooses, by the count of pairs.
        compression: if choice & 0x80 == 0 {
            hashfile::Compression::None
        } else {
            match pairs.len() % 3 {
                0 => hashfile::Compression::zstd(1),
                1 => hashfile::Compression::Zstd {
                    level: 1,
                    long_level: 3,
                },
                _ => hashfile::Compression::Auto,
            }
        },
        // Bit 6: an overlay's store, with fingerprints and tombstones.
        fingerprints: choice & 0x40 != 0,
        ..Default::default()
    };
    let overlay = options.fingerprints;
    let mut builder = Builder::new(options.clone()).unwrap();
    let mut expected: HashMap<&[u8], Option<&[u8]>> = HashMap::new();
    for (k, v) in &pairs {
        if overlay && v.is_empty() {
            builder.insert_tombstone(k, false);
            expected.insert(k, None);
        } else {
            builder.insert(k, v);
            expected.insert(k, Some(v));
        }
    }
    match builder.to_bytes() {
        Ok(bytes) => {
            let store = Reader::new(bytes.as_slice()).unwrap();
            store.verify().unwrap();
            assert_eq!(store.len(), expected.len() as u64);
            assert_eq!(store.has_fingerprints(), overlay);
            for (k, v) in &expected {
                let found = store.get(k).unwrap().unwrap();
                match v {
                    Some(v) => assert_eq!(found.value(), *v),
                    None => assert_eq!(found.kind(), hashfile::ValueKind::Tombstone),
                }
            }
            for absent in [&b"\xFE-absent"[..], rest] {
                if !expected.contains_key(absent) {
                    assert!(store.get(absent).unwrap().is_none());
                }
            }
        }
        Err(Error::DuplicateKey { .. }) => {
            assert!(options.on_duplicate == OnDuplicate::Error && expected.len() < pairs.len())
        }
        Err(Error::InvalidOption { .. }) => {}
        Err(e) => panic!("build failed: {e}"),
    }
});
