//! A trial task: `trials/<task-id>/task.json` of a package, in the reference trial harness's format, beside
//! `prompt.md` (the task the agent gets) and optional `references/<name>/` solutions. Checked like a manifest,
//! every problem at its value: unknown fields, a fixture that does not exist, a gate with no `run`. The
//! language server checks an open `task.json` with the same function, and `check` every task of a package.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use wb_syntax::{Mapping, Node, TextRange, Value};

use crate::diagnostic::{Code, Diagnostic};
use crate::fs::{FileKind, FileSystem};
use crate::json_fields::{StringRule, string_field};

/// The directory of a package that holds its trial tasks, one directory each.
pub const TRIALS_DIR: &str = "trials";
/// A task's definition, in its directory.
pub const TASK_FILE: &str = "task.json";
/// The task the agent gets, beside `task.json`.
pub const PROMPT_FILE: &str = "prompt.md";
/// The largest `task.json` read.
pub const MAX_TASK_BYTES: usize = 1024 * 1024;

/// The fields of a task, in the reference's order: what completion offers and `unknown` accepts.
pub const TASK_FIELDS: &[(&str, &str)] = &[
    ("version", "The task format's version: 1."),
    ("id", "The task's id: its directory's name under `trials/`."),
    ("title", "One line on what the task asks."),
    ("workbench", "The package the task is for (optional here: the package whose `trials/` holds it)."),
    (
        "fixture",
        "The repository an attempt starts from: `{\"kind\": \"empty\"}`, `{\"kind\": \"dir\", \"path\"}` or `{\"kind\": \"git\", \"url\", \"commit\", \"subdir\"}`, each with an optional `overlay`.",
    ),
    ("timeoutMinutes", "How long one attempt may run, in minutes (its `--max-duration`)."),
    ("setup", "Shell commands run in the fixture before the agent starts (a string or an array of strings)."),
    (
        "gates",
        "The checks of an attempt's result: `{id, title, run, timeoutSeconds}`, each a shell command whose exit status is the verdict. The agent never sees them.",
    ),
    ("criteria", "What a reviewer looks for, kept as text: `{id, text}`."),
];

/// The fields of a fixture, by kind.
pub const FIXTURE_KINDS: &[(&str, &[&str])] = &[
    ("empty", &["kind", "overlay"]),
    ("dir", &["kind", "path", "overlay"]),
    ("git", &["kind", "url", "commit", "subdir", "overlay"]),
];
/// The fields of a gate.
pub const GATE_FIELDS: &[&str] = &["id", "title", "run", "timeoutSeconds"];
/// The fields of a criterion.
pub const CRITERION_FIELDS: &[&str] = &["id", "text"];

/// A checked task.
#[derive(Clone, Debug, PartialEq)]
pub struct TrialTask {
    /// The task's directory.
    pub dir: PathBuf,
    pub id: String,
    pub title: String,
    pub workbench: Option<String>,
    pub fixture: Fixture,
    pub timeout_minutes: Option<f64>,
    pub setup: Vec<String>,
    pub gates: Vec<Gate>,
    pub criteria: Vec<Criterion>,
}

/// Where an attempt's primary workspace comes from, and what is laid over it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fixture {
    pub source: FixtureSource,
    /// A directory copied over the fixture (absolute).
    pub overlay: Option<PathBuf>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FixtureSource {
    Empty,
    /// A directory (absolute).
    Dir(PathBuf),
    Git {
        url: String,
        commit: String,
        subdir: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gate {
    pub id: String,
    pub title: Option<String>,
    pub run: String,
    pub timeout_seconds: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Criterion {
    pub id: String,
    pub text: String,
}

/// The `task.json` of every task directory under the package's `trials/`, sorted.
pub fn task_files(fs: &dyn FileSystem, package_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs.read_dir(&package_dir.join(TRIALS_DIR)) else { return Vec::new() };
    let mut tasks: Vec<PathBuf> = entries
        .into_iter()
        .filter(|dir| matches!(fs.kind(dir), Ok(FileKind::Directory)))
        .map(|dir| dir.join(TASK_FILE))
        .collect();
    tasks.sort();
    tasks
}

/// True for a path that is a task's definition: `trials/<id>/task.json`.
pub fn is_task_file(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == TASK_FILE)
        && path.parent().and_then(Path::parent).and_then(Path::file_name).is_some_and(|name| name == TRIALS_DIR)
}

struct Checker<'a> {
    fs: &'a dyn FileSystem,
    path: &'a Path,
    dir: &'a Path,
    diagnostics: Vec<Diagnostic>,
}

/// Checks a task's text; `package` is the name of the package whose `trials/` holds it, when known. The task
/// is returned when it has no error.
pub fn check_task(
    fs: &dyn FileSystem,
    path: &Path,
    text: &str,
    package: Option<&str>,
) -> (Option<TrialTask>, Vec<Diagnostic>) {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let mut checker = Checker { fs, path, dir, diagnostics: Vec::new() };
    let task = checker.task(text, package);
    crate::sort_diagnostics(&mut checker.diagnostics);
    let valid = !checker.diagnostics.iter().any(|d| d.severity == crate::Severity::Error);
    (task.filter(|_| valid), checker.diagnostics)
}

impl Checker<'_> {
    fn report(&mut self, code: Code, range: TextRange, message: String) -> &mut Diagnostic {
        self.diagnostics.push(Diagnostic::new(code, self.path, range, message));
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    fn task(&mut self, text: &str, package: Option<&str>) -> Option<TrialTask> {
        if text.len() > MAX_TASK_BYTES {
            let message = format!("Trial task is too large: {} bytes (the limit is 1 MiB)", text.len());
            self.report(Code::FileTooLarge, TextRange::empty(0), message);
            return None;
        }
        let parsed = wb_syntax::parse_str(text);
        if let Some(error) = parsed.errors.first() {
            self.report(Code::YamlSyntax, error.range, format!("Trial task is not valid JSON: {}", error.message));
            return None;
        }
        let root = parsed.root.as_ref();
        let Some(top) = root.and_then(Node::as_mapping) else {
            let range = root.map_or(TextRange::empty(0), |node| node.range);
            self.report(Code::ManifestNotObject, range, "Trial task must be an object".to_owned());
            return None;
        };
        let anchor = top.entries.first().map_or(TextRange::empty(0), |e| e.key_range);
        let allowed: Vec<&str> = TASK_FIELDS.iter().map(|(name, _)| *name).collect();
        self.unknown(top, &allowed, "trial task");
        match top.entry("version") {
            Some(entry) if matches!(entry.value.value, Value::Number(n) if n == 1.0) => {}
            Some(entry) => {
                self.report(Code::InvalidValue, entry.value.range, "Trial task version must be 1".to_owned());
            }
            None => {
                self.report(Code::MissingField, anchor, "Trial task version is required".to_owned());
            }
        }
        let id = self.string(top, "id", "Trial task id", true, anchor);
        if let Some(id) = &id {
            self.task_id(top, id);
        }
        let title = self.string(top, "title", "Trial task title", true, anchor);
        let workbench = self.string(top, "workbench", "Trial task workbench", false, anchor);
        if let (Some(named), Some(package)) = (&workbench, package)
            && named != package
        {
            let range = top.get("workbench").map_or(anchor, |n| n.range);
            let message = format!("Trial task is for workbench {named}, but it is in the trials of {package}");
            self.report(Code::InvalidValue, range, message);
        }
        let fixture = match top.entry("fixture") {
            Some(entry) => self.fixture(&entry.value),
            None => {
                self.report(Code::MissingField, anchor, "Trial task fixture is required".to_owned());
                None
            }
        };
        let timeout_minutes = self.positive(top, "timeoutMinutes", "Trial task timeoutMinutes", false);
        let setup = self.setup(top);
        let gates = self.gates(top, anchor);
        let criteria = self.criteria(top);
        self.prompt(anchor);
        Some(TrialTask {
            dir: self.dir.to_owned(),
            id: id?,
            title: title?,
            workbench,
            fixture: fixture?,
            timeout_minutes,
            setup,
            gates,
            criteria,
        })
    }

    /// The id names the task's directory.
    fn task_id(&mut self, top: &Mapping, id: &str) {
        let range = top.get("id").map_or(TextRange::empty(0), |n| n.range);
        let directory = self.dir.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        if !is_slug(id) {
            let message = format!(
                "Trial task id must be lowercase letters, digits, `.`, `_` and `-`, starting with a letter or digit: {id}"
            );
            self.report(Code::InvalidName, range, message);
        } else if directory != id {
            let message = format!("Trial task id must be the name of its directory ({directory}): {id}");
            self.report(Code::InvalidValue, range, message);
        }
    }

    fn prompt(&mut self, anchor: TextRange) {
        let prompt = self.dir.join(PROMPT_FILE);
        match self.fs.kind_followed(&prompt) {
            Ok(FileKind::File) => {}
            _ => {
                let message =
                    format!("Trial task has no {PROMPT_FILE} (the task the agent gets): {}", prompt.display());
                self.report(Code::PathNotFound, anchor, message);
            }
        }
    }

    fn unknown(&mut self, mapping: &Mapping, allowed: &[&str], label: &str) {
        for entry in &mapping.entries {
            if !allowed.contains(&entry.key.as_str()) {
                self.report(Code::UnknownField, entry.key_range, format!("Unknown {label} field: {}", entry.key));
            }
        }
    }

    /// A non-empty string field.
    fn string(
        &mut self,
        mapping: &Mapping,
        key: &str,
        label: &str,
        required: bool,
        anchor: TextRange,
    ) -> Option<String> {
        let rule = StringRule { label, required, max_chars: None, blank_is_empty: true };
        string_field(&mut self.diagnostics, self.path, mapping, key, &rule, anchor)
    }

    /// A positive number field.
    fn positive(&mut self, mapping: &Mapping, key: &str, label: &str, whole: bool) -> Option<f64> {
        let entry = mapping.entry(key)?;
        match entry.value.value {
            Value::Number(n) if n > 0.0 && n.is_finite() && (!whole || n.fract() == 0.0) => Some(n),
            _ => {
                let kind = if whole { "a positive whole number" } else { "a positive number" };
                self.report(Code::InvalidValue, entry.value.range, format!("{label} must be {kind}"));
                None
            }
        }
    }

    fn fixture(&mut self, node: &Node) -> Option<Fixture> {
        let Some(map) = node.as_mapping() else {
            self.report(Code::InvalidType, node.range, "Trial task fixture must be an object".to_owned());
            return None;
        };
        let anchor = map.entries.first().map_or(node.range, |e| e.key_range);
        let kind = self.string(map, "kind", "Trial task fixture kind", true, anchor)?;
        let Some((_, fields)) = FIXTURE_KINDS.iter().find(|(name, _)| *name == kind) else {
            let range = map.get("kind").map_or(anchor, |n| n.range);
            let message = format!("Trial task fixture kind must be empty, dir or git: {kind}");
            self.report(Code::InvalidValue, range, message);
            return None;
        };
        self.unknown(map, fields, &format!("{kind} fixture"));
        let overlay = match map.entry("overlay") {
            Some(entry) => Some(self.directory(&entry.value, "Trial task fixture overlay")?),
            None => None,
        };
        let source = match kind.as_str() {
            "dir" => match map.entry("path") {
                Some(entry) => FixtureSource::Dir(self.directory(&entry.value, "Trial task fixture path")?),
                None => {
                    self.report(Code::MissingField, anchor, "Trial task fixture path is required".to_owned());
                    return None;
                }
            },
            "git" => {
                let url = self.string(map, "url", "Trial task fixture url", true, anchor);
                let commit = self.string(map, "commit", "Trial task fixture commit", true, anchor);
                let subdir = self.string(map, "subdir", "Trial task fixture subdir", false, anchor);
                if let Some(commit) = &commit
                    && !(commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()))
                {
                    let range = map.get("commit").map_or(anchor, |n| n.range);
                    let message = format!("Trial task fixture commit must be a full 40-character commit id: {commit}");
                    self.report(Code::InvalidValue, range, message);
                }
                if let Some(subdir) = &subdir
                    && crate::outbox_declaration::unsafe_path_reason(subdir).is_some()
                {
                    let range = map.get("subdir").map_or(anchor, |n| n.range);
                    let message =
                        format!("Trial task fixture subdir must be a relative path inside the repository: {subdir}");
                    self.report(Code::PathOutsideRepository, range, message);
                }
                FixtureSource::Git { url: url?, commit: commit?, subdir }
            }
            _ => FixtureSource::Empty,
        };
        Some(Fixture { source, overlay })
    }

    /// A directory named relative to the task's directory, which must exist.
    fn directory(&mut self, node: &Node, label: &str) -> Option<PathBuf> {
        let Some(value) = node.as_str().filter(|v| !v.trim().is_empty()) else {
            self.report(Code::InvalidType, node.range, format!("{label} must be a non-empty string"));
            return None;
        };
        if Path::new(value).is_absolute() {
            self.report(
                Code::PathNotRelative,
                node.range,
                format!("{label} must be relative to the task's directory: {value}"),
            );
            return None;
        }
        let path = crate::normalize(&self.dir.join(value));
        match self.fs.kind_followed(&path) {
            Ok(FileKind::Directory) => Some(path),
            _ => {
                self.report(Code::PathNotFound, node.range, format!("{label} is not a directory: {}", path.display()));
                None
            }
        }
    }

    fn setup(&mut self, top: &Mapping) -> Vec<String> {
        let Some(entry) = top.entry("setup") else { return Vec::new() };
        let commands: Option<Vec<String>> = match &entry.value.value {
            Value::String(text) => Some(vec![text.to_string()]),
            Value::Sequence(items) => items.iter().map(|item| item.as_str().map(str::to_owned)).collect(),
            _ => None,
        };
        match commands {
            Some(commands) if commands.iter().all(|c| !c.trim().is_empty()) => commands,
            _ => {
                let message = "Trial task setup must be a command or an array of commands".to_owned();
                self.report(Code::InvalidType, entry.value.range, message);
                Vec::new()
            }
        }
    }

    fn gates(&mut self, top: &Mapping, anchor: TextRange) -> Vec<Gate> {
        let Some(entry) = top.entry("gates") else {
            self.report(Code::MissingField, anchor, "Trial task gates are required (at least one)".to_owned());
            return Vec::new();
        };
        let Some(items) = entry.value.as_sequence() else {
            self.report(Code::InvalidType, entry.value.range, "Trial task gates must be an array".to_owned());
            return Vec::new();
        };
        if items.is_empty() {
            let message = "Trial task gates must not be empty: without a gate no attempt has a verdict".to_owned();
            self.report(Code::EmptyValue, entry.value.range, message);
        }
        let mut seen = HashMap::new();
        let mut gates = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let label = format!("Trial task gates[{index}]");
            let Some(map) = item.as_mapping() else {
                self.report(Code::InvalidType, item.range, format!("{label} must be an object"));
                continue;
            };
            let anchor = map.entries.first().map_or(item.range, |e| e.key_range);
            self.unknown(map, GATE_FIELDS, "gate");
            let id = self.string(map, "id", &format!("{label}.id"), true, anchor);
            if let Some(id) = &id {
                self.unique(&mut seen, map, id, "gate id");
            }
            let title = self.string(map, "title", &format!("{label}.title"), false, anchor);
            let run = self.string(map, "run", &format!("{label}.run"), true, anchor);
            let timeout = self.positive(map, "timeoutSeconds", &format!("{label}.timeoutSeconds"), true);
            if let (Some(id), Some(run)) = (id, run) {
                gates.push(Gate { id, title, run, timeout_seconds: timeout.map(|t| t as u64) });
            }
        }
        gates
    }

    fn criteria(&mut self, top: &Mapping) -> Vec<Criterion> {
        let Some(entry) = top.entry("criteria") else { return Vec::new() };
        let Some(items) = entry.value.as_sequence() else {
            self.report(Code::InvalidType, entry.value.range, "Trial task criteria must be an array".to_owned());
            return Vec::new();
        };
        let mut seen = HashMap::new();
        let mut criteria = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let label = format!("Trial task criteria[{index}]");
            let Some(map) = item.as_mapping() else {
                self.report(Code::InvalidType, item.range, format!("{label} must be an object"));
                continue;
            };
            let anchor = map.entries.first().map_or(item.range, |e| e.key_range);
            self.unknown(map, CRITERION_FIELDS, "criterion");
            let id = self.string(map, "id", &format!("{label}.id"), true, anchor);
            if let Some(id) = &id {
                self.unique(&mut seen, map, id, "criterion id");
            }
            let text = self.string(map, "text", &format!("{label}.text"), true, anchor);
            if let (Some(id), Some(text)) = (id, text) {
                criteria.push(Criterion { id, text });
            }
        }
        criteria
    }

    fn unique(&mut self, seen: &mut HashMap<String, TextRange>, map: &Mapping, id: &str, what: &str) {
        let range = map.get("id").map_or(TextRange::empty(0), |n| n.range);
        match seen.get(id) {
            Some(first) => {
                let (path, first) = (self.path.to_owned(), *first);
                self.report(Code::DuplicateName, range, format!("Duplicate {what}: {id}"))
                    .related
                    .push(crate::Related { path, range: first, message: "first here".to_owned() });
            }
            None => {
                seen.insert(id.to_owned(), range);
            }
        }
    }
}

fn is_slug(id: &str) -> bool {
    let mut bytes = id.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
}
