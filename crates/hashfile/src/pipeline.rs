//! Building a store from input files: import every input, build, publish,
//! with progress reports and cancellation. Bindings run this on a thread of
//! their own and relay the progress.

use std::cell::Cell;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::build::{BuildOptions, Builder};
use crate::cancel::CancelFlag;
use crate::error::{Error, Location, Result};
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
        let source = if name == "-" { InputSource::Stdin } else { InputSource::Path(PathBuf::from(name)) };
        if let InputSource::Path(p) = &source {
            if p.is_dir() {
                return Err(Error::InvalidOption { name: "inputs", reason: format!("{name} is a directory; give the data files in it (say {}/*.json)", name.trim_end_matches('/')) });
            }
        }
        let format = match (format, &source) {
            (Some(f), _) => f,
            (None, InputSource::Path(p)) => InputFormat::from_extension(p).ok_or_else(|| {
                let extension = p.extension().map_or_else(|| "it has none".to_string(), |e| format!(".{} is not one hashfile knows", e.to_string_lossy()));
                Error::InvalidOption { name: "format", reason: format!("cannot tell the format of {name} from its extension ({extension}); give the format (--format, or format: in Ruby), one of: {}", InputFormat::names_list()) }
            })?,
            (None, InputSource::Stdin) => return Err(Error::InvalidOption { name: "format", reason: format!("cannot tell the format of standard input; give the format (--format, or format: in Ruby), one of: {}", InputFormat::names_list()) }),
        };
        Ok(Input { source, options: ImportOptions { format, ..base.clone() } })
    }

    /// The name used in messages.
    pub fn name(&self) -> String {
        match &self.source {
            InputSource::Path(p) => p.display().to_string(),
            InputSource::Stdin => "-".into(),
        }
    }

    fn open(&self) -> Result<Box<dyn Read>> {
        Ok(match &self.source {
            InputSource::Path(p) => Box::new(File::open(p).map_err(|e| Error::io(Some(p), e))?),
            InputSource::Stdin => Box::new(std::io::stdin()),
        })
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

/// Imports every input, builds, and publishes `output` atomically
/// (`Builder::write_file`). `progress` hears about the work at most every
/// `PROGRESS_INTERVAL` while reading, and at each phase; returning an error
/// from it (say `Error::Cancelled`) stops the build, and nothing is
/// published. Raising `cancel`, from any thread, stops it too, soon, in any
/// phase (`CancelFlag` says where it is looked at). A duplicate key error
/// names where the key occurs, by reading the file inputs again.
pub fn build_from(inputs: &[Input], output: &Path, options: BuildOptions, cancel: &CancelFlag, progress: &mut dyn FnMut(&Progress) -> Result<()>) -> Result<Summary> {
    // Records go straight into the temporary file beside `output`.
    let mut builder = Builder::streaming(options, output)?;
    builder.set_cancel(cancel.clone());
    let bytes_total = inputs.iter().try_fold(0u64, |sum, input| match &input.source {
        InputSource::Path(p) => std::fs::metadata(p).ok().map(|m| sum + m.len()),
        InputSource::Stdin => None,
    });
    let read = Rc::new(Cell::new(0u64));
    let mut report = Progress { phase: Phase::Reading, entries: 0, bytes_read: 0, bytes_total };
    progress(&report)?;
    let mut last = Instant::now();
    for input in inputs {
        let reader = Counting { inner: input.open()?, count: Rc::clone(&read) };
        #[cfg(feature = "parallel")]
        if input.options.format == InputFormat::JsonLines {
            // Parsed on every core; batches arrive in input order.
            let done_before = read.get();
            let empty = builder.new_batch();
            import::import_json_lines_parallel(reader, &input.name(), &input.options, import::JSON_LINES_CHUNK, &empty, &mut |batch, bytes| {
                cancel.check()?;
                report.entries += batch.len() as u64;
                builder.append(batch);
                if last.elapsed() >= PROGRESS_INTERVAL {
                    last = Instant::now();
                    report.bytes_read = done_before + bytes;
                    progress(&report)?;
                }
                Ok(())
            })?;
            continue;
        }
        import::import(reader, &input.name(), &input.options, &mut |record, _| {
            builder.insert_record(record);
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
        })?;
    }
    report.bytes_read = read.get();
    report.phase = Phase::Building;
    progress(&report)?;
    let entries = report.entries;
    let mut publishing = || progress(&Progress { phase: Phase::Publishing, entries, ..report });
    match builder.write_file_checked(output, &mut publishing) {
        Ok(file_bytes) => Ok(Summary { entries: builder.len() as u64, file_bytes }),
        Err(Error::DuplicateKey { key, others, .. }) => {
            let mut found = locate(inputs, &key).into_iter();
            Err(Error::DuplicateKey { first: found.next(), second: found.next(), key, others })
        }
        Err(e) => Err(e),
    }
}

/// Up to two places `key` occurs, reading the file inputs again (stdin
/// cannot be read twice).
fn locate(inputs: &[Input], key: &[u8]) -> Vec<Location> {
    let mut found = Vec::new();
    for input in inputs {
        if input.source == InputSource::Stdin {
            continue;
        }
        let Ok(reader) = input.open() else { continue };
        if let Ok(positions) = import::find_key(reader, &input.name(), &input.options, key) {
            found.extend(positions.into_iter().map(|position| Location { input: input.name(), position }));
        }
        if found.len() >= 2 {
            break;
        }
    }
    found.truncate(2);
    found
}
