//! Options given to a call, checked against the table and made into the
//! core's, the remote crate's and the runtime's option types: the one
//! place every binding's options are judged, with one set of messages.

use std::time::Duration;

use hashfile::import::{Column, ImportOptions, InputFormat};
use hashfile::{BuildOptions, Compression, Error, IndexKind, MemoryLimit, OnDuplicate, Result};
use hashfile_remote::{Location, RemoteOptions};

use super::table::{self, Call, Group, Kind, Language, Spec};
use super::{suggest, Arg};
use crate::dataset::manifest::MANIFEST_NAME;
use crate::{OpenOptions, Refresh};

/// The options a binding was given for one call: (name, value) pairs in
/// the order given.
pub type Given = [(String, Arg)];

/// What `open` was asked for.
#[derive(Clone, Debug, Default)]
pub struct OpenRequest {
    /// What the runtime's [`open`](crate::open) takes.
    pub options: OpenOptions,
    /// Check every checksum once open.
    pub verify: bool,
    /// The most decoded values a binding keeps (0: no memo).
    pub memo: u64,
    /// How a binding decodes values (Ruby's own options).
    pub decode: DecodeOptions,
}

/// How values are handed out, where a language has a choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Map keys as Symbols (Ruby).
    pub symbolize_names: bool,
    /// Frozen values (Ruby): given, or the default with a memo.
    pub freeze: bool,
    /// Values as stored, undecoded (Ruby).
    pub raw: bool,
    /// A serializer was given (Ruby): the binding keeps it.
    pub serializer: bool,
}

/// What `build` or `build_from` was asked for.
#[derive(Clone, Debug)]
pub struct BuildRequest {
    /// The build's options.
    pub options: BuildOptions,
    /// A dataset of this many shards, or one store.
    pub shards: Option<u32>,
    /// `build_from`: the input format, else each file's extension's.
    pub format: Option<InputFormat>,
    /// `build_from`: how input files are read.
    pub import: ImportOptions,
    /// `build_from`: threads to build on, else one per core.
    pub threads: Option<usize>,
    /// A dataset's publish: how the history records it, what it keeps.
    pub publish: crate::dataset::PublishOptions,
}

/// Checks `given` against what `open` takes in `language` for
/// `location`, and makes them what the runtime opens with.
pub fn open_request(location: &str, given: &Given, language: Language) -> Result<OpenRequest> {
    check_names(Call::Open, language, given)?;
    let remote_location = Location::is_remote(location);
    let mut request = OpenRequest::default();
    let mut remote = RemoteOptions::default();
    let (mut reload, mut reopen, mut freeze) = (None, false, None);
    for (name, value, spec) in present(Call::Open, language, given) {
        if spec.group == Group::Remote && !remote_location && name != "allow_origins" {
            return Err(Error::InvalidOption {
                name: spec.name,
                reason: format!("is for remote stores (http://, https://, s3://), and {location} is a local path"),
            });
        }
        match name {
            "verify" => request.verify = boolean(spec, value)?,
            "reload" => reload = Some(seconds(spec, value)?),
            "on_change" => {
                reopen = match text(spec, value)?.as_str() {
                    "raise" => false,
                    "reopen" => true,
                    other => {
                        return Err(invalid(
                            spec,
                            format!("must be \"raise\" or \"reopen\", not {other:?}"),
                        ))
                    }
                }
            }
            "memo" => request.memo = count(spec, value)?,
            "max_value_size" => request.options.max_value_size = Some(count(spec, value)?),
            "generation" => request.options.generation = Some(text(spec, value)?),
            "symbolize_names" => request.decode.symbolize_names = boolean(spec, value)?,
            "freeze" => freeze = Some(boolean(spec, value)?),
            "raw" => request.decode.raw = boolean(spec, value)?,
            "serializer" => request.decode.serializer = true,
            _ => remote_option(&mut remote, name, value, spec)?,
        }
    }
    check_raw(&request.decode)?;
    // S3's options reach an s3:// store, or the s3:// shards a manifest
    // elsewhere may name once allow_origins allows them.
    let s3 = |place: &str| {
        place
            .get(..5)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("s3://"))
    };
    if remote_location && !s3(location) && !remote.allow_origins.iter().any(|o| s3(o)) {
        if let Some(spec) = ["s3_endpoint", "s3_region"].iter().find_map(|n| {
            given
                .iter()
                .any(|(g, _)| g == n)
                .then(|| table::find(n))
                .flatten()
        }) {
            return Err(Error::InvalidOption {
                name: spec.name,
                reason: format!("is for s3:// locations (or the s3:// shards allow_origins lets a manifest name), and {location} is not one"),
            });
        }
    }
    let memo = request.memo > 0;
    request.decode.freeze = freeze.unwrap_or(memo);
    if memo && !request.decode.freeze {
        return Err(Error::InvalidOption {
            name: "memo",
            reason: "returns the same object for a key again, so its values are frozen: leave freeze out or give freeze: true".into(),
        });
    }
    if memo && request.decode.serializer {
        return Err(Error::InvalidOption {
            name: "memo",
            reason: "keeps frozen values, and a serializer's objects are frozen only at the top: give one of memo and serializer".into(),
        });
    }
    let remote_dataset = remote_location && location.ends_with(MANIFEST_NAME);
    if let Some(generation) = &request.options.generation {
        if reload.is_some() || reopen {
            return Err(Error::InvalidOption {
                name: "generation",
                reason: format!("{generation:?} reads that generation and no other, and {} follows new ones: give one ({location})", if reopen { "on_change \"reopen\"" } else { "reload" }),
            });
        }
    }
    request.options.refresh = match (reload, reopen) {
        (Some(_), true) => return Err(Error::InvalidOption { name: "reload", reason: format!("and on_change \"reopen\" are two ways to follow new versions; give one ({location})") }),
        (Some(_), _) if remote_location && !remote_dataset => return Err(Error::InvalidOption { name: "reload", reason: format!("is for local stores and remote datasets (the URL of their hashfile-dataset.json); a remote store raises StaleError when the object is replaced, or reopens it with on_change \"reopen\" ({location})") }),
        (_, true) if !remote_location => return Err(Error::InvalidOption { name: "on_change", reason: format!("\"reopen\" is for remote stores; a local one takes reload SECONDS ({location})") }),
        (Some(every), _) => Refresh::Every(every),
        (None, true) => Refresh::ReopenOnChange,
        (None, false) => Refresh::Never,
    };
    request.options.remote = remote;
    Ok(request)
}

/// What `history` or `rollback` was asked for: how to reach the dataset,
/// and (rollback) the note its history records.
#[derive(Clone, Debug, Default)]
pub struct GenerationsRequest {
    /// How a remote dataset is reached.
    pub remote: RemoteOptions,
    /// The rollback's note.
    pub note: Option<String>,
}

/// Checks `given` against what `call` (`History` or `Rollback`) takes in
/// `language` for the dataset at `location`.
pub fn generations_request(
    call: Call,
    location: &str,
    given: &Given,
    language: Language,
) -> Result<GenerationsRequest> {
    check_names(call, language, given)?;
    let mut request = GenerationsRequest::default();
    for (name, value, spec) in present(call, language, given) {
        if spec.group == Group::Remote && !Location::is_remote(location) && name != "allow_origins"
        {
            return Err(Error::InvalidOption {
                name: spec.name,
                reason: format!("is for remote datasets (s3://, http://, https://), and {location} is a local path"),
            });
        }
        match name {
            "note" => request.note = Some(text(spec, value)?),
            _ => remote_option(&mut request.remote, name, value, spec)?,
        }
    }
    Ok(request)
}

/// What `diff` was asked for.
#[derive(Clone, Debug)]
pub struct DiffRequest {
    /// How each side is opened: the remote options, and its generation.
    pub a: OpenOptions,
    /// See `a`.
    pub b: OpenOptions,
    /// Whether lines carry values.
    pub values: bool,
    /// Threads to compare on, else one per core.
    pub threads: Option<usize>,
}

/// Checks `given` against what `diff` takes in `language` for the tables
/// at `a` and `b`.
pub fn diff_request(a: &str, b: &str, given: &Given, language: Language) -> Result<DiffRequest> {
    check_names(Call::Diff, language, given)?;
    let mut remote = RemoteOptions::default();
    let mut request = DiffRequest {
        a: OpenOptions::default(),
        b: OpenOptions::default(),
        values: true,
        threads: None,
    };
    let either_remote = Location::is_remote(a) || Location::is_remote(b);
    for (name, value, spec) in present(Call::Diff, language, given) {
        if spec.group == Group::Remote && !either_remote && name != "allow_origins" {
            return Err(Error::InvalidOption {
                name: spec.name,
                reason: format!("is for remote stores (http://, https://, s3://), and {a} and {b} are local paths"),
            });
        }
        match name {
            "generation_a" => request.a.generation = Some(text(spec, value)?),
            "generation_b" => request.b.generation = Some(text(spec, value)?),
            "values" => request.values = boolean(spec, value)?,
            "threads" => request.threads = Some(threads(spec, value)?),
            _ => remote_option(&mut remote, name, value, spec)?,
        }
    }
    request.a.remote = remote.clone();
    request.b.remote = remote;
    Ok(request)
}

/// Sets the remote option `name` of `remote`.
fn remote_option(remote: &mut RemoteOptions, name: &str, value: &Arg, spec: &Spec) -> Result<()> {
    match name {
        "headers" => remote.headers = headers(spec, value)?,
        "timeout" => remote.timeout = seconds(spec, value)?,
        "connect_timeout" => remote.connect_timeout = seconds(spec, value)?,
        "retries" => remote.retries = count(spec, value)? as u32,
        "concurrency" => remote.concurrency = count(spec, value)? as usize,
        "cache_size" => {
            remote.cache.capacity = usize::try_from(count(spec, value)?).unwrap_or(usize::MAX)
        }
        "block_size" => remote.cache.block_len = count(spec, value)? as usize,
        "prefetch_index" => remote.prefetch_index = boolean(spec, value)?,
        "http2" => remote.http2_prior_knowledge = boolean(spec, value)?,
        "s3_endpoint" => remote.s3_endpoint = Some(text(spec, value)?),
        "s3_region" => remote.s3_region = Some(text(spec, value)?),
        "allow_origins" => remote.allow_origins = texts(spec, value)?,
        _ => unreachable!("every remote option is matched: {name}"),
    }
    Ok(())
}

/// A shard count given to `shard_of`, judged as the `shards` option is:
/// an integer from 1 to `MAX_SHARDS` (a boolean is not one).
pub fn shard_count(value: &Arg) -> Result<std::num::NonZeroU32> {
    let spec = table::find("shards").expect("shards is in the table");
    let n = count(spec, value)?;
    Ok(std::num::NonZeroU32::new(n as u32).expect("count checked the range"))
}

/// The remote options alone (where a dataset is written to or published
/// at, for a binding's task writer): each name one of `Group::Remote`'s.
pub fn remote_options(given: &Given) -> Result<RemoteOptions> {
    let known: Vec<&str> = table::OPTIONS
        .iter()
        .filter(|s| s.group == Group::Remote)
        .map(|s| s.name)
        .collect();
    if let Some((name, _)) = given
        .iter()
        .find(|(name, _)| !known.contains(&name.as_str()))
    {
        return Err(Error::UnknownOption {
            message: format!(
                "unknown remote option {name}; the remote options are: {}",
                known.join(", ")
            ),
            names: vec![name.clone()],
        });
    }
    let mut remote = RemoteOptions::default();
    for (name, value) in given.iter().filter(|(_, value)| !value.is_nil()) {
        let spec = table::find(name).expect("names checked first");
        remote_option(&mut remote, name, value, spec)?;
    }
    Ok(remote)
}

/// The build options of one shard of a distributed job (a Spark task's
/// `ShardWriter`): what `build` takes, but not `shards`, which is the
/// dataset's count, given to the writer itself.
pub fn shard_task_options(given: &Given, language: Language) -> Result<BuildOptions> {
    task_request(given, language).map(|request| request.options)
}

/// How the driver of a distributed job publishes its dataset: the
/// publish options (history, gates) of the same options its tasks were
/// given.
pub fn publish_task_options(
    given: &Given,
    language: Language,
) -> Result<crate::dataset::PublishOptions> {
    let mut publish = task_request(given, language)?.publish;
    publish.tool.push_str(", a distributed job");
    Ok(publish)
}

/// A build request of one dataset's shard, `shards` being the job's.
fn task_request(given: &Given, language: Language) -> Result<BuildRequest> {
    if given
        .iter()
        .any(|(name, value)| name == "shards" && !value.is_nil())
    {
        return Err(Error::InvalidArgument {
            message: "shards is the dataset's shard count, given to the writer itself, not a build option of one shard".into(),
        });
    }
    let mut dataset = given.to_vec();
    dataset.push(("shards".into(), Arg::Int(1)));
    build_request(Call::Build, &dataset, language)
}

/// Checks `given` against what `call` (`Patch` or `Compact`) takes in
/// `language`, and makes them the patch's options.
pub fn patch_request(
    call: Call,
    given: &Given,
    language: Language,
) -> Result<crate::dataset::PatchOptions> {
    check_names(call, language, given)?;
    let mut options = crate::dataset::PatchOptions {
        publish: crate::dataset::PublishOptions::by(format!(
            "hashfile {} ({})",
            env!("CARGO_PKG_VERSION"),
            language.name()
        )),
        ..Default::default()
    };
    for (name, value, spec) in present(call, language, given) {
        match name {
            "on_duplicate" => {
                let policy = text(spec, value)?;
                options.on_duplicate = OnDuplicate::from_name(&policy).ok_or_else(|| {
                    invalid(
                        spec,
                        format!(
                            "must be one of {}, not {policy:?}",
                            table::choices("on_duplicate").join(", ")
                        ),
                    )
                })?;
            }
            "on_missing" => {
                let named = text(spec, value)?;
                options.on_missing =
                    crate::dataset::OnMissing::from_name(&named).ok_or_else(|| {
                        invalid(
                            spec,
                            format!(
                                "must be one of {}, not {named:?}",
                                table::choices("on_missing").join(", ")
                            ),
                        )
                    })?;
            }
            "compact_overlays" => options.compact_overlays = count(spec, value)? as usize,
            "compact_fraction" => options.compact_fraction = number(spec, value)?,
            "keep" => options.publish.keep = count(spec, value)? as u32,
            "retain" => options.publish.retain = seconds(spec, value)?,
            "note" => options.publish.note = Some(text(spec, value)?),
            "max_entry_change" => {
                options.publish.gates.max_entry_change = Some(number(spec, value)?)
            }
            "max_type_change" => options.publish.gates.max_type_change = Some(number(spec, value)?),
            "refuse_empty" => options.publish.gates.refuse_empty = boolean(spec, value)?,
            "force" => options.publish.force = boolean(spec, value)?,
            _ => unreachable!("every patch option is matched: {name}"),
        }
    }
    // The history says what published it.
    options.publish.tool.push_str(match call {
        Call::Compact => ", compact",
        _ => ", patch",
    });
    options.check()?;
    Ok(options)
}

/// The options of a dataset's publish (its history and its gates), which a
/// build of one store does not take.
const PUBLISH_OPTIONS: [&str; 7] = [
    "keep",
    "retain",
    "note",
    "max_entry_change",
    "max_type_change",
    "refuse_empty",
    "force",
];

/// Checks `given` against what `call` (`Build` or `BuildFrom`) takes in
/// `language`, and makes them the build's options.
pub fn build_request(call: Call, given: &Given, language: Language) -> Result<BuildRequest> {
    check_names(call, language, given)?;
    // The index layout first: its defaults are where the others start.
    let mut options = match given
        .iter()
        .find(|(name, value)| name == "index" && !value.is_nil())
    {
        Some((_, value)) => {
            let spec = table::find("index").expect("index is an option");
            BuildOptions::for_index(IndexKind::parse(&text(spec, value)?)?)
        }
        None => BuildOptions::default(),
    };
    let mut request = BuildRequest {
        options: BuildOptions::default(),
        shards: None,
        format: None,
        import: ImportOptions::new(InputFormat::JsonObject),
        threads: None,
        publish: crate::dataset::PublishOptions::by(format!(
            "hashfile {} ({})",
            env!("CARGO_PKG_VERSION"),
            language.name()
        )),
    };
    let o = &mut options;
    for (name, value, spec) in present(call, language, given) {
        match name {
            // Taken by the binding (the callables) or above (the index).
            "index" | "progress" | "serializer" => {}
            "on_duplicate" => {
                let policy = text(spec, value)?;
                o.on_duplicate = OnDuplicate::from_name(&policy).ok_or_else(|| {
                    invalid(spec, format!("must be one of {}, not {policy:?}", table::choices("on_duplicate").join(", ")))
                })?;
            }
            "compression" => o.compression = Compression::parse(&text(spec, value)?)?,
            "memory" => {
                o.memory = match value {
                    Arg::Int(_) | Arg::BigInt(_) => MemoryLimit::bytes(count_in(spec, value, 0, u64::MAX).map_err(|_| {
                        invalid(spec, format!("must be a size in bytes (an integer, or text such as \"64M\" or \"auto\"), not {}", value.show()))
                    })?)?,
                    _ => MemoryLimit::parse(&text(spec, value)?)?,
                }
            }
            "keys_per_bucket" => o.keys_per_bucket = number(spec, value)?,
            "load_factor" => o.load_factor = number(spec, value)?,
            "dense_key_fraction" => o.dense_key_fraction = number(spec, value)?,
            "dense_bucket_fraction" => o.dense_bucket_fraction = number(spec, value)?,
            "hash_seed" => o.hash_seed = count(spec, value)?,
            "seed_block_len" => o.seed_block_len = count(spec, value)? as u32,
            "keys_per_part" => o.keys_per_part = count(spec, value)?,
            "shards" => request.shards = Some(count(spec, value)? as u32),
            "keep" => request.publish.keep = count(spec, value)? as u32,
            "retain" => request.publish.retain = seconds(spec, value)?,
            "note" => request.publish.note = Some(text(spec, value)?),
            "max_entry_change" => request.publish.gates.max_entry_change = Some(number(spec, value)?),
            "max_type_change" => request.publish.gates.max_type_change = Some(number(spec, value)?),
            "refuse_empty" => request.publish.gates.refuse_empty = boolean(spec, value)?,
            "force" => request.publish.force = boolean(spec, value)?,
            "threads" => request.threads = Some(threads(spec, value)?),
            "format" => {
                let named = text(spec, value)?;
                request.format = Some(InputFormat::from_name(&named).ok_or_else(|| {
                    invalid(spec, format!("{named:?} is no format; one of: {}", InputFormat::names_list()))
                })?);
            }
            "key_column" => request.import.key_column = column(spec, value)?,
            "value_column" => request.import.value_column = column(spec, value)?,
            "header" => request.import.header = boolean(spec, value)?,
            "quote" => request.import.quote = boolean(spec, value)?,
            "col_sep" => request.import.col_sep = Some(character(spec, value)?),
            "comment" => request.import.comment = Some(character(spec, value)?),
            "key_field" => request.import.key_field = text(spec, value)?,
            "value_field" => request.import.value_field = text(spec, value)?,
            "records_at" => request.import.records_at = Some(text(spec, value)?),
            _ => unreachable!("every build option is matched: {name}"),
        }
        if let Some((known, ..)) = hashfile::import::OPTION_FORMATS
            .iter()
            .find(|(known, ..)| *known == name)
        {
            request.import.given.push(known);
        }
    }
    if request.shards.is_none() {
        if let Some((name, _)) = given
            .iter()
            .find(|(name, value)| PUBLISH_OPTIONS.contains(&name.as_str()) && !value.is_nil())
        {
            let spec = table::find(name).expect("a publish option");
            return Err(Error::InvalidOption {
                name: spec.name,
                reason: "is for publishing a dataset (its history and gates), and this builds one store (give shards for a dataset)".into(),
            });
        }
    }
    request.publish.check()?;
    options.validate()?;
    request.options = options;
    Ok(request)
}

/// The decode options one lookup takes (Ruby's `get` and `dig`), over
/// those `open` was given.
pub const DECODE_OPTIONS: [&str; 3] = ["symbolize_names", "freeze", "raw"];

/// The decode options of one `call` (`"get"`, `"dig"`): `open`'s, with
/// each of `given` that is not nil in its place, judged as `open` judges
/// them (true or false; no symbolize_names where the call reads raw). A
/// call's `raw: true` on a reader opened with `symbolize_names` reads the
/// bytes: open's options are defaults, the call's are what it asks.
pub fn decode_for_call(
    call: &str,
    open: DecodeOptions,
    given: &[(&str, &Arg)],
) -> Result<DecodeOptions> {
    let mut decode = open;
    let mut asked = DecodeOptions::default();
    for (i, &(name, value)) in given.iter().enumerate() {
        if given[..i].iter().any(|(earlier, _)| *earlier == name) {
            return Err(Error::UnknownOption {
                message: format!(
                    "the option {name} is given twice (as a Symbol and as a String?); give it once"
                ),
                names: vec![name.to_owned()],
            });
        }
        // The table's entry is looked up only for a message: a lookup's
        // keywords are judged on every call that has them.
        if !DECODE_OPTIONS.contains(&name) {
            let guess = suggest::closest(name, &DECODE_OPTIONS)
                .map(|g| format!(" (did you mean {g}?)"))
                .unwrap_or_default();
            return Err(Error::UnknownOption {
                message: format!(
                    "unknown option {name} for {call}{guess}; it takes: {}",
                    DECODE_OPTIONS.join(", ")
                ),
                names: vec![name.to_owned()],
            });
        }
        let on = match value {
            Arg::Nil => continue,
            Arg::Bool(on) => *on,
            other => {
                let spec = table::find(name).expect("the decode options are in the table");
                return Err(wrong_type(spec, "true or false", other));
            }
        };
        match name {
            "symbolize_names" => (decode.symbolize_names, asked.symbolize_names) = (on, on),
            "freeze" => decode.freeze = on,
            _ => decode.raw = on,
        }
    }
    // Keys asked for in this call, of bytes returned undecoded.
    check_raw(&DecodeOptions {
        raw: decode.raw,
        ..asked
    })?;
    Ok(decode)
}

/// `raw` returns the stored bytes, which have no map keys to symbolize.
fn check_raw(decode: &DecodeOptions) -> Result<()> {
    if decode.raw && decode.symbolize_names {
        return Err(Error::InvalidOption {
            name: "symbolize_names",
            reason: "does not apply with raw: true, which returns the stored bytes undecoded; give one of them".into(),
        });
    }
    Ok(())
}

/// The most threads a build may ask for: a few per core is all a build
/// can use, and far more stalls the machine.
pub fn max_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_mul(4)
        .max(16)
}

/// Every name in `given` is an option of `call` in `language`; else one
/// error naming them all, with a guess at each.
fn check_names(call: Call, language: Language, given: &Given) -> Result<()> {
    // Ruby can give one name twice (memo: and "memo" =>): which one was
    // meant is anyone's guess, so neither is taken.
    for (i, (name, _)) in given.iter().enumerate() {
        if given[..i].iter().any(|(earlier, _)| earlier == name) {
            return Err(Error::UnknownOption {
                message: format!(
                    "the option {name} is given twice (as a Symbol and as a String?); give it once"
                ),
                names: vec![name.clone()],
            });
        }
    }
    let known = table::names(call, language);
    let unknown: Vec<&str> = given
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| !known.contains(name))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let mut hints = Vec::new();
    for name in &unknown {
        // An option of another call or language is named as such before
        // any guess: memo given to build_from is open's, not memory.
        if let Some(elsewhere) = table::find(name) {
            let calls: Vec<&str> = elsewhere
                .calls
                .iter()
                .filter(|c| **c != call)
                .map(|c| c.name())
                .collect();
            if !elsewhere.applies_to(language) {
                hints.push(format!(
                    "{name} is an option of the {} binding alone",
                    elsewhere
                        .only
                        .iter()
                        .map(|l| l.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            } else if !calls.is_empty() {
                hints.push(format!("{name} is an option of {}", calls.join(" and ")));
            }
        } else if let Some(guess) = suggest::closest(name, &known) {
            hints.push(format!(
                "did you mean {guess}{}?",
                if unknown.len() > 1 {
                    format!(" for {name}")
                } else {
                    String::new()
                }
            ));
        }
    }
    let s = if unknown.len() > 1 { "s" } else { "" };
    let hints = if hints.is_empty() {
        String::new()
    } else {
        format!(" ({})", hints.join("; "))
    };
    Err(Error::UnknownOption {
        message: format!(
            "unknown option{s} {} for {}{hints}; it takes: {}",
            unknown.join(", "),
            call.name(),
            known.join(", ")
        ),
        names: unknown.into_iter().map(str::to_owned).collect(),
    })
}

/// The options given with a value (`Nil` is the default, given or not),
/// with their table entries.
fn present(
    call: Call,
    language: Language,
    given: &Given,
) -> impl Iterator<Item = (&str, &Arg, &'static Spec)> {
    given
        .iter()
        .filter(|(_, value)| !value.is_nil())
        .map(move |(name, value)| {
            let spec = call
                .option(language, name)
                .or_else(|| table::find(name))
                .expect("names checked first");
            (name.as_str(), value, spec)
        })
}

fn invalid(spec: &Spec, reason: String) -> Error {
    Error::InvalidOption {
        name: spec.name,
        reason,
    }
}

fn wrong_type(spec: &Spec, expected: &str, value: &Arg) -> Error {
    Error::OptionType {
        name: spec.name.into(),
        expected: expected.into(),
        given: value.describe(),
    }
}

fn boolean(spec: &Spec, value: &Arg) -> Result<bool> {
    match value {
        Arg::Bool(b) => Ok(*b),
        other => Err(wrong_type(spec, "true or false", other)),
    }
}

fn text(spec: &Spec, value: &Arg) -> Result<String> {
    match value {
        Arg::Text(t) | Arg::Symbol(t) => Ok(t.clone()),
        other => Err(wrong_type(spec, "a string", other)),
    }
}

fn texts(spec: &Spec, value: &Arg) -> Result<Vec<String>> {
    match value {
        Arg::List(items) => items
            .iter()
            .map(|item| match item {
                Arg::Text(t) => Ok(t.clone()),
                other => Err(wrong_type(spec, "a list of strings", other)),
            })
            .collect(),
        other => Err(wrong_type(spec, "a list of strings", other)),
    }
}

fn headers(spec: &Spec, value: &Arg) -> Result<Vec<(String, String)>> {
    let Arg::Map(pairs) = value else {
        return Err(wrong_type(spec, "a map of header names to values", value));
    };
    pairs
        .iter()
        .map(|(k, v)| match (k, v) {
            (Arg::Text(k) | Arg::Symbol(k), Arg::Text(v)) => Ok((k.clone(), v.clone())),
            (Arg::Text(_) | Arg::Symbol(_), other) | (other, _) => {
                Err(wrong_type(spec, "a map of strings to strings", other))
            }
        })
        .collect()
}

fn number(spec: &Spec, value: &Arg) -> Result<f64> {
    match value {
        Arg::Float(f) => Ok(*f),
        Arg::Int(i) => Ok(*i as f64),
        // Past 128 bits: a number still, out of every option's range.
        Arg::BigInt(digits) => Ok(digits.parse().unwrap_or(f64::INFINITY)),
        other => Err(wrong_type(spec, "a number", other)),
    }
}

fn count(spec: &Spec, value: &Arg) -> Result<u64> {
    match spec.kind {
        Kind::Count { min, max } => count_in(spec, value, min, max),
        _ => unreachable!("{} is no count", spec.name),
    }
}

fn count_in(spec: &Spec, value: &Arg, min: u64, max: u64) -> Result<u64> {
    let out_of_range = || {
        invalid(
            spec,
            format!(
                "must be an integer from {min} to {max}, not {}",
                value.show()
            ),
        )
    };
    match value {
        Arg::Int(i) => u64::try_from(*i)
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(out_of_range),
        Arg::BigInt(_) => Err(out_of_range()),
        other => Err(wrong_type(spec, "an integer", other)),
    }
}

fn threads(spec: &Spec, value: &Arg) -> Result<usize> {
    let most = max_threads();
    count_in(spec, value, 1, most as u64)
        .map(|n| n as usize)
        .map_err(|e| match e {
            Error::InvalidOption { .. } => invalid(
                spec,
                format!(
                    "must be from 1 to {most} (4 per core, at least 16), not {}",
                    value.show()
                ),
            ),
            other => other,
        })
}

fn seconds(spec: &Spec, value: &Arg) -> Result<Duration> {
    let Kind::Seconds { zero } = spec.kind else {
        unreachable!("{} is no number of seconds", spec.name)
    };
    let s = number(spec, value)?;
    let least = if zero { "from 0" } else { "above 0" };
    let taken = s.is_finite() && (s > 0.0 || (zero && s == 0.0)) && s <= 86_400.0;
    if !taken {
        // Large numbers as a person writes them (1e300), not in full.
        let shown = if s.abs() >= 1e16 {
            format!("{s:e}")
        } else {
            value.show()
        };
        return Err(invalid(
            spec,
            format!("must be a number of seconds {least} to 86400 (a day), not {shown}"),
        ));
    }
    let duration = Duration::from_secs_f64(s);
    // 1e-300 is above 0, and a Duration of nothing: a timeout that always
    // fires.
    if !zero && duration < Duration::from_millis(1) {
        return Err(invalid(
            spec,
            format!("must be at least 0.001 seconds, not {}", value.show()),
        ));
    }
    Ok(duration)
}

fn column(spec: &Spec, value: &Arg) -> Result<Column> {
    match value {
        Arg::Int(i) => usize::try_from(*i).map(Column::Index).map_err(|_| {
            invalid(
                spec,
                format!("must be a column name or a 0-based index, not {i}"),
            )
        }),
        Arg::BigInt(digits) => Err(invalid(
            spec,
            format!("must be a column name or a 0-based index, not {digits}"),
        )),
        // A negative index given as text (the CLI's flags are text) is no
        // header name anyone meant.
        Arg::Text(t) | Arg::Symbol(t)
            if t.strip_prefix('-')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) =>
        {
            Err(invalid(
                spec,
                format!("must be a column name or a 0-based index, not {t}"),
            ))
        }
        // Text as the CLI's flags read it: "*" the row, else a header name
        // (of digits and matching no header, the index they spell); a
        // Symbol reads as its name does.
        Arg::Text(t) | Arg::Symbol(t) => Ok(Column::parse(t)),
        other => Err(wrong_type(spec, "a column name or a 0-based index", other)),
    }
}

fn character(spec: &Spec, value: &Arg) -> Result<u8> {
    match value {
        Arg::Text(t) => match t.as_bytes() {
            [c] if c.is_ascii() => Ok(*c),
            _ => Err(invalid(
                spec,
                format!("must be one ASCII character, not {t:?}"),
            )),
        },
        other => Err(wrong_type(spec, "a one-character string", other)),
    }
}
