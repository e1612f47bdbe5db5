//! `Hashfile.shard_of(key, shards)`: the core's routing of a key to a
//! shard (`hashfile::dataset`), so Ruby routes exactly as every other
//! reader and builder of a dataset does.

use std::num::NonZeroU32;

use hashfile_runtime::options::Language;
use magnus::{function, prelude::*, Error, RHash, RModule, RString, Ruby, Symbol, Value};

use crate::error::to_ruby;
use crate::strings;

pub(crate) fn init(module: RModule) -> Result<(), Error> {
    module.define_module_function("shard_of", function!(shard_of, 2))?;
    module.define_module_function("_history", function!(history, 2))?;
    module.define_module_function("_rollback", function!(rollback, 3))?;
    module.define_module_function("_diff", function!(diff, 4))?;
    module.define_module_function("_patch", function!(patch, 5))?;
    module.define_module_function("_compact", function!(compact, 2))?;
    Ok(())
}

/// `Hashfile._patch(location, upserts, deletes, changes_path, options)`:
/// the runtime's `patch` of a Hash of upserts and an Array of keys to
/// delete, or of a changes file (`changes_path`); a Hash of what was
/// published. Values are converted with the GVL held; the patch is
/// written without it.
fn patch(
    ruby: &Ruby,
    location: String,
    upserts: Option<RHash>,
    deletes: Option<magnus::RArray>,
    changes_path: Option<String>,
    options: Option<RHash>,
) -> Result<Value, Error> {
    let given = crate::options::given(ruby, options)?;
    let info = match changes_path {
        Some(path) => crate::nogvl::without_gvl(
            ruby,
            move || {
                hashfile_runtime::patch_calls::patch_file(&location, &path, &given, Language::Ruby)
            },
            None,
        )?,
        None => {
            let mut changes = hashfile_runtime::dataset::Patch::new();
            let mut scratch = Vec::new();
            if let Some(upserts) = upserts {
                upserts.foreach(|key: Value, value: Value| {
                    let (key, key_utf8) = crate::writer::stored_key(ruby, key)?;
                    scratch.clear();
                    let kind = crate::value::store_value(
                        ruby,
                        value,
                        ruby.qnil().as_value(),
                        &mut scratch,
                    )
                    .map_err(|e| e.into_ruby(ruby, &key))?;
                    changes
                        .upsert(hashfile::Record {
                            key: &key,
                            key_utf8,
                            value: &scratch,
                            kind,
                        })
                        .map_err(|e| to_ruby(ruby, e))?;
                    Ok(magnus::r_hash::ForEach::Continue)
                })?;
            }
            if let Some(deletes) = deletes {
                for key in deletes.into_iter() {
                    let (key, key_utf8) = crate::writer::stored_key(ruby, key)?;
                    changes.delete(&key, key_utf8);
                }
            }
            crate::nogvl::without_gvl(
                ruby,
                move || {
                    hashfile_runtime::patch_calls::patch(&location, changes, &given, Language::Ruby)
                },
                None,
            )?
        }
    }
    .map_err(|e| to_ruby(ruby, e))?;
    crate::reader::info_value(ruby, &info)
}

/// `Hashfile._compact(location, options)`: the runtime's `compact`, run
/// without the GVL.
fn compact(ruby: &Ruby, location: String, options: Option<RHash>) -> Result<Value, Error> {
    let given = crate::options::given(ruby, options)?;
    let info = crate::nogvl::without_gvl(
        ruby,
        move || hashfile_runtime::patch_calls::compact(&location, &given, Language::Ruby),
        None,
    )?
    .map_err(|e| to_ruby(ruby, e))?;
    crate::reader::info_value(ruby, &info)
}

/// `Hashfile._diff(a, b, options, each)`: the runtime's `diff`, calling
/// `each` (a Proc, or nil) with each change's JSON line; returns the
/// summary Hash. The comparing runs on the build pool's threads; the
/// GVL stays with this thread, which calls `each` and looks for an
/// interrupt between blocks of records.
fn diff(
    ruby: &Ruby,
    a: String,
    b: String,
    options: Option<RHash>,
    each: Value,
) -> Result<Value, Error> {
    struct Sink<'r> {
        ruby: &'r Ruby,
        each: Option<magnus::block::Proc>,
        raised: Option<Error>,
    }
    impl hashfile_runtime::diff::DiffSink for Sink<'_> {
        fn line(&mut self, line: &str) -> hashfile::Result<()> {
            if let Some(each) = self.each {
                if let Err(e) = each.call::<_, Value>((self.ruby.str_new(line),)) {
                    self.raised = Some(e);
                    return Err(hashfile::Error::Cancelled);
                }
            }
            Ok(())
        }
        fn between(&mut self) -> hashfile::Result<()> {
            if let Err(e) = self.ruby.thread_check_ints() {
                self.raised = Some(e);
                return Err(hashfile::Error::Cancelled);
            }
            Ok(())
        }
    }
    let given = crate::options::given(ruby, options)?;
    let each = if each.is_nil() {
        None
    } else {
        Some(
            magnus::block::Proc::from_value(each)
                .ok_or_else(|| Error::new(ruby.exception_type_error(), "each must be a Proc"))?,
        )
    };
    let mut sink = Sink {
        ruby,
        each,
        raised: None,
    };
    let result = hashfile_runtime::diff_call::diff_call(&a, &b, &given, Language::Ruby, &mut sink);
    if let Some(e) = sink.raised {
        return Err(e);
    }
    let info = result.map_err(|e| to_ruby(ruby, e))?;
    crate::reader::info_value(ruby, &info)
}

/// `Hashfile._history(location, options)`: the runtime's `history`, an
/// Array of Hashes, newest first. A remote dataset's files are fetched
/// without the GVL.
fn history(ruby: &Ruby, location: String, options: Option<RHash>) -> Result<Value, Error> {
    let given = crate::options::given(ruby, options)?;
    let remote = hashfile_remote::Location::is_remote(&location);
    let info = without_gvl_if(ruby, remote, move || {
        hashfile_runtime::history_calls::history(&location, &given, Language::Ruby)
    })?;
    crate::reader::info_value(ruby, &info)
}

/// `Hashfile._rollback(location, generation_or_nil, options)`: the
/// runtime's `rollback`, a Hash of what was published.
fn rollback(
    ruby: &Ruby,
    location: String,
    generation: Option<String>,
    options: Option<RHash>,
) -> Result<Value, Error> {
    let given = crate::options::given(ruby, options)?;
    let remote = hashfile_remote::Location::is_remote(&location);
    let info = without_gvl_if(ruby, remote, move || {
        hashfile_runtime::history_calls::rollback(
            &location,
            generation.as_deref(),
            &given,
            Language::Ruby,
        )
    })?;
    crate::reader::info_value(ruby, &info)
}

/// Runs `call` without the GVL when `remote` (it waits on the network),
/// else with it.
fn without_gvl_if<R: Send>(
    ruby: &Ruby,
    remote: bool,
    call: impl FnOnce() -> hashfile::Result<R> + Send,
) -> Result<R, Error> {
    let result = if remote {
        hashfile_runtime::reads::remote(&crate::store::Gvl(ruby), call)?
    } else {
        call()
    };
    result.map_err(|e| to_ruby(ruby, e))
}

/// The shard of `key` (a String's bytes, or a Symbol's name, as store keys
/// are looked up) among `shards` (1 to `MAX_SHARDS`).
fn shard_of(ruby: &Ruby, key: Value, shards: Value) -> Result<u32, Error> {
    let name = match (Symbol::from_value(key), RString::from_value(key)) {
        (Some(symbol), _) => strings::symbol_name(symbol),
        (None, Some(string)) => string,
        (None, None) => {
            return Err(Error::new(
                ruby.exception_type_error(),
                format!("key must be a String or Symbol, not {}", class_name(key)),
            ))
        }
    };
    let count = shard_count(ruby, shards)?;
    // SAFETY: the slice is used at once, before any Ruby code can run or
    // allocate.
    let bytes = unsafe { strings::bytes(name) };
    Ok(hashfile::dataset::shard_of(bytes, count))
}

/// A shard count given to Ruby, judged as the `shards` option is (the
/// runtime's `shard_count`).
pub(crate) fn shard_count(ruby: &Ruby, shards: Value) -> Result<NonZeroU32, Error> {
    hashfile_runtime::options::shard_count(&crate::options::arg(shards, 0)?)
        .map_err(|e| to_ruby(ruby, e))
}

/// A value's class name, for messages.
fn class_name(value: Value) -> String {
    value.class().inspect()
}
