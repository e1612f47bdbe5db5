//! The thread pools builds run on.
//!
//! rayon's global pool is unusable in a forked child: `fork` copies only the
//! thread that called it, so the pool's worker threads do not exist there
//! and the first parallel step waits for them forever (every Puma or
//! Unicorn worker, Resque job or `Process.fork` that builds a store after
//! the parent did). Builds therefore never use the global pool: each runs
//! `install`ed in this process's own pool, made on first use and made again
//! in a child, which sees a different process id.

use std::sync::{Arc, Mutex};

use magnus::{Error, Ruby};

/// This process's pool and the process it was made in.
static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);

/// Most threads a build may ask for: a few per core is all a build can use,
/// and far more stalls the machine (each is an OS thread with its own stack).
pub fn max_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_mul(4)
        .max(16)
}

fn build(ruby: &Ruby, threads: Option<usize>) -> Result<rayon::ThreadPool, Error> {
    let mut builder = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("hashfile-{i}"));
    if let Some(n) = threads {
        builder = builder.num_threads(n);
    }
    builder.build().map_err(|e| {
        Error::new(
            ruby.get_inner(&crate::error::ERROR),
            format!("cannot start the build's threads: {e}"),
        )
    })
}

/// The pool a build runs on: with `threads`, a pool of that many for this
/// build alone (from 1 to `max_threads()`); without, this process's pool of
/// one thread per core.
pub fn for_build(
    ruby: &Ruby,
    threads: Option<magnus::Integer>,
) -> Result<Arc<rayon::ThreadPool>, Error> {
    if let Some(given) = threads {
        // Any Integer, a Bignum too: out of range is the same ArgumentError.
        let n = given
            .to_u64()
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=max_threads()).contains(n));
        let n = n.ok_or_else(|| {
            crate::error::arg_error(
                ruby,
                format!(
                    "threads must be from 1 to {} (4 per core, at least 16), got {given}",
                    max_threads()
                ),
            )
        })?;
        return Ok(Arc::new(build(ruby, Some(n))?));
    }
    let pid = std::process::id();
    // Taken only by Ruby threads holding the GVL, so never held across a
    // fork by another thread.
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
    let pool = Arc::new(build(ruby, None)?);
    *slot = Some((pid, Arc::clone(&pool)));
    Ok(pool)
}
