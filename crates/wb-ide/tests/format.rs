//! The formatter over every manifest in `fixtures/` and, when it has been seeded (`fuzz/seed-corpus.sh`), the
//! fuzz corpus: it never changes what a document means, it is idempotent, its edits give its text, and it
//! formats every fixture that parses; and quoted strings a YAML 1.1 reader (PyYAML) needs quoted keep their
//! quotes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

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

/// `value` as a YAML double-quoted scalar with every character outside printable ASCII escaped (`\uXXXX`), so
/// the quoted form reads the same to every reader.
fn double_quoted(value: &str) -> String {
    let mut out = String::from("\"");
    for ch in value.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(ch),
            _ => out.push_str(&format!("\\u{:04x}", u32::from(ch))),
        }
    }
    out.push('"');
    out
}

/// What PyYAML (a YAML 1.1 reader, as in pre-commit) reads from each document: its `repr`, or the error.
/// Documents and answers cross as hex, one a line.
fn read_by_pyyaml(documents: &[String]) -> Vec<String> {
    use std::io::Write;
    let script = "import sys, yaml\n\
        for line in sys.stdin:\n\
        \x20   try:\n\
        \x20       out = repr(yaml.safe_load(bytes.fromhex(line.strip()).decode()))\n\
        \x20   except Exception as error:\n\
        \x20       out = 'error: ' + type(error).__name__\n\
        \x20   print(out.encode().hex())\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs (CONTRIBUTING.md: Python with PyYAML)");
    let input: String =
        documents.iter().map(|d| d.bytes().map(|b| format!("{b:02x}")).collect::<String>() + "\n").collect();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "python3 with PyYAML (`import yaml`) is needed: scripts/test.sh installs it");
    let unhex = |line: &str| {
        let bytes: Vec<u8> =
            (0..line.len()).step_by(2).map(|i| u8::from_str_radix(&line[i..i + 2], 16).unwrap()).collect();
        String::from_utf8(bytes).unwrap()
    };
    let read: Vec<String> = String::from_utf8_lossy(&output.stdout).lines().map(unhex).collect();
    assert_eq!(read.len(), documents.len());
    read
}

/// Quoted strings that a YAML 1.1 reader would read as something else unquoted (a boolean, a number, a date,
/// a merge or value key, null, or a value folded at U+2028) keep their quotes: PyYAML reads every formatted
/// document as it read the original. Plain strings still lose theirs.
#[test]
fn quotes_a_yaml_1_1_reader_needs_are_kept() {
    let needed = [
        "yes",
        "No",
        "ON",
        "off",
        "y",
        "N",
        "Y",
        "n",
        "true",
        "1:30",
        "190:20:30.15",
        "-1:30",
        "1_000",
        "0b101",
        "012",
        "0o17",
        "0x1F",
        "-0x1F",
        "+12",
        "1_0.5",
        "1.",
        "1e3",
        ".inf",
        "-.Inf",
        "+.INF",
        ".NaN",
        ".nan",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14 21:59:43.10 -5",
        "2001-12-15 2:59:43.10",
        "2002-12-14T21:59:43Z",
        "=",
        "<<",
        "~",
        "null",
        "NULL",
        "a\u{2028}b",
        "a\u{2029}b",
        "a\u{85}b",
        "a\u{feff}b",
        "a\u{fffe}b",
        "a\u{7f}b",
    ];
    let plain = ["plain", "openai/gpt-5.1", "a b", "=x", "<x", "2001 ad", "é"];
    let mut documents = Vec::new();
    let mut unquoted = Vec::new();
    for value in needed.iter().chain(&plain) {
        for quoted in [double_quoted(value), format!("'{}'", value.replace('\'', "''"))] {
            if quoted.starts_with('\'') && value.chars().any(|ch| !(' '..='~').contains(&ch)) {
                // Single quotes cannot escape: such values are written double-quoted only.
                continue;
            }
            let text = format!("key: {quoted}\nlist:\n  - {quoted}\n");
            let out = format(&text, FormatOptions::default()).unwrap_or_else(|error| panic!("{text:?}: {error}"));
            if !out.contains(&quoted) {
                unquoted.push(value.to_string());
            }
            documents.push(text);
            documents.push(out);
        }
    }
    let read = read_by_pyyaml(&documents);
    for pair in documents.chunks(2).zip(read.chunks(2)) {
        let ([before, after], [read_before, read_after]) = pair else { unreachable!() };
        assert!(!read_before.starts_with("error: "), "{before:?}: {read_before}");
        assert_eq!(read_before, read_after, "a YAML 1.1 reader reads {after:?} otherwise than {before:?}");
    }
    unquoted.dedup();
    assert_eq!(unquoted, plain, "only the plain strings lose their quotes");
}
