//! The lines importer (one key per line).
#![no_main]

use hashfile::import::{ImportOptions, InputFormat};
use libfuzzer_sys::fuzz_target;

include!("import_common.rs");

fuzz_target!(|data: &[u8]| {
    import_all(data, &ImportOptions::new(InputFormat::Lines));
});
