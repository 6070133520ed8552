//! `check --fix`: applies a manifest's safe fixes (`Fix::safe`) to its text, round after round, each round
//! checked again and kept only when it adds no error.

use std::path::Path;

use crate::catalog::ModelCatalog;
use crate::check::check_manifest_bytes;
use crate::diagnostic::{Fix, Severity, TextEdit};
use crate::fs::FileSystem;

/// Rounds of fixing before giving up (a fix can enable the next one: the first `Declare in env` of an absent
/// `env` creates the block the next one appends to).
const MAX_ROUNDS: usize = 8;

/// What [`fix_manifest`] changed: the new text and the title of every fix applied, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fixed {
    pub text: String,
    pub applied: Vec<String>,
}

/// Applies every safe fix of the manifest at `manifest_path` whose text is `text`, or `None` when none
/// applies. Only fixes that edit the manifest itself and create no file are taken; a diagnostic offering more
/// than one safe fix is a choice and is left alone; overlapping fixes wait for the next round; a round whose
/// result has more errors than its source is dropped (and fixing stops there).
pub fn fix_manifest(fs: &dyn FileSystem, manifest_path: &Path, text: &str, catalog: &ModelCatalog) -> Option<Fixed> {
    let mut current = text.to_owned();
    let mut applied = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let report = check_manifest_bytes(fs, manifest_path, current.as_bytes(), catalog);
        // Ranges are into the text the checker read; a manifest it had to repair (invalid UTF-8) is not edited.
        if report.sources.get(manifest_path).is_none_or(|source| **source != *current) {
            break;
        }
        let errors = count_errors(&report.diagnostics);
        let chosen = choose(&report.diagnostics, manifest_path);
        if chosen.is_empty() {
            break;
        }
        let next = apply(&current, chosen.iter().flat_map(|fix| &fix.edits));
        let after = check_manifest_bytes(fs, manifest_path, next.as_bytes(), catalog);
        if count_errors(&after.diagnostics) > errors || next == current {
            break;
        }
        applied.extend(chosen.iter().map(|fix| fix.title.clone()));
        current = next;
    }
    (!applied.is_empty()).then_some(Fixed { text: current, applied })
}

fn count_errors(diagnostics: &[crate::Diagnostic]) -> usize {
    diagnostics.iter().filter(|d| d.severity == Severity::Error).count()
}

/// The safe fixes to apply together: one per diagnostic that offers exactly one, each set of edits once, none
/// touching another.
fn choose<'d>(diagnostics: &'d [crate::Diagnostic], manifest_path: &Path) -> Vec<&'d Fix> {
    let mut chosen: Vec<&Fix> = Vec::new();
    for diagnostic in diagnostics {
        let mut safe = diagnostic.fixes.iter().filter(|fix| {
            fix.safe
                && fix.creates.is_empty()
                && !fix.edits.is_empty()
                && fix.edits.iter().all(|e| e.path == manifest_path)
        });
        let (Some(fix), None) = (safe.next(), safe.next()) else { continue };
        if chosen.iter().any(|other| other.edits == fix.edits) {
            continue;
        }
        let touches = |edit: &TextEdit| {
            chosen
                .iter()
                .flat_map(|other| &other.edits)
                .any(|other| edit.range.start <= other.range.end && other.range.start <= edit.range.end)
        };
        if !fix.edits.iter().any(touches) {
            chosen.push(fix);
        }
    }
    chosen
}

/// `text` with non-overlapping edits applied (from the last to the first, so earlier ranges stay valid).
fn apply<'e>(text: &str, edits: impl Iterator<Item = &'e TextEdit>) -> String {
    let mut edits: Vec<&TextEdit> = edits.collect();
    edits.sort_by_key(|edit| std::cmp::Reverse(edit.range.start));
    let mut out = text.to_owned();
    for edit in edits {
        if edit.range.end <= out.len() && out.is_char_boundary(edit.range.start) && out.is_char_boundary(edit.range.end)
        {
            out.replace_range(edit.range.as_range(), &edit.new_text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use wb_syntax::TextRange;

    use super::{apply, choose};
    use crate::diagnostic::{Code, Diagnostic, Fix, TextEdit};

    fn edit(start: usize, end: usize, text: &str) -> TextEdit {
        TextEdit { path: Path::new("m").to_owned(), range: TextRange::new(start, end), new_text: text.to_owned() }
    }

    fn fix(title: &str, edits: Vec<TextEdit>, safe: bool) -> Fix {
        Fix { title: title.to_owned(), creates: Vec::new(), edits, safe }
    }

    fn diagnostic(fixes: Vec<Fix>) -> Diagnostic {
        let mut diagnostic = Diagnostic::new(Code::UnknownField, "m", TextRange::empty(0), "x");
        diagnostic.fixes = fixes;
        diagnostic
    }

    #[test]
    fn edits_apply_from_the_end() {
        let edits = [edit(0, 1, "A"), edit(4, 4, "!"), edit(2, 3, "")];
        assert_eq!(apply("abcd", edits.iter()), "Abd!");
    }

    #[test]
    fn only_certain_fixes_are_chosen_each_once_and_none_touching_another() {
        let other_file = TextEdit { path: Path::new("other").to_owned(), ..edit(0, 1, "x") };
        let mut creates = fix("create", vec![edit(40, 40, "y")], true);
        creates.creates.push((Path::new("new.md").to_owned(), String::new()));
        let diagnostics = [
            diagnostic(vec![fix("rename", vec![edit(0, 3, "abc")], true), fix("remove", vec![edit(0, 9, "")], false)]),
            // The same edits offered on a second diagnostic (the migration on two codes) apply once.
            diagnostic(vec![fix("rename again", vec![edit(0, 3, "abc")], true)]),
            // Two safe suggestions are a choice.
            diagnostic(vec![fix("first", vec![edit(10, 12, "a")], true), fix("second", vec![edit(10, 12, "b")], true)]),
            // Touching a chosen edit: the next round.
            diagnostic(vec![fix("touching", vec![edit(3, 3, "!")], true)]),
            diagnostic(vec![fix("unsafe", vec![edit(20, 21, "z")], false)]),
            diagnostic(vec![fix("elsewhere", vec![other_file], true)]),
            diagnostic(vec![creates]),
            diagnostic(vec![fix("declare", vec![edit(30, 30, "env:")], true)]),
        ];
        let titles: Vec<&str> = choose(&diagnostics, Path::new("m")).iter().map(|f| f.title.as_str()).collect();
        assert_eq!(titles, ["rename", "declare"]);
    }
}
