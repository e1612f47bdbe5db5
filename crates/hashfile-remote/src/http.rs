//! Ranged GETs over HTTP(S) with reqwest: one client, whose pool keeps
//! connections alive between requests (HTTP/1.1 keep-alive, or one HTTP/2
//! connection where TLS negotiates it or the caller asks for it).
//!
//! Every answer is checked before a byte of it is used: 206 with exactly
//! the Content-Range asked for, the validators recorded at open, and a body
//! as long as the range. Redirects are not followed: a store's location is
//! configuration, and a silent move is better fixed there.

use std::ops::Range;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_RANGE, ETAG, IF_MATCH, IF_UNMODIFIED_SINCE, LAST_MODIFIED, LOCATION, RANGE};
use reqwest::StatusCode;

use crate::error::{RemoteError, RemoteErrorKind};
use crate::object::Identity;
use crate::RemoteOptions;

/// A client for one URL.
pub(crate) struct HttpTransport {
    client: reqwest::Client,
    url: url::Url,
}

impl HttpTransport {
    pub(crate) fn new(url: url::Url, options: &RemoteOptions) -> Result<HttpTransport, RemoteError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &options.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| RemoteError::new(RemoteErrorKind::Invalid, format!("{name:?} is not an HTTP header name")))?;
            let mut value = HeaderValue::from_str(value).map_err(|_| RemoteError::new(RemoteErrorKind::Invalid, format!("the value of header {name} is not a valid header value")))?;
            // Credentials stay out of debug output.
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let mut builder = reqwest::Client::builder()
            .default_headers(headers)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(options.connect_timeout)
            .timeout(options.timeout)
            .pool_max_idle_per_host(options.concurrency)
            .tcp_nodelay(true);
        if options.http2_prior_knowledge {
            builder = builder.http2_prior_knowledge();
        }
        let client = builder.build().map_err(|e| RemoteError::new(RemoteErrorKind::Invalid, format!("cannot make an HTTP client: {e}")))?;
        Ok(HttpTransport { client, url })
    }

    /// Bytes `range` of the object, and what identifies the object that
    /// sent them. With `expect`, the object must be that one.
    pub(crate) async fn get(&self, range: Range<u64>, expect: Option<&Identity>) -> Result<(Bytes, Identity), RemoteError> {
        let mut request = self.client.get(self.url.clone()).header(RANGE, format!("bytes={}-{}", range.start, range.end - 1));
        if let Some(expect) = expect {
            match (&expect.etag, &expect.last_modified) {
                // A weak ETag never matches If-Match (RFC 9110 13.1.1):
                // for one, the date is the precondition and the ETag is
                // compared after.
                (Some(etag), _) if !etag.starts_with("W/") => request = request.header(IF_MATCH, etag),
                (_, Some(date)) => request = request.header(IF_UNMODIFIED_SINCE, date),
                _ => {}
            }
        }
        let what = || format!("bytes {}..{}", range.start, range.end);
        let response = request.send().await.map_err(|e| send_error(&e, &what()))?;
        let status = response.status();
        if status != StatusCode::PARTIAL_CONTENT {
            return Err(status_error(status, response.headers(), &what(), expect.is_some()));
        }
        let headers = response.headers();
        let header = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).map(str::to_owned);
        let (start, end, size) = match header(CONTENT_RANGE).as_deref().and_then(parse_content_range) {
            Some(parsed) => parsed,
            None => return Err(RemoteError::with_status(RemoteErrorKind::Protocol, 206, format!("the answer to a GET of {} has no usable Content-Range ({:?})", what(), header(CONTENT_RANGE)))),
        };
        let identity = Identity { size, etag: header(ETAG), last_modified: header(LAST_MODIFIED) };
        if let Some(expect) = expect {
            expect.check(&identity)?;
        }
        let wanted_end = range.end.min(size);
        if start != range.start || end != wanted_end {
            return Err(RemoteError::with_status(RemoteErrorKind::Protocol, 206, format!("asked for {}, the server sent bytes {start}..{end} of {size}", what())));
        }
        let body = response.bytes().await.map_err(|e| {
            let kind = if e.is_timeout() { RemoteErrorKind::Timeout } else { RemoteErrorKind::Connection };
            RemoteError::new(kind, format!("the body of {} broke off: {}", what(), chain(&e)))
        })?;
        if body.len() as u64 != end - start {
            return Err(RemoteError::new(RemoteErrorKind::Connection, format!("the body of {} ended after {} of {} bytes", what(), body.len(), end - start)));
        }
        Ok((body, identity))
    }
}

/// An error sending a request or reading its head.
fn send_error(error: &reqwest::Error, what: &str) -> RemoteError {
    let kind = if error.is_timeout() { RemoteErrorKind::Timeout } else { RemoteErrorKind::Connection };
    RemoteError::new(kind, format!("GET of {what} failed: {}", chain(error)))
}

/// The error and its causes on one line: reqwest's own message is only
/// "error sending request".
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The error for an answer that is not 206.
fn status_error(status: StatusCode, headers: &HeaderMap, what: &str, opened: bool) -> RemoteError {
    let code = status.as_u16();
    let (kind, message) = match status {
        StatusCode::OK => (RemoteErrorKind::Protocol, format!("the server ignored the Range header of a GET of {what} and sent the whole object (200); nothing of it was read")),
        StatusCode::NOT_FOUND | StatusCode::GONE => (RemoteErrorKind::NotFound, format!("no object at this location ({code})")),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => (RemoteErrorKind::Denied, format!("access denied ({code}): check the credentials or headers")),
        StatusCode::PRECONDITION_FAILED => (RemoteErrorKind::Changed, format!("the object was replaced since it was opened (412 to If-Match, reading {what})")),
        StatusCode::RANGE_NOT_SATISFIABLE if opened => (RemoteErrorKind::Changed, format!("the object is shorter than when it was opened (416 reading {what})")),
        StatusCode::RANGE_NOT_SATISFIABLE => (RemoteErrorKind::Protocol, "the object is empty (416 to a GET of its first bytes)".to_owned()),
        s if s.is_redirection() => {
            let to = headers.get(LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("nowhere given");
            (RemoteErrorKind::Protocol, format!("the server redirects ({code}) to {to}; redirects are not followed: open that location instead"))
        }
        StatusCode::TOO_MANY_REQUESTS => (RemoteErrorKind::Server, format!("the server is throttling (429, reading {what})")),
        s if s.is_server_error() => (RemoteErrorKind::Server, format!("server error {code} reading {what}")),
        _ => (RemoteErrorKind::Protocol, format!("unexpected status {code} to a GET of {what}")),
    };
    RemoteError::with_status(kind, code, message)
}

/// `bytes START-LAST/SIZE` as the half-open range and the size.
fn parse_content_range(value: &str) -> Option<(u64, u64, u64)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (range, size) = rest.split_once('/')?;
    let (first, last) = range.split_once('-')?;
    let (first, last, size): (u64, u64, u64) = (first.trim().parse().ok()?, last.trim().parse().ok()?, size.trim().parse().ok()?);
    (first <= last && last < size).then_some((first, last + 1, size))
}

#[cfg(test)]
mod tests {
    use super::parse_content_range;

    #[test]
    fn content_ranges_parse_only_when_complete_and_consistent() {
        assert_eq!(parse_content_range("bytes 0-99/1000"), Some((0, 100, 1000)));
        assert_eq!(parse_content_range("bytes 999-999/1000"), Some((999, 1000, 1000)));
        for bad in ["bytes 0-99/*", "bytes */1000", "bytes 5-4/10", "bytes 0-10/10", "items 0-1/2", "bytes 0-1", ""] {
            assert_eq!(parse_content_range(bad), None, "{bad}");
        }
    }
}
