//! Which class every error is raised as, decided once for every binding:
//! one of Hashfile's own classes (the same names in Ruby, Python and the
//! JVM: `FormatError`, `RemoteNotFoundError`, ...) with its attributes, or
//! a kind each language has a class of its own for (an argument error, a
//! type error, out of memory, an operating system error). A binding maps
//! [`Class`] to its classes and [`Attr`]s to its values, nothing else.

use hashfile::Error;
use hashfile_remote::{RemoteError, RemoteErrorKind};

/// The class an error is raised as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Class {
    /// One of Hashfile's own classes, by name (`"FormatError"`).
    Own(&'static str),
    /// A value out of range or contradicting another: Ruby's
    /// ArgumentError, Python's ValueError.
    Argument,
    /// A value of the wrong type: TypeError in both.
    Type,
    /// An option no call of this kind takes: Ruby's ArgumentError (an
    /// unknown keyword), Python's TypeError (an unexpected keyword).
    UnknownOption,
    /// An allocation the allocator refused: NoMemoryError, MemoryError.
    NoMemory,
    /// An operating system error: `Errno::*` in Ruby, `OSError`'s
    /// subclass in Python, with the path it concerned.
    Os {
        /// The error number, if there is one.
        errno: Option<i32>,
        /// The file.
        path: Option<String>,
    },
}

/// An attribute of an exception of Hashfile's own classes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attr {
    /// Nothing known.
    Nil,
    /// Text.
    Text(String),
    /// A number.
    Int(u64),
    /// Bytes (a key, which need not be text).
    Bytes(Vec<u8>),
}

/// An error as a binding raises it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raised {
    /// Its class.
    pub class: Class,
    /// Its message: the same in every language.
    pub message: String,
    /// The attributes its class's constructor takes by name.
    pub attributes: Vec<(&'static str, Attr)>,
}

fn text(path: &Option<std::path::PathBuf>) -> Attr {
    path.as_ref()
        .map_or(Attr::Nil, |p| Attr::Text(p.display().to_string()))
}

fn number(n: Option<impl Into<u64>>) -> Attr {
    n.map_or(Attr::Nil, |n| Attr::Int(n.into()))
}

/// How `error` is raised.
pub fn classify(error: &Error) -> Raised {
    let message = error.to_string();
    let own = |name, attributes| (Class::Own(name), attributes);
    let (class, attributes) = match error {
        Error::Io { path, source } => match RemoteError::find(source) {
            Some(remote) => {
                use RemoteErrorKind as K;
                let at = vec![("url", text(path)), ("status", number(remote.status))];
                match remote.kind {
                    K::Changed => own("StaleError", vec![("path", text(path))]),
                    K::NotFound => own("RemoteNotFoundError", at),
                    K::Denied => own("RemoteAccessError", at),
                    K::Timeout => own("RemoteTimeoutError", at),
                    K::Connection => own("RemoteConnectionError", at),
                    K::Server => own("RemoteServerError", at),
                    K::Protocol => own("RemoteProtocolError", at),
                    K::Invalid => (Class::Argument, Vec::new()),
                    K::OutOfMemory => (Class::NoMemory, Vec::new()),
                    _ => own("RemoteError", at),
                }
            }
            None => (
                Class::Os {
                    errno: source.raw_os_error(),
                    path: path.as_ref().map(|p| p.display().to_string()),
                },
                Vec::new(),
            ),
        },
        Error::Changed { path } => own("StaleError", vec![("path", text(path))]),
        Error::NotAStore { path, .. }
        | Error::Truncated { path, .. }
        | Error::Corrupt { path, .. } => own("FormatError", vec![("path", text(path))]),
        Error::Version { path, .. } | Error::UnsupportedFeatures { path, .. } => {
            own("UnsupportedError", vec![("path", text(path))])
        }
        Error::Checksum { path, section, .. } => own(
            "ChecksumError",
            vec![
                ("path", text(path)),
                ("section", Attr::Text((*section).into())),
            ],
        ),
        Error::DuplicateKey { key, others, .. } => own(
            "DuplicateKeyError",
            vec![
                ("key", Attr::Bytes(key.clone())),
                ("others", Attr::Int(*others)),
            ],
        ),
        Error::Parse {
            input, position, ..
        } => {
            let (line, column) = match position {
                hashfile::Position::Line { line, column } => (Some(*line), *column),
                _ => (None, None),
            };
            own(
                "ParseError",
                vec![
                    ("input", Attr::Text(input.clone())),
                    ("line", number(line)),
                    ("column", number(column)),
                ],
            )
        }
        // The store is well formed, but the value has no faithful form in
        // the language reading it: a value that binding cannot return.
        Error::KeysCollide { .. } => own("UnsupportedError", Vec::new()),
        Error::NotJson { .. } => own("Error", Vec::new()),
        Error::Limit { .. } | Error::ValueTooLarge { .. } => own("LimitError", Vec::new()),
        Error::OutOfMemory { .. } => (Class::NoMemory, Vec::new()),
        Error::InvalidOption { .. } => (Class::Argument, Vec::new()),
        Error::OptionType { .. } => (Class::Type, Vec::new()),
        Error::InvalidArgument { .. } => (Class::Argument, Vec::new()),
        Error::Unencodable {
            wrong_type: true, ..
        } => (Class::Type, Vec::new()),
        Error::Unencodable { .. } => (Class::Argument, Vec::new()),
        Error::UnknownOption { .. } => (Class::UnknownOption, Vec::new()),
        Error::Closed { .. } => own("ClosedError", Vec::new()),
        Error::Dataset { path, .. } => own("DatasetError", vec![("path", text(path))]),
        Error::PublishRefused { path, gate, .. } => own(
            "PublishRefusedError",
            vec![
                ("path", text(path)),
                ("gate", Attr::Text((*gate).to_owned())),
            ],
        ),
        Error::UnsafeLink { link, owner, .. } => own(
            "UnsafeLinkError",
            vec![
                ("path", Attr::Text(link.display().to_string())),
                ("owner", Attr::Int((*owner).into())),
            ],
        ),
        _ => own("Error", Vec::new()),
    };
    Raised {
        class,
        message,
        attributes,
    }
}
