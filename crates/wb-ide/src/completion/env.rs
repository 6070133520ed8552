//! Environment variable completion: declared names inside `${` in an MCP header, and names the headers
//! reference but `env` does not declare yet, as `env` keys.

use wb_manifest::env_refs::env_refs;
use wb_syntax::{Node, TextRange};

use super::UNIT;
use super::context::shape;
use super::{CompletionItem, CompletionKind, value_item};

/// Environment names declared in `env` (from the tree, else from the text).
pub(super) fn declared_env(root: Option<&Node>, text: &str) -> Vec<String> {
    if let Some(env) = root.and_then(Node::as_mapping).and_then(|m| m.get("env")).and_then(Node::as_mapping) {
        return env.entries.iter().map(|e| e.key.to_string()).collect();
    }
    let mut names = Vec::new();
    let mut inside = false;
    let mut child_indent = None;
    for line in text.lines() {
        let Some(shape) = shape(line) else { continue };
        if shape.content == 0 {
            inside = shape.key == Some("env");
            child_indent = None;
            continue;
        }
        if inside {
            let indent = *child_indent.get_or_insert(shape.content);
            if shape.content == indent
                && let Some(key) = shape.key
            {
                names.push(key.to_owned());
            }
        }
    }
    names
}

/// The names the text references as `${NAME}`, each once, in order of first use.
pub(super) fn referenced_env(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for reference in env_refs(text) {
        if !names.iter().any(|n| n == reference.name) {
            names.push(reference.name.to_owned());
        }
    }
    names
}

/// `env` keys: the names MCP headers reference but `env` does not declare yet.
pub(super) fn undeclared_items(
    root: Option<&Node>,
    text: &str,
    name_only: bool,
    replace: TextRange,
) -> Vec<CompletionItem> {
    let declared: Vec<String> = declared_env(root, text);
    let names: Vec<String> = referenced_env(text).into_iter().filter(|n| !declared.contains(n)).collect();
    names
        .into_iter()
        .map(|name| CompletionItem {
            label: name.clone(),
            kind: CompletionKind::Variable,
            detail: Some("referenced in an MCP header".into()),
            documentation: None,
            insert_text: if name_only { name.clone() } else { format!("{name}:\n{UNIT}required: ${{1|true,false|}}") },
            snippet: !name_only,
            replace,
            sort_text: format!("0_{name}"),
            deprecated: false,
        })
        .collect()
}

/// Inside an MCP header value: after an unclosed `${`, the declared names (each closing the brace).
pub(super) fn reference_items(prefix: &str, replace: TextRange, root: Option<&Node>) -> Vec<CompletionItem> {
    let Some(open) = prefix.rfind("${").filter(|at| !prefix[*at..].contains('}')) else { return Vec::new() };
    let name_start = replace.start + open + 2;
    let typed_end = replace.start + prefix.len();
    let replace = TextRange::new(name_start, typed_end.max(name_start));
    declared_env(root, "")
        .into_iter()
        .enumerate()
        .map(|(rank, name)| {
            let mut item = value_item(&name, CompletionKind::Variable, Some("declared in env".into()), replace, rank);
            item.insert_text = format!("{name}}}");
            item
        })
        .collect()
}
