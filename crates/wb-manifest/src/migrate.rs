//! Spec 0 to spec 1 as minimal text edits: `spec: 0` becomes `spec: 1`, and `runtime`, `image` and
//! `docker` move under `runtimes.<runtime>`. Comments, key order and formatting elsewhere are untouched.
//!
//! A migration must not add errors: [`checked_migration`] checks the result against the source, and the quick
//! fix on the spec 0 diagnostics is offered only when that guard passes.

use std::path::Path;

use wb_syntax::{Entry, Mapping, Style, TextRange, Value};

use crate::catalog::ModelCatalog;
use crate::check::one::check_bytes;
use crate::diagnostic::{Code, Diagnostic, Fix, Severity, TextEdit};
use crate::fields::RUNTIME_PROVIDERS;
use crate::fs::FileSystem;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrateError {
    #[error("the manifest does not parse as a YAML mapping")]
    NotAMapping,
    #[error("the manifest is written in flow style; migrate it by hand")]
    FlowStyle,
    #[error("the spec 0 manifest declares no valid runtime")]
    NoRuntime,
    #[error("runtime {0} is not a known provider (local, docker, e2b, daytona)")]
    UnknownRuntime(String),
    #[error("the local runtime takes no image; remove image first")]
    LocalImage,
    #[error("the manifest already declares runtimes")]
    RuntimesPresent,
    /// The migrated manifest has errors the source does not: a migration never makes a package worse.
    #[error("the migrated manifest would not check cleanly; fix its errors first")]
    AddsErrors,
}

/// A migration that passed the guard: its edits and the migrated text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    pub edits: Vec<Edit>,
    pub text: String,
}

/// One replacement in the manifest text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub range: TextRange,
    pub new_text: String,
}

/// The edits that turn a spec 0 manifest into spec 1 (also used for a spec 1 manifest that still carries spec
/// 0 fields). An empty list means there is nothing to migrate.
pub fn migration_edits(text: &str) -> Result<Vec<Edit>, MigrateError> {
    let parsed = wb_syntax::parse_str(text);
    let Some(root) = parsed.root.as_ref() else { return Err(MigrateError::NotAMapping) };
    let Value::Mapping(top) = &root.value else { return Err(MigrateError::NotAMapping) };
    let spec0 = top.get("spec").is_some_and(|spec| matches!(spec.value, Value::Number(n) if n == 0.0));
    let legacy: Vec<&Entry> = ["runtime", "image", "docker"].iter().filter_map(|key| top.entry(key)).collect();
    if !spec0 && legacy.is_empty() {
        return Ok(Vec::new());
    }
    if root.style == Style::Flow {
        return Err(MigrateError::FlowStyle);
    }
    if top.entry("runtimes").is_some() {
        return Err(MigrateError::RuntimesPresent);
    }
    let runtime = top.entry("runtime").ok_or(MigrateError::NoRuntime)?;
    let provider = runtime.value.as_str().map(str::trim).filter(|p| !p.is_empty()).ok_or(MigrateError::NoRuntime)?;
    if !RUNTIME_PROVIDERS.contains(&provider) {
        return Err(MigrateError::UnknownRuntime(provider.to_owned()));
    }
    let image = top.entry("image");
    let docker = top.entry("docker");
    if provider == "local" && image.is_some() {
        return Err(MigrateError::LocalImage);
    }
    let unit = indent_unit(text, top);
    let mut edits = Vec::new();
    if spec0 && let Some(spec) = top.entry("spec") {
        edits.push(Edit { range: spec.value.range, new_text: "1".to_owned() });
    }
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    // A comment after `runtime: X` stays with the provider's line.
    let comment = trailing_comment(text, runtime).map(|c| format!(" {c}")).unwrap_or_default();
    let mut block = format!("runtimes:{newline}");
    let moved: Vec<&Entry> = [image, docker].into_iter().flatten().collect();
    if moved.is_empty() {
        block.push_str(&format!("{unit}{provider}: {{}}{comment}{newline}"));
    } else {
        block.push_str(&format!("{unit}{provider}:{comment}{newline}"));
        let prefix = unit.repeat(2);
        for entry in &moved {
            let span = entry_lines(text, entry);
            for line in text[span.as_range()].split_inclusive('\n') {
                if line.trim().is_empty() {
                    block.push_str(line);
                } else {
                    block.push_str(&prefix);
                    block.push_str(line);
                }
            }
            if !block.ends_with('\n') {
                block.push_str(newline);
            }
        }
    }
    let runtime_span = entry_lines(text, runtime);
    edits.push(Edit { range: runtime_span, new_text: block });
    for entry in moved {
        edits.push(Edit { range: entry_lines(text, entry), new_text: String::new() });
    }
    edits.sort_by_key(|edit| edit.range.start);
    if edits.windows(2).any(|pair| pair[0].range.end > pair[1].range.start) {
        return Err(MigrateError::FlowStyle);
    }
    Ok(edits)
}

/// Applies non-overlapping edits.
pub fn apply_edits(text: &str, edits: &[Edit]) -> String {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|edit| edit.range.start);
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for edit in sorted {
        if edit.range.start < cursor || edit.range.end > text.len() {
            continue;
        }
        out.push_str(&text[cursor..edit.range.start]);
        out.push_str(&edit.new_text);
        cursor = edit.range.end;
    }
    out.push_str(&text[cursor..]);
    out
}

/// The migrated text, or `None` when there is nothing to migrate.
pub fn migrate_text(text: &str) -> Result<Option<String>, MigrateError> {
    let edits = migration_edits(text)?;
    if edits.is_empty() { Ok(None) } else { Ok(Some(apply_edits(text, &edits))) }
}

/// The migration of the manifest `text` at `manifest_path`, checked like the package (other files come from
/// `fs`): refused with [`MigrateError::AddsErrors`] when the result has more errors than the source. `Ok(None)`
/// means there is nothing to migrate. The CLI's `migrate` and the editor's migration both go through here.
pub fn checked_migration(
    fs: &dyn FileSystem,
    manifest_path: &Path,
    text: &str,
    catalog: &ModelCatalog,
) -> Result<Option<Migration>, MigrateError> {
    let edits = migration_edits(text)?;
    if edits.is_empty() {
        return Ok(None);
    }
    let source_errors = check_bytes(fs, manifest_path, text.as_bytes(), catalog, None).errors();
    guard(fs, manifest_path, text, catalog, edits, source_errors).map(Some)
}

/// The migrated text, unless it checks worse than a source with `source_errors` errors.
fn guard(
    fs: &dyn FileSystem,
    manifest_path: &Path,
    text: &str,
    catalog: &ModelCatalog,
    edits: Vec<Edit>,
    source_errors: usize,
) -> Result<Migration, MigrateError> {
    let migrated = apply_edits(text, &edits);
    let errors = check_bytes(fs, manifest_path, migrated.as_bytes(), catalog, None).errors();
    if errors > source_errors {
        return Err(MigrateError::AddsErrors);
    }
    Ok(Migration { edits, text: migrated })
}

/// Attaches the migration as a fix to the spec 0 diagnostics of a checked manifest (`diagnostics` is the whole
/// check of `text`), when the migration applies and passes the guard.
pub(crate) fn offer_migration(
    fs: &dyn FileSystem,
    manifest_path: &Path,
    text: &str,
    catalog: &ModelCatalog,
    diagnostics: &mut [Diagnostic],
) {
    let title = |code: Code| match code {
        Code::Spec0Manifest => Some("Migrate to spec 1"),
        Code::LegacyFieldInSpec1 => Some("Move them under `runtimes`"),
        _ => None,
    };
    if !diagnostics.iter().any(|d| title(d.code).is_some()) {
        return;
    }
    let Ok(edits) = migration_edits(text) else { return };
    if edits.is_empty() {
        return;
    }
    let source_errors = diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
    let Ok(migration) = guard(fs, manifest_path, text, catalog, edits, source_errors) else { return };
    let edits: Vec<TextEdit> = migration
        .edits
        .into_iter()
        .map(|edit| TextEdit { path: manifest_path.to_owned(), range: edit.range, new_text: edit.new_text })
        .collect();
    for diagnostic in diagnostics {
        if let Some(title) = title(diagnostic.code) {
            // Applied unattended (`check --fix`) only to a manifest without errors.
            let safe = source_errors == 0;
            diagnostic.fixes.push(Fix { title: title.to_owned(), creates: Vec::new(), edits: edits.clone(), safe });
        }
    }
}

/// The whole lines an entry occupies, from its key's line start through the newline after its value.
fn entry_lines(text: &str, entry: &Entry) -> TextRange {
    let start = text[..entry.key_range.start].rfind('\n').map_or(0, |at| at + 1);
    let end_of_value = entry.range().end.max(entry.key_range.end);
    let end = text[end_of_value..].find('\n').map_or(text.len(), |at| end_of_value + at + 1);
    TextRange::new(start, end)
}

/// The comment after an entry's value on its last line (`# ...`), if any.
fn trailing_comment<'t>(text: &'t str, entry: &Entry) -> Option<&'t str> {
    let end = entry.range().end.max(entry.key_range.end);
    let line_end = text[end..].find(['\n', '\r']).map_or(text.len(), |at| end + at);
    let rest = text[end..line_end].trim();
    rest.starts_with('#').then_some(rest)
}

/// The indentation step the document uses for nested blocks (two spaces when it has none).
fn indent_unit(text: &str, top: &Mapping) -> String {
    for entry in &top.entries {
        if let Value::Mapping(inner) = &entry.value.value
            && entry.value.style == Style::Block
            && let Some(first) = inner.entries.first()
        {
            let line_start = text[..first.key_range.start].rfind('\n').map_or(0, |at| at + 1);
            let indent = &text[line_start..first.key_range.start];
            if !indent.is_empty() && indent.chars().all(|ch| ch == ' ') {
                return indent.to_owned();
            }
        }
    }
    "  ".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_runtime_image_and_docker_keeping_comments() {
        let text = "# header\nspec: 0 # legacy\nname: demo\nruntime: docker # where\nimage:\n  build: ./Dockerfile\n  context: .\ndocker:\n  engine:\n    mode: host\ntools: [cargo]\n";
        let migrated = migrate_text(text).expect("migrates").expect("changes");
        assert_eq!(
            migrated,
            "# header\nspec: 1 # legacy\nname: demo\nruntimes:\n  docker: # where\n    image:\n      build: ./Dockerfile\n      context: .\n    docker:\n      engine:\n        mode: host\ntools: [cargo]\n"
        );
    }

    #[test]
    fn local_runtime_becomes_empty_object() {
        let migrated = migrate_text("spec: 0\nruntime: local\n").expect("migrates");
        assert_eq!(migrated.as_deref(), Some("spec: 1\nruntimes:\n  local: {}\n"));
    }

    #[test]
    fn spec_1_is_left_alone_and_local_image_refused() {
        assert_eq!(migrate_text("spec: 1\nruntimes: {local: {}}\n"), Ok(None));
        assert_eq!(migrate_text("spec: 0\nruntime: local\nimage: x\n"), Err(MigrateError::LocalImage));
    }
}

#[cfg(test)]
mod guard_tests {
    use std::path::Path;

    use super::*;
    use crate::{OsFileSystem, check_manifest_bytes};

    const PATH: &str = "/nonexistent/.workbenches/demo/workbench.yml";

    /// Spec 0 does not check a Daytona class; spec 1 requires one, so this migration adds an error.
    const DAYTONA: &str = "spec: 0\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nruntime: daytona\n";

    fn migration_fixes(text: &str) -> Vec<String> {
        let report =
            check_manifest_bytes(&OsFileSystem, Path::new(PATH), text.as_bytes(), crate::ModelCatalog::embedded());
        report.diagnostics.iter().flat_map(|d| &d.fixes).map(|fix| fix.title.clone()).collect()
    }

    #[test]
    fn a_migration_that_adds_errors_is_refused_and_not_offered() {
        let path = Path::new(PATH);
        let catalog = crate::ModelCatalog::embedded();
        assert!(migrate_text(DAYTONA).expect("mechanically possible").is_some());
        assert_eq!(checked_migration(&OsFileSystem, path, DAYTONA, catalog), Err(MigrateError::AddsErrors));
        assert!(!migration_fixes(DAYTONA).iter().any(|title| title == "Migrate to spec 1"));
    }

    #[test]
    fn a_clean_migration_is_offered_on_both_paths() {
        let text = DAYTONA.replace("runtime: daytona", "runtime: local");
        let path = Path::new(PATH);
        let migration = checked_migration(&OsFileSystem, path, &text, crate::ModelCatalog::embedded())
            .expect("passes the guard")
            .expect("something to migrate");
        assert_eq!(Some(migration.text), migrate_text(&text).expect("migrates"));
        assert!(migration_fixes(&text).iter().any(|title| title == "Migrate to spec 1"));
        let legacy = text.replace("spec: 0", "spec: 1");
        assert!(migration_fixes(&legacy).iter().any(|title| title == "Move them under `runtimes`"));
    }
}
