//! The CSV/TSV importer: the first byte picks the options (separator,
//! quoting, comments, header, columns by index or name, or the whole row
//! as the value), the rest is the input.
#![no_main]

use hashfile::import::{Column, ImportOptions, InputFormat};
use libfuzzer_sys::fuzz_target;

include!("import_common.rs");

fuzz_target!(|data: &[u8]| {
    let Some((&choice, input)) = data.split_first() else {
        return;
    };
    let mut options = ImportOptions::new(if choice & 1 == 0 {
        InputFormat::Csv
    } else {
        InputFormat::Tsv
    });
    options.quote = choice & 2 == 0;
    options.header = choice & 4 == 0;
    options.comment = (choice & 8 != 0).then_some(b'#');
    options.col_sep = (choice & 16 != 0).then_some(b';');
    if choice & 32 != 0 {
        options.key_column = Column::Name("k".into());
        options.value_column = match choice >> 6 {
            3 => Column::Row,
            i => Column::Index(usize::from(i)),
        };
    }
    import_all(input, &options);
});
