//! A scanner for the YAML manifests are written in, several times faster than `saphyr-parser` on it.
//!
//! Manifests and skill frontmatter are block mappings of plain words, with block sequences, one-line flow
//! sequences of plain words, `{}`, one-line quoted strings and comments. For a text made only of that, this
//! scanner gives the builder the events (and the spans) `saphyr-parser` would. At anything else (anchors,
//! tags, block and multi-line scalars, escapes, directives, document markers, tabs, carriage returns, any
//! syntax error) it declines, and the text is parsed by `saphyr-parser`: declining is always correct, so the
//! subset only has to be exact, never complete. The tests compare the two trees over the fixtures and
//! thousands of edits of them.
//!
//! Its spans are byte offsets (saphyr's count characters), and only the spans the builder reads are exact:
//! block collections' end events, which the builder does not read, carry [`UNSET`], which the builder asserts
//! it never reads.

use std::borrow::Cow;

use saphyr_parser::{Event, Marker, ScalarStyle, Span};

use super::builder::Builder;

/// The span of an event whose span the builder does not read (a block collection's end).
const UNSET: usize = usize::MAX;

/// Collections nested deeper than this are left to `saphyr-parser`, far below the builder's own limit.
const MAX_NESTING: usize = 32;

/// Feeds `builder` the events of `text`; `None` (the builder then holds a partial tree, to be dropped) when
/// the text is not in the subset.
pub(super) fn scan(text: &str, builder: &mut Builder<'_>) -> Option<()> {
    if !in_alphabet(text) {
        return None;
    }
    let mut scanner = Scanner { text, builder, open: Vec::new(), pending: None, scalar_limit: None, rooted: false };
    scanner.emit(Event::StreamStart, 0, 0);
    scanner.emit(Event::DocumentStart(false), 0, 0);
    let mut start = 0;
    while start < text.len() {
        let end = text[start..].find('\n').map_or(text.len(), |at| start + at);
        scanner.line(start, &text.as_bytes()[start..end])?;
        if scanner.builder.stopped {
            break;
        }
        start = end + 1;
    }
    scanner.finish()
}

/// Characters the scanner knows how `saphyr-parser` treats: printable ASCII, line feeds, and the non-ASCII
/// characters YAML reads as plain text (not the byte-order mark, the C1 controls with NEL, the Unicode line
/// and paragraph separators, or the non-characters).
fn in_alphabet(text: &str) -> bool {
    let plain_ascii = |byte: &u8| (0x20..0x7f).contains(byte) || *byte == b'\n';
    if text.is_ascii() {
        return text.as_bytes().iter().all(plain_ascii);
    }
    text.chars().all(|ch| {
        if ch.is_ascii() {
            plain_ascii(&(ch as u8))
        } else {
            !matches!(ch, '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}')
        }
    })
}

/// A block collection being read, with its indentation (the column of its keys, or of its `-`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Mapping(usize),
    Sequence(usize),
}

/// A key whose value is not on its line: a nested collection, or an empty value.
#[derive(Clone, Copy)]
struct Pending {
    /// Where the `:` is: an empty value is placed there.
    colon: usize,
    /// The indentation of the key's mapping.
    indent: usize,
}

struct Scanner<'t, 'b, 'a> {
    text: &'t str,
    builder: &'b mut Builder<'a>,
    open: Vec<Open>,
    pending: Option<Pending>,
    /// After a scalar value, the next content line must not be indented past this (it would continue the
    /// scalar over lines, which is left to saphyr).
    scalar_limit: Option<usize>,
    rooted: bool,
}

/// Bytes that cannot start a plain scalar here: YAML's indicators (and `-`, `?`, `:`, which can, when a
/// non-space follows; left to saphyr).
fn starts_other(byte: u8) -> bool {
    matches!(
        byte,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
            | b' '
    )
}

fn span(start: usize, end: usize) -> Span {
    Span::new(Marker::new(start, 0, 0), Marker::new(end, 0, 0))
}

/// Where a plain scalar starting at `at` ends: before trailing spaces and before a comment. `None` when a
/// `: ` (or a `:` at the end) makes it something else.
fn plain_end(line: &[u8], at: usize) -> Option<usize> {
    let mut end = at;
    let mut i = at;
    while i < line.len() {
        match line[i] {
            b'#' if i > at && line[i - 1] == b' ' => break,
            b':' if line.get(i + 1).is_none_or(|next| *next == b' ') => return None,
            b' ' => {}
            _ => end = i + 1,
        }
        i += 1;
    }
    Some(end)
}

/// Where the `:` of a plain key starting at `at` is, when the line holds `key: ...` or `key:` there.
fn key_colon(line: &[u8], at: usize) -> Option<usize> {
    if line.get(at).is_none_or(|first| starts_other(*first)) {
        return None;
    }
    let mut i = at;
    while i < line.len() {
        match line[i] {
            // saphyr takes at most 1,024 characters as a key on one line.
            _ if i - at > 1000 => return None,
            b':' => {
                let separated = line.get(i + 1).is_none_or(|next| *next == b' ');
                return (separated && i > at && line[i - 1] != b' ').then_some(i);
            }
            b'#' if i > at && line[i - 1] == b' ' => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// True when only spaces, or spaces and then a comment, follow `at`.
fn nothing_after(line: &[u8], at: usize) -> bool {
    match line[at..].iter().position(|byte| *byte != b' ') {
        None => true,
        Some(offset) => offset > 0 && line[at + offset] == b'#',
    }
}

impl Scanner<'_, '_, '_> {
    fn emit(&mut self, event: Event<'_>, start: usize, end: usize) {
        self.builder.event(event, span(start, end));
    }

    fn scalar(&mut self, style: ScalarStyle, value: (usize, usize), range: (usize, usize)) {
        let text = &self.text[value.0..value.1];
        self.builder.event(Event::Scalar(Cow::Borrowed(text), style, 0, None), span(range.0, range.1));
    }

    fn open(&mut self, open: Open, at: usize) -> Option<()> {
        if self.open.len() >= MAX_NESTING {
            return None;
        }
        self.open.push(open);
        let event = match open {
            Open::Mapping(_) => Event::MappingStart(0, None),
            Open::Sequence(_) => Event::SequenceStart(0, None),
        };
        self.emit(event, at, at);
        Some(())
    }

    /// Closes the collections a line at `indent` ends: deeper ones and, for a key, sequences at its column.
    fn close_for(&mut self, indent: usize, key: bool) {
        while let Some(open) = self.open.last().copied() {
            let ends = match open {
                Open::Mapping(at) => at > indent,
                Open::Sequence(at) => at > indent || (key && at == indent),
            };
            if !ends {
                break;
            }
            self.open.pop();
            let event = if matches!(open, Open::Mapping(_)) { Event::MappingEnd } else { Event::SequenceEnd };
            self.emit(event, UNSET, UNSET);
        }
    }

    fn empty_value(&mut self, pending: Pending) {
        self.scalar(ScalarStyle::Plain, (pending.colon, pending.colon), (pending.colon, pending.colon));
    }

    fn line(&mut self, start: usize, line: &[u8]) -> Option<()> {
        let indent = line.iter().position(|byte| *byte != b' ').unwrap_or(line.len());
        if indent == line.len() || line[indent] == b'#' {
            return Some(());
        }
        if indent == 0 && (line.starts_with(b"---") || line.starts_with(b"...") || line[0] == b'%') {
            return None;
        }
        if self.scalar_limit.take().is_some_and(|limit| indent > limit) {
            return None;
        }
        if line[indent] == b'-' && line.get(indent + 1).is_none_or(|next| *next == b' ') {
            self.entry(start, line, indent)
        } else {
            self.key_line(start, line, indent)
        }
    }

    fn key_line(&mut self, start: usize, line: &[u8], indent: usize) -> Option<()> {
        if let Some(pending) = self.pending.take() {
            if indent > pending.indent {
                self.open(Open::Mapping(indent), start + indent)?;
                return self.key(start, line, indent);
            }
            self.empty_value(pending);
        }
        self.close_for(indent, true);
        match self.open.last() {
            None if !self.rooted => {
                self.rooted = true;
                self.open(Open::Mapping(indent), start + indent)?;
            }
            Some(Open::Mapping(at)) if *at == indent => {}
            _ => return None,
        }
        self.key(start, line, indent)
    }

    /// `key: value` or `key:` at `at` of a line, in the mapping at that column.
    fn key(&mut self, start: usize, line: &[u8], at: usize) -> Option<()> {
        let colon = key_colon(line, at)?;
        self.scalar(ScalarStyle::Plain, (start + at, start + colon), (start + at, start + colon));
        let value = line[colon + 1..].iter().position(|byte| *byte != b' ').map(|offset| colon + 1 + offset);
        match value {
            Some(value) if line[value] != b'#' => self.value(start, line, value, at),
            // Nothing (or a comment) after the colon: the value is on the lines below, or empty.
            _ => {
                self.pending = Some(Pending { colon: start + colon, indent: at });
                Some(())
            }
        }
    }

    /// A `- ` line at `indent`.
    fn entry(&mut self, start: usize, line: &[u8], indent: usize) -> Option<()> {
        let content = indent + 1 + line.get(indent + 1..)?.iter().position(|byte| *byte != b' ')?;
        if line[content] == b'#' || (line[content] == b'-' && line.get(content + 1).is_none_or(|n| *n == b' ')) {
            return None;
        }
        match self.pending.take() {
            Some(pending) if indent > pending.indent => self.open(Open::Sequence(indent), start + indent)?,
            // A sequence at its key's column: saphyr starts it at the first entry's content.
            Some(pending) if indent == pending.indent && self.open.last() == Some(&Open::Mapping(indent)) => {
                self.open(Open::Sequence(indent), start + content)?;
            }
            pending => {
                if let Some(pending) = pending {
                    self.empty_value(pending);
                }
                self.close_for(indent, false);
                if self.open.last() != Some(&Open::Sequence(indent)) {
                    return None;
                }
            }
        }
        if key_colon(line, content).is_some() {
            self.open(Open::Mapping(content), start + content)?;
            return self.key(start, line, content);
        }
        self.value(start, line, content, indent)
    }

    /// A value on its key's (or entry's) line, at `at`; later lines must not be indented past `limit`.
    fn value(&mut self, start: usize, line: &[u8], at: usize, limit: usize) -> Option<()> {
        let after = match line[at] {
            b'"' | b'\'' => {
                let quote = line[at];
                let close = at + 1 + line[at + 1..].iter().position(|byte| *byte == quote)?;
                let body = &line[at + 1..close];
                if (quote == b'"' && body.contains(&b'\\')) || line.get(close + 1) == Some(&quote) {
                    return None;
                }
                let style = if quote == b'"' { ScalarStyle::DoubleQuoted } else { ScalarStyle::SingleQuoted };
                self.scalar(style, (start + at + 1, start + close), (start + at, start + close + 1));
                // A quoted scalar's span runs on over what follows it on the line: only its end is exact.
                return (close + 1 == line.len()).then(|| self.scalar_limit = Some(limit));
            }
            b'[' => return self.flow_sequence(start, line, at, limit),
            b'{' => {
                let close = at + 1 + line[at + 1..].iter().position(|byte| *byte != b' ')?;
                if line[close] != b'}' || close + 1 != line.len() {
                    return None;
                }
                self.emit(Event::MappingStart(0, None), start + at, start + at + 1);
                self.emit(Event::MappingEnd, start + close, start + close + 1);
                close + 1
            }
            first if starts_other(first) => return None,
            _ => {
                let end = plain_end(line, at)?;
                self.scalar(ScalarStyle::Plain, (start + at, start + end), (start + at, start + end));
                end
            }
        };
        if !nothing_after(line, after) {
            return None;
        }
        self.scalar_limit = Some(limit);
        Some(())
    }

    /// `[a, b]` of plain words, ending its line.
    fn flow_sequence(&mut self, start: usize, line: &[u8], at: usize, limit: usize) -> Option<()> {
        self.emit(Event::SequenceStart(0, None), start + at, start + at + 1);
        let mut i = at + 1;
        let mut expect_item = false;
        loop {
            while line.get(i) == Some(&b' ') {
                i += 1;
            }
            match *line.get(i)? {
                b']' if !expect_item => break,
                first if starts_other(first) => return None,
                _ => {
                    let item = i;
                    let mut end = i;
                    while let Some(&byte) = line.get(i) {
                        match byte {
                            b',' | b']' => break,
                            b'[' | b'{' | b'}' | b'#' | b':' | b'"' | b'\'' => return None,
                            // An indicator where a token could start.
                            b'-' | b'?' if line.get(i + 1).is_none_or(|next| b" ,[]{}".contains(next)) => return None,
                            b' ' => {}
                            _ => end = i + 1,
                        }
                        i += 1;
                    }
                    self.scalar(ScalarStyle::Plain, (start + item, start + end), (start + item, start + end));
                    match *line.get(i)? {
                        b',' => {
                            i += 1;
                            expect_item = true;
                        }
                        _ => expect_item = false,
                    }
                }
            }
        }
        // A flow collection's end span runs on over what follows it on the line: only a line's end is exact.
        if i + 1 != line.len() {
            return None;
        }
        self.emit(Event::SequenceEnd, start + i, start + i + 1);
        self.scalar_limit = Some(limit);
        Some(())
    }

    fn finish(&mut self) -> Option<()> {
        if !self.rooted {
            return None;
        }
        if let Some(pending) = self.pending.take() {
            self.empty_value(pending);
        }
        while let Some(open) = self.open.pop() {
            let event = if matches!(open, Open::Mapping(_)) { Event::MappingEnd } else { Event::SequenceEnd };
            self.emit(event, UNSET, UNSET);
        }
        let end = self.text.len();
        self.emit(Event::DocumentEnd, end, end);
        self.emit(Event::StreamEnd, end, end);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::yaml::corpus::{corpus_cached, edit, large, random_edit};
    use crate::yaml::{Parse, parse_with_saphyr};

    /// The scanner's parse of `text`, when it takes the text.
    fn fast(text: &str) -> Option<Parse> {
        let mut builder = Builder::with_byte_markers(text, true);
        scan(text, &mut builder)?;
        Some(builder.finish(std::sync::Arc::from(text)))
    }

    /// Whenever the scanner takes a text, its tree and errors are saphyr's. Returns whether it took it.
    fn same(text: &str) -> bool {
        let Some(fast) = fast(text) else { return false };
        let full = parse_with_saphyr(std::sync::Arc::from(text));
        // Debug output compares NaN with NaN.
        assert_eq!(format!("{:?}", fast.root), format!("{:?}", full.root), "tree of {text:?}");
        assert_eq!(fast.errors, full.errors, "errors of {text:?}");
        assert_eq!(fast.text, full.text);
        true
    }

    /// The manifests of the workspace's packages, as `init` and the benches write them.
    const TYPICAL: &[&str] = &[
        "# yaml-language-server: $schema=../../schemas/v1/workbench.schema.json\nspec: 1\nversion: 1.2.0\n\
         name: pkg-0001\ndescription: Generated package 1.\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n  \
         routes:\n    - provider: openai\ninstructions: ./instructions.md\nskills:\n  - ./skills/review\n  - \
         ./skills/release\ntools: [node, npm]\nmcps:\n  - name: db\n    transport: http\n    url: \
         https://db.example.com/mcp/1\n    headers:\n      Authorization: Bearer ${DB_TOKEN}\nenv:\n  DB_TOKEN:\n    \
         required: true\n  DATABASE_URL:\n    required: false\nruntimes:\n  docker:\n    image:\n      build: \
         ./Dockerfile\n      context: ../..\n  local: {}\n",
        "name: review\ndescription: The review skill of package 1.\n",
        "spec: 1\nname: quirks\nskills:\n- ./a\n-   ./b\nempty:\nnote:   # a comment\n\n# between\nnested:\n  # \
         inside\n  key: 1\ntools: [ a , b ]\nlocal: { }\nq: \"a b\"\ns: 'x'\nlast: a  b   \n",
        "a:\n- k: v\n  j: w\n- b\nc:\n  - x:\n  - y\nd:\n",
    ];

    #[test]
    fn the_manifests_of_the_workspace_are_taken_and_parsed_as_saphyr_does() {
        for text in TYPICAL {
            assert!(same(text), "the scanner takes {text:?}");
        }
        assert!(same(&large()));
    }

    #[test]
    fn what_saphyr_parses_differently_is_declined() {
        for text in [
            "",
            "# only a comment\n",
            "plain root\n",
            "- a\n- b\n",
            "a: b\n  continued\n",
            "a:\n  b: c\n   d\n",
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: |\n  block\n",
            "a: >\n  folded\n",
            "a: \"esc\\n\"\n",
            "a: 'it''s'\n",
            "a: \"quoted\" # comment\n",
            "a: [x] # comment\n",
            "a: [x,]\n",
            "a: [x, [y]]\n",
            "a: {b: c}\n",
            "a:\tb\n",
            "a: b\r\n",
            "---\na: b\n",
            "a: b\n...\n",
            "%YAML 1.2\n---\na: b\n",
            "\u{feff}a: b\n",
            "a: b: c\n",
            "a: b:\n",
            "a :b\n",
            "a : b\n",
            "\"a\": b\n",
            "? a\n: b\n",
            "a: -1\n",
            "a:\n  - - x\n",
            "a:\n  -\n    b: c\n",
            "a: b\nb: c\n  d: e\n",
            "  a: 1\nb: 2\n",
            "a:\n  b: 1\n c: 2\n",
            "a: x\u{2028}y\n",
            "a: x\u{85}y\n",
        ] {
            assert!(fast(text).is_none() || same(text), "{text:?}");
        }
        assert!(fast("a: \"quoted\" # comment\n").is_none(), "a quoted scalar's span runs over the comment");
        assert!(fast("a: [x] # comment\n").is_none(), "a flow end's span runs over the comment");
        assert!(fast("a: b\n  continued\n").is_none(), "a plain scalar over two lines");
    }

    /// Every fixture (and the corpus's texts beyond the subset): taken or declined, never parsed differently.
    /// Most clean manifests are taken, or the scanner would not be worth having.
    #[test]
    fn every_fixture_is_parsed_as_saphyr_does() {
        let corpus = corpus_cached();
        let clean: Vec<&String> = corpus
            .iter()
            .filter(|text| parse_with_saphyr(std::sync::Arc::from(text.as_str())).errors.is_empty())
            .collect();
        let taken = corpus.iter().filter(|text| same(text)).count();
        let clean_taken = clean.iter().filter(|text| fast(text).is_some()).count();
        assert!(clean_taken * 10 >= clean.len() * 7, "{clean_taken} of {} clean texts taken", clean.len());
        assert!(taken > 0);
    }

    /// Every single-character change at every position of the small texts: what an editor sends most, and
    /// what moves a text just outside the subset.
    #[test]
    fn every_typed_or_deleted_character_is_parsed_as_saphyr_does() {
        let mut taken = 0;
        for old in corpus_cached().iter().map(String::as_str).chain(TYPICAL.iter().copied()).filter(|t| t.len() < 500) {
            for at in (0..=old.len()).filter(|at| old.is_char_boundary(*at)) {
                for insert in ["x", " ", "\n", ":", "-", "#", "'"] {
                    taken += usize::from(same(&edit(old, at, 0, insert)));
                }
                taken += usize::from(same(&edit(old, at, 1, "")));
            }
        }
        assert!(taken > 1000, "{taken} edited texts taken");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// A random edit of a text: taken and parsed as saphyr does, or declined.
        #[test]
        fn a_random_edit_is_parsed_as_saphyr_does((_, new) in random_edit("[a-zA-Z0-9_ :#-]{0,6}")) {
            same(&new);
        }
    }
}
