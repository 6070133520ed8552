//! `runner_config` on disk (engine facts b.5): its shape for the runner, no links, no credential files, and
//! credentials in its JSON referenced by environment name.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use regex::Regex;
use wb_syntax::TextRange;

use super::PackageChecks;
use crate::boundary::MAX_PACKAGE_FILE_BYTES;
use crate::diagnostic::Code;
use crate::fs::FileKind;
use crate::manifest::Manifest;

impl PackageChecks<'_> {
    pub(super) fn runner_config(&mut self, manifest: &Manifest) {
        let Some(config) = &manifest.runner_config else { return };
        let package_dir = self.package_dir.to_path_buf();
        let Some(path) = self.resolve(config, "runner_config", Some(&package_dir)) else { return };
        let kind = match self.fs.kind(&path) {
            Ok(kind) => kind,
            Err(_) => {
                self.report(
                    Code::MissingRunnerConfig,
                    config.range,
                    format!("runner_config does not exist: {}", path.display()),
                );
                return;
            }
        };
        let range = config.range;
        if kind == FileKind::Symlink {
            self.report(
                Code::RunnerConfigSymlink,
                range,
                format!("runner_config must not contain symbolic links: {}", path.display()),
            );
            return;
        }
        if !self.within(config, "runner_config", &path, true) {
            return;
        }
        if !matches!(kind, FileKind::File | FileKind::Directory) {
            self.report(Code::RunnerConfigShape, range, "runner_config must be a file or directory".to_owned());
            return;
        }
        let mut files = Vec::new();
        if !self.walk(&path, range, &mut files) {
            return;
        }
        for file in &files {
            if file.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("json")) {
                self.json_credentials(file, range);
            }
        }
        let runner = manifest.runner.as_ref().map(|r| r.value.as_str());
        match (runner, kind) {
            (Some("pi"), FileKind::File) => {
                self.report(Code::RunnerConfigShape, range, "Pi runner_config must be a directory".to_owned());
            }
            (Some("claude-code"), kind) => {
                let is_json = path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
                if kind != FileKind::File || !is_json {
                    self.report(
                        Code::RunnerConfigShape,
                        range,
                        "Claude Code runner_config must be a JSON file".to_owned(),
                    );
                } else {
                    self.claude_content(&path, range);
                }
            }
            _ => {}
        }
    }

    /// Walks a runner_config tree; returns false when a problem stops the checks of its content.
    fn walk(&mut self, path: &Path, range: TextRange, files: &mut Vec<PathBuf>) -> bool {
        let mut stack = vec![path.to_path_buf()];
        let mut ok = true;
        while let Some(current) = stack.pop() {
            let kind = self.fs.kind(&current).unwrap_or(FileKind::Other);
            let name = current.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            match kind {
                FileKind::Symlink => {
                    self.report(
                        Code::RunnerConfigSymlink,
                        range,
                        format!("runner_config must not contain symbolic links: {}", current.display()),
                    );
                    ok = false;
                }
                FileKind::File => {
                    if is_runner_config_credential(&name) {
                        self.report(
                            Code::RunnerConfigCredentialFile,
                            range,
                            format!("runner_config contains a credential file: {name}"),
                        );
                        ok = false;
                    }
                    files.push(current);
                }
                FileKind::Directory => match self.fs.read_dir(&current) {
                    Ok(entries) => stack.extend(entries.into_iter().rev()),
                    Err(error) => {
                        self.report(
                            Code::IoError,
                            range,
                            format!("runner_config is unreadable: {}: {error}", current.display()),
                        );
                        ok = false;
                    }
                },
                FileKind::Other => {
                    self.report(Code::RunnerConfigShape, range, "runner_config must be a file or directory".to_owned());
                    ok = false;
                }
            }
        }
        files.sort();
        ok
    }

    fn read_json(&mut self, file: &Path, range: TextRange) -> Option<serde_json::Value> {
        let bytes = self.read_bounded(file, range, "runner_config file").ok()?;
        match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(value) => Some(value),
            Err(error) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let index = wb_syntax::LineIndex::new(&text);
                let line = error.line().saturating_sub(1);
                let column = error.column().saturating_sub(1);
                let offset = index.offset(
                    wb_syntax::LineCol {
                        line: u32::try_from(line).unwrap_or(0),
                        col: u32::try_from(column).unwrap_or(0),
                    },
                    wb_syntax::PositionEncoding::Utf32,
                );
                let message = format!("runner_config JSON is invalid: {}", file.display());
                self.report(Code::RunnerConfigInvalidJson, range, message).related.push(crate::Related {
                    path: file.to_owned(),
                    range: TextRange::empty(offset),
                    message: error.to_string(),
                });
                self.sources.push((file.to_owned(), Arc::from(text)));
                None
            }
        }
    }

    fn json_credentials(&mut self, file: &Path, range: TextRange) {
        let Some(value) = self.read_json(file, range) else { return };
        let mut stack = vec![&value];
        let mut reported = false;
        while let Some(value) = stack.pop() {
            match value {
                serde_json::Value::Object(map) => {
                    for (key, child) in map {
                        if let serde_json::Value::String(text) = child
                            && !reported
                            && matches(credential_key(), key)
                            && !matches(env_reference_value(), text)
                        {
                            self.report(
                                Code::RunnerConfigLiteralCredential,
                                range,
                                format!(
                                    "runner_config must reference credentials by environment name, not {key}: {}",
                                    file.display()
                                ),
                            );
                            reported = true;
                        }
                        stack.push(child);
                    }
                }
                serde_json::Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
    }

    fn claude_content(&mut self, file: &Path, range: TextRange) {
        // Its size was reported when its JSON was checked.
        let Ok(bytes) = self.fs.read_limited(file, MAX_PACKAGE_FILE_BYTES) else { return };
        if serde_json::from_slice::<serde_json::Value>(&bytes).is_err() {
            // `runner_config JSON is invalid` already reported it.
            return;
        }
        let problem = claude_config_problem(&bytes);
        if let Some(message) = problem {
            self.report(Code::RunnerConfigContent, range, message);
        }
    }
}

/// A file `runner_config` must not hold: the one credential-path policy, and also the env templates
/// (`.env.example`, `.env.sample`) that policy lets cross elsewhere: the reference refuses every `.env.*` in a
/// runner configuration, which has no use for a template either.
fn is_runner_config_credential(name: &str) -> bool {
    crate::credentials::is_credential_path(name) || name.to_ascii_lowercase().starts_with(".env.")
}

/// The first problem the reference finds when it stages a Claude Code runner_config file (the engine's staging
/// refuses the file with it).
pub fn claude_config_problem(bytes: &[u8]) -> Option<String> {
    const P: &str = "Claude Code runner_config";
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return Some(format!("{P} must contain valid JSON"));
    };
    let Some(object) = value.as_object() else { return Some(format!("{P} must be a JSON object")) };
    for key in object.keys() {
        if key != "permissions" && key != "max_turns" {
            return Some(format!("{P} has unknown field: {key}"));
        }
    }
    if let Some(permissions) = object.get("permissions") {
        let Some(permissions) = permissions.as_object() else {
            return Some(format!("{P} permissions must be a JSON object"));
        };
        for key in permissions.keys() {
            if key != "allow" && key != "deny" {
                return Some(format!("{P} permissions has unknown field: {key}"));
            }
        }
        for list in ["allow", "deny"] {
            if let Some(rules) = permissions.get(list) {
                let Some(rules) = rules.as_array().filter(|rules| rules.iter().all(serde_json::Value::is_string))
                else {
                    return Some(format!("{P} permissions.{list} must be an array of strings"));
                };
                if rules.iter().any(|rule| rule.as_str().is_some_and(|rule| rule.trim().is_empty())) {
                    return Some(format!("{P} must not contain empty rules"));
                }
            }
        }
    }
    if let Some(max_turns) = object.get("max_turns") {
        let positive = max_turns.as_u64().is_some_and(|n| n >= 1)
            || max_turns.as_f64().is_some_and(|n| n >= 1.0 && n.fract() == 0.0);
        if !positive {
            return Some(format!("{P} max_turns must be a positive integer"));
        }
    }
    None
}

fn matches(pattern: Option<&Regex>, text: &str) -> bool {
    pattern.is_some_and(|regex| regex.is_match(text))
}

fn credential_key() -> Option<&'static Regex> {
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    CELL.get_or_init(|| {
        Regex::new(r"(?i)^(?:api[-_]?key|access[-_]?token|refresh[-_]?token|client[-_]?secret|authorization|cookie|password|private[-_]?key|secret|token)$").ok()
    })
    .as_ref()
}

fn env_reference_value() -> Option<&'static Regex> {
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    CELL.get_or_init(|| {
        Regex::new(r"^(?:\S+ )?(?:[A-Z][A-Z0-9_]*|\$\{[A-Z][A-Z0-9_]*\}|\{env:[A-Z][A-Z0-9_]*\})$").ok()
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_values() {
        assert!(credential_key().is_some() && env_reference_value().is_some());
        for value in ["OPENAI_API_KEY", "Bearer ${TOKEN}", "{env:TOKEN}", "${A_B}"] {
            assert!(matches(env_reference_value(), value), "{value}");
        }
        for value in ["sk-123", "Bearer abc", "${lower}"] {
            assert!(!matches(env_reference_value(), value), "{value}");
        }
    }

    #[test]
    fn claude_content_rules() {
        assert_eq!(claude_config_problem(b"{\"permissions\":{\"allow\":[\"Bash(ls)\"]},\"max_turns\":3}"), None);
        assert_eq!(claude_config_problem(b"[]").as_deref(), Some("Claude Code runner_config must be a JSON object"));
        assert_eq!(
            claude_config_problem(b"{\"x\":1}").as_deref(),
            Some("Claude Code runner_config has unknown field: x")
        );
        assert_eq!(
            claude_config_problem(b"{\"max_turns\":0}").as_deref(),
            Some("Claude Code runner_config max_turns must be a positive integer")
        );
        assert_eq!(
            claude_config_problem(b"{\"permissions\":{\"deny\":[\" \"]}}").as_deref(),
            Some("Claude Code runner_config must not contain empty rules")
        );
    }
}
