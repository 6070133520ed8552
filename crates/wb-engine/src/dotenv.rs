//! The dotenv files `--env-file` reads. The grammar, exactly (documented for users in `docs/env-files.md`):
//!
//! - The file is UTF-8 (a leading byte order mark is ignored); lines end with LF or CRLF.
//! - Blank lines, and lines whose first non-blank character is `#`, are ignored.
//! - Every other line is an assignment: optional spaces or tabs, optionally `export` and at least one space or
//!   tab, a NAME matching `[A-Z_][A-Z0-9_]*`, optional spaces or tabs, `=`, optional spaces or tabs, a value.
//! - A value in double quotes ends at the first unescaped `"` on the same line; `\\`, `\"`, `\n`, `\r` and
//!   `\t` are escapes, and any other backslash stays as written (`"C:\Users"` is `C:\Users`).
//! - A value in single quotes is literal up to the next `'` on the same line.
//! - After a quoted value, only spaces, tabs and a `#` comment may follow.
//! - An unquoted value runs to the end of the line; a `#` after a space or tab starts a comment, any other `#`
//!   belongs to the value; spaces and tabs around the value are removed. The value may be empty.
//! - Nothing is expanded: `$NAME` and `${NAME}` are kept as written. A later assignment of a name wins.
//!
//! Anything else makes the file malformed; the error names the first bad line (never its text: it may hold a
//! value).

/// A line that is not blank, a comment or an assignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// 1-based.
    pub line: usize,
}

/// `[A-Z_][A-Z0-9_]*`: the names `--env` and dotenv files may assign.
pub fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Parses a dotenv file into its assignments, in file order.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, Malformed> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let malformed = Malformed { line: index + 1 };
        let line = line.trim_start_matches(is_blank);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = strip_export(line);
        let (name, value) = line.split_once('=').ok_or(malformed)?;
        let name = name.trim_end_matches(is_blank);
        if !is_name(name) {
            return Err(malformed);
        }
        let value = value_of(value).ok_or(malformed)?;
        entries.push((name.to_owned(), value));
    }
    Ok(entries)
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// `export NAME=…` → `NAME=…` (`export` alone, or `exported=…`, are left for the name check to refuse).
fn strip_export(line: &str) -> &str {
    match line.strip_prefix("export") {
        Some(rest) if rest.starts_with(is_blank) => rest.trim_start_matches(is_blank),
        _ => line,
    }
}

/// The value of the text after `=`; `None` when it is malformed.
fn value_of(raw: &str) -> Option<String> {
    let start = raw.trim_start_matches(is_blank);
    let (value, rest) = if let Some(quoted) = start.strip_prefix('"') {
        double_quoted(quoted)?
    } else if let Some(quoted) = start.strip_prefix('\'') {
        let end = quoted.find('\'')?;
        (quoted[..end].to_owned(), &quoted[end + 1..])
    } else {
        // The blanks before the value count: `A= # note` is an empty value and a comment.
        return Some(unquoted(raw));
    };
    let rest = rest.trim_start_matches(is_blank);
    (rest.is_empty() || rest.starts_with('#')).then_some(value)
}

/// The value of a double-quoted text (after its opening quote) and what follows its closing quote.
fn double_quoted(text: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((index, c)) = chars.next() {
        match c {
            '"' => return Some((value, &text[index + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => value.push('\n'),
                'r' => value.push('\r'),
                't' => value.push('\t'),
                escaped @ ('\\' | '"') => value.push(escaped),
                other => {
                    value.push('\\');
                    value.push(other);
                }
            },
            other => value.push(other),
        }
    }
    None
}

/// An unquoted value: up to a `#` that follows a blank, without surrounding blanks.
fn unquoted(raw: &str) -> String {
    let mut end = raw.len();
    let mut previous_blank = false;
    for (index, c) in raw.char_indices() {
        if c == '#' && previous_blank {
            end = index;
            break;
        }
        previous_blank = is_blank(c);
    }
    raw[..end].trim_matches(is_blank).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<(String, String)> {
        match parse(text) {
            Ok(entries) => entries,
            Err(error) => panic!("{text:?} is malformed at line {}", error.line),
        }
    }

    fn one(text: &str) -> String {
        let entries = values(text);
        assert_eq!(entries.len(), 1, "{text:?}");
        entries[0].1.clone()
    }

    #[test]
    fn escapes_in_double_quotes_are_read_once_from_left_to_right() {
        assert_eq!(one(r#"A="C:\\new""#), r"C:\new");
        assert_eq!(one(r#"A="x y\n""#), "x y\n");
        assert_eq!(one(r#"A="tab\there\r""#), "tab\there\r");
        assert_eq!(one(r#"A="say \"hi\"""#), r#"say "hi""#);
        assert_eq!(one(r#"A="C:\Users\x""#), r"C:\Users\x", "other backslashes stay as written");
        assert_eq!(one(r#"A="a # not a comment""#), "a # not a comment");
        assert_eq!(one(r#"A="$HOME ${HOME}""#), "$HOME ${HOME}", "nothing is expanded");
    }

    #[test]
    fn comments_after_quoted_and_unquoted_values() {
        assert_eq!(one(r#"A="x" # note"#), "x");
        assert_eq!(one("A=\"x\"\t# note"), "x");
        assert_eq!(one(r##"A="x"# note"##), "x");
        assert_eq!(one("A='x' # note"), "x");
        assert_eq!(one("A=v # note"), "v");
        assert_eq!(one("A=v\t# note"), "v");
        assert_eq!(one("A=v#not-a-comment"), "v#not-a-comment");
        assert_eq!(one("A=#secret"), "#secret");
        assert_eq!(one("A= # only a comment"), "");
        assert_eq!(values("# a comment\n  # an indented one\n\n\t\nA=1\n").len(), 1);
    }

    #[test]
    fn single_quotes_are_literal() {
        assert_eq!(one(r"A='C:\new \n $X'"), r"C:\new \n $X");
        assert_eq!(one(r#"A='say "hi"'"#), r#"say "hi""#);
        assert_eq!(one("A='q' "), "q");
    }

    #[test]
    fn export_prefix_blanks_and_empty_values() {
        assert_eq!(
            values("export A=1\nexport\tB=2\n  C = 3  \nD=\nE=\"\"\nF=''\nG=  spaced  value \n"),
            [("A", "1"), ("B", "2"), ("C", "3"), ("D", ""), ("E", ""), ("F", ""), ("G", "spaced  value")]
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        assert_eq!(
            values("\u{feff}A=1\r\nB=2\r\n"),
            [("A".to_owned(), "1".to_owned()), ("B".to_owned(), "2".to_owned())]
        );
        assert_eq!(one("A=it's"), "it's", "a quote inside an unquoted value is literal");
    }

    #[test]
    fn malformed_lines_are_named_by_number() {
        let cases = [
            ("not an assignment\n", 1),
            ("A=1\nlower=1\n", 2),
            ("A=1\n\n# c\nB=\"open\n", 4),
            ("A='open\n", 1),
            ("A=\"x\" trailing\n", 1),
            ("A='x'y\n", 1),
            ("A='it''\n", 1),
            ("A=\"ends with a backslash\\\"\n", 1),
            ("export\n", 1),
            ("exportA=1\n", 1),
            ("=1\n", 1),
            ("1A=1\n", 1),
            ("A B=1\n", 1),
        ];
        for (text, line) in cases {
            assert_eq!(parse(text), Err(Malformed { line }), "{text:?}");
        }
    }
}
