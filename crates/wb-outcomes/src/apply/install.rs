//! Installing one planned entry (its temp file `<dest>.workbench-<txn>.tmp`, named in the journal before it
//! exists, then a rename, re-checking the destination around it) and restoring one from the journal.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::Faults;
use super::journal::RecoveryEntry;
use super::plan::Planned;
use super::state::{check_parents, current, equals_after};
use crate::error::{Error, Result, io};
use crate::manifest::State;
use crate::store::ContentStore;

fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

pub(super) fn install(
    store: &ContentStore,
    item: &Planned<'_>,
    created_dirs: &mut Vec<PathBuf>,
    faults: &Faults,
) -> Result<()> {
    let path = item.entry.path();
    // Parents: create the missing ones, then check the chain again.
    if let Some(parent) = item.dest.parent() {
        let mut missing = Vec::new();
        let mut dir = parent.to_path_buf();
        while dir != item.root && fs::symlink_metadata(&dir).is_err() {
            missing.push(dir.clone());
            if !dir.pop() {
                break;
            }
        }
        for dir in missing.into_iter().rev() {
            fs::create_dir(&dir).map_err(io(format!("Cannot create {}", dir.display())))?;
            faults.at(|| format!("install {}: directory {} created", item.label, relative(&dir, &item.root)));
            created_dirs.push(dir);
        }
    }
    check_parents(&item.root, path)?;
    let check_unchanged = |text: fn(String) -> Error| -> Result<()> {
        match current(&item.dest, &item.label) {
            Ok(now) if now == item.observed => Ok(()),
            _ => Err(text(item.label.clone())),
        }
    };
    match item.entry.after() {
        None => {
            check_unchanged(Error::ChangedDuring)?;
            fs::remove_file(&item.dest).map_err(io(format!("Cannot remove {}", item.dest.display())))?;
            faults.at(|| format!("install {}: removed", item.label));
        }
        Some(after) => {
            let temp = &item.temp;
            let staged = (|| -> Result<()> {
                match after {
                    State::File { content, mode } => {
                        let bytes = store.read(&content.digest)?;
                        let mut file = fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .mode(0o600)
                            .open(temp)
                            .map_err(io(format!("Cannot write {}", temp.display())))?;
                        faults.at(|| format!("install {}: temp created", item.label));
                        file.write_all(&bytes).map_err(io(format!("Cannot write {}", temp.display())))?;
                        faults.at(|| format!("install {}: temp written", item.label));
                        file.set_permissions(fs::Permissions::from_mode(*mode))
                            .map_err(io(format!("Cannot write {}", temp.display())))?;
                        file.sync_all().map_err(io(format!("Cannot write {}", temp.display())))?;
                        faults.at(|| format!("install {}: temp mode set and synced", item.label));
                    }
                    State::Symlink { target, .. } => {
                        std::os::unix::fs::symlink(target, temp)
                            .map_err(io(format!("Cannot write {}", temp.display())))?;
                        faults.at(|| format!("install {}: temp created", item.label));
                    }
                }
                check_unchanged(Error::ChangedDuring)?;
                fs::rename(temp, &item.dest).map_err(io(format!("Cannot install {}", item.dest.display())))?;
                faults.at(|| format!("install {}: renamed", item.label));
                Ok(())
            })();
            if let Err(error) = staged {
                let _ = fs::remove_file(temp);
                return Err(error);
            }
        }
    }
    match current(&item.dest, &item.label) {
        Ok(now) if equals_after(&now, item.entry.after()) => Ok(()),
        _ => Err(Error::ChangedAfter(item.label.clone())),
    }
}

/// Puts an entry back in its original state, through its temp file and a rename.
pub(super) fn restore(original: &RecoveryEntry, faults: &Faults) -> Result<()> {
    let dest = &original.path;
    let label = &original.label;
    if original.original == "absent" {
        return match fs::symlink_metadata(dest) {
            Ok(_) => {
                fs::remove_file(dest).map_err(io(format!("Cannot restore {}", dest.display())))?;
                faults.at(|| format!("restore {label}: removed"));
                Ok(())
            }
            Err(_) => Ok(()),
        };
    }
    let temp = original.temp();
    // A temp file left by a killed install or restore.
    let _ = fs::remove_file(&temp);
    let result = (|| -> std::io::Result<()> {
        if original.original == "file" {
            let backup = original.backup.as_deref().unwrap_or(Path::new(""));
            fs::copy(backup, &temp)?;
            fs::set_permissions(&temp, fs::Permissions::from_mode(original.mode.unwrap_or(0o644)))?;
            fs::File::open(&temp)?.sync_all()?;
        } else {
            std::os::unix::fs::symlink(original.target.clone().unwrap_or_default(), &temp)?;
        }
        faults.at(|| format!("restore {label}: temp written"));
        fs::rename(&temp, dest)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result.map_err(io(format!("Cannot restore {}", dest.display())))?;
    faults.at(|| format!("restore {label}: renamed"));
    Ok(())
}
