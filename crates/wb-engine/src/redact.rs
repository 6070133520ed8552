//! Redaction: the values a run binds never leave the engine in what it emits, also when the runner streams a
//! value in pieces (a secret split over two text deltas).

use serde_json::Value;

/// What a redacted value is replaced with.
const REDACTED: &str = "[redacted]";

/// Removes environment values from text before it leaves the engine.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    secrets: Vec<Secret>,
}

/// A value to redact, with what finding its beginnings at the end of a text needs.
#[derive(Clone, Debug)]
struct Secret {
    text: String,
    /// For each length `n`, the longest proper prefix of `text[..n]` that also ends it (Knuth–Morris–Pratt).
    borders: Vec<usize>,
}

impl Secret {
    fn new(text: String) -> Secret {
        let bytes = text.as_bytes();
        let mut borders = vec![0; bytes.len()];
        let mut border = 0;
        for index in 1..bytes.len() {
            while border > 0 && bytes[index] != bytes[border] {
                border = borders[border - 1];
            }
            if bytes[index] == bytes[border] {
                border += 1;
            }
            borders[index] = border;
        }
        Secret { text, borders }
    }

    /// The length of the longest end of `text` that begins this value without being all of it, in time
    /// linear in the value's length. Only the last `len - 1` bytes can hold it, so the whole value is never
    /// matched there.
    fn unfinished_in(&self, text: &[u8]) -> usize {
        let pattern = self.text.as_bytes();
        let tail = &text[text.len().saturating_sub(pattern.len() - 1)..];
        let mut matched = 0;
        for &byte in tail {
            while matched > 0 && pattern[matched] != byte {
                matched = self.borders[matched - 1];
            }
            if pattern[matched] == byte {
                matched += 1;
            }
        }
        matched
    }
}

impl Redactor {
    pub fn new<'a>(values: impl Iterator<Item = &'a str>) -> Redactor {
        // Very short values would redact ordinary words; they are not credentials anyway.
        let mut secrets: Vec<String> = values.filter(|v| v.len() >= 4).map(str::to_owned).collect();
        // Longest first, so a value that contains another is replaced whole; by text within a length, so that
        // `dedup` meets every repeat (two values of the same length need not be adjacent otherwise).
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets: secrets.into_iter().map(Secret::new).collect() }
    }

    pub fn text(&self, text: &str) -> String {
        render(text, 0, text.len(), &self.occurrences(text))
    }

    /// Where values occur in `text`, by start: longest values first, so a value that contains another is
    /// replaced whole; an occurrence that overlaps one already found is not another.
    fn occurrences(&self, text: &str) -> Vec<(usize, usize)> {
        // Start to end; the occurrences found never overlap, so only the last one starting before a candidate's
        // end can overlap it.
        let mut found = std::collections::BTreeMap::<usize, usize>::new();
        for secret in &self.secrets {
            for (start, _) in text.match_indices(secret.text.as_str()) {
                let end = start + secret.text.len();
                if found.range(..end).next_back().is_none_or(|(_, &before)| before <= start) {
                    found.insert(start, end);
                }
            }
        }
        found.into_iter().collect()
    }

    pub fn value(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.text(text)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (self.text(k), self.value(v))).collect()),
            other => other.clone(),
        }
    }

    /// The length of the longest end of `text` that is the beginning of a value (and not the whole value):
    /// the part the next piece of a stream may complete.
    fn unfinished_suffix(&self, text: &str) -> usize {
        self.secrets.iter().map(|secret| secret.unfinished_in(text.as_bytes())).max().unwrap_or(0)
    }

    /// The end of the furthest-reaching whole value in `text` that starts before `cut` and ends after it.
    fn straddling(&self, text: &str, cut: usize) -> Option<usize> {
        let mut furthest = None;
        for secret in &self.secrets {
            let secret = secret.text.as_str();
            let mut from = floor_char_boundary(text, cut.saturating_sub(secret.len() - 1));
            while let Some(found) = text[from..].find(secret) {
                let start = from + found;
                if start >= cut {
                    break;
                }
                let end = start + secret.len();
                if end > cut && furthest.is_none_or(|furthest| end > furthest) {
                    furthest = Some(end);
                }
                from = start + text[start..].chars().next().map_or(1, char::len_utf8);
            }
        }
        furthest
    }
}

/// `text[from..to]` with every occurrence that starts there replaced, and the rest of one that started before
/// left out (it was replaced where it started).
fn render(text: &str, from: usize, to: usize, occurrences: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(to - from);
    let mut position = from;
    for &(start, end) in occurrences.iter().filter(|&&(start, end)| start < to && end > from) {
        if start >= from {
            out.push_str(&text[position..start]);
            out.push_str(REDACTED);
        }
        position = end.min(to);
    }
    out.push_str(&text[position..to]);
    out
}

fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// Text that arrives in pieces (the runner's streamed text), each with a payload (the event it came in),
/// redacted as if it had arrived whole. A piece whose end could begin a value is held back, with those after
/// it, until the pieces that follow show whether it does; each piece is then released with its own payload
/// and its own text, a value split over pieces being replaced in the piece where it starts.
/// [`StreamedText::finish`] releases what is held.
#[derive(Debug)]
pub struct StreamedText<T> {
    /// The held pieces' text, together.
    text: String,
    /// The held pieces: payload and where each ends in `text` (each starts where the one before ends).
    pieces: Vec<(T, usize)>,
}

impl<T> Default for StreamedText<T> {
    fn default() -> StreamedText<T> {
        StreamedText { text: String::new(), pieces: Vec::new() }
    }
}

impl<T> StreamedText<T> {
    /// The pieces that can be released now that `piece` has arrived, redacted, in order.
    pub fn push(&mut self, redactor: &Redactor, payload: T, piece: &str) -> Vec<(T, String)> {
        self.text.push_str(piece);
        self.pieces.push((payload, self.text.len()));
        let mut cut = self.text.len() - redactor.unfinished_suffix(&self.text);
        // A whole value across the cut is released whole, so it is redacted whole.
        while let Some(end) = redactor.straddling(&self.text, cut) {
            cut = end;
        }
        self.release(redactor, cut)
    }

    /// Every held piece, redacted: the stream ended, or other output came between.
    pub fn finish(&mut self, redactor: &Redactor) -> Vec<(T, String)> {
        self.release(redactor, self.text.len())
    }

    /// Releases the pieces that end by `cut` (no value crosses it).
    fn release(&mut self, redactor: &Redactor, cut: usize) -> Vec<(T, String)> {
        let count = self.pieces.iter().take_while(|(_, end)| *end <= cut).count();
        if count == 0 {
            return Vec::new();
        }
        let occurrences = redactor.occurrences(&self.text[..cut]);
        let mut released = Vec::with_capacity(count);
        let mut start = 0;
        for (payload, end) in self.pieces.drain(..count) {
            released.push((payload, render(&self.text, start, end, &occurrences)));
            start = end;
        }
        // The rest of a value that began in a released piece went with it.
        let kept_from = occurrences.iter().filter(|&&(s, _)| s < start).map(|&(_, e)| e).fold(start, usize::max);
        self.text.drain(..kept_from);
        for (_, end) in &mut self.pieces {
            *end -= kept_from;
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_repeated_secret_is_kept_once_longest_first() {
        let redactor = Redactor::new(["abcd", "wxyz", "abcd", "longer-value", "wxyz"].into_iter());
        let texts: Vec<&str> = redactor.secrets.iter().map(|secret| secret.text.as_str()).collect();
        assert_eq!(texts, ["longer-value", "abcd", "wxyz"]);
    }

    /// What `StreamedText` releases after each piece (the pieces' numbers with their texts), then at the end.
    fn stream(secrets: &[&str], pieces: &[&str]) -> Vec<Vec<(usize, String)>> {
        let redactor = Redactor::new(secrets.iter().copied());
        let mut text = StreamedText::default();
        let mut out: Vec<Vec<(usize, String)>> =
            pieces.iter().enumerate().map(|(index, piece)| text.push(&redactor, index, piece)).collect();
        out.push(text.finish(&redactor));
        assert!(text.finish(&redactor).is_empty(), "nothing is held after the end");
        out
    }

    fn released(steps: &[&[(usize, &str)]]) -> Vec<Vec<(usize, String)>> {
        steps.iter().map(|step| step.iter().map(|(index, text)| (*index, (*text).to_owned())).collect()).collect()
    }

    #[test]
    fn a_value_split_over_pieces_is_redacted_where_it_starts() {
        assert_eq!(
            stream(&["hunter22"], &["key=hun", "ter22!"]),
            released(&[&[], &[(0, "key=[redacted]"), (1, "!")], &[]])
        );
        assert_eq!(
            stream(&["hunter22"], &["h", "un", "te", "r2", "2."]),
            released(&[&[], &[], &[], &[], &[(0, "[redacted]"), (1, ""), (2, ""), (3, ""), (4, ".")], &[]])
        );
        // The rest of the value in a piece still held is left out of it when it goes.
        assert_eq!(
            stream(&["hunter22"], &["key=hunter", "22 and h"]),
            released(&[&[], &[(0, "key=[redacted]")], &[(1, " and h")]])
        );
    }

    #[test]
    fn pieces_keep_their_text_unless_a_value_crosses_them() {
        // An end that only looks like the value's beginning waits for the next piece, or the end.
        assert_eq!(
            stream(&["hunter22"], &["a hunt", "ing trip"]),
            released(&[&[], &[(0, "a hunt"), (1, "ing trip")], &[]])
        );
        assert_eq!(stream(&["hunter22"], &["a hunt"]), released(&[&[], &[(0, "a hunt")]]));
        // Text with no beginning of a value at its end goes out at once.
        assert_eq!(
            stream(&["hunter22"], &["plain. ", "hunter22 text."]),
            released(&[&[(0, "plain. ")], &[(1, "[redacted] text.")], &[]])
        );
        assert_eq!(stream(&[], &["any", "thing"]), released(&[&[(0, "any")], &[(1, "thing")], &[]]));
    }

    #[test]
    fn a_shorter_value_inside_a_longer_one_does_not_split_it() {
        // `abcd` at the end could be the value itself or the beginning of the longer one: it waits.
        assert_eq!(
            stream(&["abcd", "abcdefgh"], &["x abcd", "efgh y"]),
            released(&[&[], &[(0, "x [redacted]"), (1, " y")], &[]])
        );
        assert_eq!(
            stream(&["abcd", "abcdefgh"], &["x abcd", " y"]),
            released(&[&[], &[(0, "x [redacted]"), (1, " y")], &[]])
        );
        assert_eq!(Redactor::new(["abcd", "abcdefgh"].into_iter()).text("abcdefgh abcd"), "[redacted] [redacted]");
    }

    #[test]
    fn the_unfinished_end_is_found_through_repeats_inside_the_value() {
        let secret = Secret::new("abab-abac".to_owned());
        for (text, unfinished) in [
            ("x abab-aba", 8),
            ("x abab-ab", 7),
            ("abab-abab", 4),
            ("x abab-abac", 0),
            ("abab-abacabab-", 5),
            ("abab-abac-x", 0),
            ("", 0),
            ("a", 1),
        ] {
            assert_eq!(secret.unfinished_in(text.as_bytes()), unfinished, "{text}");
        }
        // A value that ends as it begins.
        let secret = Secret::new("abcab".to_owned());
        assert_eq!(secret.unfinished_in(b"xxabca"), 4);
        assert_eq!(secret.unfinished_in(b"abcab"), 2);
    }

    /// Many occurrences in one long text are found in n log n, not n²: a runner cannot slow the engine down
    /// by repeating a value.
    #[test]
    fn many_occurrences_redact_quickly() {
        let redactor = Redactor::new(["hunter22"].into_iter());
        let text = "hunter22 ".repeat(100_000);
        let started = std::time::Instant::now();
        let redacted = redactor.text(&text);
        assert_eq!(redacted.len(), "[redacted] ".len() * 100_000);
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        assert_eq!(
            stream(&["clé-secrète"], &["une clé-se", "crète ici"]),
            released(&[&[], &[(0, "une [redacted]"), (1, " ici")], &[]])
        );
        assert_eq!(
            stream(&["ééé-x"], &["é", "é", "é-", "x"]),
            released(&[&[], &[], &[], &[(0, "[redacted]"), (1, ""), (2, ""), (3, "")], &[]])
        );
    }
}
