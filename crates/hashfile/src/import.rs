//! Streaming importers: JSON object, JSON array of pairs, JSON Lines, CSV,
//! TSV, MessagePack map and YAML mapping, read straight into a builder with
//! no intermediate map. Until typed values exist, every value must be a
//! string; anything else is an error naming the key and where it is.

use std::borrow::Cow;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::error::{DisplayBytes, Error, Result};
use crate::format::ValueKind;

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
    /// A MessagePack map of strings (str or bin).
    MessagePack,
    /// A YAML mapping of strings.
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
            let de = serde_norway::Deserializer::from_reader(input);
            let mut failure = None;
            let result = de::Deserializer::deserialize_map(de, MappingVisitor { sink, failure: &mut failure });
            finish_serde(result, failure, source, |e: &serde_norway::Error| {
                e.location().map_or(Position::Unknown, |l| Position::Line(l.line() as u64, Some(l.column() as u64)))
            })
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
            // serde_norway also puts the mapping path in front ("b: ..."),
            // which our own messages already name.
            let message = message.find("value for key ").map_or(message, |i| &message[i..]).to_string();
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

/// A value that must be a string, named in the error by its key.
struct StringValue<'k>(&'k str);

/// The one message for a value that is not a string, until typed values.
fn not_a_string(key: &[u8], what: &str) -> String {
    format!("value for key {} is {what}; only strings are supported for now", DisplayBytes(key))
}

impl<'de> DeserializeSeed<'de> for StringValue<'_> {
    type Value = Text<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<Text<'de>, D::Error> {
        struct V<'k>(&'k str);
        macro_rules! reject {
            ($name:ident, $t:ty, $what:expr) => {
                fn $name<E: de::Error>(self, _v: $t) -> std::result::Result<Text<'de>, E> {
                    Err(E::custom(not_a_string(self.0.as_bytes(), $what)))
                }
            };
        }
        impl<'de> Visitor<'de> for V<'_> {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a string value for key {}", DisplayBytes(self.0.as_bytes()))
            }
            text_visits!();
            reject!(visit_bool, bool, "a boolean");
            reject!(visit_i64, i64, "a number");
            reject!(visit_u64, u64, "a number");
            reject!(visit_f64, f64, "a number");
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Text<'de>, E> {
                Err(E::custom(not_a_string(self.0.as_bytes(), "null")))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> std::result::Result<Text<'de>, A::Error> {
                Err(de::Error::custom(not_a_string(self.0.as_bytes(), "an array")))
            }
            fn visit_map<A: MapAccess<'de>>(self, _: A) -> std::result::Result<Text<'de>, A::Error> {
                Err(de::Error::custom(not_a_string(self.0.as_bytes(), "an object")))
            }
        }
        d.deserialize_any(V(self.0))
    }
}

/// Visits a top-level mapping (JSON object, YAML mapping), feeding the sink
/// one entry at a time.
struct MappingVisitor<'a, 's> {
    sink: &'a mut Sink<'s>,
    failure: &'a mut Option<Error>,
}

impl<'de> Visitor<'de> for MappingVisitor<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping of string keys to string values at the top level")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut n = 0u64;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            let value = map.next_value_seed(StringValue(&key.0))?;
            n += 1;
            if let Err(e) = (self.sink)(text_entry(&key.0, &value.0), Position::Entry(n)) {
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
        while let Some(pair) = seq.next_element::<Pair<'de>>()? {
            n += 1;
            if let Err(e) = (self.sink)(text_entry(&pair.0 .0, &pair.1 .0), Position::Entry(n)) {
                *self.failure = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// `["key", "value"]`.
struct Pair<'de>(Text<'de>, Text<'de>);

impl<'de> de::Deserialize<'de> for Pair<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_seq(LineVisitor { key_field: "", value_field: "" })
    }
}

/// A JSON Lines record: `["key", "value"]` or an object with the key and
/// value fields (other fields are ignored).
struct LineVisitor<'f> {
    key_field: &'f str,
    value_field: &'f str,
}

impl<'de> Visitor<'de> for LineVisitor<'_> {
    type Value = Pair<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.key_field.is_empty() {
            f.write_str("a [key, value] pair")
        } else {
            write!(f, "a [key, value] pair or an object with {:?} and {:?}", self.key_field, self.value_field)
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Pair<'de>, A::Error> {
        let key: Text = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let value = seq.next_element_seed(StringValue(&key.0))?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(3, &self));
        }
        Ok(Pair(key, value))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Pair<'de>, A::Error> {
        if self.key_field.is_empty() {
            return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
        }
        let (mut key, mut value): (Option<Text>, Option<serde_json::Value>) = (None, None);
        while let Some(field) = map.next_key::<Text>()? {
            if field.0 == self.key_field {
                key = Some(map.next_value()?);
            } else if field.0 == self.value_field {
                value = Some(map.next_value()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        let key = key.ok_or_else(|| <A::Error as de::Error>::custom(format!("missing field {:?}", self.key_field)))?;
        let value = match value {
            Some(serde_json::Value::String(s)) => Text(Cow::Owned(s)),
            Some(other) => {
                let kind = match other {
                    serde_json::Value::Null => "null",
                    serde_json::Value::Bool(_) => "a boolean",
                    serde_json::Value::Number(_) => "a number",
                    serde_json::Value::Array(_) => "an array",
                    _ => "an object",
                };
                return Err(de::Error::custom(not_a_string(key.0.as_bytes(), kind)));
            }
            None => return Err(<A::Error as de::Error>::custom(format!("missing field {:?}", self.value_field))),
        };
        Ok(Pair(key, value))
    }
}

fn import_json_lines<R: BufRead>(input: &mut R, source: &str, options: &ImportOptions, sink: &mut Sink<'_>) -> Result<()> {
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line).map_err(|e| Error::io(Some(Path::new(source)), e))?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut de = serde_json::Deserializer::from_slice(&line);
        let visitor = LineVisitor { key_field: &options.key_field, value_field: &options.value_field };
        let pair = de::Deserializer::deserialize_any(&mut de, visitor).and_then(|p| de.end().map(|_| p));
        match pair {
            Ok(Pair(key, value)) => sink(text_entry(&key.0, &value.0), Position::Line(number, None))?,
            Err(e) => {
                let message = e.to_string();
                let message = message.split(" at line ").next().unwrap_or(&message).to_string();
                return Err(parse_error(source, Position::Line(number, Some(e.column() as u64)), message));
            }
        }
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
    use rmp::Marker;
    let bad = |n: u64, message: String| parse_error(source, if n == 0 { Position::Unknown } else { Position::Entry(n) }, message);
    let len = rmp::decode::read_map_len(input).map_err(|e| bad(0, format!("expected a map at the top level: {e}")))?;
    let mut key = Vec::new();
    let mut value = Vec::new();
    // Reads a str or bin into `out`; returns whether it was str, or the
    // marker it found instead.
    fn read_bytes<R: Read>(input: &mut R, out: &mut Vec<u8>) -> std::result::Result<std::result::Result<bool, Marker>, String> {
        let marker = rmp::decode::read_marker(input).map_err(|e| format!("{e:?}"))?;
        let (len, text) = match marker {
            Marker::FixStr(n) => (n as u64, true),
            Marker::Str8 => (read_be(input, 1)?, true),
            Marker::Str16 => (read_be(input, 2)?, true),
            Marker::Str32 => (read_be(input, 4)?, true),
            Marker::Bin8 => (read_be(input, 1)?, false),
            Marker::Bin16 => (read_be(input, 2)?, false),
            Marker::Bin32 => (read_be(input, 4)?, false),
            other => return Ok(Err(other)),
        };
        out.clear();
        input.take(len).read_to_end(out).map_err(|e| e.to_string())?;
        if (out.len() as u64) < len {
            return Err("unexpected end of input".into());
        }
        Ok(Ok(text))
    }
    fn read_be<R: Read>(input: &mut R, n: usize) -> std::result::Result<u64, String> {
        let mut buf = [0u8; 8];
        input.read_exact(&mut buf[8 - n..]).map_err(|e| e.to_string())?;
        Ok(u64::from_be_bytes(buf))
    }
    fn marker_name(m: Marker) -> &'static str {
        match m {
            Marker::Null => "nil",
            Marker::True | Marker::False => "a boolean",
            Marker::FixPos(_) | Marker::FixNeg(_) | Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 | Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 | Marker::F32 | Marker::F64 => "a number",
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "an array",
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "a map",
            _ => "an extension type",
        }
    }
    for n in 1..=len as u64 {
        match read_bytes(input, &mut key).map_err(|e| bad(n, e))? {
            Ok(_) => {}
            Err(m) => return Err(bad(n, format!("key is {}; keys must be strings", marker_name(m)))),
        }
        match read_bytes(input, &mut value).map_err(|e| bad(n, e))? {
            Ok(text) => {
                let mut entry = bytes_entry(&key, &value);
                if !text {
                    entry.kind = ValueKind::Binary;
                }
                sink(entry, Position::Entry(n))?;
            }
            Err(m) => return Err(bad(n, not_a_string(&key, marker_name(m)))),
        }
    }
    Ok(())
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
