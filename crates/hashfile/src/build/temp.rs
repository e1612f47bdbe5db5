//! A build's temporary files, made so that a build killed with SIGKILL
//! leaves nothing that a later build does not remove.
//!
//! - The spill's working files (the groups' hashes and offsets, the slots,
//!   a resolve's changes and replacements) need no name: they are only
//!   ever read and written through their descriptors. [`unnamed_beside`]
//!   makes them with Linux's `O_TMPFILE` (ext4, XFS, Btrfs, tmpfs and
//!   others; overlayfs since Linux 6.6), or elsewhere creates them under
//!   a name and unlinks it at once. Their space goes back with their last
//!   descriptor, which the kernel closes however the process ends.
//! - The file a store is written in is renamed over the destination at
//!   publish, so it has a name all along: [`TempFile::create_beside`]
//!   names it `.NAME.hashfile-PID-START-N.tmp`, PID and START (the
//!   process's start time, in clock ticks since boot) saying whose it is,
//!   and holds an `flock` on it while the descriptor is open. Dropped
//!   unpublished, it is removed; a killed build's stays, and the next
//!   build that makes a temporary file in the same directory removes it
//!   ([`sweep`]).
//!
//! The sweep removes a file only if all of these hold: its name is of
//! that pattern; it is a regular file (not a link) owned by this user;
//! the process it names is gone (no process of that PID, or a zombie, or
//! one started at another time: the PID was reused); and no process holds
//! its lock. The lock covers what a PID cannot say: a build in another PID
//! namespace (a container) or, on NFS, on another host, writing into the
//! same directory; the PID covers a file system without locks. So it never
//! takes a file a live build is writing, nor anything another program
//! named. Leftovers of versions before these names (`.NAME.PID.N.tmp`)
//! are not recognised.

use std::collections::HashMap;
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a temporary file's name carries between the destination's name and
/// the owner: `.NAME` + `MARKER` + `PID-START-N` + `SUFFIX`.
const MARKER: &str = ".hashfile-";
const SUFFIX: &str = ".tmp";

/// A process sweeps a directory again only once this many times the last
/// sweep's length has passed since it ended: at most about 1% of its time
/// goes to sweeps, however large the directory. A dataset makes a
/// temporary file per shard in one directory, which would otherwise be
/// listed once per shard; a small directory is swept at every build.
const SWEEP_SPACING: u32 = 100;

/// How long a sweep under way keeps other threads from sweeping the same
/// directory.
const SWEEP_UNDER_WAY: Duration = Duration::from_secs(10);

/// A temporary file beside a destination, removed on drop unless published.
#[derive(Debug)]
pub(super) struct TempFile {
    pub(super) file: fs::File,
    pub(super) path: PathBuf,
    pub(super) published: bool,
}

impl TempFile {
    /// Creates `.NAME.hashfile-PID-START-N.tmp` in the destination's
    /// directory, private to this user and locked, after removing what
    /// killed builds left there (`sweep_now_and_then`).
    pub(super) fn create_beside(destination: &Path) -> std::io::Result<TempFile> {
        sweep_now_and_then(dir_of(destination));
        create_named(destination)
    }

    /// Notes that the file was renamed into place: it is the store now,
    /// kept on drop, and its lock (which only marked a temporary file in
    /// use) is let go.
    pub(super) fn mark_published(&mut self) {
        self.published = true;
        // SAFETY: a plain system call on a descriptor `self.file` keeps
        // open for it.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The directory a destination's temporary files go in.
fn dir_of(destination: &Path) -> &Path {
    match destination.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The owner a temporary file's name carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Owner {
    pid: u32,
    /// The process's start time in clock ticks since boot; 0 where it
    /// could not be read.
    start: u64,
}

/// `.NAME.hashfile-PID-START-N.tmp`.
fn temp_name(name: &std::ffi::OsStr, owner: Owner, n: u32) -> std::ffi::OsString {
    let mut s = std::ffi::OsString::from(".");
    s.push(name);
    s.push(format!("{MARKER}{}-{}-{n}{SUFFIX}", owner.pid, owner.start));
    s
}

/// The owner of a temporary file named by `temp_name`, or `None` for any
/// other name.
fn owner_of(file_name: &[u8]) -> Option<Owner> {
    let rest = file_name
        .strip_prefix(b".")?
        .strip_suffix(SUFFIX.as_bytes())?;
    // NAME may hold the marker too: the owner follows its last one.
    let at = rest
        .windows(MARKER.len())
        .rposition(|w| w == MARKER.as_bytes())?;
    if at == 0 {
        return None;
    }
    let numbers = std::str::from_utf8(&rest[at + MARKER.len()..]).ok()?;
    let mut fields = numbers.split('-').map(|f| {
        (!f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
            .then(|| f.parse::<u64>().ok())
            .flatten()
    });
    let (pid, start, _n) = (fields.next()??, fields.next()??, fields.next()??);
    if fields.next().is_some() {
        return None;
    }
    // PID 0 (and anything past a pid_t) names no process: kill(0, ...)
    // would even mean this process group.
    let pid = u32::try_from(pid)
        .ok()
        .filter(|&p| p > 0 && p <= i32::MAX as u32)?;
    Some(Owner { pid, start })
}

/// This process, as its temporary files name it. Worked out again in a
/// forked child, whose PID differs; kept in atomics, not a lock, so that
/// a child forked while another thread held one cannot hang here.
fn this_process() -> Owner {
    static PID: AtomicU32 = AtomicU32::new(0);
    static START: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    if PID.load(Ordering::Acquire) == pid {
        return Owner {
            pid,
            start: START.load(Ordering::Relaxed),
        };
    }
    let start = match process_state(pid) {
        Some(ProcessState::Running { start }) => start,
        _ => 0,
    };
    START.store(start, Ordering::Relaxed);
    PID.store(pid, Ordering::Release);
    Owner { pid, start }
}

/// What `/proc/PID/stat` says of a process.
#[derive(Debug, PartialEq, Eq)]
enum ProcessState {
    /// Running (or sleeping, stopped: anything but a zombie), started
    /// `start` clock ticks after boot.
    Running { start: u64 },
    /// Exited, not yet reaped by its parent: its files are closed.
    Zombie,
    /// No such process.
    Gone,
}

/// The state of process `pid` from `/proc`; `None` where `/proc` does not
/// say (not Linux, or not mounted).
fn process_state(pid: u32) -> Option<ProcessState> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let stat = match fs::read(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Gone, or no /proc at all: this process's own entry tells.
            return fs::metadata("/proc/self/stat")
                .is_ok()
                .then_some(ProcessState::Gone);
        }
        Err(_) => return None,
    };
    // The command name, in parentheses, may hold spaces and parentheses:
    // the fields follow the last ')'. The state is field 3, the start
    // time field 22 (proc(5)).
    let after = stat.iter().rposition(|&b| b == b')')?;
    let fields = std::str::from_utf8(&stat[after + 1..]).ok()?;
    let mut fields = fields.split_ascii_whitespace();
    let state = fields.next()?;
    if matches!(state, "Z" | "X") {
        return Some(ProcessState::Zombie);
    }
    let start = fields.nth(18)?.parse().ok()?;
    Some(ProcessState::Running { start })
}

/// True if the process that named a temporary file is gone: none of its
/// PID, a zombie, or one started at another time (the PID was reused).
/// False while it may be alive.
fn is_gone(owner: Owner) -> bool {
    match process_state(owner.pid) {
        Some(ProcessState::Gone | ProcessState::Zombie) => true,
        Some(ProcessState::Running { start }) => owner.start != 0 && start != owner.start,
        None => {
            // SAFETY: kill with signal 0 sends nothing, only checks that the
            // process exists; the PID is positive (`owner_of`), so it names
            // one process, never a group.
            let result = unsafe { libc::kill(owner.pid as libc::pid_t, 0) };
            result != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        }
    }
}

/// What taking a file's lock without waiting found.
#[derive(Debug, PartialEq, Eq)]
enum Lock {
    Taken,
    /// Another open file holds it: a live process (maybe in another PID
    /// namespace) is using the file.
    Held,
    /// The file system has no locks (some network mounts).
    Unsupported,
}

/// Takes an exclusive `flock` on `file` without waiting. The lock goes
/// with the last descriptor of the open file, however the process ends.
fn try_lock(file: &fs::File) -> Lock {
    // SAFETY: a plain system call on a descriptor `file` keeps open for it.
    let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if result == 0 {
        return Lock::Taken;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EWOULDBLOCK) => Lock::Held,
        _ => Lock::Unsupported,
    }
}

/// Creates this process's next free temporary file for `destination`,
/// locked.
fn create_named(destination: &Path) -> std::io::Result<TempFile> {
    let name = destination
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?;
    let dir = dir_of(destination);
    let owner = this_process();
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create_new(true);
    // Private until published: `publish` gives it the mode of the file
    // it replaces (or a new file's) just before the rename, so no other
    // user can open it while it is being written and read it later.
    options.mode(0o600);
    for attempt in 0u32.. {
        let path = dir.join(temp_name(name, owner, attempt));
        let file = match options.open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 1000 => continue,
            Err(e) => return Err(e),
        };
        let temp = TempFile {
            file,
            path,
            published: false,
        };
        // A sweep in another PID namespace, which cannot see this process,
        // may have taken the lock in the instant before this one (and then
        // removes the file): then try the next name.
        let swept = match try_lock(&temp.file) {
            Lock::Taken => temp.file.metadata()?.nlink() == 0,
            Lock::Held => true,
            Lock::Unsupported => false,
        };
        if swept && attempt < 1000 {
            continue;
        }
        return Ok(temp);
    }
    unreachable!("the loop returns")
}

/// An unnamed temporary file in `destination`'s directory, read and
/// written by its descriptor only, private to this user: gone with its
/// last descriptor, even if the process is killed.
pub(super) fn unnamed_beside(destination: &Path) -> std::io::Result<fs::File> {
    #[cfg(target_os = "linux")]
    if let Ok(file) = o_tmpfile(dir_of(destination)) {
        return Ok(file);
    }
    named_then_unlinked(destination)
}

/// A file made by `O_TMPFILE` in `dir`: it never has a name. Fails where
/// the kernel or the file system lacks it (`EOPNOTSUPP`, or `EISDIR` from
/// kernels before 3.11).
#[cfg(target_os = "linux")]
fn o_tmpfile(dir: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(dir)
}

/// A temporary file created under its name, whose name is removed at
/// once: only a kill between the two calls leaves it, under a name the
/// next build's sweep recognises.
fn named_then_unlinked(destination: &Path) -> std::io::Result<fs::File> {
    let mut temp = create_named(destination)?;
    fs::remove_file(&temp.path)?;
    temp.published = true;
    let file = temp.file.try_clone()?;
    drop(temp);
    Ok(file)
}

/// `sweep(dir)`, unless this process swept `dir` so lately that another
/// would pass `1 / SWEEP_SPACING` of its time (`SWEEP_SPACING`).
fn sweep_now_and_then(dir: &Path) {
    // Per directory, when it may be swept again.
    static NEXT: Mutex<Option<HashMap<PathBuf, Instant>>> = Mutex::new(None);
    let started = Instant::now();
    {
        // Never waits: a child forked while another thread held the lock
        // would wait forever. Busy, this time goes without a sweep.
        let Ok(mut table) = NEXT.try_lock() else {
            return;
        };
        let table = table.get_or_insert_with(HashMap::new);
        if table.get(dir).is_some_and(|&at| started < at) {
            return;
        }
        table.retain(|_, &mut at| started < at);
        table.insert(dir.to_path_buf(), started + SWEEP_UNDER_WAY);
    }
    sweep(dir);
    let ended = Instant::now();
    if let Ok(mut table) = NEXT.try_lock() {
        let next = ended + (ended - started) * SWEEP_SPACING;
        table
            .get_or_insert_with(HashMap::new)
            .insert(dir.to_path_buf(), next);
    }
}

/// Removes from `dir` the temporary files of builds that were killed (see
/// the module's notes for what is removed), and returns how many. A file
/// that cannot be looked at or removed is left: it costs space, never
/// correctness.
pub(super) fn sweep(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let this = this_process();
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            owner_of(name.as_encoded_bytes()).is_some_and(|owner| {
                owner != this && is_gone(owner) && remove_if_unused(&entry.path())
            })
        })
        .count()
}

/// A claim on work in a directory that a process may be killed in the
/// middle of (a dataset's patch writing the files of a new generation): a
/// temporary file `.NAME.hashfile-PID-START-N.tmp`, locked while this
/// process lives, removed when dropped. The next process to look
/// ([`take_abandoned`]) finds the claims of processes that died, and
/// cleans up after them.
#[derive(Debug)]
pub struct Claim {
    // Held for its lock and its removal when dropped.
    _file: TempFile,
}

impl Claim {
    /// Claims `name` in `dir`.
    pub fn take(dir: &Path, name: &str) -> std::io::Result<Claim> {
        TempFile::create_beside(&dir.join(name)).map(|file| Claim { _file: file })
    }
}

/// An exclusive `flock` on a directory, held until dropped: what orders
/// the publishes of one dataset (builds, patches, rollbacks) from any
/// process, so that each reads what it replaces, writes its manifest and
/// removes the files that left the history while no other publish does.
/// It leaves no file behind; the lock goes with the process however it
/// ends.
#[derive(Debug)]
pub struct DirLock {
    _dir: fs::File,
}

/// How long a publish waits for another one's lock on the dataset's
/// directory: far longer than a publish holds it (milliseconds to write a
/// manifest and a history, and remove files), short enough that a lock
/// held by mistake (a process that locked the directory itself) ends in an
/// error rather than a hang.
pub(super) const DIR_LOCK_WAIT: Duration = Duration::from_secs(60);

impl DirLock {
    /// Waits for the lock on `dir`, at most `DIR_LOCK_WAIT` (then an error
    /// of kind `WouldBlock` saying so), trying every few milliseconds so
    /// that the wait is never stuck in the kernel. A file system without
    /// locks (some network mounts) gives the lock at once: publishes
    /// there are not ordered.
    pub fn exclusive(dir: &Path) -> std::io::Result<DirLock> {
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(dir)?;
        let started = Instant::now();
        loop {
            match try_lock(&file) {
                Lock::Taken | Lock::Unsupported => return Ok(DirLock { _dir: file }),
                Lock::Held if started.elapsed() < DIR_LOCK_WAIT => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Lock::Held => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::WouldBlock,
                        format!(
                            "another publish of the dataset (a build, patch, compaction or rollback) has held its directory's lock for {} s: waited for it, and gave up",
                            DIR_LOCK_WAIT.as_secs()
                        ),
                    ))
                }
            }
        }
    }
}

/// The names of the claims in `dir` (`Claim::take`) that start with
/// `prefix` and whose process is gone, each claim removed as it is found:
/// what killed processes left undone. A claim of a live process, or one
/// that cannot be removed, is left.
pub fn take_abandoned(dir: &Path, prefix: &str) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let this = this_process();
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let bytes = file_name.as_encoded_bytes();
        let Some(owner) = owner_of(bytes) else {
            continue;
        };
        let Some(name) = std::str::from_utf8(bytes)
            .ok()
            .and_then(|n| n.strip_prefix('.'))
            .and_then(|n| n.rsplit_once(MARKER))
            .map(|(name, _)| name)
        else {
            continue;
        };
        if name.starts_with(prefix)
            && owner != this
            && is_gone(owner)
            && remove_if_unused(&entry.path())
        {
            found.push(name.to_owned());
        }
    }
    found
}

/// Removes the file at `path` if it is a regular file of this user that
/// no process holds locked; true if it did.
fn remove_if_unused(path: &Path) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    let ours = |meta: &fs::Metadata| meta.file_type().is_file() && meta.uid() == user;
    // Looked at before it is opened: opening a device or a FIFO can do
    // things, and a link is never followed.
    let Ok(before) = fs::symlink_metadata(path) else {
        return false;
    };
    if !ours(&before) {
        return false;
    }
    let Ok(file) = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    let same = |a: &fs::Metadata, b: &fs::Metadata| a.dev() == b.dev() && a.ino() == b.ino();
    match file.metadata() {
        Ok(opened) if ours(&opened) && same(&opened, &before) => {}
        _ => return false,
    }
    if try_lock(&file) == Lock::Held {
        return false;
    }
    // Held locked (where there are locks) while the name goes, and only
    // if the name still leads to the file looked at.
    match fs::symlink_metadata(path) {
        Ok(now) if same(&now, &before) => fs::remove_file(path).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn names_carry_their_owner_and_nothing_else_parses() {
        let owner = Owner {
            pid: 4242,
            start: 987_654,
        };
        let name = temp_name("store.hf".as_ref(), owner, 3);
        assert_eq!(name, ".store.hf.hashfile-4242-987654-3.tmp");
        assert_eq!(owner_of(name.as_bytes()), Some(owner));
        let tricky = temp_name("a.hashfile-1-2-3.tmp".as_ref(), owner, 0);
        assert_eq!(owner_of(tricky.as_bytes()), Some(owner));
        for other in [
            "store.hf.hashfile-4242-987654-3.tmp",    // no leading dot
            ".hashfile-4242-987654-3.tmp",            // no NAME
            ".store.hf.hashfile-4242-987654.tmp",     // a field short
            ".store.hf.hashfile-4242-987654-3-4.tmp", // a field over
            ".store.hf.hashfile-4242-98x654-3.tmp",   // not a number
            ".store.hf.hashfile-+4242-987654-3.tmp",  // a sign
            ".store.hf.hashfile--987654-3.tmp",       // empty
            ".store.hf.hashfile-0-987654-3.tmp",      // PID 0: a process group to kill()
            ".store.hf.hashfile-4294967295-1-3.tmp",  // past a pid_t
            ".store.hf.hashfile-4242-987654-3.tmpx",
            ".store.hf.4242.3.tmp", // the names before this version
            ".store.hf.tmp",
        ] {
            assert_eq!(owner_of(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_gone() {
        let this = this_process();
        assert_eq!(this.pid, std::process::id());
        assert!(!is_gone(this));
        if cfg!(target_os = "linux") {
            assert_ne!(this.start, 0, "the start time is read from /proc");
            // The same PID started at another time: the PID was reused.
            assert!(is_gone(Owner {
                start: this.start + 1,
                ..this
            }));
        }
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(is_gone(Owner { pid, start: 0 }));
    }

    /// The sweep removes a killed build's temporary file, and nothing a
    /// live build uses or another program named.
    #[test]
    fn the_sweep_removes_only_the_files_of_builds_that_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        let mut live = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let live_start = match process_state(live.id()) {
            Some(ProcessState::Running { start }) => start,
            _ => 0,
        };
        let this = this_process();
        let gone = Owner {
            pid: dead_pid,
            start: 12345,
        };
        let name = |label: &str, owner: Owner| temp_name(label.as_ref(), owner, 0);
        let file = |name: &std::ffi::OsStr| {
            let path = dir.path().join(name);
            fs::write(&path, b"left").unwrap();
            path
        };
        // (name, what it is, whether the sweep removes it)
        let cases: Vec<(std::ffi::OsString, &str, bool)> = vec![
            (name("dead.hf", gone), "a killed build's", true),
            (
                name(
                    "reused.hf",
                    Owner {
                        start: this.start + 1,
                        ..this
                    },
                ),
                "of a process gone whose PID this one took",
                cfg!(target_os = "linux"),
            ),
            (
                name(
                    "live.hf",
                    Owner {
                        pid: live.id(),
                        start: live_start,
                    },
                ),
                "of a live process",
                false,
            ),
            (name("ours.hf", this), "this process's", false),
            (
                name("locked.hf", gone),
                "locked (a build in another PID namespace)",
                false,
            ),
            (name("dir.hf", gone), "a directory", false),
            (name("link.hf", gone), "a link", false),
            (
                format!(".old.hf.{dead_pid}.0.tmp").into(),
                "not of this pattern",
                false,
            ),
            (name("other-user.hf", gone), "another user's", false),
        ];
        let mut held = None;
        for (name, what, _) in &cases {
            let path = dir.path().join(name);
            match *what {
                "a directory" => fs::create_dir(&path).unwrap(),
                "a link" => std::os::unix::fs::symlink(file("target".as_ref()), &path).unwrap(),
                _ => {
                    file(name);
                }
            }
            if what.starts_with("locked") {
                let f = fs::File::open(&path).unwrap();
                assert_eq!(try_lock(&f), Lock::Taken);
                held = Some(f);
            }
            if *what == "another user's" {
                // Only root can give a file away: elsewhere it stays this
                // user's, and the case is checked as a killed build's.
                if std::os::unix::fs::chown(&path, Some(65534), Some(65534)).is_err() {
                    fs::remove_file(&path).unwrap();
                }
            }
        }
        let removed = sweep(dir.path());
        for (name, what, goes) in &cases {
            let there = dir.path().join(name).symlink_metadata().is_ok();
            if *what == "another user's" && !there && !*goes {
                continue; // not made: see above
            }
            assert_eq!(!there, *goes, "{what}: {name:?}");
        }
        assert!(dir.path().join("target").exists(), "a link's target stays");
        assert_eq!(removed, cases.iter().filter(|c| c.2).count());
        drop(held);
        live.kill().unwrap();
        live.wait().unwrap();
        // Now gone and unlocked: a later sweep takes them.
        sweep(dir.path());
        for gone in ["live.hf", "locked.hf"] {
            assert!(
                !fs::read_dir(dir.path()).unwrap().any(|e| e
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!(".{gone}"))),
                "{gone}"
            );
        }
    }

    #[test]
    fn unnamed_files_leave_no_name() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("store.hf");
        for file in [
            unnamed_beside(&destination).unwrap(),
            named_then_unlinked(&destination).unwrap(),
        ] {
            use std::os::unix::fs::FileExt;
            file.write_all_at(b"spilled", 0).unwrap();
            let mut back = [0u8; 7];
            file.read_exact_at(&mut back, 0).unwrap();
            assert_eq!(&back, b"spilled");
            assert_eq!(file.metadata().unwrap().nlink(), 0);
            assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }
}
