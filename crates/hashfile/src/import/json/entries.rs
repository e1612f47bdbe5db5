//! The entries of a document: the walk to them (`records_at`), and an
//! object's pairs or an array's elements fed to the sink one at a time.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::number::JSON_NUMBER_TOKEN;
use super::record::{Fields, Pair, RecordVisitor};
use super::value::{Text, TopValue};
use super::Lines;
use crate::error::{DisplayBytes, Error, Position};
use crate::import::Sink;

/// Walks `records_at`, a path of fields from the top-level object, to the
/// object or array that holds the entries.
pub(super) struct Descend<'a, 's> {
    pub(super) path: &'a [String],
    pub(super) depth: usize,
    pub(super) entries: Entries<'a, 's>,
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

/// The entries of a JSON document (or of the part `records_at` names): an
/// object's pairs, or an array's elements, each a `[key, value]` pair or
/// an object read by `Fields`. Feeds the sink one entry at a time.
pub(super) struct Entries<'a, 's> {
    pub(super) fields: &'a Fields,
    pub(super) lines: &'a Lines,
    pub(super) sink: &'a mut Sink<'s>,
    pub(super) failure: &'a mut Option<Error>,
    /// Set when `key_field` or `value_field` was given: then the entries
    /// must be an array of objects.
    pub(super) fields_given: Option<FieldsGiven<'a>>,
}

/// An option that reads objects in an array, given for a JSON document.
pub(super) struct FieldsGiven<'a> {
    pub(super) name: &'static str,
    pub(super) source: &'a str,
    pub(super) records_at: Option<&'a str>,
}

impl FieldsGiven<'_> {
    /// The error for entries that are an object, not an array: naming the
    /// object's fields that hold arrays of objects, which `records_at` can
    /// point at.
    pub(super) fn object_error(&self, arrays: &[String]) -> Error {
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
pub(super) struct ArrayOfObjects;

seed_reads_any!(ArrayOfObjects => bool);

/// Reads a value and says whether it is an object (not a number, which
/// `arbitrary_precision` hands over as a map of one magic key).
pub(super) struct IsObject;

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
