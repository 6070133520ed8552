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

    /// "Declare `NAME` in env" for every shape `env` can have: a block mapping (a new entry), a flow mapping (a
    /// new entry inside the braces, or block entries in place of an empty `{}` like the scaffold's), an empty
    /// `env:` and no `env` at all.
    pub(super) fn declare_env_fix(&self, top: &Mapping, name: &str) -> Option<Fix> {
        let title = format!("Declare `{name}` in env");
        if !crate::env_refs::is_env_name(name) {
            return None;
        }
        let Some(env) = top.entry("env") else {
            let lines = ["env:".to_owned(), format!("  {name}:"), "    required: true".to_owned()];
            return self.append_entries_fix(top, title, &lines).map(certain);
        };
        // Judged from the text: the tree marks a flow mapping with entries as block style.
        let flow = self.text.get(env.value.range.as_range()).is_some_and(|text| text.starts_with('{'));
        let fix = match &env.value.value {
            Value::Mapping(map) if !flow && !map.entries.is_empty() => {
                self.append_entries_fix(map, title, &[format!("{name}:"), "  required: true".to_owned()])
            }
            Value::Mapping(map) if !map.entries.is_empty() => {
                let close = flow_close(self.text, env.value.range.start)?;
                let at = self.text[..close].trim_end().len();
                Some(self.insert_fix(title, at, format!(", {name}: {{ required: true }}")))
            }
            Value::Mapping(_) | Value::Null => {
                self.block_value_fix(env, title, &[format!("{name}:"), "  required: true".to_owned()])
            }
            _ => None,
        };
        fix.map(certain)
    }

    fn insert_fix(&self, title: String, at: usize, new_text: String) -> Fix {
        Fix {
            title,
            creates: Vec::new(),
            edits: vec![TextEdit { path: self.path.clone(), range: TextRange::empty(at), new_text }],
            safe: false,
        }
    }

    /// Replaces an empty value (`{}`, `[]` or nothing) with block entries two spaces deeper than its key.
    fn block_value_fix(&self, entry: &Entry, title: String, lines: &[String]) -> Option<Fix> {
        let line_start = self.text[..entry.key_range.start].rfind('\n').map_or(0, |at| at + 1);
        let indent = &self.text[line_start..entry.key_range.start];
        if !indent.chars().all(|ch| ch == ' ') {
            return None;
        }
        let after_key = &self.text[entry.key_range.end..];
        let colon = entry.key_range.end + after_key.find(':')?;
        let value = entry.value.range;
        let end = if value.is_empty() { colon + 1 } else { value.end };
        if !value.is_empty() && (value.start <= colon || self.text[colon + 1..value.start].contains('\n')) {
            return None;
        }
        let mut new_text = ":".to_owned();
        for line in lines {
            new_text.push_str(self.newline);
            new_text.push_str(indent);
            new_text.push_str("  ");
            new_text.push_str(line);
        }
        Some(Fix {
            title,
            creates: Vec::new(),
            edits: vec![TextEdit { path: self.path.clone(), range: TextRange::new(colon, end), new_text }],
            safe: false,
        })
    }
}

/// A declaration is certain (the reference names the variable), so `check --fix` may apply it.
fn certain(fix: Fix) -> Fix {
    Fix { safe: true, ..fix }
}

/// The offset of the bracket closing the flow collection that opens at `open`, skipping quoted scalars and
/// comments (the tree's range of a flow collection can stop at its last entry).
fn flow_close(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut chars = text.get(open..)?.char_indices().map(|(at, ch)| (open + at, ch)).peekable();
    while let Some((at, ch)) = chars.next() {
        match ch {
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at);
                }
            }
            '"' => {
                while let Some((_, inner)) = chars.next() {
                    match inner {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                while let Some((_, inner)) = chars.next() {
                    if inner == '\'' {
                        if chars.peek().is_some_and(|(_, next)| *next == '\'') {
                            chars.next();
                        } else {
                            break;
                        }
                    }
                }
            }
            '#' if text[..at].ends_with([' ', '\t', '\n']) => {
                for (_, inner) in chars.by_ref() {
                    if inner == '\n' {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn flow_close_skips_nested_collections_strings_and_comments() {
        let text = "env: { A: { x: '}' }, B: \"}\\\"\", C: [1, 2] # }\n } # end";
        let close = super::flow_close(text, 5).expect("closing brace");
        assert_eq!(&text[close..], "} # end");
        assert_eq!(super::flow_close("{ a: 1", 0), None);
    }
}
