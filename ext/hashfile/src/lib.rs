//! Ruby binding for the `hashfile` crates. Thin by design: argument
//! conversion, error mapping, GVL release. Logic belongs in the core crate;
//! what an open store does over time (which store, refresh, the swap) in
//! `hashfile_runtime`.
//!
//! One file per Ruby class or module function group (`reader`, `writer`,
//! `build`, `bitpacking`), each with its own `init`; the rest are helpers:
//! `error` (the exception mapping), `options` (keyword options converted for the
//! runtime's table, and the constants made from it), `value` (typed values both ways), `strings`
//! (String constructors and encodings), `store` (keys out of Ruby
//! Strings, and `Gvl`: how the runtime's reads release the GVL),
//! `nogvl`, `typed_data`.
#![warn(unreachable_pub)]

mod bitpacking;
mod build;
mod dataset;
mod error;
mod memo;
mod nogvl;
mod options;
mod reader;
mod store;
mod strings;
mod typed_data;
mod value;
mod writer;

use magnus::{Error, Ruby};

#[magnus::init(name = "hashfile_ruby")]
fn init(ruby: &Ruby) -> Result<(), Error> {
    let module = ruby.define_module("Hashfile")?;
    options::init(ruby, module)?;
    reader::init(ruby, module)?;
    writer::init(ruby, module)?;
    build::init(module)?;
    dataset::init(module)?;
    bitpacking::init(ruby)?;
    Ok(())
}
