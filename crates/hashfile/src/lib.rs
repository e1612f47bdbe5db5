//! An immutable key-value store in one file, indexed by a CHD minimal
//! perfect hash with bit-packed displacement seeds, read through any byte
//! source: a memory map, a `Vec`, a file, or your own [`read::Source`].
//!
//! Opening a store checks its header and nothing else, so it takes the same
//! few microseconds at any size. A lookup is one hash, one seed, one slot
//! and one record, and always compares the stored key.
//!
//! Build a store, publish it atomically, map it and look keys up:
//!
//! ```
//! use hashfile::{Builder, BuildOptions, Reader};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("colors.hf");
//!
//! let mut builder = Builder::new(BuildOptions::default())?;
//! builder.insert(b"red", b"#ff0000");
//! builder.insert(b"green", b"#00ff00");
//! builder.write_file(&path)?; // a temporary file, fsynced, renamed into place
//!
//! let store = Reader::open(&path)?; // a memory map and a header check
//! assert_eq!(store.get(b"red")?.unwrap().value(), b"#ff0000");
//! assert!(store.get(b"blue")?.is_none());
//! # Ok::<(), hashfile::Error>(())
//! ```
//!
//! Iterate in the order entries were added, check every byte, and read
//! typed values:
//!
//! ```
//! use hashfile::format::{Record, ValueKind};
//! use hashfile::value::Value;
//! use hashfile::{Builder, Reader};
//!
//! let mut builder = Builder::new(Default::default())?;
//! builder.insert_record(Record::text("greeting", "hello"));
//! builder.insert_value(b"limits", true, &Value::Map(vec![(Value::str("api"), Value::Int(50))]))?;
//! let store = Reader::new(builder.to_bytes()?)?; // any AsRef<[u8]> is a source
//!
//! let keys: Vec<Vec<u8>> = store.iter().map(|r| Ok(r?.key().to_vec())).collect::<hashfile::Result<_>>()?;
//! assert_eq!(keys, [b"greeting".to_vec(), b"limits".to_vec()]);
//! store.verify()?; // O(size): every checksum, every record, every slot
//!
//! let limits = store.get(b"limits")?.unwrap();
//! assert_eq!(limits.kind(), ValueKind::Typed);
//! assert_eq!(limits.decode()?, Value::Map(vec![(Value::str("api"), Value::Int(50))]));
//! # Ok::<(), hashfile::Error>(())
//! ```
//!
//! # Layers
//!
//! Modules depend on the ones below them only (docs/ARCHITECTURE.md):
//! `error` and `bits` at the bottom; `format` (header, records, varints);
//! `value` (the typed-value codec) and `chd` (hashing and placement);
//! `read` and `build`; `import` and `pipeline` on top.
//!
//! # Features
//!
//! - `mmap` (default): `Reader::open` maps a file; streaming builds map
//!   their records instead of reading them back.
//! - `parallel` (default): builds and the JSON Lines importer run on rayon's
//!   pool. Without it they run on the calling thread, with the same output.
//! - `import` (default): the importers and `pipeline::build_from` (pulls
//!   serde_json, rmp, yaml-rust2, regex). A crate that only reads
//!   stores needs none of these: `default-features = false, features =
//!   ["mmap"]` pulls xxhash-rust, bitpacking and memmap2.
//!
//! The byte layout is specified in `docs/FORMAT.md` of the repository.
#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod bits;
pub mod build;
mod cancel;
pub mod chd;
pub mod compress;
pub mod dataset;
mod error;
pub mod format;
#[cfg(feature = "import")]
pub mod import;
mod parallel;
#[cfg(feature = "import")]
pub mod pipeline;
pub mod read;
pub mod value;

pub use build::{
    Batch, BuildOptions, Builder, IndexKind, MemoryLimit, OnDuplicate, SpillStats,
    DEFAULT_KEYS_PER_PART, MIN_MEMORY_LIMIT,
};
pub use cancel::CancelFlag;
pub use compress::Compression;
pub use error::{DisplayBytes, Error, Location, Position, Result, MAX_PARSE_MESSAGE};
pub use format::{Record, ValueKind};
pub use read::{Info, Iter, Reader, RecordBuf};

/// The Rust snippets of docs/RUST.md, run as doctests so the docs cannot
/// drift from the API (built only by `cargo test`, not into the crate).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/RUST.md")]
pub struct RustDocSnippets;
