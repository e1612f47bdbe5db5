//! Ranged GETs over HTTP(S) with reqwest: one client, whose pool keeps
//! connections alive between requests (HTTP/1.1 keep-alive, or one HTTP/2
//! connection where TLS negotiates it or the caller asks for it).
//!
//! Every answer is checked before a byte of it is used: 206 with exactly
//! the Content-Range asked for, the validators recorded at open, and a body
//! as long as the range. Bodies are read as a stream and cut off past what
//! was asked for, whatever Content-Length says. With the store's header
//! bytes given, every request also asks for them, and an answer whose
//! header differs is a replaced store even where the validators did not
//! change (no ETag, or one made of the date and length). Redirects are not
//! followed: a store's location is configuration, and a silent move is
//! better fixed there.

use std::ops::Range;

use bytes::Bytes;
use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, CONTENT_RANGE, CONTENT_TYPE, ETAG, IF_MATCH,
    IF_UNMODIFIED_SINCE, LAST_MODIFIED, LOCATION, RANGE,
};
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
    pub(crate) fn new(
        url: url::Url,
        options: &RemoteOptions,
    ) -> Result<HttpTransport, RemoteError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &options.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                RemoteError::new(
                    RemoteErrorKind::Invalid,
                    format!("{name:?} is not an HTTP header name"),
                )
            })?;
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                RemoteError::new(
                    RemoteErrorKind::Invalid,
                    format!("the value of header {name} is not a valid header value"),
                )
            })?;
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
        let client = builder.build().map_err(|e| {
            RemoteError::new(
                RemoteErrorKind::Invalid,
                format!("cannot make an HTTP client: {e}"),
            )
        })?;
        Ok(HttpTransport { client, url })
    }

    /// The bytes of each of `ranges` (sorted and disjoint), in one request,
    /// and what identifies the object that sent them. Several ranges go in
    /// one Range header and come back as a multipart/byteranges body, or as
    /// one part covering them all if the server merged them. With `expect`,
    /// the object must be that one; with `header`, its first bytes must be
    /// these too (they are asked for in the same request). A range may end
    /// past the object's end only when it is the only one: it is cut there
    /// (opening does that).
    pub(crate) async fn get(
        &self,
        ranges: &[Range<u64>],
        expect: Option<&Identity>,
        opened_header: Option<&[u8]>,
    ) -> Result<(Vec<Vec<u8>>, Identity), RemoteError> {
        let wire = match opened_header {
            Some(header) => with_header(ranges, header.len() as u64),
            None => ranges.to_vec(),
        };
        let limit = body_limit(&wire);
        let spec: Vec<String> = wire
            .iter()
            .map(|r| format!("{}-{}", r.start, r.end - 1))
            .collect();
        let mut request = self
            .client
            .get(self.url.clone())
            .header(RANGE, format!("bytes={}", spec.join(",")));
        if let Some(expect) = expect {
            match (&expect.etag, &expect.last_modified) {
                // A weak ETag never matches If-Match (RFC 9110 13.1.1):
                // for one, the date is the precondition and the ETag is
                // compared after.
                (Some(etag), _) if !etag.starts_with("W/") => {
                    request = request.header(IF_MATCH, etag)
                }
                (_, Some(date)) => request = request.header(IF_UNMODIFIED_SINCE, date),
                _ => {}
            }
        }
        let what = describe(ranges);
        let mut response = request.send().await.map_err(|e| send_error(&e, &what))?;
        let status = response.status();
        if status != StatusCode::PARTIAL_CONTENT {
            return Err(status_error(
                status,
                response.headers(),
                &what,
                expect.is_some(),
            ));
        }
        let headers = response.headers();
        let header = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        let boundary = header(CONTENT_TYPE).as_deref().and_then(multipart_boundary);
        let single = match boundary {
            Some(_) => None,
            None => match header(CONTENT_RANGE)
                .as_deref()
                .and_then(parse_content_range)
            {
                Some(parsed) => Some(parsed),
                None => {
                    return Err(RemoteError::with_status(
                        RemoteErrorKind::Protocol,
                        206,
                        format!(
                            "the answer to a GET of {what} has no usable Content-Range ({:?})",
                            header(CONTENT_RANGE)
                        ),
                    ))
                }
            },
        };
        let (etag, last_modified) = (header(ETAG), header(LAST_MODIFIED));
        if let Some((start, end, _)) = single {
            if end - start > limit {
                return Err(RemoteError::with_status(
                    RemoteErrorKind::Protocol,
                    206,
                    format!("asked for {what}, the server sends bytes {start}..{end}"),
                ));
            }
        }
        let mut body = Body::new(limit, response.content_length(), &what)?;
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            let kind = if e.is_timeout() {
                RemoteErrorKind::Timeout
            } else {
                RemoteErrorKind::Connection
            };
            RemoteError::new(kind, format!("the body of {what} broke off: {}", chain(&e)))
        })? {
            body.push(&chunk)?;
        }
        let body = body.finish();
        // One range asked for and sent as it was asked, the usual answer
        // to a long read: its body is the bytes, handed on as they are,
        // never copied (the cache takes this buffer).
        if let (Some((start, end, size)), [range], None) = (single, ranges, opened_header) {
            if body.len() as u64 != end - start {
                return Err(body_ended(&what, body.len(), end - start));
            }
            if start == range.start && end == range.end.min(size) {
                let identity = Identity {
                    size,
                    etag,
                    last_modified,
                };
                if let Some(expect) = expect {
                    expect.check(&identity)?;
                }
                return Ok((vec![body], identity));
            }
        }
        let body = Bytes::from(body);
        // Each part as (start, end, size, bytes).
        let parts = match (single, boundary) {
            (Some((start, end, size)), _) => {
                if body.len() as u64 != end - start {
                    return Err(body_ended(&what, body.len(), end - start));
                }
                vec![(start, end, size, body)]
            }
            (None, Some(boundary)) => parse_multipart(&body, &boundary).map_err(|problem| {
                RemoteError::new(
                    RemoteErrorKind::Connection,
                    format!("the multipart body of {what} {problem}"),
                )
            })?,
            (None, None) => unreachable!("one of the two is set above"),
        };
        let size = parts[0].2;
        if parts.iter().any(|p| p.2 != size) {
            return Err(RemoteError::with_status(
                RemoteErrorKind::Protocol,
                206,
                format!("the parts of the answer to {what} disagree on the object's length"),
            ));
        }
        let identity = Identity {
            size,
            etag,
            last_modified,
        };
        if let Some(expect) = expect {
            expect.check(&identity)?;
        }
        if let Some(opened) = opened_header {
            let len = opened.len() as u64;
            match parts.iter().find(|p| p.0 == 0 && p.1 >= len) {
                Some(part) if part.3[..opened.len()] == *opened => {}
                Some(_) => return Err(header_changed(&what)),
                None => {
                    return Err(RemoteError::with_status(
                        RemoteErrorKind::Protocol,
                        206,
                        format!(
                            "asked for the header (bytes 0..{len}) with {what}, the server sent {}",
                            describe_parts(&parts)
                        ),
                    ))
                }
            }
        }
        let mut out = Vec::with_capacity(ranges.len());
        for range in ranges {
            let end = if ranges.len() == 1 {
                range.end.min(size)
            } else {
                range.end
            };
            match parts.iter().find(|p| p.0 <= range.start && end <= p.1) {
                Some((start, _, _, bytes)) => {
                    let piece = &bytes[(range.start - start) as usize..(end - start) as usize];
                    let mut copy = Vec::new();
                    copy.try_reserve_exact(piece.len())
                        .map_err(|_| out_of_memory(&what, piece.len() as u64))?;
                    copy.extend_from_slice(piece);
                    out.push(copy);
                }
                None => {
                    return Err(RemoteError::with_status(
                        RemoteErrorKind::Protocol,
                        206,
                        format!(
                            "asked for {what}, the server sent {} without bytes {}..{end}",
                            describe_parts(&parts),
                            range.start
                        ),
                    ))
                }
            }
        }
        Ok((out, identity))
    }
}

/// The error for a body shorter than its Content-Range.
fn body_ended(what: &str, got: usize, expected: u64) -> RemoteError {
    RemoteError::new(
        RemoteErrorKind::Connection,
        format!("the body of {what} ended after {got} of {expected} bytes"),
    )
}

/// The error for a buffer of `len` bytes the allocator refused.
fn out_of_memory(what: &str, len: u64) -> RemoteError {
    RemoteError::new(
        RemoteErrorKind::OutOfMemory,
        format!("cannot allocate {len} bytes for the answer to {what}"),
    )
}

/// The error for an answer whose store header is not the one opened.
pub(crate) fn header_changed(what: &str) -> RemoteError {
    RemoteError::new(
        RemoteErrorKind::Changed,
        format!("the object was replaced since it was opened: its header differs (reading {what}), though its length and validators did not change (a store rebuilt at the same size, with no ETag or one made of the date and length)"),
    )
}

/// `ranges` with the header's bytes `0..len` asked for too: merged into
/// the ranges that start inside it, or put first.
fn with_header(ranges: &[Range<u64>], len: u64) -> Vec<Range<u64>> {
    let mut end = len;
    let mut inside = 0;
    while let Some(range) = ranges.get(inside).filter(|r| r.start <= end) {
        end = end.max(range.end);
        inside += 1;
    }
    let mut wire = Vec::with_capacity(ranges.len() + 1);
    wire.push(0..end);
    wire.extend_from_slice(&ranges[inside..]);
    wire
}

/// The most body bytes an answer to `ranges` may have: their bytes, and
/// for each range room for a multipart part's headers (or a gap a server
/// merged ranges across). Anything longer is not an answer to them.
pub(crate) fn body_limit(ranges: &[Range<u64>]) -> u64 {
    const PER_RANGE: u64 = 1024;
    ranges
        .iter()
        .map(|r| r.end - r.start)
        .sum::<u64>()
        .saturating_add(PER_RANGE * (ranges.len() as u64 + 1))
}

/// A response body read piece by piece, never past a limit: a server that
/// claims or sends more than was asked for is cut off before the excess
/// is held. Held in one `Vec`, which becomes the bytes handed out (no
/// second copy), grown fallibly.
pub(crate) struct Body<'a> {
    bytes: Vec<u8>,
    limit: u64,
    what: &'a str,
}

/// The most room a body takes before its bytes come, whatever
/// Content-Length announces: past it, the buffer grows with what arrives,
/// so a server must send what it claims before it is held.
const ANNOUNCED_ROOM: u64 = 16 << 20;

impl<'a> Body<'a> {
    /// A body of at most `limit` bytes; an error at once if the server
    /// announces more.
    pub(crate) fn new(
        limit: u64,
        announced: Option<u64>,
        what: &'a str,
    ) -> Result<Body<'a>, RemoteError> {
        if let Some(announced) = announced.filter(|&n| n > limit) {
            return Err(too_long(what, announced, limit));
        }
        // Room for what is announced (so that the body is not copied as it
        // grows), never more than the limit nor `ANNOUNCED_ROOM`.
        let room = announced.unwrap_or(0).min(limit).min(ANNOUNCED_ROOM) as usize;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(room)
            .map_err(|_| out_of_memory(what, room as u64))?;
        Ok(Body { bytes, limit, what })
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<(), RemoteError> {
        let len = self.bytes.len() as u64 + chunk.len() as u64;
        if len > self.limit {
            return Err(too_long(self.what, len, self.limit));
        }
        self.bytes
            .try_reserve(chunk.len())
            .map_err(|_| out_of_memory(self.what, len))?;
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

fn too_long(what: &str, got: u64, limit: u64) -> RemoteError {
    RemoteError::with_status(RemoteErrorKind::Protocol, 206, format!("the answer to {what} is {got} bytes or more, past the {limit} bytes it can be; nothing of it was used"))
}

/// Ranges in words, for messages: "bytes 0..16384", or "3 ranges (bytes
/// 10..20, ...)".
fn describe(ranges: &[Range<u64>]) -> String {
    match ranges {
        [one] => format!("bytes {}..{}", one.start, one.end),
        _ => format!(
            "{} ranges (bytes {}..{}, ...)",
            ranges.len(),
            ranges[0].start,
            ranges[0].end
        ),
    }
}

fn describe_parts(parts: &[(u64, u64, u64, Bytes)]) -> String {
    let shown: Vec<String> = parts
        .iter()
        .take(3)
        .map(|p| format!("{}..{}", p.0, p.1))
        .collect();
    format!(
        "bytes {}{}",
        shown.join(", "),
        if parts.len() > 3 { ", ..." } else { "" }
    )
}

/// The boundary of a `multipart/byteranges` Content-Type.
fn multipart_boundary(content_type: &str) -> Option<String> {
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/byteranges") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (name, value) = p.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| value.trim().trim_matches('"').to_owned())
    })
}

/// The parts of a multipart/byteranges body (RFC 9110 14.6): each after a
/// `--boundary` line and its headers, as long as its Content-Range says,
/// so that no boundary is ever searched for inside binary data.
fn parse_multipart(body: &Bytes, boundary: &str) -> Result<Vec<(u64, u64, u64, Bytes)>, String> {
    let delimiter = format!("--{boundary}");
    let find = |from: usize, needle: &[u8]| {
        body[from..]
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|at| from + at)
    };
    let mut parts = Vec::new();
    let mut at = find(0, delimiter.as_bytes()).ok_or("has no boundary")?;
    loop {
        at += delimiter.len();
        if body[at..].starts_with(b"--") {
            break;
        }
        let headers_end = find(at, b"\r\n\r\n").ok_or("ends inside a part's headers")?;
        let headers = std::str::from_utf8(&body[at..headers_end])
            .map_err(|_| "has part headers that are not text")?;
        let range = headers
            .split("\r\n")
            .find_map(|line| {
                line.split_once(':')
                    .filter(|(name, _)| name.trim().eq_ignore_ascii_case("content-range"))
                    .map(|(_, value)| value.trim())
            })
            .and_then(parse_content_range)
            .ok_or("has a part without a usable Content-Range")?;
        let start = headers_end + 4;
        // The length comes from the server: checked, never trusted to fit.
        let end = usize::try_from(range.1 - range.0)
            .ok()
            .and_then(|len| start.checked_add(len))
            .filter(|&end| end <= body.len());
        let Some(end) = end else {
            return Err(format!(
                "ended inside the part for bytes {}..{}",
                range.0, range.1
            ));
        };
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
    let kind = if error.is_timeout() {
        RemoteErrorKind::Timeout
    } else {
        RemoteErrorKind::Connection
    };
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
    let (first, last, size): (u64, u64, u64) = (
        first.trim().parse().ok()?,
        last.trim().parse().ok()?,
        size.trim().parse().ok()?,
    );
    (first <= last && last < size).then_some((first, last + 1, size))
}

#[cfg(test)]
// A list of one range is what these tests mean: one block, one request.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::{
        body_limit, multipart_boundary, parse_content_range, parse_multipart, with_header, Body,
    };
    use bytes::Bytes;

    #[test]
    fn multipart_bodies_split_by_their_content_ranges_even_with_the_boundary_inside_a_part() {
        assert_eq!(
            multipart_boundary("multipart/byteranges; boundary=00000000001").as_deref(),
            Some("00000000001")
        );
        assert_eq!(
            multipart_boundary("multipart/byteranges; boundary=\"a b\"").as_deref(),
            Some("a b")
        );
        assert_eq!(multipart_boundary("application/octet-stream"), None);
        let body = Bytes::from_static(b"\r\n--XB\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 0-4/100\r\n\r\n--XB-\r\n--XB\r\nContent-Range: bytes 50-51/100\r\n\r\nhi\r\n--XB--\r\n");
        let parts = parse_multipart(&body, "XB").unwrap();
        assert_eq!(
            parts
                .iter()
                .map(|p| (p.0, p.1, p.2, &p.3[..]))
                .collect::<Vec<_>>(),
            vec![(0, 5, 100, &b"--XB-"[..]), (50, 52, 100, &b"hi"[..])]
        );
        let cut = body.slice(..body.len() - 20);
        assert!(parse_multipart(&cut, "XB").is_err());
        assert!(parse_multipart(&Bytes::from_static(b"--XB--\r\n"), "XB").is_err());
    }

    /// A part whose Content-Range claims nearly 2^64 bytes is an error,
    /// not an overflow (it panicked in `Bytes::slice`).
    #[test]
    fn a_part_claiming_a_length_near_2_pow_64_is_an_error() {
        for range in [
            "bytes 0-18446744073709551613/18446744073709551615",
            "bytes 18446744073709551000-18446744073709551613/18446744073709551615",
            "bytes 10-9223372036854775807/9223372036854775808",
        ] {
            let body = Bytes::from(format!(
                "--XB\r\nContent-Range: {range}\r\n\r\nhi\r\n--XB--\r\n"
            ));
            assert_eq!(
                parse_multipart(&body, "XB").unwrap_err(),
                format!("ended inside the part for bytes {}", {
                    let (a, b, _) = parse_content_range(range).unwrap();
                    format!("{a}..{b}")
                })
            );
        }
    }

    #[test]
    fn the_header_range_is_merged_into_ranges_that_start_inside_it_or_put_first() {
        assert_eq!(
            with_header(&[16384..32768], 296),
            vec![0..296, 16384..32768]
        );
        assert_eq!(
            with_header(&[0..16384, 32768..40000], 296),
            vec![0..16384, 32768..40000]
        );
        assert_eq!(
            with_header(&[100..200, 290..400, 500..600], 296),
            vec![0..400, 500..600]
        );
        assert_eq!(with_header(&[], 296), vec![0..296]);
    }

    /// A body longer than the ranges asked for is refused when announced,
    /// and cut off when it is not, before the excess is held.
    #[test]
    fn bodies_stop_at_what_was_asked_for() {
        let limit = body_limit(&[0..16384]);
        assert_eq!(limit, 16384 + 2048);
        assert!(Body::new(limit, Some(1_000_000_000_000), "bytes 0..16384").is_err());
        let mut body = Body::new(limit, None, "bytes 0..16384").unwrap();
        body.push(&[0; 16384]).unwrap();
        let error = body.push(&[0; 4096]).unwrap_err();
        assert_eq!(error.kind, crate::RemoteErrorKind::Protocol);
        assert!(
            error.message.contains("past the 18432 bytes it can be"),
            "{}",
            error.message
        );
        assert_eq!(body.finish().len(), 16384);
    }

    #[test]
    fn content_ranges_parse_only_when_complete_and_consistent() {
        assert_eq!(parse_content_range("bytes 0-99/1000"), Some((0, 100, 1000)));
        assert_eq!(
            parse_content_range("bytes 999-999/1000"),
            Some((999, 1000, 1000))
        );
        for bad in [
            "bytes 0-99/*",
            "bytes */1000",
            "bytes 5-4/10",
            "bytes 0-10/10",
            "items 0-1/2",
            "bytes 0-1",
            "",
        ] {
            assert_eq!(parse_content_range(bad), None, "{bad}");
        }
    }
}
