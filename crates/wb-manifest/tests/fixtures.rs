//! The fixture corpus: every directory under `fixtures/cases/` is a small repository whose checker output is
//! compared, line by line, with the `expected.txt` beside it.
//!
//! A case is checked at its own directory, or at the relative path written in its `target` file (for packages
//! outside a `.workbenches` directory and for paths that do not exist). Each diagnostic renders as
//! `<path>:<line>:<col>-<line>:<col> <severity>[<code>] <covered text as JSON>: <message>`, with 1-based lines
//! and columns counted in characters, paths relative to the case and the case's absolute path in messages
//! written as `$CASE`. Related locations follow, indented, then the title of each fix (`    fix: <title>`).
//!
//! Regenerate the expectations with `UPDATE_EXPECT=1 cargo test -p wb-manifest --test fixtures`, then review
//! every changed line against the reference engine's behaviour. Updating rewrites every `expected.txt` with the
//! checker's current output, including lines written by hand where the checker is known to be wrong (see `git
//! diff` before committing).
//!
//! Cases named `valid-*` must have no error. Every [`Code`] must appear in some `expected.txt` (except
//! [`UNCOVERED_CODES`]), and every reference message template in `fixtures/reference-messages.txt` above its
//! `# run-time only` heading must match the message of some expected line.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use wb_manifest::{Code, ModelCatalog, OsFileSystem, PackageReport, Severity};
use wb_syntax::{LineIndex, PositionEncoding, TextRange};

/// Codes no fixture produces, each with the reason.
const UNCOVERED_CODES: &[(Code, &str)] = &[
    (Code::FileTooLarge, "needs a manifest over 4 MiB, too large to keep in the repository"),
    (Code::IoError, "needs an unreadable file (permissions), which git cannot store and root ignores"),
];

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn case_dirs() -> Vec<PathBuf> {
    let cases = fixtures_dir().join("cases");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&cases)
        .expect("fixtures/cases")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn relative(path: &Path, case: &Path) -> String {
    match path.strip_prefix(case) {
        Ok(rest) if rest.as_os_str().is_empty() => ".".to_owned(),
        Ok(rest) => rest.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// `<path>:<line>:<col>-<line>:<col>` and the covered text (as JSON) of a range in a file of the report.
fn location(report: &PackageReport, path: &Path, range: TextRange, case: &Path) -> (String, String) {
    let text = report.sources.get(path).map_or("", |text| &**text);
    let (start, end) = LineIndex::new(text).range(range, PositionEncoding::Utf32);
    let covered = text.get(range.as_range()).unwrap_or_default();
    let place =
        format!("{}:{}:{}-{}:{}", relative(path, case), start.line + 1, start.col + 1, end.line + 1, end.col + 1);
    (place, serde_json::to_string(covered).expect("a string serialises"))
}

/// Renders every diagnostic of every report (and its related locations, indented) in the documented format.
fn render(reports: &[PackageReport], case: &Path) -> String {
    let case_text = case.to_string_lossy();
    let mut out = String::new();
    for report in reports {
        for diagnostic in &report.diagnostics {
            let (place, covered) = location(report, &diagnostic.path, diagnostic.range, case);
            let message = diagnostic.message.replace(&*case_text, "$CASE");
            let severity = diagnostic.severity.as_str();
            let _ = writeln!(out, "{place} {severity}[{}] {covered}: {message}", diagnostic.code);
            for related in &diagnostic.related {
                let (place, covered) = location(report, &related.path, related.range, case);
                let _ = writeln!(out, "    {place} {covered}: {}", related.message.replace(&*case_text, "$CASE"));
            }
            for fix in &diagnostic.fixes {
                let _ = writeln!(out, "    fix: {}", fix.title.replace(&*case_text, "$CASE"));
            }
        }
    }
    out
}

/// Checks one case at its directory, or at the relative path its `target` file names.
fn check_case(case: &Path) -> (Vec<PackageReport>, String) {
    let target = match std::fs::read_to_string(case.join("target")) {
        Ok(relative) => case.join(relative.trim()),
        Err(_) => case.to_path_buf(),
    };
    let reports = wb_manifest::check_path(&OsFileSystem, &target, ModelCatalog::embedded());
    let text = render(&reports, case);
    (reports, text)
}

fn diff(expected: &str, actual: &str) -> String {
    let expected: Vec<&str> = expected.lines().collect();
    let actual: Vec<&str> = actual.lines().collect();
    // Longest common subsequence, then a unified listing of removed (-) and added (+) lines.
    let (n, m) = (expected.len(), actual.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if expected[i] == actual[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && expected[i] == actual[j] {
            ops.push((' ', expected[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            ops.push(('+', actual[j]));
            j += 1;
        } else {
            ops.push(('-', expected[i]));
            i += 1;
        }
    }
    // Only changed lines and two lines of context around them.
    let near_change = |at: usize| ops[at.saturating_sub(2)..(at + 3).min(ops.len())].iter().any(|(op, _)| *op != ' ');
    let mut out = String::new();
    let mut skipped = false;
    for (at, (op, line)) in ops.iter().enumerate() {
        if near_change(at) {
            if skipped {
                out.push_str("  ...\n");
            }
            let _ = writeln!(out, "{op} {line}");
            skipped = false;
        } else {
            skipped = true;
        }
    }
    out
}

/// The code and the message of a rendered diagnostic line (not of an indented related line).
fn parse_line(line: &str) -> Option<(&str, &str)> {
    if line.starts_with(' ') {
        return None;
    }
    let open = line.find('[')?;
    let close = open + line[open..].find("] ")?;
    let code = &line[open + 1..close];
    let rest = &line[close + 2..];
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<String>();
    stream.next()?.ok()?;
    let message = rest[stream.byte_offset()..].strip_prefix(": ")?;
    Some((code, message))
}

/// A reference message template (`<...>` placeholders) as a regex matching a whole message.
fn template_regex(template: &str) -> regex::Regex {
    let mut pattern = String::from("^");
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else { break };
        pattern.push_str(&regex::escape(&rest[..open]));
        pattern.push_str(".+");
        rest = &rest[open + close + 1..];
    }
    pattern.push_str(&regex::escape(rest));
    pattern.push('$');
    regex::Regex::new(&pattern).expect("template regex")
}

#[test]
fn fixture_cases_match_their_expectations() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    let mut messages = Vec::new();
    let mut codes_seen = BTreeSet::new();
    let cases = case_dirs();
    assert!(!cases.is_empty(), "no fixture cases found");
    for case in &cases {
        let case = case.canonicalize().expect("canonical case path");
        let name = case.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let (reports, actual) = check_case(&case);
        if name.starts_with("valid-") {
            for report in &reports {
                for diagnostic in report.diagnostics.iter().filter(|d| d.severity == Severity::Error) {
                    let message = diagnostic.message.replace(&*case.to_string_lossy(), "$CASE");
                    failures.push(format!("{name}: a valid case has an error: {message}"));
                }
            }
        }
        let expected_path = case.join("expected.txt");
        if update {
            std::fs::write(&expected_path, &actual).expect("write expected.txt");
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{name}: output differs from expected.txt (- expected, + actual):\n{}",
                diff(&expected, &actual)
            ));
        }
        for line in expected.lines() {
            if let Some((code, message)) = parse_line(line) {
                codes_seen.insert(code.to_owned());
                messages.push(message.to_owned());
            }
        }
    }

    for code in Code::ALL {
        let allowed = UNCOVERED_CODES.iter().any(|(uncovered, _)| uncovered == code);
        let seen = codes_seen.contains(code.as_str());
        if !seen && !allowed {
            failures.push(format!("code {code} appears in no expected.txt"));
        }
        if seen && allowed {
            failures.push(format!("code {code} is covered now; remove it from UNCOVERED_CODES"));
        }
    }

    let templates =
        std::fs::read_to_string(fixtures_dir().join("reference-messages.txt")).expect("reference-messages.txt");
    let mut section_is_static = true;
    for template in templates.lines() {
        let template = template.trim_end();
        if template.is_empty() {
            continue;
        }
        if let Some(comment) = template.strip_prefix('#') {
            // A `# run-time only` heading starts the section of texts the static checker cannot produce.
            if comment.trim_start().to_ascii_lowercase().starts_with("run-time only") {
                section_is_static = false;
            }
            continue;
        }
        if !section_is_static {
            continue;
        }
        let regex = template_regex(template);
        if !messages.iter().any(|message| regex.is_match(message)) {
            failures.push(format!("reference message matches no expected line: {template}"));
        }
    }

    assert!(failures.is_empty(), "{} fixture problem(s):\n\n{}", failures.len(), failures.join("\n\n"));
}
