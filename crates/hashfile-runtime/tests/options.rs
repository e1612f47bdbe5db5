//! A lookup's own decode options (`decode_for_call`), judged as `open`
//! judges them.

use hashfile_runtime::options::{decode_for_call, Arg, DecodeOptions};

#[test]
fn a_call_overrides_what_open_was_given() {
    let open = DecodeOptions {
        freeze: true,
        ..DecodeOptions::default()
    };
    let t = Arg::Bool(true);
    let f = Arg::Bool(false);
    let got = decode_for_call(
        "get",
        open,
        &[("symbolize_names", &t), ("freeze", &f), ("raw", &Arg::Nil)],
    )
    .unwrap();
    assert_eq!(
        got,
        DecodeOptions {
            symbolize_names: true,
            ..DecodeOptions::default()
        }
    );
    // Nothing given: open's.
    assert_eq!(decode_for_call("get", open, &[]).unwrap(), open);
}

#[test]
fn a_call_is_judged_as_open_is() {
    let open = DecodeOptions::default();
    let e = decode_for_call("dig", open, &[("symbolise_names", &Arg::Bool(true))]).unwrap_err();
    assert_eq!(e.to_string(), "unknown option symbolise_names for dig (did you mean symbolize_names?); it takes: symbolize_names, freeze, raw");
    // An open option that is not a decode option is not one of a lookup.
    let e = decode_for_call("get", open, &[("memo", &Arg::Int(1))]).unwrap_err();
    assert!(
        e.to_string().starts_with("unknown option memo for get"),
        "{e}"
    );
    let e = decode_for_call("get", open, &[("raw", &Arg::Int(1))]).unwrap_err();
    assert_eq!(e.to_string(), "raw must be true or false, not an integer");
    let t = Arg::Bool(true);
    let e = decode_for_call("get", open, &[("raw", &t), ("symbolize_names", &t)]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("invalid option symbolize_names: does not apply with raw: true"),
        "{e}"
    );
    // The call's own raw wins over open's symbolize_names (the I18n
    // backend's `get(name, raw: true)`); symbolize_names asked of a call
    // that reads raw does not apply.
    let symbolized = DecodeOptions {
        symbolize_names: true,
        ..open
    };
    assert!(
        decode_for_call("get", symbolized, &[("raw", &t)])
            .unwrap()
            .raw
    );
    let raw = DecodeOptions { raw: true, ..open };
    assert!(decode_for_call("get", raw, &[("symbolize_names", &t)]).is_err());
    let f = Arg::Bool(false);
    let got = decode_for_call("get", raw, &[("symbolize_names", &t), ("raw", &f)]).unwrap();
    assert!(!got.raw && got.symbolize_names);
}

#[test]
fn a_call_names_an_option_once() {
    let t = Arg::Bool(true);
    let e =
        decode_for_call("dig", DecodeOptions::default(), &[("raw", &t), ("raw", &t)]).unwrap_err();
    assert!(
        e.to_string().starts_with("the option raw is given twice"),
        "{e}"
    );
}
