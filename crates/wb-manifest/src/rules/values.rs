//! Typed readers of manifest values (non-empty strings, records, booleans, string arrays) and unknown keys.

use wb_syntax::{Entry, Mapping, TextRange, Value};

use super::{Rules, Slot, absent_names, closest};
use crate::diagnostic::{Code, Fix};
use crate::fields::{self, Field};
use crate::manifest::Spanned;

impl Rules<'_> {
    pub(super) fn unknown_field(&mut self, entry: &Entry, label: impl std::fmt::Display + Copy, absent: &[&str]) {
        let suggestion = closest(&entry.key, absent);
        let mut fixes: Vec<Fix> = suggestion.map(|name| self.rename_fix(entry.key_range, name)).into_iter().collect();
        fixes.extend(self.remove_entry_fix(entry));
        let diagnostic =
            self.report(Code::UnknownField, entry.key_range, format!("Unknown {label} field: {}", entry.key));
        diagnostic.fixes.extend(fixes);
    }

    pub(super) fn check_keys(
        &mut self,
        mapping: &Mapping,
        fields: &'static [Field],
        label: impl std::fmt::Display + Copy,
    ) {
        let spec = self.spec;
        let known = |key: &str| fields.iter().any(|field| field.name == key && field.specs.includes(spec));
        // Most mappings hold only known keys: the names a rename could suggest are listed only when one is not.
        if mapping.entries.iter().all(|entry| known(&entry.key)) {
            return;
        }
        let allowed = fields::names(fields, spec);
        let absent = absent_names(&allowed, mapping);
        for entry in &mapping.entries {
            if !allowed.contains(&entry.key.as_str()) {
                self.unknown_field(entry, label, &absent);
            }
        }
    }

    /// A required or optional non-empty string, trimmed.
    pub(super) fn text(&mut self, slot: Slot<'_>, label: impl std::fmt::Display + Copy) -> Option<Spanned<String>> {
        match &slot.node.value {
            Value::String(text) if !js_trim(text).is_empty() => {
                Some(Spanned::new(js_trim(text).to_owned(), slot.range()))
            }
            Value::String(_) | Value::Null => {
                self.report(Code::EmptyValue, slot.range(), format!("{label} must be a non-empty string"));
                None
            }
            _ => {
                self.report(Code::InvalidType, slot.range(), format!("{label} must be a non-empty string"));
                None
            }
        }
    }

    pub(super) fn text_field(&mut self, mapping: &Mapping, key: &str, anchor: TextRange) -> Option<Spanned<String>> {
        self.text_in(mapping, key, key, anchor)
    }

    pub(super) fn text_in(
        &mut self,
        mapping: &Mapping,
        key: &str,
        label: impl std::fmt::Display + Copy,
        anchor: TextRange,
    ) -> Option<Spanned<String>> {
        match mapping.entry(key) {
            Some(entry) => self.text(Slot::of_entry(entry), label),
            None => {
                self.report(Code::MissingField, anchor, format!("{label} must be a non-empty string"));
                None
            }
        }
    }

    pub(super) fn record<'n>(&mut self, slot: Slot<'n>, label: impl std::fmt::Display + Copy) -> Option<&'n Mapping> {
        match &slot.node.value {
            Value::Mapping(mapping) => Some(mapping),
            _ => {
                self.report(Code::InvalidType, slot.range(), format!("{label} must be an object"));
                None
            }
        }
    }

    pub(super) fn boolean(
        &mut self,
        mapping: &Mapping,
        key: &str,
        label: impl std::fmt::Display + Copy,
        default: bool,
    ) -> bool {
        match mapping.entry(key) {
            None => default,
            Some(entry) => match entry.value.value {
                Value::Bool(value) => value,
                _ => {
                    let range = Slot::of_entry(entry).range();
                    self.report(Code::InvalidType, range, format!("{label} must be a boolean"));
                    default
                }
            },
        }
    }

    pub(super) fn string_array(
        &mut self,
        entry: Option<&Entry>,
        label: impl std::fmt::Display + Copy,
    ) -> Vec<Spanned<String>> {
        let Some(entry) = entry else { return Vec::new() };
        let Value::Sequence(items) = &entry.value.value else {
            let range = Slot::of_entry(entry).range();
            self.report(Code::InvalidType, range, format!("{label} must be an array of strings"));
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items {
            match &item.value {
                Value::String(text) => {
                    if !js_trim(text).is_empty() {
                        out.push(Spanned::new(js_trim(text).to_owned(), item.range));
                    }
                }
                _ => {
                    self.report(Code::InvalidType, item.range, format!("{label} must be an array of strings"));
                }
            }
        }
        out
    }
}

/// JavaScript's `String.prototype.trim`: its whitespace set differs from Rust's (`U+FEFF` is whitespace,
/// `U+0085` is not), and the reference engine trims with JavaScript.
pub(crate) fn js_trim(text: &str) -> &str {
    fn is_js_space(ch: char) -> bool {
        matches!(
            ch,
            '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
        )
    }
    text.trim_matches(is_js_space)
}

#[cfg(test)]
mod tests {
    #[test]
    fn trims_like_javascript() {
        assert_eq!(super::js_trim("\u{feff} a \u{3000}"), "a");
        assert_eq!(super::js_trim("\u{85}a"), "\u{85}a");
    }
}
