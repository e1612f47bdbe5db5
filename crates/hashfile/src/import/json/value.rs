//! Any JSON value encoded straight into the value codec, without a tree:
//! `Encode`, and `TopValue` for a record's value (a string stays a string
//! record).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::number::{KeyOrNumber, MapKey};
use crate::error::DisplayBytes;
use crate::format::{Record, ValueKind};
use crate::import::numbers::write_json_number;
use crate::value;

/// A string that may borrow from the input.
pub(in crate::import) struct Text<'de>(pub(in crate::import) Cow<'de, str>);

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
pub(in crate::import) enum Top<'de> {
    Text(Cow<'de, str>),
    Typed,
}

impl<'de> Top<'de> {
    pub(in crate::import) fn record<'a>(&'a self, key: &'a str, typed: &'a [u8]) -> Record<'a> {
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
pub(super) struct TopValue<'k, 'o> {
    pub(super) key: &'k str,
    pub(super) out: &'o mut Vec<u8>,
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
pub(super) struct Encode<'k, 'o> {
    pub(super) key: &'k str,
    pub(super) out: &'o mut Vec<u8>,
    pub(super) depth_left: usize,
}

impl Encode<'_, '_> {
    pub(super) fn deeper<E: de::Error>(&self) -> std::result::Result<usize, E> {
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
pub(super) use encode_visits;

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
