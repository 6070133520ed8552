//! One pass over a Markdown file for the prose checks: the commands it tells the agent to run, the skills it
//! names and its `${NAME}` references, each with its byte range in the file.
//!
//! Commands come from fenced code blocks whose info string is a shell (`sh`, `bash`, `zsh`, `ksh`, `fish`,
//! `shell`: every line, unless the block holds `$ ` prompts; `console`, `shell-session`, `terminal` and blocks
//! without an info string: the `$ ` prompt lines only), and from inline code spans the sentence presents as
//! something to run:
//! - a span that starts with `$ `;
//! - a span after `run` or `execute` used as a verb (not after `the`, `a`, `each`, ..., nor after `never` or
//!   `not`), with at most three words between, none of them a preposition other than `with`, `using` or `via`
//!   (and those not right after the verb);
//! - a span after `use`, `call` or `invoke` followed by `command`, `CLI`, `binary`, ...;
//! - a span that continues such a span (`` Run `npm ci` and `npm test` ``).
//!
//! Code blocks in other languages are never read for commands or references. A skill is named by a span next
//! to the word `skill` (`` the `x` skill ``, `` skill `x` ``), or by a path ending in `skills/<name>` or
//! `skills/<name>/SKILL.md`, in a span or a link.

use wb_syntax::TextRange;

use super::shell::{self, Shell};
use crate::env_refs::env_refs;

/// A skill the text names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SkillMention<'t> {
    /// By name: `` the `release-notes` skill ``.
    Name(&'t str),
    /// By path, as written (`skills/x`, `./skills/x/SKILL.md` without the `/SKILL.md`).
    Path(&'t str),
}

/// What a Markdown file says, with ranges in the file.
#[derive(Debug, Default)]
pub(crate) struct Prose<'t> {
    /// Commands, assignments and functions of its shell code and command spans.
    pub shell: Shell<'t>,
    pub skills: Vec<(SkillMention<'t>, TextRange)>,
    /// `${NAME}` references outside frontmatter and non-shell code blocks: each name and the range of `${NAME}`.
    pub env: Vec<(&'t str, TextRange)>,
}

/// How a fenced code block is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    /// A script: every line (or, when it holds `$ ` prompts, the prompt lines).
    Script,
    /// A terminal session: only the lines after a `$ ` prompt.
    Session,
    /// Another language: not read.
    Other,
}

fn block_kind(info: &str) -> Block {
    let language = info.split_whitespace().next().unwrap_or_default().trim_start_matches(['{', '.']);
    match language.to_ascii_lowercase().as_str() {
        "sh" | "bash" | "zsh" | "ksh" | "fish" | "shell" => Block::Script,
        "" | "console" | "shell-session" | "sh-session" | "shellsession" | "terminal" => Block::Session,
        _ => Block::Other,
    }
}

/// Verbs that present the span after them as a command.
const RUN_VERBS: &[&str] = &["execute", "executes", "executing", "ran", "rerun", "run", "running", "runs"];
/// Verbs that do only when a noun like `command` follows the span (`` use the `gh` CLI ``): alone they name
/// functions, agents' tools and skills as often.
const USE_VERBS: &[&str] = &["call", "calls", "invoke", "invokes", "invoking", "use", "uses"];
/// Words that turn a verb around (`` never run `cargo` directly ``).
const NEGATIONS: &[&str] = &["avoid", "don't", "dont", "never", "nor", "not", "without"];
/// (Not `tool`: agents' own tools, an MCP server's or the runner's, are named so as often as executables.)
const COMMAND_NOUNS: &[&str] = &["binary", "cli", "command", "commands", "executable", "program", "utility"];
/// Words that may stand between a verb and its span (`` run the tests with `x` ``), but not right after the
/// verb: `` scripts run with `cwd` `` sets something, it names no command.
const CONNECTORS: &[&str] = &["using", "via", "with"];
/// Words that make the verb after them a noun (`each run`, `the run`).
const DETERMINERS: &[&str] = &[
    "a", "an", "any", "dry", "each", "every", "first", "its", "last", "next", "one", "our", "per", "that", "the",
    "their", "this", "your",
];
/// Words between a verb and a span that make the span the object of something else (`run it against `x``).
const BLOCKING: &[&str] = &[
    "about", "after", "against", "and", "as", "at", "before", "but", "by", "for", "from", "if", "in", "inside", "into",
    "of", "on", "onto", "or", "over", "than", "then", "to", "under", "until", "when", "where", "within",
];
/// The most words a verb may stand before its span.
const WINDOW: usize = 4;

/// Scans a Markdown file (its frontmatter, if any, is skipped).
pub(crate) fn scan(text: &str) -> Prose<'_> {
    let mut prose = Prose::default();
    let start = crate::skill::frontmatter_range(text)
        .map_or(0, |range| text[range.end..].find('\n').map_or(text.len(), |at| range.end + at + 1));
    let mut paragraph: Option<usize> = None;
    // The open fence: its character, its length, how its block is read, and where its content starts.
    let mut fence: Option<(u8, usize, Block, usize)> = None;
    let mut at = start;
    for line in text[start..].split_inclusive('\n') {
        let line_start = at;
        at += line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        let trimmed = content.trim_start_matches([' ', '\t']);
        if let Some((marker, len, block, content_start)) = fence {
            let run = trimmed.bytes().take_while(|b| *b == marker).count();
            if run >= len && trimmed[run..].trim().is_empty() {
                code_block(text, block, content_start, line_start, &mut prose);
                fence = None;
            }
            continue;
        }
        let marker = trimmed.bytes().next().filter(|b| matches!(b, b'`' | b'~'));
        let run = marker.map_or(0, |m| trimmed.bytes().take_while(|b| *b == m).count());
        if let Some(marker) = marker
            && run >= 3
            && !(marker == b'`' && trimmed[run..].contains('`'))
        {
            if let Some(start) = paragraph.take() {
                inline(text, start, line_start, &mut prose);
            }
            fence = Some((marker, run, block_kind(trimmed[run..].trim()), at));
        } else if trimmed.trim().is_empty() {
            if let Some(start) = paragraph.take() {
                inline(text, start, line_start, &mut prose);
            }
        } else if paragraph.is_none() {
            paragraph = Some(line_start);
        }
    }
    if let Some(start) = paragraph {
        inline(text, start, text.len(), &mut prose);
    }
    if let Some((_, _, block, content_start)) = fence {
        // An unclosed fence runs to the end of the file.
        code_block(text, block, content_start, text.len(), &mut prose);
    }
    prose
}

fn env_in<'t>(text: &'t str, start: usize, end: usize, prose: &mut Prose<'t>) {
    let base = start;
    for reference in env_refs(&text[start..end]) {
        let range = TextRange::new(base + reference.range.start, base + reference.range.end);
        prose.env.push((reference.name, range));
    }
}

/// A fenced block's content, `start..end` of `text`.
fn code_block<'t>(text: &'t str, block: Block, start: usize, end: usize, prose: &mut Prose<'t>) {
    if block == Block::Other {
        return;
    }
    env_in(text, start, end, prose);
    let content = &text[start..end];
    let prompted = content.lines().any(|line| line.trim_start().starts_with("$ "));
    if block == Block::Script && !prompted {
        shell::scan(content, start, false, &mut prose.shell);
        return;
    }
    // The prompt lines, each with the lines its trailing `\` continues onto.
    let mut at = start;
    let mut continued: Option<usize> = None;
    for line in content.split_inclusive('\n') {
        let line_start = at;
        at += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let command_start = match continued {
            Some(command_start) => Some(command_start),
            None => body.trim_start().strip_prefix("$ ").map(|rest| line_start + (body.len() - rest.len())),
        };
        let Some(command_start) = command_start else { continue };
        if body.ends_with('\\') {
            continued = Some(command_start);
        } else {
            continued = None;
            shell::scan(&text[command_start..at], command_start, false, &mut prose.shell);
        }
    }
    if let Some(command_start) = continued {
        shell::scan(&text[command_start..end], command_start, false, &mut prose.shell);
    }
}

/// The words of `text`, lower-cased, without the punctuation and emphasis around them.
fn words(text: &str) -> impl DoubleEndedIterator<Item = String> + '_ {
    text.split_whitespace()
        .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric() && c != '-').to_lowercase())
        .filter(|word| !word.is_empty())
}

fn is_slug(name: &str) -> bool {
    !name.is_empty()
        && name
            .split('-')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
}

fn is_skill_word(word: Option<String>) -> bool {
    word.is_some_and(|word| matches!(word.trim_end_matches("'s"), "skill" | "skills"))
}

/// A path naming a skill directory: `…skills/<name>`, with `/` or `/SKILL.md` after it.
fn skill_path(path: &str) -> Option<&str> {
    if path.contains("://") || path.contains(char::is_whitespace) {
        return None;
    }
    let dir = path.strip_suffix("/SKILL.md").unwrap_or(path).trim_end_matches('/');
    let mut parts = dir.rsplit('/');
    let name = parts.next()?;
    (is_slug(name) && parts.next() == Some("skills")).then_some(dir)
}

/// Whether the text before a span (back to the previous span) and after it present it as a command.
fn presented_as_command(before: &str, after: &str) -> bool {
    let clause = before.rsplit(['.', ',', ';', ':', '!', '?', '(', ')', '|']).next().unwrap_or_default();
    let words: Vec<String> = words(clause).collect();
    for (index, word) in words.iter().enumerate().rev().take(WINDOW) {
        // `the run`, `each run` name a run; `never run` turns the verb around.
        let previous = index.checked_sub(1).map(|at| words[at].as_str());
        let noun = previous.is_some_and(|word| DETERMINERS.contains(&word) || NEGATIONS.contains(&word));
        if RUN_VERBS.contains(&word.as_str()) {
            let connected = words.get(index + 1).is_some_and(|next| CONNECTORS.contains(&next.as_str()));
            return !noun && !connected;
        }
        if USE_VERBS.contains(&word.as_str()) {
            let next = words_after(after);
            return !noun && next.is_some_and(|next| COMMAND_NOUNS.contains(&next.as_str()));
        }
        if BLOCKING.contains(&word.as_str()) {
            return false;
        }
    }
    false
}

fn words_after(after: &str) -> Option<String> {
    let clause = after.split(['.', ',', ';', ':', '!', '?', '(', ')', '|', '`']).next().unwrap_or_default();
    words(clause).next()
}

/// Only `and`, `or`, `then` and commas between two spans: the second continues the first.
fn continues(between: &str) -> bool {
    between.len() < 24 && words(between).all(|word| matches!(word.as_str(), "and" | "or" | "then"))
}

/// The inline content of a paragraph, `start..end` of `text`: its code spans, links and references.
fn inline<'t>(text: &'t str, start: usize, end: usize, prose: &mut Prose<'t>) {
    env_in(text, start, end, prose);
    let bytes = text.as_bytes();
    let runs = Runs::of(bytes, start, end);
    let mut at = start;
    let mut previous_end = start;
    let mut previous_command = false;
    while at < end {
        match bytes[at] {
            b'\\' => at += 2,
            b'`' => {
                let run = bytes[at..end].iter().take_while(|b| **b == b'`').count();
                let Some(close) = runs.closing(run, at + run) else {
                    at += run;
                    continue;
                };
                let (content_start, content_end) = strip_span(text, at + run, close);
                let before = tail(&text[previous_end..at], CONTEXT);
                let after = head(&text[close + run..end], CONTEXT);
                previous_command = span(text, content_start, content_end, before, after, previous_command, prose);
                at = close + run;
                previous_end = at;
            }
            b']' if bytes.get(at + 1) == Some(&b'(') => {
                // The destination, up to what no skill path holds (so the next `](` ends it: linear time).
                let path_start = at + 2 + usize::from(bytes.get(at + 2) == Some(&b'<'));
                let rest = bytes.get(path_start..end).unwrap_or_default();
                let len = rest
                    .iter()
                    .take(CONTEXT)
                    .position(|b| b" \t\r\n()[]<>#`".contains(b))
                    .unwrap_or(CONTEXT.min(rest.len()));
                if let Some(path) = text.get(path_start..path_start + len).and_then(skill_path) {
                    prose.skills.push((SkillMention::Path(path), TextRange::new(path_start, path_start + path.len())));
                }
                at += 2;
            }
            _ => at += 1,
        }
    }
}

/// The most text around a span (or of a link's destination) that is looked at: a sentence's worth, so a
/// paragraph of thousands of spans is read in time proportional to its length.
const CONTEXT: usize = 256;

/// The first `len` bytes of `text` (fewer, to end on a character boundary).
fn head(text: &str, len: usize) -> &str {
    let mut end = len.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The last `len` bytes of `text` (fewer, to start on a character boundary).
fn tail(text: &str, len: usize) -> &str {
    let mut start = text.len().saturating_sub(len);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The backtick runs of a paragraph by length, each list in order: a span's closing run is found by a binary
/// search, so a paragraph of many unmatched runs is not read again for each.
struct Runs(std::collections::HashMap<usize, Vec<usize>>);

impl Runs {
    fn of(bytes: &[u8], start: usize, end: usize) -> Runs {
        let mut runs: std::collections::HashMap<usize, Vec<usize>> = std::collections::HashMap::new();
        let mut at = start;
        while at < end {
            if bytes[at] == b'`' {
                let len = bytes[at..end].iter().take_while(|b| **b == b'`').count();
                runs.entry(len).or_default().push(at);
                at += len;
            } else {
                at += 1;
            }
        }
        Runs(runs)
    }

    /// The start of the first run of exactly `len` backticks at or after `from`: the span's end.
    fn closing(&self, len: usize, from: usize) -> Option<usize> {
        let starts = self.0.get(&len)?;
        starts.get(starts.partition_point(|start| *start < from)).copied()
    }
}

/// A span's content without the one space CommonMark strips from each side.
fn strip_span(text: &str, start: usize, end: usize) -> (usize, usize) {
    let content = &text[start..end];
    if content.len() >= 2 && content.starts_with(' ') && content.ends_with(' ') && !content.trim().is_empty() {
        (start + 1, end - 1)
    } else {
        (start, end)
    }
}

/// Reads one code span; returns whether it was taken as a command.
fn span<'t>(
    text: &'t str,
    start: usize,
    end: usize,
    before: &str,
    after: &str,
    previous_command: bool,
    prose: &mut Prose<'t>,
) -> bool {
    let content = &text[start..end];
    let range = TextRange::new(start, end);
    if is_slug(content) && (is_skill_word(words_after(after)) || is_skill_word(words(before).next_back())) {
        prose.skills.push((SkillMention::Name(content), range));
        return false;
    }
    if let Some(path) = skill_path(content) {
        prose.skills.push((SkillMention::Path(path), TextRange::new(start, start + path.len())));
        return false;
    }
    let command =
        content.starts_with("$ ") || presented_as_command(before, after) || (previous_command && continues(before));
    if command {
        shell::scan(content, start, true, &mut prose.shell);
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(text: &str) -> Vec<&str> {
        let prose = scan(text);
        prose
            .shell
            .commands
            .iter()
            .map(|(word, range)| {
                assert_eq!(&text[range.start..range.end], *word, "the range covers the word");
                *word
            })
            .collect()
    }

    #[test]
    fn shell_blocks_are_read_and_other_languages_are_not() {
        let text = "# Title\n\n```bash\nnpm ci\nnpm test | tee out\n```\n\n```yaml\nrun: kubectl apply\n```\n\n\
                    ~~~sh\ncargo fmt\n~~~\n\n```python\nimport os\n```\n";
        assert_eq!(commands(text), ["npm", "npm", "tee", "cargo"]);
    }

    #[test]
    fn sessions_take_only_prompt_lines() {
        let text = "```console\n$ terraform plan \\\n    -out plan\nPlan: 1 to add\n$ jq . x\n{}\n```\n\n\
                    ```\nsome output\n$ helm list\n```\n\n```\nplain text, no prompt\n```\n\n\
                    ```sh\n$ make check\nok\n```\n";
        assert_eq!(commands(text), ["terraform", "jq", "helm", "make"]);
    }

    #[test]
    fn inline_spans_count_when_presented_as_commands() {
        let cases: &[(&str, &[&str])] = &[
            ("Run `npm test` and include its result.", &["npm"]),
            ("Run the tests with `cargo nextest run`.", &["cargo"]),
            ("Then execute `make lint`, then `make test`.", &["make", "make"]),
            ("Run `npm ci` and `npm test`.", &["npm", "npm"]),
            ("Use the `gh` CLI to open the pull request.", &["gh"]),
            ("Type `$ kubectl get pods` to look.", &["kubectl"]),
            ("Try `$ rg TODO` first.", &["rg"]),
            ("Use `create index concurrently` for large tables.", &[]),
            ("Each run writes `report.md`.", &[]),
            ("After the run, read `notes.txt`.", &[]),
            ("Run it against `staging` only.", &[]),
            ("The response has a `curl` command example.", &[]),
            ("SQL goes through `query()` in `src/db.ts`.", &[]),
            ("Review the change set (`git diff origin/main...HEAD`).", &[]),
            ("Run `npm run migrate` against `$DATABASE_URL`.", &["npm"]),
            ("Call `query()` with placeholders.", &[]),
            ("Call the `fetch_webpage` tool.", &[]),
            ("Hooks run with `cwd` set to the root.", &[]),
            ("Run them using `pytest -x`.", &["pytest"]),
            ("Never run `cargo` directly; do not run `make`.", &[]),
            ("When you invoke `copilot_sessionStoreSql`, set it.", &[]),
            ("Run\n`just build` when done.", &["just"]),
        ];
        for (text, expected) in cases {
            assert_eq!(commands(text), *expected, "{text}");
        }
    }

    #[test]
    fn skills_are_named_by_word_or_by_path() {
        let text = "Use the `release-notes` skill, then skill `triage`.\nSee [the guide](skills/review/SKILL.md) \
                    and `./skills/lint/`.\nNot skills: `Release_Notes` skill, [x](https://e.com/skills/y), \
                    `src/skills.rs`.\n\n```md\nthe `hidden` skill\n```\n";
        let prose = scan(text);
        let found: Vec<(SkillMention<'_>, &str)> =
            prose.skills.iter().map(|(mention, range)| (*mention, &text[range.start..range.end])).collect();
        assert_eq!(
            found,
            [
                (SkillMention::Name("release-notes"), "release-notes"),
                (SkillMention::Name("triage"), "triage"),
                (SkillMention::Path("skills/review"), "skills/review"),
                (SkillMention::Path("./skills/lint"), "./skills/lint"),
            ]
        );
    }

    #[test]
    fn env_references_in_prose_and_shell_code_only() {
        let text = "---\ndescription: uses ${IN_FRONTMATTER}\n---\nSend it to ${API_URL} with `${TOKEN}`.\n\n\
                    ```sh\ncurl -H \"Bearer ${TOKEN2}\" x\n```\n\n```yaml\nurl: ${IN_YAML}\n```\n";
        let prose = scan(text);
        let names: Vec<&str> = prose.env.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["API_URL", "TOKEN", "TOKEN2"]);
        let (_, range) = prose.env[0];
        assert_eq!(&text[range.start..range.end], "${API_URL}");
    }

    proptest::proptest! {
        /// Any text: no panic, and every range lies on the text's character boundaries.
        #[test]
        fn any_text_scans_to_valid_ranges(text in "[a-z `~$\\\\(){}\\[\\]<>|&;#'\"=\n\t.:/-]{0,300}|[`$é☃ \n(]{0,200}") {
            let prose = scan(&text);
            let ranges = prose.shell.commands.iter().map(|(_, range)| *range)
                .chain(prose.skills.iter().map(|(_, range)| *range))
                .chain(prose.env.iter().map(|(_, range)| *range));
            for range in ranges {
                proptest::prop_assert!(text.get(range.start..range.end).is_some(), "{range:?} in {text:?}");
            }
        }
    }

    #[test]
    fn escapes_unclosed_spans_and_unclosed_fences() {
        assert_eq!(commands("Run \\`npm test\\` here; `` `x` `` or run `jq ."), Vec::<&str>::new());
        assert_eq!(commands("intro\n```bash\nkubectl get pods\n"), ["kubectl"]);
    }
}
