//! Turns `saphyr-parser` events into the spanned tree: collections on a stack of frames, anchors and
//! aliases under the expansion budget, `<<` merge keys, duplicate keys, depth limits.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use saphyr_parser::{Event, Marker, ScalarStyle, Span, Tag};

use super::scalar::resolve_plain;
use super::tree::{Entry, Mapping, Node, Parse, SmolStr, Style, SyntaxError, SyntaxErrorKind, Value};
use super::{ALIAS_EXPANSION_BUDGET, MAX_DEPTH, NODE_BUDGET};
use crate::TextRange;

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
        /// Key → position in `entries` once the mapping is large, so duplicate detection stays linear in the
        /// mapping's size (empty, never allocated, for small mappings).
        index: FxHashMap<SmolStr, usize>,
    },
}

pub(super) struct Builder<'a> {
    text: &'a str,
    /// Whether the markers of the events are byte offsets: saphyr's count characters, which are bytes in ASCII
    /// text; the fast scanner's are bytes.
    byte_markers: bool,
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
    /// Nodes built so far, held to [`NODE_BUDGET`].
    nodes: usize,
    /// Set once the document is read no further (the node budget is spent): every later event is ignored.
    pub(super) stopped: bool,
    /// Emptied vectors of closed collections, reused by the next ones that open: a collection grows in one of
    /// these and is copied out at its exact size when it closes, so each costs one allocation.
    spare_items: Vec<Vec<Node>>,
    spare_entries: Vec<Vec<Entry>>,
}

impl<'a> Builder<'a> {
    /// A builder for `saphyr-parser`'s events.
    pub(super) fn new(text: &'a str) -> Builder<'a> {
        Builder::with_byte_markers(text, text.is_ascii())
    }

    pub(super) fn with_byte_markers(text: &'a str, byte_markers: bool) -> Builder<'a> {
        Builder {
            text,
            byte_markers,
            cursor_chars: 0,
            cursor_bytes: 0,
            stack: Vec::new(),
            anchors: HashMap::new(),
            expanded: 0,
            root: None,
            documents: 0,
            errors: Vec::new(),
            budget_reported: false,
            nodes: 0,
            stopped: false,
            spare_items: Vec::new(),
            spare_entries: Vec::new(),
        }
    }

    pub(super) fn offset(&mut self, marker: Marker) -> usize {
        let target = marker.index();
        if self.byte_markers {
            // The fast scanner's spans are byte offsets, exact wherever the builder reads one: one that is not
            // (outside the text, inside a character, or a span it left unset) is a bug in the scanner.
            debug_assert!(self.text.is_char_boundary(target), "a span at {target} read from the fast scanner");
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

    pub(super) fn error(&mut self, kind: SyntaxErrorKind, range: TextRange, message: String) {
        self.errors.push(SyntaxError { kind, range, message, related: None });
    }

    /// Handles one event; returns false to stop reading events.
    pub(super) fn event(&mut self, event: Event<'_>, span: Span) -> bool {
        if self.stopped {
            return false;
        }
        if self.documents > 1 {
            // Only the first document is built; later ones are still scanned for syntax errors.
            return true;
        }
        if matches!(event, Event::Scalar(..) | Event::Alias(_) | Event::SequenceStart(..) | Event::MappingStart(..)) {
            self.nodes += 1;
            if self.nodes > NODE_BUDGET {
                let range = self.range(span);
                let message = format!("The YAML has more than {NODE_BUDGET} nodes; it is read no further than here");
                self.error(SyntaxErrorKind::TooManyNodes, range, message);
                self.stopped = true;
                return false;
            }
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
                let items = self.spare_items.pop().unwrap_or_default();
                self.stack.push(Frame::Sequence { start: range.start, anchor, flow, items });
            }
            Event::MappingStart(anchor, tag) => {
                let range = self.range(span);
                self.collection_tag(tag.as_deref(), "map", range);
                let flow = self.opens_flow(range);
                let entries = self.spare_entries.pop().unwrap_or_default();
                self.stack.push(Frame::Mapping {
                    start: range.start,
                    anchor,
                    flow,
                    entries,
                    merges: Vec::new(),
                    key: None,
                    index: FxHashMap::default(),
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(frame) = self.stack.pop() {
                    // Only a flow collection's end is read from its span (its closing bracket): a block
                    // collection ends with its last entry, and the fast scanner leaves that span unset.
                    let flow = matches!(frame, Frame::Sequence { flow: true, .. } | Frame::Mapping { flow: true, .. });
                    let end = flow.then(|| self.range(span).end);
                    let (node, anchor) = self.close(frame, end);
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
        // A flow collection's start span ends with its indicator, after any anchor or tag (`&a [`), and may
        // run on over the spaces after it (`{ a: 1 }`); a block collection's holds no indicator.
        self.text.get(range.start..range.end).is_some_and(|text| text.trim_end().ends_with(['[', '{']))
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
        if let Some(tag) = tag
            && core_tag.is_none()
            && !(tag.handle == "!" && tag.suffix.is_empty())
        {
            self.unsupported_tag(tag, range);
        }
        let resolved = match core_tag {
            Some("str") => Value::String(SmolStr::new(&value)),
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
                Value::String(SmolStr::new(&value))
            }
            None if style == Style::Plain && tag.is_none() => resolve_plain(&value),
            None => Value::String(SmolStr::new(&value)),
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
            Frame::Sequence { start, anchor, flow, mut items } => {
                // A finished collection keeps no spare capacity (most are one or two entries long): it is moved
                // out at its size, and the vector it grew in serves the next collection.
                let items: Vec<Node> = self.recycle_items(&mut items);
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
                let entries: Vec<Entry> = self.recycle_entries(&mut entries);
                let last = entries.iter().map(|entry| entry.range().end).max().unwrap_or(start);
                let end = if flow { end.unwrap_or(last).max(last) } else { last };
                let style = if flow { Style::Flow } else { Style::Block };
                let value = Value::Mapping(Mapping { entries });
                (Node { value, range: TextRange::new(start, end), style }, anchor)
            }
        }
    }

    /// The items, moved out at their size; the emptied vector is kept for the next collection.
    fn recycle_items(&mut self, items: &mut Vec<Node>) -> Vec<Node> {
        let mut exact = Vec::with_capacity(items.len());
        exact.append(items);
        self.spare_items.push(std::mem::take(items));
        exact
    }

    fn recycle_entries(&mut self, entries: &mut Vec<Entry>) -> Vec<Entry> {
        let mut exact = Vec::with_capacity(entries.len());
        exact.append(entries);
        self.spare_entries.push(std::mem::take(entries));
        exact
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
        if let Some((key, value)) = pending_entry
            && let Some(Frame::Mapping { entries, merges, index, .. }) = self.stack.last_mut()
            && let Some(error) = add_entry(self.text, entries, merges, index, key, value)
        {
            self.errors.push(error);
        }
    }

    /// After a parse error, the last entry with an implicit empty value most likely had its real value on the
    /// lines that failed: it is left out instead of being checked as empty.
    pub(super) fn drop_unfinished_entry(&mut self) {
        if let Some(Frame::Mapping { entries, key: None, .. }) = self.stack.last_mut()
            && entries.last().is_some_and(|entry| entry.value.is_null() && entry.value.range.is_empty())
        {
            entries.pop();
        }
    }

    /// The parse, of `text`: the text the builder read, shared.
    pub(super) fn finish(mut self, text: Arc<str>) -> Parse {
        debug_assert_eq!(&*text, self.text);
        // Close whatever the text left open (it ended early or failed to parse): a partial tree still serves
        // completion and hover.
        while let Some(frame) = self.stack.pop() {
            let (node, _) = self.close(frame, None);
            self.push(node);
        }
        Parse { text, root: self.root, errors: self.errors, nodes: self.nodes }
    }
}

/// Mappings up to this size find a duplicate key by looking at their entries; larger ones keep an index.
const INDEXED_FROM: usize = 8;

/// Adds an entry to a mapping (a `<<` key to its merges); returns the problem when the key is not a plain
/// string or is already there.
fn add_entry(
    text: &str,
    entries: &mut Vec<Entry>,
    merges: &mut Vec<Node>,
    index: &mut FxHashMap<SmolStr, usize>,
    key: Node,
    value: Node,
) -> Option<SyntaxError> {
    let Node { value: key_value, range: key_range, style: key_style } = key;
    let key_text = match key_value {
        Value::Sequence(_) | Value::Mapping(_) => {
            return Some(SyntaxError {
                kind: SyntaxErrorKind::ComplexKey,
                range: key_range,
                message: "Mapping keys must be plain strings, not sequences or mappings".to_owned(),
                related: None,
            });
        }
        Value::String(text) => text,
        _ => SmolStr::new(text.get(key_range.as_range()).unwrap_or_default()),
    };
    if key_text == "<<" && key_style == Style::Plain {
        merges.push(value);
        return None;
    }
    let first = if entries.len() < INDEXED_FROM {
        entries.iter().find(|entry| entry.key == key_text)
    } else {
        if index.is_empty() {
            index.extend(entries.iter().enumerate().map(|(at, entry)| (entry.key.clone(), at)));
        }
        index.get(&key_text).and_then(|at| entries.get(*at))
    };
    if let Some(first) = first {
        let related = Some((first.key_range, format!("`{key_text}` is first defined here")));
        return Some(SyntaxError {
            kind: SyntaxErrorKind::DuplicateKey,
            range: key_range,
            message: format!("Duplicate key: {key_text}"),
            related,
        });
    }
    if !index.is_empty() {
        index.insert(key_text.clone(), entries.len());
    }
    entries.push(Entry { key: key_text, key_range, value });
    None
}
