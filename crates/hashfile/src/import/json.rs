//! JSON objects and arrays of pairs, through serde_json without building a
//! tree: the visitors here encode each value straight into the value codec.
//! JSON Lines (`json_lines`) reads its lines with the same visitors.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::io::{BufRead, Read};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::numbers::write_json_number;
use super::{field_path, parse_error, ImportOptions, Sink, WHOLE};
use crate::error::{DisplayBytes, Error, Position, Result};
use crate::format::{Record, ValueKind};
use crate::value;

/// `DeserializeSeed` for a visitor that is its own seed and reads a value
/// of any type (serde_json says which it found).
macro_rules! seed_reads_any {
    ($ty:ty => $value:ty) => {
        impl<'de> DeserializeSeed<'de> for $ty {
            type Value = $value;
            fn deserialize<D: de::Deserializer<'de>>(
                self,
                d: D,
            ) -> std::result::Result<$value, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

/// Turns a serde result into ours: a sink failure (already positioned)
/// wins over the serde error it caused; otherwise the serde error is
/// positioned by `position`.
fn finish_serde<E: fmt::Display>(
    result: std::result::Result<(), E>,
    failure: Option<Error>,
    source: &str,
    position: impl Fn(&E) -> Position,
) -> Result<()> {
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

pub(super) fn import<R: BufRead>(
    input: &mut R,
    source: &str,
    options: &ImportOptions,
    sink: &mut Sink<'_>,
) -> Result<()> {
    let fields = Fields::of(options);
    let records_at = options
        .records_at
        .as_deref()
        .map(field_path)
        .unwrap_or_default();
    let lines = Lines::default();
    let mut de = serde_json::Deserializer::from_reader(CountingLines {
        inner: input,
        lines: &lines,
    });
    let mut failure = None;
    // key_field and value_field read objects in an array; an object of
    // key-value pairs would ignore them, so given ones make it an error.
    let fields_given = ["key_field", "value_field"]
        .into_iter()
        .find(|name| options.given.contains(name));
    let entries = Entries {
        fields: &fields,
        lines: &lines,
        sink,
        failure: &mut failure,
        fields_given: fields_given.map(|name| FieldsGiven {
            name,
            source,
            records_at: options.records_at.as_deref(),
        }),
    };
    let result = if records_at.is_empty() {
        de::Deserializer::deserialize_any(&mut de, entries)
    } else {
        de::Deserializer::deserialize_any(
            &mut de,
            Descend {
                path: &records_at,
                depth: 0,
                entries,
            },
        )
    };
    let result = result.and_then(|_| de.end());
    finish_serde(result, failure, source, |e: &serde_json::Error| {
        Position::Line {
            line: e.line() as u64,
            column: Some(e.column() as u64),
        }
    })
    .map_err(not_json_hint)
}

/// A parse error at the very start of a document read as JSON says what
/// it most likely means: the input is in another format.
fn not_json_hint(error: Error) -> Error {
    match error {
        Error::Parse {
            input,
            position: position @ Position::Line { line: 1, .. },
            what,
        } if what.starts_with("expected value") || what.starts_with("expected ident") => {
            Error::Parse {
                what: format!(
                    "{what}: this is not JSON at its start; if {input} is in another format, give it (one of: {})",
                    super::InputFormat::names_list()
                ),
                input,
                position,
            }
        }
        other => other,
    }
}

/// Where the parse is, in lines: serde_json counts lines for its errors but
/// does not say where a value it returned began, and a duplicate key is
/// best reported by the line it is on.
#[derive(Default)]
pub(super) struct Lines {
    /// Line ends the parser has read so far.
    read: Cell<u64>,
    /// The line the current entry began on.
    entry: Cell<u64>,
}

impl Lines {
    /// The current entry begins on the line the parser is on.
    fn mark(&self) {
        self.entry.set(self.read.get() + 1);
    }
}

/// Counts line ends as serde_json reads them. serde_json reads a byte at a
/// time and never ahead of the token it is parsing, so after a key's
/// closing quote, or an array element's opening bracket, the count is that
/// token's line.
struct CountingLines<'l, R> {
    inner: R,
    lines: &'l Lines,
}

impl<R: Read> Read for CountingLines<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let ends = match &buf[..n] {
            [byte] => u64::from(*byte == b'\n'),
            bytes => memchr::memchr_iter(b'\n', bytes).count() as u64,
        };
        self.lines.read.set(self.lines.read.get() + ends);
        Ok(n)
    }
}

/// How a JSON object is read as an entry (in an array, or a JSON Lines
/// line): the key from a field, at a path of fields into nested objects
/// (`key_field`, dotted); the value from a field, or the whole object
/// (`value_field: "*"`).
pub(super) struct Fields {
    key: Vec<String>,
    value: String,
    whole: bool,
}

impl Fields {
    pub(super) fn of(options: &ImportOptions) -> Fields {
        Fields {
            key: field_path(&options.key_field),
            value: options.value_field.clone(),
            whole: options.value_field == WHOLE,
        }
    }

    fn key_name(&self) -> String {
        self.key.join(".")
    }
}

/// Walks `records_at`, a path of fields from the top-level object, to the
/// object or array that holds the entries.
struct Descend<'a, 's> {
    path: &'a [String],
    depth: usize,
    entries: Entries<'a, 's>,
}

seed_reads_any!(Descend<'_, '_> => ());

impl<'de> Visitor<'de> for Descend<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "an object with the field {:?} (records_at {:?})",
            self.path[self.depth],
            self.path.join(".")
        )
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let Descend {
            path,
            depth,
            entries,
        } = self;
        let step = &path[depth];
        let mut entries = Some(entries);
        // The first ten other fields, each cut short, and a count of the
        // rest: what the error lists, whatever the input holds.
        let mut others = Vec::new();
        let mut more = 0u64;
        while let Some(field) = map.next_key::<Text<'de>>()? {
            if field.0 == *step && entries.is_some() {
                let entries = entries.take().expect("checked");
                if depth + 1 == path.len() {
                    map.next_value_seed(entries)?;
                } else {
                    map.next_value_seed(Descend {
                        path,
                        depth: depth + 1,
                        entries,
                    })?;
                }
            } else {
                if others.len() < 10 {
                    others.push(DisplayBytes(field.0.as_bytes()).to_string());
                } else {
                    more += 1;
                }
                map.next_value::<IgnoredAny>()?;
            }
        }
        if entries.is_none() {
            return Ok(());
        }
        let at = if depth == 0 {
            "the top-level object".to_string()
        } else {
            format!("the object at {:?}", path[..depth].join("."))
        };
        let listed = if others.is_empty() {
            "it has none".to_string()
        } else if more > 0 {
            format!("its fields are {} and {more} more", others.join(", "))
        } else {
            format!("its fields are {}", others.join(", "))
        };
        Err(de::Error::custom(format!(
            "records_at: {at} has no field {step:?}; {listed}"
        )))
    }
}

/// A string that may borrow from the input.
pub(super) struct Text<'de>(pub(super) Cow<'de, str>);

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
pub(super) enum Top<'de> {
    Text(Cow<'de, str>),
    Typed,
}

impl<'de> Top<'de> {
    pub(super) fn record<'a>(&'a self, key: &'a str, typed: &'a [u8]) -> Record<'a> {
        match self {
            Top::Text(text) => Record::text(key, text),
            Top::Typed => Record {
                key: key.as_bytes(),
                key_utf8: true,
                value: typed,
                kind: ValueKind::Typed,
            },
        }
    }
}

/// Reads one top-level value for `key` (named in errors) into a `Top`,
/// encoding non-strings into `out`.
struct TopValue<'k, 'o> {
    key: &'k str,
    out: &'o mut Vec<u8>,
}

seed_reads_any!(TopValue<'_, '_> => Top<'de>);

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
        Encode {
            key: self.key,
            out: self.out,
            depth_left: value::MAX_DEPTH,
        }
        .visit_seq(seq)?;
        Ok(Top::Typed)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Top<'de>, A::Error> {
        self.out.clear();
        Encode {
            key: self.key,
            out: self.out,
            depth_left: value::MAX_DEPTH,
        }
        .visit_map(map)?;
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
        self.depth_left.checked_sub(1).ok_or_else(|| {
            E::custom(format!(
                "value for key {} nests deeper than {} levels",
                DisplayBytes(self.key.as_bytes()),
                value::MAX_DEPTH
            ))
        })
    }
}

seed_reads_any!(Encode<'_, '_> => ());

/// A map key that may be serde_json's marker for a number it keeps as text
/// (its `arbitrary_precision` feature: big integers, and floats exactly as
/// written); any other key is encoded, and compared with `wanted`.
struct KeyOrNumber<'k, 'o, 'w> {
    key: &'k str,
    out: &'o mut Vec<u8>,
    depth_left: usize,
    wanted: Option<&'w str>,
}

/// What `KeyOrNumber` read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MapKey {
    /// The marker: the "map" is a number.
    Number,
    /// A key, encoded; whether it is the one wanted.
    Key { wanted: bool },
}

const JSON_NUMBER_TOKEN: &str = "$serde_json::private::Number";

seed_reads_any!(KeyOrNumber<'_, '_, '_> => MapKey);

/// Visitor methods that encode the value with `Encode` and return `$done`.
macro_rules! encode_visits {
    ($value:ty, $done:expr; $( $name:ident ( $($arg:ident : $t:ty),* ) ),* $(,)?) => {
        $(
            fn $name<E: de::Error>(self, $($arg: $t),*) -> std::result::Result<$value, E> {
                Encode { key: self.key, out: self.out, depth_left: self.depth_left }.$name($($arg),*)?;
                Ok($done)
            }
        )*
    };
}

impl<'de> Visitor<'de> for KeyOrNumber<'_, '_, '_> {
    type Value = MapKey;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<MapKey, E> {
        if v == JSON_NUMBER_TOKEN {
            return Ok(MapKey::Number);
        }
        value::write_str(self.out, v.as_bytes(), value::Encoding::Utf8);
        Ok(MapKey::Key {
            wanted: self.wanted == Some(v),
        })
    }
    encode_visits!(MapKey, MapKey::Key { wanted: false }; visit_bool(v: bool), visit_i64(v: i64), visit_u64(v: u64), visit_f64(v: f64), visit_bytes(v: &[u8]), visit_unit());
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<MapKey, A::Error> {
        Encode {
            key: self.key,
            out: self.out,
            depth_left: self.depth_left,
        }
        .visit_seq(seq)
        .map(|_| MapKey::Key { wanted: false })
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<MapKey, A::Error> {
        Encode {
            key: self.key,
            out: self.out,
            depth_left: self.depth_left,
        }
        .visit_map(map)
        .map(|_| MapKey::Key { wanted: false })
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
        while seq
            .next_element_seed(Encode {
                key: self.key,
                out: &mut *self.out,
                depth_left,
            })?
            .is_some()
        {
            n += 1;
        }
        start.end_array(self.out, n);
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let start = value::ContainerStart::begin(self.out);
        let depth_left = self.depth_left;
        let mut n = 0u64;
        while let Some(read) = map.next_key_seed(KeyOrNumber {
            key: self.key,
            out: &mut *self.out,
            depth_left: depth_left.saturating_sub(1),
            wanted: None,
        })? {
            if read == MapKey::Number && n == 0 {
                let text: String = map.next_value()?;
                return write_json_number(self.out, &text).map_err(de::Error::custom);
            }
            if n == 0 && depth_left == 0 {
                return Err(self.deeper::<A::Error>().unwrap_err());
            }
            map.next_value_seed(Encode {
                key: self.key,
                out: &mut *self.out,
                depth_left: depth_left - 1,
            })?;
            n += 1;
        }
        if n == 0 && depth_left == 0 {
            return Err(self.deeper::<A::Error>().unwrap_err());
        }
        start.end_map(self.out, n);
        Ok(())
    }
}

/// The entries of a JSON document (or of the part `records_at` names): an
/// object's pairs, or an array's elements, each a `[key, value]` pair or
/// an object read by `Fields`. Feeds the sink one entry at a time.
struct Entries<'a, 's> {
    fields: &'a Fields,
    lines: &'a Lines,
    sink: &'a mut Sink<'s>,
    failure: &'a mut Option<Error>,
    /// Set when `key_field` or `value_field` was given: then the entries
    /// must be an array of objects.
    fields_given: Option<FieldsGiven<'a>>,
}

/// An option that reads objects in an array, given for a JSON document.
struct FieldsGiven<'a> {
    name: &'static str,
    source: &'a str,
    records_at: Option<&'a str>,
}

impl FieldsGiven<'_> {
    /// The error for entries that are an object, not an array: naming the
    /// object's fields that hold arrays of objects, which `records_at` can
    /// point at.
    fn object_error(&self, arrays: &[String]) -> Error {
        let object = match self.records_at {
            Some(at) => format!("records_at {at:?} of {} names an object", self.source),
            None => format!("the top level of {} is an object", self.source),
        };
        let hint = match (arrays, self.records_at) {
            ([], _) => "; it has no field that holds an array of objects".to_string(),
            (fields, at) => {
                let shown: Vec<String> = fields.iter().take(10).map(|f| format!("{f:?}")).collect();
                let path = |f: &str| {
                    let f = f.replace('.', "\\.");
                    at.map_or(f.clone(), |at| format!("{at}.{f}"))
                };
                format!(
                    "; its fields that hold arrays of objects: {}{}; give records_at {:?}",
                    shown.join(", "),
                    if fields.len() > 10 { ", ..." } else { "" },
                    path(&fields[0])
                )
            }
        };
        Error::InvalidOption {
            name: self.name,
            reason: format!(
                "reads objects in an array, and {object}, read as key-value pairs, which would ignore it{hint}"
            ),
        }
    }
}

/// Reads a value and says whether it is an array whose first element is
/// an object.
struct ArrayOfObjects;

seed_reads_any!(ArrayOfObjects => bool);

/// Reads a value and says whether it is an object (not a number, which
/// `arbitrary_precision` hands over as a map of one magic key).
struct IsObject;

seed_reads_any!(IsObject => bool);

/// Visits of every scalar, answering `false`.
macro_rules! scalars_are_not {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<bool, E> {
            Ok(false)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<bool, E> {
            Ok(false)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<bool, E> {
            Ok(false)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<bool, E> {
            Ok(false)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<bool, E> {
            Ok(false)
        }
        fn visit_unit<E: de::Error>(self) -> std::result::Result<bool, E> {
            Ok(false)
        }
    };
}

impl<'de> Visitor<'de> for ArrayOfObjects {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    scalars_are_not!();
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<bool, A::Error> {
        let first = seq.next_element_seed(IsObject)?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(first == Some(true))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<bool, A::Error> {
        IgnoredAny.visit_map(map).map(|_| false)
    }
}

impl<'de> Visitor<'de> for IsObject {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    scalars_are_not!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<bool, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<bool, A::Error> {
        let Some(first) = map.next_key::<Text<'de>>()? else {
            return Ok(true);
        };
        map.next_value::<IgnoredAny>()?;
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(first.0 != JSON_NUMBER_TOKEN)
    }
}

seed_reads_any!(Entries<'_, '_> => ());

impl<'de> Visitor<'de> for Entries<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object, or an array of [key, value] pairs or of objects")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        if let Some(given) = &self.fields_given {
            let mut arrays = Vec::new();
            while let Some(key) = map.next_key::<Text<'de>>()? {
                if map.next_value_seed(ArrayOfObjects)? {
                    arrays.push(key.0.into_owned());
                }
            }
            *self.failure = Some(given.object_error(&arrays));
            return Err(de::Error::custom("stopped"));
        }
        let mut typed = Vec::new();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            self.lines.mark();
            let line = self.lines.entry.get();
            let value = map.next_value_seed(TopValue {
                key: &key.0,
                out: &mut typed,
            })?;
            if let Err(e) = (self.sink)(value.record(&key.0, &typed), Position::line(line)) {
                *self.failure = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let mut typed = Vec::new();
        while let Some(Pair(key, value)) = seq.next_element_seed(RecordVisitor {
            fields: self.fields,
            lines: Some(self.lines),
            out: &mut typed,
        })? {
            if let Err(e) = (self.sink)(
                value.record(&key.0, &typed),
                Position::line(self.lines.entry.get()),
            ) {
                *self.failure = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// `["key", value]`.
pub(super) struct Pair<'de>(pub(super) Text<'de>, pub(super) Top<'de>);

/// One entry of an array or a JSON Lines line: `["key", value]`, or an
/// object read by `fields`. Typed values go to `out`.
pub(super) struct RecordVisitor<'f, 'o> {
    pub(super) fields: &'f Fields,
    /// Marked with the line the entry begins on, where a document has
    /// several lines.
    pub(super) lines: Option<&'f Lines>,
    pub(super) out: &'o mut Vec<u8>,
}

seed_reads_any!(RecordVisitor<'_, '_> => Pair<'de>);

impl<'de> Visitor<'de> for RecordVisitor<'_, '_> {
    type Value = Pair<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.fields.whole {
            write!(
                f,
                "a [key, value] pair or an object with the key field {:?}",
                self.fields.key_name()
            )
        } else {
            write!(
                f,
                "a [key, value] pair or an object with {:?} and {:?}",
                self.fields.key_name(),
                self.fields.value
            )
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Pair<'de>, A::Error> {
        self.lines.map(Lines::mark);
        let expected = "a [key, value] pair or an object";
        let key: Text = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &expected))?;
        let value = seq
            .next_element_seed(TopValue {
                key: &key.0,
                out: self.out,
            })?
            .ok_or_else(|| de::Error::invalid_length(1, &expected))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(3, &expected));
        }
        Ok(Pair(key, value))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Pair<'de>, A::Error> {
        self.lines.map(Lines::mark);
        let fields = self.fields;
        let missing =
            |name: &str| <A::Error as de::Error>::custom(format!("missing field {name:?}"));
        if fields.whole {
            self.out.clear();
            let mut key = None;
            Capture {
                key: WHOLE_RECORD,
                path: &fields.key,
                field: fields,
                out: &mut *self.out,
                depth_left: value::MAX_DEPTH,
                found: &mut key,
            }
            .visit_map(map)?;
            let key = key.ok_or_else(|| missing(&fields.key_name()))?;
            return Ok(Pair(key, Top::Typed));
        }
        let (mut key, mut value): (Option<Text>, Option<Top>) = (None, None);
        let mut scratch = Vec::new();
        while let Some(field) = map.next_key::<Text>()? {
            if field.0 == fields.key[0] {
                if fields.key.len() == 1 {
                    key = Some(map.next_value_seed(KeyLeaf {
                        field: fields,
                        out: None,
                    })?);
                } else {
                    // The path goes on into this field's object.
                    scratch.clear();
                    let mut found = None;
                    map.next_value_seed(Capture {
                        key: WHOLE_RECORD,
                        path: &fields.key[1..],
                        field: fields,
                        out: &mut scratch,
                        depth_left: value::MAX_DEPTH,
                        found: &mut found,
                    })?;
                    key = found.or(key);
                }
            } else if field.0 == fields.value {
                let name = key.as_ref().map_or(fields.value.as_str(), |k| &k.0);
                value = Some(map.next_value_seed(TopValue {
                    key: name,
                    out: &mut *self.out,
                })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        let key = key.ok_or_else(|| {
            <A::Error as de::Error>::custom(format!(
                "missing field {:?}, the key field (key_field names another)",
                fields.key_name()
            ))
        })?;
        let value = value.ok_or_else(|| {
            <A::Error as de::Error>::custom(format!(
                "missing field {:?}, the value field (value_field names another, or \"*\" the whole object)",
                fields.value
            ))
        })?;
        Ok(Pair(key, value))
    }
}

/// Encodes a value whole, like `Encode`, and on the way finds the key at
/// `path` (the rest of `field.key`) in its nested objects.
struct Capture<'p, 'o, 'f, 'de> {
    /// Names the value in errors (`WHOLE_RECORD`: its key is not known yet).
    key: &'static str,
    path: &'p [String],
    field: &'p Fields,
    out: &'o mut Vec<u8>,
    depth_left: usize,
    found: &'f mut Option<Text<'de>>,
}

/// The name values are reported under in errors while a whole object is
/// encoded: its key is not known yet.
const WHOLE_RECORD: &str = "(the whole object)";

seed_reads_any!(Capture<'_, '_, '_, 'de> => ());

impl<'de> Visitor<'de> for Capture<'_, '_, '_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let key = self.key;
        let start = value::ContainerStart::begin(self.out);
        let depth_left = self.depth_left;
        let too_deep = || {
            <A::Error as de::Error>::custom(format!(
                "an object nests deeper than {} levels",
                value::MAX_DEPTH
            ))
        };
        let mut n = 0u64;
        while let Some(read) = map.next_key_seed(KeyOrNumber {
            key,
            out: &mut *self.out,
            depth_left: depth_left.saturating_sub(1),
            wanted: Some(&self.path[0]),
        })? {
            if read == MapKey::Number && n == 0 {
                let text: String = map.next_value()?;
                return write_json_number(self.out, &text).map_err(de::Error::custom);
            }
            if depth_left == 0 {
                return Err(too_deep());
            }
            let out = &mut *self.out;
            match read {
                MapKey::Key { wanted: true } if self.path.len() == 1 => {
                    *self.found = Some(map.next_value_seed(KeyLeaf {
                        field: self.field,
                        out: Some(out),
                    })?)
                }
                MapKey::Key { wanted: true } => map.next_value_seed(Capture {
                    key: WHOLE_RECORD,
                    path: &self.path[1..],
                    field: self.field,
                    out,
                    depth_left: depth_left - 1,
                    found: &mut *self.found,
                })?,
                _ => map.next_value_seed(Encode {
                    key,
                    out,
                    depth_left: depth_left - 1,
                })?,
            }
            n += 1;
        }
        if n == 0 && depth_left == 0 {
            return Err(too_deep());
        }
        start.end_map(self.out, n);
        Ok(())
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        Encode {
            key: self.key,
            out: self.out,
            depth_left: self.depth_left,
        }
        .visit_seq(seq)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<(), E> {
        Encode {
            key: self.key,
            out: self.out,
            depth_left: self.depth_left,
        }
        .visit_str(v)
    }
    encode_visits!((), (); visit_bool(v: bool), visit_i64(v: i64), visit_u64(v: u64), visit_i128(v: i128), visit_u128(v: u128), visit_f64(v: f64), visit_bytes(v: &[u8]), visit_unit(), visit_none());
}

/// The value at the end of the key path: a string, or an integer (keyed by
/// its decimal digits, as `"42"`). Encoded into `out` too, when the whole
/// object is the value.
struct KeyLeaf<'f, 'o> {
    field: &'f Fields,
    out: Option<&'o mut Vec<u8>>,
}

seed_reads_any!(KeyLeaf<'_, '_> => Text<'de>);

impl<'de> Visitor<'de> for KeyLeaf<'_, '_> {
    type Value = Text<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "a string or an integer in the key field {:?}",
            self.field.key_name()
        )
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
        if let Some(out) = self.out {
            value::write_str(out, v.as_bytes(), value::Encoding::Utf8);
        }
        Ok(Text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Text<'de>, E> {
        if let Some(out) = self.out {
            value::write_str(out, v.as_bytes(), value::Encoding::Utf8);
        }
        Ok(Text(Cow::Owned(v.to_string())))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Text<'de>, E> {
        if let Some(out) = self.out {
            value::write_int(out, v);
        }
        Ok(Text(Cow::Owned(v.to_string())))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Text<'de>, E> {
        if let Some(out) = self.out {
            value::write_bigint(out, false, &v.to_le_bytes());
        }
        Ok(Text(Cow::Owned(v.to_string())))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Text<'de>, A::Error> {
        // serde_json hands over floats and integers past 64 bits as a map
        // with one marker key.
        let what = match map.next_key::<Text>()? {
            Some(k) if k.0 == JSON_NUMBER_TOKEN => {
                de::Unexpected::Other("a number that is not a 64-bit integer")
            }
            _ => de::Unexpected::Map,
        };
        Err(de::Error::invalid_type(what, &self))
    }
}
