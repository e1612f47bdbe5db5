//! Hashfile's Ruby exception classes, defined once here, and the one
//! function that maps a core error to them.

use magnus::{prelude::*, value::Lazy, Error, ExceptionClass, RClass, RModule, Ruby, Value};

fn class(ruby: &Ruby, name: &str) -> ExceptionClass {
    let module: RModule = ruby.class_object().const_get("Hashfile").expect("Hashfile is defined at init");
    module.const_get(name).expect("error classes are defined at init")
}

/// `Hashfile::Error`, the base of every error this library raises itself.
pub static ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "Error"));
/// `Hashfile::FormatError`: a bad, corrupt or unsupported file.
pub static FORMAT_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "FormatError"));
/// `Hashfile::ChecksumError < FormatError`: from `verify`.
pub static CHECKSUM_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "ChecksumError"));
/// `Hashfile::DuplicateKeyError`: the same key twice in a build.
pub static DUPLICATE_KEY_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "DuplicateKeyError"));
/// `Hashfile::ParseError`: an input file that cannot be imported.
pub static PARSE_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "ParseError"));
/// `Hashfile::ClosedError`: use of a closed store or finished writer.
pub static CLOSED_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "ClosedError"));

pub fn init(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let base = module.define_error("Error", ruby.exception_standard_error())?;
    let format = module.define_error("FormatError", base)?;
    module.define_error("ChecksumError", format)?;
    module.define_error("DuplicateKeyError", base)?;
    module.define_error("ClosedError", base)?;
    module.define_error("ParseError", base)?;
    Ok(())
}

/// The class name of a Ruby object, for messages.
pub fn class_name(value: Value) -> String {
    // SAFETY: the name is copied into an owned String at once.
    unsafe { value.classname() }.into_owned()
}

/// Maps a core error to its Ruby exception. I/O errors become the matching
/// `Errno::*` (as `File.open` raises), with the path in the message.
pub fn to_ruby(ruby: &Ruby, error: hashfile::Error) -> Error {
    use hashfile::Error as E;
    match error {
        E::Io { ref path, ref source } => {
            let message = path.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
            match source.raw_os_error() {
                Some(errno) => {
                    let class: RClass = ruby.class_object().const_get("SystemCallError").expect("core class");
                    match class.new_instance((message, errno)).map(magnus::Exception::from_value) {
                        Ok(Some(exception)) => Error::from(exception),
                        Ok(None) => Error::new(ruby.exception_io_error(), error.to_string()),
                        Err(e) => e,
                    }
                }
                None => Error::new(ruby.exception_io_error(), error.to_string()),
            }
        }
        E::NotAStore { .. } | E::Version { .. } | E::UnsupportedFeatures { .. } | E::Truncated { .. } | E::Corrupt { .. } => Error::new(ruby.get_inner(&FORMAT_ERROR), error.to_string()),
        E::Checksum { .. } => Error::new(ruby.get_inner(&CHECKSUM_ERROR), error.to_string()),
        E::Parse { .. } => Error::new(ruby.get_inner(&PARSE_ERROR), error.to_string()),
        E::DuplicateKey { ref key, .. } => {
            // DuplicateKeyError#key gives the key back as a String.
            let raised = ruby.get_inner(&DUPLICATE_KEY_ERROR).new_instance((error.to_string(),)).and_then(|exception| {
                let _: Value = exception.funcall("instance_variable_set", ("@key", ruby.str_from_slice(key)))?;
                Ok(exception)
            });
            match raised {
                Ok(exception) => Error::from(exception),
                Err(e) => e,
            }
        }
        E::InvalidOption { .. } => Error::new(ruby.exception_arg_error(), error.to_string()),
        other => Error::new(ruby.get_inner(&ERROR), other.to_string()),
    }
}
