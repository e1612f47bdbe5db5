//! Building a store: collect entries, build the perfect hash, write the file.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::bits::{self, BlockLayout};
use crate::chd;
use crate::error::{Error, Result};
use crate::format::{self, BuildParameters, Header, Section, ValueKind, RECORD_KEY_UTF8};

/// Build parameters. `Default` gives the documented defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildOptions {
    /// Average keys per bucket (CHD's lambda). Larger values make a smaller
    /// hash function and a slower build. Default 3.5; range 1.0 to 10.0.
    pub keys_per_bucket: f64,
    /// Fill of the table the pilots place keys in, before the slots past `n`
    /// are remapped. Closer to 1 means larger pilots and fewer remap entries.
    /// Default 0.99; range 0.5 to 1.0.
    pub load_factor: f64,
    /// Fraction of keys hashed into the dense buckets. Default 0.5.
    pub dense_key_fraction: f64,
    /// Fraction of buckets that are dense. Default 0.2. Equal fractions give
    /// CHD's plain uniform buckets.
    pub dense_bucket_fraction: f64,
    /// First hash seed tried. If it gives two keys the same 64-bit hash, or
    /// a bucket finds no pilot, the build tries the next seed. Default 0.
    pub hash_seed: u64,
    /// Pilots per bit-packed block: 32, 128 or 256 (`BitPacker1x`, `4x`,
    /// `8x` layouts). Default 128.
    pub seed_block_len: u32,
    /// What a key added more than once does. Default `OnDuplicate::Error`.
    pub on_duplicate: OnDuplicate,
    /// Most keys per part, on average. A store of more keys is split by
    /// hash into parts built in parallel, each with a table small enough to
    /// stay in the core's cache. Default 131,072 (2^17); at least 1. A store
    /// of up to this many keys has one part and reads without the
    /// partitioned-store feature.
    pub keys_per_part: u64,
}

/// What a key added more than once does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDuplicate {
    /// The build fails with `Error::DuplicateKey`.
    #[default]
    Error,
    /// The first occurrence is kept, at its position.
    First,
    /// The last occurrence is kept, at its position (later entries win, as
    /// in a changelog).
    Last,
}

impl OnDuplicate {
    /// `"error"`, `"first"` or `"last"`.
    pub fn from_name(name: &str) -> Option<OnDuplicate> {
        match name {
            "error" => Some(OnDuplicate::Error),
            "first" => Some(OnDuplicate::First),
            "last" => Some(OnDuplicate::Last),
            _ => None,
        }
    }
}

/// The default `keys_per_part`.
pub const DEFAULT_KEYS_PER_PART: u64 = 1 << 17;

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions { keys_per_bucket: 3.5, load_factor: 0.99, dense_key_fraction: 0.5, dense_bucket_fraction: 0.2, hash_seed: 0, seed_block_len: 128, on_duplicate: OnDuplicate::Error, keys_per_part: DEFAULT_KEYS_PER_PART }
    }
}

impl BuildOptions {
    /// Checks every option's range.
    pub fn validate(&self) -> Result<()> {
        let range = |name: &'static str, v: f64, lo: f64, hi: f64| {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(Error::InvalidOption { name, reason: format!("{v} is outside {lo}..={hi}") })
            }
        };
        range("keys_per_bucket", self.keys_per_bucket, 1.0, 10.0)?;
        range("load_factor", self.load_factor, 0.5, 1.0)?;
        range("dense_key_fraction", self.dense_key_fraction, 0.0, 1.0)?;
        range("dense_bucket_fraction", self.dense_bucket_fraction, 0.0, 1.0)?;
        if (self.dense_bucket_fraction == 0.0) != (self.dense_key_fraction == 0.0) || (self.dense_bucket_fraction == 1.0) != (self.dense_key_fraction == 1.0) {
            return Err(Error::InvalidOption { name: "dense_bucket_fraction", reason: "must be 0 or 1 exactly when dense_key_fraction is".into() });
        }
        if self.keys_per_part == 0 {
            return Err(Error::InvalidOption { name: "keys_per_part", reason: "must be at least 1".into() });
        }
        if BlockLayout::from_block_len(self.seed_block_len).is_none() {
            return Err(Error::InvalidOption { name: "seed_block_len", reason: format!("{} is not 32, 128 or 256", self.seed_block_len) });
        }
        Ok(())
    }
}

/// Collects entries and writes a store.
///
/// Entries are kept already encoded as the records of the file: in memory
/// (`Builder::new`), so memory is about the size of the output plus 8 bytes
/// per entry, or straight in the file being built (`Builder::streaming`),
/// so memory is about 8 bytes per entry plus the index.
///
/// ```
/// let mut builder = hashfile::Builder::new(Default::default())?;
/// builder.insert(b"greeting", b"hello");
/// let bytes = builder.to_bytes()?;
/// let reader = hashfile::Reader::new(bytes)?;
/// assert_eq!(reader.get(b"greeting")?.map(|r| r.value), Some(&b"hello"[..]));
/// # Ok::<(), hashfile::Error>(())
/// ```
#[derive(Debug)]
pub struct Builder {
    options: BuildOptions,
    records: Records,
    offsets: Offsets,
    /// Whether any record holds a typed value: sets the required flag.
    typed: bool,
}

/// Where a builder keeps its records.
#[derive(Debug)]
enum Records {
    /// In memory.
    Memory(Vec<u8>),
    /// In the temporary file the store is built in, after room for the
    /// header: the records section comes first in the file.
    File(Box<Spill>),
}

/// Records being written to the temporary file of a streaming build.
struct Spill {
    temp: TempFile,
    destination: PathBuf,
    /// Records not yet written.
    buffer: Vec<u8>,
    /// XXH3 of the records written, for the section checksum.
    checksum: xxhash_rust::xxh3::Xxh3,
    /// Each key's hash with the first seed tried, computed as the entries
    /// come (in the import's workers), so that the build need not read the
    /// keys back.
    hashes: Vec<u64>,
    /// Records bytes, written and buffered.
    len: u64,
    /// The first write error, reported when the store is written.
    error: Option<std::io::Error>,
    /// The records, mapped once every entry is in (`Builder::seal`).
    map: Option<memmap2::Mmap>,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill").field("temp", &self.temp.path).field("len", &self.len).field("error", &self.error).finish_non_exhaustive()
    }
}

/// Bytes of records a streaming build buffers between writes.
const SPILL_BUFFER: usize = 1 << 20;

impl Spill {
    fn flush(&mut self) {
        self.checksum.update(&self.buffer);
        if self.error.is_none() && !self.buffer.is_empty() {
            if let Err(e) = self.temp.file.write_all(&self.buffer) {
                self.error = Some(e);
            }
        }
        self.buffer.clear();
    }

    fn push_record(&mut self, key: &[u8], key_utf8: bool, value: &[u8], kind: ValueKind) {
        let before = self.buffer.len();
        write_record(&mut self.buffer, key, key_utf8, value, kind);
        self.len += (self.buffer.len() - before) as u64;
        if self.buffer.len() >= SPILL_BUFFER {
            self.flush();
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.buffer.len() + bytes.len() <= SPILL_BUFFER {
            self.buffer.extend_from_slice(bytes);
            return;
        }
        self.flush();
        self.checksum.update(bytes);
        if self.error.is_none() {
            if let Err(e) = self.temp.file.write_all(bytes) {
                self.error = Some(e);
            }
        }
    }
}

/// Entries encoded away from a builder (on another thread, say), added to
/// it in one go by `Builder::append`.
#[derive(Debug, Default)]
pub struct Batch {
    records: Vec<u8>,
    starts: Vec<usize>,
    typed: bool,
    /// With a seed: each key's hash with it, computed where the batch is
    /// filled (`Builder::new_batch`).
    seed: Option<u64>,
    hashes: Vec<u64>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// An empty batch of the same kind (hashing with the same seed).
    pub fn empty_like(&self) -> Batch {
        Batch { seed: self.seed, ..Batch::default() }
    }

    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.records.clear();
        self.starts.clear();
        self.hashes.clear();
        self.typed = false;
    }

    /// Adds an entry, as `Builder::insert_tagged` does.
    pub fn insert_tagged(&mut self, key: &[u8], key_utf8: bool, value: &[u8], kind: ValueKind) {
        self.typed |= kind == ValueKind::Typed;
        self.starts.push(self.records.len());
        write_record(&mut self.records, key, key_utf8, value, kind);
        if let Some(seed) = self.seed {
            self.hashes.push(chd::hash_key(key, seed));
        }
    }

    /// Adds an imported entry.
    pub fn insert_entry(&mut self, entry: crate::import::Entry<'_>) {
        self.insert_tagged(entry.key, entry.key_utf8, entry.value, entry.kind)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// True if the batch has no entries.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }
}

/// The key of the record at `start` of `records` (written by
/// `write_record`).
fn record_key(records: &[u8], start: usize) -> &[u8] {
    let mut pos = start + 1;
    let key_len = format::read_varint(records, &mut pos).unwrap() as usize;
    format::read_varint(records, &mut pos).unwrap();
    &records[pos..pos + key_len]
}

/// Appends one record as docs/FORMAT.md lays it out.
fn write_record(out: &mut Vec<u8>, key: &[u8], key_utf8: bool, value: &[u8], kind: ValueKind) {
    out.push(kind as u8 | if key_utf8 { RECORD_KEY_UTF8 } else { 0 });
    format::write_varint(out, key.len() as u64);
    format::write_varint(out, value.len() as u64);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// Record offsets, 4 bytes each while the records stay under 4 GiB.
#[derive(Debug)]
enum Offsets {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Offsets {
    fn push(&mut self, offset: u64) {
        match self {
            Offsets::Narrow(v) => match u32::try_from(offset) {
                Ok(o) => v.push(o),
                Err(_) => {
                    let mut wide: Vec<u64> = v.iter().map(|&o| o as u64).collect();
                    wide.push(offset);
                    *self = Offsets::Wide(wide);
                }
            },
            Offsets::Wide(v) => v.push(offset),
        }
    }

    #[inline]
    fn get(&self, index: usize) -> u64 {
        match self {
            Offsets::Narrow(v) => v[index] as u64,
            Offsets::Wide(v) => v[index],
        }
    }

    fn len(&self) -> usize {
        match self {
            Offsets::Narrow(v) => v.len(),
            Offsets::Wide(v) => v.len(),
        }
    }

    /// The ids the perfect-hash build knows keys by (`chd::build`): the
    /// offsets themselves where they fit 32 bits, else the indices.
    fn ids(&self) -> Option<&[u32]> {
        match self {
            Offsets::Narrow(v) => Some(v),
            Offsets::Wide(_) => None,
        }
    }

    /// The offset of the key with this id (see `ids`).
    #[inline]
    fn of_id(&self, id: u32) -> u64 {
        match self {
            Offsets::Narrow(_) => id as u64,
            Offsets::Wide(v) => v[id as usize],
        }
    }
}

/// Index of the records section in `SectionId::ALL` (and in a header's
/// section table).
const RECORDS: usize = 4;
/// The order sections are laid out in the file, as indices into
/// `SectionId::ALL`: the records first, right after the header, so that a
/// streaming build writes them as they come; then seed_index, seeds, remap
/// and slots, whose sizes are known only once every key is in.
const FILE_ORDER: [usize; 5] = [RECORDS, 0, 1, 2, 3];

/// A built index, ready to be written after the records.
struct Prepared {
    header: Header,
    index: Vec<Vec<u8>>, // seed index, seeds, remap, slots
}

impl Builder {
    /// A builder with these options, checked.
    pub fn new(options: BuildOptions) -> Result<Builder> {
        options.validate()?;
        Ok(Builder { options, records: Records::Memory(Vec::new()), offsets: Offsets::Narrow(Vec::new()), typed: false })
    }

    /// A builder that writes records straight into a temporary file beside
    /// `destination` as they are added, and the index after them when
    /// `write_file(destination)` publishes it; the records are not held in
    /// memory. If the builder is dropped unpublished, the temporary file is
    /// removed.
    pub fn streaming(options: BuildOptions, destination: &Path) -> Result<Builder> {
        options.validate()?;
        let with_path = |e: std::io::Error| Error::io(Some(destination), e);
        let mut temp = TempFile::create_beside(destination).map_err(with_path)?;
        // Room for the header, written last.
        temp.file.write_all(&vec![0u8; Header::encoded_len()]).map_err(with_path)?;
        let spill = Spill { temp, destination: destination.to_path_buf(), buffer: Vec::with_capacity(SPILL_BUFFER), checksum: xxhash_rust::xxh3::Xxh3::new(), hashes: Vec::new(), len: 0, error: None, map: None };
        Ok(Builder { options, records: Records::File(Box::new(spill)), offsets: Offsets::Narrow(Vec::new()), typed: false })
    }

    /// An empty batch for this builder: for a streaming build, one that
    /// hashes its keys as they are added, on whatever thread fills it.
    pub fn new_batch(&self) -> Batch {
        Batch { seed: matches!(self.records, Records::File(_)).then_some(self.options.hash_seed), ..Batch::default() }
    }

    fn records_len(&self) -> u64 {
        match &self.records {
            Records::Memory(v) => v.len() as u64,
            Records::File(spill) => spill.len,
        }
    }

    /// The records; for a streaming build, once `seal` has mapped them.
    fn records(&self) -> &[u8] {
        match &self.records {
            Records::Memory(v) => v,
            Records::File(spill) => {
                let start = Header::encoded_len();
                &spill.map.as_ref().expect("sealed before use")[start..start + spill.len as usize]
            }
        }
    }

    /// Ends adding to a streaming build: writes what is buffered and maps
    /// the records for the build to read.
    fn seal(&mut self) -> Result<()> {
        let Records::File(spill) = &mut self.records else { return Ok(()) };
        if spill.map.is_some() {
            return Ok(());
        }
        spill.flush();
        if let Some(e) = spill.error.take() {
            return Err(Error::io(Some(&spill.destination), e));
        }
        // SAFETY: the file is our own temporary file, created with
        // create_new under a name no other writer uses; nothing writes to
        // the mapped range (the records) after this point, and the index and
        // header are written outside it with positioned writes.
        let map = unsafe { memmap2::Mmap::map(&spill.temp.file) }.map_err(|e| Error::io(Some(&spill.destination), e))?;
        spill.map = Some(map);
        Ok(())
    }

    /// Number of entries added so far.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// True if nothing has been added.
    pub fn is_empty(&self) -> bool {
        self.offsets.len() == 0
    }

    /// Adds a binary key and a binary value.
    pub fn insert(&mut self, key: &[u8], value: &[u8]) {
        self.insert_tagged(key, false, value, ValueKind::Binary)
    }

    /// Adds an entry, recording whether the key is UTF-8 text and the value's
    /// kind, so that a binding can give them back with their encoding.
    /// Duplicate keys are reported when the store is built.
    ///
    /// For `ValueKind::Typed`, `value` must be one encoded value
    /// (`crate::value`); `insert_value` encodes one for you.
    pub fn insert_tagged(&mut self, key: &[u8], key_utf8: bool, value: &[u8], kind: ValueKind) {
        self.typed |= kind == ValueKind::Typed;
        self.offsets.push(self.records_len());
        match &mut self.records {
            Records::Memory(v) => write_record(v, key, key_utf8, value, kind),
            Records::File(spill) => {
                spill.hashes.push(chd::hash_key(key, self.options.hash_seed));
                spill.push_record(key, key_utf8, value, kind);
            }
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
                    spill.hashes.extend(batch.starts.iter().map(|&start| chd::hash_key(record_key(&batch.records, start), seed)));
                }
                spill.write(&batch.records);
            }
        }
    }

    /// Adds a typed value. Strings in UTF-8, US-ASCII or binary are stored
    /// as plain string records, so a store of strings only needs no typed-
    /// values support to read.
    pub fn insert_value(&mut self, key: &[u8], key_utf8: bool, value: &crate::value::Value) -> Result<()> {
        use crate::value::Value;
        match value {
            Value::Str(bytes, None) => self.insert_tagged(key, key_utf8, bytes, ValueKind::Utf8),
            Value::Str(bytes, Some(name)) if name == "UTF-8" => self.insert_tagged(key, key_utf8, bytes, ValueKind::Utf8),
            Value::Str(bytes, Some(name)) if name == "ASCII-8BIT" => self.insert_tagged(key, key_utf8, bytes, ValueKind::Binary),
            Value::Str(bytes, Some(name)) if name == "US-ASCII" => self.insert_tagged(key, key_utf8, bytes, ValueKind::Ascii),
            other => {
                let mut bytes = Vec::new();
                other.encode(&mut bytes)?;
                self.insert_tagged(key, key_utf8, &bytes, ValueKind::Typed);
            }
        }
        Ok(())
    }

    /// Adds an imported entry.
    pub fn insert_entry(&mut self, entry: crate::import::Entry<'_>) {
        self.insert_tagged(entry.key, entry.key_utf8, entry.value, entry.kind)
    }

    /// Drops repeated keys per `on_duplicate` (`First` or `Last`), keeping
    /// the survivors in input order. Nothing to do for `Error`: the perfect
    /// hash build finds and reports duplicates itself.
    fn drop_duplicates(&mut self) {
        let keep_last = match self.options.on_duplicate {
            OnDuplicate::Error => return,
            OnDuplicate::First => false,
            OnDuplicate::Last => true,
        };
        let hashed = chd::sorted_hashes(&|i| self.key(i), self.offsets.len(), 0);
        let mut dropped = vec![false; self.offsets.len()];
        let mut any = false;
        // Within a run of equal hashes (indices ascending), each entry whose
        // key equals a later one's is dropped (keep last) or the later one
        // is (keep first).
        let mut start = 0;
        while start < hashed.len() {
            let mut end = start + 1;
            while end < hashed.len() && hashed[end].hash == hashed[start].hash {
                end += 1;
            }
            for a in start..end {
                for b in a + 1..end {
                    let (i, j) = (hashed[a].index as usize, hashed[b].index as usize);
                    if !dropped[i] && !dropped[j] && self.key(i) == self.key(j) {
                        dropped[if keep_last { i } else { j }] = true;
                        any = true;
                    }
                }
            }
            start = end;
        }
        if !any {
            return;
        }
        // The survivors go to memory, even from a streaming build: dropping
        // keys is the rare case.
        let old = self.records();
        let mut records = Vec::with_capacity(old.len());
        let mut offsets = Offsets::Narrow(Vec::new());
        let count = self.offsets.len();
        for (i, &dropped) in dropped.iter().enumerate() {
            if !dropped {
                let start = self.offsets.get(i) as usize;
                let end = if i + 1 < count { self.offsets.get(i + 1) as usize } else { old.len() };
                offsets.push(records.len() as u64);
                records.extend_from_slice(&old[start..end]);
            }
        }
        self.records = Records::Memory(records);
        self.offsets = offsets;
    }

    fn key(&self, index: usize) -> &[u8] {
        record_key(self.records(), self.offsets.get(index) as usize)
    }

    fn prepare(&self) -> Result<Prepared> {
        let n = self.offsets.len();
        let hashes = match &self.records {
            Records::File(spill) => Some(spill.hashes.as_slice()),
            Records::Memory(_) => None,
        };
        // Where offsets fit 32 bits, keys go by their offsets, and the
        // build hands back each slot's offset.
        let (records, offsets) = (self.records(), &self.offsets);
        let built = chd::build(n, |id| record_key(records, offsets.of_id(id as u32) as usize), offsets.ids(), hashes, &self.options)?;
        let layout = BlockLayout::from_block_len(self.options.seed_block_len).expect("validated");

        let mut seed_index = Vec::new();
        let mut seeds = Vec::new();
        let mut units = 0u32;
        seed_index.extend_from_slice(&units.to_le_bytes());
        let mut block = vec![0u32; layout.block_len()];
        for chunk in built.pilots.chunks(layout.block_len()) {
            block.fill(0);
            block[..chunk.len()].copy_from_slice(chunk);
            let (width, bytes) = layout.compress(&block);
            seeds.extend_from_slice(&bytes);
            units = units.checked_add(width as u32).ok_or_else(|| Error::format("seed section exceeds the format's limit"))?;
            seed_index.extend_from_slice(&units.to_le_bytes());
        }

        let records_len = self.records_len();
        let offset_bits = bits::bits_for(records_len.saturating_sub(1));
        if offset_bits > bits::MAX_PACKED_BITS {
            return Err(Error::format("records exceed the format's 2^56-byte limit"));
        }
        let remap = bits::pack(&built.remap, bits::bits_for((n as u64).saturating_sub(1)));
        let slots = bits::pack_at_parallel(n as u64, offset_bits, &built.slots, |e| e.hash, |e| offsets.of_id(e.index));
        drop(built.slots);

        let index = vec![seed_index, seeds, remap, slots];
        // File order: header, records, then the index (FILE_ORDER).
        let header_len = Header::encoded_len();
        let mut sections = [Section { offset: 0, length: 0, checksum: 0 }; 5];
        let mut at = header_len as u64;
        for i in FILE_ORDER {
            let (length, checksum) = match (&self.records, i) {
                // A streaming build summed its records as it wrote them.
                (Records::File(spill), RECORDS) => (spill.len, spill.checksum.digest()),
                (_, RECORDS) => (records_len, xxhash_rust::xxh3::xxh3_64(self.records())),
                _ => (index[i].len() as u64, xxhash_rust::xxh3::xxh3_64(&index[i])),
            };
            at = at.next_multiple_of(8);
            sections[i] = Section { offset: at, length, checksum };
            at += length;
        }
        let o = &self.options;
        let header = Header {
            major: format::VERSION_MAJOR,
            minor: format::VERSION_MINOR,
            header_len: header_len as u32,
            required_flags: if self.typed { format::REQUIRED_TYPED_VALUES } else { 0 } | if built.geometry.part_count > 1 { format::REQUIRED_PARTS } else { 0 },
            file_len: at,
            hash_seed: built.seed,
            geometry: built.geometry,
            seed_block_len: o.seed_block_len,
            parameters: BuildParameters { keys_per_bucket: o.keys_per_bucket, load_factor: o.load_factor, dense_key_fraction: o.dense_key_fraction, dense_bucket_fraction: o.dense_bucket_fraction },
            sections,
        };
        Ok(Prepared { header, index })
    }

    /// Checks the entry count, seals a streaming build and drops
    /// duplicates, then builds the index.
    fn finish(&mut self) -> Result<Prepared> {
        let n = self.offsets.len();
        if n > chd::MAX_BUILD_ENTRIES {
            return Err(Error::InvalidOption { name: "entries", reason: format!("{n} entries; one build takes at most {}", chd::MAX_BUILD_ENTRIES) });
        }
        self.seal()?;
        self.drop_duplicates();
        self.prepare()
    }

    /// Builds the store and writes it to `out`. Same entries and options,
    /// same bytes.
    pub fn write_to<W: Write>(&mut self, out: W) -> Result<u64> {
        let prepared = self.finish()?;
        let mut out = BufWriter::with_capacity(1 << 20, out);
        let io = |e| Error::io(None, e);
        let header = prepared.header.encode();
        out.write_all(&header).map_err(io)?;
        let mut at = header.len() as u64;
        for i in FILE_ORDER {
            let section = prepared.header.sections[i];
            let bytes = if i == RECORDS { self.records() } else { &prepared.index[i] };
            out.write_all(&[0u8; 8][..(section.offset - at) as usize]).map_err(io)?;
            out.write_all(bytes).map_err(io)?;
            at = section.offset + section.length;
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
    /// to a temporary file `.NAME.PID.N.tmp` in the same directory, which is
    /// fsynced and renamed over `path`. If anything fails, the temporary file
    /// is removed and `path` is untouched. Returns the file's length.
    pub fn write_file(&mut self, path: &Path) -> Result<u64> {
        self.write_file_checked(path, &mut || Ok(()))
    }

    /// `write_file`, calling `before_publish` once the file is written and
    /// synced, just before the rename: an error from it (a cancelled build)
    /// removes the temporary file and leaves `path` untouched.
    pub fn write_file_checked(&mut self, path: &Path, before_publish: &mut dyn FnMut() -> Result<()>) -> Result<u64> {
        let with_path = |e: std::io::Error| Error::io(Some(path), e);
        // Once published, the file is never written again: a second
        // write_file goes through a new temporary file like any other.
        if matches!(&self.records, Records::File(spill) if spill.destination == path && !spill.temp.published) {
            let prepared = self.finish().map_err(|e| e.with_path(path))?;
            // Dropping duplicates may have moved the records to memory;
            // if not, the index goes into the file that holds them.
            if let Records::File(spill) = &mut self.records {
                let len = write_in_place(spill, &prepared)?;
                return publish(&mut spill.temp, path, len, before_publish);
            }
        }
        let mut temp = TempFile::create_beside(path).map_err(with_path)?;
        let len = self.write_to(&mut temp.file).map_err(|e| e.with_path(path))?;
        publish(&mut temp, path, len, before_publish)
    }
}

/// Bytes of the index written at once by one thread.
const WRITE_PIECE: usize = 1 << 22;

/// A streaming build's finish: the records are already in the temporary
/// file after the header's room; the index goes after them and the header
/// at the start. Returns the file's length.
fn write_in_place(spill: &Spill, prepared: &Prepared) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let file = &spill.temp.file;
    let io = |e| Error::io(Some(&spill.destination), e);
    // Written in pieces on the pool: filling fresh pages of the page cache
    // costs more than the copy, and it runs on every core.
    use rayon::prelude::*;
    let pieces: Vec<(u64, &[u8])> = FILE_ORDER
        .iter()
        .filter(|&&i| i != RECORDS)
        .flat_map(|&i| {
            let at = prepared.header.sections[i].offset;
            prepared.index[i].chunks(WRITE_PIECE).enumerate().map(move |(k, piece)| (at + (k * WRITE_PIECE) as u64, piece))
        })
        .collect();
    pieces.par_iter().try_for_each(|&(at, piece)| file.write_all_at(piece, at)).map_err(io)?;
    file.set_len(prepared.header.file_len).map_err(io)?;
    file.write_all_at(&prepared.header.encode(), 0).map_err(io)?;
    Ok(prepared.header.file_len)
}

/// Syncs a written temporary file, asks `before_publish`, and renames it
/// over `path`.
fn publish(temp: &mut TempFile, path: &Path, len: u64, before_publish: &mut dyn FnMut() -> Result<()>) -> Result<u64> {
    let with_path = |e: std::io::Error| Error::io(Some(path), e);
    temp.file.sync_all().map_err(with_path)?;
    before_publish()?;
    fs::rename(&temp.path, path).map_err(with_path)?;
    temp.published = true;
    // Make the rename itself durable.
    if let Ok(dir) = fs::File::open(temp.path.parent().unwrap_or(Path::new("."))) {
        let _ = dir.sync_all();
    }
    Ok(len)
}

/// A temporary file beside a destination, removed on drop unless published.
#[derive(Debug)]
struct TempFile {
    file: fs::File,
    path: PathBuf,
    published: bool,
}

impl TempFile {
    fn create_beside(destination: &Path) -> std::io::Result<TempFile> {
        let name = destination.file_name().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?;
        let dir = match destination.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut options = fs::OpenOptions::new();
        options.read(true).write(true).create_new(true);
        // A store is meant to be shared: world-readable (subject to umask).
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
        for attempt in 0u32.. {
            let path = dir.join(format!(".{}.{}.{attempt}.tmp", name.to_string_lossy(), std::process::id()));
            match options.open(&path) {
                Ok(file) => return Ok(TempFile { file, path, published: false }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 1000 => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!("the loop returns")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_file(&self.path);
        }
    }
}
