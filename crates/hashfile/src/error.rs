//! The one error type of the crate.

use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong while building, opening or reading a store.
///
/// Variants are structured so that bindings can map them to their own error
/// classes (see `ext/hashfile/src/error.rs` for the Ruby mapping).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system error, with the path it concerned when known.
    #[error("{}{source}", path_prefix(.path))]
    Io {
        /// The file the error concerned, if any.
        path: Option<PathBuf>,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The file is not a valid store: bad magic, unsupported version, a
    /// section outside the file, a malformed record, and so on.
    #[error("{}{reason}", path_prefix(.path))]
    Format {
        /// The file, if known.
        path: Option<PathBuf>,
        /// What is wrong, for people.
        reason: String,
    },

    /// A section's bytes do not match the checksum recorded in the header.
    #[error("{}checksum mismatch in section {section}: expected {expected:016x}, got {actual:016x}", path_prefix(.path))]
    Checksum {
        /// The file, if known.
        path: Option<PathBuf>,
        /// The section's name (`"records"`, `"header"`, ...).
        section: &'static str,
        /// The checksum recorded in the header.
        expected: u64,
        /// The checksum of the bytes as they are.
        actual: u64,
    },

    /// The same key was added twice to a build (with the default
    /// `OnDuplicate::Error`).
    #[error("duplicate key {}{}", DisplayBytes(.key), if .positions.is_empty() { String::new() } else { format!(" ({})", .positions.join(" and ")) })]
    DuplicateKey {
        /// The key, as bytes.
        key: Vec<u8>,
        /// Where the key occurs, when the input can be read again to find
        /// out (`source: line N`, ...); empty otherwise.
        positions: Vec<String>,
    },

    /// An input file could not be parsed: where and why.
    #[error("{input}: {position}: {message}")]
    Parse {
        /// The input's name (a path, or `-` for stdin).
        input: String,
        /// Where: `line 3, column 7`, `entry 12`, ...
        position: String,
        /// What was wrong or expected.
        message: String,
    },

    /// The build was cancelled (an interrupt, or a progress callback that
    /// raised) before it published anything.
    #[error("build cancelled")]
    Cancelled,

    /// A build option is out of range.
    #[error("invalid option {name}: {reason}")]
    InvalidOption {
        /// The option's name.
        name: &'static str,
        /// Why it was rejected.
        reason: String,
    },

    /// The perfect hash could not be built with any of the hash seeds tried.
    /// With the default options this does not happen in practice.
    #[error("could not build a perfect hash for {entries} keys after {attempts} hash seeds; try a smaller keys_per_bucket or load_factor")]
    BuildFailed {
        /// Number of keys.
        entries: u64,
        /// Number of hash seeds tried.
        attempts: u32,
    },
}

/// Shorthand for `std::result::Result<T, hashfile::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn format(reason: impl Into<String>) -> Self {
        Error::Format { path: None, reason: reason.into() }
    }

    pub(crate) fn io(path: Option<&std::path::Path>, source: std::io::Error) -> Self {
        Error::Io { path: path.map(PathBuf::from), source }
    }

    /// Attaches a file's path to an error that concerns a file and has none.
    pub fn with_path(mut self, file: &std::path::Path) -> Self {
        if let Error::Io { path, .. } | Error::Format { path, .. } | Error::Checksum { path, .. } = &mut self {
            path.get_or_insert_with(|| file.to_path_buf());
        }
        self
    }
}

fn path_prefix(path: &Option<PathBuf>) -> String {
    match path {
        Some(p) => format!("{}: ", p.display()),
        None => String::new(),
    }
}

/// Shows a key the way Ruby's `String#inspect` would for ASCII, escaping the
/// rest, and cuts very long keys so an error message stays one line.
pub struct DisplayBytes<'a>(pub &'a [u8]);

impl fmt::Display for DisplayBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const LIMIT: usize = 200;
        let shown = &self.0[..self.0.len().min(LIMIT)];
        f.write_str("\"")?;
        for chunk in shown.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '"' => f.write_str("\\\"")?,
                    '\\' => f.write_str("\\\\")?,
                    c if c.is_control() => write!(f, "{}", c.escape_default())?,
                    c => write!(f, "{c}")?,
                }
            }
            for b in chunk.invalid() {
                write!(f, "\\x{b:02X}")?;
            }
        }
        f.write_str("\"")?;
        if self.0.len() > LIMIT {
            write!(f, "... ({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}
