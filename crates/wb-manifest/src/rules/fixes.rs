//! The quick fixes the rules attach: rename a value, remove an entry, add a missing field or env declaration.

use std::path::Path;

use wb_syntax::{Entry, Mapping, TextRange, Value};

use super::Rules;
use crate::diagnostic::{Fix, TextEdit};

impl Rules<'_> {
    /// A did-you-mean rename: safe, as the value it writes is the one the rule allows (callers whose rename
    /// is a guess mark it `needs_review`).
    pub(super) fn rename_fix(&self, range: TextRange, replacement: &str) -> Fix {
        Fix {
            title: format!("Change to `{replacement}`"),
            creates: Vec::new(),
            edits: vec![TextEdit { path: self.path.clone(), range, new_text: replacement.to_owned() }],
            safe: true,
        }
    }

    /// Deletes a block-style entry: its whole lines, when nothing else shares them.
    pub(super) fn remove_entry_fix(&self, entry: &Entry) -> Option<Fix> {
        let line_start = self.text[..entry.key_range.start].rfind('\n').map_or(0, |at| at + 1);
        let before = &self.text[line_start..entry.key_range.start];
        if !before.trim().is_empty() {
            return None;
        }
        let end = entry.range().end.max(entry.key_range.end);
        let line_end = self.text[end..].find('\n').map_or(self.text.len(), |at| end + at + 1);
        let after = self.text[end..line_end].trim();
        if !(after.is_empty() || after.starts_with('#')) {
            return None;
        }
        Some(Fix {
            title: format!("Remove `{}`", entry.key),
            creates: Vec::new(),
            edits: vec![TextEdit {
                path: self.path.clone(),
                range: TextRange::new(line_start, line_end),
                new_text: String::new(),
            }],
            safe: false,
        })
    }

    /// Inserts `lines` (each without indentation or newline) as new entries after the last entry of a block
    /// mapping, at the indentation of its first key.
    pub(super) fn append_entries_fix(&self, mapping: &Mapping, title: String, lines: &[String]) -> Option<Fix> {
        let first = mapping.entries.first()?;
        let last_end = mapping.entries.iter().map(|e| e.range().end.max(e.key_range.end)).max()?;
        let line_start = self.text[..first.key_range.start].rfind('\n').map_or(0, |at| at + 1);
        let indent = &self.text[line_start..first.key_range.start];
        if !indent.chars().all(|ch| ch == ' ') {
            return None;
        }
        let newline = self.newline;
        let (at, mut new_text) = match self.text[last_end..].find('\n') {
            Some(offset) => (last_end + offset + 1, String::new()),
            None => (self.text.len(), newline.to_owned()),
        };
        for line in lines {
            new_text.push_str(indent);
            new_text.push_str(line);
            new_text.push_str(newline);
        }
        Some(Fix {
            title,
            creates: Vec::new(),
            edits: vec![TextEdit { path: self.path.clone(), range: TextRange::empty(at), new_text }],
            safe: false,
        })
    }

    /// A placeholder for a missing required top-level field.
    pub(super) fn add_field_fix(&self, top: &Mapping, key: &str) -> Option<Fix> {
        let package = self.path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
        let lines: Vec<String> = match key {
            "version" => vec!["version: 0.1.0".into()],
            "name" => vec![format!("name: {}", package.unwrap_or_else(|| "my-workbench".into()))],
            "runner" => vec!["runner: opencode".into()],
            "instructions" => vec!["instructions: ./instructions.md".into()],
            "model" => vec!["model:".into(), format!("  id: {}", crate::init::DEFAULT_MODEL)],
            "runtimes" => vec!["runtimes:".into(), "  local: {}".into()],
            "runtime" => vec!["runtime: local".into()],
            _ => return None,
        };
        // A placeholder value: not safe.
        self.append_entries_fix(top, format!("Add `{key}`"), &lines)
    }

    pub(super) fn declare_env_fix(&self, top: &Mapping, name: &str) -> Option<Fix> {
        let title = format!("Declare `{name}` in env");
        let valid_name = crate::env_refs::is_env_name(name);
        if !valid_name {
            return None;
        }
        let fix = match top.entry("env") {
            Some(env) => match &env.value.value {
                Value::Mapping(map) if env.value.style == wb_syntax::Style::Block && !map.entries.is_empty() => {
                    self.append_entries_fix(map, title, &[format!("{name}:"), "  required: true".to_owned()])
                }
                _ => None,
            },
            None => self.append_entries_fix(
                top,
                title,
                &["env:".to_owned(), format!("  {name}:"), "    required: true".to_owned()],
            ),
        };
        // A declaration is certain: the reference names the variable.
        fix.map(|fix| Fix { safe: true, ..fix })
    }
}
