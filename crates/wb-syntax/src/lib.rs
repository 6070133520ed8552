//! Position-aware YAML for Workbench manifests.
//!
//! This crate knows YAML and text positions, nothing about Workbench fields or LSP. Every position is a
//! byte offset into the (UTF-8) source; [`LineIndex`] is the one place that turns offsets into lines and
//! columns in the encodings clients ask for.
//!
//! Parsing never fails: [`parse`] always returns a tree (possibly partial) plus the syntax problems it met.

mod line_index;
mod text;
mod yaml;

pub use line_index::{LineCol, LineIndex, PositionEncoding};
pub use text::TextRange;
#[cfg(feature = "fuzzing")]
pub use yaml::fuzzing;
pub use yaml::{
    ALIAS_EXPANSION_BUDGET, Entry, Mapping, NODE_BUDGET, Node, Parse, SmolStr, Style, SyntaxError, SyntaxErrorKind,
    Value, js_number_to_string, parse, parse_shared, parse_str, reparse, reparse_shared,
};
