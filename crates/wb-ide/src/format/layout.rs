//! The layout pass: every line that starts a block mapping's key or a sequence's `-` gets the indentation of
//! its depth (two spaces a level, a sequence indented under its key), the lines of a multi-line value move with
//! the line it starts on, comments follow the line they sit above, and inside a line `key: value` and `- item`
//! get one space. Quotes go where a plain scalar reads back as the same string.

use wb_syntax::{Node, Parse, Style, TextRange, Value};

/// One line of the source: where it starts, where its content ends (before the line break) and the break.
#[derive(Clone, Copy, Debug)]
struct Line {
    start: usize,
    content_end: usize,
    end: usize,
}

/// What the walk decided about a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Not reached by the walk: blank, a comment, a document marker, or something left as written.
    Free,
    /// Starts a key or a `-` at this column.
    Starts(usize),
    /// Inside a value that began on an earlier line; moves with that line.
    Continues(usize),
}

struct Plan<'a> {
    text: &'a str,
    lines: Vec<Line>,
    roles: Vec<Role>,
    /// Replacements inside lines (sorted before use), in source offsets; none crosses a line break.
    replacements: Vec<(TextRange, String)>,
}

/// Lays out `parse.text`. The caller checks that the result means the same.
pub(super) fn layout(parse: &Parse) -> String {
    let text: &str = &parse.text;
    let lines = split_lines(text);
    let mut plan = Plan { text, roles: vec![Role::Free; lines.len()], lines, replacements: Vec::new() };
    if let Some(root) = &parse.root {
        match (&root.value, root.style) {
            (Value::Mapping(_) | Value::Sequence(_), Style::Block) => plan.block(root, 0),
            _ => plan.continuation(root),
        }
    }
    plan.render()
}

fn split_lines(text: &str) -> Vec<Line> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\n' => {
                lines.push(Line { start, content_end: at, end: at + 1 });
                at += 1;
                start = at;
            }
            b'\r' => {
                let end = if bytes.get(at + 1) == Some(&b'\n') { at + 2 } else { at + 1 };
                lines.push(Line { start, content_end: at, end });
                at = end;
                start = at;
            }
            _ => at += 1,
        }
    }
    if start < bytes.len() {
        lines.push(Line { start, content_end: bytes.len(), end: bytes.len() });
    }
    lines
}

impl Plan<'_> {
    fn line_of(&self, offset: usize) -> usize {
        self.lines.partition_point(|line| line.end <= offset).min(self.lines.len().saturating_sub(1))
    }

    /// The offset of the first non-space byte of a line.
    fn first_non_space(&self, line: usize) -> usize {
        let Line { start, content_end, .. } = self.lines[line];
        start + self.text[start..content_end].bytes().take_while(|b| *b == b' ').count()
    }

    fn indent(&self, line: usize) -> usize {
        self.first_non_space(line) - self.lines[line].start
    }

    fn starts_line(&self, offset: usize) -> bool {
        !self.lines.is_empty() && self.first_non_space(self.line_of(offset)) == offset
    }

    fn claim(&mut self, offset: usize, column: usize) {
        let line = self.line_of(offset);
        if self.roles[line] == Role::Free {
            self.roles[line] = Role::Starts(column);
        }
    }

    /// The last line a node's text reaches (a range that ends just after a line break ends on that line).
    /// A block scalar's range runs on to where the next token starts: its trailing line breaks and indentation
    /// are not its lines.
    fn last_line(&self, node: &Node) -> usize {
        let text = &self.text[node.range.start..node.range.end.min(self.text.len())];
        let end = node.range.start + text.trim_end_matches([' ', '\n', '\r']).len();
        self.line_of(end.saturating_sub(1).max(node.range.start))
    }

    /// The lines of a block scalar (`|`, `>`), whose range starts at its content, move with the line of its
    /// header.
    fn block_scalar(&mut self, node: &Node, header_line: usize) {
        for line in header_line + 1..=self.last_line(node) {
            if self.roles[line] == Role::Free {
                self.roles[line] = Role::Continues(header_line);
            }
        }
    }

    /// A block collection whose lines start at `column`.
    fn block(&mut self, node: &Node, column: usize) {
        match &node.value {
            Value::Mapping(mapping) => {
                for entry in &mapping.entries {
                    if self.starts_line(entry.key_range.start) {
                        self.claim(entry.key_range.start, column);
                    }
                    self.value(&entry.value, entry.key_range, column);
                }
            }
            Value::Sequence(items) => {
                for item in items {
                    self.item(item, column);
                }
            }
            _ => self.continuation(node),
        }
    }

    /// The value of a key written at `column`.
    fn value(&mut self, value: &Node, key: TextRange, column: usize) {
        let key_line = self.line_of(key.start);
        if value.range.start < key.end {
            return;
        }
        let value_line = self.line_of(value.range.start);
        if value_line == key_line {
            self.key_spacing(key, value);
            self.unquote(value);
            self.continuation(value);
            return;
        }
        // `key   :` at the end of its line.
        let spaces = self.text[key.end..].bytes().take_while(|b| *b == b' ').count();
        if spaces > 0 && self.text.as_bytes().get(key.end + spaces) == Some(&b':') {
            self.replacements.push((TextRange::new(key.end, key.end + spaces), String::new()));
        }
        if is_block_collection(value) {
            self.block(value, column + 2);
        } else if is_block_scalar(value) {
            self.block_scalar(value, key_line);
        } else if self.starts_line(value.range.start) {
            self.claim(value.range.start, column + 2);
            self.continuation(value);
        }
    }

    /// A sequence item whose `-` is written at `column`.
    fn item(&mut self, item: &Node, column: usize) {
        let before = &self.text[..item.range.start];
        let spaces = before.len() - before.trim_end_matches(' ').len();
        let dash = item.range.start - spaces;
        if dash == 0 || self.text.as_bytes()[dash - 1] != b'-' {
            // An empty item, or one written in a way the walk does not model: left as written.
            return;
        }
        let dash = dash - 1;
        if self.starts_line(dash) {
            self.claim(dash, column);
        }
        let same_line = self.line_of(dash) == self.line_of(item.range.start);
        if same_line && spaces > 1 {
            self.replacements.push((TextRange::new(dash + 1, item.range.start), " ".to_owned()));
        }
        if is_block_collection(item) {
            self.block(item, column + 2);
        } else if is_block_scalar(item) {
            self.block_scalar(item, self.line_of(dash));
        } else {
            if same_line {
                self.unquote(item);
            } else if self.starts_line(item.range.start) {
                self.claim(item.range.start, column + 2);
            }
            self.continuation(item);
        }
    }

    /// The lines after a value's first move with that first line.
    fn continuation(&mut self, node: &Node) {
        let first = self.line_of(node.range.start);
        for line in first + 1..=self.last_line(node) {
            if self.roles[line] == Role::Free {
                self.roles[line] = Role::Continues(first);
            }
        }
    }

    /// `key   :   value` → `key: value`, when nothing but spaces and the colon lie between.
    fn key_spacing(&mut self, key: TextRange, value: &Node) {
        let between = &self.text[key.end..value.range.start];
        let Some((before, after)) = between.split_once(':') else { return };
        if before.bytes().all(|b| b == b' ') && after.bytes().all(|b| b == b' ') && !after.is_empty() && between != ": "
        {
            self.replacements.push((TextRange::new(key.end, value.range.start), ": ".to_owned()));
        }
    }

    /// A one-line quoted string that reads back the same without quotes loses them.
    fn unquote(&mut self, node: &Node) {
        if !matches!(node.style, Style::SingleQuoted | Style::DoubleQuoted) {
            return;
        }
        let Value::String(value) = &node.value else { return };
        if self.line_of(node.range.start) != self.last_line(node) || !reads_back_plain(value) {
            return;
        }
        self.replacements.push((node.range, value.to_string()));
    }

    fn render(&self) -> String {
        let mut replacements = self.replacements.clone();
        replacements.sort_by_key(|(range, _)| range.start);
        let mut next = 0;
        let mut out = String::with_capacity(self.text.len());
        let mut blank_run = 0;
        for (index, line) in self.lines.iter().enumerate() {
            let role = self.roles[index];
            let indent = self.indent(index);
            let body_start = line.start + indent;
            let content = &self.text[body_start..line.content_end];
            let blank = content.trim_start().is_empty();
            let new_indent = match role {
                Role::Starts(column) => column,
                // A blank line inside a block scalar keeps its spaces relative to the scalar too.
                Role::Continues(owner) => shift(indent, self.delta(owner)),
                Role::Free if blank => {
                    blank_run += 1;
                    // No blank line at the start, and never two in a row.
                    if blank_run > 1 || out.is_empty() {
                        continue;
                    }
                    out.push_str(line_break(self.text, line));
                    continue;
                }
                Role::Free if content.starts_with('#') => self.comment_indent(index),
                Role::Free => indent,
            };
            blank_run = 0;
            out.extend(std::iter::repeat_n(' ', new_indent));
            // The line's content with the replacements that fall in it.
            let mut cursor = body_start;
            let mut rendered = String::new();
            while let Some((range, replacement)) = replacements.get(next) {
                if range.start >= line.content_end {
                    break;
                }
                next += 1;
                if range.start < cursor || range.end > line.content_end {
                    continue;
                }
                rendered.push_str(&self.text[cursor..range.start]);
                rendered.push_str(replacement);
                cursor = range.end;
            }
            rendered.push_str(&self.text[cursor..line.content_end]);
            match role {
                // Literal content keeps its trailing spaces.
                Role::Continues(_) => out.push_str(&rendered),
                _ => out.push_str(rendered.trim_end_matches([' ', '\t'])),
            }
            out.push_str(line_break(self.text, line));
        }
        // No blank lines at the end, and one line break.
        while out.ends_with("\n\n") || out.ends_with("\r\n\r\n") {
            out.truncate(out.len() - if out.ends_with("\r\n") { 2 } else { 1 });
        }
        if !out.is_empty() && !out.ends_with('\n') && !out.ends_with('\r') {
            out.push_str(self.first_break());
        }
        out
    }

    /// How far a line that starts something moved.
    fn delta(&self, line: usize) -> isize {
        match self.roles[line] {
            Role::Starts(column) => column as isize - self.indent(line) as isize,
            Role::Continues(owner) if owner != line => self.delta(owner),
            _ => 0,
        }
    }

    /// A comment line takes the indentation of the line it sits above when it was written at that line's
    /// indentation; else of the line it follows; else it moves with the line it sits above.
    fn comment_indent(&self, index: usize) -> usize {
        let indent = self.indent(index);
        let next = (index + 1..self.lines.len()).find(|&line| matches!(self.roles[line], Role::Starts(_)));
        let previous = (0..index).rev().find(|&line| matches!(self.roles[line], Role::Starts(_)));
        for candidate in [next, previous].into_iter().flatten() {
            if let Role::Starts(column) = self.roles[candidate]
                && self.indent(candidate) == indent
            {
                return column;
            }
        }
        match next {
            Some(line) => shift(indent, self.delta(line)),
            None => indent,
        }
    }

    /// The line break the document uses first (`\n` when it has none).
    fn first_break(&self) -> &'static str {
        match self.lines.first().map(|line| &self.text[line.content_end..line.end]) {
            Some("\r\n") => "\r\n",
            Some("\r") => "\r",
            _ => "\n",
        }
    }
}

fn line_break<'t>(text: &'t str, line: &Line) -> &'t str {
    &text[line.content_end..line.end]
}

fn shift(indent: usize, delta: isize) -> usize {
    indent.saturating_add_signed(delta)
}

/// Older YAML 1.1 readers (PyYAML in pre-commit, many linters) resolve more plain scalars than YAML 1.2 does:
/// booleans `y`/`n`/`yes`/`no`/`on`/`off` (any case), integers with `_`, `0b`, a leading `0` (octal) or a sign
/// before `0x`, sexagesimal numbers (`1:30`), floats such as `1_0.5` or `+.inf` in any case, dates and
/// timestamps with a time (`2001-12-14 21:59:43.10 -5`, `2001-12-14t21:59:43Z`), the merge key `<<`, the value
/// key `=`, and null `~`. Such strings keep their quotes. The test is wider than the YAML 1.1 resolvers
/// (anything that starts like a date, any mix of digits and the characters numbers use): a quote kept that
/// was not needed changes nothing.
fn reads_otherwise_in_yaml_1_1(value: &str) -> bool {
    const WORDS: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "=", "<<"];
    let unsigned = value.strip_prefix(['+', '-']).unwrap_or(value);
    WORDS.iter().any(|word| value.eq_ignore_ascii_case(word))
        || [".inf", ".nan"].iter().any(|special| unsigned.eq_ignore_ascii_case(special))
        || starts_like_a_date(value)
        || (value.starts_with(|ch: char| ch.is_ascii_digit() || matches!(ch, '+' | '-' | '.'))
            && value
                .chars()
                .all(|ch| ch.is_ascii_hexdigit() || matches!(ch, '+' | '-' | '.' | '_' | ':' | 'x' | 'o' | 'X' | 'O')))
}

/// `YYYY-M`: the start of every YAML 1.1 date and timestamp.
fn starts_like_a_date(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() >= 6 && bytes[..4].iter().all(u8::is_ascii_digit) && bytes[4] == b'-' && bytes[5].is_ascii_digit()
}

/// Characters a plain scalar must not hold for every reader: controls (C0, C1 including U+0085 NEL), the
/// byte-order mark, U+2028 and U+2029 (line breaks to a YAML 1.1 reader, which would fold the value), and the
/// non-characters U+FFFE and U+FFFF (which a YAML 1.1 reader refuses unescaped).
fn is_special(ch: char) -> bool {
    ch.is_control() || matches!(ch, '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}')
}

fn is_block_scalar(node: &Node) -> bool {
    matches!(node.style, Style::Literal | Style::Folded)
}

fn is_block_collection(node: &Node) -> bool {
    matches!(node.value, Value::Mapping(_) | Value::Sequence(_)) && node.style == Style::Block
}

/// Whether `value` written plain as a mapping value in block context reads back as this very string. The
/// parser is the judge; the cheap checks first only keep it from being asked about text that cannot pass.
pub(super) fn reads_back_plain(value: &str) -> bool {
    let Some(first) = value.chars().next() else { return false };
    if !(first.is_alphanumeric() || matches!(first, '.' | '/' | '_' | '$' | '(' | '+' | '=' | '^' | '<' | '~'))
        || value.ends_with([' ', ':'])
        || value.contains(": ")
        || value.contains(" #")
        || value.chars().any(is_special)
        || reads_otherwise_in_yaml_1_1(value)
    {
        return false;
    }
    let probe = wb_syntax::parse_str(&format!("k: {value}\n"));
    probe.errors.is_empty()
        && probe
            .root
            .as_ref()
            .and_then(Node::as_mapping)
            .and_then(|mapping| mapping.get("k"))
            .is_some_and(|node| node.style == Style::Plain && node.as_str() == Some(value))
}
