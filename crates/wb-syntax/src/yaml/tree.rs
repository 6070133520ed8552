//! The spanned tree: nodes with their byte ranges, scalar values, mappings with their entries, and the
//! syntax problems a parse reports.

use std::sync::Arc;

pub use smol_str::SmolStr;

use crate::TextRange;

/// The result of parsing: the text that positions refer to, the first document's root (if any) and every
/// syntax problem.
#[derive(Clone, Debug)]
pub struct Parse {
    /// The decoded source. For input that is not valid UTF-8 this is the lossy decoding, and positions refer
    /// to it. Shared: an editor's buffer, the parse and the checker's sources hold one copy.
    pub text: Arc<str>,
    pub root: Option<Node>,
    pub errors: Vec<SyntaxError>,
    /// The nodes the document was read as (each alias one), at most [`super::NODE_BUDGET`] and one.
    pub nodes: usize,
}

/// One YAML value with the byte range it was written at.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    pub range: TextRange,
    pub style: Style,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
    Block,
    Flow,
}

/// A YAML value after core-schema resolution. Numbers are `f64`, as in the reference engine's JavaScript.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    /// Short strings (nearly every key and value of a manifest) are held inline, without an allocation.
    String(SmolStr),
    Sequence(Vec<Node>),
    Mapping(Mapping),
}

/// A mapping in document order. Keys are unique: a duplicate is reported and the first entry kept.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Mapping {
    pub entries: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The key as a string (YAML keys of a manifest are plain strings; `1:` has the key `"1"`).
    pub key: SmolStr,
    pub key_range: TextRange,
    pub value: Node,
}

impl Mapping {
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|entry| &entry.value)
    }

    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|entry| entry.key == key)
    }
}

impl Entry {
    /// The range of the whole entry, from the key to the end of its value.
    pub fn range(&self) -> TextRange {
        self.key_range.cover(self.value.range)
    }
}

impl Node {
    pub fn as_mapping(&self) -> Option<&Mapping> {
        match &self.value {
            Value::Mapping(mapping) => Some(mapping),
            _ => None,
        }
    }

    pub fn as_sequence(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Sequence(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// The JavaScript `String(value)` rendering, used by messages that quote a value.
    pub fn js_string(&self) -> String {
        match &self.value {
            Value::Null => "null".to_owned(),
            Value::Bool(value) => value.to_string(),
            Value::Number(number) => js_number_to_string(*number),
            Value::String(text) => text.to_string(),
            Value::Sequence(items) => items
                .iter()
                .map(|item| if item.is_null() { String::new() } else { item.js_string() })
                .collect::<Vec<_>>()
                .join(","),
            Value::Mapping(_) => "[object Object]".to_owned(),
        }
    }

    /// A short name of the value's type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Sequence(_) => "sequence",
            Value::Mapping(_) => "mapping",
        }
    }

    pub(super) fn count(&self) -> usize {
        1 + match &self.value {
            Value::Sequence(items) => items.iter().map(Node::count).sum(),
            Value::Mapping(mapping) => mapping.entries.iter().map(|entry| 1 + entry.value.count()).sum(),
            _ => 0,
        }
    }
}

/// JavaScript's `String(number)`: integers without a fraction, `Infinity`, `NaN`.
pub fn js_number_to_string(number: f64) -> String {
    if number.is_nan() {
        "NaN".to_owned()
    } else if number.is_infinite() {
        if number > 0.0 { "Infinity".to_owned() } else { "-Infinity".to_owned() }
    } else if number.fract() == 0.0 && number.abs() < 1e21 {
        format!("{number:.0}")
    } else {
        format!("{number}")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyntaxErrorKind {
    /// The scanner or parser rejected the text.
    Syntax,
    /// Indentation with tab characters.
    Tab,
    DuplicateKey,
    /// A second YAML document in the file.
    MultipleDocuments,
    /// A tag other than the core schema's.
    Tag,
    /// A key that is a sequence or mapping.
    ComplexKey,
    /// A byte-order mark at the start. Valid YAML, reported so it can be removed.
    ByteOrderMark,
    InvalidUtf8,
    /// Alias expansion exceeded [`ALIAS_EXPANSION_BUDGET`].
    AliasBudget,
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
    /// More nodes than [`NODE_BUDGET`]: the document is read up to the last node within it.
    TooManyNodes,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub kind: SyntaxErrorKind,
    pub range: TextRange,
    pub message: String,
    /// Another place the error concerns (the first of two duplicate keys).
    pub related: Option<(TextRange, String)>,
}
