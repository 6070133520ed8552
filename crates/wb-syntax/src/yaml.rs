//! A spanned YAML tree built from `saphyr-parser` events.
//!
//! The builder resolves plain scalars with the YAML 1.2 core schema (what the reference engine's parser
//! does), expands aliases under a budget, applies `<<` merge keys, and records every problem it meets as a
//! [`SyntaxError`] instead of failing.

use std::borrow::Cow;
use std::collections::HashMap;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, Span, Tag};

use crate::TextRange;

/// The most nodes alias expansion may create in one document. An "alias bomb" (aliases of aliases, each
/// doubling the size) hits this limit after a few levels instead of exhausting memory.
pub const ALIAS_EXPANSION_BUDGET: usize = 100_000;

/// The deepest nesting of collections the builder accepts. Deeper documents are truncated with an error, so
/// that recursive walks over the tree (drop, clone, checks) stay far from the stack limit.
pub const MAX_DEPTH: usize = 128;

/// The result of parsing: the text that positions refer to, the first document's root (if any) and every
/// syntax problem.
#[derive(Clone, Debug)]
pub struct Parse {
    /// The decoded source. For input that is not valid UTF-8 this is the lossy decoding, and positions refer
    /// to it.
    pub text: String,
    pub root: Option<Node>,
    pub errors: Vec<SyntaxError>,
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
    String(String),
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
    pub key: String,
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
            Value::String(text) => text.clone(),
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

    fn count(&self) -> usize {
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub kind: SyntaxErrorKind,
    pub range: TextRange,
    pub message: String,
    /// Another place the error concerns (the first of two duplicate keys).
    pub related: Option<(TextRange, String)>,
}

/// Parses raw bytes. Input that is not UTF-8 is decoded lossily and reported.
pub fn parse(bytes: &[u8]) -> Parse {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_str(text),
        Err(error) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            let offset = error.valid_up_to();
            let mut parsed = parse_str(&text);
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

/// Parses a string.
pub fn parse_str(text: &str) -> Parse {
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
    builder.finish()
}

enum Frame {
    Sequence {
        start: usize,
        anchor: usize,
        flow: bool,
        items: Vec<Node>,
    },
    Mapping {
        start: usize,
        anchor: usize,
        flow: bool,
        entries: Vec<Entry>,
        merges: Vec<Node>,
        key: Option<Node>,
        /// Key → position in `entries`, so duplicate detection stays linear in the mapping's size.
        index: HashMap<String, usize>,
    },
}

struct Builder<'a> {
    text: &'a str,
    /// Computed once: for ASCII text, saphyr's character indexes are byte offsets.
    ascii: bool,
    /// Incremental char-index to byte-offset conversion (saphyr markers count characters).
    cursor_chars: usize,
    cursor_bytes: usize,
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Node, usize)>,
    expanded: usize,
    root: Option<Node>,
    documents: usize,
    errors: Vec<SyntaxError>,
    budget_reported: bool,
}

impl<'a> Builder<'a> {
    fn new(text: &'a str) -> Builder<'a> {
        Builder {
            text,
            ascii: text.is_ascii(),
            cursor_chars: 0,
            cursor_bytes: 0,
            stack: Vec::new(),
            anchors: HashMap::new(),
            expanded: 0,
            root: None,
            documents: 0,
            errors: Vec::new(),
            budget_reported: false,
        }
    }

    fn offset(&mut self, marker: Marker) -> usize {
        let target = marker.index();
        if self.ascii {
            return target.min(self.text.len());
        }
        while self.cursor_chars < target {
            match self.text[self.cursor_bytes..].chars().next() {
                Some(ch) => {
                    self.cursor_bytes += ch.len_utf8();
                    self.cursor_chars += 1;
                }
                None => break,
            }
        }
        while self.cursor_chars > target {
            match self.text[..self.cursor_bytes].chars().next_back() {
                Some(ch) => {
                    self.cursor_bytes -= ch.len_utf8();
                    self.cursor_chars -= 1;
                }
                None => break,
            }
        }
        self.cursor_bytes
    }

    fn range(&mut self, span: Span) -> TextRange {
        let start = self.offset(span.start);
        let end = self.offset(span.end);
        TextRange::new(start, end)
    }

    fn error(&mut self, kind: SyntaxErrorKind, range: TextRange, message: String) {
        self.errors.push(SyntaxError { kind, range, message, related: None });
    }

    /// Handles one event; returns false to stop reading events.
    fn event(&mut self, event: Event<'_>, span: Span) -> bool {
        if self.documents > 1 {
            // Only the first document is built; later ones are still scanned for syntax errors.
            return true;
        }
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    let range = self.range(span);
                    let range = if range.is_empty() { self.line_after(range.start) } else { range };
                    self.error(
                        SyntaxErrorKind::MultipleDocuments,
                        range,
                        "A manifest must contain a single YAML document".to_owned(),
                    );
                }
            }
            Event::Scalar(value, style, anchor, tag) => {
                let range = self.range(span);
                let node = self.scalar(value, style, tag.as_deref(), range);
                self.register(anchor, &node);
                self.push(node);
            }
            Event::Alias(id) => {
                let range = self.range(span);
                let node = self.alias(id, range);
                self.push(node);
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) if self.stack.len() >= MAX_DEPTH => {
                let _ = (anchor, tag);
                let range = self.range(span);
                self.error(SyntaxErrorKind::TooDeep, range, format!("YAML nesting is deeper than {MAX_DEPTH} levels"));
                return false;
            }
            Event::SequenceStart(anchor, tag) => {
                let range = self.range(span);
                self.collection_tag(tag.as_deref(), "seq", range);
                let flow = self.opens_flow(range);
                self.stack.push(Frame::Sequence { start: range.start, anchor, flow, items: Vec::new() });
            }
            Event::MappingStart(anchor, tag) => {
                let range = self.range(span);
                self.collection_tag(tag.as_deref(), "map", range);
                let flow = self.opens_flow(range);
                self.stack.push(Frame::Mapping {
                    start: range.start,
                    anchor,
                    flow,
                    entries: Vec::new(),
                    merges: Vec::new(),
                    key: None,
                    index: HashMap::new(),
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let range = self.range(span);
                if let Some(frame) = self.stack.pop() {
                    let (node, anchor) = self.close(frame, Some(range.end));
                    self.register(anchor, &node);
                    self.push(node);
                }
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
        true
    }

    fn line_after(&self, offset: usize) -> TextRange {
        let rest = &self.text[offset..];
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        TextRange::new(offset, offset + end)
    }

    fn opens_flow(&self, range: TextRange) -> bool {
        !range.is_empty() && matches!(self.text[..range.end].chars().next_back(), Some('[' | '{'))
    }

    fn scalar(&mut self, value: Cow<'_, str>, style: ScalarStyle, tag: Option<&Tag>, range: TextRange) -> Node {
        let style = match style {
            ScalarStyle::Plain => Style::Plain,
            ScalarStyle::SingleQuoted => Style::SingleQuoted,
            ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
            ScalarStyle::Literal => Style::Literal,
            ScalarStyle::Folded => Style::Folded,
        };
        let core_tag = tag.and_then(|tag| {
            if tag.handle == "tag:yaml.org,2002:" || tag.handle == "!!" { Some(tag.suffix.as_str()) } else { None }
        });
        if let Some(tag) = tag {
            if core_tag.is_none() && !(tag.handle == "!" && tag.suffix.is_empty()) {
                self.unsupported_tag(tag, range);
            }
        }
        let resolved = match core_tag {
            Some("str") => Value::String(value.into_owned()),
            Some(kind @ ("int" | "float" | "bool" | "null")) => {
                let resolved = resolve_plain(&value);
                let matches = matches!(
                    (kind, &resolved),
                    ("bool", Value::Bool(_)) | ("null", Value::Null) | ("int" | "float", Value::Number(_))
                );
                if !matches {
                    self.error(SyntaxErrorKind::Tag, range, format!("Value {value:?} is not a valid !!{kind}"));
                }
                resolved
            }
            Some(other) => {
                self.error(SyntaxErrorKind::Tag, range, format!("Unsupported YAML tag !!{other} on a scalar"));
                Value::String(value.into_owned())
            }
            None if style == Style::Plain && tag.is_none() => resolve_plain(&value),
            None => Value::String(value.into_owned()),
        };
        Node { value: resolved, range, style }
    }

    fn collection_tag(&mut self, tag: Option<&Tag>, expected: &str, range: TextRange) {
        if let Some(tag) = tag {
            let core = tag.handle == "tag:yaml.org,2002:" || tag.handle == "!!";
            if !(core && tag.suffix == expected) {
                self.unsupported_tag(tag, range);
            }
        }
    }

    fn unsupported_tag(&mut self, tag: &Tag, range: TextRange) {
        let shown = if tag.handle == "tag:yaml.org,2002:" {
            format!("!!{}", tag.suffix)
        } else {
            format!("{}{}", tag.handle, tag.suffix)
        };
        self.error(
            SyntaxErrorKind::Tag,
            range,
            format!("Unsupported YAML tag {shown}; manifests use plain YAML values"),
        );
    }

    fn alias(&mut self, id: usize, range: TextRange) -> Node {
        let Some((node, size)) = self.anchors.get(&id) else {
            return Node { value: Value::Null, range, style: Style::Plain };
        };
        if self.expanded + size > ALIAS_EXPANSION_BUDGET {
            if !self.budget_reported {
                self.budget_reported = true;
                self.error(
                    SyntaxErrorKind::AliasBudget,
                    range,
                    format!("YAML aliases expand to more than {ALIAS_EXPANSION_BUDGET} nodes; refusing to expand"),
                );
            }
            return Node { value: Value::Null, range, style: Style::Plain };
        }
        self.expanded += size;
        let mut copy = node.clone();
        copy.range = range;
        copy
    }

    fn register(&mut self, anchor: usize, node: &Node) {
        if anchor != 0 {
            self.anchors.insert(anchor, (node.clone(), node.count()));
        }
    }

    fn close(&mut self, frame: Frame, end: Option<usize>) -> (Node, usize) {
        match frame {
            Frame::Sequence { start, anchor, flow, items } => {
                let last = items.last().map_or(start, |item| item.range.end);
                let end = if flow { end.unwrap_or(last).max(last) } else { last };
                let style = if flow { Style::Flow } else { Style::Block };
                (Node { value: Value::Sequence(items), range: TextRange::new(start, end), style }, anchor)
            }
            Frame::Mapping { start, anchor, flow, mut entries, merges, key, index: _ } => {
                // A key whose value never arrived (the text failed to parse there) is left out: its value is
                // unknown, and checking it as empty would report a problem the author does not have.
                let _ = key;
                for merge in merges {
                    let sources: Vec<&Node> = match &merge.value {
                        Value::Sequence(items) => items.iter().collect(),
                        _ => vec![&merge],
                    };
                    for source in sources {
                        if let Value::Mapping(mapping) = &source.value {
                            for entry in &mapping.entries {
                                if !entries.iter().any(|existing| existing.key == entry.key) {
                                    entries.push(entry.clone());
                                }
                            }
                        }
                    }
                }
                let last = entries.iter().map(|entry| entry.range().end).max().unwrap_or(start);
                let end = if flow { end.unwrap_or(last).max(last) } else { last };
                let style = if flow { Style::Flow } else { Style::Block };
                let value = Value::Mapping(Mapping { entries });
                (Node { value, range: TextRange::new(start, end), style }, anchor)
            }
        }
    }

    fn push(&mut self, node: Node) {
        let mut pending_entry = None;
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(Frame::Sequence { items, .. }) => items.push(node),
            Some(Frame::Mapping { key, .. }) => match key.take() {
                None => *key = Some(node),
                Some(key_node) => pending_entry = Some((key_node, node)),
            },
        }
        if let Some((key, value)) = pending_entry {
            let mut frame = self.stack.pop();
            if let Some(Frame::Mapping { entries, merges, index, .. }) = frame.as_mut() {
                self.add_entry(entries, merges, index, key, value);
            }
            if let Some(frame) = frame {
                self.stack.push(frame);
            }
        }
    }

    fn add_entry(
        &mut self,
        entries: &mut Vec<Entry>,
        merges: &mut Vec<Node>,
        index: &mut HashMap<String, usize>,
        key: Node,
        value: Node,
    ) {
        let key_text = match &key.value {
            Value::Sequence(_) | Value::Mapping(_) => {
                self.error(
                    SyntaxErrorKind::ComplexKey,
                    key.range,
                    "Mapping keys must be plain strings, not sequences or mappings".to_owned(),
                );
                return;
            }
            Value::String(text) => text.clone(),
            _ => self.text.get(key.range.as_range()).unwrap_or_default().to_owned(),
        };
        if key_text == "<<" && key.style == Style::Plain {
            merges.push(value);
            return;
        }
        if let Some(first) = index.get(&key_text).and_then(|at| entries.get(*at)) {
            let related = Some((first.key_range, format!("`{key_text}` is first defined here")));
            self.errors.push(SyntaxError {
                kind: SyntaxErrorKind::DuplicateKey,
                range: key.range,
                message: format!("Duplicate key: {key_text}"),
                related,
            });
            return;
        }
        index.insert(key_text.clone(), entries.len());
        entries.push(Entry { key: key_text, key_range: key.range, value });
    }

    /// After a parse error, the last entry with an implicit empty value most likely had its real value on the
    /// lines that failed: it is left out instead of being checked as empty.
    fn drop_unfinished_entry(&mut self) {
        if let Some(Frame::Mapping { entries, key: None, .. }) = self.stack.last_mut() {
            if entries.last().is_some_and(|entry| entry.value.is_null() && entry.value.range.is_empty()) {
                entries.pop();
            }
        }
    }

    fn finish(mut self) -> Parse {
        // Close whatever the text left open (it ended early or failed to parse): a partial tree still serves
        // completion and hover.
        while let Some(frame) = self.stack.pop() {
            let (node, _) = self.close(frame, None);
            self.push(node);
        }
        Parse { text: self.text.to_owned(), root: self.root, errors: self.errors }
    }
}

/// Resolves a plain scalar with the YAML 1.2 core schema.
fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Value::Number(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Value::Number(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Number(f64::NAN),
        _ => {}
    }
    if let Some(octal) = text.strip_prefix("0o") {
        if !octal.is_empty() && octal.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            return Value::Number(digits_value(octal, 8));
        }
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Value::Number(digits_value(hex, 16));
        }
    }
    if is_core_number(text) {
        if let Ok(number) = text.parse::<f64>() {
            return Value::Number(number);
        }
    }
    Value::String(text.to_owned())
}

fn digits_value(digits: &str, radix: u32) -> f64 {
    digits.chars().filter_map(|ch| ch.to_digit(radix)).fold(0.0, |acc, digit| acc * f64::from(radix) + f64::from(digit))
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_core_number(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    if matches!(bytes.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let int_start = i;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = i - frac_start;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if i < bytes.len() && matches!(bytes[i], b'e' | b'E') {
        i += 1;
        if matches!(bytes.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let exp_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == bytes.len()
}
