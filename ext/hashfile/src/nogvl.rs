//! Running Rust code without Ruby's GVL, so other Ruby threads keep going.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use magnus::{Error, Ruby};

struct Call<F, R> {
    func: Option<F>,
    result: Option<std::thread::Result<R>>,
}

unsafe extern "C" fn trampoline<F: FnOnce() -> R, R>(data: *mut c_void) -> *mut c_void {
    // SAFETY: `data` is the `&mut Call<F, R>` that `without_gvl` passed in and
    // keeps alive until rb_thread_call_without_gvl returns; nothing else
    // touches it meanwhile.
    let call = unsafe { &mut *(data as *mut Call<F, R>) };
    if let Some(func) = call.func.take() {
        // A panic must not unwind through Ruby's C frames: catch it here.
        call.result = Some(catch_unwind(AssertUnwindSafe(func)));
    }
    std::ptr::null_mut()
}

/// Runs `func` with the GVL released. `func` must not touch Ruby objects:
/// the caller copies everything it needs into owned Rust data first. A panic
/// in `func` comes back as a Ruby `Hashfile::Error`, never as an unwind.
pub fn without_gvl<F, R>(ruby: &Ruby, func: F) -> Result<R, Error>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let mut call = Call { func: Some(func), result: None };
    // SAFETY: the trampoline matches the callback signature Ruby expects and
    // only dereferences `call`, which outlives this blocking call. No
    // unblocking function is given, so Ruby waits for `func` to finish
    // before delivering interrupts to this thread.
    unsafe {
        rb_sys::rb_thread_call_without_gvl(Some(trampoline::<F, R>), &mut call as *mut Call<F, R> as *mut c_void, None, std::ptr::null_mut());
    }
    match call.result {
        Some(Ok(value)) => Ok(value),
        Some(Err(panic)) => {
            let message = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_else(|| "unknown panic".into());
            Err(Error::new(ruby.get_inner(&crate::error::ERROR), format!("internal error: {message}")))
        }
        None => Err(Error::new(ruby.get_inner(&crate::error::ERROR), "internal error: work did not run")),
    }
}
