//! The outbox declaration (`outcome.json` at the top of a run's outbox): its shape (the standard's outbox
//! schema) plus the host rules the schema leaves out: safe unique paths and declared files that exist.
//! Used by the language server for an open `outcome.json`, and by outcome collection.

use std::collections::HashMap;
use std::path::Path;

use wb_syntax::{Mapping, Node, TextRange, Value};

use crate::diagnostic::{Code, Diagnostic};
use crate::fs::{FileKind, FileSystem};
use crate::json_fields::{StringRule, string_field};

/// The largest declaration read.
pub const MAX_DECLARATION_BYTES: usize = 1024 * 1024;

struct Checker<'a> {
    path: &'a Path,
    diagnostics: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn report(&mut self, code: Code, range: TextRange, message: String) {
        self.diagnostics.push(Diagnostic::new(code, self.path, range, message));
    }

    fn string(
        &mut self,
        mapping: &Mapping,
        key: &str,
        label: &str,
        max: usize,
        required: bool,
        anchor: TextRange,
    ) -> Option<String> {
        let rule = StringRule { label, required, max_chars: Some(max), blank_is_empty: false };
        string_field(&mut self.diagnostics, self.path, mapping, key, &rule, anchor)
    }

    fn unknown(&mut self, mapping: &Mapping, allowed: &[&str], label: &str) {
        for entry in &mapping.entries {
            if !allowed.contains(&entry.key.as_str()) {
                self.report(Code::UnknownField, entry.key_range, format!("Unknown {label} field: {}", entry.key));
            }
        }
    }
}

/// Why an outbox-relative path is unsafe, if it is.
pub fn unsafe_path_reason(path: &str) -> Option<&'static str> {
    if path.is_empty() || path.len() > 4096 {
        return Some("must be 1 to 4096 bytes");
    }
    if path.starts_with('/') || path.contains('\\') || (path.len() >= 2 && path.as_bytes()[1] == b':') {
        return Some("must be a relative path without backslashes or drive letters");
    }
    if path.chars().any(char::is_control) {
        return Some("must not contain control characters");
    }
    if path.ends_with('/') || path.contains("//") || path.split('/').any(|segment| segment == "." || segment == "..") {
        return Some("must stay inside the outbox without `.`, `..` or empty segments");
    }
    None
}

/// Checks a declaration's text. `outbox` is the directory it sits in (declared files must exist there).
pub fn check_declaration(fs: &dyn FileSystem, path: &Path, text: &str) -> Vec<Diagnostic> {
    let mut checker = Checker { path, diagnostics: Vec::new() };
    if text.len() > MAX_DECLARATION_BYTES {
        checker.report(Code::FileTooLarge, TextRange::empty(0), "Declared outcome exceeds 1 MiB".to_owned());
        return checker.diagnostics;
    }
    let parsed = wb_syntax::parse_str(text);
    if let Some(error) = parsed.errors.first() {
        checker.report(Code::YamlSyntax, error.range, format!("Declared outcome is not valid JSON: {}", error.message));
        return checker.diagnostics;
    }
    let Some(root) = parsed.root.as_ref() else {
        checker.report(Code::ManifestNotObject, TextRange::empty(0), "Declared outcome must be an object".to_owned());
        return checker.diagnostics;
    };
    let Value::Mapping(top) = &root.value else {
        checker.report(Code::ManifestNotObject, root.range, "Declared outcome must be an object".to_owned());
        return checker.diagnostics;
    };
    let anchor = top.entries.first().map_or(root.range, |e| e.key_range);
    checker.unknown(top, &["version", "summary", "artifacts", "links"], "declared outcome");
    match top.entry("version") {
        Some(entry) if matches!(entry.value.value, Value::Number(n) if n == 1.0) => {}
        Some(entry) => {
            checker.report(Code::InvalidValue, entry.value.range, "Declared outcome version must be 1".to_owned())
        }
        None => checker.report(Code::MissingField, anchor, "Declared outcome version must be 1".to_owned()),
    }
    checker.string(top, "summary", "Declared outcome summary", 16384, false, anchor);
    let outbox = path.parent().unwrap_or(Path::new("/"));
    if let Some(entry) = top.entry("artifacts") {
        let mut seen: HashMap<String, TextRange> = HashMap::new();
        match &entry.value.value {
            Value::Sequence(items) => {
                for (index, item) in items.iter().enumerate() {
                    artifact(&mut checker, fs, outbox, item, index, &mut seen);
                }
            }
            _ => checker.report(
                Code::InvalidType,
                entry.value.range,
                "Declared outcome artifacts must be an array".to_owned(),
            ),
        }
    }
    if let Some(entry) = top.entry("links") {
        match &entry.value.value {
            Value::Sequence(items) => {
                for (index, item) in items.iter().enumerate() {
                    link(&mut checker, item, index);
                }
            }
            _ => checker.report(
                Code::InvalidType,
                entry.value.range,
                "Declared outcome links must be an array".to_owned(),
            ),
        }
    }
    crate::sort_diagnostics(&mut checker.diagnostics);
    checker.diagnostics
}

fn artifact(
    checker: &mut Checker<'_>,
    fs: &dyn FileSystem,
    outbox: &Path,
    item: &Node,
    index: usize,
    seen: &mut HashMap<String, TextRange>,
) {
    let label = format!("Declared artifact {index}");
    let Value::Mapping(map) = &item.value else {
        checker.report(Code::InvalidType, item.range, format!("{label} must be an object"));
        return;
    };
    checker.unknown(map, &["path", "name", "description", "media_type"], "declared artifact");
    let anchor = map.entries.first().map_or(item.range, |e| e.key_range);
    checker.string(map, "name", "Declared artifact name", 512, false, anchor);
    checker.string(map, "description", "Declared artifact description", 4096, false, anchor);
    checker.string(map, "media_type", "Declared artifact media_type", 255, false, anchor);
    let Some(path) = checker.string(map, "path", "Declared artifact path", 4096, true, anchor) else { return };
    let range = map.get("path").map_or(anchor, |n| n.range);
    if let Some(reason) = unsafe_path_reason(&path) {
        checker.report(Code::PathOutsideRepository, range, format!("Declared artifact path {reason}: {path}"));
        return;
    }
    if path == "outcome.json" {
        checker.report(Code::InvalidValue, range, "Declared artifact path must not be outcome.json".to_owned());
        return;
    }
    if let Some(first) = seen.get(&path) {
        let first = *first;
        let diagnostic = Diagnostic::new(
            Code::DuplicateName,
            checker.path,
            range,
            format!("Declared artifact path must be unique: {path}"),
        )
        .with_related(checker.path, first, "first declared here");
        checker.diagnostics.push(diagnostic);
        return;
    }
    seen.insert(path.clone(), range);
    let file = outbox.join(&path);
    match fs.kind(&file) {
        Ok(FileKind::File) => {}
        Ok(FileKind::Symlink) => {
            checker.report(
                Code::InvalidValue,
                range,
                format!("Declared artifact must be a regular file, not a symbolic link: {path}"),
            );
        }
        _ => checker.report(Code::PathNotFound, range, format!("Declared artifact file does not exist: {path}")),
    }
}

fn link(checker: &mut Checker<'_>, item: &Node, index: usize) {
    let label = format!("Declared link {index}");
    let Value::Mapping(map) = &item.value else {
        checker.report(Code::InvalidType, item.range, format!("{label} must be an object"));
        return;
    };
    checker.unknown(map, &["label", "uri", "kind"], "declared link");
    let anchor = map.entries.first().map_or(item.range, |e| e.key_range);
    checker.string(map, "label", "Declared link label", 512, true, anchor);
    if let Some(uri) = checker.string(map, "uri", "Declared link uri", 8192, true, anchor) {
        let valid = url::Url::parse(&uri).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
            && (uri.starts_with("http://") || uri.starts_with("https://"));
        if !valid {
            let range = map.get("uri").map_or(anchor, |n| n.range);
            checker.report(
                Code::InvalidUrl,
                range,
                "Declared link uri must be an absolute http or https URL".to_owned(),
            );
        }
    }
    if let Some(kind) = map.get("kind")
        && !matches!(kind.as_str(), Some("pull_request" | "preview" | "external"))
    {
        checker.report(
            Code::InvalidValue,
            kind.range,
            "Declared link kind must be one of pull_request, preview, external".to_owned(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OsFileSystem;

    #[test]
    fn declarations() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("outcome.json");
        std::fs::write(dir.path().join("report.md"), "# r").unwrap_or_else(|e| panic!("{e}"));
        let valid = r#"{"version": 1, "summary": "Done", "artifacts": [{"path": "report.md", "name": "Report"}], "links": [{"label": "PR", "uri": "https://example.com/pr/1", "kind": "pull_request"}]}"#;
        assert!(check_declaration(&OsFileSystem, &path, valid).is_empty());
        let invalid = r#"{"version": 2, "extra": 1, "artifacts": [{"path": "../x"}, {"path": "missing.txt"}, {"path": "report.md"}, {"path": "report.md"}], "links": [{"label": "x", "uri": "ftp://x", "kind": "other"}]}"#;
        let messages: Vec<String> =
            check_declaration(&OsFileSystem, &path, invalid).into_iter().map(|d| d.message).collect();
        for expected in [
            "Declared outcome version must be 1",
            "Unknown declared outcome field: extra",
            "Declared artifact path must stay inside the outbox without `.`, `..` or empty segments: ../x",
            "Declared artifact file does not exist: missing.txt",
            "Declared artifact path must be unique: report.md",
            "Declared link uri must be an absolute http or https URL",
            "Declared link kind must be one of pull_request, preview, external",
        ] {
            assert!(messages.iter().any(|m| m == expected), "{expected}: {messages:?}");
        }
        assert_eq!(check_declaration(&OsFileSystem, &path, "[1]")[0].message, "Declared outcome must be an object");
    }
}
