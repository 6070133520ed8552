//! Image build files: a Dockerfile a runtime builds that copies a credential file from the build context
//! (`COPY .env /app/.env`, `ADD id_rsa /root/.ssh/`) is warned about at the source in the Dockerfile, since the
//! image, and every agent that runs in it, would carry the file.

use std::path::Path;
use std::sync::Arc;

use wb_syntax::TextRange;

use super::PackageChecks;
use crate::boundary::MAX_PACKAGE_FILE_BYTES;
use crate::credentials::is_credential_path;
use crate::diagnostic::Code;
use crate::manifest::Spanned;

impl PackageChecks<'_> {
    /// Warns about every `COPY`/`ADD` of the Dockerfile at `path` (named by `build`) whose source is a
    /// credential path. A Dockerfile over the size limit or unreadable is not looked into (the build reports
    /// it); one already looked into for another runtime is not warned about again.
    pub(super) fn dockerfile_credentials(&mut self, build: &Spanned<String>, path: &Path) {
        let real = self.fs.real_path(path).unwrap_or_else(|_| path.to_owned());
        if !self.dockerfiles.insert(real) {
            return;
        }
        let Ok(bytes) = self.fs.read_limited(path, MAX_PACKAGE_FILE_BYTES) else { return };
        let text =
            String::from_utf8(bytes).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
        let copies = credential_copies(&text);
        if copies.is_empty() {
            return;
        }
        for (range, source) in copies {
            let message = format!("Dockerfile copies a credential file into the image: {source}");
            self.diagnostics.push(
                crate::Diagnostic::new(Code::DockerfileCopiesCredential, path, range, message).with_related(
                    self.manifest_path,
                    build.range,
                    "the image built from this Dockerfile",
                ),
            );
        }
        self.sources.push((path.to_owned(), Arc::from(text)));
    }
}

/// The sources of `COPY` and `ADD` instructions (also after `ONBUILD`) that are credential paths, with their
/// ranges in `text`. Sources from another stage or image (`--from`), heredocs and URLs are not files of the
/// build context and are skipped.
pub(crate) fn credential_copies(text: &str) -> Vec<(TextRange, String)> {
    let escape = escape_character(text);
    let mut found = Vec::new();
    let mut lines = Lines { text, offset: 0 };
    while let Some(words) = lines.instruction(escape) {
        let mut words = words.as_slice();
        if words.first().is_some_and(|(_, word)| word.eq_ignore_ascii_case("onbuild")) {
            words = &words[1..];
        }
        let Some(((_, keyword), arguments)) = words.split_first() else { continue };
        if !(keyword.eq_ignore_ascii_case("copy") || keyword.eq_ignore_ascii_case("add")) {
            continue;
        }
        let flags = arguments.iter().take_while(|(_, word)| word.starts_with("--")).count();
        if arguments[..flags].iter().any(|(_, flag)| flag.to_ascii_lowercase().starts_with("--from")) {
            continue;
        }
        let arguments = &arguments[flags..];
        let heredoc = arguments.iter().find_map(|(_, word)| heredoc_delimiter(word));
        let sources = match arguments.first() {
            Some((start, first)) if first.starts_with('[') => json_sources(text, *start, arguments),
            _ => arguments.iter().take(arguments.len().saturating_sub(1)).cloned().collect(),
        };
        for (start, source) in sources {
            let external = source.starts_with("<<") || source.contains("://") || source.starts_with("git@");
            if !external && is_credential_path(&source) {
                found.push((TextRange::new(start, start + source.len()), source));
            }
        }
        if let Some(delimiter) = heredoc {
            lines.skip_heredoc(&delimiter);
        }
    }
    found
}

/// The escape character a `# escape=` parser directive at the top sets (`\` by default).
fn escape_character(text: &str) -> char {
    for line in text.lines() {
        let Some(directive) = line.trim().strip_prefix('#') else { break };
        let Some((key, value)) = directive.split_once('=') else { break };
        if key.trim().eq_ignore_ascii_case("escape") {
            return if value.trim() == "`" { '`' } else { '\\' };
        }
    }
    '\\'
}

/// The delimiter of a heredoc word (`<<EOF`, `<<-EOF`, `<<"EOF"`).
fn heredoc_delimiter(word: &str) -> Option<String> {
    let rest = word.strip_prefix("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    let delimiter = rest.trim_matches(['"', '\'']);
    (!delimiter.is_empty()).then(|| delimiter.to_owned())
}

/// The sources of a JSON-form instruction: every string of the array but the last, with its range where it
/// is written (strings with escapes are read as JSON and located by their raw text).
fn json_sources(text: &str, start: usize, arguments: &[(usize, String)]) -> Vec<(usize, String)> {
    let end = arguments.last().map_or(start, |(at, word)| at + word.len());
    let raw = &text[start..end.max(start)];
    let Ok(items) = serde_json::from_str::<Vec<String>>(raw) else { return Vec::new() };
    let mut searched = start;
    let mut sources = Vec::new();
    for item in items.iter().take(items.len().saturating_sub(1)) {
        let quoted = serde_json::to_string(item).unwrap_or_default();
        let inner = quoted.trim_matches('"');
        match text.get(searched..end).and_then(|rest| rest.find(inner)) {
            Some(at) => {
                sources.push((searched + at, item.clone()));
                searched += at + inner.len();
            }
            None => sources.push((start, item.clone())),
        }
    }
    sources
}

/// The logical lines of a Dockerfile, each as its words with their offsets.
struct Lines<'t> {
    text: &'t str,
    offset: usize,
}

impl Lines<'_> {
    /// The next instruction's words: physical lines joined while one ends with the escape character, comment
    /// and blank lines skipped.
    fn instruction(&mut self, escape: char) -> Option<Vec<(usize, String)>> {
        let mut words: Vec<(usize, String)> = Vec::new();
        loop {
            let line = self.next_line()?;
            let (start, content) = line;
            let trimmed = content.trim_start();
            if trimmed.starts_with('#') || (trimmed.is_empty() && words.is_empty()) {
                continue;
            }
            let body = content.trim_end();
            let continued = body.ends_with(escape);
            let body = if continued { &body[..body.len() - escape.len_utf8()] } else { body };
            let mut word_start = None;
            for (at, ch) in body.char_indices().chain([(body.len(), ' ')]) {
                match (ch.is_whitespace(), word_start) {
                    (true, Some(begin)) => {
                        words.push((start + begin, body[begin..at].to_owned()));
                        word_start = None;
                    }
                    (false, None) => word_start = Some(at),
                    _ => {}
                }
            }
            if !continued {
                return Some(words);
            }
        }
    }

    /// The next physical line: its offset and text without the line break.
    fn next_line(&mut self) -> Option<(usize, &str)> {
        if self.offset >= self.text.len() {
            return None;
        }
        let rest = &self.text[self.offset..];
        let length = rest.find('\n').map_or(rest.len(), |at| at + 1);
        let start = self.offset;
        self.offset += length;
        Some((start, rest[..length].trim_end_matches(['\n', '\r'])))
    }

    /// Skips a heredoc's body, through its delimiter line.
    fn skip_heredoc(&mut self, delimiter: &str) {
        while let Some((_, line)) = self.next_line() {
            if line.trim() == delimiter {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::credential_copies;

    fn sources(text: &str) -> Vec<String> {
        credential_copies(text)
            .into_iter()
            .map(|(range, source)| {
                assert_eq!(&text[range.as_range()], source, "{text:?}");
                source
            })
            .collect()
    }

    #[test]
    fn copies_of_credential_files_are_found_where_they_are_written() {
        let text = "FROM node:22\n# COPY .env /ignored\ncopy .env /app/.env\nADD --chown=1000 id_rsa \\\n  server.pem /root/\n\
                    COPY [\"keys/app.key\", \"README.md\", \"/app/\"]\nONBUILD COPY .npmrc /app/\nCOPY src /app/src\n";
        assert_eq!(sources(text), [".env", "id_rsa", "server.pem", "keys/app.key", ".npmrc"]);
    }

    #[test]
    fn other_stages_heredocs_urls_templates_and_destinations_are_not_sources() {
        let text = "COPY --from=builder /app/.env /app/.env\nCOPY <<EOF /etc/.env\nCOPY .env /x\nEOF\n\
                    ADD https://example.com/server.pem /certs/\nCOPY .env.example /app/.env\nCOPY app /root/.ssh/\n\
                    RUN cp .env /tmp\n";
        assert!(sources(text).is_empty(), "{:?}", sources(text));
    }

    #[test]
    fn the_escape_directive_changes_the_continuation() {
        let text = "# escape=`\nFROM windows\nCOPY README.md `\n  .env C:\\app\\\n";
        assert_eq!(sources(text), [".env"]);
    }
}
