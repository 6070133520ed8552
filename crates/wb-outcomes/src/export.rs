//! Export of an outcome to a new directory (engine facts (f), Export):
//! `outcome.json`, `changesets/<id>/files/<path>` (after-files with their modes, symlinks recreated),
//! `changesets/<id>/changes.diff` (when there is a review) and `artifacts/<path or safe name>` (0600).
//! Deletions appear only in the manifest. Nothing exported is run; the receipt is never changed.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, io};
use crate::ids::random_hex;
use crate::manifest::State;
use crate::store::{ContentStore, OutcomeStore};

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(io("Cannot read the current directory"))?;
    Ok(cwd.join(path))
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io(format!("Cannot create {}", parent.display())))?;
    }
    fs::write(path, bytes).map_err(io(format!("Cannot write {}", path.display())))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io(format!("Cannot write {}", path.display())))
}

fn safe_name(name: &str) -> String {
    let cleaned: String =
        name.chars().map(|c| if c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | ' ') { c } else { '_' }).collect();
    let cleaned = cleaned.trim_matches(|c| c == '.' || c == ' ').to_owned();
    if cleaned.is_empty() || cleaned == "outcome.json" { "artifact".to_owned() } else { cleaned }
}

/// Exports an outcome to `dest`, which must not exist. Returns the absolute destination.
pub fn export(store: &ContentStore, outcome_id: &str, dest: &Path) -> Result<PathBuf> {
    let dest = absolute(dest)?;
    if fs::symlink_metadata(&dest).is_ok() {
        return Err(Error::ExportExists(dest));
    }
    let outcomes = OutcomeStore::new(store);
    let outcome = outcomes.load(outcome_id)?;
    let manifest = fs::read(outcomes.dir(outcome_id)?.join("outcome.json"))
        .map_err(io(format!("Cannot read outcome {outcome_id}")))?;
    let parent = dest.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = parent.join(format!(".{name}.workbench-{}.tmp", random_hex(8)));
    fs::create_dir(&temp).map_err(io(format!("Cannot create {}", temp.display())))?;
    let built = build(store, &outcome, &manifest, &temp);
    if let Err(error) = built {
        let _ = fs::remove_dir_all(&temp);
        return Err(error);
    }
    // Claim the destination exclusively, then move the built tree in.
    if let Err(e) = fs::create_dir(&dest) {
        let _ = fs::remove_dir_all(&temp);
        return Err(if e.kind() == std::io::ErrorKind::AlreadyExists {
            Error::ExportExists(dest)
        } else {
            Error::Io { context: format!("Cannot create {}", dest.display()), cause: e }
        });
    }
    let mut children: Vec<_> = match fs::read_dir(&temp) {
        Ok(entries) => entries.flatten().map(|e| e.file_name()).collect(),
        Err(e) => return Err(Error::ExportIncomplete { path: dest, detail: e.to_string() }),
    };
    children.sort();
    for child in children {
        if let Err(e) = fs::rename(temp.join(&child), dest.join(&child)) {
            return Err(Error::ExportIncomplete {
                path: dest,
                detail: format!("{}: {e} (the rest remains at {})", child.to_string_lossy(), temp.display()),
            });
        }
    }
    let _ = fs::remove_dir(&temp);
    Ok(dest)
}

fn build(store: &ContentStore, outcome: &crate::manifest::Outcome, manifest: &[u8], temp: &Path) -> Result<()> {
    write_file(&temp.join("outcome.json"), manifest, 0o600)?;
    for changeset in &outcome.changesets {
        let base = temp.join("changesets").join(&changeset.id);
        fs::create_dir_all(base.join("files")).map_err(io(format!("Cannot create {}", base.display())))?;
        for entry in &changeset.entries {
            let target = base.join("files").join(entry.path());
            match entry.after() {
                None => {}
                Some(State::File { content, mode }) => write_file(&target, &store.read(&content.digest)?, *mode)?,
                Some(State::Symlink { target: link, .. }) => {
                    if let Some(parent) = target.parent() {
                        fs::create_dir_all(parent).map_err(io(format!("Cannot create {}", parent.display())))?;
                    }
                    std::os::unix::fs::symlink(link, &target)
                        .map_err(io(format!("Cannot write {}", target.display())))?;
                }
            }
        }
        if let Some(review) = &changeset.review {
            write_file(&base.join("changes.diff"), &store.read(&review.digest)?, 0o600)?;
        }
    }
    let mut used = HashSet::new();
    for artifact in &outcome.artifacts {
        let mut relative = artifact.path.clone().unwrap_or_else(|| safe_name(&artifact.name));
        if !used.insert(relative.clone()) {
            relative = format!("{}-{relative}", artifact.id);
            used.insert(relative.clone());
        }
        write_file(&temp.join("artifacts").join(&relative), &store.read(&artifact.content.digest)?, 0o600)?;
    }
    Ok(())
}
