//! The text a person reads, rendered once for every front end: the CLI prints it and the server sends it in
//! `text`/`lines` fields (docs/lsp-extensions.md), so the editors show the same words without formatting
//! anything themselves. Everything a runner or an outcome chose passes through [`printable`] first.

pub(crate) mod event;
pub(crate) mod outcome;
pub(crate) mod smoke;
pub(crate) mod trial;

use std::borrow::Cow;

/// Whether a character must not reach a terminal as it is: control characters (escape sequences, carriage
/// returns, backspaces, C1 controls such as CSI) and the invisible bidirectional controls.
pub(crate) fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text a runner chose (paths, names, messages, the summary), safe to print to a terminal: every character of
/// [`is_unsafe`] becomes its `escape_debug` escape (`\u{1b}`, `\n`), so nothing printed can move the cursor,
/// recolour, retitle or rewrite the terminal. Everything else, backslashes included, is printed as it is.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A text of several lines, each made [`printable`] with its tabs kept (a `\r` before a line break is dropped):
/// the lines an editor shows, which hold no line break of their own.
pub(crate) fn printable_lines(text: &str) -> Vec<String> {
    text.split('\n')
        .map(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            line.split('\t').map(|part| printable(part).into_owned()).collect::<Vec<_>>().join("\t")
        })
        .collect()
}

/// Streamed text a runner wrote for a person (the model's answer): [`printable_lines`] joined again, so line
/// breaks and tabs are kept.
pub(crate) fn printable_text(text: &str) -> String {
    printable_lines(text).join("\n")
}

/// `first` followed by the text's first line, its other lines indented by two spaces, so a message or a
/// summary of several lines cannot pass for lines of their own.
pub(crate) fn continued(first: &str, text: &str) -> Vec<String> {
    printable_lines(text)
        .into_iter()
        .enumerate()
        .map(|(index, line)| if index == 0 { format!("{first}{line}") } else { format!("  {line}") })
        .collect()
}

/// `1 link`, `2 links`.
pub(crate) fn plural(count: u64, word: &str) -> String {
    format!("{count} {word}{}", if count == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::{continued, printable, printable_lines, printable_text};

    #[test]
    fn runner_text_cannot_reach_the_terminal_raw() {
        assert_eq!(printable("notes/a b\\c.txt"), "notes/a b\\c.txt");
        assert_eq!(printable("x\u{1b}[31mred\u{7}\r\u{9b}2J"), "x\\u{1b}[31mred\\u{7}\\r\\u{9b}2J");
        assert_eq!(printable("a\nb\tc\u{202e}d"), "a\\nb\\tc\\u{202e}d");
        assert_eq!(printable_text("Done.\n\tOK\r\nApplied \u{1b}]0;t\u{7}"), "Done.\n\tOK\nApplied \\u{1b}]0;t\\u{7}");
        assert_eq!(printable_lines("one\r\ntwo\n"), ["one", "two", ""]);
        assert_eq!(
            continued("Summary: ", "Done.\n\tOK\r\nApplied \u{1b}]0;t\u{7}"),
            ["Summary: Done.", "  \tOK", "  Applied \\u{1b}]0;t\\u{7}"]
        );
    }
}
