//! The cursor's place read from the lines around it: the YAML path, the key or value being typed, and the range a
//! completion replaces.

use wb_manifest::fields::{Field, Segment, Shape};
use wb_syntax::TextRange;

use super::lookup_field;
use crate::context::{YamlPath, spec_of_text};

/// What the cursor is on.
#[derive(Debug, PartialEq)]
pub(super) enum Place {
    /// Typing a key of the mapping at `path`.
    Key { path: YamlPath, siblings: Vec<String>, rest_of_line_has_colon: bool },
    /// Typing the value of the field at `path` (its last segment is the key, or an index for list items).
    Value { path: YamlPath, prefix: String },
}

pub(super) struct Context {
    pub(super) place: Place,
    /// What the completion replaces.
    pub(super) replace: TextRange,
}

pub(super) fn line_bounds(text: &str, offset: usize) -> (usize, usize) {
    let start = text[..offset].rfind('\n').map_or(0, |at| at + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |at| offset + at);
    (start, end)
}

pub(super) fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// A line's structure: indentation, dash items, and the `key:` it starts with.
pub(super) struct LineShape<'t> {
    /// Column of the first dash, if the line starts a sequence item.
    pub(super) dash: Option<usize>,
    /// Column where the content (after dashes) starts.
    pub(super) content: usize,
    /// The key, when the content is `key:` or `key: value`.
    pub(super) key: Option<&'t str>,
    /// The value after `key:` (trimmed, without a trailing comment), possibly empty.
    pub(super) value: &'t str,
}

pub(super) fn shape(line: &str) -> Option<LineShape<'_>> {
    let trimmed = line.trim_end_matches('\r');
    let mut column = indentation(trimmed);
    let mut rest = &trimmed[column..];
    if rest.is_empty() || rest.starts_with('#') {
        return None;
    }
    let mut dash = None;
    while rest == "-" || rest.starts_with("- ") {
        dash.get_or_insert(column);
        let after = &rest[1..];
        let spaces = after.len() - after.trim_start_matches(' ').len();
        column += 1 + spaces;
        rest = &after[spaces..];
    }
    let (key, value) = split_key(rest);
    Some(LineShape { dash, content: column, key, value })
}

/// Splits `key: value` (the colon must end the text or be followed by a space).
pub(super) fn split_key(rest: &str) -> (Option<&str>, &str) {
    if rest.starts_with(['"', '\'', '{', '[', '#']) {
        return (None, rest);
    }
    let bytes = rest.as_bytes();
    for (index, byte) in bytes.iter().enumerate() {
        if *byte == b':' && (index + 1 == bytes.len() || bytes[index + 1] == b' ') {
            let value = rest[index + 1..].trim();
            let value = if value.starts_with('#') { "" } else { value.split(" #").next().unwrap_or(value).trim() };
            return (Some(rest[..index].trim()), value);
        }
    }
    (None, rest)
}

/// The path of the block that contains a line whose content starts at `column` (`dash` set when the line is
/// itself a sequence item).
pub(super) fn parent_path(lines: &[&str], line: usize, column: usize, dash: Option<usize>) -> YamlPath {
    let mut reversed = Vec::new();
    // The column an ancestor must be left of; items of a sequence live right of its dash.
    let mut target = dash.unwrap_or(column);
    let mut in_item = dash.is_some();
    let mut item_index = 0;
    for previous in lines[..line].iter().rev() {
        let Some(prev) = shape(previous) else { continue };
        if let Some(prev_dash) = prev.dash {
            if in_item {
                if prev_dash == target {
                    item_index += 1;
                }
                continue;
            }
            if prev.content == target && prev_dash < target {
                // Our line continues the item this dash opened.
                reversed.push(Segment::Index(0));
                target = prev_dash;
                in_item = true;
                item_index = 0;
                continue;
            }
            if prev_dash < target {
                target = prev_dash;
            }
            continue;
        }
        let indent = prev.content;
        let opens_block = prev.key.is_some() && prev.value.is_empty();
        if indent < target || (in_item && indent == target && opens_block) {
            if in_item {
                if !matches!(reversed.last(), Some(Segment::Index(_))) {
                    reversed.push(Segment::Index(item_index));
                }
                in_item = false;
            }
            match prev.key {
                Some(key) if opens_block => reversed.push(Segment::Key(key.to_owned())),
                _ => return Vec::new(),
            }
            target = indent;
            if indent == 0 {
                break;
            }
        }
    }
    if in_item && !matches!(reversed.last(), Some(Segment::Index(_))) {
        reversed.push(Segment::Index(item_index));
    }
    reversed.reverse();
    reversed
}

/// Keys already present in the block the cursor's line belongs to.
pub(super) fn sibling_keys(lines: &[&str], line: usize, column: usize, in_item: bool) -> Vec<String> {
    let mut keys = Vec::new();
    let mut collect = |index: usize| -> bool {
        let Some(other) = shape(lines[index]) else { return true };
        if index != line {
            if other.content < column && other.dash.is_none() {
                return false;
            }
            if let Some(dash) = other.dash {
                if dash < column && !(in_item && other.content == column) {
                    return false;
                }
                if in_item && other.content == column {
                    if let Some(key) = other.key {
                        keys.push(key.to_owned());
                    }
                    return false;
                }
            }
            if other.content == column
                && other.dash.is_none()
                && let Some(key) = other.key
            {
                keys.push(key.to_owned());
            }
        }
        true
    };
    for index in (0..line).rev() {
        if !collect(index) {
            break;
        }
    }
    for (index, text) in lines.iter().enumerate().skip(line + 1) {
        if let Some(other) = shape(text)
            && other.dash.is_some_and(|dash| dash < column)
        {
            break;
        }
        if !collect(index) {
            break;
        }
    }
    keys
}

pub(super) fn word_end(text: &str, offset: usize) -> usize {
    let rest = &text[offset..];
    offset + rest.find(|ch: char| ch.is_whitespace() || ch == ':' || ch == '#').unwrap_or(rest.len())
}

pub(super) fn context(text: &str, offset: usize) -> Option<Context> {
    let (line_start, line_end) = line_bounds(text, offset);
    let prefix = &text[line_start..offset];
    if prefix.trim_start().starts_with('#') || prefix.contains(" #") {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let line = text[..line_start].matches('\n').count();
    let current = shape(prefix).unwrap_or(LineShape { dash: None, content: indentation(prefix), key: None, value: "" });
    let full_line = &text[line_start..line_end];
    if let Some(key) = current.key {
        // After `key:` — a value. Its prefix is what follows the colon up to the cursor.
        let colon = prefix.find(&format!("{key}:")).map_or(prefix.len(), |at| at + key.len() + 1);
        let typed = prefix[colon..].trim_start();
        let value_start = offset - typed.len();
        let end = (line_end - (full_line.len() - full_line.trim_end().len())).max(value_start);
        let end = text[value_start..end].find(" #").map_or(end, |at| value_start + at).max(offset);
        let mut path = parent_path(&lines, line, current.content, current.dash);
        path.push(Segment::Key(key.to_owned()));
        return Some(Context {
            place: Place::Value { path, prefix: typed.to_owned() },
            replace: TextRange::new(value_start, end),
        });
    }
    let typed = &prefix[current.content.min(prefix.len())..];
    let path = parent_path(&lines, line, current.content, current.dash);
    let start = offset - typed.len();
    let rest_of_line = &text[offset..line_end];
    let end = word_end(text, offset);
    if current.dash.is_some() && !typed.contains(':') {
        // `- x`: an item of a list of scalars, or the first key of an object item.
        let is_object_list = matches!(
            lookup_field(spec_of_text(text), &path[..path.len().saturating_sub(1)]),
            Some(Field { shape: Shape::ObjectList { .. }, .. })
        );
        if !is_object_list {
            let line_value_end = line_end - (full_line.len() - full_line.trim_end().len());
            return Some(Context {
                place: Place::Value { path, prefix: typed.to_owned() },
                replace: TextRange::new(start, line_value_end.max(offset)),
            });
        }
    }
    let siblings = sibling_keys(&lines, line, current.content, current.dash.is_some());
    Some(Context {
        place: Place::Key { path, siblings, rest_of_line_has_colon: rest_of_line.contains(':') },
        replace: TextRange::new(start, end),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> (Place, TextRange) {
        let offset = text.find('|').expect("cursor");
        let text = text.replace('|', "");
        let context = context(&text, offset).expect("context");
        (context.place, context.replace)
    }

    fn key(path: &[&str]) -> YamlPath {
        path.iter().map(|s| s.parse::<usize>().map_or_else(|_| Segment::Key((*s).to_owned()), Segment::Index)).collect()
    }

    #[test]
    fn top_level_key() {
        let (place, range) = at("spec: 1\nna|\n");
        assert_eq!(place, Place::Key { path: vec![], siblings: vec!["spec".into()], rest_of_line_has_colon: false });
        assert_eq!(range, TextRange::new(8, 10));
    }

    #[test]
    fn nested_key_and_value() {
        let (place, _) = at("model:\n  id: x\n  ro|\n");
        assert!(
            matches!(place, Place::Key { ref path, ref siblings, .. } if *path == key(&["model"]) && siblings == &["id".to_owned()])
        );
        let (place, range) = at("runtimes:\n  daytona:\n    class: li|\n");
        assert_eq!(place, Place::Value { path: key(&["runtimes", "daytona", "class"]), prefix: "li".into() });
        assert_eq!(range, TextRange::new(32, 34));
    }

    #[test]
    fn list_items() {
        let (place, _) = at("mcps:\n  - name: db\n    u|\n");
        assert!(matches!(place, Place::Key { ref path, .. } if *path == key(&["mcps", "0"])), "{place:?}");
        let (place, _) = at("skills:\n  - ./a\n  - ./|\n");
        assert!(
            matches!(place, Place::Value { ref path, ref prefix } if *path == key(&["skills", "1"]) && prefix == "./"),
            "{place:?}"
        );
        let (place, _) = at("mcps:\n  - name: db\n    headers:\n      Authorization: Bearer ${|\n");
        assert!(
            matches!(place, Place::Value { ref path, .. } if *path == key(&["mcps", "0", "headers", "Authorization"])),
            "{place:?}"
        );
    }
}
