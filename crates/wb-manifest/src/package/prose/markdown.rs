//! One pass over a Markdown file for the prose checks: the commands it tells the agent to run, the skills it
//! names and its `${NAME}` references, each with its byte range in the file.
//!
//! What is code and what is prose is CommonMark's: `pulldown-cmark`'s events with their offsets give the code
//! blocks (fenced with backticks or tildes, indented, inside lists and block quotes), the code spans and the
//! links; the heuristics below, which of them name commands and skills, are ours. An HTML block (prompts wrap
//! instructions in tags such as `<instructions>`, which CommonMark reads as HTML up to the next blank line) is
//! read as Markdown again after its leading tag lines, as the agent reads it.
//!
//! Commands come from fenced code blocks whose info string is a shell (`sh`, `bash`, `zsh`, `ksh`, `fish`,
//! `shell`: every line, unless the block holds `$ ` prompts; `console`, `shell-session`, `terminal`, blocks
//! without an info string and indented blocks: the `$ ` prompt lines only), and from inline code spans the sentence presents as
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

use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};
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
    walk(text, start, text.len(), true, &mut prose);
    prose
}

/// A code block being read: how, and its content as ranges of the file (one per run of lines that only
/// whitespace separates: a block in a block quote has a `>` before each line, which is not the code's).
struct CodeBlock {
    block: Block,
    segments: Vec<(usize, usize)>,
}

/// Reads `start..end` of `text`, parsed on its own; `outer` when it is the file (an HTML block's content is
/// then read as Markdown, once: not again inside that).
fn walk<'t>(text: &'t str, start: usize, end: usize, outer: bool, prose: &mut Prose<'t>) {
    let Some(source) = text.get(start..end) else { return };
    // Where the `${NAME}` references not yet read start: everything is read but code in other languages.
    let mut env_from = start;
    // The ends of the blocks open around the inline content being read.
    let mut blocks: Vec<usize> = Vec::new();
    // Where the text before the next code span starts (the block's start, or the previous span's end).
    let mut previous_end = start;
    let mut previous_command = false;
    let mut code: Option<CodeBlock> = None;
    for (event, range) in Parser::new_ext(source, Options::empty()).into_offset_iter() {
        let (from, to) = (start + range.start, start + range.end);
        match event {
            Event::Start(tag) => {
                match &tag {
                    Tag::CodeBlock(kind) => {
                        env_in(text, env_from, from, prose);
                        env_from = env_from.max(to);
                        let block = match kind {
                            CodeBlockKind::Fenced(info) => block_kind(info),
                            CodeBlockKind::Indented => Block::Session,
                        };
                        code = Some(CodeBlock { block, segments: Vec::new() });
                    }
                    Tag::HtmlBlock if outer => {
                        let content = html_content(text, from, to);
                        env_in(text, env_from, content, prose);
                        env_from = env_from.max(to);
                        walk(text, content, to, false, prose);
                    }
                    Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => link(text, from, to, dest_url, prose),
                    _ => {}
                }
                if !is_inline(&tag.to_end()) {
                    blocks.push(to);
                    previous_end = from;
                    previous_command = false;
                }
            }
            Event::End(tag) => {
                if tag == TagEnd::CodeBlock
                    && let Some(block) = code.take()
                {
                    code_block(text, &block, prose);
                }
                if !is_inline(&tag) {
                    blocks.pop();
                    previous_end = to;
                    previous_command = false;
                }
            }
            Event::Text(_) => {
                if let Some(block) = &mut code {
                    match block.segments.last_mut() {
                        Some((_, last)) if text.get(*last..from).is_some_and(|gap| gap.trim_ascii().is_empty()) => {
                            *last = to;
                        }
                        _ => block.segments.push((from, to)),
                    }
                }
            }
            Event::Code(_) => {
                let run = text[from..to].bytes().take_while(|b| *b == b'`').count();
                if to - from < 2 * run {
                    continue;
                }
                let (content_start, content_end) = strip_span(text, from + run, to - run);
                let before = tail(text.get(previous_end..from).unwrap_or_default(), CONTEXT);
                let block_end = blocks.last().copied().unwrap_or(end).max(to);
                let after = head(&text[to..block_end], CONTEXT);
                previous_command = span(text, content_start, content_end, before, after, previous_command, prose);
                previous_end = to;
            }
            _ => {}
        }
    }
    env_in(text, env_from, end, prose);
}

/// Emphasis, links and the like: what stands inside a line of prose rather than around it.
fn is_inline(tag: &TagEnd) -> bool {
    matches!(
        tag,
        TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::Link
            | TagEnd::Image
    )
}

/// Where an HTML block's content starts: after its leading lines that are tags (`<instructions>`,
/// `<details>` then `<summary>…</summary>`).
fn html_content(text: &str, start: usize, end: usize) -> usize {
    let mut at = start;
    for line in text[start..end].split_inclusive('\n') {
        if !line.trim_start().starts_with('<') {
            break;
        }
        at += line.len();
    }
    at
}

/// A link's (or image's) destination, `start..end` being the whole link: a skill's path when it names one.
/// Only a destination written as it is read (no escapes, not from a reference definition) has a range.
fn link<'t>(text: &'t str, start: usize, end: usize, destination: &CowStr<'_>, prose: &mut Prose<'t>) {
    // Up to what no skill path holds (a `#fragment`, a title).
    let len = destination.find(|c: char| " \t\r\n()[]<>#`".contains(c)).unwrap_or(destination.len());
    let wanted = &destination[..len];
    if wanted.is_empty() || wanted.len() > CONTEXT {
        return;
    }
    for (at, _) in text[start..end].match_indices("](") {
        let mut path_start = start + at + 2;
        path_start += usize::from(text[path_start..end].starts_with('<'));
        if let Some(path) = text.get(path_start..path_start + len).filter(|path| *path == wanted) {
            if let Some(path) = skill_path(path) {
                prose.skills.push((SkillMention::Path(path), TextRange::new(path_start, path_start + path.len())));
            }
            return;
        }
    }
}

/// The `${NAME}` references of `start..end` (none when it is empty).
fn env_in<'t>(text: &'t str, start: usize, end: usize, prose: &mut Prose<'t>) {
    let Some(part) = text.get(start..end) else { return };
    for reference in env_refs(part) {
        let range = TextRange::new(start + reference.range.start, start + reference.range.end);
        prose.env.push((reference.name, range));
    }
}

/// A code block's content.
fn code_block<'t>(text: &'t str, code: &CodeBlock, prose: &mut Prose<'t>) {
    if code.block == Block::Other {
        return;
    }
    for &(start, end) in &code.segments {
        env_in(text, start, end, prose);
    }
    let prompted = code
        .segments
        .iter()
        .any(|&(start, end)| text[start..end].lines().any(|line| line.trim_start().starts_with("$ ")));
    if code.block == Block::Script && !prompted {
        for &(start, end) in &code.segments {
            shell::scan(&text[start..end], start, false, &mut prose.shell);
        }
        return;
    }
    // The prompt lines, each with the lines its trailing `\` continues onto (within a segment: the lines a
    // continuation reaches in the next are its arguments, skipped).
    let mut skipping = false;
    for &(start, end) in &code.segments {
        let mut at = start;
        let mut continued: Option<usize> = None;
        for line in text[start..end].split_inclusive('\n') {
            let line_start = at;
            at += line.len();
            let body = line.trim_end_matches(['\n', '\r']);
            if skipping {
                skipping = body.ends_with('\\');
                continue;
            }
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
            skipping = true;
        }
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

    /// What CommonMark makes code that a line-by-line reading does not: fences in block quotes and list items
    /// (and closed by their container's end), a closing fence longer than the opening, an indented block's
    /// prompts, and a "fence" whose info string holds a backtick (a code span instead). Every range is the
    /// word's (`commands` checks).
    #[test]
    fn code_blocks_are_commonmarks() {
        let cases: &[(&str, &[&str])] = &[
            ("> ```sh\n> npm ci && make\n> ```\n", &["npm", "make"]),
            ("> ```console\n> $ kubectl apply \\\n>   -f x.yaml\n> $ helm list\n> ok\n> ```\n", &["kubectl", "helm"]),
            ("1. Build:\n\n   ```bash\n   cargo build\n\n   cargo test\n   ```\n2. Done\n", &["cargo", "cargo"]),
            ("- Build:\n  ~~~sh\n  make\n  ~~~\n", &["make"]),
            ("- ```sh\n  npm ci\n- Run `make`.\n", &["npm", "make"]),
            ("> ```sh\n> npm ci\n\nRun `make`.\n", &["npm", "make"]),
            ("~~~sh\nnpm ci\n~~~~~~\nRun `make`.\n", &["npm", "make"]),
            ("Intro.\n\n    $ make deploy\n    deployed\n", &["make"]),
            ("```sh `not a fence`\nnpm ci\n```\n", &[]),
            ("x\r\n\r\n```sh\r\nnpm ci\r\nnpm test\r\n```\r\n", &["npm", "npm"]),
        ];
        for (text, expected) in cases {
            assert_eq!(commands(text), *expected, "{text:?}");
        }
    }

    /// Code spans as CommonMark delimits them: runs of one, two or three backticks, a span closed only by a
    /// run of its own length, and an unclosed run that is text.
    #[test]
    fn code_spans_are_commonmarks() {
        let cases: &[(&str, &[&str])] = &[
            ("Run ``npm test`` now.", &["npm"]),
            ("Run ```make check``` and `npm ci`.", &["make", "npm"]),
            ("Run ``echo 'a`b'`` then `jq .`.", &["echo", "jq"]),
            ("Run ``` `` ``` or the `x` file.", &[]),
            ("Run `` rg `` and ``` ``make`.", &["rg"]),
        ];
        for (text, expected) in cases {
            assert_eq!(commands(text), *expected, "{text:?}");
        }
    }

    /// Prompts wrap instructions in tags, which CommonMark reads as an HTML block up to a blank line: its
    /// content after the tag lines is read as the agent reads it, spans, fences and skills.
    #[test]
    fn html_blocks_are_read_after_their_tags() {
        let text = "<instructions>\nRun `npm test` before you commit; the `triage` skill helps.\n</instructions>\n\n\
                    <details>\n<summary>Setup</summary>\nRun:\n```sh\nmake setup\n```\n</details>\n";
        assert_eq!(commands(text), ["npm", "make"]);
        let prose = scan(text);
        let skills: Vec<&str> = prose.skills.iter().map(|(_, range)| &text[range.start..range.end]).collect();
        assert_eq!(skills, ["triage"]);
    }

    /// `${NAME}` in a block quote's shell fence and prose count with their ranges; in its YAML fence they do
    /// not; a link's destination names a skill with its exact range, also with a title or a fragment.
    #[test]
    fn references_and_links_keep_their_ranges() {
        let text = "> ```yaml\n> url: ${IN_YAML}\n> ```\n> ```sh\n> curl ${API_URL}\n> ```\n> Send ${TOKEN}.\n\n\
                    See [a](skills/a \"the skill\"), [b](<skills/b/SKILL.md#use>) and [c](skills\\/c).\n";
        let prose = scan(text);
        let env: Vec<(&str, &str)> =
            prose.env.iter().map(|(name, range)| (*name, &text[range.start..range.end])).collect();
        assert_eq!(env, [("API_URL", "${API_URL}"), ("TOKEN", "${TOKEN}")]);
        let skills: Vec<(SkillMention<'_>, &str)> =
            prose.skills.iter().map(|(mention, range)| (*mention, &text[range.start..range.end])).collect();
        assert_eq!(
            skills,
            [(SkillMention::Path("skills/a"), "skills/a"), (SkillMention::Path("skills/b"), "skills/b")]
        );
    }
}
