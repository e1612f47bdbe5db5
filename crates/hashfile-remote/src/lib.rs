//! Read hashfile stores where they are published: over HTTP(S) range
//! requests, and from S3 or any S3-compatible server.
//!
//! [`open`] makes two requests: a ranged GET of the first block, which
//! holds the header and section table and gives the object's length and
//! ETag, and one for the seed index, with the seeds when they are small. A
//! lookup is then at most three dependent requests (seed block, slot,
//! record; two when the seeds came at open), one once the index is cached, and none for what the block
//! cache holds. `Reader::get_many` fetches a batch level by level, each
//! level's requests together. Every answer is checked against the identity
//! recorded at open, so bytes of two versions never mix.
//!
//! ```no_run
//! let store = hashfile_remote::open("https://cdn.example.com/stores/tenants.hf", hashfile_remote::RemoteOptions::default())?;
//! if let Some(record) = store.get(b"tenant:42")? {
//!     println!("{}", String::from_utf8_lossy(record.value()));
//! }
//! # Ok::<(), hashfile::Error>(())
//! ```

#![warn(missing_docs, unreachable_pub)]

mod error;
mod http;
mod interrupt;
mod object;
mod s3;
mod write;

use std::path::Path;
use std::time::Duration;

use hashfile::format::{Header, SectionId};
use hashfile::read::{BlockCache, CacheOptions, Source, LOAD_SEED_INDEX_UP_TO, OPEN_READ_LEN};
use hashfile::Reader;

pub use error::{RemoteError, RemoteErrorKind};
pub use interrupt::{Interrupt, POLL as INTERRUPT_POLL};
pub use object::{Identity, RemoteObject};
pub use write::{delete_beside, put_bytes, put_file};

/// A reader over a remote store.
pub type RemoteReader = Reader<BlockCache<RemoteObject>>;

/// Where a remote store is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// An `http://` or `https://` URL.
    Http(url::Url),
    /// `s3://bucket/key`.
    S3 {
        /// The bucket.
        bucket: String,
        /// The object's key.
        key: String,
    },
}

impl Location {
    /// The location `text` names, if it is a URL this crate reads
    /// (`http://`, `https://`, `s3://`); `None` for anything else (a path).
    pub fn parse(text: &str) -> Option<Result<Location, RemoteError>> {
        let scheme = text.split_once("://")?.0.to_ascii_lowercase();
        Some(match scheme.as_str() {
            "http" | "https" => url::Url::parse(text).map(Location::Http).map_err(|e| {
                RemoteError::new(
                    RemoteErrorKind::Invalid,
                    format!("{text} is not a valid URL: {e}"),
                )
            }),
            "s3" => match text[5..].split_once('/') {
                Some((bucket, key)) if !bucket.is_empty() && !key.is_empty() => Ok(Location::S3 {
                    bucket: bucket.to_owned(),
                    key: key.to_owned(),
                }),
                _ => Err(RemoteError::new(
                    RemoteErrorKind::Invalid,
                    format!("{text} is not s3://BUCKET/KEY"),
                )),
            },
            _ => return None,
        })
    }

    /// True for locations [`parse`](Location::parse) recognises.
    pub fn is_remote(text: &str) -> bool {
        Location::parse(text).is_some()
    }
}

/// The options a binding takes for a remote store, by the names every
/// binding gives them (Ruby's keywords, Python's): each sets a field of
/// [`RemoteOptions`] (`http2` is `http2_prior_knowledge`, `cache_size`
/// and `block_size` are `cache`'s).
pub const OPTION_NAMES: [&str; 12] = [
    "headers",
    "timeout",
    "connect_timeout",
    "retries",
    "concurrency",
    "cache_size",
    "block_size",
    "prefetch_index",
    "http2",
    "s3_endpoint",
    "s3_region",
    "allow_origins",
];

/// The options of [`OPTION_NAMES`] that a local location takes too: a
/// local dataset's manifest may list remote shards only where
/// `allow_origins` allows. Every other remote option given for a local
/// path is an error, never ignored.
pub const LOCAL_OPTION_NAMES: [&str; 1] = ["allow_origins"];

/// How to reach a remote store and how much of it to keep.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// Headers sent with every HTTP request (`Authorization`, say).
    pub headers: Vec<(String, String)>,
    /// Longest a request may take, from sending to the body's end.
    pub timeout: Duration,
    /// Longest a new connection may take.
    pub connect_timeout: Duration,
    /// Retries of a request whose connection broke or that got 5xx or
    /// 429; each waits twice as long as the one before, from `backoff`.
    pub retries: u32,
    /// Wait before the first retry.
    pub backoff: Duration,
    /// Requests of one batch level in flight at once (HTTP/1.1 opens up to
    /// this many connections for them; HTTP/2 multiplexes them over one).
    pub concurrency: usize,
    /// Speak HTTP/2 to an `http://` server without negotiating (h2c with
    /// prior knowledge). Over https, HTTP/2 is negotiated when offered.
    pub http2_prior_knowledge: bool,
    /// The block cache.
    pub cache: CacheOptions,
    /// Read and keep the whole index at open, so that every lookup is one
    /// request (the index is a few bytes per key).
    pub prefetch_index: bool,
    /// An S3 endpoint other than AWS's (MinIO, say): overrides
    /// `AWS_ENDPOINT_URL`.
    pub s3_endpoint: Option<String>,
    /// The S3 region: overrides `AWS_REGION`.
    pub s3_region: Option<String>,
    /// An S3 access key id and secret: override `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY`.
    pub s3_credentials: Option<(String, String)>,
    /// Places a dataset's manifest may list shards at besides its own
    /// directory (`https://host[:port][/path]`, `s3://bucket[/prefix]`);
    /// shards there are read without `headers` and `s3_credentials`, which
    /// are for the manifest's own place. Empty: none. The only option a
    /// local dataset takes, whose shards are otherwise local
    /// (docs/REMOTE.md, "Where a dataset's shards may be").
    pub allow_origins: Vec<String>,
}

impl RemoteOptions {
    /// 30 s per request.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// 5 s to connect.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
    /// 3 retries: 50, 100, 200 ms apart.
    pub const DEFAULT_RETRIES: u32 = 3;
    /// 8 requests in flight.
    pub const DEFAULT_CONCURRENCY: usize = 8;
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            headers: Vec::new(),
            timeout: Self::DEFAULT_TIMEOUT,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            retries: Self::DEFAULT_RETRIES,
            backoff: object::DEFAULT_BACKOFF,
            concurrency: Self::DEFAULT_CONCURRENCY,
            http2_prior_knowledge: false,
            cache: CacheOptions::default(),
            prefetch_index: false,
            s3_endpoint: None,
            s3_region: None,
            s3_credentials: None,
            allow_origins: Vec::new(),
        }
    }
}

/// Seeds up to this many bytes are fetched with the seed index at open,
/// in the same request (the two sections are adjacent), and kept: then a
/// lookup is two requests (slot, record), and open plus a first lookup is
/// four round trips. 1 MiB holds the seeds of about 3 million keys with the
/// default build options (about 2.4 bits per key).
pub const PIN_SEEDS_UP_TO: u64 = 1 << 20;

/// The whole object at `location` (`http://`, `https://` or `s3://`), at
/// most `max` bytes: a small file that goes with stores (a dataset's
/// manifest). One request when it is at most 64 KiB, else one more for the
/// rest, checked against the identity the first answer gave. Larger than
/// `max` is an error, and nothing more is fetched.
pub fn fetch_whole(location: &str, options: RemoteOptions, max: u64) -> hashfile::Result<Vec<u8>> {
    use hashfile::read::RangeFetch;
    let at = |error: RemoteError| located(location, error);
    let parsed = parse_remote(location)?;
    let (object, first) =
        RemoteObject::open(parsed, options, max.clamp(1, 64 << 10)).map_err(at)?;
    let size = object.size();
    if size > max {
        return Err(at(RemoteError::new(
            RemoteErrorKind::Protocol,
            format!("{size} bytes, more than the {max} expected"),
        )));
    }
    let mut bytes = first;
    bytes.truncate(size as usize);
    if (bytes.len() as u64) < size {
        let rest = object
            .fetch(std::slice::from_ref(&(bytes.len() as u64..size)))
            .map_err(|e| hashfile::Error::Io {
                path: Some(Path::new(location).to_path_buf()),
                source: e,
            })?;
        bytes.extend_from_slice(&rest[0]);
    }
    Ok(bytes)
}

/// A remote error as the core's, with the location as its path.
fn located(location: &str, error: RemoteError) -> hashfile::Error {
    hashfile::Error::Io {
        path: Some(Path::new(location).to_path_buf()),
        source: error.into(),
    }
}

/// `location` parsed, or an error: it is not a URL this crate reads, or
/// not a valid one.
fn parse_remote(location: &str) -> hashfile::Result<Location> {
    match Location::parse(location) {
        Some(parsed) => parsed.map_err(|e| located(location, e)),
        None => Err(located(
            location,
            RemoteError::new(
                RemoteErrorKind::Invalid,
                "not an http://, https:// or s3:// location",
            ),
        )),
    }
}

/// Opens the store at `location` (`http://`, `https://` or `s3://`).
///
/// One request fetches the first block (at least [`OPEN_READ_LEN`] bytes:
/// the header and section table) and learns the object's length and ETag.
/// A second fetches the seed index when it is at most
/// [`LOAD_SEED_INDEX_UP_TO`] bytes, with the seeds when they are at most
/// [`PIN_SEEDS_UP_TO`] bytes (kept for the reader's life), and the
/// dictionary of compressed values (at most 1 MiB), so open never
/// asks for more than those three bounds together, whatever a header
/// claims; with
/// `prefetch_index`, one more fetches the rest of the index. Errors carry
/// the location as their path and a [`RemoteError`] inside (see
/// [`RemoteError::find_in`]).
pub fn open(location: &str, options: RemoteOptions) -> hashfile::Result<RemoteReader> {
    open_with(location, options, |cache| cache)
}

/// [`open`], for a reader whose source wraps the block cache (`wrap`
/// returns a source that reads the cache's bytes and is not resident):
/// one reader type over local and remote stores, say.
pub fn open_with<S: Source>(
    location: &str,
    options: RemoteOptions,
    wrap: impl FnOnce(BlockCache<RemoteObject>) -> S,
) -> hashfile::Result<Reader<S>> {
    let at = |error: RemoteError| located(location, error);
    let parsed = parse_remote(location)?;
    let block_len = options.cache.block_len.max(1) as u64;
    let first_len = (OPEN_READ_LEN as u64).div_ceil(block_len) * block_len;
    let prefetch_index = options.prefetch_index;
    let cache_options = options.cache;
    let (object, first) = RemoteObject::open(parsed, options, first_len).map_err(at)?;
    let cache = BlockCache::new(object, cache_options);
    cache.insert(0, &first);
    // The seed index and, if small, the seeds in one request, before the
    // reader asks for the index alone. A header longer than the first
    // block skips this; the reader then reads what it needs itself.
    if let Ok(header) = Header::decode(&first, cache.size()) {
        // With the compact index: the parts table (32 bytes a part) and
        // the pilots (a byte a bucket), the same way.
        let (index, seeds) = if header.is_compact() {
            (
                header.section(SectionId::Parts),
                header.section(SectionId::Pilots),
            )
        } else {
            (
                header.section(SectionId::SeedIndex),
                header.section(SectionId::Seeds),
            )
        };
        // Neither is asked for when larger than the reader would load: what
        // open fetches is bounded whatever the header claims.
        let mut wanted = Vec::with_capacity(3);
        // A store with compressed values: its dictionary, which lies just
        // before the index, so that no lookup waits for it.
        let dictionary = header.section(SectionId::Dictionary);
        if header.has_compressed_values()
            && dictionary.length
                <= (hashfile::compress::STATS_LEN + hashfile::compress::MAX_DICTIONARY_LEN) as u64
        {
            wanted.push(dictionary.offset..dictionary.end());
        }
        if index.length <= LOAD_SEED_INDEX_UP_TO {
            wanted.push(index.offset..index.offset + index.length);
        }
        if seeds.length <= PIN_SEEDS_UP_TO {
            wanted.push(seeds.offset..seeds.offset + seeds.length);
        }
        cache.pin(&wanted).map_err(|e| hashfile::Error::Io {
            path: Some(Path::new(location).to_path_buf()),
            source: e,
        })?;
    }
    let reader = Reader::new(wrap(cache)).map_err(|e| e.with_path(Path::new(location)))?;
    if prefetch_index {
        reader
            .prefetch_index()
            .map_err(|e| e.with_path(Path::new(location)))?;
    }
    Ok(reader)
}
