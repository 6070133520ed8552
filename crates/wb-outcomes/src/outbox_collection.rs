//! Outbox collection: every regular file is an artifact except the top-level `outcome.json` declaration,
//! which is validated with `wb_manifest::outbox`. Symlinks, special files, invalid JSON or metadata and
//! missing declared files fail collection with an error (never an empty success).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::Deserialize;
use wb_manifest::{OsFileSystem, Severity};

use crate::error::{Error, Result};
use crate::files::{open_regular, read_regular};
use crate::manifest::{Artifact, Link};
use crate::snapshot::guess_media_type;
use crate::store::{ContentStore, OutcomeBudget};

/// What an outbox returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Collected {
    pub summary: Option<String>,
    pub artifacts: Vec<Artifact>,
    pub links: Vec<Link>,
}

#[derive(Deserialize)]
struct Declaration {
    summary: Option<String>,
    #[serde(default)]
    artifacts: Vec<DeclaredArtifact>,
    #[serde(default)]
    links: Vec<DeclaredLink>,
}

#[derive(Deserialize)]
struct DeclaredArtifact {
    path: String,
    name: Option<String>,
    description: Option<String>,
    media_type: Option<String>,
}

#[derive(Deserialize)]
struct DeclaredLink {
    label: String,
    uri: String,
    kind: Option<String>,
}

fn fail(message: impl Into<String>) -> Error {
    Error::Collection(message.into())
}

/// Collects an outbox into the store. Artifact ids are `artifact_<n>` and link ids `link_<n>` (1-based,
/// in path order and declaration order).
pub fn collect_outbox(outbox: &Path, store: &ContentStore, budget: &mut OutcomeBudget) -> Result<Collected> {
    let meta = fs::symlink_metadata(outbox).map_err(|e| fail(format!("{}: {e}", outbox.display())))?;
    if !meta.is_dir() {
        return Err(fail(format!("the outbox is not a directory: {}", outbox.display())));
    }
    let mut files = Vec::new();
    walk(outbox, &mut files)?;
    let declaration_path = outbox.join("outcome.json");
    let declaration = if files.iter().any(|f| f == "outcome.json") {
        let bytes = read_regular(&declaration_path).map_err(|e| fail(format!("outcome.json: {e}")))?;
        if bytes.len() > wb_manifest::outbox_declaration::MAX_DECLARATION_BYTES {
            return Err(fail("Declared outcome exceeds 1 MiB"));
        }
        let text = String::from_utf8(bytes).map_err(|_| fail("Declared outcome is not valid UTF-8"))?;
        let diagnostics = wb_manifest::outbox_declaration::check_declaration(&OsFileSystem, &declaration_path, &text);
        if let Some(first) = diagnostics.iter().find(|d| d.severity == Severity::Error) {
            return Err(fail(first.message.clone()));
        }
        let parsed: Declaration =
            serde_json::from_str(&text).map_err(|e| fail(format!("Declared outcome is not valid JSON: {e}")))?;
        Some(parsed)
    } else {
        None
    };
    let mut declared: BTreeMap<String, DeclaredArtifact> = BTreeMap::new();
    let mut summary = None;
    let mut links = Vec::new();
    if let Some(declaration) = declaration {
        summary = declaration.summary.filter(|s| !s.is_empty());
        for artifact in declaration.artifacts {
            declared.insert(artifact.path.clone(), artifact);
        }
        for (index, link) in declaration.links.into_iter().enumerate() {
            links.push(Link { id: format!("link_{}", index + 1), label: link.label, uri: link.uri, kind: link.kind });
        }
    }
    for path in declared.keys() {
        if !files.contains(path) {
            return Err(fail(format!("Declared artifact file does not exist: {path}")));
        }
    }
    let mut artifacts = Vec::new();
    for path in files.iter().filter(|f| *f != "outcome.json") {
        let full = outbox.join(path);
        let info = declared.get(path);
        let media_type = match info.and_then(|d| d.media_type.clone()) {
            Some(media_type) => media_type,
            None => {
                let head = read_head(&full)?;
                guess_media_type(path, &head)
            }
        };
        let content = store.put_file(&full, &media_type, budget)?;
        let default_name = path.rsplit('/').next().unwrap_or(path).to_owned();
        artifacts.push(Artifact {
            id: format!("artifact_{}", artifacts.len() + 1),
            name: info.and_then(|d| d.name.clone()).unwrap_or(default_name),
            path: Some(path.clone()),
            content,
            description: info.and_then(|d| d.description.clone()),
        });
    }
    Ok(Collected { summary, artifacts, links })
}

fn read_head(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::new();
    open_regular(path)
        .and_then(|f| f.take(8192).read_to_end(&mut head))
        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    Ok(head)
}

/// Lists the outbox's regular files depth first, each directory's entries in name order, without recursion (a
/// deep tree must not exhaust a run thread's stack): a stack of the directories and entries still to visit.
fn walk(outbox: &Path, files: &mut Vec<String>) -> Result<()> {
    enum Pending {
        Dir(std::path::PathBuf, String),
        Entry(fs::DirEntry, String),
    }
    let mut pending = vec![Pending::Dir(outbox.to_path_buf(), String::new())];
    while let Some(next) = pending.pop() {
        match next {
            Pending::Dir(dir, prefix) => {
                let entries = fs::read_dir(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
                let mut entries: Vec<_> = entries.collect::<std::io::Result<_>>().map_err(|e| fail(e.to_string()))?;
                entries.sort_by_key(|e| e.file_name());
                pending.extend(entries.into_iter().rev().map(|entry| Pending::Entry(entry, prefix.clone())));
            }
            Pending::Entry(entry, prefix) => {
                let name = entry.file_name().to_str().map(str::to_owned).ok_or_else(|| {
                    fail(format!("the outbox contains a file name that is not UTF-8: {}", entry.path().display()))
                })?;
                let path = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
                if let Some(reason) = wb_manifest::outbox_declaration::unsafe_path_reason(&path) {
                    return Err(fail(format!("Outbox path {reason}: {path}")));
                }
                let file_type = entry.file_type().map_err(|e| fail(format!("{path}: {e}")))?;
                if file_type.is_symlink() {
                    return Err(fail(format!("Outbox contains a symbolic link: {path}")));
                } else if file_type.is_dir() {
                    pending.push(Pending::Dir(entry.path(), path));
                } else if file_type.is_file() {
                    files.push(path);
                } else {
                    return Err(fail(format!("Outbox contains a special file: {path}")));
                }
            }
        }
    }
    Ok(())
}
