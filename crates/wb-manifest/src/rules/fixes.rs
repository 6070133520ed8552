//! The quick fixes the rules attach: rename a value, remove an entry, add a missing field or env declaration;
//! and [`ManifestText`], the insertions the package checks' fixes make too (an env declaration, a list item).

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

    /// The manifest's text as the fixes that insert into it see it.
    fn manifest_text(&self) -> ManifestText<'_> {
        ManifestText { path: &self.path, text: self.text, newline: self.newline }
    }

    /// See [`ManifestText::append_entries`].
    pub(super) fn append_entries_fix(&self, mapping: &Mapping, title: String, lines: &[String]) -> Option<Fix> {
        self.manifest_text().append_entries(mapping, title, lines)
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

    /// See [`ManifestText::declare_env`].
    pub(super) fn declare_env_fix(&self, top: &Mapping, name: &str) -> Option<Fix> {
        self.manifest_text().declare_env(top, name)
    }
}

/// A manifest's text, for the fixes that insert entries into it (the rules', and the package checks' that
/// edit the manifest from a diagnostic in another file).
#[derive(Clone, Copy)]
pub(crate) struct ManifestText<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    /// The document's line ending, for inserted text.
    pub newline: &'static str,
}

impl<'a> ManifestText<'a> {
    pub(crate) fn new(path: &'a Path, text: &'a str) -> ManifestText<'a> {
        ManifestText { path, text, newline: if text.contains("\r\n") { "\r\n" } else { "\n" } }
    }

    /// Inserts `lines` (each without indentation or newline) as new entries after the last entry of a block
    /// mapping, at the indentation of its first key.
    pub(crate) fn append_entries(&self, mapping: &Mapping, title: String, lines: &[String]) -> Option<Fix> {
        self.entries_after(mapping, None, title, lines)
    }

    /// Inserts `lines` as new entries of a block mapping after `after` (or its last entry), at the indentation
    /// of its first key.
    fn entries_after(&self, mapping: &Mapping, after: Option<&Entry>, title: String, lines: &[String]) -> Option<Fix> {
        let first = mapping.entries.first()?;
        let end_of = |e: &Entry| e.range().end.max(e.key_range.end);
        let last_end = match after {
            Some(entry) => end_of(entry),
            None => mapping.entries.iter().map(end_of).max()?,
        };
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
        Some(self.insert(title, at, new_text))
    }

    /// "Declare `NAME` in env" for every shape `env` can have: a block mapping (a new entry), a flow mapping (a
    /// new entry inside the braces, or block entries in place of an empty `{}` like the scaffold's), an empty
    /// `env:` and no `env` at all.
    pub(crate) fn declare_env(&self, top: &Mapping, name: &str) -> Option<Fix> {
        let title = format!("Declare `{name}` in env");
        if !crate::env_refs::is_env_name(name) {
            return None;
        }
        let Some(env) = top.entry("env") else {
            let lines = ["env:".to_owned(), format!("  {name}:"), "    required: true".to_owned()];
            return self.append_entries(top, title, &lines).map(certain);
        };
        // Judged from the text: the tree marks a flow mapping with entries as block style.
        let flow = self.text.get(env.value.range.as_range()).is_some_and(|text| text.starts_with('{'));
        let fix = match &env.value.value {
            Value::Mapping(map) if !flow && !map.entries.is_empty() => {
                self.append_entries(map, title, &[format!("{name}:"), "  required: true".to_owned()])
            }
            Value::Mapping(map) if !map.entries.is_empty() => {
                let close = flow_close(self.text, env.value.range.start)?;
                let at = self.text[..close].trim_end().len();
                Some(self.insert(title, at, format!(", {name}: {{ required: true }}")))
            }
            Value::Mapping(_) | Value::Null => {
                self.block_value(env, title, &[format!("{name}:"), "  required: true".to_owned()])
            }
            _ => None,
        };
        fix.map(certain)
    }

    /// "Add `item` to key" for a top-level list: a new item in the list's own style (a `- item` line of a block
    /// list, `, item` inside a flow list), a block list in place of an empty value, or a new `key:` after the
    /// first of `after` the manifest has (else after its last entry). Not safe: callers judge that.
    pub(crate) fn add_to_list(&self, top: &Mapping, key: &str, item: &str, after: &[&str]) -> Option<Fix> {
        let title = format!("Add `{item}` to {key}");
        let item = yaml_item(item);
        let Some(entry) = top.entry(key) else {
            let predecessor = after.iter().find_map(|key| top.entry(key));
            return self.entries_after(top, predecessor, title, &[format!("{key}:"), format!("  - {item}")]);
        };
        let value = &entry.value;
        let flow = self.text.get(value.range.as_range()).is_some_and(|text| text.starts_with('['));
        match &value.value {
            Value::Sequence(items) if flow => {
                let close = flow_close(self.text, value.range.start)?;
                let inside = self.text.get(value.range.start + 1..close)?;
                let at = self.text[..close].trim_end().len();
                let new_text = if inside.trim().is_empty() { item } else { format!(", {item}") };
                Some(self.insert(title, at, new_text))
            }
            Value::Sequence(items) if !items.is_empty() => {
                let first = items.first()?;
                let line_start = self.text[..first.range.start].rfind('\n').map_or(0, |at| at + 1);
                let prefix = &self.text[line_start..first.range.start];
                let dash = prefix.find('-')?;
                let indent = &prefix[..dash];
                if !(indent.chars().all(|ch| ch == ' ') && prefix[dash + 1..].chars().all(|ch| ch == ' ')) {
                    return None;
                }
                let end = items.iter().map(|node| node.range.end).max()?;
                let (at, mut new_text) = match self.text[end..].find('\n') {
                    Some(offset) => (end + offset + 1, String::new()),
                    None => (self.text.len(), self.newline.to_owned()),
                };
                new_text.push_str(&format!("{indent}- {item}{}", self.newline));
                Some(self.insert(title, at, new_text))
            }
            Value::Null => self.block_value(entry, title, &[format!("- {item}")]),
            _ => None,
        }
    }

    fn insert(&self, title: String, at: usize, new_text: String) -> Fix {
        Fix {
            title,
            creates: Vec::new(),
            edits: vec![TextEdit { path: self.path.to_owned(), range: TextRange::empty(at), new_text }],
            safe: false,
        }
    }

    /// Replaces an empty value (`{}`, `[]` or nothing) with block entries two spaces deeper than its key.
    fn block_value(&self, entry: &Entry, title: String, lines: &[String]) -> Option<Fix> {
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
            edits: vec![TextEdit { path: self.path.to_owned(), range: TextRange::new(colon, end), new_text }],
            safe: false,
        })
    }
}

/// `item` as a YAML list item: plain when it reads back as the same string, else double-quoted.
fn yaml_item(item: &str) -> String {
    let plain = item.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/'))
        && item.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'+' | b'-'))
        && wb_syntax::parse_str(item).root.is_some_and(|node| node.as_str() == Some(item));
    if plain { item.to_owned() } else { format!("\"{}\"", item.replace('\\', "\\\\").replace('"', "\\\"")) }
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
