//! Arrow string arrays read from their buffers (`dataset::arrow`): rows,
//! routing and JSON Lines, and buffers that lie about their rows.

use hashfile::dataset::shard_of;
use hashfile_runtime::dataset::arrow::{json_lines, route_keys, ArrowStrings};
use std::num::NonZeroU32;

/// An Arrow `string` array's offsets buffer (32-bit) for these rows.
fn offsets(rows: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let mut offsets = 0i32.to_le_bytes().to_vec();
    let mut data = Vec::new();
    for row in rows {
        data.extend_from_slice(row.as_bytes());
        offsets.extend_from_slice(&(data.len() as i32).to_le_bytes());
    }
    (offsets, data)
}

#[test]
fn rows_route_and_become_json_lines() {
    let (o, d) = offsets(&["a", "bb", "", "ccc"]);
    let rows = ArrowStrings::new(&o, &d, 1, 3, false).unwrap();
    assert_eq!(rows.iter().collect::<Vec<_>>(), [&b"bb"[..], b"", b"ccc"]);
    assert_eq!(json_lines(&rows), b"bb\n\nccc\n");

    // Rows 1..4; row 2 null in the validity bitmap.
    let partitions = [10i64, 20, 30];
    let routed = route_keys(&rows, Some(&[0b1111_1011]), &partitions).unwrap();
    let got: Vec<i64> = routed
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let three = NonZeroU32::new(3).unwrap();
    assert_eq!(
        got,
        [
            partitions[shard_of(b"bb", three) as usize],
            -1,
            partitions[shard_of(b"ccc", three) as usize]
        ]
    );
}

#[test]
fn buffers_that_lie_are_errors() {
    let (o, d) = offsets(&["a", "bb"]);
    let message = |r: hashfile::Result<ArrowStrings<'_>>| match r {
        Err(e @ hashfile::Error::InvalidArgument { .. }) => e.to_string(),
        other => panic!("expected InvalidArgument, got {:?}", other.map(|_| ())),
    };
    assert_eq!(
        message(ArrowStrings::new(&o, &d, 0, 3, false)),
        "not an Arrow string array: the offsets buffer is shorter than the rows"
    );
    assert_eq!(
        message(ArrowStrings::new(&o, &d[..2], 0, 2, false)),
        "not an Arrow string array: an offset out of order or past the data"
    );
    let negative = [0i32.to_le_bytes(), (-1i32).to_le_bytes()].concat();
    assert_eq!(
        message(ArrowStrings::new(&negative, &d, 0, 1, false)),
        "not an Arrow string array: a negative offset"
    );
    assert_eq!(
        message(ArrowStrings::new(&o, &d, usize::MAX, 1, true)),
        "not an Arrow string array: too many rows"
    );
    let rows = ArrowStrings::new(&o, &d, 0, 2, false).unwrap();
    assert!(route_keys(&rows, None, &[]).is_err());
    assert!(route_keys(&rows, Some(&[]), &[1]).is_err());
}
