//! Which shard locations a manifest may name. A manifest is data, not an
//! instruction: read from a server or a directory, it could otherwise send
//! the caller's headers to another host, sign an S3 request with the
//! process's credentials for a bucket its author chose, or make a local
//! dataset reach the network. So a shard must lie under the manifest's own
//! place (docs/REMOTE.md, "Where a dataset's shards may be"):
//!
//! - a manifest at `http(s)://HOST:PORT/DIR/hashfile-dataset.json` lists
//!   shards under `http(s)://HOST:PORT/DIR/` (the same scheme, host and
//!   port, and a path below its directory);
//! - one at `s3://BUCKET/PREFIX/hashfile-dataset.json`, shards under
//!   `s3://BUCKET/PREFIX/`;
//! - a local one, local shards beside it (file names that cannot leave the
//!   directory, checked by the manifest itself);
//!
//! or under a prefix the caller allows by name (`allow_origins`). The
//! caller's headers and S3 credentials go only with the manifest's own
//! place: a shard reached through an allowed prefix is read without them.
//! A shard on plain `http://` is refused under an `https://` manifest,
//! allowed or not.

use hashfile_remote::{Location, RemoteOptions};

/// Where the reads of a shard may go.
#[derive(Debug)]
pub(crate) enum Reach {
    /// Beside the manifest: read as the caller said (headers and all).
    Own,
    /// Under a prefix the caller allowed: read without the caller's
    /// headers and credentials, which were given for the manifest's place.
    Allowed,
}

impl Reach {
    /// The options a shard reached this way is read with.
    pub(crate) fn options(&self, given: &RemoteOptions) -> RemoteOptions {
        match self {
            Reach::Own => given.clone(),
            Reach::Allowed => RemoteOptions {
                headers: Vec::new(),
                s3_credentials: None,
                ..given.clone()
            },
        }
    }
}

/// A place reads may go: a scheme, a host (an S3 bucket) with its port,
/// and a path prefix that ends in `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Prefix {
    scheme: String,
    host: String,
    port: Option<u16>,
    path: String,
}

impl Prefix {
    /// The place `text` names: an `http://`, `https://` or `s3://` URL,
    /// taken as a directory (a path that does not end in `/` gets one, so
    /// `https://cdn/ds` never admits `https://cdn/ds-other/`).
    pub(crate) fn parse(text: &str) -> Result<Prefix, String> {
        // A bucket alone (`s3://bucket`, `s3://bucket/`) is a place too,
        // though not an object's location.
        if let Some(rest) = text
            .get(..5)
            .filter(|s| s.eq_ignore_ascii_case("s3://"))
            .map(|_| &text[5..])
        {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(format!("{text:?} names no bucket"));
            }
            let mut path = format!("/{key}");
            if !path.ends_with('/') {
                path.push('/');
            }
            return Ok(Prefix {
                scheme: "s3".to_owned(),
                host: bucket.to_owned(),
                port: None,
                path,
            });
        }
        if let Some(Ok(Location::Http(url))) = Location::parse(text) {
            if url.query().is_some() || url.fragment().is_some() {
                return Err(format!(
                    "{text:?} has a query or a fragment: a place is a scheme, a host and a path"
                ));
            }
        }
        let mut prefix = Prefix::of_location(text)?;
        if !prefix.path.ends_with('/') {
            prefix.path.push('/');
        }
        Ok(prefix)
    }

    /// The directory a manifest at `location` lists its shards under.
    fn of_manifest(location: &str) -> Result<Prefix, String> {
        let mut prefix = Prefix::of_location(location)?;
        let cut = prefix.path.rfind('/').map_or(0, |slash| slash + 1);
        prefix.path.truncate(cut);
        Ok(prefix)
    }

    fn of_location(text: &str) -> Result<Prefix, String> {
        // The url crate resolves `..` and `%2e%2e`, but keeps `%2f` (and
        // `%5c`) as they are, which a server may decode into a separator and
        // resolve after the check: `/ds/..%2fother/` would leave `/ds/`. A
        // place's path holds none of them, nor a `%2e` that could spell a
        // dot segment together with them.
        let lower = text.to_ascii_lowercase();
        if ["%2f", "%5c", "%2e"].iter().any(|e| lower.contains(e)) {
            return Err(format!(
                "{text:?} has an encoded '/', '\\' or '.' (%2F, %5C, %2E), which a server may resolve past the directory it seems to be in"
            ));
        }
        match Location::parse(text) {
            None => Err(format!(
                "{text:?} is not an http://, https:// or s3:// location"
            )),
            Some(Err(e)) => Err(e.to_string()),
            Some(Ok(Location::Http(url))) => {
                if !url.username().is_empty() || url.password().is_some() {
                    return Err(format!(
                        "{text:?} carries a user name or password: credentials go in headers the caller gives, never in a URL"
                    ));
                }
                Ok(Prefix {
                    scheme: url.scheme().to_owned(),
                    host: url.host_str().unwrap_or_default().to_owned(),
                    port: url.port_or_known_default(),
                    // Parsed, so `.` and `..` segments (and their %2e
                    // spellings) are resolved before the comparison.
                    path: url.path().to_owned(),
                })
            }
            Some(Ok(Location::S3 { bucket, key })) => Ok(Prefix {
                scheme: "s3".to_owned(),
                host: bucket,
                port: None,
                path: format!("/{key}"),
            }),
        }
    }

    /// Whether `other` lies at this place: the same scheme, host and port,
    /// and a path under this one's.
    fn holds(&self, other: &Prefix) -> bool {
        self.scheme == other.scheme
            && self.host == other.host
            && self.port == other.port
            && other.path.starts_with(&self.path)
    }

    /// `scheme://host[:port]/path`, as errors show it.
    fn display(&self) -> String {
        let port = match (self.scheme.as_str(), self.port) {
            ("http", Some(80)) | ("https", Some(443)) | (_, None) => String::new(),
            (_, Some(port)) => format!(":{port}"),
        };
        format!("{}://{}{port}{}", self.scheme, self.host, self.path)
    }
}

/// Where the shards of one manifest may be: the manifest's own place and
/// the ones the caller allows, parsed once per manifest.
#[derive(Debug)]
pub(crate) struct Places {
    /// The manifest's directory, for a remote manifest.
    own: Option<Prefix>,
    allowed: Vec<Prefix>,
}

impl Places {
    /// The places of the manifest at `manifest_at`, with `allow_origins`
    /// (the caller's option: an error names the entry that is not a URL).
    pub(crate) fn new(manifest_at: &str, allow_origins: &[String]) -> Result<Places, String> {
        let allowed = allow_origins
            .iter()
            .map(|text| {
                Prefix::parse(text).map_err(|e| {
                    format!("{e}; give http(s)://HOST[:PORT][/PATH] or s3://BUCKET[/PREFIX]")
                })
            })
            .collect::<Result<_, _>>()?;
        let own = if Location::is_remote(manifest_at) {
            Some(Prefix::of_manifest(manifest_at)?)
        } else {
            None
        };
        Ok(Places { own, allowed })
    }

    /// How a shard the manifest lists as `file` may be read, or why it may
    /// not. A file name (not a URL) is beside the manifest: its own check
    /// keeps the name in the directory.
    pub(crate) fn reach(&self, file: &str) -> Result<Reach, String> {
        if !Location::is_remote(file) {
            return Ok(Reach::Own);
        }
        let at = Prefix::of_location(file)?;
        let own = self.own.as_ref();
        if own.is_some_and(|own| own.scheme == "https") && at.scheme == "http" {
            return Err(
                "it is plain http under an https manifest: a dataset read over https is never read over http"
                    .to_owned(),
            );
        }
        if own.is_some_and(|own| own.holds(&at)) {
            return Ok(Reach::Own);
        }
        if self.allowed.iter().any(|prefix| prefix.holds(&at)) {
            return Ok(Reach::Allowed);
        }
        Err(match own {
            Some(own) => format!(
                "it is not under the manifest's own place ({}): a manifest lists shards under its own scheme, host, port and directory, or under a place the caller allows (allow_origins; the CLI's --allow-origin)",
                own.display()
            ),
            None => "it is remote, and the manifest is a local file: a local dataset reads local shards, or remote ones under a place the caller allows (allow_origins; the CLI's --allow-origin)".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "https://cdn.example.com/ds/hashfile-dataset.json";

    fn reach_of(manifest: &str, shard: &str, allowed: &[&str]) -> Result<&'static str, String> {
        let allowed = allowed.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        Places::new(manifest, &allowed)?
            .reach(shard)
            .map(|r| match r {
                Reach::Own => "own",
                Reach::Allowed => "allowed",
            })
    }

    #[test]
    fn shards_must_lie_under_the_manifest_or_an_allowed_place() {
        let s3 = "s3://bucket/ds/hashfile-dataset.json";
        let local = "/srv/ds/hashfile-dataset.json";
        // (manifest, shard, allowed, expected: "own", "allowed" or a part of the error)
        let cases: &[(&str, &str, &[&str], &str)] = &[
            (MANIFEST, "https://cdn.example.com/ds/a.hf", &[], "own"),
            (
                MANIFEST,
                "https://CDN.example.com:443/ds/sub/a.hf",
                &[],
                "own",
            ),
            (
                MANIFEST,
                "https://cdn.example.com/ds/../other/a.hf",
                &[],
                "not under",
            ),
            (
                MANIFEST,
                "https://cdn.example.com/ds/%2e%2e/other/a.hf",
                &[],
                "an encoded",
            ),
            (
                MANIFEST,
                "https://cdn.example.com/ds/..%2fother/a.hf",
                &[],
                "an encoded",
            ),
            (
                MANIFEST,
                "https://cdn.example.com/ds/x/..%2F..%2Fother/a.hf",
                &[],
                "an encoded",
            ),
            (
                MANIFEST,
                "https://cdn.example.com/ds/..%5cother/a.hf",
                &[],
                "an encoded",
            ),
            (
                MANIFEST,
                "https://cdn.example.com/dsx/a.hf",
                &[],
                "not under",
            ),
            (
                MANIFEST,
                "https://cdn.example.com:8443/ds/a.hf",
                &[],
                "not under",
            ),
            (
                MANIFEST,
                "https://evil.example.net/ds/a.hf",
                &[],
                "not under",
            ),
            (
                MANIFEST,
                "https://evil.example.net/ds/a.hf",
                &["https://evil.example.net"],
                "allowed",
            ),
            (
                MANIFEST,
                "https://evil.example.net/x/a.hf",
                &["https://evil.example.net/ds"],
                "not under",
            ),
            (
                MANIFEST,
                "http://cdn.example.com/ds/a.hf",
                &[],
                "plain http",
            ),
            (
                MANIFEST,
                "http://cdn.example.com/ds/a.hf",
                &["http://cdn.example.com"],
                "plain http",
            ),
            (MANIFEST, "s3://bucket/ds/a.hf", &[], "not under"),
            (
                MANIFEST,
                "s3://bucket/ds/a.hf",
                &["s3://bucket/ds/"],
                "allowed",
            ),
            (
                MANIFEST,
                "https://u:p@cdn.example.com/ds/a.hf",
                &[],
                "user name or password",
            ),
            (
                MANIFEST,
                "https://cdn.example.com:99999/ds/a.hf",
                &[],
                "not a valid URL",
            ),
            (s3, "s3://bucket/ds/a.hf", &[], "own"),
            (s3, "s3://bucket/other/a.hf", &[], "not under"),
            (s3, "s3://other/ds/a.hf", &[], "not under"),
            (s3, "https://cdn.example.com/ds/a.hf", &[], "not under"),
            (local, "a.hf", &[], "own"),
            (
                local,
                "https://cdn.example.com/ds/a.hf",
                &[],
                "manifest is a local file",
            ),
            (
                local,
                "s3://bucket/ds/a.hf",
                &[],
                "manifest is a local file",
            ),
            (
                local,
                "https://cdn.example.com/ds/a.hf",
                &["https://cdn.example.com/ds/"],
                "allowed",
            ),
            (
                "http://127.0.0.1:8080/hashfile-dataset.json",
                "http://127.0.0.1:8080/a.hf",
                &[],
                "own",
            ),
            (
                "http://127.0.0.1:8080/hashfile-dataset.json",
                "http://127.0.0.1:8081/a.hf",
                &[],
                "not under",
            ),
            (
                "http://127.0.0.1:8080/hashfile-dataset.json",
                "http://localhost:8080/a.hf",
                &[],
                "not under",
            ),
        ];
        for &(manifest, shard, allowed, expected) in cases {
            let got = reach_of(manifest, shard, allowed);
            match got {
                Ok(how) => assert_eq!(how, expected, "{manifest} -> {shard} allowing {allowed:?}"),
                Err(e) => assert!(
                    e.contains(expected),
                    "{manifest} -> {shard} allowing {allowed:?}: {e:?}, expected {expected:?}"
                ),
            }
        }
    }

    #[test]
    fn allowed_places_are_urls() {
        assert!(Places::new(MANIFEST, &["https://a.example".into(), "s3://b".into()]).is_ok());
        let e = Places::new(MANIFEST, &["https://a.example/ds/..%2fx/".into()]).unwrap_err();
        assert!(e.contains("an encoded"), "{e}");
        let e = Places::new(MANIFEST, &["https://a.example/ds/?q".into()]).unwrap_err();
        assert!(e.contains("has a query or a fragment"), "{e}");
        let e = Places::new(MANIFEST, &["cdn.example.com".into()]).unwrap_err();
        assert!(
            e.contains("give http(s)://") && e.contains("cdn.example.com"),
            "{e}"
        );
    }

    #[test]
    fn headers_and_credentials_go_only_with_the_manifests_own_place() {
        let given = RemoteOptions {
            headers: vec![("Authorization".into(), "Bearer x".into())],
            s3_credentials: Some(("id".into(), "secret".into())),
            ..RemoteOptions::default()
        };
        assert_eq!(Reach::Own.options(&given).headers.len(), 1);
        let allowed = Reach::Allowed.options(&given);
        assert!(allowed.headers.is_empty() && allowed.s3_credentials.is_none());
    }
}
