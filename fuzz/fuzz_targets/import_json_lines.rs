//! The JSON Lines importer, with default field names, and with a dotted
//! key path and the whole object as the value.
#![no_main]

use hashfile::import::{ImportOptions, InputFormat};
use libfuzzer_sys::fuzz_target;

include!("import_common.rs");

fuzz_target!(|data: &[u8]| {
    let mut options = ImportOptions::new(InputFormat::JsonLines);
    import_all(data, &options);
    options.key_field = "meta.id".into();
    options.value_field = "*".into();
    import_all(data, &options);
});
