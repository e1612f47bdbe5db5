//! Atomic publish: a store is written to a temporary file beside its
//! destination, synced, and renamed over it, so readers see the old file
//! or the new one and never a part.

use std::fs;
use std::path::{Path, PathBuf};

use super::index::Prepared;
use super::records::Spill;
use super::temp::TempFile;
use crate::cancel::CancelFlag;
use crate::error::{Error, Result};
use crate::parallel::*;

/// An error if `path` is written as a URL (`s3://bucket/key`,
/// `https://host/x.hf`): a build writes local files, and such a "path"
/// would otherwise make a local directory named `s3:` and report success.
pub fn refuse_url(path: &Path) -> Result<()> {
    let bytes = path.as_os_str().as_encoded_bytes();
    let scheme_len = bytes
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')))
        .unwrap_or(bytes.len());
    if scheme_len > 0 && bytes[0].is_ascii_alphabetic() && bytes[scheme_len..].starts_with(b"://") {
        return Err(Error::InvalidOption {
            name: "output",
            reason: format!(
                "{} is a URL; a build writes a local file or directory: build it here, then upload it (a dataset on S3 is written by hashfile.spark's write_dataset)",
                path.display()
            ),
        });
    }
    Ok(())
}

/// Where a store for `path` is published: `path` itself if it is a regular
/// file or does not exist yet, or, for a symbolic link, the file the link
/// leads to (so a deploy's `current.hf -> releases/7.hf` keeps its link and
/// the release file is replaced, as `>` in a shell writes through a link).
/// A directory, a device, a FIFO or a socket is refused: renaming a file
/// over one would replace something that is not a store.
///
/// A link is followed only if this process's user or root owns it: in a
/// directory others can write to (`/tmp`, a shared deploy directory),
/// another user's link could otherwise send a privileged build's output
/// over any file that user cannot write. Such a link is refused with
/// [`Error::UnsafeLink`], before anything is written. This is
/// `fs.protected_symlinks` applied everywhere, not only in sticky
/// directories: a build run as root in a directory a deploy user owns is
/// exactly the case to stop. Links in the directories above the last
/// component are resolved by the kernel, under its own rules.
pub fn destination(path: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    refuse_url(path)?;
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(Error::InvalidOption {
            name: "output",
            reason: format!(
                "{} ends with /, so it names a directory; give a file path",
                path.display()
            ),
        });
    }
    let mut at = path.to_path_buf();
    // Links followed, as many as the kernel follows (Linux's MAXSYMLINKS).
    for _ in 0..40 {
        let meta = match fs::symlink_metadata(&at) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(at),
            Err(e) => return Err(Error::io(Some(&at), e)),
        };
        let kind = meta.file_type();
        let what = if kind.is_symlink() {
            check_link_owner(&at, &meta)?;
            let target = fs::read_link(&at).map_err(|e| Error::io(Some(&at), e))?;
            at = match at.parent() {
                Some(dir) if target.is_relative() => dir.join(target),
                _ => target,
            };
            continue;
        } else if kind.is_file() {
            return Ok(at);
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        let through = if at == path {
            String::new()
        } else {
            format!(" (where the link {} leads)", path.display())
        };
        return Err(Error::InvalidOption {
            name: "output",
            reason: format!(
                "{}{through} is {what}; a store replaces only a regular file: give a file path",
                at.display()
            ),
        });
    }
    Err(Error::InvalidOption {
        name: "output",
        reason: format!(
            "{} is a chain of more than 40 symbolic links",
            path.display()
        ),
    })
}

/// An error unless the link at `link` belongs to this process's user or to
/// root (see [`destination`]).
fn check_link_owner(link: &Path, meta: &fs::Metadata) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    if meta.uid() == user || meta.uid() == 0 {
        return Ok(());
    }
    Err(Error::UnsafeLink {
        link: link.to_path_buf(),
        owner: meta.uid(),
        user,
    })
}

/// Bytes of the index written at once by one thread.
const WRITE_PIECE: usize = 1 << 22;

/// A streaming build's finish: the records are already in the temporary
/// file after the header's room; the index goes after them and the header
/// at the start. Returns the file's length.
pub(super) fn write_in_place(spill: &Spill, prepared: &Prepared) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let file = &spill.temp.file;
    let io = |e| Error::io(Some(&spill.destination), e);
    // Written in pieces on the pool: filling fresh pages of the page cache
    // costs more than the copy, and it runs on every core.
    let pieces: Vec<(u64, &[u8])> = prepared
        .index
        .iter()
        .flat_map(|(id, bytes)| {
            let at = prepared.header.section(*id).offset;
            bytes
                .chunks(WRITE_PIECE)
                .enumerate()
                .map(move |(k, piece)| (at + (k * WRITE_PIECE) as u64, piece))
        })
        .collect();
    pieces
        .par_iter()
        .try_for_each(|&(at, piece)| file.write_all_at(piece, at))
        .map_err(io)?;
    file.set_len(prepared.header.file_len).map_err(io)?;
    file.write_all_at(&prepared.header.encode(), 0)
        .map_err(io)?;
    Ok(prepared.header.file_len)
}

/// Syncs a written temporary file, opens it as a reader would, asks
/// `before_publish`, looks at `cancel` a last time, and renames it over
/// `path`. A build never replaces a file with one its own reader refuses:
/// if the new store does not open, the error names the temporary file,
/// which is removed, and `path` stays.
pub(super) fn publish(
    temp: &mut TempFile,
    path: &Path,
    len: u64,
    cancel: &CancelFlag,
    before_publish: &mut dyn FnMut() -> Result<()>,
) -> Result<u64> {
    let with_path = |e: std::io::Error| Error::io(Some(path), e);
    temp.file.sync_all().map_err(with_path)?;
    let written = crate::read::FileSource::new(temp.file.try_clone().map_err(with_path)?)
        .map_err(with_path)?;
    crate::read::Reader::new(written).map_err(|e| e.with_path(&temp.path))?;
    before_publish()?;
    take_mode_of(&temp.file, path).map_err(with_path)?;
    // The point of no return: after the rename the store is published.
    cancel.check()?;
    fs::rename(&temp.path, path).map_err(with_path)?;
    temp.mark_published();
    // Make the rename itself durable.
    if let Ok(dir) = fs::File::open(temp.path.parent().unwrap_or(Path::new("."))) {
        let _ = dir.sync_all();
    }
    Ok(len)
}

/// Publishes `bytes` at `path` as a store is published: written to a
/// temporary file beside it, synced, given the mode a rewrite in place
/// would keep, renamed over it, and the rename synced; a symbolic link at
/// `path` is followed only when this user or root owns it. For the files
/// that go with stores (a dataset's manifest): readers see the old file
/// or the new one, never a part.
pub fn publish_file(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let resolved = destination(path)?;
    let path = resolved.as_path();
    let with_path = |e: std::io::Error| Error::io(Some(path), e);
    let mut temp = TempFile::create_beside(path).map_err(with_path)?;
    temp.file.write_all(bytes).map_err(with_path)?;
    temp.file.sync_all().map_err(with_path)?;
    take_mode_of(&temp.file, path).map_err(with_path)?;
    fs::rename(&temp.path, path).map_err(with_path)?;
    temp.mark_published();
    if let Ok(dir) = fs::File::open(temp.path.parent().unwrap_or(Path::new("."))) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Gives the file about to replace `path` the permissions a rewrite in
/// place would have kept: the mode of the file at `path` and its group
/// (where this process may set it), or, for a new file, `0o666` less the
/// umask, as `File.open` and `>` give. Set-user-ID and set-group-ID bits
/// are kept only while the owner (and for set-group-ID, the group) is the
/// same; group permissions are narrowed to what others have when the group
/// cannot be kept, so they never pass to another group.
fn take_mode_of(file: &fs::File, path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let new = file.metadata()?;
    let mode = match fs::symlink_metadata(path) {
        Ok(old) if old.is_file() => {
            let mut mode = old.mode() & 0o7777;
            let mut same_group = old.gid() == new.gid();
            if !same_group {
                same_group = std::os::unix::fs::fchown(file, None, Some(old.gid())).is_ok();
            }
            if !same_group {
                mode = (mode & !0o070) | (mode & ((mode & 0o007) << 3));
            }
            if old.uid() != new.uid() {
                mode &= !0o4000;
            }
            if !same_group || old.uid() != new.uid() {
                mode &= !0o2000;
            }
            mode
        }
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0o666 & !umask(),
        Err(e) => return Err(e),
    };
    file.set_permissions(fs::Permissions::from_mode(mode))
}

/// The process's file-creation mask, read without changing it where Linux
/// shows it (`/proc/self/status`, since 4.7); elsewhere set and restored,
/// which another thread creating a file at that instant could observe.
fn umask() -> u32 {
    let shown = fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("Umask:"))?;
            u32::from_str_radix(line["Umask:".len()..].trim(), 8).ok()
        });
    shown.unwrap_or_else(|| {
        // SAFETY: umask has no preconditions; the old mask is put back at once.
        unsafe {
            let old = libc::umask(0o077);
            libc::umask(old);
            old as u32
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The last check before the rename: bytes that do not open as a store
    /// are never published, and the old file stays.
    #[test]
    fn a_file_that_does_not_open_is_not_published() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.hf");
        std::fs::write(&path, b"the old file").unwrap();
        let mut builder = crate::build::Builder::new(Default::default()).unwrap();
        builder.insert(b"k", b"v");
        let store = builder.to_bytes().unwrap();
        // A store that lost its last byte on the way to the disk.
        let mut temp = TempFile::create_beside(&path).unwrap();
        temp.file.write_all(&store[..store.len() - 1]).unwrap();
        let error = publish(
            &mut temp,
            &path,
            store.len() as u64,
            &CancelFlag::new(),
            &mut || Ok(()),
        )
        .unwrap_err();
        assert!(
            matches!(&error, Error::Truncated { path: Some(p), .. } if *p == temp.path),
            "{error:?}"
        );
        drop(temp);
        assert_eq!(std::fs::read(&path).unwrap(), b"the old file");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "the temporary file is gone"
        );
    }
}
