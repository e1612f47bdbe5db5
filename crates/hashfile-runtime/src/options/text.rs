//! Options given as text: where a caller has only strings to pass (Spark's
//! `.option("load_factor", "0.9")`, a configuration file), each value
//! becomes the `Arg` its option takes, by the option's kind in the table;
//! the table then judges it as it judges every language's options. A
//! value that does not read as its kind stays text, so the table's message
//! ("must be a number, not a string") names the option.

use super::table::{self, Kind};
use super::Arg;

/// The `Arg` the text `value` of option `name` stands for. An unknown
/// name keeps its text: the table refuses the name itself, with a guess.
pub fn from_text(name: &str, value: &str) -> Arg {
    let Some(spec) = table::find(name) else {
        return Arg::Text(value.to_owned());
    };
    let text = || Arg::Text(value.to_owned());
    let integer = || value.parse::<i128>().ok().map(Arg::Int);
    let number = || integer().or_else(|| value.parse::<f64>().ok().map(Arg::Float));
    match spec.kind {
        Kind::Count { .. } => integer().unwrap_or_else(text),
        Kind::Number | Kind::Seconds { .. } => number().unwrap_or_else(text),
        // An integer is bytes or an index; "64M", "auto", a header name stay text.
        Kind::Size | Kind::Column => integer().unwrap_or_else(text),
        Kind::Bool => match value {
            "true" => Arg::Bool(true),
            "false" => Arg::Bool(false),
            _ => text(),
        },
        Kind::TextList => Arg::List(
            value
                .split(',')
                .map(|item| Arg::Text(item.trim().to_owned()))
                .collect(),
        ),
        Kind::Name | Kind::Char | Kind::Text | Kind::Headers | Kind::Object => text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_its_text() {
        assert_eq!(from_text("shards", "8"), Arg::Int(8));
        assert_eq!(from_text("load_factor", "0.9"), Arg::Float(0.9));
        assert_eq!(from_text("keys_per_bucket", "5"), Arg::Int(5));
        assert_eq!(from_text("verify", "true"), Arg::Bool(true));
        assert_eq!(from_text("memory", "64M"), Arg::Text("64M".into()));
        assert_eq!(from_text("memory", "1024"), Arg::Int(1024));
        assert_eq!(
            from_text("compression", "zstd:19"),
            Arg::Text("zstd:19".into())
        );
        assert_eq!(
            from_text("allow_origins", "http://a, http://b"),
            Arg::List(vec![
                Arg::Text("http://a".into()),
                Arg::Text("http://b".into())
            ])
        );
    }

    #[test]
    fn what_does_not_read_as_its_kind_stays_text_for_the_table_to_refuse() {
        assert_eq!(from_text("load_factor", "high"), Arg::Text("high".into()));
        assert_eq!(from_text("verify", "yes"), Arg::Text("yes".into()));
        assert_eq!(from_text("no_such_option", "1"), Arg::Text("1".into()));
    }
}
