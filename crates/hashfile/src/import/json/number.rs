//! serde_json's numbers kept as text (its `arbitrary_precision` feature):
//! they come as a map of one marker key, told apart from a real map's
//! first key here.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::value::{encode_visits, Encode};
use crate::value;

/// A map key that may be serde_json's marker for a number it keeps as text
/// (its `arbitrary_precision` feature: big integers, and floats exactly as
/// written); any other key is encoded, and compared with `wanted`.
pub(super) struct KeyOrNumber<'k, 'o, 'w> {
    pub(super) key: &'k str,
    pub(super) out: &'o mut Vec<u8>,
    pub(super) depth_left: usize,
    pub(super) wanted: Option<&'w str>,
}

/// What `KeyOrNumber` read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum MapKey {
    /// The marker: the "map" is a number.
    Number,
    /// A key, encoded; whether it is the one wanted.
    Key { wanted: bool },
}

pub(super) const JSON_NUMBER_TOKEN: &str = "$serde_json::private::Number";

seed_reads_any!(KeyOrNumber<'_, '_, '_> => MapKey);
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
