//! Keyword options from Ruby, converted into the runtime's `Arg`s: the
//! runtime's table (`hashfile_runtime::options`) judges them, names,
//! types, ranges and defaults, as it does every binding's. And the
//! constants that export that table to Ruby (`Hashfile::OPTIONS`,
//! `BUILD_DEFAULTS`, ...), which the wrappers, the CLI's help and users
//! read.

use hashfile::import::InputFormat;
use hashfile::OnDuplicate;
use hashfile_runtime::options::{table, Arg, Call, Group, Kind, Language, Spec};
use magnus::{
    prelude::*, r_hash::ForEach, Error, Float, Integer, RArray, RHash, RModule, RString, Ruby,
    Symbol, Value,
};

use crate::error::{class_name, type_error};

/// Containers inside an option nested deeper than this are refused: no
/// option takes more than a list of texts or a map of headers.
const MAX_NESTING: usize = 4;

/// The options in `opts` (nil: none), each converted.
pub(crate) fn given(ruby: &Ruby, opts: Option<RHash>) -> Result<Vec<(String, Arg)>, Error> {
    let mut out = Vec::new();
    let Some(opts) = opts else { return Ok(out) };
    opts.foreach(|key: Value, value: Value| {
        let name = match (Symbol::from_value(key), RString::from_value(key)) {
            (Some(sym), _) => sym.name()?.into_owned(),
            (_, Some(s)) => s.to_string()?,
            _ => {
                return Err(type_error(
                    ruby,
                    format!("option names are Symbols, not {}", class_name(key)),
                ))
            }
        };
        out.push((name, arg(value, 0)?));
        Ok(ForEach::Continue)
    })?;
    Ok(out)
}

/// A Ruby object as an `Arg`, without judging it.
pub(crate) fn arg(value: Value, depth: usize) -> Result<Arg, Error> {
    if value.is_nil() {
        return Ok(Arg::Nil);
    }
    // true and false by identity: a lookup's keywords come here per call.
    let raw = magnus::rb_sys::AsRawValue::as_raw(value);
    if raw == rb_sys::Qtrue as rb_sys::VALUE {
        return Ok(Arg::Bool(true));
    }
    if raw == rb_sys::Qfalse as rb_sys::VALUE {
        return Ok(Arg::Bool(false));
    }
    if let Some(i) = Integer::from_value(value) {
        return Ok(match i.to_i64() {
            Ok(small) => Arg::Int(small.into()),
            Err(_) => match i.to_string().parse::<i128>() {
                Ok(wide) => Arg::Int(wide),
                Err(_) => Arg::BigInt(i.to_string()),
            },
        });
    }
    if let Some(f) = Float::from_value(value) {
        return Ok(Arg::Float(f.to_f64()));
    }
    if let Some(sym) = Symbol::from_value(value) {
        return Ok(Arg::Symbol(sym.name()?.into_owned()));
    }
    if let Some(s) = RString::from_value(value) {
        return Ok(Arg::Text(s.to_string()?));
    }
    if depth < MAX_NESTING {
        if let Some(list) = RArray::from_value(value) {
            return list
                .into_iter()
                .map(|item| arg(item, depth + 1))
                .collect::<Result<_, _>>()
                .map(Arg::List);
        }
        if let Some(map) = RHash::from_value(value) {
            let mut pairs = Vec::new();
            map.foreach(|k: Value, v: Value| {
                pairs.push((arg(k, depth + 1)?, arg(v, depth + 1)?));
                Ok(ForEach::Continue)
            })?;
            return Ok(Arg::Map(pairs));
        }
    }
    Ok(Arg::Object(class_name(value)))
}

/// A table default as Ruby shows it: names (`:classic`, `:auto`) as
/// Symbols, as the options take them.
fn default_value(ruby: &Ruby, spec: &Spec) -> Value {
    match (spec.default(), spec.kind) {
        (Arg::Text(t), Kind::Name | Kind::Size) => ruby.to_symbol(t).as_value(),
        (value, _) => ruby_value(ruby, &value),
    }
}

fn ruby_value(ruby: &Ruby, value: &Arg) -> Value {
    match value {
        Arg::Nil | Arg::Object(_) | Arg::Map(_) => ruby.qnil().as_value(),
        Arg::Bool(b) => ruby.into_value(*b),
        Arg::Int(i) => ruby.into_value(*i),
        Arg::BigInt(digits) => ruby.into_value(digits.as_str()),
        Arg::Float(f) => ruby.into_value(*f),
        Arg::Text(t) => frozen_str(ruby, t),
        Arg::Symbol(s) => ruby.to_symbol(s).as_value(),
        Arg::List(items) => {
            let list = ruby.ary_from_iter(items.iter().map(|item| ruby_value(ruby, item)));
            list.freeze();
            list.as_value()
        }
    }
}

fn frozen_str(ruby: &Ruby, s: &str) -> Value {
    let s = ruby.str_new(s);
    s.freeze();
    s.as_value()
}

/// A frozen Hash of the options of `group` that have a default.
fn defaults(ruby: &Ruby, group: Group, all: bool) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    for spec in table::OPTIONS.iter().filter(|s| s.group == group) {
        if spec.applies_to(Language::Ruby) && (all || !spec.default().is_nil()) {
            hash.aset(ruby.to_symbol(spec.name), default_value(ruby, spec))?;
        }
    }
    hash.freeze();
    Ok(hash)
}

/// Defines the constants the Ruby wrappers, the CLI and users read, all
/// from the runtime's table: `OPTIONS` (each call's option names),
/// `BUILD_DEFAULTS`, `IMPORT_DEFAULTS`, `REMOTE_DEFAULTS`,
/// `REMOTE_OPTIONS`, `FORMATS`, `FORMAT_EXTENSIONS`, `ON_DUPLICATE`,
/// `MAX_DEPTH`, `DEFAULT_MAX_VALUE_SIZE` and `MAX_INTEGER_DIGITS`.
pub(crate) fn init(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let calls = ruby.hash_new();
    for call in Call::ALL {
        let names = ruby.ary_from_iter(
            table::names(call, Language::Ruby)
                .into_iter()
                .map(|n| ruby.to_symbol(n)),
        );
        names.freeze();
        calls.aset(ruby.to_symbol(call.name()), names)?;
    }
    calls.freeze();
    module.const_set("OPTIONS", calls)?;
    module.const_set("BUILD_DEFAULTS", defaults(ruby, Group::Build, true)?)?;
    module.const_set("IMPORT_DEFAULTS", defaults(ruby, Group::Import, true)?)?;
    module.const_set("REMOTE_DEFAULTS", defaults(ruby, Group::Remote, false)?)?;
    let remote = ruby.ary_from_iter(
        table::OPTIONS
            .iter()
            .filter(|s| s.group == Group::Remote)
            .map(|s| ruby.to_symbol(s.name)),
    );
    remote.freeze();
    module.const_set("REMOTE_OPTIONS", remote)?;

    let formats = ruby.ary_from_iter(InputFormat::NAMES.iter().map(|(n, _)| frozen_str(ruby, n)));
    formats.freeze();
    module.const_set("FORMATS", formats)?;
    let extensions = ruby.hash_new();
    for (ext, format) in InputFormat::EXTENSIONS {
        extensions.aset(frozen_str(ruby, ext), frozen_str(ruby, format.name()))?;
    }
    extensions.freeze();
    module.const_set("FORMAT_EXTENSIONS", extensions)?;
    let policies = ruby.ary_from_iter(OnDuplicate::NAMES.iter().map(|(n, _)| ruby.to_symbol(n)));
    policies.freeze();
    module.const_set("ON_DUPLICATE", policies)?;
    module.const_set("MAX_DEPTH", hashfile::value::MAX_DEPTH)?;
    module.const_set(
        "DEFAULT_MAX_VALUE_SIZE",
        hashfile::read::DEFAULT_MAX_VALUE_SIZE,
    )?;
    module.const_set("MAX_INTEGER_DIGITS", hashfile::import::MAX_INTEGER_DIGITS)?;
    Ok(())
}
