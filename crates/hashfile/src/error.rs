//! The one error type of the crate, and the positions errors point at.
//!
//! This is the lowest layer: it imports nothing else from the crate, so
//! every other module can use it.

use std::fmt;
use std::path::{Path, PathBuf};

/// Everything that can go wrong while building, opening or reading a store.
///
/// Variants are structured so that callers and bindings can act on them
/// without reading messages (see `ext/hashfile/src/error.rs` for the Ruby
/// mapping). Variants about a store file carry its path once it is known
/// ([`Error::with_path`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system error, with the path it concerned when known.
    #[error("{}{source}", prefix(.path))]
    Io {
        /// The file the error concerned, if any.
        path: Option<PathBuf>,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The bytes are not a store at all: too short for a header, or
    /// another file's magic.
    #[error("{}{reason}", prefix(.path))]
    NotAStore {
        /// The file, if known.
        path: Option<PathBuf>,
        /// What gave it away, for people.
        reason: String,
    },

    /// A store of a major version this library does not read.
    #[error("{}unsupported version {got} (this library reads version {expected})", prefix(.path))]
    Version {
        /// The file, if known.
        path: Option<PathBuf>,
        /// The major version this library reads.
        expected: u16,
        /// The file's major version.
        got: u16,
    },

    /// A store that needs features this library does not have (required
    /// flags it does not know).
    #[error("{}unsupported required features {bits:#x}", prefix(.path))]
    UnsupportedFeatures {
        /// The file, if known.
        path: Option<PathBuf>,
        /// The unknown required-feature bits.
        bits: u64,
    },

    /// The file is not as long as its header says: cut short, or appended to.
    #[error("{}file is {actual_len} bytes but its header says {expected_len}: truncated or appended to", prefix(.path))]
    Truncated {
        /// The file, if known.
        path: Option<PathBuf>,
        /// The length the header records.
        expected_len: u64,
        /// The length the file has.
        actual_len: u64,
    },

    /// The store's file changed while it was open: it was truncated (or
    /// rewritten in place) under a guarded memory map, and a read touched
    /// a page that was gone. Reopen it.
    #[error("{}the store file changed while open (truncated or rewritten in place, not replaced by rename); reopen it", prefix(.path))]
    Changed {
        /// The file, if known.
        path: Option<PathBuf>,
    },

    /// The store is damaged: its header or a section says something
    /// impossible.
    #[error("{}corrupt store ({section}): {what}", prefix(.path))]
    Corrupt {
        /// The file, if known.
        path: Option<PathBuf>,
        /// Where: `"header"` or a section's name (`"seeds"`, `"records"`, ...).
        section: &'static str,
        /// What is wrong, for people.
        what: String,
    },

    /// A section's bytes do not match the checksum recorded in the header.
    #[error("{}checksum mismatch in section {section}: expected {expected:016x}, got {actual:016x}", prefix(.path))]
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
    #[error("duplicate key {}{}{}", DisplayBytes(.key), places(.first, .second), more_keys(*.others))]
    DuplicateKey {
        /// The key, as bytes: of the keys that repeat, the one whose second
        /// occurrence comes first in input order.
        key: Vec<u8>,
        /// Where the key occurs first, when the input can be read again to
        /// find out. Boxed, as `second` is, to keep `Error` (and so every
        /// `Result` of a lookup) small.
        first: Option<Box<Location>>,
        /// Where it occurs again, likewise.
        second: Option<Box<Location>>,
        /// How many other keys occur more than once.
        others: u64,
    },

    /// An input file could not be parsed: where and why.
    #[error("{input}: {position}: {what}")]
    Parse {
        /// The input's name (a path, or `-` for stdin).
        input: String,
        /// Where in the input.
        position: Position,
        /// What was wrong or expected.
        what: String,
    },

    /// A stored map whose keys are distinct as stored (Ruby's `1`, `1.0`
    /// and `true`; `"a"` and `:a`) but one key in the language reading it
    /// (Python's `1 == 1.0 == True`; a Symbol read as a `str`): returned
    /// there, one entry would silently replace the other, so it is refused.
    #[error("a map holds keys {keys}, distinct as stored but one key in {language}; reading it there would keep only one of them")]
    KeysCollide {
        /// The colliding keys as stored, in Ruby's notation, joined for
        /// people (`1, 1.0 and true`).
        keys: String,
        /// The language they collide in (`"Python"`).
        language: &'static str,
    },

    /// A value JSON cannot hold (`value::json`): a string that is not
    /// UTF-8 or is in another encoding, a float that is not finite, a map
    /// key that is not a string, a Symbol, a serializer's value.
    #[error("{place} {why}")]
    NotJson {
        /// The key, and the path inside its value (`value for key "k" at
        /// ["a", 0]`).
        place: String,
        /// What JSON cannot hold there.
        why: String,
    },

    /// An argument no input could make valid (buffers that are not the
    /// array they are said to be, a count out of range): a binding raises
    /// its language's error for a bad argument.
    #[error("{message}")]
    InvalidArgument {
        /// What is wrong with it.
        message: String,
    },

    /// A value given to a build that a store cannot hold
    /// (`value::Unencodable`): an object of a type the language's encoder
    /// has no form for, containers nested past `value::MAX_DEPTH`, or a map
    /// with two keys that are one key as stored.
    #[error("{place} {why}")]
    Unencodable {
        /// The key, and the path inside its value (`value for key "k" at
        /// ["a", 0]`).
        place: String,
        /// What was refused there.
        why: String,
        /// Whether an object of a type no store holds was refused (a
        /// binding's type error); else the value's shape (nested too deep,
        /// a key twice: an argument error).
        wrong_type: bool,
    },

    /// A build went past a limit of the format or of one build.
    #[error("{what} is over the limit of {max}")]
    Limit {
        /// What was counted (`"entries in one build"`, ...).
        what: &'static str,
        /// The most there may be.
        max: u64,
    },

    /// An option is out of range, or contradicts another.
    #[error("invalid option {name}: {reason}")]
    InvalidOption {
        /// The option's name.
        name: &'static str,
        /// Why it was rejected.
        reason: String,
    },

    /// An option given a value of the wrong type (a string for a number):
    /// a binding raises its language's type error.
    #[error("{name} must be {expected}, not {given}")]
    OptionType {
        /// The option's name.
        name: String,
        /// What it takes (`"an integer"`).
        expected: String,
        /// What was given (`"a string"`).
        given: String,
    },

    /// Options that the call they were given to does not take: never
    /// ignored, since the user meant something by them.
    #[error("{message}")]
    UnknownOption {
        /// The names given that no option has.
        names: Vec<String>,
        /// The names, a guess at each one meant, and the names taken.
        message: String,
    },

    /// A build's output path is a symbolic link that neither this
    /// process's user nor root owns: following it would let that user
    /// choose which file the build replaces.
    #[error("{}: refusing to write through a symbolic link owned by uid {owner} (this process runs as uid {user}); only links of this user or root are followed. Remove the link, or give the file it leads to as the output", .link.display())]
    UnsafeLink {
        /// The link.
        link: PathBuf,
        /// The link's owner.
        owner: u32,
        /// The user the process runs as (effective uid).
        user: u32,
    },

    /// The build was cancelled (an interrupt, or a progress callback that
    /// raised) before it published anything.
    #[error("build cancelled")]
    Cancelled,

    /// A dataset (shards under a manifest) is not what its manifest says,
    /// or the manifest itself is damaged or of a kind this release does
    /// not read: `path` is the manifest or the shard concerned.
    #[error("{}{what}", prefix(.path))]
    Dataset {
        /// The manifest, or the shard the error is about.
        path: Option<PathBuf>,
        /// What is wrong, naming the shard (its number and file) if one.
        what: String,
    },

    /// A publish gate refused a new generation of a dataset: the one
    /// published stays, and nothing of the new one is left.
    #[error("{}publish refused by the gate {gate}: {what}; nothing was published (force publishes it anyway)", prefix(.path))]
    PublishRefused {
        /// The dataset's manifest.
        path: Option<PathBuf>,
        /// The gate: `max_entry_change`, `max_type_change` or
        /// `refuse_empty`.
        gate: &'static str,
        /// The numbers that broke it.
        what: String,
    },

    /// A store was used after it was closed.
    #[error("closed store {}", .path.display())]
    Closed {
        /// Where the store was opened from (a path or URL).
        path: PathBuf,
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

    /// A value is larger than the reader's `max_value_size` (stored, or
    /// as its compressed frame or items decode), so it is not read: the
    /// limit bounds what one lookup allocates, whatever a damaged or
    /// hostile store or server claims. Open with a larger `max_value_size`
    /// to read a store whose values really are this large.
    #[error("{}the value of key {key} {size}, over max_value_size ({max} bytes); open the store with a larger max_value_size to read it", prefix(.path))]
    ValueTooLarge {
        /// The file, if known.
        path: Option<PathBuf>,
        /// The key, as `DisplayBytes` shows it (cut to 200 bytes).
        key: String,
        /// How large, in words: "is N bytes", "decodes to N bytes", "decodes
        /// to more".
        size: String,
        /// The reader's `max_value_size`.
        max: u64,
    },

    /// Memory for something a store or a server said it holds could not be
    /// had: the allocation was refused, so the call fails and the process
    /// goes on (a record, a fetched range, a decoded value).
    #[error("out of memory: {what}")]
    OutOfMemory {
        /// What could not be allocated, with its size.
        what: String,
    },

    /// zstd failed while compressing values (it could not allocate a
    /// context, say): the build stops and nothing is published.
    #[error("compressing values failed: {reason}")]
    Compression {
        /// What zstd said.
        reason: String,
    },
}

/// Shorthand for `std::result::Result<T, hashfile::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Damage in `section` of a store.
    pub fn corrupt(section: &'static str, what: impl Into<String>) -> Error {
        Error::Corrupt {
            path: None,
            section,
            what: what.into(),
        }
    }

    /// A parse error in `input` at `position`, its message cut to an
    /// excerpt of at most [`MAX_PARSE_MESSAGE`] characters: what a message
    /// quotes of the input (a string, a field name, a number) can be as
    /// long as the input, and a message is for a terminal or a log line.
    #[cfg(feature = "import")]
    pub fn parse(input: &str, position: Position, what: impl Into<String>) -> Error {
        Error::Parse {
            input: input.to_string(),
            position,
            what: excerpt(&what.into(), MAX_PARSE_MESSAGE),
        }
    }

    /// An I/O error, about `path` if given.
    pub(crate) fn io(path: Option<&Path>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.map(PathBuf::from),
            source,
        }
    }

    /// This error, if it is damage found in a record's value, naming the
    /// record's key (`corrupt store (records): value for key "k": ...`):
    /// the caller of a batch or an iteration could not tell which it was.
    /// Every binding's decoder reports damage through here, so the message
    /// is the same in each.
    pub fn in_value_for(mut self, key: &[u8]) -> Self {
        if let Error::Corrupt {
            section: "records",
            what,
            ..
        } = &mut self
        {
            if !what.starts_with("value for key ") {
                *what = format!("value for key {}: {what}", DisplayBytes(key));
            }
        }
        self
    }

    /// A [`Error::KeysCollide`] as it reads in `language` (a `dig`'s text
    /// probe answers for Python, whose `str` and Java's `String` alike
    /// hold both a String and a Symbol); any other error as it is.
    pub fn colliding_in(mut self, language: &'static str) -> Self {
        if let Error::KeysCollide { language: l, .. } = &mut self {
            *l = language;
        }
        self
    }

    /// Attaches a file's path to an error that concerns a file and has none.
    pub fn with_path(mut self, file: &Path) -> Self {
        if let Error::Io { path, .. }
        | Error::Changed { path }
        | Error::NotAStore { path, .. }
        | Error::Version { path, .. }
        | Error::UnsupportedFeatures { path, .. }
        | Error::Truncated { path, .. }
        | Error::Corrupt { path, .. }
        | Error::Checksum { path, .. }
        | Error::ValueTooLarge { path, .. } = &mut self
        {
            path.get_or_insert_with(|| file.to_path_buf());
        }
        self
    }
}

/// A buffer of `len` bytes' room, or `Error::OutOfMemory` naming `what`
/// when the allocator refuses it: every buffer whose size comes from a
/// store or a server is made this way, so that a claim of 2^50 bytes is an
/// error, never an abort.
pub(crate) fn try_buffer(len: usize, what: &str) -> Result<Vec<u8>> {
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(len)
        .map_err(|_| out_of_memory(len as u64, what))?;
    Ok(buffer)
}

/// The error for `len` bytes of `what` that could not be allocated.
#[cold]
pub(crate) fn out_of_memory(len: u64, what: &str) -> Error {
    Error::OutOfMemory {
        what: format!("cannot allocate {len} bytes for {what}"),
    }
}

/// The same as an `io::Error` (kind `OutOfMemory`), for a source, which
/// speaks `io::Result`; the reader turns it back into
/// `Error::OutOfMemory`.
#[cold]
pub(crate) fn io_out_of_memory(len: u64, what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::OutOfMemory,
        format!("cannot allocate {len} bytes for {what}"),
    )
}

/// The longest message a parse error carries, in characters; longer ones
/// keep their start and end (where the reason and what was expected are)
/// and say how much was cut.
pub const MAX_PARSE_MESSAGE: usize = 400;

/// `text` if it has at most `max` characters, else its first and last
/// characters with what was cut between them.
#[cfg(feature = "import")]
fn excerpt(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let (head, tail) = (max * 2 / 3, max / 3);
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!(
        "{start}... ({} characters cut) ...{end}",
        count - head - tail
    )
}

fn prefix(path: &Option<PathBuf>) -> String {
    match path {
        Some(p) => format!("{}: ", p.display()),
        None => String::new(),
    }
}

fn more_keys(others: u64) -> String {
    match others {
        0 => String::new(),
        1 => "; 1 other key repeats too".to_string(),
        n => format!("; {n} other keys repeat too"),
    }
}

fn places(first: &Option<Box<Location>>, second: &Option<Box<Location>>) -> String {
    match (first, second) {
        (Some(a), Some(b)) => format!(" ({a} and {b})"),
        (Some(a), None) | (None, Some(a)) => format!(" ({a})"),
        (None, None) => String::new(),
    }
}

/// Where in an input something was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// A line (1-based), with a column (1-based) where known.
    Line {
        /// The line.
        line: u64,
        /// The column, if known.
        column: Option<u64>,
    },
    /// An entry number (1-based), for inputs without lines.
    Entry(u64),
    /// Nowhere more precise than the whole input.
    Unknown,
}

impl Position {
    /// A line without a column.
    pub fn line(line: u64) -> Position {
        Position::Line { line, column: None }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Line {
                line,
                column: Some(c),
            } => write!(f, "line {line}, column {c}"),
            Position::Line { line, column: None } => write!(f, "line {line}"),
            Position::Entry(n) => write!(f, "entry {n}"),
            Position::Unknown => f.write_str("input"),
        }
    }
}

/// A position in a named input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The input's name (a path, or `-` for stdin).
    pub input: String,
    /// Where in it.
    pub position: Position,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.input, self.position)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lookup returns a `Result<_, Error>`: a large error makes every
    /// one of them large to move. Clippy's `result_large_err` warns at 128
    /// bytes; this keeps a margin under it.
    #[test]
    fn an_error_is_small_enough_for_every_result_to_carry() {
        let size = std::mem::size_of::<Error>();
        assert!(size <= 96, "Error is {size} bytes");
    }
}
