//! Parsing a new version of a text from the parse of the old one.
//!
//! An editor sends one small change at a time, and a manifest is a block mapping whose keys sit at column 0.
//! When a change stays inside one top-level entry (from its key to the next top-level key), only that entry's
//! text is parsed again: standalone, it is a one-entry document that the scanner reads exactly as it reads
//! that part of the whole text, since a key at column 0 starts with no scanner state carried over (block
//! context, indentation 0, no open flow collection or quote). The entries after it keep their trees with
//! their ranges shifted by the change in length.
//!
//! Whatever could make the parts depend on each other falls back to a full parse: a previous parse with
//! problems, anchors and aliases (`&`, `*`) or merge keys (`<<`) in the old or new entry, directives, document
//! markers, a key not at the start of its line, a new key equal to another top-level key, or an entry whose
//! new text does not parse cleanly on its own. The result is always the tree [`parse_str`] builds; the tests
//! compare the two over random edits of every manifest in the repository.

use std::sync::Arc;

use super::tree::{Entry, Node, Parse, Style, Value};
use super::{NODE_BUDGET, parse_shared, parse_str};
use crate::TextRange;

/// Parses `text`, a new version of `previous.text`, reusing `previous`'s tree for the top-level entries the
/// change did not touch. Equal to `parse_str(text)`.
pub fn reparse(previous: Parse, text: &str) -> Parse {
    reparse_shared(previous, Arc::from(text))
}

/// [`reparse`] of a shared text: the parse holds the same text, not a copy.
pub fn reparse_shared(previous: Parse, text: Arc<str>) -> Parse {
    match splice(previous, &text) {
        Some(mut spliced) => {
            spliced.text = text;
            spliced
        }
        None => parse_shared(text),
    }
}

/// The tree of `text` built from `previous` with one top-level entry parsed again (the text is the caller's to
/// set), or `None` when the change needs a full parse.
fn splice(mut previous: Parse, text: &str) -> Option<Parse> {
    if !previous.errors.is_empty() {
        return None;
    }
    let old_text = Arc::clone(&previous.text);
    let old = &*old_text;
    if old == text {
        return Some(previous);
    }
    let (prefix, suffix) = common_ends(old.as_bytes(), text.as_bytes());
    let old_end = old.len() - suffix;
    let delta = text.len() as isize - old.len() as isize;

    let root = previous.root.as_mut()?;
    if root.style != Style::Block {
        return None;
    }
    let Value::Mapping(mapping) = &mut root.value else { return None };
    let entries = &mut mapping.entries;
    let first = entries.first()?.key_range.start;
    // Keys in text order, each at the start of a line (merged entries, explicit `? ` keys and a mapping that
    // starts on the `---` line are not), and no directive before them (a `%TAG` changes how tags resolve).
    let ordered = entries.windows(2).all(|pair| pair[0].key_range.start < pair[1].key_range.start);
    if !ordered || !entries.iter().all(|entry| at_line_start(old, entry.key_range.start)) {
        return None;
    }
    if old[..first].split(['\n', '\r']).any(|line| line.starts_with('%')) {
        return None;
    }

    // The entry the change starts in; the change must end before the next top-level key.
    let index = entries.partition_point(|entry| entry.key_range.start <= prefix).checked_sub(1)?;
    let start = entries[index].key_range.start;
    let old_next = entries.get(index + 1).map_or(old.len(), |entry| entry.key_range.start);
    if old_end > old_next {
        return None;
    }
    let new_next = old_next.checked_add_signed(delta)?;
    let segment = text.get(start..new_next)?;
    if !self_contained(&old[start..old_next]) || !self_contained(segment) {
        return None;
    }
    // The next key must still start a line of its own (an entry removed whole leaves the line start before it).
    if new_next < text.len() && !segment.is_empty() && !segment.ends_with('\n') {
        return None;
    }

    let parsed = parse_str(segment);
    if !parsed.errors.is_empty() {
        return None;
    }
    let mut replacement = match parsed.root {
        // An entry removed whole. (A blank or comment-only remainder could join the entry before: a block
        // scalar's range runs over the blank lines after it.)
        None if segment.is_empty() => Vec::new(),
        None => return None,
        Some(Node { value: Value::Mapping(mapping), style: Style::Block, .. }) => mapping.entries,
        Some(_) => return None,
    };
    if replacement.first().is_some_and(|entry| entry.key_range.start != 0) {
        return None;
    }
    // A key the new text introduces must not repeat another top-level key (the full parse would report it).
    let others = entries.iter().enumerate().filter(|(at, _)| *at != index).map(|(_, entry)| entry.key.as_str());
    let others: Vec<&str> = others.collect();
    if replacement.iter().any(|entry| others.contains(&entry.key.as_str())) {
        return None;
    }
    if replacement.is_empty() && entries.len() == 1 {
        return None;
    }
    // The node budget holds for the whole text: the segment's own mapping is not one of the document's nodes.
    let nodes = previous.nodes.saturating_sub(1 + entries[index].value.count()) + parsed.nodes.saturating_sub(1);
    if nodes > NODE_BUDGET {
        return None;
    }
    // The mapping starts at its first key; when that may change, nothing (a tag, an anchor) may stand before it.
    if index == 0 && root.range.start != first {
        return None;
    }

    for entry in &mut replacement {
        shift_entry(entry, 0, start as isize);
    }
    // Only what lies after the change moves: a value copied from an anchor before it (an alias) keeps the
    // anchor's ranges.
    if delta != 0 {
        for entry in &mut entries[index + 1..] {
            shift_entry(entry, old_next, delta);
        }
    }
    entries.splice(index..=index, replacement);
    entries.shrink_to_fit();
    let start = if index == 0 {
        entries.first().map_or(root.range.start, |entry| entry.key_range.start)
    } else {
        root.range.start
    };
    let end = entries.iter().map(|entry| entry.range().end).max().unwrap_or(start);
    root.range = TextRange::new(start, end);
    previous.nodes = nodes;
    Some(previous)
}

/// The lengths of the longest common prefix and, in what remains, the longest common suffix.
fn common_ends(old: &[u8], new: &[u8]) -> (usize, usize) {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let room = old.len().min(new.len()) - prefix;
    let suffix = old.iter().rev().zip(new.iter().rev()).take(room).take_while(|(a, b)| a == b).count();
    (prefix, suffix)
}

fn at_line_start(text: &str, offset: usize) -> bool {
    offset == 0 || text.as_bytes().get(offset - 1) == Some(&b'\n')
}

/// True when a top-level entry's text parses the same on its own as inside the document: no anchor, alias or
/// merge key ties it to other entries, and no directive or document marker starts a line.
fn self_contained(segment: &str) -> bool {
    if segment.contains(['&', '*']) || segment.contains("<<") {
        return false;
    }
    !segment.split(['\n', '\r']).any(|line| line.starts_with('%') || line.starts_with("---") || line.starts_with("..."))
}

fn shift(range: &mut TextRange, from: usize, by: isize) {
    if range.start >= from {
        // A range at or after `from` lies after the change, so the shifted values stay in bounds.
        range.start = range.start.saturating_add_signed(by);
        range.end = range.end.saturating_add_signed(by);
    }
}

fn shift_entry(entry: &mut Entry, from: usize, by: isize) {
    shift(&mut entry.key_range, from, by);
    shift_node(&mut entry.value, from, by);
}

fn shift_node(node: &mut Node, from: usize, by: isize) {
    shift(&mut node.range, from, by);
    match &mut node.value {
        Value::Sequence(items) => items.iter_mut().for_each(|item| shift_node(item, from, by)),
        Value::Mapping(mapping) => mapping.entries.iter_mut().for_each(|entry| shift_entry(entry, from, by)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::yaml::corpus::{corpus_cached, edit, large, random_edit};

    fn check(old: &str, new: &str) -> bool {
        check_from(parse_str(old), new, &parse_str(new))
    }

    /// Reparses `new` from `previous` and compares with `expected` (its full parse); true when it spliced.
    fn check_from(previous: Parse, new: &str, expected: &Parse) -> bool {
        let old = previous.text.clone();
        let spliced = splice(previous, new);
        let used = spliced.is_some();
        let actual = match spliced {
            Some(mut spliced) => {
                spliced.text = Arc::from(new);
                spliced
            }
            None => parse_str(new),
        };
        assert_eq!(actual.text, expected.text);
        assert_eq!(actual.root, expected.root, "tree after editing {old:?} into {new:?}");
        assert_eq!(actual.errors, expected.errors, "errors after editing {old:?} into {new:?}");
        assert_eq!(actual.nodes, expected.nodes, "nodes after editing {old:?} into {new:?}");
        used
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

        /// A random edit of a manifest: the reparse equals the full parse.
        #[test]
        fn a_reparse_equals_the_full_parse((old, new) in random_edit("[a-zA-Z0-9_ ]{0,6}")) {
            check(&old, &new);
        }
    }

    /// Every single-character change at every position of small manifests, in both directions (a typed and a
    /// deleted character): the edits an editor sends most.
    #[test]
    fn every_typed_or_deleted_character_reparses_like_a_full_parse() {
        let mut spliced = 0;
        let mut total = 0;
        for old in corpus_cached().iter().filter(|text| text.len() < 600) {
            let old_parse = parse_str(old);
            for at in (0..=old.len()).filter(|at| old.is_char_boundary(*at)) {
                for insert in ["x", " ", "\n", ":", "-", "#"] {
                    let new = edit(old, at, 0, insert);
                    let new_parse = parse_str(&new);
                    total += 2;
                    spliced += usize::from(check_from(old_parse.clone(), &new, &new_parse));
                    spliced += usize::from(check_from(new_parse, old, &old_parse));
                }
            }
        }
        // The point of the splice: most edits of a clean manifest do not parse the whole text.
        assert!(spliced * 2 > total, "{spliced} of {total} edits spliced");
    }

    #[test]
    fn an_edit_inside_one_entry_reuses_the_rest() {
        let old = large();
        let new = old.replace("A large manifest.", "A Large manifest, edited.");
        assert!(check(&old, &new), "a description edit splices");
        let new = old.replace("  VAR_7:\n", "  VAR_7:\n    default: x\n");
        assert!(check(&old, &new), "an edit inside env splices");
        let new = old.replace("name: large\n", "name: large\nname: again\n");
        assert!(!check(&old, &new), "a duplicate top-level key parses in full");
        let new = old.replace("name: large\n", "name: &a large\n");
        assert!(!check(&old, &new), "an anchor parses in full");
        let new = old.replace("description: A large manifest.\n", "");
        assert!(check(&old, &new), "a removed entry splices");
        let new = old.replace("description: A large manifest.", "description: A large manifest.\n  broken: [");
        assert!(!check(&old, &new), "a syntax error parses in full");
    }

    /// The node budget holds for the whole text, whichever entry grows: an edit that takes a clean document
    /// over it parses in full (and stops there, with the error), one that stays under it splices.
    #[test]
    fn an_edit_past_the_node_budget_parses_in_full() {
        let items = |count: usize| format!("spec: 1\na: [{}]\nb: [{}]\n", vec!["x"; count].join(", "), "y");
        // The root, three keys, `1`, two sequences and the one `y`: 8 nodes besides `a`'s items.
        let within = items(NODE_BUDGET - 8);
        let parsed = parse_str(&within);
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors.first());
        assert_eq!(parsed.nodes, NODE_BUDGET);
        let over = within.replace("b: [y]", "b: [y, z]");
        assert!(!check(&within, &over), "one node more parses in full");
        let full = parse_str(&over);
        assert_eq!(full.errors.len(), 1);
        assert_eq!(full.errors[0].kind, crate::SyntaxErrorKind::TooManyNodes);
        assert_eq!(&over[full.errors[0].range.as_range()], "z", "the error is at the first node past the budget");
        let same = within.replace("b: [y]", "b: [w]");
        assert!(check(&within, &same), "an edit that keeps the count splices");
    }
}
