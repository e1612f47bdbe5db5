//! "Did you mean": the known name closest to one mistyped.

/// The name in `known` closest to `given`, if any is close enough that
/// the user likely meant it (a typo, a letter left out or swapped).
pub fn closest<'k>(given: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|name| (strsim::jaro_winkler(given, name), *name))
        .filter(|(score, name)| *score >= 0.85 || strsim::damerau_levenshtein(given, name) <= 2)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn guesses_typos_and_nothing_far() {
        let known = ["compression", "on_duplicate", "keys_per_bucket", "memo"];
        assert_eq!(closest("compresion", &known), Some("compression"));
        assert_eq!(closest("on_dupliate", &known), Some("on_duplicate"));
        assert_eq!(closest("memory", &known), Some("memo"));
        assert_eq!(closest("verify", &known), None);
    }
}
