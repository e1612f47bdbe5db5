//! The crate's modules depend on one another one way only, as
//! docs/ARCHITECTURE.md draws them. This test reads the sources, collects
//! every `crate::<module>` a top-level module names (outside comments), and
//! fails on an edge the table below does not allow, and on any cycle.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module and the modules it may use. Lower layers first.
const ALLOWED: &[(&str, &[&str])] = &[
    ("error", &[]),
    ("parallel", &[]),
    ("cancel", &["error"]),
    ("dataset", &[]),
    ("bits", &["parallel"]),
    ("compress", &["error"]),
    ("format", &["error", "bits", "compress"]),
    ("value", &["error", "format", "compress"]),
    ("chd", &["error", "format", "cancel", "parallel"]),
    (
        "read",
        &["error", "bits", "format", "chd", "value", "compress"],
    ),
    (
        "build",
        &[
            "error", "bits", "format", "chd", "value", "read", "cancel", "parallel", "compress",
        ],
    ),
    (
        "import",
        &["error", "format", "value", "build", "cancel", "parallel"],
    ),
    (
        "pipeline",
        &["error", "format", "build", "import", "cancel"],
    ),
];

/// Source text without comments (`//` to the end of a line), which may
/// mention modules without depending on them.
fn code(text: &str) -> String {
    text.lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `text` uses: `crate::name`, and the names in
/// `use crate::{a, b::c}` groups.
fn uses(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            found.insert(
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            );
        }
    }
    found
}

/// Every `.rs` file of a module: `src/name.rs`, or all of `src/name/`.
fn files(src: &Path, module: &str) -> Vec<std::path::PathBuf> {
    let single = src.join(format!("{module}.rs"));
    if single.exists() {
        return vec![single];
    }
    let mut out = Vec::new();
    let mut dirs = vec![src.join(module)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn modules_depend_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(m, deps)| (*m, deps.iter().copied().collect()))
        .collect();

    // Every top-level module is in the table.
    let declared: BTreeSet<String> = code(&std::fs::read_to_string(src.join("lib.rs")).unwrap())
        .lines()
        .filter_map(|line| {
            line.trim()
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .map(|m| m.trim_end_matches(';').to_string())
        })
        .collect();
    let listed: BTreeSet<String> = allowed.keys().map(|m| m.to_string()).collect();
    assert_eq!(
        declared, listed,
        "lib.rs declares these modules; ALLOWED must list exactly them"
    );

    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (module, may) in &allowed {
        for file in files(&src, module) {
            for used in uses(&code(&std::fs::read_to_string(&file).unwrap())) {
                if used == *module {
                    continue;
                }
                if !may.contains(used.as_str()) {
                    wrong.push(format!(
                        "{} uses crate::{used}, which {module} may not",
                        file.strip_prefix(&src).unwrap().display()
                    ));
                }
                edges.entry(module).or_default().insert(used);
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "dependencies against the layers:\n{}",
        wrong.join("\n")
    );

    // No cycle, in what the sources use and in the table itself.
    fn visit<'a>(
        module: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if let Some(at) = path.iter().position(|m| *m == module) {
            panic!("module cycle: {} -> {module}", path[at..].join(" -> "));
        }
        if !done.insert(module) {
            return;
        }
        path.push(module);
        for next in graph.get(module).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
    }
    let used: BTreeMap<&str, BTreeSet<&str>> = edges
        .iter()
        .map(|(m, deps)| (*m, deps.iter().map(String::as_str).collect()))
        .collect();
    for graph in [&allowed, &used] {
        let mut done = BTreeSet::new();
        for module in graph.keys() {
            visit(module, graph, &mut Vec::new(), &mut done);
        }
    }
}

/// The scanner finds the forms a dependency takes, and not comments.
#[test]
fn the_scanner_sees_every_form_of_use() {
    let text = code("use crate::error::{Error, Result};\nuse crate::{bits, format::Record};\nlet x = crate::chd::hash_key(k, 0); // crate::build is only mentioned\n/// see crate::read\n");
    assert_eq!(
        uses(&text),
        ["bits", "chd", "error", "format"]
            .into_iter()
            .map(String::from)
            .collect()
    );
}
