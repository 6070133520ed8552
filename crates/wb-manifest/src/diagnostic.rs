//! Diagnostics: what every check produces and every front end (CLI formats, the language server) renders.

use std::fmt;
use std::path::PathBuf;

use wb_syntax::TextRange;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "information",
            Severity::Hint => "hint",
        }
    }
}

/// Extra meaning an editor can render (faded or struck-through text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DiagnosticTag {
    Unnecessary,
    Deprecated,
}

macro_rules! codes {
    ($($variant:ident = $name:literal, $severity:ident, $summary:literal;)*) => {
        /// A stable diagnostic code. Every code is documented in `docs/diagnostics.md`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The kebab-case name shown to users and used in documentation anchors.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// The severity a diagnostic with this code has.
            pub fn severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$severity,)* }
            }

            /// One line on what the code means.
            pub fn summary(self) -> &'static str {
                match self { $(Code::$variant => $summary,)* }
            }

            pub fn from_name(name: &str) -> Option<Code> {
                match name { $($name => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    // YAML
    YamlSyntax = "yaml-syntax", Error, "The file is not well-formed YAML.";
    TabIndentation = "tab-indentation", Error, "YAML indentation uses a tab character.";
    DuplicateKey = "duplicate-key", Error, "A mapping defines the same key twice.";
    MultipleDocuments = "multiple-documents", Error, "The manifest contains more than one YAML document.";
    UnsupportedTag = "unsupported-tag", Error, "A YAML tag other than the core schema's (`!!str`, `!!int`, ...).";
    ComplexKey = "complex-key", Error, "A mapping key is a sequence or a mapping.";
    ByteOrderMark = "byte-order-mark", Warning, "The file starts with a UTF-8 byte-order mark.";
    InvalidUtf8 = "invalid-utf8", Error, "The file is not valid UTF-8.";
    AliasExpansionLimit = "alias-expansion-limit", Error, "YAML aliases expand to too many nodes (an alias bomb).";
    NestingTooDeep = "nesting-too-deep", Error, "YAML collections are nested too deeply.";
    TooManyNodes = "too-many-nodes", Error, "The manifest holds more YAML nodes than the checker reads.";
    FileTooLarge = "file-too-large", Error, "The manifest, or a file it names, is larger than the checker reads.";
    // Manifest shape
    ManifestNotObject = "manifest-not-object", Error, "The manifest's document is not a mapping.";
    UnsupportedSpec = "unsupported-spec", Error, "`spec` is missing or not a supported spec number (0 or 1).";
    LegacyFieldInSpec1 = "legacy-field-in-spec-1", Error, "A spec 1 manifest uses the spec 0 fields `runtime`, `image` or `docker`.";
    Spec0Manifest = "spec-0-manifest", Hint, "The manifest uses the frozen legacy spec 0; `wb-lsp migrate` converts it.";
    UnknownField = "unknown-field", Error, "A field the standard does not define at this level.";
    MissingField = "missing-field", Error, "A required field is absent.";
    InvalidType = "invalid-type", Error, "A value has the wrong type.";
    EmptyValue = "empty-value", Error, "A string is blank or a list that must not be empty is empty.";
    InvalidVersion = "invalid-version", Error, "`version` is not a semantic version.";
    InvalidModelId = "invalid-model-id", Error, "`model.id` is not a provider-neutral `lab/model` identifier.";
    InvalidName = "invalid-name", Error, "A name (provider, MCP, environment variable, workspace, skill) breaks its pattern.";
    InvalidUrl = "invalid-url", Error, "An MCP URL is not an absolute http or https URL.";
    InvalidValue = "invalid-value", Error, "A value is outside the allowed set or range.";
    DuplicateName = "duplicate-name", Error, "Two entries share a name that must be unique.";
    UnknownRuntimeProvider = "unknown-runtime-provider", Error, "`runtimes` names a provider other than local, docker, e2b and daytona.";
    MissingImage = "missing-image", Error, "A docker or e2b runtime declares no image.";
    DockerEngineRequiresDocker = "docker-engine-requires-docker", Error, "A spec 0 `docker.engine` without `runtime: docker`.";
    // Package files
    PathNotFound = "path-not-found", Error, "The path given to the checker, or a package's manifest, does not exist.";
    NoWorkbenches = "no-workbenches", Error, "A directory holds no `.workbenches/*/workbench.yml`.";
    OutsideWorkbenchesDirectory = "outside-workbenches-directory", Error, "The package does not sit beneath a `.workbenches` directory.";
    PathNotRelative = "path-not-relative", Error, "A package path is absolute.";
    PathOutsideRepository = "path-outside-repository", Error, "A package path leaves the repository (or, for `runner_config`, the package).";
    PathOutsideBoundary = "path-outside-boundary", Error, "A package path resolves outside the repository (or, for `runner_config`, the package) through a symbolic link, into /proc, /sys or /dev, or to a device, FIFO or socket.";
    MissingInstructions = "missing-instructions", Error, "The instructions file does not exist or is not a regular file.";
    MissingSkillManifest = "missing-skill-manifest", Error, "A skill directory has no `SKILL.md`.";
    InvalidSkill = "invalid-skill", Error, "A `SKILL.md` frontmatter breaks the skill contract.";
    SkillNameMismatch = "skill-name-mismatch", Error, "A skill's `name` differs from its directory name.";
    MissingRunnerConfig = "missing-runner-config", Error, "`runner_config` does not exist.";
    RunnerConfigSymlink = "runner-config-symlink", Error, "`runner_config` contains a symbolic link.";
    RunnerConfigCredentialFile = "runner-config-credential-file", Error, "`runner_config` contains a credential file.";
    RunnerConfigInvalidJson = "runner-config-invalid-json", Error, "A JSON file in `runner_config` does not parse.";
    RunnerConfigLiteralCredential = "runner-config-literal-credential", Error, "A JSON file in `runner_config` holds a literal credential.";
    RunnerConfigShape = "runner-config-shape", Error, "`runner_config` has the wrong shape for the runner.";
    RunnerConfigContent = "runner-config-content", Warning, "A Claude Code `runner_config` file that fails when it is staged.";
    MissingBuildFile = "missing-build-file", Warning, "An image build's Dockerfile or context does not exist (the build would fail).";
    DockerfileCopiesCredential = "dockerfile-copies-credential", Warning, "An image build's Dockerfile copies a credential file into the image.";
    IoError = "io-error", Error, "A file could not be read.";
    // What the instructions and skills say, against what the manifest declares
    ProseUndeclaredTool = "prose-undeclared-tool", Warning, "The instructions or a skill tell the agent to run a command that `tools` does not declare.";
    ProseUnlistedSkill = "prose-unlisted-skill", Warning, "The instructions name a skill that `skills` does not list.";
    ProseUndeclaredEnv = "prose-undeclared-env", Warning, "The instructions or a skill reference `${NAME}` that `env` does not declare.";
    // Run-time problems that are known statically
    UnsupportedRunner = "unsupported-runner", Warning, "The runner is not one of opencode, claude-code and pi.";
    UndeclaredEnvReference = "undeclared-env-reference", Error, "An MCP header references a variable that `env` does not declare.";
    PiMcpUnsupported = "pi-mcp-unsupported", Warning, "Pi has no native MCP transport.";
    ClaudeMcpDisabled = "claude-mcp-disabled", Warning, "Claude Code will not expand Claude or Anthropic variables in MCP headers.";
    DaytonaClassUnsupported = "daytona-class-unsupported", Warning, "The reference engine runs only the linux Daytona class.";
    DaytonaImageRequired = "daytona-image-required", Warning, "A Daytona runtime without a published image cannot run.";
    UnknownModel = "unknown-model", Warning, "The model is absent from the model catalog.";
    UnknownModelProvider = "unknown-model-provider", Warning, "A route names a provider absent from the model catalog.";
    ProviderDoesNotServeModel = "provider-does-not-serve-model", Warning, "A route's provider does not serve the model.";
    LocalRuntimeImage = "local-runtime-image", Warning, "A spec 0 local runtime declares an image.";
    UnsupportedRuntime = "unsupported-runtime", Warning, "A spec 0 `runtime` names an unknown provider.";
}

impl Code {
    /// Codes for problems the reference engine finds only when a run starts (engine facts b.6). Editors can
    /// switch these warnings off.
    pub fn is_run_time(self) -> bool {
        matches!(
            self,
            Code::UnsupportedRunner
                | Code::PiMcpUnsupported
                | Code::ClaudeMcpDisabled
                | Code::DaytonaClassUnsupported
                | Code::DaytonaImageRequired
                | Code::UnknownModel
                | Code::UnknownModelProvider
                | Code::ProviderDoesNotServeModel
                | Code::LocalRuntimeImage
                | Code::UnsupportedRuntime
                | Code::RunnerConfigContent
        )
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A replacement of one range of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub path: PathBuf,
    pub range: TextRange,
    pub new_text: String,
}

/// A mechanical fix: a title for the quick-fix menu, the files it creates and the edits that apply it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Fix {
    pub title: String,
    /// Files to create (path, contents) before the edits apply. They must not exist yet.
    pub creates: Vec<(PathBuf, String)>,
    pub edits: Vec<TextEdit>,
    /// Whether `wb-lsp check --fix` may apply it without a person choosing: its result is certain (the one
    /// value a did-you-mean allows, a declaration, a migration of a clean manifest). Placeholders, deletions and
    /// choices between alternatives are not safe.
    pub safe: bool,
}

impl Fix {
    /// The same fix, left to a person to choose (`check --fix` skips it).
    pub fn needs_review(mut self) -> Fix {
        self.safe = false;
        self
    }
}

/// Another location a diagnostic concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Related {
    pub path: PathBuf,
    pub range: TextRange,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// The file the range refers to.
    pub path: PathBuf,
    pub range: TextRange,
    pub message: String,
    pub related: Vec<Related>,
    pub fixes: Vec<Fix>,
    pub tags: Vec<DiagnosticTag>,
}

impl Diagnostic {
    pub fn new(code: Code, path: impl Into<PathBuf>, range: TextRange, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.severity(),
            path: path.into(),
            range,
            message: message.into(),
            related: Vec::new(),
            fixes: Vec::new(),
            tags: Vec::new(),
        }
    }

    pub fn with_related(mut self, path: impl Into<PathBuf>, range: TextRange, message: impl Into<String>) -> Self {
        self.related.push(Related { path: path.into(), range, message: message.into() });
        self
    }

    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fixes.push(fix);
        self
    }

    pub fn with_tag(mut self, tag: DiagnosticTag) -> Self {
        self.tags.push(tag);
        self
    }
}

/// At most this many diagnostics of one code in one file: the first ones by position, then one diagnostic of
/// the same code that says how many more there are (`docs/diagnostics.md`, "Limits"). A 4 MB instructions file
/// could otherwise name hundreds of thousands of commands, each a warning the editor republishes on every edit.
pub const MAX_DIAGNOSTICS_PER_CODE: usize = 100;

/// The diagnostics a check left out of its report, by file and code.
#[derive(Clone, Debug, Default)]
pub struct Omitted {
    /// How many, where the first of them was, and the most severe of their severities.
    by_file_and_code: std::collections::BTreeMap<(PathBuf, Code), (usize, TextRange, Severity)>,
}

impl Omitted {
    /// One more diagnostic of `code` in `path` left out, at `range`.
    pub fn add(&mut self, path: &std::path::Path, code: Code, range: TextRange, severity: Severity) {
        self.add_many(path, code, 1, range, severity);
    }

    fn add_many(&mut self, path: &std::path::Path, code: Code, count: usize, range: TextRange, severity: Severity) {
        let entry = self.by_file_and_code.entry((path.to_owned(), code)).or_insert((0, range, severity));
        entry.0 += count;
        if range.start < entry.1.start {
            entry.1 = range;
        }
        entry.2 = entry.2.min(severity);
    }

    /// Takes in what another pass left out.
    pub fn merge(&mut self, other: Omitted) {
        for ((path, code), (count, range, severity)) in other.by_file_and_code {
            self.add_many(&path, code, count, range, severity);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_file_and_code.is_empty()
    }
}

/// Keeps the first [`MAX_DIAGNOSTICS_PER_CODE`] diagnostics of each code in each file (`diagnostics` sorted by
/// file and position) and adds, for each code and file with more (those dropped here and those `omitted`
/// upstream), one diagnostic of that code at the first one left out that says how many. Sorted again after.
pub fn cap_diagnostics(diagnostics: &mut Vec<Diagnostic>, mut omitted: Omitted) {
    let mut counts: std::collections::HashMap<(&PathBuf, Code), usize> = std::collections::HashMap::new();
    let mut keep = Vec::with_capacity(diagnostics.len());
    for diagnostic in diagnostics.iter() {
        let count = counts.entry((&diagnostic.path, diagnostic.code)).or_insert(0);
        *count += 1;
        keep.push(*count <= MAX_DIAGNOSTICS_PER_CODE);
    }
    drop(counts);
    if keep.iter().all(|kept| *kept) && omitted.is_empty() {
        return;
    }
    let mut kept = keep.into_iter();
    diagnostics.retain(|diagnostic| {
        let keep = kept.next().unwrap_or(true);
        if !keep {
            omitted.add(&diagnostic.path, diagnostic.code, diagnostic.range, diagnostic.severity);
        }
        keep
    });
    for ((path, code), (count, range, severity)) in omitted.by_file_and_code {
        let mut summary = Diagnostic::new(code, path, range, more_message(code, count));
        summary.severity = severity;
        diagnostics.push(summary);
    }
    sort_diagnostics(diagnostics);
}

/// `… and 279,900 more prose-undeclared-tool diagnostics in this file (only the first 100 of each code are
/// reported)`.
fn more_message(code: Code, count: usize) -> String {
    let digits = count.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    let noun = if count == 1 { "diagnostic" } else { "diagnostics" };
    format!(
        "… and {grouped} more {code} {noun} in this file (only the first {MAX_DIAGNOSTICS_PER_CODE} of each code are \
         reported)"
    )
}

/// Orders diagnostics by file and position, so every front end shows them the same way.
pub fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (&a.path, a.range.start, a.range.end, a.code, &a.message).cmp(&(
            &b.path,
            b.range.start,
            b.range.end,
            b.code,
            &b.message,
        ))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(code: Code, path: &str, start: usize) -> Diagnostic {
        Diagnostic::new(code, path, TextRange::new(start, start + 1), format!("{code} at {start}"))
    }

    #[test]
    fn each_code_of_each_file_keeps_its_first_diagnostics_and_one_that_counts_the_rest() {
        let mut diagnostics: Vec<Diagnostic> = (0..250)
            .map(|i| at(Code::ProseUndeclaredTool, "/p/instructions.md", i * 2))
            .chain((0..3).map(|i| at(Code::ProseUndeclaredEnv, "/p/instructions.md", i * 2 + 1)))
            .chain((0..150).map(|i| at(Code::UnknownField, "/p/workbench.yml", i)))
            .collect();
        sort_diagnostics(&mut diagnostics);
        let mut upstream = Omitted::default();
        upstream.add(
            std::path::Path::new("/p/instructions.md"),
            Code::ProseUndeclaredTool,
            TextRange::new(900, 901),
            Severity::Warning,
        );
        cap_diagnostics(&mut diagnostics, upstream);
        let of = |code: Code| diagnostics.iter().filter(|d| d.code == code).collect::<Vec<_>>();
        let tools = of(Code::ProseUndeclaredTool);
        assert_eq!(tools.len(), MAX_DIAGNOSTICS_PER_CODE + 1);
        let summary = tools.iter().find(|d| d.message.starts_with('…')).unwrap_or_else(|| panic!("no summary"));
        assert_eq!(
            summary.message,
            "… and 151 more prose-undeclared-tool diagnostics in this file (only the first 100 of each code are reported)"
        );
        assert_eq!(summary.range, TextRange::new(200, 201), "at the first one left out");
        assert_eq!(of(Code::ProseUndeclaredEnv).len(), 3, "a code under the cap is untouched");
        let fields = of(Code::UnknownField);
        assert_eq!(fields.len(), 101);
        assert!(fields.iter().any(|d| d.message.starts_with("… and 50 more unknown-field diagnostics")), "{fields:?}");
        assert_eq!(fields.iter().find(|d| d.message.starts_with('…')).map(|d| d.severity), Some(Severity::Error));
        for pair in diagnostics.windows(2) {
            assert!((&pair[0].path, pair[0].range.start) <= (&pair[1].path, pair[1].range.start), "sorted");
        }
        assert_eq!(more_message(Code::YamlSyntax, 1_234_567).split(' ').nth(2), Some("1,234,567"));
    }
}
