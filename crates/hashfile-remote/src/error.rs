//! What went wrong with a remote store, by kind, so that callers (the Ruby
//! binding maps each kind to an exception class) can tell a missing object
//! from a replaced one, a slow server from a broken one.

use std::io;

/// The kinds of [`RemoteError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteErrorKind {
    /// 404, or S3's NoSuchKey / NoSuchBucket.
    NotFound,
    /// 401 or 403: missing or wrong credentials, or no permission.
    Denied,
    /// The object is not the one opened: its ETag, Last-Modified or length
    /// differs, or the server answered 412 to If-Match. Nothing of the new
    /// object was read.
    Changed,
    /// The request took longer than the timeout. Not retried: the timeout
    /// is the caller's budget.
    Timeout,
    /// The connection failed, was reset or ended inside a body, after the
    /// retries.
    Connection,
    /// 5xx or 429, after the retries.
    Server,
    /// An answer that cannot be a correct answer to a ranged GET: the whole
    /// object (200) where a range was asked for, a Content-Range other than
    /// the one asked for, a redirect, 416, another unexpected status.
    Protocol,
    /// A Ruby interrupt (Ctrl-C, `Thread#raise`) or a caller's
    /// [`crate::Interrupt`] stopped the wait.
    Interrupted,
    /// The location or an option is not usable (an unknown scheme, say).
    Invalid,
    /// A buffer for an answer could not be allocated: the call fails, the
    /// process goes on. The core reports it as `Error::OutOfMemory`.
    OutOfMemory,
    /// Anything else the S3 client reported.
    Other,
}

/// An error reading a remote store: its kind, the location it concerned,
/// the HTTP status if there was one, and what happened.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct RemoteError {
    /// What kind of failure this is.
    pub kind: RemoteErrorKind,
    /// The HTTP status of the answer, when there was one.
    pub status: Option<u16>,
    /// What happened, in words, with the byte range when it matters.
    pub message: String,
}

impl RemoteError {
    pub(crate) fn new(kind: RemoteErrorKind, message: impl Into<String>) -> RemoteError {
        RemoteError {
            kind,
            status: None,
            message: message.into(),
        }
    }

    pub(crate) fn with_status(
        kind: RemoteErrorKind,
        status: u16,
        message: impl Into<String>,
    ) -> RemoteError {
        RemoteError {
            kind,
            status: Some(status),
            message: message.into(),
        }
    }

    /// Whether trying the same request again may succeed.
    pub(crate) fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            RemoteErrorKind::Connection | RemoteErrorKind::Server
        )
    }

    /// The remote error inside an I/O error the reader passed on, if any.
    pub fn find(error: &io::Error) -> Option<&RemoteError> {
        error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<RemoteError>())
    }

    /// The remote error inside a core error, if any.
    pub fn find_in(error: &hashfile::Error) -> Option<&RemoteError> {
        match error {
            hashfile::Error::Io { source, .. } => RemoteError::find(source),
            _ => None,
        }
    }
}

impl From<RemoteError> for io::Error {
    fn from(error: RemoteError) -> io::Error {
        let kind = match error.kind {
            RemoteErrorKind::NotFound => io::ErrorKind::NotFound,
            RemoteErrorKind::Denied => io::ErrorKind::PermissionDenied,
            RemoteErrorKind::Timeout => io::ErrorKind::TimedOut,
            RemoteErrorKind::Connection => io::ErrorKind::ConnectionReset,
            RemoteErrorKind::Interrupted => io::ErrorKind::Interrupted,
            RemoteErrorKind::Invalid => io::ErrorKind::InvalidInput,
            RemoteErrorKind::OutOfMemory => io::ErrorKind::OutOfMemory,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, error)
    }
}
