//! Why a value given to a build cannot be stored, and where in it: the one
//! message every binding's encoder raises (Ruby's, Python's, the JVM's),
//! so a value refused in one language reads the same in another.
//!
//! An encoder returns an [`Unencodable`] from where it failed; each
//! container it is inside adds its step on the way up (`in_element`,
//! `in_value_of`, `in_key`), so success costs no path bookkeeping. The
//! entry's key and the language's list of what it stores make the
//! [`Error`] at the top ([`Unencodable::for_key`]).

use crate::error::{DisplayBytes, Error};

use super::{Cursor, Value, MAX_DEPTH};

/// A value an encoder cannot store, and the path to the part refused
/// (innermost step first, as it was built).
#[derive(Debug)]
pub struct Unencodable {
    refused: Refused,
    path: Vec<String>,
}

#[derive(Debug)]
enum Refused {
    /// An object of a type the language's encoder has no form for (its
    /// class name).
    Object(String),
    /// Containers nested past [`MAX_DEPTH`] (or one that holds itself).
    TooDeep,
    /// A map with two keys that are one key as stored (Java's `1` and
    /// `1L`; a String and the bytes of its ASCII text), shown as stored.
    KeyTwice(String),
}

/// The longest a step of the path is shown (a long map key is cut).
const STEP_SHOWN: usize = 40;

impl Unencodable {
    /// An object of the type named `class`, which has no stored form.
    pub fn object(class: impl Into<String>) -> Unencodable {
        Unencodable {
            refused: Refused::Object(class.into()),
            path: Vec::new(),
        }
    }

    /// A container nested deeper than [`MAX_DEPTH`], or holding itself.
    pub fn too_deep() -> Unencodable {
        Unencodable {
            refused: Refused::TooDeep,
            path: Vec::new(),
        }
    }

    /// A map holding two keys that are one key as stored, the second
    /// given as its encoding: a store would keep one of them.
    pub fn key_twice(encoded_key: &[u8]) -> Unencodable {
        Unencodable {
            refused: Refused::KeyTwice(shown(encoded_key)),
            path: Vec::new(),
        }
    }

    /// This refusal inside element `index` of an array.
    pub fn in_element(mut self, index: usize) -> Unencodable {
        self.path.push(index.to_string());
        self
    }

    /// This refusal inside the value of a map's key, given as the key's
    /// encoding (an encoder writes the key before its value): shown as the
    /// stored key reads in messages (`"a"`, `:a`, `1`), alike in every
    /// language.
    pub fn in_value_of(mut self, encoded_key: &[u8]) -> Unencodable {
        self.path.push(shown(encoded_key));
        self
    }

    /// [`in_value_of`](Unencodable::in_value_of) a key held as a
    /// [`Value`] (an encoder that builds a tree).
    pub fn in_value_of_key(self, key: &Value) -> Unencodable {
        let mut encoded = Vec::new();
        // A key that encoded once encodes again; if not, it shows as "a key".
        let _ = key.encode(&mut encoded);
        self.in_value_of(&encoded)
    }

    /// This refusal inside the key of a map's pair number `pair` (from 0).
    pub fn in_key(mut self, pair: usize) -> Unencodable {
        self.path.push(format!("key of pair {pair}"));
        self
    }

    /// The error for the entry `key`, with `stores`, the language's own
    /// names of what it stores (`"None, bool, int, ..."`), for a refused
    /// object.
    pub fn for_key(self, key: &[u8], stores: &str) -> Error {
        let mut path = self.path;
        path.reverse();
        let wrong_type = matches!(self.refused, Refused::Object(_));
        if matches!(self.refused, Refused::TooDeep) && path.len() > 3 {
            // The outermost steps say where it starts.
            path.truncate(3);
            path.push("...".to_owned());
        }
        let mut place = format!("value for key {}", DisplayBytes(key));
        if !path.is_empty() {
            place.push_str(&format!(" at [{}]", path.join(", ")));
        }
        let why = match self.refused {
            Refused::Object(class) => {
                let an = class.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u']);
                let article = if an { "an" } else { "a" };
                format!("is {article} {class}; Hashfile stores {stores}")
            }
            Refused::TooDeep => {
                format!("nests deeper than {MAX_DEPTH} levels (or contains itself)")
            }
            Refused::KeyTwice(key) => format!(
                "has the map key {key} twice (two keys that are one key as stored, which keeps one)"
            ),
        };
        Error::Unencodable {
            place,
            why,
            wrong_type,
        }
    }
}

/// An encoded key as the store shows it (`"a"`, `:a`, `1`), cut.
fn shown(encoded_key: &[u8]) -> String {
    match Cursor::new(encoded_key).next_item() {
        Ok(item) => cut(item.to_string()),
        Err(_) => "a key".to_owned(),
    }
}

/// `shown`, cut to [`STEP_SHOWN`] characters (`...` ending a cut one).
fn cut(shown: String) -> String {
    if shown.chars().count() <= STEP_SHOWN {
        return shown;
    }
    let kept: String = shown.chars().take(STEP_SHOWN - 3).collect();
    // Not half an escape (`\x`): the backslash goes with what was cut.
    format!("{}...", kept.trim_end_matches('\\'))
}

/// The keys of a map being encoded from a language whose maps can hold two
/// keys that are one key as stored (Java's `1` and `1L`; a text and the
/// bytes of its ASCII: Ruby's `"a"` and `"a".b`, one Hash key): the
/// second is refused ([`Unencodable::key_twice`]), since a store, and every
/// language reading it, would keep one.
#[derive(Debug, Default)]
pub struct MapKeys(std::collections::HashSet<Vec<u8>>);

impl MapKeys {
    /// Adds `key`, or refuses it as one already added.
    pub fn add(&mut self, key: &Value) -> Result<(), Unencodable> {
        let mut encoded = Vec::new();
        // A key that encoded once encodes again.
        let _ = key.encode(&mut encoded);
        let as_stored = match key {
            // ASCII text is one key in any encoding (`value::same_key`).
            Value::Str(bytes, _) if bytes.is_ascii() => [b"text:".as_slice(), bytes].concat(),
            _ => encoded.clone(),
        };
        if self.0.insert(as_stored) {
            Ok(())
        } else {
            Err(Unencodable::key_twice(&encoded))
        }
    }
}
