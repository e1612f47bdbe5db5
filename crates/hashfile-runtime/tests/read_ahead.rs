//! A pass in order over a store asks its source to read ahead
//! (`Source::will_read`); the runtime's `StoreSource` must pass that on to
//! the map, whose advice is random access, or a cold pass faults its pages
//! in one at a time. Checked on the page cache itself: the store's pages
//! are dropped from it, and `will_read` must bring them back without
//! anything touching them.

use hashfile::read::Source;
use hashfile::{BuildOptions, Builder};
use hashfile_runtime::{open_store, LocalOpen};
use std::os::fd::AsRawFd;

fn page_len() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Pages of `bytes` (page-aligned: a map's start) in the page cache.
fn resident_pages(bytes: &[u8]) -> usize {
    let mut vec = vec![0u8; bytes.len().div_ceil(page_len())];
    // SAFETY: `bytes` is a mapping of this process, starting on a page;
    // mincore writes one byte per page of it into `vec`, which has that
    // many.
    let rc = unsafe {
        libc::mincore(
            bytes.as_ptr() as *mut libc::c_void,
            bytes.len(),
            vec.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    vec.iter().filter(|&&b| b & 1 == 1).count()
}

#[test]
fn will_read_on_a_mapped_store_reads_its_pages_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    let value = vec![b'v'; 4_000];
    for i in 0..8_000 {
        builder.insert(format!("key-{i}").as_bytes(), &value);
    }
    builder.write_file(&path).unwrap();
    let store = open_store(
        path.to_str().unwrap(),
        &Default::default(),
        LocalOpen::Mapped,
    )
    .unwrap();
    let bytes = store.source().as_slice().expect("a mapped store");
    let pages = bytes.len().div_ceil(page_len());
    // Out of the page cache: the file is written and synced, so its pages
    // are clean and the kernel drops them when asked.
    let file = std::fs::File::open(&path).unwrap();
    // SAFETY: a plain system call on a descriptor `file` keeps open.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
    let before = resident_pages(bytes);
    assert!(
        before < pages / 4,
        "the store's pages did not leave the page cache ({before} of {pages} resident): the test cannot tell"
    );
    store.source().will_read(0, bytes.len() as u64);
    // The kernel reads them in the background: wait for most of them.
    let mut after = 0;
    for _ in 0..100 {
        after = resident_pages(bytes);
        if after * 10 >= pages * 9 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        after * 10 >= pages * 9,
        "will_read brought {after} of {pages} pages back into the page cache"
    );
}
