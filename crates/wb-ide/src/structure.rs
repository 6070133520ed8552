//! A manifest's structure for editors: selection ranges (expand and shrink the selection along the tree),
//! document highlights (every occurrence of the environment variable under the cursor) and semantic tokens
//! (keys, scalars by their resolved type, `${NAME}` references, `env` declarations).

use wb_manifest::env_refs::scalar_refs;
use wb_syntax::{Node, TextRange, Value};

use crate::navigation::env_occurrences;

/// The ranges that enclose `offset`, innermost first, out to the whole document: a `${NAME}`'s name, the
/// scalar or key, the entry, the mapping or sequence, and so on up the tree.
pub fn selection_ranges(text: &str, root: &Node, offset: usize) -> Vec<TextRange> {
    let offset = crate::context::snap(text, offset);
    let mut chain = vec![TextRange::new(0, text.len())];
    let mut node = root;
    loop {
        chain.push(node.range);
        match &node.value {
            Value::Mapping(mapping) => {
                let Some(entry) = mapping.entries.iter().find(|entry| entry.range().contains_inclusive(offset)) else {
                    break;
                };
                chain.push(entry.range());
                if entry.key_range.contains_inclusive(offset) {
                    chain.push(entry.key_range);
                    break;
                }
                if !entry.value.range.contains_inclusive(offset) {
                    break;
                }
                node = &entry.value;
            }
            Value::Sequence(items) => match items.iter().find(|item| item.range.contains_inclusive(offset)) {
                Some(item) => node = item,
                None => break,
            },
            Value::String(value) => {
                let name = scalar_refs(text, value, node.range)
                    .into_iter()
                    .filter_map(|reference| Some((reference.range?, reference.name_range()?)))
                    .find(|(whole, _)| whole.contains_inclusive(offset));
                if let Some((whole, name)) = name {
                    chain.push(whole);
                    if name.contains_inclusive(offset) {
                        chain.push(name);
                    }
                }
                break;
            }
            _ => break,
        }
    }
    chain.reverse();
    // Innermost first, each strictly inside the next (the protocol wants parents that contain their child).
    let mut ranges: Vec<TextRange> = Vec::new();
    for range in chain {
        if ranges.last().is_none_or(|last| range != *last && range.start <= last.start && last.end <= range.end) {
            ranges.push(range);
        }
    }
    ranges
}

/// How a highlighted occurrence is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HighlightKind {
    /// Where the variable is declared (its `env` key).
    Write,
    /// Where it is used (`${NAME}`).
    Read,
}

/// Every occurrence of the environment variable under the cursor (on its `env` key or a `${NAME}`): its
/// declaration, then its references. Empty elsewhere.
pub fn document_highlights(text: &str, root: &Node, offset: usize) -> Vec<(TextRange, HighlightKind)> {
    let offset = crate::context::snap(text, offset);
    let Some((declaration, references)) = env_occurrences(text, root, offset) else { return Vec::new() };
    declaration
        .into_iter()
        .map(|range| (range, HighlightKind::Write))
        .chain(references.into_iter().map(|range| (range, HighlightKind::Read)))
        .collect()
}

/// The semantic token types, in the order of the legend the server announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenType {
    /// A mapping key.
    Property,
    String,
    Number,
    /// `true`, `false`, `null`.
    Keyword,
    /// An environment variable: an `env` key, or the name in `${NAME}`.
    Variable,
}

impl TokenType {
    /// Every type, in legend order.
    pub const ALL: [TokenType; 5] =
        [TokenType::Property, TokenType::String, TokenType::Number, TokenType::Keyword, TokenType::Variable];

    /// The index in the legend.
    pub fn index(self) -> u32 {
        match self {
            TokenType::Property => 0,
            TokenType::String => 1,
            TokenType::Number => 2,
            TokenType::Keyword => 3,
            TokenType::Variable => 4,
        }
    }
}

/// One semantic token: a range (it may span lines: a block scalar), its type, and whether it declares what it
/// names (the `declaration` modifier: an `env` key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub range: TextRange,
    pub kind: TokenType,
    pub declaration: bool,
}

/// At most this many semantic tokens for one document (the rest of a longer one is left uncoloured). A
/// 10,000-line manifest has about 25,000.
pub const MAX_TOKENS: usize = 50_000;

/// The semantic tokens of a manifest, in document order, never overlapping; the first [`MAX_TOKENS`].
pub fn semantic_tokens(text: &str, root: &Node) -> Vec<Token> {
    let mut tokens = Vec::new();
    // The walk goes in document order, so stopping it once the budget is reached keeps the first tokens
    // (with room for the empty and overlapping ones dropped below).
    walk(text, root, true, false, &mut tokens);
    tokens.retain(|token| !token.range.is_empty());
    tokens.sort_by_key(|token| token.range.start);
    // A malformed tree could nest ranges: drop whatever overlaps what came before.
    let mut end = 0;
    tokens.retain(|token| {
        let keep = token.range.start >= end;
        if keep {
            end = token.range.end;
        }
        keep
    });
    tokens.truncate(MAX_TOKENS);
    tokens
}

/// Where the walk stops: past the budget, with room for the tokens dropped as empty or overlapping.
const WALK_LIMIT: usize = 2 * MAX_TOKENS;

/// Tokens of `node` and below. `env`: the node is the top-level `env` mapping (its keys declare variables).
fn walk(text: &str, node: &Node, top: bool, env: bool, tokens: &mut Vec<Token>) {
    if tokens.len() > WALK_LIMIT {
        return;
    }
    match &node.value {
        Value::Mapping(mapping) => {
            for entry in &mapping.entries {
                if tokens.len() > WALK_LIMIT {
                    return;
                }
                let kind = if env { TokenType::Variable } else { TokenType::Property };
                tokens.push(Token { range: entry.key_range, kind, declaration: env });
                walk(text, &entry.value, false, top && entry.key == "env", tokens);
            }
        }
        Value::Sequence(items) => {
            for item in items {
                if tokens.len() > WALK_LIMIT {
                    return;
                }
                walk(text, item, false, false, tokens);
            }
        }
        Value::String(value) => string_tokens(text, value, node.range, tokens),
        Value::Number(_) => tokens.push(Token { range: node.range, kind: TokenType::Number, declaration: false }),
        Value::Bool(_) => tokens.push(Token { range: node.range, kind: TokenType::Keyword, declaration: false }),
        Value::Null => {
            // An empty value (`key:`) has no text; a written `null` or `~` does.
            if text.get(node.range.as_range()).is_some_and(|t| !t.trim().is_empty()) {
                tokens.push(Token { range: node.range, kind: TokenType::Keyword, declaration: false });
            }
        }
    }
}

/// A string scalar: string pieces around each `${NAME}` it holds, whose name is a variable.
fn string_tokens(text: &str, value: &str, range: TextRange, tokens: &mut Vec<Token>) {
    let mut start = range.start;
    for reference in scalar_refs(text, value, range) {
        let Some(name) = reference.name_range() else { continue };
        if name.start < start || name.end > range.end {
            continue;
        }
        tokens.push(Token { range: TextRange::new(start, name.start), kind: TokenType::String, declaration: false });
        tokens.push(Token { range: name, kind: TokenType::Variable, declaration: false });
        start = name.end;
    }
    tokens.push(Token { range: TextRange::new(start, range.end), kind: TokenType::String, declaration: false });
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "spec: 1\nname: demo\nenv:\n  API_TOKEN:\n    required: true\nmcps:\n  - name: api\n    url: https://example.com\n    headers:\n      Authorization: Bearer ${API_TOKEN}\ntimeout: 30\nprivate: false\n";

    fn root(text: &str) -> Node {
        wb_syntax::parse_str(text).root.unwrap_or_else(|| panic!("no root"))
    }

    fn at(text: &str, needle: &str) -> usize {
        text.find(needle).unwrap_or_else(|| panic!("{needle} not in the text"))
    }

    fn shown<'t>(text: &'t str, ranges: &[TextRange]) -> Vec<&'t str> {
        ranges.iter().map(|range| &text[range.as_range()]).collect()
    }

    #[test]
    fn the_selection_grows_from_a_reference_name_to_the_document() {
        let tree = root(MANIFEST);
        let ranges = selection_ranges(MANIFEST, &tree, at(MANIFEST, "API_TOKEN}") + 2);
        let texts = shown(MANIFEST, &ranges);
        assert_eq!(texts[..3], ["API_TOKEN", "${API_TOKEN}", "Bearer ${API_TOKEN}"]);
        assert_eq!(texts[3], "Authorization: Bearer ${API_TOKEN}");
        assert_eq!(texts.last().copied(), Some(MANIFEST));
        for pair in ranges.windows(2) {
            assert!(pair[1].start <= pair[0].start && pair[0].end <= pair[1].end && pair[0] != pair[1], "{pair:?}");
        }
        // On a key: the key, its entry, then the mapping.
        let ranges = selection_ranges(MANIFEST, &tree, at(MANIFEST, "timeout") + 1);
        assert_eq!(shown(MANIFEST, &ranges)[..2], ["timeout", "timeout: 30"]);
    }

    #[test]
    fn an_env_variable_is_highlighted_where_declared_and_used() {
        let tree = root(MANIFEST);
        let from_reference = document_highlights(MANIFEST, &tree, at(MANIFEST, "API_TOKEN}"));
        let from_declaration = document_highlights(MANIFEST, &tree, at(MANIFEST, "API_TOKEN:"));
        assert_eq!(from_reference, from_declaration);
        let kinds: Vec<(&str, HighlightKind)> =
            from_reference.iter().map(|(range, kind)| (&MANIFEST[range.as_range()], *kind)).collect();
        assert_eq!(kinds, [("API_TOKEN", HighlightKind::Write), ("API_TOKEN", HighlightKind::Read)]);
        assert_eq!(from_reference[0].0.start, at(MANIFEST, "API_TOKEN:"));
        assert!(document_highlights(MANIFEST, &tree, at(MANIFEST, "timeout")).is_empty());
    }

    #[test]
    fn tokens_type_keys_scalars_and_variables_without_overlap() {
        let tree = root(MANIFEST);
        let tokens = semantic_tokens(MANIFEST, &tree);
        let typed: Vec<(&str, TokenType, bool)> =
            tokens.iter().map(|t| (&MANIFEST[t.range.as_range()], t.kind, t.declaration)).collect();
        assert_eq!(
            typed[..4],
            [
                ("spec", TokenType::Property, false),
                ("1", TokenType::Number, false),
                ("name", TokenType::Property, false),
                ("demo", TokenType::String, false),
            ]
        );
        assert!(typed.contains(&("API_TOKEN", TokenType::Variable, true)), "{typed:?}");
        assert!(typed.contains(&("required", TokenType::Property, false)), "{typed:?}");
        assert!(typed.contains(&("true", TokenType::Keyword, false)), "{typed:?}");
        assert!(typed.contains(&("Bearer ${", TokenType::String, false)), "{typed:?}");
        assert!(typed.contains(&("API_TOKEN", TokenType::Variable, false)), "{typed:?}");
        assert!(typed.contains(&("}", TokenType::String, false)), "{typed:?}");
        assert!(typed.contains(&("false", TokenType::Keyword, false)), "{typed:?}");
        for pair in tokens.windows(2) {
            assert!(pair[0].range.end <= pair[1].range.start, "{pair:?}");
        }
        // A key named env deeper than the top declares nothing.
        let nested = "mcps:\n  - name: x\n    env:\n      KEY: v\n";
        let tokens = semantic_tokens(nested, &root(nested));
        assert!(tokens.iter().all(|t| t.kind != TokenType::Variable), "{tokens:?}");
    }
}
