//! The string fields of the JSON files checked with positions beside manifests (an outbox declaration, a trial
//! task): one rule for a missing, empty, overlong or mistyped value, and one wording for each.

use std::path::Path;

use wb_syntax::{Mapping, TextRange};

use crate::diagnostic::{Code, Diagnostic};

/// How a string field is judged.
pub(crate) struct StringRule<'a> {
    /// The field's name in messages (`Declared artifact path`, `Trial task title`).
    pub label: &'a str,
    pub required: bool,
    /// At most this many characters.
    pub max_chars: Option<usize>,
    /// A value of white space only is empty.
    pub blank_is_empty: bool,
}

/// The value of `key` in `mapping` when it is an acceptable string; else its problem is added to `diagnostics`
/// (a missing required field at `anchor`).
pub(crate) fn string_field(
    diagnostics: &mut Vec<Diagnostic>,
    path: &Path,
    mapping: &Mapping,
    key: &str,
    rule: &StringRule<'_>,
    anchor: TextRange,
) -> Option<String> {
    let label = rule.label;
    let mut report = |code, range, message| diagnostics.push(Diagnostic::new(code, path, range, message));
    let Some(entry) = mapping.entry(key) else {
        if rule.required {
            report(Code::MissingField, anchor, format!("{label} is required"));
        }
        return None;
    };
    let Some(text) = entry.value.as_str() else {
        let range = if entry.value.range.is_empty() { entry.key_range } else { entry.value.range };
        report(Code::InvalidType, range, format!("{label} must be a string"));
        return None;
    };
    let empty = if rule.blank_is_empty { text.trim().is_empty() } else { text.is_empty() };
    if empty {
        report(Code::EmptyValue, entry.value.range, format!("{label} must be a non-empty string"));
        return None;
    }
    if let Some(max) = rule.max_chars.filter(|max| text.chars().count() > *max) {
        report(Code::InvalidValue, entry.value.range, format!("{label} must be at most {max} characters"));
        return None;
    }
    Some(text.to_owned())
}
