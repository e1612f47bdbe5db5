//! Ranged GETs from S3 and S3-compatible servers (MinIO, R2, ...) with
//! object_store, which signs requests (SigV4), reads credentials from the
//! standard AWS environment variables, and retries 5xx and broken
//! connections with backoff.

use std::ops::Range;
use std::sync::Arc;

use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};

use crate::error::{RemoteError, RemoteErrorKind};
use crate::object::Identity;
use crate::RemoteOptions;

pub(crate) struct S3Transport {
    store: Arc<AmazonS3>,
    key: object_store::path::Path,
}

impl S3Transport {
    /// A client for `s3://bucket/key`: credentials, region and endpoint
    /// from the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL`), then the
    /// options, which win. Without a region anywhere, `us-east-1`.
    pub(crate) fn new(
        bucket: &str,
        key: &str,
        options: &RemoteOptions,
    ) -> Result<S3Transport, RemoteError> {
        let mut client = ClientOptions::new()
            .with_timeout(options.timeout)
            .with_connect_timeout(options.connect_timeout)
            .with_pool_max_idle_per_host(options.concurrency);
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        if let Ok(endpoint) = std::env::var("AWS_ENDPOINT_URL") {
            builder = builder.with_endpoint(endpoint);
        }
        if let Some(endpoint) = &options.s3_endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        if let Some((id, secret)) = &options.s3_credentials {
            builder = builder
                .with_access_key_id(id)
                .with_secret_access_key(secret);
        }
        if let Some(region) = &options.s3_region {
            builder = builder.with_region(region);
        }
        let endpoint_is_http = options
            .s3_endpoint
            .as_deref()
            .or(std::env::var("AWS_ENDPOINT_URL").ok().as_deref())
            .is_some_and(|e| e.starts_with("http://"));
        if endpoint_is_http {
            client = client.with_allow_http(true);
            // A custom endpoint (MinIO, say) serves buckets as paths.
            builder = builder.with_virtual_hosted_style_request(false);
        }
        let retry = RetryConfig {
            max_retries: options.retries as usize,
            backoff: BackoffConfig {
                init_backoff: options.backoff,
                ..BackoffConfig::default()
            },
            ..RetryConfig::default()
        };
        let store = builder
            .with_client_options(client)
            .with_retry(retry)
            .build()
            .map_err(|e| {
                RemoteError::new(
                    RemoteErrorKind::Invalid,
                    format!("cannot make an S3 client: {e}"),
                )
            })?;
        let key = object_store::path::Path::parse(key).map_err(|e| {
            RemoteError::new(
                RemoteErrorKind::Invalid,
                format!("{key:?} is not an object key: {e}"),
            )
        })?;
        Ok(S3Transport {
            store: Arc::new(store),
            key,
        })
    }

    /// The client and the object's key, for writing (`write.rs`).
    pub(crate) fn into_parts(self) -> (Arc<dyn ObjectStore>, object_store::path::Path) {
        (self.store, self.key)
    }

    pub(crate) async fn get(
        &self,
        range: Range<u64>,
        expect: Option<&Identity>,
    ) -> Result<(Vec<u8>, Identity), RemoteError> {
        let what = format!("bytes {}..{}", range.start, range.end);
        let options = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: expect.and_then(|e| e.etag.clone()),
            ..GetOptions::default()
        };
        let result = self
            .store
            .get_opts(&self.key, options)
            .await
            .map_err(|e| store_error(e, &what))?;
        let identity = Identity {
            size: result.meta.size,
            etag: result.meta.e_tag.clone(),
            last_modified: Some(result.meta.last_modified.to_rfc2822()),
        };
        if let Some(expect) = expect {
            expect.check(&identity)?;
        }
        let got = result.range.clone();
        let wanted = range.start..range.end.min(identity.size);
        if got != wanted {
            return Err(RemoteError::new(
                RemoteErrorKind::Protocol,
                format!(
                    "asked for {what}, the server sent bytes {}..{}",
                    got.start, got.end
                ),
            ));
        }
        // Read as a stream, never past the range asked for.
        let mut body = crate::http::Body::new(
            crate::http::body_limit(std::slice::from_ref(&wanted)),
            None,
            &what,
        )?;
        let mut stream = result.into_stream();
        while let Some(chunk) = stream.next().await {
            body.push(&chunk.map_err(|e| {
                RemoteError::new(
                    RemoteErrorKind::Connection,
                    format!("the body of {what} broke off: {e}"),
                )
            })?)?;
        }
        let body = body.finish();
        if body.len() as u64 != wanted.end - wanted.start {
            return Err(RemoteError::new(
                RemoteErrorKind::Connection,
                format!(
                    "the body of {what} ended after {} of {} bytes",
                    body.len(),
                    wanted.end - wanted.start
                ),
            ));
        }
        Ok((body, identity))
    }
}

fn store_error(error: object_store::Error, what: &str) -> RemoteError {
    use object_store::Error as E;
    let (kind, status) = match &error {
        E::NotFound { .. } => (RemoteErrorKind::NotFound, Some(404)),
        E::Precondition { .. } => (RemoteErrorKind::Changed, Some(412)),
        E::PermissionDenied { .. } => (RemoteErrorKind::Denied, Some(403)),
        E::Unauthenticated { .. } => (RemoteErrorKind::Denied, Some(401)),
        _ => (RemoteErrorKind::Other, None),
    };
    let message = match kind {
        RemoteErrorKind::NotFound => "no object at this location (404)".to_owned(),
        RemoteErrorKind::Changed => {
            format!("the object was replaced since it was opened (412 to If-Match, reading {what})")
        }
        RemoteErrorKind::Denied => format!("access denied: check the credentials ({error})"),
        _ => format!("GET of {what} failed: {error}"),
    };
    RemoteError {
        kind,
        status,
        message,
    }
}
