//! The JSON importer (an object, or an array of pairs or objects), with the
//! default fields, with a dotted key path and the whole object as the
//! value, and below a `records_at` path.
#![no_main]

use hashfile::import::{ImportOptions, InputFormat};
use libfuzzer_sys::fuzz_target;

include!("import_common.rs");

fuzz_target!(|data: &[u8]| {
    let mut options = ImportOptions::new(InputFormat::JsonObject);
    import_all(data, &options);
    options.key_field = "id.k".into();
    options.value_field = "*".into();
    import_all(data, &options);
    options.records_at = Some("r".into());
    options.key_field = "k".into();
    options.value_field = "v".into();
    import_all(data, &options);
});
