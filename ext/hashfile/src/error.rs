//! Errors: Hashfile's exception classes (defined once, in Ruby, in
//! lib/hashfile/errors.rb, and looked up here the first time one is
//! raised), the one function that maps a core error to them, and the
//! helpers every class shares.

use std::any::Any;

use magnus::{
    kwargs, prelude::*, value::Lazy, Error, ExceptionClass, RClass, RModule, Ruby, Value,
};

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
pub static ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "Error"));
/// `Hashfile::FormatError`: a bad, corrupt or unsupported file.
pub static FORMAT_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "FormatError"));
/// `Hashfile::UnsupportedError < FormatError`: a store this library cannot read.
static UNSUPPORTED_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "UnsupportedError"));
/// `Hashfile::DatasetError < FormatError`: a dataset's manifest or shard.
static DATASET_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "DatasetError"));
/// `Hashfile::ChecksumError < FormatError`: from `verify`.
static CHECKSUM_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "ChecksumError"));
/// `Hashfile::DuplicateKeyError`: the same key twice in a build.
static DUPLICATE_KEY_ERROR: Lazy<ExceptionClass> =
    Lazy::new(|ruby| class(ruby, "DuplicateKeyError"));
/// `Hashfile::ParseError`: an input file that cannot be imported.
static PARSE_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "ParseError"));
/// `Hashfile::LimitError`: a build past a limit of the format or of one build.
static LIMIT_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "LimitError"));
/// `Hashfile::StaleError`: the store file changed under an open reader.
static STALE_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "StaleError"));
/// `Hashfile::RemoteError` and its subclasses: a remote store that could
/// not be read.
static REMOTE_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "RemoteError"));
static REMOTE_NOT_FOUND_ERROR: Lazy<ExceptionClass> =
    Lazy::new(|ruby| class(ruby, "RemoteNotFoundError"));
static REMOTE_ACCESS_ERROR: Lazy<ExceptionClass> =
    Lazy::new(|ruby| class(ruby, "RemoteAccessError"));
static REMOTE_TIMEOUT_ERROR: Lazy<ExceptionClass> =
    Lazy::new(|ruby| class(ruby, "RemoteTimeoutError"));
static REMOTE_CONNECTION_ERROR: Lazy<ExceptionClass> =
    Lazy::new(|ruby| class(ruby, "RemoteConnectionError"));
static REMOTE_SERVER_ERROR: Lazy<ExceptionClass> =
    Lazy::new(|ruby| class(ruby, "RemoteServerError"));
static REMOTE_PROTOCOL_ERROR: Lazy<ExceptionClass> =
    Lazy::new(|ruby| class(ruby, "RemoteProtocolError"));
/// `Hashfile::UnsafeLinkError`: a build's output is another user's link.
static UNSAFE_LINK_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "UnsafeLinkError"));
/// `Hashfile::ClosedError`: use of a closed store or finished writer.
pub static CLOSED_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| class(ruby, "ClosedError"));

/// An exception of `class` made by its constructor (`new(message, **attributes)`),
/// or the error the constructor raised.
fn construct(class: ExceptionClass, message: String, attributes: magnus::KwArgs) -> Error {
    match class.new_instance((message, attributes)) {
        Ok(exception) => Error::from(exception),
        Err(e) => e,
    }
}

/// Maps a core error to its Ruby exception. I/O errors become the matching
/// `Errno::*` (as `File.open` raises), with the path in the message.
pub fn to_ruby(ruby: &Ruby, error: hashfile::Error) -> Error {
    use hashfile::Error as E;
    let message = error.to_string();
    let path_of =
        |path: &Option<std::path::PathBuf>| path.as_ref().map(|p| p.display().to_string());
    match error {
        E::Io {
            ref path,
            ref source,
        } if hashfile_remote::RemoteError::find(source).is_some() => {
            use hashfile_remote::RemoteErrorKind as K;
            let remote = hashfile_remote::RemoteError::find(source).expect("checked by the guard");
            let class = match remote.kind {
                K::Changed => ruby.get_inner(&STALE_ERROR),
                K::NotFound => ruby.get_inner(&REMOTE_NOT_FOUND_ERROR),
                K::Denied => ruby.get_inner(&REMOTE_ACCESS_ERROR),
                K::Timeout => ruby.get_inner(&REMOTE_TIMEOUT_ERROR),
                K::Connection => ruby.get_inner(&REMOTE_CONNECTION_ERROR),
                K::Server => ruby.get_inner(&REMOTE_SERVER_ERROR),
                K::Protocol => ruby.get_inner(&REMOTE_PROTOCOL_ERROR),
                K::Invalid => return arg_error(ruby, message),
                K::OutOfMemory => return Error::new(ruby.exception_no_mem_error(), message),
                _ => ruby.get_inner(&REMOTE_ERROR),
            };
            if remote.kind == K::Changed {
                return construct(class, message, kwargs!(ruby, "path" => path_of(path)));
            }
            construct(
                class,
                message,
                kwargs!(ruby, "url" => path_of(path), "status" => remote.status),
            )
        }
        E::Io {
            ref path,
            ref source,
        } => {
            let path = path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            match source.raw_os_error() {
                Some(errno) => {
                    let class: RClass = ruby
                        .class_object()
                        .const_get("SystemCallError")
                        .expect("core class");
                    match class
                        .new_instance((path, errno))
                        .map(magnus::Exception::from_value)
                    {
                        Ok(Some(exception)) => Error::from(exception),
                        Ok(None) => Error::new(ruby.exception_io_error(), message),
                        Err(e) => e,
                    }
                }
                None => Error::new(ruby.exception_io_error(), message),
            }
        }
        E::Changed { ref path } => construct(
            ruby.get_inner(&STALE_ERROR),
            message,
            kwargs!(ruby, "path" => path_of(path)),
        ),
        E::NotAStore { ref path, .. }
        | E::Truncated { ref path, .. }
        | E::Corrupt { ref path, .. } => construct(
            ruby.get_inner(&FORMAT_ERROR),
            message,
            kwargs!(ruby, "path" => path_of(path)),
        ),
        E::Version { ref path, .. } | E::UnsupportedFeatures { ref path, .. } => construct(
            ruby.get_inner(&UNSUPPORTED_ERROR),
            message,
            kwargs!(ruby, "path" => path_of(path)),
        ),
        E::Checksum {
            ref path, section, ..
        } => construct(
            ruby.get_inner(&CHECKSUM_ERROR),
            message,
            kwargs!(ruby, "path" => path_of(path), "section" => section),
        ),
        E::DuplicateKey {
            ref key, others, ..
        } => construct(
            ruby.get_inner(&DUPLICATE_KEY_ERROR),
            message,
            kwargs!(ruby, "key" => ruby.str_from_slice(key), "others" => others),
        ),
        E::Parse {
            ref input,
            position,
            ..
        } => {
            let (line, column) = match position {
                hashfile::Position::Line { line, column } => (Some(line), column),
                _ => (None, None),
            };
            construct(
                ruby.get_inner(&PARSE_ERROR),
                message,
                kwargs!(ruby, "input" => input.as_str(), "line" => line, "column" => column),
            )
        }
        E::Limit { .. } | E::ValueTooLarge { .. } => {
            Error::new(ruby.get_inner(&LIMIT_ERROR), message)
        }
        // What a store or server claimed could not be allocated: Ruby's
        // own NoMemoryError, as a String of that size would raise.
        E::OutOfMemory { .. } => Error::new(ruby.exception_no_mem_error(), message),
        E::InvalidOption { .. } | E::UnknownOption { .. } => arg_error(ruby, message),
        E::OptionType { .. } => type_error(ruby, message),
        E::Closed { .. } => Error::new(ruby.get_inner(&CLOSED_ERROR), message),
        E::Dataset { ref path, .. } => construct(
            ruby.get_inner(&DATASET_ERROR),
            message,
            kwargs!(ruby, "path" => path_of(path)),
        ),
        E::UnsafeLink {
            ref link, owner, ..
        } => construct(
            ruby.get_inner(&UNSAFE_LINK_ERROR),
            message,
            kwargs!(ruby, "path" => link.display().to_string(), "owner" => owner),
        ),
        _ => Error::new(ruby.get_inner(&ERROR), message),
    }
}

/// An `ArgumentError`.
pub fn arg_error(ruby: &Ruby, message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ruby.exception_arg_error(), message)
}

/// A `TypeError`.
pub fn type_error(ruby: &Ruby, message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ruby.exception_type_error(), message)
}

/// The class name of a Ruby object, for messages.
pub fn class_name(value: Value) -> String {
    // SAFETY: the name is copied into an owned String at once.
    unsafe { value.classname() }.into_owned()
}

/// The message a panic carried, if it was a string.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// `Hashfile::Error` for a panic caught before it reached Ruby.
pub fn internal_error(ruby: &Ruby, panic: &(dyn Any + Send)) -> Error {
    Error::new(
        ruby.get_inner(&ERROR),
        format!("internal error: {}", panic_message(panic)),
    )
}
