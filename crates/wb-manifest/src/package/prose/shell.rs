//! The command words of shell text, for the prose checks: one pass over a script, a prompt line or an inline
//! code span, without running or fully parsing it. It finds the word in command position of each simple
//! command (at the start, after `|`, `||`, `&&`, `;`, `&`, a newline, `(`, `$(` or a keyword such as `then`),
//! skipping `$ ` prompts, leading `NAME=value` assignments, redirections and their targets, heredoc bodies,
//! comments, `case` patterns, and the options of wrappers (`sudo`, `env`, `nohup`, ...) whose command it takes
//! instead. On the way it notes the names the text assigns (`NAME=`, `export NAME`, `for NAME in`, `read
//! NAME`) and the functions it defines, which are the script's own.

use wb_syntax::TextRange;

use super::known::{self, DECLARING_BUILTINS, WRAPPER_OPTIONS_WITH_VALUE, WRAPPERS};

/// What one scan found; ranges are in the scanned document.
#[derive(Debug, Default)]
pub(crate) struct Shell<'t> {
    /// Each word in command position that could name an executable, with its range.
    pub commands: Vec<(&'t str, TextRange)>,
    /// Variables the text assigns or declares.
    pub assigned: Vec<&'t str>,
    /// Functions the text defines.
    pub functions: Vec<&'t str>,
    /// The first argument of each command (`webmcp-call` of `playwright-cli webmcp-call x`): a span that
    /// names one alone names a subcommand, not an executable.
    pub subcommands: Vec<&'t str>,
}

/// How the words after a command word are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Args {
    /// Plain arguments; `true` before the first.
    Plain(bool),
    /// Arguments of `export`, `read`, ...: the names they hold are assigned.
    Declaring,
    /// The options of a wrapper, then its command; `true` when the previous option takes a value.
    Wrapper(bool),
    /// The variable of a `for` or `select` loop.
    LoopVariable,
    /// The name of a `function`.
    FunctionName,
}

/// Where a word stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Position {
    Command,
    Args(Args),
}

/// The part of a `case` statement being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    /// `case WORD` before `in`.
    Subject,
    /// A pattern, up to its `)`.
    Pattern,
    /// The commands of a branch, up to `;;`.
    Body,
}

struct Scanner<'t, 'o> {
    text: &'t str,
    bytes: &'t [u8],
    base: usize,
    at: usize,
    /// A newline is a space (an inline code span), not the end of a command.
    inline: bool,
    position: Position,
    /// The next word is a redirection's target.
    target: bool,
    /// The next word is a heredoc's delimiter (`true` for `<<-`, whose closing line may be indented by tabs).
    delimiter: Option<bool>,
    /// Heredocs whose bodies start on the next line: their delimiters.
    heredocs: Vec<(String, bool)>,
    cases: Vec<Case>,
    out: &'o mut Shell<'t>,
}

/// Scans `text`, which sits at `base` in its document, adding what it finds to `out`.
pub(crate) fn scan<'t>(text: &'t str, base: usize, inline: bool, out: &mut Shell<'t>) {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        base,
        at: 0,
        inline,
        position: Position::Command,
        target: false,
        delimiter: None,
        heredocs: Vec::new(),
        cases: Vec::new(),
        out,
    };
    scanner.run();
}

/// A variable name (`[A-Za-z_][A-Za-z0-9_]*`).
fn is_name(word: &str) -> bool {
    let mut bytes = word.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The name an assignment word (`NAME=value`, `NAME+=value`) assigns.
fn assignment(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    is_name(name).then_some(name)
}

fn is_operator(byte: u8) -> bool {
    matches!(byte, b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>')
}

impl<'t> Scanner<'t, '_> {
    fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.at + offset).copied()
    }

    fn run(&mut self) {
        self.skip_prompt();
        while let Some(byte) = self.peek(0) {
            match byte {
                b' ' | b'\t' | b'\r' => self.at += 1,
                b'\n' => self.newline(),
                b'\\' if self.peek(1) == Some(b'\n') => self.at += 2,
                b'\\' if self.peek(1) == Some(b'\r') && self.peek(2) == Some(b'\n') => self.at += 3,
                b'#' => self.comment(),
                b'`' => {
                    // Command substitution: what follows is a command, and so is what follows its end.
                    self.at += 1;
                    self.position = Position::Command;
                }
                b'<' | b'>' => self.redirection(),
                b'(' => {
                    self.at += 1;
                    if self.peek(0) == Some(b'(') {
                        self.arithmetic();
                    } else if self.cases.last() != Some(&Case::Pattern) {
                        self.position = Position::Command;
                    }
                }
                b')' => {
                    self.at += 1;
                    if let Some(case) = self.cases.last_mut()
                        && *case == Case::Pattern
                    {
                        *case = Case::Body;
                        self.position = Position::Command;
                    } else {
                        self.position = Position::Args(Args::Plain(false));
                    }
                }
                b';' | b'&' | b'|' => self.separator(),
                _ => self.word(),
            }
        }
    }

    /// A `$ ` or `% ` prompt at the start of a line (as in a copied terminal session).
    fn skip_prompt(&mut self) {
        let mut at = self.at;
        while matches!(self.bytes.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        if matches!(self.bytes.get(at), Some(b'$' | b'%')) && self.bytes.get(at + 1) == Some(&b' ') {
            self.at = at + 2;
        }
    }

    fn newline(&mut self) {
        self.at += 1;
        if self.inline {
            return;
        }
        self.position = Position::Command;
        self.target = false;
        for (delimiter, tabs) in std::mem::take(&mut self.heredocs) {
            self.heredoc_body(&delimiter, tabs);
        }
        self.skip_prompt();
    }

    /// Skips the lines of a heredoc up to and including its closing line.
    fn heredoc_body(&mut self, delimiter: &str, tabs: bool) {
        while self.at < self.bytes.len() {
            let rest = &self.text[self.at..];
            let line_len = rest.find('\n').map_or(rest.len(), |at| at + 1);
            let line = rest[..line_len].trim_end_matches(['\n', '\r']);
            let line = if tabs { line.trim_start_matches('\t') } else { line };
            self.at += line_len;
            if line == delimiter {
                return;
            }
        }
    }

    fn comment(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.find('\n').unwrap_or(rest.len());
    }

    /// `((...))`: arithmetic, with no command in it.
    fn arithmetic(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.find("))").map_or(rest.len(), |at| at + 2);
        self.position = Position::Args(Args::Plain(false));
    }

    fn separator(&mut self) {
        let start = self.at;
        while self.peek(0).is_some_and(|b| matches!(b, b';' | b'&' | b'|')) {
            self.at += 1;
        }
        let operator = &self.text[start..self.at];
        if let Some(case) = self.cases.last_mut()
            && *case == Case::Body
            && (operator.starts_with(";;") || operator == ";&")
        {
            *case = Case::Pattern;
        }
        self.position = Position::Command;
        self.target = false;
    }

    /// `<`, `>`, `>>`, `2>&1`, `&>`, `<<EOF`, `<<-EOF`, `<<<word`: the next word is a target (or a delimiter).
    fn redirection(&mut self) {
        let start = self.at;
        while self.peek(0).is_some_and(|b| matches!(b, b'<' | b'>' | b'&' | b'|')) {
            self.at += 1;
        }
        let operator = &self.text[start..self.at];
        if operator == "<<" {
            let tabs = self.peek(0) == Some(b'-');
            if tabs {
                self.at += 1;
            }
            self.delimiter = Some(tabs);
        } else if operator.ends_with('&') && self.peek(0).is_some_and(|b| b.is_ascii_digit() || b == b'-') {
            // `2>&1`, `>&-`: a descriptor, not a word.
            self.at += 1;
        } else {
            self.target = true;
        }
    }

    /// Reads one word (quotes and escapes kept in it) and decides what it is.
    fn word(&mut self) {
        let start = self.at;
        let mut plain = true;
        while let Some(byte) = self.peek(0) {
            match byte {
                b' ' | b'\t' | b'\r' => break,
                b'\n' => break,
                b'\\' => {
                    plain = false;
                    self.at += 2;
                }
                b'\'' | b'"' => {
                    plain = false;
                    self.quoted(byte);
                }
                b'$' if self.peek(1) == Some(b'(') => {
                    // `$(`: a command substitution. The word so far ends, and a command starts.
                    if self.at > start {
                        break;
                    }
                    self.at += 2;
                    self.position = Position::Command;
                    return;
                }
                b'`' => break,
                byte if is_operator(byte) => break,
                _ => {
                    plain &= !matches!(byte, b'$' | b'*' | b'?' | b'{' | b'}' | b'[' | b']' | b'~');
                    self.at += 1;
                }
            }
        }
        self.at = self.at.min(self.bytes.len());
        let word = &self.text[start..self.at];
        if word.is_empty() {
            self.at += 1;
            return;
        }
        // `2>file`: the digits are a descriptor, part of the redirection.
        if matches!(self.peek(0), Some(b'<' | b'>')) && word.bytes().all(|b| b.is_ascii_digit()) {
            return;
        }
        let range = TextRange::new(self.base + start, self.base + self.at);
        self.classify(word, plain, range);
    }

    /// Moves past a quoted string that starts at the current byte.
    fn quoted(&mut self, quote: u8) {
        self.at += 1;
        while let Some(byte) = self.peek(0) {
            self.at += 1;
            if byte == quote {
                return;
            }
            if byte == b'\\' && quote == b'"' {
                self.at += 1;
            }
        }
    }

    fn classify(&mut self, word: &'t str, plain: bool, range: TextRange) {
        if let Some(tabs) = self.delimiter.take() {
            let delimiter: String = word.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
            self.heredocs.push((delimiter, tabs));
            return;
        }
        if std::mem::take(&mut self.target) {
            // `> file cmd` is rare; `> cmd args` (a quoted or REPL line) is not: nothing after it is a command.
            if self.position == Position::Command {
                self.position = Position::Args(Args::Plain(false));
            }
            return;
        }
        match self.cases.last().copied() {
            Some(Case::Subject) => {
                if word == "in"
                    && let Some(case) = self.cases.last_mut()
                {
                    *case = Case::Pattern;
                }
                return;
            }
            Some(Case::Pattern) => {
                if word == "esac" {
                    self.cases.pop();
                    self.position = Position::Args(Args::Plain(false));
                }
                return;
            }
            _ => {}
        }
        match self.position {
            Position::Command => self.command_word(word, plain, range),
            Position::Args(args) => self.argument(args, word, plain, range),
        }
    }

    fn command_word(&mut self, word: &'t str, plain: bool, range: TextRange) {
        if let Some(name) = assignment(word) {
            self.out.assigned.push(name);
            return;
        }
        match word {
            // Reserved words after which a command follows.
            "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "{" | "time" => return,
            "for" | "select" => {
                self.position = Position::Args(Args::LoopVariable);
                return;
            }
            "case" => {
                self.cases.push(Case::Subject);
                return;
            }
            "esac" => {
                self.cases.pop();
                self.position = Position::Args(Args::Plain(false));
                return;
            }
            // Reserved words that end a compound command: redirections or a separator follow.
            "fi" | "done" | "}" => {
                self.position = Position::Args(Args::Plain(false));
                return;
            }
            "function" => {
                self.position = Position::Args(Args::FunctionName);
                return;
            }
            _ => {}
        }
        // `name() {`: a function definition.
        let rest = self.text[self.at..].trim_start_matches([' ', '\t']);
        if rest.starts_with("()") && is_name(word.trim_end_matches('-')) {
            self.out.functions.push(word);
            self.at = self.text.len() - rest.len() + 2;
            self.position = Position::Command;
            return;
        }
        if known::contains(WRAPPERS, word) {
            self.position = Position::Args(Args::Wrapper(false));
            return;
        }
        self.position =
            Position::Args(if known::contains(DECLARING_BUILTINS, word) { Args::Declaring } else { Args::Plain(true) });
        if plain {
            self.out.commands.push((word, range));
        }
    }

    fn argument(&mut self, args: Args, word: &'t str, plain: bool, range: TextRange) {
        match args {
            Args::Plain(first) => {
                if first && plain && !word.starts_with('-') {
                    self.out.subcommands.push(word);
                }
                self.position = Position::Args(Args::Plain(false));
            }
            Args::Declaring => {
                if let Some(name) = assignment(word).or(is_name(word).then_some(word)) {
                    self.out.assigned.push(name);
                }
            }
            Args::LoopVariable => {
                if is_name(word) {
                    self.out.assigned.push(word);
                }
                self.position = Position::Args(Args::Plain(false));
            }
            Args::FunctionName => {
                self.out.functions.push(word);
                self.position = Position::Command;
            }
            Args::Wrapper(takes_value) => {
                if takes_value {
                    self.position = Position::Args(Args::Wrapper(false));
                } else if word == "-v" || word == "-V" {
                    // `command -v tool` asks whether a tool exists; it runs nothing.
                    self.position = Position::Args(Args::Plain(false));
                } else if word.starts_with('-') {
                    let value = known::contains(WRAPPER_OPTIONS_WITH_VALUE, word);
                    self.position = Position::Args(Args::Wrapper(value));
                } else if let Some(name) = assignment(word) {
                    self.out.assigned.push(name);
                } else {
                    self.position = Position::Command;
                    self.command_word(word, plain, range);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(text: &str) -> Vec<&str> {
        let mut out = Shell::default();
        scan(text, 0, false, &mut out);
        out.commands
            .iter()
            .map(|(word, range)| {
                assert_eq!(&text[range.start..range.end], *word);
                *word
            })
            .collect()
    }

    #[test]
    fn finds_each_command_of_chains_and_pipelines() {
        assert_eq!(commands("cargo test -p db"), ["cargo"]);
        assert_eq!(
            commands("jq . a.json | sort | uniq -c && git add . || echo no; make"),
            ["jq", "sort", "uniq", "git", "echo", "make"]
        );
        assert_eq!(commands("npm ci\nnpm test & wait"), ["npm", "npm", "wait"]);
        assert_eq!(commands("(cd web && pnpm build)"), ["cd", "pnpm"]);
        assert_eq!(commands("echo $(date -u) `hostname`"), ["echo", "date", "hostname"]);
    }

    #[test]
    fn prompts_assignments_wrappers_and_redirections_are_skipped() {
        assert_eq!(commands("$ kubectl get pods"), ["kubectl"]);
        assert_eq!(commands("  % rg todo\n$ fd x"), ["rg", "fd"]);
        assert_eq!(commands("RUST_LOG=debug FOO=1 cargo run"), ["cargo"]);
        assert_eq!(commands("sudo -u postgres psql -c 'select 1'"), ["psql"]);
        assert_eq!(commands("env -i A=1 B=2 terraform plan"), ["terraform"]);
        assert_eq!(commands("nohup nice -n 5 ./serve.sh > log 2>&1 &"), ["./serve.sh"]);
        assert_eq!(commands("command -v jq >/dev/null || apt-get install -y jq"), ["apt-get"]);
        assert_eq!(commands("gh pr list < in.txt 2> err.txt"), ["gh"]);
        assert_eq!(commands("> playwright-cli goto https://example.com\n> const x = 1"), Vec::<&str>::new());
        assert_eq!(commands("\"$EDITOR\" file; ${TOOL} x; *.sh"), Vec::<&str>::new());
    }

    #[test]
    fn heredocs_comments_and_continuations_hold_no_commands() {
        let script = "cat <<EOF > notes.txt\nrun this later\nEOF\n# curl is not run\npsql \\\n  --single-transaction \\\n  -f x.sql\ncat <<-'END'\n\tnot a command\n\tEND\nhelm list # trailing\n";
        assert_eq!(commands(script), ["cat", "psql", "cat", "helm"]);
    }

    #[test]
    fn keywords_loops_cases_and_functions() {
        let script = "if [ -f x ]; then terraform apply; else echo no; fi\nfor f in *.sql; do psql -f \"$f\"; done\n\
                      case \"$1\" in\n  start) docker compose up ;;\n  stop|halt) docker compose down ;;\nesac\n\
                      deploy() { kubectl apply -f k8s/; }\nfunction check { shellcheck x.sh; }\ndeploy\n\
                      while read -r line; do echo \"$line\"; done < list\n(( n += 1 ))\n";
        let mut out = Shell::default();
        scan(script, 0, false, &mut out);
        let words: Vec<&str> = out.commands.iter().map(|(w, _)| *w).collect();
        assert_eq!(
            words,
            ["terraform", "echo", "psql", "docker", "docker", "kubectl", "shellcheck", "deploy", "read", "echo"]
        );
        assert_eq!(out.functions, ["deploy", "check"]);
        assert_eq!(out.assigned, ["f", "line"]);
    }

    #[test]
    fn assignments_and_declarations_are_noted() {
        let mut out = Shell::default();
        scan("export API_URL=https://x TOKEN\nreadonly MODE\nLOG=1 make\nlocal -r X=1", 0, false, &mut out);
        assert_eq!(out.assigned, ["API_URL", "TOKEN", "MODE", "LOG", "X"]);
        assert_eq!(out.commands.iter().map(|(w, _)| *w).collect::<Vec<_>>(), ["export", "readonly", "make", "local"]);
    }

    #[test]
    fn an_inline_span_is_one_line() {
        let mut out = Shell::default();
        scan("npm run\nbuild", 10, true, &mut out);
        assert_eq!(out.commands, [("npm", TextRange::new(10, 13))]);
    }
}
