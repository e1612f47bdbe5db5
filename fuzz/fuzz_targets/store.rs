//! Arbitrary bytes as a store, read in place and through a source that
//! hands out copies: open, look up keys that may be in it and random ones,
//! iterate, verify. Nothing may panic, and a lookup may return only a
//! record whose key is the key asked for.
#![no_main]

use hashfile::read::{Piece, Source};
use hashfile::Reader;
use libfuzzer_sys::fuzz_target;

/// Serves the bytes as owned copies of at most 7 bytes per read, so the
/// reader's short-read and not-in-place paths run too.
struct Choppy<'a>(&'a [u8]);

impl Source for Choppy<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> std::io::Result<Piece<'_>> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.0.len());
        let end = start + len.min(7).min(self.0.len() - start);
        Ok(Piece::owned(self.0[start..end].to_vec()))
    }
}

fn exercise<S: Source>(store: &Reader<S>, data: &[u8]) {
    // Keys the store may hold (from its own records) and a few that it
    // should not.
    let mut keys: Vec<Vec<u8>> = store
        .iter()
        .take(64)
        .filter_map(|r| r.ok())
        .map(|r| r.key().to_vec())
        .collect();
    keys.push(b"".to_vec());
    keys.push(data.iter().take(16).copied().collect());
    for key in &keys {
        if let Ok(Some(record)) = store.get(key) {
            assert_eq!(
                record.key(),
                key.as_slice(),
                "a lookup returned another key's record"
            );
            let _ = record.decode();
        }
    }
    let _ = store.iter().count();
    let _ = store.verify();
    let _ = store.info();
    let _ = store.compression_stats();
}

fuzz_target!(|data: &[u8]| {
    if let Ok(store) = Reader::new(data) {
        exercise(&store, data);
    }
    if let Ok(store) = Reader::new(Choppy(data)) {
        exercise(&store, data);
    }
});
