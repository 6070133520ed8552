//! Where the runner's configuration is staged: a private temporary directory, or the one a dry run's
//! `--stage-dir` asked to keep; and making staged (read-only) files removable again.

use std::path::{Path, PathBuf};

use super::{Options, Purpose};
use crate::error::{EngineError, Result};

/// Where the runner's configuration is staged: a private temporary directory, or one the person asked to keep.
pub(super) enum Stage {
    Temporary(tempfile::TempDir),
    Kept(PathBuf),
}

impl Stage {
    pub(super) fn path(&self) -> &Path {
        match self {
            Stage::Temporary(dir) => dir.path(),
            Stage::Kept(path) => path,
        }
    }

    pub(super) fn create(options: &Options, purpose: Purpose) -> Result<Stage> {
        match (requested_dir(options), purpose) {
            (Some(dir), Purpose::DryRun) => {
                if std::fs::symlink_metadata(&dir).is_ok() {
                    return Err(EngineError::message(format!("The stage directory already exists: {}", dir.display())));
                }
                let failed = |e| EngineError::io(format!("cannot create the stage directory {}", dir.display()), e);
                if let Some(parent) = dir.parent() {
                    std::fs::create_dir_all(parent).map_err(failed)?;
                }
                // Private, like the temporary one: it may hold a link to the runner's sign-in file.
                let mut builder = std::fs::DirBuilder::new();
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
                builder.create(&dir).map_err(failed)?;
                Ok(Stage::Kept(dir))
            }
            _ => tempfile::Builder::new()
                .prefix("wb-lsp-stage-")
                .tempdir()
                .map(Stage::Temporary)
                .map_err(|e| EngineError::io("cannot create the staging directory", e)),
        }
    }
}

/// The directory `--stage-dir` names, relative to the run's working directory.
pub(super) fn requested_dir(options: &Options) -> Option<PathBuf> {
    options.stage_dir.as_ref().map(|dir| if dir.is_absolute() { dir.clone() } else { options.cwd.join(dir) })
}

/// Staged files are read-only for the runner; make them removable again.
pub(super) fn make_writable(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut stack = vec![dir.to_path_buf()];
        while let Some(path) = stack.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if meta.file_type().is_symlink() {
                continue;
            }
            let mode = meta.permissions().mode() | 0o200;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode));
            if meta.is_dir()
                && let Ok(entries) = std::fs::read_dir(&path)
            {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        }
    }
}
