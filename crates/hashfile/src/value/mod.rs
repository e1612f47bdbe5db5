//! The typed-value codec: nil, booleans, integers of any size, floats,
//! strings with their encoding, symbols, arrays, maps and opaque custom
//! bytes, nested up to [`MAX_DEPTH`]. docs/FORMAT.md ("Typed values") is the
//! specification; this module is its one implementation.
//!
//! The encoding is MessagePack-like (a tag byte, small values inside the
//! tag) with two differences that serve lookups: integers are varints, and
//! every array and map records its body length, so a reader walking a path
//! (`dig`) skips a sibling in O(1) without decoding it.
//!
//! There are five ways in:
//! - [`Cursor`] reads one [`Item`] at a time, borrowing from the bytes.
//! - [`walk`] reads a whole value through a binding's [`walk::Build`],
//!   with the one set of checks every decoder makes.
//! - [`dig`] walks a path into encoded bytes, skipping siblings whole.
//! - [`Value`] is an owned tree, for Rust callers and tests.
//! - The `write_*` functions and [`ContainerStart`] encode without a tree;
//!   an encoder that refuses a value says why with [`Unencodable`].
//!
//! [`deep_merge`] merges two trees the way I18n merges locale files.
//!
//! ```
//! use hashfile::value::{Value, Encoding};
//! let v = Value::Map(vec![(Value::str("limits"), Value::Array(vec![Value::Int(50), Value::Float(0.75)]))]);
//! let mut bytes = Vec::new();
//! v.encode(&mut bytes).unwrap();
//! assert_eq!(Value::decode(&bytes).unwrap(), v);
//! ```

mod dig;
pub mod frames;
pub mod json;
mod merge;
mod unencodable;
pub mod walk;

use crate::error::{Error, Result};
use crate::format::{varint, Record, ValueKind};

pub use dig::{dig, find_in_array, find_in_map, Dig, Probe};
pub use merge::deep_merge;
pub use unencodable::{MapKeys, Unencodable};

/// Deepest nesting of arrays and maps a value may have. A scalar at the top
/// is depth 0; `[[1]]` is depth 2. JSON.parse's default `max_nesting` is
/// 100 for the whole document, whose top level is the store itself, so
/// every value JSON.parse accepts by default fits.
pub const MAX_DEPTH: usize = 100;

/// Tag bytes. Ranges carry a small payload in the tag itself.
pub mod tag {
    /// 0x00..=0x7f: the integer 0..=127.
    pub const POSITIVE_FIXINT_MAX: u8 = 0x7f;
    /// 0x80..=0x8f: a map of 0..=15 entries; then `body_len:varint`.
    pub const FIXMAP: u8 = 0x80;
    /// 0x90..=0x9f: an array of 0..=15 elements; then `body_len:varint`.
    pub const FIXARRAY: u8 = 0x90;
    /// 0xa0..=0xbf: a UTF-8 string of 0..=31 bytes; then the bytes.
    pub const FIXSTR: u8 = 0xa0;
    /// nil.
    pub const NIL: u8 = 0xc0;
    /// false.
    pub const FALSE: u8 = 0xc1;
    /// true.
    pub const TRUE: u8 = 0xc2;
    /// A float: 8 bytes, IEEE 754 binary64 bits, little-endian.
    pub const FLOAT: u8 = 0xc3;
    /// An integer: zigzag varint.
    pub const INT: u8 = 0xc4;
    /// A non-negative integer past i64: `len:varint`, magnitude little-endian.
    pub const BIGINT_POSITIVE: u8 = 0xc5;
    /// A negative integer past i64: `len:varint`, magnitude little-endian.
    pub const BIGINT_NEGATIVE: u8 = 0xc6;
    /// A UTF-8 string: `len:varint`, bytes.
    pub const UTF8: u8 = 0xc7;
    /// A binary string (Ruby's ASCII-8BIT): `len:varint`, bytes.
    pub const BINARY: u8 = 0xc8;
    /// A US-ASCII string: `len:varint`, bytes.
    pub const ASCII: u8 = 0xc9;
    /// A string in a named encoding: `name_len:varint`, name, `len:varint`, bytes.
    pub const NAMED: u8 = 0xca;
    /// A symbol: followed by one string item (any of the string tags).
    pub const SYMBOL: u8 = 0xcb;
    /// A map: `count:varint`, `body_len:varint`, then count key-value pairs.
    pub const MAP: u8 = 0xcc;
    /// An array: `count:varint`, `body_len:varint`, then count elements.
    pub const ARRAY: u8 = 0xcd;
    /// Bytes written by a user's serializer: `len:varint`, bytes.
    pub const CUSTOM: u8 = 0xce;
    /// An integer 128..=255: one byte.
    pub const UINT8: u8 = 0xcf;
    /// A compressed item (`frames`): `len:varint`, then `len` bytes that
    /// the store's decoder turns into exactly one item holding no frame.
    /// Only in a record with the compressed-items flag; a [`Cursor`]
    /// skips it whole but never reads it as an item: such a record is
    /// expanded (`frames::expand`) or walked (`frames::dig_in`) first.
    ///
    /// [`Cursor`]: super::Cursor
    pub const FRAME: u8 = 0xd0;
    /// 0xe0..=0xff: the integer -32..=-1.
    pub const NEGATIVE_FIXINT_MIN: u8 = 0xe0;
}

/// What a record's value is, for people (`hashfile info`): "string",
/// "binary", "integer", "float", "boolean", "nil", "symbol", "map",
/// "array" or "custom" (a user's serializer); "damaged" for a typed value
/// with no tag this version knows.
pub fn type_name(kind: crate::format::ValueKind, value: &[u8]) -> &'static str {
    use crate::format::ValueKind;
    match kind {
        ValueKind::Utf8 | ValueKind::Ascii => "string",
        ValueKind::Binary => "binary",
        ValueKind::Tombstone => "tombstone",
        ValueKind::Typed => match value.first().copied() {
            None => "damaged",
            Some(t) if t <= tag::POSITIVE_FIXINT_MAX || t >= tag::NEGATIVE_FIXINT_MIN => "integer",
            Some(tag::INT | tag::UINT8 | tag::BIGINT_POSITIVE | tag::BIGINT_NEGATIVE) => "integer",
            Some(t) if (tag::FIXMAP..tag::FIXARRAY).contains(&t) || t == tag::MAP => "map",
            Some(t) if (tag::FIXARRAY..tag::FIXSTR).contains(&t) || t == tag::ARRAY => "array",
            Some(t) if (tag::FIXSTR..tag::NIL).contains(&t) => "string",
            Some(tag::UTF8 | tag::ASCII | tag::NAMED) => "string",
            Some(tag::BINARY) => "binary",
            Some(tag::NIL) => "nil",
            Some(tag::TRUE | tag::FALSE) => "boolean",
            Some(tag::FLOAT) => "float",
            Some(tag::SYMBOL) => "symbol",
            Some(tag::CUSTOM) => "custom",
            Some(_) => "damaged",
        },
    }
}

/// A string's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding<'a> {
    /// Bytes with no encoding (Ruby's ASCII-8BIT).
    Binary,
    /// UTF-8. The bytes are kept as they were, valid or not.
    Utf8,
    /// US-ASCII.
    Ascii,
    /// Any other encoding, by its name (`"Shift_JIS"`, `"UTF-16LE"`, ...).
    Named(&'a str),
}

/// An array's or map's header: its element count and its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Container<'a> {
    /// Elements (arrays) or key-value pairs (maps).
    pub len: u64,
    /// The encoded elements, or keys and values alternating.
    pub body: &'a [u8],
}

impl<'a> Container<'a> {
    /// A cursor over the body.
    pub fn cursor(&self) -> Cursor<'a> {
        Cursor::new(self.body)
    }
}

/// One decoded item; containers are not decoded further.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Item<'a> {
    /// nil / null.
    Nil,
    /// true or false.
    Bool(bool),
    /// An integer within i64.
    Int(i64),
    /// An integer outside i64.
    BigInt {
        /// Sign.
        negative: bool,
        /// Absolute value, little-endian, no trailing zero bytes.
        magnitude: &'a [u8],
    },
    /// A float, bit for bit.
    Float(f64),
    /// A string and its encoding.
    Str(&'a [u8], Encoding<'a>),
    /// A symbol: its name and the name's encoding.
    Symbol(&'a [u8], Encoding<'a>),
    /// An array.
    Array(Container<'a>),
    /// A map.
    Map(Container<'a>),
    /// Bytes from a user's serializer.
    Custom(&'a [u8]),
}

/// Reads items one at a time from encoded bytes. Every length is checked
/// against the bytes left, so damaged input gives an error, never a read
/// out of bounds or a huge allocation.
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// Damage in a typed value. Typed values live in the records section.
#[cold]
fn malformed(what: &str, at: usize) -> Error {
    Error::corrupt("records", format!("malformed value: {what} at byte {at}"))
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, pos: 0 }
    }

    /// True when every byte has been read.
    pub fn is_at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| malformed("unexpected end", self.pos))?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn varint(&mut self) -> Result<u64> {
        let start = self.pos;
        varint::read_varint(self.bytes, &mut self.pos).ok_or_else(|| malformed("bad varint", start))
    }

    #[inline]
    fn take(&mut self, len: u64) -> Result<&'a [u8]> {
        let left = (self.bytes.len() - self.pos) as u64;
        if len > left {
            return Err(malformed("length past the end", self.pos));
        }
        let out = &self.bytes[self.pos..self.pos + len as usize];
        self.pos += len as usize;
        Ok(out)
    }

    fn string(&mut self, tag: u8) -> Result<(&'a [u8], Encoding<'a>)> {
        Ok(match tag {
            tag::FIXSTR..=0xbf => (self.take((tag - tag::FIXSTR) as u64)?, Encoding::Utf8),
            tag::UTF8 => {
                let n = self.varint()?;
                (self.take(n)?, Encoding::Utf8)
            }
            tag::BINARY => {
                let n = self.varint()?;
                (self.take(n)?, Encoding::Binary)
            }
            tag::ASCII => {
                let n = self.varint()?;
                (self.take(n)?, Encoding::Ascii)
            }
            tag::NAMED => {
                let at = self.pos;
                let n = self.varint()?;
                let name = std::str::from_utf8(self.take(n)?)
                    .map_err(|_| malformed("encoding name is not text", at))?;
                let n = self.varint()?;
                (self.take(n)?, Encoding::Named(name))
            }
            _ => return Err(malformed("symbol without a name", self.pos - 1)),
        })
    }

    fn container(&mut self, len: u64, pairs: bool) -> Result<Container<'a>> {
        let at = self.pos;
        let body_len = self.varint()?;
        let body = self.take(body_len)?;
        // Every item takes at least one byte: a count past that is damage,
        // and checking it here bounds what a decoder preallocates.
        let items = if pairs { len.checked_mul(2) } else { Some(len) };
        if items.is_none_or(|items| items > body.len() as u64) {
            return Err(malformed("count larger than its body", at));
        }
        Ok(Container { len, body })
    }

    /// The next item.
    #[inline]
    pub fn next_item(&mut self) -> Result<Item<'a>> {
        let tag = self.byte()?;
        Ok(match tag {
            0..=tag::POSITIVE_FIXINT_MAX => Item::Int(tag as i64),
            tag::FIXMAP..=0x8f => Item::Map(self.container((tag - tag::FIXMAP) as u64, true)?),
            tag::FIXARRAY..=0x9f => {
                Item::Array(self.container((tag - tag::FIXARRAY) as u64, false)?)
            }
            // Short UTF-8 strings, most map keys and many values, read here:
            // through `string`, which the compiler keeps out of line, the
            // Result came back through the stack in pieces that were then
            // read whole, a failed store forward that was half of this
            // function's time in a Ruby `db[]` of a small nested value
            // (`perf annotate`).
            tag::FIXSTR..=0xbf => {
                let len = (tag - tag::FIXSTR) as usize;
                match self.bytes.get(self.pos..self.pos + len) {
                    Some(bytes) => {
                        self.pos += len;
                        Item::Str(bytes, Encoding::Utf8)
                    }
                    None => return Err(malformed("length past the end", self.pos)),
                }
            }
            tag::UTF8 | tag::BINARY | tag::ASCII | tag::NAMED => {
                let (bytes, encoding) = self.string(tag)?;
                Item::Str(bytes, encoding)
            }
            tag::NIL => Item::Nil,
            tag::FALSE => Item::Bool(false),
            tag::TRUE => Item::Bool(true),
            tag::FLOAT => Item::Float(f64::from_le_bytes(self.take(8)?.try_into().unwrap())),
            tag::INT => {
                let z = self.varint()?;
                Item::Int(((z >> 1) as i64) ^ -((z & 1) as i64))
            }
            tag::UINT8 => Item::Int(self.byte()? as i64),
            tag::BIGINT_POSITIVE | tag::BIGINT_NEGATIVE => {
                let n = self.varint()?;
                Item::BigInt {
                    negative: tag == tag::BIGINT_NEGATIVE,
                    magnitude: self.take(n)?,
                }
            }
            tag::SYMBOL => {
                let t = self.byte()?;
                let at = self.pos;
                let (bytes, encoding) = self.string(t)?;
                // A Symbol's name is valid in its encoding (Ruby makes no
                // other): checked here, where every decoder reads it, so
                // none returns a name Ruby's refuses.
                let valid = match encoding {
                    Encoding::Utf8 => std::str::from_utf8(bytes).is_ok(),
                    Encoding::Ascii => bytes.is_ascii(),
                    Encoding::Binary | Encoding::Named(_) => true,
                };
                if !valid {
                    return Err(malformed("a symbol name is not valid in its encoding", at));
                }
                Item::Symbol(bytes, encoding)
            }
            tag::MAP => {
                let n = self.varint()?;
                Item::Map(self.container(n, true)?)
            }
            tag::ARRAY => {
                let n = self.varint()?;
                Item::Array(self.container(n, false)?)
            }
            tag::CUSTOM => {
                let n = self.varint()?;
                Item::Custom(self.take(n)?)
            }
            tag::NEGATIVE_FIXINT_MIN..=0xff => Item::Int(tag as i8 as i64),
            tag::FRAME => {
                return Err(malformed(
                    "a compressed item outside a record with compressed items, or inside another",
                    self.pos - 1,
                ))
            }
            _ => return Err(malformed(&format!("unknown tag {tag:#04x}"), self.pos - 1)),
        })
    }

    /// Checks that the next `count` items are well formed and nested at
    /// most `depth_left` deep, without building anything.
    pub fn check(&mut self, count: u64, depth_left: usize) -> Result<()> {
        for _ in 0..count {
            match self.next_item()? {
                Item::Array(c) => check_body(c, c.len, depth_left)?,
                Item::Map(c) => check_body(c, c.len * 2, depth_left)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Skips the next item, containers whole, in O(1). Single-byte items
    /// and short strings, the bulk of any map, take a fast path.
    #[inline]
    pub fn skip(&mut self) -> Result<()> {
        match self.bytes.get(self.pos) {
            Some(&tag)
                if tag <= tag::POSITIVE_FIXINT_MAX
                    || tag >= tag::NEGATIVE_FIXINT_MIN
                    || matches!(tag, tag::NIL | tag::FALSE | tag::TRUE) =>
            {
                self.pos += 1;
                Ok(())
            }
            Some(&tag) if (tag::FIXSTR..=0xbf).contains(&tag) => {
                let end = self.pos + 1 + (tag - tag::FIXSTR) as usize;
                if end > self.bytes.len() {
                    return Err(malformed("length past the end", self.pos + 1));
                }
                self.pos = end;
                Ok(())
            }
            Some(&tag::FLOAT) if self.pos + 9 <= self.bytes.len() => {
                self.pos += 9;
                Ok(())
            }
            Some(&tag::FRAME) => {
                self.pos += 1;
                let len = self.varint()?;
                self.take(len).map(|_| ())
            }
            _ => self.next_item().map(|_| ()),
        }
    }

    /// The next item's encoded bytes, skipped whole (a compressed item
    /// too: its tag, length and frame).
    #[inline]
    pub fn next_raw(&mut self) -> Result<&'a [u8]> {
        let start = self.pos;
        self.skip()?;
        Ok(&self.bytes[start..self.pos])
    }

    /// If the next item is a UTF-8 string of at most 31 bytes (the common
    /// map key), consumes it and returns its bytes; otherwise reads nothing.
    #[inline]
    pub fn short_str(&mut self) -> Option<&'a [u8]> {
        let tag = *self.bytes.get(self.pos)?;
        if !(tag::FIXSTR..=0xbf).contains(&tag) {
            return None;
        }
        let start = self.pos + 1;
        let out = self
            .bytes
            .get(start..start + (tag - tag::FIXSTR) as usize)?;
        self.pos = start + out.len();
        Some(out)
    }
}

impl Cursor<'_> {
    /// After a container's items were read from a cursor over its body:
    /// an error if bytes are left over. A count smaller than the items
    /// written would otherwise hide the rest of the body (a second
    /// `"role": "admin"` pair after the one counted) from one decoder and
    /// not from another; every decoder checks here, so all refuse it alike.
    pub fn end_of_body(&self) -> Result<()> {
        if self.is_at_end() {
            Ok(())
        } else {
            Err(malformed(
                "container body longer than its items",
                self.position(),
            ))
        }
    }

    /// After a record's one value was read: an error if bytes follow it.
    pub fn end_of_value(&self) -> Result<()> {
        if self.is_at_end() {
            Ok(())
        } else {
            Err(malformed("trailing bytes", self.position()))
        }
    }
}

/// Checks a container's body of `items` items, the container itself at
/// most `depth_left` deep (counted), as a whole decode would.
pub(super) fn check_body(c: Container<'_>, items: u64, depth_left: usize) -> Result<()> {
    if depth_left == 0 {
        return Err(too_deep());
    }
    let mut inner = c.cursor();
    inner.check(items, depth_left - 1)?;
    inner.end_of_body()
}

/// A value nested deeper than [`MAX_DEPTH`], found while decoding.
#[cold]
pub fn too_deep() -> Error {
    Error::corrupt(
        "records",
        format!("malformed value: nested deeper than {MAX_DEPTH} levels"),
    )
}

/// Checks that `bytes` hold exactly one well-formed value within
/// [`MAX_DEPTH`].
pub fn check(bytes: &[u8]) -> Result<()> {
    let mut cursor = Cursor::new(bytes);
    cursor.check(1, MAX_DEPTH)?;
    cursor.end_of_value()
}

/// An item in Ruby's notation, for messages: `1`, `1.0`, `true`, `nil`,
/// `"a"`, `:a`; a long string cut short, a container by its size.
impl std::fmt::Display for Item<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Item::Nil => f.write_str("nil"),
            Item::Bool(b) => write!(f, "{b}"),
            Item::Int(i) => write!(f, "{i}"),
            Item::BigInt {
                negative,
                magnitude,
            } => write!(
                f,
                "an Integer of {} bytes ({})",
                magnitude.len(),
                if negative { "negative" } else { "positive" }
            ),
            // Debug writes a point (`1.0`), as Ruby does.
            Item::Float(x) if x.is_finite() => write!(f, "{x:?}"),
            Item::Float(x) if x.is_nan() => f.write_str("NaN"),
            Item::Float(x) => f.write_str(if x > 0.0 { "Infinity" } else { "-Infinity" }),
            Item::Str(bytes, encoding) => {
                write!(f, "{}", crate::error::DisplayBytes(bytes))?;
                match encoding {
                    Encoding::Binary => f.write_str(".b"),
                    Encoding::Named(name) => write!(f, " ({name})"),
                    _ => Ok(()),
                }
            }
            Item::Symbol(bytes, _) => match std::str::from_utf8(bytes) {
                Ok(name)
                    if !name.is_empty()
                        && name.chars().all(|c| c.is_alphanumeric() || c == '_') =>
                {
                    write!(f, ":{name}")
                }
                _ => write!(f, ":{}", crate::error::DisplayBytes(bytes)),
            },
            Item::Array(c) => write!(f, "an Array of {}", c.len),
            Item::Map(c) => write!(f, "a Hash of {}", c.len),
            Item::Custom(bytes) => write!(f, "a serializer's {} bytes", bytes.len()),
        }
    }
}

/// Whether two stored map keys are one key in Ruby's Hash (`eql?`), as a
/// decode of the map keeps them: equal strings in the same encoding, or in
/// any two if the bytes are ASCII; symbols of one name; equal integers, or
/// floats (never an integer and a float); containers and serializer bytes
/// encoded alike. A map may hold such a key twice (a JSON object that
/// repeats one), which every language reads as one key with its last value.
pub fn same_key(a: &Item<'_>, b: &Item<'_>) -> bool {
    match (a, b) {
        (Item::Str(x, e), Item::Str(y, f)) => x == y && (e == f || x.is_ascii()),
        (Item::Symbol(x, _), Item::Symbol(y, _)) => x == y,
        (Item::Float(x), Item::Float(y)) => x == y,
        (Item::Array(x), Item::Array(y)) | (Item::Map(x), Item::Map(y)) => x == y,
        (x, y) => x == y,
    }
}

/// Items for a message: `1`, `1 and 1.0`, `1, 1.0 and true`.
pub fn join_items(items: &[Item<'_>]) -> String {
    let shown: Vec<String> = items.iter().map(Item::to_string).collect();
    match shown.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

// ---- encoding ----

use varint::write_varint;

/// Appends nil.
pub fn write_nil(out: &mut Vec<u8>) {
    out.push(tag::NIL);
}

/// Appends a boolean.
pub fn write_bool(out: &mut Vec<u8>, v: bool) {
    out.push(if v { tag::TRUE } else { tag::FALSE });
}

/// Appends an integer in its shortest form.
pub fn write_int(out: &mut Vec<u8>, v: i64) {
    match v {
        0..=127 => out.push(v as u8),
        128..=255 => out.extend_from_slice(&[tag::UINT8, v as u8]),
        -32..=-1 => out.push(v as i8 as u8),
        _ => {
            out.push(tag::INT);
            write_varint(out, ((v << 1) ^ (v >> 63)) as u64);
        }
    }
}

/// Appends an integer given by sign and little-endian magnitude, of any
/// size. Integers that fit in i64 are written as such, so each integer has
/// one encoding.
pub fn write_bigint(out: &mut Vec<u8>, negative: bool, magnitude: &[u8]) {
    let end = magnitude.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    let magnitude = &magnitude[..end];
    if magnitude.len() <= 8 {
        let mut buf = [0u8; 8];
        buf[..magnitude.len()].copy_from_slice(magnitude);
        let m = u64::from_le_bytes(buf);
        if !negative && m <= i64::MAX as u64 {
            return write_int(out, m as i64);
        }
        if negative && m <= 1u64 << 63 {
            return write_int(out, (m as i64).wrapping_neg());
        }
    }
    out.push(if negative {
        tag::BIGINT_NEGATIVE
    } else {
        tag::BIGINT_POSITIVE
    });
    write_varint(out, magnitude.len() as u64);
    out.extend_from_slice(magnitude);
}

/// Appends a float, bit for bit.
pub fn write_float(out: &mut Vec<u8>, v: f64) {
    out.push(tag::FLOAT);
    out.extend_from_slice(&v.to_bits().to_le_bytes());
}

/// Appends a string with its encoding.
pub fn write_str(out: &mut Vec<u8>, bytes: &[u8], encoding: Encoding<'_>) {
    match encoding {
        Encoding::Utf8 if bytes.len() <= 31 => out.push(tag::FIXSTR + bytes.len() as u8),
        Encoding::Utf8 => {
            out.push(tag::UTF8);
            write_varint(out, bytes.len() as u64);
        }
        Encoding::Binary => {
            out.push(tag::BINARY);
            write_varint(out, bytes.len() as u64);
        }
        Encoding::Ascii => {
            out.push(tag::ASCII);
            write_varint(out, bytes.len() as u64);
        }
        Encoding::Named(name) => {
            out.push(tag::NAMED);
            write_varint(out, name.len() as u64);
            out.extend_from_slice(name.as_bytes());
            write_varint(out, bytes.len() as u64);
        }
    }
    out.extend_from_slice(bytes);
}

/// Appends a symbol.
pub fn write_symbol(out: &mut Vec<u8>, name: &[u8], encoding: Encoding<'_>) {
    out.push(tag::SYMBOL);
    write_str(out, name, encoding);
}

/// Appends bytes produced by a user's serializer.
pub fn write_custom(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(tag::CUSTOM);
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Where an array or map began; write its elements after `begin`, then
/// call `end_array` or `end_map`, which put the header in front.
#[derive(Clone, Copy, Debug)]
#[must_use]
pub struct ContainerStart(usize);

impl ContainerStart {
    /// Marks the start of a container in `out`.
    pub fn begin(out: &[u8]) -> ContainerStart {
        ContainerStart(out.len())
    }

    /// Finishes an array of `len` elements.
    pub fn end_array(self, out: &mut Vec<u8>, len: u64) {
        self.end_with(out, len, tag::FIXARRAY, tag::ARRAY)
    }

    /// Finishes a map of `len` key-value pairs.
    pub fn end_map(self, out: &mut Vec<u8>, len: u64) {
        self.end_with(out, len, tag::FIXMAP, tag::MAP)
    }

    /// Finishes a map of `len` pairs or an array of `len` elements.
    pub fn end(self, out: &mut Vec<u8>, len: u64, is_map: bool) {
        if is_map {
            self.end_map(out, len)
        } else {
            self.end_array(out, len)
        }
    }

    fn end_with(self, out: &mut Vec<u8>, len: u64, fix: u8, long: u8) {
        let mut header = Vec::with_capacity(21);
        if len <= 15 {
            header.push(fix + len as u8);
        } else {
            header.push(long);
            write_varint(&mut header, len);
        }
        write_varint(&mut header, (out.len() - self.0) as u64);
        out.splice(self.0..self.0, header);
    }
}

// ---- the owned tree ----

/// An owned value, for Rust callers and tests. Bindings that build their
/// own objects go through [`walk`] instead.
#[derive(Clone, Debug)]
pub enum Value {
    /// nil / null.
    Nil,
    /// true or false.
    Bool(bool),
    /// An integer within i64.
    Int(i64),
    /// An integer of any size: sign and little-endian magnitude.
    BigInt {
        /// Sign.
        negative: bool,
        /// Absolute value, little-endian.
        magnitude: Vec<u8>,
    },
    /// A float.
    Float(f64),
    /// A string: bytes and encoding name (`None` for UTF-8, else a Ruby
    /// encoding name such as `"ASCII-8BIT"`, `"US-ASCII"`, `"Shift_JIS"`).
    Str(Vec<u8>, Option<String>),
    /// A symbol: name bytes and encoding as for `Str`.
    Symbol(Vec<u8>, Option<String>),
    /// An array.
    Array(Vec<Value>),
    /// A map, in order.
    Map(Vec<(Value, Value)>),
    /// Bytes from a user's serializer.
    Custom(Vec<u8>),
}

/// Floats compare by bits, so NaN equals itself and -0.0 differs from 0.0:
/// equality means "decodes to the same value".
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Nil, Nil) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (
                BigInt {
                    negative: a,
                    magnitude: m,
                },
                BigInt {
                    negative: b,
                    magnitude: n,
                },
            ) => a == b && m == n,
            (Float(a), Float(b)) => a.to_bits() == b.to_bits(),
            (Str(a, e), Str(b, f)) | (Symbol(a, e), Symbol(b, f)) => a == b && e == f,
            (Array(a), Array(b)) => a == b,
            (Map(a), Map(b)) => a == b,
            (Custom(a), Custom(b)) => a == b,
            _ => false,
        }
    }
}

const BINARY_NAME: &str = "ASCII-8BIT";
const ASCII_NAME: &str = "US-ASCII";

fn encoding_of(name: &Option<String>) -> Encoding<'_> {
    match name.as_deref() {
        None => Encoding::Utf8,
        Some(BINARY_NAME) => Encoding::Binary,
        Some(ASCII_NAME) => Encoding::Ascii,
        Some("UTF-8") => Encoding::Utf8,
        Some(other) => Encoding::Named(other),
    }
}

fn encoding_name(encoding: Encoding<'_>) -> Option<String> {
    match encoding {
        Encoding::Utf8 => None,
        Encoding::Binary => Some(BINARY_NAME.into()),
        Encoding::Ascii => Some(ASCII_NAME.into()),
        Encoding::Named(name) => Some(name.into()),
    }
}

impl Value {
    /// A UTF-8 string.
    pub fn str(s: &str) -> Value {
        Value::Str(s.as_bytes().to_vec(), None)
    }

    /// Appends the encoding of this value; `Error::Limit` if it nests
    /// deeper than [`MAX_DEPTH`].
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        self.encode_at(out, MAX_DEPTH)
    }

    fn encode_at(&self, out: &mut Vec<u8>, depth_left: usize) -> Result<()> {
        let deeper = || {
            depth_left.checked_sub(1).ok_or(Error::Limit {
                what: "nesting depth of a value",
                max: MAX_DEPTH as u64,
            })
        };
        match self {
            Value::Nil => write_nil(out),
            Value::Bool(b) => write_bool(out, *b),
            Value::Int(i) => write_int(out, *i),
            Value::BigInt {
                negative,
                magnitude,
            } => write_bigint(out, *negative, magnitude),
            Value::Float(f) => write_float(out, *f),
            Value::Str(bytes, enc) => write_str(out, bytes, encoding_of(enc)),
            Value::Symbol(bytes, enc) => write_symbol(out, bytes, encoding_of(enc)),
            Value::Custom(bytes) => write_custom(out, bytes),
            Value::Array(items) => {
                let depth = deeper()?;
                let start = ContainerStart::begin(out);
                for item in items {
                    item.encode_at(out, depth)?;
                }
                start.end_array(out, items.len() as u64);
            }
            Value::Map(pairs) => {
                let depth = deeper()?;
                let start = ContainerStart::begin(out);
                for (k, v) in pairs {
                    k.encode_at(out, depth)?;
                    v.encode_at(out, depth)?;
                }
                start.end_map(out, pairs.len() as u64);
            }
        }
        Ok(())
    }

    /// A record's value as an owned tree: strings of the three plain kinds
    /// become `Value::Str`, typed values are decoded and checked.
    pub fn of_record(record: &Record<'_>) -> Result<Value> {
        Ok(match record.kind {
            ValueKind::Utf8 => Value::Str(record.value.to_vec(), None),
            ValueKind::Binary => Value::Str(record.value.to_vec(), Some(BINARY_NAME.into())),
            ValueKind::Ascii => Value::Str(record.value.to_vec(), Some(ASCII_NAME.into())),
            ValueKind::Typed => Value::decode(record.value)?,
            ValueKind::Tombstone => {
                return Err(Error::corrupt(
                    "records",
                    "a tombstone (a deleted key in a dataset's overlay) has no value",
                ))
            }
        })
    }

    /// The value as a record stores it, appended to `out`, and its kind:
    /// a string in UTF-8, US-ASCII or binary as a plain string record (so
    /// a store of strings only needs no typed-values support to read),
    /// anything else encoded as one typed value.
    pub fn stored(&self, out: &mut Vec<u8>) -> Result<ValueKind> {
        let plain = match self {
            Value::Str(bytes, None) => Some((bytes, ValueKind::Utf8)),
            Value::Str(bytes, Some(name)) if name == "UTF-8" => Some((bytes, ValueKind::Utf8)),
            Value::Str(bytes, Some(name)) if name == BINARY_NAME => {
                Some((bytes, ValueKind::Binary))
            }
            Value::Str(bytes, Some(name)) if name == ASCII_NAME => Some((bytes, ValueKind::Ascii)),
            _ => None,
        };
        match plain {
            Some((bytes, kind)) => {
                out.extend_from_slice(bytes);
                Ok(kind)
            }
            None => {
                self.encode(out)?;
                Ok(ValueKind::Typed)
            }
        }
    }

    /// Decodes exactly one value from `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Value> {
        walk::value(&mut Tree, bytes)
    }
}

/// Builds the owned tree.
struct Tree;

impl walk::Build for Tree {
    type Value = Value;
    type Error = Error;

    fn error(&mut self, e: Error) -> Error {
        e
    }

    fn leaf(&mut self, item: &Item<'_>) -> Result<Value> {
        Ok(match *item {
            Item::Nil => Value::Nil,
            Item::Bool(b) => Value::Bool(b),
            Item::Int(i) => Value::Int(i),
            Item::BigInt {
                negative,
                magnitude,
            } => Value::BigInt {
                negative,
                magnitude: magnitude.to_vec(),
            },
            Item::Float(f) => Value::Float(f),
            Item::Str(bytes, enc) => Value::Str(bytes.to_vec(), encoding_name(enc)),
            Item::Symbol(bytes, enc) => Value::Symbol(bytes.to_vec(), encoding_name(enc)),
            Item::Custom(bytes) => Value::Custom(bytes.to_vec()),
            Item::Array(_) | Item::Map(_) => unreachable!("the walk builds containers"),
        })
    }

    fn array(&mut self, len: u64) -> Result<Value> {
        // `len` is at most the body's length in bytes: the cursor checked it.
        Ok(Value::Array(Vec::with_capacity(len as usize)))
    }

    fn push(&mut self, array: &mut Value, element: Value) -> Result<()> {
        if let Value::Array(items) = array {
            items.push(element);
        }
        Ok(())
    }

    fn map(&mut self, len: u64) -> Result<Value> {
        Ok(Value::Map(Vec::with_capacity(len as usize)))
    }

    fn insert(
        &mut self,
        map: &mut Value,
        key: Value,
        value: Value,
        _: Container<'_>,
    ) -> Result<()> {
        if let Value::Map(pairs) = map {
            pairs.push((key, value));
        }
        Ok(())
    }
}
