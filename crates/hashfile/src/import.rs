//! Streaming importers: JSON object, JSON array of pairs, JSON Lines, CSV,
//! TSV, MessagePack map and YAML mapping, read straight into a builder with
//! no intermediate map. Values keep their types: JSON numbers become
//! integers (of any size) or floats, MessagePack types map across, YAML
//! scalars are typed as Ruby's Psych types them (`yaml.rs`). Typed values
//! are encoded straight from the parser's events into the value codec;
//! strings stay plain string records. CSV and TSV values are strings.

use std::borrow::Cow;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::builder::Batch;
use crate::error::{DisplayBytes, Error, Result};
use crate::format::ValueKind;
use crate::value;

/// The input formats `import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// `{"key": "value", ...}`
    JsonObject,
    /// `[["key", "value"], ...]`
    JsonPairs,
    /// One `["key", "value"]` or `{"key": ..., "value": ...}` per line.
    JsonLines,
    /// Comma-separated, RFC 4180 quoting.
    Csv,
    /// Tab-separated, RFC 4180 quoting.
    Tsv,
    /// A MessagePack map with str or bin keys; values of any type.
    MessagePack,
    /// A YAML mapping, typed as Ruby's Psych types it (`yaml.rs`).
    Yaml,
}

impl InputFormat {
    /// Every format with its name, as `--format` takes it.
    pub const NAMES: [(&'static str, InputFormat); 7] = [
        ("json", InputFormat::JsonObject),
        ("json-pairs", InputFormat::JsonPairs),
        ("jsonl", InputFormat::JsonLines),
        ("csv", InputFormat::Csv),
        ("tsv", InputFormat::Tsv),
        ("msgpack", InputFormat::MessagePack),
        ("yaml", InputFormat::Yaml),
    ];

    /// The format named `name` (see `NAMES`).
    pub fn from_name(name: &str) -> Option<InputFormat> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, f)| *f == self).map(|(n, _)| *n).unwrap_or("?")
    }

    /// The format a file's extension implies. `.json` means a JSON object;
    /// `import` also accepts an array of pairs there, telling them apart by
    /// the first character.
    pub fn from_extension(path: &Path) -> Option<InputFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "json" => InputFormat::JsonObject,
            "jsonl" | "ndjson" => InputFormat::JsonLines,
            "csv" => InputFormat::Csv,
            "tsv" | "tab" => InputFormat::Tsv,
            "msgpack" | "mpk" | "mp" => InputFormat::MessagePack,
            "yaml" | "yml" => InputFormat::Yaml,
            _ => return None,
        })
    }
}

/// A CSV/TSV column, by 0-based index or by header name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    /// 0-based position.
    Index(usize),
    /// Name in the header row.
    Name(String),
}

impl Column {
    /// Parses `--key-column` style text: digits are an index, else a name.
    pub fn parse(text: &str) -> Column {
        text.parse().map(Column::Index).unwrap_or_else(|_| Column::Name(text.to_string()))
    }
}

/// How to read an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportOptions {
    /// The format.
    pub format: InputFormat,
    /// CSV/TSV: the key column. Default: index 0.
    pub key_column: Column,
    /// CSV/TSV: the value column. Default: index 1.
    pub value_column: Column,
    /// CSV/TSV: whether the first row is a header. Default: true.
    pub header: bool,
    /// JSON Lines objects: the key field. Default `"key"`.
    pub key_field: String,
    /// JSON Lines objects: the value field. Default `"value"`.
    pub value_field: String,
}

impl ImportOptions {
    /// Default options for `format`.
    pub fn new(format: InputFormat) -> ImportOptions {
        ImportOptions { format, key_column: Column::Index(0), value_column: Column::Index(1), header: true, key_field: "key".into(), value_field: "value".into() }
    }
}

/// One imported entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The key's bytes.
    pub key: &'a [u8],
    /// True if the key is UTF-8 text.
    pub key_utf8: bool,
    /// The value's bytes.
    pub value: &'a [u8],
    /// The value's kind.
    pub kind: ValueKind,
}

/// Where an entry came from: shown in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// A line (1-based), with a column where known.
    Line(u64, Option<u64>),
    /// An entry number (1-based), for formats without lines.
    Entry(u64),
    /// Nowhere more precise than the whole input.
    Unknown,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Line(l, Some(c)) => write!(f, "line {l}, column {c}"),
            Position::Line(l, None) => write!(f, "line {l}"),
            Position::Entry(n) => write!(f, "entry {n}"),
            Position::Unknown => f.write_str("input"),
        }
    }
}

fn parse_error(source: &str, position: Position, message: impl Into<String>) -> Error {
    Error::Parse { input: source.to_string(), position: position.to_string(), message: message.into() }
}

fn text_entry<'a>(key: &'a str, value: &'a str) -> Entry<'a> {
    Entry { key: key.as_bytes(), key_utf8: true, value: value.as_bytes(), kind: ValueKind::Utf8 }
}

fn bytes_entry<'a>(key: &'a [u8], value: &'a [u8]) -> Entry<'a> {
    let key_utf8 = std::str::from_utf8(key).is_ok();
    let kind = if std::str::from_utf8(value).is_ok() { ValueKind::Utf8 } else { ValueKind::Binary };
    Entry { key, key_utf8, value, kind }
}

/// The sink `import` feeds: returns an error to stop the import (a
/// cancelled build, say).
pub type Sink<'s> = dyn FnMut(Entry<'_>, Position) -> Result<()> + 's;

/// Reads every entry of `input` into `sink`. `source` names the input in
/// errors (a path, or `-` for stdin).
pub fn import<R: Read>(input: R, source: &str, options: &ImportOptions, sink: &mut Sink<'_>) -> Result<()> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    match options.format {
        InputFormat::JsonObject | InputFormat::JsonPairs => import_json(&mut input, source, sink),
        InputFormat::JsonLines => import_json_lines(&mut input, source, options, sink),
        InputFormat::Csv => import_csv(input, source, options, b',', sink),
        InputFormat::Tsv => import_csv(input, source, options, b'\t', sink),
        InputFormat::MessagePack => import_msgpack(&mut input, source, sink),
        InputFormat::Yaml => {
            let mut bytes = Vec::new();
            input.read_to_end(&mut bytes).map_err(|e| Error::io(Some(Path::new(source)), e))?;
            let text = String::from_utf8(bytes).map_err(|e| {
                let line = e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|b| **b == b'\n').count() as u64 + 1;
                parse_error(source, Position::Line(line, None), "YAML input is not valid UTF-8")
            })?;
            crate::yaml::import(&text, source, sink)
        }
    }
}

/// Turns a serde result into ours: a sink failure (already positioned)
/// wins over the serde error it caused; otherwise the serde error is
/// positioned by `position`.
fn finish_serde<E: fmt::Display>(result: std::result::Result<(), E>, failure: Option<Error>, source: &str, position: impl Fn(&E) -> Position) -> Result<()> {
    match (result, failure) {
        (_, Some(failure)) => Err(failure),
        (Ok(()), None) => Ok(()),
        (Err(e), None) => {
            let message = e.to_string();
            // serde_json and serde_norway append " at line L column C"; the
            // position is shown in front instead.
            let message = message.split(" at line ").next().unwrap_or(&message);
            let message = message.to_string();
            Err(parse_error(source, position(&e), message))
        }
    }
}

fn import_json<R: BufRead>(input: &mut R, source: &str, sink: &mut Sink<'_>) -> Result<()> {
    let first = loop {
        let buf = input.fill_buf().map_err(|e| Error::io(Some(Path::new(source)), e))?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => break Some(buf[i]),
            None if buf.is_empty() => break None,
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    };
    let mut de = serde_json::Deserializer::from_reader(input);
    let mut failure = None;
    let result = match first {
        Some(b'[') => de::Deserializer::deserialize_seq(&mut de, PairsVisitor { sink, failure: &mut failure }),
        _ => de::Deserializer::deserialize_map(&mut de, MappingVisitor { sink, failure: &mut failure }),
    };
    let result = result.and_then(|_| de.end());
    finish_serde(result, failure, source, |e: &serde_json::Error| Position::Line(e.line() as u64, Some(e.column() as u64)))
}

/// A string that may borrow from the input.
struct Text<'de>(Cow<'de, str>);

/// The visitor methods that accept a string as a `Text`, borrowed when the
/// input allows.
macro_rules! text_visits {
    () => {
        fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
            Ok(Text(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> std::result::Result<Text<'de>, E> {
            Ok(Text(Cow::Owned(v.to_string())))
        }
        fn visit_string<E>(self, v: String) -> std::result::Result<Text<'de>, E> {
            Ok(Text(Cow::Owned(v)))
        }
    };
}

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            text_visits!();
        }
        d.deserialize_str(V)
    }
}

/// A top-level value: a string stays a (possibly borrowed) string record;
/// anything else is encoded into the shared buffer as a typed value.
enum Top<'de> {
    Text(Cow<'de, str>),
    Typed,
}

impl<'de> Top<'de> {
    fn entry<'a>(&'a self, key: &'a str, typed: &'a [u8]) -> Entry<'a> {
        match self {
            Top::Text(text) => text_entry(key, text),
            Top::Typed => Entry { key: key.as_bytes(), key_utf8: true, value: typed, kind: ValueKind::Typed },
        }
    }
}

/// Reads one top-level value for `key` (named in errors) into a `Top`,
/// encoding non-strings into `out`.
struct TopValue<'k, 'o> {
    key: &'k str,
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for TopValue<'_, '_> {
    type Value = Top<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<Top<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

macro_rules! typed_visits {
    ($( $name:ident ( $($arg:ident : $t:ty),* ) ),* $(,)?) => {
        $(
            fn $name<E: de::Error>(self, $($arg: $t),*) -> std::result::Result<Top<'de>, E> {
                self.out.clear();
                Encode { key: self.key, out: self.out, depth_left: value::MAX_DEPTH }.$name($($arg),*)?;
                Ok(Top::Typed)
            }
        )*
    };
}

impl<'de> Visitor<'de> for TopValue<'_, '_> {
    type Value = Top<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a value for key {}", DisplayBytes(self.key.as_bytes()))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Top<'de>, E> {
        Ok(Top::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Top<'de>, E> {
        Ok(Top::Text(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Top<'de>, E> {
        Ok(Top::Text(Cow::Owned(v)))
    }
    typed_visits!(visit_bool(v: bool), visit_i64(v: i64), visit_u64(v: u64), visit_i128(v: i128), visit_u128(v: u128), visit_f64(v: f64), visit_unit(), visit_bytes(v: &[u8]));
    fn visit_none<E: de::Error>(self) -> std::result::Result<Top<'de>, E> {
        self.visit_unit()
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<Top<'de>, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<Top<'de>, A::Error> {
        self.out.clear();
        Encode { key: self.key, out: self.out, depth_left: value::MAX_DEPTH }.visit_seq(seq)?;
        Ok(Top::Typed)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Top<'de>, A::Error> {
        self.out.clear();
        Encode { key: self.key, out: self.out, depth_left: value::MAX_DEPTH }.visit_map(map)?;
        Ok(Top::Typed)
    }
}

/// Encodes one serde value of any shape into the value codec.
struct Encode<'k, 'o> {
    key: &'k str,
    out: &'o mut Vec<u8>,
    depth_left: usize,
}

impl Encode<'_, '_> {
    fn deeper<E: de::Error>(&self) -> std::result::Result<usize, E> {
        self.depth_left.checked_sub(1).ok_or_else(|| E::custom(format!("value for key {} nests deeper than {} levels", DisplayBytes(self.key.as_bytes()), value::MAX_DEPTH)))
    }
}

impl<'de> DeserializeSeed<'de> for Encode<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// A map key that may be serde_json's marker for a number it keeps as text
/// (its `arbitrary_precision` feature: big integers, and floats exactly as
/// written); any other key is encoded.
struct KeyOrNumber<'k, 'o> {
    key: &'k str,
    out: &'o mut Vec<u8>,
    depth_left: usize,
}

const JSON_NUMBER_TOKEN: &str = "$serde_json::private::Number";

impl<'de> DeserializeSeed<'de> for KeyOrNumber<'_, '_> {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyOrNumber<'_, '_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<bool, E> {
        if v == JSON_NUMBER_TOKEN {
            return Ok(true);
        }
        value::write_str(self.out, v.as_bytes(), value::Encoding::Utf8);
        Ok(false)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<bool, E> {
        Encode { key: self.key, out: self.out, depth_left: self.depth_left }.visit_bool(v).map(|_| false)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<bool, E> {
        Encode { key: self.key, out: self.out, depth_left: self.depth_left }.visit_i64(v).map(|_| false)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<bool, E> {
        Encode { key: self.key, out: self.out, depth_left: self.depth_left }.visit_u64(v).map(|_| false)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<bool, E> {
        Encode { key: self.key, out: self.out, depth_left: self.depth_left }.visit_f64(v).map(|_| false)
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> std::result::Result<bool, E> {
        Encode { key: self.key, out: self.out, depth_left: self.depth_left }.visit_bytes(v).map(|_| false)
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<bool, E> {
        Encode { key: self.key, out: self.out, depth_left: self.depth_left }.visit_unit().map(|_| false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<bool, A::Error> {
        Encode { key: self.key, out: self.out, depth_left: self.depth_left }.visit_seq(seq).map(|_| false)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<bool, A::Error> {
        Encode { key: self.key, out: self.out, depth_left: self.depth_left }.visit_map(map).map(|_| false)
    }
}

impl<'de> Visitor<'de> for Encode<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a value for key {}", DisplayBytes(self.key.as_bytes()))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<(), E> {
        value::write_bool(self.out, v);
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<(), E> {
        value::write_int(self.out, v);
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<(), E> {
        value::write_bigint(self.out, false, &v.to_le_bytes());
        Ok(())
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> std::result::Result<(), E> {
        value::write_bigint(self.out, v < 0, &v.unsigned_abs().to_le_bytes());
        Ok(())
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> std::result::Result<(), E> {
        value::write_bigint(self.out, false, &v.to_le_bytes());
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<(), E> {
        value::write_float(self.out, v);
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<(), E> {
        value::write_str(self.out, v.as_bytes(), value::Encoding::Utf8);
        Ok(())
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> std::result::Result<(), E> {
        value::write_str(self.out, v, value::Encoding::Binary);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        value::write_nil(self.out);
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> std::result::Result<(), E> {
        self.visit_unit()
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let depth_left = self.deeper()?;
        let start = value::ContainerStart::begin(self.out);
        let mut n = 0u64;
        while seq.next_element_seed(Encode { key: self.key, out: &mut *self.out, depth_left })?.is_some() {
            n += 1;
        }
        start.end_array(self.out, n);
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let start = value::ContainerStart::begin(self.out);
        let depth_left = self.depth_left;
        let mut n = 0u64;
        while let Some(is_number) = map.next_key_seed(KeyOrNumber { key: self.key, out: &mut *self.out, depth_left: depth_left.saturating_sub(1) })? {
            if is_number && n == 0 {
                let text: String = map.next_value()?;
                return write_number(self.out, &text).map_err(de::Error::custom);
            }
            if n == 0 && depth_left == 0 {
                return Err(self.deeper::<A::Error>().unwrap_err());
            }
            map.next_value_seed(Encode { key: self.key, out: &mut *self.out, depth_left: depth_left - 1 })?;
            n += 1;
        }
        if n == 0 && depth_left == 0 {
            return Err(self.deeper::<A::Error>().unwrap_err());
        }
        start.end_map(self.out, n);
        Ok(())
    }
}

/// Encodes a number serde_json kept as text: a float (parsed exactly, as
/// Ruby's JSON does) or an integer of any size.
fn write_number(out: &mut Vec<u8>, text: &str) -> std::result::Result<(), String> {
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
pub(crate) fn digits_to_magnitude(digits: &str, radix: u32) -> Option<Vec<u8>> {
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

/// Visits a top-level mapping (JSON object), feeding the sink one entry
/// at a time.
struct MappingVisitor<'a, 's> {
    sink: &'a mut Sink<'s>,
    failure: &'a mut Option<Error>,
}

impl<'de> Visitor<'de> for MappingVisitor<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping with string keys at the top level")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut n = 0u64;
        let mut typed = Vec::new();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            let value = map.next_value_seed(TopValue { key: &key.0, out: &mut typed })?;
            n += 1;
            if let Err(e) = (self.sink)(value.entry(&key.0, &typed), Position::Entry(n)) {
                *self.failure = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// Visits a top-level array of `[key, value]` pairs.
struct PairsVisitor<'a, 's> {
    sink: &'a mut Sink<'s>,
    failure: &'a mut Option<Error>,
}

impl<'de> Visitor<'de> for PairsVisitor<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of [key, value] pairs")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let mut n = 0u64;
        let mut typed = Vec::new();
        while let Some(Pair(key, value)) = seq.next_element_seed(LineVisitor { key_field: "", value_field: "", out: &mut typed })? {
            n += 1;
            if let Err(e) = (self.sink)(value.entry(&key.0, &typed), Position::Entry(n)) {
                *self.failure = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// `["key", value]`.
struct Pair<'de>(Text<'de>, Top<'de>);

/// A JSON Lines record: `["key", value]` or an object with the key and
/// value fields (other fields are ignored). Typed values go to `out`.
struct LineVisitor<'f, 'o> {
    key_field: &'f str,
    value_field: &'f str,
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for LineVisitor<'_, '_> {
    type Value = Pair<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<Pair<'de>, D::Error> {
        if self.key_field.is_empty() {
            d.deserialize_seq(self)
        } else {
            d.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for LineVisitor<'_, '_> {
    type Value = Pair<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.key_field.is_empty() {
            f.write_str("a [key, value] pair")
        } else {
            write!(f, "a [key, value] pair or an object with {:?} and {:?}", self.key_field, self.value_field)
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Pair<'de>, A::Error> {
        let expected = if self.key_field.is_empty() { "a [key, value] pair" } else { "a [key, value] pair or an object" };
        let key: Text = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &expected))?;
        let value = seq.next_element_seed(TopValue { key: &key.0, out: self.out })?.ok_or_else(|| de::Error::invalid_length(1, &expected))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(3, &expected));
        }
        Ok(Pair(key, value))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Pair<'de>, A::Error> {
        if self.key_field.is_empty() {
            return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
        }
        let (mut key, mut value): (Option<Text>, Option<Top>) = (None, None);
        while let Some(field) = map.next_key::<Text>()? {
            if field.0 == self.key_field {
                key = Some(map.next_value()?);
            } else if field.0 == self.value_field {
                let name = key.as_ref().map_or(self.value_field, |k| &k.0);
                value = Some(map.next_value_seed(TopValue { key: name, out: &mut *self.out })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        let key = key.ok_or_else(|| <A::Error as de::Error>::custom(format!("missing field {:?}", self.key_field)))?;
        let value = value.ok_or_else(|| <A::Error as de::Error>::custom(format!("missing field {:?}", self.value_field)))?;
        Ok(Pair(key, value))
    }
}

fn import_json_lines<R: Read>(input: &mut R, source: &str, options: &ImportOptions, sink: &mut Sink<'_>) -> Result<()> {
    let (mut run, mut carry, mut read, mut first_line) = (Vec::new(), Vec::new(), 0u64, 1u64);
    while next_chunk(input, &mut run, &mut carry, JSON_LINES_CHUNK, &mut read, source)? {
        first_line += json_lines_in(&run, first_line, source, options, sink)?;
    }
    Ok(())
}

/// One JSON Lines line (its line end included or not), numbered `number`,
/// to `sink`; a blank line is skipped.
fn json_line(line: &[u8], number: u64, source: &str, options: &ImportOptions, typed: &mut Vec<u8>, sink: &mut Sink<'_>) -> Result<()> {
    let mut line = line;
    while let [rest @ .., b'\n' | b'\r'] = line {
        line = rest;
    }
    if let Some((key, value)) = simple_pair(line) {
        return sink(Entry { key, key_utf8: true, value, kind: ValueKind::Utf8 }, Position::Line(number, None));
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let visitor = LineVisitor { key_field: &options.key_field, value_field: &options.value_field, out: typed };
    match visitor.deserialize(&mut de).and_then(|p| de.end().map(|_| p)) {
        Ok(Pair(key, value)) => sink(value.entry(&key.0, typed), Position::Line(number, None)),
        Err(e) => {
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message).to_string();
            Err(parse_error(source, Position::Line(number, Some(e.column() as u64)), message))
        }
    }
}

/// The commonest line, `["key","value"]` with no whitespace, escapes or
/// control characters, read without serde: its key and value. `None` for
/// anything else, which serde reads (and reports the errors of). The
/// entry is the one serde's path makes of the same line.
fn simple_pair(line: &[u8]) -> Option<(&[u8], &[u8])> {
    fn string(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
        let end = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if bytes[end] != b'"' {
            return None;
        }
        // UTF-8 checked only past ASCII, which is most strings.
        let text = &bytes[..end];
        if !text.is_ascii() {
            std::str::from_utf8(text).ok()?;
        }
        Some((text, &bytes[end + 1..]))
    }
    let (key, rest) = string(line.strip_prefix(b"[\"")?)?;
    let (value, rest) = string(rest.strip_prefix(b",\"")?)?;
    (rest == b"]").then_some((key, value))
}

/// The lines of `text`, the first numbered `first_line`, to `sink`.
/// Returns the number of line ends in `text`.
fn json_lines_in(text: &[u8], first_line: u64, source: &str, options: &ImportOptions, sink: &mut Sink<'_>) -> Result<u64> {
    let mut typed = Vec::new();
    let mut start = 0;
    let mut number = first_line;
    for end in memchr::memchr_iter(b'\n', text) {
        json_line(&text[start..end], number, source, options, &mut typed, sink)?;
        start = end + 1;
        number += 1;
    }
    json_line(&text[start..], number, source, options, &mut typed, sink)?;
    Ok(number - first_line)
}

/// Bytes of JSON Lines one worker of `import_json_lines_parallel` parses at
/// a time (more when one line is longer).
pub const JSON_LINES_CHUNK: usize = 4 << 20;

/// Reads the next run of whole lines of about `chunk_bytes` (the rest of the
/// input at its end) into `buf`, reusing its memory. False at the end.
/// `carry` holds the start of a line that the previous run cut.
fn next_chunk<R: Read>(input: &mut R, buf: &mut Vec<u8>, carry: &mut Vec<u8>, chunk_bytes: usize, read: &mut u64, source: &str) -> Result<bool> {
    buf.clear();
    buf.append(carry);
    loop {
        let start = buf.len();
        let got = input.by_ref().take(chunk_bytes as u64).read_to_end(buf).map_err(|e| Error::io(Some(Path::new(source)), e))?;
        *read += got as u64;
        if got == 0 {
            return Ok(!buf.is_empty());
        }
        if let Some(end) = memchr::memrchr(b'\n', &buf[start..]) {
            carry.extend_from_slice(&buf[start + end + 1..]);
            buf.truncate(start + end + 1);
            return Ok(true);
        }
    }
}

/// Imports JSON Lines on the rayon pool. The input is read in runs of
/// whole lines of about `chunk_bytes` (`JSON_LINES_CHUNK` is a good size);
/// each worker parses a run into a `Batch` like `batch` (empty, say from
/// `Builder::new_batch`), and `deliver` gets the batches
/// in input order, on the calling thread, with the input bytes read so
/// far. Runs and batches are reused, so memory stays at a few runs. The
/// entries, their order and any error are exactly those of `import`: the
/// first bad line of the input is the one reported, by its line number,
/// and an error reading the input comes after every line before it.
pub fn import_json_lines_parallel<R: Read>(input: R, source: &str, options: &ImportOptions, chunk_bytes: usize, batch: &Batch, deliver: &mut dyn FnMut(&Batch, u64) -> Result<()>) -> Result<()> {
    use rayon::prelude::*;
    let mut input = input;
    let group = rayon::current_num_threads().max(1);
    let new_runs = || -> Vec<Run> { (0..group).map(|_| (Vec::new(), batch.empty_like(), None)).collect() };
    // Three sets of runs, each `group` long: while the pool parses `ready`,
    // this thread hands on the batches of `parsed`, then reads the next
    // runs into `free`.
    let (mut ready, mut parsed, mut free) = (new_runs(), new_runs(), new_runs());
    let mut reading = Reading { carry: Vec::new(), read: 0, error: None, chunk_bytes, source };
    let mut ready_count = reading.fill(&mut input, &mut ready);
    let mut ready_read = reading.read;
    let (mut parsed_count, mut parsed_read, mut first_line) = (0, 0u64, 1u64);
    loop {
        let (delivered, free_count) = std::thread::scope(|scope| {
            let runs = &mut ready[..ready_count];
            // Each worker numbers its lines from 1 and returns how many
            // line ends it passed; a run with an error is read again with
            // its real line numbers, for the message.
            let workers = scope.spawn(move || {
                runs.par_iter_mut().for_each(|(text, batch, lines)| {
                    batch.clear();
                    *lines = json_lines_in(text, 1, source, options, &mut |entry, _| {
                        batch.insert_entry(entry);
                        Ok(())
                    })
                    .ok();
                })
            });
            let mut result = Ok(());
            for (text, batch, lines) in &parsed[..parsed_count] {
                let Some(lines) = *lines else {
                    result = json_lines_in(text, first_line, source, options, &mut |_, _| Ok(())).map(|_| unreachable!("a run that failed to parse fails again"));
                    break;
                };
                if let Err(e) = deliver(batch, parsed_read) {
                    result = Err(e);
                    break;
                }
                first_line += lines;
            }
            let free_count = if result.is_ok() { reading.fill(&mut input, &mut free) } else { 0 };
            if let Err(panic) = workers.join() {
                std::panic::resume_unwind(panic);
            }
            (result, free_count)
        });
        delivered?;
        if ready_count == 0 {
            // Every run read has been handed on.
            return reading.error.map_or(Ok(()), Err);
        }
        // ready -> parsed -> free -> ready.
        std::mem::swap(&mut parsed, &mut ready);
        std::mem::swap(&mut ready, &mut free);
        (parsed_count, parsed_read) = (ready_count, ready_read);
        (ready_count, ready_read) = (free_count, reading.read);
    }
}

/// A run of JSON Lines text, the batch parsed from it, and the number of
/// line ends in it (`None` if it did not parse).
type Run = (Vec<u8>, Batch, Option<u64>);

/// The input side of `import_json_lines_parallel`.
struct Reading<'a> {
    carry: Vec<u8>,
    read: u64,
    /// The first read error: no more is read, and it is reported once the
    /// runs before it are handed on.
    error: Option<Error>,
    chunk_bytes: usize,
    source: &'a str,
}

impl Reading<'_> {
    /// Reads up to `runs.len()` runs into `runs`; returns how many.
    fn fill<R: Read>(&mut self, input: &mut R, runs: &mut [Run]) -> usize {
        if self.error.is_some() {
            return 0;
        }
        for (filled, run) in runs.iter_mut().enumerate() {
            match next_chunk(input, &mut run.0, &mut self.carry, self.chunk_bytes, &mut self.read, self.source) {
                Ok(true) => {}
                Ok(false) => return filled,
                Err(e) => {
                    self.error = Some(e);
                    return filled;
                }
            }
        }
        runs.len()
    }
}

fn import_csv<R: Read>(input: R, source: &str, options: &ImportOptions, delimiter: u8, sink: &mut Sink<'_>) -> Result<()> {
    let mut reader = csv::ReaderBuilder::new().delimiter(delimiter).has_headers(options.header).flexible(true).from_reader(input);
    let csv_error = |e: csv::Error| {
        let position = e.position().map_or(Position::Unknown, |p| Position::Line(p.line(), None));
        let message = e.to_string();
        match e.into_kind() {
            csv::ErrorKind::Io(io) => Error::io(Some(Path::new(source)), io),
            _ => parse_error(source, position, message),
        }
    };
    let resolve = |column: &Column, what: &str, headers: Option<&csv::ByteRecord>| -> Result<usize> {
        match column {
            Column::Index(i) => Ok(*i),
            Column::Name(name) => {
                let Some(headers) = headers else {
                    return Err(parse_error(source, Position::Line(1, None), format!("{what} column {name:?} is named, but the input has no header row")));
                };
                headers.iter().position(|h| h == name.as_bytes()).ok_or_else(|| parse_error(source, Position::Line(1, None), format!("no {what} column named {name:?} in the header")))
            }
        }
    };
    let headers = if options.header { Some(reader.byte_headers().map_err(csv_error)?.clone()) } else { None };
    let key_index = resolve(&options.key_column, "key", headers.as_ref())?;
    let value_index = resolve(&options.value_column, "value", headers.as_ref())?;
    let mut record = csv::ByteRecord::new();
    while reader.read_byte_record(&mut record).map_err(csv_error)? {
        let line = record.position().map_or(0, |p| p.line());
        let (Some(key), Some(value)) = (record.get(key_index), record.get(value_index)) else {
            return Err(parse_error(source, Position::Line(line, None), format!("expected at least {} fields, found {}", key_index.max(value_index) + 1, record.len())));
        };
        sink(bytes_entry(key, value), Position::Line(line, None))?;
    }
    Ok(())
}

fn import_msgpack<R: BufRead>(input: &mut R, source: &str, sink: &mut Sink<'_>) -> Result<()> {
    let bad = |n: u64, message: String| parse_error(source, if n == 0 { Position::Unknown } else { Position::Entry(n) }, message);
    let len = rmp::decode::read_map_len(input).map_err(|e| bad(0, format!("expected a map at the top level: {e}")))?;
    let mut key = Vec::new();
    let mut value = Vec::new();
    for n in 1..=len as u64 {
        let marker = msgpack::marker(input).map_err(|e| bad(n, e))?;
        if !msgpack::read_string(input, marker, &mut key).map_err(|e| bad(n, e))? {
            return Err(bad(n, format!("key is {}; keys must be strings", msgpack::marker_name(marker))));
        }
        let key_utf8 = std::str::from_utf8(&key).is_ok();
        let marker = msgpack::marker(input).map_err(|e| bad(n, e))?;
        value.clear();
        // Strings at the top level stay string records: str as UTF-8 (byte
        // for byte, as msgpack-ruby gives it), bin as binary.
        let kind = if msgpack::read_string(input, marker, &mut value).map_err(|e| bad(n, e))? {
            if msgpack::is_bin(marker) { ValueKind::Binary } else { ValueKind::Utf8 }
        } else {
            msgpack::encode(input, marker, &mut value, value::MAX_DEPTH).map_err(|e| bad(n, format!("value for key {}: {e}", DisplayBytes(&key))))?;
            ValueKind::Typed
        };
        sink(Entry { key: &key, key_utf8, value: &value, kind }, Position::Entry(n))?;
    }
    Ok(())
}

/// MessagePack, read with rmp's marker and length functions.
mod msgpack {
    use std::io::Read;

    use rmp::Marker;

    use crate::value::{self, ContainerStart, Encoding};

    pub fn marker<R: Read>(input: &mut R) -> Result<Marker, String> {
        rmp::decode::read_marker(input).map_err(|e| match e.0 {
            ref io if io.kind() == std::io::ErrorKind::UnexpectedEof => "unexpected end of input".to_string(),
            io => io.to_string(),
        })
    }

    fn be<R: Read>(input: &mut R, n: usize) -> Result<u64, String> {
        let mut buf = [0u8; 8];
        input.read_exact(&mut buf[8 - n..]).map_err(|_| "unexpected end of input".to_string())?;
        Ok(u64::from_be_bytes(buf))
    }

    fn bytes<R: Read>(input: &mut R, len: u64, out: &mut Vec<u8>) -> Result<(), String> {
        let before = out.len();
        input.take(len).read_to_end(out).map_err(|e| e.to_string())?;
        if ((out.len() - before) as u64) < len {
            return Err("unexpected end of input".into());
        }
        Ok(())
    }

    pub fn is_bin(m: Marker) -> bool {
        matches!(m, Marker::Bin8 | Marker::Bin16 | Marker::Bin32)
    }

    fn string_len<R: Read>(input: &mut R, m: Marker) -> Result<Option<u64>, String> {
        Ok(Some(match m {
            Marker::FixStr(n) => n as u64,
            Marker::Str8 | Marker::Bin8 => be(input, 1)?,
            Marker::Str16 | Marker::Bin16 => be(input, 2)?,
            Marker::Str32 | Marker::Bin32 => be(input, 4)?,
            _ => return Ok(None),
        }))
    }

    /// Appends a str or bin's bytes to `out`; false (reading nothing) for
    /// any other marker.
    pub fn read_string<R: Read>(input: &mut R, m: Marker, out: &mut Vec<u8>) -> Result<bool, String> {
        out.clear();
        match string_len(input, m)? {
            Some(len) => bytes(input, len, out).map(|_| true),
            None => Ok(false),
        }
    }

    pub fn marker_name(m: Marker) -> &'static str {
        match m {
            Marker::Null => "nil",
            Marker::True | Marker::False => "a boolean",
            Marker::FixPos(_) | Marker::FixNeg(_) | Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 | Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 | Marker::F32 | Marker::F64 => "a number",
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "an array",
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "a map",
            _ => "an extension type",
        }
    }

    /// Encodes the value that starts with marker `m` into `out`.
    pub fn encode<R: Read>(input: &mut R, m: Marker, out: &mut Vec<u8>, depth_left: usize) -> Result<(), String> {
        let deeper = || depth_left.checked_sub(1).ok_or_else(|| format!("nests deeper than {} levels", value::MAX_DEPTH));
        match m {
            Marker::Null => value::write_nil(out),
            Marker::True => value::write_bool(out, true),
            Marker::False => value::write_bool(out, false),
            Marker::FixPos(n) => value::write_int(out, n as i64),
            Marker::FixNeg(n) => value::write_int(out, n as i64),
            Marker::U8 => value::write_int(out, be(input, 1)? as i64),
            Marker::U16 => value::write_int(out, be(input, 2)? as i64),
            Marker::U32 => value::write_int(out, be(input, 4)? as i64),
            Marker::U64 => value::write_bigint(out, false, &be(input, 8)?.to_le_bytes()),
            Marker::I8 => value::write_int(out, be(input, 1)? as u8 as i8 as i64),
            Marker::I16 => value::write_int(out, be(input, 2)? as u16 as i16 as i64),
            Marker::I32 => value::write_int(out, be(input, 4)? as u32 as i32 as i64),
            Marker::I64 => value::write_int(out, be(input, 8)? as i64),
            Marker::F32 => value::write_float(out, f32::from_bits(be(input, 4)? as u32) as f64),
            Marker::F64 => value::write_float(out, f64::from_bits(be(input, 8)?)),
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 | Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                let len = string_len(input, m)?.expect("a string marker");
                let mut buf = Vec::new();
                bytes(input, len, &mut buf)?;
                value::write_str(out, &buf, if is_bin(m) { Encoding::Binary } else { Encoding::Utf8 });
            }
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 | Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => {
                let (len, pairs) = match m {
                    Marker::FixArray(n) => (n as u64, false),
                    Marker::Array16 => (be(input, 2)?, false),
                    Marker::Array32 => (be(input, 4)?, false),
                    Marker::FixMap(n) => (n as u64, true),
                    Marker::Map16 => (be(input, 2)?, true),
                    _ => (be(input, 4)?, true),
                };
                let depth = deeper()?;
                let start = ContainerStart::begin(out);
                for _ in 0..if pairs { len * 2 } else { len } {
                    let m = marker(input)?;
                    encode(input, m, out, depth)?;
                }
                if pairs {
                    start.end_map(out, len);
                } else {
                    start.end_array(out, len);
                }
            }
            Marker::FixExt1 | Marker::FixExt2 | Marker::FixExt4 | Marker::FixExt8 | Marker::FixExt16 | Marker::Ext8 | Marker::Ext16 | Marker::Ext32 => {
                // The length comes before the type for the variable-size forms.
                match m {
                    Marker::Ext8 => be(input, 1)?,
                    Marker::Ext16 => be(input, 2)?,
                    Marker::Ext32 => be(input, 4)?,
                    _ => 0,
                };
                let ext_type = be(input, 1)? as u8 as i8;
                let what = if ext_type == -1 { " (a timestamp)" } else { "" };
                return Err(format!("MessagePack extension type {ext_type}{what} is not supported; convert it to a plain type first"));
            }
            Marker::Reserved => return Err("reserved MessagePack marker 0xc1".into()),
        }
        Ok(())
    }
}

/// Where `key` occurs in an input, at most twice: the error path of a build
/// that found a duplicate reads the input again to say where, instead of
/// keeping a position for every entry in memory.
pub fn find_key<R: Read>(input: R, source: &str, options: &ImportOptions, key: &[u8]) -> Result<Vec<Position>> {
    let mut found = Vec::new();
    let result = import(input, source, options, &mut |entry, position| {
        if entry.key == key {
            found.push(position);
            if found.len() == 2 {
                return Err(Error::Cancelled);
            }
        }
        Ok(())
    });
    match result {
        Ok(()) | Err(Error::Cancelled) => Ok(found),
        Err(e) => Err(e),
    }
}
