//! CSV and TSV through the `csv` crate: RFC 4180 quoting, columns by index
//! or by header name. Values are strings.

use std::io::Read;

use super::{bytes_record, io_error, parse_error, Column, ImportOptions, Sink};
use crate::error::{Position, Result};

pub(super) fn import<R: Read>(input: R, source: &str, options: &ImportOptions, delimiter: u8, sink: &mut Sink<'_>) -> Result<()> {
    let mut reader = ::csv::ReaderBuilder::new().delimiter(delimiter).has_headers(options.header).flexible(true).from_reader(input);
    let csv_error = |e: ::csv::Error| {
        let position = e.position().map_or(Position::Unknown, |p| Position::line(p.line()));
        let message = e.to_string();
        match e.into_kind() {
            ::csv::ErrorKind::Io(io) => io_error(source, io),
            _ => parse_error(source, position, message),
        }
    };
    let resolve = |column: &Column, what: &str, headers: Option<&::csv::ByteRecord>| -> Result<usize> {
        match column {
            Column::Index(i) => Ok(*i),
            Column::Name(name) => {
                let Some(headers) = headers else {
                    return Err(parse_error(source, Position::line(1), format!("{what} column {name:?} is named, but the input has no header row")));
                };
                headers.iter().position(|h| h == name.as_bytes()).ok_or_else(|| parse_error(source, Position::line(1), format!("no {what} column named {name:?} in the header")))
            }
        }
    };
    let headers = if options.header { Some(reader.byte_headers().map_err(csv_error)?.clone()) } else { None };
    let key_index = resolve(&options.key_column, "key", headers.as_ref())?;
    let value_index = resolve(&options.value_column, "value", headers.as_ref())?;
    let mut record = ::csv::ByteRecord::new();
    while reader.read_byte_record(&mut record).map_err(csv_error)? {
        let line = record.position().map_or(0, |p| p.line());
        let (Some(key), Some(value)) = (record.get(key_index), record.get(value_index)) else {
            return Err(parse_error(source, Position::line(line), format!("expected at least {} fields, found {}", key_index.max(value_index) + 1, record.len())));
        };
        sink(bytes_record(key, value), Position::line(line))?;
    }
    Ok(())
}

