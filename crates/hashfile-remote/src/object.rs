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
use std::sync::atomic::{AtomicU64, Ordering};
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

    async fn get_once(&self, range: Range<u64>, expect: Option<&Identity>) -> Result<(Bytes, Identity), RemoteError> {
        match &self.transport {
            Transport::Http(http) => http.get(range, expect).await,
            Transport::S3(s3) => s3.get(range, expect).await,
        }
    }

    /// A ranged GET, retried after a broken connection or a server error
    /// (S3's client retries on its own), with exponential backoff.
    async fn get(&self, range: Range<u64>, expect: Option<&Identity>, options: &RemoteOptions) -> Result<(Bytes, Identity), RemoteError> {
        let retries = match self.transport {
            Transport::Http(_) => options.retries,
            Transport::S3(_) => 0,
        };
        let mut attempt = 0;
        loop {
            match self.get_once(range.clone(), expect).await {
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
}

impl RemoteObject {
    /// Opens `location`: one ranged GET of its first `first_len` bytes,
    /// which also gives its length and identity. Returns those bytes too.
    pub(crate) fn open(location: Location, options: RemoteOptions, first_len: u64) -> Result<(RemoteObject, Bytes), RemoteError> {
        let connection = Connection::new(&location, &options)?;
        let (first, identity) = connection.run(connection.get(0..first_len, None, &options))?;
        let object = RemoteObject { location, options, identity, connection: Mutex::new(Arc::new(connection)), requests: AtomicU64::new(1) };
        Ok((object, first))
    }

    /// What the object was when opened.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Where the object is, as given to open.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Requests made so far (each range of a fetch is one; retries are
    /// not counted).
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

    fn fetch(&self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
        let connection = self.connection()?;
        self.requests.fetch_add(ranges.len() as u64, Ordering::Relaxed);
        let identity = &self.identity;
        let options = &self.options;
        let connection_ref = &connection;
        // `buffered` keeps the order of `ranges` and runs up to
        // `concurrency` requests at once.
        let work = stream::iter(ranges.iter().cloned())
            .map(|range| async move { connection_ref.get(range, Some(identity), options).await.map(|(bytes, _)| bytes.to_vec()) })
            .buffered(options.concurrency.max(1))
            .try_collect::<Vec<Vec<u8>>>();
        Ok(connection.run(work)?)
    }
}

/// Backoff before the first retry; each retry doubles it.
pub(crate) const DEFAULT_BACKOFF: Duration = Duration::from_millis(50);
