//! A spanned YAML tree built from `saphyr-parser` events.
//!
//! The builder resolves plain scalars with the YAML 1.2 core schema (what the reference engine's parser
//! does), expands aliases under a budget, applies `<<` merge keys, and records every problem it meets as a
//! [`SyntaxError`] instead of failing. `tree` holds the tree's types, `builder` turns parser events into it,
//! `scalar` resolves plain scalars, `reparse` parses a
//! new version of a text again only where it changed.

mod builder;
#[cfg(test)]
mod corpus;
mod fast;
mod reparse;
mod scalar;
mod tree;

use std::sync::Arc;

use saphyr_parser::Parser;

use crate::TextRange;
use builder::Builder;

pub use reparse::{reparse, reparse_shared};
pub use tree::{Entry, Mapping, Node, Parse, SmolStr, Style, SyntaxError, SyntaxErrorKind, Value, js_number_to_string};

/// The most nodes alias expansion may create in one document. An "alias bomb" (aliases of aliases, each
/// doubling the size) hits this limit after a few levels instead of exhausting memory.
pub const ALIAS_EXPANSION_BUDGET: usize = 100_000;

/// The most nodes (scalars, aliases and collections) the builder builds for one document. A real manifest has a
/// few hundred; one with more stops being read at the first node past this, with an error there, so that a text
/// within the size limit but of a million one-letter items costs tens, not hundreds, of megabytes in the editor.
pub const NODE_BUDGET: usize = 50_000;

/// The deepest nesting of collections the builder accepts. Deeper documents are truncated with an error, so
/// that recursive walks over the tree (drop, clone, checks) stay far from the stack limit.
pub const MAX_DEPTH: usize = 128;

/// Parses raw bytes. Input that is not UTF-8 is decoded lossily and reported.
pub fn parse(bytes: &[u8]) -> Parse {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_str(text),
        Err(error) => {
            let text: Arc<str> = Arc::from(String::from_utf8_lossy(bytes));
            let offset = error.valid_up_to();
            let mut parsed = parse_shared(Arc::clone(&text));
            let end = text[offset..].chars().next().map_or(offset, |ch| offset + ch.len_utf8());
            parsed.errors.insert(
                0,
                SyntaxError {
                    kind: SyntaxErrorKind::InvalidUtf8,
                    range: TextRange::new(offset, end),
                    message: format!("File is not valid UTF-8: invalid byte at offset {offset}"),
                    related: None,
                },
            );
            parsed
        }
    }
}

/// The two front ends apart, for the differential fuzz target: the fast scanner's parse when it takes the text,
/// and saphyr's.
#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    use std::sync::Arc;

    use super::{Builder, Parse, fast};

    pub fn fast(text: &str) -> Option<Parse> {
        let mut builder = Builder::with_byte_markers(text, true);
        fast::scan(text, &mut builder)?;
        Some(builder.finish(Arc::from(text)))
    }

    pub fn saphyr(text: &str) -> Parse {
        super::parse_with_saphyr(Arc::from(text))
    }
}

/// Parses a string.
pub fn parse_str(text: &str) -> Parse {
    parse_shared(Arc::from(text))
}

/// Parses a shared string; the parse holds the same text, not a copy.
pub fn parse_shared(text: Arc<str>) -> Parse {
    let mut builder = Builder::with_byte_markers(&text, true);
    if fast::scan(&text, &mut builder).is_some() {
        return builder.finish(Arc::clone(&text));
    }
    parse_with_saphyr(text)
}

/// Parses a string with `saphyr-parser` (what [`parse_str`] does for a text outside the fast scanner's subset).
fn parse_with_saphyr(shared: Arc<str>) -> Parse {
    let text: &str = &shared;
    let mut builder = Builder::new(text);
    if text.starts_with('\u{feff}') {
        builder.error(
            SyntaxErrorKind::ByteOrderMark,
            TextRange::new(0, 3),
            "File starts with a byte-order mark; save it as UTF-8 without BOM".to_owned(),
        );
    }
    let mut parser = Parser::new_from_str(text).keep_tags(true);
    while let Some(next) = parser.next_event() {
        match next {
            Ok((event, span)) => {
                if !builder.event(event, span) {
                    break;
                }
            }
            Err(error) => {
                let offset = builder.offset(*error.marker());
                let end = text[offset..]
                    .chars()
                    .next()
                    .filter(|ch| *ch != '\n' && *ch != '\r')
                    .map_or(offset, |ch| offset + ch.len_utf8());
                let tab = if error.info().contains("tab") {
                    // Point at the offending tab: the last one before the marker on its line.
                    let line_start = text[..offset].rfind('\n').map_or(0, |at| at + 1);
                    let line_end = text[offset..].find('\n').map_or(text.len(), |at| offset + at);
                    text[line_start..line_end].find('\t').map(|at| line_start + at)
                } else {
                    None
                };
                let (offset, end) = match tab {
                    Some(at) => (at, at + 1),
                    None => (offset, end),
                };
                let (kind, message) = if error.info().contains("recursion limit") {
                    (SyntaxErrorKind::TooDeep, format!("YAML nesting is deeper than {MAX_DEPTH} levels"))
                } else if error.info().contains("tab") {
                    (SyntaxErrorKind::Tab, "Tabs are not allowed in YAML indentation; indent with spaces".to_owned())
                } else {
                    (SyntaxErrorKind::Syntax, format!("Invalid YAML: {}", error.info()))
                };
                builder.error(kind, TextRange::new(offset, end), message);
                builder.drop_unfinished_entry();
                break;
            }
        }
    }
    builder.finish(Arc::clone(&shared))
}
