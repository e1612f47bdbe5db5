//! What an open hashfile store does over time, written once for every
//! language binding.
//!
//! - [`StoreSource`]: one source type over a local file on a guarded
//!   memory map and a remote store (`http://`, `https://`, `s3://`)
//!   through a block cache, so that an open store is one type, [`Store`],
//!   whatever it reads.
//! - [`Table`]: what a handle reads, one store or a [`dataset::Dataset`]
//!   (shards under a manifest, written by [`dataset::DatasetBuilder`]),
//!   answering the same calls.
//! - [`Handle`]: an open location, shared between threads. It holds the
//!   store read now and swaps in a newer one as its [`Refresh`] policy
//!   says (never; a local path looked at every N seconds; a remote object
//!   reopened when it is replaced), or on [`Handle::reopen`]. A swap happens
//!   only between lookups: each lookup reads the store it took from start
//!   to end.
//! - [`SerializedHandle`]: a handle for a binding whose calls an
//!   interpreter lock serializes (Ruby's GVL): lookups cost no atomic
//!   read-modify-write, and the handle's store is taken only between them.
//!
//! - [`BuildJob`]: a build on a thread of its own, with the protocol by
//!   which a binding's waiting thread answers its progress reports and
//!   cancels it on an interrupt.
//!
//! - [`reads`]: where each read runs, in place or without the
//!   interpreter's lock, which a binding releases through [`reads::Unlock`].
//!
//! A binding converts arguments, values and errors, and releases its
//! interpreter's lock; everything else is here.
//!
//! ```no_run
//! use std::time::Duration;
//! use hashfile_runtime::{OpenOptions, Refresh};
//!
//! let options = OpenOptions { refresh: Refresh::Every(Duration::from_secs(5)), ..OpenOptions::default() };
//! let tenants = hashfile_runtime::open("/srv/data/tenants.hf", options)?;
//! // Reads the store published at the path last (looked for at most every 5 s).
//! let plan = tenants.read(|store| Ok(store.get(b"tenant:42")?.map(|r| r.value().to_vec())))?;
//! # Ok::<(), hashfile::Error>(())
//! ```
#![warn(missing_docs, unreachable_pub)]

/// The most values a binding's memo of decoded values may be given
/// (`memo=` in Python, `memo:` in Ruby): far more than a hot set, few
/// enough that a byte count given for an entry count is refused.
pub const MAX_MEMO_ENTRIES: u64 = 100_000_000;

#[cfg(feature = "import")]
mod build_job;
pub mod dataset;
#[cfg(feature = "parallel")]
pub mod diff;
#[cfg(all(feature = "import", feature = "parallel"))]
pub mod diff_call;
pub mod error_class;
mod handle;
#[cfg(feature = "import")]
pub mod history_calls;
mod info;
pub mod memo;
// The option table reads the importers' options too.
#[cfg(feature = "import")]
pub mod options;
#[cfg(feature = "import")]
pub mod patch_calls;
#[cfg(feature = "parallel")]
pub mod pool;
pub mod reads;
mod serialized;
mod source;
mod table;
#[cfg(all(feature = "import", feature = "parallel"))]
mod writer;

#[cfg(feature = "import")]
pub use build_job::{BuildEvent, BuildJob, BuildRun, Report, Stopped};
pub use handle::{is_replaced, open, Current, Handle, OpenOptions, Refresh, MAP_AFTER_LOOKUPS};
pub use info::{Info, InfoValue};
pub use serialized::SerializedHandle;
pub use source::{map_store, open_store, LocalOpen, Store, StoreSource};
pub use table::{Chunk, Cursor, Table};
#[cfg(all(feature = "import", feature = "parallel"))]
pub use writer::Writer;

/// Builds from input files what a binding's `build_from` asks for: one
/// store at `output` (`hashfile::pipeline::build_from`), or with `shards` a
/// dataset in the directory `output` ([`dataset::build_from`]), with the
/// same progress reports and cancellation.
#[cfg(feature = "import")]
pub fn build_from(
    inputs: &[hashfile::pipeline::Input],
    output: &std::path::Path,
    shards: Option<u32>,
    options: hashfile::BuildOptions,
    publish: &dataset::PublishOptions,
    cancel: &hashfile::CancelFlag,
    progress: &mut dyn FnMut(&hashfile::pipeline::Progress) -> hashfile::Result<()>,
) -> hashfile::Result<hashfile::pipeline::Summary> {
    match shards {
        None => hashfile::pipeline::build_from(inputs, output, options, cancel, progress),
        Some(n) => dataset::build_from(inputs, output, n, options, publish, cancel, progress),
    }
}

/// A binding's `build_from`: the input files `inputs` (`-` is standard
/// input) read as `request` says, built into `output` on a [`BuildJob`]
/// of its own, on this process's build pool ([`pool`]: never rayon's
/// global one, which a forked child lacks). Call it with the interpreter
/// lock held, so that no fork happens while the pool is taken.
#[cfg(all(feature = "import", feature = "parallel"))]
pub fn start_build_from(
    inputs: &[String],
    output: std::path::PathBuf,
    request: options::BuildRequest,
) -> hashfile::Result<BuildJob> {
    let inputs = inputs
        .iter()
        .map(|name| hashfile::pipeline::Input::new(name, request.format, &request.import))
        .collect::<hashfile::Result<Vec<_>>>()?;
    let pool = pool::for_build(request.threads)?;
    BuildJob::start(Box::new(move |cancel, report| {
        pool.install(|| {
            build_from(
                &inputs,
                &output,
                request.shards,
                request.options,
                &request.publish,
                cancel,
                report,
            )
        })
    }))
    .map_err(|e| {
        io_error(std::io::Error::other(format!(
            "cannot start the build thread: {e}"
        )))
    })
}

/// An I/O error of no file (a thread that could not be started).
#[cfg(feature = "parallel")]
fn io_error(source: std::io::Error) -> hashfile::Error {
    hashfile::Error::Io { path: None, source }
}
