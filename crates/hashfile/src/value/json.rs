//! Values as JSON text (RFC 8259), straight from their bytes: what the
//! command line's `get --json` and `dump` print, with one set of rules for
//! what JSON can hold, for every binding that prints JSON.
//!
//! JSON holds text, numbers, true, false, null, arrays and objects with
//! text keys. So a string must be UTF-8 (a binary or US-ASCII one whose
//! bytes are UTF-8 is written as text), a float finite, and a map's keys
//! strings; a Symbol, a string in another encoding and a serializer's
//! value are refused, since none of them would come back as it was. A
//! refusal is [`Error::NotJson`], naming the key and the path inside the
//! value, before anything is written for that value.
//!
//! The text is what Ruby's `JSON.generate` writes for the same value
//! (floats as Ruby prints them, `1.0e+20`; integers of any size in full),
//! with DEL and the C1 controls escaped too, so it is safe to show on a
//! terminal and the same to any JSON reader.

use super::{check, Cursor, Encoding, Item};
use crate::error::{DisplayBytes, Error, Result};
use crate::format::{Record, ValueKind};

/// Appends a store key as a JSON string; an error if it is not UTF-8.
pub fn write_key(key: &[u8], out: &mut String) -> Result<()> {
    match std::str::from_utf8(key) {
        Ok(text) => {
            write_str(text, out);
            Ok(())
        }
        Err(_) => Err(Error::NotJson {
            place: format!("key {}", DisplayBytes(key)),
            why: "has bytes that are not UTF-8, which JSON cannot hold".into(),
        }),
    }
}

/// Appends a record's value as JSON. `out` is unchanged on an error.
pub fn write_record(record: &Record<'_>, out: &mut String) -> Result<()> {
    match record.kind {
        ValueKind::Typed => {
            check(record.value)?;
            let item = Cursor::new(record.value).next_item()?;
            write_checked(&item, record.key, out)
        }
        _ => {
            let start = out.len();
            write_text(record.value, &Place::new(record.key), out)
                .inspect_err(|_| out.truncate(start))
        }
    }
}

/// Appends an item already read (where a `dig` ended) as JSON, naming
/// `key` (what the caller asked for) in an error. The item may hold
/// containers at most `depth_left` deep, itself counted (as
/// [`walk::item_at`](super::walk::item_at) has it): one `dig` found `n`
/// steps into a value has `MAX_DEPTH - n` left, so that what is written is
/// never nested deeper than a decode of the whole value allows. `out` is
/// unchanged on an error.
pub fn write_item(item: &Item<'_>, key: &[u8], depth_left: usize, out: &mut String) -> Result<()> {
    // The body is checked whole before any of it is written.
    match *item {
        Item::Array(c) => super::check_body(c, c.len, depth_left)?,
        Item::Map(c) => super::check_body(c, c.len * 2, depth_left)?,
        _ => {}
    }
    write_checked(item, key, out)
}

/// Where in a value a refusal is: the record's key and the path inside.
struct Place<'k> {
    key: &'k [u8],
    path: Vec<String>,
}

impl<'k> Place<'k> {
    fn new(key: &'k [u8]) -> Place<'k> {
        Place {
            key,
            path: Vec::new(),
        }
    }

    /// `value for key "k"` and, inside it, ` at ["a", 0]`.
    fn refuse(&self, why: String) -> Error {
        let mut place = format!("value for key {}", DisplayBytes(self.key));
        if !self.path.is_empty() {
            place.push_str(&format!(" at [{}]", self.path.join(", ")));
        }
        Error::NotJson { place, why }
    }
}

/// Writes a checked item; on an error, truncates `out` to where it was.
fn write_checked(item: &Item<'_>, key: &[u8], out: &mut String) -> Result<()> {
    let start = out.len();
    write(item, &mut Place::new(key), out).inspect_err(|_| out.truncate(start))
}

fn write(item: &Item<'_>, place: &mut Place<'_>, out: &mut String) -> Result<()> {
    match *item {
        Item::Nil => out.push_str("null"),
        Item::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        Item::Int(i) => out.push_str(&i.to_string()),
        Item::BigInt {
            negative,
            magnitude,
        } => {
            // A zero magnitude (not a canonical encoding, but one a
            // decoder reads as 0) is 0, as Ruby and Python decode it.
            if negative && magnitude.iter().any(|&b| b != 0) {
                out.push('-');
            }
            out.push_str(&decimal(magnitude));
        }
        Item::Float(x) if x.is_finite() => out.push_str(&ruby_float(x)),
        Item::Float(_) => return Err(place.refuse(format!("is {item}, which JSON cannot hold"))),
        Item::Str(_, Encoding::Named(name)) => {
            return Err(place.refuse(format!(
                "is a {name} string, which JSON cannot hold without losing its encoding"
            )));
        }
        Item::Str(bytes, _) => write_text(bytes, place, out)?,
        Item::Symbol(..) => {
            return Err(place.refuse(
                "is a Symbol, which JSON cannot hold (it would not come back a Symbol)".into(),
            ))
        }
        Item::Custom(_) => return Err(place.refuse(
            "is a serializer's value, which JSON cannot hold (it would not come back as it was)"
                .into(),
        )),
        Item::Array(c) => {
            out.push('[');
            let mut inner = c.cursor();
            for i in 0..c.len {
                if i > 0 {
                    out.push(',');
                }
                let element = inner.next_item()?;
                place.path.push(i.to_string());
                write(&element, place, out)?;
                place.path.pop();
            }
            out.push(']');
        }
        Item::Map(c) => {
            // The pairs as the decoded Hash holds them: a key stored twice
            // (a JSON object or a YAML merge may repeat one) keeps its
            // first place and takes its last value, so the text is what
            // `JSON.generate` makes of `db[key]`.
            let mut inner = c.cursor();
            let mut pairs = Vec::with_capacity(c.len as usize);
            for _ in 0..c.len {
                let key = inner.next_item()?;
                let value = inner.next_item()?;
                pairs.push((key, value));
            }
            let last = last_values(&pairs);
            out.push('{');
            let mut first = true;
            for (i, (key, _)) in pairs.iter().enumerate() {
                let Some(value_at) = last[i] else {
                    continue; // an earlier pair has this key.
                };
                let key = *key;
                let value = pairs[value_at].1;
                if !first {
                    out.push(',');
                }
                first = false;
                match key {
                    // Refused, naming the encoding, as a value is.
                    Item::Str(_, Encoding::Named(_)) => write(&key, place, out)?,
                    Item::Str(bytes, _) => write_text(bytes, place, out)?,
                    _ => {
                        return Err(place.refuse(format!(
                            "has the {} key {}, which JSON cannot hold (object keys are strings)",
                            ruby_class(&key),
                            key
                        )))
                    }
                }
                out.push(':');
                place.path.push(key.to_string());
                write(&value, place, out)?;
                place.path.pop();
            }
            out.push('}');
        }
    }
    Ok(())
}

/// For each pair of a map, where its value is: for the first of equal
/// keys, the last pair with that key (whose value a Hash built from the
/// pairs keeps); for the later ones None, as they are written at the
/// first.
/// Keys are equal as Ruby's String#eql? has them: the same bytes, and the
/// same encoding unless the bytes are ASCII. Keys that are not strings
/// are kept in place (JSON refuses them when their turn comes).
fn last_values<'a>(pairs: &[(Item<'a>, Item<'a>)]) -> Vec<Option<usize>> {
    // A key's identity, or None for a key that is not a string.
    fn id<'a>(key: &Item<'a>) -> Option<(&'a [u8], Option<Encoding<'a>>)> {
        match *key {
            Item::Str(bytes, encoding) => Some((bytes, (!bytes.is_ascii()).then_some(encoding))),
            _ => None,
        }
    }
    let mut last: Vec<Option<usize>> = (0..pairs.len()).map(Some).collect();
    if pairs.len() <= 16 {
        // Small maps (most): compared pair by pair, nothing allocated.
        for i in 0..pairs.len() {
            let Some(key) = id(&pairs[i].0) else { continue };
            if last[i].is_none() {
                continue;
            }
            for j in i + 1..pairs.len() {
                if id(&pairs[j].0) == Some(key) {
                    last[i] = Some(j);
                    last[j] = None;
                }
            }
        }
        return last;
    }
    let mut first_of = std::collections::HashMap::with_capacity(pairs.len());
    for (i, (key, _)) in pairs.iter().enumerate() {
        let Some(key) = id(key) else { continue };
        let first = *first_of.entry(key).or_insert(i);
        if first != i {
            last[first] = Some(i);
            last[i] = None;
        }
    }
    last
}

/// Text that must be UTF-8 to be written.
fn write_text(bytes: &[u8], place: &Place<'_>, out: &mut String) -> Result<()> {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            write_str(text, out);
            Ok(())
        }
        Err(_) => Err(place.refuse("has bytes that are not UTF-8, which JSON cannot hold".into())),
    }
}

/// A JSON string: `"` and `\` escaped, the C0 controls as `JSON.generate`
/// writes them (`\n`, `\u001b`), and DEL and the C1 controls as `\u007f`
/// to `\u009f`.
fn write_str(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || ('\u{7f}'..='\u{9f}').contains(&c) => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The Ruby class of a map key JSON cannot hold, for the message.
fn ruby_class(item: &Item<'_>) -> &'static str {
    match item {
        Item::Nil => "NilClass",
        Item::Bool(true) => "TrueClass",
        Item::Bool(false) => "FalseClass",
        Item::Int(_) | Item::BigInt { .. } => "Integer",
        Item::Float(_) => "Float",
        Item::Str(..) => "String",
        Item::Symbol(..) => "Symbol",
        Item::Array(_) => "Array",
        Item::Map(_) => "Hash",
        Item::Custom(_) => "serializer's",
    }
}

/// A little-endian magnitude in decimal digits.
fn decimal(magnitude: &[u8]) -> String {
    // Base 10^9 limbs, least significant first, built by Horner's rule
    // from the most significant byte down.
    const BASE: u64 = 1_000_000_000;
    let mut limbs: Vec<u64> = vec![0];
    for &byte in magnitude.iter().rev() {
        let mut carry = byte as u64;
        for limb in limbs.iter_mut() {
            let v = *limb * 256 + carry;
            *limb = v % BASE;
            carry = v / BASE;
        }
        while carry > 0 {
            limbs.push(carry % BASE);
            carry /= BASE;
        }
    }
    let mut text = limbs.last().copied().unwrap_or(0).to_string();
    for limb in limbs.iter().rev().skip(1) {
        text.push_str(&format!("{limb:09}"));
    }
    text
}

/// A finite float as Ruby's `Float#to_s` writes it (and so `JSON.generate`):
/// the shortest digits that read back as the same float, in positional
/// notation from 1e-4 up to 1e15 (`0.0001`, `2.5`, `1.0e+15`), else in
/// exponent notation (`1.0e-05`).
fn ruby_float(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust writes the shortest round-trip digits ("-1.2345e-7"), but where
    // two strings of that length read back as `x` it may pick the farther
    // one. Ruby's dtoa (mode 0) gives the one nearest to `x`, ties to
    // even: `x` correctly rounded to that many digits, which Rust's exact
    // formatting gives (32921368237543.8125 is "32921368237543.812", not
    // "...813").
    let shortest = format!("{x:e}");
    let significant = shortest
        .split_once('e')
        .map_or(shortest.as_str(), |(m, _)| m)
        .chars()
        .filter(char::is_ascii_digit)
        .count();
    let nearest = format!("{x:.*e}", significant.saturating_sub(1));
    let shortest = if nearest.parse::<f64>() == Ok(x) {
        nearest
    } else {
        shortest
    };
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    // `{:.Ne}` may pad with zeros that the shortest digits have not.
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    // The decimal point's place after the first digit, as C's `dtoa` gives it.
    let point = exponent + 1;
    let mut out = String::from(sign);
    // Ruby's `flo_to_s`: positional from 1e-4 while the integer part has
    // at most 16 digits (DBL_DIG + 1), but a value with no fraction only
    // up to 15 digits: 1000000000000000.5 is positional, 1.0e+15 is not.
    let positional = (-3..=15).contains(&point) || (point == 16 && digits.len() > 16);
    if positional {
        if point <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-point) as usize));
            out.push_str(&digits);
        } else if point as usize >= digits.len() {
            out.push_str(&digits);
            out.push_str(&"0".repeat(point as usize - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point as usize]);
            out.push('.');
            out.push_str(&digits[point as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        out.push_str(if digits.len() > 1 { &digits[1..] } else { "0" });
        out.push_str(&format!(
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_ruby_prints_them() {
        for (x, ruby) in [
            (2.5, "2.5"),
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1.0e-05"),
            (1e14, "100000000000000.0"),
            (1e15, "1.0e+15"),
            (999999999999999.9, "999999999999999.9"),
            (1234567890123456.0, "1.234567890123456e+15"),
            (1e16, "1.0e+16"),
            (1.5e16, "1.5e+16"),
            (123456789.125, "123456789.125"),
            (1e100, "1.0e+100"),
            (-2.5e-10, "-2.5e-10"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5.0e-324"),
            (0.995, "0.995"),
            // 16 digits before the point and a fraction: positional.
            (1e15 + 0.5, "1000000000000000.5"),
            (-1e15 - 0.5, "-1000000000000000.5"),
            (1234567890123456.8, "1234567890123456.8"),
            (9007199254740992.0, "9.007199254740992e+15"),
            // Ties between two shortest strings go to the nearer, even one.
            (32921368237543.0 + 0.8125, "32921368237543.812"),
            (833062227115429.0 + 0.25, "833062227115429.2"),
        ] {
            assert_eq!(ruby_float(x), ruby, "{x:e}");
        }
    }

    #[test]
    fn big_integers_in_full() {
        // 2**100 and 2**64, little-endian.
        let mut two_100 = vec![0u8; 12];
        two_100.push(16);
        assert_eq!(decimal(&two_100), "1267650600228229401496703205376");
        assert_eq!(
            decimal(&[0, 0, 0, 0, 0, 0, 0, 0, 1]),
            "18446744073709551616"
        );
        assert_eq!(decimal(&[]), "0");
    }

    /// The JSON of one encoded value, as `get --json` writes it.
    fn json_of(bytes: &[u8]) -> String {
        let mut out = String::new();
        let item = Cursor::new(bytes).next_item().unwrap();
        write_item(&item, b"k", super::super::MAX_DEPTH, &mut out).unwrap();
        out
    }

    #[test]
    fn a_repeated_map_key_is_written_once_with_its_last_value() {
        // {"a" => 1, "b" => 2, "a" => 3}: what building from the JSON
        // object {"a": 1, "b": 2, "a": 3} stores; Ruby's Hash (and
        // JSON.generate of it) is {"a":3,"b":2}.
        let map = [0x83, 9, 0xa1, b'a', 1, 0xa1, b'b', 2, 0xa1, b'a', 3];
        assert_eq!(json_of(&map), r#"{"a":3,"b":2}"#);
        // "a" in UTF-8 and in binary are one key in Ruby (ASCII bytes)...
        let map = [0x82, 7, 0xa1, b'a', 1, 0xc8, 1, b'a', 2];
        assert_eq!(json_of(&map), r#"{"a":2}"#);
        // ...but "\xC3\xA9" in UTF-8 and in binary are two.
        let map = [0x82, 9, 0xa2, 0xc3, 0xa9, 1, 0xc8, 2, 0xc3, 0xa9, 2];
        assert_eq!(json_of(&map), r#"{"é":1,"é":2}"#);
        // A map of more than 16 pairs (the hashed path).
        let mut body = Vec::new();
        for i in 0..20u8 {
            body.extend_from_slice(&[0xa1, b'a' + (i % 10), i]);
        }
        let mut map = vec![0xcc, 20, body.len() as u8];
        map.extend_from_slice(&body);
        let want: Vec<String> = (0..10)
            .map(|i| format!(r#""{}":{}"#, (b'a' + i) as char, i + 10))
            .collect();
        assert_eq!(json_of(&map), format!("{{{}}}", want.join(",")));
    }

    #[test]
    fn an_item_found_inside_a_value_nests_only_as_deep_as_is_left() {
        // [[...[1]...]] 100 arrays deep: the whole value is as deep as a
        // value may be; its element, one step in, has 99 levels left.
        let mut bytes = vec![1u8];
        for _ in 0..crate::value::MAX_DEPTH {
            let len = bytes.len();
            let mut outer = vec![0x91];
            crate::format::varint::write_varint(&mut outer, len as u64);
            outer.extend_from_slice(&bytes);
            bytes = outer;
        }
        let item = Cursor::new(&bytes).next_item().unwrap();
        let mut out = String::new();
        write_item(&item, b"k", super::super::MAX_DEPTH, &mut out).unwrap();
        assert!(write_item(&item, b"k", crate::value::MAX_DEPTH - 1, &mut String::new()).is_err());
        assert!(write_item(&item, b"k", 0, &mut String::new()).is_err());
        assert!(write_item(&Item::Int(1), b"k", 0, &mut String::new()).is_ok());
    }

    #[test]
    fn a_negative_big_integer_of_no_magnitude_is_zero() {
        // c6 00: not what a writer makes, but read as 0 by every decoder.
        assert_eq!(json_of(&[0xc6, 0]), "0");
        assert_eq!(json_of(&[0xc6, 1, 5]), "-5");
    }

    #[test]
    fn strings_escape_controls_del_and_c1() {
        let mut out = String::new();
        write_str("a\"b\\c\nd\u{1b}e\u{7f}f\u{9b}g/é", &mut out);
        assert_eq!(out, r#""a\"b\\c\nd\u001be\u007ff\u009bg/é""#);
    }
}
