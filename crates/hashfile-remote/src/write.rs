//! Writing objects to S3: what a dataset built by many processes needs (a
//! Spark job's tasks upload shards, its driver the manifest). Only S3 and
//! S3-compatible servers: plain HTTP has no standard way to write.
//!
//! An S3 PUT, single or multipart, is atomic: readers see the old object
//! or the whole new one, never a part, so an upload needs no rename.

use std::io::Read;
use std::path::Path;

use futures_util::StreamExt;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};

use crate::error::{RemoteError, RemoteErrorKind};
use crate::s3::S3Transport;
use crate::{located, parse_remote, Location, RemoteOptions};

/// Parts of a multipart upload; S3 allows 10,000 of at least 5 MiB, so
/// objects up to 160 GiB.
const PART_LEN: usize = 16 << 20;

/// Parts uploaded at once.
const PARTS_IN_FLIGHT: usize = 4;

/// Uploads the file at `path` to `location` (`s3://bucket/key`), replacing
/// what is there: one PUT for a file of one part, else a multipart upload
/// (aborted if it fails, so no part is left billed).
pub fn put_file(location: &str, path: &Path, options: &RemoteOptions) -> hashfile::Result<()> {
    let io = |e: std::io::Error| hashfile::Error::Io {
        path: Some(path.to_path_buf()),
        source: e,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    run(location, options, |store, key| async move {
        if len <= PART_LEN as u64 {
            let mut bytes = Vec::with_capacity(len as usize);
            file.read_to_end(&mut bytes).map_err(io)?;
            store
                .put(&key, PutPayload::from(bytes))
                .await
                .map_err(|e| write_error(location, e))?;
            return Ok(());
        }
        let upload = store
            .put_multipart(&key)
            .await
            .map_err(|e| write_error(location, e))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_LEN);
        let mut buffer = vec![0u8; PART_LEN];
        loop {
            let n = match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = writer.abort().await;
                    return Err(io(e));
                }
            };
            if let Err(e) = writer.wait_for_capacity(PARTS_IN_FLIGHT).await {
                return Err(write_error(location, e));
            }
            writer.write(&buffer[..n]);
        }
        writer
            .finish()
            .await
            .map_err(|e| write_error(location, e))?;
        Ok(())
    })
}

/// Writes `bytes` as the object at `location` (`s3://bucket/key`), in one
/// PUT.
pub fn put_bytes(location: &str, bytes: Vec<u8>, options: &RemoteOptions) -> hashfile::Result<()> {
    run(location, options, |store, key| async move {
        store
            .put(&key, PutPayload::from(bytes))
            .await
            .map_err(|e| write_error(location, e))?;
        Ok(())
    })
}

/// Deletes the objects beside `location` (in the same "directory": its key
/// up to the last `/`) whose names `doomed` picks, and returns how many.
/// An object that cannot be deleted is left: it costs space, never
/// correctness.
pub fn delete_beside(
    location: &str,
    doomed: impl Fn(&str) -> bool,
    options: &RemoteOptions,
) -> hashfile::Result<usize> {
    run(location, options, |store, key| async move {
        let parent = key
            .parts()
            .count()
            .checked_sub(1)
            .map(|n| object_store::path::Path::from_iter(key.parts().take(n)));
        let mut listing = store.list(parent.as_ref());
        let mut names = Vec::new();
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| write_error(location, e))?;
            // Only objects directly beside the key, not under a subfolder.
            let in_folder = meta.location.parts().count() == key.parts().count();
            if let Some(name) = meta.location.filename() {
                if in_folder && doomed(name) {
                    names.push(meta.location.clone());
                }
            }
        }
        let mut deleted = 0;
        for name in names {
            if store.delete(&name).await.is_ok() {
                deleted += 1;
            }
        }
        Ok(deleted)
    })
}

/// Runs `work` with a client for the S3 location, on a runtime of its own.
fn run<'a, R, F>(
    location: &'a str,
    options: &RemoteOptions,
    work: impl FnOnce(std::sync::Arc<dyn ObjectStore>, object_store::path::Path) -> F,
) -> hashfile::Result<R>
where
    F: std::future::Future<Output = hashfile::Result<R>> + 'a,
{
    let at = |error: RemoteError| located(location, error);
    let (bucket, key) = match parse_remote(location)? {
        Location::S3 { bucket, key } => (bucket, key),
        Location::Http(_) => {
            return Err(at(RemoteError::new(
                RemoteErrorKind::Invalid,
                "writing is to a local path or an s3:// URL; HTTP has no standard way to write",
            )))
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| {
            at(RemoteError::new(
                RemoteErrorKind::Other,
                format!("cannot start the I/O runtime: {e}"),
            ))
        })?;
    let transport = {
        let _entered = runtime.enter();
        S3Transport::new(&bucket, &key, options).map_err(at)?
    };
    let (store, key) = transport.into_parts();
    runtime.block_on(work(store, key))
}

fn write_error(location: &str, error: object_store::Error) -> hashfile::Error {
    let kind = match &error {
        object_store::Error::NotFound { .. } => RemoteErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => RemoteErrorKind::Denied,
        _ => RemoteErrorKind::Other,
    };
    located(
        location,
        RemoteError::new(kind, format!("writing failed: {error}")),
    )
}
