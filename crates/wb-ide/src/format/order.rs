//! The field-order pass: the keys of every mapping the field catalog describes (the top level, `model`,
//! each route, MCP server, `env` entry, workspace, runtime, image build, `requirements`) in the catalog's
//! order, which is the standard's. Keys the catalog does not know keep their order after the known ones.
//! `runtimes` keeps its order, which is the author's preference (the first is the default); its runtimes'
//! fields are ordered. An entry moves with the comment lines above it; a mapping whose first key shares a line with its `-`
//! is reordered only when the entry that becomes first has no comment above it.

use wb_manifest::fields::{self, Field, Shape};
use wb_syntax::{Mapping, Node, Parse, Style, TextRange, Value};

/// The reordered text, or `None` when every mapping is already in order.
pub(super) fn reorder(parse: &Parse) -> Option<String> {
    let root = parse.root.as_ref()?;
    let spec = match root.as_mapping().and_then(|mapping| mapping.get("spec")).map(|node| &node.value) {
        Some(Value::Number(number)) if *number == 0.0 => 0,
        _ => 1,
    };
    let text: &str = &parse.text;
    let pass = Pass { text, spec };
    let edit = pass.mapping(root, fields::TOP_LEVEL_FIELDS, true)?;
    Some(splice(text, TextRange::new(0, text.len()), &[edit]))
}

struct Pass<'a> {
    text: &'a str,
    spec: u8,
}

/// Mappings whose order means something: `runtimes` lists the author's preference, the default first.
const KEEP_ORDER: &[&str] = &["runtimes"];

/// One entry's text: the comment and blank lines above it (whole lines) and the entry from its key to the end
/// of its last line.
struct Chunk {
    order: usize,
    trivia: String,
    body: String,
}

impl Pass<'_> {
    /// The replacement of a mapping's text with its entries in order (nested mappings included), or `None`
    /// when nothing in it moves.
    fn mapping(&self, node: &Node, catalog: &'static [Field], reorder: bool) -> Option<(TextRange, String)> {
        let Value::Mapping(mapping) = &node.value else { return None };
        if node.style != Style::Block || mapping.entries.is_empty() {
            return None;
        }
        // An alias shares its anchor's range, and a merge (`<<`) brings entries written elsewhere: only a
        // mapping whose entries are all written here, in order, is reordered.
        let written_here = mapping.entries.windows(2).all(|pair| pair[0].value.range.end <= pair[1].key_range.start)
            && mapping.entries.iter().all(|entry| node.range.start <= entry.key_range.start);
        if !written_here {
            return None;
        }
        let nested = self.nested(mapping, catalog);
        let ranks: Vec<usize> = mapping.entries.iter().map(|entry| self.rank(catalog, &entry.key)).collect();
        let sorted = !reorder || ranks.windows(2).all(|pair| pair[0] <= pair[1]);
        if sorted {
            // Only nested mappings move: their edits, as one replacement of this mapping's span.
            if nested.is_empty() {
                return None;
            }
            let range = TextRange::new(nested[0].0.start, nested[nested.len() - 1].0.end);
            return Some((range, splice(self.text, range, &nested)));
        }
        let first_key = mapping.entries[0].key_range.start;
        let own_line = self.line_start(first_key) + self.indent_at(first_key) == first_key;
        let column = first_key - self.line_start(first_key);
        let mut chunks = Vec::with_capacity(mapping.entries.len());
        let mut previous_end = if own_line { self.line_start(first_key) } else { first_key };
        let region_start = previous_end;
        for (index, entry) in mapping.entries.iter().enumerate() {
            let key_line = self.line_start(entry.key_range.start);
            if index > 0 && key_line + column != entry.key_range.start {
                return None;
            }
            let end = self.line_end(entry.value.range.end.max(entry.key_range.end));
            let body_range = TextRange::new(entry.key_range.start, end);
            let trivia_start = if index == 0 { key_line.max(previous_end) } else { previous_end };
            chunks.push(Chunk {
                order: ranks[index],
                trivia: self.text[trivia_start.min(key_line)..key_line].to_owned(),
                body: splice(self.text, body_range, &nested),
            });
            previous_end = end;
        }
        let region = TextRange::new(region_start, previous_end);
        chunks.sort_by_key(|chunk| chunk.order);
        if !own_line && !chunks[0].trivia.is_empty() {
            return None;
        }
        let indent = " ".repeat(column);
        let line_break = self.line_break();
        let mut out = String::new();
        for (index, chunk) in chunks.iter().enumerate() {
            if index > 0 || own_line {
                out.push_str(&chunk.trivia);
                out.push_str(&indent);
            }
            out.push_str(&chunk.body);
            if !out.ends_with(['\n', '\r']) {
                out.push_str(line_break);
            }
        }
        if !self.text[..region.end].ends_with(['\n', '\r']) && out.ends_with(line_break) {
            out.truncate(out.len() - line_break.len());
        }
        Some((region, out))
    }

    /// The reorderings inside the values of a mapping's entries.
    fn nested(&self, mapping: &Mapping, catalog: &'static [Field]) -> Vec<(TextRange, String)> {
        let mut edits: Vec<(TextRange, String)> = Vec::new();
        for entry in &mapping.entries {
            let Some(field) = fields::find(catalog, &entry.key, self.spec) else { continue };
            match &field.shape {
                Shape::Object { fields, .. } => {
                    edits.extend(self.mapping(&entry.value, fields, !KEEP_ORDER.contains(&field.name)));
                }
                Shape::Image => edits.extend(self.mapping(&entry.value, fields::IMAGE_BUILD_FIELDS, true)),
                Shape::ObjectList { fields, .. } => {
                    for item in entry.value.as_sequence().unwrap_or_default() {
                        edits.extend(self.mapping(item, fields, true));
                    }
                }
                Shape::NamedMap { fields, .. } => {
                    for named in entry.value.as_mapping().map(|named| named.entries.as_slice()).unwrap_or_default() {
                        edits.extend(self.mapping(&named.value, fields, true));
                    }
                }
                _ => {}
            }
        }
        // An alias of a mapping yields its anchor's edit again: each span once, in text order.
        edits.sort_by_key(|(range, _)| range.start);
        let mut end = 0;
        edits.retain(|(range, _)| {
            let keep = range.start >= end;
            if keep {
                end = range.end;
            }
            keep
        });
        edits
    }

    fn rank(&self, catalog: &'static [Field], key: &str) -> usize {
        catalog
            .iter()
            .filter(|field| field.specs.includes(self.spec))
            .position(|field| field.name == key)
            .unwrap_or(usize::MAX)
    }

    /// The document's first line break (`\n` when it has none).
    fn line_break(&self) -> &'static str {
        match self.text.find(['\n', '\r']).map(|at| &self.text[at..]) {
            Some(rest) if rest.starts_with("\r\n") => "\r\n",
            Some(rest) if rest.starts_with('\r') => "\r",
            _ => "\n",
        }
    }

    /// Lines end at `\n`, `\r\n` or a lone `\r`, as the parser has them.
    fn line_start(&self, offset: usize) -> usize {
        self.text[..offset].rfind(['\n', '\r']).map_or(0, |at| at + 1)
    }

    fn indent_at(&self, offset: usize) -> usize {
        let start = self.line_start(offset);
        self.text[start..].bytes().take_while(|b| *b == b' ').count()
    }

    /// The end of the line `offset - 1` lies on, after its line break (a range ending just after a break ends
    /// there).
    fn line_end(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        let bytes = self.text.as_bytes();
        if offset > 0 && bytes[offset - 1] == b'\n' {
            return offset;
        }
        if offset > 0 && bytes[offset - 1] == b'\r' && bytes.get(offset) != Some(&b'\n') {
            return offset;
        }
        match self.text[offset..].find(['\n', '\r']) {
            Some(at) if bytes[offset + at] == b'\r' && bytes.get(offset + at + 1) == Some(&b'\n') => offset + at + 2,
            Some(at) => offset + at + 1,
            None => self.text.len(),
        }
    }
}

/// The text of `range` with the edits inside it applied (edits are disjoint and sorted).
fn splice(text: &str, range: TextRange, edits: &[(TextRange, String)]) -> String {
    let mut out = String::new();
    let mut cursor = range.start;
    for (edit, replacement) in edits {
        if edit.start < cursor || edit.end > range.end {
            continue;
        }
        out.push_str(&text[cursor..edit.start]);
        out.push_str(replacement);
        cursor = edit.end;
    }
    out.push_str(&text[cursor..range.end]);
    out
}
