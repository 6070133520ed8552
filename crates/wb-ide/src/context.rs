//! Where the cursor is: the YAML path of the key or value under an offset.
//!
//! [`locate`] reads the parsed tree (precise, for documents that parse). Completion uses the line-based
//! reading in `completion/context.rs`, which also works while the document is half-typed.

use wb_manifest::fields::Segment;
use wb_syntax::{Node, TextRange, Value};

pub type YamlPath = Vec<Segment>;

/// The key or value under an offset.
#[derive(Clone, Debug, PartialEq)]
pub struct Located<'a> {
    /// The path of the entry (for a value: the path of the value itself).
    pub path: YamlPath,
    /// True when the offset is on a key.
    pub on_key: bool,
    /// The range of the key or value under the offset.
    pub range: TextRange,
    /// The node of the value (for a key: the value it introduces).
    pub node: &'a Node,
}

/// Finds the deepest key or scalar value containing `offset`.
pub fn locate(root: &Node, offset: usize) -> Option<Located<'_>> {
    let mut path = Vec::new();
    let mut node = root;
    loop {
        match &node.value {
            Value::Mapping(mapping) => {
                let entry = mapping.entries.iter().find(|entry| {
                    entry.key_range.contains_inclusive(offset)
                        || (!entry.value.range.is_empty() && entry.value.range.contains_inclusive(offset))
                })?;
                path.push(Segment::Key(entry.key.to_string()));
                if entry.key_range.contains_inclusive(offset) {
                    return Some(Located { path, on_key: true, range: entry.key_range, node: &entry.value });
                }
                node = &entry.value;
            }
            Value::Sequence(items) => {
                let (index, item) = items.iter().enumerate().find(|(_, item)| item.range.contains_inclusive(offset))?;
                path.push(Segment::Index(index));
                node = item;
            }
            _ => return Some(Located { path, on_key: false, range: node.range, node }),
        }
    }
}

/// The manifest's spec (1 unless it says 0).
pub fn spec_of(root: Option<&Node>) -> u8 {
    let spec = root.and_then(Node::as_mapping).and_then(|m| m.get("spec")).map(|n| &n.value);
    if matches!(spec, Some(Value::Number(n)) if *n == 0.0) { 0 } else { 1 }
}

/// The manifest's spec read from text, for documents that do not parse.
pub fn spec_of_text(text: &str) -> u8 {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("spec:") {
            let value = rest.split('#').next().unwrap_or_default().trim();
            return if value == "0" { 0 } else { 1 };
        }
    }
    1
}

/// Clamps an offset into the text and back onto a character boundary.
pub fn snap(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}
