//! Completion at any position, also while the document does not parse.
//!
//! The cursor's context comes from the lines around it (indentation, `key:` and `- ` markers), not from the
//! parsed tree, so a half-typed line still gets keys, values and snippets.
//!
//! `context` reads the cursor's place from the lines; `keys`, `values`, `env` and `paths` answer for each kind of
//! place; `snippet` turns a key's snippet into the plain text of editors that do not expand snippets.

use std::path::Path;

use wb_manifest::fields::{self, Field, Lookup, Segment};
use wb_manifest::{FileSystem, ModelCatalog};
use wb_syntax::{Parse, TextRange};

use crate::context::{spec_of, spec_of_text};
use context::{Place, context, indentation, line_bounds};
use keys::key_items;
use values::value_items;

mod context;
mod env;
mod keys;
mod paths;
mod snippet;
mod values;

/// One level of indentation in the snippets the completions insert (the key snippets and the `env` entries).
const UNIT: &str = "  ";

/// What the editor can insert.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompletionOptions {
    /// The editor expands snippets (`$1`, `${1:name}`, `${1|a,b|}`) and indents each inserted line as the
    /// cursor's line. Without, items are plain text with the indentation of every line included.
    pub snippets: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    Field,
    Value,
    Enum,
    File,
    Folder,
    Variable,
    Model,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionItem {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: Option<String>,
    pub documentation: Option<String>,
    /// The text that replaces `replace`; a snippet (`$1`, `${1|a,b|}`) when `snippet` is true (only with
    /// `CompletionOptions::snippets`).
    pub insert_text: String,
    pub snippet: bool,
    pub replace: TextRange,
    pub sort_text: String,
    pub deprecated: bool,
}

/// Completion items at `offset` of a manifest's text.
pub fn completions(
    fs: &dyn FileSystem,
    manifest_path: &Path,
    text: &str,
    offset: usize,
    catalog: &ModelCatalog,
    options: CompletionOptions,
) -> Vec<CompletionItem> {
    let parsed = wb_syntax::parse_str(text);
    completions_parsed(fs, manifest_path, text, &parsed, offset, catalog, options)
}

/// [`completions`] with the document's parse already at hand (`parsed` must be the parse of `text`).
pub fn completions_parsed(
    fs: &dyn FileSystem,
    manifest_path: &Path,
    text: &str,
    parsed: &Parse,
    offset: usize,
    catalog: &ModelCatalog,
    options: CompletionOptions,
) -> Vec<CompletionItem> {
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) {
        return Vec::new();
    }
    let Some(context) = context(text, offset) else { return Vec::new() };
    let spec = if parsed.root.is_some() { spec_of(parsed.root.as_ref()) } else { spec_of_text(text) };
    let replace = context.replace;
    match context.place {
        Place::Key { path, siblings, rest_of_line_has_colon } => {
            let items = key_items(spec, &path, &siblings, rest_of_line_has_colon, replace, parsed.root.as_ref(), text);
            indent_for_editor(items, text, replace.start, options)
        }
        Place::Value { path, prefix } => {
            let package = manifest_path.parent().unwrap_or(Path::new("/"));
            value_items(spec, &path, &prefix, replace, parsed.root.as_ref(), catalog, fs, package)
        }
    }
}

/// Makes the continuation lines of multi-line items line up under the key they start at `key_start`: snippet
/// editors indent them as the cursor's line, which a key after `- ` is right of; plain text gets the whole
/// indentation, and its placeholders' defaults instead of snippet syntax.
fn indent_for_editor(
    items: Vec<CompletionItem>,
    text: &str,
    key_start: usize,
    options: CompletionOptions,
) -> Vec<CompletionItem> {
    let (line_start, line_end) = line_bounds(text, key_start);
    let key_column = text[line_start..key_start].chars().count();
    let line_indent = indentation(&text[line_start..line_end]);
    items
        .into_iter()
        .map(|mut item| {
            if item.snippet && options.snippets {
                item.insert_text =
                    snippet::indent_continuation(&item.insert_text, key_column.saturating_sub(line_indent));
            } else if item.snippet {
                item.insert_text = snippet::indent_continuation(&snippet::plain_text(&item.insert_text), key_column);
                item.snippet = false;
            }
            item
        })
        .collect()
}

fn lookup_field(spec: u8, path: &[Segment]) -> Option<&'static Field> {
    match fields::lookup(spec, path)? {
        Lookup::Field(field) => Some(field),
        Lookup::MapKey { .. } => None,
    }
}

fn value_item(
    label: &str,
    kind: CompletionKind,
    detail: Option<String>,
    replace: TextRange,
    rank: usize,
) -> CompletionItem {
    CompletionItem {
        label: label.to_owned(),
        kind,
        detail,
        documentation: None,
        insert_text: label.to_owned(),
        snippet: false,
        replace,
        sort_text: format!("{rank:04}_{label}"),
        deprecated: false,
    }
}
