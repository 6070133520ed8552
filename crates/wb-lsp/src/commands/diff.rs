//! `wb-lsp outcome ID --diff [PATH…]`: an outcome's changes as a unified diff, from the review diff each
//! changeset carries (Git's format, with modes; a binary or over-large file says so), every file or only the
//! paths given, coloured and paged like `git diff`.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

use wb_outcomes::review::sections;
use wb_outcomes::{ContentStore, Outcome, WorkspaceRef};

use crate::cli::ColorChoice;

/// The diff of `outcome`, only the files `only` names when it names any (`path`, or `name:path`); a path the
/// outcome does not change is an error naming it.
pub(super) fn text(store: &ContentStore, outcome: &Outcome, only: &[String]) -> Result<String, wb_outcomes::Error> {
    let wanted: BTreeSet<&str> = only.iter().map(String::as_str).collect();
    let mut found = BTreeSet::new();
    let mut out = String::new();
    for changeset in &outcome.changesets {
        let Some(review) = &changeset.review else { continue };
        let bytes = store.read(&review.digest)?;
        let review = String::from_utf8_lossy(&bytes);
        let prefix = match &changeset.workspace {
            WorkspaceRef::Primary => String::new(),
            WorkspaceRef::Named { name } => format!("{name}:"),
        };
        for section in sections(&review) {
            let label = format!("{prefix}{}", section.path);
            if !wanted.is_empty() && !wanted.contains(label.as_str()) {
                continue;
            }
            found.insert(label);
            if !prefix.is_empty() {
                out.push_str(&escaped(&format!("# workspace {}\n", prefix.trim_end_matches(':'))));
            }
            out.push_str(&escaped(section.text));
        }
    }
    if let Some(missing) = wanted.iter().find(|label| !found.contains(**label)) {
        return Err(wb_outcomes::Error::NotInOutcome((*missing).to_owned()));
    }
    Ok(out)
}

/// The agent's content and names made safe for a terminal: every character `render::is_unsafe` names (escape
/// sequences, carriage returns, C1 controls, bidirectional controls) becomes its `\u{..}` escape; line breaks
/// and tabs stay. Only [`coloured`]'s own sequences, added afterwards, reach the terminal.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c != '\n' && c != '\t' && crate::render::is_unsafe(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether to colour for `choice` (auto: a terminal, and `NO_COLOR` unset or empty).
pub(super) fn colour(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

/// `git diff`'s colours: headers bold, hunk headers cyan, additions green, removals red.
pub(super) fn coloured(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len() + diff.len() / 8);
    for line in diff.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |body| (body, "\n"));
        let code = if body.starts_with("diff --git ")
            || body.starts_with("--- ")
            || body.starts_with("+++ ")
            || body.starts_with("# workspace ")
            || body.contains(" mode ")
        {
            Some("1")
        } else if body.starts_with("@@") {
            Some("36")
        } else if body.starts_with('+') {
            Some("32")
        } else if body.starts_with('-') {
            Some("31")
        } else {
            None
        };
        match code {
            Some(code) => out.push_str(&format!("\x1b[{code}m{body}\x1b[m{end}")),
            None => out.push_str(line),
        }
    }
    out
}

/// Writes `text` to stdout, through a pager when stdout is a terminal: `$WB_PAGER`, `$PAGER`, else `less`
/// with `LESS=FRX` (quits when it fits, keeps colours), as `git` does. Without a pager, straight out.
pub(super) fn page(text: &str) -> std::io::Result<()> {
    if std::io::stdout().is_terminal() {
        let pager = std::env::var("WB_PAGER")
            .or_else(|_| std::env::var("PAGER"))
            .ok()
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| "less".to_owned());
        if pager.trim() != "cat" {
            let mut command = Command::new("sh");
            command.args(["-c", &pager]).stdin(Stdio::piped());
            if std::env::var_os("LESS").is_none() {
                command.env("LESS", "FRX");
            }
            let mut child = command.spawn().map_err(|error| pager_failed(&pager, &error.to_string()))?;
            if let Some(mut stdin) = child.stdin.take() {
                // A pager quit early closes its input: not an error.
                let _ = stdin.write_all(text.as_bytes());
            }
            let status = child.wait()?;
            if !status.success() {
                // A pager that cannot start (127: not found, 126: not executable) showed nothing.
                return Err(pager_failed(&pager, &status.to_string()));
            }
            return Ok(());
        }
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// The error of a pager that could not start or failed: the diff was not shown.
fn pager_failed(pager: &str, why: &str) -> std::io::Error {
    std::io::Error::other(format!(
        "the pager `{}` failed ({why}), so the diff was not shown; set WB_PAGER or PAGER to a pager that works, \
         or pipe the output",
        crate::render::printable(pager)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_diff_is_cut_per_file_even_with_spaces_in_names() {
        let review = "diff --git a/a b.txt b/a b.txt\n--- a/a b.txt\n+++ b/a b.txt\n@@ -1 +1 @@\n-x\n+y\n\
                      diff --git a/c b/c\nnew file mode 100644\n--- /dev/null\n+++ b/c\n@@ -0,0 +1 @@\n+z\n";
        let cut = sections(review);
        assert_eq!(cut.iter().map(|s| s.path).collect::<Vec<_>>(), ["a b.txt", "c"]);
        assert!(cut[0].text.ends_with("+y\n") && cut[1].text.starts_with("diff --git a/c b/c\n"));
        let painted = coloured(cut[0].text);
        assert!(painted.contains("\x1b[31m-x\x1b[m\n") && painted.contains("\x1b[32m+y\x1b[m\n"), "{painted:?}");
        assert!(painted.contains("\x1b[36m@@ -1 +1 @@\x1b[m"), "{painted:?}");
        assert!(painted.contains("\x1b[1m--- a/a b.txt\x1b[m"), "{painted:?}");
    }

    #[test]
    fn the_agents_escape_sequences_are_shown_not_sent() {
        let hostile = "+\x1b]0;owned\x07title\r\tx\u{9b}2J\u{202e}\n";
        assert_eq!(escaped(hostile), "+\\u{1b}]0;owned\\u{7}title\\r\tx\\u{9b}2J\\u{202e}\n");
        let painted = coloured(&escaped(hostile));
        assert_eq!(painted.matches('\x1b').count(), 2, "only the colour's own: {painted:?}");
    }
}
