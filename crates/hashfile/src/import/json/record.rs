//! One entry of an array or a JSON Lines line: a `["key", value]` pair, or
//! an object whose key and value fields `Fields` names (the key at a
//! dotted path into nested objects, the value a field or the whole
//! object).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::number::{KeyOrNumber, MapKey, JSON_NUMBER_TOKEN};
use super::value::{encode_visits, Encode, Text, Top, TopValue};
use super::Lines;
use crate::import::numbers::write_json_number;
use crate::import::{field_path, ImportOptions, WHOLE};
use crate::value;

/// How a JSON object is read as an entry (in an array, or a JSON Lines
/// line): the key from a field, at a path of fields into nested objects
/// (`key_field`, dotted); the value from a field, or the whole object
/// (`value_field: "*"`).
pub(in crate::import) struct Fields {
    pub(super) key: Vec<String>,
    pub(super) value: String,
    pub(super) whole: bool,
}

impl Fields {
    pub(in crate::import) fn of(options: &ImportOptions) -> Fields {
        Fields {
            key: field_path(&options.key_field),
            value: options.value_field.clone(),
            whole: options.value_field == WHOLE,
        }
    }

    pub(super) fn key_name(&self) -> String {
        self.key.join(".")
    }
}

/// `["key", value]`.
pub(in crate::import) struct Pair<'de>(
    pub(in crate::import) Text<'de>,
    pub(in crate::import) Top<'de>,
);

/// One entry of an array or a JSON Lines line: `["key", value]`, or an
/// object read by `fields`. Typed values go to `out`.
pub(in crate::import) struct RecordVisitor<'f, 'o> {
    pub(in crate::import) fields: &'f Fields,
    /// Marked with the line the entry begins on, where a document has
    /// several lines.
    pub(in crate::import) lines: Option<&'f Lines>,
    pub(in crate::import) out: &'o mut Vec<u8>,
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
            // The object is in `out`, encoded whole: its fields are listed
            // from there.
            let key = key.ok_or_else(|| missing_key(fields, &fields_of(self.out)))?;
            return Ok(Pair(key, Top::Typed));
        }
        let (mut key, mut value): (Option<Text>, Option<Top>) = (None, None);
        let mut scratch = Vec::new();
        let mut seen = Vec::new();
        while let Some(field) = map.next_key::<Text>()? {
            if seen.len() <= SHOWN_FIELDS {
                seen.push(crate::error::DisplayBytes(field.0.as_bytes()).to_string());
            }
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
        let key = key.ok_or_else(|| missing_key(fields, &seen))?;
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
pub(super) struct Capture<'p, 'o, 'f, 'de> {
    /// Names the value in errors (`WHOLE_RECORD`: its key is not known yet).
    pub(super) key: &'static str,
    pub(super) path: &'p [String],
    pub(super) field: &'p Fields,
    pub(super) out: &'o mut Vec<u8>,
    pub(super) depth_left: usize,
    pub(super) found: &'f mut Option<Text<'de>>,
}

/// The name values are reported under in errors while a whole object is
/// encoded: its key is not known yet.
pub(super) const WHOLE_RECORD: &str = "(the whole object)";

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
pub(super) struct KeyLeaf<'f, 'o> {
    pub(super) field: &'f Fields,
    pub(super) out: Option<&'o mut Vec<u8>>,
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

/// Fields named in the message for an object without its key field.
const SHOWN_FIELDS: usize = 10;

/// The error for an object without the key field, listing the fields it
/// has (as `records_at` does for a missing step): `seen` holds up to
/// `SHOWN_FIELDS` of them, and one more if there were more.
fn missing_key<E: de::Error>(fields: &Fields, seen: &[String]) -> E {
    let listed = match seen.len() {
        0 => "it has none".to_string(),
        n if n > SHOWN_FIELDS => format!(
            "its fields are {} and more",
            seen[..SHOWN_FIELDS].join(", ")
        ),
        _ => format!("its fields are {}", seen.join(", ")),
    };
    E::custom(format!(
        "missing field {:?}, the key field (key_field names another); {listed}",
        fields.key_name()
    ))
}

/// The top-level field names of an object encoded whole in `encoded`, for
/// [`missing_key`].
fn fields_of(encoded: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    if let Ok(value::Item::Map(map)) = value::Cursor::new(encoded).next_item() {
        let mut pairs = map.cursor();
        while names.len() <= SHOWN_FIELDS {
            match pairs.next_item() {
                Ok(value::Item::Str(name, _)) => {
                    names.push(crate::error::DisplayBytes(name).to_string());
                }
                _ => break,
            }
            if pairs.skip().is_err() {
                break;
            }
        }
    }
    names
}
