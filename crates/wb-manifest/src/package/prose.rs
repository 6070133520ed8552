//! Prose checks (`docs/prose-checks.md`): what the instructions and the skills' `SKILL.md` files tell the agent,
//! held against what the manifest declares. A command they tell it to run that is neither a shell builtin, a
//! base utility nor in `tools` (`prose-undeclared-tool`); a skill the instructions name that `skills` does not
//! list (`prose-unlisted-skill`); a `${NAME}` that `env` does not declare (`prose-undeclared-env`). Each is a
//! warning at its place in the Markdown file, reported once per file and name, with a quick fix that edits the
//! manifest. No fix is safe for `check --fix`: each rests on a reading of prose a person should confirm.

mod known;
mod markdown;
mod shell;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wb_syntax::{Mapping, Node, TextRange};

use self::markdown::SkillMention;
use super::PackageChecks;
use crate::diagnostic::{Code, Diagnostic, Fix, MAX_DIAGNOSTICS_PER_CODE, Omitted};
use crate::fs::{FileKind, is_inside, join_normalized, normalize};
use crate::manifest::Manifest;
use crate::rules::ManifestText;

/// The Markdown files a package's prose checks read: the instructions, and each `SKILL.md` (a text several
/// entries lead to is read once).
#[derive(Default)]
pub(crate) struct ProseFiles {
    pub instructions: Option<(PathBuf, Arc<str>)>,
    pub skills: Vec<(PathBuf, Arc<str>)>,
    /// The skill texts taken, by address (one text is held once whatever paths lead to it).
    seen: HashSet<*const u8>,
}

impl ProseFiles {
    pub(super) fn add_skill(&mut self, path: &Path, text: &Arc<str>) {
        if self.seen.insert(Arc::as_ptr(text).cast::<u8>()) {
            self.skills.push((path.to_owned(), Arc::clone(text)));
        }
    }
}

/// Where a new `tools` or `skills` key goes when the manifest has none: after the first of these it has.
const TOOLS_AFTER: &[&str] = &["skills", "instructions"];
const SKILLS_AFTER: &[&str] = &["instructions"];

/// Whether a command word could name an executable on `PATH`: a name, not a path (`./x`, `/usr/bin/x`: files
/// the repository or image provides), a variable, a file name with a document's extension or a dotted
/// identifier (`github.copilot.debug.collectDiagnostics`, an editor's command).
fn is_tool_name(word: &str) -> bool {
    const DOCUMENTS: &[&str] =
        &[".csv", ".html", ".json", ".lock", ".log", ".md", ".sql", ".toml", ".txt", ".yaml", ".yml"];
    word.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        && word.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-'))
        && word.bytes().any(|b| b.is_ascii_alphabetic())
        && word.bytes().filter(|b| *b == b'.').count() < 2
        && !DOCUMENTS.iter().any(|extension| word.ends_with(extension))
}

/// The checks of one Markdown file.
struct File<'m, 't> {
    manifest: &'m Manifest,
    edits: Option<(ManifestText<'m>, &'m Mapping)>,
    path: &'t Path,
    diagnostics: Vec<Diagnostic>,
    /// How many of each code were found, and those past [`MAX_DIAGNOSTICS_PER_CODE`], counted but not made
    /// (nor their fixes): a huge file's warnings cost their scan, never a diagnostic each.
    counts: HashMap<Code, usize>,
    omitted: Omitted,
}

impl File<'_, '_> {
    /// Counts one finding of `code` at `range`; false when the report already holds the most it keeps (the
    /// finding is then only counted in `omitted`).
    fn room(&mut self, code: Code, range: TextRange) -> bool {
        let count = self.counts.entry(code).or_insert(0);
        *count += 1;
        if *count > MAX_DIAGNOSTICS_PER_CODE {
            self.omitted.add(self.path, code, range, code.severity());
            return false;
        }
        true
    }

    fn report(&mut self, code: Code, range: TextRange, message: String, fix: Option<Fix>) {
        let diagnostic = Diagnostic::new(code, self.path, range, message);
        self.diagnostics.push(match fix {
            Some(fix) => diagnostic.with_fix(fix.needs_review()),
            None => diagnostic,
        });
    }

    fn add_to_list(&self, key: &str, item: &str, after: &[&str]) -> Option<Fix> {
        let (text, top) = self.edits?;
        text.add_to_list(top, key, item, after)
    }

    fn commands(&mut self, shell: &shell::Shell<'_>) {
        let mut seen = HashSet::new();
        let own: HashSet<&str> = shell.functions.iter().chain(&shell.subcommands).copied().collect();
        let tools: HashSet<&str> = self.manifest.tools.iter().map(|tool| tool.value.as_str()).collect();
        for &(word, range) in &shell.commands {
            let given = !is_tool_name(word)
                || known::contains(known::SHELL_BUILTINS, word)
                || known::contains(known::BASE_UTILITIES, word)
                || own.contains(word)
                || tools.contains(word);
            if given || !seen.insert(word) || !self.room(Code::ProseUndeclaredTool, range) {
                continue;
            }
            let fix = self.add_to_list("tools", word, TOOLS_AFTER);
            self.report(Code::ProseUndeclaredTool, range, format!("Command not declared in tools: {word}"), fix);
        }
    }

    fn env(&mut self, references: &[(&str, TextRange)], assigned: &[&str]) {
        let mut seen = HashSet::new();
        let assigned: HashSet<&str> = assigned.iter().copied().collect();
        let entries = self.edits.and_then(|(_, top)| top.get("env")).and_then(Node::as_mapping);
        for &(name, range) in references {
            let declared = self.manifest.env_var(name).is_some()
                // An entry the rules rejected is still the author's declaration: its problem is reported there.
                || entries.is_some_and(|env| env.entry(name).is_some())
                || known::contains(known::PROCESS_VARIABLES, name)
                // The engine's own: WORKBENCH_OUTPUT_DIR and WORKBENCH_WORKSPACE_<NAME>.
                || name.starts_with("WORKBENCH_")
                || assigned.contains(name);
            if declared || !seen.insert(name) || !self.room(Code::ProseUndeclaredEnv, range) {
                continue;
            }
            let fix = self.edits.and_then(|(text, top)| text.declare_env(top, name));
            self.report(
                Code::ProseUndeclaredEnv,
                range,
                format!("Environment variable not declared in env: {name}"),
                fix,
            );
        }
    }
}

impl PackageChecks<'_> {
    /// The prose checks of the instructions and every skill read (see the module docs).
    pub(super) fn prose(&mut self, manifest: &Manifest) {
        let files = std::mem::take(&mut self.prose_files);
        let parse = self.manifest_parse;
        let edits = parse
            .root
            .as_ref()
            .and_then(Node::as_mapping)
            .map(|top| (ManifestText::new(self.manifest_path, &parse.text), top));
        let instructions = files.instructions.iter().map(|file| (file, true));
        for ((path, text), is_instructions) in instructions.chain(files.skills.iter().map(|file| (file, false))) {
            let prose = markdown::scan(text);
            let mut file = File {
                manifest,
                edits,
                path,
                diagnostics: Vec::new(),
                counts: HashMap::new(),
                omitted: Omitted::default(),
            };
            file.commands(&prose.shell);
            if is_instructions {
                self.skill_mentions(&mut file, &prose.skills);
            }
            file.env(&prose.env, &prose.shell.assigned);
            self.omitted.merge(std::mem::take(&mut file.omitted));
            if !file.diagnostics.is_empty() {
                self.diagnostics.append(&mut file.diagnostics);
                self.sources.push((path.clone(), Arc::clone(text)));
            }
        }
    }

    /// The skills the instructions name that `skills` does not list. A name is listed when a listed directory
    /// has it; a path (resolved from the instructions' directory) when it is a listed directory. A path counts
    /// only when it leads to a `SKILL.md` inside the package (else it is about the workspace); a name always,
    /// with a fix when `skills/<name>/SKILL.md` exists in the package.
    fn skill_mentions(&mut self, file: &mut File<'_, '_>, mentions: &[(SkillMention<'_>, TextRange)]) {
        let listed: HashSet<PathBuf> =
            file.manifest.skills.iter().map(|skill| join_normalized(self.package_dir, &skill.value)).collect();
        let listed_names: HashSet<&std::ffi::OsStr> = listed.iter().filter_map(|dir| dir.file_name()).collect();
        let dotted = file.manifest.skills.first().is_none_or(|skill| skill.value.starts_with("./"));
        let base = file.path.parent().unwrap_or(self.package_dir);
        let mut seen = HashSet::new();
        for &(mention, range) in mentions {
            let (dir, shown) = match mention {
                SkillMention::Name(name) => {
                    if listed_names.contains(std::ffi::OsStr::new(name)) {
                        continue;
                    }
                    (self.package_dir.join("skills").join(name), name)
                }
                SkillMention::Path(written) => (normalize(&base.join(written)), written),
            };
            // Each directory is looked at once, however often the text names it.
            if listed.contains(&dir) || !seen.insert(dir.clone()) {
                continue;
            }
            let by_path = matches!(mention, SkillMention::Path(_));
            if by_path && !is_inside(&dir, self.package_dir) {
                continue;
            }
            // A name is reported whether or not its directory exists: the budget is checked before the disk.
            if !by_path && !file.room(Code::ProseUnlistedSkill, range) {
                continue;
            }
            let exists = self.has_skill_file(&dir);
            if by_path && (!exists || !file.room(Code::ProseUnlistedSkill, range)) {
                continue;
            }
            let fix = exists.then(|| dir.strip_prefix(self.package_dir).ok()).flatten().and_then(|relative| {
                let relative = relative.to_string_lossy();
                let item = if dotted { format!("./{relative}") } else { relative.into_owned() };
                file.add_to_list("skills", &item, SKILLS_AFTER)
            });
            file.report(Code::ProseUnlistedSkill, range, format!("Skill not listed in skills: {shown}"), fix);
        }
    }

    fn has_skill_file(&self, dir: &Path) -> bool {
        matches!(self.fs.kind_followed(&dir.join("SKILL.md")), Ok(FileKind::File))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{Code, Diagnostic, ModelCatalog, OsFileSystem, check_package};

    const HEAD: &str = "spec: 1\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
                        instructions: ./instructions.md\n";

    /// A package with `manifest`, `instructions` and skills (`name`, `SKILL.md` body), checked: the prose
    /// diagnostics, and the manifest's text.
    fn check(manifest: &str, instructions: &str, skills: &[(&str, &str)]) -> (Vec<Diagnostic>, String) {
        let temp = tempfile::tempdir().unwrap();
        let package = temp.path().canonicalize().unwrap().join(".workbenches/demo");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(package.join("workbench.yml"), manifest).unwrap();
        std::fs::write(package.join("instructions.md"), instructions).unwrap();
        for (name, body) in skills {
            let dir = package.join("skills").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: Does {name}.\n---\n{body}"))
                .unwrap();
        }
        let report = check_package(&OsFileSystem, &package.join("workbench.yml"), ModelCatalog::embedded());
        let prose: Vec<Diagnostic> = report
            .diagnostics
            .into_iter()
            .filter(|d| {
                matches!(d.code, Code::ProseUndeclaredTool | Code::ProseUnlistedSkill | Code::ProseUndeclaredEnv)
            })
            .collect();
        for diagnostic in &prose {
            let text = &report.sources[&diagnostic.path];
            assert!(text.get(diagnostic.range.as_range()).is_some(), "the report carries the file it points into");
        }
        (prose, manifest.to_owned())
    }

    /// The manifest after the diagnostic's one fix, which is never safe.
    fn fixed(diagnostic: &Diagnostic, manifest: &str) -> String {
        assert_eq!(diagnostic.fixes.len(), 1, "{diagnostic:?}");
        let fix = &diagnostic.fixes[0];
        assert!(!fix.safe, "a prose fix is left to a person");
        let mut text = manifest.to_owned();
        for edit in fix.edits.iter().rev() {
            assert!(edit.path.ends_with("workbench.yml"));
            text.replace_range(edit.range.as_range(), &edit.new_text);
        }
        text
    }

    fn file_of(diagnostic: &Diagnostic) -> &str {
        diagnostic.path.file_name().and_then(|n| n.to_str()).unwrap_or_default()
    }

    #[test]
    fn a_command_tools_lacks_is_reported_once_with_a_fix_in_the_list_style() {
        let instructions = "# Demo\n\nRun `jq . data.json` and `jq -r .x`, then `git status`.\n\n```sh\nls -la\n\
                            deploy() { kubectl apply -f k8s; }\ndeploy\n./scripts/check.sh\n```\n";
        let block = format!("{HEAD}tools:\n  - git # version control\nruntimes:\n  local: {{}}\n");
        let (found, manifest) = check(&block, instructions, &[]);
        let words: Vec<(&str, &str)> = found.iter().map(|d| (file_of(d), d.message.as_str())).collect();
        assert_eq!(
            words,
            [
                ("instructions.md", "Command not declared in tools: jq"),
                ("instructions.md", "Command not declared in tools: kubectl"),
            ]
        );
        assert_eq!(found[0].fixes[0].title, "Add `jq` to tools");
        assert!(fixed(&found[0], &manifest).contains("tools:\n  - git # version control\n  - jq\nruntimes:"));

        let flow = format!("{HEAD}tools: [git, make]\nruntimes:\n  local: {{}}\n");
        let (found, manifest) = check(&flow, instructions, &[]);
        assert!(fixed(&found[0], &manifest).contains("tools: [git, make, jq]\n"));

        let empty = format!("{HEAD}tools: []\nruntimes:\n  local: {{}}\n");
        let (found, manifest) = check(&empty, instructions, &[]);
        assert!(fixed(&found[0], &manifest).contains("tools: [jq]\n"));

        let none = format!("{HEAD}skills: []\nruntimes:\n  local: {{}}\n");
        let (found, manifest) = check(&none, "Run `jq .`.\n", &[]);
        assert!(fixed(&found[0], &manifest).contains("skills: []\ntools:\n  - jq\nruntimes:"));
        let (found, manifest) = check(&format!("{HEAD}runtimes:\n  local: {{}}\n"), "Run `jq .`.\n", &[]);
        assert!(fixed(&found[0], &manifest).contains("instructions: ./instructions.md\ntools:\n  - jq\nruntimes:"));
        let blank = format!("{HEAD}tools:\nruntimes:\n  local: {{}}\n");
        let (found, manifest) = check(&blank, "Run `jq .`.\n", &[]);
        assert!(fixed(&found[0], &manifest).contains("tools:\n  - jq\nruntimes:"));
    }

    #[test]
    fn skills_tell_commands_too_and_declared_tools_builtins_and_base_utilities_pass() {
        let manifest = format!("{HEAD}skills:\n  - ./skills/review\ntools:\n  - cargo\nruntimes:\n  local: {{}}\n");
        let skill = "Run `cargo clippy`, then run `cd src && grep -rn TODO . | sort | uniq`.\n\n```bash\n\
                     export MODE=fast\nsudo -E cargo test\nshellcheck x.sh\n```\n";
        let (found, _) = check(&manifest, "Use the `review` skill.\n", &[("review", skill)]);
        let words: Vec<(&str, &str)> = found.iter().map(|d| (file_of(d), d.message.as_str())).collect();
        assert_eq!(words, [("SKILL.md", "Command not declared in tools: shellcheck")]);
    }

    #[test]
    fn subcommands_functions_and_dotted_identifiers_are_not_tools() {
        let instructions = "Run `webmcp-list` first, then run `github.copilot.debug.collectDiagnostics`.\n\n\
                            ```bash\nplaywright-cli webmcp-list\n```\n";
        let (found, _) = check(&format!("{HEAD}runtimes:\n  local: {{}}\n"), instructions, &[]);
        let messages: Vec<&str> = found.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, ["Command not declared in tools: playwright-cli"]);
    }

    #[test]
    fn a_named_skill_the_manifest_does_not_list() {
        let manifest = format!("{HEAD}skills:\n  - ./skills/review\nruntimes:\n  local: {{}}\n");
        let instructions = "Use the `review` skill, then the `release-notes` skill (see \
                            [it](skills/release-notes/SKILL.md)) and the `triage` skill.\n";
        let skills = [("review", ""), ("release-notes", "")];
        let (found, manifest) = check(&manifest, instructions, &skills);
        let messages: Vec<&str> = found.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, ["Skill not listed in skills: release-notes", "Skill not listed in skills: triage"]);
        assert_eq!(found[0].fixes[0].title, "Add `./skills/release-notes` to skills");
        assert!(fixed(&found[0], &manifest).contains("skills:\n  - ./skills/review\n  - ./skills/release-notes\n"));
        assert!(found[1].fixes.is_empty(), "no skills/triage/SKILL.md to add");

        // By path, in a package without `skills`: the key is added after `instructions`.
        let manifest = format!("{HEAD}runtimes:\n  local: {{}}\n");
        let (found, manifest) = check(&manifest, "Follow `skills/review/SKILL.md`.\n", &[("review", "")]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            fixed(&found[0], &manifest).contains("instructions: ./instructions.md\nskills:\n  - ./skills/review\n")
        );
        // A path to no skill in the package is about the workspace.
        let (found, _) = check(&format!("{HEAD}runtimes:\n  local: {{}}\n"), "Edit `src/skills/parser`.\n", &[]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn an_undeclared_env_reference_gets_a_declaration() {
        let manifest = format!("{HEAD}env:\n  API_URL:\n    required: true\nruntimes:\n  local: {{}}\n");
        let instructions = "Call ${API_URL} with ${API_TOKEN} from ${HOME}; ${API_TOKEN} again.\n\n```sh\n\
                            OUT=${WORKBENCH_OUTPUT_DIR}/x\necho ${OUT}\n```\n\n```yaml\nkey: ${IN_YAML}\n```\n";
        let (found, manifest) = check(&manifest, instructions, &[]);
        let messages: Vec<&str> = found.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, ["Environment variable not declared in env: API_TOKEN"]);
        assert_eq!(&instructions[found[0].range.as_range()], "${API_TOKEN}");
        assert_eq!(found[0].fixes[0].title, "Declare `API_TOKEN` in env");
        assert!(
            fixed(&found[0], &manifest).contains("  API_URL:\n    required: true\n  API_TOKEN:\n    required: true\n")
        );
        let path = Path::new("instructions.md");
        assert!(found[0].path.ends_with(path));
    }
}
