// Shared by the import_* targets (included with `include!`): reads `data`
// with `options`, checking that what an importer emits is a record the
// format can hold.
fn import_all(data: &[u8], options: &hashfile::import::ImportOptions) {
    let _ = hashfile::import::import(data, "fuzz", options, &mut |record, _position| {
        if record.kind == hashfile::ValueKind::Typed {
            assert!(hashfile::value::Value::decode(record.value).is_ok(), "an importer emitted a typed value that does not decode");
        }
        Ok(())
    });
}
