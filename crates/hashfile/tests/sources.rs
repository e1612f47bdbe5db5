//! The reader over byte sources other than memory: how many reads open and
//! lookups take, short reads, large records, chunked verify, and read
//! errors.
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use hashfile::read::{Piece, Source};
use hashfile::{BuildOptions, Builder, Error, Reader};

mod support;
use support::PieceSource;

fn store(n: u64, value_len: usize) -> Vec<u8> {
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    for i in 0..n {
        b.insert(format!("key-{i}").as_bytes(), &vec![b'v'; value_len]);
    }
    b.to_bytes().unwrap()
}

/// Open reads the header and the seed index, once each; a lookup then
/// reads one seed block, one slot and one record, plus one remap entry for
/// the few keys whose slot was past `n` before remapping.
#[test]
fn reads_per_open_and_per_lookup() {
    let n = 10_000u64;
    let bytes = store(n, 8);
    assert!(bytes.len() < 1 << 20, "one block holds the whole store");
    let source = PieceSource::new(&bytes, 1 << 20);
    let reader = Reader::new(source).unwrap();
    assert_eq!(reader.source().reads(), 2, "header and seed index");

    let mut per_lookup = [0u64; 8];
    for i in 0..2 * n {
        let before = reader.source().reads();
        let found = reader.get(format!("key-{i}").as_bytes()).unwrap();
        assert_eq!(found.is_some(), i < n);
        per_lookup[(reader.source().reads() - before) as usize] += 1;
    }
    assert_eq!(per_lookup[0..3], [0, 0, 0]);
    assert_eq!(
        per_lookup[5..],
        [0, 0, 0],
        "no lookup takes more than 4 reads: {per_lookup:?}"
    );
    // About 1 - load_factor of the keys go through the remap.
    let remapped = per_lookup[4] as f64 / (2 * n) as f64;
    assert!(remapped > 0.0 && remapped < 0.05, "{per_lookup:?}");
}

/// A source that stops at the end of small blocks: records longer than a
/// block, and record headers cut by a block's end, are read on.
#[test]
fn records_longer_than_a_block_are_read_on() {
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    let big = vec![7u8; 10_000];
    b.insert(b"big", &big);
    b.insert(b"small", b"s");
    // A key of 300 bytes: its two-byte length straddles many block ends.
    b.insert(&[b'k'; 300], b"long key");
    let bytes = b.to_bytes().unwrap();
    for block in [1, 2, 3, 64, 4096] {
        let reader = Reader::new(PieceSource::new(&bytes, block)).unwrap();
        let before = reader.source().reads();
        assert_eq!(
            reader.get(b"big").unwrap().unwrap().value(),
            big.as_slice(),
            "block {block}"
        );
        assert!(
            reader.source().reads() - before > 2,
            "block {block}: the record took more than one read"
        );
        assert_eq!(reader.get(b"small").unwrap().unwrap().value(), b"s");
        assert_eq!(
            reader.get(&[b'k'; 300]).unwrap().unwrap().value(),
            b"long key"
        );
        reader.verify().unwrap();
    }
}

/// Refuses any exact read longer than `cap` bytes and returns at most
/// `cap` for a prefix read: a reader that asked for a whole large section
/// at once would fail.
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
}

impl Source for Capped {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        self.read_exact_at(offset, len.min(self.cap))
    }

    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        if len > self.cap {
            return Err(io::Error::other(format!("asked for {len} bytes at once")));
        }
        let start = offset as usize;
        Ok(Piece::borrowed(&self.bytes[start..start + len]))
    }
}

#[test]
fn verify_hashes_sections_in_chunks() {
    let bytes = store(200_000, 20);
    assert!(bytes.len() > 3 * hashfile::read::VERIFY_CHUNK);
    let reader = Reader::new(Capped {
        bytes,
        cap: hashfile::read::VERIFY_CHUNK,
    })
    .unwrap();
    reader.verify().unwrap();
    assert_eq!(
        reader.get(b"key-199999").unwrap().unwrap().value(),
        [b'v'; 20]
    );
    // The same store through a source that gives less than a chunk fails
    // verify with the source's error, as an I/O error.
    let small = Capped {
        bytes: reader.source().bytes.clone(),
        cap: 64 << 10,
    };
    match Reader::new(small).unwrap().verify() {
        Err(Error::Io { source, .. }) => {
            assert!(source.to_string().starts_with("asked for"), "{source}")
        }
        other => panic!("expected the source's error, got {other:?}"),
    }
}

/// Fails every read after the first `good` ones.
struct Failing {
    bytes: Vec<u8>,
    good: u64,
    reads: AtomicU64,
}

impl Source for Failing {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        if self.reads.fetch_add(1, Ordering::Relaxed) >= self.good {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the network went away",
            ));
        }
        let start = offset as usize;
        Ok(Piece::owned(self.bytes[start..start + len].to_vec()))
    }
}

#[test]
fn read_errors_are_io_errors_not_corruption() {
    let bytes = store(1_000, 8);
    for good in 0..6 {
        let source = Failing {
            bytes: bytes.clone(),
            good,
            reads: AtomicU64::new(0),
        };
        let result = Reader::new(source).and_then(|reader| {
            reader
                .get(b"key-1")
                .map(|found| found.map(|r| r.value().to_vec()))
        });
        match result {
            Ok(Some(value)) => assert!(good >= 5, "{good}: {value:?}"),
            Err(Error::Io { source, .. }) => {
                assert_eq!(source.kind(), io::ErrorKind::ConnectionReset, "{good}")
            }
            other => panic!("{good}: expected the read error, got {other:?}"),
        }
    }
}

#[test]
fn a_file_source_reads_what_a_map_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    for i in 0..5_000u32 {
        b.insert(&i.to_le_bytes(), &vec![(i % 251) as u8; (i % 700) as usize]);
    }
    b.write_file(&path).unwrap();
    let mapped = Reader::open(&path).unwrap();
    let file =
        Reader::new(hashfile::read::FileSource::new(std::fs::File::open(&path).unwrap()).unwrap())
            .unwrap();
    assert!(file.source().as_slice().is_none());
    assert_eq!(
        mapped.source().as_slice().map(<[u8]>::len),
        Some(std::fs::metadata(&path).unwrap().len() as usize)
    );
    for i in 0..5_000u32 {
        assert_eq!(
            file.get(&i.to_le_bytes()).unwrap(),
            mapped.get(&i.to_le_bytes()).unwrap(),
            "{i}"
        );
    }
    assert!(file
        .iter()
        .map(Result::unwrap)
        .eq(mapped.iter().map(Result::unwrap)));
    file.verify().unwrap();
}

#[test]
fn pieces_narrow_without_copying() {
    let block: std::sync::Arc<[u8]> = std::sync::Arc::from(&b"0123456789"[..]);
    let piece = Piece::shared(block.clone(), 2..8);
    assert_eq!(&*piece, b"234567");
    assert_eq!(&*piece.clone().truncated(3), b"234");
    assert_eq!(&*piece.truncated(100), b"234567");
    assert_eq!(&*Piece::borrowed(b"abc").truncated(1), b"a");
    assert_eq!(&*Piece::owned(b"abc".to_vec()).truncated(2), b"ab");
    // The default read_exact_at assembles short reads, and a slice's
    // read past its end is an error, not a panic.
    let source = PieceSource::new(b"0123456789", 3);
    assert_eq!(&*source.read_exact_at(1, 8).unwrap(), b"12345678");
    assert!(source.read_exact_at(5, 6).is_err());
    assert_eq!(
        b"abc".as_slice().read_exact_at(3, 1).unwrap_err().kind(),
        io::ErrorKind::UnexpectedEof
    );
    assert_eq!(
        b"abc"
            .as_slice()
            .read_exact_at(u64::MAX, 2)
            .unwrap_err()
            .kind(),
        io::ErrorKind::UnexpectedEof
    );
}

/// Round trips through a block cache: open is two fetches (the first
/// block, the seed index), a cold lookup at most three (four through the
/// remap), a batch of 200 keys as many as one key, and with the index
/// pinned a cold lookup is one. Results equal `get`'s, in order.
#[test]
fn a_block_cache_fetches_a_batch_level_by_level_and_a_pinned_index_leaves_one_fetch_per_lookup() {
    use hashfile::read::{BlockCache, CacheOptions};
    use support::MemoryFetch;
    let n = 100_000u64;
    let bytes = store(n, 20);
    let options = CacheOptions {
        block_len: 4096,
        capacity: 64 << 20,
    };
    let open = || Reader::new(BlockCache::new(MemoryFetch::new(&bytes), options)).unwrap();

    let reader = open();
    assert_eq!(
        reader.source().stats().fetches,
        2,
        "the first block, then the seed index"
    );
    let mut most = 0;
    for i in (0..n).step_by(997) {
        let before = reader.source().stats().fetches;
        assert_eq!(
            reader
                .get(format!("key-{i}").as_bytes())
                .unwrap()
                .unwrap()
                .value(),
            &[b'v'; 20]
        );
        most = most.max(reader.source().stats().fetches - before);
    }
    assert!((2..=4).contains(&most), "a cold lookup took {most} fetches");

    let reader = open();
    let keys: Vec<String> = (0..200u64)
        .map(|i| {
            if i % 10 == 9 {
                format!("absent-{i}")
            } else {
                format!("key-{}", i * 499 % n)
            }
        })
        .collect();
    let before = reader.source().stats();
    let found = reader.get_many(&keys).unwrap();
    let after = reader.source().stats();
    assert!(
        after.fetches - before.fetches <= 4,
        "200 keys took {} fetches",
        after.fetches - before.fetches
    );
    let (fetches, ranges) = (after.fetches - before.fetches, after.ranges - before.ranges);
    assert!(
        ranges > 20 * fetches,
        "the blocks of a level are many ranges of one fetch: {ranges} ranges in {fetches} fetches"
    );
    for (key, record) in keys.iter().zip(&found) {
        assert_eq!(
            record.as_ref().map(|r| r.key()),
            key.starts_with("key-").then_some(key.as_bytes()),
            "{key}"
        );
    }
    let fetches = reader.source().stats().fetches;
    let again = reader.get_many(&keys).unwrap();
    assert_eq!(
        reader.source().stats().fetches,
        fetches,
        "all from the cache the second time"
    );
    assert_eq!(again, found);

    let reader = open();
    reader.prefetch_index().unwrap();
    let pinned = reader.source().stats();
    assert!(
        pinned.pinned_bytes > 2 * n && pinned.pinned_bytes < 4 * n,
        "the index is {} bytes for {n} keys",
        pinned.pinned_bytes
    );
    for i in (0..n).step_by(4999) {
        let before = reader.source().stats().fetches;
        reader.get(format!("key-{i}").as_bytes()).unwrap().unwrap();
        assert!(reader.source().stats().fetches - before <= 1, "key-{i}");
    }
}

/// A batch far larger than the block cache reads in pieces that fit it:
/// fetched ranges grow with the blocks needed, not with keys times
/// evictions, and every result is right.
#[test]
fn a_batch_larger_than_the_cache_fetches_each_block_about_once() {
    use hashfile::read::{BlockCache, CacheOptions};
    use support::MemoryFetch;
    let n = 50_000u64;
    let bytes = store(n, 20);
    let options = CacheOptions {
        block_len: 4096,
        capacity: 64 * 4096,
    };
    let reader = Reader::new(BlockCache::new(MemoryFetch::new(&bytes), options)).unwrap();
    let keys: Vec<String> = (0..20_000u64)
        .map(|i| format!("key-{}", i * 7919 % n))
        .collect();
    let before = reader.source().stats();
    let found = reader.get_many(&keys).unwrap();
    let after = reader.source().stats();
    for (key, record) in keys.iter().zip(&found) {
        assert_eq!(record.as_ref().unwrap().key(), key.as_bytes());
    }
    // Each level reads its blocks in file order, half a cache at a time:
    // every block of the store is fetched about once (a record starting
    // near a block's end brings the next one too), in fetches of up to 32
    // blocks each, where 20,000 keys in random order through a cache of 64
    // blocks used to fetch about 4 blocks per key.
    let blocks = bytes.len() as u64 / 4096 + 1;
    let (misses, fetches) = (after.misses - before.misses, after.fetches - before.fetches);
    eprintln!("{misses} blocks in {fetches} fetches for a store of {blocks} blocks");
    assert!(
        misses <= blocks + blocks / 4,
        "{misses} blocks fetched for {blocks} blocks in the store"
    );
    assert!(fetches <= blocks / 8, "{fetches} fetches");
    assert!(
        after.resident_bytes <= 64 * 4096 + after.pinned_bytes,
        "the cache stayed in its bounds"
    );
}

/// With the seed index read a piece at a time (as for a store whose index
/// is too large to load at open), every key reads the same, alone and in a
/// batch.
#[test]
fn a_seed_index_not_loaded_at_open_is_read_through_the_source() {
    use hashfile::read::{BlockCache, CacheOptions};
    use support::MemoryFetch;
    let n = 30_000u64;
    let bytes = store(n, 12);
    let reader = Reader::with_seed_index_limit(
        BlockCache::new(
            MemoryFetch::new(&bytes),
            CacheOptions {
                block_len: 512,
                capacity: 32 * 512,
            },
        ),
        0,
    )
    .unwrap();
    let local = Reader::new(&bytes[..]).unwrap();
    for i in (0..n).step_by(7) {
        let key = format!("key-{i}");
        assert_eq!(
            reader.get(key.as_bytes()).unwrap(),
            local.get(key.as_bytes()).unwrap(),
            "{key}"
        );
    }
    let keys: Vec<String> = (0..3000u64)
        .map(|i| {
            if i % 5 == 0 {
                format!("absent-{i}")
            } else {
                format!("key-{}", i * 13 % n)
            }
        })
        .collect();
    let fresh = Reader::with_seed_index_limit(
        BlockCache::new(
            MemoryFetch::new(&bytes),
            CacheOptions {
                block_len: 512,
                capacity: 32 * 512,
            },
        ),
        0,
    )
    .unwrap();
    let before = fresh.source().stats().fetches;
    assert_eq!(
        fresh.get_many(&keys).unwrap(),
        reader.get_many(&keys).unwrap()
    );
    // The index entries are a level of their own, fetched in pieces like
    // the others: far fewer fetches than keys.
    let fetches = fresh.source().stats().fetches - before;
    let blocks = bytes.len() as u64 / 512 + 1;
    assert!(
        fetches <= blocks / 8,
        "{fetches} fetches for 3,000 keys, {blocks} blocks"
    );
    let many = reader.get_many(&keys).unwrap();
    for (key, record) in keys.iter().zip(many) {
        assert_eq!(record, local.get(key.as_bytes()).unwrap(), "{key}");
    }
}

/// A self-consistent header claiming 2^40 keys in a 16 TiB object, from a
/// source that says it is that long: open asks for no more than its
/// stated bounds (the first read, and the seed index only when at most
/// `LOAD_SEED_INDEX_UP_TO`), whatever the header claims.
#[test]
fn a_header_claiming_a_huge_index_makes_open_ask_for_little() {
    use hashfile::format::{
        BuildParameters, Geometry, Header, Section, VERSION_MAJOR, VERSION_MINOR,
    };
    use hashfile::read::{
        BlockCache, CacheOptions, RangeFetch, LOAD_SEED_INDEX_UP_TO, OPEN_READ_LEN,
    };
    use std::sync::atomic::{AtomicU64, Ordering};
    let n = 1u64 << 40;
    let file_len = 16u64 << 40;
    let geometry = Geometry {
        entry_count: n,
        bucket_count: n / 4,
        dense_bucket_count: 0,
        dense_hash_threshold: 0,
        slot_count: n,
        part_count: 1,
    };
    let header_len = Header::encoded_len(false, false) as u64;
    let seed_index_len = ((n / 4).div_ceil(128) + 1) * 4;
    let records_len = file_len / 4;
    let slots_len =
        hashfile::bits::packed_len(n, hashfile::bits::bits_for(records_len - 1)).unwrap();
    let mut at = header_len;
    let mut section = |length: u64| {
        let s = Section {
            offset: at,
            length,
            checksum: 0,
        };
        at += length;
        s
    };
    let remap_len = hashfile::bits::packed_len(0, hashfile::bits::bits_for(n - 1)).unwrap();
    let sections = [
        section(seed_index_len),
        section(0),
        section(remap_len),
        section(slots_len),
        section(records_len),
        Section::default(), // pilots and parts: the compact index's
        Section::default(),
        Section::default(), // no dictionary: values stored raw
        Section::default(), // no fingerprints
    ];
    let header = Header {
        major: VERSION_MAJOR,
        minor: VERSION_MINOR,
        header_len: header_len as u32,
        required_flags: 0,
        file_len,
        hash_seed: 0,
        geometry,
        seed_block_len: 128,
        parameters: BuildParameters {
            keys_per_bucket: 4.0,
            load_factor: 1.0,
            dense_key_fraction: 0.0,
            dense_bucket_fraction: 0.0,
        },
        sections,
    };
    let encoded = header.encode();
    assert_eq!(
        Header::decode(&encoded, file_len).unwrap(),
        header,
        "the header is self-consistent"
    );

    struct Liar {
        header: Vec<u8>,
        size: u64,
        asked: AtomicU64,
    }
    impl RangeFetch for Liar {
        fn size(&self) -> u64 {
            self.size
        }
        fn fetch(&self, ranges: &[std::ops::Range<u64>]) -> std::io::Result<Vec<Vec<u8>>> {
            let total: u64 = ranges.iter().map(|r| r.end - r.start).sum();
            self.asked.fetch_add(total, Ordering::Relaxed);
            if total > 64 << 20 {
                return Err(std::io::Error::other(format!("asked for {total} bytes")));
            }
            Ok(ranges
                .iter()
                .map(|r| {
                    (r.start..r.end)
                        .map(|i| self.header.get(i as usize).copied().unwrap_or(0))
                        .collect()
                })
                .collect())
        }
    }
    let liar = Liar {
        header: encoded,
        size: file_len,
        asked: AtomicU64::new(0),
    };
    let cache = BlockCache::new(liar, CacheOptions::default());
    let opened = Reader::new(cache);
    let asked = match &opened {
        Ok(reader) => reader.source().fetcher().asked.load(Ordering::Relaxed),
        Err(error) => panic!("{error}"),
    };
    assert!(seed_index_len > LOAD_SEED_INDEX_UP_TO);
    assert!(
        asked <= OPEN_READ_LEN as u64 + 2 * 16384,
        "open asked for {asked} bytes"
    );
    // A lookup reads zeros where the header promised an index: an error or
    // nothing, never a panic.
    let reader = opened.unwrap();
    assert!(!matches!(reader.get(b"anything"), Ok(Some(_))));
}

/// A source that notes the read-ahead hints it is given.
struct Hinted {
    bytes: Vec<u8>,
    hints: std::sync::Mutex<Vec<(u64, u64)>>,
}

impl Source for Hinted {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        self.bytes.read_at(offset, len)
    }

    fn will_read(&self, offset: u64, len: u64) {
        self.hints.lock().unwrap().push((offset, len));
    }
}

/// A pass in order (iteration, verify) asks its source to read the records
/// ahead, in order, covering the whole section: stores are mapped with
/// random-access advice, so without the hints a pass over a cold store
/// would fault in one page at a time. Lookups give no hints.
#[test]
fn passes_in_order_ask_to_read_ahead_and_lookups_do_not() {
    let bytes = store(400_000, 40); // about 20 MB of records
    let records = {
        let reader = Reader::new(bytes.as_slice()).unwrap();
        reader
            .header()
            .section(hashfile::format::SectionId::Records)
    };
    let reader = Reader::new(Hinted {
        bytes,
        hints: Default::default(),
    })
    .unwrap();
    assert!(reader.get(b"key-7").unwrap().is_some());
    assert_eq!(*reader.source().hints.lock().unwrap(), vec![]);

    let assert_hints_cover_the_records = |pass: &str| {
        // Those for the records (verify's checksums read the other
        // sections too).
        let records_end = records.offset + records.length;
        let hints: Vec<(u64, u64)> = std::mem::take(&mut *reader.source().hints.lock().unwrap())
            .into_iter()
            .filter(|&(offset, _)| (records.offset..records_end).contains(&offset))
            .collect();
        assert!(hints.len() >= 3, "{pass}: {hints:?}");
        let mut covered = records.offset;
        for &(offset, len) in &hints {
            assert!(
                offset <= covered,
                "{pass}: a gap before {offset}: {hints:?}"
            );
            covered = covered.max(offset + len);
        }
        assert!(covered >= records_end, "{pass}: {hints:?}");
    };
    assert_eq!(reader.iter().count(), 400_000);
    assert_hints_cover_the_records("iter");
    // By cursor, as the bindings iterate (a chunk of records per call).
    let (mut offset, mut index) = (0, 0);
    while let Some((_, next)) = reader.next_record(offset, index).unwrap() {
        (offset, index) = (next, index + 1);
    }
    assert_eq!(index, 400_000);
    assert_hints_cover_the_records("next_record");
    reader.verify().unwrap();
    assert_hints_cover_the_records("verify");
}

/// A pass in order over a store behind a block cache (a remote store: 16
/// KiB blocks) fetches a read-ahead window at a time, not a block at a
/// time, and a pass that stops after a few records fetches little, since
/// the windows start at 64 KiB.
#[test]
fn a_pass_through_a_block_cache_fetches_windows_not_blocks() {
    use hashfile::read::{BlockCache, CacheOptions};
    let bytes = store(400_000, 40); // about 20 MB of records
    let records = Reader::new(bytes.as_slice())
        .unwrap()
        .header()
        .section(hashfile::format::SectionId::Records);
    let reader = Reader::new(BlockCache::new(
        support::MemoryFetch::new(&bytes),
        CacheOptions::default(),
    ))
    .unwrap();
    let stats = || reader.source().stats();
    let opened = stats();

    let peeked = reader.iter().take(10).count();
    assert_eq!(peeked, 10);
    let peek_bytes = stats().bytes_fetched - opened.bytes_fetched;
    assert!(
        peek_bytes <= 160 << 10,
        "ten records fetched {peek_bytes} bytes"
    );

    assert_eq!(reader.iter().count(), 400_000);
    let fetches = stats().fetches - opened.fetches;
    let blocks = records.length / CacheOptions::DEFAULT_BLOCK_LEN as u64;
    assert!(
        fetches <= records.length / (4 << 20) + 16,
        "{fetches} fetches for {blocks} blocks of records"
    );
}

/// `Reader::open` maps a large store with random-access advice (`VmFlags:
/// rr` in /proc/self/smaps), so that a lookup in a store larger than memory
/// reads its pages, not the device's whole readahead window around each; a
/// small one keeps the default.
#[cfg(target_os = "linux")]
#[test]
fn a_mapped_store_has_random_access_advice() {
    let dir = tempfile::tempdir().unwrap();
    let random = |path: &std::path::Path| {
        let _reader = Reader::open(path).unwrap();
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let name = path.to_str().unwrap();
        let flags = smaps
            .split_inclusive("VmFlags:")
            .zip(smaps.split("VmFlags:").skip(1))
            .find(|(head, _)| head.contains(name))
            .map(|(_, flags)| flags.lines().next().unwrap_or("").to_owned())
            .expect("the store is mapped");
        flags.split_whitespace().any(|flag| flag == "rr")
    };
    let small = dir.path().join("small.hf");
    std::fs::write(&small, store(1_000, 8)).unwrap();
    assert!(!random(&small));
    let large = dir.path().join("large.hf");
    let bytes = store(1_000_000, 60);
    assert!(bytes.len() as u64 >= hashfile::read::RANDOM_ADVICE_FROM);
    std::fs::write(&large, bytes).unwrap();
    assert!(random(&large));
}
