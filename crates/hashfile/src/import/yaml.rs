//! The YAML importer. Scalars are typed the way Ruby's Psych types them
//! for `YAML.safe_load` (a port of Psych 4's `ScalarScanner#tokenize` and
//! the tag handling of `Psych::Visitors::ToRuby`), so a converted config
//! reads back as `YAML.safe_load(File.read(path), aliases: true)` would:
//! `yes`/`on` are true, `0x1f` and `017` are integers, `1:30` is 5400,
//! quoted scalars are strings. Anchors, aliases and `<<` merge keys work.
//!
//! Where safe_load raises (dates, times, tags naming Ruby classes,
//! `!!set`) the import fails with the position and a hint to quote the
//! value; unknown tags are read as if absent, as safe_load reads them. One
//! difference: a `:name` scalar becomes a Symbol, as with
//! `permitted_classes: [Symbol]`, since stores hold Symbols.
//!
//! The event parser is yaml-rust2, vendored with three indentation checks
//! relaxed to read what libyaml reads (`vendor/yaml-rust2/PATCHES.md`).
//! A YAML input is read whole (they are configs), unlike the other
//! formats, which stream.

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use regex::Regex;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::numbers::digits_to_magnitude;
use super::Sink;
use crate::error::{DisplayBytes, Error, Position, Result};
use crate::format::{Record, ValueKind};
use crate::value::{self, ContainerStart, Cursor, Encoding, Item};

/// Bytes aliases may copy in one import, against "billion laughs" inputs.
const MAX_ALIAS_BYTES: usize = 256 << 20;

const YAML_TAG: &str = "tag:yaml.org,2002:";

struct Importer<'a> {
    parser: Parser<std::str::Chars<'a>>,
    source: &'a str,
    anchors: HashMap<usize, Vec<u8>>,
    alias_bytes: usize,
}

fn position(mark: &Marker) -> Position {
    Position::Line {
        line: mark.line() as u64,
        column: Some(mark.col() as u64 + 1),
    }
}

pub(crate) fn import(text: &str, source: &str, sink: &mut Sink<'_>) -> Result<()> {
    let mut importer = Importer {
        parser: Parser::new_from_str(text),
        source,
        anchors: HashMap::new(),
        alias_bytes: 0,
    };
    importer.run(sink)
}

impl Importer<'_> {
    fn error(&self, mark: &Marker, message: impl Into<String>) -> Error {
        Error::parse(self.source, position(mark), message)
    }

    fn next(&mut self) -> Result<(Event, Marker)> {
        self.parser.next_token().map_err(|e| {
            let mark = *e.marker();
            self.error(&mark, e.info().to_string())
        })
    }

    fn run(&mut self, sink: &mut Sink<'_>) -> Result<()> {
        let (event, mark) = self.next()?;
        if event != Event::StreamStart {
            return Err(self.error(&mark, "expected the start of a YAML stream"));
        }
        let (event, mark) = self.next()?;
        match event {
            Event::StreamEnd => return Ok(()),
            Event::DocumentStart => {}
            _ => return Err(self.error(&mark, "expected a YAML document")),
        }
        let (event, mark) = self.next()?;
        match event {
            Event::MappingStart(anchor, tag) => {
                if anchor != 0 {
                    return Err(self.error(&mark, "the top-level mapping cannot have an anchor"));
                }
                if let Some(tag) = &tag {
                    container_tag(tag, true)
                        .map_err(|m| self.error(&mark, format!("the top-level mapping {m}")))?;
                }
                self.top_mapping(sink)?;
            }
            // An empty document: an empty store, as safe_load gives nil.
            Event::Scalar(ref v, TScalarStyle::Plain, _, None) if v.is_empty() => {}
            _ => return Err(self.error(&mark, "expected a mapping at the top level")),
        }
        let (event, mark) = self.next()?;
        if event != Event::DocumentEnd {
            return Err(self.error(&mark, "expected the end of the document"));
        }
        let (event, mark) = self.next()?;
        match event {
            Event::StreamEnd => Ok(()),
            _ => Err(self.error(
                &mark,
                "more than one YAML document; a store is built from one mapping",
            )),
        }
    }

    fn top_mapping(&mut self, sink: &mut Sink<'_>) -> Result<()> {
        let mut key_bytes = Vec::new();
        let mut typed = Vec::new();
        loop {
            let (event, mark) = self.next()?;
            if event == Event::MappingEnd {
                return Ok(());
            }
            if is_merge_key(&event) {
                return Err(self.error(&mark, "a << merge key at the top level is not supported"));
            }
            key_bytes.clear();
            // Full depth, so that a sequence or mapping as a key is named as
            // such below rather than as too deep.
            self.node(event, &mark, &mut key_bytes, value::MAX_DEPTH, "")?;
            let key = match Cursor::new(&key_bytes).next_item() {
                Ok(Item::Str(bytes, Encoding::Utf8 | Encoding::Binary))
                | Ok(Item::Symbol(bytes, _)) => bytes.to_vec(),
                Ok(other) => {
                    return Err(self.error(
                        &mark,
                        format!(
                            "key is {}; store keys must be strings (quote it)",
                            describe(&other)
                        ),
                    ))
                }
                Err(e) => return Err(self.error(&mark, e.to_string())),
            };
            let key_text = String::from_utf8_lossy(&key).into_owned();
            let (event, value_mark) = self.next()?;
            typed.clear();
            self.node(event, &value_mark, &mut typed, value::MAX_DEPTH, &key_text)?;
            let entry = match plain_utf8(&typed) {
                Some(text) => Record {
                    key: &key,
                    key_utf8: true,
                    value: text,
                    kind: ValueKind::Utf8,
                },
                None => Record {
                    key: &key,
                    key_utf8: true,
                    value: &typed,
                    kind: ValueKind::Typed,
                },
            };
            sink(entry, position(&mark))?;
        }
    }

    /// Encodes the node that starts with `event` into `out`.
    fn node(
        &mut self,
        event: Event,
        mark: &Marker,
        out: &mut Vec<u8>,
        depth_left: usize,
        key: &str,
    ) -> Result<()> {
        let start = out.len();
        let is_map = matches!(event, Event::MappingStart(..));
        let anchor = match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.scalar(&text, style, tag.as_ref(), out)
                    .map_err(|m| self.error(mark, value_message(key, &text, m)))?;
                anchor
            }
            Event::Alias(id) => {
                let bytes = self
                    .anchors
                    .get(&id)
                    .ok_or_else(|| self.error(mark, "alias to an unknown anchor"))?;
                self.alias_bytes += bytes.len();
                if self.alias_bytes > MAX_ALIAS_BYTES {
                    return Err(self.error(
                        mark,
                        format!("aliases expand to more than {} MiB", MAX_ALIAS_BYTES >> 20),
                    ));
                }
                out.extend_from_slice(bytes);
                return Ok(());
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                let omap = !is_map
                    && tag.as_ref().is_some_and(|t| {
                        matches!(full_tag(t).as_str(), "tag:yaml.org,2002:omap" | "!omap")
                    });
                if let Some(tag) = &tag {
                    container_tag(tag, is_map)
                        .map_err(|m| self.error(mark, value_message(key, "", m)))?;
                }
                let depth = self.deeper(mark, depth_left, key)?;
                let container = ContainerStart::begin(out);
                let end = if is_map {
                    Event::MappingEnd
                } else {
                    Event::SequenceEnd
                };
                let mut n = 0u64;
                loop {
                    let (event, item_mark) = self.next()?;
                    if event == end {
                        break;
                    }
                    if !is_map {
                        self.node(event, &item_mark, out, depth, key)?;
                        n += 1;
                        continue;
                    }
                    let merge = is_merge_key(&event);
                    let key_start = out.len();
                    self.node(event, &item_mark, out, depth, key)?;
                    let value_start = out.len();
                    let (event, value_mark) = self.next()?;
                    self.node(event, &value_mark, out, depth, key)?;
                    n += if merge {
                        merge_into(out, key_start, value_start)
                    } else {
                        1
                    };
                }
                if is_map {
                    container.end_map(out, n);
                } else {
                    container.end_array(out, n);
                }
                if omap {
                    omap_to_map(out, start)
                        .map_err(|m| self.error(mark, value_message(key, "", m)))?;
                }
                anchor
            }
            _ => return Err(self.error(mark, "unexpected YAML event")),
        };
        if anchor != 0 {
            self.anchors.insert(anchor, out[start..].to_vec());
        }
        Ok(())
    }

    fn deeper(&self, mark: &Marker, depth_left: usize, key: &str) -> Result<usize> {
        depth_left.checked_sub(1).ok_or_else(|| {
            self.error(
                mark,
                format!(
                    "value for key {} nests deeper than {} levels",
                    DisplayBytes(key.as_bytes()),
                    value::MAX_DEPTH
                ),
            )
        })
    }

    /// A scalar, typed as Psych's ToRuby#deserialize does under safe_load.
    fn scalar(
        &self,
        text: &str,
        style: TScalarStyle,
        tag: Option<&Tag>,
        out: &mut Vec<u8>,
    ) -> std::result::Result<(), String> {
        let Some(tag) = tag else {
            if style != TScalarStyle::Plain {
                value::write_str(out, text.as_bytes(), Encoding::Utf8);
                return Ok(());
            }
            return tokenize(text, out);
        };
        let full = full_tag(tag);
        match full.as_str() {
            "!binary" | "tag:yaml.org,2002:binary" => {
                let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                let bytes = base64::engine::general_purpose::STANDARD.decode(compact).map_err(|e| format!("is not valid base64 ({e})"))?;
                value::write_str(out, &bytes, Encoding::Binary);
            }
            "!str" | "!ruby/string" | "tag:yaml.org,2002:str" => value::write_str(out, text.as_bytes(), Encoding::Utf8),
            "!float" | "tag:yaml.org,2002:float" => {
                let mut scratch = Vec::new();
                tokenize(text, &mut scratch)?;
                let f = match Cursor::new(&scratch).next_item() {
                    Ok(Item::Float(f)) => f,
                    Ok(Item::Int(i)) => i as f64,
                    _ => ruby_float(text).ok_or("is not a float")?,
                };
                value::write_float(out, f);
            }
            "!ruby/symbol" | "!ruby/sym" => value::write_symbol(out, text.as_bytes(), Encoding::Utf8),
            "tag:yaml.org,2002:timestamp" | "!timestamp" => return Err(format!("has tag {}, a date or time, which YAML.safe_load refuses; drop the tag and quote it to keep it as a string", shown_tag(&full))),
            other if other.starts_with("!ruby/") => return Err(format!("has tag {other}, a Ruby object, which YAML.safe_load refuses")),
            // Psych's ToRuby#deserialize tokenizes a scalar under any other
            // tag as if it had none (`!!int`, `!custom 5`, `!!python/str x`,
            // `!<tag:example.com,2000:x> 5`), quoted or not.
            _ => tokenize(text, out)?,
        }
        Ok(())
    }
}

/// A tag as Psych sees it: the handle expanded, then the suffix.
fn full_tag(tag: &Tag) -> String {
    format!("{}{}", tag.handle, tag.suffix)
}

/// A tag as people write it: `!!set`, not `tag:yaml.org,2002:set`.
fn shown_tag(full: &str) -> String {
    full.strip_prefix(YAML_TAG)
        .map_or_else(|| full.to_string(), |name| format!("!!{name}"))
}

/// Whether a sequence or mapping may carry `tag`. Psych's safe_load reads a
/// collection under a tag it does not know as an ordinary one, and refuses
/// the tags that name Ruby classes and `!!set` (a `Psych::Set`).
fn container_tag(tag: &Tag, is_map: bool) -> std::result::Result<(), String> {
    let full = full_tag(tag);
    if full.starts_with("!ruby/") {
        return Err(format!(
            "has tag {full}, a Ruby object, which YAML.safe_load refuses"
        ));
    }
    if is_map && matches!(full.as_str(), "tag:yaml.org,2002:set" | "!set") {
        return Err(format!("has tag {}, a Psych::Set, which YAML.safe_load refuses; drop the tag to keep it as a mapping", shown_tag(&full)));
    }
    Ok(())
}

/// Rewrites the `!!omap` sequence encoded at `start..` as the mapping Psych
/// makes of it: each element is a mapping of one pair, and the pairs in
/// order make one map (a later repeat of a key wins, as in Psych's Omap).
fn omap_to_map(out: &mut Vec<u8>, start: usize) -> std::result::Result<(), String> {
    let encoded = out[start..].to_vec();
    let Ok(Item::Array(array)) = Cursor::new(&encoded).next_item() else {
        return Err("is an !!omap that is not a sequence".into());
    };
    let mut pairs: Vec<&[u8]> = Vec::new();
    let mut cursor = array.cursor();
    for _ in 0..array.len {
        match cursor.next_item() {
            Ok(Item::Map(pair)) if pair.len == 1 => pairs.push(pair.body),
            _ => return Err("is an !!omap whose entries are not all mappings of one pair".into()),
        }
    }
    out.truncate(start);
    let container = ContainerStart::begin(out);
    for body in &pairs {
        out.extend_from_slice(body);
    }
    container.end_map(out, pairs.len() as u64);
    Ok(())
}

fn value_message(key: &str, text: &str, message: String) -> String {
    let shown: String = text.chars().take(40).collect();
    if text.is_empty() && !key.is_empty() {
        format!("value for key {} {message}", DisplayBytes(key.as_bytes()))
    } else if key.is_empty() {
        format!("{shown:?} {message}")
    } else {
        format!(
            "value for key {}: {shown:?} {message}",
            DisplayBytes(key.as_bytes())
        )
    }
}

fn is_tag(tag: &Tag, name: &str) -> bool {
    tag.handle == YAML_TAG && tag.suffix == name
}

/// `<<` as a key merges, unless tagged `!!str` (Psych's revive_hash).
fn is_merge_key(event: &Event) -> bool {
    matches!(event, Event::Scalar(text, _, _, tag) if text == "<<" && !tag.as_ref().is_some_and(|t| is_tag(t, "str")))
}

/// Replaces the `<<` pair just written at `key_start..` by the pairs it
/// merges, as Psych does: a mapping's pairs, or for a sequence of mappings
/// each one's pairs with the first mapping winning. Pairs are appended in
/// order, so decoding (last key wins) gives Psych's Hash. Anything else
/// stays an ordinary `"<<"` entry, as in Psych. Returns the pairs added.
fn merge_into(out: &mut Vec<u8>, key_start: usize, value_start: usize) -> u64 {
    let merged = out[value_start..].to_vec();
    let mut bodies: Vec<(&[u8], u64)> = Vec::new();
    let ok = match Cursor::new(&merged).next_item() {
        Ok(Item::Map(c)) => {
            bodies.push((c.body, c.len));
            true
        }
        Ok(Item::Array(c)) => {
            let mut cursor = c.cursor();
            let mut all_maps = true;
            for _ in 0..c.len {
                match cursor.next_item() {
                    Ok(Item::Map(m)) => bodies.push((m.body, m.len)),
                    _ => all_maps = false,
                }
            }
            bodies.reverse();
            all_maps
        }
        _ => false,
    };
    if !ok {
        return 1;
    }
    out.truncate(key_start);
    let mut n = 0;
    for (body, len) in bodies {
        out.extend_from_slice(body);
        n += len;
    }
    n
}

fn describe(item: &Item<'_>) -> &'static str {
    match item {
        Item::Nil => "null",
        Item::Bool(_) => "a boolean",
        Item::Int(_) | Item::BigInt { .. } => "an integer",
        Item::Float(_) => "a float",
        Item::Str(..) => "a string",
        Item::Symbol(..) => "a symbol",
        Item::Array(_) => "a sequence",
        Item::Map(_) => "a mapping",
        Item::Custom(_) => "a custom value",
    }
}

/// The text of a value that is exactly one UTF-8 string.
fn plain_utf8(encoded: &[u8]) -> Option<&[u8]> {
    let mut cursor = Cursor::new(encoded);
    match cursor.next_item() {
        Ok(Item::Str(bytes, Encoding::Utf8)) if cursor.is_at_end() => Some(bytes),
        _ => None,
    }
}

struct Patterns {
    stringish: Regex,
    time: Regex,
    date: Regex,
    sexagesimal_int: Regex,
    sexagesimal_float: Regex,
    float: Regex,
    integer: Regex,
}

/// Psych's regular expressions, with Ruby's ASCII `\d` and `\s` spelled
/// out and `[[:alpha:]]` as Unicode letters (as Ruby matches UTF-8 text).
fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let r = |s: &str| Regex::new(s).expect("a valid pattern");
        Patterns {
            stringish: r(r"^[^0-9.:\-]?[\p{Alphabetic}_ \t\r\n\f\v!@#$%^&*(){}<>|/\\~;=]+"),
            time: r(r"^-?[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t\r\n\f\v]+)[0-9]{1,2}:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t\r\n\f\v]*(?:Z|[-+][0-9]{1,2}:?(?:[0-9][0-9])?))?$"),
            date: r(r"^[0-9]{4}-(?:1[012]|0[0-9]|[0-9])-(?:[12][0-9]|3[01]|0[0-9]|[0-9])$"),
            sexagesimal_int: r(r"^[-+]?[0-9][0-9_]*(:[0-5]?[0-9]){1,2}$"),
            sexagesimal_float: r(r"^[-+]?[0-9][0-9_]*(:[0-5]?[0-9]){1,2}\.[0-9_]*$"),
            float: r(r"^(?:[-+]?([0-9][0-9_,]*)?\.[0-9]*([eE][-+][0-9]+)?)$"),
            integer: r(r"^(?:[-+]?0b[0-1_,]+|[-+]?0[0-7_,]+|[-+]?(?:0|[1-9](?:[0-9]|,[0-9]|_[0-9])*)|[-+]?0x[0-9a-fA-F_,]+)$"),
        }
    })
}

/// Psych's ScalarScanner#tokenize, for a plain untagged scalar.
fn tokenize(s: &str, out: &mut Vec<u8>) -> std::result::Result<(), String> {
    let p = patterns();
    let lower = s.to_ascii_lowercase();
    if s.is_empty() {
        value::write_nil(out);
    } else if p.stringish.is_match(s) || s.contains('\n') {
        let starts_special = s
            .chars()
            .next()
            .is_some_and(|c| "ytonf~".contains(c.to_ascii_lowercase()));
        if s.chars().count() > 5 || !starts_special {
            value::write_str(out, s.as_bytes(), Encoding::Utf8);
        } else if s == "~" || lower == "null" {
            value::write_nil(out);
        } else if matches!(lower.as_str(), "yes" | "true" | "on") {
            value::write_bool(out, true);
        } else if matches!(lower.as_str(), "no" | "false" | "off") {
            value::write_bool(out, false);
        } else {
            value::write_str(out, s.as_bytes(), Encoding::Utf8);
        }
    } else if p.time.is_match(s) {
        return Err(
            "is a time, which YAML.safe_load refuses; quote it to keep it as a string".into(),
        );
    } else if p.date.is_match(s) {
        return Err(
            "is a date, which YAML.safe_load refuses; quote it to keep it as a string".into(),
        );
    } else if lower == ".inf" || lower == "+.inf" {
        value::write_float(out, f64::INFINITY);
    } else if lower == "-.inf" {
        value::write_float(out, f64::NEG_INFINITY);
    } else if lower == ".nan" {
        value::write_float(out, f64::NAN);
    } else if s.len() > 1 && s.starts_with(':') {
        let name = &s[1..];
        let quoted = name.len() >= 2
            && (name.starts_with('"') || name.starts_with('\''))
            && name[1..].contains(&name[..1]);
        let name = if quoted {
            // /^:(["'])(.*)\1/: the text between the first quote and its
            // last repeat.
            let q = &name[..1];
            &name[1..1 + name[1..].rfind(q).unwrap_or(0)]
        } else {
            name
        };
        value::write_symbol(
            out,
            name.strip_prefix(':').unwrap_or(name).as_bytes(),
            Encoding::Utf8,
        );
    } else if p.sexagesimal_int.is_match(s) {
        // Psych multiplies part e by 60 ** |e - 2|, so "1:30" is 5400.
        let mut total: i128 = 0;
        for (e, part) in s.split(':').enumerate() {
            let term = ruby_to_i(part)
                .and_then(|n| n.checked_mul(60i128.pow((e as i32 - 2).unsigned_abs())));
            total = term
                .and_then(|t| total.checked_add(t))
                .ok_or("is a sexagesimal number too large to convert")?;
        }
        value::write_bigint(out, total < 0, &total.unsigned_abs().to_le_bytes());
    } else if p.sexagesimal_float.is_match(s) {
        let mut total = 0.0;
        for (e, part) in s.split(':').enumerate() {
            total += ruby_to_f(part) * 60f64.powi((e as i32 - 2).abs());
        }
        value::write_float(out, total);
    } else if p.float.is_match(s) {
        if matches!(s, "." | "+." | "-.") {
            value::write_str(out, s.as_bytes(), Encoding::Utf8);
        } else {
            value::write_float(out, ruby_float(s).ok_or("is not a valid float")?);
        }
    } else if p.integer.is_match(s) {
        let cleaned: String = s.chars().filter(|c| *c != ',' && *c != '_').collect();
        let (negative, body) = match cleaned.strip_prefix('-') {
            Some(rest) => (true, rest.to_string()),
            None => (
                false,
                cleaned.strip_prefix('+').unwrap_or(&cleaned).to_string(),
            ),
        };
        let (radix, digits) = if let Some(d) = body.strip_prefix("0b") {
            (2, d)
        } else if let Some(d) = body.strip_prefix("0x") {
            (16, d)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..])
        } else {
            (10, body.as_str())
        };
        let magnitude = digits_to_magnitude(digits, radix).map_err(|e| e.to_string())?;
        value::write_bigint(out, negative, &magnitude);
    } else {
        value::write_str(out, s.as_bytes(), Encoding::Utf8);
    }
    Ok(())
}

/// `Float(s.gsub(/[,_]|\.([Ee]|$)/, '\1'))`.
fn ruby_float(s: &str) -> Option<f64> {
    let cleaned: String = s.chars().filter(|c| *c != ',' && *c != '_').collect();
    let cleaned = cleaned.replace(".e", "e").replace(".E", "E");
    let cleaned = cleaned.strip_suffix('.').unwrap_or(&cleaned);
    cleaned.parse().ok()
}

/// Ruby's String#to_i: an optional sign and leading decimal digits
/// (underscores between digits allowed), else 0.
fn ruby_to_i(s: &str) -> Option<i128> {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, s.strip_prefix('+').unwrap_or(s)),
    };
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '_')
        .filter(|c| *c != '_')
        .collect();
    if digits.is_empty() {
        return Some(0);
    }
    digits.parse::<i128>().ok().map(|n| sign * n)
}

/// Ruby's String#to_f for the digit strings the sexagesimal pattern allows.
fn ruby_to_f(s: &str) -> f64 {
    let cleaned: String = s.chars().filter(|c| *c != '_').collect();
    let cleaned = cleaned.strip_suffix('.').unwrap_or(&cleaned);
    cleaned.parse().unwrap_or(0.0)
}
