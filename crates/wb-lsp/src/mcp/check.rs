//! `check` and `fix`: `wb-lsp check`'s checks, its JSON document (`output/json.rs`, with paths relative to the
//! root) and `check --fix`'s safe fixes (`wb_manifest::safe_fixes`), written only where the file's real path
//! lies beneath the root, through directory handles opened from it (`crate::writes`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wb_manifest::selector::{check_source_keeping, source_path, split_source};
use wb_manifest::{Code, Detail, DiskCache, OsFileSystem, PackageReport};

use super::call::{Call, ToolResult};
use crate::output;
use crate::writes::{Manifest, Roots, Unreached};

/// `check`: the JSON document of `wb-lsp check --format json`, with the `root` its paths are relative to.
pub fn check(call: &Call<'_>, source: &str) -> ToolResult {
    match checked(call, source) {
        Ok(reports) => ToolResult::ok(document(&reports, call.root)),
        Err(message) => ToolResult::failure(&message.to_string(), json!({"root": call.root.display().to_string()})),
    }
}

/// `fix`: every safe fix of each manifest under `source`, all written or, when any file would be outside
/// the root, none; then the check again. Each manifest is found, read and written through directory handles
/// opened from the root (`crate::writes`), so a directory swapped for a link meanwhile cannot redirect a write.
pub fn fix(call: &Call<'_>, source: &str) -> ToolResult {
    let _writing = call.writes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let root = call.root.display().to_string();
    let reports = match checked(call, source) {
        Ok(reports) => reports,
        Err(message) => return ToolResult::failure(&message.to_string(), json!({"root": root})),
    };
    let mut roots = Roots::default();
    let mut planned: Vec<(Manifest, String, Vec<String>)> = Vec::new();
    let mut refused: Vec<Value> = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    for report in &reports {
        let manifest = report.manifest_path.as_path();
        if !report.diagnostics.iter().any(|d| d.fixes.iter().any(|f| f.safe)) {
            continue;
        }
        let found = match roots.manifest(manifest, call.root, "root") {
            Ok(found) => found,
            Err(Unreached::Refused(reason)) => {
                refused.push(json!({"path": output::relative(manifest, call.root), "reason": reason}));
                continue;
            }
            // One that is not text is left alone, as `check --fix` leaves it.
            Err(Unreached::Unreadable(_)) => continue,
        };
        // One file reached by two paths is fixed once.
        if !seen.insert(found.real_path()) {
            continue;
        }
        let Some(fixed) = wb_manifest::safe_fixes::fix_manifest(&OsFileSystem, manifest, &found.text, call.catalog)
        else {
            continue;
        };
        planned.push((found, fixed.text, fixed.applied));
    }
    if !refused.is_empty() {
        let message = format!(
            "Refused to fix: {} file(s) would be written outside the root {root} or cannot be reached beneath it; \
             nothing was written",
            refused.len()
        );
        return ToolResult::failure(&message, json!({"root": root, "refused": refused}));
    }
    let mut changed = Vec::new();
    for (found, text, applied) in &planned {
        let real = found.real_path();
        if let Err(error) = found.write(text) {
            let message = format!("Cannot write {}: {error}", real.display());
            return ToolResult::failure(&message, json!({"root": root, "changed": changed}));
        }
        changed.push(json!({"path": output::relative(&real, call.root), "applied": applied}));
    }
    let after = if planned.is_empty() {
        reports
    } else {
        match checked(call, source) {
            Ok(after) => after,
            Err(message) => {
                return ToolResult::failure(&message.to_string(), json!({"root": root, "changed": changed}));
            }
        }
    };
    ToolResult::ok(json!({"root": root, "changed": changed, "remaining": document(&after, call.root)}))
}

/// Why there is nothing to check.
#[derive(Debug, thiserror::Error)]
enum Unchecked {
    #[error("{} does not exist", .0.display())]
    Missing(PathBuf),
    #[error("{} cannot be read: {}", .0.display(), .1)]
    Unreadable(PathBuf, std::io::Error),
    /// The path holds no package: the check's message, and what to give instead.
    #[error("{0}: give a package directory, its workbench.yml, or a repository with .workbenches/<name>/workbench.yml")]
    NoPackage(String),
}

/// The checks of what `source` names (`PATH#selector` as `check` takes it), or why there is nothing to check:
/// a path that does not exist, or one that holds no package.
fn checked(call: &Call<'_>, source: &str) -> Result<Vec<PackageReport>, Unchecked> {
    let (path_text, _) = split_source(source);
    let path = source_path(path_text, call.root);
    if let Err(error) = std::fs::metadata(&path) {
        return Err(match error.kind() {
            std::io::ErrorKind::NotFound => Unchecked::Missing(path),
            _ => Unchecked::Unreadable(path, error),
        });
    }
    // One pass: where each path leads is asked of the disk once.
    let disk = DiskCache::new();
    let reports = check_source_keeping(&disk, source, call.root, call.catalog, Detail::Output);
    if let [only] = reports.as_slice()
        && only.manifest.is_none()
        && let Some(problem) = only.diagnostics.iter().find(|d| d.code == Code::NoWorkbenches)
    {
        return Err(Unchecked::NoPackage(problem.message.clone()));
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
