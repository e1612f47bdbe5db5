//! An immutable key-value store in one file, indexed by a CHD minimal
//! perfect hash with bit-packed displacement seeds, and read through a
//! memory map.
//!
//! Opening a store checks its header and nothing else, so it takes the same
//! few microseconds at any size. A lookup is one hash, one seed, one slot
//! and one record, and always compares the stored key.
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
//! builder.write_file(&path)?;
//!
//! let store = Reader::open(&path)?;
//! assert_eq!(store.get(b"red")?.unwrap().value, b"#ff0000");
//! assert!(store.get(b"blue")?.is_none());
//! store.verify()?;
//! # Ok::<(), hashfile::Error>(())
//! ```
//!
//! The byte layout is specified in `docs/FORMAT.md` of the repository.
#![deny(missing_docs)]

pub mod bits;
mod builder;
pub mod chd;
mod error;
pub mod format;
pub mod import;
pub mod pipeline;
mod reader;
pub mod value;
mod yaml;

pub use builder::{Batch, BuildOptions, Builder, OnDuplicate, DEFAULT_KEYS_PER_PART};
pub use error::{DisplayBytes, Error, Result};
pub use format::ValueKind;
pub use reader::{Info, Iter, Reader, Record};
