//! Byte ranges into a source text.

use std::fmt;
use std::ops::Range;

/// A half-open byte range `start..end` into a source text.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct TextRange {
    pub start: usize,
    pub end: usize,
}

impl TextRange {
    pub const fn new(start: usize, end: usize) -> TextRange {
        if start <= end { TextRange { start, end } } else { TextRange { start: end, end: start } }
    }

    pub const fn empty(offset: usize) -> TextRange {
        TextRange { start: offset, end: offset }
    }

    pub const fn len(self) -> usize {
        self.end - self.start
    }

    pub const fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// The smallest range covering both.
    pub fn cover(self, other: TextRange) -> TextRange {
        TextRange { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    /// True when `offset` lies inside the range or touches its end (the cursor convention of editors).
    pub const fn contains_inclusive(self, offset: usize) -> bool {
        self.start <= offset && offset <= self.end
    }

    pub fn as_range(self) -> Range<usize> {
        self.start..self.end
    }
}

impl fmt::Debug for TextRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

impl From<Range<usize>> for TextRange {
    fn from(range: Range<usize>) -> TextRange {
        TextRange::new(range.start, range.end)
    }
}
