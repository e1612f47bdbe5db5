//! Arbitrary bytes as one typed value: decode it whole, walk it item by
//! item, and dig into it along paths taken from the input.
#![no_main]

use hashfile::value::{dig, Cursor, Probe, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = Value::decode(data) {
        // What decodes encodes again, and the encoding decodes to it.
        let mut again = Vec::new();
        if value.encode(&mut again).is_ok() {
            assert!(
                Value::decode(&again).is_ok(),
                "a decoded value's encoding does not decode"
            );
        }
    }
    let mut cursor = Cursor::new(data);
    while let Ok(_item) = cursor.next_item() {
        if cursor.is_at_end() {
            break;
        }
    }
    let split = data.len().min(8);
    let (path_bytes, value) = data.split_at(split);
    let path: Vec<Probe<'_>> = path_bytes
        .iter()
        .map(|&b| match b % 6 {
            0 => Probe::Int(i64::from(b as i8)),
            1 => Probe::Str {
                bytes: &path_bytes[..usize::from(b) % (split + 1)],
                binary: b & 0x80 != 0,
            },
            2 => Probe::Float(f64::from(b as i8) / 4.0),
            3 => Probe::Bool(b & 0x80 != 0),
            4 => Probe::Text(&path_bytes[..usize::from(b) % (split + 1)]),
            _ => Probe::Symbol(&path_bytes[..usize::from(b) % (split + 1)]),
        })
        .collect();
    let _ = dig(value, &path, split & 1 == 0);
});
