//! Walking a path into an encoded value without decoding what it passes:
//! every array and map records its body's length, so a sibling is skipped
//! in O(1). Key equality is Ruby's `Hash` equality (`eql?`) for the key
//! types a probe can be (strings, symbols, integers, floats, booleans), so
//! Ruby's `dig` gives the answers its own `Hash#dig` would, and Python's
//! gives the same: an integer finds an Integer key only, never the Float
//! or `true` Python's `==` would also take (docs/PYTHON.md, "dig").

use super::{join_items, Container, Cursor, Encoding, Item};
use crate::error::{Error, Result};

/// One step of a path: what to look up in a map, or (an integer) the index
/// in an array.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Probe<'p> {
    /// A string key. It equals a stored string with the same bytes when the
    /// two encodings agree, as Ruby's String equality has it: the same one
    /// of UTF-8/US-ASCII (as a group) or binary, or ASCII-only bytes.
    Str {
        /// The key's bytes.
        bytes: &'p [u8],
        /// True if the probe is a binary (ASCII-8BIT) string.
        binary: bool,
    },
    /// A symbol key, by name.
    Symbol(&'p [u8]),
    /// An integer key in a map, or an index into an array (negative from
    /// the end). It equals an Integer key only, as Ruby's `eql?` has it:
    /// not `1.0`, not `true`.
    Int(i64),
    /// A float key: equals a Float key of the same value (`0.0` equals
    /// `-0.0`, NaN equals nothing), as Ruby's `eql?` has it; never an
    /// Integer.
    Float(f64),
    /// `true` or `false` as a key: equals that key only, never an integer.
    Bool(bool),
    /// A text key as Python's `str`, in a language with neither Symbols
    /// nor string encodings: equals a String key in any encoding but
    /// binary, or a Symbol, with these bytes. A map holding two such keys
    /// (`"a"` and `:a`) is ambiguous for it, and the walk refuses it
    /// ([`Error::KeysCollide`]) rather than pick one.
    Text(&'p [u8]),
    /// A step of a path typed as text (the command line's `get --path`):
    /// in a map, the String key with these bytes, else the Symbol of that
    /// name; in an array, an index in decimal digits (negative from the
    /// end). Anything else finds nothing.
    Step(&'p [u8]),
}

impl Probe<'_> {
    /// The array index this probe takes, if any.
    pub(super) fn index(&self) -> Option<i64> {
        match *self {
            Probe::Int(i) => Some(i),
            Probe::Step(text) => {
                let digits = text.strip_prefix(b"-").unwrap_or(text);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                std::str::from_utf8(text).ok()?.parse().ok()
            }
            _ => None,
        }
    }
}

/// Where a walk ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dig<'a> {
    /// The item at the end of the path.
    Found(Item<'a>),
    /// Some step found nothing (or passed through nil): the answer is nil.
    Absent,
    /// Step `step` cannot be taken on the bytes: `item` is a scalar, or an
    /// array and the probe is not an integer. A binding hands the rest of
    /// the path to its own `dig` on the decoded item, so that the answer or
    /// the error is its language's.
    Stuck {
        /// The index of the step in the path.
        step: usize,
        /// The item the step would be taken on.
        item: Item<'a>,
    },
}

/// Walks `path` into the one value encoded in `value`, decoding only the
/// keys it compares. With `symbolize_names`, string keys of maps count as
/// symbols (as a decode with that option would make them).
///
/// ```
/// use hashfile::value::{dig, Dig, Item, Probe, Value};
/// let v = Value::Map(vec![(Value::str("limits"), Value::Array(vec![Value::Int(5), Value::Int(9)]))]);
/// let mut bytes = Vec::new();
/// v.encode(&mut bytes).unwrap();
/// let path = [Probe::Str { bytes: b"limits", binary: false }, Probe::Int(-1)];
/// assert_eq!(dig(&bytes, &path, false).unwrap(), Dig::Found(Item::Int(9)));
/// # Ok::<(), hashfile::Error>(())
/// ```
pub fn dig<'a>(value: &'a [u8], path: &[Probe<'_>], symbolize_names: bool) -> Result<Dig<'a>> {
    let mut cursor = Cursor::new(value);
    let mut item = cursor.next_item()?;
    // A container's body was taken whole: what follows is free to check,
    // and a decode of the value would refuse it.
    cursor.end_of_value()?;
    for (step, probe) in path.iter().enumerate() {
        let next = match item {
            Item::Nil => return Ok(Dig::Absent),
            Item::Map(map) => find_in_map(map, probe, symbolize_names)?,
            Item::Array(array) => match probe.index() {
                Some(index) => find_in_array(array, index)?,
                None => return Ok(Dig::Stuck { step, item }),
            },
            _ => return Ok(Dig::Stuck { step, item }),
        };
        match next {
            Some(found) => item = found,
            None => return Ok(Dig::Absent),
        }
    }
    Ok(Dig::Found(item))
}

/// The value under `probe` in a map, or `None`. The last of repeated keys
/// wins, as in a Hash built from the same pairs; for a [`Probe::Text`],
/// two keys it equals are an error.
pub fn find_in_map<'a>(
    map: Container<'a>,
    probe: &Probe<'_>,
    symbolize_names: bool,
) -> Result<Option<Item<'a>>> {
    find_in_map_raw(map, probe, symbolize_names)?
        .map(|raw| Cursor::new(raw).next_item())
        .transpose()
}

/// [`find_in_map`]'s value as its encoded bytes, not read: a compressed
/// item among them too.
pub(super) fn find_in_map_raw<'a>(
    map: Container<'a>,
    probe: &Probe<'_>,
    symbolize_names: bool,
) -> Result<Option<&'a [u8]>> {
    let mut cursor = map.cursor();
    let mut found = None;
    let mut hit_key = None;
    // A Step's Symbol key, taken only if no String key is found.
    let mut symbol = None;
    for _ in 0..map.len {
        let (hit, key) = match (probe, cursor.short_str()) {
            // The common case, a short UTF-8 key, compared in place.
            (Probe::Str { bytes, binary }, Some(key)) if !symbolize_names => {
                (*bytes == key && (!*binary || key.is_ascii()), None)
            }
            (Probe::Symbol(name), Some(key)) if symbolize_names => (*name == key, None),
            (Probe::Text(text), Some(key)) => (*text == key, Some(Item::Str(key, Encoding::Utf8))),
            (Probe::Step(text), Some(key)) => (*text == key, None),
            (_, Some(_)) => (false, None),
            (_, None) => match (probe, cursor.next_item()?) {
                (Probe::Step(text), Item::Symbol(name, _)) if *text == name => {
                    symbol = Some(cursor.next_raw()?);
                    continue;
                }
                (_, key) => (matches(probe, key, symbolize_names), Some(key)),
            },
        };
        if hit {
            // Two keys the text equals, unless they are one key repeated.
            if let (Probe::Text(_), Some(first), Some(key)) = (probe, hit_key, key) {
                if !super::same_key(&first, &key) {
                    return Err(Error::KeysCollide {
                        keys: join_items(&[first, key]),
                        language: "Python",
                    });
                }
            }
            hit_key = key;
            found = Some(cursor.next_raw()?);
        } else {
            cursor.skip()?;
        }
    }
    // Every pair was passed: a body holding more than the count says (a
    // hidden pair) is refused here as a decode refuses it.
    cursor.end_of_body()?;
    Ok(found.or(symbol))
}

/// Whether a stored map key (not a short UTF-8 string) equals `probe`.
fn matches(probe: &Probe<'_>, key: Item<'_>, symbolize_names: bool) -> bool {
    match (probe, key) {
        (Probe::Int(i), Item::Int(k)) => *i == k,
        (Probe::Float(x), Item::Float(k)) => *x == k,
        (Probe::Bool(b), Item::Bool(k)) => *b == k,
        (Probe::Text(text), Item::Str(k, encoding)) => *text == k && encoding != Encoding::Binary,
        (Probe::Text(text), Item::Symbol(k, _)) => *text == k,
        (Probe::Step(text), Item::Str(k, encoding)) => *text == k && compatible(k, false, encoding),
        (Probe::Str { bytes, binary }, Item::Str(k, encoding)) if !symbolize_names => {
            *bytes == k && compatible(k, *binary, encoding)
        }
        (Probe::Symbol(name), Item::Symbol(k, _)) => *name == k,
        (Probe::Symbol(name), Item::Str(k, _)) if symbolize_names => *name == k,
        _ => false,
    }
}

/// Whether strings with equal bytes `bytes`, one binary or not (`binary`)
/// and one in `encoding`, are equal Ruby Strings.
fn compatible(bytes: &[u8], binary: bool, encoding: Encoding<'_>) -> bool {
    match encoding {
        Encoding::Named(_) => false,
        other => (other == Encoding::Binary) == binary || bytes.is_ascii(),
    }
}

/// The element at `index` of an array (negative from the end), or `None`.
pub fn find_in_array(array: Container<'_>, index: i64) -> Result<Option<Item<'_>>> {
    find_in_array_raw(array, index)?
        .map(|raw| Cursor::new(raw).next_item())
        .transpose()
}

/// [`find_in_array`]'s element as its encoded bytes, not read.
pub(super) fn find_in_array_raw(array: Container<'_>, index: i64) -> Result<Option<&[u8]>> {
    let len = array.len as i64;
    let index = if index < 0 { index + len } else { index };
    if index < 0 || index >= len {
        return Ok(None);
    }
    let mut cursor = array.cursor();
    for _ in 0..index {
        cursor.skip()?;
    }
    let found = cursor.next_raw()?;
    // The rest walked too, as a map's walk does, so that a body holding
    // more items than its count is refused here as a whole read refuses
    // it: an answer is never read out of a malformed array.
    for _ in index + 1..len {
        cursor.skip()?;
    }
    cursor.end_of_body()?;
    Ok(Some(found))
}
