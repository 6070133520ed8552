//! Formatting a manifest: comment-preserving, idempotent, with the smallest edits, and never a change of
//! meaning.
//!
//! The layout pass (`layout.rs`) re-indents block structure to two spaces a level, puts one space after
//! `key:` and `-`, drops quotes a plain scalar does not need, trims trailing spaces and keeps at most one
//! blank line. The optional field-order pass (`order.rs`) first puts each known mapping's keys in the
//! standard's order, moving each entry with its comments. Whatever the passes produce is parsed again and
//! compared with the original tree value by value: a result that reads differently is never offered, and
//! the document is left as it is ([`FormatError::WouldChangeMeaning`]). A document with syntax errors is not
//! formatted.

mod layout;
mod order;

use wb_syntax::{Node, TextRange, Value};

/// What the formatter may change besides the layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FormatOptions {
    /// Put the keys of each mapping the standard describes in the standard's order.
    pub field_order: bool,
}

/// One replacement in the original text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatEdit {
    pub range: TextRange,
    pub new_text: String,
}

/// Why a document was left as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// The document does not parse; the first problem's range.
    Syntax(TextRange),
    /// The formatter's result would read as a different document (a construct it does not lay out); the
    /// first place the two differ.
    WouldChangeMeaning(String),
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormatError::Syntax(_) => f.write_str("the manifest has syntax errors; fix them before formatting"),
            FormatError::WouldChangeMeaning(at) => {
                write!(f, "formatting would change what the manifest means (at {at}); it was left as written")
            }
        }
    }
}

impl std::error::Error for FormatError {}

/// The formatted text. `Ok` holds the input unchanged when it is already formatted.
pub fn format(text: &str, options: FormatOptions) -> Result<String, FormatError> {
    let original = wb_syntax::parse_str(text);
    if let Some(error) = original.errors.first() {
        return Err(FormatError::Syntax(error.range));
    }
    let mut formatted = one_pass(&original, options)?;
    // A pass can leave work for the next (a blank line that only becomes one at the end); the passes run until
    // nothing changes, so formatting a formatted text changes nothing. Real manifests settle in one.
    for _ in 0..MAX_PASSES {
        let parse = wb_syntax::parse_str(&formatted);
        let again = one_pass(&parse, options)?;
        if again == formatted {
            break;
        }
        formatted = again;
    }
    Ok(formatted)
}

/// How many passes after the first may run before the result is taken as it is.
const MAX_PASSES: usize = 3;

/// The field order (when asked) then the layout, each checked to mean what its input meant.
fn one_pass(current: &wb_syntax::Parse, options: FormatOptions) -> Result<String, FormatError> {
    let reordered;
    let current = if options.field_order
        && let Some(text) = order::reorder(current)
    {
        let parse = wb_syntax::parse_str(&text);
        same_meaning(&current.root, &parse.root, &parse.errors, Compare::AnyOrder)?;
        reordered = parse;
        &reordered
    } else {
        current
    };
    let formatted = layout::layout(current);
    let parse = wb_syntax::parse_str(&formatted);
    same_meaning(&current.root, &parse.root, &parse.errors, Compare::InOrder)?;
    Ok(formatted)
}

/// The edits that turn `text` into its formatted form: one per changed line, each cut to the part of the line
/// that changed, so cursors and marks elsewhere stay put.
pub fn format_edits(text: &str, options: FormatOptions) -> Result<Vec<FormatEdit>, FormatError> {
    let formatted = format(text, options)?;
    Ok(minimal_edits(text, &formatted))
}

/// The edits of [`format_edits`] that touch `range` (range formatting: the lines it covers).
pub fn format_range_edits(
    text: &str,
    range: TextRange,
    options: FormatOptions,
) -> Result<Vec<FormatEdit>, FormatError> {
    let line_start = text[..range.start.min(text.len())].rfind(['\n', '\r']).map_or(0, |at| at + 1);
    let line_end = text[range.end.min(text.len())..].find(['\n', '\r']).map_or(text.len(), |at| range.end + at);
    Ok(format_edits(text, options)?
        .into_iter()
        .filter(|edit| edit.range.end >= line_start && edit.range.start <= line_end)
        .collect())
}

fn minimal_edits(before: &str, after: &str) -> Vec<FormatEdit> {
    if before == after {
        return Vec::new();
    }
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let mut edits = Vec::new();
    let mut offset = 0;
    let (mut i, mut j) = (0, 0);
    while i < old.len() {
        let line = old[i];
        match new.get(j) {
            Some(&target) if target == line => j += 1,
            // A blank line the formatter dropped: the only way lines disappear without reordering.
            _ if line.trim().is_empty() && new.get(j).is_none_or(|target| !target.trim().is_empty()) => {
                edits.push(FormatEdit { range: TextRange::new(offset, offset + line.len()), new_text: String::new() });
            }
            Some(&target) => {
                edits.push(changed_part(offset, line, target));
                j += 1;
            }
            None => {
                edits.push(FormatEdit { range: TextRange::new(offset, offset + line.len()), new_text: String::new() })
            }
        }
        offset += line.len();
        i += 1;
    }
    if j < new.len() {
        edits.push(FormatEdit { range: TextRange::empty(before.len()), new_text: new[j..].concat() });
    }
    if apply(before, &edits) == after {
        edits
    } else {
        // Reordered entries: one edit over the span that differs.
        vec![spanning_edit(before, after)]
    }
}

/// The replacement of one line by another, cut to the bytes that differ.
fn changed_part(offset: usize, line: &str, target: &str) -> FormatEdit {
    let prefix = common_prefix(line, target);
    let suffix = common_suffix(&line[prefix..], &target[prefix..]);
    FormatEdit {
        range: TextRange::new(offset + prefix, offset + line.len() - suffix),
        new_text: target[prefix..target.len() - suffix].to_owned(),
    }
}

fn spanning_edit(before: &str, after: &str) -> FormatEdit {
    let prefix = common_prefix(before, after);
    let suffix = common_suffix(&before[prefix..], &after[prefix..]);
    FormatEdit {
        range: TextRange::new(prefix, before.len() - suffix),
        new_text: after[prefix..after.len() - suffix].to_owned(),
    }
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices().zip(b.chars()).find(|((_, x), y)| x != y).map_or(a.len().min(b.len()), |((at, _), _)| at)
}

fn common_suffix(a: &str, b: &str) -> usize {
    let mut length = 0;
    for (x, y) in a.chars().rev().zip(b.chars().rev()) {
        if x != y {
            break;
        }
        length += x.len_utf8();
    }
    length
}

/// `text` with non-overlapping edits applied.
pub fn apply(text: &str, edits: &[FormatEdit]) -> String {
    let mut sorted: Vec<&FormatEdit> = edits.iter().collect();
    sorted.sort_by_key(|edit| (edit.range.start, edit.range.end));
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for edit in sorted {
        out.push_str(&text[cursor..edit.range.start]);
        out.push_str(&edit.new_text);
        cursor = edit.range.end;
    }
    out.push_str(&text[cursor..]);
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    InOrder,
    /// Mappings may list their keys in another order.
    AnyOrder,
}

fn same_meaning(
    before: &Option<Node>,
    after: &Option<Node>,
    errors: &[wb_syntax::SyntaxError],
    compare: Compare,
) -> Result<(), FormatError> {
    if let Some(error) = errors.first() {
        return Err(FormatError::WouldChangeMeaning(error.message.clone()));
    }
    match (before, after) {
        (None, None) => Ok(()),
        (Some(before), Some(after)) => same_node(before, after, compare, "the document"),
        _ => Err(FormatError::WouldChangeMeaning("the document".to_owned())),
    }
}

fn same_node(before: &Node, after: &Node, compare: Compare, at: &str) -> Result<(), FormatError> {
    let differ = || Err(FormatError::WouldChangeMeaning(at.to_owned()));
    match (&before.value, &after.value) {
        (Value::Number(a), Value::Number(b)) if a.is_nan() && b.is_nan() => Ok(()),
        (Value::Sequence(a), Value::Sequence(b)) => {
            if a.len() != b.len() {
                return differ();
            }
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                same_node(x, y, compare, &format!("{at}[{index}]"))?;
            }
            Ok(())
        }
        (Value::Mapping(a), Value::Mapping(b)) => {
            if a.entries.len() != b.entries.len() {
                return differ();
            }
            for (index, entry) in a.entries.iter().enumerate() {
                let other = match compare {
                    Compare::InOrder => b.entries.get(index).filter(|other| other.key == entry.key),
                    Compare::AnyOrder => b.entry(&entry.key),
                };
                let Some(other) = other else { return differ() };
                same_node(&entry.value, &other.value, compare, &format!("{at}.{}", entry.key))?;
            }
            Ok(())
        }
        (a, b) if a == b => Ok(()),
        _ => differ(),
    }
}

#[cfg(test)]
mod tests;
