//! Number parsing the importers share: integers of any size from their
//! digits, and JSON's number text into the value codec.

use crate::value;

/// Encodes a number serde_json kept as text: a float (parsed exactly, as
/// Ruby's JSON does) or an integer of any size.
pub(super) fn write_json_number(out: &mut Vec<u8>, text: &str) -> std::result::Result<(), String> {
    if text.contains(['.', 'e', 'E']) {
        let f: f64 = text.parse().map_err(|_| format!("bad number {text}"))?;
        value::write_float(out, f);
    } else {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let magnitude = digits_to_magnitude(digits, 10).ok_or_else(|| format!("bad number {text}"))?;
        value::write_bigint(out, negative, &magnitude);
    }
    Ok(())
}

/// The little-endian magnitude of an unsigned number written in `radix`
/// (2 to 16), or `None` if a character is not a digit. Quadratic, which is
/// fine for the length of numbers people write.
pub(super) fn digits_to_magnitude(digits: &str, radix: u32) -> Option<Vec<u8>> {
    if digits.is_empty() {
        return None;
    }
    let mut limbs: Vec<u32> = vec![0];
    for c in digits.chars() {
        let d = c.to_digit(radix)?;
        let mut carry = d as u64;
        for limb in limbs.iter_mut() {
            let v = *limb as u64 * radix as u64 + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            limbs.push(carry as u32);
        }
    }
    Some(limbs.iter().flat_map(|l| l.to_le_bytes()).collect())
}

