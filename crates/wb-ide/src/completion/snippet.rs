//! The two forms of a multi-line completion: the snippet for editors that expand snippets, and the plain text
//! (each placeholder's default, the first of each choice) for editors that insert text as it is.

/// The text a snippet inserts when nothing is typed into it: `${1:name}` → `name`, `${1|a,b|}` → `a`, `$1` and
/// `$0` → nothing, `\$`, `\}`, `\\` → the character. Text that is not snippet syntax stays as it is.
pub(super) fn plain_text(snippet: &str) -> String {
    let chars: Vec<char> = snippet.chars().collect();
    let mut out = String::new();
    let mut at = 0;
    render(&chars, &mut at, false, &mut out);
    out
}

/// Renders from `at` up to the end, or up to the `}` closing a placeholder when `nested`; `at` ends after it.
fn render(chars: &[char], at: &mut usize, nested: bool, out: &mut String) {
    while let Some(&ch) = chars.get(*at) {
        match ch {
            '\\' if chars.get(*at + 1).is_some_and(|next| matches!(next, '$' | '}' | '\\')) => {
                out.push(chars[*at + 1]);
                *at += 2;
            }
            '}' if nested => {
                *at += 1;
                return;
            }
            '$' => {
                if !tab_stop(chars, at, out) {
                    out.push('$');
                    *at += 1;
                }
            }
            _ => {
                out.push(ch);
                *at += 1;
            }
        }
    }
}

/// Renders the tab stop, placeholder or choice at `at` (a `$`); false, with nothing consumed, when it is none.
fn tab_stop(chars: &[char], at: &mut usize, out: &mut String) -> bool {
    let digits = |from: usize| chars[from.min(chars.len())..].iter().take_while(|c| c.is_ascii_digit()).count();
    let bare = digits(*at + 1);
    if bare > 0 {
        *at += 1 + bare;
        return true;
    }
    if chars.get(*at + 1) != Some(&'{') {
        return false;
    }
    let number = digits(*at + 2);
    if number == 0 {
        return false;
    }
    let after = *at + 2 + number;
    match chars.get(after) {
        Some('}') => {
            *at = after + 1;
            true
        }
        Some(':') => {
            *at = after + 1;
            render(chars, at, true, out);
            true
        }
        Some('|') => match first_choice(chars, after + 1) {
            Some((choice, end)) => {
                out.push_str(&choice);
                *at = end;
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// The first choice of `${N|a,b|}` starting at `from` (after the `|`), and the offset after the closing `|}`.
fn first_choice(chars: &[char], from: usize) -> Option<(String, usize)> {
    let mut first = String::new();
    let mut in_first = true;
    let mut at = from;
    while let Some(&ch) = chars.get(at) {
        match ch {
            '\\' if chars.get(at + 1).is_some_and(|next| matches!(next, ',' | '|' | '\\' | '$' | '}')) => {
                if in_first {
                    first.push(chars[at + 1]);
                }
                at += 2;
                continue;
            }
            ',' => in_first = false,
            '|' if chars.get(at + 1) == Some(&'}') => return Some((first, at + 2)),
            _ if in_first => first.push(ch),
            _ => {}
        }
        at += 1;
    }
    None
}

/// Adds `columns` spaces before every line but the first (the first goes where the completion starts).
pub(super) fn indent_continuation(text: &str, columns: usize) -> String {
    if columns == 0 {
        return text.to_owned();
    }
    text.replace('\n', &format!("\n{}", " ".repeat(columns)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_choices_and_escapes() {
        let workspaces = "workspaces:\n  ${1:name}:\n    access: ${2|read-only,read-write|}";
        assert_eq!(plain_text(workspaces), "workspaces:\n  name:\n    access: read-only");
        assert_eq!(plain_text("model:\n  id: $1"), "model:\n  id: ");
        assert_eq!(plain_text("version: $0"), "version: ");
        assert_eq!(plain_text("runtimes:\n  ${1|local: {\\},docker:\n    image: |}$0"), "runtimes:\n  local: {}");
        assert_eq!(
            plain_text("headers:\n  ${1:Authorization}: ${2:Bearer \\${${3:TOKEN}\\}}"),
            "headers:\n  Authorization: Bearer ${TOKEN}"
        );
        assert_eq!(plain_text("local: {}"), "local: {}");
    }

    #[test]
    fn text_that_is_not_snippet_syntax_stays() {
        for text in ["$", "${", "${1", "${x}", "${1|a,b", "a\\b", "cost: $ 5", "}"] {
            assert_eq!(plain_text(text), text);
        }
    }

    #[test]
    fn continuation_lines_are_indented() {
        assert_eq!(indent_continuation("a:\n  b: c\n  d: e", 4), "a:\n      b: c\n      d: e");
        assert_eq!(indent_continuation("a: b", 4), "a: b");
    }
}
