//! Where the runner's configuration is staged: a private temporary directory, or the one a dry run's
//! `--stage-dir` asked to keep; and making staged (read-only) files removable again.

use std::path::{Path, PathBuf};

use super::{Options, Purpose};
use crate::error::{EngineError, Result};
use crate::leftovers::identity::Identity;

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

    pub(super) fn create(options: &Options, purpose: Purpose<'_>) -> Result<Stage> {
        let kept = match purpose {
            Purpose::DryRun { stage_dir } => requested_dir(stage_dir, &options.request.settings.cwd),
            Purpose::Smoke | Purpose::Run(_) => None,
        };
        match kept {
            Some(dir) => {
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
            None => {
                // 0700: it holds the runner's configuration and, during the run, its transcripts. Its name says
                // which process made it, so a process that died leaves a directory `clean` can tell is left over.
                let mut builder = tempfile::Builder::new();
                let prefix = format!("{STAGE_PREFIX}{}-", owner_tag(Identity::of(std::process::id())));
                builder.prefix(&prefix);
                #[cfg(unix)]
                builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
                builder
                    .tempdir()
                    .map(Stage::Temporary)
                    .map_err(|e| EngineError::io("cannot create the staging directory", e))
            }
        }
    }
}

/// How a temporary stage directory's name begins: then `<pid>-<start>-` of the process that made it.
const STAGE_PREFIX: &str = "wb-lsp-stage-";

/// `<pid>-<start>` of the process that makes a stage directory (`x` for a start time that cannot be read).
fn owner_tag(owner: Identity) -> String {
    let start = owner.start.map_or_else(|| "x".to_owned(), |start| start.to_string());
    format!("{}-{start}", owner.pid)
}

/// The temporary stage directories left by processes that ended (or, with `owner`, made by that process: its
/// pid and start time), removed unless `dry`. Only this user's directories, never through a link.
pub fn stage_leftovers(owner: Option<Identity>, dry: bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|name| name.strip_prefix(STAGE_PREFIX)) else { continue };
        let mut parts = rest.splitn(3, '-');
        let (Some(pid), Some(start)) = (parts.next().and_then(|p| p.parse::<u32>().ok()), parts.next()) else {
            continue;
        };
        let maker = Identity { pid, start: start.parse::<u64>().ok() };
        let left = match owner {
            Some(owner) => owner == maker,
            // Without a start time the process cannot be told from one that took its pid: kept while it lives.
            None => !maker.alive(),
        };
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        #[cfg(unix)]
        let mine = std::os::unix::fs::MetadataExt::uid(&meta) == nix::unistd::getuid().as_raw();
        #[cfg(not(unix))]
        let mine = true;
        if !left || !meta.is_dir() || !mine {
            continue;
        }
        if !dry {
            make_writable(&path);
            if std::fs::remove_dir_all(&path).is_err() {
                continue;
            }
        }
        found.push(path);
    }
    found
}

/// The directory `--stage-dir` names, relative to the run's working directory `cwd`.
pub(super) fn requested_dir(stage_dir: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
    stage_dir.map(|dir| if dir.is_absolute() { dir.to_path_buf() } else { cwd.join(dir) })
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
