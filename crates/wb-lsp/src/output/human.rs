//! `--format human`: source snippets with carets (codespan-reporting), coloured on a terminal.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use codespan_reporting::diagnostic::{Diagnostic, Label, Severity as Level};
use codespan_reporting::files::{Error, Files, SimpleFile};
use codespan_reporting::term::{self, Config, termcolor::Buffer};
use wb_manifest::Severity;

use super::{Checked, Location, docs_url, summary_line};

fn level(severity: Severity) -> Level {
    match severity {
        Severity::Error => Level::Error,
        Severity::Warning => Level::Warning,
        Severity::Information => Level::Note,
        Severity::Hint => Level::Help,
    }
}

/// One text and its line starts, shared by every path that leads to it.
type SharedText = Arc<SimpleFile<&'static str, Arc<str>>>;

/// The files the snippets come from, by name; a text several paths lead to (a `SKILL.md` named through many
/// links) is held, and its lines indexed, once.
#[derive(Default)]
struct SharedFiles {
    files: Vec<(String, SharedText)>,
    by_text: HashMap<*const u8, SharedText>,
}

impl SharedFiles {
    fn add(&mut self, name: String, source: Option<&Arc<str>>) -> usize {
        let source = source.cloned().unwrap_or_else(|| Arc::from(""));
        let file = self
            .by_text
            .entry(Arc::as_ptr(&source).cast::<u8>())
            .or_insert_with(|| Arc::new(SimpleFile::new("", Arc::clone(&source))));
        self.files.push((name, Arc::clone(file)));
        self.files.len() - 1
    }

    fn file(&self, id: usize) -> Result<&(String, SharedText), Error> {
        self.files.get(id).ok_or(Error::FileMissing)
    }
}

impl<'a> Files<'a> for SharedFiles {
    type FileId = usize;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: usize) -> Result<&'a str, Error> {
        self.file(id).map(|(name, _)| name.as_str())
    }

    fn source(&'a self, id: usize) -> Result<&'a str, Error> {
        self.file(id).map(|(_, file)| file.source().as_ref())
    }

    fn line_index(&'a self, id: usize, byte_index: usize) -> Result<usize, Error> {
        self.file(id)?.1.line_index((), byte_index)
    }

    fn line_range(&'a self, id: usize, line_index: usize) -> Result<Range<usize>, Error> {
        self.file(id)?.1.line_range((), line_index)
    }
}

pub fn render(checked: &Checked<'_>, color: bool) -> String {
    let mut files = SharedFiles::default();
    let mut ids: HashMap<PathBuf, usize> = HashMap::new();
    let mut file_id = |location: &Location| -> usize {
        *ids.entry(location.absolute.clone())
            .or_insert_with(|| files.add(location.path.clone(), checked.source(&location.absolute)))
    };
    let mut prepared = Vec::new();
    for package in &checked.packages {
        for item in &package.items {
            let primary = Label::primary(file_id(&item.location), item.location.range.as_range());
            let mut labels = vec![primary];
            for (related, message) in &item.related {
                labels.push(Label::secondary(file_id(related), related.range.as_range()).with_message(message.clone()));
            }
            let mut notes: Vec<String> = item
                .fixes
                .iter()
                .map(|fix| {
                    if fix.safe {
                        format!("fix available: {} (run `wb-lsp check --fix`)", fix.title)
                    } else {
                        format!("fix available: {}", fix.title)
                    }
                })
                .collect();
            notes.push(format!("see {}", docs_url(item.code)));
            prepared.push(
                Diagnostic::new(level(item.severity))
                    .with_code(item.code.as_str())
                    .with_message(item.message.clone())
                    .with_labels(labels)
                    .with_notes(notes),
            );
        }
    }
    let config = Config::default();
    let mut out = String::new();
    for diagnostic in &prepared {
        let mut buffer = if color { Buffer::ansi() } else { Buffer::no_color() };
        if term::emit_to_write_style(&mut buffer, &config, &files, diagnostic).is_ok() {
            out.push_str(&String::from_utf8_lossy(buffer.as_slice()));
        } else {
            // A range the renderer cannot place (it should not happen): fall back to a plain line.
            let code = diagnostic.code.as_deref().unwrap_or_default();
            out.push_str(&format!("{code}: {}\n", diagnostic.message));
        }
    }
    for package in &checked.packages {
        if package.valid {
            out.push_str(&format!("valid\t{}\t{}\n", package.name, package.path));
        }
    }
    out.push_str(&summary_line(checked));
    out.push('\n');
    out
}
