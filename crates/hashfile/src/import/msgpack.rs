//! MessagePack: a map at the top level, read with rmp's marker and length
//! functions. Strings at the top level stay string records; anything else
//! is encoded into the value codec.

use std::io::BufRead;

use super::{parse_error, Sink};
use crate::error::{DisplayBytes, Position, Result};
use crate::format::{Record, ValueKind};
use crate::value;

pub(super) fn import<R: BufRead>(input: &mut R, source: &str, sink: &mut Sink<'_>) -> Result<()> {
    let bad = |n: u64, message: String| {
        parse_error(
            source,
            if n == 0 {
                Position::Unknown
            } else {
                Position::Entry(n)
            },
            message,
        )
    };
    let len = rmp::decode::read_map_len(input)
        .map_err(|e| bad(0, format!("expected a map at the top level: {e}")))?;
    let mut key = Vec::new();
    let mut value = Vec::new();
    for n in 1..=len as u64 {
        let marker = decode::marker(input).map_err(|e| bad(n, e))?;
        if !decode::read_string(input, marker, &mut key).map_err(|e| bad(n, e))? {
            return Err(bad(
                n,
                format!(
                    "key is {}; keys must be strings",
                    decode::marker_name(marker)
                ),
            ));
        }
        let key_utf8 = std::str::from_utf8(&key).is_ok();
        let marker = decode::marker(input).map_err(|e| bad(n, e))?;
        value.clear();
        // Strings at the top level stay string records: str as UTF-8 (byte
        // for byte, as msgpack-ruby gives it), bin as binary.
        let kind = if decode::read_string(input, marker, &mut value).map_err(|e| bad(n, e))? {
            if decode::is_bin(marker) {
                ValueKind::Binary
            } else {
                ValueKind::Utf8
            }
        } else {
            decode::encode(input, marker, &mut value, value::MAX_DEPTH)
                .map_err(|e| bad(n, format!("value for key {}: {e}", DisplayBytes(&key))))?;
            ValueKind::Typed
        };
        sink(
            Record {
                key: &key,
                key_utf8,
                value: &value,
                kind,
            },
            Position::Entry(n),
        )?;
    }
    // msgpack-ruby's unpack refuses "extra bytes" too: a second map
    // concatenated after the first is not merged, and is not dropped.
    let rest = loop {
        match input.fill_buf() {
            Ok(rest) => break rest.len(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(super::io_error(source, e)),
        }
    };
    if rest > 0 {
        return Err(bad(0, format!("extra bytes after the top-level map ({len} {}); the input must be exactly one map (several maps one after another are not merged)", if len == 1 { "entry" } else { "entries" })));
    }
    Ok(())
}

/// MessagePack, read with rmp's marker and length functions.
mod decode {
    use std::io::Read;

    use rmp::Marker;

    use crate::value::{self, ContainerStart, Encoding};

    pub(super) fn marker<R: Read>(input: &mut R) -> Result<Marker, String> {
        rmp::decode::read_marker(input).map_err(|e| match e.0 {
            ref io if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                "unexpected end of input".to_string()
            }
            io => io.to_string(),
        })
    }

    fn be<R: Read>(input: &mut R, n: usize) -> Result<u64, String> {
        let mut buf = [0u8; 8];
        input
            .read_exact(&mut buf[8 - n..])
            .map_err(|_| "unexpected end of input".to_string())?;
        Ok(u64::from_be_bytes(buf))
    }

    fn bytes<R: Read>(input: &mut R, len: u64, out: &mut Vec<u8>) -> Result<(), String> {
        let before = out.len();
        input
            .take(len)
            .read_to_end(out)
            .map_err(|e| e.to_string())?;
        if ((out.len() - before) as u64) < len {
            return Err("unexpected end of input".into());
        }
        Ok(())
    }

    pub(super) fn is_bin(m: Marker) -> bool {
        matches!(m, Marker::Bin8 | Marker::Bin16 | Marker::Bin32)
    }

    fn string_len<R: Read>(input: &mut R, m: Marker) -> Result<Option<u64>, String> {
        Ok(Some(match m {
            Marker::FixStr(n) => n as u64,
            Marker::Str8 | Marker::Bin8 => be(input, 1)?,
            Marker::Str16 | Marker::Bin16 => be(input, 2)?,
            Marker::Str32 | Marker::Bin32 => be(input, 4)?,
            _ => return Ok(None),
        }))
    }

    /// Appends a str or bin's bytes to `out`; false (reading nothing) for
    /// any other marker.
    pub(super) fn read_string<R: Read>(
        input: &mut R,
        m: Marker,
        out: &mut Vec<u8>,
    ) -> Result<bool, String> {
        out.clear();
        match string_len(input, m)? {
            Some(len) => bytes(input, len, out).map(|_| true),
            None => Ok(false),
        }
    }

    pub(super) fn marker_name(m: Marker) -> &'static str {
        match m {
            Marker::Null => "nil",
            Marker::True | Marker::False => "a boolean",
            Marker::FixPos(_)
            | Marker::FixNeg(_)
            | Marker::U8
            | Marker::U16
            | Marker::U32
            | Marker::U64
            | Marker::I8
            | Marker::I16
            | Marker::I32
            | Marker::I64
            | Marker::F32
            | Marker::F64 => "a number",
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "an array",
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "a map",
            _ => "an extension type",
        }
    }

    /// Encodes the value that starts with marker `m` into `out`.
    pub(super) fn encode<R: Read>(
        input: &mut R,
        m: Marker,
        out: &mut Vec<u8>,
        depth_left: usize,
    ) -> Result<(), String> {
        let deeper = || {
            depth_left
                .checked_sub(1)
                .ok_or_else(|| format!("nests deeper than {} levels", value::MAX_DEPTH))
        };
        match m {
            Marker::Null => value::write_nil(out),
            Marker::True => value::write_bool(out, true),
            Marker::False => value::write_bool(out, false),
            Marker::FixPos(n) => value::write_int(out, n as i64),
            Marker::FixNeg(n) => value::write_int(out, n as i64),
            Marker::U8 => value::write_int(out, be(input, 1)? as i64),
            Marker::U16 => value::write_int(out, be(input, 2)? as i64),
            Marker::U32 => value::write_int(out, be(input, 4)? as i64),
            Marker::U64 => value::write_bigint(out, false, &be(input, 8)?.to_le_bytes()),
            Marker::I8 => value::write_int(out, be(input, 1)? as u8 as i8 as i64),
            Marker::I16 => value::write_int(out, be(input, 2)? as u16 as i16 as i64),
            Marker::I32 => value::write_int(out, be(input, 4)? as u32 as i32 as i64),
            Marker::I64 => value::write_int(out, be(input, 8)? as i64),
            Marker::F32 => value::write_float(out, f32::from_bits(be(input, 4)? as u32) as f64),
            Marker::F64 => value::write_float(out, f64::from_bits(be(input, 8)?)),
            Marker::FixStr(_)
            | Marker::Str8
            | Marker::Str16
            | Marker::Str32
            | Marker::Bin8
            | Marker::Bin16
            | Marker::Bin32 => {
                let len = string_len(input, m)?.expect("a string marker");
                let mut buf = Vec::new();
                bytes(input, len, &mut buf)?;
                value::write_str(
                    out,
                    &buf,
                    if is_bin(m) {
                        Encoding::Binary
                    } else {
                        Encoding::Utf8
                    },
                );
            }
            Marker::FixArray(_)
            | Marker::Array16
            | Marker::Array32
            | Marker::FixMap(_)
            | Marker::Map16
            | Marker::Map32 => {
                let (len, pairs) = match m {
                    Marker::FixArray(n) => (n as u64, false),
                    Marker::Array16 => (be(input, 2)?, false),
                    Marker::Array32 => (be(input, 4)?, false),
                    Marker::FixMap(n) => (n as u64, true),
                    Marker::Map16 => (be(input, 2)?, true),
                    _ => (be(input, 4)?, true),
                };
                let depth = deeper()?;
                let start = ContainerStart::begin(out);
                for _ in 0..if pairs { len * 2 } else { len } {
                    let m = marker(input)?;
                    encode(input, m, out, depth)?;
                }
                if pairs {
                    start.end_map(out, len);
                } else {
                    start.end_array(out, len);
                }
            }
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                // The length comes before the type for the variable-size forms.
                match m {
                    Marker::Ext8 => be(input, 1)?,
                    Marker::Ext16 => be(input, 2)?,
                    Marker::Ext32 => be(input, 4)?,
                    _ => 0,
                };
                let ext_type = be(input, 1)? as u8 as i8;
                let what = if ext_type == -1 { " (a timestamp)" } else { "" };
                return Err(format!("MessagePack extension type {ext_type}{what} is not supported; convert it to a plain type first"));
            }
            Marker::Reserved => return Err("reserved MessagePack marker 0xc1".into()),
        }
        Ok(())
    }
}
