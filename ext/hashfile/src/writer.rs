//! `Hashfile::Writer`: collects entries for `Hashfile.build`. The Ruby API
//! is in lib/hashfile/writer.rb; these are the native methods.

use std::cell::RefCell;
use std::path::PathBuf;

use hashfile::Builder;
use magnus::{encoding::EncodingCapable, function, method, prelude::*, r_hash::ForEach, Error, RHash, RModule, RString, Ruby, Symbol, Value};

use crate::error::{class_name, to_ruby, CLOSED_ERROR};

#[magnus::wrap(class = "Hashfile::Writer", free_immediately, size)]
pub struct Writer {
    builder: RefCell<Option<Builder>>,
    /// Reused buffer for encoding one value.
    scratch: RefCell<Vec<u8>>,
}

/// What a Ruby String's encoding becomes in the store.
enum Text {
    Utf8,
    Ascii,
    Binary,
}

fn text_kind(ruby: &Ruby, s: RString) -> Option<Text> {
    let index = s.enc_get();
    if index == ruby.utf8_encindex() {
        Some(Text::Utf8)
    } else if index == ruby.usascii_encindex() {
        Some(Text::Ascii)
    } else if index == ruby.ascii8bit_encindex() {
        Some(Text::Binary)
    } else {
        None
    }
}

impl Writer {
    fn new(ruby: &Ruby, opts: RHash) -> Result<Writer, Error> {
        let options = crate::options::build_options(ruby, opts)?;
        let builder = Builder::new(options).map_err(|e| to_ruby(ruby, e))?;
        Ok(Writer { builder: RefCell::new(Some(builder)), scratch: RefCell::new(Vec::new()) })
    }

    fn add_entry(&self, ruby: &Ruby, key: Value, value: Value, dump: Value) -> Result<(), Error> {
        let mut slot = self.builder.try_borrow_mut().map_err(|_| Error::new(ruby.get_inner(&CLOSED_ERROR), "writer is busy"))?;
        let builder = slot.as_mut().ok_or_else(|| Error::new(ruby.get_inner(&CLOSED_ERROR), "writer is finished"))?;
        let (key_bytes, key_utf8): (Vec<u8>, bool) = if let Some(s) = RString::from_value(key) {
            let utf8 = match text_kind(ruby, s) {
                Some(Text::Binary) => false,
                Some(_) => true,
                None => return Err(Error::new(ruby.exception_arg_error(), format!("key {} has encoding {}; keys must be UTF-8, US-ASCII or ASCII-8BIT", s.inspect(), s.enc_get_name()))),
            };
            // SAFETY: copied at once, before any Ruby code runs.
            (unsafe { s.as_slice() }.to_vec(), utf8)
        } else if let Some(sym) = Symbol::from_value(key) {
            (sym.name()?.as_bytes().to_vec(), true)
        } else {
            return Err(Error::new(ruby.exception_type_error(), format!("key must be a String or Symbol, not {}", class_name(key))));
        };
        // The builder stays borrowed while a serializer's dump runs: a
        // dump that adds to this writer gets "writer is busy".
        let mut scratch = self.scratch.try_borrow_mut().map_err(|_| Error::new(ruby.get_inner(&CLOSED_ERROR), "writer is busy"))?;
        let kind = crate::value::store_value(ruby, value, dump, &mut scratch).map_err(|e| e.into_ruby(ruby, &key_bytes))?;
        builder.insert_record(hashfile::Record { key: &key_bytes, key_utf8, value: &scratch, kind });
        Ok(())
    }

    fn add(ruby: &Ruby, rb_self: &Self, key: Value, value: Value, dump: Value) -> Result<(), Error> {
        rb_self.add_entry(ruby, key, value, dump)
    }

    fn add_hash(ruby: &Ruby, rb_self: &Self, hash: RHash, dump: Value) -> Result<(), Error> {
        hash.foreach(|key: Value, value: Value| {
            rb_self.add_entry(ruby, key, value, dump)?;
            Ok(ForEach::Continue)
        })
    }

    fn size(&self) -> usize {
        self.builder.borrow().as_ref().map_or(0, Builder::len)
    }

    /// Builds and publishes the store with the GVL released. Returns the
    /// file's length. The writer is finished afterwards, whatever happens.
    fn finish(ruby: &Ruby, rb_self: &Self, path: String) -> Result<u64, Error> {
        let mut builder = rb_self
            .builder
            .try_borrow_mut()
            .map_err(|_| Error::new(ruby.get_inner(&CLOSED_ERROR), "writer is busy"))?
            .take()
            .ok_or_else(|| Error::new(ruby.get_inner(&CLOSED_ERROR), "writer is finished"))?;
        let path = PathBuf::from(path);
        crate::nogvl::without_gvl(ruby, move || builder.write_file(&path), None)?.map_err(|e| to_ruby(ruby, e))
    }
}

trait EncodingName {
    fn enc_get_name(self) -> String;
}

impl EncodingName for RString {
    fn enc_get_name(self) -> String {
        magnus::encoding::RbEncoding::from(self.enc_get()).name().to_string()
    }
}

pub fn init(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("Writer", ruby.class_object())?;
    class.define_singleton_method("_new", function!(Writer::new, 1))?;
    class.define_method("_add", method!(Writer::add, 3))?;
    class.define_method("_add_hash", method!(Writer::add_hash, 2))?;
    class.define_method("size", method!(Writer::size, 0))?;
    class.define_method("_finish", method!(Writer::finish, 1))?;
    Ok(())
}
