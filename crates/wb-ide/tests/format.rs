//! The formatter over every manifest in `fixtures/` and, when it has been seeded (`fuzz/seed-corpus.sh`), the
//! fuzz corpus: it never changes what a document means, it is idempotent, its edits give its text, and it
//! formats every fixture that parses.

use std::path::{Path, PathBuf};

use wb_ide::{FormatError, FormatOptions, apply, format, format_edits};
use wb_syntax::{Node, Value};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        // Never through a link: the fixtures hold link loops.
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            files_under(&path, keep, out);
        } else if keep(&path) {
            out.push(path);
        }
    }
}

/// The two trees hold the same values (ranges and styles aside), compared here independently of the
/// formatter's own check.
fn same(a: &Node, b: &Node, ordered: bool) -> bool {
    match (&a.value, &b.value) {
        (Value::Number(x), Value::Number(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Sequence(x), Value::Sequence(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q, ordered))
        }
        (Value::Mapping(x), Value::Mapping(y)) => {
            x.entries.len() == y.entries.len()
                && x.entries.iter().enumerate().all(|(index, entry)| {
                    let other =
                        if ordered { y.entries.get(index).filter(|o| o.key == entry.key) } else { y.entry(&entry.key) };
                    other.is_some_and(|other| same(&entry.value, &other.value, ordered))
                })
        }
        (x, y) => x == y,
    }
}

struct Tally {
    formatted: usize,
    changed: usize,
    syntax: usize,
    refused: Vec<String>,
}

fn run(text: &str, name: &str, options: FormatOptions, tally: &mut Tally) {
    let before = wb_syntax::parse_str(text);
    match format(text, options) {
        Ok(out) => {
            tally.formatted += 1;
            tally.changed += usize::from(out != text);
            let after = wb_syntax::parse_str(&out);
            assert!(after.errors.is_empty(), "{name}: the formatted text has errors: {:?}", after.errors);
            match (&before.root, &after.root) {
                (Some(a), Some(b)) => assert!(same(a, b, !options.field_order), "{name}: the meaning changed:\n{out}"),
                (None, None) => {}
                _ => panic!("{name}: the document appeared or vanished"),
            }
            assert_eq!(format(&out, options).as_deref(), Ok(out.as_str()), "{name}: not idempotent");
            let edits = format_edits(text, options).unwrap_or_default();
            assert_eq!(apply(text, &edits), out, "{name}: the edits do not give the formatted text");
        }
        Err(FormatError::Syntax(_)) => {
            assert!(!before.errors.is_empty(), "{name}: refused as a syntax error without one");
            tally.syntax += 1;
        }
        Err(FormatError::WouldChangeMeaning(at)) => tally.refused.push(format!("{name} ({at})")),
    }
}

#[test]
fn every_fixture_manifest_is_formatted_without_a_change_of_meaning() {
    let mut files = Vec::new();
    let yaml = |path: &Path| path.extension().is_some_and(|ext| ext == "yml" || ext == "yaml");
    files_under(&repository().join("fixtures"), &yaml, &mut files);
    assert!(files.len() > 100, "the fixture corpus went missing: {} files", files.len());
    for options in [FormatOptions::default(), FormatOptions { field_order: true }] {
        let mut tally = Tally { formatted: 0, changed: 0, syntax: 0, refused: Vec::new() };
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else { continue };
            run(&text, &file.display().to_string(), options, &mut tally);
        }
        eprintln!(
            "fixtures {options:?}: {} formatted ({} changed), {} with syntax errors, {} left as written",
            tally.formatted,
            tally.changed,
            tally.syntax,
            tally.refused.len()
        );
        if std::env::var_os("WB_FORMAT_SHOW").is_some() {
            eprintln!("{:#?}", tally.refused);
        }
        // Every fixture that parses is formatted: the layout knows every construct a manifest uses.
        assert!(tally.refused.is_empty(), "left as written: {:#?}", tally.refused);
    }
}

#[test]
fn the_fuzz_corpus_never_changes_meaning() {
    let corpus = repository().join("fuzz/corpus");
    let mut files = Vec::new();
    for target in ["check", "ide", "yaml_fast", "format"] {
        files_under(&corpus.join(target), &|_| true, &mut files);
    }
    if files.is_empty() {
        eprintln!(
            "SKIPPED: the fuzz corpus is not seeded (fuzz/seed-corpus.sh); the fixtures test covers the formatter"
        );
        return;
    }
    for options in [FormatOptions::default(), FormatOptions { field_order: true }] {
        let mut tally = Tally { formatted: 0, changed: 0, syntax: 0, refused: Vec::new() };
        for file in &files {
            let Ok(bytes) = std::fs::read(file) else { continue };
            let text = String::from_utf8_lossy(&bytes);
            run(&text, &file.display().to_string(), options, &mut tally);
        }
        eprintln!(
            "fuzz corpus {options:?}: {} of {} formatted ({} changed), {} with syntax errors, {} left as written",
            tally.formatted,
            files.len(),
            tally.changed,
            tally.syntax,
            tally.refused.len()
        );
        if std::env::var_os("WB_FORMAT_SHOW").is_some() {
            eprintln!("{:#?}", tally.refused);
        }
    }
}
