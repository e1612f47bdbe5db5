//! Options, once for every binding: the table of what `open`, `build`
//! and `build_from` take ([`table`]), and the checks that make what a
//! binding was given into the library's option types ([`open_request`],
//! [`build_request`]). A binding converts its language's keyword
//! arguments into [`Arg`]s and maps the errors to its classes: an
//! unknown option is `Error::UnknownOption`, a value of the wrong type
//! `Error::OptionType`, one out of range or contradicting another
//! `Error::InvalidOption`. docs/ARCHITECTURE.md, "Options".

mod arg;
mod parse;
mod suggest;
pub mod table;
mod text;

pub use arg::Arg;
pub use parse::{
    build_request, decode_for_call, diff_request, generations_request, max_threads, open_request,
    patch_request, publish_task_options, remote_options, shard_count, shard_task_options,
    BuildRequest, DecodeOptions, DiffRequest, GenerationsRequest, Given, OpenRequest,
    DECODE_OPTIONS,
};
pub use suggest::closest;
pub use table::{Call, Group, Kind, Language, Spec, OPTIONS};
pub use text::from_text;
