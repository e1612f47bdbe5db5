//! Streaming importers: JSON object, JSON array of pairs, JSON Lines, CSV,
//! TSV, MessagePack map, YAML mapping and one key per line, read straight into records with
//! no intermediate map. Values keep their types: JSON numbers become
//! integers (of any size) or floats, MessagePack types map across, YAML
//! scalars are typed as Ruby's Psych types them (`yaml`). Typed values are
//! encoded straight from the parser's events into the value codec; strings
//! stay plain string records. CSV and TSV values are strings.
//!
//! One file per format; `numbers` holds the number parsing JSON and YAML
//! share. Importers emit [`Record`]s, the type the format defines, to a
//! [`Sink`].

mod csv;
mod json;
mod json_lines;
mod lines;
mod msgpack;
mod numbers;
mod yaml;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Position, Result};
use crate::format::{Record, ValueKind};

pub use json::json_value;
#[cfg(feature = "parallel")]
pub use json_lines::import_json_lines_parallel;
pub use json_lines::JSON_LINES_CHUNK;
pub use lines::MAX_LINE;
pub use numbers::MAX_INTEGER_DIGITS;

/// The input formats `import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// `{"key": "value", ...}`
    JsonObject,
    /// `[["key", "value"], ...]`, or an array of objects (read as JSON
    /// Lines objects are).
    JsonPairs,
    /// One `["key", "value"]` or `{"key": ..., "value": ...}` per line.
    JsonLines,
    /// Comma-separated, RFC 4180 quoting.
    Csv,
    /// Tab-separated, RFC 4180 quoting.
    Tsv,
    /// A MessagePack map with str or bin keys; values of any type.
    MessagePack,
    /// A YAML mapping, typed as Ruby's Psych types it (`yaml`).
    Yaml,
    /// One key per line, each with the value `true` (a set): a word list.
    Lines,
}

impl InputFormat {
    /// Every format with its name, as `--format` takes it.
    pub const NAMES: [(&'static str, InputFormat); 8] = [
        ("json", InputFormat::JsonObject),
        ("json-pairs", InputFormat::JsonPairs),
        ("jsonl", InputFormat::JsonLines),
        ("csv", InputFormat::Csv),
        ("tsv", InputFormat::Tsv),
        ("msgpack", InputFormat::MessagePack),
        ("yaml", InputFormat::Yaml),
        ("lines", InputFormat::Lines),
    ];

    /// File extensions (lowercase, without the dot) and the format each
    /// implies. `.json` means a JSON object; `import` also accepts an array
    /// of pairs there, telling them apart by the first character.
    pub const EXTENSIONS: [(&'static str, InputFormat); 11] = [
        ("json", InputFormat::JsonObject),
        ("jsonl", InputFormat::JsonLines),
        ("ndjson", InputFormat::JsonLines),
        ("csv", InputFormat::Csv),
        ("tsv", InputFormat::Tsv),
        ("tab", InputFormat::Tsv),
        ("msgpack", InputFormat::MessagePack),
        ("mpk", InputFormat::MessagePack),
        ("mp", InputFormat::MessagePack),
        ("yaml", InputFormat::Yaml),
        ("yml", InputFormat::Yaml),
    ];

    /// The format named `name` (see `NAMES`).
    pub fn from_name(name: &str) -> Option<InputFormat> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("?", |(n, _)| n)
    }

    /// The format a file's extension implies (see `EXTENSIONS`).
    pub fn from_extension(path: &Path) -> Option<InputFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Self::EXTENSIONS
            .iter()
            .find(|(e, _)| *e == ext)
            .map(|(_, f)| *f)
    }

    /// The names of every format, comma-separated, for messages.
    pub fn names_list() -> String {
        Self::NAMES
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A CSV/TSV column, by 0-based index or by header name, or the whole row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    /// 0-based position.
    Index(usize),
    /// Name in the header row. A name of digits that no header has is
    /// the 0-based index it spells: text (a flag, a string option) cannot
    /// say which was meant, and a header named "2024" must stay reachable.
    Name(String),
    /// The whole row, as a value: a Hash from header to field, or an Array
    /// of fields without a header row. Written `*`.
    Row,
}

impl Column {
    /// Parses `--key-column` style text: `*` the whole row, else a name
    /// (which, of digits and matching no header, is an index).
    pub fn parse(text: &str) -> Column {
        if text == WHOLE {
            return Column::Row;
        }
        Column::Name(text.to_string())
    }
}

/// Splits a dotted field path (`meta.id`): `\.` is a dot inside a name
/// and `\\` a backslash.
pub fn field_path(text: &str) -> Vec<String> {
    let mut steps = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => steps
                .last_mut()
                .expect("never empty")
                .push(chars.next().unwrap_or('\\')),
            '.' => steps.push(String::new()),
            c => steps.last_mut().expect("never empty").push(c),
        }
    }
    steps
}

/// The name of "the whole row" or "the whole object" as a value column or
/// value field.
pub const WHOLE: &str = "*";

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
    /// CSV/TSV: strict RFC 4180 quoting (true, the default), or none at
    /// all: `"` is an ordinary character and every separator splits.
    pub quote: bool,
    /// CSV/TSV: the field separator, if not the format's (`,` or tab).
    pub col_sep: Option<u8>,
    /// CSV/TSV: lines starting with this character are skipped. Default:
    /// none.
    pub comment: Option<u8>,
    /// Objects in JSON Lines and in JSON arrays: the key field, or a
    /// dotted path of fields into nested objects (`meta.id`; `\.` for a
    /// dot in a name). Its value is a string, or an integer keyed by its
    /// digits. Default `"key"`.
    pub key_field: String,
    /// Objects in JSON Lines and in JSON arrays: the value field, or `*`
    /// for the whole object. Default `"value"`.
    pub value_field: String,
    /// JSON: a dotted path of fields from the top-level object to the
    /// object or array that holds the entries (iso-codes' `{"3166-1":
    /// [...]}` is `3166-1`). Default: the top level.
    pub records_at: Option<String>,
    /// The options that were given rather than left at their defaults, by
    /// their names in [`OPTION_FORMATS`]. Each must apply to the input's
    /// format ([`ImportOptions::check_given`]): an option that would be
    /// ignored is an error, since ignoring it builds a store of the wrong
    /// data. Empty by default, which checks nothing.
    pub given: Vec<&'static str>,
}

const CSV_TSV: &[InputFormat] = &[InputFormat::Csv, InputFormat::Tsv];
const JSON_RECORDS: &[InputFormat] = &[
    InputFormat::JsonObject,
    InputFormat::JsonPairs,
    InputFormat::JsonLines,
];
const JSON_DOCUMENTS: &[InputFormat] = &[InputFormat::JsonObject, InputFormat::JsonPairs];

/// Every importer option by name, with the formats it applies to and, for
/// the others, what to give instead (the same thing in their terms).
pub const OPTION_FORMATS: [(&str, &[InputFormat], Option<&str>); 9] = [
    ("key_column", CSV_TSV, Some("key_field")),
    ("value_column", CSV_TSV, Some("value_field")),
    ("header", CSV_TSV, None),
    ("quote", CSV_TSV, None),
    ("col_sep", CSV_TSV, None),
    ("comment", CSV_TSV, None),
    ("key_field", JSON_RECORDS, Some("key_column")),
    ("value_field", JSON_RECORDS, Some("value_column")),
    ("records_at", JSON_DOCUMENTS, None),
];

/// The formats `list` names, for messages: "csv and tsv".
fn formats_named(list: &[InputFormat]) -> String {
    let names: Vec<&str> = list.iter().map(|f| f.name()).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl ImportOptions {
    /// Default options for `format`.
    pub fn new(format: InputFormat) -> ImportOptions {
        ImportOptions {
            format,
            key_column: Column::Index(0),
            value_column: Column::Index(1),
            header: true,
            quote: true,
            col_sep: None,
            comment: None,
            key_field: "key".into(),
            value_field: "value".into(),
            records_at: None,
            given: Vec::new(),
        }
    }

    /// Refuses an option in `given` that does not apply to this format,
    /// naming it, the input (`input`), the formats it applies to, and the
    /// option meant where there is one (`key_field` for `key_column`).
    pub fn check_given(&self, input: &str) -> Result<()> {
        for &name in &self.given {
            let Some((_, formats, instead)) = OPTION_FORMATS.iter().find(|(n, ..)| *n == name)
            else {
                continue;
            };
            if formats.contains(&self.format) {
                continue;
            }
            let instead = match instead {
                Some(other)
                    if OPTION_FORMATS
                        .iter()
                        .any(|(n, f, _)| n == other && f.contains(&self.format)) =>
                {
                    format!("; for {} give {other}", self.format.name())
                }
                _ => String::new(),
            };
            return Err(Error::InvalidOption {
                name,
                reason: format!(
                    "applies to {} inputs, and {input} is read as {}, which would ignore it{instead}",
                    formats_named(formats),
                    self.format.name()
                ),
            });
        }
        Ok(())
    }

    /// Checks the options that can contradict each other or the format:
    /// `col_sep` and `comment` are single ASCII characters other than a
    /// quote or a line break, and differ.
    pub fn check(&self) -> Result<()> {
        for (name, c) in [("col_sep", self.col_sep), ("comment", self.comment)] {
            if let Some(c) = c {
                if !c.is_ascii() || matches!(c, b'"' | b'\n' | b'\r') {
                    return Err(Error::InvalidOption { name, reason: format!("must be one ASCII character other than a quote or a line break, got {:?}", c as char) });
                }
            }
        }
        let key_path = field_path(&self.key_field);
        for (name, path) in [
            ("key_field", Some(&self.key_field)),
            ("records_at", self.records_at.as_ref()),
        ] {
            if let Some(path) = path.filter(|p| field_path(p).iter().any(String::is_empty)) {
                return Err(Error::InvalidOption { name, reason: format!("{path:?} has an empty field name; give field names separated by dots (meta.id), with \\. for a dot inside a name") });
            }
        }
        if self.key_field == WHOLE || self.key_column == Column::Row {
            return Err(Error::InvalidOption {
                name: if self.key_field == WHOLE {
                    "key_field"
                } else {
                    "key_column"
                },
                reason: "cannot be \"*\" (the whole row or object); only the value can".into(),
            });
        }
        if key_path.len() == 1 && key_path[0] == self.value_field {
            return Err(Error::InvalidOption {
                name: "value_field",
                reason: format!(
                    "is the key field {:?} too; give another field, or \"*\" for the whole object",
                    self.value_field
                ),
            });
        }
        if self.records_at.is_some()
            && !matches!(
                self.format,
                InputFormat::JsonObject | InputFormat::JsonPairs
            )
        {
            return Err(Error::InvalidOption {
                name: "records_at",
                reason: format!(
                    "is for JSON documents, and the input is {}",
                    self.format.name()
                ),
            });
        }
        if self.col_sep.is_some() && self.col_sep == self.comment {
            return Err(Error::InvalidOption {
                name: "col_sep",
                reason: format!(
                    "and comment are both {:?}; they must differ",
                    self.comment.unwrap_or_default() as char
                ),
            });
        }
        Ok(())
    }
}

/// The sink `import` feeds: each record with where it came from. Returns an
/// error to stop the import (a cancelled build, say).
pub type Sink<'s> = dyn FnMut(Record<'_>, Position) -> Result<()> + 's;

fn parse_error(input: &str, position: Position, what: impl Into<String>) -> Error {
    Error::parse(input, position, what)
}

fn io_error(input: &str, error: std::io::Error) -> Error {
    Error::io(Some(Path::new(input)), error)
}

/// A record of a key and a value read as bytes: each is text if it is
/// valid UTF-8, else binary.
fn bytes_record<'a>(key: &'a [u8], value: &'a [u8]) -> Record<'a> {
    let key_utf8 = std::str::from_utf8(key).is_ok();
    let kind = if std::str::from_utf8(value).is_ok() {
        ValueKind::Utf8
    } else {
        ValueKind::Binary
    };
    Record {
        key,
        key_utf8,
        value,
        kind,
    }
}

/// Reads every entry of `input` into `sink`. `source` names the input in
/// errors (a path, or `-` for stdin).
pub fn import<R: Read>(
    input: R,
    source: &str,
    options: &ImportOptions,
    sink: &mut Sink<'_>,
) -> Result<()> {
    options.check()?;
    let mut input = BufReader::with_capacity(1 << 16, input);
    if options.format != InputFormat::MessagePack {
        skip_byte_order_mark(&mut input, source)?;
    }
    match options.format {
        InputFormat::JsonObject | InputFormat::JsonPairs => {
            json::import(&mut input, source, options, sink)
        }
        InputFormat::JsonLines => json_lines::import(&mut input, source, options, sink),
        InputFormat::Csv => csv::import(input, source, options, b',', sink),
        InputFormat::Tsv => csv::import(input, source, options, b'\t', sink),
        InputFormat::MessagePack => msgpack::import(&mut input, source, sink),
        InputFormat::Lines => lines::import(&mut input, source, sink),
        InputFormat::Yaml => {
            let mut bytes = Vec::new();
            input
                .read_to_end(&mut bytes)
                .map_err(|e| io_error(source, e))?;
            let text = String::from_utf8(bytes).map_err(|e| {
                let line = e.as_bytes()[..e.utf8_error().valid_up_to()]
                    .iter()
                    .filter(|b| **b == b'\n')
                    .count() as u64
                    + 1;
                parse_error(
                    source,
                    Position::line(line),
                    "YAML input is not valid UTF-8",
                )
            })?;
            yaml::import(&text, source, sink)
        }
    }
}

/// Text inputs are UTF-8: skips a UTF-8 byte-order mark (editors on
/// Windows write one; it is not part of the first key), and names UTF-16
/// and UTF-32 input as such, by its byte-order mark or, without one, by the
/// zero bytes ASCII text has in them.
pub(crate) fn skip_byte_order_mark<R: BufRead>(input: &mut R, source: &str) -> Result<()> {
    let head = loop {
        match input.fill_buf() {
            Ok(head) => break head,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(source, e)),
        }
    };
    let encoding = match head {
        [0xEF, 0xBB, 0xBF, ..] => {
            input.consume(3);
            return Ok(());
        }
        [0xFF, 0xFE, 0, 0, ..] => "UTF-32LE",
        [0, 0, 0xFE, 0xFF, ..] => "UTF-32BE",
        [0xFF, 0xFE, ..] => "UTF-16LE",
        [0xFE, 0xFF, ..] => "UTF-16BE",
        [a, 0, 0, 0, ..] if *a != 0 => "UTF-32LE",
        [0, 0, 0, a, ..] if *a != 0 => "UTF-32BE",
        [a, 0, b, 0, ..] if *a != 0 && *b != 0 => "UTF-16LE",
        [0, a, 0, b, ..] if *a != 0 && *b != 0 => "UTF-16BE",
        _ => return Ok(()),
    };
    Err(parse_error(source, Position::line(1), format!("the input is {encoding} text; hashfile reads UTF-8: convert it first (iconv -f {encoding} -t UTF-8)")))
}

/// Where `key` occurs in an input, at most twice: the error path of a build
/// that found a duplicate reads the input again to say where, instead of
/// keeping a position for every entry in memory.
pub fn find_key<R: Read>(
    input: R,
    source: &str,
    options: &ImportOptions,
    key: &[u8],
) -> Result<Vec<Position>> {
    let mut found = Vec::new();
    let result = import(input, source, options, &mut |record, position| {
        if record.key == key {
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
