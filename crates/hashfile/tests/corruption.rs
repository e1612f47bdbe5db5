//! Every damaged-header and bad-section case gives its named error, and no
//! damage ever makes a lookup return a wrong value.
use hashfile::format::{Header, SectionId};
use hashfile::{BuildOptions, Builder, Error, Reader};

mod support;
use support::{every_source, KINDS};

fn store_bytes(n: u64) -> Vec<u8> {
    store_bytes_with(n, BuildOptions::default())
}

fn store_bytes_with(n: u64, options: BuildOptions) -> Vec<u8> {
    let mut b = Builder::new(options).unwrap();
    for i in 0..n {
        b.insert(format!("k{i}").as_bytes(), format!("v{i}").as_bytes());
    }
    b.to_bytes().unwrap()
}

/// Re-encodes the header after `change`, so the header checksum is valid
/// and the check under test is the one that fires.
fn with_header(bytes: &[u8], change: impl FnOnce(&mut Header)) -> Vec<u8> {
    let mut header = Header::decode(bytes, bytes.len() as u64).unwrap();
    change(&mut header);
    let mut out = bytes.to_vec();
    let encoded = header.encode();
    out[..encoded.len()].copy_from_slice(&encoded);
    out
}

/// The error opening damaged bytes gives, the same through every source.
fn open_error(bytes: Vec<u8>) -> Error {
    let mut errors = KINDS.iter().map(|kind| match support::open(&bytes, kind) {
        Err(e) => e,
        Ok(_) => panic!("{kind}: a damaged store opened"),
    });
    let first = errors.next().unwrap();
    for (kind, other) in KINDS[1..].iter().zip(errors) {
        assert_eq!(format!("{other:?}"), format!("{first:?}"), "{kind}");
    }
    first
}

/// A check that an error is damage in `section` whose description
/// contains `what`.
fn corrupt(section: &'static str, what: &'static str) -> Box<dyn Fn(&Error) -> bool> {
    Box::new(
        move |e| matches!(e, Error::Corrupt { section: s, what: w, .. } if *s == section && w.contains(what)),
    )
}

const SEEDS: usize = 1; // index of the seeds section in SectionId::ALL

#[test]
fn damaged_headers_name_what_is_wrong() {
    let good = store_bytes(1_000);
    let len = good.len() as u64;
    type Check = Box<dyn Fn(&Error) -> bool>;
    let cases: Vec<(&str, Vec<u8>, Check)> = vec![
        (
            "empty file",
            vec![],
            Box::new(
                |e| matches!(e, Error::NotAStore { reason, .. } if reason == "file is 0 bytes, too short for a header"),
            ),
        ),
        (
            "bad magic",
            {
                let mut b = good.clone();
                b[0] = b'X';
                b
            },
            Box::new(
                |e| matches!(e, Error::NotAStore { reason, .. } if reason.starts_with("bad magic")),
            ),
        ),
        (
            "future version",
            {
                let mut b = good.clone();
                b[8] = 9;
                b
            },
            Box::new(|e| {
                matches!(
                    e,
                    Error::Version {
                        expected: 1,
                        got: 9,
                        ..
                    }
                )
            }),
        ),
        (
            "truncated",
            good[..good.len() - 1].to_vec(),
            Box::new(
                move |e| matches!(e, Error::Truncated { expected_len, actual_len, .. } if (*expected_len, *actual_len) == (len, len - 1)),
            ),
        ),
        (
            "appended to",
            {
                let mut b = good.clone();
                b.push(0);
                b
            },
            Box::new(
                move |e| matches!(e, Error::Truncated { expected_len, actual_len, .. } if (*expected_len, *actual_len) == (len, len + 1)),
            ),
        ),
        (
            "header cut short",
            good[..100].to_vec(),
            corrupt(
                "header",
                "header length 296 is invalid for a file of 100 bytes",
            ),
        ),
        (
            "unknown required feature",
            with_header(&good, |h| h.required_flags = 64),
            Box::new(|e| matches!(e, Error::UnsupportedFeatures { bits: 64, .. })),
        ),
        (
            "compressed items without compressed values",
            with_header(&good, |h| h.required_flags = 16),
            corrupt(
                "header",
                "the compressed-items flag is set without the compressed-values flag",
            ),
        ),
        (
            "compressed values without a dictionary",
            with_header(&good, |h| h.required_flags = 8),
            corrupt("dictionary", "section is missing from the section table"),
        ),
        (
            "section past end",
            with_header(&good, |h| h.sections[SEEDS].length = 1 << 40),
            corrupt("seeds", "extends past end of file"),
        ),
        (
            "section offset overflow",
            with_header(&good, |h| h.sections[SEEDS].offset = u64::MAX),
            corrupt("seeds", "extends past end of file"),
        ),
        (
            "section inside header",
            with_header(&good, |h| h.sections[SEEDS].offset = 0),
            corrupt("seeds", "extends past end of file"),
        ),
        (
            "bad block length",
            with_header(&good, |h| h.seed_block_len = 64),
            corrupt("header", "seed block length 64"),
        ),
        (
            "slots length",
            with_header(&good, |h| h.sections[3].length -= 1),
            corrupt("slots", "section is"),
        ),
        (
            "remap length",
            with_header(&good, |h| h.sections[2].length += 1),
            corrupt("remap", "section is"),
        ),
        (
            "seed index length",
            with_header(&good, |h| h.sections[0].length -= 4),
            corrupt("seed_index", "section is"),
        ),
        (
            "too few buckets",
            with_header(&good, |h| h.geometry.bucket_count = 0),
            corrupt("header", "bucket count 0"),
        ),
        (
            "too few slots",
            with_header(&good, |h| h.geometry.slot_count = 10),
            corrupt("header", "slot count 10"),
        ),
        (
            "dense buckets",
            with_header(&good, |h| {
                h.geometry.dense_bucket_count = h.geometry.bucket_count + 1
            }),
            corrupt("header", "dense bucket count"),
        ),
        (
            "entries beyond slots",
            with_header(&good, |h| h.geometry.entry_count = u64::MAX / 2),
            corrupt("header", "is invalid for 9223372036854775807 entries"),
        ),
    ];
    for (name, bytes, check) in cases {
        let error = open_error(bytes);
        assert!(check(&error), "{name}: unexpected {error:?}");
    }
}

#[test]
fn damaged_part_counts_are_named() {
    // 1,000 keys in 10 parts of 25 buckets each.
    let parted = store_bytes_with(
        1_000,
        BuildOptions {
            keys_per_part: 100,
            keys_per_bucket: 4.0,
            ..Default::default()
        },
    );
    let header = Header::decode(&parted, parted.len() as u64).unwrap();
    assert_eq!(
        (header.geometry.part_count, header.geometry.bucket_count),
        (10, 250)
    );
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "one part with the flag",
            with_header(&parted, |h| h.geometry.part_count = 1),
            "part count 1 is invalid for 1000 entries",
        ),
        (
            "no parts with the flag",
            with_header(&parted, |h| h.geometry.part_count = 0),
            "part count 0 is invalid",
        ),
        (
            "more parts than entries",
            with_header(&parted, |h| h.geometry.part_count = 1_001),
            "part count 1001 is invalid",
        ),
        (
            "parts not dividing buckets",
            with_header(&parted, |h| h.geometry.part_count = 3),
            "bucket count 250 is invalid for 1000 entries in 3 parts",
        ),
        (
            "parts not dividing slots",
            with_header(&parted, |h| h.geometry.slot_count += 1),
            "for 1000 entries in 10 parts",
        ),
        (
            "dense buckets past a part",
            with_header(&parted, |h| h.geometry.dense_bucket_count = 26),
            "dense bucket count 26",
        ),
    ];
    for (name, bytes, expected) in cases {
        let error = open_error(bytes);
        assert!(
            corrupt("header", expected)(&error),
            "{name}: unexpected {error:?}"
        );
    }
    // A part count in the header of a store without the flag.
    let mut bytes = store_bytes(1_000);
    bytes[120] = 4;
    let error = open_error(reseal(bytes));
    assert!(
        corrupt(
            "header",
            "part count 4 is set but the partitioned-store flag is not"
        )(&error),
        "{error:?}"
    );
}

#[test]
fn a_header_byte_flip_is_a_checksum_error() {
    let good = store_bytes(100);
    let mut bytes = good.clone();
    bytes[40] ^= 1; // hash seed
    match Reader::new(bytes) {
        Err(Error::Checksum { section, .. }) => assert_eq!(section, "header"),
        other => panic!(
            "expected a header checksum error, got {:?}",
            other.map(|_| ())
        ),
    }
}

#[test]
fn missing_and_repeated_sections_are_named() {
    let good = store_bytes(10);
    // Turn the remap entry into an unknown id (ignored), leaving remap missing.
    let mut bytes = good.clone();
    let table = hashfile::format::FIXED_HEADER_LEN;
    bytes[table + 2 * 32] = 99;
    let error = open_error(reseal(bytes));
    assert!(
        corrupt("remap", "missing from the section table")(&error),
        "{error:?}"
    );
    let mut bytes = good.clone();
    bytes[table + 2 * 32] = SectionId::Seeds as u8;
    let error = open_error(reseal(bytes));
    assert!(corrupt("seeds", "appears twice")(&error), "{error:?}");
}

fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    let len = Header::encoded_len(false, false);
    let sum = xxhash_rust_free_checksum(&bytes[..len - 8]);
    bytes[len - 8..len].copy_from_slice(&sum.to_le_bytes());
    bytes
}

// The header checksum is XXH3-64 with seed 0, the same function the store
// uses for keys; reach it through the public key hash.
fn xxhash_rust_free_checksum(bytes: &[u8]) -> u64 {
    hashfile::chd::hash_key(bytes, 0)
}

#[test]
fn verify_names_the_damaged_section() {
    let good = store_bytes(1_000);
    let header = Header::decode(&good, good.len() as u64).unwrap();
    for (id, section) in SectionId::ALL.iter().zip(header.sections) {
        if section.length == 0 {
            continue;
        }
        let mut bytes = good.clone();
        bytes[(section.offset + section.length / 2) as usize] ^= 0x10;
        for (source, store) in every_source(&bytes) {
            match store.verify() {
                Err(Error::Checksum { section, .. }) => assert_eq!(section, id.name(), "{source}"),
                other => panic!(
                    "{source}: {}: expected a checksum error, got {other:?}",
                    id.name()
                ),
            }
        }
    }
}

/// Flip every bit of a small store, one at a time. Opening, looking up every
/// key and iterating never panic; `verify` catches every flip. A flip in the
/// header or the index sections never makes a lookup return a wrong value:
/// it gives the right value, nothing, or an error. A flip inside the records
/// can change what that record itself says (its value bytes or lengths);
/// lookups still return only a record whose stored key is the key asked for,
/// and `verify` is what detects such damage (docs/FORMAT.md, "Integrity").
#[test]
fn no_single_bit_flip_yields_a_wrong_value() {
    no_flip_yields_a_wrong_value(BuildOptions::default());
}

/// The same over a store of four parts.
#[test]
fn no_single_bit_flip_in_a_partitioned_store_yields_a_wrong_value() {
    no_flip_yields_a_wrong_value(BuildOptions {
        keys_per_part: 16,
        ..Default::default()
    });
}

/// The same with the compact index, in one part and in four.
#[test]
fn no_single_bit_flip_in_a_compact_store_yields_a_wrong_value() {
    no_flip_yields_a_wrong_value(BuildOptions::compact());
    no_flip_yields_a_wrong_value(BuildOptions {
        keys_per_part: 16,
        ..BuildOptions::compact()
    });
}

fn no_flip_yields_a_wrong_value(options: BuildOptions) {
    let n = 60u64;
    let good = store_bytes_with(n, options);
    let records = Header::decode(&good, good.len() as u64)
        .unwrap()
        .section(SectionId::Records);
    let in_records =
        |byte: usize| (records.offset..records.offset + records.length).contains(&(byte as u64));
    let expected: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
        .map(|i| (format!("k{i}").into_bytes(), format!("v{i}").into_bytes()))
        .collect();
    let mut opened = 0;
    for bit in 0..good.len() * 8 {
        let mut bytes = good.clone();
        bytes[bit / 8] ^= 1 << (bit % 8);
        for kind in KINDS {
            let Ok(store) = support::open(&bytes, kind) else {
                continue;
            };
            opened += 1;
            for (k, v) in &expected {
                if let Ok(Some(record)) = store.get(k) {
                    assert_eq!(
                        record.key(),
                        k.as_slice(),
                        "{kind}: bit {bit}: lookup of {k:?} returned another key's record"
                    );
                    if !in_records(bit / 8) {
                        assert_eq!(
                            record.value(),
                            v.as_slice(),
                            "{kind}: bit {bit}: key {k:?} gave a wrong value"
                        );
                    }
                }
            }
            // A batch answers as the single lookups do, error and all
            // (over a map it goes in groups whose reads overlap).
            let keys: Vec<&[u8]> = expected.iter().map(|(k, _)| k.as_slice()).collect();
            let one_by_one: Result<Vec<_>, _> = keys.iter().map(|k| store.get(k)).collect();
            let owned = |found: Vec<Option<hashfile::RecordBuf<'_>>>| {
                found
                    .into_iter()
                    .map(|r| r.map(|r| (r.key().to_vec(), r.value().to_vec())))
                    .collect::<Vec<_>>()
            };
            match (store.get_many(&keys), one_by_one) {
                (Ok(many), Ok(single)) => assert_eq!(
                    owned(many),
                    owned(single),
                    "{kind}: bit {bit}: get_many differs from get"
                ),
                (Err(many), Err(single)) => assert_eq!(
                    format!("{many:?}"),
                    format!("{single:?}"),
                    "{kind}: bit {bit}: get_many failed otherwise than get"
                ),
                (many, single) => panic!(
                    "{kind}: bit {bit}: get_many {} where get {}",
                    if many.is_ok() { "succeeded" } else { "failed" },
                    if single.is_ok() {
                        "succeeded"
                    } else {
                        "failed"
                    }
                ),
            }
            let _ = store.iter().count();
            assert!(
                store.verify().is_err(),
                "{kind}: bit {bit}: verify missed a flipped bit"
            );
        }
    }
    assert!(opened > 0);
}

/// Sets element `index` of a packed-integer array (docs/FORMAT.md,
/// "Packed integers") to `value`.
fn set_packed(section: &mut [u8], width: u32, index: u64, value: u64) {
    for b in 0..u64::from(width) {
        let bit = index * u64::from(width) + b;
        let byte = &mut section[(bit / 8) as usize];
        if value >> b & 1 == 1 {
            *byte |= 1 << (bit % 8);
        } else {
            *byte &= !(1 << (bit % 8));
        }
    }
}

/// The exact limit of what index damage can do (docs/FORMAT.md,
/// "Integrity"): pointed anywhere in the records section, a lookup finds
/// its key only at its own record, or inside a value whose bytes are
/// themselves a record for that key. Only then is the value wrong, and
/// `verify` catches it.
#[test]
fn index_damage_returns_a_wrong_value_only_from_a_record_planted_in_a_value() {
    use hashfile::format::Record;
    let mut planted = Vec::new();
    Record::binary(b"k3", b"EVIL").write(&mut planted);
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = (0..10)
        .map(|i| (format!("k{i}").into_bytes(), format!("v{i}").into_bytes()))
        .collect();
    entries.push((
        b"planted".to_vec(),
        [b"xx".as_slice(), &planted, b"yy"].concat(),
    ));
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    for (k, v) in &entries {
        builder.insert(k, v);
    }
    let good = builder.to_bytes().unwrap();
    let header = Header::decode(&good, good.len() as u64).unwrap();
    let (records, slots) = (
        header.section(SectionId::Records),
        header.section(SectionId::Slots),
    );
    let width = hashfile::bits::bits_for(records.length - 1);
    // Offsets of each record, in input order, and where the planted one is.
    let mut offsets = Vec::new();
    let mut at = 0u64;
    for (k, v) in &entries {
        offsets.push(at);
        at += Record::binary(k, v).encoded_len() as u64;
    }
    let planted_at = offsets[10] + Record::binary(b"planted", &entries[10].1).encoded_len() as u64
        - (planted.len() + 2) as u64;
    let real = offsets[3];
    let slot_of_k3 = (0..header.geometry.entry_count)
        .find(|&i| {
            hashfile::bits::unpack_one(&good[slots.offset as usize..slots.end() as usize], width, i)
                == Some(real)
        })
        .unwrap();
    for offset in 0..records.length {
        let mut bytes = good.clone();
        set_packed(
            &mut bytes[slots.offset as usize..slots.end() as usize],
            width,
            slot_of_k3,
            offset,
        );
        for kind in KINDS {
            let store = support::open(&bytes, kind).unwrap();
            match store.get(b"k3") {
                Ok(Some(record)) if offset == real => assert_eq!(record.value(), b"v3"),
                Ok(Some(record)) if offset == planted_at => {
                    assert_eq!(record.value(), b"EVIL", "{kind}")
                }
                Ok(Some(record)) => panic!("{kind}: slot pointed at {offset} returned {record:?}"),
                Ok(None) | Err(_) => assert_ne!(offset, real),
            }
            if offset != real {
                assert!(
                    matches!(store.verify(), Err(Error::Checksum { .. })),
                    "{kind}: verify missed slot damage at {offset}"
                );
            }
        }
    }
}

/// A records section zeroed in place reads as a run of 3-byte empty
/// records: iteration stops with an error at the header's count instead of
/// yielding hundreds of empty pairs; one cut short ends with an error too.
#[test]
fn iteration_checks_the_record_count_against_the_header() {
    let good = store_bytes(100);
    let records = Header::decode(&good, good.len() as u64)
        .unwrap()
        .section(SectionId::Records);
    let mut zeroed = good.clone();
    zeroed[records.offset as usize..records.end() as usize].fill(0);
    // 100 empty records, then the error.
    assert_iteration_fails(&zeroed, 101, "more records than the header's 100 entries");
    // The next-to-last record's key length grown to swallow the last
    // record: the walk ends one record short of the header's count.
    let mut short = good.clone();
    let offsets: Vec<u64> = {
        let store = Reader::new(good.as_slice()).unwrap();
        let mut it = store.iter();
        let mut offsets = vec![0];
        while let Some(Ok(_)) = it.next() {
            offsets.push(it.offset());
        }
        offsets
    };
    let (second_last, last, end) = (offsets[98], offsets[99], offsets[100]);
    assert_eq!(end, records.length);
    let at = (records.offset + second_last) as usize + 1;
    short[at] += (end - last) as u8;
    assert_iteration_fails(
        &short,
        100,
        "the records end after 99 of the header's 100 entries",
    );
}

/// Iterating `bytes` through every source yields `items` items, the last
/// being damage in records whose description starts with `what`.
fn assert_iteration_fails(bytes: &[u8], items: usize, what: &str) {
    for (source, store) in every_source(bytes) {
        let got: Vec<_> = store.iter().collect();
        assert_eq!(got.len(), items, "{source}");
        match got.last().unwrap() {
            Err(Error::Corrupt {
                section: "records",
                what: found,
                ..
            }) => assert!(found.starts_with(what), "{source}: {found}"),
            other => panic!("{source}: expected damage in records, got {other:?}"),
        }
    }
}
