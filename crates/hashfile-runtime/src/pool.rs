//! The thread pools builds run on, for every binding.
//!
//! rayon's global pool is unusable in a forked child: `fork` copies only the
//! thread that called it, so the pool's worker threads do not exist there
//! and the first parallel step waits for them forever (every Puma or
//! Unicorn worker, Resque job, `multiprocessing` child or `os.fork` that
//! builds a store after the parent did). A binding's builds therefore never
//! use the global pool: each runs `install`ed in this process's own pool,
//! made on first use and made again in a child, which sees a different
//! process id.

use std::sync::{Arc, Mutex};

use crate::io_error;

/// This process's pool and the process it was made in.
static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);

fn new_pool(threads: Option<usize>) -> hashfile::Result<rayon::ThreadPool> {
    let mut builder = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("hashfile-{i}"));
    if let Some(n) = threads {
        builder = builder.num_threads(n);
    }
    let pool = builder.build().map_err(|e| {
        io_error(std::io::Error::other(format!(
            "cannot start the build's threads: {e}"
        )))
    })?;
    // Every thread started and run once before the pool is handed out:
    // the lazy globals a worker's first job sets up (crossbeam's epoch
    // collector) are set up now, while the caller holds its interpreter
    // lock, not later while another thread may fork, which would leave a
    // child's own pool waiting forever on a half-made global.
    pool.broadcast(|_| ());
    Ok(pool)
}

/// The pool a build runs on: with `threads` (checked by the options
/// table), a pool of that many for this build alone; without, this
/// process's pool of one thread per core, made again after a fork.
pub fn for_build(threads: Option<usize>) -> hashfile::Result<Arc<rayon::ThreadPool>> {
    if threads.is_some() {
        return Ok(Arc::new(new_pool(threads)?));
    }
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((owner, pool)) = slot.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(pool));
        }
    }
    // A pool from the parent: its threads are not in this process, and
    // dropping it would signal them through locks they may have held at the
    // fork. It is left alone.
    if let Some(stale) = slot.take() {
        std::mem::forget(stale);
    }
    let pool = Arc::new(new_pool(None)?);
    *slot = Some((pid, Arc::clone(&pool)));
    Ok(pool)
}
