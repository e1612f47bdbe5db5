//! Build and import options from the keyword Hash the Ruby wrappers pass
//! (lib/hashfile.rb fills in every default, so every key is present).

use hashfile::import::{Column, ImportOptions, InputFormat};
use hashfile::{BuildOptions, OnDuplicate};
use magnus::{prelude::*, Error, RHash, Ruby, TryConvert, Value};

fn get<T: TryConvert>(ruby: &Ruby, opts: RHash, name: &str) -> Result<T, Error> {
    opts.aref(ruby.to_symbol(name))
}

fn arg_error(ruby: &Ruby, message: String) -> Error {
    Error::new(ruby.exception_arg_error(), message)
}

/// `keys_per_bucket:`, `load_factor:`, ..., `on_duplicate:`.
pub fn build_options(ruby: &Ruby, opts: RHash) -> Result<BuildOptions, Error> {
    let on_duplicate: String = get(ruby, opts, "on_duplicate")?;
    Ok(BuildOptions {
        keys_per_bucket: get(ruby, opts, "keys_per_bucket")?,
        load_factor: get(ruby, opts, "load_factor")?,
        dense_key_fraction: get(ruby, opts, "dense_key_fraction")?,
        dense_bucket_fraction: get(ruby, opts, "dense_bucket_fraction")?,
        hash_seed: get(ruby, opts, "hash_seed")?,
        seed_block_len: get(ruby, opts, "seed_block_len")?,
        keys_per_part: get(ruby, opts, "keys_per_part")?,
        on_duplicate: OnDuplicate::from_name(&on_duplicate).ok_or_else(|| arg_error(ruby, format!("on_duplicate must be :error, :first or :last, not {on_duplicate:?}")))?,
    })
}

fn column(ruby: &Ruby, opts: RHash, name: &str, default: usize) -> Result<Column, Error> {
    let value: Value = get(ruby, opts, name)?;
    if value.is_nil() {
        Ok(Column::Index(default))
    } else if let Ok(i) = usize::try_convert(value) {
        Ok(Column::Index(i))
    } else {
        Ok(Column::parse(&String::try_convert(value)?))
    }
}

/// `format:` (nil: from each file's extension) and the importer options.
pub fn import_options(ruby: &Ruby, opts: RHash) -> Result<(Option<InputFormat>, ImportOptions), Error> {
    let format: Option<String> = get(ruby, opts, "format")?;
    let format = match format {
        None => None,
        Some(name) => Some(InputFormat::from_name(&name).ok_or_else(|| {
            let names: Vec<_> = InputFormat::NAMES.iter().map(|(n, _)| *n).collect();
            arg_error(ruby, format!("unknown format {name:?}; expected one of: {}", names.join(", ")))
        })?),
    };
    let options = ImportOptions {
        format: format.unwrap_or(InputFormat::JsonObject),
        key_column: column(ruby, opts, "key_column", 0)?,
        value_column: column(ruby, opts, "value_column", 1)?,
        header: get(ruby, opts, "header")?,
        key_field: get(ruby, opts, "key_field")?,
        value_field: get(ruby, opts, "value_field")?,
    };
    Ok((format, options))
}
