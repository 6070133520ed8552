//! `${NAME}` references to environment variables (MCP header values): the one scanner and the one rule for
//! names, shared by the checks, the engine's adapters and the editor features.
//!
//! A name matches `^[A-Z][A-Z0-9_]*$` (the spec's `env` names, engine facts b.5), and a reference is exactly
//! `${NAME}`: the reference engine's `\$\{([A-Z][A-Z0-9_]*)\}`, scanned left to right without overlaps. Anything
//! else (`${lower}`, `${}`, `${A B}`, an unclosed `${A`) is plain text: it is neither checked against `env` nor
//! rewritten into a runner's syntax.

use wb_syntax::TextRange;

/// Whether `name` is a valid environment variable name (`^[A-Z][A-Z0-9_]*$`).
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|first| first.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// One `${NAME}` in a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvRef<'t> {
    pub name: &'t str,
    /// The bytes of the whole `${NAME}` in the scanned text.
    pub range: TextRange,
}

impl EnvRef<'_> {
    /// The bytes of `NAME` alone (what a rename replaces).
    pub fn name_range(&self) -> TextRange {
        TextRange::new(self.range.start + 2, self.range.end - 1)
    }
}

/// The references of `text`, in order.
pub fn env_refs(text: &str) -> EnvRefs<'_> {
    EnvRefs { text, at: 0 }
}

/// The iterator of [`env_refs`].
#[derive(Clone, Debug)]
pub struct EnvRefs<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Iterator for EnvRefs<'t> {
    type Item = EnvRef<'t>;

    fn next(&mut self) -> Option<EnvRef<'t>> {
        while let Some(found) = self.text.get(self.at..)?.find("${") {
            let open = self.at + found;
            let name_start = open + 2;
            let rest = &self.text[name_start..];
            let name_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let name = &rest[..name_len];
            if is_env_name(name) && rest[name_len..].starts_with('}') {
                let end = name_start + name_len + 1;
                self.at = end;
                return Some(EnvRef { name, range: TextRange::new(open, end) });
            }
            // Not a reference here; one may start inside what was read (`${${A}}`), so resume after the `${`.
            self.at = name_start;
        }
        self.at = self.text.len();
        None
    }
}

/// `text` with each reference replaced by `with(name)`; everything else, including `${` that starts no
/// reference, is kept as written.
pub fn replace_env_refs(text: &str, mut with: impl FnMut(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for reference in env_refs(text) {
        out.push_str(&text[copied..reference.range.start]);
        out.push_str(&with(reference.name));
        copied = reference.range.end;
    }
    out.push_str(&text[copied..]);
    out
}

/// A reference of a scalar value, with where it is written in the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocatedRef<'v> {
    pub name: &'v str,
    /// The range of `${NAME}` in the document, or `None` when the source spells the value differently (escapes
    /// in a quoted string) and the reference cannot be found there.
    pub range: Option<TextRange>,
}

impl LocatedRef<'_> {
    /// The range of `NAME` alone in the document.
    pub fn name_range(&self) -> Option<TextRange> {
        self.range.map(|range| TextRange::new(range.start + 2, range.end - 1))
    }
}

/// The references of a scalar whose decoded text is `value` and which is written at `value_range` of
/// `document`. The names come from the decoded value (what a runner receives); each is located at its next
/// occurrence in the source, so repeated references get their own ranges.
pub fn scalar_refs<'v>(document: &str, value: &'v str, value_range: TextRange) -> Vec<LocatedRef<'v>> {
    let source = document.get(value_range.as_range()).unwrap_or_default();
    let mut searched = 0;
    env_refs(value)
        .map(|reference| {
            let written = &value[reference.range.as_range()];
            let range = source.get(searched..).and_then(|rest| rest.find(written)).map(|at| {
                let start = searched + at;
                searched = start + written.len();
                TextRange::new(value_range.start + start, value_range.start + searched)
            });
            LocatedRef { name: reference.name, range }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<&str> {
        env_refs(text).map(|reference| reference.name).collect()
    }

    #[test]
    fn names_follow_the_spec_pattern() {
        let pattern = regex::Regex::new(crate::fields::ENV_NAME_PATTERN).expect("pattern");
        for name in ["A", "A_1", "DATABASE_API_TOKEN", "A__", "", "a", "_A", "1A", "A-B", "A B", "É", "AÉ", "Ab"] {
            assert_eq!(is_env_name(name), pattern.is_match(name), "{name:?}");
        }
    }

    #[test]
    fn finds_references_with_their_ranges() {
        let text = "Bearer ${TOKEN} and ${B_2}";
        let found: Vec<EnvRef<'_>> = env_refs(text).collect();
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].name, &text[found[0].range.as_range()]), ("TOKEN", "${TOKEN}"));
        assert_eq!(&text[found[0].name_range().as_range()], "TOKEN");
        assert_eq!((found[1].name, &text[found[1].range.as_range()]), ("B_2", "${B_2}"));
    }

    /// The cases where the four scanners this replaces disagreed.
    #[test]
    fn only_exact_references_count() {
        // Lower case, a leading digit or underscore, empty, spaces, non-ASCII: plain text (the IDE and OpenCode's
        // rewrite accepted some of these; the checks did not).
        for text in ["${lower}", "${1A}", "${_A}", "${}", "${A B}", "${Ab}", "${É}", "${A-B}"] {
            assert_eq!(names(text), Vec::<&str>::new(), "{text:?}");
        }
        // Unclosed: nothing, and the scan ends.
        assert_eq!(names("broken ${X"), Vec::<&str>::new());
        assert_eq!(names("${"), Vec::<&str>::new());
        // A reference inside a failed one is still found (the adapters missed it; navigation took `${A` as a name).
        assert_eq!(names("${${A}}"), ["A"]);
        assert_eq!(names("${A${B}}"), ["B"]);
        assert_eq!(names("$${A}"), ["A"]);
        // Repeats are all reported, in order; adjacent references are separate.
        assert_eq!(names("${A}${B}${A}"), ["A", "B", "A"]);
        // Multi-byte text around references keeps byte ranges on character boundaries.
        let text = "é${A}ü";
        let found: Vec<EnvRef<'_>> = env_refs(text).collect();
        assert_eq!(&text[found[0].range.as_range()], "${A}");
    }

    #[test]
    fn replaces_references_only() {
        let rewrite = |text: &str| replace_env_refs(text, |name| format!("{{env:{name}}}"));
        assert_eq!(rewrite("Bearer ${TOKEN} and ${B}"), "Bearer {env:TOKEN} and {env:B}");
        assert_eq!(rewrite("plain"), "plain");
        assert_eq!(rewrite("broken ${X"), "broken ${X");
        assert_eq!(rewrite("${lower} ${} ${${A}}"), "${lower} ${} ${{env:A}}");
    }

    #[test]
    fn locates_each_reference_in_the_source() {
        // `Authorization: "x ${A}-${A}"`: the value starts at the quote.
        let document = "Authorization: \"x ${A}-${A}\"";
        let value_range = TextRange::new(15, document.len());
        let found = scalar_refs(document, "x ${A}-${A}", value_range);
        let ranges: Vec<&str> = found.iter().map(|r| &document[r.range.expect("located").as_range()]).collect();
        assert_eq!(ranges, ["${A}", "${A}"]);
        assert_ne!(found[0].range, found[1].range, "a repeated reference has its own range");
        assert_eq!(found[1].name_range().map(|r| &document[r.as_range()]), Some("A"));
        // A source spelled with escapes does not contain the reference: the name is known, the place is not.
        let document = "k: \"\\x24{A}\"";
        let found = scalar_refs(document, "${A}", TextRange::new(3, document.len()));
        assert_eq!(found, [LocatedRef { name: "A", range: None }]);
    }
}
