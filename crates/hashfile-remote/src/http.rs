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
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_RANGE, CONTENT_TYPE, ETAG, IF_MATCH, IF_UNMODIFIED_SINCE, LAST_MODIFIED, LOCATION, RANGE};
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

    /// The bytes of each of `ranges` (sorted and disjoint), in one request,
    /// and what identifies the object that sent them. Several ranges go in
    /// one Range header and come back as a multipart/byteranges body, or as
    /// one part covering them all if the server merged them. With `expect`,
    /// the object must be that one. A range may end past the object's end
    /// only when it is the only one: it is cut there (opening does that).
    pub(crate) async fn get(&self, ranges: &[Range<u64>], expect: Option<&Identity>) -> Result<(Vec<Bytes>, Identity), RemoteError> {
        let spec: Vec<String> = ranges.iter().map(|r| format!("{}-{}", r.start, r.end - 1)).collect();
        let mut request = self.client.get(self.url.clone()).header(RANGE, format!("bytes={}", spec.join(",")));
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
        let what = describe(ranges);
        let response = request.send().await.map_err(|e| send_error(&e, &what))?;
        let status = response.status();
        if status != StatusCode::PARTIAL_CONTENT {
            return Err(status_error(status, response.headers(), &what, expect.is_some()));
        }
        let headers = response.headers();
        let header = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).map(str::to_owned);
        let boundary = header(CONTENT_TYPE).as_deref().and_then(multipart_boundary);
        let single = match boundary {
            Some(_) => None,
            None => match header(CONTENT_RANGE).as_deref().and_then(parse_content_range) {
                Some(parsed) => Some(parsed),
                None => return Err(RemoteError::with_status(RemoteErrorKind::Protocol, 206, format!("the answer to a GET of {what} has no usable Content-Range ({:?})", header(CONTENT_RANGE)))),
            },
        };
        let (etag, last_modified) = (header(ETAG), header(LAST_MODIFIED));
        let body = response.bytes().await.map_err(|e| {
            let kind = if e.is_timeout() { RemoteErrorKind::Timeout } else { RemoteErrorKind::Connection };
            RemoteError::new(kind, format!("the body of {what} broke off: {}", chain(&e)))
        })?;
        // Each part as (start, end, size, bytes).
        let parts = match (single, boundary) {
            (Some((start, end, size)), _) => {
                if body.len() as u64 != end - start {
                    return Err(RemoteError::new(RemoteErrorKind::Connection, format!("the body of {what} ended after {} of {} bytes", body.len(), end - start)));
                }
                vec![(start, end, size, body)]
            }
            (None, Some(boundary)) => parse_multipart(&body, &boundary).map_err(|problem| RemoteError::new(RemoteErrorKind::Connection, format!("the multipart body of {what} {problem}")))?,
            (None, None) => unreachable!("one of the two is set above"),
        };
        let size = parts[0].2;
        if parts.iter().any(|p| p.2 != size) {
            return Err(RemoteError::with_status(RemoteErrorKind::Protocol, 206, format!("the parts of the answer to {what} disagree on the object's length")));
        }
        let identity = Identity { size, etag, last_modified };
        if let Some(expect) = expect {
            expect.check(&identity)?;
        }
        let mut out = Vec::with_capacity(ranges.len());
        for range in ranges {
            let end = if ranges.len() == 1 { range.end.min(size) } else { range.end };
            match parts.iter().find(|p| p.0 <= range.start && end <= p.1) {
                Some((start, _, _, bytes)) => out.push(bytes.slice((range.start - start) as usize..(end - start) as usize)),
                None => return Err(RemoteError::with_status(RemoteErrorKind::Protocol, 206, format!("asked for {what}, the server sent {} without bytes {}..{end}", describe_parts(&parts), range.start))),
            }
        }
        Ok((out, identity))
    }
}

/// Ranges in words, for messages: "bytes 0..16384", or "3 ranges (bytes
/// 10..20, ...)".
fn describe(ranges: &[Range<u64>]) -> String {
    match ranges {
        [one] => format!("bytes {}..{}", one.start, one.end),
        _ => format!("{} ranges (bytes {}..{}, ...)", ranges.len(), ranges[0].start, ranges[0].end),
    }
}

fn describe_parts(parts: &[(u64, u64, u64, Bytes)]) -> String {
    let shown: Vec<String> = parts.iter().take(3).map(|p| format!("{}..{}", p.0, p.1)).collect();
    format!("bytes {}{}", shown.join(", "), if parts.len() > 3 { ", ..." } else { "" })
}

/// The boundary of a `multipart/byteranges` Content-Type.
fn multipart_boundary(content_type: &str) -> Option<String> {
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/byteranges") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (name, value) = p.split_once('=')?;
        name.trim().eq_ignore_ascii_case("boundary").then(|| value.trim().trim_matches('"').to_owned())
    })
}

/// The parts of a multipart/byteranges body (RFC 9110 14.6): each after a
/// `--boundary` line and its headers, as long as its Content-Range says,
/// so that no boundary is ever searched for inside binary data.
fn parse_multipart(body: &Bytes, boundary: &str) -> Result<Vec<(u64, u64, u64, Bytes)>, String> {
    let delimiter = format!("--{boundary}");
    let find = |from: usize, needle: &[u8]| body[from..].windows(needle.len()).position(|w| w == needle).map(|at| from + at);
    let mut parts = Vec::new();
    let mut at = find(0, delimiter.as_bytes()).ok_or("has no boundary")?;
    loop {
        at += delimiter.len();
        if body[at..].starts_with(b"--") {
            break;
        }
        let headers_end = find(at, b"\r\n\r\n").ok_or("ends inside a part's headers")?;
        let headers = std::str::from_utf8(&body[at..headers_end]).map_err(|_| "has part headers that are not text")?;
        let range = headers
            .split("\r\n")
            .find_map(|line| line.split_once(':').filter(|(name, _)| name.trim().eq_ignore_ascii_case("content-range")).map(|(_, value)| value.trim()))
            .and_then(parse_content_range)
            .ok_or("has a part without a usable Content-Range")?;
        let start = headers_end + 4;
        let end = start + (range.1 - range.0) as usize;
        if end > body.len() {
            return Err(format!("ended inside the part for bytes {}..{}", range.0, range.1));
        }
        parts.push((range.0, range.1, range.2, body.slice(start..end)));
        at = find(end, delimiter.as_bytes()).ok_or("ends without its closing boundary")?;
    }
    if parts.is_empty() {
        return Err("has no parts".to_owned());
    }
    Ok(parts)
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
    use super::{multipart_boundary, parse_content_range, parse_multipart};
    use bytes::Bytes;

    #[test]
    fn multipart_bodies_split_by_their_content_ranges_even_with_the_boundary_inside_a_part() {
        assert_eq!(multipart_boundary("multipart/byteranges; boundary=00000000001").as_deref(), Some("00000000001"));
        assert_eq!(multipart_boundary("multipart/byteranges; boundary=\"a b\"").as_deref(), Some("a b"));
        assert_eq!(multipart_boundary("application/octet-stream"), None);
        let body = Bytes::from_static(b"\r\n--XB\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 0-4/100\r\n\r\n--XB-\r\n--XB\r\nContent-Range: bytes 50-51/100\r\n\r\nhi\r\n--XB--\r\n");
        let parts = parse_multipart(&body, "XB").unwrap();
        assert_eq!(parts.iter().map(|p| (p.0, p.1, p.2, &p.3[..])).collect::<Vec<_>>(), vec![(0, 5, 100, &b"--XB-"[..]), (50, 52, 100, &b"hi"[..])]);
        let cut = body.slice(..body.len() - 20);
        assert!(parse_multipart(&cut, "XB").is_err());
        assert!(parse_multipart(&Bytes::from_static(b"--XB--\r\n"), "XB").is_err());
    }

    #[test]
    fn content_ranges_parse_only_when_complete_and_consistent() {
        assert_eq!(parse_content_range("bytes 0-99/1000"), Some((0, 100, 1000)));
        assert_eq!(parse_content_range("bytes 999-999/1000"), Some((999, 1000, 1000)));
        for bad in ["bytes 0-99/*", "bytes */1000", "bytes 5-4/10", "bytes 0-10/10", "items 0-1/2", "bytes 0-1", ""] {
            assert_eq!(parse_content_range(bad), None, "{bad}");
        }
    }
}
