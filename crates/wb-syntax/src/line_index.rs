//! Conversion between byte offsets and line/column positions.
//!
//! Lines end at `\n`, `\r\n` or a lone `\r` (the LSP definition). Columns count code units of the requested
//! encoding: UTF-8 bytes, UTF-16 code units (the LSP default) or Unicode scalar values (what humans and the
//! `check --format json` output call "characters").

use std::sync::Arc;

use crate::TextRange;

/// How columns are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PositionEncoding {
    Utf8,
    Utf16,
    /// Unicode scalar values ("characters").
    Utf32,
}

/// A zero-based line and a zero-based column counted in some [`PositionEncoding`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

/// Line starts of one text, plus the text itself so columns can be measured in any encoding.
#[derive(Clone, Debug)]
pub struct LineIndex {
    /// Shared with the document that holds the text (an editor's buffer is not copied again).
    text: Arc<str>,
    /// Byte offset of the first byte of each line. Always starts with 0.
    /// Byte offsets, as `u32`: a text the server reads is at most a message's size (64 MiB).
    line_starts: Vec<u32>,
    /// True when the text is pure ASCII, so every encoding counts the same.
    ascii: bool,
    /// For a text that is not ASCII: about every [`CHECKPOINT_BYTES`], what the text before that offset counts
    /// in each encoding. A column is then measured from the nearest checkpoint, never from the start of a line
    /// that may be megabytes long (a one-line manifest's thousands of positions would cost quadratic time).
    checkpoints: Vec<Checkpoint>,
}

/// How far apart the checkpoints of a non-ASCII text are.
const CHECKPOINT_BYTES: usize = 1024;

/// What the text before `offset` (a character boundary) counts.
#[derive(Clone, Copy, Debug)]
struct Checkpoint {
    offset: usize,
    utf16: usize,
    chars: usize,
}

impl Checkpoint {
    fn units(&self, encoding: PositionEncoding) -> usize {
        match encoding {
            PositionEncoding::Utf8 => self.offset,
            PositionEncoding::Utf16 => self.utf16,
            PositionEncoding::Utf32 => self.chars,
        }
    }
}

fn checkpoints(text: &str) -> Vec<Checkpoint> {
    let mut checkpoints = vec![Checkpoint { offset: 0, utf16: 0, chars: 0 }];
    let (mut utf16, mut chars, mut next) = (0, 0, CHECKPOINT_BYTES);
    for (offset, ch) in text.char_indices() {
        if offset >= next {
            checkpoints.push(Checkpoint { offset, utf16, chars });
            next = offset + CHECKPOINT_BYTES;
        }
        utf16 += ch.len_utf16();
        chars += 1;
    }
    checkpoints
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        LineIndex::shared(Arc::from(text))
    }

    /// The index of a text held elsewhere too, without copying it.
    pub fn shared(text: Arc<str>) -> LineIndex {
        let bytes = text.as_bytes();
        // Offsets past u32 (never, for a text under the message limit) saturate instead of wrapping.
        let at = |offset: usize| u32::try_from(offset).unwrap_or(u32::MAX);
        let mut line_starts = vec![0];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => line_starts.push(at(i + 1)),
                b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                    line_starts.push(at(i + 2));
                    i += 1;
                }
                b'\r' => line_starts.push(at(i + 1)),
                _ => {}
            }
            i += 1;
        }
        line_starts.shrink_to_fit();
        let ascii = text.is_ascii();
        let checkpoints = if ascii { Vec::new() } else { checkpoints(&text) };
        LineIndex { text, line_starts, ascii, checkpoints }
    }

    /// Where line `line` starts, if there is such a line.
    fn start(&self, line: usize) -> Option<usize> {
        self.line_starts.get(line).map(|&start| start as usize)
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn len(&self) -> usize {
        self.text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The range of a line's content, without its terminator. Lines past the end give an empty range at the end.
    pub fn line_range(&self, line: usize) -> TextRange {
        let Some(start) = self.start(line) else {
            return TextRange::empty(self.text.len());
        };
        let next = self.start(line + 1).unwrap_or(self.text.len());
        let content = &self.text.as_bytes()[start..next];
        let mut end = next;
        if content.ends_with(b"\r\n") {
            end -= 2;
        } else if content.ends_with(b"\n") || content.ends_with(b"\r") {
            end -= 1;
        }
        TextRange::new(start, end)
    }

    /// The line containing `offset` (offsets past the end belong to the last line).
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.line_starts.partition_point(|&start| start as usize <= offset).saturating_sub(1)
    }

    /// Converts a byte offset to a position. Offsets inside a line terminator or a multi-byte character are
    /// moved back to the nearest valid position.
    pub fn line_col(&self, offset: usize, encoding: PositionEncoding) -> LineCol {
        let line = self.line_of(offset);
        let range = self.line_range(line);
        let mut offset = offset.clamp(range.start, range.end);
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let col = if self.ascii || encoding == PositionEncoding::Utf8 {
            offset - range.start
        } else {
            self.units_before(offset, encoding) - self.units_before(range.start, encoding)
        };
        LineCol { line: to_u32(line), col: to_u32(col) }
    }

    /// What the text before `offset` (a character boundary) counts in `encoding`: from the nearest checkpoint.
    fn units_before(&self, offset: usize, encoding: PositionEncoding) -> usize {
        let at = self.checkpoints.partition_point(|c| c.offset <= offset).saturating_sub(1);
        let Some(checkpoint) = self.checkpoints.get(at) else { return measure(&self.text[..offset], encoding) };
        checkpoint.units(encoding) + measure(&self.text[checkpoint.offset..offset], encoding)
    }

    /// Converts a position to a byte offset. Lines past the end give the end of the text; columns past the end
    /// of a line give the end of that line; a column inside a character gives that character's start.
    pub fn offset(&self, position: LineCol, encoding: PositionEncoding) -> usize {
        let line = position.line as usize;
        if line >= self.line_starts.len() {
            return self.text.len();
        }
        let range = self.line_range(line);
        let wanted = position.col as usize;
        if self.ascii || encoding == PositionEncoding::Utf8 {
            let mut offset = range.start + wanted.min(range.len());
            while !self.text.is_char_boundary(offset) {
                offset -= 1;
            }
            return offset;
        }
        // Scan from the last checkpoint inside the line before the wanted column, not from the line's start.
        let line_units = self.units_before(range.start, encoding);
        let target = line_units + wanted;
        let by_units = self.checkpoints.partition_point(|c| c.units(encoding) <= target);
        let by_line = self.checkpoints.partition_point(|c| c.offset <= range.end);
        let (from, mut units) = match self.checkpoints.get(by_units.min(by_line).saturating_sub(1)) {
            Some(checkpoint) if checkpoint.offset >= range.start => {
                (checkpoint.offset, checkpoint.units(encoding) - line_units)
            }
            _ => (range.start, 0),
        };
        // A checkpoint inside a character's units (a surrogate pair) is never chosen: its units are the count
        // before the character, at most the target.
        for (index, ch) in self.text[from..range.end].char_indices() {
            let width = char_width(ch, encoding);
            if units + width > wanted {
                return from + index;
            }
            units += width;
        }
        range.end
    }

    /// Converts a byte range to a pair of positions.
    pub fn range(&self, range: TextRange, encoding: PositionEncoding) -> (LineCol, LineCol) {
        (self.line_col(range.start, encoding), self.line_col(range.end, encoding))
    }
}

fn char_width(ch: char, encoding: PositionEncoding) -> usize {
    match encoding {
        PositionEncoding::Utf8 => ch.len_utf8(),
        PositionEncoding::Utf16 => ch.len_utf16(),
        PositionEncoding::Utf32 => 1,
    }
}

fn measure(text: &str, encoding: PositionEncoding) -> usize {
    match encoding {
        PositionEncoding::Utf8 => text.len(),
        PositionEncoding::Utf16 => text.chars().map(char::len_utf16).sum(),
        PositionEncoding::Utf32 => text.chars().count(),
    }
}

fn to_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use PositionEncoding::*;

    #[test]
    fn ascii_lines_with_every_terminator() {
        let index = LineIndex::new("ab\ncd\r\nef\rgh");
        assert_eq!(index.line_count(), 4);
        assert_eq!(index.line_col(0, Utf16), LineCol { line: 0, col: 0 });
        assert_eq!(index.line_col(4, Utf16), LineCol { line: 1, col: 1 });
        // Inside "\r\n": clamps to the end of the line's content.
        assert_eq!(index.line_col(6, Utf16), LineCol { line: 1, col: 2 });
        assert_eq!(index.line_col(7, Utf16), LineCol { line: 2, col: 0 });
        assert_eq!(index.line_col(10, Utf16), LineCol { line: 3, col: 0 });
        assert_eq!(index.line_range(1), TextRange::new(3, 5));
        assert_eq!(index.offset(LineCol { line: 1, col: 9 }, Utf16), 5);
        assert_eq!(index.offset(LineCol { line: 9, col: 0 }, Utf16), 12);
    }

    #[test]
    fn non_ascii_columns_per_encoding() {
        // "é" is 2 bytes, 1 UTF-16 unit; "𝄞" is 4 bytes, 2 UTF-16 units, 1 scalar.
        let text = "x: é𝄞z\n";
        let index = LineIndex::new(text);
        let z = text.find('z').unwrap_or_default();
        assert_eq!(index.line_col(z, Utf8).col, 9);
        assert_eq!(index.line_col(z, Utf16).col, 6);
        assert_eq!(index.line_col(z, Utf32).col, 5);
        for encoding in [Utf8, Utf16, Utf32] {
            let position = index.line_col(z, encoding);
            assert_eq!(index.offset(position, encoding), z, "{encoding:?}");
        }
        // A UTF-16 column in the middle of a surrogate pair lands on the character's start.
        assert_eq!(index.offset(LineCol { line: 0, col: 5 }, Utf16), text.find('𝄞').unwrap_or_default());
        // An offset inside a multi-byte character moves back to its start.
        assert_eq!(index.line_col(4, Utf16).col, 3);
    }

    /// Columns measured from checkpoints equal columns measured from the line's start, on long lines that mix
    /// one-, two-, three- and four-byte characters and line breaks, both ways.
    #[test]
    fn long_non_ascii_lines_count_as_measured_from_their_start() {
        let mut text = String::new();
        for i in 0..3000 {
            text.push_str(["a", "é", "€", "𝄞", "b\n", "\r\n", "c"][i % 7]);
            if i % 1000 == 999 {
                text.push_str(&"x".repeat(2000));
            }
        }
        let index = LineIndex::new(&text);
        assert!(index.checkpoints.len() > 5);
        for (offset, _) in text.char_indices() {
            for encoding in [Utf8, Utf16, Utf32] {
                let position = index.line_col(offset, encoding);
                let start = index.line_range(index.line_of(offset)).start;
                let expected =
                    measure(&text[start..offset.max(start).min(index.line_range(index.line_of(offset)).end)], encoding);
                assert_eq!(position.col as usize, expected, "{offset} {encoding:?}");
                if offset <= index.line_range(position.line as usize).end {
                    assert_eq!(index.offset(position, encoding), offset, "{offset} {encoding:?}");
                }
            }
        }
    }

    #[test]
    fn crlf_and_non_ascii_together() {
        let text = "a: ü\r\nb: c\r\n";
        let index = LineIndex::new(text);
        let c = text.find('c').unwrap_or_default();
        assert_eq!(index.line_col(c, Utf16), LineCol { line: 1, col: 3 });
        assert_eq!(index.line_col(5, Utf32), LineCol { line: 0, col: 4 });
    }
}
