//! Document symbols (the outline) and folding ranges.

use wb_syntax::{Node, TextRange, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Object,
    Array,
    String,
    Number,
    Boolean,
    Null,
    Key,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    pub name: String,
    pub detail: Option<String>,
    pub kind: SymbolKind,
    /// The whole entry.
    pub range: TextRange,
    /// The key (what the editor highlights).
    pub selection: TextRange,
    pub children: Vec<Symbol>,
}

fn kind_of(node: &Node) -> SymbolKind {
    match node.value {
        Value::Mapping(_) => SymbolKind::Object,
        Value::Sequence(_) => SymbolKind::Array,
        Value::String(_) => SymbolKind::String,
        Value::Number(_) => SymbolKind::Number,
        Value::Bool(_) => SymbolKind::Boolean,
        Value::Null => SymbolKind::Null,
    }
}

fn detail_of(node: &Node) -> Option<String> {
    match &node.value {
        Value::Mapping(_) | Value::Sequence(_) => None,
        Value::Null => None,
        _ => {
            let text = node.js_string();
            Some(if text.chars().count() > 60 {
                format!("{}…", text.chars().take(60).collect::<String>())
            } else {
                text
            })
        }
    }
}

fn children(node: &Node) -> Vec<Symbol> {
    match &node.value {
        Value::Mapping(mapping) => mapping
            .entries
            .iter()
            .map(|entry| Symbol {
                name: entry.key.to_string(),
                detail: detail_of(&entry.value),
                kind: kind_of(&entry.value),
                range: entry.range(),
                selection: entry.key_range,
                children: children(&entry.value),
            })
            .collect(),
        Value::Sequence(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                // An item is named after its `name` or `provider`, else its value, else its index.
                let label = item
                    .as_mapping()
                    .and_then(|m| m.get("name").or_else(|| m.get("provider")))
                    .and_then(Node::as_str)
                    .map(str::to_owned)
                    .or_else(|| item.as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("[{index}]"));
                Symbol {
                    name: label,
                    detail: None,
                    kind: kind_of(item),
                    range: item.range,
                    selection: item.range,
                    children: if item.as_mapping().is_some() { children(item) } else { Vec::new() },
                }
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The outline of a manifest.
pub fn symbols(root: &Node) -> Vec<Symbol> {
    children(root)
}

/// A foldable region (the server turns it into lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fold {
    pub range: TextRange,
}

/// Every mapping or sequence value that spans several lines, from its key's line to its last line.
pub fn folding_ranges(text: &str, root: &Node) -> Vec<Fold> {
    let mut folds = Vec::new();
    let mut stack: Vec<(&Node, usize)> = vec![(root, root.range.start)];
    while let Some((node, start)) = stack.pop() {
        let spans_lines = text.get(start..node.range.end).is_some_and(|t| t.contains('\n'));
        if spans_lines && !std::ptr::eq(node, root) && matches!(node.value, Value::Mapping(_) | Value::Sequence(_)) {
            folds.push(Fold { range: TextRange::new(start, node.range.end) });
        }
        match &node.value {
            Value::Mapping(mapping) => stack.extend(mapping.entries.iter().map(|e| (&e.value, e.key_range.start))),
            Value::Sequence(items) => stack.extend(items.iter().map(|item| (item, item.range.start))),
            _ => {}
        }
    }
    folds.sort_by_key(|fold| fold.range.start);
    folds
}
