//! `check` and `fix`: `wb-lsp check`'s checks, its JSON document (`output/json.rs`, with paths relative to the
//! root) and `check --fix`'s safe fixes (`wb_manifest::safe_fixes`), written only where the file's real path
//! lies beneath the root.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wb_manifest::selector::{check_source_keeping, source_path, split_source};
use wb_manifest::{Code, Detail, DiskCache, OsFileSystem, PackageReport};

use super::tools::{Call, ToolResult};
use crate::output;

/// `check`: the JSON document of `wb-lsp check --format json`, with the `root` its paths are relative to.
pub fn check(call: &Call<'_>, source: &str) -> ToolResult {
    match checked(call, source) {
        Ok(reports) => ToolResult::ok(document(&reports, call.root)),
        Err(message) => ToolResult::failure(&message, json!({"root": call.root.display().to_string()})),
    }
}

/// `fix`: every safe fix of each manifest under `source`, all written or, when any file would be outside
/// the root, none; then the check again.
pub fn fix(call: &Call<'_>, source: &str) -> ToolResult {
    let _writing = call.writes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let root = call.root.display().to_string();
    let reports = match checked(call, source) {
        Ok(reports) => reports,
        Err(message) => return ToolResult::failure(&message, json!({"root": root})),
    };
    let mut planned: Vec<(PathBuf, String, Vec<String>)> = Vec::new();
    let mut refused: Vec<Value> = Vec::new();
    let mut seen: HashSet<&Path> = HashSet::new();
    for report in &reports {
        let manifest = report.manifest_path.as_path();
        if !seen.insert(manifest) || !report.diagnostics.iter().any(|d| d.fixes.iter().any(|f| f.safe)) {
            continue;
        }
        // The file as it is now; one that is not text is left alone, as `check --fix` leaves it.
        let Ok(text) = std::fs::read_to_string(manifest) else { continue };
        let Some(fixed) = wb_manifest::safe_fixes::fix_manifest(&OsFileSystem, manifest, &text, call.catalog) else {
            continue;
        };
        match real_path_beneath(manifest, call.root) {
            Ok(real) => planned.push((real, fixed.text, fixed.applied)),
            Err(reason) => refused.push(json!({"path": output::relative(manifest, call.root), "reason": reason})),
        }
    }
    if !refused.is_empty() {
        let message = format!(
            "Refused to fix: {} file(s) would be written outside the root {root}; nothing was written",
            refused.len()
        );
        return ToolResult::failure(&message, json!({"root": root, "refused": refused}));
    }
    let mut changed = Vec::new();
    for (real, text, applied) in &planned {
        if let Err(error) = wb_outcomes::write_atomic(real, text.as_bytes(), wb_outcomes::FileMode::KeepExisting) {
            let message = format!("Cannot write {}: {error}", real.display());
            return ToolResult::failure(&message, json!({"root": root, "changed": changed}));
        }
        changed.push(json!({"path": output::relative(real, call.root), "applied": applied}));
    }
    let after = if planned.is_empty() {
        reports
    } else {
        match checked(call, source) {
            Ok(after) => after,
            Err(message) => return ToolResult::failure(&message, json!({"root": root, "changed": changed})),
        }
    };
    ToolResult::ok(json!({"root": root, "changed": changed, "remaining": document(&after, call.root)}))
}

/// The checks of what `source` names (`PATH#selector` as `check` takes it), or why there is nothing to check:
/// a path that does not exist, or one that holds no package.
fn checked(call: &Call<'_>, source: &str) -> Result<Vec<PackageReport>, String> {
    let (path_text, _) = split_source(source);
    let path = source_path(path_text, call.root);
    if let Err(error) = std::fs::metadata(&path) {
        return Err(match error.kind() {
            std::io::ErrorKind::NotFound => format!("{} does not exist", path.display()),
            _ => format!("{} cannot be read: {error}", path.display()),
        });
    }
    // One pass: where each path leads is asked of the disk once.
    let disk = DiskCache::new();
    let reports = check_source_keeping(&disk, source, call.root, call.catalog, Detail::Output);
    if let [only] = reports.as_slice()
        && only.manifest.is_none()
        && let Some(problem) = only.diagnostics.iter().find(|d| d.code == Code::NoWorkbenches)
    {
        return Err(format!(
            "{}: give a package directory, its workbench.yml, or a repository with .workbenches/<name>/workbench.yml",
            problem.message
        ));
    }
    Ok(reports)
}

/// `check --format json`'s document, `root` first.
fn document(reports: &[PackageReport], root: &Path) -> Value {
    let checked = output::Checked::new(reports, root);
    let mut document = serde_json::Map::new();
    document.insert("root".to_owned(), Value::String(root.display().to_string()));
    if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(&output::json::render(&checked)) {
        document.extend(fields);
    }
    Value::Object(document)
}

/// The real path of `file` (every symlink resolved) when it lies beneath `root` (itself resolved), else why not.
fn real_path_beneath(file: &Path, root: &Path) -> Result<PathBuf, String> {
    match std::fs::canonicalize(file) {
        Ok(real) if real.starts_with(root) => Ok(real),
        Ok(real) => Err(format!("its real path {} is outside the root", real.display())),
        Err(error) => Err(format!("its real path cannot be resolved: {error}")),
    }
}
