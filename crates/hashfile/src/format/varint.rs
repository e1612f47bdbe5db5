//! Unsigned LEB128 varints, as records and typed values use them
//! (docs/FORMAT.md, "Records").

/// Longest varint a `u64` takes.
pub const MAX_VARINT_LEN: usize = 10;

/// Appends `value` as an unsigned LEB128 varint.
#[inline]
pub fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Bytes `write_varint` takes for `value`.
#[inline]
pub fn varint_len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads an unsigned LEB128 varint at `*pos`, advancing it. `None` if the
/// bytes end early or the varint is longer than 10 bytes or overflows.
#[inline]
pub fn read_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*pos)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        value |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_round_trips() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            let mut pos = 0;
            assert_eq!(read_varint(&out, &mut pos), Some(v));
            assert_eq!(pos, out.len());
            // Cut short: None, never a wrong value.
            let mut pos = 0;
            assert_eq!(read_varint(&out[..out.len() - 1], &mut pos), None);
        }
        assert!(varint_len(u64::MAX) == MAX_VARINT_LEN);
        // An 11th byte, or a 10th past bit 63, is refused.
        let mut pos = 0;
        assert_eq!(read_varint(&[0xff; 10], &mut pos), None);
    }
}
