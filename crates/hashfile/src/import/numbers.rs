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
        let magnitude = digits_to_magnitude(digits, 10).map_err(|e| match e {
            DigitsError::NotDigits => format!("bad number {text}"),
            too_long => format!("a number that {too_long}"),
        })?;
        value::write_bigint(out, negative, &magnitude);
    }
    Ok(())
}

/// The most digits an integer in an input may have. Converting n digits
/// to binary takes time in n squared here, as in most bignum code without
/// subquadratic division (CPython limits int-to-text conversion to 4,300
/// digits by default for this reason, CVE-2020-10735); 100,000 digits take
/// a few milliseconds, so no input makes a build spin for minutes on a
/// number, and no real config comes near.
pub const MAX_INTEGER_DIGITS: usize = 100_000;

/// Why digits are not an integer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum DigitsError {
    /// A character is not a digit of the radix, or there are none.
    NotDigits,
    /// More than [`MAX_INTEGER_DIGITS`].
    TooLong(usize),
}

impl std::fmt::Display for DigitsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DigitsError::NotDigits => f.write_str("is not a valid integer"),
            DigitsError::TooLong(n) => write!(f, "is an integer of {n} digits, over the limit of {MAX_INTEGER_DIGITS} (store it as a string)"),
        }
    }
}

/// The little-endian magnitude of an unsigned number written in `radix`
/// (2 to 16). Takes as many digits as fit in a u64 at a time.
pub(super) fn digits_to_magnitude(digits: &str, radix: u32) -> Result<Vec<u8>, DigitsError> {
    if digits.is_empty() {
        return Err(DigitsError::NotDigits);
    }
    if digits.len() > MAX_INTEGER_DIGITS {
        return Err(DigitsError::TooLong(digits.len()));
    }
    let radix = u64::from(radix);
    let mut per_chunk = 0;
    let mut power: u64 = 1;
    while let Some(next) = power.checked_mul(radix) {
        power = next;
        per_chunk += 1;
    }
    let mut limbs: Vec<u64> = vec![0];
    for chunk in digits.as_bytes().chunks(per_chunk) {
        let mut value: u64 = 0;
        let mut scale: u64 = 1;
        for &c in chunk {
            let d = (c as char)
                .to_digit(radix as u32)
                .ok_or(DigitsError::NotDigits)?;
            value = value * radix + u64::from(d);
            scale *= radix;
        }
        // limbs = limbs * scale + value
        let mut carry = u128::from(value);
        for limb in limbs.iter_mut() {
            let v = u128::from(*limb) * u128::from(scale) + carry;
            *limb = v as u64;
            carry = v >> 64;
        }
        if carry > 0 {
            limbs.push(carry as u64);
        }
    }
    Ok(limbs.iter().flat_map(|l| l.to_le_bytes()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_u128(bytes: &[u8]) -> u128 {
        let mut buf = [0u8; 16];
        buf[..bytes.len().min(16)].copy_from_slice(&bytes[..bytes.len().min(16)]);
        assert!(bytes[bytes.len().min(16)..].iter().all(|b| *b == 0));
        u128::from_le_bytes(buf)
    }

    #[test]
    fn converts_every_radix_across_chunk_boundaries() {
        for n in [
            0u128,
            1,
            7,
            255,
            1 << 63,
            u64::MAX as u128,
            u64::MAX as u128 + 1,
            12345678901234567890123456789,
            u128::MAX,
        ] {
            for (radix, text) in [
                (2, format!("{n:b}")),
                (8, format!("{n:o}")),
                (10, n.to_string()),
                (16, format!("{n:x}")),
            ] {
                assert_eq!(
                    to_u128(&digits_to_magnitude(&text, radix).unwrap()),
                    n,
                    "{text} in radix {radix}"
                );
            }
        }
    }

    #[test]
    fn refuses_non_digits_and_overlong_numbers() {
        assert_eq!(digits_to_magnitude("", 10), Err(DigitsError::NotDigits));
        assert_eq!(digits_to_magnitude("12a", 10), Err(DigitsError::NotDigits));
        assert_eq!(digits_to_magnitude("102", 2), Err(DigitsError::NotDigits));
        assert!(digits_to_magnitude(&"9".repeat(MAX_INTEGER_DIGITS), 10).is_ok());
        assert_eq!(
            digits_to_magnitude(&"9".repeat(MAX_INTEGER_DIGITS + 1), 10),
            Err(DigitsError::TooLong(MAX_INTEGER_DIGITS + 1))
        );
    }
}
