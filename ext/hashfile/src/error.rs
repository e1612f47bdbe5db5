//! Errors: Hashfile's exception classes (defined once, in Ruby, in
//! lib/hashfile/errors.rb, and looked up here the first time one is
//! raised), the one function that maps a core error to them, and the
//! helpers every class shares.

use std::any::Any;

use hashfile_runtime::error_class::{classify, Attr, Class};
use magnus::{prelude::*, value::Lazy, Error, ExceptionClass, RClass, RModule, Ruby, Value};

fn class(ruby: &Ruby, name: &str) -> ExceptionClass {
    let module: RModule = ruby
        .class_object()
        .const_get("Hashfile")
        .expect("Hashfile is defined at init");
    // lib/hashfile/native.rb requires errors.rb before it loads this
    // extension, so the classes exist whenever a method can raise.
    module
        .const_get(name)
        .expect("lib/hashfile/errors.rb defines the error classes")
}

/// `Hashfile::Error`, the base of every error this library raises itself.
pub(crate) static ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "Error"));
/// `Hashfile::FormatError`: a bad, corrupt or unsupported file.
pub(crate) static FORMAT_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "FormatError"));
/// `Hashfile::ClosedError`: use of a closed store or finished writer.
pub(crate) static CLOSED_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "ClosedError"));

/// An exception of `class` made by its constructor (`new(message, **attributes)`),
/// or the error the constructor raised.
fn construct(class: ExceptionClass, message: String, attributes: magnus::RHash) -> Error {
    match class.new_instance((message, magnus::KwArgs(attributes))) {
        Ok(exception) => Error::from(exception),
        Err(e) => e,
    }
}

/// Maps a core error to its Ruby exception: the class the runtime decided
/// (`hashfile_runtime::error_class`), looked up by name in `Hashfile`
/// (lib/hashfile/errors.rb) and made by its constructor with the
/// attributes; an operating system error as the matching `Errno::*` (as
/// `File.open` raises), with the path in the message.
pub(crate) fn to_ruby(ruby: &Ruby, error: hashfile::Error) -> Error {
    let raised = classify(&error);
    let message = raised.message;
    match raised.class {
        Class::Argument | Class::UnknownOption => arg_error(ruby, message),
        Class::Type => type_error(ruby, message),
        Class::NoMemory => Error::new(ruby.exception_no_mem_error(), message),
        Class::Os {
            errno: Some(errno),
            path,
        } => {
            let class: RClass = ruby
                .class_object()
                .const_get("SystemCallError")
                .expect("core class");
            match class
                .new_instance((path.unwrap_or_default(), errno))
                .map(magnus::Exception::from_value)
            {
                Ok(Some(exception)) => Error::from(exception),
                Ok(None) => Error::new(ruby.exception_io_error(), message),
                Err(e) => e,
            }
        }
        Class::Os { errno: None, .. } => Error::new(ruby.exception_io_error(), message),
        Class::Own(name) => {
            let attributes = ruby.hash_new();
            for (key, value) in raised.attributes {
                let value = match value {
                    Attr::Nil => ruby.qnil().as_value(),
                    Attr::Text(t) => ruby.into_value(t),
                    Attr::Int(i) => ruby.into_value(i),
                    Attr::Bytes(b) => ruby.str_from_slice(&b).as_value(),
                };
                if let Err(e) = attributes.aset(ruby.to_symbol(key), value) {
                    return e;
                }
            }
            construct(class(ruby, name), message, attributes)
        }
    }
}

/// An `ArgumentError`.
pub(crate) fn arg_error(ruby: &Ruby, message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ruby.exception_arg_error(), message)
}

/// A `TypeError`.
pub(crate) fn type_error(ruby: &Ruby, message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ruby.exception_type_error(), message)
}

/// The class name of a Ruby object, for messages.
pub(crate) fn class_name(value: Value) -> String {
    // SAFETY: the name is copied into an owned String at once.
    unsafe { value.classname() }.into_owned()
}

/// The message a panic carried, if it was a string.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// `Hashfile::Error` for a panic caught before it reached Ruby.
pub(crate) fn internal_error(ruby: &Ruby, panic: &(dyn Any + Send)) -> Error {
    Error::new(
        ruby.get_inner(&ERROR),
        format!("internal error: {}", panic_message(panic)),
    )
}
