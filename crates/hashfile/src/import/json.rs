//! JSON objects and arrays of pairs, through serde_json without building a
//! tree: the visitors here encode each value straight into the value codec.
//! JSON Lines (`json_lines`) reads its lines with the same visitors.

use std::borrow::Cow;
use std::fmt;
use std::io::BufRead;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::numbers::write_json_number;
use super::{io_error, parse_error, Sink};
use crate::error::{DisplayBytes, Error, Position, Result};
use crate::format::{Record, ValueKind};
use crate::value;

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

pub(super) fn import<R: BufRead>(input: &mut R, source: &str, sink: &mut Sink<'_>) -> Result<()> {
    let first = loop {
        let buf = input.fill_buf().map_err(|e| io_error(source, e))?;
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
    finish_serde(result, failure, source, |e: &serde_json::Error| Position::Line { line: e.line() as u64, column: Some(e.column() as u64) })
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
            Top::Typed => Record { key: key.as_bytes(), key_utf8: true, value: typed, kind: ValueKind::Typed },
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
                return write_json_number(self.out, &text).map_err(de::Error::custom);
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
            if let Err(e) = (self.sink)(value.record(&key.0, &typed), Position::Entry(n)) {
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
            if let Err(e) = (self.sink)(value.record(&key.0, &typed), Position::Entry(n)) {
                *self.failure = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// `["key", value]`.
pub(super) struct Pair<'de>(pub(super) Text<'de>, pub(super) Top<'de>);

/// A JSON Lines record: `["key", value]` or an object with the key and
/// value fields (other fields are ignored). Typed values go to `out`.
pub(super) struct LineVisitor<'f, 'o> {
    pub(super) key_field: &'f str,
    pub(super) value_field: &'f str,
    pub(super) out: &'o mut Vec<u8>,
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

