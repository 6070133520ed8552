//! Installing one planned entry (its temp file `<dest>.workbench-<txn>.tmp`, named in the journal before it
//! exists, then a rename, re-checking the destination around it) and restoring one from the journal. Both
//! work in the entry's parent directory opened from the workspace root without following a symlink: the
//! checks, the temp file, the rename and the re-checks all name the same directory.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::rc::Rc;

use super::Faults;
use super::journal::RecoveryEntry;
use super::plan::Planned;
use super::state::{Parent, Place, current_in, equals_after};
use crate::beneath::Dir;
use crate::error::{Error, Result, io};
use crate::manifest::State;
use crate::store::ContentStore;

/// A directory an install created: removed again (when empty) by a rollback.
pub(super) struct Created<'a> {
    pub(super) place: &'a Place,
    /// Its path below the workspace root.
    pub(super) path: String,
}

fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// The last component of a temp file's path.
fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Opens the parent of `item`, creating the missing directories one by one (each opened without following a
/// symlink right after it is made).
fn open_parent<'a>(item: &'a Planned<'_>, created: &mut Vec<Created<'a>>, faults: &Faults) -> Result<Rc<Dir>> {
    let (mut dir, depth) = match item.place.parent()? {
        Parent::Open(dir) => return Ok(dir),
        Parent::Missing(dir, depth) => (dir, depth),
    };
    let parents = item.place.parents();
    for index in depth..parents.len() {
        dir = item.place.create_parent(&dir, index)?;
        let path = item.place.parent_path(index + 1);
        faults.at(|| format!("install {}: directory {} created", item.label, relative(&path, &item.root)));
        created.push(Created { place: &item.place, path: parents[..=index].join("/") });
    }
    Ok(dir)
}

pub(super) fn install<'a>(
    store: &ContentStore,
    item: &'a Planned<'_>,
    created_dirs: &mut Vec<Created<'a>>,
    faults: &Faults,
) -> Result<()> {
    let dir = open_parent(item, created_dirs, faults)?;
    let name = item.place.name();
    let check_unchanged = |text: fn(String) -> Error| -> Result<()> {
        match current_in(&dir, name, &item.dest, &item.label) {
            Ok(now) if now == item.observed => Ok(()),
            _ => Err(text(item.label.clone())),
        }
    };
    match item.entry.after() {
        None => {
            check_unchanged(Error::ChangedDuring)?;
            dir.remove_file(name).map_err(io(format!("Cannot remove {}", item.dest.display())))?;
            faults.at(|| format!("install {}: removed", item.label));
        }
        Some(after) => {
            let temp = &item.temp;
            let temp_name = file_name(temp);
            let staged = (|| -> Result<()> {
                match after {
                    State::File { content, mode } => {
                        let bytes = store.read(&content.digest)?;
                        let failed = || io(format!("Cannot write {}", temp.display()));
                        let mut file = dir.create_file(&temp_name, 0o600).map_err(failed())?;
                        faults.at(|| format!("install {}: temp created", item.label));
                        file.write_all(&bytes).map_err(failed())?;
                        faults.at(|| format!("install {}: temp written", item.label));
                        file.set_permissions(fs::Permissions::from_mode(*mode)).map_err(failed())?;
                        file.sync_all().map_err(failed())?;
                        faults.at(|| format!("install {}: temp mode set and synced", item.label));
                    }
                    State::Symlink { target, .. } => {
                        dir.symlink(target, &temp_name).map_err(io(format!("Cannot write {}", temp.display())))?;
                        faults.at(|| format!("install {}: temp created", item.label));
                    }
                }
                check_unchanged(Error::ChangedDuring)?;
                dir.rename(&temp_name, name).map_err(io(format!("Cannot install {}", item.dest.display())))?;
                faults.at(|| format!("install {}: renamed", item.label));
                Ok(())
            })();
            if let Err(error) = staged {
                let _ = dir.remove_file(&temp_name);
                return Err(error);
            }
        }
    }
    match current_in(&dir, name, &item.dest, &item.label) {
        Ok(now) if equals_after(&now, item.entry.after()) => Ok(()),
        _ => Err(Error::ChangedAfter(item.label.clone())),
    }
}

/// Puts an entry at `place` back in its original state, through its temp file and a rename. Its parents are
/// opened without following a symlink; a missing parent means there is nothing to remove.
pub(super) fn restore(original: &RecoveryEntry, place: &Place, faults: &Faults) -> Result<()> {
    let dest = &original.path;
    let label = &original.label;
    let failed = || io(format!("Cannot restore {}", dest.display()));
    let dir = match place.parent()? {
        Parent::Open(dir) => dir,
        Parent::Missing(..) if original.original == "absent" => return Ok(()),
        Parent::Missing(..) => return Err(failed()(std::io::ErrorKind::NotFound.into())),
    };
    let name = place.name();
    if original.original == "absent" {
        return match dir.stat(name) {
            Ok(Some(_)) => {
                dir.remove_file(name).map_err(failed())?;
                faults.at(|| format!("restore {label}: removed"));
                Ok(())
            }
            _ => Ok(()),
        };
    }
    let temp_name = file_name(&original.temp());
    // A temp file left by a killed install or restore.
    let _ = dir.remove_file(&temp_name);
    let result = (|| -> std::io::Result<()> {
        if original.original == "file" {
            let backup = original.backup.as_deref().unwrap_or(Path::new(""));
            let mut file = dir.create_file(&temp_name, 0o600)?;
            std::io::copy(&mut fs::File::open(backup)?, &mut file)?;
            file.set_permissions(fs::Permissions::from_mode(original.mode.unwrap_or(0o644)))?;
            file.sync_all()?;
        } else {
            dir.symlink(original.target.as_deref().unwrap_or_default(), &temp_name)?;
        }
        faults.at(|| format!("restore {label}: temp written"));
        dir.rename(&temp_name, name)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&temp_name);
    }
    result.map_err(failed())?;
    faults.at(|| format!("restore {label}: renamed"));
    Ok(())
}

/// Removes the temp file at `temp` (an entry's, in the directory of `place`), if any. Returns whether one
/// was removed, or the failure (a parent that is now a symlink or not a directory is one: the temp file cannot
/// be reached safely).
pub(super) fn remove_temp(place: &Place, temp: &Path) -> std::io::Result<bool> {
    let dir = match place.parent() {
        Ok(Parent::Open(dir)) => dir,
        Ok(Parent::Missing(..)) => return Ok(false),
        Err(_) => return Err(std::io::ErrorKind::PermissionDenied.into()),
    };
    match dir.remove_file(&file_name(temp)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}
