//! Ruby binding for the `hashfile` crate. Thin by design: argument
//! conversion, error mapping, GVL release. Logic belongs in the core crate.

mod bitpacking;
mod build;
mod error;
mod nogvl;
mod options;
mod reader;
mod value;
mod writer;

use magnus::{Error, Ruby};

#[magnus::init(name = "hashfile_ruby")]
fn init(ruby: &Ruby) -> Result<(), Error> {
    let module = ruby.define_module("Hashfile")?;
    error::init(ruby, module)?;
    reader::init(ruby, module)?;
    writer::init(ruby, module)?;
    build::init(module)?;
    bitpacking::init(ruby)?;
    Ok(())
}
