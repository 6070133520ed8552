//! Package checks on the file system (engine facts b.2 and b.5): where the package lives, and the files its
//! manifest names: image build paths, instructions, skills and `runner_config`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use wb_syntax::TextRange;

use crate::boundary::{MAX_PACKAGE_FILE_BYTES, first_escaping_link, real_boundary, stays_within_real};
use crate::diagnostic::{Code, Diagnostic, Fix, TextEdit};
use crate::fs::{FileKind, FileSystem, ReadLimitError, is_inside};
use crate::model::{Image, Manifest, Spanned};
use crate::skill::check_skill_text;

/// The repository root of a manifest: the parent of the nearest ancestor directory named `.workbenches`.
pub fn repository_root(manifest_path: &Path) -> Option<PathBuf> {
    manifest_path
        .ancestors()
        .skip(1)
        .find(|dir| dir.file_name().is_some_and(|name| name == ".workbenches"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

pub(crate) struct PackageChecks<'a> {
    pub fs: &'a dyn FileSystem,
    pub manifest_path: &'a Path,
    pub package_dir: &'a Path,
    pub root: Option<&'a Path>,
    pub diagnostics: Vec<Diagnostic>,
    /// Texts of other files that diagnostics point into (skill manifests, runner_config JSON).
    pub sources: Vec<(PathBuf, String)>,
    /// The real paths of the repository and the package, resolved once for all the paths checked in them.
    pub real_boundaries: [std::cell::OnceCell<PathBuf>; 2],
}

impl PackageChecks<'_> {
    fn report(&mut self, code: Code, range: TextRange, message: String) -> &mut Diagnostic {
        self.diagnostics.push(Diagnostic::new(code, self.manifest_path, range, message));
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    /// Resolves a package-relative path value, checking it is relative and stays inside `boundary`.
    fn resolve(&mut self, value: &Spanned<String>, label: &str, boundary: Option<&Path>) -> Option<PathBuf> {
        let raw = Path::new(&value.value);
        if raw.is_absolute() || value.value.starts_with('/') || value.value.starts_with('\\') || has_drive(&value.value)
        {
            self.report(Code::PathNotRelative, value.range, format!("{label} must be a relative path"));
            return None;
        }
        let resolved = crate::fs::join_normalized(self.package_dir, &value.value);
        if let Some(boundary) = boundary {
            if !is_inside(&resolved, boundary) {
                self.report(
                    Code::PathOutsideRepository,
                    value.range,
                    format!("{label} must remain inside the repository"),
                );
                return None;
            }
        }
        Some(resolved)
    }

    /// Requires the real path of `path` (the lexical resolution of `value`) inside the repository or, with
    /// `package_only`, the package; reports `path-outside-boundary` at the value otherwise.
    fn within(&mut self, value: &Spanned<String>, label: &str, path: &Path, package_only: bool) -> bool {
        let (boundary, name) = self.boundary(package_only);
        let real =
            self.real_boundaries[usize::from(name == "package")].get_or_init(|| real_boundary(self.fs, boundary));
        match stays_within_real(self.fs, path, real) {
            Ok(_) => true,
            Err(escape) => {
                let message = escape.message(label, &value.value, name);
                self.report(Code::PathOutsideBoundary, value.range, message);
                false
            }
        }
    }

    /// The directory a path must stay in, and its name in messages.
    fn boundary(&self, package_only: bool) -> (&Path, &'static str) {
        match (package_only, self.root) {
            (false, Some(root)) => (root, "repository"),
            _ => (self.package_dir, "package"),
        }
    }

    /// Reports the first link in a skill directory that leaves the boundary: staging the skill would refuse it.
    fn skill_links(&mut self, skill: &Spanned<String>, dir: &Path) {
        let (boundary, name) = self.boundary(false);
        if let Some((link, escape)) = first_escaping_link(self.fs, dir, boundary) {
            let value = format!("{}/{}", skill.value.trim_end_matches('/'), link.display());
            self.report(Code::PathOutsideBoundary, skill.range, escape.message("skills", &value, name));
        }
    }

    /// "Change to `nearest`" when an entry of `kind` with a name near the missing `path` exists beside it.
    fn nearest_fix(&self, value: &Spanned<String>, path: &Path, kind: FileKind) -> Option<Fix> {
        let near = crate::nearest_path::nearest_sibling(self.fs, path, &value.value, kind)?;
        Some(Fix {
            title: format!("Change to `{near}`"),
            creates: Vec::new(),
            edits: vec![TextEdit { path: self.manifest_path.to_owned(), range: value.range, new_text: near }],
            // A guess at which file was meant: offered, never applied by `check --fix`.
            safe: false,
        })
    }

    /// Reads a file the package names, at most [`MAX_PACKAGE_FILE_BYTES`]; a larger one is reported at the
    /// value (`what` names it in the message).
    fn read_bounded(&mut self, path: &Path, range: TextRange, what: &str) -> Result<Vec<u8>, Option<std::io::Error>> {
        match self.fs.read_limited(path, MAX_PACKAGE_FILE_BYTES) {
            Ok(bytes) => Ok(bytes),
            Err(ReadLimitError::TooLarge(size)) => {
                self.too_large(path, size, range, what);
                Err(None)
            }
            Err(ReadLimitError::Io(error)) => Err(Some(error)),
        }
    }

    fn too_large(&mut self, path: &Path, size: u64, range: TextRange, what: &str) {
        let limit = MAX_PACKAGE_FILE_BYTES / (1024 * 1024);
        let message = format!("{what} is too large: {size} bytes (the limit is {limit} MiB): {}", path.display());
        self.report(Code::FileTooLarge, range, message);
    }

    pub fn run(&mut self, manifest: &Manifest) {
        let root = self.root.map(Path::to_path_buf);
        let root = root.as_deref();
        for runtime in &manifest.runtimes {
            if let Some(Image::Build { build, context }) = &runtime.image {
                let prefix = runtime.image_label.clone();
                let label = format!("{prefix}.build");
                if let Some(dockerfile) = self.resolve(build, &label, root) {
                    if self.within(build, &label, &dockerfile, false)
                        && !matches!(self.fs.kind_followed(&dockerfile), Ok(FileKind::File))
                    {
                        self.report(
                            Code::MissingBuildFile,
                            build.range,
                            format!("Dockerfile does not exist: {}", dockerfile.display()),
                        );
                    }
                }
                let default_context = Spanned::new(".".to_owned(), build.range);
                let context = context.as_ref().unwrap_or(&default_context);
                let label = format!("{prefix}.context");
                if let Some(dir) = self.resolve(context, &label, root) {
                    if self.within(context, &label, &dir, false)
                        && !matches!(self.fs.kind_followed(&dir), Ok(FileKind::Directory))
                    {
                        self.report(
                            Code::MissingBuildFile,
                            context.range,
                            format!("Build context is not a directory: {}", dir.display()),
                        );
                    }
                }
            }
        }
        if let Some(instructions) = &manifest.instructions {
            if let Some(path) = self.resolve(instructions, "instructions", root) {
                if !self.within(instructions, "instructions", &path, false) {
                    // Refused: nothing of it is read.
                } else if matches!(self.fs.kind_followed(&path), Ok(FileKind::File)) {
                    // Only its size matters here (the engine reads it into the system prompt), so it is not read.
                    match self.fs.size(&path) {
                        Ok(size) if size > MAX_PACKAGE_FILE_BYTES as u64 => {
                            self.too_large(&path, size, instructions.range, "Instructions file");
                        }
                        _ => {}
                    }
                } else {
                    let title = manifest.name.as_ref().map_or("Instructions", |n| n.value.as_str()).to_owned();
                    let rename = self.nearest_fix(instructions, &path, FileKind::File);
                    let fix = Fix {
                        title: format!("Create {}", instructions.value),
                        creates: vec![(
                            path.clone(),
                            format!("# {title}\n\nDescribe how to do this class of work in this repository.\n"),
                        )],
                        edits: Vec::new(),
                        safe: false,
                    };
                    self.report(
                        Code::MissingInstructions,
                        instructions.range,
                        format!("Instructions file does not exist: {}", path.display()),
                    )
                    .fixes
                    .extend(rename.into_iter().chain([fix]));
                }
            }
        }
        self.skills(manifest, root);
        self.runner_config(manifest);
    }

    fn skills(&mut self, manifest: &Manifest, root: Option<&Path>) {
        let mut names: Vec<Spanned<String>> = Vec::new();
        for skill in &manifest.skills {
            let Some(dir) = self.resolve(skill, "skills", root) else { continue };
            let skill_file = dir.join("SKILL.md");
            let file_value = Spanned::new(format!("{}/SKILL.md", skill.value.trim_end_matches('/')), skill.range);
            // The directory is listed (the link walk below needs its entries) as it is resolved: the listing
            // tells the kind of `SKILL.md`, and opening it without following a link tells its own.
            self.fs.expect_directory(&dir);
            if !self.within(skill, "skills", &dir, false) {
                continue;
            }
            let _ = self.fs.read_dir(&dir);
            if !self.within(&file_value, "skills", &skill_file, false) {
                continue;
            }
            self.skill_links(skill, &dir);
            let text = match self.fs.kind_followed(&skill_file) {
                Ok(FileKind::File) => match self.read_bounded(&skill_file, skill.range, "Skill manifest") {
                    // Text as read (no copy), or with what is not UTF-8 replaced.
                    Ok(bytes) => String::from_utf8(bytes)
                        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned()),
                    Err(None) => continue,
                    Err(Some(error)) => {
                        self.report(
                            Code::IoError,
                            skill.range,
                            format!("Skill manifest is unreadable: {}: {error}", skill_file.display()),
                        );
                        continue;
                    }
                },
                _ => {
                    let directory = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    let rename = self.nearest_fix(skill, &dir, FileKind::Directory);
                    let fix = Fix {
                        title: format!("Create {}/SKILL.md", skill.value.trim_end_matches('/')),
                        creates: vec![(
                            skill_file.clone(),
                            format!(
                                "---\nname: {directory}\ndescription: Describe when to use this skill.\n---\n\n# {directory}\n"
                            ),
                        )],
                        edits: Vec::new(),
                        safe: false,
                    };
                    self.report(
                        Code::MissingSkillManifest,
                        skill.range,
                        format!("Skill manifest does not exist: {}", skill_file.display()),
                    )
                    .fixes
                    .extend(rename.into_iter().chain([fix]));
                    continue;
                }
            };
            let directory = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let check = check_skill_text(&text, &skill.value, &directory);
            let mut point_into_file = false;
            for problem in &check.problems {
                point_into_file = true;
                let message = problem.message.clone();
                let related_range = problem.range;
                let fix = (problem.code == Code::SkillNameMismatch).then(|| Fix {
                    title: format!("Rename the skill to `{directory}` in SKILL.md"),
                    creates: Vec::new(),
                    edits: vec![TextEdit {
                        path: skill_file.clone(),
                        range: related_range,
                        new_text: directory.clone(),
                    }],
                    // Renaming the directory instead is as good a fix.
                    safe: false,
                });
                let diagnostic = self.report(problem.code, skill.range, message.clone());
                diagnostic.related.push(crate::Related { path: skill_file.clone(), range: related_range, message });
                diagnostic.fixes.extend(fix);
            }
            if point_into_file {
                self.sources.push((skill_file.clone(), text));
            }
            if let Some(name) = check.name {
                if let Some(first) = names.iter().find(|seen| seen.value == name.value) {
                    let first_range = first.range;
                    let path = self.manifest_path.to_owned();
                    self.report(Code::DuplicateName, skill.range, format!("Duplicate skill name: {}", name.value))
                        .related
                        .push(crate::Related {
                            path,
                            range: first_range,
                            message: "first skill with this name".to_owned(),
                        });
                } else {
                    names.push(Spanned::new(name.value, skill.range));
                }
            }
        }
    }

    fn runner_config(&mut self, manifest: &Manifest) {
        let Some(config) = &manifest.runner_config else { return };
        let package_dir = self.package_dir.to_path_buf();
        let Some(path) = self.resolve(config, "runner_config", Some(&package_dir)) else { return };
        let kind = match self.fs.kind(&path) {
            Ok(kind) => kind,
            Err(_) => {
                self.report(
                    Code::MissingRunnerConfig,
                    config.range,
                    format!("runner_config does not exist: {}", path.display()),
                );
                return;
            }
        };
        let range = config.range;
        if kind == FileKind::Symlink {
            self.report(
                Code::RunnerConfigSymlink,
                range,
                format!("runner_config must not contain symbolic links: {}", path.display()),
            );
            return;
        }
        if !self.within(config, "runner_config", &path, true) {
            return;
        }
        if !matches!(kind, FileKind::File | FileKind::Directory) {
            self.report(Code::RunnerConfigShape, range, "runner_config must be a file or directory".to_owned());
            return;
        }
        let mut files = Vec::new();
        if !self.walk(&path, range, &mut files) {
            return;
        }
        for file in &files {
            if file.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("json")) {
                self.json_credentials(file, range);
            }
        }
        let runner = manifest.runner.as_ref().map(|r| r.value.as_str());
        match (runner, kind) {
            (Some("pi"), FileKind::File) => {
                self.report(Code::RunnerConfigShape, range, "Pi runner_config must be a directory".to_owned());
            }
            (Some("claude-code"), kind) => {
                let is_json = path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
                if kind != FileKind::File || !is_json {
                    self.report(
                        Code::RunnerConfigShape,
                        range,
                        "Claude Code runner_config must be a JSON file".to_owned(),
                    );
                } else {
                    self.claude_content(&path, range);
                }
            }
            _ => {}
        }
    }

    /// Walks a runner_config tree; returns false when a problem stops the checks of its content.
    fn walk(&mut self, path: &Path, range: TextRange, files: &mut Vec<PathBuf>) -> bool {
        let mut stack = vec![path.to_path_buf()];
        let mut ok = true;
        while let Some(current) = stack.pop() {
            let kind = self.fs.kind(&current).unwrap_or(FileKind::Other);
            let name = current.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            match kind {
                FileKind::Symlink => {
                    self.report(
                        Code::RunnerConfigSymlink,
                        range,
                        format!("runner_config must not contain symbolic links: {}", current.display()),
                    );
                    ok = false;
                }
                FileKind::File => {
                    if is_credential_file(&name) {
                        self.report(
                            Code::RunnerConfigCredentialFile,
                            range,
                            format!("runner_config contains a credential file: {name}"),
                        );
                        ok = false;
                    }
                    files.push(current);
                }
                FileKind::Directory => match self.fs.read_dir(&current) {
                    Ok(entries) => stack.extend(entries.into_iter().rev()),
                    Err(error) => {
                        self.report(
                            Code::IoError,
                            range,
                            format!("runner_config is unreadable: {}: {error}", current.display()),
                        );
                        ok = false;
                    }
                },
                FileKind::Other => {
                    self.report(Code::RunnerConfigShape, range, "runner_config must be a file or directory".to_owned());
                    ok = false;
                }
            }
        }
        files.sort();
        ok
    }

    fn read_json(&mut self, file: &Path, range: TextRange) -> Option<serde_json::Value> {
        let bytes = self.read_bounded(file, range, "runner_config file").ok()?;
        match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(value) => Some(value),
            Err(error) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let index = wb_syntax::LineIndex::new(&text);
                let line = error.line().saturating_sub(1);
                let column = error.column().saturating_sub(1);
                let offset = index.offset(
                    wb_syntax::LineCol {
                        line: u32::try_from(line).unwrap_or(0),
                        col: u32::try_from(column).unwrap_or(0),
                    },
                    wb_syntax::PositionEncoding::Utf32,
                );
                let message = format!("runner_config JSON is invalid: {}", file.display());
                self.report(Code::RunnerConfigInvalidJson, range, message).related.push(crate::Related {
                    path: file.to_owned(),
                    range: TextRange::empty(offset),
                    message: error.to_string(),
                });
                self.sources.push((file.to_owned(), text));
                None
            }
        }
    }

    fn json_credentials(&mut self, file: &Path, range: TextRange) {
        let Some(value) = self.read_json(file, range) else { return };
        let mut stack = vec![&value];
        let mut reported = false;
        while let Some(value) = stack.pop() {
            match value {
                serde_json::Value::Object(map) => {
                    for (key, child) in map {
                        if let serde_json::Value::String(text) = child {
                            if !reported && matches(credential_key(), key) && !matches(env_reference_value(), text) {
                                self.report(
                                    Code::RunnerConfigLiteralCredential,
                                    range,
                                    format!(
                                        "runner_config must reference credentials by environment name, not {key}: {}",
                                        file.display()
                                    ),
                                );
                                reported = true;
                            }
                        }
                        stack.push(child);
                    }
                }
                serde_json::Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
    }

    fn claude_content(&mut self, file: &Path, range: TextRange) {
        // Its size was reported when its JSON was checked.
        let Ok(bytes) = self.fs.read_limited(file, MAX_PACKAGE_FILE_BYTES) else { return };
        if serde_json::from_slice::<serde_json::Value>(&bytes).is_err() {
            // `runner_config JSON is invalid` already reported it.
            return;
        }
        let problem = claude_config_problem(&bytes);
        if let Some(message) = problem {
            self.report(Code::RunnerConfigContent, range, message);
        }
    }
}

/// The first problem the reference finds when it stages a Claude Code runner_config file (the engine's staging
/// refuses the file with it).
pub fn claude_config_problem(bytes: &[u8]) -> Option<String> {
    const P: &str = "Claude Code runner_config";
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return Some(format!("{P} must contain valid JSON"));
    };
    let Some(object) = value.as_object() else { return Some(format!("{P} must be a JSON object")) };
    for key in object.keys() {
        if key != "permissions" && key != "max_turns" {
            return Some(format!("{P} has unknown field: {key}"));
        }
    }
    if let Some(permissions) = object.get("permissions") {
        let Some(permissions) = permissions.as_object() else {
            return Some(format!("{P} permissions must be a JSON object"));
        };
        for key in permissions.keys() {
            if key != "allow" && key != "deny" {
                return Some(format!("{P} permissions has unknown field: {key}"));
            }
        }
        for list in ["allow", "deny"] {
            if let Some(rules) = permissions.get(list) {
                let Some(rules) = rules.as_array().filter(|rules| rules.iter().all(serde_json::Value::is_string))
                else {
                    return Some(format!("{P} permissions.{list} must be an array of strings"));
                };
                if rules.iter().any(|rule| rule.as_str().is_some_and(|rule| rule.trim().is_empty())) {
                    return Some(format!("{P} must not contain empty rules"));
                }
            }
        }
    }
    if let Some(max_turns) = object.get("max_turns") {
        let positive = max_turns.as_u64().is_some_and(|n| n >= 1)
            || max_turns.as_f64().is_some_and(|n| n >= 1.0 && n.fract() == 0.0);
        if !positive {
            return Some(format!("{P} max_turns must be a positive integer"));
        }
    }
    None
}

fn has_drive(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// Credential file names (case-insensitive), shared with the outcome and staging policies.
pub fn is_credential_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        ".env"
            | ".netrc"
            | ".npmrc"
            | "_netrc"
            | "auth.json"
            | "credentials.json"
            | "id_dsa"
            | "id_ecdsa"
            | "id_ed25519"
            | "id_rsa"
            | "oauth.json"
    ) || lower.starts_with(".env.")
        || [".key", ".p12", ".pem", ".pfx"].iter().any(|ext| lower.ends_with(ext))
}

fn matches(pattern: Option<&Regex>, text: &str) -> bool {
    pattern.is_some_and(|regex| regex.is_match(text))
}

fn credential_key() -> Option<&'static Regex> {
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    CELL.get_or_init(|| {
        Regex::new(r"(?i)^(?:api[-_]?key|access[-_]?token|refresh[-_]?token|client[-_]?secret|authorization|cookie|password|private[-_]?key|secret|token)$").ok()
    })
    .as_ref()
}

fn env_reference_value() -> Option<&'static Regex> {
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    CELL.get_or_init(|| {
        Regex::new(r"^(?:\S+ )?(?:[A-Z][A-Z0-9_]*|\$\{[A-Z][A-Z0-9_]*\}|\{env:[A-Z][A-Z0-9_]*\})$").ok()
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_files() {
        for name in [".env", ".env.local", "ID_RSA", "server.pem", "auth.json", "_netrc"] {
            assert!(is_credential_file(name), "{name}");
        }
        for name in ["env", "config.json", ".env-example", "keys.txt"] {
            assert!(!is_credential_file(name), "{name}");
        }
    }

    #[test]
    fn credential_values() {
        assert!(credential_key().is_some() && env_reference_value().is_some());
        for value in ["OPENAI_API_KEY", "Bearer ${TOKEN}", "{env:TOKEN}", "${A_B}"] {
            assert!(matches(env_reference_value(), value), "{value}");
        }
        for value in ["sk-123", "Bearer abc", "${lower}"] {
            assert!(!matches(env_reference_value(), value), "{value}");
        }
    }

    #[test]
    fn claude_content_rules() {
        assert_eq!(claude_config_problem(b"{\"permissions\":{\"allow\":[\"Bash(ls)\"]},\"max_turns\":3}"), None);
        assert_eq!(claude_config_problem(b"[]").as_deref(), Some("Claude Code runner_config must be a JSON object"));
        assert_eq!(
            claude_config_problem(b"{\"x\":1}").as_deref(),
            Some("Claude Code runner_config has unknown field: x")
        );
        assert_eq!(
            claude_config_problem(b"{\"max_turns\":0}").as_deref(),
            Some("Claude Code runner_config max_turns must be a positive integer")
        );
        assert_eq!(
            claude_config_problem(b"{\"permissions\":{\"deny\":[\" \"]}}").as_deref(),
            Some("Claude Code runner_config must not contain empty rules")
        );
    }
}
