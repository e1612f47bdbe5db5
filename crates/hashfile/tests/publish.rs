//! Publishing in directories others can write to: a build follows only
//! symbolic links of its own user or root, and the file it publishes keeps
//! the permissions of the one it replaces.
mod support;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use hashfile::{Builder, Error};

fn build(path: &Path) -> hashfile::Result<u64> {
    let mut builder = Builder::new(Default::default()).unwrap();
    builder.insert(b"k", b"v");
    builder.write_file(path)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A link another user planted in a shared directory is refused, naming
/// the link and its owner, and the file it leads to is untouched; the
/// same link owned by this user (or root) is written through, as deploy
/// links are.
#[test]
fn a_link_of_another_user_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = dir.path().join("secret.conf");
    fs::write(&victim, b"secret").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
    let link = shared.join("out.hf");
    std::os::unix::fs::symlink(&victim, &link).unwrap();

    // Owned by this user: followed (the deploy-link case).
    build(&link).unwrap();
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays"
    );
    assert!(
        hashfile::Reader::open(&victim).is_ok(),
        "the target was replaced"
    );
    assert_eq!(
        fs::metadata(&victim).unwrap().mode() & 0o7777,
        0o600,
        "with the target's mode"
    );

    require_env!(
        "HASHFILE_REQUIRE_ROOT",
        is_root(),
        "the other user's link needs root to plant it"
    );
    fs::write(&victim, b"secret").unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let error = build(&link).unwrap_err();
    match &error {
        Error::UnsafeLink {
            link: at,
            owner: 65534,
            user: 0,
        } => assert_eq!(at, &link),
        other => panic!("expected UnsafeLink, got {other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.contains(&link.display().to_string()) && text.contains("uid 65534"),
        "{text}"
    );
    assert_eq!(
        fs::read(&victim).unwrap(),
        b"secret",
        "the target is untouched"
    );
    assert_eq!(
        fs::read_dir(&shared).unwrap().count(),
        1,
        "no temporary file left"
    );
    // A chain: our link to their link is refused at theirs.
    let ours = dir.path().join("ours.hf");
    std::os::unix::fs::symlink(&link, &ours).unwrap();
    assert!(matches!(
        build(&ours),
        Err(Error::UnsafeLink { owner: 65534, .. })
    ));
    // Root's links are trusted like one's own.
    std::os::unix::fs::lchown(&link, Some(0), Some(0)).unwrap();
    build(&link).unwrap();
}

/// The published file keeps the mode of the file it replaces (0600, 0640
/// with its group, set-user-ID while the owner is the same); a new file
/// gets 0666 less the umask; the temporary file is private while written.
#[test]
fn a_rebuild_keeps_the_mode_and_group_of_the_file_it_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.hf");
    build(&path).unwrap();
    // SAFETY: umask has no preconditions; this test's process reads it back at once.
    let umask = unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old
    };
    assert_eq!(
        fs::metadata(&path).unwrap().mode() & 0o7777,
        0o666 & !umask as u32,
        "a new file"
    );
    for mode in [0o600, 0o640, 0o644, 0o4755, 0o400] {
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        build(&path).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().mode() & 0o7777,
            mode,
            "{mode:o}"
        );
    }
    // The rest needs root.
    require_env!(
        "HASHFILE_REQUIRE_ROOT",
        is_root(),
        "giving the file another group and owner needs root"
    );
    // A group the file had is kept (root may set any).
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::chown(&path, None, Some(65534)).unwrap();
    build(&path).unwrap();
    let meta = fs::metadata(&path).unwrap();
    assert_eq!((meta.mode() & 0o7777, meta.gid()), (0o640, 65534));
    // Set-user-ID of another owner is not carried to a file this user owns.
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o4755)).unwrap();
    build(&path).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o755);
}
