//! Building a store from input files: import every input, build, publish,
//! with progress reports and cancellation. Bindings run this on a thread of
//! their own and relay the progress.

use std::cell::Cell;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::build::{Batch, BuildOptions, Builder};
use crate::cancel::CancelFlag;
use crate::error::{Error, Location, Result};
use crate::format::Record;
use crate::import::{self, ImportOptions, InputFormat};

/// Where an input comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputSource {
    /// A file.
    Path(PathBuf),
    /// Standard input (`-`).
    Stdin,
}

/// One input and how to read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// Where it comes from.
    pub source: InputSource,
    /// How to read it, with the format resolved.
    pub options: ImportOptions,
}

impl Input {
    /// An input named `name` (`-` for stdin). Without `format`, the format
    /// comes from the file's extension.
    pub fn new(name: &str, format: Option<InputFormat>, base: &ImportOptions) -> Result<Input> {
        let source = if name == "-" {
            InputSource::Stdin
        } else {
            InputSource::Path(PathBuf::from(name))
        };
        if let InputSource::Path(p) = &source {
            if p.is_dir() {
                return Err(Error::InvalidOption {
                    name: "inputs",
                    reason: format!(
                        "{name} is a directory; give the data files in it (say {}/*.json)",
                        name.trim_end_matches('/')
                    ),
                });
            }
        }
        let format = match (format, &source) {
            (Some(f), _) => f,
            (None, InputSource::Path(p)) => InputFormat::from_extension(p).ok_or_else(|| {
                let extension = p.extension().map_or_else(|| "it has none".to_string(), |e| format!(".{} is not one hashfile knows", e.to_string_lossy()));
                Error::InvalidOption { name: "format", reason: format!("cannot tell the format of {name} from its extension ({extension}); give the format option (--format on the command line), one of: {}", InputFormat::names_list()) }
            })?,
            (None, InputSource::Stdin) => return Err(Error::InvalidOption { name: "format", reason: format!("cannot tell the format of standard input; give the format option (--format on the command line), one of: {}", InputFormat::names_list()) }),
        };
        let options = ImportOptions {
            format,
            ..base.clone()
        };
        options.check_given(name)?;
        Ok(Input { source, options })
    }

    /// The name used in messages.
    pub fn name(&self) -> String {
        match &self.source {
            InputSource::Path(p) => p.display().to_string(),
            InputSource::Stdin => "-".into(),
        }
    }

    /// The input to read. A regular file is read as it is. A FIFO (or a
    /// socket or device) is opened without waiting for a writer, and stdin
    /// is read as it is, each through [`Polled`]: a read waits in `poll`
    /// and looks at `cancel` between waits, so a cancelled build stops
    /// even while its input's writer never comes or stalls (opening a FIFO
    /// the usual way waits in `open(2)`, where nothing can stop it).
    fn open(&self, cancel: &CancelFlag) -> Result<Box<dyn Read>> {
        use std::os::unix::fs::OpenOptionsExt;
        Ok(match &self.source {
            InputSource::Path(p) if self.is_regular_file() => {
                Box::new(File::open(p).map_err(|e| Error::io(Some(p), e))?)
            }
            InputSource::Path(p) => {
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(p)
                    .map_err(|e| Error::io(Some(p), e))?;
                Box::new(Polled {
                    inner: file,
                    cancel: cancel.clone(),
                })
            }
            InputSource::Stdin => {
                // SAFETY: descriptor 0 stays open for the process's life, and
                // ManuallyDrop never closes it. Read raw, not through
                // std's buffered Stdin, so that poll sees every byte not yet
                // read.
                let stdin = RawStdin(std::mem::ManuallyDrop::new(unsafe {
                    <File as std::os::fd::FromRawFd>::from_raw_fd(0)
                }));
                Box::new(Polled {
                    inner: stdin,
                    cancel: cancel.clone(),
                })
            }
        })
    }

    /// Whether the input is a regular file (a path that does not exist is
    /// taken as one: opening it says so), which can be read again.
    fn is_regular_file(&self) -> bool {
        match &self.source {
            InputSource::Path(p) => std::fs::metadata(p).map_or(true, |m| m.is_file()),
            InputSource::Stdin => false,
        }
    }
}

/// Longest a read from a pipe waits before looking at the cancel flag.
const CANCEL_POLL_MS: i32 = 50;

/// A pipe-like input read only when `poll` says it has data or has ended,
/// looking at `cancel` in between.
struct Polled<R> {
    inner: R,
    cancel: CancelFlag,
}

/// Descriptor 0, read without std's buffer and never closed.
struct RawStdin(std::mem::ManuallyDrop<File>);

impl Read for RawStdin {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl std::os::fd::AsRawFd for RawStdin {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

impl<R: Read + std::os::fd::AsRawFd> Read for Polled<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let mut fd = libc::pollfd {
                fd: self.inner.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, borrowed for the call.
            let ready = unsafe { libc::poll(&mut fd, 1, CANCEL_POLL_MS) };
            if ready > 0 {
                // Data, a hang-up (read returns 0: the end) or an error. A
                // FIFO opened without waiting may still say "would block".
                match self.inner.read(buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    other => return other,
                }
            } else if ready < 0
                && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                return Err(std::io::Error::last_os_error());
            }
            if self.cancel.is_cancelled() {
                // Not ErrorKind::Interrupted, which readers retry.
                return Err(std::io::Error::other(
                    "the build was cancelled while waiting for input",
                ));
            }
        }
    }
}

/// What a build is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading inputs.
    Reading,
    /// Building the perfect hash and writing the file.
    Building,
    /// Written and synced; about to rename it into place. The last chance
    /// to cancel.
    Publishing,
}

impl Phase {
    /// The phase's name, as bindings hand it to progress callbacks
    /// (`reading`, `building`, `publishing`).
    pub fn name(self) -> &'static str {
        match self {
            Phase::Reading => "reading",
            Phase::Building => "building",
            Phase::Publishing => "publishing",
        }
    }
}

/// A progress report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The phase.
    pub phase: Phase,
    /// Entries read so far.
    pub entries: u64,
    /// Input bytes read so far.
    pub bytes_read: u64,
    /// Total input bytes, when every input is a file.
    pub bytes_total: Option<u64>,
}

/// What a finished build made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Entries in the store (after dropping duplicates, if asked to).
    pub entries: u64,
    /// Length of the file written.
    pub file_bytes: u64,
    /// What the build did if its index went over the memory limit and
    /// spilled to temporary files (`BuildOptions::memory`).
    pub spilled: Option<crate::build::SpillStats>,
}

/// Least time between two progress reports while reading.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// Where imported entries go: one store's builder, or the shards of a
/// dataset (hashfile-runtime's `DatasetBuilder`), so that every kind of
/// build reads its inputs through [`import_into`].
pub trait Sink {
    /// An empty batch, which the parallel JSON Lines importer fills on its
    /// workers and hands to `append`.
    fn new_batch(&self) -> Batch;
    /// Adds a batch's entries.
    fn append(&mut self, batch: &Batch);
    /// Adds one entry.
    fn insert_record(&mut self, record: Record<'_>);
}

impl Sink for Builder {
    fn new_batch(&self) -> Batch {
        Builder::new_batch(self)
    }

    fn append(&mut self, batch: &Batch) {
        Builder::append(self, batch)
    }

    #[inline]
    fn insert_record(&mut self, record: Record<'_>) {
        Builder::insert_record(self, record)
    }
}

/// Imports every input, builds, and publishes `output` atomically
/// (`Builder::write_file`). `progress` hears about the work at most every
/// `PROGRESS_INTERVAL` while reading, and at each phase; returning an error
/// from it (say `Error::Cancelled`) stops the build, and nothing is
/// published. Raising `cancel`, from any thread, stops it too, soon, in any
/// phase (`CancelFlag` says where it is looked at). A duplicate key error
/// names where the key occurs, by reading the file inputs again.
pub fn build_from(
    inputs: &[Input],
    output: &Path,
    options: BuildOptions,
    cancel: &CancelFlag,
    progress: &mut dyn FnMut(&Progress) -> Result<()>,
) -> Result<Summary> {
    // Records go straight into the temporary file beside `output`.
    let mut builder = Builder::streaming(options, output)?;
    builder.set_cancel(cancel.clone());
    let mut report = import_into(inputs, &mut builder, cancel, progress)?;
    report.phase = Phase::Building;
    progress(&report)?;
    let mut publishing = || {
        progress(&Progress {
            phase: Phase::Publishing,
            ..report
        })
    };
    match builder.write_file_checked(output, &mut publishing) {
        Ok(file_bytes) => Ok(Summary {
            entries: builder.len() as u64,
            file_bytes,
            spilled: builder.spill_stats(),
        }),
        Err(e) => Err(locate_duplicate(inputs, e)),
    }
}

/// Reads every input into `sink`, in order, reporting progress as
/// [`build_from`] does (phase `Reading`). Returns the last report: every
/// entry and byte read.
pub fn import_into<S: Sink>(
    inputs: &[Input],
    sink: &mut S,
    cancel: &CancelFlag,
    progress: &mut dyn FnMut(&Progress) -> Result<()>,
) -> Result<Progress> {
    let bytes_total = inputs
        .iter()
        .try_fold(0u64, |sum, input| match &input.source {
            InputSource::Path(p) => std::fs::metadata(p).ok().map(|m| sum + m.len()),
            InputSource::Stdin => None,
        });
    let read = Rc::new(Cell::new(0u64));
    let mut report = Progress {
        phase: Phase::Reading,
        entries: 0,
        bytes_read: 0,
        bytes_total,
    };
    progress(&report)?;
    let mut last = Instant::now();
    for input in inputs {
        let reader = Counting {
            inner: input.open(cancel)?,
            count: Rc::clone(&read),
        };
        #[cfg(feature = "parallel")]
        if input.options.format == InputFormat::JsonLines {
            // Parsed on every core; batches arrive in input order.
            let done_before = read.get();
            let empty = sink.new_batch();
            import::import_json_lines_parallel(
                reader,
                &input.name(),
                &input.options,
                import::JSON_LINES_CHUNK,
                &empty,
                &mut |batch, bytes| {
                    cancel.check()?;
                    report.entries += batch.len() as u64;
                    sink.append(batch);
                    if last.elapsed() >= PROGRESS_INTERVAL {
                        last = Instant::now();
                        report.bytes_read = done_before + bytes;
                        progress(&report)?;
                    }
                    Ok(())
                },
            )
            .map_err(|e| cancelled_or(cancel, e))?;
            continue;
        }
        import::import(reader, &input.name(), &input.options, &mut |record, _| {
            sink.insert_record(record);
            report.entries += 1;
            if report.entries % 4096 == 0 {
                cancel.check()?;
            }
            if report.entries % 4096 == 0 && last.elapsed() >= PROGRESS_INTERVAL {
                last = Instant::now();
                report.bytes_read = read.get();
                progress(&report)?;
            }
            Ok(())
        })
        .map_err(|e| cancelled_or(cancel, e))?;
    }
    report.bytes_read = read.get();
    Ok(report)
}

/// `error`, and for a duplicate key, with up to two places the key occurs
/// in `inputs` (found by reading the file inputs again).
pub fn locate_duplicate(inputs: &[Input], error: Error) -> Error {
    match error {
        Error::DuplicateKey { key, others, .. } => {
            let mut found = locate(inputs, &key).into_iter().map(Box::new);
            Error::DuplicateKey {
                first: found.next(),
                second: found.next(),
                key,
                others,
            }
        }
        e => e,
    }
}

/// `Error::Cancelled` if the build was cancelled (a read that stopped
/// waiting for its input fails with an I/O error), else `error`.
fn cancelled_or(cancel: &CancelFlag, error: Error) -> Error {
    if cancel.is_cancelled() {
        Error::Cancelled
    } else {
        error
    }
}

/// Up to two places `key` occurs, reading the regular-file inputs again
/// (stdin and FIFOs cannot be read twice).
fn locate(inputs: &[Input], key: &[u8]) -> Vec<Location> {
    let mut found = Vec::new();
    for input in inputs {
        if !input.is_regular_file() {
            continue;
        }
        let Ok(reader) = input.open(&CancelFlag::new()) else {
            continue;
        };
        if let Ok(positions) = import::find_key(reader, &input.name(), &input.options, key) {
            found.extend(positions.into_iter().map(|position| Location {
                input: input.name(),
                position,
            }));
        }
        if found.len() >= 2 {
            break;
        }
    }
    found.truncate(2);
    found
}
