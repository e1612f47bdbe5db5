//! Tests that need what a machine may lack (MinIO, root, a release build,
//! Linux's /proc): one rule for all of them, in every crate's tests (the
//! remote crate's test support includes this file too).
//!
//! Rust has no runtime skip, so a test whose environment is missing says
//! so, a `SKIP` line on stderr naming the test and what is missing, and
//! returns; unless the variable that requires the environment is `1`
//! (`.ci/run` sets one for each environment it installs;
//! docs/ARCHITECTURE.md, "Checks CI runs", lists them), when the test
//! fails, saying what is missing and which variable required it. Minitest (`skip_or_fail` in
//! test/test_helper.rb) and pytest (`skip_or_fail` in
//! python/tests/conftest.py) follow the same rule.

use std::io::Write;

/// Whether a test may go on: `true` when `here`. Otherwise prints
/// `SKIP <test>: <missing>` to stderr and returns `false`, or panics when
/// `required_by` (a `HASHFILE_REQUIRE_*` variable) is `1`.
#[must_use]
#[track_caller]
pub fn present(required_by: &str, here: bool, missing: &str) -> bool {
    if here {
        return true;
    }
    // libtest runs each test on a thread named after it.
    let thread = std::thread::current();
    let test = thread
        .name()
        .filter(|name| *name != "main")
        .unwrap_or("test");
    if std::env::var(required_by).as_deref() == Ok("1") {
        panic!("{test}: {missing}, and {required_by}=1 requires it");
    }
    // Straight to stderr: libtest captures eprintln! of a test that passes,
    // and a skip should be seen.
    let _ = writeln!(
        std::io::stderr(),
        "SKIP {test}: {missing} ({required_by}=1 makes this a failure)"
    );
    false
}

/// Returns from the calling test (see [`present`]) unless `here`:
/// `require_env!("HASHFILE_REQUIRE_ROOT", is_root(), "needs root to ...")`.
#[macro_export]
macro_rules! require_env {
    ($required_by:expr, $here:expr, $missing:expr) => {
        if !$crate::support::environment::present($required_by, $here, &$missing) {
            return;
        }
    };
}
