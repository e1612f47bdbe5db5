//! Building a store: collect records, build the perfect hash, write the
//! file and publish it atomically.
//!
//! - `options`: the build options, their defaults and ranges;
//! - `batch`: records encoded away from the builder, appended in one go;
//! - `records`: where the records are kept (memory or the spill file);
//! - `compress`: the pass that compresses the values, with a dictionary;
//! - `repeats`: what `on_duplicate` leaves of a repeated key;
//! - `index`: the perfect hash packed into sections, and the header;
//! - `spill`: the index of a build over its memory limit, group by group;
//! - `publish`: where a store goes, and the rename;
//! - `temp`: the temporary files, and what a killed build left of them.

mod batch;
mod compress;
mod index;
mod options;
mod publish;
mod records;
mod repeats;
mod spill;
mod spill_repeats;
mod temp;

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::cancel::CancelFlag;
use crate::chd;
use crate::error::{Error, Result};
use crate::format::{Header, Record, SectionId, ValueKind};

pub use batch::Batch;
pub use options::{
    BuildOptions, IndexKind, MemoryLimit, OnDuplicate, COMPACT_KEYS_PER_BUCKET,
    DEFAULT_KEYS_PER_PART, KEYS_PER_BUCKET_RANGE, LOAD_FACTOR_RANGE, MIN_MEMORY_LIMIT,
};
pub use publish::{destination, publish_file, refuse_url};
pub use spill::SpillStats;
pub use temp::{take_abandoned, Claim, DirLock};

use index::{Prepared, RecordsSection};
use records::{key_at, Offsets, Records, Spill};
use temp::TempFile;

use crate::format::record;
use repeats::Holds;

/// Collects entries and writes a store.
///
/// Entries are kept already encoded as the records of the file: in memory
/// (`Builder::new`), so memory is about the size of the output plus 8 bytes
/// per entry, or straight in the file being built (`Builder::streaming`),
/// so memory is about 8 bytes per entry plus the index.
///
/// With the `parallel` feature, writing runs on the current rayon pool
/// (the global one unless a pool is `install`ed). In a process forked after
/// the global pool started, that pool has no threads: build inside a pool
/// made in the child (the Ruby binding does, `ext/hashfile/src/pool.rs`).
///
/// ```
/// let mut builder = hashfile::Builder::new(Default::default())?;
/// builder.insert(b"greeting", b"hello");
/// let bytes = builder.to_bytes()?;
/// let reader = hashfile::Reader::new(bytes)?;
/// assert_eq!(reader.get(b"greeting")?.unwrap().value(), b"hello");
/// # Ok::<(), hashfile::Error>(())
/// ```
#[derive(Debug)]
pub struct Builder {
    options: BuildOptions,
    records: Records,
    offsets: Offsets,
    /// Whether any record holds a typed value: sets the required flag.
    typed: bool,
    /// Whether any record is a tombstone: sets the required flag.
    tombstones: bool,
    /// Stops writing the store when raised.
    cancel: CancelFlag,
    /// What the compression pass made, once it has run: its records are
    /// compressed, so writing the store again reuses this.
    compressed: Option<CompressedValues>,
    /// Entries added.
    entries: usize,
    /// The memory limit, resolved (`BuildOptions::memory`).
    memory: u64,
    /// A streaming build whose hashes and offsets passed half the memory
    /// limit stopped keeping them (`offsets` is empty): it will spill,
    /// and the spill reads them back from the records.
    dropped_index: bool,
    /// What the last spilled write did (`write_file`).
    spill_stats: Option<SpillStats>,
}

/// Entries between two looks at the memory a streaming build's hashes and
/// offsets take.
const MEMORY_CHECK_EVERY: usize = 1 << 12;

/// What the compression pass left for the header and the index.
#[derive(Debug)]
struct CompressedValues {
    /// The dictionary section: stats, then the dictionary.
    section: Vec<u8>,
    /// The required-feature bits the rewritten records need.
    required_flags: u64,
    /// XXH3 of the rewritten records.
    checksum: u64,
    /// The entries the pass rewrote.
    entries: usize,
}

impl Builder {
    /// A builder with these options, checked.
    pub fn new(options: BuildOptions) -> Result<Builder> {
        options.validate()?;
        let memory = options.memory.resolve();
        Ok(Builder {
            options,
            records: Records::Memory(Vec::new()),
            offsets: Offsets::Narrow(Vec::new()),
            typed: false,
            tombstones: false,
            cancel: CancelFlag::new(),
            compressed: None,
            entries: 0,
            memory,
            dropped_index: false,
            spill_stats: None,
        })
    }

    /// A builder that writes records straight into a temporary file beside
    /// `destination` as they are added, and the index after them when
    /// `write_file(destination)` publishes it; the records are not held in
    /// memory. If the builder is dropped unpublished, the temporary file is
    /// removed.
    pub fn streaming(options: BuildOptions, destination: &Path) -> Result<Builder> {
        options.validate()?;
        let destination = &publish::destination(destination)?;
        let with_path = |e: std::io::Error| Error::io(Some(destination), e);
        let mut temp = TempFile::create_beside(destination).map_err(with_path)?;
        // Room for the header, written last.
        temp.file
            .write_all(&vec![
                0u8;
                Header::encoded_len(
                    options.compression.has_section(),
                    options.fingerprints
                )
            ])
            .map_err(with_path)?;
        let spill = Spill::new(temp, destination.to_path_buf());
        let memory = options.memory.resolve();
        Ok(Builder {
            options,
            records: Records::File(Box::new(spill)),
            offsets: Offsets::Narrow(Vec::new()),
            typed: false,
            tombstones: false,
            cancel: CancelFlag::new(),
            compressed: None,
            entries: 0,
            memory,
            dropped_index: false,
            spill_stats: None,
        })
    }

    /// Stops writing the store (`write_to`, `write_file`) with
    /// `Error::Cancelled` soon after `flag` is raised, from any thread: the
    /// temporary file is removed and nothing is published. See
    /// `CancelFlag` for where a build looks at it.
    pub fn set_cancel(&mut self, flag: CancelFlag) {
        self.cancel = flag;
    }

    /// An empty batch for this builder: for a streaming build, one that
    /// hashes its keys as they are added, on whatever thread fills it.
    pub fn new_batch(&self) -> Batch {
        Batch {
            seed: matches!(self.records, Records::File(_)).then_some(self.options.hash_seed),
            ..Batch::default()
        }
    }

    fn records_len(&self) -> u64 {
        match &self.records {
            Records::Memory(v) => v.len() as u64,
            Records::File(spill) => spill.len,
        }
    }

    /// The records; for a streaming build, once `seal` has made them
    /// readable.
    fn records(&self) -> &[u8] {
        match &self.records {
            Records::Memory(v) => v,
            Records::File(spill) => {
                let start = self.header_len();
                &spill.sealed.as_ref().expect("sealed before use")
                    [start..start + spill.len as usize]
            }
        }
    }

    /// Whether the store gets a dictionary section (a build with
    /// compression): its header is one section longer.
    fn with_dictionary(&self) -> bool {
        self.options.compression.has_section()
    }

    /// The length of the store's header, which the records follow.
    fn header_len(&self) -> usize {
        Header::encoded_len(self.with_dictionary(), self.options.fingerprints)
    }

    /// The compression pass (`compress`): trains the dictionary and
    /// rewrites the records with their values compressed; replaces the
    /// offsets, unless the index will spill (`keep_offsets` false: it
    /// reads the records back).
    fn compress_values(&mut self, keep_offsets: bool) -> Result<CompressedValues> {
        let records_len = self.records_len();
        let header_len = self.header_len();
        let compression = self.options.compression;
        let cancel = &self.cancel;
        let done = match &mut self.records {
            Records::Memory(records) => {
                let mut io = compress::InMemory {
                    records,
                    out: Vec::with_capacity(records.len()),
                };
                let done = compress::pass(&mut io, records_len, compression, keep_offsets, cancel)?;
                *records = io.out;
                done
            }
            Records::File(spill) => {
                // The file changes under the map: read and write it with
                // positioned calls, then map it again.
                spill.sealed = None;
                let start = header_len as u64;
                let path = spill.destination.clone();
                let with_path = |e: std::io::Error| Error::io(Some(&path), e);
                let mut io = compress::InFile {
                    file: &spill.temp.file,
                    path: &path,
                    start,
                    written: 0,
                };
                let done = compress::pass(&mut io, records_len, compression, keep_offsets, cancel)?;
                // What lay past the shorter records goes: the index is
                // written after them, and the gaps must be zero.
                spill
                    .temp
                    .file
                    .set_len(start + done.len)
                    .map_err(with_path)?;
                spill.len = done.len;
                spill.seal().map_err(with_path)?;
                done
            }
        };
        if let Some(offsets) = done.offsets {
            self.offsets = offsets;
        }
        Ok(CompressedValues {
            section: done.section,
            required_flags: done.required_flags,
            checksum: done.checksum,
            entries: self.entries,
        })
    }

    /// Ends adding to a streaming build: writes what is buffered and makes
    /// the records readable for the build.
    fn seal(&mut self) -> Result<()> {
        let Records::File(spill) = &mut self.records else {
            return Ok(());
        };
        // Written since it was sealed: only after publishing, an error.
        let unsealed = spill.sealed.is_none() || !spill.buffer_is_empty() || spill.error.is_some();
        if !unsealed {
            return Ok(());
        }
        spill.flush();
        // Kept: every later write of this builder fails the same way.
        if let Some(e) = &spill.error {
            let again = std::io::Error::new(e.kind(), e.to_string());
            return Err(Error::io(Some(&spill.destination), again));
        }
        spill
            .seal()
            .map_err(|e| Error::io(Some(&spill.destination), e))
    }

    /// Number of entries added so far.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// True if nothing has been added.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// What the last `write_file` did if it spilled its index to
    /// temporary files (`BuildOptions::memory`); `None` if it built in
    /// memory.
    pub fn spill_stats(&self) -> Option<SpillStats> {
        self.spill_stats
    }

    /// A streaming build's hashes and offsets, once past half the memory
    /// limit, are dropped: the build will spill, and reads them back.
    fn check_memory(&mut self) {
        let Records::File(spill) = &mut self.records else {
            return;
        };
        let held = match &self.offsets {
            Offsets::Narrow(v) => v.len() * 4,
            Offsets::Wide(v) => v.len() * 8,
        } + spill.hashes.len() * 8;
        if held as u64 > self.memory / 2 {
            self.offsets = Offsets::Narrow(Vec::new());
            spill.hashes = Vec::new();
            self.dropped_index = true;
        }
    }

    /// Adds a binary key and a binary value.
    pub fn insert(&mut self, key: &[u8], value: &[u8]) {
        self.insert_record(Record::binary(key, value))
    }

    /// Adds a tombstone for `key` (value kind 4, no value): a dataset's
    /// overlay says with it that the key is deleted (docs/FORMAT.md,
    /// "Delta generations"). The store then needs a reader that knows
    /// tombstones.
    pub fn insert_tombstone(&mut self, key: &[u8], key_utf8: bool) {
        self.insert_record(Record {
            key,
            key_utf8,
            value: &[],
            kind: ValueKind::Tombstone,
        })
    }

    /// The required-feature bits of the records beyond typed values: those
    /// of compression, and tombstones.
    fn record_flags(&self) -> u64 {
        self.compressed.as_ref().map_or(0, |c| c.required_flags)
            | if self.tombstones {
                crate::format::REQUIRED_TOMBSTONES
            } else {
                0
            }
    }

    /// Adds a record, keeping whether the key is UTF-8 text and the value's
    /// kind, so that a binding can give them back with their encoding.
    /// Duplicate keys are reported when the store is built.
    ///
    /// For `ValueKind::Typed`, `record.value` must be one encoded value
    /// (`crate::value`); `insert_value` encodes one for you.
    #[inline]
    pub fn insert_record(&mut self, record: Record<'_>) {
        self.typed |= record.kind == ValueKind::Typed;
        self.tombstones |= record.kind == ValueKind::Tombstone;
        self.entries += 1;
        if self.dropped_index {
            if let Records::File(spill) = &mut self.records {
                spill.push_record(record);
            }
            return;
        }
        self.offsets.push(self.records_len());
        match &mut self.records {
            Records::Memory(v) => record.write(v),
            Records::File(spill) => {
                spill
                    .hashes
                    .push(chd::hash_key(record.key, self.options.hash_seed));
                spill.push_record(record);
            }
        }
        if self.entries % MEMORY_CHECK_EVERY == 0 {
            self.check_memory();
        }
    }

    /// Reserves room for about `bytes` more of records (say, the size of
    /// the input), so that adding them does not copy the records as they
    /// grow. Address space only: nothing is touched until it is written.
    pub fn reserve(&mut self, bytes: usize) {
        if let Records::Memory(v) = &mut self.records {
            v.reserve(bytes);
        }
    }

    /// Adds a batch's entries, after those added so far.
    pub fn append(&mut self, batch: &Batch) {
        let base = self.records_len();
        self.typed |= batch.typed;
        self.entries += batch.len();
        if self.dropped_index {
            if let Records::File(spill) = &mut self.records {
                spill.write(&batch.records);
            }
            return;
        }
        for &start in &batch.starts {
            self.offsets.push(base + start as u64);
        }
        match &mut self.records {
            Records::Memory(v) => v.extend_from_slice(&batch.records),
            Records::File(spill) => {
                let seed = self.options.hash_seed;
                if batch.seed == Some(seed) {
                    spill.hashes.extend_from_slice(&batch.hashes);
                } else {
                    spill.hashes.extend(
                        batch
                            .starts
                            .iter()
                            .map(|&start| chd::hash_key(key_at(&batch.records, start), seed)),
                    );
                }
                spill.write(&batch.records);
            }
        }
        self.check_memory();
    }

    /// Adds a typed value. Strings in UTF-8, US-ASCII or binary are stored
    /// as plain string records, so a store of strings only needs no typed-
    /// values support to read.
    pub fn insert_value(
        &mut self,
        key: &[u8],
        key_utf8: bool,
        value: &crate::value::Value,
    ) -> Result<()> {
        let mut stored = Vec::new();
        let kind = value.stored(&mut stored)?;
        self.insert_record(Record {
            key,
            key_utf8,
            value: &stored,
            kind,
        });
        Ok(())
    }

    /// The `on_duplicate` policy a build resolves repeated keys by; `None`
    /// for `error`, where the index build finds and reports them.
    fn resolving(&self) -> Option<OnDuplicate> {
        let policy = self.options.on_duplicate;
        (policy != OnDuplicate::Error).then_some(policy)
    }

    /// Resolves repeated keys in the records of a sealed build in its
    /// temporary file (`spill_repeats::resolve_repeats`: in place, or into
    /// a new temporary file), holding about what a spilled build holds
    /// whatever the records' size. The file is then as if only the kept
    /// entries had been added; its offsets and hashes are not kept.
    fn resolve_in_file(&mut self, policy: OnDuplicate, stats: &mut SpillStats) -> Result<()> {
        let start = self.header_len();
        let Records::File(spill) = &mut self.records else {
            unreachable!("resolved in the file its records are in")
        };
        let records = spill::RecordsFile::sealed(spill, start, self.entries as u64, self.typed);
        let kept = spill_repeats::resolve_repeats(
            &records,
            policy,
            &self.options,
            self.memory,
            &self.cancel,
            stats,
        )?;
        let Some(kept) = kept else {
            return Ok(());
        };
        let path = spill.destination.clone();
        spill.sealed = None;
        if let Some(moved) = kept.moved {
            // The old temporary file goes as it is dropped.
            spill.temp = moved;
        }
        spill.len = kept.len;
        spill.checksum = kept.checksum;
        self.entries = kept.entries as usize;
        spill.seal().map_err(|e| Error::io(Some(&path), e))
    }

    /// Each record's offset and its key's hash with the build's seed, read
    /// back from a sealed streaming build's file in one pass.
    fn read_offsets_and_hashes(&self) -> Result<(Offsets, Vec<u64>)> {
        let Records::File(spill) = &self.records else {
            unreachable!("read from the file its records are in")
        };
        let start = self.header_len();
        let records = spill::RecordsFile::sealed(spill, start, self.entries as u64, self.typed);
        spill_repeats::offsets_and_hashes(&records, self.options.hash_seed, &self.cancel)
    }

    /// Resolves repeated keys per `on_duplicate` (`repeats::resolve`):
    /// `first` and `last` keep one occurrence, `merge` deep-merges them
    /// into the first occurrence's position; the survivors stay in input
    /// order. Nothing to do for `error`: the perfect hash build finds and
    /// reports duplicates itself.
    fn resolve_duplicates(&mut self) -> Result<()> {
        let Some(policy) = self.resolving() else {
            return Ok(());
        };
        if let Records::File(spill) = &self.records {
            // A streaming build resolves in its file, as a spilled one
            // does: its records never come into memory. Only if two
            // hashes are equal, which the hashes kept tell without
            // reading a key.
            if !spill_repeats::may_repeat(&spill.hashes, self.entries) {
                return Ok(());
            }
            // Read back once the records are resolved: kept meanwhile,
            // they would only add to the resolve's peak.
            self.offsets = Offsets::Narrow(Vec::new());
            if let Records::File(spill) = &mut self.records {
                spill.hashes = Vec::new();
            }
            self.resolve_in_file(policy, &mut SpillStats::default())?;
            let (offsets, hashes) = self.read_offsets_and_hashes()?;
            self.offsets = offsets;
            if let Records::File(spill) = &mut self.records {
                spill.hashes = hashes;
            }
            return Ok(());
        }
        // The entries dropped, and the positions kept that hold another
        // record than their own: memory for the repeats only, besides a
        // byte per entry.
        let count = self.offsets.len();
        let mut dropped = vec![false; count];
        let mut replaced = std::collections::HashMap::new();
        self.each_repeated_key(|occurrences| {
            let resolved = repeats::resolve(policy, occurrences, |i| self.record(i))?;
            for &o in occurrences {
                dropped[o] |= o != resolved.at;
            }
            if !resolved.keeps_its_record() {
                replaced.insert(resolved.at, resolved.holds);
            }
            Ok(())
        })?;
        if !dropped.contains(&true) {
            return Ok(());
        }
        let len = self.records_len() as usize;
        let range = |offsets: &Offsets, i: usize| {
            let end = if i + 1 < count {
                offsets.get(i + 1) as usize
            } else {
                len
            };
            offsets.get(i) as usize..end
        };
        let mut offsets = Offsets::Narrow(Vec::new());
        if replaced.is_empty() {
            // Drops only (`first`, `last`, a merge that changed no value):
            // the records close up in place, each moved down over those
            // dropped before it.
            let Records::Memory(records) = &mut self.records else {
                unreachable!("a streaming build resolved in its file above")
            };
            let mut to = 0;
            for i in (0..count).filter(|&i| !dropped[i]) {
                let from = range(&self.offsets, i);
                let n = from.len();
                offsets.push(to as u64);
                records.copy_within(from, to);
                to += n;
            }
            records.truncate(to);
        } else {
            // A merged record may be longer than the one it replaces.
            let old = self.records();
            let mut records = Vec::with_capacity(old.len());
            for i in (0..count).filter(|&i| !dropped[i]) {
                offsets.push(records.len() as u64);
                match replaced.remove(&i) {
                    None => records.extend_from_slice(&old[range(&self.offsets, i)]),
                    Some(Holds::Record(o)) => {
                        records.extend_from_slice(&old[range(&self.offsets, o)])
                    }
                    Some(Holds::Merged { key_of, value }) => {
                        repeats::write_merged(self.record(key_of), &value, &mut records)?
                    }
                }
            }
            self.records = Records::Memory(records);
        }
        self.offsets = offsets;
        self.entries = self.offsets.len();
        Ok(())
    }

    /// Entry `index`'s record.
    fn record(&self, index: usize) -> Record<'_> {
        record::read(&self.records()[self.offsets.get(index) as usize..])
            .expect("a builder's own records are well formed")
    }

    /// Calls `f` with the entries, ascending, of every key added more
    /// than once (`repeats::each_repeated_key`).
    fn each_repeated_key(&self, f: impl FnMut(&[usize]) -> Result<()>) -> Result<()> {
        let hashed = chd::search::sorted_hashes(&|i| self.key(i), self.offsets.len(), 0);
        repeats::each_repeated_key(
            &hashed,
            |h| h.hash,
            |h| h.index as usize,
            |i| self.key(i),
            f,
        )
    }

    /// The error for a build with repeated keys (`repeats::FirstRepeat`).
    /// Runs only on this failing path.
    fn duplicate_error(&self) -> Error {
        let mut repeats = repeats::FirstRepeat::new();
        // Counting cannot fail, and finds the two equal keys the perfect
        // hash build found (equal keys hash alike with any seed).
        let _ = self.each_repeated_key(|occurrences| {
            repeats.add(occurrences);
            Ok(())
        });
        repeats.error(self.key(repeats.first().unwrap_or(0)))
    }

    fn key(&self, index: usize) -> &[u8] {
        key_at(self.records(), self.offsets.get(index) as usize)
    }

    /// Checks the entry count, seals a streaming build and resolves
    /// duplicates, then builds the index.
    fn finish(&mut self) -> Result<Prepared> {
        let n = self.entries;
        if n > chd::MAX_BUILD_ENTRIES {
            return Err(Error::Limit {
                what: "entries in one build",
                max: chd::MAX_BUILD_ENTRIES as u64,
            });
        }
        self.check_compressed_entries()?;
        self.cancel.check()?;
        self.seal()?;
        self.resolve_duplicates()?;
        self.cancel.check()?;
        if self.options.compression.has_section() && self.compressed.is_none() {
            self.compressed = Some(self.compress_values(true)?);
        }
        self.cancel.check()?;
        let record_flags = self.record_flags();
        let compressed = self.compressed.as_ref();
        let (checksum, hashes) = match &self.records {
            // A streaming build summed its records as it wrote them (and
            // the compression pass as it rewrote them).
            Records::File(spill) => (
                compressed.map_or_else(|| spill.checksum.digest(), |c| c.checksum),
                Some(spill.hashes.as_slice()),
            ),
            Records::Memory(v) => (xxhash_rust::xxh3::xxh3_64(v), None),
        };
        let records = RecordsSection {
            bytes: self.records(),
            offsets: &self.offsets,
            checksum,
            hashes,
            typed: self.typed,
            dictionary: compressed.map(|c| c.section.as_slice()),
            record_flags,
        };
        let prepared = match index::prepare(&records, &self.options, &self.cancel) {
            Err(Error::DuplicateKey { .. }) => return Err(self.duplicate_error()),
            other => other?,
        };
        self.cancel.check()?;
        Ok(prepared)
    }

    /// Records the compression pass compressed cannot be told from new
    /// ones by a second pass, nor merged with them: an error if entries
    /// came after it.
    fn check_compressed_entries(&self) -> Result<()> {
        if self
            .compressed
            .as_ref()
            .is_some_and(|c| c.entries != self.entries)
        {
            return Err(Error::InvalidOption {
                name: "compression",
                reason: "entries were added after the store was written with compressed values; \
                         a builder with compression writes one set of entries (start a new one)"
                    .into(),
            });
        }
        Ok(())
    }

    /// Builds the store and writes it to `out`. Same entries and options,
    /// same bytes.
    pub fn write_to<W: Write>(&mut self, out: W) -> Result<u64> {
        let prepared = self.finish()?;
        self.write_prepared(&prepared, out)
    }

    /// Writes the store `finish` prepared. `finish` runs once per store:
    /// the compression pass rewrites the records it reads.
    fn write_prepared<W: Write>(&self, prepared: &Prepared, out: W) -> Result<u64> {
        let mut out = BufWriter::with_capacity(1 << 20, out);
        let io = |e| Error::io(None, e);
        let header = prepared.header.encode();
        out.write_all(&header).map_err(io)?;
        let mut at = header.len() as u64;
        let records = (SectionId::Records, self.records());
        let index = prepared
            .index
            .iter()
            .map(|(id, bytes)| (*id, bytes.as_slice()));
        for (id, bytes) in std::iter::once(records).chain(index) {
            let section = prepared.header.section(id);
            out.write_all(&[0u8; 8][..(section.offset - at) as usize])
                .map_err(io)?;
            out.write_all(bytes).map_err(io)?;
            at = section.end();
        }
        out.flush().map_err(io)?;
        Ok(at)
    }

    /// Builds the store in memory.
    pub fn to_bytes(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Builds the store and publishes it at `path` atomically: the bytes go
    /// to a temporary file `.NAME.hashfile-PID-START-N.tmp` in the same
    /// directory, which is fsynced and renamed over `path`. If anything
    /// fails, the temporary file is removed and `path` is untouched; if the
    /// process is killed, the next build into the directory removes it.
    /// Returns the file's length.
    ///
    /// `path` may be a regular file, a path that does not exist, or a
    /// symbolic link, whose target is replaced (the link stays). A
    /// directory, device, FIFO or socket is refused with
    /// `Error::InvalidOption`, before anything is written.
    pub fn write_file(&mut self, path: &Path) -> Result<u64> {
        self.write_file_checked(path, &mut || Ok(()))
    }

    /// `write_file`, calling `before_publish` once the file is written and
    /// synced, just before the rename: an error from it (a cancelled build)
    /// removes the temporary file and leaves `path` untouched.
    pub fn write_file_checked(
        &mut self,
        path: &Path,
        before_publish: &mut dyn FnMut() -> Result<()>,
    ) -> Result<u64> {
        let resolved = publish::destination(path)?;
        let path = resolved.as_path();
        let with_path = |e: std::io::Error| Error::io(Some(path), e);
        self.spill_stats = None;
        if self.dropped_index || spill::needed(self.entries as u64, self.memory) {
            return self
                .write_spilled(path, before_publish)
                .map_err(|e| e.with_path(path));
        }
        // Once published, the file is never written again: a second
        // write_file goes through a new temporary file like any other.
        let in_place = matches!(&self.records, Records::File(spill) if spill.destination == path && !spill.temp.published);
        let prepared = self.finish().map_err(|e| e.with_path(path))?;
        // Dropping duplicates may have moved the records to memory; if not,
        // the index goes into the file that holds them.
        if let (true, Records::File(spill)) = (in_place, &mut self.records) {
            let len = publish::write_in_place(spill, &prepared)?;
            return publish::publish(&mut spill.temp, path, len, &self.cancel, before_publish);
        }
        let mut temp = TempFile::create_beside(path).map_err(with_path)?;
        let len = self
            .write_prepared(&prepared, &mut temp.file)
            .map_err(|e| e.with_path(path))?;
        publish::publish(&mut temp, path, len, &self.cancel, before_publish)
    }

    /// `write_file` for a build whose index data would pass the memory
    /// limit: the index is built group by group from temporary files
    /// (`spill`), after the records in the temporary file of the store.
    fn write_spilled(
        &mut self,
        path: &Path,
        before_publish: &mut dyn FnMut() -> Result<()>,
    ) -> Result<u64> {
        if self.options.fingerprints {
            return Err(Error::InvalidOption {
                name: "fingerprints",
                reason: format!(
                    "are written by a build whose index fits its memory limit, and {} entries pass it (raise memory)",
                    self.entries
                ),
            });
        }
        self.check_compressed_entries()?;
        self.cancel.check()?;
        self.seal()?;
        // The spill reads the records back: hashes and offsets kept while
        // entries came (up to half the limit) would only add to its peak.
        self.offsets = Offsets::Narrow(Vec::new());
        if let Records::File(spill) = &mut self.records {
            spill.hashes = Vec::new();
        }
        self.dropped_index = true;
        let with_dictionary = self.with_dictionary();
        // An in-memory build's records go to a temporary file first; so
        // do a streaming build's, if it is written somewhere else than
        // the destination it was made for.
        let in_place = matches!(&self.records, Records::File(spill) if spill.destination == path && !spill.temp.published);
        if !in_place {
            let temp = TempFile::create_beside(path).map_err(|e| Error::io(Some(path), e))?;
            let mut moved = Spill::new(temp, path.to_path_buf());
            moved.write(&vec![0u8; Header::encoded_len(with_dictionary, false)]);
            // The checksum covers the records, not the header's room.
            moved.flush();
            moved.checksum = xxhash_rust::xxh3::Xxh3::new();
            moved.len = 0;
            moved.write(self.records());
            moved.flush();
            if let Some(e) = moved.error.take() {
                return Err(Error::io(Some(path), e));
            }
            moved.seal().map_err(|e| Error::io(Some(path), e))?;
            self.records = Records::File(Box::new(moved));
        }
        let start = Header::encoded_len(with_dictionary, false);
        let mut stats = SpillStats::default();
        if let Some(policy) = self.resolving() {
            self.resolve_in_file(policy, &mut stats)?;
        }
        self.cancel.check()?;
        if self.options.compression.has_section() && self.compressed.is_none() {
            self.compressed = Some(self.compress_values(false)?);
        }
        self.cancel.check()?;
        let record_flags = self.record_flags();
        let compressed = self.compressed.as_ref();
        let Records::File(spill) = &mut self.records else {
            unreachable!("moved to a file above")
        };
        let header = {
            let sealed = spill.sealed.as_ref().expect("sealed above");
            let records = spill::RecordsFile {
                file: &spill.temp.file,
                start: start as u64,
                mapped: &sealed[start..start + spill.len as usize],
                entries: self.entries as u64,
                checksum: compressed.map_or_else(|| spill.checksum.digest(), |c| c.checksum),
                typed: self.typed,
                dictionary: compressed.map(|c| c.section.as_slice()),
                record_flags,
                destination: path,
            };
            let header = spill::build(
                &records,
                &self.options,
                self.memory,
                &self.cancel,
                &mut stats,
            )?;
            self.spill_stats = Some(stats);
            header
        };
        self.cancel.check()?;
        publish::publish(
            &mut spill.temp,
            path,
            header.file_len,
            &self.cancel,
            before_publish,
        )
    }
}
