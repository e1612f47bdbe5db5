//! JSON objects and arrays of pairs, through serde_json without building a
//! tree: the visitors in this folder encode each value straight into the
//! value codec. JSON Lines (`json_lines`) reads its lines with the same
//! visitors.
//!
//! One file per job: this one reads a document (`import`) and counts its
//! lines; `entries.rs` walks to the entries (`records_at`) and reads an
//! object's pairs or an array's elements; `record.rs` reads one entry, a
//! `["key", value]` pair or an object read by `key_field` and
//! `value_field` (JSON Lines reads its lines with it); `value.rs` encodes
//! any value into the value codec; `number.rs` takes serde_json's numbers
//! kept as text (big integers, floats as written).

use std::cell::Cell;
use std::fmt;
use std::io::{BufRead, Read};

use serde::de;

use super::{field_path, parse_error, ImportOptions, Sink};
use crate::error::{Error, Position, Result};

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

mod entries;
mod number;
mod record;
mod value;

use entries::{Descend, Entries, FieldsGiven};
pub(super) use record::{Fields, Pair, RecordVisitor};

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

/// One JSON value, `text`, as a record's value for `key` (named in
/// errors): a string stays a UTF-8 string, anything else is encoded into
/// the value codec as a build from JSON encodes it (numbers as written,
/// big integers kept). What a patch's line holds (`hashfile patch`).
pub fn json_value(key: &str, text: &str) -> Result<(crate::format::ValueKind, Vec<u8>)> {
    use serde::de::DeserializeSeed;
    let mut typed = Vec::new();
    let mut reader = serde_json::Deserializer::from_str(text);
    let top = value::TopValue {
        key,
        out: &mut typed,
    }
    .deserialize(&mut reader)
    .and_then(|top| reader.end().map(|()| top))
    .map_err(|e| Error::InvalidArgument {
        message: format!(
            "the value of key {}: {e}",
            crate::error::DisplayBytes(key.as_bytes())
        ),
    })?;
    Ok(match top {
        value::Top::Text(text) => (
            crate::format::ValueKind::Utf8,
            text.into_owned().into_bytes(),
        ),
        value::Top::Typed => (crate::format::ValueKind::Typed, typed),
    })
}
