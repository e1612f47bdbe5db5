//! Running Rust code without Ruby's GVL, so other Ruby threads keep going.
//!
//! Uses `rb_nogvl` with `RB_NOGVL_INTR_FAIL | RB_NOGVL_UBF_ASYNC_SAFE`, the
//! combination under which it never raises, so no Ruby exception can
//! `longjmp` across our Rust frames and skip their destructors:
//! - without `INTR_FAIL` it checks for interrupts after the call;
//! - without `UBF_ASYNC_SAFE`, on the main thread when it is the only Ruby
//!   thread, it starts a helper thread to resend the unblock call and joins
//!   it after the call, and that join raises a pending interrupt. It did:
//!   a Ctrl-C during `build_from` left its worker and temporary file behind
//!   (hardening #16). Our unblock function is one atomic store, which is
//!   safe in a signal handler, where this flag lets Ruby call it.
//!
//! Pending interrupts are delivered afterwards through
//! `Ruby::thread_check_ints`, which returns them as `Err`.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use magnus::{Error, Ruby};

struct Call<F, R> {
    func: Option<F>,
    result: Option<std::thread::Result<R>>,
}

unsafe extern "C" fn trampoline<F: FnOnce() -> R, R>(data: *mut c_void) -> *mut c_void {
    // SAFETY: `data` is the `&mut Call<F, R>` that `run` passed in and keeps
    // alive until rb_thread_call_without_gvl2 returns; nothing else touches
    // it meanwhile.
    let call = unsafe { &mut *(data as *mut Call<F, R>) };
    if let Some(func) = call.func.take() {
        // A panic must not unwind through Ruby's C frames: catch it here.
        call.result = Some(catch_unwind(AssertUnwindSafe(func)));
    }
    std::ptr::null_mut()
}

unsafe extern "C" fn set_flag(data: *mut c_void) {
    // SAFETY: `data` is the `&AtomicBool` that `run` passed as the unblocking
    // function's argument; it outlives the blocking call. Ruby may call this
    // from another thread, which an atomic store allows.
    let flag = unsafe { &*(data as *const AtomicBool) };
    flag.store(true, Ordering::SeqCst);
}

/// Calls the closure in `call` with the GVL released, unless an interrupt is
/// pending, in which case it is left in `call.func`. If `cancel` is given,
/// an interrupt (Ctrl-C, Thread#raise) sets it, and the closure is expected
/// to notice and return soon.
fn run<F: FnOnce() -> R + Send, R: Send>(call: &mut Call<F, R>, cancel: Option<&AtomicBool>) {
    let (ubf, ubf_data): (Option<unsafe extern "C" fn(*mut c_void)>, *mut c_void) = match cancel {
        Some(flag) => (Some(set_flag), flag as *const AtomicBool as *mut c_void),
        None => (None, std::ptr::null_mut()),
    };
    let flags = (rb_sys::RB_NOGVL_INTR_FAIL | rb_sys::RB_NOGVL_UBF_ASYNC_SAFE) as i32;
    // SAFETY: the trampoline matches the callback type Ruby expects and only
    // dereferences `call`, which outlives this blocking call; likewise the
    // unblocking function and its flag, a store to an atomic, which is
    // async-signal-safe as UBF_ASYNC_SAFE promises.
    unsafe {
        rb_sys::rb_nogvl(
            Some(trampoline::<F, R>),
            call as *mut Call<F, R> as *mut c_void,
            ubf,
            ubf_data,
            flags,
        );
    }
}

/// Runs `func` with the GVL released and returns its result. `func` must not
/// touch Ruby objects: the caller copies what it needs into owned Rust data
/// first. A panic in `func` comes back as `Hashfile::Error`. An interrupt
/// pending before the call is raised instead of running `func`; one that
/// arrives during it waits for `func` to finish (`cancel`, when given, is set
/// so that `func` can stop early).
pub(crate) fn without_gvl<F, R>(
    ruby: &Ruby,
    func: F,
    cancel: Option<&AtomicBool>,
) -> Result<R, Error>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let mut call = Call {
        func: Some(func),
        result: None,
    };
    loop {
        run(&mut call, cancel);
        match call.result.take() {
            Some(Ok(value)) => return Ok(value),
            Some(Err(panic)) => return Err(crate::error::internal_error(ruby, &*panic)),
            // Not run: an interrupt is pending. Deliver it (as Err), or try
            // again if it raised nothing.
            None => ruby.thread_check_ints()?,
        }
    }
}
