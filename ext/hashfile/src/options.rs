//! Options from the keyword Hashes the Ruby wrappers pass, with the core's
//! default for every option left out, and the constants that export those
//! defaults and names to Ruby (`Hashfile::BUILD_DEFAULTS`, `FORMATS`, ...),
//! so that the wrappers and the CLI's help read one source of truth.

use hashfile::import::{Column, ImportOptions, InputFormat};
use hashfile::{BuildOptions, Compression, IndexKind, MemoryLimit, OnDuplicate};
use magnus::{
    prelude::*, r_hash::ForEach, Error, Float, Integer, RArray, RHash, RModule, RString, Ruby,
    Symbol, TryConvert, Value,
};

use crate::error::{arg_error, class_name, type_error};

/// The name of an option key (a Symbol or String).
fn option_name(ruby: &Ruby, key: Value) -> Result<String, Error> {
    if let Some(sym) = Symbol::from_value(key) {
        return Ok(sym.name()?.into_owned());
    }
    RString::from_value(key)
        .map(|s| s.to_string())
        .transpose()?
        .ok_or_else(|| {
            type_error(
                ruby,
                format!("option names are Symbols, not {}", class_name(key)),
            )
        })
}

/// Calls `f` with each option's name and value.
fn each_option(
    ruby: &Ruby,
    opts: RHash,
    mut f: impl FnMut(&str, Value) -> Result<(), Error>,
) -> Result<(), Error> {
    opts.foreach(|key: Value, value: Value| {
        f(&option_name(ruby, key)?, value)?;
        Ok(ForEach::Continue)
    })
}

fn number(ruby: &Ruby, name: &str, value: Value) -> Result<f64, Error> {
    if let Some(f) = Float::from_value(value) {
        return Ok(f.to_f64());
    }
    if Integer::from_value(value).is_some() {
        return f64::try_convert(value);
    }
    Err(type_error(
        ruby,
        format!("{name} must be a number, not {}", class_name(value)),
    ))
}

fn unsigned(ruby: &Ruby, name: &str, value: Value, max: u64) -> Result<u64, Error> {
    let Some(i) = Integer::from_value(value) else {
        return Err(type_error(
            ruby,
            format!("{name} must be an Integer, not {}", class_name(value)),
        ));
    };
    match i.to_u64() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(arg_error(
            ruby,
            format!("{name} must be an Integer from 0 to {max}, got {i}"),
        )),
    }
}

/// `max_value_size:` of `Hashfile.open`: an Integer of bytes, checked by
/// the core (`hashfile::read::check_max_value_size`).
pub fn max_value_size(ruby: &Ruby, value: Value) -> Result<u64, Error> {
    let bytes = unsigned(ruby, "max_value_size", value, u64::MAX)?;
    hashfile::read::check_max_value_size(bytes).map_err(|e| crate::error::to_ruby(ruby, e))
}

/// A name given as a Symbol or a String.
fn name_value(ruby: &Ruby, name: &str, value: Value) -> Result<String, Error> {
    if let Some(sym) = Symbol::from_value(value) {
        return Ok(sym.name()?.into_owned());
    }
    match RString::from_value(value) {
        Some(s) => Ok(s.to_string()?),
        None => Err(type_error(
            ruby,
            format!(
                "{name} must be a Symbol or String, not {}",
                class_name(value)
            ),
        )),
    }
}

/// Build options: the defaults, with each option given replaced.
pub fn build_options(ruby: &Ruby, opts: RHash) -> Result<BuildOptions, Error> {
    // The index layout first: its defaults are where the others start.
    let mut o = match opts.get(ruby.to_symbol("index")) {
        Some(value) => {
            let name = name_value(ruby, "index", value)?;
            BuildOptions::for_index(
                IndexKind::parse(&name).map_err(|e| arg_error(ruby, e.to_string()))?,
            )
        }
        None => BuildOptions::default(),
    };
    each_option(ruby, opts, |name, value| {
        match name {
            "index" => {}
            "keys_per_bucket" => o.keys_per_bucket = number(ruby, name, value)?,
            "load_factor" => o.load_factor = number(ruby, name, value)?,
            "dense_key_fraction" => o.dense_key_fraction = number(ruby, name, value)?,
            "dense_bucket_fraction" => o.dense_bucket_fraction = number(ruby, name, value)?,
            "hash_seed" => o.hash_seed = unsigned(ruby, name, value, u64::MAX)?,
            "seed_block_len" => {
                o.seed_block_len = unsigned(ruby, name, value, u32::MAX as u64)? as u32
            }
            "keys_per_part" => o.keys_per_part = unsigned(ruby, name, value, u64::MAX)?,
            "memory" => {
                o.memory = if let Some(i) = Integer::from_value(value) {
                    MemoryLimit::bytes(i.to_u64().map_err(|_| {
                        arg_error(ruby, format!("memory must be a size in bytes, got {i}"))
                    })?)
                } else {
                    MemoryLimit::parse(&name_value(ruby, name, value)?)
                }
                .map_err(|e| arg_error(ruby, e.to_string()))?;
            }
            "compression" => {
                let given = name_value(ruby, name, value)?;
                o.compression =
                    Compression::parse(&given).map_err(|e| arg_error(ruby, e.to_string()))?;
            }
            "on_duplicate" => {
                let policy = name_value(ruby, name, value)?;
                o.on_duplicate = OnDuplicate::from_name(&policy).ok_or_else(|| {
                    arg_error(
                        ruby,
                        format!(
                            "on_duplicate must be one of {}, not {policy:?}",
                            policy_names()
                        ),
                    )
                })?;
            }
            other => return Err(arg_error(ruby, format!("unknown build option {other}"))),
        }
        Ok(())
    })?;
    Ok(o)
}

/// Every option `remote_options` takes (REMOTE_DEFAULTS has those with a
/// default), as `Hashfile::REMOTE_OPTIONS`: the names every binding uses.
pub use hashfile_remote::OPTION_NAMES as REMOTE_OPTIONS;

/// The names of the options in `opts` that a local location does not
/// take (all but `hashfile_remote::LOCAL_OPTION_NAMES`).
pub fn remote_only_names(opts: RHash) -> Result<Vec<String>, Error> {
    let mut names = Vec::new();
    opts.foreach(|key: Value, _: Value| {
        let name = Symbol::from_value(key).map_or_else(
            || key.to_string(),
            |s| s.name().map(|n| n.into_owned()).unwrap_or_default(),
        );
        if !hashfile_remote::LOCAL_OPTION_NAMES.contains(&name.as_str()) {
            names.push(name);
        }
        Ok(ForEach::Continue)
    })?;
    Ok(names)
}

fn seconds(ruby: &Ruby, name: &str, value: Value) -> Result<std::time::Duration, Error> {
    let s = number(ruby, name, value)?;
    if !(s.is_finite() && s > 0.0 && s <= 86_400.0) {
        return Err(arg_error(
            ruby,
            format!("{name} must be a number of seconds above 0 and at most a day, not {s}"),
        ));
    }
    Ok(std::time::Duration::from_secs_f64(s))
}

/// Longest `reload:` interval: a day. Checking less often than that is
/// not reloading; past it, `Instant` arithmetic could overflow.
pub const MAX_RELOAD_SECONDS: f64 = 86_400.0;

/// `reload: SECONDS` as a Duration: 0 (check on every access) up to
/// [`MAX_RELOAD_SECONDS`]; NaN, infinities, negatives and anything larger
/// are an ArgumentError naming the option.
pub fn reload_interval(ruby: &Ruby, seconds: f64) -> Result<std::time::Duration, Error> {
    match std::time::Duration::try_from_secs_f64(seconds) {
        Ok(every) if seconds <= MAX_RELOAD_SECONDS => Ok(every),
        // Large numbers as Ruby shows them (1.0e+300), not in full.
        _ if seconds.abs() >= 1e16 => Err(arg_error(ruby, format!("reload must be nil or a number of seconds from 0 to {MAX_RELOAD_SECONDS:.0} (a day), not {seconds:e}"))),
        _ => Err(arg_error(ruby, format!("reload must be nil or a number of seconds from 0 to {MAX_RELOAD_SECONDS:.0} (a day), not {seconds}"))),
    }
}

fn boolean(ruby: &Ruby, name: &str, value: Value) -> Result<bool, Error> {
    match value {
        v if v.is_kind_of(ruby.class_true_class()) => Ok(true),
        v if v.is_kind_of(ruby.class_false_class()) => Ok(false),
        v => Err(type_error(
            ruby,
            format!("{name} must be true or false, not {}", class_name(v)),
        )),
    }
}

/// Options of a remote store (`Hashfile.open("https://...", headers:,
/// timeout:, ...)`): the defaults, with each option given replaced.
pub fn remote_options(
    ruby: &Ruby,
    opts: Option<RHash>,
) -> Result<hashfile_remote::RemoteOptions, Error> {
    let mut o = hashfile_remote::RemoteOptions::default();
    let Some(opts) = opts else { return Ok(o) };
    each_option(ruby, opts, |name, value| {
        match name {
            "headers" => {
                let headers = RHash::from_value(value).ok_or_else(|| {
                    type_error(
                        ruby,
                        format!("headers must be a Hash, not {}", class_name(value)),
                    )
                })?;
                headers.foreach(|k: Value, v: Value| {
                    o.headers.push((
                        name_value(ruby, "a header name", k)?,
                        name_value(ruby, "a header value", v)?,
                    ));
                    Ok(ForEach::Continue)
                })?;
            }
            "timeout" => o.timeout = seconds(ruby, name, value)?,
            "connect_timeout" => o.connect_timeout = seconds(ruby, name, value)?,
            "retries" => o.retries = unsigned(ruby, name, value, 100)? as u32,
            "concurrency" => o.concurrency = unsigned(ruby, name, value, 1024)?.max(1) as usize,
            "cache_size" => o.cache.capacity = unsigned(ruby, name, value, u64::MAX)? as usize,
            "block_size" => {
                let len = unsigned(ruby, name, value, 64 << 20)? as usize;
                if len < 512 {
                    return Err(arg_error(
                        ruby,
                        format!("block_size must be at least 512 bytes, not {len}"),
                    ));
                }
                o.cache.block_len = len;
            }
            "prefetch_index" => o.prefetch_index = boolean(ruby, name, value)?,
            "http2" => o.http2_prior_knowledge = boolean(ruby, name, value)?,
            "s3_endpoint" => o.s3_endpoint = Some(name_value(ruby, name, value)?),
            "s3_region" => o.s3_region = Some(name_value(ruby, name, value)?),
            "allow_origins" => {
                let list = RArray::from_value(value).ok_or_else(|| {
                    type_error(
                        ruby,
                        format!(
                            "allow_origins must be an Array of URL prefixes, not {}",
                            class_name(value)
                        ),
                    )
                })?;
                for item in list.into_iter() {
                    o.allow_origins
                        .push(name_value(ruby, "an allowed origin", item)?);
                }
            }
            other => return Err(arg_error(ruby, format!("unknown remote option {other}"))),
        }
        Ok(())
    })?;
    Ok(o)
}

fn policy_names() -> String {
    OnDuplicate::NAMES
        .iter()
        .map(|(n, _)| format!(":{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn column(ruby: &Ruby, name: &str, value: Value) -> Result<Column, Error> {
    if let Some(i) = Integer::from_value(value) {
        return match i.to_u64().ok().and_then(|i| usize::try_from(i).ok()) {
            Some(i) => Ok(Column::Index(i)),
            None => Err(arg_error(
                ruby,
                format!("{name} must be a column name or a 0-based index, got {i}"),
            )),
        };
    }
    if let Some(sym) = Symbol::from_value(value) {
        return Ok(Column::Name(sym.name()?.into_owned()));
    }
    match RString::from_value(value) {
        Some(s) => Ok(Column::parse(&s.to_string()?)),
        None => Err(type_error(
            ruby,
            format!(
                "{name} must be a column name or a 0-based index, not {}",
                class_name(value)
            ),
        )),
    }
}

/// A CSV/TSV character option: one ASCII character as a String, or nil
/// for none (the core checks which characters may be used).
fn character(ruby: &Ruby, name: &str, value: Value) -> Result<Option<u8>, Error> {
    if value.is_nil() {
        return Ok(None);
    }
    let Some(s) = RString::from_value(value) else {
        return Err(type_error(
            ruby,
            format!(
                "{name} must be a one-character String, not {}",
                class_name(value)
            ),
        ));
    };
    // SAFETY: the bytes are copied out before any other Ruby call.
    match unsafe { s.as_slice() } {
        [c] if c.is_ascii() => Ok(Some(*c)),
        other => Err(arg_error(
            ruby,
            format!(
                "{name} must be one ASCII character, got {:?}",
                String::from_utf8_lossy(other)
            ),
        )),
    }
}

/// `format:` (nil: from each file's extension) and the importer options:
/// the defaults, with each option given replaced.
pub fn import_options(
    ruby: &Ruby,
    opts: RHash,
) -> Result<(Option<InputFormat>, ImportOptions), Error> {
    let mut format = None;
    let mut o = ImportOptions::new(InputFormat::JsonObject);
    each_option(ruby, opts, |name, value| {
        match name {
            "format" if value.is_nil() => {}
            "format" => {
                let given = name_value(ruby, name, value)?;
                format = Some(InputFormat::from_name(&given).ok_or_else(|| {
                    arg_error(
                        ruby,
                        format!(
                            "unknown format {given:?}; expected one of: {}",
                            InputFormat::names_list()
                        ),
                    )
                })?);
            }
            "key_column" => o.key_column = column(ruby, name, value)?,
            "value_column" => o.value_column = column(ruby, name, value)?,
            "header" => o.header = value.to_bool(),
            "quote" => o.quote = value.to_bool(),
            "col_sep" => o.col_sep = character(ruby, name, value)?,
            "comment" => o.comment = character(ruby, name, value)?,
            "key_field" => o.key_field = name_value(ruby, name, value)?,
            "value_field" => o.value_field = name_value(ruby, name, value)?,
            "records_at" if value.is_nil() => o.records_at = None,
            "records_at" => o.records_at = Some(name_value(ruby, name, value)?),
            other => return Err(arg_error(ruby, format!("unknown import option {other}"))),
        }
        // nil is the default, given or not.
        if let Some((known, ..)) = hashfile::import::OPTION_FORMATS
            .iter()
            .find(|(known, ..)| *known == name && !value.is_nil())
        {
            o.given.push(known);
        }
        Ok(())
    })?;
    Ok((format, o))
}

/// A frozen Hash of Symbol keys.
fn frozen_hash(
    ruby: &Ruby,
    pairs: impl IntoIterator<Item = (&'static str, Value)>,
) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    for (k, v) in pairs {
        hash.aset(ruby.to_symbol(k), v)?;
    }
    hash.freeze();
    Ok(hash)
}

/// Defines the constants the Ruby wrappers, the CLI and users read:
/// `BUILD_DEFAULTS`, `IMPORT_DEFAULTS`, `REMOTE_DEFAULTS`, `FORMATS`,
/// `FORMAT_EXTENSIONS`, `ON_DUPLICATE`, `MAX_DEPTH` and `MAX_INTEGER_DIGITS`.
pub fn init(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let d = BuildOptions::default();
    let build = frozen_hash(
        ruby,
        [
            ("keys_per_bucket", ruby.into_value(d.keys_per_bucket)),
            ("load_factor", ruby.into_value(d.load_factor)),
            ("dense_key_fraction", ruby.into_value(d.dense_key_fraction)),
            (
                "dense_bucket_fraction",
                ruby.into_value(d.dense_bucket_fraction),
            ),
            ("hash_seed", ruby.into_value(d.hash_seed)),
            ("seed_block_len", ruby.into_value(d.seed_block_len)),
            ("keys_per_part", ruby.into_value(d.keys_per_part)),
            (
                "on_duplicate",
                ruby.to_symbol(d.on_duplicate.name()).as_value(),
            ),
            ("index", ruby.to_symbol(d.index.name()).as_value()),
            (
                "compression",
                ruby.to_symbol(d.compression.name()).as_value(),
            ),
            ("memory", ruby.to_symbol(d.memory.name()).as_value()),
        ],
    )?;
    module.const_set("BUILD_DEFAULTS", build)?;

    let i = ImportOptions::new(InputFormat::JsonObject);
    let index = |c: &Column| match c {
        Column::Index(i) => ruby.into_value(*i),
        Column::Name(n) => ruby.into_value(n.as_str()),
        Column::Row => ruby.into_value(hashfile::import::WHOLE),
    };
    let frozen_str = |s: &str| {
        let s = ruby.str_new(s);
        s.freeze();
        s.as_value()
    };
    let import = frozen_hash(
        ruby,
        [
            ("key_column", index(&i.key_column)),
            ("value_column", index(&i.value_column)),
            ("header", ruby.into_value(i.header)),
            ("quote", ruby.into_value(i.quote)),
            (
                "col_sep",
                i.col_sep.map_or_else(
                    || ruby.qnil().as_value(),
                    |c| frozen_str(&(c as char).to_string()),
                ),
            ),
            (
                "comment",
                i.comment.map_or_else(
                    || ruby.qnil().as_value(),
                    |c| frozen_str(&(c as char).to_string()),
                ),
            ),
            ("key_field", frozen_str(&i.key_field)),
            ("value_field", frozen_str(&i.value_field)),
            (
                "records_at",
                i.records_at
                    .as_deref()
                    .map_or_else(|| ruby.qnil().as_value(), frozen_str),
            ),
        ],
    )?;
    module.const_set("IMPORT_DEFAULTS", import)?;

    let formats = ruby.ary_from_iter(InputFormat::NAMES.iter().map(|(n, _)| frozen_str(n)));
    formats.freeze();
    module.const_set("FORMATS", formats)?;
    let extensions = ruby.hash_new();
    for (ext, format) in InputFormat::EXTENSIONS {
        extensions.aset(frozen_str(ext), frozen_str(format.name()))?;
    }
    extensions.freeze();
    module.const_set("FORMAT_EXTENSIONS", extensions)?;
    let policies = ruby.ary_from_iter(OnDuplicate::NAMES.iter().map(|(n, _)| ruby.to_symbol(n)));
    policies.freeze();
    module.const_set("ON_DUPLICATE", policies)?;
    let r = hashfile_remote::RemoteOptions::default();
    let remote = frozen_hash(
        ruby,
        [
            ("timeout", ruby.into_value(r.timeout.as_secs_f64())),
            (
                "connect_timeout",
                ruby.into_value(r.connect_timeout.as_secs_f64()),
            ),
            ("retries", ruby.into_value(r.retries)),
            ("concurrency", ruby.into_value(r.concurrency)),
            ("cache_size", ruby.into_value(r.cache.capacity)),
            ("block_size", ruby.into_value(r.cache.block_len)),
            ("prefetch_index", ruby.into_value(r.prefetch_index)),
            ("http2", ruby.into_value(r.http2_prior_knowledge)),
        ],
    )?;
    module.const_set("REMOTE_DEFAULTS", remote)?;
    let names = ruby.ary_from_iter(REMOTE_OPTIONS.iter().map(|n| ruby.to_symbol(n)));
    names.freeze();
    module.const_set("REMOTE_OPTIONS", names)?;
    module.const_set("MAX_DEPTH", hashfile::value::MAX_DEPTH)?;
    module.const_set(
        "DEFAULT_MAX_VALUE_SIZE",
        hashfile::read::DEFAULT_MAX_VALUE_SIZE,
    )?;
    module.const_set("MAX_INTEGER_DIGITS", hashfile::import::MAX_INTEGER_DIGITS)?;
    Ok(())
}
