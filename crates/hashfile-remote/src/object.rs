//! One remote object, opened: where it is, what it was when opened (its
//! [`Identity`]), and the connection that fetches its ranges.
//!
//! Requests run on a tokio runtime of the current-thread kind: it starts no
//! threads, and the thread that waits for a fetch drives it (`block_on`;
//! several threads may wait at once). After `fork` the child finds the
//! parent's runtime and connections unusable (their sockets and epoll set
//! are shared with the parent), so it leaves them untouched, never closing
//! or deregistering what the parent still uses, and makes its own.

use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use hashfile::read::RangeFetch;

use crate::error::{RemoteError, RemoteErrorKind};
use crate::http::HttpTransport;
use crate::interrupt::Interrupt;
use crate::s3::S3Transport;
use crate::{Location, RemoteOptions};

/// What identifies the object a reader opened: every later answer must
/// come from the same one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Length in bytes.
    pub size: u64,
    /// The ETag, if the server sends one.
    pub etag: Option<String>,
    /// Last-Modified, as the server wrote it.
    pub last_modified: Option<String>,
}

impl Identity {
    /// An error unless `other` is the same object: same length, and the
    /// same ETag (or, without ETags, the same Last-Modified).
    pub(crate) fn check(&self, other: &Identity) -> Result<(), RemoteError> {
        let same = self.size == other.size
            && match (&self.etag, &other.etag) {
                (Some(a), Some(b)) => a == b,
                _ => self.last_modified == other.last_modified,
            };
        if same {
            return Ok(());
        }
        Err(RemoteError::new(
            RemoteErrorKind::Changed,
            format!(
                "the object was replaced since it was opened (opened: {} bytes, ETag {}, Last-Modified {}; now: {} bytes, ETag {}, Last-Modified {})",
                self.size,
                self.etag.as_deref().unwrap_or("none"),
                self.last_modified.as_deref().unwrap_or("none"),
                other.size,
                other.etag.as_deref().unwrap_or("none"),
                other.last_modified.as_deref().unwrap_or("none")
            ),
        ))
    }
}

enum Transport {
    Http(HttpTransport),
    S3(S3Transport),
}

/// A runtime and a client, made by one process.
struct Connection {
    pid: u32,
    runtime: tokio::runtime::Runtime,
    transport: Transport,
}

impl Connection {
    fn new(location: &Location, options: &RemoteOptions) -> Result<Connection, RemoteError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| RemoteError::new(RemoteErrorKind::Other, format!("cannot start the I/O runtime: {e}")))?;
        // reqwest and object_store make their clients inside a runtime.
        let transport = {
            let _entered = runtime.enter();
            match location {
                Location::Http(url) => Transport::Http(HttpTransport::new(url.clone(), options)?),
                Location::S3 { bucket, key } => Transport::S3(S3Transport::new(bucket, key, options)?),
            }
        };
        Ok(Connection { pid: std::process::id(), runtime, transport })
    }

    /// One request for `ranges`: several in one multi-range request over
    /// HTTP, exactly one for S3 (which serves one range per request).
    async fn get_once(&self, ranges: &[Range<u64>], expect: Option<&Identity>) -> Result<(Vec<Bytes>, Identity), RemoteError> {
        match &self.transport {
            Transport::Http(http) => http.get(ranges, expect).await,
            // `fetch` asks S3 for one range per request; were it more, they
            // would go one after another.
            Transport::S3(s3) => {
                let mut out = Vec::with_capacity(ranges.len());
                let mut identity = None;
                for range in ranges {
                    let (bytes, got) = s3.get(range.clone(), expect).await?;
                    out.push(bytes);
                    identity = Some(got);
                }
                identity.map(|identity| (out, identity)).ok_or_else(|| RemoteError::new(RemoteErrorKind::Invalid, "a fetch of no ranges"))
            }
        }
    }

    /// A request for `ranges`, retried after a broken connection or a
    /// server error (S3's client retries on its own), with exponential
    /// backoff.
    async fn get(&self, ranges: &[Range<u64>], expect: Option<&Identity>, options: &RemoteOptions) -> Result<(Vec<Bytes>, Identity), RemoteError> {
        let retries = match self.transport {
            Transport::Http(_) => options.retries,
            Transport::S3(_) => 0,
        };
        let mut attempt = 0;
        loop {
            match self.get_once(ranges, expect).await {
                Err(error) if error.is_retryable() && attempt < retries => {
                    tokio::time::sleep(options.backoff * 2u32.pow(attempt.min(10))).await;
                    attempt += 1;
                }
                Err(mut error) if attempt > 0 => {
                    error.message = format!("{} (after {attempt} retries)", error.message);
                    return Err(error);
                }
                other => return other,
            }
        }
    }

    /// Runs `work` to completion on this thread, or until the thread's
    /// interrupt fires.
    fn run<T>(&self, work: impl std::future::Future<Output = Result<T, RemoteError>>) -> Result<T, RemoteError> {
        match Interrupt::current() {
            None => self.runtime.block_on(work),
            Some(interrupt) => self.runtime.block_on(async {
                tokio::select! {
                    biased;
                    _ = interrupt.fired() => Err(RemoteError::new(RemoteErrorKind::Interrupted, "interrupted while waiting for the server")),
                    result = work => result,
                }
            }),
        }
    }
}

/// A remote object opened for reading: the [`RangeFetch`] a
/// [`hashfile::read::BlockCache`] reads through.
pub struct RemoteObject {
    location: Location,
    options: RemoteOptions,
    identity: Identity,
    connection: Mutex<Arc<Connection>>,
    requests: AtomicU64,
    /// Whether to ask for several ranges in one request: HTTP servers
    /// mostly serve them (multipart/byteranges); one that answers such a
    /// request with 200 or 416 is asked one range at a time from then on.
    multi_range: AtomicBool,
}

impl RemoteObject {
    /// Opens `location`: one ranged GET of its first `first_len` bytes,
    /// which also gives its length and identity. Returns those bytes too.
    pub(crate) fn open(location: Location, options: RemoteOptions, first_len: u64) -> Result<(RemoteObject, Bytes), RemoteError> {
        let connection = Connection::new(&location, &options)?;
        let (mut first, identity) = connection.run(connection.get(std::slice::from_ref(&(0..first_len)), None, &options))?;
        let multi_range = matches!(connection.transport, Transport::Http(_));
        let object = RemoteObject { location, options, identity, connection: Mutex::new(Arc::new(connection)), requests: AtomicU64::new(1), multi_range: AtomicBool::new(multi_range) };
        Ok((object, first.remove(0)))
    }

    /// What the object was when opened.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Where the object is, as given to open.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Requests made so far (a multi-range request counts once; retries
    /// are not counted).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// This process's connection: the one made here, or, in a child after
    /// `fork`, a new one.
    fn connection(&self) -> Result<Arc<Connection>, RemoteError> {
        let mut current = self.connection.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if current.pid != std::process::id() {
            let fresh = Arc::new(Connection::new(&self.location, &self.options)?);
            let inherited = std::mem::replace(&mut *current, fresh);
            // The parent's runtime and sockets: dropping them here would
            // deregister the parent's sockets from the epoll set it shares
            // with this process. They are left as they are, for the
            // process's life (one runtime and a few descriptors per fork).
            std::mem::forget(inherited);
        }
        Ok(Arc::clone(&current))
    }
}

impl RangeFetch for RemoteObject {
    fn size(&self) -> u64 {
        self.identity.size
    }

    /// Groups of up to [`RANGES_PER_REQUEST`] ranges, one request each
    /// (one range per request for S3, or for a server that refused
    /// multi-range requests), up to `concurrency` requests at once.
    fn fetch(&self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
        let connection = self.connection()?;
        let identity = &self.identity;
        let options = &self.options;
        let connection = &connection;
        let group = |multi: bool| if multi { RANGES_PER_REQUEST } else { 1 };
        let multi = self.multi_range.load(Ordering::Relaxed);
        let work = stream::iter(ranges.chunks(group(multi)))
            .map(|chunk| async move {
                self.requests.fetch_add(1, Ordering::Relaxed);
                match connection.get(chunk, Some(identity), options).await {
                    // Multi-range refused: the ranges one by one, and so
                    // from now on.
                    Err(error) if chunk.len() > 1 && error.kind == RemoteErrorKind::Protocol && matches!(error.status, Some(200 | 416)) => {
                        self.multi_range.store(false, Ordering::Relaxed);
                        let mut out = Vec::with_capacity(chunk.len());
                        for range in chunk {
                            self.requests.fetch_add(1, Ordering::Relaxed);
                            out.extend(connection.get(std::slice::from_ref(range), Some(identity), options).await?.0);
                        }
                        Ok(out)
                    }
                    result => result.map(|(bytes, _)| bytes),
                }
            })
            .buffered(options.concurrency.max(1))
            .try_collect::<Vec<Vec<Bytes>>>();
        let fetched = connection.run(work)?;
        Ok(fetched.into_iter().flatten().map(|bytes| bytes.to_vec()).collect())
    }
}

/// Ranges asked for in one HTTP request: their Range header stays near
/// 2 KB, under the 4-8 KB header limits servers and proxies set.
pub const RANGES_PER_REQUEST: usize = 64;

/// Backoff before the first retry; each retry doubles it.
pub(crate) const DEFAULT_BACKOFF: Duration = Duration::from_millis(50);
