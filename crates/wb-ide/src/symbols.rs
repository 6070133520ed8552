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
        _ => Some(shorten(&node.js_string())),
    }
}

/// At most this many entries of one mapping or items of one sequence are listed in the outline; the rest are
/// one "… and N more" symbol. A real manifest's longest list is a few dozen entries.
pub const MAX_OUTLINE_CHILDREN: usize = 100;

/// At most this many symbols in one outline (every level together); past it, each list is summarised.
pub const MAX_OUTLINE_SYMBOLS: usize = 2_000;

/// At most this many folding ranges for one document.
pub const MAX_FOLDS: usize = 1_000;

/// The outline's budget of symbols, shared by every level.
struct Budget {
    left: usize,
}

impl Budget {
    /// Takes one symbol from the budget; false when it is spent.
    fn take(&mut self) -> bool {
        let taken = self.left > 0;
        self.left = self.left.saturating_sub(1);
        taken
    }
}

/// The symbol of a mapping entry, with its value's entries or items below it.
fn entry_symbol(entry: &wb_syntax::Entry, budget: &mut Budget) -> Symbol {
    Symbol {
        name: entry.key.to_string(),
        detail: detail_of(&entry.value),
        kind: kind_of(&entry.value),
        range: entry.range(),
        selection: entry.key_range,
        children: children(&entry.value, budget),
    }
}

fn children(node: &Node, budget: &mut Budget) -> Vec<Symbol> {
    let mut symbols = Vec::new();
    let (count, ranges): (usize, Vec<TextRange>) = match &node.value {
        Value::Mapping(mapping) => {
            for entry in &mapping.entries {
                if symbols.len() == MAX_OUTLINE_CHILDREN || !budget.take() {
                    break;
                }
                symbols.push(entry_symbol(entry, budget));
            }
            let rest = &mapping.entries[symbols.len()..];
            (rest.len(), rest.first().into_iter().chain(rest.last()).map(|entry| entry.range()).collect())
        }
        Value::Sequence(items) => {
            for (index, item) in items.iter().enumerate() {
                if symbols.len() == MAX_OUTLINE_CHILDREN || !budget.take() {
                    break;
                }
                // An item is named after its `name` or `provider`, else its value, else its index.
                let label = item
                    .as_mapping()
                    .and_then(|m| m.get("name").or_else(|| m.get("provider")))
                    .and_then(Node::as_str)
                    .map(str::to_owned)
                    .or_else(|| item.as_str().map(shorten))
                    .unwrap_or_else(|| format!("[{index}]"));
                let children = if item.as_mapping().is_some() { children(item, budget) } else { Vec::new() };
                symbols.push(Symbol {
                    name: label,
                    detail: None,
                    kind: kind_of(item),
                    range: item.range,
                    selection: item.range,
                    children,
                });
            }
            let rest = &items[symbols.len()..];
            (rest.len(), rest.first().into_iter().chain(rest.last()).map(|item| item.range).collect())
        }
        _ => return symbols,
    };
    // What the budget left out: one symbol over the rest of the list.
    if let (Some(first), Some(last)) = (ranges.first(), ranges.last()) {
        symbols.push(Symbol {
            name: format!("… and {count} more"),
            detail: None,
            kind: SymbolKind::Null,
            range: TextRange::new(first.start, last.end.max(first.end)),
            selection: *first,
            children: Vec::new(),
        });
    }
    symbols
}

/// A value as a symbol's name, at most 60 characters.
fn shorten(value: &str) -> String {
    match value.char_indices().nth(60) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_owned(),
    }
}

/// The outline of a manifest: every entry and item, at most [`MAX_OUTLINE_CHILDREN`] of one list and
/// [`MAX_OUTLINE_SYMBOLS`] in all (each list cut short ends with one "… and N more" symbol).
pub fn symbols(root: &Node) -> Vec<Symbol> {
    children(root, &mut Budget { left: MAX_OUTLINE_SYMBOLS })
}

/// A foldable region (the server turns it into lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fold {
    pub range: TextRange,
}

/// Every mapping or sequence value that spans several lines, from its key's line to its last line, in document
/// order; the first [`MAX_FOLDS`] of them.
pub fn folding_ranges(text: &str, root: &Node) -> Vec<Fold> {
    let mut folds = Vec::new();
    let is_collection = |node: &Node| matches!(node.value, Value::Mapping(_) | Value::Sequence(_));
    // Depth first in document order (children pushed last to first), so a fold comes before those inside it.
    let mut stack: Vec<(&Node, usize)> = vec![(root, root.range.start)];
    while let Some((node, start)) = stack.pop() {
        if folds.len() == MAX_FOLDS {
            break;
        }
        let spans_lines = text.get(start..node.range.end).is_some_and(|t| t.contains('\n'));
        if !spans_lines {
            // Nothing inside a one-line value spans lines either.
            continue;
        }
        if !std::ptr::eq(node, root) {
            folds.push(Fold { range: TextRange::new(start, node.range.end) });
        }
        match &node.value {
            Value::Mapping(mapping) => stack.extend(
                mapping.entries.iter().rev().filter(|e| is_collection(&e.value)).map(|e| (&e.value, e.key_range.start)),
            ),
            Value::Sequence(items) => {
                stack.extend(items.iter().rev().filter(|item| is_collection(item)).map(|item| (item, item.range.start)))
            }
            _ => {}
        }
    }
    folds.sort_by_key(|fold| fold.range.start);
    folds
}
