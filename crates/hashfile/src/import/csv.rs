//! CSV and TSV: strict RFC 4180 by default, plain delimited text on request.
//! Columns by index or by header name. Values are strings, or with
//! `value_column: "*"` the whole row (`RowShape`).
//!
//! Strict (`quote: true`, the default) reads what RFC 4180 allows and
//! refuses the rest with its line and column, as Ruby's CSV does: a field is
//! either unquoted, with no `"` in it, or quoted from its first byte to a
//! closing `"` that is followed by the separator or the end of the line,
//! with `""` for a quote inside. Quoted fields may hold separators and line
//! breaks. Rows end with LF or CR LF; a CR anywhere else outside quotes is
//! an error. The `csv` crate is not used for this: it accepts every input
//! (an unterminated quote takes the rest of the file as one field), which is
//! what this reader exists to refuse.
//!
//! Plain (`quote: false`): `"` is an ordinary character, a row is a line
//! (a CR before the LF is dropped) and fields are split at every separator.
//! For TSV exports that never quote.
//!
//! Both skip blank lines (Ruby's CSV returns an empty row for them, which
//! has no key) and, with `comment`, lines that start with that character.
//! Lines are counted in the input as it is, so every position points at the
//! line an editor shows, CR LF files included.

use std::io::BufRead;

use super::{bytes_record, io_error, parse_error, Column, ImportOptions, Sink};
use crate::error::{DisplayBytes, Position, Result};
use crate::format::{Record, ValueKind};
use crate::value;

pub(super) fn import<R: BufRead>(
    mut input: R,
    source: &str,
    options: &ImportOptions,
    default_separator: u8,
    sink: &mut Sink<'_>,
) -> Result<()> {
    let separator = options.col_sep.unwrap_or(default_separator);
    let mut rows = Rows {
        separator,
        quote: options.quote,
        comment: options.comment,
        line: 1,
        column: 1,
        source,
    };
    let mut row = Row::default();
    let headers = if options.header {
        if !rows.next_row(&mut input, &mut row)? {
            return Ok(());
        }
        Some(row.clone())
    } else {
        None
    };
    let key = resolve(&options.key_column, "key", headers.as_ref(), source)?;
    if options.value_column == Column::Row {
        let shape = RowShape::new(headers.as_ref());
        let mut typed = Vec::new();
        while rows.next_row(&mut input, &mut row)? {
            let Some(k) = row.field(key.index) else {
                return Err(too_few(&row, &key, source));
            };
            typed.clear();
            shape.encode(&row, &mut typed);
            sink(
                Record {
                    key: k,
                    key_utf8: std::str::from_utf8(k).is_ok(),
                    value: &typed,
                    kind: ValueKind::Typed,
                },
                Position::line(row.line),
            )?;
        }
        return Ok(());
    }
    let value = resolve(&options.value_column, "value", headers.as_ref(), source)?;
    while rows.next_row(&mut input, &mut row)? {
        let (Some(k), Some(v)) = (row.field(key.index), row.field(value.index)) else {
            let missing = if row.field(key.index).is_none() {
                &key
            } else {
                &value
            };
            return Err(too_few(&row, missing, source));
        };
        sink(bytes_record(k, v), Position::line(row.line))?;
    }
    Ok(())
}

/// The error for a row without the field of column `missing`.
fn too_few(row: &Row, missing: &Resolved, source: &str) -> crate::error::Error {
    let fields = row.len();
    parse_error(
        source,
        Position::line(row.line),
        format!("the row has {fields} field{}, too few for the {} column {}, field {} of the row; check the column option, or the separator (col_sep)", if fields == 1 { "" } else { "s" }, missing.what, missing.name, missing.index + 1),
    )
}

/// How a whole row becomes a value (`value_column: "*"`), as Ruby's CSV
/// gives it: with a header row, `CSV::Row#to_h`, a Hash from header to
/// field where the first of repeated header names wins, a missing field is
/// nil and the first field past the headers sits under the key nil;
/// without one, the Array of fields. As in Ruby's CSV, an empty unquoted
/// field is nil and `""` is the empty String. Fields are Strings (binary
/// where they are not UTF-8).
struct RowShape<'h> {
    headers: Option<&'h Row>,
    /// The header columns that are the first of their name.
    kept: Vec<usize>,
    /// Whether a field past the headers is kept, under nil: unless a header
    /// is nil itself.
    extra_under_nil: bool,
}

impl<'h> RowShape<'h> {
    fn new(headers: Option<&'h Row>) -> RowShape<'h> {
        let Some(h) = headers else {
            return RowShape {
                headers,
                kept: Vec::new(),
                extra_under_nil: false,
            };
        };
        let name = |i: usize| h.field_or_nil(i);
        let kept: Vec<usize> = (0..h.len())
            .filter(|&i| (0..i).all(|j| name(j) != name(i)))
            .collect();
        let extra_under_nil = (0..h.len()).all(|i| name(i).is_some());
        RowShape {
            headers,
            kept,
            extra_under_nil,
        }
    }

    fn encode(&self, row: &Row, out: &mut Vec<u8>) {
        let start = value::ContainerStart::begin(out);
        let Some(headers) = self.headers else {
            for i in 0..row.len() {
                write_field(out, row.field_or_nil(i));
            }
            start.end_array(out, row.len() as u64);
            return;
        };
        for &i in &self.kept {
            write_field(out, headers.field_or_nil(i));
            write_field(out, row.field_or_nil(i));
        }
        let extra = self.extra_under_nil && row.len() > headers.len();
        if extra {
            value::write_nil(out);
            write_field(out, row.field_or_nil(headers.len()));
        }
        start.end_map(out, (self.kept.len() + extra as usize) as u64);
    }
}

fn write_field(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => value::write_nil(out),
        Some(bytes) => value::write_str(
            out,
            bytes,
            if std::str::from_utf8(bytes).is_ok() {
                value::Encoding::Utf8
            } else {
                value::Encoding::Binary
            },
        ),
    }
}

/// A column resolved to its index, with how to name it in messages.
struct Resolved {
    index: usize,
    what: &'static str,
    name: String,
}

fn resolve(
    column: &Column,
    what: &'static str,
    headers: Option<&Row>,
    source: &str,
) -> Result<Resolved> {
    match column {
        Column::Row => Err(parse_error(
            source,
            Position::line(1),
            format!("the {what} column cannot be \"*\" (the whole row); only the value column can"),
        )),
        Column::Index(i) => Ok(Resolved {
            index: *i,
            what,
            name: format!("{i} (0-based)"),
        }),
        Column::Name(name) => {
            // Digits name a header column if one has that name, else the
            // index they spell.
            let as_index = name.parse::<usize>().ok();
            let named = headers.and_then(|headers| {
                (0..headers.len()).find(|&i| headers.field(i) == Some(name.as_bytes()))
            });
            if let (None, Some(index)) = (named, as_index) {
                return resolve(&Column::Index(index), what, headers, source);
            }
            let Some(headers) = headers else {
                return Err(parse_error(source, Position::line(1), format!("the {what} column {name:?} is named, but the input has no header row (header: false); give its 0-based index instead")));
            };
            let index = (0..headers.len()).find(|&i| headers.field(i) == Some(name.as_bytes()));
            index
                .map(|index| Resolved {
                    index,
                    what,
                    name: format!("{name:?}"),
                })
                .ok_or_else(|| {
                    let names: Vec<String> = (0..headers.len())
                        .map(|i| DisplayBytes(headers.field(i).unwrap_or_default()).to_string())
                        .collect();
                    parse_error(
                        source,
                        Position::line(headers.line),
                        format!(
                            "no {what} column named {name:?}; the header row names {}",
                            names.join(", ")
                        ),
                    )
                })
        }
    }
}

/// One row: its fields' bytes back to back, where each ends, and the line
/// it starts on.
#[derive(Clone, Debug, Default)]
struct Row {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// Whether each field was quoted: `""` is an empty String, an empty
    /// unquoted field nil (`field_or_nil`).
    quoted: Vec<bool>,
    line: u64,
}

impl Row {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn field(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.bytes[start..end])
    }

    /// Field `i` as Ruby's CSV reads it: nil if absent, or empty and
    /// unquoted.
    fn field_or_nil(&self, i: usize) -> Option<&[u8]> {
        self.field(i).filter(|f| !f.is_empty() || self.quoted[i])
    }

    fn end_field(&mut self, quoted: bool) {
        self.ends.push(self.bytes.len());
        self.quoted.push(quoted);
    }
}

/// Where the reader is inside a row.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first byte of a line: a blank line or a comment is
    /// skipped whole.
    LineStart,
    /// Inside a comment line.
    Comment,
    /// At the start of a field after a separator.
    FieldStart,
    /// Inside an unquoted field.
    Unquoted,
    /// Inside a quoted field that opened at this line and column.
    Quoted { line: u64, column: u64 },
    /// Just after a `"` inside a quoted field: the closing quote, or the
    /// first of a doubled one.
    QuoteInQuoted { line: u64, column: u64 },
}

struct Rows<'s> {
    separator: u8,
    quote: bool,
    comment: Option<u8>,
    /// Line and column (1-based, in characters) of the next byte.
    line: u64,
    column: u64,
    source: &'s str,
}

impl Rows<'_> {
    fn error(&self, line: u64, column: u64, what: impl Into<String>) -> crate::error::Error {
        parse_error(
            self.source,
            Position::Line {
                line,
                column: Some(column),
            },
            what,
        )
    }

    /// Reads the next row into `row`; false at the end of the input.
    fn next_row<R: BufRead>(&mut self, input: &mut R, row: &mut Row) -> Result<bool> {
        row.bytes.clear();
        row.ends.clear();
        row.quoted.clear();
        let mut state = State::LineStart;
        // A CR outside quotes, waiting to see whether an LF follows.
        let mut carriage_return: Option<(u64, u64)> = None;
        loop {
            let buf = match input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(self.source, e)),
            };
            if buf.is_empty() {
                return self.finish(state, carriage_return, row);
            }
            let mut used = 0;
            let mut done = false;
            while used < buf.len() {
                let byte = buf[used];
                if let Some((line, column)) = carriage_return.take() {
                    if byte != b'\n' {
                        if self.quote {
                            return Err(self.error(line, column, "a carriage return (CR) that does not end a line (CR LF); quote the field that holds it"));
                        }
                        if state == State::LineStart {
                            row.line = line;
                            state = State::Unquoted;
                        }
                        row.bytes.push(b'\r');
                    }
                }
                // Bulk-copy the ordinary bytes of a field.
                if matches!(state, State::Unquoted | State::Quoted { .. }) {
                    let quoted = matches!(state, State::Quoted { .. });
                    let run = buf[used..]
                        .iter()
                        .position(|&b| self.special(b, quoted))
                        .unwrap_or(buf.len() - used);
                    if run > 0 {
                        let bytes = &buf[used..used + run];
                        row.bytes.extend_from_slice(bytes);
                        self.column += bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
                        used += run;
                        continue;
                    }
                }
                let (line, column) = (self.line, self.column);
                used += 1;
                if byte == b'\n' {
                    self.line += 1;
                    self.column = 1;
                } else if byte & 0xC0 != 0x80 {
                    self.column += 1;
                }
                state = match state {
                    State::Comment if byte == b'\n' => State::LineStart,
                    State::Comment => State::Comment,
                    State::Quoted { line, column } if byte == b'"' => {
                        State::QuoteInQuoted { line, column }
                    }
                    State::Quoted { .. } => {
                        row.bytes.push(byte);
                        state
                    }
                    State::QuoteInQuoted { line, column } if byte == b'"' => {
                        row.bytes.push(b'"');
                        State::Quoted { line, column }
                    }
                    State::QuoteInQuoted { .. } if byte == self.separator => {
                        row.end_field(true);
                        State::FieldStart
                    }
                    State::QuoteInQuoted { .. } if byte == b'\n' || byte == b'\r' => {
                        if byte == b'\n' {
                            row.end_field(true);
                            done = true;
                            break;
                        }
                        carriage_return = Some((line, column));
                        State::QuoteInQuoted { line: 0, column: 0 }
                    }
                    State::QuoteInQuoted { .. } => {
                        return Err(self.error(line, column, format!("{} after the closing quote of a field; a quoted field ends at its closing quote (write a quote inside it as \"\")", describe(byte))));
                    }
                    State::LineStart if byte == b'\n' => State::LineStart,
                    State::LineStart if byte == b'\r' => {
                        carriage_return = Some((line, column));
                        State::LineStart
                    }
                    State::LineStart if Some(byte) == self.comment => State::Comment,
                    State::LineStart | State::FieldStart | State::Unquoted => {
                        if state == State::LineStart {
                            row.line = line;
                        }
                        if byte == self.separator {
                            row.end_field(false);
                            State::FieldStart
                        } else if byte == b'\n' {
                            row.end_field(false);
                            done = true;
                            break;
                        } else if byte == b'\r' {
                            carriage_return = Some((line, column));
                            State::Unquoted
                        } else if byte == b'"' && self.quote {
                            if state == State::Unquoted {
                                return Err(self.error(line, column, "a quote inside an unquoted field; quote the whole field and double the quote (\"a\"\"b\"), or read the input with the quote option false (--no-quote) if quotes are ordinary characters in it"));
                            }
                            State::Quoted { line, column }
                        } else {
                            row.bytes.push(byte);
                            State::Unquoted
                        }
                    }
                };
            }
            input.consume(used);
            if done {
                return Ok(true);
            }
        }
    }

    /// Whether `byte` ends a run of ordinary field bytes.
    #[inline]
    fn special(&self, byte: u8, quoted: bool) -> bool {
        if quoted {
            byte == b'"' || byte == b'\n'
        } else {
            byte == self.separator || byte == b'\n' || byte == b'\r' || (byte == b'"' && self.quote)
        }
    }

    /// The end of the input in `state`: the last row, if it has no line end.
    fn finish(
        &self,
        state: State,
        carriage_return: Option<(u64, u64)>,
        row: &mut Row,
    ) -> Result<bool> {
        match state {
            State::LineStart | State::Comment => Ok(false),
            State::Quoted { line, column } => Err(self.error(
                line,
                column,
                "unclosed quoted field: the input ends before this quote is closed; close it, or read the input with the quote option false (--no-quote) if quotes are ordinary characters in it",
            )),
            // A CR at the very end ends the last line, as CR LF would.
            State::FieldStart | State::Unquoted => {
                let _ = carriage_return;
                row.end_field(false);
                Ok(true)
            }
            State::QuoteInQuoted { .. } => {
                row.end_field(true);
                Ok(true)
            }
        }
    }
}

fn describe(byte: u8) -> String {
    match byte {
        b' ' => "a space".into(),
        b'\t' => "a tab".into(),
        0x21..=0x7e => format!("{:?}", byte as char),
        _ => format!("byte {byte:#04x}"),
    }
}
