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
            .map_err(|e| {
                RemoteError::new(
                    RemoteErrorKind::Other,
                    format!("cannot start the I/O runtime: {e}"),
                )
            })?;
        // reqwest and object_store make their clients inside a runtime.
        let transport = {
            let _entered = runtime.enter();
            match location {
                Location::Http(url) => Transport::Http(HttpTransport::new(url.clone(), options)?),
                Location::S3 { bucket, key } => {
                    Transport::S3(S3Transport::new(bucket, key, options)?)
                }
            }
        };
        Ok(Connection {
            pid: std::process::id(),
            runtime,
            transport,
        })
    }

    /// One request for `ranges`: several in one multi-range request over
    /// HTTP (with the store's `header` bytes, when given, to compare),
    /// exactly one for S3 (which serves one range per request).
    async fn get_once(
        &self,
        ranges: &[Range<u64>],
        expect: Option<&Identity>,
        header: Option<&[u8]>,
    ) -> Result<(Vec<Vec<u8>>, Identity), RemoteError> {
        match &self.transport {
            Transport::Http(http) => http.get(ranges, expect, header).await,
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
                identity.map(|identity| (out, identity)).ok_or_else(|| {
                    RemoteError::new(RemoteErrorKind::Invalid, "a fetch of no ranges")
                })
            }
        }
    }

    /// A request for `ranges`, retried after a broken connection or a
    /// server error (S3's client retries on its own), with exponential
    /// backoff.
    async fn get(
        &self,
        ranges: &[Range<u64>],
        expect: Option<&Identity>,
        header: Option<&[u8]>,
        options: &RemoteOptions,
    ) -> Result<(Vec<Vec<u8>>, Identity), RemoteError> {
        let retries = match self.transport {
            Transport::Http(_) => options.retries,
            Transport::S3(_) => 0,
        };
        let mut attempt = 0;
        loop {
            match self.get_once(ranges, expect, header).await {
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
    fn run<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, RemoteError>>,
    ) -> Result<T, RemoteError> {
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
    /// The store's header as opened, when the validators cannot be trusted
    /// to change with the content (see [`RemoteObject::open`]).
    header: Option<Bytes>,
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
    ///
    /// How later answers are tied to this version of the store: over S3,
    /// by the ETag (S3's is a hash of the content) with If-Match. Over
    /// HTTP, validators alone cannot do it: a server may send none, or an
    /// ETag made of the modification time and length (nginx's), and a store
    /// rebuilt at the same length within the same second, or copied with
    /// its time kept (`cp -p`, `rsync -a`), keeps both. So every request
    /// also asks for the store's header, whose section checksums change
    /// with any change of content, and an answer whose header differs is a
    /// replaced store; a server that serves one range per request gets one
    /// more request for the header after each batch. The same holds for an
    /// S3 server that sends no ETag.
    pub(crate) fn open(
        location: Location,
        options: RemoteOptions,
        first_len: u64,
    ) -> Result<(RemoteObject, Vec<u8>), RemoteError> {
        let connection = Connection::new(&location, &options)?;
        let (mut first, identity) = connection.run(connection.get(
            std::slice::from_ref(&(0..first_len)),
            None,
            None,
            &options,
        ))?;
        let first = first.remove(0);
        let content_etag =
            matches!(connection.transport, Transport::S3(_)) && identity.etag.is_some();
        let header = match hashfile::format::Header::len_from_prefix(
            &first[..first.len().min(hashfile::format::HEADER_PREFIX_LEN)],
            identity.size,
        ) {
            Ok(len) if !content_etag && len <= first.len() => {
                Some(Bytes::copy_from_slice(&first[..len]))
            }
            // Not a store (the reader says so next), or one whose header
            // is longer than the first block: compared by validators only.
            _ => None,
        };
        let multi_range = matches!(connection.transport, Transport::Http(_));
        let object = RemoteObject {
            location,
            options,
            identity,
            header,
            connection: Mutex::new(Arc::new(connection)),
            requests: AtomicU64::new(1),
            multi_range: AtomicBool::new(multi_range),
        };
        Ok((object, first))
    }

    /// Whether every answer's header is compared with the one opened (see
    /// `RemoteObject::open`).
    pub fn checks_header(&self) -> bool {
        self.header.is_some()
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
        let mut current = self
            .connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
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

    /// Groups of up to `RANGES_PER_REQUEST` ranges, one request each
    /// (one range per request for S3, or for a server that refused
    /// multi-range requests), up to `concurrency` requests at once.
    fn fetch(&self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
        let connection = self.connection()?;
        let identity = &self.identity;
        let options = &self.options;
        let connection = &connection;
        let group = |multi: bool| if multi { RANGES_PER_REQUEST } else { 1 };
        let multi = self.multi_range.load(Ordering::Relaxed);
        // The header goes with each request only where several ranges may.
        let header = if multi { self.header.as_deref() } else { None };
        let work = stream::iter(ranges.chunks(group(multi)))
            .map(|chunk| async move {
                self.requests.fetch_add(1, Ordering::Relaxed);
                match connection.get(chunk, Some(identity), header, options).await {
                    // Multi-range refused or mishandled (the whole object,
                    // 416, or a 206 that is no answer to the ranges asked:
                    // one span coalescing them, longer than they are): the
                    // ranges one by one, and so from now on.
                    Err(error)
                        if multi
                            && error.kind == RemoteErrorKind::Protocol
                            && matches!(error.status, Some(200 | 206 | 416)) =>
                    {
                        self.multi_range.store(false, Ordering::Relaxed);
                        let mut out = Vec::with_capacity(chunk.len());
                        for range in chunk {
                            self.requests.fetch_add(1, Ordering::Relaxed);
                            out.extend(
                                connection
                                    .get(std::slice::from_ref(range), Some(identity), None, options)
                                    .await?
                                    .0,
                            );
                        }
                        Ok(out)
                    }
                    result => result.map(|(bytes, _)| bytes),
                }
            })
            .buffered(options.concurrency.max(1))
            .try_collect::<Vec<Vec<Vec<u8>>>>();
        let fetched = connection.run(work)?;
        // Ranges fetched one per request carried no header: one request
        // for it after them shows they all came from the store opened (a
        // store replaced before any of them is replaced before this one).
        if let Some(opened) = self
            .header
            .as_ref()
            .filter(|_| !self.multi_range.load(Ordering::Relaxed))
        {
            self.requests.fetch_add(1, Ordering::Relaxed);
            let (now, _) = connection.run(connection.get(
                std::slice::from_ref(&(0..opened.len() as u64)),
                Some(identity),
                None,
                options,
            ))?;
            if now.first().map(Vec::as_slice) != Some(&opened[..]) {
                return Err(crate::http::header_changed(&format!(
                    "the header after {} ranges",
                    ranges.len()
                ))
                .into());
            }
        }
        // The transport's buffers, handed on: each fetched byte is held
        // once here (the cache copies a block's worth at a time, and a
        // long read takes the buffer itself).
        Ok(fetched.into_iter().flatten().collect())
    }
}

/// Ranges asked for in one HTTP request: their Range header stays near
/// 2 KB, under the 4-8 KB header limits servers and proxies set.
pub(crate) const RANGES_PER_REQUEST: usize = 64;

/// Backoff before the first retry; each retry doubles it.
pub(crate) const DEFAULT_BACKOFF: Duration = Duration::from_millis(50);
