//! The table of every option a binding's `open`, `build` and `build_from`
//! take: names, what each takes, which calls and languages take it, and
//! its default. Bindings make their keyword lists, constants and type
//! stubs from it; none writes an option's name, range or default itself.

use hashfile::import::{Column, ImportOptions, InputFormat};
use hashfile::{BuildOptions, OnDuplicate};
use hashfile_remote::RemoteOptions;

use super::Arg;

/// A call of the API that takes options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `open(location, **options)`: a store, a dataset or a URL.
    Open,
    /// `build(path, entries, **options)`: a store, or with `shards` a
    /// dataset, from the language's own keys and values.
    Build,
    /// `build_from(inputs, output, **options)`: from data files.
    BuildFrom,
    /// `history(dataset, **options)`: a dataset's publishes kept.
    History,
    /// `rollback(dataset, generation = nil, **options)`: an earlier
    /// generation made current again.
    Rollback,
    /// `diff(a, b, **options)`: what changed between two tables.
    Diff,
    /// `patch(dataset, changes, **options)`: upserts and deletes published
    /// as a delta generation.
    Patch,
    /// `compact(dataset, **options)`: a dataset's overlays folded into new
    /// bases.
    Compact,
}

impl Call {
    /// Every call, in the order docs list them.
    pub const ALL: [Call; 8] = [
        Call::Open,
        Call::Build,
        Call::BuildFrom,
        Call::History,
        Call::Rollback,
        Call::Diff,
        Call::Patch,
        Call::Compact,
    ];

    /// The call's name, as every language spells it.
    pub fn name(self) -> &'static str {
        match self {
            Call::Open => "open",
            Call::Build => "build",
            Call::BuildFrom => "build_from",
            Call::History => "history",
            Call::Rollback => "rollback",
            Call::Diff => "diff",
            Call::Patch => "patch",
            Call::Compact => "compact",
        }
    }

    /// The options this call takes in `language`, in the table's order.
    pub fn options(self, language: Language) -> impl Iterator<Item = &'static Spec> {
        OPTIONS
            .iter()
            .filter(move |spec| spec.calls.contains(&self) && spec.applies_to(language))
    }

    /// The option of this call named `name` in `language`.
    pub fn option(self, language: Language, name: &str) -> Option<&'static Spec> {
        self.options(language).find(|spec| spec.name == name)
    }
}

/// A language with a binding: some options belong to one language's
/// values alone (Ruby's Symbols and frozen objects).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// The gem (`ext/hashfile`), and the CLI, which runs on it.
    Ruby,
    /// The Python package (`python/`).
    Python,
    /// The JVM binding.
    Java,
}

impl Language {
    /// The language's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Language::Ruby => "Ruby",
            Language::Python => "Python",
            Language::Java => "Java",
        }
    }
}

/// Which part of the library an option goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// How a store is built (`hashfile::BuildOptions`).
    Build,
    /// How input files are read (`hashfile::import::ImportOptions`).
    Import,
    /// How a remote store is reached (`hashfile_remote::RemoteOptions`);
    /// `allow_origins` is the one a local dataset takes too.
    Remote,
    /// How an open store is read over time and decoded.
    Open,
    /// How a build runs: shards, threads, progress.
    Job,
}

/// What an option takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A number (integer or float).
    Number,
    /// An integer from `min` to `max`.
    Count {
        /// The least.
        min: u64,
        /// The most.
        max: u64,
    },
    /// A name out of a list, or a name with a parameter (`"zstd:19"`).
    Name,
    /// A size in bytes: an integer, or text such as `"64M"`.
    Size,
    /// A CSV column: a 0-based index, a header name, or `"*"`.
    Column,
    /// One ASCII character.
    Char,
    /// Any text.
    Text,
    /// `true` or `false`.
    Bool,
    /// Seconds: above 0 (or from 0, with `zero`) and at most a day.
    Seconds {
        /// Whether 0 is taken (check every time).
        zero: bool,
    },
    /// A map of header names to values.
    Headers,
    /// A list of texts.
    TextList,
    /// An object of the language's that the binding calls (a progress
    /// callable, a serializer): the binding checks and keeps it.
    Object,
}

/// One option.
#[derive(Debug)]
pub struct Spec {
    /// Its name, the same in every language.
    pub name: &'static str,
    /// Where it goes.
    pub group: Group,
    /// What it takes.
    pub kind: Kind,
    /// The calls that take it.
    pub calls: &'static [Call],
    /// The languages that take it: empty for every one.
    pub only: &'static [Language],
    /// One line on what it does, for stubs and help.
    pub doc: &'static str,
}

impl Spec {
    /// Whether `language`'s binding takes this option.
    pub fn applies_to(&self, language: Language) -> bool {
        self.only.is_empty() || self.only.contains(&language)
    }

    /// Its default, as the table's [`Arg`]: `Nil` where leaving it out
    /// means "none" or "decided at the call" (a format from each file's
    /// extension, `freeze` following `memo`).
    pub fn default(&self) -> Arg {
        default_of(self.name)
    }
}

const OPEN: &[Call] = &[Call::Open];
const BUILDS: &[Call] = &[Call::Build, Call::BuildFrom];
const BUILD_FROM: &[Call] = &[Call::BuildFrom];
const RUBY: &[Language] = &[Language::Ruby];
const OPEN_AND_BUILD: &[Call] = &[Call::Open, Call::Build];
/// A remote location's options: what opens it, and what reads or writes
/// a dataset's history there.
const REMOTE: &[Call] = &[Call::Open, Call::History, Call::Rollback, Call::Diff];
const DIFF: &[Call] = &[Call::Diff];
const BUILD_FROM_AND_DIFF: &[Call] = &[Call::BuildFrom, Call::Diff];
const PUBLISHES: &[Call] = &[
    Call::Build,
    Call::BuildFrom,
    Call::Rollback,
    Call::Patch,
    Call::Compact,
];
/// What keeps a history: every publish but a rollback, which keeps the
/// current one's.
const KEEPS: &[Call] = &[Call::Build, Call::BuildFrom, Call::Patch, Call::Compact];
/// What a build or a patch is judged by: its gates, and how repeats go.
const BUILDS_AND_PATCH: &[Call] = &[Call::Build, Call::BuildFrom, Call::Patch];
const PATCH: &[Call] = &[Call::Patch];

const fn spec(
    name: &'static str,
    group: Group,
    kind: Kind,
    calls: &'static [Call],
    doc: &'static str,
) -> Spec {
    Spec {
        name,
        group,
        kind,
        calls,
        only: &[],
        doc,
    }
}

const fn count(min: u64, max: u64) -> Kind {
    Kind::Count { min, max }
}

/// Every option, in the order docs and messages list them.
pub static OPTIONS: [Spec; 58] = [
    // open
    spec("verify", Group::Open, Kind::Bool, OPEN, "check every checksum at open"),
    spec("reload", Group::Open, Kind::Seconds { zero: true }, OPEN, "look for a newer store (or dataset generation) at most every this many seconds"),
    spec("on_change", Group::Open, Kind::Name, OPEN, "\"raise\" or \"reopen\": what a remote reader does when its object is replaced"),
    spec("memo", Group::Open, count(0, crate::MAX_MEMO_ENTRIES), OPEN, "keep up to this many decoded values, and return the same object for a key again"),
    spec("max_value_size", Group::Open, count(1, u64::MAX), OPEN, "the largest value read, in bytes, as stored or decoded"),
    spec("generation", Group::Open, Kind::Text, OPEN, "read this generation of a dataset, one its history keeps, and never another"),
    Spec { only: RUBY, ..spec("symbolize_names", Group::Open, Kind::Bool, OPEN, "map keys as Symbols") },
    Spec { only: RUBY, ..spec("freeze", Group::Open, Kind::Bool, OPEN, "frozen values (the default with memo)") },
    Spec { only: RUBY, ..spec("raw", Group::Open, Kind::Bool, OPEN, "values as stored, undecoded") },
    Spec { only: RUBY, ..spec("serializer", Group::Open, Kind::Object, OPEN_AND_BUILD, "[dump, load], or an object with dump and load (Marshal), for values of any class") },
    // remote
    spec("headers", Group::Remote, Kind::Headers, REMOTE, "HTTP headers sent with every request to the location's own place"),
    spec("timeout", Group::Remote, Kind::Seconds { zero: false }, REMOTE, "the longest a request may take, in seconds"),
    spec("connect_timeout", Group::Remote, Kind::Seconds { zero: false }, REMOTE, "the longest a new connection may take, in seconds"),
    spec("retries", Group::Remote, count(0, 100), REMOTE, "retries of a request that failed on the way"),
    spec("concurrency", Group::Remote, count(1, 1024), REMOTE, "requests in flight at once"),
    spec("cache_size", Group::Remote, count(0, u64::MAX), REMOTE, "bytes of blocks kept"),
    spec("block_size", Group::Remote, count(512, 64 << 20), REMOTE, "bytes per block fetched"),
    spec("prefetch_index", Group::Remote, Kind::Bool, REMOTE, "read the whole index at open: one request per lookup"),
    spec("http2", Group::Remote, Kind::Bool, REMOTE, "speak HTTP/2 to an http:// server without negotiating"),
    spec("s3_endpoint", Group::Remote, Kind::Text, REMOTE, "an S3 endpoint other than AWS's"),
    spec("s3_region", Group::Remote, Kind::Text, REMOTE, "the S3 region"),
    spec("allow_origins", Group::Remote, Kind::TextList, REMOTE, "places a dataset's manifest may list shards at besides its own"),
    // build
    spec("on_duplicate", Group::Build, Kind::Name, BUILDS_AND_PATCH, "what a key given twice does: error, first, last, merge"),
    spec("index", Group::Build, Kind::Name, BUILDS, "the index layout: classic or compact"),
    spec("compression", Group::Build, Kind::Name, BUILDS, "none, zstd, zstd:LEVEL, zstd:LEVEL,LONG_LEVEL or auto"),
    spec("memory", Group::Build, Kind::Size, BUILDS, "the most the index data may take (bytes, \"64M\", \"auto\"); past it a build spills to temporary files"),
    spec("keys_per_bucket", Group::Build, Kind::Number, BUILDS, "average keys per bucket of the perfect hash"),
    spec("load_factor", Group::Build, Kind::Number, BUILDS, "keys per slot"),
    spec("dense_key_fraction", Group::Build, Kind::Number, BUILDS, "the fraction of keys in the dense buckets"),
    spec("dense_bucket_fraction", Group::Build, Kind::Number, BUILDS, "the fraction of buckets that are dense"),
    spec("hash_seed", Group::Build, count(0, u64::MAX), BUILDS, "the hash's first seed"),
    spec("seed_block_len", Group::Build, count(0, u32::MAX as u64), BUILDS, "seeds per block"),
    spec("keys_per_part", Group::Build, count(1, u64::MAX), BUILDS, "keys per part of the index"),
    spec("shards", Group::Job, count(1, hashfile::dataset::MAX_SHARDS as u64), BUILDS, "build a dataset of this many shards in the directory given"),
    spec("keep", Group::Job, count(1, crate::dataset::history::MAX_KEEP as u64), KEEPS, "a dataset's publishes kept: the current one and those a rollback can go to"),
    spec("retain", Group::Job, Kind::Seconds { zero: true }, KEEPS, "the least time a replaced generation of a dataset stays, for readers that opened it, in seconds"),
    spec("note", Group::Job, Kind::Text, PUBLISHES, "why or from what a dataset is published (or rolled back), kept in its history"),
    spec("max_entry_change", Group::Job, Kind::Number, BUILDS_AND_PATCH, "refuse to publish a dataset whose entry count differs from the current one's by more than this fraction (0.1: 10%)"),
    spec("max_type_change", Group::Job, Kind::Number, BUILDS_AND_PATCH, "refuse to publish a dataset in which more than this fraction of the current keys changed value type"),
    spec("refuse_empty", Group::Job, Kind::Bool, BUILDS_AND_PATCH, "refuse to publish a dataset of no entries"),
    spec("force", Group::Job, Kind::Bool, BUILDS_AND_PATCH, "publish a dataset even if a gate refuses it; its history records what was overridden"),
    // patch
    spec("on_missing", Group::Job, Kind::Name, PATCH, "what a delete of a key the dataset does not hold does: error or ignore"),
    spec("compact_overlays", Group::Job, count(1, crate::dataset::manifest::MAX_OVERLAYS as u64), PATCH, "compact a shard instead of giving it more overlays than this"),
    spec("compact_fraction", Group::Job, Kind::Number, PATCH, "compact a shard whose overlays would hold more records than this fraction of its base's"),
    // build_from
    spec("format", Group::Import, Kind::Name, BUILD_FROM, "the input format (else from each file's extension)"),
    spec("key_column", Group::Import, Kind::Column, BUILD_FROM, "CSV/TSV: the key's column (a header name, or a 0-based index)"),
    spec("value_column", Group::Import, Kind::Column, BUILD_FROM, "CSV/TSV: the value's column, or \"*\" for the whole row"),
    spec("header", Group::Import, Kind::Bool, BUILD_FROM, "CSV/TSV: the first row names the columns"),
    spec("quote", Group::Import, Kind::Bool, BUILD_FROM, "CSV/TSV: fields may be quoted"),
    spec("col_sep", Group::Import, Kind::Char, BUILD_FROM, "CSV/TSV: the separator"),
    spec("comment", Group::Import, Kind::Char, BUILD_FROM, "CSV/TSV: lines starting with this are skipped"),
    spec("key_field", Group::Import, Kind::Text, BUILD_FROM, "JSON records: the key's field"),
    spec("value_field", Group::Import, Kind::Text, BUILD_FROM, "JSON records: the value's field"),
    spec("records_at", Group::Import, Kind::Text, BUILD_FROM, "JSON: the path to the records inside the document"),
    spec("threads", Group::Job, count(1, u32::MAX as u64), BUILD_FROM_AND_DIFF, "threads the build (or diff) runs on (at most 4 per core, at least 16)"),
    // diff
    spec("generation_a", Group::Job, Kind::Text, DIFF, "the generation of the first dataset to compare (else its current one)"),
    spec("generation_b", Group::Job, Kind::Text, DIFF, "the generation of the second dataset to compare (else its current one)"),
    spec("values", Group::Job, Kind::Bool, DIFF, "each change's line carries the values, not the key alone"),
];

/// Progress is a callable: the table lists it so that it is a known
/// option, and the binding calls it.
pub static PROGRESS: Spec = spec(
    "progress",
    Group::Job,
    Kind::Object,
    BUILD_FROM,
    "called with (entries, bytes_read, bytes_total, phase) at most every 0.1 s",
);

/// The option named `name`, in any call or language.
pub fn find(name: &str) -> Option<&'static Spec> {
    OPTIONS
        .iter()
        .chain(std::iter::once(&PROGRESS))
        .find(|spec| spec.name == name)
}

/// Every option of `call` in `language`, `progress` included.
pub fn names(call: Call, language: Language) -> Vec<&'static str> {
    let mut names: Vec<_> = call.options(language).map(|spec| spec.name).collect();
    if PROGRESS.calls.contains(&call) {
        names.push(PROGRESS.name);
    }
    names
}

fn default_of(name: &str) -> Arg {
    let build = BuildOptions::default();
    let import = ImportOptions::new(InputFormat::JsonObject);
    let remote = RemoteOptions::default();
    let column = |c: &Column| match c {
        Column::Index(i) => Arg::Int(*i as i128),
        Column::Name(n) => Arg::Text(n.clone()),
        Column::Row => Arg::Text(hashfile::import::WHOLE.into()),
    };
    let char_arg = |c: Option<u8>| c.map_or(Arg::Nil, |c| Arg::Text((c as char).to_string()));
    match name {
        "verify" | "symbolize_names" | "raw" => Arg::Bool(false),
        "on_change" => Arg::Text("raise".into()),
        "memo" => Arg::Int(0),
        "max_value_size" => Arg::Int(hashfile::read::DEFAULT_MAX_VALUE_SIZE as i128),
        "timeout" => Arg::Float(remote.timeout.as_secs_f64()),
        "connect_timeout" => Arg::Float(remote.connect_timeout.as_secs_f64()),
        "retries" => Arg::Int(remote.retries as i128),
        "concurrency" => Arg::Int(remote.concurrency as i128),
        "cache_size" => Arg::Int(remote.cache.capacity as i128),
        "block_size" => Arg::Int(remote.cache.block_len as i128),
        "prefetch_index" => Arg::Bool(remote.prefetch_index),
        "http2" => Arg::Bool(remote.http2_prior_knowledge),
        "allow_origins" => Arg::List(Vec::new()),
        "on_duplicate" => Arg::Text(build.on_duplicate.name().into()),
        "index" => Arg::Text(build.index.name().into()),
        "compression" => Arg::Text(build.compression.name()),
        "memory" => Arg::Text(build.memory.name()),
        "keys_per_bucket" => Arg::Float(build.keys_per_bucket),
        "load_factor" => Arg::Float(build.load_factor),
        "dense_key_fraction" => Arg::Float(build.dense_key_fraction),
        "dense_bucket_fraction" => Arg::Float(build.dense_bucket_fraction),
        "hash_seed" => Arg::Int(build.hash_seed as i128),
        "seed_block_len" => Arg::Int(build.seed_block_len as i128),
        "keys_per_part" => Arg::Int(build.keys_per_part as i128),
        "keep" => Arg::Int(crate::dataset::history::DEFAULT_KEEP as i128),
        "values" => Arg::Bool(true),
        "on_missing" => Arg::Text("error".into()),
        "compact_overlays" => Arg::Int(crate::dataset::patch::DEFAULT_COMPACT_OVERLAYS as i128),
        "compact_fraction" => Arg::Float(crate::dataset::patch::DEFAULT_COMPACT_FRACTION),
        "refuse_empty" | "force" => Arg::Bool(false),
        "retain" => Arg::Float(crate::dataset::history::DEFAULT_RETAIN.as_secs_f64()),
        "key_column" => column(&import.key_column),
        "value_column" => column(&import.value_column),
        "header" => Arg::Bool(import.header),
        "quote" => Arg::Bool(import.quote),
        "col_sep" => char_arg(import.col_sep),
        "comment" => char_arg(import.comment),
        "key_field" => Arg::Text(import.key_field.clone()),
        "value_field" => Arg::Text(import.value_field.clone()),
        "records_at" => import.records_at.clone().map_or(Arg::Nil, Arg::Text),
        // Left out: decided at the call (freeze follows memo, the format
        // each file's extension, reload and shards none, threads one per
        // core, headers and S3 places none).
        _ => Arg::Nil,
    }
}

/// Names the kinds of value a `Name` option takes, for stubs and help.
pub fn choices(name: &str) -> Vec<String> {
    match name {
        "on_change" => vec!["raise".into(), "reopen".into()],
        "on_missing" => vec!["error".into(), "ignore".into()],
        "on_duplicate" => OnDuplicate::NAMES
            .iter()
            .map(|(n, _)| n.to_string())
            .collect(),
        "index" => hashfile::IndexKind::NAMES
            .iter()
            .map(|(n, _)| n.to_string())
            .collect(),
        "compression" => vec![
            "none".into(),
            "zstd".into(),
            "zstd:LEVEL".into(),
            "zstd:LEVEL,LONG_LEVEL".into(),
            "auto".into(),
        ],
        "format" => InputFormat::NAMES
            .iter()
            .map(|(n, _)| n.to_string())
            .collect(),
        _ => Vec::new(),
    }
}
